//! The forward pass: every position's own moves (game ends, forced moves, in-level moves
//! counted) and its best exit, the best capture valued from the finished lower levels,
//! read at random ([`forward_pass`]) or as a stream ([`forward_stream`]).

use std::fs::File;
use std::ops::Range;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rayon::prelude::*;

use super::message;
use super::raises::{push_raise, Spilled};
use super::rounds::Partition;
use super::state::{exit_and_stay, Encoding, State};
use crate::db::layout::{self, owner};
use crate::error::{Error, Result};
use crate::game::index::Index;
use crate::game::rules::Rules;
use crate::game::scan::{
    lowest_captured_level, scan_exits, scan_uncaptures, LowerRun, LowerValues, Stream,
};
use crate::solve::comm::{together, Comm};
use crate::util::{prefetch, LevelBar, CHUNK};

/// Positions per stripe of a forward pass that spills its state (32 MiB of fast state; a
/// multiple of [`CHUNK`]).
const STRIPE: u64 = if cfg!(test) { 2 * CHUNK } else { 1 << 24 };
#[cfg(test)]
pub(crate) const STRIPE_IN_TESTS: u64 = STRIPE;

/// A level after its forward pass ([`forward_pass`], [`forward_stream`]), ready for
/// [`super::backward_pass`].
pub(crate) struct Forwarded<E: Encoding> {
    pub(crate) state: State<E>,
    /// The thresholds some position can seed at ([`State::survey`]).
    pub(crate) present: u64,
    pub(crate) forward: Duration,
}

impl<E: Encoding> Forwarded<E> {
    /// Reads back the state that a forward pass with `spill` wrote there (counted as
    /// forward time).
    pub(crate) fn restore(&mut self, spill: &File) -> std::io::Result<()> {
        let start = Instant::now();
        self.state.restore(spill)?;
        self.forward += start.elapsed();
        Ok(())
    }
}

/// Solving level `n`, whose lower levels `lower` must hold, part one: the forward pass,
/// reading each capture's child where it lies. `progress` is advanced by positions here
/// and by positions settled in [`super::backward_pass`], which gives the level's state;
/// [`State::into_values`] then gives its values in index order.
///
/// With `spill`, an empty file, the state never shares memory with the lower levels:
/// the forward pass goes in stripes, each written to `spill` (while the next one is
/// computed) and its memory given back. The caller can then let go of the lower levels
/// (the backward pass reads none) before [`super::backward_pass`] reads the state back.
/// Peak memory is then about the larger of the lower levels and the state, not their sum.
/// Fails only on the spill file's errors.
pub(crate) fn forward_pass<E: Encoding, L: LowerValues + ?Sized>(
    rules: Rules,
    index: &Index,
    n: usize,
    lower: &L,
    progress: &LevelBar,
    mut spill: Option<&mut File>,
) -> std::io::Result<Forwarded<E>> {
    let size = index.level_size(n);
    let mut state = State::<E>::new(size);
    let start = Instant::now();
    let stripe = if spill.is_some() { STRIPE } else { size.max(1) };
    let mut present = 0;
    // The stripe done before this one, written to the spill file while this one is
    // computed: the write takes one thread (copying into the page cache), which the
    // forward pass has the other threads for, and takes back once the write is done.
    let mut unspilled: Option<Range<usize>> = None;
    for first in (0..size).step_by(stripe as usize) {
        let end = (first + stripe).min(size);
        let compute = |state: &State<E>| {
            forward_chunks(
                rules,
                index,
                n,
                lower,
                state,
                first / CHUNK..end.div_ceil(CHUNK),
                progress,
            )
        };
        match (spill.as_deref_mut(), unspilled.take()) {
            (Some(file), Some(done)) => {
                let state = &state;
                // SAFETY: the forward pass of this stripe touches only its own cells, none
                // of `done`'s, and nothing else runs meanwhile.
                let (written, ()) =
                    rayon::join(|| unsafe { state.spill(done, file) }, || compute(state));
                written?;
            }
            _ => compute(&state),
        }
        present |= state.survey(first as usize..end as usize);
        if spill.is_some() {
            unspilled = Some(first as usize..end as usize);
        }
    }
    if let (Some(file), Some(done)) = (spill, unspilled) {
        // SAFETY: the forward pass is over: no thread uses the state.
        unsafe { state.spill(done, file)? };
    }
    Ok(Forwarded {
        state,
        present,
        forward: start.elapsed(),
    })
}

/// Lower positions a rank streams per forward round over ranks: bounds the updates it
/// sends in a round. (Small in the unit tests, so that their small levels take many
/// rounds.)
pub const ROUND: u64 = if cfg!(test) { 1 << 12 } else { 1 << 18 };

