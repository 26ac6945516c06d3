//! Building a database: every level from 0 up, each solved from the finished levels
//! below it, written and checked, resuming where an earlier build stopped.
//!
//! Each level is solved with one of two states (fast or compact, [`StateKind`]) and
//! reads its lower levels at random or as a stream ([`Lower`]); all four ways write the
//! same file. By default the build picks, per level, the fastest way that fits the
//! memory available (see [`crate::solve::plan::way`]).

use std::fs::{self, File};
use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

use crate::db::checkpoint::{
    checkpoint_need, checkpoint_path, checkpoint_room, list_checkpoints, remove_checkpoints,
    Checkpoint, CheckpointHeader, CheckpointRoom, Part,
};
use crate::db::layout::{build_command, db_dir, level_path, packed_path, Expect};
use crate::db::lock::DirLock;
use crate::db::model::Model;
use crate::db::pack::{pack_payload, PackOptions};
use crate::db::raw::{Check, LevelWriter};
use crate::db::source::{LevelSource, LowerSources};
use crate::db::store::{has_exit_model, LevelFile, LevelStack, Values};
use crate::error::{Error, Result};
use crate::game::index::Index;
use crate::game::rules::Rules;
use crate::game::scan::lowest_captured_level;
#[cfg(test)]
use crate::solve::level::STRIPE_IN_TESTS;
use crate::solve::level::{
    backward_pass, forward_pass, forward_stream, Compact, Encoding, Fast, Forwarded, Outcomes,
    PhaseTimes, Stage, State,
};
pub use crate::solve::level::{Lower, StateKind};
pub use crate::solve::options::BuildOptions;
use crate::solve::plan::rates;
use crate::solve::plan::{
    check_build_fits, check_level_fits, way, LevelMemory, LevelMethod, LowerHeld,
};
use crate::util::{bytes, clock_utc, cpu_seconds, memory_available, peak_rss, HugeBuf, LevelBar};

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
    /// The threshold the level resumed at from a checkpoint an earlier build left
    /// (`None`: built from its start, or kept).
    pub resumed: Option<u8>,
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
    mut warn: impl FnMut(&str),
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
    // A level packed with the exit model needs every level below in memory to be read,
    // so a database that has one keeps the finished levels here as before (raw ones
    // mapped, packed ones decompressed); any other reads them from their files.
    let exits = has_exit_model(&dir);
    let mut done = LevelStack::new(&dir, opts.rules, opts.pits, exits)?;
    // The lower levels a random forward pass reads, in memory.
    let mut hot = Hot::default();
    let mut reports = Vec::new();
    for n in 0..=opts.max_seeds {
        let want = Expect::level(opts.rules, &index, n);
        let kept = if opts.force {
            // A forced build starts every level afresh.
            remove_checkpoints(&dir, n, Part::WHOLE)?;
            Ok(None)
        } else {
            keep_level(&dir, &want, &mut done, exits)
        };
        let r = match kept {
            Ok(Some(stats)) => {
                // Left by a build stopped after writing the level.
                remove_checkpoints(&dir, n, Part::WHOLE)?;
                LevelReport {
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
                }
            }
            kept => {
                if let Err(e) = kept {
                    warn(&format!("rebuilding level {n}: {}", e.one_line()));
                }
                let (t0, cpu) = (Instant::now(), cpu_seconds());
                let solved = build_level(opts, &index, n, &dir, &mut hot, &mut done, &mut warn)?;
                LevelReport {
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
                }
            }
        };
        report(&r);
        // What `awari plan` extrapolates from; a level is no worse for a lost line.
        if let Some(rate) = rate_of(&r) {
            if let Err(e) = rates::append(&dir, &rate) {
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
    resumed: Option<u8>,
    checkpoints: u32,
}

/// Builds level `n` into `dir` and checks what it wrote: from the last checkpoint an
/// earlier build left of it if there is a good one, else from its start.
fn build_level(
    opts: &BuildOptions,
    index: &Index,
    n: usize,
    dir: &Path,
    hot: &mut Hot,
    done: &mut LevelStack,
    warn: &mut impl FnMut(&str),
) -> Result<Solved> {
    if let Some((solved, values)) = resume_level(opts, index, n, dir, hot, done, warn)? {
        finish_level(opts, index, n, dir, hot, done, values, false, warn)?;
        return Ok(solved);
    }
    let size = index.level_size(n);
    let p = index.pits_per_side();
    let reach = lowest_captured_level(p, n)..n.saturating_sub(1);
    let lower_bytes: u64 = reach.clone().map(|m| index.level_size(m)).sum();
    let held = hot.held(&reach);
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
            hot.release();
            done.release();
        }
        // The forward pass reads levels up to n - 2 and the backward pass none, so a
        // spilled state lets level n - 1 go now rather than after the forward pass
        // (DESIGN.md section 5.2): its memory is not held beside the lower levels.
        Lower::Random if spill => hot.let_go(n.saturating_sub(1)),
        Lower::Random => {}
    }
    if opts.check {
        let room = LowerHeld {
            lower: if lower == Lower::Random {
                lower_bytes
            } else {
                0
            },
            held: if lower == Lower::Random { held } else { 0 },
        };
        check_level_fits(dir, n, size, state, spill, opts.pack, room)?;
    }
    if lower == Lower::Random {
        hot.fill(n, index, dir, opts.rules, done)?;
    }
    let level = Level {
        opts,
        index,
        n,
        dir,
    };
    let (values, solved) = match state {
        StateKind::Fast => level.solve::<Fast>(hot, done, lower, spill, warn)?,
        StateKind::Compact => level.solve::<Compact>(hot, done, lower, spill, warn)?,
    };
    let solved = Solved { way, ..solved };
    let random = lower == Lower::Random;
    finish_level(opts, index, n, dir, hot, done, values, random, warn)?;
    Ok(solved)
}

