//! A level's solver state: one or two bytes per position in [`Cells`], laid out by an
//! [`Encoding`] (fast or compact), and a threshold map that lets the backward pass skip
//! the blocks of positions that cannot seed at a threshold.

use std::fs::File;
use std::marker::PhantomData;
use std::ops::Range;
use std::path::Path;
use std::sync::atomic::{AtomicU8, Ordering::Relaxed};

use rayon::prelude::*;

use super::cells::Cells;
use super::StateKind;
use crate::db::checkpoint::{write_checkpoint, Checkpoint, CheckpointHeader};
use crate::error::{Error, Result};
use crate::game::index::Index;
use crate::game::pits::with_pits;
use crate::game::rules::{exits_p, Exits, Rules};
use crate::game::scan::NO_EXIT;
use crate::util::{HugeBuf, CHUNK};

/// Positions per block of the threshold map [`State::survey`] makes: it costs a bit per
/// position.
pub(crate) const BLOCK: usize = 64;

/// How a state holds a position: its bytes, how a seed is found among them, and how they
/// become the level's values. Two types: [`super::Fast`] and [`super::Compact`]; each
/// also implements the backward pass's updates (`backward::Settle`), which depend on what
/// the bytes hold (a count of moves or not).
pub(crate) trait Encoding: Sized + Send + Sync + 'static {
    /// Which state this is.
    const KIND: StateKind;
    /// Bytes per position, besides the threshold map's bit.
    const BYTES: usize;
    /// Which of a position's bytes holds its best exit until it is settled.
    const EXIT: usize;
    /// The exit byte of a position with no exit.
    const NO_EXIT: i8;

    /// Whether the exit byte `b` of an unsettled position says it has no exit.
    fn no_exit(b: i8) -> bool;

    /// Sets a position's bytes `cells` after its own moves: `stay` in-level moves and best
    /// exit `b` ([`Encoding::NO_EXIT`] for none).
    fn init(cells: &[AtomicU8], stay: u8, b: i8);

    /// The seeds of threshold `t` among the positions whose bytes are `cells` (at most a
    /// [`BLOCK`]), as two masks: bit `j` of the first if position `j` is one, of the second
    /// if it is won (its exit gives `t`, unsettled). A loss is a position whose exit gives
    /// `-t`, unsettled, when it has no in-level move left (fast) or may have none
    /// (compact: its children tell).
    fn seeds(cells: &[AtomicU8], t: i8) -> (u64, u64);

    /// Turns `bytes`, the state of `len` positions, into their values (the settled value,
    /// or 0 for a draw if never settled) in its first `len` bytes, in parallel.
    fn finish(bytes: &mut [u8], len: usize);
}

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

/// The solver's state of the level being built (or of one rank's slice of it), in the
/// encoding `E`.
pub struct State<E: Encoding> {
    /// Position `i`'s bytes at `E::BYTES * i`.
    cells: Cells,
    /// Per block of [`BLOCK`] positions, the thresholds at which one of them may be a
    /// seed ([`threshold_bit`] of `|b|`), so that the backward pass skips the blocks that
    /// cannot seed at a threshold: at level 20, 5.7 of 18 thresholds are present in a
    /// block on average. Every bit is set until [`State::survey`].
    pub(crate) blocks: Vec<u64>,
    encoding: PhantomData<E>,
}

impl<E: Encoding> State<E> {
    /// The state of `len` positions, zeroed.
    ///
    /// # Panics
    /// If the memory cannot be had (the build checks it is available first).
    pub(crate) fn new(len: u64) -> State<E> {
        State::try_new(len).unwrap_or_else(|e| {
            let bytes = E::BYTES as u64 * len;
            panic!("cannot allocate {bytes} bytes of solver state: {e}")
        })
    }

    /// [`State::new`], or why the memory cannot be had.
    fn try_new(len: u64) -> std::io::Result<State<E>> {
        let len = len as usize;
        Ok(State {
            cells: Cells::zeroed(E::BYTES * len)?,
            blocks: vec![u64::MAX; len.div_ceil(BLOCK)],
            encoding: PhantomData,
        })
    }

