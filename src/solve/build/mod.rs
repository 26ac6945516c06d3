//! Building a database: every level from 0 up, each solved from the finished levels
//! below it, written and checked, resuming where an earlier build stopped.
//!
//! Each level is solved with one of two states (fast or compact, [`StateKind`]) and
//! reads its lower levels at random or as a stream ([`Lower`]); all four ways write the
//! same file. By default the build picks, per level, the fastest way that fits the
//! memory available (see [`crate::solve::plan::way`]).

use std::cell::RefCell;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::db::checkpoint::{
    list_checkpoints, remove_checkpoints, Checkpoint, CheckpointAt, SliceOf,
};
use crate::db::layout::{build_command, db_dir, level_path, packed_path, Expect};
use crate::db::lock::DirLock;
use crate::db::model::Model;
use crate::db::pack::{pack_payload, PackOptions};
use crate::db::raw::{Check, LevelWriter};
use crate::db::source::{LevelSource, LowerSources};
use crate::db::store::{has_exit_model, LevelFile, LevelStack, LevelValues};
use crate::error::{Error, Result};
use crate::game::index::Index;
use crate::game::scan::lowest_captured_level;
use crate::solve::checkpoints::Checkpoints;
use crate::solve::comm::Solo;
#[cfg(test)]
use crate::solve::level::STRIPE_IN_TESTS;
use crate::solve::level::{
    backward_pass, forward_pass, forward_stream, Compact, Fast, Forwarded, Outcomes, Partition,
    PhaseTimes, Settle, Stage,
};
pub use crate::solve::level::{Lower, StateKind};
pub use crate::solve::options::BuildOptions;
use crate::solve::plan::rates;
use crate::solve::plan::{
    check_build_fits, check_level_fits, way, LevelMemory, LevelMethod, LowerHeld,
};
use crate::util::{cpu_seconds, memory_available, peak_rss, HugeBuf, LevelBar};
use lower::LowerInMemory;

mod lower;

/// The default [`BuildOptions::spill_from`]: 256 MiB of solver state (6 pits: levels 22
/// and up). Below it the lower levels and the state together are small, and the extra
/// write and read of the state would cost more than the memory saved.
pub const SPILL_FROM: u64 = crate::solve::plan::SPILL_FROM;

/// One line of the build report.
#[derive(Clone, Copy, Debug)]
pub struct LevelReport {
    /// The level.
    pub seeds: usize,
    /// Found complete and valid, not rebuilt.
    pub skipped: bool,
    /// Wall time spent on the level (0 when kept).
    pub seconds: f64,
    /// Wall time of the solver's forward and backward passes (the rest is gathering the
    /// values, counting outcomes and writing the file).
    pub phases: PhaseTimes,
    /// Positions won, drawn and lost by the side to move.
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
}

/// Builds levels `0..=max_seeds`, calling `report` after each. Complete, valid levels are
/// kept; a damaged or unfinished one is rebuilt (`warn` says so). A rebuilt level is
/// written raw (or packed with [`BuildOptions::pack`]), and a file of that level in the
/// other form is then removed (`warn` says so too): it holds the old values, damaged
/// perhaps, and would be reported as if still in use.
pub fn build(
    opts: &BuildOptions,
    mut report: impl FnMut(&LevelReport),
    warn: impl FnMut(&str),
) -> Result<Vec<LevelReport>> {
    let warn = RefCell::new(warn);
    let warn = |line: &str| (warn.borrow_mut())(line);
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
    // A level packed with the exit model needs every level below in memory to be read,
    // so a database that has one keeps the finished levels here as before (raw ones
    // mapped, packed ones decompressed); any other reads them from their files.
    let exits = has_exit_model(&dir);
    let mut builder = Builder {
        opts,
        done: LevelStack::new(&dir, opts.rules, opts.pits, exits)?,
        index,
        dir,
        lower: LowerInMemory::default(),
        warn: &warn,
    };
    let mut reports = Vec::new();
    for n in 0..=opts.max_seeds {
        let r = builder.level(n, exits)?;
        report(&r);
        // What `awari plan` extrapolates from; a level is no worse for a lost line.
        if let Some(rate) = rate_of(&r) {
            if let Err(e) = rates::append(&builder.dir, &rate) {
                warn(&format!("level {n}'s rate not recorded: {}", e.one_line()));
            }
        }
        reports.push(r);
    }
    Ok(reports)
}

