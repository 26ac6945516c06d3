//! Solving one level exactly (DESIGN section 5): a forward pass that scores every move
//! leaving the level and counts the moves staying in it, then a backward pass over
//! thresholds `t = n..1` that settles wins and losses by predecessor propagation.
//!
//! Working memory is one `u16` per position: the low byte holds the best exit value
//! `b[p]` until the position is settled and its value after; the high byte holds the
//! settled mark and the count of in-level moves not yet known to reach a child worth
//! `>= t`. Lower levels are only read.

use std::sync::atomic::{AtomicU16, AtomicU64, Ordering::Relaxed};

use indicatif::ProgressBar;
use rayon::prelude::*;

use crate::index::Index;
use crate::rules::{for_each_unmove, legal_moves, Board, Rules};

/// Read access to the values of finished levels.
pub trait Lower: Sync {
    /// The value of the stored position with index `index` in level `seeds`.
    fn value(&self, seeds: usize, index: u64) -> i8;
}

/// `b[p]` when no move leaves the level.
const NO_EXIT: i8 = i8::MIN;
const SETTLED: u16 = 0x8000;
const COUNT_ONE: u16 = 0x0100;
const COUNT_MASK: u16 = 0x0f00;
/// Positions handled per parallel task: large enough to amortise an unrank, small enough
/// to balance two to a few dozen threads.
const CHUNK: u64 = 1 << 14;

/// What solving a level found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LevelStats {
    pub positions: u64,
    /// Positions won, drawn and lost by the side to move.
    pub won: u64,
    pub drawn: u64,
    pub lost: u64,
}

impl LevelStats {
    pub fn add(&mut self, v: i8) {
        self.positions += 1;
        match v {
            1.. => self.won += 1,
            0 => self.drawn += 1,
            _ => self.lost += 1,
        }
    }

    pub fn of(payload: &[u8]) -> LevelStats {
        let mut s = LevelStats::default();
        for &v in payload {
            s.add(v as i8);
        }
        s
    }
}

/// The forward pass for one position: `(b, k)`, the best value among moves that leave
/// the level or end the game (`NO_EXIT` if none) and the number of moves that stay.
#[inline]
pub fn exits<L: Lower + ?Sized>(board: &Board, rules: Rules, index: &Index, lower: &L) -> (i8, u8) {
    let n = board.seeds();
    let moves = legal_moves(board, rules);
    if let Some(v) = moves.terminal_value {
        return (v, 0);
    }
    let mut best = NO_EXIT;
    let mut stay = 0u8;
    for m in moves.as_slice() {
        let v = if m.ends_game {
            n as i8
        } else if m.captured > 0 {
            let c = m.captured as usize;
            m.captured as i8 - lower.value(n - c, index.rank(&m.child))
        } else {
            stay += 1;
            continue;
        };
        best = best.max(v);
    }
    (best, stay)
}

