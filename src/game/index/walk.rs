//! Walking a level in index order: its first position and the next one ([`Index::next`]),
//! and a [`Cursor`] that seeks to any index from the last one.

use super::Index;
use crate::game::rules::{Board, MAX_PITS};

/// A position in a level that [`Index::seek`] moves to any index, cheaply when the
/// indices rise a little at a time (the backward pass's seeds come in index order).
#[derive(Clone, Debug)]
pub struct Cursor {
    board: Board,
    /// For pit `i`: the indices `lo[i]..hi[i]` of the positions whose pits above `i`
    /// are the board's (empty for pits below the top until a walk sets them), the seeds
    /// `left[i]` for pits `i..=0`, and whether those must still leave an opponent pit
    /// empty (`open[i]`).
    lo: [u64; 2 * MAX_PITS],
    hi: [u64; 2 * MAX_PITS],
    left: [u8; 2 * MAX_PITS],
    open: [bool; 2 * MAX_PITS],
}

impl Index {
    /// A [`Cursor`] on level `n`, on no position yet.
    pub fn cursor(&self, n: usize) -> Cursor {
        let top = 2 * self.p - 1;
        let mut c = Cursor {
            board: Board::empty(self.p),
            lo: [0; 2 * MAX_PITS],
            hi: [0; 2 * MAX_PITS],
            left: [0; 2 * MAX_PITS],
            open: [false; 2 * MAX_PITS],
        };
        c.hi[top] = self.level_size(n);
        c.left[top] = n as u8;
        c.open[top] = true;
        c
    }

