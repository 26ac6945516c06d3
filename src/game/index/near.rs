//! Ranking near a board already ranked: the predecessors of a settled position differ
//! from the board they are un-sown from only in the pits the un-sowing touched, so the
//! pits above those keep what ranking the board left there.

use super::rank::{Partial, OPEN};
use super::Index;
use crate::game::rules::{Board, MAX_PITS};

impl Index {
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
            rank = rank.wrapping_sub(self.pit_drop(open, i, left(i - 1) as u32));
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
}

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
