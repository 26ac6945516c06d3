//! The Romein-Bal index ('Goedel number'), generalised to P pits per side (DESIGN.md
//! section 3).
//!
//! A level holds the positions of `n` seeds whose opponent row (pits `P..2P`) has an
//! empty pit, ranked in ascending lexicographic order of `(pit 2P-1, ..., pit 0)`. Rank
//! and unrank cost `O(2P)` table look-ups; [`Index::next`] steps through a level in order
//! without unranking.
//!
//! Counting uses binomials only. With `cnt(k, r)` the compositions of `r` seeds into `k`
//! pits, `C(r+k-1, k-1)`, the positions that agree with a board above pit `i` and hold
//! fewer seeds in pit `i` number `S(i, r, x) = C(r+i, i) - C(r-x+i, i)` (hockey stick),
//! where `r` seeds are left for pits `i..=0` and `x` is the count of pit `i`. While no
//! opponent pit seen so far is empty, the completions must still put a zero in one of
//! the `m = i-P` opponent pits below `i`, which subtracts the completions whose `m`
//! opponent pits are all non-empty: `cnt(k, r-m)` per value.

use crate::error::{Error, Result};
use crate::game::rules::{Board, MAX_PITS, MAX_SEEDS};

/// Rows of the binomial table: every `a = r + i` a rank can ask for (`r <= 127` seeds,
/// `i < 16` pits) is below 256, so an index masked to a byte is always in bounds.
const ROWS: usize = 256;
/// Columns: `C(a, b)` with `b < 2 * MAX_PITS`.
const COLS: usize = 2 * MAX_PITS;
/// Seeds left below a pit that a rank can ask the drop table for: at most `MAX_SEEDS`.
const LEFT: usize = MAX_SEEDS + 1;
// The drop table's flat index is masked by its size less one: in bounds, and unchanged
// below its size, only for a power of two.
const _: () = assert!((2 * COLS * LEFT).is_power_of_two());

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

/// Ranking tables for one board size, valid for every level up to `max_seeds`.
#[derive(Clone, Debug)]
pub struct Index {
    p: usize,
    max_seeds: usize,
    /// `binom[b][a] = C(a, b)`; saturated where it would not fit (never for the
    /// levels up to `max_seeds`, which `new` checks).
    binom: Box<[[u64; ROWS]; COLS]>,
    /// `drop[open][i][r]`: what ranking pit `i` takes off the rank when it leaves `r`
    /// seeds to the pits below, `C(r+i-1, i)`, less `C(r+P-1, i)` for an opponent pit
    /// with no empty opponent pit above (`open`; see [`Index::opponent_pit`]). One
    /// look-up a pit instead of two and a mask: ranking is most of a build.
    drop: Box<[[[u64; LEFT]; COLS]; 2]>,
}

impl Index {
    /// Tables for `p` pits per side and levels up to `max_seeds`. Fails when a level size
    /// would not fit 64 bits.
    pub fn new(p: usize, max_seeds: usize) -> Result<Index> {
        if !(2..=MAX_PITS).contains(&p) {
            return Err(Error::Input(format!(
                "pits per side must be 2..={MAX_PITS}, not {p}"
            )));
        }
        if max_seeds > MAX_SEEDS {
            return Err(Error::Input(format!(
                "at most {MAX_SEEDS} seeds are supported (values are signed bytes), not {max_seeds}"
            )));
        }
        let np = 2 * p;
        let mut binom = Box::new([[0u64; ROWS]; COLS]);
        let mut overflow = false;
        for a in 0..ROWS {
            binom[0][a] = 1;
            for b in 1..COLS.min(a + 1) {
                let (sum, o) = binom[b - 1][a - 1].overflowing_add(binom[b][a - 1]);
                binom[b][a] = if o { u64::MAX } else { sum };
                // Only the entries that ranks and sizes up to max_seeds use must be exact.
                overflow |= (o || sum == u64::MAX) && a <= max_seeds + np && b < np;
            }
        }
        if overflow {
            return Err(Error::Input(format!(
                "levels of {max_seeds} seeds on {p} pits per side are too large to index"
            )));
        }
        let c = |a: usize, b: usize| binom[b][a];
        let mut drop = Box::new([[[0u64; LEFT]; COLS]; 2]);
        for (open, table) in drop.iter_mut().enumerate() {
            for (i, row) in table.iter_mut().enumerate().skip(1) {
                for (r, d) in row.iter_mut().enumerate() {
                    let full = if open == 1 && i >= p {
                        c(r + p - 1, i)
                    } else {
                        0
                    };
                    *d = c(r + i - 1, i).wrapping_sub(full);
                }
            }
        }
        Ok(Index {
            p,
            max_seeds,
            binom,
            drop,
        })
    }