    /// The position of `cursor`'s level with index `i`, as [`Index::unrank`] gives it,
    /// found from the cursor's last position: the pits above the lowest pit whose range
    /// of indices holds `i` are kept, and only the pits below it are walked again.
    #[inline]
    pub fn seek<'a>(&self, cursor: &'a mut Cursor, i: u64) -> &'a Board {
        with_pits!(self.p, P => self.seek_p::<P>(cursor, i))
    }

    /// [`Index::seek`] with the pits per side, `P`, known at compile time (this index's):
    /// inlined in the backward pass's scan of seeds (levels 0..=12: 1.4 % fewer
    /// instructions than a call).
    #[inline(always)]
    pub(crate) fn seek_p<'a, const P: usize>(&self, cursor: &'a mut Cursor, i: u64) -> &'a Board {
        debug_assert_eq!(P, self.p);
        let p = P;
        let top = 2 * p - 1;
        assert!(i < cursor.hi[top], "rank {i} out of level");
        let mut pit = 1;
        while pit < top && !(cursor.lo[pit] <= i && i < cursor.hi[pit]) {
            pit += 1;
        }
        let c = cursor;
        let mut r = c.left[pit] as usize;
        let mut constrained = c.open[pit];
        let mut lo = c.lo[pit];
        let mut rank = i - lo;
        while pit >= 2 {
            // As in `unrank`: walk the values of the pit up from 0, taking off the
            // positions each one accounts for (`with`), until the rank falls inside one.
            let mut x = 0;
            let mut with;
            if constrained {
                let m = pit - p;
                with = self.cnt(pit, r);
                if rank >= with {
                    rank -= with;
                    lo += with;
                    x = 1;
                    loop {
                        let left = r - x;
                        with = self.cnt(pit, left)
                            - if left >= m {
                                self.cnt(pit, left - m)
                            } else {
                                0
                            };
                        if rank < with {
                            break;
                        }
                        rank -= with;
                        lo += with;
                        x += 1;
                    }
                }
                constrained = x != 0 && pit > p;
            } else {
                loop {
                    with = self.cnt(pit, r - x);
                    if rank < with {
                        break;
                    }
                    rank -= with;
                    lo += with;
                    x += 1;
                }
            }
            c.board.set(pit, x as u8);
            r -= x;
            pit -= 1;
            c.lo[pit] = lo;
            c.hi[pit] = lo + with;
            c.left[pit] = r as u8;
            c.open[pit] = constrained;
        }
        if pit == 1 {
            // Own pit 1 (never constrained): each of its values leaves one filling of pit 0,
            // so the rank left is its value (levels 0..=12: 1.2 % fewer instructions).
            c.board.set(1, rank as u8);
            r -= rank as usize;
            lo += rank;
            c.lo[0] = lo;
            c.hi[0] = lo + 1;
            c.left[0] = r as u8;
            c.open[0] = false;
        }
        c.board.set(0, r as u8);
        &c.board
    }

    /// The first position of level `n` in index order.
    pub fn first(&self, n: usize) -> Board {
        // Everything in pit 0: the smallest vector, and its opponent row is empty.
        let mut b = Board::empty(self.p);
        b.set(0, n as u8);
        b
    }

    /// Steps `board` to the next stored position of its level in index order; false
    /// after the last one (the board is then left unspecified).
    #[inline]
    pub fn next(&self, board: &mut Board) -> bool {
        with_pits!(self.p, P => self.next_p::<P>(board))
    }

    /// [`Index::next_p`] of a board held as one 128-bit number (pit 0 in the low byte),
    /// for loops that keep the board in registers.
    #[inline(always)]
    pub(crate) fn next_word_p<const P: usize>(&self, x: &mut u128) -> bool {
        let mut board = Board::from_word_p::<P>(*x);
        let more = self.next_p::<P>(&mut board);
        *x = u128::from_le_bytes(*board.raw());
        more
    }

    /// [`Index::next`] with `P` known at compile time (this index's pits per side).
    #[inline(always)]
    pub(crate) fn next_p<const P: usize>(&self, board: &mut Board) -> bool {
        debug_assert_eq!(P, self.p);
        debug_assert!(board.is_stored());
        // Most steps change only own pits: when the lowest non-empty pit `i` is below
        // `P - 1`, the successor takes its seeds, puts one in pit `i + 1` and the rest in
        // pit 0, and the opponent row, so whether the board is stored, stays as it was.
        // A few operations on the low word instead of the 128-bit arithmetic below, about
        // 100 instructions (with the word test of an empty own row, levels 0..=12 took
        // 12 % fewer instructions in all), written back whole: the callers read the board
        // as words next, and a word read of bytes just written one at a time waits for
        // them to reach the cache (a store-forwarding stall, half the time of the own
        // moves' loop).
        let pits = board.raw_mut();
        let word = u64::from_le_bytes(pits[..8].try_into().unwrap());
        let low = word & ((1 << (8 * (P - 1))) - 1);
        if low != 0 {
            let at = low.trailing_zeros() & !7;
            let tail = word >> at & 0xff;
            let word = word - (tail << at) + (1 << (at + 8)) + (tail - 1);
            pits[..8].copy_from_slice(&word.to_le_bytes());
            return true;
        }
        // The pits as one 128-bit number, pit 0 in the low byte: the successor and the
        // tests below are a few word operations instead of loops over the pits.
        let p = P as u32;
        let row = 8 * p;
        let ones = (u64::MAX / 255) >> (64 - row);
        let mut x = u128::from_le_bytes(*board.raw());
        loop {
            // Lexicographic successor: the lowest non-empty pit i gives its seeds but one
            // to pit 0 and one to pit i + 1.
            if x == 0 {
                return false;
            }
            let low = x.trailing_zeros() / 8 * 8;
            if low + 8 >= 2 * row {
                return false;
            }
            let tail = x >> low & 0xff;
            x = x - (tail << low) + (1 << (low + 8)) + (tail - 1);
            // Stored if an opponent pit is empty (a zero byte among the P high ones).
            let opp = (x >> row) as u64;
            if opp.wrapping_sub(ones) & !opp & (ones << 7) != 0 {
                break;
            }
            // Opponent row full: every own-row filling is unstored. Jump to the last of
            // them (all own seeds in pit P-1) so that the next step changes the
            // opponent row.
            let own = x as u64 & (u64::MAX >> (64 - row));
            let seeds = own.wrapping_mul(u64::MAX / 255) >> 56;
            x = (x >> row << row) | (seeds as u128) << (row - 8);
        }
        *board.raw_mut() = x.to_le_bytes();
        true
    }
}
