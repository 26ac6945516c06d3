//! One level of a build, alone or over ranks: the way it is solved (state and reading of
//! the lower levels), whether it fits, the solve itself (from the furthest good
//! checkpoint, or from its start), and the file it is written to.

use std::fs;
use std::os::unix::fs::FileExt;
use std::time::{Duration, Instant};

use rayon::prelude::*;

use super::{Builder, Solved, Target};
use crate::db::checkpoint::{
    lean_paths, list_checkpoints, remove_checkpoints, Checkpoint, CheckpointAt,
};
use crate::db::layout::{level_path, packed_path, Expect};
use crate::db::model::Model;
use crate::db::pack::{pack_payload, PackOptions};
use crate::db::raw::{Check, LevelWriter};
use crate::db::slice::{slice_path, write_slice, SliceHeader};
use crate::db::store::{LevelFile, LevelValues};
use crate::error::{Error, Result};
use crate::solve::checkpoints::Checkpoints;
use crate::solve::comm::{together, Comm};
use crate::solve::level::{
    backward_pass, exits_random, exits_stream, forward_pass, forward_stream, Compact, Fast,
    Forwarded, Lean, LeanFiles, LeanState, Lower, Outcomes, Partition, Settle, SettleCells, Stage,
    StateKind, Values, Window,
};
use crate::solve::plan::{
    check_level_fits, check_slice_fits, slice_way, way, LevelMemory, LevelMethod, LowerHeld,
};
use crate::util::{
    memory_available, read_exact_at_parallel, unnamed_file, HugeBuf, LevelBar, CHUNK,
};

