//! Verifying a built database: headers and checksums, the local equation of DESIGN.md
//! section 2 on every stored position, and (`deep`) a second, independent solution of
//! every level compared byte for byte.
//!
//! The local check recomputes `v(p) = max over legal moves (captured - v(child))` (game
//! ends and forced moves as in the rules) from the stored values of the children: the
//! lower levels for captures, the same level for in-level moves. It catches a damaged
//! byte and most solver bugs, but not a wrong value that is consistent round a cycle:
//! that equation has other solutions than the true values.
//!
//! The deep check solves each level again by an independent method and compares it byte
//! for byte ([`deep`]).
//!
//! A level with a distance table has it checked too, every entry against the distances
//! of its moves, an equation with the true distances as its only solution ([`distances`]).
//!
//! The parts: this file the entry point, its options and reports, and the two drivers
//! (every level in memory, for a database that holds a level packed with the exit model;
//! else the lower levels read as streams); [`batch`] a level with its moves expanded a
//! batch at a time; [`local`] the local check; [`deep`] the deep check; [`distances`] the
//! distance tables' check; [`mismatch`] the wrong values they find. This file uses the
//! others and none of them uses it.

use std::ops::RangeInclusive;
use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::db::layout::{db_dir, levels_asked, missing_level, Expect};
use crate::db::model::Model;
use crate::db::raw::Check;
use crate::db::stack::LevelStack;
use crate::db::store::{has_exit_model, level_memory, LevelFile, LevelValues};
use crate::error::{Error, Result};
use crate::game::index::Index;
use crate::game::rules::Rules;
use crate::game::scan::lowest_captured_level;
use crate::util::LevelBar;

mod batch;
mod deep;
mod distances;
mod local;
mod mismatch;

use batch::Ctx;
use distances::{check_table, BestExits};
use local::Streamed;
// SliceOf of the reports (`LevelCheck`, `DeepCheck`): public here, as before the split.
pub use distances::{DistanceCheck, DistanceMismatch};
pub use mismatch::{Mismatch, Mismatches};

/// What to verify.
#[derive(Clone, Debug)]
pub struct VerifyOptions {
    /// The root folder (as given to `awari build --dir`).
    pub root: PathBuf,
    /// The rule set of the database to check.
    pub rules: Rules,
    /// Pits per side of the database to check.
    pub pits: usize,
    /// The levels to check; `None`: every level present, from 0 up to the first gap.
    pub levels: Option<RangeInclusive<usize>>,
    /// Also solve each level again by the independent method and compare.
    pub deep: bool,
    /// Draw progress bars on stderr.
    pub progress: bool,
}

/// The deep check of one level.
#[derive(Clone, Debug)]
pub struct DeepCheck {
    /// Sweeps until nothing changed (the last one changes nothing).
    pub sweeps: u32,
    /// Positions whose stored value differs from the independent solution.
    pub mismatches: Mismatches,
    /// Wall time of the deep check alone, in seconds.
    pub seconds: f64,
}

/// The verdict on one level.
#[derive(Clone, Debug)]
pub struct LevelCheck {
    /// The level.
    pub seeds: usize,
    /// Positions in the level.
    pub positions: u64,
    /// `None` if the payload checksum matches the header, else what is wrong.
    pub checksum_problem: Option<String>,
    /// Positions whose stored value is not the best of its moves (the local check).
    pub mismatches: Mismatches,
    /// Wall time of the local check, in seconds (reading and checksums not included).
    pub seconds: f64,
    /// The deep check, if asked for.
    pub deep: Option<DeepCheck>,
    /// `None` if the level's capture moves and the un-captures of the levels below agree
    /// (the two ways the local check can find the captures), else what differs: a fault
    /// of the verifier, not of the level.
    pub capture_problem: Option<String>,
    /// The check of the level's distance table; `None` where it has none.
    pub distances: Option<DistanceCheck>,
}

impl LevelCheck {
    /// Whether the level passed: its checksums match and no check found a wrong value.
    pub fn ok(&self) -> bool {
        self.checksum_problem.is_none()
            && self.capture_problem.is_none()
            && self.mismatches.count == 0
            && self.deep.as_ref().is_none_or(|d| d.mismatches.count == 0)
            && self.distances.as_ref().is_none_or(DistanceCheck::ok)
    }
}

/// Parses a level range: `A..=B`, `A..B` (B excluded) or a single level `N`.
pub fn parse_levels(s: &str) -> std::result::Result<RangeInclusive<usize>, String> {
    let bad = || format!("--levels '{s}': expected a range of levels like 0..=20, or one level");
    let num = |t: &str| t.trim().parse::<usize>().map_err(|_| bad());
    let (a, b) = if let Some((a, b)) = s.split_once("..=") {
        (num(a)?, num(b)?)
    } else if let Some((a, b)) = s.split_once("..") {
        let b = num(b)?;
        if b == 0 {
            return Err(format!("--levels '{s}': the range is empty"));
        }
        (num(a)?, b - 1)
    } else {
        let n = num(s)?;
        (n, n)
    };
    if a > b {
        return Err(format!(
            "--levels '{s}': the first level ({a}) is above the last ({b})"
        ));
    }
    Ok(a..=b)
}

