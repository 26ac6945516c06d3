//! `awari stats`: what a built database says about the game, level by level: how many
//! positions the side to move wins, draws and loses, the mean value, the extremes and the
//! whole distribution of values, and an SVG chart of it.
//!
//! Everything derives from one histogram per level (positions per byte value), counted
//! in a single parallel pass: a level can hold 10^8 to 10^9 positions, so the payload is
//! read once, in chunks, each with its own small table. The distances to conversion
//! (DESIGN.md section 5.7) are counted the same way from the levels' tables.

use std::ops::RangeInclusive;
use std::path::Path;

use rayon::prelude::*;

use crate::db::dtc::DistanceTable;
use crate::db::layout::{db_dir, level_exists, levels_asked, missing_level, Expect};
use crate::db::raw::Check;
use crate::db::stack::LevelStack;
use crate::db::store::{has_exit_model, LevelFile};
use crate::error::{Error, Result};
use crate::game::index::Index;
use crate::game::rules::Rules;

/// The distribution of the values of one level (or, for [`LevelStats::total`], of several).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LevelStats {
    /// Seeds on the board: values lie in `-seeds..=seeds`.
    pub seeds: usize,
    /// `counts[i]`: positions of value `i - seeds`, for every value `-seeds..=seeds`.
    pub counts: Vec<u64>,
}

/// Bytes per parallel chunk: large enough that merging the tables costs nothing, small
/// enough that a count fits in a `u32` and the chunks spread over the threads.
const PIECE: usize = 1 << 20;

/// How many payload bytes hold each byte value, counted in parallel (on the current rayon
/// pool). Index by `value as u8`.
pub fn histogram(values: &[u8]) -> [u64; 256] {
    values.par_chunks(PIECE).map(chunk_histogram).reduce(
        || [0; 256],
        |mut a, b| {
            a.iter_mut().zip(b).for_each(|(x, y)| *x += y);
            a
        },
    )
}

/// One chunk's histogram. Four tables, so that a run of equal bytes (common: whole
/// stretches of a level are drawn) does not make every increment wait on the one before.
fn chunk_histogram(chunk: &[u8]) -> [u64; 256] {
    debug_assert!(chunk.len() <= u32::MAX as usize);
    let mut t = [[0u32; 256]; 4];
    let mut quads = chunk.chunks_exact(4);
    for q in &mut quads {
        t[0][q[0] as usize] += 1;
        t[1][q[1] as usize] += 1;
        t[2][q[2] as usize] += 1;
        t[3][q[3] as usize] += 1;
    }
    for &b in quads.remainder() {
        t[0][b as usize] += 1;
    }
    let mut out = [0u64; 256];
    for (i, o) in out.iter_mut().enumerate() {
        *o = t.iter().map(|t| t[i] as u64).sum();
    }
    out
}

/// The statistics of level `seeds` from its payload (one signed byte per position).
/// Fails, saying which, if a value lies outside `-seeds..=seeds`: no correct level holds
/// one.
pub fn level_stats(seeds: usize, values: &[u8]) -> std::result::Result<LevelStats, String> {
    LevelStats::from_histogram(seeds, &histogram(values))
}

impl LevelStats {
    /// From a histogram of byte values (see [`histogram`]).
    pub fn from_histogram(
        seeds: usize,
        hist: &[u64; 256],
    ) -> std::result::Result<LevelStats, String> {
        let n = seeds as i32;
        let mut counts = vec![0; 2 * seeds + 1];
        for (b, &c) in hist.iter().enumerate() {
            let v = b as u8 as i8 as i32;
            if c == 0 {
                continue;
            }
            if v.abs() > n {
                return Err(format!(
                    "{c} position(s) hold the value {v:+}, outside -{seeds}..=+{seeds}"
                ));
            }
            counts[(v + n) as usize] = c;
        }
        Ok(LevelStats { seeds, counts })
    }

