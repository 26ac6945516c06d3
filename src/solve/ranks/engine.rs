//! The engine of a distributed build: one level's slice on one rank, its forward pass
//! streaming the lower levels' slices, its backward pass in rounds (the module above says
//! how).

use std::cell::Cell;
use std::ops::Range;
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rayon::prelude::*;

use crate::db::checkpoint::{
    checkpoint_need, checkpoint_path, checkpoint_room, list_checkpoints, remove_checkpoints,
    Checkpoint, CheckpointHeader, CheckpointRoom, Part,
};
use crate::db::layout::{largest_slice, owner, slice};
use crate::game::index::Index;
use crate::game::rules::Rules;
use crate::game::scan::{lowest_captured_level, scan_uncaptures};
use crate::solve::build::{no_room, not_written, one_at_a_time};
use crate::solve::level::{
    threshold_bit, Backward, Compact, Fast, Message, PhaseTimes, Remote, Settle, State, StateKind,
    Work, COMPACT_MAX_SEEDS,
};
use crate::solve::ranks::message;
use crate::solve::ranks::Comm;
use crate::util::{prefetch, BATCH, CHUNK};

/// Lower positions a rank streams per forward round: bounds the updates it sends in a
/// round. (Small in the unit tests, so that their small levels take many rounds.)
pub const ROUND: u64 = if cfg!(test) { 1 << 12 } else { 1 << 18 };

/// Positions per rank whose seeds are settled in one backward round: bounds the outboxes
/// of a round.
pub const SEGMENT: u64 = if cfg!(test) { 1 << 13 } else { 1 << 22 };

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
    solve_slice_saved(comm, rules, index, n, kind, lower, None, f).0
}

/// Where the ranks save a level's slices inside the level, and how often (DESIGN.md
/// section 5.5): each rank in its own folder, all at the same thresholds.
pub(crate) struct SliceCheckpoints<'a> {
    /// This rank's database folder.
    pub(crate) dir: &'a Path,
    /// The database's pits per side (for the header).
    pub(crate) pits: usize,
    /// The interval: the ranks save when any rank's is up.
    pub(crate) every: Duration,
    /// Checkpoints written for the level.
    pub(crate) written: Cell<u32>,
    /// The threshold the level resumed at, if it did.
    pub(crate) resumed: Cell<Option<u8>>,
    /// Says what the rank's disk left out (a checkpoint skipped, or one at a time).
    pub(crate) warn: &'a dyn Fn(&str),
}

/// [`solve_slice`], saving the slice's state as `checkpoints` says and resuming from the
/// furthest threshold at which every rank has a good checkpoint; with the wall time of
/// the two passes (of this run: a resumed level's forward pass is 0).
#[allow(clippy::too_many_arguments)]
pub(crate) fn solve_slice_saved<M: Comm, T>(
    comm: &M,
    rules: Rules,
    index: &Index,
    n: usize,
    kind: StateKind,
    lower: &LowerSlices,
    checkpoints: Option<&SliceCheckpoints>,
    f: impl FnOnce(&[u8]) -> T,
) -> (T, PhaseTimes) {
    assert!(
        index.level_size(n) <= message::INDEX,
        "level {n} is too large for messages"
    );
    match kind {
        StateKind::Fast => solve_with::<Fast, M, T>(comm, rules, index, n, lower, checkpoints, f),
        StateKind::Compact => {
            assert!(
                n <= COMPACT_MAX_SEEDS,
                "the compact state holds at most {COMPACT_MAX_SEEDS} seeds"
            );
            solve_with::<Compact, M, T>(comm, rules, index, n, lower, checkpoints, f)
        }
    }
}

