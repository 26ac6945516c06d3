//! Solving one level exactly (DESIGN.md section 5): a forward pass that scores every move
//! leaving the level and counts the moves staying in it, then a backward pass over
//! thresholds `t = n..1` that settles wins and losses by predecessor propagation.
//!
//! Working memory is two bytes per position, side by side. The *count* byte holds the
//! settled mark and the number of in-level moves not yet known to reach a child worth
//! `>= t` (kept only while `b[p] < 0`); the *value* byte holds the best exit value `b[p]`
//! until the position is settled, and its value after. The backward pass reads and
//! updates count bytes at random and needs the value byte whenever it settles a position
//! or a count runs out: with the two in one cache line, an update costs one miss instead
//! of two (level 20: backward pass 10.7 s against 13.0 s with two arrays; DESIGN.md
//! section 5). Lower levels are only read.

use std::fs::File;
use std::io::Write;
use std::ops::Range;
use std::sync::atomic::{AtomicU8, Ordering::Relaxed};
use std::time::{Duration, Instant};

use rayon::prelude::*;

use crate::game::index::{Index, RankBase};
use crate::game::rules::{for_each_unmove_near, Board, Exits, Rules};
use crate::game::scan::{scan_exits, Lower, NO_EXIT};
use crate::util::{prefetch, read_exact_at_parallel, HugeBuf, LevelBar};

const SETTLED: u8 = 0x80;
const COUNT_MASK: u8 = 0x0f;
/// Positions handled per parallel task: large enough to amortise an unrank, small enough
/// to balance two to a few dozen threads.
pub(crate) const CHUNK: u64 = 1 << 14;
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

    /// The outcomes of two sets of positions together.
    pub fn merge(self, o: Outcomes) -> Outcomes {
        Outcomes {
            positions: self.positions + o.positions,
            won: self.won + o.won,
            drawn: self.drawn + o.drawn,
            lost: self.lost + o.lost,
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

/// A level after its forward pass ([`forward_pass`]), ready for [`backward_pass`].
pub(crate) struct Forwarded {
    state: State,
    /// The thresholds some position can seed at ([`State::survey`]).
    present: u64,
    forward: Duration,
}

/// Solving level `n`, whose lower levels `lower` must hold, part one: the forward pass.
/// `progress` is advanced by positions here and by positions settled in
/// [`backward_pass`], which gives the level's state; [`State::into_values`] then gives
/// its values in index order.
///
/// With `spill`, an empty file, the state never shares memory with the lower levels:
/// the forward pass goes in stripes, each written to `spill` (while the next one is
/// computed) and its memory given back. The caller can then let go of the lower levels
/// (the backward pass reads none) before [`backward_pass`] reads the state back. Peak
/// memory is then about the larger of the lower levels and the state, not their sum.
/// Fails only on the spill file's errors.
pub(crate) fn forward_pass<L: Lower + ?Sized>(
    rules: Rules,
    index: &Index,
    n: usize,
    lower: &L,
    progress: &LevelBar,
    mut spill: Option<&mut File>,
) -> std::io::Result<Forwarded> {
    let size = index.level_size(n);
    let mut state = State::new(size);
    let start = Instant::now();
    let stripe = if spill.is_some() { STRIPE } else { size.max(1) };
    let mut present = 0;
    // The stripe done before this one, written to the spill file while this one is
    // computed: the write takes one thread (copying into the page cache), which the
    // forward pass has the other threads for, and takes back once the write is done.
    let mut unspilled: Option<Range<usize>> = None;
    for first in (0..size).step_by(stripe as usize) {
        let end = (first + stripe).min(size);
        let compute = || {
            forward_chunks(
                rules,
                index,
                n,
                lower,
                &state,
                first / CHUNK..end.div_ceil(CHUNK),
                progress,
            )
        };
        match (spill.as_deref_mut(), unspilled.take()) {
            (Some(file), Some(done)) => {
                // SAFETY: the forward pass of this stripe touches only its own cells, and
                // nothing else runs meanwhile.
                let (written, ()) = rayon::join(|| unsafe { state.spill(done, file) }, compute);
                written?;
            }
            _ => compute(),
        }
        present |= state.survey(first as usize..end as usize);
        if spill.is_some() {
            unspilled = Some(first as usize..end as usize);
        }
    }
    if let (Some(file), Some(done)) = (spill, unspilled) {
        // SAFETY: the forward pass is over.
        unsafe { state.spill(done, file)? };
    }
    Ok(Forwarded {
        state,
        present,
        forward: start.elapsed(),
    })
}

/// Solving a level, part two: reads the state back from `spill` (the file the forward
/// pass wrote; counted as forward time), then the backward pass.
pub(crate) fn backward_pass(
    rules: Rules,
    index: &Index,
    n: usize,
    forwarded: Forwarded,
    progress: &LevelBar,
    spill: Option<&mut File>,
) -> std::io::Result<(State, PhaseTimes)> {
    let Forwarded {
        mut state,
        present,
        mut forward,
    } = forwarded;
    if let Some(file) = spill {
        let start = Instant::now();
        state.restore(file)?;
        forward += start.elapsed();
    }
    let size = index.level_size(n);
    let chunks = size.div_ceil(CHUNK);
    let backward_start = Instant::now();
    let solver = Backward {
        rules,
        index,
        n,
        state: &state,
        base: 0,
        ranks: 1,
    };
    for t in (1..=n as i8).rev() {
        if present & threshold_bit(t) == 0 {
            continue;
        }
        (0..chunks)
            .into_par_iter()
            .for_each_init(Work::default, |work, c| {
                let start = c * CHUNK;
                let end = (start + CHUNK).min(size);
                progress.inc(solver.seed_range(t, start..end, work));
            });
    }
    let times = PhaseTimes {
        forward,
        backward: backward_start.elapsed(),
    };
    Ok((state, times))
}

/// The forward pass over the chunks `chunks` of level `n`, in parallel: the best exit
/// and the in-level moves of every position, into `state`.
fn forward_chunks<L: Lower + ?Sized>(
    rules: Rules,
    index: &Index,
    n: usize,
    lower: &L,
    state: &State,
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
                let (b, stay) = match exits {
                    Exits::Terminal(v) => (v, 0),
                    Exits::AllEnd => (n as i8, 0),
                    Exits::Moves { stay } => (best, stay),
                };
                let at = start as usize + j;
                state.count(at).store(stay, Relaxed);
                state.value(at).store(b as u8, Relaxed);
            },
        );
        progress.inc(end - start);
    });
}

