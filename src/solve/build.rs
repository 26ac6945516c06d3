//! Building a database: every level from 0 up, each solved from the finished levels
//! below it, written and checked, resuming where an earlier build stopped.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::db::layout::{db_dir, level_path, Expect};
use crate::db::raw::{Check, LevelWriter, RawLevel};
use crate::db::store::{LevelFile, LevelStack, Values};
use crate::error::{Error, Result};
use crate::game::index::Index;
use crate::game::rules::Rules;
use crate::solve::level::{solve_level, Outcomes, PhaseTimes};
use crate::util::{peak_rss, LevelBar};

/// What to build.
#[derive(Clone, Debug)]
pub struct BuildOptions {
    /// The root folder; levels go to `<root>/<rules>-<pits>/`.
    pub root: PathBuf,
    /// The rule set.
    pub rules: Rules,
    /// Pits per side.
    pub pits: usize,
    /// The highest level to build: levels `0..=max_seeds`.
    pub max_seeds: usize,
    /// Rebuild levels that are already complete.
    pub force: bool,
    /// Draw progress bars on stderr (when it is a terminal).
    pub progress: bool,
}

/// One line of the build report.
#[derive(Clone, Copy, Debug)]
pub struct LevelReport {
    /// The level.
    pub seeds: usize,
    /// Found complete and valid, not rebuilt.
    pub skipped: bool,
    /// Wall time spent on the level (0 when kept).
    pub seconds: f64,
    /// Wall time of the solver's forward and backward passes (the rest is writing).
    pub phases: PhaseTimes,
    /// Positions won, drawn and lost by the side to move.
    pub stats: Outcomes,
    /// Peak resident memory of the process so far, as the OS counts it (Linux only).
    pub peak_rss: Option<u64>,
}

/// Builds levels `0..=max_seeds`, calling `report` after each. Complete, valid levels are
/// kept; a damaged or unfinished one is rebuilt (`warn` says so).
pub fn build(
    opts: &BuildOptions,
    mut report: impl FnMut(&LevelReport),
    mut warn: impl FnMut(&str),
) -> Result<Vec<LevelReport>> {
    let index = Index::new(opts.pits, opts.max_seeds)?;
    let dir = db_dir(&opts.root, opts.rules, opts.pits);
    fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
    // The finished levels: raw ones mapped, packed ones decompressed whole.
    let mut done = LevelStack::new(&dir, opts.rules, opts.pits, true)?;
    let mut reports = Vec::new();
    for n in 0..=opts.max_seeds {
        let path = level_path(&dir, n);
        let want = Expect::level(opts.rules, &index, n);
        // A raw level, else a packed one (decompressed whole, every block checked).
        let found = if opts.force {
            Ok(None)
        } else {
            LevelFile::open(&dir, &want, Check::HeaderOnly).and_then(|l| {
                // A pack with the exit model is resolved against the levels below.
                l.map(|l| l.into_checked_values(&done.below(n))).transpose()
            })
        };
        let mut r = match found {
            Ok(Some(level)) => {
                let r = LevelReport {
                    seeds: n,
                    skipped: true,
                    seconds: 0.0,
                    phases: PhaseTimes::default(),
                    stats: Outcomes::of(level.bytes()),
                    peak_rss: None,
                };
                done.offer(n, level);
                r
            }
            found => {
                if let Err(e) = found {
                    warn(&format!("rebuilding level {n}: {}", e.one_line()));
                }
                let t0 = Instant::now();
                let (stats, phases) = build_level(opts, &index, n, &done.below(n), &path)?;
                done.offer(
                    n,
                    Values::Mapped(RawLevel::open(&path, &want, Check::HeaderOnly)?),
                );
                LevelReport {
                    seeds: n,
                    skipped: false,
                    seconds: t0.elapsed().as_secs_f64(),
                    phases,
                    stats,
                    peak_rss: None,
                }
            }
        };
        r.peak_rss = peak_rss();
        report(&r);
        reports.push(r);
    }
    Ok(reports)
}

fn build_level(
    opts: &BuildOptions,
    index: &Index,
    n: usize,
    lower: &[&[u8]],
    path: &Path,
) -> Result<(Outcomes, PhaseTimes)> {
    let size = index.level_size(n);
    // One bar: forward pass then settled positions (at most the level size).
    let bar = LevelBar::new(opts.progress, size * 2, n, "solving");
    let (state, phases) = solve_level(opts.rules, index, n, lower, &bar);
    bar.phase("writing", size * 2);
    let mut w = LevelWriter::create(path, opts.rules, opts.pits, n, size)?;
    let mut stats = Outcomes::default();
    let mut buf = Vec::with_capacity(1 << 20);
    for start in (0..state.len()).step_by(1 << 20) {
        buf.clear();
        for i in start..(start + (1 << 20)).min(state.len()) {
            let v = state.final_value(i);
            stats.add(v);
            buf.push(v as u8);
        }
        w.write(&buf)?;
    }
    drop(state);
    w.finish()?;
    bar.finish();
    Ok((stats, phases))
}