/// [`solve_slice_saved`] with the state's encoding `E`.
fn solve_with<E: Settle, M: Comm, T>(
    comm: &M,
    rules: Rules,
    index: &Index,
    n: usize,
    lower: &LowerSlices,
    checkpoints: Option<&SliceCheckpoints>,
    f: impl FnOnce(&[u8]) -> T,
) -> (T, PhaseTimes) {
    let started = Instant::now();
    let ranks = comm.size();
    let size = index.level_size(n);
    let mine = slice(size, ranks, comm.rank());
    let saver = checkpoints.map(|c| Saver {
        c,
        rules,
        n,
        size,
        part: Part {
            rank: comm.rank(),
            ranks,
        },
        mine: mine.clone(),
        replacing: Cell::new(false),
    });
    let resumed = saver.as_ref().and_then(|s| s.resume::<E, M>(comm));
    let (mut state, mask, from) = match resumed {
        Some(r) => r,
        None => {
            let mut state = State::<E>::new(mine.end - mine.start);
            forward(comm, rules, index, n, lower, &mine, &state);
            let mask = state.survey(0..state.len());
            (state, mask, n as i8)
        }
    };
    let forward_time = started.elapsed();
    // The thresholds that seed anything on any rank: a threshold `t` with no exit worth
    // `t` or `-t` anywhere settles nothing, and every rank skips it alike.
    let masks = comm.exchange(vec![mask.to_le_bytes().to_vec(); ranks]);
    let needed = |t: i8| {
        masks
            .parts()
            .any(|m| u64::from_le_bytes(m.try_into().unwrap()) & threshold_bit(t) != 0)
    };
    let remote = Ranks { size, ranks };
    let mut last = started;
    let mut boundary = |state: &mut State<E>, next: i8| {
        if let Some(s) = &saver {
            if s.save(comm, state, next, mask, last) {
                last = Instant::now();
            }
        }
    };
    if from == n as i8 {
        boundary(&mut state, from);
    }
    for t in (1..=from).rev() {
        if !needed(t) {
            continue;
        }
        let back = Backward {
            rules,
            index,
            n,
            state: &state,
            base: mine.start,
            remote: &remote,
        };
        threshold(comm, &back, &mine, t);
        if t > 1 {
            boundary(&mut state, t - 1);
        }
    }
    let times = PhaseTimes {
        forward: forward_time,
        backward: started.elapsed() - forward_time,
    };
    (f(state.finish()), times)
}

/// A rank's checkpoints of one level.
struct Saver<'a> {
    c: &'a SliceCheckpoints<'a>,
    rules: Rules,
    n: usize,
    size: u64,
    part: Part,
    mine: Range<u64>,
    /// Whether this rank's disk holds one checkpoint at a time (said once).
    replacing: Cell<bool>,
}

