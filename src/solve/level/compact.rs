//! The compact state: one byte per position, its best exit while unsettled and its value
//! once settled, told apart by the code. A position with an exit keeps no count of moves:
//! when it may be lost, that is confirmed by generating its in-level moves and reading its
//! children, as Syzygy's generator does. One with no exit holds its count instead.

use std::sync::atomic::{
    AtomicU8,
    Ordering::{Relaxed, SeqCst},
};

use rayon::prelude::*;

use std::ops::Range;
use std::path::Path;

use super::backward::{
    check_next, check_on, next_child, seed_cells, Backward, Buffers, Check, Queues, Settle,
    SettleCells, SettleChecks, NO_PIT,
};
use super::state::{Encoding, State, BLOCK};
use super::{StateKind, Values, COMPACT_MAX_SEEDS};
use crate::db::checkpoint::CheckpointHeader;
use crate::error::Result;
use crate::game::rules::{Board, MAX_PITS};
use crate::util::{prefetch, CHUNK};

// The exits and values of a level of at most `COMPACT_MAX_SEEDS` seeds, `-56..=56` (twice
// over, see [`code`]), lie above the bytes of positions with no exit (see [`NO_EXIT`]).
const _: () = assert!(COMPACT_MAX_SEEDS == (-1 - NO_EXIT_TOP as i32) as usize);

/// The byte of an unsettled position with no exit and one in-level move not known won: one
/// with `r` such moves (`1..=`[`MAX_PITS`]) holds `NO_EXIT + r - 1`, which no
/// exit of a level of at most [`COMPACT_MAX_SEEDS`] seeds can be. Each won child's update
/// takes one off, and the last one settles it lost, without reading its children: the
/// count the fast state keeps, for the positions with no exit.
const NO_EXIT: i8 = -64;

/// The highest byte of a position with no exit: every pit a move not known won.
const NO_EXIT_TOP: i8 = NO_EXIT + MAX_PITS as i8 - 1;

/// The byte of a position settled at `v`. An unsettled position's byte is its best exit
/// `b`, `-56..=56`, or no exit and its count ([`NO_EXIT`] and the seven bytes above): the
/// bytes `-64..=63` hold them, whose top two bits are equal. A settled one flips bit 6 of
/// its value: `64..=127` for a win, `-127..=-65` for a loss (a draw is never settled). So a
/// byte is settled if it lies outside `-64..=63`, and a settled win is a byte above 64. The
/// code is its own inverse: `code(code(v)) == v`.
#[inline(always)]
fn code(v: i8) -> i8 {
    (v as u8 ^ 0x40) as i8
}

/// Whether a byte is a settled position's.
#[inline(always)]
fn settled(code: i8) -> bool {
    code.wrapping_add(64) < 0
}

/// The smallest byte of a settled win.
const WON: i8 = 65;

/// The compact encoding: position `i`'s one byte at `i`.
#[derive(Debug)]
pub(crate) enum Compact {}

impl Encoding for Compact {
    const KIND: StateKind = StateKind::Compact;
    const BYTES: usize = StateKind::Compact.cell_bytes();
    const EXIT: usize = 0;
    const NO_EXIT: i8 = NO_EXIT;

    #[inline(always)]
    fn no_exit(b: i8) -> bool {
        b <= NO_EXIT_TOP
    }

    #[inline(always)]
    fn init(cells: &[AtomicU8], stay: u8, b: i8) {
        // With no exit, its in-level moves. A position with none and no exit yet has only
        // captures, which a stream raises to its exit after.
        let b = if b == NO_EXIT {
            debug_assert!(stay as usize <= MAX_PITS);
            NO_EXIT + stay.max(1) as i8 - 1
        } else {
            b
        };
        cells[0].store(b as u8, Relaxed);
    }

    #[inline]
    fn seeds(cells: &[AtomicU8], t: i8) -> (u64, u64) {
        match <&[AtomicU8; BLOCK]>::try_from(cells) {
            Ok(block) => block_seeds(block, t),
            Err(_) => byte_seeds(cells, t),
        }
    }

    fn finish(bytes: &mut [u8], _len: usize) {
        // In place: each byte becomes its value.
        bytes.par_chunks_mut(CHUNK as usize).for_each(|chunk| {
            for b in chunk {
                *b = final_byte(*b);
            }
        });
    }
}

impl SettleCells for Compact {
    #[inline]
    fn settle(back: &Backward<Compact>, at: usize, seen: i8, v: i8) -> bool {
        // The byte of an unsettled position changes when it is settled, and (no exit) when
        // its count of won children goes up: then try again. Sequentially consistent, as
        // are the reads of a check: of two threads that each settle a child of one position
        // and then read its other children, at least one sees both settled.
        let cell = back.state.exit(at);
        let mut seen = seen;
        while !settled(seen) {
            match cell.compare_exchange(seen as u8, code(v) as u8, SeqCst, Relaxed) {
                Ok(_) => return true,
                Err(now) => seen = now as i8,
            }
        }
        false
    }