/// The solver's two bytes per position of the level being built, in anonymous memory.
/// It is asked for huge pages: the backward pass reads it at random, and with 4 KiB pages
/// nearly every such read would also miss the TLB.
pub struct State {
    map: HugeBuf,
    /// Position `i`'s count byte at `2i`, its value byte at `2i + 1`.
    cells: &'static [AtomicU8],
    /// Per block of [`BLOCK`] positions, the thresholds at which one of them may be a
    /// seed ([`threshold_bit`] of `|b|`), so that the backward pass skips the blocks that
    /// cannot seed at a threshold: at level 20, 5.7 of 18 thresholds are present in a
    /// block on average. Every bit is set until [`State::survey`].
    blocks: Vec<u64>,
}

/// Positions per stripe of a forward pass that spills its state (32 MiB of state; a
/// multiple of [`CHUNK`]).
const STRIPE: u64 = if cfg!(test) { 2 * CHUNK } else { 1 << 24 };
#[cfg(test)]
pub(crate) const STRIPE_IN_TESTS: u64 = STRIPE;

/// Positions per block of the threshold map [`State::survey`] makes: it costs a bit per
/// position.
const BLOCK: usize = 64;

/// The bit of threshold `t >= 1` in a threshold map; thresholds from 64 up share bit 0.
#[inline(always)]
pub(crate) fn threshold_bit(t: i8) -> u64 {
    let t = t.unsigned_abs() as u32;
    if t < 64 {
        1 << t
    } else {
        1
    }
}

