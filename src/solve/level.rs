//! Solving one level exactly (DESIGN.md section 5): a forward pass that scores every move
//! leaving the level (and, in the fast state, counts the moves staying in it), then a
//! backward pass over thresholds `t = n..1` that settles wins and losses by predecessor
//! propagation.
//!
//! Two solver states, one type each ([`State`] with `C = false` or `true`):
//!
//! - *fast*, two bytes per position side by side. The *count* byte holds the settled mark
//!   and the number of in-level moves not yet known to reach a child worth `>= t` (kept
//!   only while `b[p] < 0`); the *value* byte holds the best exit value `b[p]` until the
//!   position is settled, and its value after. The backward pass reads and updates count
//!   bytes at random and needs the value byte whenever it settles a position or a count
//!   runs out: with the two in one cache line, an update costs one miss instead of two
//!   (level 20: backward pass 10.7 s against 13.0 s with two arrays).
//! - *compact*, one byte per position: the best exit while unsettled, the value once
//!   settled, told apart by the code (see [`compact_code`]). No count: a position is
//!   confirmed lost by generating its in-level moves and reading its children, as
//!   Syzygy's generator does.
//!
//! The forward pass reads the lower levels either at random (each capture's child read
//! where it lies, [`forward_pass`]) or as a stream (each lower position hands its value to
//! its parents by un-captures, [`forward_stream`]): then only the level being built is in
//! memory. Every combination writes the same values.

use std::fs::File;
use std::io::Write;
use std::ops::Range;
use std::sync::atomic::{
    AtomicU8,
    Ordering::{Relaxed, SeqCst},
};
use std::time::{Duration, Instant};

use rayon::prelude::*;

use crate::db::layout::owner;
use crate::error::Result;
use crate::game::index::{Index, RankBase};
use crate::game::rules::{exits, for_each_stay, for_each_unmove_near, Board, Exits, Rules};
use crate::game::scan::{
    lowest_captured_level, scan_exits, scan_uncaptures, LowerValues, Stream, NO_EXIT,
};
use crate::util::{prefetch, read_exact_at_parallel, HugeBuf, LevelBar, BATCH, CHUNK};

const SETTLED: u8 = 0x80;
const COUNT_MASK: u8 = 0x0f;
/// A stack of settled positions this long is split between threads.
const SPLIT_AT: usize = 1 << 12;

/// The most seeds a level built with the compact state may hold: its byte holds the exits
/// and values `-61..=61` twice over (see [`compact_code`]), and three bytes more for
/// positions with no exit (see [`COMPACT_NO_EXIT`]).
pub const COMPACT_MAX_SEEDS: usize = 61;

/// The compact state's byte of an unsettled position with no exit and no child known won.
/// Such a position counts its children known won, up to 2, in its byte: -64, -63 and -62,
/// which no exit of a level of at most [`COMPACT_MAX_SEEDS`] seeds can be. One with one or
/// two in-level moves is then found lost without reading its children, and one with more
/// reads them only from its third won child on.
const COMPACT_NO_EXIT: i8 = -64;

/// The compact state's byte of a position settled at `v`. An unsettled position's byte is
/// its best exit `b`, `-61..=61`, or no exit ([`COMPACT_NO_EXIT`] and the two bytes
/// above): the bytes `-64..=63` hold them, whose top two bits are equal. A settled one
/// flips bit 6 of its value: `64..=127` for a win, `-127..=-65` for a loss (a draw is
/// never settled). So a byte is settled if it lies outside `-64..=63`, and a settled win
/// is a byte above 64.
#[inline(always)]
pub(crate) fn compact_code(v: i8) -> i8 {
    (v as u8 ^ 0x40) as i8
}

/// Whether a compact byte is a settled position's.
#[inline(always)]
fn compact_settled(code: i8) -> bool {
    code.wrapping_add(64) < 0
}

/// The smallest compact byte of a settled win.
const COMPACT_WON: i8 = 65;

/// The solver state a level is built with (DESIGN.md section 5.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StateKind {
    /// Two bytes per position and the threshold map's bit (2.125 bytes): a count of the
    /// in-level moves not yet known to lose, so that a loss costs one update.
    Fast,
    /// One byte per position and the threshold map's bit (1.125 bytes): a loss is
    /// confirmed by generating the position's moves again. Levels up to 61 seeds.
    Compact,
}

impl StateKind {
    /// Bytes of memory the state of `positions` positions takes.
    pub fn bytes(self, positions: u64) -> u64 {
        let per = match self {
            StateKind::Fast => 2,
            StateKind::Compact => 1,
        };
        per * positions + positions.div_ceil(64) * 8
    }