    /// The most seeds on a board of `p` pits per side whose levels this index can rank.
    pub fn max_supported(p: usize) -> Result<usize> {
        if !(2..=MAX_PITS).contains(&p) {
            return Err(Error::Input(format!(
                "pits per side must be 2..={MAX_PITS}, not {p}"
            )));
        }
        let mut n = MAX_SEEDS;
        while Index::new(p, n).is_err() {
            n -= 1;
        }
        Ok(n)
    }

    /// Pits per side, `P`, of the boards this index ranks.
    #[inline]
    pub fn pits_per_side(&self) -> usize {
        self.p
    }

    /// The largest level (seed count) the tables were built and checked for.
    #[inline]
    pub fn max_seeds(&self) -> usize {
        self.max_seeds
    }

    /// `C(a, b)`, zero when `b > a`. The masks keep every index in bounds without a check
    /// (callers never exceed them: see `ROWS`).
    #[inline(always)]
    fn c(&self, a: usize, b: usize) -> u64 {
        debug_assert!(a < ROWS && b < COLS);
        self.binom[b & (COLS - 1)][a & (ROWS - 1)]
    }

    /// The drop table's entry (masks as in [`Index::c`]).
    #[inline(always)]
    fn drop(&self, open: u32, i: usize, r: u32) -> u64 {
        // The table as one array: `open` is 0 or OPEN, its offset.
        let flat: &[u64; 2 * COLS * LEFT] =
            self.drop.as_flattened().as_flattened().try_into().unwrap();
        flat[(open as usize + i * LEFT + r as usize) & (2 * COLS * LEFT - 1)]
    }

    /// Compositions of `r` seeds into `k >= 1` pits.
    #[inline(always)]
    fn cnt(&self, k: usize, r: usize) -> u64 {
        self.c(r + k - 1, k - 1)
    }

    /// The last rank of level `n`, `level_size(n) - 1` (every level holds a position),
    /// where ranking starts: it counts down by the stored boards after the one ranked.
    /// The formula of [`Index::level_size`] with `P` known at compile time and without its
    /// bound check, which a rank of a board of `n` seeds does not need.
    #[inline(always)]
    fn last_rank<const P: usize>(&self, n: usize) -> u64 {
        let np = 2 * P;
        self.c(n + np - 1, np - 1) - self.c(n + P - 1, np - 1) - 1
    }

    /// Positions in level `n`: `C(n+2P-1, 2P-1) - C(n+P-1, 2P-1)`.
    pub fn level_size(&self, n: usize) -> u64 {
        assert!(n <= self.max_seeds);
        let np = self.p * 2;
        self.c(n + np - 1, np - 1) - self.c(n + self.p - 1, np - 1)
    }

    /// The rank of a stored position within its level (`board.seeds()`).
    #[inline]
    pub fn rank(&self, board: &Board) -> u64 {
        self.rank_in(board, board.seeds())
    }

    /// [`Index::rank`] for a board known to hold `n` seeds (saves summing the pits in
    /// hot loops, where that sum was a fifth of the cost).
    #[inline]
    pub fn rank_in(&self, board: &Board, n: usize) -> u64 {
        debug_assert!(board.is_stored());
        debug_assert_eq!(board.seeds(), n);
        with_pits!(self.p, P => self.rank_in_p::<P>(board, n))
    }

    /// [`Index::rank_in`] with the pits per side known at compile time (`P`, which must be
    /// this index's): for the hot loops that [`with_pits`] specialises.
    #[inline(always)]
    pub(crate) fn rank_in_p<const P: usize>(&self, board: &Board, n: usize) -> u64 {
        debug_assert_eq!(P, self.p);
        debug_assert!(board.is_stored());
        debug_assert_eq!(board.seeds(), n);
        self.rank_p::<P>(board.raw(), n)
    }

    #[inline(always)]
    fn rank_p<const P: usize>(&self, pits: &[u8; 2 * MAX_PITS], n: usize) -> u64 {
        let start = Partial {
            rank: self.last_rank::<P>(n),
            r: n as u32,
            open: OPEN,
        };
        self.rank_tail::<P>(pits, 2 * P - 1, start)
    }