    /// The distribution over all the positions of several levels (`seeds` is the largest
    /// level, so that every value fits).
    pub fn total(levels: &[LevelStats]) -> LevelStats {
        let seeds = levels.iter().map(|l| l.seeds).max().unwrap_or(0);
        let mut counts = vec![0; 2 * seeds + 1];
        for l in levels {
            for (v, c) in l.histogram() {
                counts[(v + seeds as i32) as usize] += c;
            }
        }
        LevelStats { seeds, counts }
    }

    /// `(value, positions)` for every value `-seeds..=seeds`, in order, zeros included.
    pub fn histogram(&self) -> impl Iterator<Item = (i32, u64)> + '_ {
        let n = self.seeds as i32;
        self.counts
            .iter()
            .enumerate()
            .map(move |(i, &c)| (i as i32 - n, c))
    }

    /// Positions of value `v` (0 outside `-seeds..=seeds`).
    pub fn count(&self, v: i32) -> u64 {
        let i = v + self.seeds as i32;
        usize::try_from(i)
            .ok()
            .and_then(|i| self.counts.get(i))
            .copied()
            .unwrap_or(0)
    }

    /// Positions counted, over every value.
    pub fn positions(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// Positions the side to move wins (value > 0).
    pub fn won(&self) -> u64 {
        self.counts[self.seeds + 1..].iter().sum()
    }

    /// Positions drawn (value 0).
    pub fn drawn(&self) -> u64 {
        self.counts[self.seeds]
    }

    /// Positions the side to move loses (value < 0).
    pub fn lost(&self) -> u64 {
        self.counts[..self.seeds].iter().sum()
    }

    /// `x` as a percentage of the positions (0 if there are none).
    pub fn percent(&self, x: u64) -> f64 {
        let all = self.positions();
        if all == 0 {
            0.0
        } else {
            100.0 * x as f64 / all as f64
        }
    }

    /// The mean value over the positions (0 if there are none).
    pub fn mean(&self) -> f64 {
        let all = self.positions();
        if all == 0 {
            return 0.0;
        }
        let sum: i128 = self.histogram().map(|(v, c)| v as i128 * c as i128).sum();
        sum as f64 / all as f64
    }

    /// The largest value held by some position, and how many hold it.
    pub fn max(&self) -> Option<(i32, u64)> {
        self.histogram().filter(|&(_, c)| c > 0).last()
    }

    /// The smallest value held by some position, and how many hold it.
    pub fn min(&self) -> Option<(i32, u64)> {
        self.histogram().find(|&(_, c)| c > 0)
    }
}

/// Reads the levels of one database and counts each: `levels`, or by default every level
/// from 0 up to the first missing one. Every level's checksum is checked first (a packed
/// level is decompressed whole, every block checked), so the numbers are those of an
/// intact file. `report` is called after each level. Runs on the current rayon pool.
pub fn database_stats(
    root: &Path,
    rules: Rules,
    pits: usize,
    levels: Option<RangeInclusive<usize>>,
    mut report: impl FnMut(&LevelStats),
) -> Result<Vec<LevelStats>> {
    let dir = db_dir(root, rules, pits);
    let range = levels_asked(root, rules, pits, &levels)?;
    let index = Index::new(pits, *range.end())?;
    let missing = |n: usize| missing_level(&dir, rules, pits, n, *range.end());
    // Name a missing level before reading the ones below it, which can take minutes.
    if let Some(n) = range.clone().find(|&n| !level_exists(&dir, n)) {
        return Err(missing(n));
    }
    let mut out = Vec::with_capacity(range.clone().count());
    // Levels packed with the exit model are read with the values of the levels below.
    let mut stack = LevelStack::new(&dir, rules, pits, has_exit_model(&dir))?;
    for n in range.clone() {
        let want = Expect::level(rules, &index, n);
        let Some(level) = LevelFile::open(&dir, &want, Check::HeaderOnly)? else {
            return Err(missing(n));
        };
        let path = level.path().to_path_buf();
        let below = stack.below_for(n, level.model())?;
        let values = level.into_checked_values(&below)?;
        let s = level_stats(n, values.bytes()).map_err(|e| Error::format(&path, e))?;
        report(&s);
        out.push(s);
        stack.offer(n, values);
    }
    Ok(out)
}

