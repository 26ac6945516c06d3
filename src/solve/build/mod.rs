//! Building a database: every level from 0 up, each solved from the finished levels
//! below it, written and checked, resuming where an earlier build stopped. One driver
//! for a process alone and for the ranks of a distributed build: a process alone is a
//! partition of one rank ([`Solo`]) that writes whole level files; each rank of a build
//! over ranks writes its slices ([`Target::Slices`], DESIGN.md section 5.4), and every
//! decision that ranks must take alike goes through the [`Comm`]'s global sums.
//!
//! Each level is solved with one of two states (fast or compact, [`StateKind`]) and
//! reads its lower levels at random or as a stream ([`Lower`]), held by one resident set
//! ([`LevelStack`]); all ways write the same file. By default the build picks, per
//! level, the fastest way that fits the memory available (see
//! [`crate::solve::plan::way`]).

use std::cell::RefCell;
use std::fs;
use std::ops::Range;
use std::path::PathBuf;
use std::time::Instant;

use crate::db::checkpoint::{remove_checkpoints, CheckpointAt, SliceOf};
use crate::db::layout::{build_command, db_dir, slice, Expect};
use crate::db::lock::DirLock;
use crate::db::raw::Check;
use crate::db::stack::LevelStack;
use crate::db::store::{has_exit_model, LevelFile};
use crate::error::{Error, Result};
use crate::game::index::Index;
use crate::solve::comm::{Comm, Solo};
pub use crate::solve::level::{Lower, StateKind};
use crate::solve::level::{Outcomes, PhaseTimes};
pub use crate::solve::options::BuildOptions;
use crate::solve::plan::rates;
use crate::solve::plan::{check_build_fits, LevelMethod};
use crate::util::{cpu_seconds, peak_rss};

mod level;

/// The default [`BuildOptions::spill_from`]: 256 MiB of solver state (6 pits: levels 22
/// and up). Below it the lower levels and the state together are small, and the extra
/// write and read of the state would cost more than the memory saved.
pub const SPILL_FROM: u64 = crate::solve::plan::SPILL_FROM;

/// One line of the build report (of a rank's part of the level, over ranks).
#[derive(Clone, Copy, Debug)]
pub struct LevelReport {
    /// The level.
    pub seeds: usize,
    /// Positions of the whole level.
    pub positions: u64,
    /// Found complete and valid (over ranks: on every rank), not rebuilt.
    pub skipped: bool,
    /// Wall time spent on the level (0 when kept).
    pub seconds: f64,
    /// Wall time of the solver's forward and backward passes (the rest is gathering the
    /// values, counting outcomes and writing the file).
    pub phases: PhaseTimes,
    /// Positions won, drawn and lost by the side to move, of the positions this process
    /// holds (the whole level alone, its slice over ranks).
    pub stats: Outcomes,
    /// Peak resident memory of the process so far, as the OS counts it (Linux only).
    pub peak_rss: Option<u64>,
    /// The state and the reading of the lower levels the level was built with (`None`
    /// when kept).
    pub way: Option<LevelMethod>,
    /// Where the level resumed from a checkpoint an earlier build left (`None`: built
    /// from its start, or kept).
    pub resumed: Option<CheckpointAt>,
    /// Checkpoints written while building it.
    pub checkpoints: u32,
    /// CPU time of the process's threads on the level, where the OS says (0 when kept):
    /// well below `seconds` times the threads, other work had the cores.
    pub cpu_seconds: Option<f64>,
    /// Bytes this process sent to other ranks for the level (0 alone).
    pub bytes_sent: u64,
}

/// Where a build writes its levels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Target {
    /// Whole level files, raw or packed: a process alone.
    Levels,
    /// This rank's slice files, of a build over ranks.
    Slices(SliceOf),
}