    /// The rank of `pits` from pit `top` down, given what the pits above `top` left.
    #[inline(always)]
    fn rank_tail<const P: usize>(
        &self,
        pits: &[u8; 2 * MAX_PITS],
        top: usize,
        mut from: Partial,
    ) -> u64 {
        for i in (P..top + 1).rev() {
            self.opponent_pit::<P>(i, pits[i] as usize, &mut from);
        }
        for i in (1..P.min(top + 1)).rev() {
            self.own_pit(i, pits[i] as usize, &mut from);
        }
        from.rank
    }

    /// Ranks own pit `i` holding `x` seeds on top of what the pits above left: takes off
    /// the boards that agree with this one above pit `i` and hold more seeds in it, all of
    /// them stored (an opponent pit above is empty). With `r` seeds left for pits
    /// `i-1..=0` after this one, they are `sum_{z=0}^{r-1} cnt(i, z) = C(r+i-1, i)`.
    #[inline(always)]
    fn own_pit(&self, i: usize, x: usize, s: &mut Partial) {
        s.r -= x as u32;
        s.rank = s.rank.wrapping_sub(self.drop(0, i, s.r));
    }

    /// Ranks opponent pit `i` holding `x` seeds on top of what the pits above left: takes
    /// off the boards after this one that differ from it first here, `C(r+i-1, i)` as for
    /// an own pit, less those that are not stored. While no opponent pit above is empty,
    /// those are the boards with every opponent pit non-empty: take a seed out of each of
    /// the `P` opponent pits and they are the boards of `n - P` seeds after this one's
    /// (with a seed less in each opponent pit above `i`), `C(r+P-1, i)`, which is 0 when
    /// too few seeds are left for that (`r <= i - P`). A board is stored, so its highest
    /// empty opponent pit is the last one that counts them.
    ///
    /// Without branches: where the first empty pit lies varies at random, and
    /// mispredicting it cost more than the look-ups (rank: 21.8 against 16.6 ns).
    #[inline(always)]
    fn opponent_pit<const P: usize>(&self, i: usize, x: usize, s: &mut Partial) {
        debug_assert!(i >= P);
        s.r -= x as u32;
        // drop(open, i, r) = C(r+i-1, i) - [open] C(r+P-1, i).
        s.rank = s.rank.wrapping_sub(self.drop(s.open, i, s.r));
        s.open &= ((x != 0) as u32).wrapping_neg();
    }

    /// What ranking `base` (a board of `n` seeds, stored or not) leaves before each pit,
    /// for [`Index::rank_near`]: the predecessors of a settled position differ from one
    /// board only in the pits its un-sowing touched. Written into `out`, which the caller
    /// keeps from one board to the next: returned by value, the table was copied once
    /// more, 3.6 % of a build's instructions.
    pub fn rank_base(&self, base: &Board, n: usize, out: &mut RankBase) {
        with_pits!(self.p, P => self.rank_base_p::<P>(base, base.opponent_empty_pits_p::<P>(), n, out))
    }

    /// [`Index::rank_base`] with `P` known at compile time (this index's pits per side),
    /// given the base's empty opponent pits as [`Board::opponent_empty_pits_p`] gives them
    /// (the un-moves have them from the child's own row).
    ///
    /// The seeds each pit leaves below it are prefix sums of the pits, two multiplications
    /// for all of them, and whether a pit's opponent pits above are all full follows from
    /// the highest empty one: each pit is then one look-up and a subtraction, with no
    /// chain through the seeds left (levels 0..=12: 5.0 % fewer instructions fast, 3.1 %
    /// compact).
    #[inline(always)]
    pub(crate) fn rank_base_p<const P: usize>(
        &self,
        base: &Board,
        opp_empty: u64,
        n: usize,
        out: &mut RankBase,
    ) {
        debug_assert_eq!(P, self.p);
        let pits = base.raw();
        // Byte k of a word times 0x0101..01 is the sum of its bytes 0..=k: no byte
        // carries, since a board holds at most MAX_SEEDS < 256 seeds.
        const ONES: u64 = u64::MAX / 255;
        let low = u64::from_le_bytes(pits[..8].try_into().unwrap()).wrapping_mul(ONES);
        let high = u64::from_le_bytes(pits[8..].try_into().unwrap()).wrapping_mul(ONES)
            + (low >> 56) * ONES;
        out.left = ((high as u128) << 64 | low as u128).to_le_bytes();
        // Pit k's byte, from the words in registers (`k` is known where this unrolls).
        let left = |k: usize| {
            (if k < 8 {
                low >> (8 * k)
            } else {
                high >> (8 * (k - 8))
            }) as u8
        };
        debug_assert_eq!(opp_empty, base.opponent_empty_pits_p::<P>());
        // The highest empty opponent pit `P + k` has bit `8k + 7` as its highest; with
        // none (64 leading zeros), `P - 1`.
        out.open_from = P + (71 - opp_empty.leading_zeros() as usize) / 8 - 1;
        let mut rank = self.last_rank::<P>(n);
        out.rank[2 * P - 1] = rank;
        // rank[i - 1] is what pits 2P-1..i leave (rank[0]: the board's whole rank, pit 0
        // is never ranked); entries above 2P-1 are never read.
        for i in (1..2 * P).rev() {
            let open = if i >= P { out.open_at(i) } else { 0 };
            rank = rank.wrapping_sub(self.drop(open, i, left(i - 1) as u32));
            out.rank[i - 1] = rank;
        }
    }