/// Level `n` resumed from the furthest checkpoint of it in `dir` that is good, if any:
/// what solving it gave, and its values. A checkpoint that is damaged, truncated, of
/// another database, or of another state than `--state` asks is refused (`warn` says
/// why) and removed; one whose state does not fit the memory now is left for later.
fn resume_level(
    opts: &BuildOptions,
    index: &Index,
    n: usize,
    dir: &Path,
    hot: &mut Hot,
    done: &mut LevelStack,
    warn: &mut impl FnMut(&str),
) -> Result<Option<(Solved, HugeBuf)>> {
    let found = list_checkpoints(dir, n, Part::WHOLE)?;
    if found.is_empty() {
        return Ok(None);
    }
    let size = index.level_size(n);
    let level = Level {
        opts,
        index,
        n,
        dir,
    };
    let want = level.header(0, PhaseTimes::default());
    for (_, path) in found {
        let refuse = |why: String, warn: &mut dyn FnMut(&str)| -> Result<()> {
            warn(&format!(
                "level {n}: checkpoint {} refused ({why}); the level starts afresh",
                path.display()
            ));
            fs::remove_file(&path).map_err(|e| Error::io(&path, e))
        };
        let checkpoint = match Checkpoint::open(&path, &want) {
            Ok(c) => c,
            Err(e) => {
                refuse(e.one_line(), warn)?;
                continue;
            }
        };
        let state = StateKind::from_code(checkpoint.head.encoding).expect("checked on opening");
        if let Some(asked) = opts.state.filter(|&k| k != state) {
            let why = format!(
                "it holds the {} state, --state {} asked",
                state.name(),
                asked.name()
            );
            refuse(why, warn)?;
            continue;
        }
        // The backward pass reads no lower level.
        hot.release();
        done.release();
        if opts.check {
            let room = LowerHeld { lower: 0, held: 0 };
            if let Err(e) = check_level_fits(dir, n, size, state, false, opts.pack, room) {
                warn(&format!(
                    "level {n}: checkpoint {} not used now ({})",
                    path.display(),
                    e.one_line()
                ));
                return Ok(None);
            }
        }
        let resumed = match state {
            StateKind::Fast => level.resume::<Fast>(checkpoint, warn),
            StateKind::Compact => level.resume::<Compact>(checkpoint, warn),
        };
        match resumed {
            Ok((values, solved)) => {
                let way = LevelMethod {
                    state,
                    lower: Lower::Stream,
                };
                return Ok(Some((Solved { way, ..solved }, values)));
            }
            // The payload's checksum, read only now.
            Err(e @ Error::Format { .. }) => refuse(e.one_line(), warn)?,
            Err(e) => return Err(e),
        }
    }
    Ok(None)
}

