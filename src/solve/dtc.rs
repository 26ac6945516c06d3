//! Distance to conversion (DESIGN.md section 5.7): for each position of a level with a
//! value `v != 0`, the plies until play leaves the level (a capture or the game's end)
//! when both sides keep the value, the winner leaving as soon as it can and the loser as
//! late as it can. Made from the level's values and the lower levels' by a retrograde
//! pass in rounds over the level's value-keeping moves:
//!
//! - round 1: a won position is at 1 if its best exit (a capture or game end, section 5.1)
//!   keeps its value; a lost one if none of its in-level moves keeps it (then an exit
//!   does); and so is a position whose value a move into a game over keeps (the game
//!   ends there: a game over has no distance, and counts as 0);
//! - round `k > 1`: the positions at `k - 1` are un-moved to their in-level
//!   predecessors (as the backward pass does); a predecessor the move keeps the value of
//!   is at `k` if it is won and not at a distance yet (its first such child is its
//!   nearest), or if it is lost and this was the last of its value-keeping children to
//!   get a distance (its farthest);
//! - the rounds end when one finds nothing; a position with a value and moves that has no
//!   distance then means the values are not a solution (an error).
//!
//! The lower levels are read at random as the forward pass reads them; each position of
//! the level has a word (its distance, its count of value-keeping moves, its value), and
//! the positions of a round are found again by scanning the chunks it flagged.

use std::ops::RangeInclusive;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering::Relaxed};
use std::time::Instant;

use rayon::prelude::*;

use crate::db::dtc::{dtc_packed_path, dtc_path, write_distances, DistanceTable};
use crate::db::layout::{build_command, db_dir, levels_asked, Expect};
use crate::db::lock::DirLock;
use crate::db::raw::Check;
use crate::db::store::{LevelFile, LevelValues};
use crate::error::{Error, Result};
use crate::game::index::{Index, RankBase};
use crate::game::pits::with_pits;
use crate::game::rules::{for_each_stay_p, for_each_unmove_near_p, Board, Exits, Rules};
use crate::game::scan::{scan_exits, LowerValues};
use crate::solve::level::exit_and_stay;
use crate::util::{prefetch, LevelBar, CHUNK};

/// No distance: a draw, a game over, or not reached yet.
pub const NONE: u16 = 0;

/// A level's distances to conversion, one per position in index order ([`NONE`] where
/// there is none), and what making them found.
#[derive(Debug)]
pub struct Distances {
    /// Each position's cell as [`distances`] left it: its distance in the low 16 bits.
    cells: Vec<u32>,
    /// The largest distance of the level (0 if it has none).
    pub longest: u16,
    /// Positions with a distance.
    pub with_distance: u64,
}

impl Distances {
    /// The distance of position `i` of the level, in plies; [`NONE`] for a draw or a
    /// game over.
    pub fn get(&self, i: u64) -> u16 {
        self.cells[i as usize] as u16
    }
}

// A position's cell while its level's distances are made: the distance (bits 0..16), for
// a lost position the count of its value-keeping in-level moves whose child has no
// distance yet (bits 16..24), and the value (bits 24..32). One word, so that updating a
// predecessor costs one cache miss, not three.
const PLIES: u32 = 0xffff;
const WAIT_ONE: u32 = 1 << 16;

fn cell(value: i8, waiting: u8, plies: u16) -> u32 {
    (value as u8 as u32) << 24 | (waiting as u32) << 16 | plies as u32
}

fn value_of(cell: u32) -> i8 {
    (cell >> 24) as u8 as i8
}

/// Positions un-moved at once: their predecessors' cells are prefetched while the batch
/// is generated and updated after it.
const BATCH: usize = 128;

/// The distances to conversion of level `n` of `index`'s board under `rules`: `values`
/// are the level's (a byte per position in index order), `lower` the levels below it
/// (read at random). `progress` is advanced by the positions scanned and then by those
/// given a distance.
///
/// # Errors
/// [`Error::Input`] when the values are not the level's solution (a position with a value
/// that no value-keeping line converts), or when a distance passes 65,535 plies.
pub fn distances<L: LowerValues + ?Sized>(
    rules: Rules,
    index: &Index,
    n: usize,
    values: &[u8],
    lower: &L,
    progress: &LevelBar,
) -> Result<Distances> {
    with_pits!(index.pits_per_side(), P => Rounds::<P> { rules, index, n, cells: Vec::new() }
        .run(values, lower, progress))
}