    /// [`Index::rank_in`] of a stored `board` with as many seeds as the board of `base`,
    /// and the same seeds in every pit above `top` (`1 <= top < 2P`).
    #[inline]
    pub fn rank_near(&self, base: &RankBase, board: &Board, top: usize) -> u64 {
        debug_assert!(board.is_stored());
        debug_assert!((1..2 * self.p).contains(&top), "top {top}");
        with_pits!(self.p, P => self.rank_near_p::<P>(base, board, top))
    }

    /// [`Index::rank_near`] with `P` known at compile time (this index's pits per side).
    #[inline(always)]
    pub(crate) fn rank_near_p<const P: usize>(
        &self,
        base: &RankBase,
        board: &Board,
        top: usize,
    ) -> u64 {
        debug_assert_eq!(P, self.p);
        debug_assert!(board.is_stored());
        debug_assert!((1..2 * P).contains(&top), "top {top}");
        self.rank_tail::<P>(board.raw(), top, base.at(top))
    }

    /// [`Index::rank_near`] of a predecessor that differs from the board of `base` only
    /// in pits `low..=top` (`low < top`), `P` known at compile time: only pits
    /// `top..=low + 1` are ranked. What a pit takes off the rank depends on the seeds
    /// below it and the pits above it, not on its own count, so the pits from `low` down
    /// take off what they take off the base board, `base.rank[low] - base.rank[0]`.
    /// Un-sowing from pit `o` changes pits `o..=top` in its first lap: most predecessors
    /// are ranked over a few pits instead of `top` (levels 0..=12, 1 thread: 2.3 % fewer
    /// instructions fast, 1.6 % compact).
    #[inline(always)]
    pub(crate) fn rank_pred_p<const P: usize>(
        &self,
        base: &RankBase,
        board: &Board,
        top: usize,
        low: usize,
    ) -> u64 {
        debug_assert_eq!(P, self.p);
        debug_assert!(board.is_stored());
        debug_assert!(low < top && top < 2 * P, "low {low} top {top}");
        let pits = board.raw();
        let mut from = base.at(top);
        for i in (P..top + 1).rev() {
            self.opponent_pit::<P>(i, pits[i] as usize, &mut from);
        }
        for i in (low + 1..P.min(top + 1)).rev() {
            self.own_pit(i, pits[i] as usize, &mut from);
        }
        from.rank
            .wrapping_sub(base.rank[low].wrapping_sub(base.rank[0]))
    }

