//! The fast state: two bytes per position side by side, a count byte and a value byte, so
//! that a loss costs one update (the module above says why the two share a cache line).

use std::ops::Range;
use std::path::Path;
use std::sync::atomic::{AtomicU8, Ordering::Relaxed};

use rayon::prelude::*;

use super::backward::{seed_cells, Backward, Buffers, Check, Queues, Settle, SettleCells};
use super::state::{Encoding, State, BLOCK};
use super::{StateKind, Values};
use crate::db::checkpoint::CheckpointHeader;
use crate::error::Result;
use crate::game::rules::Board;
use crate::game::scan::NO_EXIT;
use crate::util::{prefetch, CHUNK};

/// The count byte's mark of a settled position.
const SETTLED: u8 = 0x80;
/// The count byte's count: in-level moves not yet known to give at most `-t`.
const COUNT_MASK: u8 = 0x0f;

/// The fast encoding. Position `i`'s count byte is at `2i`: the [`SETTLED`] mark and the
/// number of in-level moves not yet known to reach a child worth `>= t` (kept only while
/// the best exit is below 0); its value byte at `2i + 1`: the best exit until the position
/// is settled ([`NO_EXIT`] for none), its value after.
#[derive(Debug)]
pub(crate) enum Fast {}

/// Settles the position whose bytes are `cells` at `v`, unless it is settled already:
/// whether this call did.
#[inline(always)]
fn settle_cells(cells: &[AtomicU8], v: i8) -> bool {
    let prev = cells[0].fetch_or(SETTLED, Relaxed);
    if prev & SETTLED != 0 {
        return false;
    }
    // Only the thread that set the mark writes the value. Readers of an unsettled
    // position's exit value that race with this write only try to settle it, and fail on
    // the mark.
    cells[1].store(v as u8, Relaxed);
    true
}

impl Encoding for Fast {
    const KIND: StateKind = StateKind::Fast;
    const BYTES: usize = StateKind::Fast.cell_bytes();
    const EXIT: usize = 1;
    const NO_EXIT: i8 = NO_EXIT;

    #[inline(always)]
    fn no_exit(b: i8) -> bool {
        b == NO_EXIT
    }

    #[inline(always)]
    fn init(cells: &[AtomicU8], stay: u8, b: i8) {
        cells[0].store(stay, Relaxed);
        cells[1].store(b as u8, Relaxed);
    }

    #[inline]
    fn seeds(cells: &[AtomicU8], t: i8) -> (u64, u64) {
        match <&[AtomicU8; 2 * BLOCK]>::try_from(cells) {
            Ok(block) => block_seeds(block, t),
            Err(_) => pair_seeds(cells, t),
        }
    }

    fn finish(bytes: &mut [u8], len: usize) {
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
    }
}

impl SettleCells for Fast {
    #[inline]
    fn settle(back: &Backward<Fast>, at: usize, _seen: i8, v: i8) -> bool {
        settle_cells(back.state.cells(at), v)
    }

    #[inline]
    fn seed<const P: usize>(
        back: &Backward<Fast>,
        i: u64,
        at: usize,
        won: bool,
        t: i8,
        board: impl FnOnce() -> Board,
        out: &mut Queues,
    ) {
        // A lost seed has no in-level move left: settled at once.
        let v = if won { t } else { -t };
        if Self::settle(back, at, v, v) {
            out.stack.push((i, board(), won));
        }
    }
}

impl Settle for Fast {
    const STATE: StateKind = StateKind::Fast;
    type Held = State<Fast>;

    #[inline(always)]
    fn held(state: &State<Fast>) -> u64 {
        state.len() as u64
    }

    #[inline(always)]
    fn prefetch(state: &State<Fast>, at: u64) {
        prefetch(state.exit_addr(at as usize));
    }

    #[inline]
    fn seed_range<const P: usize>(
        back: &Backward<Fast>,
        t: i8,
        range: Range<u64>,
        work: &mut Buffers,
    ) -> u64 {
        seed_cells::<Fast, P>(back, t, range, work)
    }

