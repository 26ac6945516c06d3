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
//!
//! Here the tables and the level sizes; ranking and unranking in `rank.rs`, ranking near
//! a board already ranked in `near.rs`, walking a level in `walk.rs`.

use crate::error::{Error, Result};
use crate::game::rules::{MAX_PITS, MAX_SEEDS};

/// Rows of the binomial table: every `a = r + i` a rank can ask for (`r <= 127` seeds,
/// `i < 16` pits) is below 256, so an index masked to a byte is always in bounds.
const ROWS: usize = 256;
/// Columns: `C(a, b)` with `b < 2 * MAX_PITS`.
const COLS: usize = 2 * MAX_PITS;
/// Seeds left below a pit that a rank can ask the pit-drop table for: at most `MAX_SEEDS`.
const LEFT: usize = MAX_SEEDS + 1;
// The pit-drop table's flat index is masked by its size less one: in bounds, and unchanged
// below its size, only for a power of two.
const _: () = assert!((2 * COLS * LEFT).is_power_of_two());

mod near;
mod rank;
mod walk;

pub use near::RankBase;
pub use walk::Cursor;

/// Ranking tables for one board size, valid for every level up to `max_seeds`.
#[derive(Clone, Debug)]
pub struct Index {
    p: usize,
    max_seeds: usize,
    /// `binom[b][a] = C(a, b)`; saturated where it would not fit (never for the
    /// levels up to `max_seeds`, which `new` checks).
    binom: Box<[[u64; ROWS]; COLS]>,
    /// `pit_drops[open][i][r]`: what ranking pit `i` takes off the rank when it leaves `r`
    /// seeds to the pits below, `C(r+i-1, i)`, less `C(r+P-1, i)` for an opponent pit
    /// with no empty opponent pit above (`open`; see [`Index::opponent_pit`]). One
    /// look-up a pit instead of two and a mask: ranking is most of a build.
    pit_drops: Box<[[[u64; LEFT]; COLS]; 2]>,
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
        let mut pit_drops = Box::new([[[0u64; LEFT]; COLS]; 2]);
        for (open, table) in pit_drops.iter_mut().enumerate() {
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
            pit_drops,
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

    /// The pit-drop table's entry (masks as in [`Index::c`]).
    #[inline(always)]
    fn pit_drop(&self, open: u32, i: usize, r: u32) -> u64 {
        // The table as one array: `open` is 0 or OPEN, its offset.
        let flat: &[u64; 2 * COLS * LEFT] = self
            .pit_drops
            .as_flattened()
            .as_flattened()
            .try_into()
            .unwrap();
        flat[(open as usize + i * LEFT + r as usize) & (2 * COLS * LEFT - 1)]
    }

    /// Compositions of `r` seeds into `k >= 1` pits.
    #[inline(always)]
    fn cnt(&self, k: usize, r: usize) -> u64 {
        self.c(r + k - 1, k - 1)
    }

    /// Positions in level `n`: `C(n+2P-1, 2P-1) - C(n+P-1, 2P-1)`.
    pub fn level_size(&self, n: usize) -> u64 {
        assert!(n <= self.max_seeds);
        let np = self.p * 2;
        self.c(n + np - 1, np - 1) - self.c(n + self.p - 1, np - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::game::rules::Board;

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