    /// Positions held.
    #[inline(always)]
    pub(crate) fn len(&self) -> usize {
        self.cells.len() / E::BYTES
    }

    /// The bytes of position `i`.
    #[inline(always)]
    pub(crate) fn cells(&self, i: usize) -> &[AtomicU8] {
        &self.cells.atomics()[E::BYTES * i..E::BYTES * (i + 1)]
    }

    /// Where [`State::exit`] of position `i` lies, to prefetch it: without the bounds
    /// check that taking the byte makes.
    #[inline(always)]
    pub(crate) fn exit_addr(&self, i: usize) -> *const u8 {
        self.cells.addr(E::BYTES * i + E::EXIT)
    }

    /// The byte of position `i` that holds its best exit until it is settled.
    #[inline(always)]
    pub(crate) fn exit(&self, i: usize) -> &AtomicU8 {
        &self.cells.atomics()[E::BYTES * i + E::EXIT]
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
                    if b != 0 && !E::no_exit(b) {
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

    /// Sets position `i` after its own moves: `stay` in-level moves (kept by the fast state,
    /// and by the compact one for a position with no exit) and best exit `b` ([`NO_EXIT`]
    /// for none).
    #[inline(always)]
    pub(crate) fn init(&self, i: usize, stay: u8, b: i8) {
        let b = if b == NO_EXIT { E::NO_EXIT } else { b };
        E::init(self.cells(i), stay, b);
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
            with_pits!(index.pits_per_side(), P => self.own_moves_p::<P>(rules, index, n, first..end, base));
            done(end - first);
        });
    }