    /// The name used on the command line (`fast`, `compact`).
    pub fn name(self) -> &'static str {
        match self {
            StateKind::Fast => "fast",
            StateKind::Compact => "compact",
        }
    }
}

/// How a level's forward pass reads the levels below (DESIGN.md section 5.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Lower {
    /// Each capture's child read where it lies: the lower levels a capture reaches are
    /// held in memory (or, with spilling, held while the state is on disk).
    Random,
    /// The lower levels read once in index order, each position giving its value to its
    /// parents by un-captures: only the level's state is in memory.
    Stream,
}

impl Lower {
    /// The name used on the command line (`random`, `stream`).
    pub fn name(self) -> &'static str {
        match self {
            Lower::Random => "random",
            Lower::Stream => "stream",
        }
    }
}

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
        // Counted without branches: values of either sign come at random.
        let (mut won, mut lost) = (0u64, 0u64);
        for &v in payload {
            let v = v as i8;
            won += (v > 0) as u64;
            lost += (v < 0) as u64;
        }
        let positions = payload.len() as u64;
        Outcomes {
            positions,
            won,
            drawn: positions - won - lost,
            lost,
        }
    }

    /// [`Outcomes::of`] with the threads of the current rayon pool.
    pub fn of_parallel(payload: &[u8]) -> Outcomes {
        payload
            .par_chunks(1 << 20)
            .map(Outcomes::of)
            .reduce(Outcomes::default, Outcomes::merge)
    }
}

/// A level after its forward pass ([`forward_pass`], [`forward_stream`]), ready for
/// [`backward_pass`].
pub(crate) struct Forwarded<const C: bool> {
    state: State<C>,
    /// The thresholds some position can seed at ([`State::survey`]).
    present: u64,
    forward: Duration,
}

/// Solving level `n`, whose lower levels `lower` must hold, part one: the forward pass,
/// reading each capture's child where it lies. `progress` is advanced by positions here
/// and by positions settled in [`backward_pass`], which gives the level's state;
/// [`State::into_values`] then gives its values in index order.
///
/// With `spill`, an empty file, the state never shares memory with the lower levels:
/// the forward pass goes in stripes, each written to `spill` (while the next one is
/// computed) and its memory given back. The caller can then let go of the lower levels
/// (the backward pass reads none) before [`backward_pass`] reads the state back. Peak
/// memory is then about the larger of the lower levels and the state, not their sum.
/// Fails only on the spill file's errors.
pub(crate) fn forward_pass<const C: bool, L: LowerValues + ?Sized>(
    rules: Rules,
    index: &Index,
    n: usize,
    lower: &L,
    progress: &LevelBar,
    mut spill: Option<&mut File>,
) -> std::io::Result<Forwarded<C>> {
    let size = index.level_size(n);
    let mut state = State::<C>::new(size);
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

/// Solving level `n`, part one, with the lower levels read as a stream: each position's
/// own moves first (the game ends, forced moves, in-level moves counted), then every
/// position of levels `n - 2` down to the lowest a capture reaches, in index order, hands
/// `captured - v(child)` to each of its parents here by un-captures (an atomic max). The
/// lower levels are read once, a chunk at a time; only this level's state is in memory.
/// Fails only when `lower` cannot be read.
pub(crate) fn forward_stream<const C: bool, S: Stream + ?Sized>(
    rules: Rules,
    index: &Index,
    n: usize,
    lower: &S,
    progress: &LevelBar,
) -> Result<Forwarded<C>> {
    let size = index.level_size(n);
    let state = State::<C>::new(size);
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
                    m,
                    first,
                    values,
                    |qi| prefetch(state.exit(qi as usize)),
                    |qi, x, _| state.raise(qi as usize, x),
                );
                progress
                    .inc(((end - first) as u128 * (size - half) as u128 / total as u128) as u64);
                Ok(())
            },
        )?;
    }
    let mut state = state;
    let present = state.survey(0..size as usize);
    Ok(Forwarded {
        state,
        present,
        forward: start.elapsed(),
    })
}