/// Builds levels `0..=max_seeds`, calling `report` after each. Complete, valid levels are
/// kept; a damaged or unfinished one is rebuilt (`warn` says so). A rebuilt level is
/// written raw (or packed with [`BuildOptions::pack`]), and a file of that level in the
/// other form is then removed (`warn` says so too): it holds the old values, damaged
/// perhaps, and would be reported as if still in use.
pub fn build(
    opts: &BuildOptions,
    report: impl FnMut(&LevelReport),
    warn: impl FnMut(&str),
) -> Result<Vec<LevelReport>> {
    let index = opts.checked_index()?;
    let dir = db_dir(&opts.root, opts.rules, opts.pits);
    fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
    // One build per folder: a second one would write the same levels at once.
    let command = opts
        .command
        .clone()
        .unwrap_or_else(|| build_command(&opts.root, opts.rules, opts.pits, opts.max_seeds));
    let _lock = DirLock::acquire(&dir, &command)?;
    if opts.check {
        check_build_fits(&dir, &index, opts.max_seeds, opts.state, opts.pack)?;
    }
    build_levels(&Solo, opts, index, dir, Target::Levels, report, warn)
}

/// Builds levels `0..=opts.max_seeds` into `dir` as `target` says, every rank of `comm`
/// together: the one level loop of [`build`] and of a build over ranks.
pub(crate) fn build_levels<M: Comm>(
    comm: &M,
    opts: &BuildOptions,
    index: Index,
    dir: PathBuf,
    target: Target,
    mut report: impl FnMut(&LevelReport),
    warn: impl FnMut(&str),
) -> Result<Vec<LevelReport>> {
    let warn = RefCell::new(warn);
    let warn = |line: &str| (warn.borrow_mut())(line);
    let mut builder = Builder::new(comm, opts, index, dir, target, &warn)?;
    let mut reports = Vec::new();
    for n in 0..=opts.max_seeds {
        let r = builder.level(n)?;
        report(&r);
        // What `awari plan` extrapolates from, by every rank's threads; a level is no
        // worse for a lost line.
        let threads = comm.sum(rayon::current_num_threads() as u64) as usize;
        if let Some(rate) = rate_of(&r, threads, comm.size() > 1) {
            if comm.rank() == 0 {
                if let Err(e) = rates::append(&builder.dir, &rate) {
                    warn(&format!("level {n}'s rate not recorded: {}", e.one_line()));
                }
            }
        }
        reports.push(r);
    }
    Ok(reports)
}

/// A build's options, folder and target, and what it holds between levels.
pub(crate) struct Builder<'a, M: Comm> {
    comm: &'a M,
    opts: &'a BuildOptions,
    index: Index,
    dir: PathBuf,
    target: Target,
    /// The finished levels the next level reads (all of them, kept, when a level of the
    /// database is packed with the exit model).
    lower: LevelStack,
    warn: &'a dyn Fn(&str),
}