/// Writes level `n`'s values to its file in `dir` (raw, or packed with `--pack`), removes
/// a stale file of the other form and the level's checkpoints, and keeps the values
/// where the next levels read them (`done`; `hot` if the lower levels are read at
/// `random`).
#[allow(clippy::too_many_arguments)]
fn finish_level(
    opts: &BuildOptions,
    index: &Index,
    n: usize,
    dir: &Path,
    hot: &mut Hot,
    done: &mut LevelStack,
    values: HugeBuf,
    random: bool,
    warn: &mut impl FnMut(&str),
) -> Result<()> {
    let (raw, packed) = (level_path(dir, n), packed_path(dir, n));
    let want = Expect::level(opts.rules, index, n);
    let (written, stale) = if opts.pack {
        write_packed(opts, dir, &want, &values)?;
        (packed, raw)
    } else {
        write_level(opts, n, &raw, &values)?;
        (raw, packed)
    };
    remove_checkpoints(dir, n, Part::WHOLE)?;
    if stale.exists() {
        fs::remove_file(&stale).map_err(|e| Error::io(&stale, e))?;
        warn(&format!(
            "removed the stale {} level {} (level {n} rebuilt as {})",
            if opts.pack { "raw" } else { "packed" },
            stale.display(),
            written.display()
        ));
    }
    if done.wants(n) {
        let level = LevelFile::open(dir, &want, Check::HeaderOnly)?
            .expect("the level just written is there");
        let values = match level {
            LevelFile::Raw(l) => Values::Mapped(l),
            LevelFile::Packed(_) => Values::Owned(values.to_vec().into_boxed_slice()),
        };
        done.offer(n, values);
    }
    if random {
        hot.keep(n, values);
    }
    Ok(())
}

/// The level being solved, and where.
struct Level<'a> {
    opts: &'a BuildOptions,
    index: &'a Index,
    n: usize,
    dir: &'a Path,
}