impl State {
    pub(crate) fn new(len: u64) -> State {
        let len = len as usize;
        let bytes = 2 * len;
        let map = HugeBuf::zeroed(bytes)
            .unwrap_or_else(|e| panic!("cannot allocate {bytes} bytes of solver state: {e}"));
        let ptr = map.as_ptr() as *const AtomicU8;
        // SAFETY: the map holds 2 * len zeroed bytes and is owned by the State, which hands
        // out the cells only with its own lifetime; AtomicU8 has the layout of u8.
        let cells = unsafe { std::slice::from_raw_parts(ptr, 2 * len) };
        State {
            map,
            cells,
            blocks: vec![u64::MAX; len.div_ceil(BLOCK)],
        }
    }

    /// Records, after the forward pass over `range` (which starts at a multiple of
    /// [`BLOCK`]), which thresholds each block of positions in it can seed at (the exit
    /// values present), and returns the union: the thresholds at which the backward pass
    /// has anything to scan for there.
    pub(crate) fn survey(&mut self, range: Range<usize>) -> u64 {
        debug_assert_eq!(range.start % BLOCK, 0);
        let cells = self.cells;
        let first = range.start / BLOCK;
        self.blocks[first..range.end.div_ceil(BLOCK)]
            .par_iter_mut()
            .enumerate()
            .map(|(k, mask)| {
                let k = first + k;
                *mask = 0;
                let end = ((k + 1) * BLOCK).min(range.end);
                for i in k * BLOCK..end {
                    let b = cells[2 * i + 1].load(Relaxed) as i8;
                    // No exit (-128) and an exit worth 0 never seed.
                    if b != 0 && b != NO_EXIT {
                        *mask |= threshold_bit(b);
                    }
                }
                *mask
            })
            .reduce(|| 0, |a, b| a | b)
    }

    pub fn len(&self) -> usize {
        self.cells.len() / 2
    }

    /// The count byte of position `i`.
    #[inline(always)]
    pub(crate) fn count(&self, i: usize) -> &AtomicU8 {
        &self.cells[2 * i]
    }

    /// The value byte of position `i`.
    #[inline(always)]
    pub(crate) fn value(&self, i: usize) -> &AtomicU8 {
        &self.cells[2 * i + 1]
    }

    /// Writes the cells of the positions `range` (the next ones of the level, from a
    /// multiple of [`CHUNK`]) to `file` and gives their memory back (it reads as zeros
    /// until [`State::restore`]).
    ///
    /// # Safety
    /// No thread may read or write the cells of `range` meanwhile (other cells may be in
    /// use).
    unsafe fn spill(&self, range: Range<usize>, file: &mut File) -> std::io::Result<()> {
        let bytes = 2 * range.start..2 * range.end;
        let cells = &self.cells[bytes.clone()];
        // SAFETY: AtomicU8 has the layout of u8, and by the caller nothing changes these
        // cells while the slice lives.
        let raw = unsafe { std::slice::from_raw_parts(cells.as_ptr() as *const u8, cells.len()) };
        file.write_all(raw)?;
        // Its pages read as zeros after this; `restore` fills them again. The range starts
        // at a multiple of CHUNK cells, so at a page.
        // SAFETY: nothing uses these cells meanwhile (the caller's promise).
        unsafe { self.map.discard_shared(bytes) };
        Ok(())
    }

    /// Reads back every cell that [`State::spill`] wrote to `file`.
    fn restore(&mut self, file: &File) -> std::io::Result<()> {
        read_exact_at_parallel(file, 0, &mut self.map[..])
    }

    /// Turns every value into the final one (its settled value, or 0 for a draw if never
    /// settled) and gathers them at the start of the map: the level's payload, without a
    /// copy.
    pub(crate) fn finish(&mut self) -> &[u8] {
        let len = self.len();
        let bytes: &mut [u8] = &mut self.map;
        // Value i moves from 2i + 1 to i. A block [a, 2a) reads [2a, 4a) and writes where
        // the block before it read, so blocks go one after another, each in parallel.
        let first = len.min(1024);
        for i in 0..first {
            bytes[i] = final_byte(bytes[2 * i], bytes[2 * i + 1]);
        }
        let mut a = first;
        while a < len {
            let b = (2 * a).min(len);
            let (low, high) = bytes.split_at_mut(2 * a);
            low[a..b]
                .par_chunks_mut(CHUNK as usize)
                .zip(high[..2 * (b - a)].par_chunks(2 * CHUNK as usize))
                .for_each(|(out, cells)| {
                    for (v, c) in out.iter_mut().zip(cells.chunks_exact(2)) {
                        *v = final_byte(c[0], c[1]);
                    }
                });
            a = b;
        }
        &self.map[..len]
    }