impl Saver<'_> {
    /// The header of this rank's checkpoint after threshold `next + 1`.
    fn header(&self, next: u8, present: u64) -> CheckpointHeader {
        let c = self.c;
        CheckpointHeader {
            next,
            present,
            ..CheckpointHeader::new(
                self.rules,
                c.pits,
                self.n,
                self.size,
                self.part,
                self.mine.clone(),
            )
        }
    }

    /// Saves this rank's state at threshold `next` if any rank's interval since `last` is
    /// up (every rank decides alike, through a sum). Where a rank's disk would not hold
    /// its slice's file after the checkpoint, no rank saves; where it holds one checkpoint
    /// only, that rank removes its older ones first (as the single process does, DESIGN.md
    /// section 5.5). Once every rank's is whole, the ones before go; if any rank could not
    /// write its own, the new ones go instead. Whether the interval starts again.
    fn save<E: Settle, M: Comm>(
        &self,
        comm: &M,
        state: &mut State<E>,
        next: i8,
        present: u64,
        last: Instant,
    ) -> bool {
        let due = last.elapsed() >= self.c.every;
        if comm.sum(due as u64) == 0 {
            return false;
        }
        let next = next as u8;
        let (dir, n) = (self.c.dir, self.n);
        let held = self.mine.end - self.mine.start;
        let need = checkpoint_need(E::KIND.bytes(held), held);
        let mut older = list_checkpoints(dir, n, self.part).unwrap_or_default();
        let room = checkpoint_room(dir, &older, need);
        if let CheckpointRoom::Short { free, need } = room {
            (self.c.warn)(&no_room(n, free, need));
        }
        if comm.sum(matches!(room, CheckpointRoom::Short { .. }) as u64) > 0 {
            return true;
        }
        let mut cleared = true;
        if let CheckpointRoom::Instead { free, need } = room {
            if !self.replacing.replace(true) {
                (self.c.warn)(&one_at_a_time(n, free, need));
            }
            for (_, p) in older.drain(..) {
                cleared &= std::fs::remove_file(p).is_ok();
            }
        }
        let path = checkpoint_path(dir, n, next, self.part);
        let wrote = cleared
            && match state.save(&path, self.header(next, present)) {
                Ok(()) => true,
                Err(e) => {
                    // The build goes on: only its safety net is lost.
                    (self.c.warn)(&not_written(n, &e));
                    false
                }
            };
        let everywhere = comm.sum(wrote as u64) == comm.size() as u64;
        // The ones before (listed before this save), or the new one. A rank that cannot
        // remove its files keeps them: the level's end removes them, and a resume takes
        // only the thresholds every rank holds.
        if everywhere {
            for (t, p) in older {
                if t > next {
                    let _ = std::fs::remove_file(p);
                }
            }
            self.c.written.set(self.c.written.get() + 1);
        } else {
            let _ = std::fs::remove_file(&path);
        }
        true
    }

    /// The state at the furthest threshold every rank has a good checkpoint of, with its
    /// thresholds present and that threshold; `None` (and no checkpoint of the level left)
    /// if there is none. Every rank calls it and gets the same answer.
    fn resume<E: Settle, M: Comm>(&self, comm: &M) -> Option<(State<E>, u64, i8)> {
        let (dir, n, part) = (self.c.dir, self.n, self.part);
        let found = list_checkpoints(dir, n, part).unwrap_or_default();
        let mut held = 0u64;
        for &(t, _) in &found {
            if t < 64 {
                held |= 1 << t;
            }
        }
        let all = comm.exchange(vec![held.to_le_bytes().to_vec(); comm.size()]);
        let common = all.parts().fold(u64::MAX, |a, m| {
            a & u64::from_le_bytes(m.try_into().unwrap())
        });
        let chosen = (common != 0).then(|| common.trailing_zeros() as u8);
        let loaded = chosen.and_then(|t| {
            let path = checkpoint_path(dir, n, t, part);
            let c = Checkpoint::open(&path, &self.header(t, 0)).ok()?;
            (c.head.encoding == E::KIND.code()).then_some(())?;
            let present = c.head.present;
            let state = State::<E>::load(c).ok()?;
            Some((state, present, t as i8))
        });
        let ok = comm.sum(loaded.is_some() as u64) == comm.size() as u64;
        if !ok || chosen.is_none() {
            // Started afresh: nothing of before is kept.
            let _ = remove_checkpoints(dir, n, part);
            return None;
        }
        self.c.resumed.set(chosen);
        loaded
    }
}