/// Solves level `n`, whose lower levels `lower` must hold, and returns its values in
/// index order. `progress`, if given, is advanced by positions in the forward pass and
/// by positions settled in the backward pass.
pub fn solve_level<L: Lower + ?Sized>(
    rules: Rules,
    index: &Index,
    n: usize,
    lower: &L,
    progress: Option<&ProgressBar>,
) -> Vec<AtomicU16> {
    let size = index.level_size(n);
    let chunks = size.div_ceil(CHUNK);
    let state: Vec<AtomicU16> = (0..size)
        .into_par_iter()
        .map(|_| AtomicU16::new(0))
        .collect();
    // How many positions have each exit value, to skip thresholds that seed nothing.
    let hist: Vec<AtomicU64> = (0..256).map(|_| AtomicU64::new(0)).collect();

    // Forward pass.
    (0..chunks).into_par_iter().for_each(|c| {
        let start = c * CHUNK;
        let end = (start + CHUNK).min(size);
        let mut board = index.unrank(n, start);
        let mut local = [0u64; 256];
        for i in start..end {
            let (b, k) = exits(&board, rules, index, lower);
            state[i as usize].store(((k as u16) << 8) | b as u8 as u16, Relaxed);
            local[b as u8 as usize] += 1;
            if i + 1 < end {
                index.next(&mut board);
            }
        }
        for (h, &l) in hist.iter().zip(&local) {
            if l > 0 {
                h.fetch_add(l, Relaxed);
            }
        }
        if let Some(pb) = progress {
            pb.inc(end - start);
        }
    });

    // Backward pass.
    let solver = Backward {
        rules,
        index,
        n,
        state: &state,
    };
    for t in (1..=n as i8).rev() {
        if hist[t as u8 as usize].load(Relaxed) == 0 && hist[(-t) as u8 as usize].load(Relaxed) == 0
        {
            continue;
        }
        (0..chunks)
            .into_par_iter()
            .for_each_init(Vec::new, |stack, c| {
                let start = c * CHUNK;
                let end = (start + CHUNK).min(size);
                let mut settled = 0u64;
                for i in start..end {
                    let s = state[i as usize].load(Relaxed);
                    if s & SETTLED != 0 {
                        continue;
                    }
                    let b = s as u8 as i8;
                    let seed = if b == t {
                        t
                    } else if b == -t && s & COUNT_MASK == 0 {
                        -t
                    } else {
                        continue;
                    };
                    if solver.settle(i, seed) {
                        stack.push(i);
                        settled += solver.drain(t, stack);
                    }
                }
                if let Some(pb) = progress {
                    pb.inc(settled);
                }
            });
    }
    state
}

/// The value stored for a position after the backward pass: unsettled means 0.
#[inline]
pub fn final_value(s: u16) -> i8 {
    if s & SETTLED != 0 {
        s as u8 as i8
    } else {
        0
    }
}

struct Backward<'a> {
    rules: Rules,
    index: &'a Index,
    n: usize,
    state: &'a [AtomicU16],
}

impl Backward<'_> {
    /// Settles position `i` at value `v` unless it is settled already.
    #[inline]
    fn settle(&self, i: u64, v: i8) -> bool {
        let cell = &self.state[i as usize];
        let mut cur = cell.load(Relaxed);
        loop {
            if cur & SETTLED != 0 {
                return false;
            }
            let new = SETTLED | (cur & COUNT_MASK) | v as u8 as u16;
            match cell.compare_exchange_weak(cur, new, Relaxed, Relaxed) {
                Ok(_) => return true,
                Err(now) => cur = now,
            }
        }
    }

    /// Propagates every settled position on `stack` to its predecessors at threshold `t`
    /// until nothing more is settled. Returns the positions handled.
    fn drain(&self, t: i8, stack: &mut Vec<u64>) -> u64 {
        let mut done = 0;
        while let Some(p) = stack.pop() {
            done += 1;
            let v = self.state[p as usize].load(Relaxed) as u8 as i8;
            let board = self.index.unrank(self.n, p);
            for_each_unmove(&board, self.rules, |q| {
                if !q.is_stored() {
                    return;
                }
                let qi = self.index.rank(q);
                let cell = &self.state[qi as usize];
                if cell.load(Relaxed) & SETTLED != 0 {
                    return;
                }
                if v < 0 {
                    // p is lost for its side to move: q wins by moving there.
                    if self.settle(qi, t) {
                        stack.push(qi);
                    }
                    return;
                }
                // p is won (>= t): one more move of q is known to give q at most -t.
                let old = cell.fetch_sub(COUNT_ONE, Relaxed);
                if old & SETTLED == 0 && old & COUNT_MASK == COUNT_ONE {
                    // Every in-level move of q now gives at most -t; q is lost now
                    // unless an exit is better (then it is settled by the threshold scan
                    // at -b, or is a draw or a win by its exit).
                    let b = old as u8 as i8;
                    if b <= -t && self.settle(qi, -t) {
                        stack.push(qi);
                    }
                }
            });
        }
        done
    }
}