    /// [`State::own_moves`] of one run of positions, `P` known at compile time.
    #[inline(always)]
    fn own_moves_p<const P: usize>(
        &self,
        rules: Rules,
        index: &Index,
        n: usize,
        range: Range<u64>,
        base: u64,
    ) {
        let mut board = index.unrank(n, range.start);
        for i in range.clone() {
            let (b, stay) = exit_and_stay(exits_p::<P>(&board, rules), n, NO_EXIT);
            self.init((i - base) as usize, stay, b);
            if i + 1 < range.end {
                index.next_p::<P>(&mut board);
            }
        }
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
    /// multiple of [`CHUNK`], so from a page) to `file` and gives their memory back (it
    /// reads as zeros until [`State::restore`]).
    ///
    /// # Safety
    /// No thread may read or write the cells of `range` meanwhile (other cells may be in
    /// use).
    pub(crate) unsafe fn spill(&self, range: Range<usize>, file: &mut File) -> std::io::Result<()> {
        let bytes = E::BYTES * range.start..E::BYTES * range.end;
        // SAFETY: the caller's promise is the one `write_to` asks for.
        unsafe { self.cells.write_to(bytes, file) }
    }

    /// Reads back every cell that [`State::spill`] wrote to `file`.
    pub(crate) fn restore(&mut self, file: &File) -> std::io::Result<()> {
        self.cells.read_from(file)
    }

    /// Turns every position's bytes into its final value (its settled value, or 0 for a
    /// draw if never settled), gathered at the start of the memory: the level's payload,
    /// without a copy.
    pub(crate) fn finish(&mut self) -> &[u8] {
        let len = self.len();
        let bytes = self.cells.bytes_mut();
        E::finish(bytes, len);
        &bytes[..len]
    }

    /// The level's payload ([`State::finish`]) in the state's own memory, whose second
    /// half (fast state) is given back: the values stay in huge pages for the level above
    /// to read.
    pub(crate) fn into_values(mut self) -> HugeBuf {
        let len = self.len();
        self.finish();
        self.cells.into_buf(len)
    }

    /// Saves the state as a checkpoint at `path` (DESIGN.md section 4.5), described by
    /// `head` (its encoding, sizes and checksum filled in here). Between passes: `&mut`
    /// means no thread updates the cells meanwhile.
    pub(crate) fn save(&mut self, path: &Path, head: CheckpointHeader) -> Result<()> {
        let map: Vec<u8> = self.blocks.iter().flat_map(|b| b.to_le_bytes()).collect();
        let head = CheckpointHeader {
            encoding: E::KIND.code(),
            held: self.len() as u64,
            ..head
        };
        write_checkpoint(path, head, &map, &[self.cells.bytes_mut()])
    }

    /// The state a checkpoint holds (checked by its payload checksum); its header says
    /// which encoding, and must say this one's.
    pub(crate) fn load(checkpoint: Checkpoint) -> Result<State<E>> {
        let head = checkpoint.head;
        assert_eq!(head.encoding, E::KIND.code(), "loaded as another encoding");
        let mut state = State::try_new(head.held).map_err(|e| {
            Error::Resources(format!(
                "cannot allocate the solver state of level {}: {e}",
                head.seeds
            ))
        })?;
        let mut map = vec![0u8; state.blocks.len() * 8];
        checkpoint.read(&mut map, &mut [state.cells.bytes_mut()])?;
        for (b, bytes) in state.blocks.iter_mut().zip(map.chunks_exact(8)) {
            *b = u64::from_le_bytes(bytes.try_into().unwrap());
        }
        Ok(state)
    }

    /// The seeds of threshold `t` among the positions `start..end` (at most a block), as
    /// [`Encoding::seeds`] gives them.
    #[inline]
    pub(crate) fn seeds(&self, start: usize, end: usize, t: i8) -> (u64, u64) {
        E::seeds(&self.cells.atomics()[E::BYTES * start..E::BYTES * end], t)
    }
}

/// A position's best exit and in-level moves from what its moves say, `best` being its
/// best capture (if any): a game over is worth its value, moves that all end the game `n`.
#[inline(always)]
pub(crate) fn exit_and_stay(exits: Exits, n: usize, best: i8) -> (i8, u8) {
    match exits {
        Exits::Terminal(v) => (v, 0),
        Exits::AllEnd => (n as i8, 0),
        Exits::Moves { stay } => (best, stay),
    }
}

/// Sixteen cells as one SSE register, each byte read as a relaxed atomic load would.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(crate) fn load16(cells: &[AtomicU8]) -> std::arch::x86_64::__m128i {
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

/// A xorshift generator for the encodings' tests: the same draws on every run.
#[cfg(test)]
pub(super) fn draws(mut x: u64) -> impl FnMut() -> u64 {
    move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    }
}

/// For the encodings' tests: 4,000 blocks of `len` bytes, byte `k` drawn by `draw(k, r)`
/// from a random byte `r` (the same draws on every run), each scanned at a threshold of
/// 1..=9 by `vector` (the scan of a whole block) and by `bytes` (the byte loop), which
/// must agree, as must [`Encoding::seeds`]. Returns the won and the lost seeds found.
#[cfg(test)]
pub(super) fn block_scans_agree<E: Encoding>(
    len: usize,
    mut draw: impl FnMut(usize, u8) -> u8,
    vector: impl Fn(&[AtomicU8], i8) -> (u64, u64),
    bytes: impl Fn(&[AtomicU8], i8) -> (u64, u64),
) -> (u32, u32) {
    let mut next = draws(0x2545_f491_4f6c_dd1d);
    let (mut won, mut lost) = (0u32, 0u32);
    for round in 0..4000 {
        let drawn: Vec<u8> = (0..len).map(|k| draw(k, (next() >> 32) as u8)).collect();
        let cells: Vec<AtomicU8> = drawn.iter().map(|&b| AtomicU8::new(b)).collect();
        let t = (round % 9 + 1) as i8;
        let expect = bytes(&cells, t);
        assert_eq!(vector(&cells, t), expect, "threshold {t}, bytes {drawn:?}");
        assert_eq!(E::seeds(&cells, t), expect);
        won += expect.1.count_ones();
        lost += (expect.0 & !expect.1).count_ones();
    }
    (won, lost)
}
