//! Checkpoints inside a level (DESIGN.md section 5.5): when the solver state is saved,
//! whether the disk has room for it, which checkpoints are kept, and taking a level up
//! again from the furthest one. One policy for a process alone and for the ranks of a
//! build, through a [`Comm`]: every decision that ranks must take alike goes through a
//! global sum (a process alone is a partition of one rank, whose sums are its own values).

use std::ops::Range;
use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

use crate::db::checkpoint::{
    checkpoint_need, checkpoint_path, checkpoint_room, lean_paths, list_checkpoints,
    remove_checkpoints, Checkpoint, CheckpointAt, CheckpointHeader, CheckpointRoom, SliceOf,
};
use crate::error::Error;
use crate::game::rules::Rules;
use crate::solve::comm::Comm;
use crate::solve::level::{
    LeanFiles, LeanState, PhaseTimes, Saves, Settle, SettleCells, Stage, State, StateKind,
    SEGMENT_SHIFT,
};
use crate::util::{bytes, clock_utc, LevelBar};

/// Which level's checkpoints, of which positions, where, and how often.
pub(crate) struct Checkpoints<'a, M: Comm> {
    pub(crate) comm: &'a M,
    /// This rank's database folder.
    pub(crate) dir: &'a Path,
    pub(crate) rules: Rules,
    pub(crate) pits: usize,
    /// The level.
    pub(crate) n: usize,
    /// Positions of the whole level.
    pub(crate) size: u64,
    /// The positions held here (the whole level in one process).
    pub(crate) mine: Range<u64>,
    /// The interval (`None`: no checkpoint is written, but one left is taken up).
    pub(crate) every: Option<Duration>,
    /// Says what goes wrong without stopping the build: a checkpoint skipped, refused or
    /// not written.
    pub(crate) warn: &'a dyn Fn(&str),
    /// Where to say that a checkpoint was written, if anywhere.
    pub(crate) progress: Option<&'a LevelBar>,
    /// The start of the interval: the level's start here, or the last save.
    pub(crate) last: Instant,
    /// Checkpoints written for the level.
    pub(crate) written: u32,
    /// Where the level resumed, if it did.
    pub(crate) resumed: Option<CheckpointAt>,
    /// Whether the disk holds one checkpoint at a time (said once).
    pub(crate) replacing: bool,
}

impl<'a, M: Comm> Checkpoints<'a, M> {
    /// Which part of the level this rank's files hold.
    fn part(&self) -> SliceOf {
        SliceOf {
            rank: self.comm.rank(),
            ranks: self.comm.size(),
        }
    }

    /// The header of this rank's checkpoint at `at` with the thresholds `present` and the
    /// times `t`; [`State::save`] fills in the state's fields.
    fn header(&self, at: CheckpointAt, present: u64, t: PhaseTimes) -> CheckpointHeader {
        CheckpointHeader {
            next: at.next,
            segment: at.segment,
            segment_shift: if at.segment == 0 { 0 } else { SEGMENT_SHIFT },
            present,
            forward_ns: t.forward.as_nanos() as u64,
            backward_ns: t.backward.as_nanos() as u64,
            ..CheckpointHeader::new(
                self.rules,
                self.pits,
                self.n,
                self.size,
                self.part(),
                self.mine.clone(),
            )
        }
    }

    /// Removes this rank's checkpoints of the level (it is done, or starts afresh).
    pub(crate) fn remove_all(&self) -> crate::error::Result<()> {
        remove_checkpoints(self.dir, self.n, self.part())
    }