/// The forward pass of this rank's slice, with the lower levels read as streams: first
/// the own moves of its positions (game ends, forced moves, in-level moves counted), then,
/// in rounds, a piece of [`ROUND`] positions of its slices of the lower levels a capture
/// reaches: each position hands its value to its parents by un-captures, raising the best
/// exit of those held here at once and sending the others to their owners (8 bytes each:
/// the index, and the value in the top byte), one message per destination and round. The
/// rounds are the same on every rank: every rank knows every slice.
fn forward<E: Settle, M: Comm>(
    comm: &M,
    rules: Rules,
    index: &Index,
    n: usize,
    lower: &LowerSlices,
    mine: &Range<u64>,
    state: &State<E>,
) {
    let (rank, ranks) = (comm.rank(), comm.size());
    let size = index.level_size(n);
    state.own_moves(rules, index, n, mine.clone(), mine.start, |_| {});
    // The pieces of each rank's slices of the lower levels, level by level.
    let levels = lowest_captured_level(index.pits_per_side(), n)..n.saturating_sub(1);
    let pieces = |r: usize| -> Vec<(usize, Range<u64>)> {
        levels
            .clone()
            .flat_map(|m| {
                let part = slice(index.level_size(m), ranks, r);
                (part.start..part.end)
                    .step_by(ROUND as usize)
                    .map(move |a| (m, a..(a + ROUND).min(part.end)))
            })
            .collect()
    };
    let rounds = (0..ranks).map(|r| pieces(r).len()).max().unwrap_or(0);
    let mut mine_pieces = pieces(rank).into_iter();
    for _ in 0..rounds {
        let outbox: Vec<Vec<u8>> = match mine_pieces.next() {
            Some((m, piece)) => {
                let values = lower.values[m];
                let base = lower.starts[m];
                let sent: Mutex<Vec<Vec<u8>>> = Mutex::new(vec![Vec::new(); ranks]);
                (piece.start..piece.end)
                    .step_by(CHUNK as usize)
                    .collect::<Vec<_>>()
                    .into_par_iter()
                    .for_each(|start| {
                        let end = (start + CHUNK).min(piece.end);
                        let mut out = vec![Vec::new(); ranks];
                        let held = |qi: u64| mine.contains(&qi);
                        scan_uncaptures(
                            rules,
                            index,
                            n,
                            m,
                            start,
                            &values[(start - base) as usize..(end - base) as usize],
                            |qi| {
                                if held(qi) {
                                    prefetch(state.exit((qi - mine.start) as usize));
                                }
                            },
                            |qi, x, _| {
                                if held(qi) {
                                    state.raise((qi - mine.start) as usize, x);
                                } else {
                                    let word = message::raise(qi, x);
                                    out[owner(qi, size, ranks)]
                                        .extend_from_slice(&word.to_le_bytes());
                                }
                            },
                        );
                        let mut sent = sent.lock().unwrap();
                        for (to, part) in sent.iter_mut().zip(out) {
                            to.extend_from_slice(&part);
                        }
                    });
                sent.into_inner().unwrap()
            }
            None => vec![Vec::new(); ranks],
        };
        let got = comm.exchange(outbox);
        got.bytes().par_chunks(8 * CHUNK as usize).for_each(|part| {
            for (qi, x) in message::words(part).map(message::raised) {
                state.raise((qi - mine.start) as usize, x);
            }
        });
    }
}

/// The backward pass of threshold `t` over this rank's slice, in rounds until no rank
/// has anything left to send.
fn threshold<E: Settle, M: Comm>(comm: &M, back: &Backward<E>, mine: &Range<u64>, t: i8) {
    let ranks = comm.size();
    let segments = largest_slice(back.index.level_size(back.n), ranks).div_ceil(SEGMENT);
    // The outboxes of the round, filled by the tasks as they end.
    let sink: Mutex<Work> = Mutex::new(Work::default());
    let flush = |work: &mut Work| {
        if work.outbox.iter().any(|b| !b.is_empty()) {
            sink.lock().unwrap().merge(std::mem::take(&mut work.outbox));
        }
    };
    let mut round = 0;
    loop {
        if round < segments {
            let lo = (mine.start + round * SEGMENT).min(mine.end);
            let hi = (lo + SEGMENT).min(mine.end);
            (0..(hi - lo).div_ceil(CHUNK))
                .into_par_iter()
                .for_each_init(Work::default, |work, c| {
                    let start = lo + c * CHUNK;
                    back.seed_range(t, start..(start + CHUNK).min(hi), work);
                    flush(work);
                });
        }
        let mut outbox = std::mem::take(&mut sink.lock().unwrap().outbox);
        outbox.resize(ranks, Vec::new());
        let sent: u64 = outbox.iter().map(|b| b.len() as u64 / 8).sum();
        // Every rank knows `segments`, so all ask for the sum in the same rounds.
        if round + 1 >= segments && comm.sum(sent) == 0 {
            return;
        }
        let got = comm.exchange(outbox);
        // Every part is whole 8-byte messages, so the buffer cuts anywhere on 8 bytes.
        got.bytes()
            .par_chunks(8 * CHUNK as usize)
            .for_each_init(Work::default, |work, updates| {
                apply(back, t, updates, work);
                flush(work);
            });
        round += 1;
    }
}

/// The ranks of a level, as the backward pass sends to them: each message to the outbox of
/// the rank that holds the position it is for.
struct Ranks {
    /// Positions of the level.
    size: u64,
    ranks: usize,
}

impl Remote for Ranks {
    #[inline]
    fn send(&self, outbox: &mut Vec<Vec<u8>>, to: u64, m: Message) {
        if outbox.len() < self.ranks {
            outbox.resize(self.ranks, Vec::new());
        }
        let word = message::encode(m);
        outbox[owner(to, self.size, self.ranks)].extend_from_slice(&word.to_le_bytes());
    }
}