impl<M: Comm> Builder<'_, M> {
    /// Builds level `n` into the folder and checks what it wrote: from the furthest
    /// checkpoint an earlier build left of it if there is a good one, else from its start.
    pub(super) fn build_level(&mut self, n: usize) -> Result<Solved> {
        if let Some((solved, values)) = self.resume_level(n)? {
            self.finish_level(n, values, Lower::Stream)?;
            return Ok(solved);
        }
        let way = self.method(n)?;
        let LevelMethod { state, lower } = way;
        let size = self.index.level_size(n);
        let spill = lower == Lower::Random
            && state != StateKind::Lean
            && state.bytes(size) >= self.opts.spill_from;
        match lower {
            // A stream holds no lower level.
            Lower::Stream => self.lower.let_go_all(),
            // The forward pass reads levels up to n - 2 and the backward pass none, so a
            // spilled state lets level n - 1 go now rather than after the forward pass
            // (DESIGN.md section 5.2): its memory is not held beside the lower levels.
            Lower::Random if spill => self.lower.let_go(n.saturating_sub(1)),
            Lower::Random => {}
        }
        let fits = self.fits(n, state, lower, spill);
        together(
            self.comm,
            fits,
            &format!("lack the memory or disk for level {n}"),
        )?;
        let build_to = self.opts.max_seeds;
        match lower {
            Lower::Random => self.lower.hold_for_random(n, build_to)?,
            Lower::Stream => self.lower.open_for_stream(n, build_to)?,
        }
        let (values, solved) = match state {
            StateKind::Fast => self.solve::<Fast>(n, lower, spill)?,
            StateKind::Compact => self.solve::<Compact>(n, lower, spill)?,
            StateKind::Lean => self.solve_lean(n, lower)?,
        };
        self.finish_level(n, values, lower)?;
        Ok(Solved { way, ..solved })
    }

    /// The way level `n` is solved: alone, the fastest that fits the memory free
    /// ([`way`]); over ranks, the lower levels streamed and the state asked for, or where
    /// none is, the single process's choice for each rank's slice and share of its node's
    /// memory, voted so that all use the same (the leanest any rank needs).
    fn method(&self, n: usize) -> Result<LevelMethod> {
        let size = self.index.level_size(n);
        if let Target::Slices(_) = self.target {
            let held = self.held(n);
            let state = match self.opts.state {
                Some(state) => state,
                None => {
                    let share = memory_available().map(|m| m / self.opts.ranks_here.max(1) as u64);
                    let mine = slice_way(n, held, share).state;
                    let needs = |s: StateKind| self.comm.sum((mine == s) as u64) > 0;
                    if needs(StateKind::Lean) {
                        StateKind::Lean
                    } else if needs(StateKind::Compact) {
                        StateKind::Compact
                    } else {
                        StateKind::Fast
                    }
                }
            };
            let lower = Lower::Stream;
            return Ok(LevelMethod { state, lower });
        }
        let room = self.random_room(n);
        let fit = LevelMemory {
            seeds: n,
            positions: size,
            lower_bytes: room.lower,
            free: memory_available().map(|f| f + room.held),
        };
        Ok(way(&self.opts.ask(), &fit))
    }

    /// Whether level `n` fits, solved with `state` reading its lower levels as `lower`:
    /// the memory and the disk it needs (with [`crate::solve::options::BuildOptions::check`]).
    fn fits(&self, n: usize, state: StateKind, lower: Lower, spill: bool) -> Result<()> {
        let opts = self.opts;
        if !opts.check {
            return Ok(());
        }
        let held = self.held(n);
        if let Target::Slices(_) = self.target {
            return check_slice_fits(&self.dir, n, held, state, opts.ranks_here);
        }
        let room = match lower {
            Lower::Random => self.random_room(n),
            Lower::Stream => LowerHeld { lower: 0, held: 0 },
        };
        let way = LevelMethod { state, lower };
        check_level_fits(&self.dir, n, held, way, spill, opts.pack, room)
    }

    /// What level `n`'s lower levels take, read at random: the bytes of those it reads,
    /// and of those held in memory already.
    fn random_room(&self, n: usize) -> LowerHeld {
        let reach = self.lower.reach(n);
        LowerHeld {
            lower: reach.clone().map(|m| self.index.level_size(m)).sum(),
            held: self.lower.held_bytes(reach),
        }
    }

    /// This process's part of level `n` (the whole level, or a rank's slice), advancing
    /// `bar`.
    fn partition<'b>(&'b self, n: usize, bar: &'b LevelBar) -> Partition<'b, M> {
        Partition {
            comm: self.comm,
            rules: self.opts.rules,
            index: &self.index,
            n,
            mine: self.mine(n),
            progress: bar,
        }
    }

    /// The checkpoints of level `n`, as this build writes and takes them up.
    fn checkpoints<'c>(&'c self, n: usize, bar: Option<&'c LevelBar>) -> Checkpoints<'c, M> {
        Checkpoints {
            comm: self.comm,
            dir: &self.dir,
            rules: self.opts.rules,
            pits: self.opts.pits,
            n,
            size: self.index.level_size(n),
            mine: self.mine(n),
            every: self.opts.checkpoint_every,
            warn: self.warn,
            progress: bar,
            last: Instant::now(),
            written: 0,
            resumed: None,
            replacing: false,
        }
    }

    /// Level `n` taken up from the furthest good checkpoint of it that every rank holds, if
    /// any: what solving it gave, and its values ([`Checkpoints::take_up`] says which
    /// checkpoints are refused, and which kept for later).
    pub(super) fn resume_level(&mut self, n: usize) -> Result<Option<(Solved, Values)>> {
        let none_here = list_checkpoints(&self.dir, n, self.part())?.is_empty();
        if self.comm.sum(none_here as u64) == self.comm.size() as u64 {
            return Ok(None);
        }
        let mut fits = |state: StateKind| self.fits(n, state, Lower::Stream, false);
        let mut checkpoints = self.checkpoints(n, None);
        // Its errors come after its last collective: every rank learns of any.
        let taken = checkpoints.take_up(self.opts.state, &mut fits);
        let what = format!("could not take level {n}'s checkpoints up");
        let Some(checkpoint) = together(self.comm, taken, &what)? else {
            return Ok(None);
        };
        let state = StateKind::from_code(checkpoint.head.encoding).expect("checked on opening");
        // The backward pass reads no lower level.
        self.lower.let_go_all();
        let resumed = match state {
            StateKind::Fast => self.resume::<Fast>(n, checkpoint, |c, k| c.load(k))?,
            StateKind::Compact => self.resume::<Compact>(n, checkpoint, |c, k| c.load(k))?,
            StateKind::Lean => self.resume::<Lean>(n, checkpoint, |c, k| c.load_lean(k))?,
        };
        Ok(resumed.map(|(values, solved)| {
            let way = LevelMethod {
                state,
                lower: Lower::Stream,
            };
            (Solved { way, ..solved }, values)
        }))
    }

    /// Writes this process's part of level `n` to its file (a whole level raw, or packed
    /// with `--pack`; a rank's slice), removes a stale file of the other form and the
    /// level's checkpoints, and holds the values where the next levels read them (in
    /// memory if the lower levels are read at random).
    fn finish_level(&mut self, n: usize, values: Values, lower: Lower) -> Result<()> {
        let (opts, dir) = (self.opts, &self.dir);
        let want = Expect::level(opts.rules, &self.index, n);
        if let Target::Slices(part) = self.target {
            let path = slice_path(dir, n, part.rank, part.ranks);
            let head = SliceHeader {
                rules: opts.rules,
                pits: opts.pits,
                seeds: n,
                positions: want.positions,
                checksum: 0,
                range: self.mine(n),
                ranks: part.ranks,
                rank: part.rank,
            };
            write_slice(&path, head, &values.bytes()?)?;
            remove_checkpoints(dir, n, part)?;
            // The stream read the slices below: let their pages go.
            self.lower.release();
            let file = LevelFile::open_slice(dir, &want, part)?
                .ok_or_else(|| Error::io(&path, std::io::ErrorKind::NotFound.into()))?;
            self.lower.hold_file(n, file);
            return Ok(());
        }
        let (raw, packed) = (level_path(dir, n), packed_path(dir, n));
        let (written, stale) = if opts.pack {
            write_packed(dir, &want, &values.bytes()?)?;
            (packed, raw)
        } else {
            values.write_level(&raw, &want)?;
            (raw, packed)
        };
        remove_checkpoints(dir, n, self.part())?;
        if stale.exists() {
            fs::remove_file(&stale).map_err(|e| Error::io(&stale, e))?;
            (self.warn)(&format!(
                "removed the stale {} level {} (level {n} rebuilt as {})",
                if opts.pack { "raw" } else { "packed" },
                stale.display(),
                written.display()
            ));
        }
        if lower == Lower::Random {
            self.lower.hold(n, LevelValues::Owned(values.held()?));
        } else if self.lower.wants(n) {
            let level = LevelFile::open(dir, &want, Check::HeaderOnly)?
                .expect("the level just written is there");
            let values = match level {
                LevelFile::Raw(l) => LevelValues::Mapped(l),
                _ => LevelValues::Owned(values.held()?),
            };
            self.lower.offer(n, values);
        }
        Ok(())
    }

    /// Solves this process's part of level `n` with the state's encoding `E`, reading the
    /// lower levels as `lower` says: its values (in the state's memory), and what solving
    /// it gave.
    pub(super) fn solve<E: SettleCells>(
        &mut self,
        n: usize,
        lower: Lower,
        spill: bool,
    ) -> Result<(Values, Solved)> {
        let (opts, index, dir) = (self.opts, &self.index, &self.dir);
        // One bar: forward pass then settled positions (at most the positions held).
        let bar = LevelBar::new(opts.progress, self.held(n) * 2, n, "solving");
        let started = Instant::now();
        let spill_path = level_path(dir, n).with_extension("spill");
        let mut spill_file = spill.then(|| unnamed_file(&spill_path)).transpose()?;
        let io = |e| Error::io(&spill_path, e);
        let forwarded: Forwarded<E> = match lower {
            Lower::Random => {
                let below = self.lower.below(n);
                let f = forward_pass(opts.rules, index, n, &below[..], &bar, spill_file.as_mut())
                    .map_err(io)?;
                drop(below);
                if let Some(file) = &spill_file {
                    // The backward pass reads no lower level: the state has their memory.
                    self.lower.let_go_all();
                    let mut f = f;
                    f.restore(file).map_err(io)?;
                    f
                } else {
                    f
                }
            }
            Lower::Stream => {
                let part = self.partition(n, &bar);
                forward_stream(&part, &self.lower, Window::WHOLE, &[])?
            }
        };
        let mut checkpoints = self.checkpoints(n, Some(&bar));
        checkpoints.last = started;
        let Forwarded {
            state,
            present,
            forward,
        } = forwarded;
        let from = Stage::start(n);
        let begin = Begin::<E> {
            state,
            present,
            forward,
            from,
        };
        self.backward(n, begin, &bar, checkpoints)
    }

    /// Solves level `n` with the lean state (DESIGN.md section 5.6), reading the lower
    /// levels as `lower` says: its values (in a file), and what solving it gave. With
    /// checkpoints, its files are named beside the level.
    pub(super) fn solve_lean(&mut self, n: usize, lower: Lower) -> Result<(Values, Solved)> {
        let (rules, index) = (self.opts.rules, &self.index);
        let held = self.held(n);
        let bar = LevelBar::new(self.opts.progress, held * 2, n, "solving");
        let started = Instant::now();
        let files = self.lean_files(n)?;
        let part = self.partition(n, &bar);
        let made = match lower {
            Lower::Random => {
                let below = self.lower.below(n);
                exits_random(rules, index, n, &below[..], &files.exits, &bar)
            }
            Lower::Stream => {
                // The raises kept for later windows: unnamed files beside the exits file.
                let [scratch, _] = lean_paths(&self.dir, n, self.part());
                let made = exits_stream(&part, &self.lower, &files.exits, &scratch);
                // The stream read the lower levels' files: let their pages go.
                self.lower.release();
                made
            }
        };
        together(self.comm, made, "could not make their exits files")?;
        let fresh = LeanState::fresh(files, n, held);
        let (state, present) = together(self.comm, fresh, "could not read their exits files")?;
        let mut checkpoints = self.checkpoints(n, Some(&bar));
        checkpoints.last = started;
        let forward = started.elapsed();
        let from = Stage::start(n);
        let begin = Begin::<Lean> {
            state,
            present,
            forward,
            from,
        };
        self.backward(n, begin, &bar, checkpoints)
    }

    /// The lean state's files for level `n` from its start, each as long as the positions
    /// held and zeroed: named beside the level where it is checkpointed, else unnamed
    /// there.
    fn lean_files(&self, n: usize) -> Result<LeanFiles> {
        let held = self.held(n);
        let named = self.opts.checkpoint_every.is_some();
        let open = |p: &std::path::Path| {
            let file = if named {
                fs::OpenOptions::new()
                    .read(true)
                    .write(true)
                    .create(true)
                    .truncate(true)
                    .open(p)
                    .map_err(|e| Error::io(p, e))?
            } else {
                unnamed_file(p)?
            };
            file.set_len(held).map_err(|e| Error::io(p, e))?;
            Ok::<_, Error>(file)
        };
        let [exits, values] = lean_paths(&self.dir, n, self.part());
        let files = (|| {
            Ok(LeanFiles {
                exits: open(&exits)?,
                values: open(&values)?,
            })
        })();
        together(self.comm, files, "could not make their lean state's files")
    }

    /// Solves level `n` from `checkpoint` on, with its state `E`, which `load` reads back;
    /// `None` if the state does not read whole on every rank (then the level starts
    /// afresh).
    fn resume<E: Settle>(
        &self,
        n: usize,
        checkpoint: Checkpoint,
        load: impl FnOnce(&mut Checkpoints<'_, M>, Checkpoint) -> Result<Option<E::Held>>,
    ) -> Result<Option<(Values, Solved)>> {
        let head = checkpoint.head;
        let held = self.held(n);
        let bar = LevelBar::new(self.opts.progress, held * 2, n, "resuming");
        let mut checkpoints = self.checkpoints(n, Some(&bar));
        checkpoints.resumed = Some(CheckpointAt {
            next: head.next,
            segment: head.segment,
        });
        let loaded = load(&mut checkpoints, checkpoint);
        let what = format!("could not load level {n}'s checkpoints");
        let Some(state) = together(self.comm, loaded, &what)? else {
            return Ok(None);
        };
        let forward = Duration::from_nanos(head.forward_ns);
        let from = Stage::of_checkpoint(&head);
        bar.phase("solving", held);
        let present = head.present;
        let begin = Begin::<E> {
            state,
            present,
            forward,
            from,
        };
        self.backward(n, begin, &bar, checkpoints).map(Some)
    }

    /// The backward pass of level `n` from `from`, with the state after the forward pass
    /// or a checkpoint (`begin`), saving the state as `checkpoints` says: the values, and
    /// what solving gave.
    fn backward<E: Settle>(
        &self,
        n: usize,
        begin: Begin<E>,
        bar: &LevelBar,
        mut checkpoints: Checkpoints<'_, M>,
    ) -> Result<(Values, Solved)> {
        let part = self.partition(n, bar);
        let Begin {
            state,
            present,
            forward,
            from,
        } = begin;
        let passed = backward_pass::<E, M>(&part, state, present, forward, from, &mut checkpoints);
        let (state, phases) = passed?;
        let values = E::into_values(state);
        let stats = values.outcomes()?;
        bar.finish();
        let solved = Solved {
            phases,
            stats,
            way: LevelMethod {
                state: E::STATE,
                lower: Lower::Stream,
            },
            resumed: checkpoints.resumed,
            checkpoints: checkpoints.written,
        };
        Ok((values, solved))
    }
}