/// Level `want.seeds` if it is in `dir` complete and valid (the raw file, else the packed
/// one; every checksum checked, reading the file a piece at a time): its outcomes, or
/// `None` if there is no file. With `exits` (a level of the database is packed with the
/// exit model), the level's values are also kept in `done`, which such a level needs.
fn keep_level(
    dir: &Path,
    want: &Expect,
    done: &mut LevelStack,
    exits: bool,
) -> Result<Option<Outcomes>> {
    let n = want.seeds;
    if exits {
        let Some(level) = LevelFile::open(dir, want, Check::HeaderOnly)? else {
            return Ok(None);
        };
        let values = level.into_checked_values(&done.below(n))?;
        let stats = Outcomes::of(values.bytes());
        done.offer(n, values);
        return Ok(Some(stats));
    }
    let Some(source) = LevelSource::open(dir, want)? else {
        return Ok(None);
    };
    let mut stats = Outcomes::default();
    source.check_checksum_with(|piece| stats = stats.merge(Outcomes::of_parallel(piece)))?;
    Ok(Some(stats))
}

/// What solving a level gave.
struct Solved {
    phases: PhaseTimes,
    stats: Outcomes,
    way: LevelMethod,
    resumed: Option<CheckpointAt>,
    checkpoints: u32,
}

/// A build in one process: its options and folder, and what it holds between levels.
struct Builder<'a> {
    opts: &'a BuildOptions,
    index: Index,
    dir: PathBuf,
    /// The lower levels a random forward pass reads.
    lower: LowerInMemory,
    /// The finished levels a level packed with the exit model needs (none otherwise).
    done: LevelStack,
    warn: &'a dyn Fn(&str),
}

