//! Building a database: every level from 0 up, each solved from the finished levels
//! below it, written and checked, resuming where an earlier build stopped.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Instant;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::error::{Error, Result};
use crate::index::Index;
use crate::rules::Rules;
use crate::solve::{solve_level, LevelStats, Lower, PhaseTimes};
use crate::store::{LevelData, Values};
use crate::table::{level_path, Check, Expect, LevelWriter};

/// The folder of one database (rule set and board size) under a root folder, so that
/// databases never mix.
pub fn db_dir(root: &Path, rules: Rules, pits: usize) -> PathBuf {
    root.join(format!("{rules}-{pits}"))
}

/// The command that builds levels up to `seeds`, for error messages.
pub fn build_command(root: &Path, rules: Rules, pits: usize, seeds: usize) -> String {
    let mut cmd = format!("awari build --max-seeds {seeds}");
    if pits != 6 {
        cmd += &format!(" --pits {pits}");
    }
    if rules != Rules::Awari {
        cmd += &format!(" --rules {rules}");
    }
    if root != Path::new("db") && root != Path::new("./db") {
        cmd += &format!(" --dir {}", root.display());
    }
    cmd
}

/// What to build.
#[derive(Clone, Debug)]
pub struct BuildOptions {
    /// The root folder; levels go to `db_dir(root, rules, pits)`.
    pub root: PathBuf,
    pub rules: Rules,
    pub pits: usize,
    pub max_seeds: usize,
    /// Rebuild levels that are already complete.
    pub force: bool,
    /// Draw progress bars on stderr (when it is a terminal).
    pub progress: bool,
}

/// One line of the build report.
#[derive(Clone, Copy, Debug)]
pub struct LevelReport {
    pub seeds: usize,
    /// Found complete and valid, not rebuilt.
    pub skipped: bool,
    pub seconds: f64,
    /// Wall time of the solver's forward and backward passes (the rest is writing).
    pub phases: PhaseTimes,
    pub stats: LevelStats,
    /// Peak resident memory of the process so far, as the OS counts it (Linux only).
    pub peak_rss: Option<u64>,
}

/// The peak resident set size of this process in bytes (`VmHWM`), where the OS says.
pub fn peak_rss() -> Option<u64> {
    let status = fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// The finished levels of one database: raw ones memory-mapped, packed ones
/// decompressed whole (see [`crate::store`]).
pub struct Levels {
    levels: Vec<Values>,
}

impl Lower for Levels {
    #[inline]
    fn value(&self, seeds: usize, index: u64) -> i8 {
        self.levels[seeds].bytes()[index as usize] as i8
    }

    #[inline]
    fn prefetch(&self, seeds: usize, index: u64) {
        crate::solve::prefetch(&self.levels[seeds].bytes()[index as usize]);
    }
}

/// Expected header of level `n`.
pub fn expect(rules: Rules, index: &Index, n: usize) -> Expect {
    Expect {
        rules,
        pits: index.pits_per_side(),
        seeds: n,
        positions: index.level_size(n),
    }
}

/// Builds levels `0..=max_seeds`, calling `report` after each. Complete, valid levels are
/// kept; a damaged or unfinished one is rebuilt (`warn` says so).
pub fn build(
    opts: &BuildOptions,
    mut report: impl FnMut(&LevelReport),
    mut warn: impl FnMut(&str),
) -> Result<Vec<LevelReport>> {
    let index = Index::new(opts.pits, opts.max_seeds).map_err(Error::Input)?;
    let dir = db_dir(&opts.root, opts.rules, opts.pits);
    fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
    let mut done = Levels { levels: Vec::new() };
    let mut reports = Vec::new();
    for n in 0..=opts.max_seeds {
        let path = level_path(&dir, n);
        let want = expect(opts.rules, &index, n);
        // A raw level, else a packed one (decompressed whole, every block checked).
        let found = if opts.force {
            Ok(None)
        } else {
            LevelData::open(&dir, &want, Check::HeaderOnly).and_then(|l| {
                // A pack with the exit model is resolved against the levels below.
                let below: Vec<&[u8]> = done.levels.iter().map(Values::bytes).collect();
                l.map(|l| l.into_checked_values(&below)).transpose()
            })
        };
        match found {
            Ok(None) => {}
            Ok(Some(level)) => {
                let r = LevelReport {
                    seeds: n,
                    skipped: true,
                    seconds: 0.0,
                    phases: PhaseTimes::default(),
                    stats: LevelStats::of(level.bytes()),
                    peak_rss: peak_rss(),
                };
                report(&r);
                reports.push(r);
                done.levels.push(level);
                continue;
            }
            Err(e) => warn(&format!("rebuilding level {n}: {e}")),
        }
        let t0 = Instant::now();
        let (stats, phases) = build_level(opts, &index, n, &done, &path)?;
        let r = LevelReport {
            seeds: n,
            skipped: false,
            seconds: t0.elapsed().as_secs_f64(),
            phases,
            stats,
            peak_rss: peak_rss(),
        };
        report(&r);
        reports.push(r);
        done.levels.push(Values::Mapped(crate::table::Level::open(
            &path,
            &want,
            Check::HeaderOnly,
        )?));
    }
    Ok(reports)
}

/// A progress bar for one level on stderr (hidden unless `enabled`): phase, positions
/// done, rate and time left.
pub fn level_bar(enabled: bool, len: u64, n: usize, phase: &str) -> ProgressBar {
    if !enabled {
        return ProgressBar::hidden();
    }
    let pb = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
    pb.set_style(
        ProgressStyle::with_template(
            "level {prefix:>3} {msg:14} [{bar:30}] {human_pos}/{human_len} {per_sec} eta {eta}",
        )
        .unwrap()
        .progress_chars("=> "),
    );
    pb.set_prefix(n.to_string());
    pb.set_message(phase.to_string());
    pb
}

fn build_level(
    opts: &BuildOptions,
    index: &Index,
    n: usize,
    lower: &Levels,
    path: &Path,
) -> Result<(LevelStats, PhaseTimes)> {
    let size = index.level_size(n);
    // One bar: forward pass then settled positions (at most the level size).
    let pb = level_bar(opts.progress, size * 2, n, "solving");
    let (state, phases) = solve_level(opts.rules, index, n, lower, Some(&pb));
    pb.set_message("writing");
    pb.set_position(size * 2);
    let mut w = LevelWriter::create(path, opts.rules, opts.pits, n, size)?;
    let mut stats = LevelStats::default();
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
    pb.finish_and_clear();
    Ok((stats, phases))
}
