//! The distance check of `awari verify`: every entry of a level's distance table
//! (DESIGN.md section 5.7) against the distances of its moves, by forward moves only.
//!
//! With `v` the position's stored value, `b` its best exit (a capture or a game end) and
//! `C` its in-level children that keep `v` (child value `-v`), a game over and a draw hold
//! 0, and any other position
//!
//! ```text
//! v > 0:  d = 1 if b = v, else 1 + min over C of d(c)
//! v < 0:  d = 1 + max over C of d(c) if C is not empty, else 1 if b = v
//! ```
//!
//! (a child that is a game over counts 0). Unlike the value equation, this one has a
//! single solution once the values are right: along the nearest child of a won position
//! and along every kept child of a lost one the distance falls by at least 1, so by
//! induction on the stored distance a table that satisfies it at every position is never
//! above the true distances, and by induction on the true distance never below. So a
//! table that passes, over values that pass, is exact: no second solver needed.

use std::path::Path;
use std::sync::atomic::{AtomicI8, Ordering::Relaxed};
use std::time::Instant;

use rayon::prelude::*;

use super::mismatch::{Mismatches, Sample};
use crate::db::dtc::DistanceTable;
use crate::db::layout::Expect;
use crate::db::raw::Check;
use crate::error::Result;
use crate::game::index::Index;
use crate::game::pits::with_pits;
use crate::game::rules::{legal_moves_p, Board, Moves, Rules};
use crate::game::scan::NO_EXIT;
use crate::util::{LevelBar, CHUNK};

/// The distance check of one level that has a table.
#[derive(Clone, Debug)]
pub struct DistanceCheck {
    /// `None` if the table opens, belongs to the level's values and its checksums and
    /// counts match, else what is wrong.
    pub problem: Option<String>,
    /// Positions whose stored distance is not what their moves give.
    pub mismatches: Mismatches<DistanceMismatch>,
    /// Wall time of the check, in seconds (reading the table included).
    pub seconds: f64,
}

impl DistanceCheck {
    /// Whether the table passed.
    pub fn ok(&self) -> bool {
        self.problem.is_none() && self.mismatches.count == 0
    }
}

/// One position whose stored distance is not the one its moves give.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DistanceMismatch {
    /// The position's index in its level.
    pub index: u64,
    /// The position.
    pub board: Board,
    /// The distance the table holds (0: none).
    pub stored: u16,
    /// The distance from its moves: `Some(0)` for none (a draw or a game over), `None`
    /// when the position's value has no value-keeping move at all (then the values are
    /// wrong too).
    pub computed: Option<u16>,
}

impl Sample for DistanceMismatch {
    fn index(&self) -> u64 {
        self.index
    }
}

/// Where the best exit of each position comes from.
pub(super) enum BestExits<'a> {
    /// Found already, one per position of the level ([`NO_EXIT`] where none).
    Known(Vec<AtomicI8>),
    /// Read from the levels below, in memory (`levels[m]`: level `m`'s values).
    Lower(&'a [&'a [u8]]),
}

impl BestExits<'_> {
    /// The best exit of position `i` of level `n`, whose legal moves are `moves`.
    #[inline]
    fn of(&self, index: &Index, n: usize, i: u64, moves: &Moves) -> i8 {
        match self {
            BestExits::Known(exits) => exits[i as usize].load(Relaxed),
            BestExits::Lower(levels) => {
                let mut best = NO_EXIT;
                for m in moves.as_slice() {
                    let c = m.captured as usize;
                    let x = if m.ends_game {
                        n as i8
                    } else if c > 0 {
                        c as i8 - levels[n - c][index.rank(&m.child) as usize] as i8
                    } else {
                        continue;
                    };
                    best = best.max(x);
                }
                best
            }
        }
    }
}