/// Solving this rank's slice of a level (the whole level in a process alone), part one,
/// with the lower levels read as streams (DESIGN.md sections 5.2 and 5.4): first the own
/// moves of its positions (game ends, forced moves, in-level moves counted), then every
/// position of its slices of levels `n - 2` down to the lowest a capture reaches, in index
/// order, hands `captured - v(child)` to each of its parents by un-captures: a parent held
/// here is raised at once (an atomic max), any other is sent to its owner (8 bytes: the
/// index, and the value in the top byte), which raises it when it arrives. Over ranks the
/// slices go in rounds of a piece of [`ROUND`] positions each, one message per
/// destination and round (every rank knows every slice, so all run the same rounds); a
/// process alone reads everything in one round. The lower levels are read once, a chunk
/// at a time; only this level's state is in memory. Fails only when `lower` cannot be
/// read (on every rank at once).
///
/// With a `window` other than [`Window::WHOLE`], the state holds only that window of each
/// rank's slice (the lean state's forward pass, DESIGN.md section 5.6), the first: a
/// parent in another window of this rank's slice is kept in that window's file of
/// `spills` (window `k` in `spills[k - 1]`), which [`forward_spilled`] then takes up; one
/// in another rank's slice is sent to that rank, which holds or keeps it alike.
pub(crate) fn forward_stream<E: Encoding, M: Comm, S: Stream + ?Sized>(
    part: &Partition<M>,
    lower: &S,
    window: Window,
    spills: &[Spilled],
) -> Result<Forwarded<E>> {
    assert!(window.k == 0 && spills.len() + 1 == window.count);
    let start = Instant::now();
    let (comm, rules, index, n) = (part.comm, part.rules, part.index, part.n);
    let (rank, ranks) = (comm.rank(), comm.size());
    let size = index.level_size(n);
    let mine = window.of(part.mine.clone());
    let held = mine.end - mine.start;
    let whole = window.count == 1;
    let state = State::<E>::new(held);
    let progress = part.progress;
    // The forward half of the bar: half for the own moves, half for the stream.
    let half = held / 2;
    state.own_moves(rules, index, n, mine.clone(), mine.start, |done| {
        progress.inc(done * half / held.max(1))
    });
    let levels = || lowest_captured_level(index.pits_per_side(), n)..n.saturating_sub(1);
    let slice_of = |m: usize, r: usize| layout::slice(index.level_size(m), ranks, r);
    let total: u64 = levels()
        .map(|m| slice_of(m, rank).end - slice_of(m, rank).start)
        .sum();
    // The pieces of rank `r`'s slices of the lower levels, in order: over ranks of
    // [`ROUND`] positions, a piece a round, which bounds what a round sends; a process
    // alone reads each level whole, all in one round.
    let step = if ranks == 1 { u64::MAX } else { ROUND };
    let pieces_of = |r: usize| {
        levels().flat_map(move |m| {
            let part = slice_of(m, r);
            let count = (part.end - part.start).div_ceil(step);
            (0..count).map(move |k| {
                let a = part.start + k * step;
                (m, a..a.saturating_add(step).min(part.end))
            })
        })
    };
    let mine_pieces: Vec<(usize, Range<u64>)> = pieces_of(rank).collect();
    let rounds: Vec<&[(usize, Range<u64>)]> = if ranks == 1 {
        vec![&mine_pieces[..]]
    } else {
        mine_pieces.chunks(1).collect()
    };
    // Every rank takes part in the most rounds any rank needs.
    let count = match ranks {
        1 => rounds.len(),
        _ => (0..ranks).map(|r| pieces_of(r).count()).max().unwrap_or(0),
    };
    let base = mine.start;
    let slice = part.mine.clone();
    let slice_len = slice.end - slice.start;
    // Where a raise of this rank's slice outside the window held goes: the window's file,
    // at its offset in the window.
    let keep = |qi: u64, x: i8, kept: &mut [Vec<u8>]| {
        let at = qi - slice.start;
        let k = owner(at, slice_len, window.count);
        let first = layout::slice(slice_len, window.count, k).start;
        push_raise(&mut kept[k - 1], at - first, x);
    };
    let keep_all = |kept: &mut [Vec<u8>]| {
        spills
            .iter()
            .zip(kept.iter_mut())
            .try_for_each(|(spill, k)| spill.append(k))
    };
    for round in 0..count {
        let pieces = rounds.get(round).copied().unwrap_or_default();
        let sent: Mutex<Vec<Vec<u8>>> = Mutex::new(vec![Vec::new(); ranks]);
        let state = &state;
        let read = pieces.iter().try_for_each(|(m, piece)| {
            let (m, piece) = (*m, piece.clone());
            (0..(piece.end - piece.start).div_ceil(CHUNK))
                .into_par_iter()
                .try_for_each_init(
                    || {
                        (
                            Vec::new(),
                            vec![Vec::new(); ranks],
                            vec![Vec::new(); spills.len()],
                        )
                    },
                    |(values, out, kept): &mut (Vec<u8>, Vec<Vec<u8>>, Vec<Vec<u8>>), c| {
                        let first = piece.start + c * CHUNK;
                        let end = (first + CHUNK).min(piece.end);
                        values.resize((end - first) as usize, 0);
                        lower.read(m, first, values)?;
                        let run = LowerRun {
                            m,
                            start: first,
                            values,
                        };
                        if ranks == 1 && whole {
                            // Every parent is held: no test on the way.
                            let touch = |qi: u64| prefetch(state.exit_addr(qi as usize));
                            let apply = |qi: u64, x: i8, _| state.raise(qi as usize, x);
                            scan_uncaptures(rules, index, n, run, touch, apply);
                        } else {
                            // A window, or ranks: a parent not held here is another
                            // window's (kept) or another rank's (sent).
                            let touch = |qi: u64| {
                                if qi.wrapping_sub(base) < held {
                                    prefetch(state.exit_addr((qi - base) as usize));
                                }
                            };
                            let apply = |qi: u64, x: i8, _| {
                                if qi.wrapping_sub(base) < held {
                                    state.raise((qi - base) as usize, x);
                                } else if slice.contains(&qi) {
                                    keep(qi, x, kept);
                                } else {
                                    let word = message::raise(qi, x);
                                    out[owner(qi, size, ranks)]
                                        .extend_from_slice(&word.to_le_bytes());
                                }
                            };
                            scan_uncaptures(rules, index, n, run, touch, apply);
                            keep_all(kept)?;
                        }
                        progress.inc(
                            ((end - first) as u128 * (held - half) as u128 / total as u128) as u64,
                        );
                        if out.iter().any(|o| !o.is_empty()) {
                            let mut sent = sent.lock().unwrap();
                            for (to, part) in sent.iter_mut().zip(out.iter_mut()) {
                                to.append(part);
                            }
                        }
                        Ok(())
                    },
                )
        });
        // Every rank learns whether all could read, so that all stop alike.
        if comm.sum(read.is_err() as u64) > 0 {
            read?;
            return Err(Error::Input(
                "another rank could not read its slices of the lower levels or keep its \
                 raises"
                    .into(),
            ));
        }
        let got = comm.exchange(sent.into_inner().unwrap());
        let kept = got
            .bytes()
            .par_chunks(8 * CHUNK as usize)
            .try_for_each_init(
                || vec![Vec::new(); spills.len()],
                |kept, got| {
                    for (qi, x) in message::words(got).map(message::raised) {
                        if qi.wrapping_sub(base) < held {
                            state.raise((qi - base) as usize, x);
                        } else {
                            keep(qi, x, kept);
                        }
                    }
                    keep_all(kept)
                },
            );
        together(comm, kept, "could not keep the raises of a later window")?;
    }
    let mut state = state;
    let present = state.survey(0..held as usize);
    Ok(Forwarded {
        state,
        present,
        forward: start.elapsed(),
    })
}