    /// The position of level `n` with the given rank.
    pub fn unrank(&self, n: usize, mut rank: u64) -> Board {
        // Out of range, the walk below would not end.
        assert!(rank < self.level_size(n), "rank {rank} out of level {n}");
        let p = self.p;
        let mut b = Board::empty(p);
        let mut r = n;
        // Walk the values of each pit up from 0, taking off the positions that each
        // value accounts for, until the rank falls inside one: one look-up per step.
        let mut i = 2 * p - 1;
        // Opponent pits while none is empty: value 0 frees the rest; a value y >= 1
        // leaves cnt(i, r-y) completions less those with the m pits below all non-empty.
        while i >= p {
            let m = i - p;
            let free = self.cnt(i, r);
            if rank < free {
                // This pit is empty (b already holds 0).
                i -= 1;
                break;
            }
            rank -= free;
            let mut x = 1;
            loop {
                let left = r - x;
                let with = self.cnt(i, left) - if left >= m { self.cnt(i, left - m) } else { 0 };
                if rank < with {
                    break;
                }
                rank -= with;
                x += 1;
            }
            b.set(i, x as u8);
            r -= x;
            i -= 1;
        }
        // Every pit below: a value y accounts for cnt(i, r-y) positions.
        while i >= 1 {
            let mut x = 0;
            loop {
                let with = self.cnt(i, r - x);
                if rank < with {
                    break;
                }
                rank -= with;
                x += 1;
            }
            b.set(i, x as u8);
            r -= x;
            i -= 1;
        }
        b.set(0, r as u8);
        b
    }

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

/// What ranking the pits above one pit left: the rank so far, the seeds left, and
/// whether no opponent pit above is empty (`OPEN`, else 0: the offset of its half of the
/// drop table). Sixteen bytes, one vector move to copy.
#[derive(Clone, Copy, Debug, Default)]
struct Partial {
    rank: u64,
    r: u32,
    open: u32,
}

/// [`Partial::open`] while no opponent pit above is empty.
const OPEN: u32 = (COLS * LEFT) as u32;

/// A board ranked pit by pit ([`Index::rank_base`]), to rank boards that differ from it
/// only low down ([`Index::rank_near`]). `RankBase::default()` makes one to fill.
#[derive(Clone, Copy, Debug, Default)]
pub struct RankBase {
    /// Before pit `i`: the rank that the pits above it left.
    rank: [u64; 2 * MAX_PITS],
    /// Before pit `i`: the seeds left for pits `i..=0`, the board's seeds in them.
    left: [u8; 2 * MAX_PITS],
    /// The lowest pit above which no opponent pit is empty: the board's highest empty
    /// opponent pit, or `P - 1` if it has none.
    open_from: usize,
}

impl RankBase {
    /// [`Partial::open`] before opponent pit `i`.
    #[inline(always)]
    fn open_at(&self, i: usize) -> u32 {
        if i >= self.open_from {
            OPEN
        } else {
            0
        }
    }