/// The distances to conversion of one level: positions per distance, from its table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DistanceStats {
    /// The level.
    pub seeds: usize,
    /// `counts[d]`: positions at distance `d` plies (`counts[0]`: those with none, draws
    /// and games over), up to the longest.
    pub counts: Vec<u64>,
    /// Bytes a distance in the table (1, or 2 where the longest passes 255).
    pub width: u8,
    /// The table file's size, in bytes.
    pub file_bytes: u64,
}

impl DistanceStats {
    /// From the distances as a table stores them (`width` bytes each, little-endian),
    /// counted in parallel on the current rayon pool.
    pub fn from_payload(seeds: usize, width: u8, payload: &[u8], file_bytes: u64) -> Self {
        let mut counts: Vec<u64> = match width {
            1 => histogram(payload).to_vec(),
            _ => payload
                .par_chunks(2 * PIECE)
                .map(|part| {
                    let mut t = vec![0u64; 1 << 16];
                    for d in part.chunks_exact(2) {
                        t[u16::from_le_bytes([d[0], d[1]]) as usize] += 1;
                    }
                    t
                })
                .reduce(
                    || vec![0; 1 << 16],
                    |mut a, b| {
                        a.iter_mut().zip(b).for_each(|(x, y)| *x += y);
                        a
                    },
                ),
        };
        let longest = counts.iter().rposition(|&c| c > 0).unwrap_or(0);
        counts.truncate(longest + 1);
        DistanceStats {
            seeds,
            counts,
            width,
            file_bytes,
        }
    }

    /// Positions of the level.
    pub fn positions(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// Positions with a distance (won or lost, with moves).
    pub fn with_distance(&self) -> u64 {
        self.positions() - self.counts[0]
    }

    /// The longest distance, in plies (0 if none has one).
    pub fn longest(&self) -> usize {
        self.counts.len() - 1
    }

    /// `(distance, positions)` for every distance `1..=longest`, zeros included.
    pub fn histogram(&self) -> impl Iterator<Item = (usize, u64)> + '_ {
        self.counts.iter().copied().enumerate().skip(1)
    }

    /// The mean distance of the positions with one (0 if none has one).
    pub fn mean(&self) -> f64 {
        let sum: u128 = self.histogram().map(|(d, c)| d as u128 * c as u128).sum();
        sum as f64 / self.with_distance().max(1) as f64
    }

    /// The least distance that at least the share `q` (0..=1) of the positions with a
    /// distance do not pass (0 if none has one): `quantile(0.5)` is the median.
    pub fn quantile(&self, q: f64) -> usize {
        let want = (q * self.with_distance() as f64).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (d, c) in self.histogram() {
            seen += c;
            if seen >= want {
                return d;
            }
        }
        0
    }
}