/// The distance check of the level `expect` names, whose values are `values` and whose
/// header gives the payload checksum `sum`, if it has a table in `dir`; `None` if it has
/// none. `exits` gives the positions' best exits; it is called only where there is a
/// table. A table that does not open (damaged, foreign, of other values) is a problem of
/// the report, not an error.
///
/// # Errors
/// Only what `exits` returns.
pub(super) fn check_table<'a>(
    dir: &Path,
    expect: &Expect,
    sum: u64,
    index: &Index,
    values: &[u8],
    exits: impl FnOnce() -> Result<BestExits<'a>>,
    bar: &LevelBar,
) -> Result<Option<DistanceCheck>> {
    let started = Instant::now();
    let failed = |problem: String| {
        Ok(Some(DistanceCheck {
            problem: Some(problem),
            mismatches: Mismatches::default(),
            seconds: started.elapsed().as_secs_f64(),
        }))
    };
    let table = match DistanceTable::open(dir, expect, sum, Check::HeaderOnly) {
        Ok(Some(t)) => t,
        Ok(None) => return Ok(None),
        Err(e) => return failed(e.one_line()),
    };
    // A packed table is decompressed with every block and its checksum checked; a raw
    // one is read through its map and its checksum checked apart, so that a damaged one
    // still has its wrong entries named.
    let payload = match table.payload() {
        Ok(p) => p,
        Err(e) => return failed(e.one_line()),
    };
    let mut problem = match table.is_packed() {
        true => None,
        false => table.check_payload().err().map(|e| e.one_line()),
    };
    bar.phase("distances", 0);
    let exits = exits()?;
    let head = table.header();
    let level = Level {
        rules: expect.rules,
        index,
        n: expect.seeds,
        values,
        exits: &exits,
    };
    let stored = Stored {
        table: &payload,
        width: head.width,
    };
    let (mismatches, longest, with_distance) =
        with_pits!(index.pits_per_side(), P => level.equations::<P>(stored, bar));
    if problem.is_none() && (longest, with_distance) != (head.longest, head.with_distance) {
        problem = Some(format!(
            "{}: the header says {} positions with a distance and a longest of {} plies, \
             the table holds {with_distance} and {longest}",
            table.path().display(),
            head.with_distance,
            head.longest
        ));
    }
    Ok(Some(DistanceCheck {
        problem,
        mismatches,
        seconds: started.elapsed().as_secs_f64(),
    }))
}

/// A level's distance table as stored: `width` bytes a position, little-endian.
#[derive(Clone, Copy)]
struct Stored<'a> {
    table: &'a [u8],
    width: u8,
}

impl Stored<'_> {
    #[inline]
    fn get(self, i: u64) -> u16 {
        match self.width {
            1 => self.table[i as usize] as u16,
            _ => u16::from_le_bytes([self.table[2 * i as usize], self.table[2 * i as usize + 1]]),
        }
    }
}

/// One level, its values and its best exits: what the equations read.
struct Level<'a> {
    rules: Rules,
    index: &'a Index,
    n: usize,
    values: &'a [u8],
    exits: &'a BestExits<'a>,
}