impl Builder<'_> {
    /// Level `n`: kept if complete and valid (unless forced), else built; its report.
    fn level(&mut self, n: usize, exits: bool) -> Result<LevelReport> {
        let (opts, dir) = (self.opts, &self.dir);
        let want = Expect::level(opts.rules, &self.index, n);
        let kept = if opts.force {
            // A forced build starts every level afresh.
            remove_checkpoints(dir, n, SliceOf::WHOLE)?;
            Ok(None)
        } else {
            keep_level(dir, &want, &mut self.done, exits)
        };
        if let Ok(Some(stats)) = kept {
            // Left by a build stopped after writing the level.
            remove_checkpoints(dir, n, SliceOf::WHOLE)?;
            return Ok(LevelReport {
                seeds: n,
                skipped: true,
                seconds: 0.0,
                phases: PhaseTimes::default(),
                stats,
                peak_rss: peak_rss(),
                way: None,
                resumed: None,
                checkpoints: 0,
                cpu_seconds: Some(0.0),
            });
        }
        if let Err(e) = kept {
            (self.warn)(&format!("rebuilding level {n}: {}", e.one_line()));
        }
        let (t0, cpu) = (Instant::now(), cpu_seconds());
        let solved = self.build_level(n)?;
        Ok(LevelReport {
            seeds: n,
            skipped: false,
            seconds: t0.elapsed().as_secs_f64(),
            phases: solved.phases,
            stats: solved.stats,
            peak_rss: peak_rss(),
            way: Some(solved.way),
            resumed: solved.resumed,
            checkpoints: solved.checkpoints,
            cpu_seconds: cpu.zip(cpu_seconds()).map(|(a, b)| b - a),
        })
    }

    /// The checkpoints of level `n`, as this build writes and takes them up.
    fn checkpoints<'c>(&'c self, n: usize, bar: Option<&'c LevelBar>) -> Checkpoints<'c, Solo> {
        let size = self.index.level_size(n);
        Checkpoints {
            comm: &Solo,
            dir: &self.dir,
            rules: self.opts.rules,
            pits: self.opts.pits,
            n,
            size,
            mine: 0..size,
            every: self.opts.checkpoint_every,
            warn: self.warn,
            progress: bar,
            last: Instant::now(),
            written: 0,
            resumed: None,
            replacing: false,
        }
    }

    /// Builds level `n` into the folder and checks what it wrote: from the furthest
    /// checkpoint an earlier build left of it if there is a good one, else from its start.
    fn build_level(&mut self, n: usize) -> Result<Solved> {
        if let Some((solved, values)) = self.resume_level(n)? {
            self.finish_level(n, values, false)?;
            return Ok(solved);
        }
        let (opts, index) = (self.opts, &self.index);
        let size = index.level_size(n);
        let p = index.pits_per_side();
        let reach = lowest_captured_level(p, n)..n.saturating_sub(1);
        let lower_bytes: u64 = reach.clone().map(|m| index.level_size(m)).sum();
        let held = self.lower.held(&reach);
        let free = memory_available().map(|f| f + held);
        let fit = LevelMemory {
            seeds: n,
            positions: size,
            lower_bytes,
            free,
        };
        let way = way(&opts.ask(), &fit);
        let LevelMethod { state, lower } = way;
        let spill = lower == Lower::Random && state.bytes(size) >= opts.spill_from;
        match lower {
            // A stream holds no lower level.
            Lower::Stream => {
                self.lower.release();
                self.done.release();
            }
            // The forward pass reads levels up to n - 2 and the backward pass none, so a
            // spilled state lets level n - 1 go now rather than after the forward pass
            // (DESIGN.md section 5.2): its memory is not held beside the lower levels.
            Lower::Random if spill => self.lower.let_go(n.saturating_sub(1)),
            Lower::Random => {}
        }
        if opts.check {
            let random = lower == Lower::Random;
            let room = LowerHeld {
                lower: if random { lower_bytes } else { 0 },
                held: if random { held } else { 0 },
            };
            check_level_fits(&self.dir, n, size, state, spill, opts.pack, room)?;
        }
        if lower == Lower::Random {
            self.lower
                .fill(n, index, &self.dir, opts.rules, &self.done)?;
        }
        let (values, solved) = match state {
            StateKind::Fast => self.solve::<Fast>(n, lower, spill)?,
            StateKind::Compact => self.solve::<Compact>(n, lower, spill)?,
        };
        let solved = Solved { way, ..solved };
        self.finish_level(n, values, lower == Lower::Random)?;
        Ok(solved)
    }

    /// Level `n` taken up from the furthest good checkpoint of it in the folder, if any:
    /// what solving it gave, and its values ([`Checkpoints::take_up`] says which
    /// checkpoints are refused, and which kept for later).
    fn resume_level(&mut self, n: usize) -> Result<Option<(Solved, HugeBuf)>> {
        if list_checkpoints(&self.dir, n, SliceOf::WHOLE)?.is_empty() {
            return Ok(None);
        }
        let (opts, size) = (self.opts, self.index.level_size(n));
        let dir = self.dir.clone();
        let mut fits = |state: StateKind| {
            if !opts.check {
                return Ok(());
            }
            let room = LowerHeld { lower: 0, held: 0 };
            check_level_fits(&dir, n, size, state, false, opts.pack, room)
        };
        let mut checkpoints = self.checkpoints(n, None);
        let Some(checkpoint) = checkpoints.take_up(opts.state, &mut fits)? else {
            return Ok(None);
        };
        let state = StateKind::from_code(checkpoint.head.encoding).expect("checked on opening");
        // The backward pass reads no lower level.
        self.lower.release();
        self.done.release();
        let resumed = match state {
            StateKind::Fast => self.resume::<Fast>(n, checkpoint)?,
            StateKind::Compact => self.resume::<Compact>(n, checkpoint)?,
        };
        Ok(resumed.map(|(values, solved)| {
            let way = LevelMethod {
                state,
                lower: Lower::Stream,
            };
            (Solved { way, ..solved }, values)
        }))
    }

    /// Writes level `n`'s values to its file (raw, or packed with `--pack`), removes a
    /// stale file of the other form and the level's checkpoints, and keeps the values
    /// where the next levels read them (`done`; in memory if the lower levels are read at
    /// `random`).
    fn finish_level(&mut self, n: usize, values: HugeBuf, random: bool) -> Result<()> {
        let (opts, dir) = (self.opts, &self.dir);
        let (raw, packed) = (level_path(dir, n), packed_path(dir, n));
        let want = Expect::level(opts.rules, &self.index, n);
        let (written, stale) = if opts.pack {
            write_packed(opts, dir, &want, &values)?;
            (packed, raw)
        } else {
            write_level(opts, n, &raw, &values)?;
            (raw, packed)
        };
        remove_checkpoints(dir, n, SliceOf::WHOLE)?;
        if stale.exists() {
            fs::remove_file(&stale).map_err(|e| Error::io(&stale, e))?;
            (self.warn)(&format!(
                "removed the stale {} level {} (level {n} rebuilt as {})",
                if opts.pack { "raw" } else { "packed" },
                stale.display(),
                written.display()
            ));
        }
        if self.done.wants(n) {
            let level = LevelFile::open(dir, &want, Check::HeaderOnly)?
                .expect("the level just written is there");
            let values = match level {
                LevelFile::Raw(l) => LevelValues::Mapped(l),
                LevelFile::Packed(_) => LevelValues::copied(n, &values)?,
            };
            self.done.offer(n, values);
        }
        if random {
            self.lower.keep(n, values);
        }
        Ok(())
    }

    /// Solves level `n` with the state's encoding `E`, reading the lower levels as `lower`
    /// says: its values (in the state's memory), and what solving it gave.
    fn solve<E: Settle>(
        &mut self,
        n: usize,
        lower: Lower,
        spill: bool,
    ) -> Result<(HugeBuf, Solved)> {
        let (opts, index, dir) = (self.opts, &self.index, &self.dir);
        let size = index.level_size(n);
        // One bar: forward pass then settled positions (at most the level size).
        let bar = LevelBar::new(opts.progress, size * 2, n, "solving");
        let started = Instant::now();
        // The spill file has no name once open: nothing is left behind, even by a kill.
        let spill_path = level_path(dir, n).with_extension("spill");
        let mut spill_file = if spill {
            let file = fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(true)
                .open(&spill_path)
                .map_err(|e| Error::io(&spill_path, e))?;
            fs::remove_file(&spill_path).map_err(|e| Error::io(&spill_path, e))?;
            Some(file)
        } else {
            None
        };
        let io = |e| Error::io(&spill_path, e);
        let forwarded: Forwarded<E> = match lower {
            Lower::Random => {
                let below = self.lower.below(n);
                let f = forward_pass(opts.rules, index, n, &below[..], &bar, spill_file.as_mut())
                    .map_err(io)?;
                drop(below);
                if let Some(file) = &spill_file {
                    // The backward pass reads no lower level: the state has their memory.
                    self.lower.release();
                    self.done.release();
                    let mut f = f;
                    f.restore(file).map_err(io)?;
                    f
                } else {
                    f
                }
            }
            Lower::Stream => {
                // A level that `done` holds (packed with the exit model, resolved) is read
                // from memory.
                let first = lowest_captured_level(index.pits_per_side(), n);
                let done = &self.done;
                let held = |m| match done.get(m) {
                    Some(LevelValues::Owned(v)) => Some(&v[..]),
                    _ => None,
                };
                let levels = first..n.saturating_sub(1);
                let sources =
                    LowerSources::open(dir, opts.rules, index, levels, opts.max_seeds, held)?;
                let part = Partition {
                    comm: &Solo,
                    rules: opts.rules,
                    index,
                    n,
                    mine: 0..size,
                    progress: &bar,
                };
                forward_stream(&part, &sources)?
            }
        };
        let mut checkpoints = self.checkpoints(n, Some(&bar));
        checkpoints.last = started;
        let from = Stage::start(n);
        Ok(self.backward(n, forwarded, from, &bar, checkpoints))
    }

    /// Solves level `n` from `checkpoint` on, with its state's encoding `E`; `None` if its
    /// payload does not read whole (then the level starts afresh).
    fn resume<E: Settle>(
        &self,
        n: usize,
        checkpoint: Checkpoint,
    ) -> Result<Option<(HugeBuf, Solved)>> {
        let head = checkpoint.head;
        let size = self.index.level_size(n);
        let bar = LevelBar::new(self.opts.progress, size * 2, n, "resuming");
        let mut checkpoints = self.checkpoints(n, Some(&bar));
        checkpoints.resumed = Some(CheckpointAt {
            next: head.next,
            segment: head.segment,
        });
        let Some(state) = checkpoints.load::<E>(checkpoint)? else {
            return Ok(None);
        };
        let forwarded = Forwarded {
            state,
            present: head.present,
            forward: Duration::from_nanos(head.forward_ns),
        };
        let from = Stage::of_checkpoint(&head);
        bar.phase("solving", size);
        Ok(Some(self.backward(n, forwarded, from, &bar, checkpoints)))
    }

    /// The backward pass of level `n` from `from`, saving the state as `checkpoints` says:
    /// the values, and what solving gave.
    fn backward<E: Settle>(
        &self,
        n: usize,
        forwarded: Forwarded<E>,
        from: Stage,
        bar: &LevelBar,
        mut checkpoints: Checkpoints<'_, Solo>,
    ) -> (HugeBuf, Solved) {
        let part = Partition {
            comm: &Solo,
            rules: self.opts.rules,
            index: &self.index,
            n,
            mine: 0..self.index.level_size(n),
            progress: bar,
        };
        let Forwarded {
            state,
            present,
            forward,
        } = forwarded;
        let (state, phases) = backward_pass(&part, state, present, forward, from, &mut checkpoints);
        let values = state.into_values();
        let stats = Outcomes::of_parallel(&values);
        bar.finish();
        let solved = Solved {
            phases,
            stats,
            way: LevelMethod {
                state: E::KIND,
                lower: Lower::Stream,
            },
            resumed: checkpoints.resumed,
            checkpoints: checkpoints.written,
        };
        (values, solved)
    }
}