    #[inline]
    fn seed<const P: usize>(
        back: &Backward<Compact>,
        i: u64,
        at: usize,
        won: bool,
        t: i8,
        board: impl FnOnce() -> Board,
        out: &mut Queues,
    ) {
        if won {
            if Self::settle(back, at, t, t) {
                out.stack.push((i, board(), true));
            }
        } else {
            // Lost only if every in-level child is won by now.
            queue_check::<P>(back, i, -t, board(), NO_PIT, t, out);
        }
    }
}

impl SettleChecks for Compact {
    #[inline(always)]
    fn won(back: &Backward<Compact>, at: u64) -> bool {
        back.state.exit(at as usize).load(SeqCst) as i8 >= WON
    }

    #[inline]
    fn lose_checked(back: &Backward<Compact>, at: u64, code: i8, t: i8) -> bool {
        Self::settle(back, at as usize, code, -t)
    }
}

impl Settle for Compact {
    const STATE: StateKind = StateKind::Compact;
    type Held = State<Compact>;

    #[inline(always)]
    fn held(state: &State<Compact>) -> u64 {
        state.len() as u64
    }

    #[inline(always)]
    fn prefetch(state: &State<Compact>, at: u64) {
        prefetch(state.exit_addr(at as usize));
    }

    #[inline]
    fn seed_range<const P: usize>(
        back: &Backward<Compact>,
        t: i8,
        range: Range<u64>,
        work: &mut Buffers,
    ) -> u64 {
        seed_cells::<Compact, P>(back, t, range, work)
    }

    #[inline]
    fn update<const P: usize>(
        back: &Backward<Compact>,
        qi: u64,
        board: impl FnOnce() -> Board,
        won: bool,
        o: u8,
        t: i8,
        out: &mut Queues,
    ) {
        let at = (qi - back.base) as usize;
        let code = back.state.exit(at).load(Relaxed) as i8;
        if settled(code) {
            return;
        }
        if !won {
            // The child is lost for its side to move: q wins by moving there.
            if Self::settle(back, at, code, t) {
                out.stack.push((qi, board(), true));
            }
            return;
        }
        // The child is won (>= t). q is lost now if no exit is better than -t and every
        // other in-level child is won too; with an exit between -t and 0 it is found by the
        // scan at threshold -b.
        if code > -t {
            return;
        }
        if code > NO_EXIT_TOP {
            queue_check::<P>(back, qi, code, board(), o, t, out);
            return;
        }
        // No exit: one in-level move fewer not known won (each won child is told once);
        // lost when none is left.
        let cell = back.state.exit(at);
        let mut code = code;
        loop {
            let last = code == NO_EXIT;
            let next = if last { self::code(-t) } else { code - 1 };
            match cell.compare_exchange(code as u8, next as u8, SeqCst, Relaxed) {
                Ok(_) => {
                    if last {
                        out.stack.push((qi, board(), false));
                    }
                    return;
                }
                Err(now) => code = now as i8,
            }
            if settled(code) {
                return;
            }
        }
    }

    #[inline]
    fn check<const P: usize>(back: &Backward<Compact>, c: &Check, t: i8, out: &mut Queues) {
        check_next::<Compact, P>(back, c, t, out);
    }

    fn continue_check<const P: usize>(
        back: &Backward<Compact>,
        qi: u64,
        board: Board,
        pit: u8,
        skip: u8,
        t: i8,
        out: &mut Queues,
    ) {
        check_on::<Compact, P>(back, qi, board, pit, skip, t, out);
    }

    #[inline]
    fn lose(back: &Backward<Compact>, qi: u64, t: i8) -> bool {
        let at = (qi - back.base) as usize;
        let seen = back.state.exit(at).load(Relaxed) as i8;
        Self::settle(back, at, seen, -t)
    }

    fn save(state: &mut State<Compact>, path: &Path, head: CheckpointHeader) -> Result<()> {
        state.save(path, head)
    }

    fn into_values(state: State<Compact>) -> Values {
        Values::Held(state.into_values())
    }
}

/// The value a byte leaves its position: the settled value, else 0 (a draw).
#[inline(always)]
fn final_byte(b: u8) -> u8 {
    let b = b as i8;
    if settled(b) {
        code(b) as u8
    } else {
        0
    }
}