    /// The furthest checkpoint every rank holds and can take the level up from: its header
    /// is this build's, of the same state on every rank, of the state `asked` (if any),
    /// and `fits` says its state fits now. A checkpoint refused is removed (one line of
    /// `warn` says why) and the next one is tried; one whose state does not fit is kept,
    /// and the level starts afresh. `None`: start afresh. Every rank calls it together.
    pub(crate) fn take_up(
        &mut self,
        asked: Option<StateKind>,
        fits: &mut dyn FnMut(StateKind) -> crate::error::Result<()>,
    ) -> crate::error::Result<Option<Checkpoint>> {
        let (comm, n) = (self.comm, self.n);
        // No early return before the last collective below: a rank that left would leave
        // the others waiting. A folder that cannot be listed holds nothing here.
        let found = list_checkpoints(self.dir, n, self.part()).unwrap_or_else(|e| {
            (self.warn)(&format!(
                "level {n}: checkpoints not read ({}); the level starts afresh",
                e.one_line()
            ));
            Vec::new()
        });
        // The places every rank holds a checkpoint at, the furthest first.
        let mine: Vec<u8> = found
            .iter()
            .flat_map(|(at, _)| [u32::from(at.next), at.segment])
            .flat_map(u32::to_le_bytes)
            .collect();
        let all = comm.exchange(vec![mine; comm.size()]);
        let held = |part: &[u8]| -> Vec<CheckpointAt> {
            part.chunks_exact(8)
                .map(|w| CheckpointAt {
                    next: w[0],
                    segment: u32::from_le_bytes(w[4..8].try_into().unwrap()),
                })
                .collect()
        };
        let common: Vec<CheckpointAt> = found
            .iter()
            .map(|&(at, _)| at)
            .filter(|at| all.parts().all(|p| held(p).contains(at)))
            .collect();
        let want = self.header(CheckpointAt::threshold(1), 0, PhaseTimes::default());
        for at in common {
            let path = checkpoint_path(self.dir, n, at, self.part());
            let opened = Checkpoint::open(&path, &want).and_then(|c| {
                let state = StateKind::from_code(c.head.encoding).expect("checked on opening");
                match asked.filter(|&k| k != state) {
                    Some(k) => Err(Error::Input(format!(
                        "it holds the {} state, --state {} asked",
                        state.name(),
                        k.name()
                    ))),
                    None => Ok(c),
                }
            });
            let code = opened.as_ref().map_or(0, |c| c.head.encoding as u64);
            // Every rank opened its own, all of one state: the sum is that many times it.
            let agreed = comm.sum(code) == code * comm.size() as u64 && code > 0;
            let opened = match opened {
                Ok(c) if agreed => c,
                Ok(_) => {
                    // Another rank's could not be used, so neither can this one.
                    let _ = std::fs::remove_file(&path);
                    continue;
                }
                Err(e) => {
                    (self.warn)(&format!(
                        "level {n}: checkpoint {} refused ({}); the level starts afresh",
                        path.display(),
                        e.one_line()
                    ));
                    if let Err(e) = std::fs::remove_file(&path) {
                        // Refused again next time; the other ranks go on alike.
                        (self.warn)(&Error::io(&path, e).one_line());
                    }
                    continue;
                }
            };
            let state = StateKind::from_code(opened.head.encoding).expect("checked on opening");
            let fit = fits(state);
            if let Err(e) = &fit {
                (self.warn)(&format!(
                    "level {n}: checkpoint {} not used now ({})",
                    path.display(),
                    e.one_line()
                ));
            }
            if comm.sum(fit.is_err() as u64) > 0 {
                return Ok(None);
            }
            self.resumed = Some(at);
            return Ok(Some(opened));
        }
        // Started afresh: nothing of before is kept.
        self.remove_all()?;
        Ok(None)
    }

    /// The state `checkpoint` holds ([`Checkpoints::take_up`] chose it), read whole on
    /// every rank; `None` if any rank's payload is damaged: then every checkpoint of the
    /// level is removed and it starts afresh.
    pub(crate) fn load<E: SettleCells>(
        &mut self,
        checkpoint: Checkpoint,
    ) -> crate::error::Result<Option<State<E>>> {
        let loaded = State::<E>::load(checkpoint);
        self.agreed(loaded)
    }

    /// What was loaded from the checkpoint taken up, if every rank loaded its own; else
    /// `None`, and every checkpoint of the level is removed (this rank's error said in one
    /// line), so that it starts afresh.
    fn agreed<T>(&mut self, loaded: crate::error::Result<T>) -> crate::error::Result<Option<T>> {
        let at = self.resumed.expect("taken up");
        let path = checkpoint_path(self.dir, self.n, at, self.part());
        if let Err(e) = &loaded {
            (self.warn)(&format!(
                "level {}: checkpoint {} refused ({}); the level starts afresh",
                self.n,
                path.display(),
                e.one_line()
            ));
        }
        if self.comm.sum(loaded.is_err() as u64) > 0 {
            self.resumed = None;
            self.remove_all()?;
            return Ok(None);
        }
        Ok(loaded.ok())
    }

    /// The lean state that `checkpoint` ([`Checkpoints::take_up`] chose it) holds, with
    /// its files beside it, opened and checked against its checksum on every rank; `None`
    /// if any rank's are missing or damaged: then every checkpoint of the level is removed,
    /// with its files, and it starts afresh.
    pub(crate) fn load_lean(
        &mut self,
        checkpoint: Checkpoint,
    ) -> crate::error::Result<Option<LeanState>> {
        let held = self.mine.end - self.mine.start;
        let opened = (|| {
            let [exits, values] = lean_paths(self.dir, self.n, self.part()).map(|p| {
                let file = std::fs::OpenOptions::new()
                    .read(true)
                    .write(true)
                    .open(&p)
                    .map_err(|e| Error::io(&p, e))?;
                let len = file.metadata().map_err(|e| Error::io(&p, e))?.len();
                if len != held {
                    let problem = format!("holds {len} bytes, the level's positions are {held}");
                    return Err(Error::format(&p, problem));
                }
                Ok(file)
            });
            let files = LeanFiles {
                exits: exits?,
                values: values?,
            };
            LeanState::load(checkpoint, files)
        })();
        self.agreed(opened)
    }

