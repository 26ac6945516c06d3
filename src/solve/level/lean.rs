//! The lean state (DESIGN.md section 5.6): a level solved with two bits of memory per
//! position, what else the algorithm needs kept on disk and read or written in index
//! order. Romein and Bal's way, with the thresholds of section 5.1:
//!
//! - the forward pass writes each position's best exit `b` (section 5.1) to an exits file,
//!   one byte per position in index order, and keeps nothing of it in memory;
//! - a position is *unsettled* (`b` above `-t`: it cannot be lost at this threshold),
//!   *open to a loss* (unsettled and `b <= -t`), *won* or *lost*, in two bits: the
//!   threshold it was settled at is not kept, since thresholds come in order;
//! - each threshold `t` is a pass: one scan of the exits file in index order opens the
//!   positions with `b == -t` to a loss and seeds the wins (`b == t`) and the losses (open,
//!   with every in-level child won); a settled position's predecessors are updated as in
//!   section 5.1, but with no counter: a predecessor open to a loss whose child was just
//!   won has its in-level children generated again, and is lost if every one is won;
//! - after the pass, the positions settled in it are merged into a values file (one byte
//!   per position, 0 while unsettled: a settled value is never 0), in index order, the
//!   chunks where something was settled only. What is never settled is a draw.

use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::time::Instant;

use rayon::prelude::*;

use super::state::exit_and_stay;
use super::PhaseTimes;
use crate::error::{Error, Result};
use crate::game::index::{Index, RankBase};
use crate::game::pits::with_pits;
use crate::game::rules::{for_each_stay_p, for_each_unmove_near_p, Board, Rules};
use crate::game::scan::{scan_exits, LowerValues, NO_EXIT};
use crate::util::{prefetch, unnamed_file, HugeBuf, LevelBar, BATCH, CHUNK};

/// Unsettled, not open to a loss at this threshold.
const OPEN_NOT: u64 = 0;
/// Unsettled, open to a loss (its best exit is at most `-t`, or it has none).
const OPEN: u64 = 1;
/// Settled, won for its side to move.
const WON: u64 = 2;
/// Settled, lost for its side to move.
const LOST: u64 = 3;

/// A stack of settled positions this long is split with another thread, so that one long
/// cascade does not idle the others (as the fast state's, DESIGN.md section 5.2).
const SPLIT_AT: usize = 1 << 12;

/// Positions per word of the state (`StateKind::bytes` counts such words).
const PER_WORD: u64 = 32;

/// Two bits per position, in words of 32 positions, updated atomically.
struct Bits {
    words: Box<[AtomicU64]>,
}

impl Bits {
    fn new(len: u64) -> Bits {
        Bits {
            words: (0..len.div_ceil(PER_WORD))
                .map(|_| AtomicU64::new(0))
                .collect(),
        }
    }

    /// The state of position `i`. Sequentially consistent, as are the changes: of two
    /// threads that each settle a child of one position and then read its other children,
    /// at least one sees both settled.
    #[inline]
    fn get(&self, i: u64) -> u64 {
        (self.words[(i / PER_WORD) as usize].load(SeqCst) >> (2 * (i % PER_WORD))) & 3
    }

    /// A hint that position `i`'s state will be read soon.
    #[inline]
    fn prefetch(&self, i: u64) {
        prefetch(&self.words[(i / PER_WORD) as usize]);
    }

    /// Sets position `i` to `to` if its state is one `from` accepts; whether it did.
    #[inline]
    fn change(&self, i: u64, from: impl Fn(u64) -> bool, to: u64) -> bool {
        let shift = 2 * (i % PER_WORD);
        self.words[(i / PER_WORD) as usize]
            .fetch_update(SeqCst, SeqCst, |w| {
                from((w >> shift) & 3).then_some((w & !(3 << shift)) | (to << shift))
            })
            .is_ok()
    }
}

fn unsettled(s: u64) -> bool {
    s < WON
}