    /// What the pits above pit `i` left.
    #[inline(always)]
    fn at(&self, i: usize) -> Partial {
        Partial {
            rank: self.rank[i],
            r: self.left[i] as u32,
            open: self.open_at(i),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every composition of n into 2p pits, stored ones only, sorted by the contract.
    fn sorted_level(p: usize, n: usize) -> Vec<Board> {
        let np = 2 * p;
        let mut out = Vec::new();
        let mut pits = vec![0u32; np];
        fn rec(i: usize, left: u32, pits: &mut Vec<u32>, p: usize, out: &mut Vec<Board>) {
            if i + 1 == pits.len() {
                pits[i] = left;
                let b = Board::from_counts(p, pits).unwrap();
                if b.is_stored() {
                    out.push(b);
                }
                return;
            }
            for x in 0..=left {
                pits[i] = x;
                rec(i + 1, left - x, pits, p, out);
            }
        }
        rec(0, n as u32, &mut pits, p, &mut out);
        out.sort_by_key(|b| b.pits().iter().rev().copied().collect::<Vec<u8>>());
        let _ = np;
        out
    }

    #[test]
    fn order_matches_a_sort_and_round_trips() {
        for p in 2..=4 {
            let idx = Index::new(p, 10).unwrap();
            for n in 0..=(if p == 4 { 7 } else { 10 }) {
                let level = sorted_level(p, n);
                assert_eq!(level.len() as u64, idx.level_size(n), "p={p} n={n}");
                let mut it = idx.first(n);
                for (r, b) in level.iter().enumerate() {
                    assert_eq!(idx.rank(b), r as u64, "rank of {b:?}");
                    assert_eq!(idx.unrank(n, r as u64), *b);
                    assert_eq!(it, *b, "iteration p={p} n={n} r={r}");
                    let more = idx.next(&mut it);
                    assert_eq!(more, r + 1 < level.len());
                }
            }
        }
    }

    #[test]
    fn six_pits_small_levels_match_sort() {
        let idx = Index::new(6, 5).unwrap();
        for n in 0..=5 {
            let level = sorted_level(6, n);
            assert_eq!(level.len() as u64, idx.level_size(n));
            for (r, b) in level.iter().enumerate() {
                assert_eq!(idx.rank(b), r as u64);
            }
        }
    }

    /// Rank (counted down from the level's last rank, DESIGN.md 3.2) undoes unrank (the
    /// walk of 3.3, which sums the terms `T(i)` up) on every board size and on levels up
    /// to the largest an index supports, where the counts come near 64 bits.
    #[test]
    fn rank_undoes_unrank_on_every_board_size() {
        for p in 2..=MAX_PITS {
            let top = Index::max_supported(p).unwrap();
            let idx = Index::new(p, top).unwrap();
            for n in (0..=top).step_by(7).chain([top]) {
                let size = idx.level_size(n);
                let step = (size / 997).max(1);
                let mut checked = 0;
                for k in (0..size).step_by(step as usize).chain([size - 1]) {
                    let b = idx.unrank(n, k);
                    assert_eq!(b.seeds(), n);
                    assert_eq!(idx.rank(&b), k, "p={p} n={n} {b:?}");
                    checked += 1;
                }
                assert!(checked >= size.min(997), "p={p} n={n}: {checked} boards");
            }
        }
    }

    /// A cursor gives what unrank gives: every index of small levels in order, rising
    /// runs with gaps of every scale, and indices that go back.
    #[test]
    fn cursor_seeks_like_unrank() {
        for p in 2..=6 {
            let top = [0, 0, 14, 12, 10, 9, 8][p];
            let index = Index::new(p, top).unwrap();
            for n in 0..=top {
                let size = index.level_size(n);
                let mut c = index.cursor(n);
                for i in 0..size {
                    assert_eq!(*index.seek(&mut c, i), index.unrank(n, i), "{p} {n} {i}");
                }
                let mut x = 0x9e37_79b9_7f4a_7c15u64;
                let mut i = 0;
                let mut c = index.cursor(n);
                for k in 0..2000 {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    // Gaps of 0 to about 2^(k % 20); now and then a step back.
                    let gap = x % (1 << (k % 20)).max(1);
                    i = if k % 97 == 0 {
                        x % size
                    } else {
                        (i + gap) % size
                    };
                    assert_eq!(*index.seek(&mut c, i), index.unrank(n, i), "{p} {n} {i}");
                }
            }
        }
    }

    #[test]
    fn predecessors_rank_near_as_from_scratch() {
        use crate::game::rules::{for_each_unmove_near, Rules};
        // Every stored predecessor of every position (stored or not) of these levels,
        // both rule sets: ranked from the board it is un-sown from, it gets the rank that
        // ranking it from scratch gives. Laps are in range from 2P seeds on.
        for (p, top) in [(2, 12), (3, 12), (4, 11), (5, 9), (6, 8)] {
            let index = Index::new(p, top).unwrap();
            let mut checked = 0u64;
            for n in 1..=top {
                let mut c = index.cursor(n);
                for i in 0..index.level_size(n) {
                    let child = *index.seek(&mut c, i);
                    for b in [child, child.turned()] {
                        for rules in [Rules::Awari, Rules::Oware] {
                            let base_of =
                                |base: &Board, out: &mut RankBase| index.rank_base(base, n, out);
                            let made = &mut RankBase::default();
                            for_each_unmove_near(
                                &b,
                                rules,
                                made,
                                base_of,
                                |q, stored, top, near, _| {
                                    if stored {
                                        let want = index.rank_in(q, n);
                                        assert_eq!(
                                            index.rank_near(near, q, top),
                                            want,
                                            "{q:?} {top}"
                                        );
                                        checked += 1;
                                    }
                                },
                            );
                            let made = &mut RankBase::default();
                            with_pits!(p, P => crate::game::rules::for_each_unmove_near_p::<P, _>(
                                &b,
                                rules,
                                made,
                                |base: &Board, opp_empty, out: &mut RankBase| {
                                    index.rank_base_p::<P>(base, opp_empty, n, out)
                                },
                                |q, stored, top, low, near, _| {
                                    if stored {
                                        let want = index.rank_in(q, n);
                                        assert_eq!(
                                            index.rank_pred_p::<P>(near, q, top, low),
                                            want,
                                            "{q:?} {top} {low}"
                                        );
                                    }
                                },
                            ));
                        }
                    }
                }
            }
            assert!(checked > 1000, "{p}: {checked}");
        }
    }

    #[test]
    fn level_sizes_match_closed_formula() {
        fn c(a: u128, b: u128) -> u128 {
            let mut r = 1u128;
            for i in 0..b {
                r = r * (a - i) / (i + 1);
            }
            r
        }
        let idx = Index::new(6, 48).unwrap();
        for n in 0..=48u128 {
            let expect = c(n + 11, 11) - if n >= 6 { c(n + 5, 11) } else { 0 };
            assert_eq!(idx.level_size(n as usize) as u128, expect);
        }
        assert_eq!(idx.level_size(48), 203_648_015_935);
    }
}