    /// Whether this rank's interval is up.
    fn due_here(&self) -> bool {
        self.every.is_some_and(|every| self.last.elapsed() >= every)
    }

    /// After a save at `at` to `path` (`wrote` here): once every rank's is whole, the
    /// `older` ones it is further on than go; else the new ones go. A file that cannot be
    /// removed stays: the level's end removes it, and a resume takes only what every rank
    /// holds. The interval counts from now: a save is not work done.
    fn settle_save(
        &mut self,
        wrote: bool,
        at: CheckpointAt,
        path: &Path,
        older: Vec<(CheckpointAt, std::path::PathBuf)>,
    ) {
        if self.comm.sum(wrote as u64) == self.comm.size() as u64 {
            for (a, p) in older {
                if at.beyond(a) {
                    let _ = std::fs::remove_file(p);
                }
            }
            self.written += 1;
            if let Some(bar) = self.progress {
                let when = clock_utc(SystemTime::now());
                bar.note(&format!("solving, saved {when} at {at}"));
            }
        } else {
            let _ = std::fs::remove_file(path);
        }
        self.last = Instant::now();
    }

    /// Whether a save is due, every rank deciding alike: when any rank's interval is up.
    fn due_now(&self) -> bool {
        self.every.is_some() && self.comm.sum(self.due_here() as u64) > 0
    }
}

impl<E: Settle, M: Comm> Saves<E> for Checkpoints<'_, M> {
    fn due(&mut self) -> bool {
        self.due_now()
    }

    fn deadline(&self) -> Option<Instant> {
        self.every.map(|every| self.last + every)
    }

    /// Saves this rank's state at `stage`. Where a rank's disk would not hold its slice's
    /// file after the checkpoint, no rank saves; where it holds one checkpoint only, that
    /// rank removes its older ones first. Once every rank's is whole, the ones it is
    /// further on than go; if any rank could not write its own, the new ones go instead.
    fn save(&mut self, state: &mut E::Held, stage: Stage, present: u64, times: PhaseTimes) {
        let (comm, dir, n, part) = (self.comm, self.dir, self.n, self.part());
        let at = CheckpointAt {
            next: stage.next as u8,
            segment: stage.segment,
        };
        let held = self.mine.end - self.mine.start;
        // The level's file must still fit after it: a checkpoint is a safety net, not
        // worth the level.
        let need = checkpoint_need(E::STATE.checkpoint_bytes(held), held);
        let mut older = list_checkpoints(dir, n, part).unwrap_or_default();
        let room = checkpoint_room(dir, &older, need);
        if let CheckpointRoom::Short { free, need } = room {
            (self.warn)(&no_room(n, free, need));
        }
        if comm.sum(matches!(room, CheckpointRoom::Short { .. }) as u64) > 0 {
            self.last = Instant::now();
            return;
        }
        let mut cleared = true;
        if let CheckpointRoom::Instead { free, need } = room {
            // The older go first. A stop while the new one is written then loses both,
            // and the level starts afresh.
            if !self.replacing {
                self.replacing = true;
                (self.warn)(&one_at_a_time(n, free, need));
            }
            for (_, p) in older.drain(..) {
                cleared &= std::fs::remove_file(p).is_ok();
            }
        }
        let path = checkpoint_path(dir, n, at, part);
        let wrote = cleared
            && match E::save(state, &path, self.header(at, present, times)) {
                Ok(()) => true,
                Err(e) => {
                    // The build goes on: only its safety net is lost.
                    (self.warn)(&not_written(n, &e));
                    false
                }
            };
        self.settle_save(wrote, at, &path, older);
    }
}

/// The warning of a level whose disk holds one checkpoint at a time: `free` bytes free,
/// `need` needed for a second checkpoint and the level's file.
fn one_at_a_time(n: usize, free: u64, need: u64) -> String {
    format!(
        "level {n}: room for one checkpoint only ({} free, {} needed for a second and the \
         level): each is removed before the next is written",
        bytes(free),
        bytes(need)
    )
}

/// The warning of a level whose checkpoint does not fit beside its file: `free` bytes
/// free, `need` needed.
fn no_room(n: usize, free: u64, need: u64) -> String {
    format!(
        "level {n}: checkpoint skipped: it and the level need {}, {} is free",
        bytes(need),
        bytes(free)
    )
}

/// The warning of a level whose checkpoint could not be written: the build goes on.
fn not_written(n: usize, e: &Error) -> String {
    format!(
        "level {n}: checkpoint not written ({}); the build goes on",
        e.one_line()
    )
}