/// Position `qi`, unsettled with byte `code` and a best exit of at most `-t`, is lost at
/// `t` if every in-level child is won (for its side to move); the child by pit `skip` is
/// known to be. Its moves are generated again: the first other child is ranked and
/// prefetched, and the check waits on the queue for the next batch; with no other child,
/// it is lost now.
#[inline]
fn queue_check<const P: usize>(
    back: &Backward<Compact>,
    qi: u64,
    code: i8,
    board: Board,
    skip: u8,
    t: i8,
    out: &mut Queues,
) {
    next_child::<Compact, P>(back, &Check::new(qi, code, board, skip), 0, t, out);
}

/// The seeds of threshold `t` among compact bytes, as [`Encoding::seeds`] gives them: a
/// win is an unsettled byte `t`; a possible loss one of `-t`.
fn byte_seeds(cells: &[AtomicU8], t: i8) -> (u64, u64) {
    let (mut seeds, mut wins) = (0u64, 0u64);
    for (j, c) in cells.iter().enumerate() {
        let b = c.load(Relaxed) as i8;
        seeds |= ((b == t || b == -t) as u64) << j;
        wins |= ((b == t) as u64) << j;
    }
    (seeds, wins)
}

/// [`byte_seeds`] of a whole block, 16 bytes at a time.
#[inline]
fn block_seeds(cells: &[AtomicU8; BLOCK], t: i8) -> (u64, u64) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SSE2, all these intrinsics need, is part of every x86_64 CPU.
    unsafe {
        use super::state::load16;
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
    byte_seeds(cells, t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::game::scan::NO_EXIT as SCAN_NO_EXIT;
    use crate::solve::level::state::block_scans_agree;

    /// Every byte is read as the right thing: the exits and values of a level of at most
    /// [`COMPACT_MAX_SEEDS`] seeds, settled or not, and the no-exit counts, never taken for
    /// one another; settling round-trips the value, and an unsettled byte finishes as a
    /// draw.
    #[test]
    fn codes_round_trip() {
        let max = COMPACT_MAX_SEEDS as i8;
        for v in -max..=max {
            // Unsettled: its exit.
            assert!(!settled(v), "exit {v}");
            assert!(!Compact::no_exit(v), "exit {v}");
            assert_eq!(final_byte(v as u8), 0);
            // Settled at v (a draw is never settled).
            if v != 0 {
                assert!(settled(code(v)), "value {v}");
                assert_eq!(code(code(v)), v);
                assert_eq!(final_byte(code(v) as u8) as i8, v);
                assert_eq!(code(v) >= WON, v > 0, "value {v}");
            }
        }
        assert_eq!(COMPACT_MAX_SEEDS, 56);
        for moves in 1..=MAX_PITS as i8 {
            let b = NO_EXIT + moves - 1;
            assert!(!settled(b) && Compact::no_exit(b), "no exit, {moves} moves");
            assert!(b < -max && b <= NO_EXIT_TOP);
            // Set from the forward pass's count of in-level moves.
            let cell = [AtomicU8::new(0)];
            Compact::init(&cell, moves as u8, NO_EXIT);
            assert_eq!(cell[0].load(Relaxed) as i8, b);
        }
        // The state's own translation of the scan's no-exit byte.
        assert_ne!(SCAN_NO_EXIT, NO_EXIT);
        // Half the bytes are unsettled (113 exits, 8 counts, 7 spare), and among the others
        // every value but a draw has its byte.
        let unsettled = (-128..=127i8).filter(|&b| !settled(b)).count();
        assert_eq!(unsettled, 128);
        let values = (-128..=127i8)
            .map(code)
            .filter(|&v| {
                settled(code(v)) && v != 0 && v.unsigned_abs() as usize <= COMPACT_MAX_SEEDS
            })
            .count();
        assert_eq!(values, 2 * COMPACT_MAX_SEEDS);
    }

    /// The vector scan of a block finds the seeds of the byte loop, at thresholds 1..=9, on
    /// drawn bytes: exits -9..=9, settled values, no exit and its counts.
    #[test]
    fn block_scan_finds_the_seeds_of_the_byte_loop() {
        let (won, lost) = block_scans_agree::<Compact>(
            BLOCK,
            |_, r| {
                let small = ((r >> 3) % 19) as i8 - 9;
                match r % 8 {
                    0 => (NO_EXIT + (r >> 4) as i8 % MAX_PITS as i8) as u8,
                    1 if small != 0 => code(small) as u8,
                    _ => small as u8,
                }
            },
            |cells, t| block_seeds(cells.try_into().unwrap(), t),
            byte_seeds,
        );
        assert!(
            won > 1_000 && lost > 1_000,
            "{won} won and {lost} lost seeds drawn"
        );
    }
}