    /// The level's payload ([`State::finish`]) in the state's own memory, whose second
    /// half is given back: the values stay in huge pages for the level above to read.
    pub(crate) fn into_values(mut self) -> HugeBuf {
        let len = self.len();
        self.finish();
        let mut map = self.map;
        map.truncate(len);
        map
    }
}

/// The value a position's count and value bytes leave it: the value if settled, else 0.
#[inline(always)]
fn final_byte(count: u8, value: u8) -> u8 {
    if count & SETTLED != 0 {
        value
    } else {
        0
    }
}

/// The seeds of threshold `t` among the positions whose cells are `cells` (count and value
/// byte of each): bit `j` of the first mask is set if position `j` is one, of the second if
/// it is won (its exit gives `t` and it is not settled); a loss is a position worth `-t`
/// by its exit with no in-level move left and not settled (count byte 0).
fn pair_seeds(cells: &[AtomicU8], t: i8) -> (u64, u64) {
    let (mut seeds, mut wins) = (0u64, 0u64);
    for (j, c) in cells.chunks_exact(2).enumerate() {
        let (k, b) = (c[0].load(Relaxed), c[1].load(Relaxed) as i8);
        let won = (b == t) & (k & SETTLED == 0);
        let lost = (b == -t) & (k == 0);
        seeds |= ((won | lost) as u64) << j;
        wins |= (won as u64) << j;
    }
    (seeds, wins)
}

/// [`pair_seeds`] of a whole block, 16 bytes at a time. Every block is scanned at each
/// threshold one of its exits holds: `seed_range`, most of it that byte loop, was a tenth
/// of level 25's build; levels 0..=18 build about 4 % faster with this (alternating runs).
#[inline]
fn block_seeds(cells: &[AtomicU8; 2 * BLOCK], t: i8) -> (u64, u64) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SSE2, all these intrinsics need, is part of every x86_64 CPU.
    unsafe {
        use std::arch::x86_64::*;
        // A position's two bytes as one little-endian 16-bit lane: count low, value high.
        // Won: value t and the settled bit clear; lost: value -t and count 0.
        let won_key = _mm_set1_epi16(((t as u8 as u16) << 8) as i16);
        let won_mask = _mm_set1_epi16(0xff00u16 as i16 | SETTLED as i16);
        let lost_key = _mm_set1_epi16((((-t) as u8 as u16) << 8) as i16);
        let (mut seeds, mut wins) = (0u64, 0u64);
        for (k, quad) in cells.chunks_exact(32).enumerate() {
            let (a, b) = (load16(&quad[..16]), load16(&quad[16..]));
            let won = _mm_packs_epi16(
                _mm_cmpeq_epi16(_mm_and_si128(a, won_mask), won_key),
                _mm_cmpeq_epi16(_mm_and_si128(b, won_mask), won_key),
            );
            let lost = _mm_packs_epi16(_mm_cmpeq_epi16(a, lost_key), _mm_cmpeq_epi16(b, lost_key));
            let w = _mm_movemask_epi8(won) as u16 as u64;
            let l = _mm_movemask_epi8(lost) as u16 as u64;
            wins |= w << (16 * k);
            seeds |= (w | l) << (16 * k);
        }
        (seeds, wins)
    }
    #[cfg(not(target_arch = "x86_64"))]
    pair_seeds(cells, t)
}

