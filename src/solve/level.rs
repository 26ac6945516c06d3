//! Solving one level exactly (DESIGN.md section 5): a forward pass that scores every move
//! leaving the level and counts the moves staying in it, then a backward pass over
//! thresholds `t = n..1` that settles wins and losses by predecessor propagation.
//!
//! Working memory is two bytes per position. The *count* byte holds the settled mark
//! and the number of in-level moves not yet known to reach a child worth `>= t`; the
//! *value* byte holds the best exit value `b[p]` until the position is settled, and its
//! value after. The backward pass reads and updates count bytes at random and touches a
//! value byte only when it settles a position (or a count runs out), so the arrays are
//! kept apart: the randomly read one is half the size. Lower levels are only read.

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering::Relaxed};
use std::time::{Duration, Instant};

use rayon::prelude::*;

use crate::game::index::Index;
use crate::game::rules::{for_each_unmove, Board, Exits, Rules};
use crate::game::scan::{scan_exits, Lower};
use crate::util::{prefetch, LevelBar};

const SETTLED: u8 = 0x80;
const COUNT_MASK: u8 = 0x0f;
/// Positions handled per parallel task: large enough to amortise an unrank, small enough
/// to balance two to a few dozen threads.
const CHUNK: u64 = 1 << 14;
/// Settled positions whose predecessors are generated before their states are updated.
const BACKWARD_BATCH: usize = 16;
/// A stack of settled positions this long is split between threads.
const SPLIT_AT: usize = 1 << 12;

/// What solving a level found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Outcomes {
    /// Positions counted: `won + drawn + lost`.
    pub positions: u64,
    /// Positions won by the side to move (value `> 0`).
    pub won: u64,
    /// Positions drawn (value 0).
    pub drawn: u64,
    /// Positions lost by the side to move (value `< 0`).
    pub lost: u64,
}

impl Outcomes {
    /// Counts one position worth `v`.
    pub fn add(&mut self, v: i8) {
        self.positions += 1;
        match v {
            1.. => self.won += 1,
            0 => self.drawn += 1,
            _ => self.lost += 1,
        }
    }

    /// The outcomes of a payload: one signed byte per position.
    pub fn of(payload: &[u8]) -> Outcomes {
        let mut s = Outcomes::default();
        for &v in payload {
            s.add(v as i8);
        }
        s
    }
}

/// Solves level `n`, whose lower levels `lower` must hold, and returns its values in
/// index order. `progress` is advanced by positions in the forward pass and
/// by positions settled in the backward pass.
pub fn solve_level<L: Lower + ?Sized>(
    rules: Rules,
    index: &Index,
    n: usize,
    lower: &L,
    progress: &LevelBar,
) -> (State, PhaseTimes) {
    let size = index.level_size(n);
    let chunks = size.div_ceil(CHUNK);
    let state = State::new(size);
    // How many positions have each exit value, to skip thresholds that seed nothing.
    let hist: Vec<AtomicU64> = (0..256).map(|_| AtomicU64::new(0)).collect();

    // Forward pass.
    let forward_start = Instant::now();
    (0..chunks).into_par_iter().for_each(|c| {
        let start = c * CHUNK;
        let end = (start + CHUNK).min(size);
        let mut local = [0u64; 256];
        scan_exits(
            rules,
            index,
            n,
            lower,
            start,
            (end - start) as usize,
            |j, exits, best| {
                let (b, stay) = match exits {
                    Exits::Terminal(v) => (v, 0),
                    Exits::AllEnd => (n as i8, 0),
                    Exits::Moves { stay } => (best, stay),
                };
                let at = start as usize + j;
                state.count[at].store(stay, Relaxed);
                state.value[at].store(b as u8, Relaxed);
                local[b as u8 as usize] += 1;
            },
        );
        for (h, &l) in hist.iter().zip(&local) {
            if l > 0 {
                h.fetch_add(l, Relaxed);
            }
        }
        progress.inc(end - start);
    });
    let forward = forward_start.elapsed();

    // Backward pass.
    let backward_start = Instant::now();
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
            .for_each_init(Work::default, |work, c| {
                let start = c * CHUNK;
                let end = (start + CHUNK).min(size);
                let mut settled = 0u64;
                for i in start..end {
                    let k = state.count[i as usize].load(Relaxed);
                    if k & SETTLED != 0 {
                        continue;
                    }
                    let b = state.value[i as usize].load(Relaxed) as i8;
                    let Some(won) = seed(k, b, t) else {
                        continue;
                    };
                    if solver.settle(i, if won { t } else { -t }) {
                        work.stack.push((i, index.unrank(n, i), won));
                        settled += solver.drain(t, work);
                    }
                }
                progress.inc(settled);
            });
    }
    let times = PhaseTimes {
        forward,
        backward: backward_start.elapsed(),
    };
    (state, times)
}

/// The solver's two bytes per position of the level being built, in anonymous memory.
/// It is asked for huge pages: the backward pass reads it at random, and with 4 KiB pages
/// nearly every such read would also miss the TLB.
pub struct State {
    _map: memmap2::MmapMut,
    count: &'static [AtomicU8],
    value: &'static [AtomicU8],
}

impl State {
    fn new(len: u64) -> State {
        let len = len as usize;
        let bytes = (2 * len).max(1);
        let map = memmap2::MmapMut::map_anon(bytes)
            .unwrap_or_else(|e| panic!("cannot allocate {bytes} bytes of solver state: {e}"));
        #[cfg(target_os = "linux")]
        let _ = map.advise(memmap2::Advice::HugePage);
        let ptr = map.as_ptr() as *const AtomicU8;
        // SAFETY: the map holds 2 * len zeroed bytes and is owned by the State, which hands
        // out the slices only with its own lifetime (see `values`); AtomicU8 has the
        // layout of u8.
        let (count, value) = unsafe {
            (
                std::slice::from_raw_parts(ptr, len),
                std::slice::from_raw_parts(ptr.add(len), len),
            )
        };
        State {
            _map: map,
            count,
            value,
        }
    }

