//! A distributed build of many levels: each rank solves its slice of every level with the
//! engine and keeps it in a slice file; a rerun keeps the levels complete on every rank.

use std::cell::{Cell, RefCell};

use crate::db::checkpoint::{remove_checkpoints, CheckpointAt, SliceOf};
use crate::db::layout::{build_command, db_dir, slice, Expect};
use crate::db::lock::DirLock;
use crate::db::slice::{list_slices, slice_path, write_slice, SliceHeader, SliceLevel};
use crate::error::Error;
use crate::solve::level::message;
use crate::solve::level::Lower;
use crate::solve::level::StateKind;
use crate::solve::options::BuildOptions;
use crate::solve::plan::rates::{self, LevelRate};
use crate::solve::plan::{check_slice_fits, slice_way};
use crate::solve::ranks::engine::{solve_slice_saved, SliceCheckpoints, SliceJob};
use crate::solve::ranks::{Comm, LowerSlices};
use crate::util::memory_available;

/// One level of a distributed build, as this rank saw it.
#[derive(Clone, Copy, Debug)]
pub struct SliceReport {
    /// The level.
    pub seeds: usize,
    /// Positions of the whole level.
    pub positions: u64,
    /// Positions of this rank's slice.
    pub slice: u64,
    /// Found complete on every rank, not rebuilt.
    pub kept: bool,
    /// The solver state it was built with (`None` if kept).
    pub state: Option<StateKind>,
    /// Wall time of the level.
    pub seconds: f64,
    /// Bytes this rank sent for the level.
    pub bytes_sent: u64,
    /// This rank's peak resident memory so far, where the system says.
    pub peak_rss: Option<u64>,
    /// Where the level resumed from the ranks' checkpoints (`None`: built from its start,
    /// or kept).
    pub resumed: Option<CheckpointAt>,
    /// Checkpoints every rank wrote while building it.
    pub checkpoints: u32,
}