/// The state of [`distances`] with the pits per side, `P`, known at compile time: a cell
/// per position of the level.
struct Rounds<'a, const P: usize> {
    rules: Rules,
    index: &'a Index,
    n: usize,
    cells: Vec<AtomicU32>,
}

impl<const P: usize> Rounds<'_, P> {
    /// Round 1 by a scan of the level, then rounds `2, 3, ...` until one finds nothing.
    /// The positions reached in a round are not listed: a flag per chunk of the level says
    /// where they are, and the next round scans the chunks flagged, in index order (a
    /// cursor walks to each position rather than unranking it).
    fn run<L: LowerValues + ?Sized>(
        mut self,
        values: &[u8],
        lower: &L,
        progress: &LevelBar,
    ) -> Result<Distances> {
        let (index, n) = (self.index, self.n);
        let size = index.level_size(n);
        assert_eq!(values.len() as u64, size, "the level's values");
        let chunks = size.div_ceil(CHUNK) as usize;
        self.cells = (0..size)
            .into_par_iter()
            .map(|_| AtomicU32::new(0))
            .collect();
        // Chunks holding positions reached in an odd round, in an even one.
        let flags = |_| {
            (0..chunks)
                .map(|_| AtomicBool::new(false))
                .collect::<Vec<_>>()
        };
        let marked: [Vec<AtomicBool>; 2] = std::array::from_fn(flags);
        let (ended, owed, at_one) = self.first_round(values, lower, &marked[1], progress);
        // A move into a game over converts: its value-keeping predecessors are at 1 too.
        let sources = ended
            .iter()
            .map(|&i| (index.unrank(n, i), -(values[i as usize] as i8)));
        let mut found = at_one + self.unmove(sources, 1, &marked[1]);
        let mut with_distance = found;
        progress.inc(found);
        let mut k: u16 = 1;
        while found > 0 {
            k = k.checked_add(1).ok_or_else(|| {
                Error::Input(format!(
                    "level {n}: a distance to conversion passes {} plies",
                    u16::MAX
                ))
            })?;
            let (from, to) = (&marked[(k as usize - 1) % 2], &marked[k as usize % 2]);
            found = (0..chunks)
                .into_par_iter()
                .map(|c| match from[c].swap(false, Relaxed) {
                    true => self.unmove_chunk(c as u64, k, to),
                    false => 0,
                })
                .sum();
            with_distance += found;
            progress.inc(found);
        }
        if with_distance != owed {
            return Err(Error::Input(format!(
                "level {n}: {} position(s) with a value have no value-keeping line that \
                 converts: the values are not this level's solution",
                owed - with_distance
            )));
        }
        let cells: Vec<u32> = self.cells.into_iter().map(AtomicU32::into_inner).collect();
        let longest = cells.par_iter().map(|&c| c as u16).max().unwrap_or(NONE);
        Ok(Distances {
            cells,
            longest,
            with_distance,
        })
    }

    /// Fills every cell and settles round 1 (flagging its chunks in `marked`): returns the
    /// games over, the count of positions that must get a distance and those at 1.
    fn first_round<L: LowerValues + ?Sized>(
        &self,
        values: &[u8],
        lower: &L,
        marked: &[AtomicBool],
        progress: &LevelBar,
    ) -> (Vec<u64>, u64, u64) {
        let (rules, index, n) = (self.rules, self.index, self.n);
        let size = index.level_size(n);
        let value = |i: u64| values[i as usize] as i8;
        (0..size.div_ceil(CHUNK))
            .into_par_iter()
            .map(|c| {
                let first = c * CHUNK;
                let len = CHUNK.min(size - first) as usize;
                let mut best = vec![0i8; len];
                let mut over = vec![false; len];
                scan_exits(rules, index, n, lower, first, len, |j, ex, b| {
                    best[j] = exit_and_stay(ex, n, b).0;
                    over[j] = matches!(ex, Exits::Terminal(_));
                });
                let mut ended = Vec::new();
                let (mut owed, mut at_one) = (0u64, 0u64);
                let mut cursor = index.cursor(n);
                for j in 0..len {
                    let i = first + j as u64;
                    let v = value(i);
                    let (mut waiting, mut plies) = (0u8, NONE);
                    if over[j] {
                        ended.push(i);
                    } else if v > 0 {
                        owed += 1;
                        if best[j] == v {
                            plies = 1;
                        }
                    } else if v < 0 {
                        owed += 1;
                        let board = *index.seek_p::<P>(&mut cursor, i);
                        for_each_stay_p::<P>(&board, rules, 0, |_, child| {
                            waiting += (-value(index.rank_in_p::<P>(child, n)) == v) as u8;
                            true
                        });
                        if waiting == 0 {
                            plies = 1;
                        }
                    }
                    at_one += (plies == 1) as u64;
                    self.cells[i as usize].store(cell(v, waiting, plies), Relaxed);
                }
                if at_one > 0 {
                    marked[c as usize].store(true, Relaxed);
                }
                progress.inc(len as u64);
                (ended, owed, at_one)
            })
            .reduce(
                || (Vec::new(), 0, 0),
                |(mut e, x, a), (f, y, b)| {
                    e.extend(f);
                    (e, x + y, a + b)
                },
            )
    }

    /// Un-moves the positions of chunk `c` at `k - 1` (in index order).
    fn unmove_chunk(&self, c: u64, k: u16, marked: &[AtomicBool]) -> u64 {
        let (index, n) = (self.index, self.n);
        let first = c * CHUNK;
        let len = CHUNK.min(index.level_size(n) - first);
        let mut cursor = index.cursor(n);
        let at = (first..first + len).filter_map(|i| {
            let w = self.cells[i as usize].load(Relaxed);
            (w & PLIES == k as u32 - 1).then(|| (*index.seek_p::<P>(&mut cursor, i), -value_of(w)))
        });
        self.unmove(at, k, marked)
    }

    /// Gives distance `k` to the predecessors of `sources` (boards of the level and the
    /// value a predecessor keeps by moving to them) that the move keeps the value of: a
    /// won one not at a distance yet, a lost one whose last value-keeping child this was.
    /// Flags their chunks in `marked`; returns how many it reached.
    fn unmove(
        &self,
        sources: impl Iterator<Item = (Board, i8)>,
        k: u16,
        marked: &[AtomicBool],
    ) -> u64 {
        let (index, n) = (self.index, self.n);
        let made = &mut RankBase::default();
        let mut preds: Vec<(u64, i8)> = Vec::with_capacity(BATCH * 16);
        let mut reached = 0;
        let mut sources = sources.peekable();
        while sources.peek().is_some() {
            preds.clear();
            for (board, kept) in sources.by_ref().take(BATCH) {
                let base_of = |base: &_, opp_empty: u64, out: &mut RankBase| {
                    index.rank_base_p::<P>(base, opp_empty, n, out)
                };
                for_each_unmove_near_p::<P, _>(
                    &board,
                    self.rules,
                    made,
                    base_of,
                    |q, stored, top, low, near, _| {
                        if stored {
                            let p = index.rank_pred_p::<P>(near, q, top, low);
                            prefetch(&self.cells[p as usize]);
                            preds.push((p, kept));
                        }
                    },
                );
            }
            for &(p, kept) in &preds {
                let c = &self.cells[p as usize];
                let w = c.load(Relaxed);
                if kept == 0 || value_of(w) != kept {
                    continue;
                }
                let now = if kept > 0 {
                    w & PLIES == 0
                        && c.compare_exchange(w, w | k as u32, Relaxed, Relaxed)
                            .is_ok()
                } else if (c.fetch_sub(WAIT_ONE, Relaxed) >> 16) as u8 == 1 {
                    c.fetch_or(k as u32, Relaxed);
                    true
                } else {
                    false
                };
                if now {
                    marked[(p / CHUNK) as usize].store(true, Relaxed);
                    reached += 1;
                }
            }
        }
        reached
    }
}

