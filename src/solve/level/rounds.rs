//! The backward pass of a level over a partition (DESIGN.md sections 5.2, 5.4 and 5.5):
//! thresholds `t = n..1`, each in rounds. In a round every rank settles the seeds of the
//! next segment of its slice and drains the cascades they start among its own positions;
//! what concerns another rank's positions goes out in the exchange at the round's end and
//! is applied there. A single process is a partition of one rank ([`crate::solve::comm::Solo`]),
//! whose exchanges are empty: one code for both.
//!
//! A threshold's rounds may pause at a segment's end to save the state: the ranks stop
//! seeding, and once a round sends nothing anywhere no propagation is in flight, so the
//! state with the threshold and the segments done is consistent. A resume seeds from the
//! next segment on; a seed settled before is skipped, and one that a cascade made a seed is
//! settled by that cascade, so the values are the same.

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rayon::prelude::*;

use super::backward::{Backward, Buffers, Message, Remote, Settle};
use super::message;
use super::state::threshold_bit;
use super::PhaseTimes;
use crate::db::checkpoint::CheckpointHeader;
use crate::db::layout::{largest_slice, owner};
use crate::error::Result;
use crate::game::index::Index;
use crate::game::rules::Rules;
use crate::solve::comm::{together, Comm};
use crate::util::{LevelBar, BATCH, CHUNK};

/// The log2 of [`SEGMENT`].
pub const SEGMENT_SHIFT: u8 = if cfg!(test) { 13 } else { 22 };

/// Positions of a rank's slice whose seeds are settled in one round: it bounds the
/// outboxes of a round over ranks, and is the step at which a threshold may pause to save
/// (4,194,304 positions: a few hundredths of a second of a large level's threshold on 2
/// cores). Small in the unit tests, so that their small levels take many rounds.
pub const SEGMENT: u64 = 1 << SEGMENT_SHIFT;

/// Where a backward pass stands: at threshold `next` (every threshold above it done), its
/// first `segment` segments done, after `backward` of backward pass already (a level
/// resumed from a checkpoint).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Stage {
    /// The next threshold to run.
    pub(crate) next: i8,
    /// Segments of threshold `next` whose seeds are settled, and all they settled.
    pub(crate) segment: u32,
    /// Wall time the backward pass has taken so far.
    pub(crate) backward: Duration,
}

impl Stage {
    /// Where the checkpoint `head` left its level's backward pass. A segment of another
    /// size than this build's counts only as far as it covers whole segments of this one
    /// (seeding a segment again changes nothing).
    pub(crate) fn of_checkpoint(head: &CheckpointHeader) -> Stage {
        let scanned = u64::from(head.segment) << head.segment_shift;
        Stage {
            next: head.next as i8,
            segment: (scanned >> SEGMENT_SHIFT) as u32,
            backward: Duration::from_nanos(head.backward_ns),
        }
    }

    /// The start of level `n`'s backward pass, right after its forward pass.
    pub(crate) fn start(n: usize) -> Stage {
        Stage {
            next: n as i8,
            segment: 0,
            backward: Duration::ZERO,
        }
    }
}

/// Where the backward pass may save its state (DESIGN.md section 5.5). Both calls are
/// collective: every rank makes them at the same points and must answer alike.
pub(crate) trait Saves<E: Settle> {
    /// Whether a save is due now.
    fn due(&mut self) -> bool;
    /// When a save falls due on this rank, if ever: a process alone stops seeding at the
    /// end of the segment in which it passes, without asking at every segment.
    fn deadline(&self) -> Option<Instant>;
    /// Saves `state` at `stage`, no thread touching it and nothing in flight; `present` is
    /// the union of its threshold map, `times` the passes' times so far.
    fn save(&mut self, state: &mut E::Held, stage: Stage, present: u64, times: PhaseTimes);
}

/// No saves: the level is solved in one go.
#[cfg(test)]
pub(crate) struct NoSaves;

#[cfg(test)]
impl<E: Settle> Saves<E> for NoSaves {
    fn due(&mut self) -> bool {
        false
    }

    fn deadline(&self) -> Option<Instant> {
        None
    }

