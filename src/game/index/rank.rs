//! Ranking a board and unranking an index: one look-up a pit (DESIGN.md sections 3.2
//! and 3.3).

use super::{Index, COLS, LEFT};
use crate::game::rules::{Board, MAX_PITS};

impl Index {
    /// The last rank of level `n`, `level_size(n) - 1` (every level holds a position),
    /// where ranking starts: it counts down by the stored boards after the one ranked.
    /// The formula of [`Index::level_size`] with `P` known at compile time and without its
    /// bound check, which a rank of a board of `n` seeds does not need.
    #[inline(always)]
    pub(super) fn last_rank<const P: usize>(&self, n: usize) -> u64 {
        let np = 2 * P;
        self.c(n + np - 1, np - 1) - self.c(n + P - 1, np - 1) - 1
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
    pub(super) fn rank_tail<const P: usize>(
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
    pub(super) fn own_pit(&self, i: usize, x: usize, s: &mut Partial) {
        s.r -= x as u32;
        s.rank = s.rank.wrapping_sub(self.pit_drop(0, i, s.r));
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
    pub(super) fn opponent_pit<const P: usize>(&self, i: usize, x: usize, s: &mut Partial) {
        debug_assert!(i >= P);
        s.r -= x as u32;
        // pit_drop(open, i, r) = C(r+i-1, i) - [open] C(r+P-1, i).
        s.rank = s.rank.wrapping_sub(self.pit_drop(s.open, i, s.r));
        s.open &= ((x != 0) as u32).wrapping_neg();
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
}

/// What ranking the pits above one pit left: the rank so far, the seeds left, and
/// whether no opponent pit above is empty (`OPEN`, else 0: the offset of its half of the
/// pit-drop table). Sixteen bytes, one vector move to copy.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Partial {
    pub(super) rank: u64,
    pub(super) r: u32,
    pub(super) open: u32,
}

/// [`Partial::open`] while no opponent pit above is empty.
pub(super) const OPEN: u32 = (COLS * LEFT) as u32;