    #[inline]
    fn update<const P: usize>(
        back: &Backward<Fast>,
        qi: u64,
        board: impl FnOnce() -> Board,
        won: bool,
        _o: u8,
        t: i8,
        out: &mut Queues,
    ) {
        let at = (qi - back.base) as usize;
        // Both bytes behind one bounds check, not one for each access (levels 0..=12: 0.6 %
        // fewer instructions).
        let cells = back.state.cells(at);
        if cells[0].load(Relaxed) & SETTLED != 0 {
            return;
        }
        if !won {
            // The child is lost for its side to move: q wins by moving there.
            if settle_cells(cells, t) {
                out.stack.push((qi, board(), true));
            }
            return;
        }
        // The child is won (>= t): one more move of q is known to give q at most -t.
        // With an exit worth 0 or more, q is never lost by its count (that needs
        // b <= -t < 0, at any threshold), so the count is not kept: this saves a locked
        // operation on the cache line just read.
        if cells[1].load(Relaxed) as i8 >= 0 {
            return;
        }
        let old = cells[0].fetch_sub(1, Relaxed);
        if old & SETTLED == 0 && old & COUNT_MASK == 1 {
            // Every in-level move of q now gives at most -t; q is lost now unless an
            // exit is better (then it is settled by the threshold scan at -b, or is a
            // draw or a win by its exit).
            let b = cells[1].load(Relaxed) as i8;
            if b <= -t && settle_cells(cells, -t) {
                out.stack.push((qi, board(), false));
            }
        }
    }

    fn check<const P: usize>(_: &Backward<Fast>, _: &Check, _: i8, _: &mut Queues) {
        unreachable!("the fast state counts moves and queues no check")
    }

    fn continue_check<const P: usize>(
        _: &Backward<Fast>,
        _: u64,
        _: Board,
        _: u8,
        _: u8,
        _: i8,
        _: &mut Queues,
    ) {
        unreachable!("the fast state counts moves and sends no check")
    }

    fn lose(_: &Backward<Fast>, _: u64, _: i8) -> bool {
        unreachable!("the fast state counts moves and checks no loss")
    }

    fn save(state: &mut State<Fast>, path: &Path, head: CheckpointHeader) -> Result<()> {
        state.save(path, head)
    }

    fn into_values(state: State<Fast>) -> Values {
        Values::Held(state.into_values())
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
/// byte of each), as [`Encoding::seeds`] gives them: a win is a position whose exit gives
/// `t`, not settled; a loss one whose exit gives `-t` with no in-level move left and not
/// settled (count byte 0).
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
        use super::state::load16;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::solve::level::state::{block_scans_agree, draws};

    /// The vector scan of a block finds the seeds of the byte loop, at thresholds 1..=9, on
    /// drawn cells: counts 0..=2, or 0..=3 with the settled bit; values -9..=8 and no exit.
    #[test]
    fn block_scan_finds_the_seeds_of_the_byte_loop() {
        let (won, lost) = block_scans_agree::<Fast>(
            2 * BLOCK,
            // Counts: small, or settled; values: small of either sign, or no exit.
            |k, r| match (k % 2, r % 8) {
                (0, 0) => SETTLED | (r >> 4) & 3,
                (0, _) => (r >> 4) % 3,
                (1, 0) => NO_EXIT as u8,
                (1, _) => ((r >> 3) % 9) as i8 as u8 ^ if r & 4 != 0 { 0xff } else { 0 },
                _ => unreachable!(),
            },
            |cells, t| block_seeds(cells.try_into().unwrap(), t),
            pair_seeds,
        );
        // The cells are drawn so that seeds of both kinds are common.
        assert!(
            won > 2_000 && lost > 2_000,
            "{won} won and {lost} lost seeds drawn"
        );
    }

    /// A position's bytes round-trip: what `init` stores reads back as its count and exit,
    /// `settle`'s mark makes the value final, an unsettled position finishes as a draw; and
    /// `finish` moves every value to its index, across the sizes where its blocks begin.
    #[test]
    fn codes_round_trip_and_finish_gathers_the_values() {
        let cells = [AtomicU8::new(0), AtomicU8::new(0)];
        for stay in 0..=COUNT_MASK {
            for b in [NO_EXIT, -61, -1, 0, 1, 61] {
                Fast::init(&cells, stay, b);
                assert_eq!(cells[0].load(Relaxed), stay);
                assert_eq!(cells[1].load(Relaxed) as i8, b);
                assert_eq!(Fast::no_exit(b), b == NO_EXIT);
                assert_eq!(final_byte(stay, b as u8), 0, "unsettled: a draw");
                assert_eq!(final_byte(stay | SETTLED, b as u8) as i8, b);
            }
        }
        let mut next = draws(0x9e37_79b9_7f4a_7c15);
        for len in [0, 1, 5, 1023, 1024, 1025, 3000, 70_000] {
            let bytes: Vec<u8> = (0..2 * len).map(|_| next() as u8).collect();
            let want: Vec<u8> = bytes.chunks(2).map(|c| final_byte(c[0], c[1])).collect();
            let mut got = bytes.clone();
            Fast::finish(&mut got, len);
            assert_eq!(&got[..len], &want[..], "{len} positions");
        }
    }
}