/// Sixteen cells as one SSE register, each byte read as a relaxed atomic load would.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn load16(cells: &[AtomicU8]) -> std::arch::x86_64::__m128i {
    assert_eq!(cells.len(), 16);
    let v: std::arch::x86_64::__m128i;
    // SAFETY: the 16 bytes are in bounds (checked above). Other threads may update them
    // meanwhile; one unaligned vector load reads each byte once and whole, which is what
    // 16 relaxed byte loads may do. Written in assembly because a plain vector load of
    // memory that races with atomic writes is undefined behaviour in Rust's model.
    unsafe {
        std::arch::asm!(
            "movdqu {v}, [{p}]",
            p = in(reg) cells.as_ptr(),
            v = out(xmm_reg) v,
            options(nostack, preserves_flags, readonly),
        );
    }
    v
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
pub(crate) struct Work {
    /// Settled positions whose predecessors are still to be told: index, board, and
    /// whether it is won for its side to move.
    stack: Vec<(u64, Board, bool)>,
    /// Predecessors of a batch of settled positions: index, board, and whether the
    /// settled child is won for its side to move; their cells are being prefetched.
    pending: Vec<(u64, Board, bool)>,
    /// The predecessors of the batch after, being generated.
    ahead: Vec<(u64, Board, bool)>,
    /// Updates for predecessors held by other ranks, per rank: the index with the child's
    /// "won" in the top bit, 8 bytes little-endian (empty in a single process).
    pub(crate) outbox: Vec<Vec<u8>>,
}

/// The backward pass over the positions `base..base + state.len()` of level `n`: the
/// whole level in a single process, one rank's slice in a distributed build. An update
/// for a predecessor outside goes to the outbox of the rank that owns it.
pub(crate) struct Backward<'a> {
    pub(crate) rules: Rules,
    pub(crate) index: &'a Index,
    /// The level: seeds on every board.
    pub(crate) n: usize,
    pub(crate) state: &'a State,
    /// The first index `state` holds.
    pub(crate) base: u64,
    /// Ranks the level is cut into (1 in a single process).
    pub(crate) ranks: usize,
}