/// The state of window `window` (not the first) of this rank's slice after the forward
/// pass: its own moves, and the raises [`forward_stream`] kept for it in `spilled`.
pub(crate) fn forward_spilled<E: Encoding, M: Comm>(
    part: &Partition<M>,
    window: Window,
    spilled: Spilled,
) -> Result<State<E>> {
    let mine = window.of(part.mine.clone());
    let held = mine.end - mine.start;
    let state = State::<E>::new(held);
    let (progress, half) = (part.progress, held / 2);
    state.own_moves(
        part.rules,
        part.index,
        part.n,
        mine.clone(),
        mine.start,
        |done| progress.inc(done * half / held.max(1)),
    );
    spilled.apply(&state)?;
    progress.inc(held - half);
    Ok(state)
}

/// Which part of each rank's slice of a level a forward pass holds: window `k` of the
/// slice cut into `count` windows as ranks cut a level ([`layout::slice`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Window {
    pub(crate) k: usize,
    pub(crate) count: usize,
}

impl Window {
    /// The whole slice.
    pub(crate) const WHOLE: Window = Window { k: 0, count: 1 };

    /// The window of `range`.
    pub(crate) fn of(self, range: Range<u64>) -> Range<u64> {
        let cut = layout::slice(range.end - range.start, self.count, self.k);
        range.start + cut.start..range.start + cut.end
    }
}

/// The forward pass over the chunks `chunks` of level `n`, in parallel: the best exit
/// and the in-level moves of every position, into `state`.
fn forward_chunks<E: Encoding, L: LowerValues + ?Sized>(
    rules: Rules,
    index: &Index,
    n: usize,
    lower: &L,
    state: &State<E>,
    chunks: Range<u64>,
    progress: &LevelBar,
) {
    let size = index.level_size(n);
    chunks.into_par_iter().for_each(|c| {
        let start = c * CHUNK;
        let end = (start + CHUNK).min(size);
        scan_exits(
            rules,
            index,
            n,
            lower,
            start,
            (end - start) as usize,
            |j, exits, best| {
                let (b, stay) = exit_and_stay(exits, n, best);
                state.init(start as usize + j, stay, b);
            },
        );
        progress.inc(end - start);
    });
}