/// Solving a level, part two: reads the state back from `spill` (the file the forward
/// pass wrote; counted as forward time), then the backward pass.
pub(crate) fn backward_pass<const C: bool>(
    rules: Rules,
    index: &Index,
    n: usize,
    forwarded: Forwarded<C>,
    progress: &LevelBar,
    spill: Option<&mut File>,
) -> std::io::Result<(State<C>, PhaseTimes)> {
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
fn forward_chunks<const C: bool, L: LowerValues + ?Sized>(
    rules: Rules,
    index: &Index,
    n: usize,
    lower: &L,
    state: &State<C>,
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

/// A position's best exit and in-level moves from what its moves say, `best` being its
/// best capture (if any): a game over is worth its value, moves that all end the game `n`.
#[inline(always)]
fn exit_and_stay(exits: Exits, n: usize, best: i8) -> (i8, u8) {
    match exits {
        Exits::Terminal(v) => (v, 0),
        Exits::AllEnd => (n as i8, 0),
        Exits::Moves { stay } => (best, stay),
    }
}

/// The solver's state of the level being built, in anonymous memory: the fast state
/// (`C = false`, two bytes per position) or the compact one (`C = true`, one byte); see
/// the module doc. It is asked for huge pages: the backward pass reads it at random, and
/// with 4 KiB pages nearly every such read would also miss the TLB.
pub struct State<const C: bool> {
    map: HugeBuf,
    /// Fast: position `i`'s count byte at `2i`, its value byte at `2i + 1`. Compact:
    /// position `i`'s byte at `i`.
    cells: &'static [AtomicU8],
    /// Per block of [`BLOCK`] positions, the thresholds at which one of them may be a
    /// seed ([`threshold_bit`] of `|b|`), so that the backward pass skips the blocks that
    /// cannot seed at a threshold: at level 20, 5.7 of 18 thresholds are present in a
    /// block on average. Every bit is set until [`State::survey`].
    blocks: Vec<u64>,
}

/// Positions per stripe of a forward pass that spills its state (32 MiB of fast state; a
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

impl<const C: bool> State<C> {
    /// Bytes per position, besides the threshold map's bit.
    pub(crate) const BYTES: usize = if C { 1 } else { 2 };

    /// The exit byte of a position with no exit.
    const NO_EXIT: i8 = if C { COMPACT_NO_EXIT } else { NO_EXIT };

    /// Whether the exit byte of an unsettled position says it has no exit (compact: with
    /// a count of its children known won, see [`COMPACT_NO_EXIT`]).
    #[inline(always)]
    fn no_exit(b: i8) -> bool {
        if C {
            b <= COMPACT_NO_EXIT + 2
        } else {
            b == NO_EXIT
        }
    }

    pub(crate) fn new(len: u64) -> State<C> {
        let len = len as usize;
        let bytes = Self::BYTES * len;
        let map = HugeBuf::zeroed(bytes)
            .unwrap_or_else(|e| panic!("cannot allocate {bytes} bytes of solver state: {e}"));
        let ptr = map.as_ptr() as *const AtomicU8;
        // SAFETY: the map holds `bytes` zeroed bytes and is owned by the State, which hands
        // out the cells only with its own lifetime; AtomicU8 has the layout of u8.
        let cells = unsafe { std::slice::from_raw_parts(ptr, bytes) };
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
        let first = range.start / BLOCK;
        let state = &*self;
        let masks: Vec<u64> = (first..range.end.div_ceil(BLOCK))
            .into_par_iter()
            .map(|k| {
                let mut mask = 0;
                let end = ((k + 1) * BLOCK).min(range.end);
                for i in k * BLOCK..end {
                    let b = state.exit(i).load(Relaxed) as i8;
                    // No exit and an exit worth 0 never seed.
                    if b != 0 && !Self::no_exit(b) {
                        mask |= threshold_bit(b);
                    }
                }
                mask
            })
            .collect();
        let all = masks.iter().fold(0, |a, m| a | m);
        self.blocks[first..first + masks.len()].copy_from_slice(&masks);
        all
    }

    pub fn len(&self) -> usize {
        self.cells.len() / Self::BYTES
    }

    /// The count byte of position `i` (fast state).
    #[inline(always)]
    pub(crate) fn count(&self, i: usize) -> &AtomicU8 {
        debug_assert!(!C);
        &self.cells[2 * i]
    }

    /// The byte of position `i` that holds its best exit until it is settled: the value
    /// byte of the fast state, the only byte of the compact one.
    #[inline(always)]
    pub(crate) fn exit(&self, i: usize) -> &AtomicU8 {
        if C {
            &self.cells[i]
        } else {
            &self.cells[2 * i + 1]
        }
    }

    /// Sets position `i` after its own moves: `stay` in-level moves (kept by the fast state
    /// only) and best exit `b` ([`NO_EXIT`] for none).
    #[inline(always)]
    pub(crate) fn init(&self, i: usize, stay: u8, b: i8) {
        let b = if b == NO_EXIT { Self::NO_EXIT } else { b };
        if !C {
            self.count(i).store(stay, Relaxed);
        }
        self.exit(i).store(b as u8, Relaxed);
    }

    /// Sets the positions `range` of level `n`, held from index `base` on, from their own
    /// moves ([`exits`]: game ends, forced moves, in-level moves counted), in parallel;
    /// `done(positions)` after each chunk. Their captures are raised by the stream after.
    pub(crate) fn own_moves(
        &self,
        rules: Rules,
        index: &Index,
        n: usize,
        range: Range<u64>,
        base: u64,
        done: impl Fn(u64) + Sync,
    ) {
        let chunks = (range.end - range.start).div_ceil(CHUNK);
        (0..chunks).into_par_iter().for_each(|c| {
            let first = range.start + c * CHUNK;
            let end = (first + CHUNK).min(range.end);
            let mut board = index.unrank(n, first);
            for i in first..end {
                let (b, stay) = exit_and_stay(exits(&board, rules), n, NO_EXIT);
                self.init((i - base) as usize, stay, b);
                if i + 1 < end {
                    index.next(&mut board);
                }
            }
            done(end - first);
        });
    }

    /// Raises position `i`'s best exit to `x` if it is lower (several threads may raise one
    /// position at once).
    #[inline(always)]
    pub(crate) fn raise(&self, i: usize, x: i8) {
        let cell = self.exit(i);
        let mut cur = cell.load(Relaxed) as i8;
        while x > cur {
            match cell.compare_exchange_weak(cur as u8, x as u8, Relaxed, Relaxed) {
                Ok(_) => break,
                Err(now) => cur = now as i8,
            }
        }
    }

    /// Writes the cells of the positions `range` (the next ones of the level, from a
    /// multiple of [`CHUNK`]) to `file` and gives their memory back (it reads as zeros
    /// until [`State::restore`]).
    ///
    /// # Safety
    /// No thread may read or write the cells of `range` meanwhile (other cells may be in
    /// use).
    unsafe fn spill(&self, range: Range<usize>, file: &mut File) -> std::io::Result<()> {
        let bytes = Self::BYTES * range.start..Self::BYTES * range.end;
        let cells = &self.cells[bytes.clone()];
        // SAFETY: AtomicU8 has the layout of u8, and by the caller nothing changes these
        // cells while the slice lives.
        let raw = unsafe { std::slice::from_raw_parts(cells.as_ptr() as *const u8, cells.len()) };
        file.write_all(raw)?;
        // Its pages read as zeros after this; `restore` fills them again. The range starts
        // at a multiple of CHUNK positions, so at a page.
        // SAFETY: nothing uses these cells meanwhile (the caller's promise).
        unsafe { self.map.discard_shared(bytes) };
        Ok(())
    }

    /// Lower back every cell that [`State::spill`] wrote to `file`.
    fn restore(&mut self, file: &File) -> std::io::Result<()> {
        read_exact_at_parallel(file, 0, &mut self.map[..])
    }

    /// Turns every value into the final one (its settled value, or 0 for a draw if never
    /// settled) and gathers them at the start of the map: the level's payload, without a
    /// copy.
    pub(crate) fn finish(&mut self) -> &[u8] {
        let len = self.len();
        let bytes: &mut [u8] = &mut self.map;
        if C {
            // In place: each byte becomes its value.
            bytes.par_chunks_mut(CHUNK as usize).for_each(|chunk| {
                for b in chunk {
                    let code = *b as i8;
                    *b = if compact_settled(code) {
                        compact_code(code) as u8
                    } else {
                        0
                    };
                }
            });
            return &self.map[..len];
        }
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
    /// half (fast state) is given back: the values stay in huge pages for the level above
    /// to read.
    pub(crate) fn into_values(mut self) -> HugeBuf {
        let len = self.len();
        self.finish();
        let mut map = self.map;
        map.truncate(len);
        map
    }

    /// The seeds of threshold `t` among the positions `start..end` (at most a block), as
    /// two masks: bit `j` of the first if position `start + j` is one, of the second if it
    /// is won (its exit gives `t`, unsettled). A fast loss is a position worth `-t` by its
    /// exit with no in-level move left (count byte 0); a compact one only may be (its exit
    /// gives `-t`, unsettled): its children tell.
    #[inline]
    fn seeds(&self, start: usize, end: usize, t: i8) -> (u64, u64) {
        let cells = &self.cells[Self::BYTES * start..Self::BYTES * end];
        if C {
            match <&[AtomicU8; BLOCK]>::try_from(cells) {
                Ok(block) => compact_block_seeds(block, t),
                Err(_) => compact_seeds(cells, t),
            }
        } else {
            match <&[AtomicU8; 2 * BLOCK]>::try_from(cells) {
                Ok(block) => block_seeds(block, t),
                Err(_) => pair_seeds(cells, t),
            }
        }
    }
}

/// The seeds of threshold `t` among compact bytes, as [`State::seeds`] gives them.
fn compact_seeds(cells: &[AtomicU8], t: i8) -> (u64, u64) {
    let (mut seeds, mut wins) = (0u64, 0u64);
    for (j, c) in cells.iter().enumerate() {
        let b = c.load(Relaxed) as i8;
        seeds |= ((b == t || b == -t) as u64) << j;
        wins |= ((b == t) as u64) << j;
    }
    (seeds, wins)
}

/// [`compact_seeds`] of a whole block, 16 bytes at a time.
#[inline]
fn compact_block_seeds(cells: &[AtomicU8; BLOCK], t: i8) -> (u64, u64) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SSE2, all these intrinsics need, is part of every x86_64 CPU.
    unsafe {
        use std::arch::x86_64::*;
        let (won_key, lost_key) = (_mm_set1_epi8(t), _mm_set1_epi8(-t));
        let (mut seeds, mut wins) = (0u64, 0u64);
        for (k, part) in cells.chunks_exact(16).enumerate() {
            let v = load16(part);
            let w = _mm_movemask_epi8(_mm_cmpeq_epi8(v, won_key)) as u16 as u64;
            let l = _mm_movemask_epi8(_mm_cmpeq_epi8(v, lost_key)) as u16 as u64;
            wins |= w << (16 * k);
            seeds |= (w | l) << (16 * k);
        }
        (seeds, wins)
    }
    #[cfg(not(target_arch = "x86_64"))]
    compact_seeds(cells, t)
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
    /// Predecessors of a batch of settled positions: index, board, whether the settled
    /// child is won for its side to move, and the pit of the move to it; their cells are
    /// being prefetched.
    pending: Vec<(u64, Board, bool, u8)>,
    /// The predecessors of the batch after, being generated.
    ahead: Vec<(u64, Board, bool, u8)>,
    /// Compact state: positions that may be lost, whose first child to read is being
    /// prefetched; read after the next batch ([`Backward::queue_check`]).
    checks: Vec<Check>,
    /// The same, queued during this batch.
    checks_ahead: Vec<Check>,
    /// Messages for other ranks, per rank ([`message`]; empty in a single process).
    pub(crate) outbox: Vec<Vec<u8>>,
}

/// Where the backward pass puts what it finds: positions settled, checks to go on with
/// after the next batch, messages for other ranks.
struct Queues<'w> {
    stack: &'w mut Vec<(u64, Board, bool)>,
    checks: &'w mut Vec<Check>,
    outbox: &'w mut Vec<Vec<u8>>,
}

/// Puts message `word` in `outbox`, the outboxes of `ranks` ranks, for rank `to`.
#[inline]
fn send(outbox: &mut Vec<Vec<u8>>, to: usize, ranks: usize, word: u64) {
    if outbox.len() < ranks {
        outbox.resize(ranks, Vec::new());
    }
    outbox[to].extend_from_slice(&word.to_le_bytes());
}

/// The messages of a distributed backward pass, 8 bytes little-endian each: the index of
/// a position held by the receiver in the low [`message::INDEX_BITS`] bits, and what
/// happened above them.
pub(crate) mod message {
    /// Bits of a position's index in a message: levels of a distributed build hold at
    /// most `2^54` positions.
    pub(crate) const INDEX_BITS: u32 = 54;
    /// The index in a message.
    pub(crate) const INDEX: u64 = (1 << INDEX_BITS) - 1;
    /// Without [`CHECK`]: a child of the position settled, won for its side to move with
    /// this bit, lost without. With it: the position is lost (every in-level child won).
    pub(crate) const WON: u64 = 1 << 63;
    /// Compact state: a check of whether the position (maybe another rank's) is lost,
    /// going on at its child by the pit in bits 58..62, held by the receiver; bits 54..58
    /// are the pit of a child known won (15: none). See [`check`] and [`check_pits`].
    pub(crate) const CHECK: u64 = 1 << 62;
    /// The pit field's value for no pit.
    const NONE: u64 = 15;

    /// The message of a check of position `qi` going on at its child by `pit`, the child
    /// by `skip` known won (`super::NO_PIT`: none).
    #[inline]
    pub(crate) fn check(qi: u64, pit: u8, skip: u8) -> u64 {
        let skip = if skip == super::NO_PIT {
            NONE
        } else {
            skip as u64
        };
        CHECK | (pit as u64) << 58 | skip << 54 | qi
    }

    /// The pit and the known pit (`super::NO_PIT`: none) of a [`check`] message.
    #[inline]
    pub(crate) fn check_pits(x: u64) -> (u8, u8) {
        let skip = x >> 54 & NONE;
        let skip = if skip == NONE {
            super::NO_PIT
        } else {
            skip as u8
        };
        ((x >> 58 & NONE) as u8, skip)
    }
}

/// A position of the compact state that is lost if all its in-level children are won
/// (its best exit gives at most `-t`): its byte as read, its board, the pit of a move
/// whose child is known won ([`NO_PIT`] if none), and the pit and index of the next
/// child to read, whose cell is being prefetched.
#[derive(Clone, Copy)]
struct Check {
    qi: u64,
    code: i8,
    board: Board,
    skip: u8,
    pit: u8,
    first: u64,
}

/// No pit: a check that knows none of the position's children.
const NO_PIT: u8 = u8::MAX;

/// The backward pass over the positions `base..base + state.len()` of level `n`: the
/// whole level in a single process, one rank's slice in a distributed build. An update
/// for a predecessor outside goes to the outbox of the rank that owns it.
pub(crate) struct Backward<'a, const C: bool> {
    pub(crate) rules: Rules,
    pub(crate) index: &'a Index,
    /// The level: seeds on every board.
    pub(crate) n: usize,
    pub(crate) state: &'a State<C>,
    /// The first index `state` holds.
    pub(crate) base: u64,
    /// Ranks the level is cut into (1 in a single process).
    pub(crate) ranks: usize,
}