impl Backward<'_> {
    /// Settles the position at `at` in the state at value `v` unless it is settled
    /// already.
    #[inline]
    fn settle(&self, at: usize, v: i8) -> bool {
        let prev = self.state.count(at).fetch_or(SETTLED, Relaxed);
        if prev & SETTLED != 0 {
            return false;
        }
        // Only the thread that set the mark writes the value. Readers of an unsettled
        // position's exit value that race with this write only try to settle it, and
        // fail on the mark.
        self.state.value(at).store(v as u8, Relaxed);
        true
    }

    /// Settles the positions of `range` (indices of the level, held here) that threshold
    /// `t` seeds, and everything they settle here in turn. Returns the positions handled.
    pub(crate) fn seed_range(&self, t: i8, range: Range<u64>, work: &mut Work) -> u64 {
        let mut settled = 0;
        let (lo, hi) = (
            (range.start - self.base) as usize,
            (range.end - self.base) as usize,
        );
        let bit = threshold_bit(t);
        // Seeds come in index order: each is unranked from the one before.
        let mut cursor = self.index.cursor(self.n);
        let mut from = lo;
        while from < hi {
            let block = from / BLOCK;
            let to = ((block + 1) * BLOCK).min(hi);
            let scan = self.state.blocks[block] & bit != 0;
            let start = from;
            from = to;
            if !scan {
                continue;
            }
            // The seeds of the block as two masks first, in a loop without calls or
            // unpredictable branches (most blocks hold few seeds). A seed is won at `t` by
            // its exit, or lost at `-t` when no move stays in the level any more and its
            // exit gives `-t`. A seed settled by a cascade meanwhile fails in `settle`
            // below, and one made a seed by a cascade is settled by that cascade.
            let cells = &self.state.cells[2 * start..2 * to];
            let (mut seeds, wins) = match <&[AtomicU8; 2 * BLOCK]>::try_from(cells) {
                Ok(block) => block_seeds(block, t),
                Err(_) => pair_seeds(cells, t),
            };
            while seeds != 0 {
                let j = seeds.trailing_zeros() as usize;
                seeds &= seeds - 1;
                let won = wins >> j & 1 != 0;
                let at = start + j;
                if !self.settle(at, if won { t } else { -t }) {
                    continue;
                }
                let i = self.base + at as u64;
                work.stack.push((i, *self.index.seek(&mut cursor, i), won));
                // Seeds are gathered into a batch before their predecessors are
                // generated: one seed alone has too few for the prefetches to overlap.
                if work.stack.len() >= BACKWARD_BATCH {
                    settled += self.drain(t, work);
                }
            }
        }
        settled + self.drain(t, work)
    }

    /// Applies updates that other ranks sent (entries of [`Work::outbox`] for this rank),
    /// and everything they settle here in turn. Returns the positions handled.
    pub(crate) fn apply(&self, t: i8, updates: &[u8], work: &mut Work) -> u64 {
        let mut settled = 0;
        for batch in updates.chunks(8 * BACKWARD_BATCH) {
            for u in batch.chunks_exact(8) {
                let qi = u64::from_le_bytes(u.try_into().unwrap()) & !(1 << 63);
                prefetch(self.state.count((qi - self.base) as usize));
            }
            for u in batch.chunks_exact(8) {
                let x = u64::from_le_bytes(u.try_into().unwrap());
                let qi = x & !(1 << 63);
                let (index, n) = (self.index, self.n);
                self.update(qi, || index.unrank(n, qi), x >> 63 == 1, t, &mut work.stack);
            }
            settled += self.drain(t, work);
        }
        settled
    }

    /// Tells position `qi` (held here) that a child of it settled at threshold `t`, won
    /// or lost for the child's side to move; a position this settles goes on `stack`
    /// with its board.
    #[inline]
    fn update(
        &self,
        qi: u64,
        board: impl FnOnce() -> Board,
        won: bool,
        t: i8,
        stack: &mut Vec<(u64, Board, bool)>,
    ) {
        let at = (qi - self.base) as usize;
        let cell = self.state.count(at);
        if cell.load(Relaxed) & SETTLED != 0 {
            return;
        }
        if !won {
            // The child is lost for its side to move: q wins by moving there.
            if self.settle(at, t) {
                stack.push((qi, board(), true));
            }
            return;
        }
        // The child is won (>= t): one more move of q is known to give q at most -t.
        // With an exit worth 0 or more, q is never lost by its count (that needs
        // b <= -t < 0, at any threshold), so the count is not kept: this saves a locked
        // operation on the cache line just read.
        if self.state.value(at).load(Relaxed) as i8 >= 0 {
            return;
        }
        let old = cell.fetch_sub(1, Relaxed);
        if old & SETTLED == 0 && old & COUNT_MASK == 1 {
            // Every in-level move of q now gives at most -t; q is lost now unless an
            // exit is better (then it is settled by the threshold scan at -b, or is a
            // draw or a win by its exit).
            let b = self.state.value(at).load(Relaxed) as i8;
            if b <= -t && self.settle(at, -t) {
                stack.push((qi, board(), false));
            }
        }
    }

    /// Propagates every settled position on the stack to its predecessors at threshold
    /// `t` until nothing more is settled here. Returns the positions handled.
    fn drain(&self, t: i8, work: &mut Work) -> u64 {
        let held = self.state.len() as u64;
        let size = self.index.level_size(self.n);
        let mut done = 0;
        // What ranking each settled position's base board leaves, refilled per position.
        let made = &mut RankBase::default();
        while !work.stack.is_empty() || !work.pending.is_empty() {
            if work.stack.len() >= SPLIT_AT {
                // A cascade this large would keep one thread busy while the others run
                // out of chunks (level 20: no speed-up at all from a second thread).
                // Hand half of it to rayon, which lets an idle thread take it.
                let half = work.stack.split_off(work.stack.len() / 2);
                let ((a, outbox), b) = rayon::join(
                    || {
                        let mut other = Work {
                            stack: half,
                            ..Work::default()
                        };
                        (self.drain(t, &mut other), other.outbox)
                    },
                    || self.drain(t, work),
                );
                work.merge(outbox);
                return done + a + b;
            }
            let Work {
                stack,
                pending,
                ahead,
                outbox,
            } = &mut *work;
            // A pipeline of two batches: generate the predecessors of the next batch and
            // prefetch their cells, then update those of the batch before, whose cells
            // have had a whole batch's time to arrive.
            ahead.clear();
            for _ in 0..stack.len().min(BACKWARD_BATCH) {
                let (_, board, won) = stack.pop().unwrap();
                done += 1;
                // Predecessors are ranked from the board they are un-sown from, only
                // below the highest pit un-sowing touched.
                let base_of =
                    |base: &Board, out: &mut RankBase| self.index.rank_base(base, self.n, out);
                for_each_unmove_near(
                    &board,
                    self.rules,
                    made,
                    base_of,
                    #[inline(always)]
                    |q, stored, top, near| {
                        if stored {
                            let qi = self.index.rank_near(near, q, top);
                            let at = qi.wrapping_sub(self.base);
                            if at < held {
                                prefetch(self.state.count(at as usize));
                                ahead.push((qi, *q, won));
                            } else {
                                let o = owner(qi, size, self.ranks);
                                if outbox.len() < self.ranks {
                                    outbox.resize(self.ranks, Vec::new());
                                }
                                outbox[o]
                                    .extend_from_slice(&(qi | (won as u64) << 63).to_le_bytes());
                            }
                        }
                    },
                );
            }
            for &(qi, q, won) in pending.iter() {
                self.update(qi, || q, won, t, stack);
            }
            std::mem::swap(pending, ahead);
        }
        done
    }
}

