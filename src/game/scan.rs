//! A run of a level's positions in index order with the moves that leave the level
//! valued: the inner loop that the solver's forward pass (DESIGN.md section 5) and the
//! exit model of packed levels (section 7) share.
//!
//! Positions go in batches: first every move of the batch is generated and the
//! lower-level value of each capture prefetched, then the values are read, so that the
//! random reads of a batch overlap instead of waiting one after another.
//!
//! The other way round, [`scan_uncaptures`] runs through a lower level's positions in
//! index order and hands each capture's value to its parents in the level above, so that
//! a lower level is read once, as a stream, and only the level being built is touched at
//! random.

use crate::error::Result;
use crate::game::index::Index;
use crate::game::rules::{for_each_exit_p, for_each_uncapture_p, Board, Exits, Rules, MAX_PITS};
use crate::util::{prefetch, BATCH};

/// The best exit of a position with no capture among its legal moves.
pub const NO_EXIT: i8 = i8::MIN;

/// Read access to the values of finished levels.
pub trait LowerValues: Sync {
    /// The value of the stored position with index `index` in level `seeds`.
    fn value(&self, seeds: usize, index: u64) -> i8;

    /// A hint that `value(seeds, index)` will be asked soon.
    #[inline]
    fn prefetch(&self, _seeds: usize, _index: u64) {}
}

/// Levels as slices of their values: `self[m]` is level `m`.
impl LowerValues for [&[u8]] {
    #[inline]
    fn value(&self, seeds: usize, index: u64) -> i8 {
        self[seeds][index as usize] as i8
    }

    #[inline]
    fn prefetch(&self, seeds: usize, index: u64) {
        prefetch(&self[seeds][index as usize]);
    }
}

/// Calls `f(j, exits, best)` for the positions `start + j`, `j` in `0..len` in order, of
/// level `n`: `exits` as [`for_each_exit`] gives them, `best` the best
/// `captured - v(child)` over the capturing moves ([`NO_EXIT`] if none), each child read
/// from `lower`.
#[inline]
pub fn scan_exits<L: LowerValues + ?Sized>(
    rules: Rules,
    index: &Index,
    n: usize,
    lower: &L,
    start: u64,
    len: usize,
    f: impl FnMut(usize, Exits, i8),
) {
    with_pits!(index.pits_per_side(), P => scan_exits_p::<P, L>(rules, index, n, lower, start, len, f))
}

/// [`scan_exits`] with the pits per side, `P`, known at compile time (the index's).
#[inline(always)]
fn scan_exits_p<const P: usize, L: LowerValues + ?Sized>(
    rules: Rules,
    index: &Index,
    n: usize,
    lower: &L,
    start: u64,
    len: usize,
    mut f: impl FnMut(usize, Exits, i8),
) {
    if len == 0 {
        return;
    }
    let mut board = index.unrank(n, start);
    let mut exits = [Exits::AllEnd; BATCH];
    let mut best = [NO_EXIT; BATCH];
    let mut reads = [(0u8, 0u8, 0u64); BATCH * MAX_PITS];
    let mut i = 0;
    while i < len {
        let k = (len - i).min(BATCH);
        let mut nreads = 0;
        for (slot, e) in exits[..k].iter_mut().enumerate() {
            *e = for_each_exit_p::<P>(&board, rules, |c, child| {
                let m = n - c as usize;
                let ci = index.rank_in_p::<P>(child, m);
                lower.prefetch(m, ci);
                reads[nreads] = (slot as u8, c, ci);
                nreads += 1;
            });
            if i + slot + 1 < len {
                index.next_p::<P>(&mut board);
            }
        }
        best[..k].fill(NO_EXIT);
        for &(slot, c, ci) in &reads[..nreads] {
            let v = c as i8 - lower.value(n - c as usize, ci);
            best[slot as usize] = best[slot as usize].max(v);
        }
        for slot in 0..k {
            f(i + slot, exits[slot], best[slot]);
        }
        i += k;
    }
}

