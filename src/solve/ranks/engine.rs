//! The engine of a distributed build: one level's slice on one rank, the solver's
//! streamed forward pass over the rank's slices of the lower levels and its backward pass
//! in rounds, with the checkpoints of `solve::checkpoints` (the module above says how).

use std::cell::Cell;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::db::checkpoint::CheckpointAt;
use crate::db::layout::slice;
use crate::game::index::Index;
use crate::game::rules::Rules;
use crate::game::scan::Stream;
use crate::solve::checkpoints::Checkpoints;
use crate::solve::comm::Comm;
use crate::solve::level::message;
use crate::solve::level::{
    backward_pass, forward_stream, Compact, Fast, NoSaves, Partition, PhaseTimes, Settle, Stage,
    StateKind, COMPACT_MAX_SEEDS,
};
use crate::util::LevelBar;

/// This rank's slices of the finished levels: `values[m]` holds the indices
/// `starts[m]..` of level `m`.
#[derive(Debug)]
pub struct LowerSlices<'a> {
    /// The values of this rank's slice of each level below.
    pub values: Vec<&'a [u8]>,
    /// Where each slice starts in its level.
    pub starts: Vec<u64>,
}

/// Solves this rank's slice of level `n` with the solver state `kind` and the threads of
/// the current rayon pool, and calls `f` with its values in index order. Every rank must
/// use the same kind.
///
/// # Panics
/// If the level holds `2^54` positions or more (more than a message can index), or the
/// compact state is asked for a level of more than 56 seeds;
/// [`build_slices`](super::build_slices) refuses both first.
pub fn solve_slice<M: Comm, T>(
    comm: &M,
    rules: Rules,
    index: &Index,
    n: usize,
    kind: StateKind,
    lower: &LowerSlices,
    f: impl FnOnce(&[u8]) -> T,
) -> T {
    let job = SliceJob {
        rules,
        index,
        n,
        kind,
        lower,
        checkpoints: None,
    };
    solve_slice_saved(comm, &job, f).0
}

/// Where the ranks save a level's slices inside the level, and how often (DESIGN.md
/// section 5.5): each rank in its own folder, all at the same places.
pub(crate) struct SliceCheckpoints<'a> {
    /// This rank's database folder.
    pub(crate) dir: &'a Path,
    /// The database's pits per side (for the header).
    pub(crate) pits: usize,
    /// The interval: the ranks save when any rank's is up.
    pub(crate) every: Duration,
    /// Checkpoints written for the level.
    pub(crate) written: Cell<u32>,
    /// Where the level resumed, if it did.
    pub(crate) resumed: Cell<Option<CheckpointAt>>,
    /// Says what the rank's disk left out (a checkpoint skipped, or one at a time).
    pub(crate) warn: &'a dyn Fn(&str),
}

/// What a rank's slice of a level is solved with: its state, the rank's slices of the
/// levels below, and where it is saved inside the level (if anywhere).
pub(crate) struct SliceJob<'a> {
    pub(crate) rules: Rules,
    pub(crate) index: &'a Index,
    /// The level.
    pub(crate) n: usize,
    pub(crate) kind: StateKind,
    pub(crate) lower: &'a LowerSlices<'a>,
    pub(crate) checkpoints: Option<&'a SliceCheckpoints<'a>>,
}

/// A rank's slices read in index order, as the streamed forward pass reads its lower
/// levels (in memory, so a read never fails).
impl Stream for LowerSlices<'_> {
    fn read(&self, seeds: usize, start: u64, out: &mut [u8]) -> crate::error::Result<()> {
        let at = (start - self.starts[seeds]) as usize;
        out.copy_from_slice(&self.values[seeds][at..at + out.len()]);
        Ok(())
    }
}

/// [`solve_slice`] as `job` says, saving the slice's state as its checkpoints say and
/// resuming from the furthest place at which every rank has a good checkpoint (of its
/// state, `job.kind`); with the wall time of the two passes (of this run: a resumed
/// level's forward pass is its time before).
pub(crate) fn solve_slice_saved<M: Comm, T>(
    comm: &M,
    job: &SliceJob,
    f: impl FnOnce(&[u8]) -> T,
) -> (T, PhaseTimes) {
    let n = job.n;
    assert!(
        job.index.level_size(n) <= message::INDEX,
        "level {n} is too large for messages"
    );
    match job.kind {
        StateKind::Fast => solve_with::<Fast, M, T>(comm, job, f),
        StateKind::Compact => {
            assert!(
                n <= COMPACT_MAX_SEEDS,
                "the compact state holds at most {COMPACT_MAX_SEEDS} seeds"
            );
            solve_with::<Compact, M, T>(comm, job, f)
        }
    }
}