impl Work {
    /// Appends another thread's outbox to this one.
    pub(crate) fn merge(&mut self, other: Vec<Vec<u8>>) {
        if self.outbox.len() < other.len() {
            self.outbox.resize(other.len(), Vec::new());
        }
        for (mine, theirs) in self.outbox.iter_mut().zip(other) {
            if mine.is_empty() {
                *mine = theirs;
            } else {
                mine.extend_from_slice(&theirs);
            }
        }
    }
}

/// The rank that owns index `i` of a level of `size` positions cut into `ranks` slices
/// (the largest `r` whose slice starts at or before `i`; DESIGN.md section 5.4).
#[inline]
pub fn owner(i: u64, size: u64, ranks: usize) -> usize {
    (((i as u128 + 1) * ranks as u128 - 1) / size as u128) as usize
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
        let bar = LevelBar::new(false, 0, 0, "");
        let forwarded = forward_pass(rules, index, n, &lower, &bar, None).unwrap();
        let (state, _) = backward_pass(rules, index, n, forwarded, &bar, None).unwrap();
        lower.0.push(state.into_values().to_vec());
    }
    lower.0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The vector scan of a block finds the seeds the byte loop finds, at thresholds
    /// 1..=9, on drawn cells: counts 0..=2, or 0..=3 with the settled bit; values
    /// -9..=8 and no exit.
    #[test]
    fn block_scan_finds_the_seeds_of_the_byte_loop() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let (mut won, mut lost) = (0u32, 0u32);
        for round in 0..4000 {
            let bytes: Vec<u8> = (0..2 * BLOCK)
                .map(|k| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    // Counts: small, or settled; values: small of either sign, or no exit.
                    let r = (x >> 32) as u8;
                    match (k % 2, r % 8) {
                        (0, 0) => SETTLED | (r >> 4) & 3,
                        (0, _) => (r >> 4) % 3,
                        (1, 0) => NO_EXIT as u8,
                        (1, _) => ((r >> 3) % 9) as i8 as u8 ^ if r & 4 != 0 { 0xff } else { 0 },
                        _ => unreachable!(),
                    }
                })
                .collect();
            let cells: Vec<AtomicU8> = bytes.iter().map(|&b| AtomicU8::new(b)).collect();
            let block: &[AtomicU8; 2 * BLOCK] = cells.as_slice().try_into().unwrap();
            let t = (round % 9 + 1) as i8;
            let expect = pair_seeds(&cells, t);
            assert_eq!(
                block_seeds(block, t),
                expect,
                "threshold {t}, cells {bytes:?}"
            );
            won += expect.1.count_ones();
            lost += (expect.0 & !expect.1).count_ones();
        }
        // The cells are drawn so that seeds of both kinds are common.
        assert!(
            won > 2_000 && lost > 2_000,
            "{won} won and {lost} lost seeds drawn"
        );
    }
}