/// Where a level's backward pass begins: the state after the forward pass or as a
/// checkpoint gave it back, the thresholds that can seed in it, the forward pass's time,
/// and the threshold and segment it goes on from.
struct Begin<E: Settle> {
    state: E::Held,
    present: u64,
    forward: Duration,
    from: Stage,
}

/// A level's values as one slice of bytes: held, or a file's mapped.
enum Bytes<'a> {
    Held(&'a [u8]),
    Mapped(memmap2::Mmap),
}

impl std::ops::Deref for Bytes<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Bytes::Held(b) => b,
            Bytes::Mapped(m) => m,
        }
    }
}

/// The name errors give the lean state's values file, which has none.
const VALUES_FILE: &str = "(the lean state's values file)";

impl Values {
    /// The values as one slice: a file's mapped (read-only: the file is not changed
    /// while the map lives), for the writers that need the level whole (a packed level's
    /// blocks, a slice file). The mapped pages count in this process's memory.
    fn bytes(&self) -> Result<Bytes<'_>> {
        match self {
            Values::Held(b) => Ok(Bytes::Held(b)),
            // SAFETY: the file is this build's own, unnamed or named in the folder it holds
            // locked (DESIGN.md section 8): nothing else changes it while the map lives.
            Values::File(f, _) => unsafe { memmap2::Mmap::map(f) }
                .map(Bytes::Mapped)
                .map_err(|e| Error::io(VALUES_FILE, e)),
        }
    }

    /// The values in memory, a file's read in.
    pub(super) fn held(self) -> Result<HugeBuf> {
        match self {
            Values::Held(b) => Ok(b),
            Values::File(f, len) => {
                let mut buf = HugeBuf::zeroed(len as usize)
                    .map_err(|e| Error::Resources(format!("cannot hold a level's values: {e}")))?;
                read_exact_at_parallel(&f, 0, &mut buf).map_err(|e| Error::io(VALUES_FILE, e))?;
                Ok(buf)
            }
        }
    }

    /// What the values are: won, drawn, lost (a file's read a chunk at a time).
    fn outcomes(&self) -> Result<Outcomes> {
        match self {
            Values::Held(b) => Ok(Outcomes::of_parallel(b)),
            Values::File(f, len) => (0..len.div_ceil(CHUNK))
                .into_par_iter()
                .map_init(Vec::new, |buf, c| {
                    buf.resize(CHUNK.min(len - c * CHUNK) as usize, 0);
                    f.read_exact_at(buf, c * CHUNK)
                        .map_err(|e| Error::io(VALUES_FILE, e))?;
                    Ok(Outcomes::of(buf))
                })
                .try_reduce(Outcomes::default, |a, b| Ok(a.merge(b))),
        }
    }

    /// Writes the level `want` describes to `path` (section 4.3 of DESIGN.md): a file's
    /// values copied a chunk at a time.
    fn write_level(&self, path: &std::path::Path, want: &Expect) -> Result<()> {
        let len = want.positions;
        let mut w = LevelWriter::create(path, want.rules, want.pits, want.seeds, len)?;
        match self {
            Values::Held(b) => w.write(b)?,
            Values::File(f, len) => {
                let mut buf = Vec::new();
                for first in (0..*len).step_by(CHUNK as usize) {
                    buf.resize(CHUNK.min(len - first) as usize, 0);
                    f.read_exact_at(&mut buf, first)
                        .map_err(|e| Error::io(VALUES_FILE, e))?;
                    w.write(&buf)?;
                }
            }
        }
        w.finish().map(|_| ())
    }
}

/// Writes level `want.seeds` into `dir` packed with the plain model (section 6), then
/// reads it back a block at a time, every block and the payload checksum checked.
fn write_packed(dir: &std::path::Path, want: &Expect, values: &[u8]) -> Result<()> {
    let pack = PackOptions {
        model: Model::Plain,
        ..PackOptions::default()
    };
    let path = packed_path(dir, want.seeds);
    pack_payload(&path, want.rules, want.pits, want.seeds, values, &pack, &[])?;
    LevelFile::open_packed(dir, want)?.check_checksum_with(|_| {})
}