    pub fn len(&self) -> usize {
        self.count.len()
    }

    /// The final value of position `i`: its settled value, or 0 (a draw) if never
    /// settled.
    #[inline]
    pub fn final_value(&self, i: usize) -> i8 {
        if self.count[i].load(Relaxed) & SETTLED != 0 {
            self.value[i].load(Relaxed) as i8
        } else {
            0
        }
    }
}

/// Whether an unsettled position (count byte `k`, best exit `b`) is settled by the scan at
/// threshold `t`, and how: won at `t` by its exit, lost at `-t` when no move stays in the
/// level any more and its exit gives `-t`; `None` if not at this threshold.
#[inline]
pub(crate) fn seed(k: u8, b: i8, t: i8) -> Option<bool> {
    if b == t {
        Some(true)
    } else if b == -t && k == 0 {
        Some(false)
    } else {
        None
    }
}

/// Wall time of the two passes of one level.
#[derive(Clone, Copy, Debug, Default)]
pub struct PhaseTimes {
    /// The forward pass: best exit of every position, in-level moves counted.
    pub forward: Duration,
    /// The backward pass: wins and losses settled threshold by threshold.
    pub backward: Duration,
}

/// Per-thread buffers of the backward pass, reused across tasks.
#[derive(Default)]
struct Work {
    /// Settled positions whose predecessors are still to be told: index, board, and
    /// whether it is won for its side to move.
    stack: Vec<(u64, Board, bool)>,
    /// Predecessors of a batch of settled positions: index, board, and whether the
    /// settled child is won for its side to move.
    pending: Vec<(u64, Board, bool)>,
}

struct Backward<'a> {
    rules: Rules,
    index: &'a Index,
    /// The level: seeds on every board.
    n: usize,
    state: &'a State,
}

impl Backward<'_> {
    /// Settles position `i` at value `v` unless it is settled already.
    #[inline]
    fn settle(&self, i: u64, v: i8) -> bool {
        let i = i as usize;
        let prev = self.state.count[i].fetch_or(SETTLED, Relaxed);
        if prev & SETTLED != 0 {
            return false;
        }
        // Only the thread that set the mark writes the value. Readers of an unsettled
        // position's exit value that race with this write only try to settle it, and
        // fail on the mark.
        self.state.value[i].store(v as u8, Relaxed);
        true
    }

    /// Propagates every settled position on the stack to its predecessors at threshold
    /// `t` until nothing more is settled. Returns the positions handled.
    fn drain(&self, t: i8, work: &mut Work) -> u64 {
        let count = self.state.count;
        let mut done = 0;
        while !work.stack.is_empty() {
            if work.stack.len() >= SPLIT_AT {
                // A cascade this large would keep one thread busy while the others run
                // out of chunks (level 20: no speed-up at all from a second thread).
                // Hand half of it to rayon, which lets an idle thread take it.
                let half = work.stack.split_off(work.stack.len() / 2);
                let (a, b) = rayon::join(
                    || {
                        let mut other = Work {
                            stack: half,
                            pending: Vec::new(),
                        };
                        self.drain(t, &mut other)
                    },
                    || self.drain(t, work),
                );
                return done + a + b;
            }
            let Work { stack, pending } = &mut *work;
            // Generate the predecessors of a batch and prefetch their count bytes, then
            // update them: the cache misses of the batch overlap instead of queueing.
            pending.clear();
            for _ in 0..stack.len().min(BACKWARD_BATCH) {
                let (_, board, won) = stack.pop().unwrap();
                done += 1;
                for_each_unmove(&board, self.rules, |q, stored| {
                    if stored {
                        let qi = self.index.rank_in(q, self.n);
                        prefetch(&count[qi as usize]);
                        pending.push((qi, *q, won));
                    }
                });
            }
            for &(qi, q, won) in pending.iter() {
                let cell = &count[qi as usize];
                if cell.load(Relaxed) & SETTLED != 0 {
                    continue;
                }
                if !won {
                    // The child is lost for its side to move: q wins by moving there.
                    if self.settle(qi, t) {
                        stack.push((qi, q, true));
                    }
                    continue;
                }
                // The child is won (>= t): one more move of q is known to give q at most -t.
                let old = cell.fetch_sub(1, Relaxed);
                if old & SETTLED == 0 && old & COUNT_MASK == 1 {
                    // Every in-level move of q now gives at most -t; q is lost now
                    // unless an exit is better (then it is settled by the threshold scan
                    // at -b, or is a draw or a win by its exit).
                    let b = self.state.value[qi as usize].load(Relaxed) as i8;
                    if b <= -t && self.settle(qi, -t) {
                        stack.push((qi, q, false));
                    }
                }
            }
        }
        done
    }
}

/// Levels `0..=top` solved in memory, one byte per position: the true values that the
/// unit tests of the levels' readers compare with.
#[cfg(test)]
pub(crate) fn solve_in_memory(rules: Rules, index: &Index, top: usize) -> Vec<Vec<u8>> {
    struct Below(Vec<Vec<u8>>);
    impl Lower for Below {
        fn value(&self, seeds: usize, index: u64) -> i8 {
            self.0[seeds][index as usize] as i8
        }
    }
    let mut lower = Below(Vec::new());
    for n in 0..=top {
        let (state, _) = solve_level(rules, index, n, &lower, &LevelBar::new(false, 0, 0, ""));
        let values = (0..state.len())
            .map(|i| state.final_value(i) as u8)
            .collect();
        lower.0.push(values);
    }
    lower.0
}