/// Solves level `n` of `index`'s board, whose lower levels `lower` holds, with the lean
/// state, its exits and values files unnamed in `dir`: the level's values in index order,
/// and the time of the two passes.
pub(crate) fn solve_lean<L: LowerValues + ?Sized>(
    rules: Rules,
    index: &Index,
    n: usize,
    lower: &L,
    dir: &Path,
    progress: &LevelBar,
) -> Result<(HugeBuf, PhaseTimes)> {
    let size = index.level_size(n);
    let start = Instant::now();
    let exits = unnamed_file(&dir.join(format!("level-{n:03}.exits")))?;
    let values = unnamed_file(&dir.join(format!("level-{n:03}.values")))?;
    let io = |what: &str, e: std::io::Error| {
        Error::io(dir.join(format!("level-{n:03}.{what} (unnamed)")), e)
    };
    values.set_len(size).map_err(|e| io("values", e))?;
    let state = Bits::new(size);
    let chunks = size.div_ceil(CHUNK);
    // The forward pass: each chunk's best exits, written where they belong.
    (0..chunks)
        .into_par_iter()
        .try_for_each_init(Vec::new, |buf, c| {
            let first = c * CHUNK;
            let len = (CHUNK.min(size - first)) as usize;
            buf.resize(len, 0u8);
            scan_exits(rules, index, n, lower, first, len, |j, ex, best| {
                let (b, _) = exit_and_stay(ex, n, best);
                buf[j] = b as u8;
                if b == NO_EXIT {
                    state.change(first + j as u64, |_| true, OPEN);
                }
            });
            progress.inc(len as u64);
            exits.write_all_at(buf, first).map_err(|e| io("exits", e))
        })?;
    let forward = start.elapsed();
    let start = Instant::now();
    let dirty: Vec<AtomicBool> = (0..chunks).map(|_| AtomicBool::new(false)).collect();
    let pass = Pass {
        rules,
        index,
        n,
        state: &state,
        dirty: &dirty,
    };
    for t in (1..=n as i8).rev() {
        // Open, seed and settle, a chunk of the exits file at a time.
        (0..chunks).into_par_iter().try_for_each_init(
            || (Vec::new(), Vec::new()),
            |(buf, stack), c| {
                let first = c * CHUNK;
                buf.resize(CHUNK.min(size - first) as usize, 0u8);
                exits
                    .read_exact_at(buf, first)
                    .map_err(|e| io("exits", e))?;
                let mut settled = 0;
                for (j, &b) in buf.iter().enumerate() {
                    let (i, b) = (first + j as u64, b as i8);
                    if b == t && pass.settle(i, WON) {
                        stack.push((index.unrank(n, i), true));
                        settled += 1;
                    } else if b == -t {
                        state.change(i, |s| s == OPEN_NOT, OPEN);
                        // Unless a cascade settled it meanwhile.
                        if state.get(i) == OPEN {
                            let board = index.unrank(n, i);
                            if pass.lost_now(&board) && pass.settle(i, LOST) {
                                stack.push((board, false));
                                settled += 1;
                            }
                        }
                    }
                    settled += pass.drain(stack);
                }
                progress.inc(settled);
                Ok::<(), Error>(())
            },
        )?;
        // The positions settled at `t` into the values file.
        (0..chunks)
            .into_par_iter()
            .try_for_each_init(Vec::new, |buf, c| {
                if !dirty[c as usize].swap(false, SeqCst) {
                    return Ok(());
                }
                let first = c * CHUNK;
                buf.resize(CHUNK.min(size - first) as usize, 0u8);
                values
                    .read_exact_at(buf, first)
                    .map_err(|e| io("values", e))?;
                for (j, v) in buf.iter_mut().enumerate() {
                    if *v == 0 {
                        match state.get(first + j as u64) {
                            WON => *v = t as u8,
                            LOST => *v = (-t) as u8,
                            _ => {}
                        }
                    }
                }
                values.write_all_at(buf, first).map_err(|e| io("values", e))
            })?;
    }
    let mut out = HugeBuf::zeroed(size as usize)
        .map_err(|e| Error::Resources(format!("cannot allocate level {n}'s values: {e}")))?;
    out.par_chunks_mut(CHUNK as usize)
        .enumerate()
        .try_for_each(|(c, buf)| {
            values
                .read_exact_at(buf, c as u64 * CHUNK)
                .map_err(|e| io("values", e))
        })?;
    let times = PhaseTimes {
        forward,
        backward: start.elapsed(),
    };
    Ok((out, times))
}

/// One threshold's pass over the lean state.
struct Pass<'a> {
    rules: Rules,
    index: &'a Index,
    n: usize,
    state: &'a Bits,
    /// Per chunk: whether a position of it was settled in this pass.
    dirty: &'a [AtomicBool],
}