/// The line of the rates file for a level built (`None` when kept, or resumed from a
/// checkpoint: its time is of a part of the level), by the threads of the pool the build
/// runs on.
fn rate_of(r: &LevelReport) -> Option<rates::LevelRate> {
    let way = r.way.filter(|_| r.resumed.is_none())?;
    Some(rates::LevelRate {
        seeds: r.seeds,
        positions: r.stats.positions,
        threads: rayon::current_num_threads(),
        seconds: r.seconds,
        forward: r.phases.forward.as_secs_f64(),
        backward: r.phases.backward.as_secs_f64(),
        peak_rss: r.peak_rss,
        cpu_seconds: r.cpu_seconds,
        state: way.state,
        lower: way.lower,
        finished: rates::now_unix(),
    })
}

/// Writes level `n`'s file (section 4.3 of DESIGN.md).
fn write_level(opts: &BuildOptions, n: usize, path: &Path, values: &[u8]) -> Result<()> {
    let mut w = LevelWriter::create(path, opts.rules, opts.pits, n, values.len() as u64)?;
    w.write(values)?;
    w.finish().map(|_| ())
}

/// Writes level `want.seeds` into `dir` packed with the plain model (section 6), then
/// reads it back a block at a time, every block and the payload checksum checked.
fn write_packed(opts: &BuildOptions, dir: &Path, want: &Expect, values: &[u8]) -> Result<()> {
    let pack = PackOptions {
        model: Model::Plain,
        ..PackOptions::default()
    };
    let path = packed_path(dir, want.seeds);
    pack_payload(&path, opts.rules, opts.pits, want.seeds, values, &pack, &[])?;
    LevelSource::open_packed(dir, want)?.check_checksum_with(|_| {})
}

#[cfg(test)]
mod tests;