/// Finished levels read in index order, a run of positions at a time: from their files
/// (raw or packed) or from memory.
pub trait Stream: Sync {
    /// Fills `out` with the values of level `seeds` from index `start` on.
    fn read(&self, seeds: usize, start: u64, out: &mut [u8]) -> Result<()>;
}

/// Levels as slices of their values: `self[m]` is level `m`.
impl Stream for [&[u8]] {
    fn read(&self, seeds: usize, start: u64, out: &mut [u8]) -> Result<()> {
        let start = start as usize;
        out.copy_from_slice(&self[seeds][start..start + out.len()]);
        Ok(())
    }
}

/// The lowest level whose positions a capture from level `n` can reach on a board of
/// `p` pits per side: a capture takes at most `p - 1` pits of 2 or 3 seeds (taking all
/// `p` would leave the opponent no seeds, which is no capture exit).
pub fn lowest_captured_level(p: usize, n: usize) -> usize {
    n.saturating_sub(3 * (p - 1))
}

/// A run of consecutive positions of a lower level with their values: positions
/// `start + j` of level `m`, worth `values[j]`.
#[derive(Clone, Copy, Debug)]
pub struct LowerRun<'a> {
    /// The level.
    pub m: usize,
    /// The index of the first position.
    pub start: u64,
    /// Their values, one signed byte each.
    pub values: &'a [u8],
}

/// Runs through the positions of `run` (of a level `m`) and gives the value of every
/// capture leading to one of them from a stored position of level `n > m` to that parent:
/// `apply(parent index, captured - v(child), child index)`. `touch(parent index)` is called
/// a batch ahead of `apply` with the same index, for a prefetch, so that the random
/// accesses of a batch overlap.
#[inline]
pub fn scan_uncaptures(
    rules: Rules,
    index: &Index,
    n: usize,
    run: LowerRun,
    touch: impl FnMut(u64),
    apply: impl FnMut(u64, i8, u64),
) {
    with_pits!(index.pits_per_side(), P => scan_uncaptures_p::<P>(rules, index, n, run, touch, apply))
}

/// [`scan_uncaptures`] with the pits per side, `P`, known at compile time (the index's).
#[inline(always)]
fn scan_uncaptures_p<const P: usize>(
    rules: Rules,
    index: &Index,
    n: usize,
    run: LowerRun,
    mut touch: impl FnMut(u64),
    mut apply: impl FnMut(u64, i8, u64),
) {
    let LowerRun { m, start, values } = run;
    if values.is_empty() || m + 2 > n {
        return;
    }
    let captured = n - m;
    // The board as one word, stepped by `next_word_p`, so that the un-captures' word
    // reads of it can stay in registers (with a `Board` stepped by `next_p` instead,
    // `scan_uncaptures` took about 6 % more samples on levels 0..=17).
    let mut word = u128::from_le_bytes(*index.unrank(m, start).raw());
    let mut ahead: Vec<(u64, i8, u64)> = Vec::with_capacity(64);
    let mut pending: Vec<(u64, i8, u64)> = Vec::with_capacity(64);
    for (j, &v) in values.iter().enumerate() {
        let x = captured as i8 - v as i8;
        let ci = start + j as u64;
        let board = Board::from_word_p::<P>(word);
        for_each_uncapture_p::<P>(&board, captured, rules, |parent, stored| {
            if stored {
                let qi = index.rank_in_p::<P>(parent, n);
                touch(qi);
                ahead.push((qi, x, ci));
            }
        });
        if j % BATCH == BATCH - 1 {
            for &(qi, x, ci) in &pending {
                apply(qi, x, ci);
            }
            pending.clear();
            std::mem::swap(&mut pending, &mut ahead);
        }
        if j + 1 < values.len() {
            index.next_word_p::<P>(&mut word);
        }
    }
    for &(qi, x, ci) in pending.iter().chain(&ahead) {
        apply(qi, x, ci);
    }
}