impl Level<'_> {
    /// Solves the level with the state's encoding `E`, reading the lower levels as `lower`
    /// says: its values (in the state's memory), and what solving it gave.
    fn solve<E: Encoding>(
        &self,
        hot: &mut Hot,
        done: &LevelStack,
        lower: Lower,
        spill: bool,
        warn: &mut impl FnMut(&str),
    ) -> Result<(HugeBuf, Solved)> {
        let (opts, index, n, dir) = (self.opts, self.index, self.n, self.dir);
        let started = Instant::now();
        let size = index.level_size(n);
        // One bar: forward pass then settled positions (at most the level size).
        let bar = LevelBar::new(opts.progress, size * 2, n, "solving");
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
                let below = hot.below(n);
                let f = forward_pass(opts.rules, index, n, &below[..], &bar, spill_file.as_mut())
                    .map_err(io)?;
                drop(below);
                if spill {
                    // The backward pass reads no lower level: the state has their memory.
                    hot.release();
                    done.release();
                }
                f
            }
            Lower::Stream => {
                // A level that `done` holds (packed with the exit model, resolved) is read
                // from memory.
                let first = lowest_captured_level(index.pits_per_side(), n);
                let held = |m| match done.get(m) {
                    Some(Values::Owned(v)) => Some(&v[..]),
                    _ => None,
                };
                let levels = first..n.saturating_sub(1);
                let sources =
                    LowerSources::open(dir, opts.rules, index, levels, opts.max_seeds, held)?;
                forward_stream(opts.rules, index, n, &sources, &bar)?
            }
        };
        let from = Stage::start(n);
        self.backward(forwarded, &bar, spill_file.as_mut(), from, started, warn)
    }

    /// Solves the level from `checkpoint` on, with its state's encoding `E`.
    fn resume<E: Encoding>(
        &self,
        checkpoint: Checkpoint,
        warn: &mut impl FnMut(&str),
    ) -> Result<(HugeBuf, Solved)> {
        let started = Instant::now();
        let head = checkpoint.head;
        let size = self.index.level_size(self.n);
        let bar = LevelBar::new(self.opts.progress, size * 2, self.n, "resuming");
        let state = State::<E>::load(checkpoint)?;
        let forward = Duration::from_nanos(head.forward_ns);
        let forwarded = Forwarded::resumed(state, head.present, forward);
        let from = Stage {
            next: head.next as i8,
            backward: Duration::from_nanos(head.backward_ns),
        };
        bar.phase("solving", size);
        let (values, solved) = self.backward(forwarded, &bar, None, from, started, warn)?;
        let solved = Solved {
            resumed: Some(head.next),
            ..solved
        };
        Ok((values, solved))
    }

    /// The backward pass from `from` (the level's work began at `started`), saving the
    /// state between thresholds as [`BuildOptions::checkpoint_every`] says: the values,
    /// and what solving gave.
    fn backward<E: Encoding>(
        &self,
        forwarded: Forwarded<E>,
        bar: &LevelBar,
        spill: Option<&mut File>,
        from: Stage,
        started: Instant,
        warn: &mut impl FnMut(&str),
    ) -> Result<(HugeBuf, Solved)> {
        let n = self.n;
        let mut last = started;
        let mut checkpoints = 0;
        // Whether the disk holds one checkpoint only (said once).
        let mut replacing = false;
        let mut boundary = |state: &mut State<E>, stage: Stage, present: u64, t: PhaseTimes| {
            match self.opts.checkpoint_every {
                Some(every) if last.elapsed() >= every => {}
                _ => return,
            }
            let next = stage.next as u8;
            // The level's file must still fit after it: a checkpoint is a safety net, not
            // worth the level.
            let size = self.index.level_size(n);
            let need = checkpoint_need(E::KIND.bytes(size), size);
            let mut save = || -> Result<bool> {
                let mut older = list_checkpoints(self.dir, n, Part::WHOLE)?;
                match checkpoint_room(self.dir, &older, need) {
                    CheckpointRoom::Beside => {}
                    CheckpointRoom::Short { free, need } => {
                        warn(&no_room(n, free, need));
                        return Ok(false);
                    }
                    CheckpointRoom::Instead { free, need } => {
                        // The older goes first. A stop while the new one is written then
                        // loses both, and the level starts afresh.
                        if !replacing {
                            warn(&one_at_a_time(n, free, need));
                            replacing = true;
                        }
                        for (_, p) in older.drain(..) {
                            fs::remove_file(&p).map_err(|e| Error::io(&p, e))?;
                        }
                    }
                }
                let path = checkpoint_path(self.dir, n, next, Part::WHOLE);
                let head = CheckpointHeader {
                    present,
                    ..self.header(next, t)
                };
                state.save(&path, head)?;
                // The one before, now that this one is whole.
                for (t, p) in older {
                    if t > next {
                        fs::remove_file(&p).map_err(|e| Error::io(&p, e))?;
                    }
                }
                Ok(true)
            };
            match save() {
                Ok(true) => {
                    checkpoints += 1;
                    let at = clock_utc(SystemTime::now());
                    bar.note(&format!("solving, saved {at} at threshold {next}"));
                }
                Ok(false) => {}
                // A build that cannot save goes on: only its safety net is lost.
                Err(e) => warn(&not_written(n, &e)),
            }
            last = Instant::now();
        };
        let spill_path = level_path(self.dir, n).with_extension("spill");
        let (state, phases): (State<E>, _) = backward_pass(
            self.opts.rules,
            self.index,
            n,
            forwarded,
            bar,
            spill,
            from,
            &mut boundary,
        )
        .map_err(|e| Error::io(&spill_path, e))?;
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
            resumed: None,
            checkpoints,
        };
        Ok((values, solved))
    }

    /// The header of a checkpoint of the whole level after threshold `next + 1` at the
    /// times `t`; [`State::save`] fills in the state's fields, the caller the thresholds
    /// present.
    fn header(&self, next: u8, t: PhaseTimes) -> CheckpointHeader {
        let (opts, size) = (self.opts, self.index.level_size(self.n));
        CheckpointHeader {
            next,
            forward_ns: t.forward.as_nanos() as u64,
            backward_ns: t.backward.as_nanos() as u64,
            ..CheckpointHeader::new(opts.rules, opts.pits, self.n, size, Part::WHOLE, 0..size)
        }
    }
}