impl<'a, M: Comm> Builder<'a, M> {
    pub(crate) fn new(
        comm: &'a M,
        opts: &'a BuildOptions,
        index: Index,
        dir: PathBuf,
        target: Target,
        warn: &'a dyn Fn(&str),
    ) -> Result<Builder<'a, M>> {
        let (rules, pits) = (opts.rules, opts.pits);
        // A level packed with the exit model needs every level below in memory to be
        // read, so a database that has one keeps the finished levels (raw ones mapped,
        // packed ones decompressed); any other reads them from their files.
        let lower = match target {
            Target::Levels => LevelStack::new(&dir, rules, pits, has_exit_model(&dir))?,
            Target::Slices(part) => LevelStack::slices(&dir, rules, pits, part)?,
        };
        Ok(Builder {
            comm,
            opts,
            index,
            dir,
            target,
            lower,
            warn,
        })
    }

    /// Which part of each level this process writes.
    fn part(&self) -> SliceOf {
        match self.target {
            Target::Levels => SliceOf::WHOLE,
            Target::Slices(part) => part,
        }
    }

    /// The positions of level `n` this process holds.
    fn mine(&self, n: usize) -> Range<u64> {
        let part = self.part();
        slice(self.index.level_size(n), part.ranks, part.rank)
    }

    /// The number of positions of level `n` this process holds.
    fn held(&self, n: usize) -> u64 {
        let mine = self.mine(n);
        mine.end - mine.start
    }

    /// Level `n`: kept if complete and valid everywhere (unless forced), else built; its
    /// report.
    fn level(&mut self, n: usize) -> Result<LevelReport> {
        let (t0, cpu, sent) = (Instant::now(), cpu_seconds(), self.comm.bytes_sent());
        let part = self.part();
        let want = Expect::level(self.opts.rules, &self.index, n);
        let kept = if self.opts.force {
            // A forced build starts every level afresh.
            remove_checkpoints(&self.dir, n, part)?;
            Ok(None)
        } else {
            self.kept(n, &want)
        };
        let here = matches!(kept, Ok(Some(_)));
        let everywhere = self.comm.sum(here as u64) == self.comm.size() as u64;
        let report = |stats: Outcomes| LevelReport {
            seeds: n,
            positions: want.positions,
            skipped: true,
            seconds: 0.0,
            phases: PhaseTimes::default(),
            stats,
            peak_rss: peak_rss(),
            way: None,
            resumed: None,
            checkpoints: 0,
            cpu_seconds: Some(0.0),
            bytes_sent: 0,
        };
        match kept {
            Ok(Some(stats)) if everywhere => {
                // Left by a build stopped after writing the level.
                remove_checkpoints(&self.dir, n, part)?;
                return Ok(LevelReport {
                    seconds: t0.elapsed().as_secs_f64(),
                    bytes_sent: self.comm.bytes_sent() - sent,
                    ..report(stats)
                });
            }
            Err(e) => (self.warn)(&format!("rebuilding level {n}: {}", e.one_line())),
            _ => {}
        }
        let solved = self.build_level(n)?;
        Ok(LevelReport {
            skipped: false,
            seconds: t0.elapsed().as_secs_f64(),
            phases: solved.phases,
            way: Some(solved.way),
            resumed: solved.resumed,
            checkpoints: solved.checkpoints,
            cpu_seconds: cpu.zip(cpu_seconds()).map(|(a, b)| b - a),
            bytes_sent: self.comm.bytes_sent() - sent,
            ..report(solved.stats)
        })
    }

    /// This process's part of level `want.seeds` if it is in the folder complete and valid
    /// (every checksum checked, reading the file a piece at a time): its outcomes, or
    /// `None` if there is no file. The level's file is held for the levels above where
    /// they read it from here (a rank's slice; every level, with the exit model).
    fn kept(&mut self, n: usize, want: &Expect) -> Result<Option<Outcomes>> {
        let dir = &self.dir;
        if let Target::Slices(part) = self.target {
            let Some(file) = LevelFile::open_slice(dir, want, part)? else {
                return Ok(None);
            };
            let stats = Outcomes::of_parallel(&file.payload(&[])?);
            file.release();
            self.lower.hold_file(n, file);
            return Ok(Some(stats));
        }
        if self.lower.wants(n) {
            let Some(level) = LevelFile::open(dir, want, Check::HeaderOnly)? else {
                return Ok(None);
            };
            let values = level.into_checked_values(&self.lower.below(n))?;
            let stats = Outcomes::of(values.bytes());
            self.lower.offer(n, values);
            return Ok(Some(stats));
        }
        let Some(file) = LevelFile::open_stream(dir, want)? else {
            return Ok(None);
        };
        let mut stats = Outcomes::default();
        file.check_checksum_with(|piece| stats = stats.merge(Outcomes::of_parallel(piece)))?;
        Ok(Some(stats))
    }
}

/// What solving a level gave.
struct Solved {
    phases: PhaseTimes,
    stats: Outcomes,
    way: LevelMethod,
    resumed: Option<CheckpointAt>,
    checkpoints: u32,
}

/// The line of the rates file for a level built (`None` when kept, or resumed from a
/// checkpoint: its time is of a part of the level), by `threads` threads in all (of every
/// rank, `ranks`: then no process's peak memory or CPU time stands for the build's).
fn rate_of(r: &LevelReport, threads: usize, ranks: bool) -> Option<rates::LevelRate> {
    let way = r.way.filter(|_| r.resumed.is_none())?;
    Some(rates::LevelRate {
        seeds: r.seeds,
        positions: r.positions,
        threads,
        seconds: r.seconds,
        forward: r.phases.forward.as_secs_f64(),
        backward: r.phases.backward.as_secs_f64(),
        peak_rss: r.peak_rss.filter(|_| !ranks),
        cpu_seconds: r.cpu_seconds.filter(|_| !ranks),
        state: way.state,
        lower: way.lower,
        finished: rates::now_unix(),
    })
}

#[cfg(test)]
mod tests;