/// Verifies the levels asked for, calling `report` after each. Fails (an `Err`) only
/// when a level cannot be read at all: missing, truncated, of another database, or a
/// damaged level below the range, which the checked levels read. Checksum and value
/// mismatches of the checked levels are in the reports: see [`LevelCheck::ok`].
pub fn verify(
    opts: &VerifyOptions,
    mut report: impl FnMut(&LevelCheck),
) -> Result<Vec<LevelCheck>> {
    let dir = db_dir(&opts.root, opts.rules, opts.pits);
    let range = levels_asked(&opts.root, opts.rules, opts.pits, &opts.levels)?;
    let (first, last) = (*range.start(), *range.end());
    let index = Index::new(opts.pits, last)?;
    if !has_exit_model(&dir) {
        return verify_streamed(opts, &dir, first, last, &index, report);
    }
    // A level packed with the exit model is read with every level below it in memory:
    // the whole database is held, raw levels mapped, packed ones decompressed.
    let mut levels = Vec::with_capacity(last + 1);
    // What is wrong with the checksums of each checked level (a damaged block named).
    let mut checksum_problems: Vec<Option<String>> = Vec::with_capacity(last + 1);
    // The payload checksum each level's header gives: what its distance table names.
    let mut sums = Vec::with_capacity(last + 1);
    for n in 0..=last {
        let want = Expect::level(opts.rules, &index, n);
        let Some(level) = LevelFile::open(&dir, &want, Check::HeaderOnly)? else {
            return Err(missing_level(&dir, opts.rules, opts.pits, n, last));
        };
        sums.push(level.header().checksum);
        // Levels below the range are trusted inputs: refuse them if damaged. Checked
        // levels report a bad checksum or block and still get their values checked, so
        // that the damaged positions are named.
        let below: Vec<&[u8]> = levels.iter().map(LevelValues::bytes).collect();
        let mut problem = None;
        let values = match level {
            level if n < first => level.into_checked_values(&below)?,
            LevelFile::Raw(l) => {
                problem = l.check_checksum().err().map(Error::into_problem);
                LevelValues::Mapped(l)
            }
            LevelFile::Packed(l) => {
                let mut bytes = level_memory(n, l.header().positions)?;
                let problems = l.decode_into(&mut bytes);
                // With the exit model, the values come from the levels below: a damaged
                // one below makes this one's checksum fail too, so say which.
                l.resolve(&below, &mut bytes)?;
                if !problems.is_empty() {
                    let all: Vec<String> = problems.iter().map(|p| l.describe(p)).collect();
                    problem = Some(all.join("; "));
                } else if let Err(e) = l.check_payload(&bytes) {
                    let e = e.into_problem();
                    let damaged_below = (first..n).find(|&m| checksum_problems[m].is_some());
                    problem = Some(match damaged_below {
                        Some(m) if l.model() == Model::Exits => format!(
                            "{e} (packed with the exit model, resolved from level {m}, which is damaged)"
                        ),
                        _ => e,
                    });
                }
                LevelValues::Owned(bytes)
            }
            LevelFile::Slice(_) => unreachable!("`LevelFile::open` opens no slice"),
        };
        drop(below);
        levels.push(values);
        checksum_problems.push(problem);
    }
    let bytes: Vec<&[u8]> = levels.iter().map(|l| l.bytes()).collect();
    let mut out = Vec::new();
    for (n, checksum_problem) in checksum_problems.into_iter().enumerate().skip(first) {
        let t0 = Instant::now();
        let ctx = Ctx {
            rules: opts.rules,
            index: &index,
            n,
            levels: &bytes,
        };
        let bar = LevelBar::new(opts.progress, index.level_size(n), n, "local");
        let mismatches = ctx.local_check(&bar);
        let seconds = t0.elapsed().as_secs_f64();
        let deep = opts.deep.then(|| {
            let t0 = Instant::now();
            bar.phase("deep", 0);
            let (sweeps, mismatches) = ctx.deep_check(&bar, None);
            DeepCheck {
                sweeps,
                mismatches,
                seconds: t0.elapsed().as_secs_f64(),
            }
        });
        let want = Expect::level(opts.rules, &index, n);
        let lower = &bytes[..n];
        let distances = check_table(
            &dir,
            &want,
            sums[n],
            &index,
            bytes[n],
            || Ok(BestExits::Lower(lower)),
            &bar,
        )?;
        bar.finish();
        let r = LevelCheck {
            seeds: n,
            positions: index.level_size(n),
            checksum_problem,
            mismatches,
            seconds,
            deep,
            capture_problem: None,
            distances,
        };
        report(&r);
        out.push(r);
    }
    Ok(out)
}