/// The finished levels a random forward pass reads, in anonymous memory in huge pages: a
/// level just built keeps the memory its solver state had ([`State::into_values`]); one
/// found on disk is read into such memory from its file (raw, or packed and decompressed)
/// the first time a level needs it. Through the files' maps (4 KiB pages) nearly every
/// random read of a lower level also missed the TLB. A level whose state spills lets the
/// level below it go before its forward pass (which reads levels up to two below) and all
/// the others after it; the next level reads them again.
#[derive(Default)]
struct Hot {
    /// Level `m`, or `None` when not held.
    levels: Vec<Option<HugeBuf>>,
}

impl Hot {
    /// Holds every level that level `n` reads (from the lowest a capture reaches to `n -
    /// 2`), from the files in `dir`, or from `done` for a level it holds decompressed;
    /// lets go of the levels below those.
    fn fill(
        &mut self,
        n: usize,
        index: &Index,
        dir: &Path,
        rules: Rules,
        done: &LevelStack,
    ) -> Result<()> {
        let first = lowest_captured_level(index.pits_per_side(), n);
        self.levels.resize_with(self.levels.len().max(n), || None);
        for m in 0..first {
            self.levels[m] = None;
        }
        for m in first..n.saturating_sub(1) {
            if self.levels[m].is_some() {
                continue;
            }
            let len = index.level_size(m) as usize;
            let mut buf = HugeBuf::zeroed(len).map_err(|e| {
                Error::Resources(format!("cannot allocate {len} bytes for level {m}: {e}"))
            })?;
            match done.get(m) {
                Some(Values::Owned(v)) => buf.copy_from_slice(v),
                _ => {
                    let want = Expect::level(rules, index, m);
                    LevelSource::open_required(dir, &want, index.max_seeds())?
                        .read_parallel(&mut buf)?
                }
            }
            self.levels[m] = Some(buf);
        }
        Ok(())
    }

    /// The values of the levels below `n` as a random forward pass reads them: the
    /// levels held, and empty slices for the others, which it never reads.
    fn below(&self, n: usize) -> Vec<&[u8]> {
        (0..n)
            .map(|m| match self.levels.get(m) {
                Some(Some(buf)) => &buf[..],
                _ => &[][..],
            })
            .collect()
    }

    /// Holds the values of level `n`, just built.
    fn keep(&mut self, n: usize, values: HugeBuf) {
        self.levels
            .resize_with(self.levels.len().max(n + 1), || None);
        self.levels[n] = Some(values);
    }

    /// Bytes held of the levels `range`.
    fn held(&self, range: &std::ops::Range<usize>) -> u64 {
        range
            .clone()
            .filter_map(|m| self.levels.get(m)?.as_ref())
            .map(|b| b.len() as u64)
            .sum()
    }

    /// Lets level `m` go, if held.
    fn let_go(&mut self, m: usize) {
        if let Some(level) = self.levels.get_mut(m) {
            *level = None;
        }
    }

    /// Lets every level go.
    fn release(&mut self) {
        self.levels.iter_mut().for_each(|l| *l = None);
    }
}

/// The warning of a level whose disk holds one checkpoint at a time: `free` bytes free,
/// `need` needed for a second checkpoint and the level's file.
pub(crate) fn one_at_a_time(n: usize, free: u64, need: u64) -> String {
    format!(
        "level {n}: room for one checkpoint only ({} free, {} needed for a second and the \
         level): each is removed before the next is written",
        bytes(free),
        bytes(need)
    )
}

/// The warning of a level whose checkpoint does not fit beside its file: `free` bytes
/// free, `need` needed.
pub(crate) fn no_room(n: usize, free: u64, need: u64) -> String {
    format!(
        "level {n}: checkpoint skipped: it and the level need {}, {} is free",
        bytes(need),
        bytes(free)
    )
}