impl Pass<'_> {
    /// Settles position `i` as `to` (won or lost) if it is unsettled (and, to lose it,
    /// open to a loss); whether this call did.
    fn settle(&self, i: u64, to: u64) -> bool {
        let from = |s: u64| if to == WON { unsettled(s) } else { s == OPEN };
        let done = self.state.change(i, from, to);
        if done {
            self.dirty[(i / CHUNK) as usize].store(true, SeqCst);
        }
        done
    }

    /// Whether every in-level child of `board` is won for its side to move.
    fn lost_now(&self, board: &Board) -> bool {
        with_pits!(board.pits_per_side(), P => self.lost_now_p::<P>(board))
    }

    /// [`Pass::lost_now`] with the pits per side known at compile time.
    #[inline(always)]
    fn lost_now_p<const P: usize>(&self, board: &Board) -> bool {
        let (index, n, state) = (self.index, self.n, self.state);
        let mut all = true;
        for_each_stay_p::<P>(board, self.rules, 0, |_, child| {
            all = state.get(index.rank_in_p::<P>(child, n)) == WON;
            all
        });
        all
    }

    /// Settles what the positions on `stack` (settled, `true` when won) lead to, until none
    /// is left: a lost position's unsettled predecessors are won; a won position's
    /// predecessors open to a loss are lost if every in-level child of theirs is won.
    /// Returns the positions it settled.
    fn drain(&self, stack: &mut Vec<(Board, bool)>) -> u64 {
        with_pits!(self.index.pits_per_side(), P => self.drain_p::<P>(stack))
    }

    /// [`Pass::drain`] with the pits per side known at compile time: predecessors ranked
    /// near the board they are un-sown from, as the fast state's are (DESIGN.md section
    /// 5.2), and a long cascade split with another thread.
    fn drain_p<const P: usize>(&self, stack: &mut Vec<(Board, bool)>) -> u64 {
        let (index, n) = (self.index, self.n);
        let made = &mut RankBase::default();
        let mut settled = 0;
        // The predecessors of a batch of settled positions, their state words prefetched,
        // updated once the whole batch is generated: a random read of the state is a cache
        // miss, and a batch's work overlaps them.
        let mut preds: Vec<(u64, Board, bool)> = Vec::new();
        while !stack.is_empty() {
            if stack.len() >= SPLIT_AT {
                let mut half = stack.split_off(stack.len() / 2);
                let (a, b) =
                    rayon::join(|| self.drain_p::<P>(&mut half), || self.drain_p::<P>(stack));
                return settled + a + b;
            }
            preds.clear();
            for _ in 0..stack.len().min(BATCH) {
                let (board, won) = stack.pop().unwrap();
                let base_of = |base: &Board, opp_empty: u64, out: &mut RankBase| {
                    index.rank_base_p::<P>(base, opp_empty, n, out)
                };
                for_each_unmove_near_p::<P, _>(
                    &board,
                    self.rules,
                    made,
                    base_of,
                    |q, stored, top, low, near, _| {
                        if stored {
                            let qi = index.rank_pred_p::<P>(near, q, top, low);
                            self.state.prefetch(qi);
                            preds.push((qi, *q, won));
                        }
                    },
                );
            }
            for &(qi, q, won) in &preds {
                let now = if !won {
                    self.settle(qi, WON)
                } else {
                    self.state.get(qi) == OPEN && self.lost_now_p::<P>(&q) && self.settle(qi, LOST)
                };
                if now {
                    stack.push((q, !won));
                    settled += 1;
                }
            }
        }
        settled
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every level of small boards, both rule sets, solved with the lean state from the
    /// true lower levels: the values of the fast state, byte for byte.
    #[test]
    fn lean_levels_are_the_fast_ones() {
        for rules in [Rules::Awari, Rules::Oware] {
            for (pits, top) in [(2, 12), (3, 14), (4, 14), (5, 12), (6, 11)] {
                let index = Index::new(pits, top).unwrap();
                let truth = crate::solve::level::solve_in_memory(rules, &index, top);
                let all: Vec<&[u8]> = truth.iter().map(Vec::as_slice).collect();
                let dir = tempfile::tempdir().unwrap();
                let bar = LevelBar::new(false, 0, 0, "");
                for n in 0..=top {
                    let (got, _) =
                        solve_lean(rules, &index, n, &all[..n], dir.path(), &bar).unwrap();
                    assert!(
                        got[..] == truth[n][..],
                        "{rules} P={pits} level {n}: lean differs"
                    );
                }
                // Nothing left behind.
                assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
            }
        }
    }
}
