//! The forward pass: every position's own moves (game ends, forced moves, in-level moves
//! counted) and its best exit, the best capture valued from the finished lower levels,
//! read at random ([`forward_pass`]) or as a stream ([`forward_stream`]).

use std::fs::File;
use std::ops::Range;
use std::time::{Duration, Instant};

use rayon::prelude::*;

use super::state::{exit_and_stay, Encoding, State};
use crate::error::Result;
use crate::game::index::Index;
use crate::game::rules::Rules;
use crate::game::scan::{
    lowest_captured_level, scan_exits, scan_uncaptures, LowerRun, LowerValues, Stream,
};
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

/// Solving level `n`, part one, with the lower levels read as a stream: each position's
/// own moves first (the game ends, forced moves, in-level moves counted), then every
/// position of levels `n - 2` down to the lowest a capture reaches, in index order, hands
/// `captured - v(child)` to each of its parents here by un-captures (an atomic max). The
/// lower levels are read once, a chunk at a time; only this level's state is in memory.
/// Fails only when `lower` cannot be read.
pub(crate) fn forward_stream<E: Encoding, S: Stream + ?Sized>(
    rules: Rules,
    index: &Index,
    n: usize,
    lower: &S,
    progress: &LevelBar,
) -> Result<Forwarded<E>> {
    let size = index.level_size(n);
    let mut state = State::<E>::new(size);
    let start = Instant::now();
    // The forward half of the bar: half for the own moves, half for the stream.
    let half = size / 2;
    state.own_moves(rules, index, n, 0..size, 0, |done| {
        progress.inc(done * half / size.max(1))
    });
    let levels = || lowest_captured_level(index.pits_per_side(), n)..n.saturating_sub(1);
    let total: u64 = levels().map(|m| index.level_size(m)).sum();
    for m in levels() {
        let len = index.level_size(m);
        let state = &state;
        (0..len.div_ceil(CHUNK)).into_par_iter().try_for_each_init(
            Vec::new,
            |values: &mut Vec<u8>, c| {
                let first = c * CHUNK;
                let end = (first + CHUNK).min(len);
                values.resize((end - first) as usize, 0);
                lower.read(m, first, values)?;
                scan_uncaptures(
                    rules,
                    index,
                    n,
                    LowerRun {
                        m,
                        start: first,
                        values,
                    },
                    |qi| prefetch(state.exit_addr(qi as usize)),
                    |qi, x, _| state.raise(qi as usize, x),
                );
                progress
                    .inc(((end - first) as u128 * (size - half) as u128 / total as u128) as u64);
                Ok(())
            },
        )?;
    }
    let present = state.survey(0..size as usize);
    Ok(Forwarded {
        state,
        present,
        forward: start.elapsed(),
    })
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