impl<const C: bool> Backward<'_, C> {
    /// Settles the position at `at` in the state at value `v` unless it is settled
    /// already; `seen` is its compact byte as last read, unsettled.
    #[inline]
    fn settle(&self, at: usize, seen: i8, v: i8) -> bool {
        if C {
            // The byte of an unsettled position changes when it is settled, and (no exit)
            // when its count of won children goes up: then try again. Sequentially
            // consistent, as are the reads of a check: of two threads that each settle a
            // child of one position and then read its other children, at least one sees
            // both settled.
            let cell = self.state.exit(at);
            let mut seen = seen;
            while !compact_settled(seen) {
                match cell.compare_exchange(seen as u8, compact_code(v) as u8, SeqCst, Relaxed) {
                    Ok(_) => return true,
                    Err(now) => seen = now as i8,
                }
            }
            return false;
        }
        let prev = self.state.count(at).fetch_or(SETTLED, Relaxed);
        if prev & SETTLED != 0 {
            return false;
        }
        // Only the thread that set the mark writes the value. Readers of an unsettled
        // position's exit value that race with this write only try to settle it, and
        // fail on the mark.
        self.state.exit(at).store(v as u8, Relaxed);
        true
    }

    /// Whether the child at index `ci` (held here) is settled and won for its side to
    /// move.
    #[inline(always)]
    fn won(&self, ci: u64) -> bool {
        self.state.exit((ci - self.base) as usize).load(SeqCst) as i8 >= COMPACT_WON
    }

    /// Compact state: position `qi`, unsettled with byte `code` and a best exit of at most
    /// `-t`, is lost at `t` if every in-level child is won (for its side to move); the
    /// child by pit `skip` is known to be. Its moves are generated again: the first other
    /// child is ranked and prefetched, and the check waits on `checks` for the next batch
    /// ([`Backward::check`]); with no other child, it is lost now.
    #[inline]
    fn queue_check(&self, qi: u64, code: i8, board: Board, skip: u8, t: i8, out: &mut Queues) {
        let check = Check {
            qi,
            code,
            board,
            skip,
            pit: 0,
            first: 0,
        };
        self.next_child(&check, 0, t, out);
    }

    /// Goes on with a check that [`Backward::queue_check`] queued, its child `first`
    /// prefetched a batch ago: if that child is won, on to the next one.
    #[inline]
    fn check(&self, c: &Check, t: i8, out: &mut Queues) {
        if self.won(c.first) {
            self.next_child(c, c.pit as usize + 1, t, out);
        }
    }

    /// The next in-level child of check `c` from pit `from` on (but the known one): ranked,
    /// prefetched and queued on the checks for the batch after, so that no child's cache
    /// miss is waited for; when none is left, every child is won, and the position is lost
    /// at `t` and goes on the stack. In a distributed build, a child held by another rank
    /// sends the check on to that rank, and a position lost there is told its owner.
    #[inline]
    fn next_child(&self, c: &Check, from: usize, t: i8, out: &mut Queues) {
        let mut next = None;
        for_each_stay(&c.board, self.rules, from, |o, child| {
            if o as u8 == c.skip {
                return true;
            }
            next = Some((o, self.index.rank_in(child, self.n)));
            false
        });
        let held = self.state.len() as u64;
        match next {
            Some((pit, ci)) => {
                let at = ci.wrapping_sub(self.base);
                if at < held {
                    prefetch(self.state.exit(at as usize));
                    out.checks.push(Check {
                        pit: pit as u8,
                        first: ci,
                        ..*c
                    });
                } else {
                    let word = message::check(c.qi, pit as u8, c.skip);
                    send(out.outbox, self.owner(ci), self.ranks, word);
                }
            }
            None => {
                let at = c.qi.wrapping_sub(self.base);
                if at < held {
                    if self.settle(at as usize, c.code, -t) {
                        out.stack.push((c.qi, c.board, false));
                    }
                } else {
                    let word = message::CHECK | message::WON | c.qi;
                    send(out.outbox, self.owner(c.qi), self.ranks, word);
                }
            }
        }
    }

    /// The rank that holds position `i` of the level.
    #[inline]
    fn owner(&self, i: u64) -> usize {
        owner(i, self.index.level_size(self.n), self.ranks)
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
            let (mut seeds, wins) = self.state.seeds(start, to, t);
            while seeds != 0 {
                let j = seeds.trailing_zeros() as usize;
                seeds &= seeds - 1;
                let won = wins >> j & 1 != 0;
                let at = start + j;
                let i = self.base + at as u64;
                let v = if won { t } else { -t };
                if C && !won {
                    // Compact: lost only if every in-level child is won by now.
                    let board = *self.index.seek(&mut cursor, i);
                    let mut out = work.queues();
                    self.queue_check(i, -t, board, NO_PIT, t, &mut out);
                } else {
                    if !self.settle(at, v, v) {
                        continue;
                    }
                    work.stack.push((i, *self.index.seek(&mut cursor, i), won));
                }
                // Seeds are gathered into a batch before their predecessors are
                // generated: one seed alone has too few for the prefetches to overlap.
                if work.stack.len() >= BATCH || work.checks_ahead.len() >= BATCH {
                    settled += self.drain(t, work);
                }
            }
        }
        settled + self.drain(t, work)
    }

    /// Applies the messages that other ranks sent ([`message`]), and everything they settle
    /// here in turn. Returns the positions handled.
    pub(crate) fn apply(&self, t: i8, messages: &[u8], work: &mut Work) -> u64 {
        let mut settled = 0;
        let word = |m: &[u8]| u64::from_le_bytes(m.try_into().unwrap());
        for batch in messages.chunks(8 * BATCH) {
            for m in batch.chunks_exact(8) {
                let x = word(m);
                if x & message::CHECK == 0 {
                    prefetch(self.state.exit(((x & message::INDEX) - self.base) as usize));
                }
            }
            for m in batch.chunks_exact(8) {
                let x = word(m);
                let qi = x & message::INDEX;
                let (index, n) = (self.index, self.n);
                let board = || index.unrank(n, qi);
                let won = x & message::WON != 0;
                let mut out = work.queues();
                if x & message::CHECK == 0 {
                    self.update(qi, board, won, NO_PIT, t, &mut out);
                } else if won {
                    // Every in-level child of qi was found won: it is lost.
                    let at = (qi - self.base) as usize;
                    let code = self.state.exit(at).load(Relaxed) as i8;
                    if self.settle(at, code, -t) {
                        out.stack.push((qi, board(), false));
                    }
                } else {
                    // A check of another rank's qi, at a child held here.
                    let (pit, skip) = message::check_pits(x);
                    let c = Check {
                        qi,
                        // Read by `settle` only if qi is held here: a guess then.
                        code: -t,
                        board: board(),
                        skip,
                        pit: 0,
                        first: 0,
                    };
                    self.next_child(&c, pit as usize, t, &mut out);
                }
            }
            settled += self.drain(t, work);
        }
        settled
    }

    /// Tells position `qi` (held here) that a child of it settled at threshold `t`, won
    /// or lost for the child's side to move, by its move from pit `o` ([`NO_PIT`] if not
    /// known); a position this settles goes on the stack with its board, and one that may
    /// be lost (compact) on the checks.
    #[inline]
    fn update(
        &self,
        qi: u64,
        board: impl FnOnce() -> Board,
        won: bool,
        o: u8,
        t: i8,
        out: &mut Queues,
    ) {
        let at = (qi - self.base) as usize;
        if C {
            let code = self.state.exit(at).load(Relaxed) as i8;
            if compact_settled(code) {
                return;
            }
            if !won {
                // The child is lost for its side to move: q wins by moving there.
                if self.settle(at, code, t) {
                    out.stack.push((qi, board(), true));
                }
                return;
            }
            // The child is won (>= t). q is lost now if no exit is better than -t and every
            // other in-level child is won too; with an exit between -t and 0 it is found
            // by the scan at threshold -b.
            if code > -t {
                return;
            }
            if code <= COMPACT_NO_EXIT + 1 {
                // No exit and at most one child known won: count this one; lost when the
                // count reaches the in-level moves (each won child is told once).
                let q = board();
                let moves = match exits(&q, self.rules) {
                    Exits::Moves { stay } => stay as i8,
                    _ => unreachable!("a position with no exit has in-level moves"),
                };
                let cell = self.state.exit(at);
                let mut code = code;
                loop {
                    let won = code - COMPACT_NO_EXIT + 1;
                    let next = if won == moves {
                        compact_code(-t)
                    } else {
                        COMPACT_NO_EXIT + won
                    };
                    match cell.compare_exchange(code as u8, next as u8, SeqCst, Relaxed) {
                        Ok(_) if won == moves => {
                            out.stack.push((qi, q, false));
                            return;
                        }
                        Ok(_) => return,
                        Err(now) => code = now as i8,
                    }
                    if compact_settled(code) {
                        return;
                    }
                    if code > COMPACT_NO_EXIT + 1 {
                        // Two children counted by others meanwhile: check this one.
                        break;
                    }
                }
                self.queue_check(qi, code, q, o, t, out);
                return;
            }
            self.queue_check(qi, code, board(), o, t, out);
            return;
        }
        let cell = self.state.count(at);
        if cell.load(Relaxed) & SETTLED != 0 {
            return;
        }
        if !won {
            // The child is lost for its side to move: q wins by moving there.
            if self.settle(at, 0, t) {
                out.stack.push((qi, board(), true));
            }
            return;
        }
        // The child is won (>= t): one more move of q is known to give q at most -t.
        // With an exit worth 0 or more, q is never lost by its count (that needs
        // b <= -t < 0, at any threshold), so the count is not kept: this saves a locked
        // operation on the cache line just read.
        if self.state.exit(at).load(Relaxed) as i8 >= 0 {
            return;
        }
        let old = cell.fetch_sub(1, Relaxed);
        if old & SETTLED == 0 && old & COUNT_MASK == 1 {
            // Every in-level move of q now gives at most -t; q is lost now unless an
            // exit is better (then it is settled by the threshold scan at -b, or is a
            // draw or a win by its exit).
            let b = self.state.exit(at).load(Relaxed) as i8;
            if b <= -t && self.settle(at, 0, -t) {
                out.stack.push((qi, board(), false));
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
        while !work.stack.is_empty()
            || !work.pending.is_empty()
            || !work.checks.is_empty()
            || !work.checks_ahead.is_empty()
        {
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
                checks,
                checks_ahead,
                outbox,
            } = &mut *work;
            // A pipeline of two batches: generate the predecessors of the next batch and
            // prefetch their cells, then update those of the batch before, whose cells
            // have had a whole batch's time to arrive.
            ahead.clear();
            for _ in 0..stack.len().min(BATCH) {
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
                    |q, stored, top, near, o| {
                        if stored {
                            let qi = self.index.rank_near(near, q, top);
                            let at = qi.wrapping_sub(self.base);
                            if at < held {
                                prefetch(self.state.exit(at as usize));
                                ahead.push((qi, *q, won, o as u8));
                            } else {
                                let word = qi | if won { message::WON } else { 0 };
                                send(outbox, owner(qi, size, self.ranks), self.ranks, word);
                            }
                        }
                    },
                );
            }
            let mut out = Queues {
                stack,
                checks: checks_ahead,
                outbox,
            };
            for &(qi, q, won, o) in pending.iter() {
                self.update(qi, || q, won, o, t, &mut out);
            }
            // The checks queued a batch ago: their first children have had time to arrive.
            for c in checks.iter() {
                self.check(c, t, &mut out);
            }
            checks.clear();
            std::mem::swap(checks, checks_ahead);
            std::mem::swap(pending, ahead);
        }
        done
    }
}

impl Work {
    /// The queues that settling a seed or a message fills.
    fn queues(&mut self) -> Queues<'_> {
        Queues {
            stack: &mut self.stack,
            checks: &mut self.checks_ahead,
            outbox: &mut self.outbox,
        }
    }

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

/// Levels `0..=top` solved in memory, one byte per position: the true values that the
/// unit tests of the levels' readers compare with.
#[cfg(test)]
pub(crate) fn solve_in_memory(rules: Rules, index: &Index, top: usize) -> Vec<Vec<u8>> {
    struct Below(Vec<Vec<u8>>);
    impl LowerValues for Below {
        fn value(&self, seeds: usize, index: u64) -> i8 {
            self.0[seeds][index as usize] as i8
        }
    }
    let mut lower = Below(Vec::new());
    for n in 0..=top {
        let bar = LevelBar::new(false, 0, 0, "");
        let forwarded = forward_pass::<false, _>(rules, index, n, &lower, &bar, None).unwrap();
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
