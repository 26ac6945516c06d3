//! A run of a level's positions in index order with the moves that leave the level
//! valued: the inner loop that the solver's forward pass (DESIGN.md section 5) and the
//! exit model of packed levels (section 7) share.
//!
//! Positions go in batches: first every move of the batch is generated and the
//! lower-level value of each capture prefetched, then the values are read, so that the
//! random reads of a batch overlap instead of waiting one after another.

use crate::game::index::Index;
use crate::game::rules::{for_each_exit, Exits, Rules, MAX_PITS};
use crate::util::prefetch;

/// The best exit of a position with no capture among its legal moves.
pub const NO_EXIT: i8 = i8::MIN;

/// Positions whose moves are generated before their lower-level values are read.
const BATCH: usize = 16;

/// Read access to the values of finished levels.
pub trait Lower: Sync {
    /// The value of the stored position with index `index` in level `seeds`.
    fn value(&self, seeds: usize, index: u64) -> i8;

    /// A hint that `value(seeds, index)` will be asked soon.
    #[inline]
    fn prefetch(&self, _seeds: usize, _index: u64) {}
}

/// Levels as slices of their values: `self[m]` is level `m`.
impl Lower for [&[u8]] {
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
pub fn scan_exits<L: Lower + ?Sized>(
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
            *e = for_each_exit(&board, rules, |c, child| {
                let m = n - c as usize;
                let ci = index.rank_in(child, m);
                lower.prefetch(m, ci);
                reads[nreads] = (slot as u8, c, ci);
                nreads += 1;
            });
            if i + slot + 1 < len {
                index.next(&mut board);
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