/// What `awari dtc` is asked: the database, and which levels to make tables of.
#[derive(Clone, Debug)]
pub struct DtcOptions {
    /// The root folder (as given to `awari build --dir`).
    pub root: PathBuf,
    /// The rule set of the database.
    pub rules: Rules,
    /// Pits per side of the database.
    pub pits: usize,
    /// The levels to make tables of; `None`: every level present, from 0 up to the first
    /// gap.
    pub levels: Option<RangeInclusive<usize>>,
    /// Make every table again, even one that is there and good.
    pub force: bool,
    /// Draw progress bars on stderr.
    pub progress: bool,
}

/// One level's distance table, as [`make_tables`] made or found it.
#[derive(Clone, Debug)]
pub struct DtcReport {
    /// The level.
    pub seeds: usize,
    /// Positions of the level.
    pub positions: u64,
    /// Positions with a distance (won or lost, with moves).
    pub with_distance: u64,
    /// The longest distance, in plies.
    pub longest: u16,
    /// Bytes a distance in the file.
    pub width: u8,
    /// Wall time of making the table (0 for one kept).
    pub seconds: f64,
    /// The table was there and good, and kept.
    pub kept: bool,
}

/// Makes the distance table of each level asked for (DESIGN.md sections 4.6 and 5.7),
/// level by level from the lowest, each written beside its level once complete, calling
/// `report` after each; a level whose table is there, good and made from its values is
/// kept (unless `force`), so a stopped run goes on where it stopped. `warn` is told of a
/// table refused and made again. The folder is locked as a build locks it. Every level
/// below the highest asked for is read (a capture reaches them): raw levels mapped,
/// packed ones decompressed into memory, each checked against its checksum.
///
/// # Errors
/// A level missing or damaged, a folder held by another writer, a table that cannot be
/// written, or values that are not the levels' solution (a position with a value that
/// no value-keeping line converts).
pub fn make_tables(
    opts: &DtcOptions,
    mut report: impl FnMut(&DtcReport),
    mut warn: impl FnMut(&str),
) -> Result<Vec<DtcReport>> {
    let dir = db_dir(&opts.root, opts.rules, opts.pits);
    let range = levels_asked(&opts.root, opts.rules, opts.pits, &opts.levels)?;
    let (first, last) = (*range.start(), *range.end());
    let index = Index::new(opts.pits, last)?;
    let _lock = DirLock::acquire(&dir, "awari dtc")?;
    let mut levels: Vec<LevelValues> = Vec::with_capacity(last + 1);
    let mut out = Vec::new();
    for n in 0..=last {
        let want = Expect::level(opts.rules, &index, n);
        let Some(level) = LevelFile::open(&dir, &want, Check::HeaderOnly)? else {
            return Err(Error::Input(format!(
                "level {n} is missing in {}: build levels 0..={last} first (`{}`)",
                dir.display(),
                build_command(&opts.root, opts.rules, opts.pits, last)
            )));
        };
        let sum = level.header().checksum;
        let below: Vec<&[u8]> = levels.iter().map(LevelValues::bytes).collect();
        let values = level.into_checked_values(&below)?;
        if n >= first {
            // The whole payload checked, a packed table's every block too; with --force
            // nothing is kept, so nothing is read.
            let opened = if opts.force {
                Ok(None)
            } else {
                DistanceTable::open(&dir, &want, sum, Check::HeaderOnly)
                    .and_then(|t| t.map(|t| t.check_payload().map(|()| t)).transpose())
            };
            let kept = match opened {
                Ok(t) => t,
                Err(e) => {
                    warn(&format!("{}; made again", e.one_line()));
                    None
                }
            };
            let r = match kept {
                Some(t) => {
                    let h = t.header();
                    DtcReport {
                        seeds: n,
                        positions: want.positions,
                        with_distance: h.with_distance,
                        longest: h.longest,
                        width: h.width,
                        seconds: 0.0,
                        kept: true,
                    }
                }
                None => {
                    let started = Instant::now();
                    let bar = LevelBar::new(opts.progress, want.positions * 2, n, "distances");
                    let made = distances(opts.rules, &index, n, values.bytes(), &below[..], &bar)?;
                    bar.finish();
                    let head = write_distances(&dtc_path(&dir, n), &want, sum, |i| made.get(i))?;
                    // A packed table beside it is of other values, or forced out: stale.
                    let packed = dtc_packed_path(&dir, n);
                    if packed.exists() {
                        std::fs::remove_file(&packed).map_err(|e| Error::io(&packed, e))?;
                    }
                    DtcReport {
                        seeds: n,
                        positions: want.positions,
                        with_distance: made.with_distance,
                        longest: made.longest,
                        width: head.width,
                        seconds: started.elapsed().as_secs_f64(),
                        kept: false,
                    }
                }
            };
            report(&r);
            out.push(r);
        }
        drop(below);
        levels.push(values);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;
    use crate::game::rules::Board;
    use crate::solve::reference::Reference;

    /// Every level up to 12 seeds of boards of 3 to 6 pits, both rule sets: the distances
    /// of every position are those the independent solver finds by its forward sweeps
    /// over the game graph (DESIGN.md section 5.7).
    #[test]
    fn distances_are_the_reference_ones() {
        let bar = LevelBar::new(false, 0, 0, "");
        for rules in [Rules::Awari, Rules::Oware] {
            for pits in 3..=6 {
                let top = 12;
                let index = Index::new(pits, top).unwrap();
                let truth = crate::solve::level::solve_in_memory(rules, &index, top);
                let all: Vec<&[u8]> = truth.iter().map(Vec::as_slice).collect();
                let starts: Vec<Board> = (0..=top)
                    .flat_map(|n| (0..index.level_size(n)).map(move |i| (n, i)))
                    .map(|(n, i)| index.unrank(n, i))
                    .collect();
                let reference = Reference::solve(rules, &starts, usize::MAX).unwrap();
                let expected: HashMap<Board, u16> = reference
                    .iter()
                    .map(|(b, _)| *b)
                    .zip(reference.distances())
                    .collect();
                let mut longest = 0;
                for n in 0..=top {
                    let got = distances(rules, &index, n, &truth[n], &all[..n], &bar).unwrap();
                    let plies: Vec<u16> = (0..index.level_size(n)).map(|i| got.get(i)).collect();
                    for (i, &d) in plies.iter().enumerate() {
                        let board = index.unrank(n, i as u64);
                        assert_eq!(
                            d, expected[&board],
                            "{rules} P={pits} level {n} index {i} ({board:?})"
                        );
                    }
                    let counted = plies.iter().filter(|&&d| d != NONE).count() as u64;
                    assert_eq!(got.with_distance, counted);
                    assert_eq!(got.longest, plies.iter().copied().max().unwrap());
                    longest = longest.max(got.longest);
                }
                // Lines of many plies, not only captures at once.
                assert!(longest > 10, "{rules} P={pits}: longest {longest}");
            }
        }
    }

    /// Values that are not the level's solution are refused: lost positions made won by
    /// the whole level, which few moves keep (one at a time; most such are refused).
    #[test]
    fn wrong_values_are_refused() {
        let bar = LevelBar::new(false, 0, 0, "");
        let (rules, top) = (Rules::Oware, 10);
        let index = Index::new(4, top).unwrap();
        let truth = crate::solve::level::solve_in_memory(rules, &index, top);
        let all: Vec<&[u8]> = truth.iter().map(Vec::as_slice).collect();
        let lost: Vec<usize> = (0..truth[top].len())
            .filter(|&i| (truth[top][i] as i8) < -2)
            .take(20)
            .collect();
        assert_eq!(lost.len(), 20);
        let mut refused = 0;
        for i in lost {
            let mut wrong = truth[top].clone();
            wrong[i] = top as u8;
            if let Err(e) = distances(rules, &index, top, &wrong, &all[..top], &bar) {
                assert!(e.to_string().contains("not this level's solution"), "{e}");
                refused += 1;
            }
        }
        assert!(refused >= 10, "{refused} of 20 refused");
    }
}