/// [`verify`] with the lower levels read as streams: each checked level is held in
/// memory (a byte per position, and two bits: some move gives the stored value, some
/// move gives more), its in-level moves read from it, and its captures valued by the
/// un-captures of the levels below read in index order from their files. So checking
/// level `n` holds 1.25 bytes per position of level `n` and no lower level, of which the
/// byte is the page cache's where the level is raw ([`hold_level`]). The capture
/// moves that the level's own positions generate and the un-captures that the levels
/// below give must be the same (parent, child) pairs: a hash of each pair summed both ways
/// must agree, so that a fault in either generator cannot hide a wrong value.
fn verify_streamed(
    opts: &VerifyOptions,
    dir: &Path,
    first: usize,
    last: usize,
    index: &Index,
    mut report: impl FnMut(&LevelCheck),
) -> Result<Vec<LevelCheck>> {
    let p = index.pits_per_side();
    let expect = |m: usize| Expect::level(opts.rules, index, m);
    // Every level needed is there before anything is checked.
    let lowest = lowest_captured_level(p, first);
    // The payload checksum each level's header gives (what its distance table names),
    // from `lowest` up.
    let sums = (lowest..=last)
        .map(
            |m| match LevelFile::open(dir, &expect(m), Check::HeaderOnly)? {
                Some(level) => Ok(level.header().checksum),
                None => Err(missing_level(dir, opts.rules, opts.pits, m, last)),
            },
        )
        .collect::<Result<Vec<u64>>>()?;
    // The levels below the range that the checked ones read are trusted inputs: refuse
    // them if damaged.
    for m in lowest..first {
        LevelFile::open_stream_required(dir, &expect(m), last)?.check_checksum_with(|_| {})?;
    }
    let mut lower = LevelStack::new(dir, opts.rules, opts.pits, false)?;
    let mut out = Vec::new();
    for n in first..=last {
        let size = index.level_size(n);
        let (values, checksum_problem) = hold_level(dir, &expect(n), last)?;
        lower.open_for_stream(n, last)?;
        let t0 = Instant::now();
        let bar = LevelBar::new(opts.progress, 2 * size, n, "local");
        let check = Streamed {
            rules: opts.rules,
            index,
            n,
            values: &values,
            lower: &lower,
            reach: lower.reach(n),
        };
        let (mismatches, edges) = check.local(&bar)?;
        let seconds = t0.elapsed().as_secs_f64();
        let deep = if opts.deep {
            let t0 = Instant::now();
            bar.phase("deep", 0);
            let exits = check.exits()?;
            let levels: Vec<&[u8]> = (0..=n)
                .map(|m| if m == n { &values[..] } else { &[][..] })
                .collect();
            let ctx = Ctx {
                rules: opts.rules,
                index,
                n,
                levels: &levels,
            };
            let (sweeps, mismatches) = ctx.deep_check(&bar, Some(exits));
            Some(DeepCheck {
                sweeps,
                mismatches,
                seconds: t0.elapsed().as_secs_f64(),
            })
        } else {
            None
        };
        let exits = || check.exits().map(BestExits::Known);
        let distances = check_table(
            dir,
            &expect(n),
            sums[n - lowest],
            index,
            &values,
            exits,
            &bar,
        )?;
        bar.finish();
        let r = LevelCheck {
            seeds: n,
            positions: size,
            checksum_problem,
            mismatches,
            seconds,
            deep,
            capture_problem: edges,
            distances,
        };
        report(&r);
        out.push(r);
    }
    Ok(out)
}

/// The values of the level `expect` names, and what is wrong with its checksum. A raw
/// level is read through its map, not copied: its pages are then the kernel's page cache,
/// which it can take back under pressure, and checking Oware level 36 holds 3.6 GB of
/// memory of its own (the two bit arrays) instead of 17.8 GB of 24. A packed level is
/// decompressed into memory.
fn hold_level(dir: &Path, expect: &Expect, last: usize) -> Result<(LevelValues, Option<String>)> {
    // Which file stands for the level is `LevelFile::open`'s choice; a packed one is
    // then read as a source, block by block in parallel.
    if let Some(LevelFile::Raw(l)) = LevelFile::open(dir, expect, Check::HeaderOnly)? {
        let problem = l.check_checksum().err().map(Error::into_problem);
        return Ok((LevelValues::Mapped(l), problem));
    }
    let source = LevelFile::open_stream_required(dir, expect, last)?;
    let mut values = level_memory(expect.seeds, expect.positions)?;
    let problem = source.read_all(&mut values)?;
    Ok((LevelValues::Owned(values), problem))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn level_ranges() {
        assert_eq!(parse_levels("0..=20"), Ok(0..=20));
        assert_eq!(parse_levels("3..7"), Ok(3..=6));
        assert_eq!(parse_levels(" 12 "), Ok(12..=12));
        assert!(parse_levels("5..=2")
            .unwrap_err()
            .contains("above the last"));
        assert!(parse_levels("0..0").unwrap_err().contains("empty"));
        assert!(parse_levels("a..=3")
            .unwrap_err()
            .contains("expected a range"));
        assert!(parse_levels("1-3")
            .unwrap_err()
            .contains("expected a range"));
    }
}