/// Applies the messages other ranks sent (words of [`message`]), and everything they
/// settle here in turn, a batch at a time: the cells of a batch's positions are
/// prefetched before any is read. Returns the positions handled.
fn apply<E: Settle>(back: &Backward<E>, t: i8, messages: &[u8], work: &mut Work) -> u64 {
    let mut settled = 0;
    for batch in messages.chunks(8 * BATCH) {
        for m in message::words(batch).map(message::decode) {
            if let Message::Settled { qi, .. } = m {
                prefetch(back.state.exit((qi - back.base) as usize));
            }
        }
        for m in message::words(batch).map(message::decode) {
            back.receive(m, t, work);
        }
        settled += back.drain(t, work);
    }
    settled
}

#[cfg(test)]
mod tests {
    use super::*;
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
    use crate::solve::ranks::local::LocalComm;

    /// Level `n` of 4-pit Oware over `ranks` thread ranks, each saving its checkpoints in
    /// `root/rank<r>` at every chance; `keep` copies, when the level is solved, what each
    /// rank's folder holds to `root/kept<r>` (a build killed after its last checkpoint).
    /// The slices concatenated, and the threshold each rank resumed at.
    fn solve_saved(
        root: &Path,
        n: usize,
        ranks: usize,
        kind: StateKind,
        keep: bool,
    ) -> (Vec<u8>, Vec<Option<u8>>) {
        let index = Index::new(4, n).unwrap();
        let truth = crate::solve::level::solve_in_memory(Rules::Oware, &index, n);
        let comms = LocalComm::group(ranks);
        let parts: Vec<(Vec<u8>, Option<u8>)> = std::thread::scope(|s| {
            let handles: Vec<_> = comms
                .iter()
                .map(|comm| {
                    let (index, truth) = (&index, &truth);
                    s.spawn(move || {
                        let r = comm.rank();
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
                            warn: &|w| panic!("rank {r} warned: {w}"),
                        };
                        let (values, _) = solve_slice_saved(
                            comm,
                            Rules::Oware,
                            index,
                            n,
                            kind,
                            &lower,
                            Some(&saved),
                            |v| {
                                if keep {
                                    let to = root.join(format!("kept{r}"));
                                    std::fs::create_dir_all(&to).unwrap();
                                    for e in std::fs::read_dir(&dir).unwrap() {
                                        let e = e.unwrap();
                                        std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
                                    }
                                }
                                v.to_vec()
                            },
                        );
                        assert!(saved.written.get() > 0 || saved.resumed.get().is_some());
                        (values, saved.resumed.get())
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
        )
    }

    /// Thread ranks save their slices at the same thresholds and resume from them, all
    /// together, to the single process's level; when one rank's checkpoint is damaged,
    /// every rank starts the level afresh, to the same level.
    #[test]
    fn ranks_resume_from_their_checkpoints_together() {
        for kind in [StateKind::Fast, StateKind::Compact] {
            let tmp = tempfile::tempdir().unwrap();
            let (root, n, ranks) = (tmp.path(), 14, 3);
            let (_, resumed) = solve_saved(root, n, ranks, kind, true);
            assert_eq!(resumed, vec![None; ranks]);
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
            let left = list_checkpoints(&root.join("rank1"), n, Part { rank: 1, ranks }).unwrap();
            assert_eq!(left.len(), 1, "{left:?}");
            let t = left[0].0;
            let (_, resumed) = solve_saved(root, n, ranks, kind, false);
            assert_eq!(resumed, vec![Some(t); ranks]);
            // Rank 2's checkpoint damaged: no rank resumes, each starts the level afresh.
            restore();
            let path = checkpoint_path(&root.join("rank2"), n, t, Part { rank: 2, ranks });
            let mut bytes = std::fs::read(&path).unwrap();
            *bytes.last_mut().unwrap() ^= 1;
            std::fs::write(&path, bytes).unwrap();
            let (_, resumed) = solve_saved(root, n, ranks, kind, false);
            assert_eq!(resumed, vec![None; ranks]);
        }
    }
}