impl Level<'_> {
    /// The distance the equation of the module doc gives position `i` (`board`) from the
    /// distances of `stored` at its children: `None` where its value has no value-keeping
    /// move.
    #[inline]
    fn want<const P: usize>(&self, i: u64, board: &Board, stored: Stored) -> Option<u16> {
        let (index, n) = (self.index, self.n);
        let v = self.values[i as usize] as i8;
        let moves = legal_moves_p::<P>(board, self.rules);
        if v == 0 || moves.is_empty() {
            return Some(0);
        }
        // The nearest and the farthest value-keeping in-level child.
        let (mut near, mut far) = (u16::MAX, None::<u16>);
        for m in moves.as_slice().iter().filter(|m| m.stays_in_level()) {
            let c = index.rank_in_p::<P>(&m.child, n);
            if -(self.values[c as usize] as i8) == v {
                let d = stored.get(c);
                near = near.min(d);
                far = far.max(Some(d));
            }
        }
        let exit_keeps = self.exits.of(index, n, i, &moves) == v;
        match (v > 0, exit_keeps, far) {
            (true, true, _) => Some(1),
            (true, false, Some(_)) => near.checked_add(1),
            (false, _, Some(f)) => f.checked_add(1),
            (_, true, None) => Some(1),
            (_, false, None) => None,
        }
    }

    /// The equations at every position of the level; returns the mismatches, the
    /// longest distance stored and the positions with one.
    fn equations<const P: usize>(
        &self,
        stored: Stored,
        bar: &LevelBar,
    ) -> (Mismatches<DistanceMismatch>, u16, u64) {
        let (index, n) = (self.index, self.n);
        let size = index.level_size(n);
        (0..size.div_ceil(CHUNK))
            .into_par_iter()
            .map(|c| {
                let (start, end) = (c * CHUNK, ((c + 1) * CHUNK).min(size));
                let mut found = Mismatches::default();
                let (mut longest, mut with_distance) = (0u16, 0u64);
                let mut board = index.unrank(n, start);
                for i in start..end {
                    let d = stored.get(i);
                    longest = longest.max(d);
                    with_distance += (d != 0) as u64;
                    let want = self.want::<P>(i, &board, stored);
                    if want != Some(d) {
                        found.push(DistanceMismatch {
                            index: i,
                            board,
                            stored: d,
                            computed: want,
                        });
                    }
                    if i + 1 < end {
                        index.next(&mut board);
                    }
                }
                bar.inc(end - start);
                (found, longest, with_distance)
            })
            .reduce(
                || (Mismatches::default(), 0, 0),
                |(a, x, y), (b, u, w)| (a.merge(b), x.max(u), y + w),
            )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::solve::dtc::distances;

    /// The tables that `awari dtc`'s retrograde rounds make satisfy the equations at every
    /// position (levels up to 12 of boards of 3 to 6 pits, both rule sets), and a table
    /// with any one entry changed does not: the check finds the changed position itself.
    #[test]
    fn true_tables_pass_and_every_changed_entry_is_found() {
        let bar = LevelBar::new(false, 0, 0, "");
        let mut changed = 0;
        for rules in [Rules::Awari, Rules::Oware] {
            for pits in 3..=6 {
                let top = 12;
                let index = Index::new(pits, top).unwrap();
                let values = crate::solve::level::solve_in_memory(rules, &index, top);
                let all: Vec<&[u8]> = values.iter().map(Vec::as_slice).collect();
                let exits = BestExits::Lower(&all);
                let mut rng = 0x9e37_79b9_7f4a_7c15u64;
                for n in 0..=top {
                    let made = distances(rules, &index, n, &values[n], &all[..n], &bar).unwrap();
                    let size = index.level_size(n);
                    let mut table: Vec<u8> = (0..size).map(|i| made.get(i) as u8).collect();
                    assert!(made.longest < 256);
                    let level = Level {
                        rules,
                        index: &index,
                        n,
                        values: &values[n],
                        exits: &exits,
                    };
                    fn at(table: &[u8]) -> Stored<'_> {
                        Stored { table, width: 1 }
                    }
                    let check = |t: &[u8]| with_pits!(pits, P => level.equations::<P>(at(t), &bar));
                    let want = |t: &[u8], i: u64| {
                        let board = index.unrank(n, i);
                        with_pits!(pits, P => level.want::<P>(i, &board, at(t)))
                    };
                    let (found, longest, with_distance) = check(&table);
                    assert_eq!(found.count, 0, "{rules} P={pits} level {n}: {found:?}");
                    assert_eq!((longest, with_distance), (made.longest, made.with_distance));
                    // Up to 20 entries a level changed (one more, one less, none), one at a
                    // time: its own equation still gives the true distance, so the check
                    // names it; then all of them at once: the check counts them.
                    let mut was = Vec::new();
                    for _ in 0..20.min(size) {
                        rng ^= rng << 13;
                        rng ^= rng >> 7;
                        rng ^= rng << 17;
                        let i = (rng % size) as usize;
                        let d = table[i];
                        let new = match (rng / 3 % 3, d) {
                            (_, 0) => 1,
                            (0, d) => d.wrapping_add(1),
                            (1, d) if d > 1 => d - 1,
                            _ => 0,
                        };
                        table[i] = new;
                        let ctx = format!("{rules} P={pits} level {n} index {i}: {d} -> {new}");
                        assert_eq!(want(&table, i as u64), Some(d as u16), "{ctx}");
                        table[i] = d;
                        was.push((i, new));
                    }
                    for &(i, new) in &was {
                        table[i] = new;
                    }
                    let (found, _, _) = check(&table);
                    assert!(found.count >= 1, "{rules} P={pits} level {n}");
                    changed += was.len();
                }
            }
        }
        assert!(changed > 1000, "{changed}");
    }
}