/// The warning of a level whose checkpoint could not be written: the build goes on.
pub(crate) fn not_written(n: usize, e: &Error) -> String {
    format!(
        "level {n}: checkpoint not written ({}); the build goes on",
        e.one_line()
    )
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
mod tests {
    use super::*;
    use crate::db::pack::{pack_payload, PackOptions};

    fn opts(root: &Path, max_seeds: usize, force: bool) -> BuildOptions {
        BuildOptions::new(root, Rules::Awari, 3, max_seeds).force(force)
    }

    /// Builds, collecting the warnings.
    fn build_warned(opts: &BuildOptions) -> (Vec<LevelReport>, Vec<String>) {
        let mut warnings = Vec::new();
        let reports = build(opts, |_| {}, |w| warnings.push(w.to_string())).unwrap();
        (reports, warnings)
    }

    /// A spilled state (in stripes of two chunks under test) and the lower levels let go
    /// before the backward pass give the same files as a build in memory, under both
    /// rule sets, and leave no spill file behind.
    #[test]
    fn spilling_the_state_changes_no_byte() {
        for rules in [Rules::Awari, Rules::Oware] {
            let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
            let c = tempfile::tempdir().unwrap();
            let run = |root: &Path, spill_from: u64, state: StateKind| {
                let o = BuildOptions::new(root, rules, 4, 16)
                    .spill_from(spill_from)
                    .state(state)
                    .lower(Lower::Random);
                build_warned(&o)
            };
            run(a.path(), u64::MAX, StateKind::Fast);
            run(b.path(), 0, StateKind::Fast);
            run(c.path(), 0, StateKind::Compact);
            let (da, db) = (db_dir(a.path(), rules, 4), db_dir(b.path(), rules, 4));
            let dc = db_dir(c.path(), rules, 4);
            for n in 0..=16 {
                let (x, y) = (level_path(&da, n), level_path(&dc, n));
                assert_eq!(
                    fs::read(&x).unwrap(),
                    fs::read(&y).unwrap(),
                    "{rules} level {n}"
                );
            }
            // Level 16 spans several stripes.
            assert!(Index::new(4, 16).unwrap().level_size(16) > 3 * STRIPE_IN_TESTS);
            for n in 0..=16 {
                let (x, y) = (level_path(&da, n), level_path(&db, n));
                assert_eq!(
                    fs::read(&x).unwrap(),
                    fs::read(&y).unwrap(),
                    "{rules} level {n}"
                );
            }
            let names: Vec<_> = fs::read_dir(&db)
                .unwrap()
                .map(|e| e.unwrap().file_name().into_string().unwrap())
                .filter(|f| !f.ends_with(".awl") && !f.starts_with(".lock") && f != "rates.csv")
                .collect();
            assert!(names.is_empty(), "left behind: {names:?}");
        }
    }

    /// A level built over a lower level that is only packed (exit model, decompressed and
    /// resolved into memory, not copied into huge pages) and over raw levels read back from
    /// disk is the level a build from scratch writes.
    #[test]
    fn building_over_a_packed_level_reads_it() {
        let t = tempfile::tempdir().unwrap();
        let dir = db_dir(t.path(), Rules::Awari, 3);
        build_warned(&opts(t.path(), 9, false));
        let want = fs::read(level_path(&dir, 9)).unwrap();
        let below: Vec<Vec<u8>> = (0..5)
            .map(|m| fs::read(level_path(&dir, m)).unwrap()[4096..].to_vec())
            .collect();
        let below: Vec<&[u8]> = below.iter().map(|v| &v[..]).collect();
        let five = fs::read(level_path(&dir, 5)).unwrap();
        let (raw, packed) = (level_path(&dir, 5), packed_path(&dir, 5));
        pack_payload(
            &packed,
            Rules::Awari,
            3,
            5,
            &five[4096..],
            &PackOptions::default(),
            &below,
        )
        .unwrap();
        fs::remove_file(&raw).unwrap();
        fs::remove_file(level_path(&dir, 9)).unwrap();
        let (reports, warnings) = build_warned(&opts(t.path(), 9, false));
        assert!(warnings.is_empty(), "{warnings:?}");
        assert!(reports[..9].iter().all(|r| r.skipped) && !reports[9].skipped);
        assert!(packed.exists() && !raw.exists());
        assert_eq!(fs::read(level_path(&dir, 9)).unwrap(), want);
    }

    /// Each level built adds its line to the rates file, with its positions, way and
    /// threads; a level kept adds none.
    #[test]
    fn the_build_records_each_level_it_builds() {
        let t = tempfile::tempdir().unwrap();
        let dir = db_dir(t.path(), Rules::Awari, 3);
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        let (reports, _) = pool.install(|| build_warned(&opts(t.path(), 8, false)));
        let rates = rates::read(&dir).unwrap().unwrap();
        assert_eq!(rates.ignored, 0);
        let index = Index::new(3, 8).unwrap();
        assert_eq!(rates.levels.len(), 9);
        for (n, (line, report)) in rates.levels.iter().zip(&reports).enumerate() {
            assert_eq!((line.seeds, line.positions), (n, index.level_size(n)));
            assert_eq!(line.threads, 2);
            let way = report.way.unwrap();
            assert_eq!((line.state, line.lower), (way.state, way.lower));
            assert!((line.seconds - report.seconds).abs() < 0.001);
            assert!(line.cpu_seconds.is_some() && report.cpu_seconds.is_some());
        }
        let (reports, _) = build_warned(&opts(t.path(), 8, false));
        assert!(reports
            .iter()
            .all(|r| r.skipped && r.cpu_seconds == Some(0.0)));
        assert_eq!(rates::read(&dir).unwrap().unwrap().levels.len(), 9);
        build_warned(&opts(t.path(), 8, true));
        assert_eq!(rates::read(&dir).unwrap().unwrap().latest().len(), 9);
        assert_eq!(rates::read(&dir).unwrap().unwrap().levels.len(), 18);
    }

    #[test]
    fn rebuilding_a_damaged_pack_removes_it() {
        let t = tempfile::tempdir().unwrap();
        let (reports, warnings) = build_warned(&opts(t.path(), 8, false));
        assert!(reports.iter().all(|r| !r.skipped) && warnings.is_empty());
        let dir = db_dir(t.path(), Rules::Awari, 3);
        let (raw, packed) = (level_path(&dir, 8), packed_path(&dir, 8));
        let good = fs::read(&raw).unwrap();
        // Level 8 packed only, then damaged: a flipped byte in its last block.
        let pack = PackOptions {
            block: 64,
            ..PackOptions::default()
        };
        let below: Vec<Vec<u8>> = (0..8)
            .map(|m| fs::read(level_path(&dir, m)).unwrap()[4096..].to_vec())
            .collect();
        let below: Vec<&[u8]> = below.iter().map(|v| &v[..]).collect();
        pack_payload(&packed, Rules::Awari, 3, 8, &good[4096..], &pack, &below).unwrap();
        fs::remove_file(&raw).unwrap();
        let mut bytes = fs::read(&packed).unwrap();
        let at = bytes.len() - 3;
        bytes[at] ^= 0x40;
        fs::write(&packed, &bytes).unwrap();

        let (reports, warnings) = build_warned(&opts(t.path(), 8, false));
        assert!(reports[..8].iter().all(|r| r.skipped) && !reports[8].skipped);
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(
            warnings[0].starts_with("rebuilding level 8"),
            "{warnings:?}"
        );
        assert!(
            warnings[1].starts_with("removed the stale packed level")
                && warnings[1].contains("level-008.awp"),
            "{warnings:?}"
        );
        assert!(!packed.exists());
        assert_eq!(fs::read(&raw).unwrap(), good);

        // With --force, a pack beside the raw level goes too; without, it stays.
        pack_payload(&packed, Rules::Awari, 3, 8, &good[4096..], &pack, &below).unwrap();
        let (_, warnings) = build_warned(&opts(t.path(), 8, false));
        assert!(warnings.is_empty() && packed.exists(), "{warnings:?}");
        let (reports, warnings) = build_warned(&opts(t.path(), 8, true));
        assert!(reports.iter().all(|r| !r.skipped));
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(!packed.exists());
        assert_eq!(fs::read(&raw).unwrap(), good);
    }
}
