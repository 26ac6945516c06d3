//! One level's slice on one rank, solved without the build around it: the solver's
//! streamed forward pass over the rank's slices of the lower levels and its backward pass
//! in rounds (the module above says how). The build of many levels, with checkpoints and
//! files, is `solve::build`'s one driver.

use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use crate::game::index::Index;
use crate::game::rules::Rules;
use crate::game::scan::Stream;
use crate::solve::comm::{together, Comm};
use crate::solve::level::message;
use crate::solve::level::{
    backward_pass, exits_stream, forward_stream, solve_lean, Compact, Fast, LeanFiles, NoSaves,
    Partition, Settle, Stage, StateKind, Window, COMPACT_MAX_SEEDS,
};
use crate::util::{unnamed_file, LevelBar};

/// Solves this rank's slice of level `n` with the solver state `kind` and the threads of
/// the current rayon pool, reading this rank's slices of the lower levels from `lower` (in
/// index order, `lower.read(m, start, ..)` from the start of the rank's slice of level
/// `m`), and calls `f` with its values in index order. Every rank must use the same kind.
/// The lean state keeps its two files (DESIGN.md section 5.6) unnamed in the system's
/// temporary folder.
///
/// # Errors
/// Those of `lower`'s reads (every rank must then stop: the others are left waiting), and
/// of the lean state's files (every rank stops).
///
/// # Panics
/// If the level holds `2^54` positions or more (more than a message can index), or the
/// compact state is asked for a level of more than 56 seeds;
/// [`build_slices`](super::build_slices) refuses both first.
pub fn solve_slice<M: Comm, S: Stream + ?Sized, T>(
    comm: &M,
    rules: Rules,
    index: &Index,
    n: usize,
    kind: StateKind,
    lower: &S,
    f: impl FnOnce(&[u8]) -> T,
) -> crate::error::Result<T> {
    assert!(
        index.level_size(n) <= message::INDEX,
        "level {n} is too large for messages"
    );
    match kind {
        StateKind::Fast => solve_with::<Fast, M, S, T>(comm, rules, index, n, lower, f),
        StateKind::Compact => {
            assert!(
                n <= COMPACT_MAX_SEEDS,
                "the compact state holds at most {COMPACT_MAX_SEEDS} seeds"
            );
            solve_with::<Compact, M, S, T>(comm, rules, index, n, lower, f)
        }
        StateKind::Lean => solve_lean_slice(comm, rules, index, n, lower, f),
    }
}

/// [`solve_slice`] with the lean state, its two files unnamed in the system's temporary
/// folder (a build keeps them beside its slices).
fn solve_lean_slice<M: Comm, S: Stream + ?Sized, T>(
    comm: &M,
    rules: Rules,
    index: &Index,
    n: usize,
    lower: &S,
    f: impl FnOnce(&[u8]) -> T,
) -> crate::error::Result<T> {
    // Ranks that are threads of one process share the folder: each file a name of its own.
    static FILES: AtomicU64 = AtomicU64::new(0);
    let scratch = |what: &str| {
        let k = FILES.fetch_add(1, Relaxed);
        let name = format!("awari-{}-{k}.{what}", std::process::id());
        unnamed_file(&std::env::temp_dir().join(name))
    };
    let files = together(
        comm,
        (|| {
            Ok(LeanFiles {
                exits: scratch("exits")?,
                values: scratch("values")?,
            })
        })(),
        "could not make the lean state's files",
    )?;
    let bar = LevelBar::new(false, 0, n, "");
    let part = partition(comm, rules, index, n, &bar);
    let forward = |exits: &std::fs::File| exits_stream(&part, lower, exits);
    solve_lean(&part, &files, None, forward, &mut NoSaves)?;
    let mut values = vec![0u8; (part.mine.end - part.mine.start) as usize];
    let read = files.values.read_exact_at(&mut values, 0);
    let read = read.map_err(|e| crate::error::Error::io("(the lean state's values file)", e));
    Ok(f(&together(
        comm,
        read.map(|()| values),
        "could not read their values",
    )?))
}

/// This rank's part of level `n`, as a slice solved without a build sees it.
fn partition<'a, M: Comm>(
    comm: &'a M,
    rules: Rules,
    index: &'a Index,
    n: usize,
    progress: &'a LevelBar,
) -> Partition<'a, M> {
    Partition {
        comm,
        rules,
        index,
        n,
        mine: crate::db::layout::slice(index.level_size(n), comm.size(), comm.rank()),
        progress,
    }
}

/// [`solve_slice`] with the state's encoding `E`.
fn solve_with<E: Settle, M: Comm, S: Stream + ?Sized, T>(
    comm: &M,
    rules: Rules,
    index: &Index,
    n: usize,
    lower: &S,
    f: impl FnOnce(&[u8]) -> T,
) -> crate::error::Result<T> {
    let bar = LevelBar::new(false, 0, n, "");
    let part = partition(comm, rules, index, n, &bar);
    let f0 = forward_stream::<E, M, S>(&part, lower, Window::WHOLE)?;
    let from = Stage::start(n);
    let (mut state, _) = backward_pass(&part, f0.state, f0.present, f0.forward, from, &mut NoSaves);
    Ok(f(state.finish()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::layout::{owner, slice};
    use crate::solve::ranks::local::LocalComm;

    /// A rank's slices of the levels below, in memory: `values[m]` holds the indices
    /// `starts[m]..` of level `m`.
    struct MemorySlices<'a> {
        values: Vec<&'a [u8]>,
        starts: Vec<u64>,
    }

    impl Stream for MemorySlices<'_> {
        fn read(&self, seeds: usize, start: u64, out: &mut [u8]) -> crate::error::Result<()> {
            let at = (start - self.starts[seeds]) as usize;
            out.copy_from_slice(&self.values[seeds][at..at + out.len()]);
            Ok(())
        }
    }

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
                            let lower = MemorySlices {
                                values: mine.iter().map(|v| v.as_slice()).collect(),
                                starts: starts.clone(),
                            };
                            let values =
                                solve_slice(comm, rules, index, n, kind, &lower, |v| v.to_vec())
                                    .unwrap();
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

    /// The lean state over three thread ranks on every board size, both rule sets: the
    /// single process's levels (the other states' boards are in the test below).
    #[test]
    fn lean_slices_on_every_board_size() {
        for rules in [Rules::Awari, Rules::Oware] {
            for (pits, top) in [(2, 24), (3, 12), (4, 12), (5, 11), (6, 10), (7, 9), (8, 8)] {
                let index = Index::new(pits, top).unwrap();
                let truth = crate::solve::level::solve_in_memory(rules, &index, top);
                let got = solve_distributed(rules, pits, top, 3, StateKind::Lean);
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