/// Builds levels `0..=max_seeds` of the database `rules`-`pits` over the ranks of
/// `comm`, this rank keeping its slices in its database folder under `opts.root`. A level
/// whose slices are complete on every rank is kept (unless `opts.force`); any other is
/// built again by all. Slices of a build over another number of ranks in the folder are
/// refused before anything is done, and so is a folder where another build holds this
/// rank's lock, and an option this build does not do
/// ([`BuildOptions::unsupported_over_ranks`]). The lower levels are read as streams; the
/// state is `opts.state`, or, where `None`, the fast state where every rank's slice fits
/// its share of its node's free memory, else the compact one (levels of at most 56 seeds).
/// Rank 0 adds each level built from its start to the rates file in its folder
/// (`rates.csv`, [`crate::plan::rates`]). `warn` says what goes wrong without stopping
/// the build: a checkpoint this rank's disk has no room for, or could not write.
pub fn build_slices<M: Comm>(
    comm: &M,
    opts: &BuildOptions,
    mut report: impl FnMut(&SliceReport),
    warn: impl FnMut(&str),
) -> crate::error::Result<Vec<SliceReport>> {
    let warn = RefCell::new(warn);
    let warn = |line: &str| (warn.borrow_mut())(line);
    let (rank, ranks) = (comm.rank(), comm.size());
    let (rules, pits, max_seeds) = (opts.rules, opts.pits, opts.max_seeds);
    if let Some(flag) = opts.unsupported_over_ranks() {
        return Err(Error::Input(BuildOptions::refusal_over_ranks(flag)));
    }
    let index = opts.checked_index()?;
    let dir = db_dir(&opts.root, rules, pits);
    let dir = dir.as_path();
    if index.level_size(max_seeds) > message::INDEX {
        return Err(Error::Input(format!(
            "level {max_seeds} of {pits} pits per side holds {} positions, more than a build \
             over ranks can index (2^{})",
            index.level_size(max_seeds),
            message::INDEX_BITS
        )));
    }
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    // Every rank learns whether all could start, so that all stop alike.
    let together = |mine: crate::error::Result<()>, what: &str| {
        let failed = comm.sum(mine.is_err() as u64);
        match mine {
            Err(e) => Err(e),
            Ok(()) if failed > 0 => Err(Error::Input(format!(
                "{failed} other rank(s) {what}; their lines say why"
            ))),
            Ok(()) => Ok(()),
        }
    };
    let command = opts
        .command
        .clone()
        .unwrap_or_else(|| build_command(&opts.root, rules, pits, max_seeds));
    let what = format!("rank {rank} of {ranks}: {command}");
    let (_lock, locked) = match DirLock::acquire_rank(dir, rank, &what) {
        Ok(lock) => (Some(lock), Ok(())),
        Err(e) => (None, Err(e)),
    };
    together(locked, "found their folder held by another build")?;
    // Slices of another partition would be read as this one's: refuse them, on every
    // rank at once.
    let foreign = list_slices(dir)?.into_iter().find(|&(_, _, r)| r != ranks);
    together(
        match foreign {
            Some((n, r, rs)) => Err(Error::Input(format!(
                "{} holds slices of a build over {rs} ranks (level {n}, rank {r}); this build has {ranks}: use another folder, or run with {rs} ranks",
                dir.display()
            ))),
            None => Ok(()),
        },
        "found slices of a build over another number of ranks",
    )?;
    // A slice of another database (copied or moved in) would be overwritten: refuse it.
    let other = list_slices(dir)?.into_iter().find_map(|(n, r, rs)| {
        let path = slice_path(dir, n, r, rs);
        let h = SliceHeader::read(&path).ok()?;
        (h.rules != rules || h.pits != pits).then_some((path, h))
    });
    together(
        match other {
            Some((path, h)) => Err(Error::Input(format!(
                "{} is a slice of the {}-{} database, and this build is {rules}-{pits}: move it away",
                path.display(),
                h.rules,
                h.pits
            ))),
            None => Ok(()),
        },
        "found slices of another database in their folder",
    )?;
    let mut done: Vec<SliceLevel> = Vec::new();
    let mut starts = Vec::new();
    let mut reports = Vec::new();
    for n in 0..=max_seeds {
        let t0 = std::time::Instant::now();
        let sent0 = comm.bytes_sent();
        let expect = Expect::level(rules, &index, n);
        let range = slice(expect.positions, ranks, rank);
        let path = slice_path(dir, n, rank, ranks);
        let found = if opts.force {
            None
        } else {
            SliceLevel::open(&path, &expect, rank, ranks, range.clone()).ok()
        };
        let mut state = None;
        let mut phases = None;
        let everywhere = comm.sum(found.is_some() as u64) == ranks as u64;
        let part = SliceOf { rank, ranks };
        if everywhere || opts.force {
            // A level kept needs none; a forced one starts afresh.
            remove_checkpoints(dir, n, part)?;
        }
        let saved = opts.checkpoint_every.map(|every| SliceCheckpoints {
            dir,
            pits,
            every,
            written: Cell::new(0),
            resumed: Cell::new(None),
            warn: &warn,
        });
        let level = match found {
            Some(level) if everywhere => level,
            _ => {
                let held = range.end - range.start;
                let kind = match opts.state {
                    Some(kind) => kind,
                    // The single process's choice for this rank's slice and share of the
                    // node's memory; every rank votes, so that all use the same state.
                    None => {
                        let share = memory_available().map(|m| m / opts.ranks_here.max(1) as u64);
                        let mine = slice_way(n, held, share).state;
                        if comm.sum((mine == StateKind::Compact) as u64) > 0 {
                            StateKind::Compact
                        } else {
                            StateKind::Fast
                        }
                    }
                };
                state = Some(kind);
                let fits = if opts.check {
                    check_slice_fits(dir, n, held, kind, opts.ranks_here)
                } else {
                    Ok(())
                };
                together(fits, &format!("lack the memory or disk for level {n}"))?;
                let lower = LowerSlices {
                    values: done.iter().map(|s| s.bytes()).collect(),
                    starts: starts.clone(),
                };
                let job = SliceJob {
                    rules,
                    index: &index,
                    n,
                    kind,
                    lower: &lower,
                    checkpoints: saved.as_ref(),
                };
                let (written, times) = solve_slice_saved(comm, &job, |values| {
                    let head = SliceHeader {
                        rules,
                        pits,
                        seeds: n,
                        positions: expect.positions,
                        checksum: 0,
                        range: range.clone(),
                        ranks,
                        rank,
                    };
                    write_slice(&path, head, values)
                });
                written?;
                phases = Some(times);
                remove_checkpoints(dir, n, part)?;
                // The stream read the slices below: let their pages go.
                done.iter().for_each(SliceLevel::release);
                SliceLevel::open(&path, &expect, rank, ranks, range.clone())?
            }
        };
        let r = SliceReport {
            seeds: n,
            positions: expect.positions,
            slice: range.end - range.start,
            kept: everywhere,
            state,
            seconds: t0.elapsed().as_secs_f64(),
            bytes_sent: comm.bytes_sent() - sent0,
            peak_rss: crate::util::peak_rss(),
            resumed: saved.as_ref().and_then(|s| s.resumed.get()),
            checkpoints: saved.as_ref().map_or(0, |s| s.written.get()),
        };
        report(&r);
        // What `awari plan` extrapolates from: the whole level, by every rank's threads.
        let threads = comm.sum(rayon::current_num_threads() as u64) as usize;
        if let (Some(state), Some(times), None, 0) = (state, phases, r.resumed, rank) {
            let rate = LevelRate {
                seeds: n,
                positions: expect.positions,
                threads,
                seconds: r.seconds,
                forward: times.forward.as_secs_f64(),
                backward: times.backward.as_secs_f64(),
                // Each rank's process has its own; one line has no room for them.
                peak_rss: None,
                cpu_seconds: None,
                state,
                lower: Lower::Stream,
                finished: rates::now_unix(),
            };
            if let Err(e) = rates::append(dir, &rate) {
                warn(&format!("level {n}'s rate not recorded: {}", e.one_line()));
            }
        }
        reports.push(r);
        starts.push(range.start);
        done.push(level);
    }
    Ok(reports)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::game::index::Index;
    use crate::game::rules::Rules;
    use crate::solve::ranks::local::LocalComm;

    #[test]
    fn slices_on_disk_gather_into_the_single_process_levels() {
        let tmp = tempfile::tempdir().unwrap();
        let (rules, pits, top) = (Rules::Oware, 4, 14);
        let single = tmp.path().join("single");
        let opts = BuildOptions::new(&single, rules, pits, top);
        crate::solve::build::build(&opts, |_| {}, |_| {}).unwrap();
        let db = |root: &std::path::Path| crate::db::layout::db_dir(root, rules, pits);
        let rank_dir = |r: usize| db(&tmp.path().join(format!("rank{r}")));
        let run_with = |ranks: usize,
                        state: Option<StateKind>,
                        force: bool|
         -> Vec<crate::error::Result<Vec<SliceReport>>> {
            let comms = LocalComm::group(ranks);
            std::thread::scope(|s| {
                let handles: Vec<_> = comms
                    .iter()
                    .map(|comm| {
                        let root = tmp.path().join(format!("rank{}", comm.rank()));
                        let opts = BuildOptions::new(&root, rules, pits, top)
                            .state(state)
                            .force(force)
                            .ranks_here(ranks)
                            .command("test");
                        s.spawn(move || build_slices(comm, &opts, |_| {}, |_| {}))
                    })
                    .collect();
                handles.into_iter().map(|h| h.join().unwrap()).collect()
            })
        };
        let run = |ranks: usize, state: Option<StateKind>| run_with(ranks, state, false);
        // Built with the compact state: the same files.
        for r in run(3, Some(StateKind::Compact)) {
            assert!(r
                .unwrap()
                .iter()
                .all(|l| !l.kept && l.state == Some(StateKind::Compact)));
        }
        // Each rank's folder holds its slices only.
        for r in 0..3 {
            let names = crate::db::slice::list_slices(&rank_dir(r)).unwrap();
            assert_eq!(names.len(), top + 1);
            assert!(names
                .iter()
                .all(|&(_, rank, ranks)| rank == r && ranks == 3));
        }
        let out = db(&tmp.path().join("out"));
        let index = Index::new(pits, top).unwrap();
        let from: Vec<_> = (0..3).map(rank_dir).collect();
        let levels = crate::db::slice::gather(&from, &out, &index, rules).unwrap();
        assert_eq!(levels, (0..=top).collect::<Vec<_>>());
        for n in 0..=top {
            let a = std::fs::read(crate::db::layout::level_path(&out, n)).unwrap();
            let b = std::fs::read(crate::db::layout::level_path(&db(&single), n)).unwrap();
            assert!(a == b, "level {n} gathered differs from the single build");
        }
        std::fs::remove_file(crate::db::slice::slice_path(&rank_dir(1), 9, 1, 3)).unwrap();
        // A lost slice is rebuilt by a rerun (the fast state, where it fits), the rest kept.
        for r in run(3, None) {
            let r = r.unwrap();
            assert!(r[..9].iter().all(|l| l.kept) && !r[9].kept && r[10].kept);
            assert_eq!(r[9].state, Some(StateKind::Fast));
        }
        let again = db(&tmp.path().join("again"));
        crate::db::slice::gather(&from, &again, &index, rules).unwrap();
        let level = |d: &std::path::Path| std::fs::read(crate::db::layout::level_path(d, 9));
        assert!(level(&again).unwrap() == level(&db(&single)).unwrap());
        // With force, every level is built again, to the same files.
        for r in run_with(3, Some(StateKind::Fast), true) {
            let r = r.unwrap();
            assert_eq!(r.len(), top + 1);
            assert!(r
                .iter()
                .all(|l| !l.kept && l.state == Some(StateKind::Fast)));
        }
        let forced = db(&tmp.path().join("forced"));
        crate::db::slice::gather(&from, &forced, &index, rules).unwrap();
        for n in 0..=top {
            let a = std::fs::read(crate::db::layout::level_path(&forced, n)).unwrap();
            let b = std::fs::read(crate::db::layout::level_path(&db(&single), n)).unwrap();
            assert!(a == b, "level {n} forced differs from the single build");
        }
        // What the ranks do not do yet is refused before anything is written.
        let opts = BuildOptions::new(&tmp.path().join("packed"), rules, pits, top).pack(true);
        let e = build_slices(&LocalComm::group(1)[0], &opts, |_| {}, |_| {}).unwrap_err();
        assert_eq!(
            e.to_string(),
            "--pack does not work with --distributed: each rank writes its slice raw; pack \
             the levels `awari gather` makes with `awari pack`"
        );
        assert!(!tmp.path().join("packed").exists());
        // A rank whose folder another build holds stops, and every rank with it.
        let held =
            crate::db::lock::DirLock::acquire_rank(&rank_dir(1), 1, "the other job").unwrap();
        let said: Vec<String> = run(3, None)
            .into_iter()
            .map(|r| r.unwrap_err().to_string())
            .collect();
        assert!(
            said[1].contains("in use by another process") && said[1].contains("the other job"),
            "{}",
            said[1]
        );
        assert!(
            said[0].contains("1 other rank(s) found their folder held"),
            "{}",
            said[0]
        );
        drop(held);
        // Another number of ranks over these slices is refused, on every rank.
        for r in run(2, None) {
            let e = r.unwrap_err().to_string();
            assert!(
                e.contains("over 3 ranks") || e.contains("another number"),
                "{e}"
            );
        }
    }
}