/// [`solve_slice_saved`] with the state's encoding `E`.
fn solve_with<E: Settle, M: Comm, T>(
    comm: &M,
    job: &SliceJob,
    f: impl FnOnce(&[u8]) -> T,
) -> (T, PhaseTimes) {
    let started = Instant::now();
    let (rules, index, n) = (job.rules, job.index, job.n);
    let size = index.level_size(n);
    let mine = slice(size, comm.size(), comm.rank());
    let mut checkpoints = job.checkpoints.map(|c| Checkpoints {
        comm,
        dir: c.dir,
        rules,
        pits: c.pits,
        n,
        size,
        mine: mine.clone(),
        every: Some(c.every),
        warn: c.warn,
        progress: None,
        last: started,
        written: 0,
        resumed: None,
        replacing: false,
    });
    let mut resumed = None;
    if let Some(checkpoints) = &mut checkpoints {
        // The ranks chose their state together: a checkpoint of another is not used.
        let taken = checkpoints.take_up(Some(E::KIND), &mut |_| Ok(()));
        if let Ok(Some(checkpoint)) = taken {
            let head = checkpoint.head;
            if let Ok(Some(state)) = checkpoints.load::<E>(checkpoint) {
                let forward = Duration::from_nanos(head.forward_ns);
                resumed = Some((state, head.present, forward, Stage::of_checkpoint(&head)));
            }
        }
    }
    let bar = LevelBar::new(false, 0, n, "");
    let part = Partition {
        comm,
        rules,
        index,
        n,
        mine,
        progress: &bar,
    };
    let (state, present, forward, from) = match resumed {
        Some(r) => r,
        None => {
            let f = forward_stream::<E, M, _>(&part, job.lower)
                .expect("a rank's slices are in memory and read whole");
            (f.state, f.present, f.forward, Stage::start(n))
        }
    };
    let (mut state, times) = match &mut checkpoints {
        Some(saves) => backward_pass(&part, state, present, forward, from, saves),
        None => backward_pass(&part, state, present, forward, from, &mut NoSaves),
    };
    if let (Some(c), Some(saved)) = (job.checkpoints, &checkpoints) {
        c.written.set(saved.written);
        c.resumed.set(saved.resumed);
    }
    (f(state.finish()), times)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::layout::owner;
    use crate::solve::ranks::local::LocalComm;

    /// Every level `0..=top` solved by `ranks` threads as ranks, each level's slices
    /// concatenated.
    fn solve_distributed(
        rules: Rules,
        pits: usize,
        top: usize,
        ranks: usize,
        kind: StateKind,
    ) -> Vec<Vec<u8>> {
        let index = Index::new(pits, top).unwrap();
        let comms = LocalComm::group(ranks);
        let slices: Vec<Vec<Vec<u8>>> = std::thread::scope(|s| {
            let handles: Vec<_> = comms
                .iter()
                .map(|comm| {
                    let index = &index;
                    s.spawn(move || {
                        let mut mine: Vec<Vec<u8>> = Vec::new();
                        let mut starts = Vec::new();
                        for n in 0..=top {
                            let lower = LowerSlices {
                                values: mine.iter().map(|v| v.as_slice()).collect(),
                                starts: starts.clone(),
                            };
                            let values =
                                solve_slice(comm, rules, index, n, kind, &lower, |v| v.to_vec());
                            starts.push(slice(index.level_size(n), ranks, comm.rank()).start);
                            mine.push(values);
                        }
                        mine
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        (0..=top)
            .map(|n| slices.iter().flat_map(|s| s[n].iter().copied()).collect())
            .collect()
    }

    #[test]
    fn owners_match_the_slices() {
        for (size, ranks) in [(10u64, 3usize), (1, 1), (7, 7), (100, 6), (5, 8)] {
            for r in 0..ranks {
                for i in slice(size, ranks, r) {
                    assert_eq!(owner(i, size, ranks), r, "{i} of {size} on {ranks}");
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
                    for kind in [StateKind::Fast, StateKind::Compact] {
                        let got = solve_distributed(rules, pits, top, ranks, kind);
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
}

#[cfg(test)]
mod checkpoint_tests {
    use super::*;
    use crate::db::checkpoint::{checkpoint_path, list_checkpoints, SliceOf};
    use crate::solve::ranks::local::LocalComm;

    /// Level `n` of 4-pit Oware over `ranks` thread ranks, each saving its checkpoints in
    /// `root/rank<r>` at every chance; `keep` copies, when the level is solved, what each
    /// rank's folder holds to `root/kept<r>` (a build killed after its last checkpoint).
    /// The slices concatenated, where each rank resumed, and the warnings of each rank.
    #[allow(clippy::type_complexity)]
    fn solve_saved(
        root: &Path,
        n: usize,
        ranks: usize,
        kind: StateKind,
        keep: bool,
    ) -> (Vec<u8>, Vec<Option<CheckpointAt>>, Vec<Vec<String>>) {
        let index = Index::new(4, n).unwrap();
        let truth = crate::solve::level::solve_in_memory(Rules::Oware, &index, n);
        let comms = LocalComm::group(ranks);
        let parts: Vec<(Vec<u8>, Option<CheckpointAt>, Vec<String>)> = std::thread::scope(|s| {
            let handles: Vec<_> = comms
                .iter()
                .map(|comm| {
                    let (index, truth) = (&index, &truth);
                    s.spawn(move || {
                        let r = comm.rank();
                        let said = std::sync::Mutex::new(Vec::new());
                        let dir = root.join(format!("rank{r}"));
                        std::fs::create_dir_all(&dir).unwrap();
                        // This rank's slices of the levels below, from the true values.
                        let starts: Vec<u64> = (0..n)
                            .map(|m| slice(index.level_size(m), ranks, r).start)
                            .collect();
                        let owned: Vec<&[u8]> = (0..n)
                            .map(|m| {
                                let part = slice(index.level_size(m), ranks, r);
                                &truth[m][part.start as usize..part.end as usize]
                            })
                            .collect();
                        let lower = LowerSlices {
                            values: owned,
                            starts,
                        };
                        let saved = SliceCheckpoints {
                            dir: &dir,
                            pits: 4,
                            every: Duration::ZERO,
                            written: Cell::new(0),
                            resumed: Cell::new(None),
                            warn: &|w| said.lock().unwrap().push(w.to_string()),
                        };
                        let job = SliceJob {
                            rules: Rules::Oware,
                            index,
                            n,
                            kind,
                            lower: &lower,
                            checkpoints: Some(&saved),
                        };
                        let (values, _) = solve_slice_saved(comm, &job, |v| {
                            if keep {
                                let to = root.join(format!("kept{r}"));
                                std::fs::create_dir_all(&to).unwrap();
                                for e in std::fs::read_dir(&dir).unwrap() {
                                    let e = e.unwrap();
                                    std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
                                }
                            }
                            v.to_vec()
                        });
                        assert!(saved.written.get() > 0 || saved.resumed.get().is_some());
                        (values, saved.resumed.get(), said.into_inner().unwrap())
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(
            parts
                .iter()
                .flat_map(|p| p.0.iter().copied())
                .eq(truth[n].iter().copied()),
            "level {n} over {ranks} ranks differs from the single process"
        );
        (
            parts.iter().flat_map(|p| p.0.clone()).collect(),
            parts.iter().map(|p| p.1).collect(),
            parts.iter().map(|p| p.2.clone()).collect(),
        )
    }

    /// Thread ranks save their slices at the same places (between thresholds and inside
    /// them, after a segment) and resume from them, all together, to the single process's
    /// level, also from inside a threshold; when one rank's checkpoint is damaged, every
    /// rank starts the level afresh, to the same level.
    #[test]
    fn ranks_resume_from_their_checkpoints_together() {
        // One rank is a process alone (the single-process build runs this code with its
        // own one-rank comm).
        for (kind, ranks) in [
            (StateKind::Fast, 3),
            (StateKind::Compact, 3),
            (StateKind::Fast, 1),
        ] {
            let tmp = tempfile::tempdir().unwrap();
            let (root, n) = (tmp.path(), 14);
            let last = ranks - 1;
            let (_, resumed, said) = solve_saved(root, n, ranks, kind, true);
            assert_eq!(resumed, vec![None; ranks]);
            assert_eq!(said, vec![Vec::<String>::new(); ranks]);
            // The checkpoints left when the level was solved, as a kill would leave them.
            let restore = || {
                for r in 0..ranks {
                    let (from, to) = (root.join(format!("kept{r}")), root.join(format!("rank{r}")));
                    for e in std::fs::read_dir(&from).unwrap() {
                        let e = e.unwrap();
                        std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
                    }
                }
            };
            restore();
            let left =
                list_checkpoints(&root.join("rank0"), n, SliceOf { rank: 0, ranks }).unwrap();
            assert_eq!(left.len(), 1, "{left:?}");
            let t = left[0].0;
            // Saved at every chance, the last one is inside the last threshold, after all
            // but its last segment.
            let segments =
                crate::db::layout::largest_slice(Index::new(4, n).unwrap().level_size(n), ranks)
                    .div_ceil(crate::solve::level::SEGMENT);
            assert!(segments > 2, "{segments} segments");
            assert_eq!((t.next, t.segment as u64), (1, segments - 1));
            let (_, resumed, said) = solve_saved(root, n, ranks, kind, false);
            assert_eq!(resumed, vec![Some(t); ranks]);
            assert_eq!(said, vec![Vec::<String>::new(); ranks]);
            // The last rank's checkpoint damaged: no rank resumes, each starts the level
            // afresh.
            restore();
            let part = SliceOf { rank: last, ranks };
            let path = checkpoint_path(&root.join(format!("rank{last}")), n, t, part);
            let mut bytes = std::fs::read(&path).unwrap();
            *bytes.last_mut().unwrap() ^= 1;
            std::fs::write(&path, bytes).unwrap();
            let (_, resumed, said) = solve_saved(root, n, ranks, kind, false);
            assert_eq!(resumed, vec![None; ranks]);
            assert!(said[..last].iter().all(|s| s.is_empty()), "{said:?}");
            assert_eq!(said[last].len(), 1, "{said:?}");
            assert!(
                said[last][0].contains("refused (") && said[last][0].contains("damaged"),
                "{said:?}"
            );
        }
    }
}