/// Counts the distances to conversion of each level asked for (`levels`, or by default
/// every level from 0 up to the first missing one), reading each level's table, checked
/// whole against its checksum and against its level's values. `report` is called after
/// each level. Runs on the current rayon pool.
///
/// # Errors
/// A level missing, a table missing (`awari dtc` makes it), damaged, or made from other
/// values.
pub fn distance_stats(
    root: &Path,
    rules: Rules,
    pits: usize,
    levels: Option<RangeInclusive<usize>>,
    mut report: impl FnMut(&DistanceStats),
) -> Result<Vec<DistanceStats>> {
    let dir = db_dir(root, rules, pits);
    let range = levels_asked(root, rules, pits, &levels)?;
    let index = Index::new(pits, *range.end())?;
    let mut out = Vec::with_capacity(range.clone().count());
    for n in range.clone() {
        let want = Expect::level(rules, &index, n);
        let Some(level) = LevelFile::open(&dir, &want, Check::HeaderOnly)? else {
            return Err(missing_level(&dir, rules, pits, n, *range.end()));
        };
        let sum = level.header().checksum;
        let Some(table) = DistanceTable::open(&dir, &want, sum, Check::Full)? else {
            return Err(Error::Input(format!(
                "level {n} of {} has no distance table: make the tables first (`awari dtc \
                 --dir {} --rules {rules} --pits {pits} --levels {}..={}`)",
                dir.display(),
                root.display(),
                range.start(),
                range.end()
            )));
        };
        let payload = table.payload()?;
        let s = DistanceStats::from_payload(n, table.header().width, &payload, table.file_len());
        report(&s);
        out.push(s);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_counts_every_byte() {
        // More than one chunk, with a remainder, and negative values.
        let values: Vec<u8> = (0..PIECE as u64 * 2 + 7)
            .map(|i| ((i % 7) as i8 - 3) as u8)
            .collect();
        let h = histogram(&values);
        assert_eq!(h.iter().sum::<u64>(), values.len() as u64);
        for v in -3i8..=3 {
            let want = values.iter().filter(|&&b| b as i8 == v).count() as u64;
            assert_eq!(h[v as u8 as usize], want, "value {v}");
        }
        let s = LevelStats::from_histogram(3, &h).unwrap();
        assert_eq!(s.positions(), values.len() as u64);
        assert_eq!(s.won() + s.drawn() + s.lost(), s.positions());
        assert_eq!(s.max().unwrap().0, 3);
        assert_eq!(s.min().unwrap().0, -3);
        assert!(LevelStats::from_histogram(2, &h).is_err());
    }

    #[test]
    fn distance_numbers() {
        // Distances 0, 1, 1, 3, 300 stored in two bytes each; then 0, 2, 2, 2 in one.
        let wide: Vec<u8> = [0u16, 1, 1, 3, 300]
            .iter()
            .flat_map(|d| d.to_le_bytes())
            .collect();
        let s = DistanceStats::from_payload(7, 2, &wide, 4106);
        assert_eq!((s.positions(), s.with_distance(), s.longest()), (5, 4, 300));
        assert_eq!((s.counts[1], s.counts[3], s.counts[300]), (2, 1, 1));
        assert!((s.mean() - 305.0 / 4.0).abs() < 1e-12);
        assert_eq!(
            (s.quantile(0.5), s.quantile(0.75), s.quantile(1.0)),
            (1, 3, 300)
        );
        let s = DistanceStats::from_payload(3, 1, &[0, 2, 2, 2], 4100);
        assert_eq!(s.counts, vec![1, 0, 3]);
        assert_eq!((s.longest(), s.quantile(0.5), s.mean()), (2, 2, 2.0));
        let none = DistanceStats::from_payload(0, 1, &[0], 4097);
        assert_eq!(
            (none.longest(), none.mean(), none.quantile(0.5)),
            (0, 0.0, 0)
        );
    }

    #[test]
    fn derived_numbers() {
        // Values -1, 0, 0, 2, 2, 2 in a level of 2 seeds.
        let s = LevelStats {
            seeds: 2,
            counts: vec![0, 1, 2, 0, 3],
        };
        assert_eq!((s.won(), s.drawn(), s.lost()), (3, 2, 1));
        assert!((s.mean() - 5.0 / 6.0).abs() < 1e-12);
        assert_eq!(s.max(), Some((2, 3)));
        assert_eq!(s.min(), Some((-1, 1)));
        assert_eq!(s.count(-2), 0);
        assert_eq!(s.count(7), 0);
        let t = LevelStats::total(&[
            s.clone(),
            LevelStats {
                seeds: 0,
                counts: vec![1],
            },
        ]);
        assert_eq!(t.seeds, 2);
        assert_eq!(t.counts, vec![0, 1, 3, 0, 3]);
    }
}