    fn save(&mut self, _: &mut E::Held, _: Stage, _: u64, _: PhaseTimes) {}
}

/// A level as one rank of a partition solves it: which positions it holds, and how it
/// talks to the ranks that hold the others.
pub(crate) struct Partition<'a, M: Comm> {
    pub(crate) comm: &'a M,
    pub(crate) rules: Rules,
    pub(crate) index: &'a Index,
    /// The level: seeds on every board.
    pub(crate) n: usize,
    /// The positions of the level held here (the whole level in one process).
    pub(crate) mine: Range<u64>,
    /// Advanced by the positions handled.
    pub(crate) progress: &'a LevelBar,
}

/// The backward pass of this rank's slice, whose state after the forward pass (or as a
/// checkpoint gave it back) is `state`, with the thresholds `present` here, from `from`
/// on; `forward` is the forward pass's time, counted in the times it gives. At each
/// threshold's start and inside it at each segment's end (not at `from` itself), the state
/// is saved where `saves` says it is due. The one backward pass of every state: fails
/// only where the lean state's files do (on every rank together).
pub(crate) fn backward_pass<E: Settle, M: Comm>(
    part: &Partition<M>,
    mut state: E::Held,
    present: u64,
    forward: Duration,
    from: Stage,
    saves: &mut dyn Saves<E>,
) -> Result<(E::Held, PhaseTimes)> {
    let (comm, n) = (part.comm, part.n);
    let ranks = comm.size();
    let size = part.index.level_size(n);
    // The thresholds that seed anything on any rank: a threshold `t` with no exit worth
    // `t` or `-t` anywhere settles nothing, and every rank skips it alike.
    let masks = comm.exchange(vec![present.to_le_bytes().to_vec(); ranks]);
    let needed = masks
        .parts()
        .fold(0, |a, m| a | u64::from_le_bytes(m.try_into().unwrap()));
    // Every rank knows the largest slice, so all run the same rounds.
    let segments = largest_slice(size, ranks).div_ceil(SEGMENT);
    let started = Instant::now();
    let times = || PhaseTimes {
        forward,
        backward: from.backward + started.elapsed(),
    };
    let stage = |next: i8, segment: u64| Stage {
        next,
        segment: segment as u32,
        backward: times().backward,
    };
    let remote = Owners { size, ranks };
    if from.next == n as i8 && from.segment == 0 && from.backward.is_zero() && saves.due() {
        saves.save(&mut state, from, present, times());
    }
    for t in (1..=from.next).rev() {
        if needed & threshold_bit(t) == 0 {
            continue;
        }
        let mut k = if t == from.next {
            from.segment as u64
        } else {
            0
        };
        loop {
            let back = Backward {
                rules: part.rules,
                index: part.index,
                n,
                state: &state,
                base: part.mine.start,
                remote: &remote,
            };
            let paused = threshold(part, &back, t, &mut k, segments, saves);
            let after = E::after(&mut state, t, !paused);
            together(comm, after, "could not go on with their lean state's files")?;
            if !paused {
                break;
            }
            saves.save(&mut state, stage(t, k), present, times());
        }
        if t > 1 && saves.due() {
            saves.save(&mut state, stage(t - 1, 0), present, times());
        }
    }
    Ok((state, times()))
}

