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
//! The level's values are read at random (a byte per position) and the lower levels as
//! the forward pass reads them at random; the distances are held in two bytes a position
//! and a count of value-keeping moves in one, with a list of the positions of the round.

use std::ops::RangeInclusive;
use std::path::PathBuf;
use std::sync::atomic::{
    AtomicU16, AtomicU8,
    Ordering::{Relaxed, SeqCst},
};
use std::time::Instant;

use rayon::prelude::*;

use crate::db::dtc::{dtc_path, write_distances, DistanceTable};
use crate::db::layout::{build_command, db_dir, levels_asked, Expect};
use crate::db::lock::DirLock;
use crate::db::raw::Check;
use crate::db::store::{LevelFile, LevelValues};
use crate::error::{Error, Result};
use crate::game::index::{Index, RankBase};
use crate::game::pits::with_pits;
use crate::game::rules::{for_each_stay_p, for_each_unmove_near_p, Exits, Rules};
use crate::game::scan::{scan_exits, LowerValues};
use crate::solve::level::exit_and_stay;
use crate::util::{LevelBar, CHUNK};

/// No distance: a draw, a game over, or not reached yet.
pub const NONE: u16 = 0;

/// A level's distances to conversion, one per position in index order ([`NONE`] where
/// there is none), and what making them found.
#[derive(Debug)]
pub struct Distances {
    /// The distance of each position, in plies; [`NONE`] for a draw or a game over.
    pub plies: Vec<u16>,
    /// The largest distance of the level (0 if it has none).
    pub longest: u16,
    /// Positions with a distance.
    pub with_distance: u64,
}

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
    with_pits!(index.pits_per_side(), P => distances_p::<P, L>(rules, index, n, values, lower, progress))
}

/// [`distances`] with the pits per side known at compile time.
fn distances_p<const P: usize, L: LowerValues + ?Sized>(
    rules: Rules,
    index: &Index,
    n: usize,
    values: &[u8],
    lower: &L,
    progress: &LevelBar,
) -> Result<Distances> {
    let size = index.level_size(n);
    assert_eq!(values.len() as u64, size, "the level's values");
    let value = |i: u64| values[i as usize] as i8;
    let plies: Vec<AtomicU16> = (0..size).map(|_| AtomicU16::new(NONE)).collect();
    // Lost positions: value-keeping in-level moves whose child has no distance yet.
    let waiting: Vec<AtomicU8> = (0..size).map(|_| AtomicU8::new(0)).collect();
    // Round 1, the games over (which end play: a move to one converts), and the count of
    // positions that must get a distance.
    let (at_one, ended, owed) = (0..size.div_ceil(CHUNK))
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
            let (mut at_one, mut ended) = (Vec::new(), Vec::new());
            let mut owed = 0u64;
            let mut cursor = index.cursor(n);
            for j in 0..len {
                let i = first + j as u64;
                let v = value(i);
                if over[j] {
                    ended.push(i);
                    continue;
                }
                if v == 0 {
                    continue;
                }
                owed += 1;
                if v > 0 {
                    if best[j] == v {
                        at_one.push(i);
                    }
                    continue;
                }
                let board = *index.seek_p::<P>(&mut cursor, i);
                let mut keeping = 0u8;
                for_each_stay_p::<P>(&board, rules, 0, |_, child| {
                    keeping += (-value(index.rank_in_p::<P>(child, n)) == v) as u8;
                    true
                });
                if keeping == 0 {
                    at_one.push(i);
                } else {
                    waiting[i as usize].store(keeping, Relaxed);
                }
            }
            progress.inc(len as u64);
            (at_one, ended, owed)
        })
        .reduce(
            || (Vec::new(), Vec::new(), 0),
            |(mut a, mut e, x), (b, f, y)| {
                a.extend(b);
                e.extend(f);
                (a, e, x + y)
            },
        );
    for &i in &at_one {
        plies[i as usize].store(1, Relaxed);
    }
    // The predecessors at distance `k` of the positions `from`, at `k - 1`, by the moves
    // that keep their values.
    let round = |from: &[u64], k: u16| -> Vec<u64> {
        from.par_chunks(4096)
            .map(|part| {
                let mut next = Vec::new();
                let made = &mut RankBase::default();
                for &c in part {
                    let kept = -value(c);
                    if kept == 0 {
                        continue;
                    }
                    let board = index.unrank(n, c);
                    let base_of = |base: &_, opp_empty: u64, out: &mut RankBase| {
                        index.rank_base_p::<P>(base, opp_empty, n, out)
                    };
                    for_each_unmove_near_p::<P, _>(
                        &board,
                        rules,
                        made,
                        base_of,
                        |q, stored, top, low, near, _| {
                            if !stored {
                                return;
                            }
                            let p = index.rank_pred_p::<P>(near, q, top, low);
                            if value(p) != kept {
                                return;
                            }
                            let cell = &plies[p as usize];
                            let reached = if kept > 0 {
                                cell.compare_exchange(NONE, k, SeqCst, SeqCst).is_ok()
                            } else if waiting[p as usize].fetch_sub(1, SeqCst) == 1 {
                                cell.store(k, Relaxed);
                                true
                            } else {
                                false
                            };
                            if reached {
                                next.push(p);
                            }
                        },
                    );
                }
                next
            })
            .reduce(Vec::new, |mut a, b| {
                a.extend(b);
                a
            })
    };
    // A move into a game over converts: its value-keeping predecessors are at 1 too.
    let mut frontier = at_one;
    frontier.extend(round(&ended, 1));
    let mut with_distance = frontier.len() as u64;
    progress.inc(with_distance);
    let mut k: u16 = 1;
    while !frontier.is_empty() {
        k = k.checked_add(1).ok_or_else(|| {
            Error::Input(format!(
                "level {n}: a distance to conversion passes {} plies",
                u16::MAX
            ))
        })?;
        frontier = round(&frontier, k);
        with_distance += frontier.len() as u64;
        progress.inc(frontier.len() as u64);
    }
    if with_distance != owed {
        return Err(Error::Input(format!(
            "level {n}: {} position(s) with a value have no value-keeping line that \
             converts: the values are not this level's solution",
            owed - with_distance
        )));
    }
    let plies: Vec<u16> = plies.into_iter().map(AtomicU16::into_inner).collect();
    let longest = plies.par_iter().copied().max().unwrap_or(NONE);
    Ok(Distances {
        plies,
        longest,
        with_distance,
    })
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
            let kept = match DistanceTable::open(&dir, &want, sum, Check::Full) {
                Ok(Some(t)) if !opts.force => Some(t),
                Ok(_) => None,
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
                    let head = write_distances(&dtc_path(&dir, n), &want, sum, &made.plies)?;
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
                    for (i, &d) in got.plies.iter().enumerate() {
                        let board = index.unrank(n, i as u64);
                        assert_eq!(
                            d, expected[&board],
                            "{rules} P={pits} level {n} index {i} ({board:?})"
                        );
                    }
                    let counted = got.plies.iter().filter(|&&d| d != NONE).count() as u64;
                    assert_eq!(got.with_distance, counted);
                    assert_eq!(got.longest, got.plies.iter().copied().max().unwrap());
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
