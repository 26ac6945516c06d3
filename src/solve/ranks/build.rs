//! A distributed build of many levels: each rank solves its slice of every level with
//! the one driver of `solve::build` and keeps it in a slice file; a rerun keeps the
//! levels complete on every rank. What is here is what only ranks check before they
//! start: the partition, the folders, the options.

use crate::db::checkpoint::SliceOf;
use crate::db::layout::{build_command, db_dir};
use crate::db::lock::DirLock;
use crate::db::slice::{list_slices, slice_path, SliceHeader};
use crate::error::Error;
use crate::solve::build::{build_levels, LevelReport, Target};
use crate::solve::comm::together;
use crate::solve::level::message;
use crate::solve::options::BuildOptions;
use crate::solve::ranks::Comm;

/// Builds levels `0..=max_seeds` of the database `rules`-`pits` over the ranks of
/// `comm`, this rank keeping its slices in its database folder under `opts.root`; the
/// reports are of this rank's slices. A level whose slices are complete on every rank is
/// kept (unless `opts.force`); any other is built again by all. Slices of a build over
/// another number of ranks in the folder are refused before anything is done, and so is
/// a folder where another build holds this rank's lock, and an option this build does not
/// do ([`BuildOptions::unsupported_over_ranks`]). The lower levels are read as streams;
/// the state is `opts.state`, or, where `None`, the fast state where every rank's slice
/// fits its share of its node's free memory, else the compact one (levels of at most 56
/// seeds). Rank 0 adds each level built from its start to the rates file in its folder
/// (`rates.csv`, [`crate::plan::rates`]). `warn` says what goes wrong without stopping
/// the build: a checkpoint this rank's disk has no room for, or could not write.
pub fn build_slices<M: Comm>(
    comm: &M,
    opts: &BuildOptions,
    report: impl FnMut(&LevelReport),
    warn: impl FnMut(&str),
) -> crate::error::Result<Vec<LevelReport>> {
    let (rank, ranks) = (comm.rank(), comm.size());
    let (rules, pits, max_seeds) = (opts.rules, opts.pits, opts.max_seeds);
    if let Some(flag) = opts.unsupported_over_ranks() {
        return Err(Error::Input(BuildOptions::refusal_over_ranks(flag)));
    }
    let index = opts.checked_index()?;
    let dir = db_dir(&opts.root, rules, pits);
    if index.level_size(max_seeds) > message::INDEX {
        return Err(Error::Input(format!(
            "level {max_seeds} of {pits} pits per side holds {} positions, more than a build \
             over ranks can index (2^{})",
            index.level_size(max_seeds),
            message::INDEX_BITS
        )));
    }
    std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
    let command = opts
        .command
        .clone()
        .unwrap_or_else(|| build_command(&opts.root, rules, pits, max_seeds));
    let what = format!("rank {rank} of {ranks}: {command}");
    let (_lock, locked) = match DirLock::acquire_rank(&dir, rank, &what) {
        Ok(lock) => (Some(lock), Ok(())),
        Err(e) => (None, Err(e)),
    };
    // Every rank learns whether all could start, so that all stop alike.
    together(comm, locked, "found their folder held by another build")?;
    // Slices of another partition would be read as this one's: refuse them, on every
    // rank at once.
    let foreign = list_slices(&dir)?.into_iter().find(|&(_, _, r)| r != ranks);
    together(
        comm,
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
    let other = list_slices(&dir)?.into_iter().find_map(|(n, r, rs)| {
        let path = slice_path(&dir, n, r, rs);
        let h = SliceHeader::read(&path).ok()?;
        (h.rules != rules || h.pits != pits).then_some((path, h))
    });
    together(
        comm,
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
    let target = Target::Slices(SliceOf { rank, ranks });
    build_levels(comm, opts, index, dir, target, report, warn)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::game::index::Index;
    use crate::game::rules::Rules;
    use crate::solve::level::StateKind;
    use crate::solve::ranks::local::LocalComm;

    /// Levels `0..=top` of `rules`-`pits` built over `ranks` thread ranks with the state
    /// `kind` through the one driver, and gathered: each level's values.
    fn built_over_ranks(
        rules: Rules,
        pits: usize,
        top: usize,
        ranks: usize,
        kind: StateKind,
    ) -> Vec<Vec<u8>> {
        let tmp = tempfile::tempdir().unwrap();
        let rank_root = |r: usize| tmp.path().join(format!("rank{r}"));
        let comms = LocalComm::group(ranks);
        std::thread::scope(|s| {
            for comm in &comms {
                let opts = BuildOptions::new(&rank_root(comm.rank()), rules, pits, top)
                    .state(kind)
                    .ranks_here(ranks)
                    .command("test");
                s.spawn(move || build_slices(comm, &opts, |_| {}, |_| {}).unwrap());
            }
        });
        let from: Vec<_> = (0..ranks)
            .map(|r| crate::db::layout::db_dir(&rank_root(r), rules, pits))
            .collect();
        let out = tmp.path().join("out");
        let index = Index::new(pits, top).unwrap();
        crate::db::slice::gather(&from, &out, &index, rules).unwrap();
        (0..=top)
            .map(|n| {
                let file = std::fs::read(crate::db::layout::level_path(&out, n)).unwrap();
                file[crate::db::raw::PAYLOAD_OFFSET..].to_vec()
            })
            .collect()
    }

    #[test]
    fn owners_match_the_slices() {
        use crate::db::layout::{owner, slice};
        for (size, ranks) in [(10u64, 3usize), (1, 1), (7, 7), (100, 6), (5, 8)] {
            for r in 0..ranks {
                for i in slice(size, ranks, r) {
                    assert_eq!(owner(i, size, ranks), r, "{i} of {size} on {ranks}");
                }
            }
        }
    }

    /// The lean state over three thread ranks on every board size, both rule sets: the
    /// single process's levels (the other states' boards are in the test below).
    #[test]
    fn lean_slices_on_every_board_size() {
        for rules in [Rules::Awari, Rules::Oware] {
            for (pits, top) in [(2, 24), (3, 12), (4, 12), (5, 11), (6, 10), (7, 9), (8, 8)] {
                let index = Index::new(pits, top).unwrap();
                let truth = crate::solve::level::solve_in_memory(rules, &index, top);
                let got = built_over_ranks(rules, pits, top, 3, StateKind::Lean);
                for n in 0..=top {
                    assert!(
                        got[n] == truth[n],
                        "{rules} P={pits} level {n} on 3 ranks, lean state, differs"
                    );
                }
            }
        }
    }

    #[test]
    fn slices_over_ranks_are_the_single_process_levels() {
        for rules in [Rules::Awari, Rules::Oware] {
            for (pits, top) in [(6, 11), (4, 16), (3, 14)] {
                let index = Index::new(pits, top).unwrap();
                let truth = crate::solve::level::solve_in_memory(rules, &index, top);
                for ranks in [1, 2, 3] {
                    for kind in [StateKind::Fast, StateKind::Compact, StateKind::Lean] {
                        let got = built_over_ranks(rules, pits, top, ranks, kind);
                        for n in 0..=top {
                            assert!(
                                got[n] == truth[n],
                                "{rules} P={pits} level {n} on {ranks} ranks, {} state, differs",
                                kind.name()
                            );
                        }
                    }
                }
            }
        }
    }

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
         -> Vec<crate::error::Result<Vec<LevelReport>>> {
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
                .all(|l| !l.skipped && l.way.map(|w| w.state) == Some(StateKind::Compact)));
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
            assert!(r[..9].iter().all(|l| l.skipped) && !r[9].skipped && r[10].skipped);
            assert_eq!(r[9].way.map(|w| w.state), Some(StateKind::Fast));
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
                .all(|l| !l.skipped && l.way.map(|w| w.state) == Some(StateKind::Fast)));
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
            "--pack does not work with --distributed: each rank writes its slice raw, which \
             the levels above read; `awari gather --pack` packs the levels it gathers"
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