/// Threshold `t` over this rank's slice from segment `k` on, in rounds until no rank has
/// anything left to send: `false` when it is done, `true` when it paused for a save after
/// segment `k` (every rank at the same one). Over ranks a round seeds one segment, which
/// bounds what it sends; a process alone seeds every segment left in one round, and
/// stops at the end of a segment only when a save falls due (a round's end waits for
/// every thread, which ranks pay to bound their outboxes; a process alone has none).
fn threshold<E: Settle, M: Comm>(
    part: &Partition<M>,
    back: &Backward<E>,
    t: i8,
    k: &mut u64,
    segments: u64,
    saves: &mut dyn Saves<E>,
) -> bool {
    let comm = part.comm;
    let ranks = comm.size();
    // The outboxes of the round, filled by the tasks as they end.
    let sink: Mutex<Buffers> = Mutex::new(Buffers::default());
    let flush = |work: &mut Buffers| {
        if work.outbox.iter().any(|b| !b.is_empty()) {
            sink.lock().unwrap().merge(std::mem::take(&mut work.outbox));
        }
    };
    let first = *k;
    let mut pausing = false;
    loop {
        if !pausing && *k < segments {
            // Every rank asks in the same rounds: `k` and `segments` are the same on all.
            pausing = ranks > 1 && *k > first && saves.due();
            if !pausing {
                let (upto, deadline) = match ranks {
                    1 => (segments, saves.deadline()),
                    _ => (*k + 1, None),
                };
                let reached = seed(part, back, t, *k..upto, deadline, &flush);
                pausing = reached < upto;
                *k = reached;
            }
        }
        let mut outbox = std::mem::take(&mut sink.lock().unwrap().outbox);
        outbox.resize(ranks, Vec::new());
        let sent: u64 = outbox.iter().map(|b| b.len() as u64 / 8).sum();
        if comm.sum(sent) == 0 {
            // Nothing in flight anywhere.
            if pausing {
                return true;
            }
            if *k >= segments {
                return false;
            }
            continue;
        }
        let got = comm.exchange(outbox);
        // Every part is whole 8-byte messages, so the buffer cuts anywhere on 8 bytes.
        got.bytes().par_chunks(8 * CHUNK as usize).for_each_init(
            Buffers::default,
            |work, updates| {
                part.progress.inc(apply(back, t, updates, work));
                flush(work);
            },
        );
    }
}

/// Settles the seeds of threshold `t` in the segments `segments` of this rank's slice,
/// with everything they settle here, by the rayon threads: each takes the next chunk in
/// index order, so that the chunks done are always the first ones. Once `deadline` has
/// passed, no chunk past the end of the segment being seeded is taken. Returns the
/// segments done: every seed of a segment below it is settled (a chunk taken past it is
/// done too, and seeding it again changes nothing).
fn seed<E: Settle, M: Comm>(
    part: &Partition<M>,
    back: &Backward<E>,
    t: i8,
    segments: Range<u64>,
    deadline: Option<Instant>,
    flush: &(dyn Fn(&mut Buffers) + Sync),
) -> u64 {
    let mine = &part.mine;
    // Chunks of a segment: a segment of the slice is cut into chunks of its own.
    let per = SEGMENT.div_ceil(CHUNK);
    let next = AtomicU64::new(segments.start * per);
    let stop = AtomicU64::new(segments.end * per);
    let threads = rayon::current_num_threads();
    (0..threads)
        .into_par_iter()
        .for_each_init(Buffers::default, |work, _| loop {
            let c = next.fetch_add(1, Relaxed);
            if c >= stop.load(Relaxed) {
                break;
            }
            let segment = (mine.start + c / per * SEGMENT).min(mine.end);
            let start = (segment + c % per * CHUNK).min(mine.end);
            let end = (start + CHUNK).min(segment + SEGMENT).min(mine.end);
            if start < end {
                part.progress.inc(back.seed_range(t, start..end, work));
                flush(work);
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                stop.fetch_min((c / per + 1) * per, Relaxed);
            }
        });
    stop.load(Relaxed).min(segments.end * per) / per
}

/// The ranks of a level, as the backward pass sends to them: each message to the outbox of
/// the rank that holds the position it is for. (A single process holds every position and
/// sends nothing.)
pub(super) struct Owners {
    /// Positions of the level.
    pub(super) size: u64,
    pub(super) ranks: usize,
}

impl Remote for Owners {
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
fn apply<E: Settle>(back: &Backward<E>, t: i8, messages: &[u8], work: &mut Buffers) -> u64 {
    let mut settled = 0;
    for batch in messages.chunks(8 * BATCH) {
        for m in message::words(batch).map(message::decode) {
            if let Message::Settled { qi, .. } | Message::Lost { qi } = m {
                E::prefetch(back.state, qi - back.base);
            }
        }
        for m in message::words(batch).map(message::decode) {
            back.receive(m, t, work);
        }
        settled += back.drain(t, work);
    }
    settled
}
