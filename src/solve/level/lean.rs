//! The lean state (DESIGN.md section 5.6): a level solved with two bits of memory per
//! position, what else the algorithm needs kept on disk and read or written in index
//! order. Romein and Bal's way, with the thresholds of section 5.1:
//!
//! - the forward pass writes each position's best exit `b` (section 5.1) to an exits file,
//!   one byte per position in index order, and keeps nothing of it in memory: reading the
//!   lower levels at random ([`exits_random`]), or as streams in windows of the level,
//!   each a streamed forward pass into a compact state of the window alone
//!   ([`exits_stream`]);
//! - a position is *unsettled* (`b` above `-t`: it cannot be lost at this threshold),
//!   *open to a loss* (unsettled and `b <= -t`), *won* or *lost*, in two bits: the
//!   threshold it was settled at is not kept, since thresholds come in order;
//! - each threshold `t` is a pass: one scan of the exits file in index order opens the
//!   positions with `b == -t` to a loss and seeds the wins (`b == t`) and the losses (open,
//!   with every in-level child won); a settled position's predecessors are updated as in
//!   section 5.1, but with no counter: a predecessor open to a loss whose child was just
//!   won has its in-level children generated again, and is lost if every one is won;
//! - after the pass, the positions settled in it are merged into a values file (one byte
//!   per position, 0 while unsettled: a settled value is never 0), in index order, the
//!   chunks where something was settled only. What is never settled is a draw;
//! - between passes the two files are a checkpoint ([`LeanSaves`]): the two bits are
//!   rebuilt from them, at the threshold the checkpoint names.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::atomic::{
    AtomicBool, AtomicU64,
    Ordering::{Relaxed, SeqCst},
};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rayon::prelude::*;

use super::backward::{merge_outboxes, Message, Remote, NO_PIT};
use super::forward::{forward_stream, Window};
use super::message;
use super::rounds::{NoSaves, Owners, Partition, SEGMENT};
use super::state::{exit_and_stay, Encoding};
use super::{byte_state, lean_windows, Compact, Fast, PhaseTimes, StateKind};
use crate::db::layout::largest_slice;
use crate::error::{Error, Result};
use crate::game::index::{Index, RankBase};
use crate::game::pits::with_pits;
use crate::game::rules::{for_each_stay_p, for_each_unmove_near_p, Board, Rules};
use crate::game::scan::{scan_exits, LowerValues, Stream, NO_EXIT};
use crate::solve::comm::{together, Comm};
use crate::util::{prefetch, LevelBar, BATCH, CHUNK};

/// Unsettled, not open to a loss at this threshold.
const OPEN_NOT: u64 = 0;
/// Unsettled, open to a loss (its best exit is at most `-t`, or it has none).
const OPEN: u64 = 1;
/// Settled, won for its side to move.
const WON: u64 = 2;
/// Settled, lost for its side to move.
const LOST: u64 = 3;

/// A stack of settled positions this long is split with another thread, so that one long
/// cascade does not idle the others (as the fast state's, DESIGN.md section 5.2).
const SPLIT_AT: usize = 1 << 12;

/// Positions per word of the state (`StateKind::bytes` counts such words).
const PER_WORD: u64 = 32;

/// Two bits per position, in words of 32 positions, updated atomically.
struct Bits {
    words: Box<[AtomicU64]>,
    /// Positions held.
    len: u64,
}

impl Bits {
    fn new(len: u64) -> Bits {
        Bits {
            words: (0..len.div_ceil(PER_WORD))
                .map(|_| AtomicU64::new(0))
                .collect(),
            len,
        }
    }

    /// The state of position `i`. Sequentially consistent, as are the changes: of two
    /// threads that each settle a child of one position and then read its other children,
    /// at least one sees both settled.
    #[inline]
    fn get(&self, i: u64) -> u64 {
        (self.words[(i / PER_WORD) as usize].load(SeqCst) >> (2 * (i % PER_WORD))) & 3
    }

    /// A hint that position `i`'s state will be read soon.
    #[inline]
    fn prefetch(&self, i: u64) {
        prefetch(&self.words[(i / PER_WORD) as usize]);
    }

    /// Sets position `i` to `to` if its state is one `from` accepts; whether it did.
    #[inline]
    fn change(&self, i: u64, from: impl Fn(u64) -> bool, to: u64) -> bool {
        let shift = 2 * (i % PER_WORD);
        self.words[(i / PER_WORD) as usize]
            .fetch_update(SeqCst, SeqCst, |w| {
                from((w >> shift) & 3).then_some((w & !(3 << shift)) | (to << shift))
            })
            .is_ok()
    }
}

fn unsettled(s: u64) -> bool {
    s < WON
}

/// The lean state's forward pass with the lower levels read at random from `lower`: each
/// position's best exit into `exits` (one byte per position in index order, [`NO_EXIT`]
/// where it has none), a chunk at a time; nothing of it is kept in memory.
pub(crate) fn exits_random<L: LowerValues + ?Sized>(
    rules: Rules,
    index: &Index,
    n: usize,
    lower: &L,
    exits: &File,
    progress: &LevelBar,
) -> Result<()> {
    let size = index.level_size(n);
    (0..size.div_ceil(CHUNK))
        .into_par_iter()
        .try_for_each_init(Vec::new, |buf, c| {
            let first = c * CHUNK;
            let len = (CHUNK.min(size - first)) as usize;
            buf.resize(len, 0u8);
            scan_exits(rules, index, n, lower, first, len, |j, ex, best| {
                buf[j] = exit_and_stay(ex, n, best).0 as u8;
            });
            progress.inc(len as u64);
            exits.write_all_at(buf, first)
        })
        .map_err(|e| file_error(n, "exits", e))
}

/// An error of the lean state's `what` file (exits or values) of level `n`, which may
/// have no name.
fn file_error(n: usize, what: &str, e: std::io::Error) -> Error {
    Error::io(format!("(the lean state's {what} file of level {n})"), e)
}

/// The lean state's forward pass with the lower levels read as streams: the best exits of
/// this rank's slice of the level (`part.mine`) into `exits` (from its start, as
/// [`exits_random`] writes them), made window by window ([`lean_windows`]), each window a
/// streamed forward pass ([`forward_stream`]) that holds that window's state alone.
pub(crate) fn exits_stream<M: Comm, S: Stream + ?Sized>(
    part: &Partition<M>,
    lower: &S,
    exits: &File,
) -> Result<()> {
    match byte_state(part.n) {
        StateKind::Compact => exits_stream_with::<Compact, M, S>(part, lower, exits),
        _ => exits_stream_with::<Fast, M, S>(part, lower, exits),
    }
}

/// [`exits_stream`] with the windows' state in the encoding `E`.
fn exits_stream_with<E: Encoding, M: Comm, S: Stream + ?Sized>(
    part: &Partition<M>,
    lower: &S,
    exits: &File,
) -> Result<()> {
    // Every rank makes as many windows as the largest slice needs, so that all run the
    // same rounds.
    let size = part.index.level_size(part.n);
    let count = lean_windows(E::KIND, largest_slice(size, part.comm.size()));
    for k in 0..count {
        let window = Window { k, count };
        let made = window.of(part.mine.clone());
        let forwarded = forward_stream::<E, M, S>(part, lower, window)?;
        let state = &forwarded.state;
        let at = made.start - part.mine.start;
        let len = made.end - made.start;
        (0..len.div_ceil(CHUNK))
            .into_par_iter()
            .try_for_each_init(Vec::new, |buf, c| {
                let first = c * CHUNK;
                buf.resize(CHUNK.min(len - first) as usize, 0u8);
                for (j, b) in buf.iter_mut().enumerate() {
                    let e = state.exit(first as usize + j).load(Relaxed) as i8;
                    *b = if E::no_exit(e) { NO_EXIT } else { e } as u8;
                }
                exits.write_all_at(buf, at + first)
            })
            .map_err(|e| file_error(part.n, "exits", e))?;
    }
    Ok(())
}

/// The lean state's two files (DESIGN.md section 5.6), each one byte a position of the
/// level in index order: the best exits, and the values settled so far (0 while
/// unsettled). Unnamed, or named beside the level where it is checkpointed.
pub(crate) struct LeanFiles {
    pub(crate) exits: File,
    pub(crate) values: File,
}

/// Where the lean state is saved, and when.
pub(crate) trait LeanSaves {
    /// Whether a checkpoint is due now.
    fn due(&mut self) -> bool;
    /// Saves a checkpoint of `files` once every threshold above `next` is done (their
    /// writes finished), `times` the passes' times so far.
    fn save(&mut self, files: &LeanFiles, next: u8, times: PhaseTimes);
}

impl LeanSaves for NoSaves {
    fn due(&mut self) -> bool {
        false
    }

    fn save(&mut self, _: &LeanFiles, _: u8, _: PhaseTimes) {}
}

/// Solves `part`'s slice of its level with the lean state in `files` (each one byte a
/// position of the slice): from its start (`resumed` `None`: `forward` writes the best
/// exits to the exits file, with [`exits_random`] or [`exits_stream`]), or from a
/// checkpoint once every threshold above `next` is done (`resumed` is `next` and the times
/// so far: the files are as they were then, but for values of thresholds `next` and below,
/// which are cleared). `saves` says when a checkpoint is due between passes. Over ranks
/// each threshold goes in rounds, as the other states' (`rounds.rs`): what a pass settles
/// or checks of another rank's position is sent to it at the round's end. Returns the time
/// of the two passes; the values file then holds the slice's values. Collective over the
/// partition's ranks: an error on one stops all.
pub(crate) fn solve_lean<M: Comm>(
    part: &Partition<M>,
    files: &LeanFiles,
    resumed: Option<(u8, PhaseTimes)>,
    forward: impl FnOnce(&File) -> Result<()>,
    saves: &mut dyn LeanSaves,
) -> Result<PhaseTimes> {
    let (comm, n) = (part.comm, part.n);
    let base = part.mine.start;
    let held = part.mine.end - base;
    let LeanFiles { exits, values } = files;
    let io = |what: &str, e| file_error(n, what, e);
    let fresh = resumed.is_none();
    let (next, mut times) = match resumed {
        Some((next, times)) => (next, times),
        None => {
            let start = Instant::now();
            let made = (|| {
                for (file, what) in [(values, "values"), (exits, "exits")] {
                    // Zeros, whatever a file named so held before.
                    file.set_len(0).map_err(|e| io(what, e))?;
                    file.set_len(held).map_err(|e| io(what, e))?;
                }
                forward(exits)
            })();
            together(comm, made, "could not make their exits files")?;
            let times = PhaseTimes {
                forward: start.elapsed(),
                backward: Duration::ZERO,
            };
            if saves.due() {
                saves.save(files, n as u8, times);
            }
            (n as u8, times)
        }
    };
    let start = Instant::now();
    let state = Bits::new(held);
    let chunks = held.div_ceil(CHUNK);
    let read_exits = |buf: &mut Vec<u8>, c: u64| {
        let first = c * CHUNK;
        buf.resize(CHUNK.min(held - first) as usize, 0u8);
        exits.read_exact_at(buf, first).map_err(|e| io("exits", e))
    };
    // The state at `next`: the values above it won or lost, and open to a loss what has
    // no exit or one below `-next` (opened by a threshold done); values of `next` and
    // below, left by a pass stopped after the checkpoint, cleared (that pass runs again
    // and settles them again). From the start, `next` is `n`, and only the positions with
    // no exit are open: before any threshold's cascade may reach them.
    let rebuilt = (0..chunks).into_par_iter().try_for_each_init(
        || (Vec::new(), Vec::new()),
        |(b, v): &mut (Vec<u8>, Vec<u8>), c| {
            read_exits(b, c)?;
            let first = c * CHUNK;
            if fresh {
                // The values file was just emptied: no read.
                v.clear();
                v.resize(b.len(), 0);
            } else {
                v.resize(b.len(), 0);
                values
                    .read_exact_at(v, first)
                    .map_err(|e| io("values", e))?;
            }
            let mut stale = false;
            for (j, (&b, v)) in b.iter().zip(v.iter_mut()).enumerate() {
                let (b, x) = (b as i8, *v as i8);
                let s = if x.unsigned_abs() > next {
                    if x > 0 {
                        WON
                    } else {
                        LOST
                    }
                } else {
                    stale |= x != 0;
                    *v = 0;
                    if b < -(next as i8) {
                        OPEN
                    } else {
                        OPEN_NOT
                    }
                };
                if s != OPEN_NOT {
                    state.change(first + j as u64, |_| true, s);
                }
            }
            if stale {
                values.write_all_at(v, first).map_err(|e| io("values", e))?;
            }
            Ok::<(), Error>(())
        },
    );
    together(comm, rebuilt, "could not read their lean state's files")?;
    let dirty: Vec<AtomicBool> = (0..chunks).map(|_| AtomicBool::new(false)).collect();
    let size = part.index.level_size(n);
    let remote = Owners {
        size,
        ranks: comm.size(),
    };
    let pass = Pass {
        rules: part.rules,
        index: part.index,
        n,
        state: &state,
        dirty: &dirty,
        base,
        remote: &remote,
    };
    for t in (1..=next as i8).rev() {
        threshold(part, &pass, t, &read_exits)?;
        // The positions settled at `t` into the values file.
        let merged = (0..chunks)
            .into_par_iter()
            .try_for_each_init(Vec::new, |buf, c| {
                if !dirty[c as usize].swap(false, SeqCst) {
                    return Ok(());
                }
                let first = c * CHUNK;
                buf.resize(CHUNK.min(held - first) as usize, 0u8);
                values
                    .read_exact_at(buf, first)
                    .map_err(|e| io("values", e))?;
                for (j, v) in buf.iter_mut().enumerate() {
                    if *v == 0 {
                        match state.get(first + j as u64) {
                            WON => *v = t as u8,
                            LOST => *v = (-t) as u8,
                            _ => {}
                        }
                    }
                }
                values.write_all_at(buf, first).map_err(|e| io("values", e))
            });
        together(comm, merged, "could not write their values files")?;
        if t > 1 && saves.due() {
            let so_far = PhaseTimes {
                backward: times.backward + start.elapsed(),
                ..times
            };
            saves.save(files, t as u8 - 1, so_far);
        }
    }
    times.backward += start.elapsed();
    Ok(times)
}

/// Threshold `t` over `part`'s slice, in rounds until no rank has anything left to send
/// (as `rounds.rs` runs the other states'): in each, every rank scans the next chunks of
/// its exits file (`read_exits` reads chunk `c`) and settles what follows among its own
/// positions; what concerns another rank's goes out at the round's end, and is applied
/// there. Over ranks a round scans one segment's chunks, which bounds what it sends; a
/// process alone scans them all in one round and sends nothing.
fn threshold<M: Comm>(
    part: &Partition<M>,
    pass: &Pass,
    t: i8,
    read_exits: &(dyn Fn(&mut Vec<u8>, u64) -> Result<()> + Sync),
) -> Result<()> {
    let (comm, progress, base) = (part.comm, part.progress, part.mine.start);
    let ranks = comm.size();
    let held = part.mine.end - base;
    let chunks = held.div_ceil(CHUNK);
    // Every rank knows the largest slice, so all run the same rounds.
    let most = largest_slice(part.index.level_size(part.n), ranks).div_ceil(CHUNK);
    let per_round = if ranks == 1 {
        most.max(1)
    } else {
        SEGMENT.div_ceil(CHUNK)
    };
    let rounds = most.div_ceil(per_round);
    let sink: Mutex<Vec<Vec<u8>>> = Mutex::new(Vec::new());
    let flush = |work: &mut Work| {
        if work.outbox.iter().any(|b| !b.is_empty()) {
            merge_outboxes(&mut sink.lock().unwrap(), std::mem::take(&mut work.outbox));
        }
    };
    let mut k = 0;
    loop {
        if k < rounds {
            let scan = (k * per_round).min(chunks)..((k + 1) * per_round).min(chunks);
            // Open, seed and settle, a chunk of the exits file at a time.
            let seeded = scan.into_par_iter().try_for_each_init(
                || (Vec::new(), Work::default()),
                |(buf, work), c| {
                    read_exits(buf, c)?;
                    progress.inc(pass.seed(buf, base + c * CHUNK, t, work));
                    flush(work);
                    Ok::<(), Error>(())
                },
            );
            together(comm, seeded, "could not read their exits files")?;
            k += 1;
        }
        let mut outbox = std::mem::take(&mut *sink.lock().unwrap());
        outbox.resize(ranks, Vec::new());
        let sent: u64 = outbox.iter().map(|b| b.len() as u64 / 8).sum();
        if comm.sum(sent) == 0 {
            // Nothing in flight anywhere.
            if k >= rounds {
                return Ok(());
            }
            continue;
        }
        let got = comm.exchange(outbox);
        // Every part is whole 8-byte messages, so the buffer cuts anywhere on 8 bytes.
        got.bytes().par_chunks(8 * CHUNK as usize).for_each_init(
            Work::default,
            |work, messages| {
                progress.inc(pass.apply(messages, work));
                flush(work);
            },
        );
    }
}

/// One threshold's pass over the lean state of the positions `base..` of the level (the
/// whole level in one process, a rank's slice over ranks).
struct Pass<'a> {
    rules: Rules,
    index: &'a Index,
    n: usize,
    /// The two bits of the positions held here, from `base` on.
    state: &'a Bits,
    /// Per chunk: whether a position of it was settled in this pass.
    dirty: &'a [AtomicBool],
    /// The first index held here.
    base: u64,
    /// Where what concerns another rank's position goes.
    remote: &'a dyn Remote,
}

/// A thread's buffers for a pass: the settled positions whose predecessors are to be
/// updated, the positions to check for a loss, and the messages for other ranks.
#[derive(Default)]
struct Work {
    /// Settled positions, `true` when won.
    stack: Vec<(Board, bool)>,
    /// Positions open to a loss to check.
    checks: Vec<Check>,
    /// The checks of the next round.
    next: Vec<Check>,
    /// Messages for other ranks, per rank (empty in a single process).
    outbox: Vec<Vec<u8>>,
}

/// A position open to a loss whose in-level children are being read, one a round: lost
/// if every one is won. Over ranks the position may be another rank's, which asked for
/// the children held here.
#[derive(Clone, Copy)]
struct Check {
    i: u64,
    board: Board,
    /// The pit of the next child to read.
    from: u8,
    /// The child read this round (its state word prefetched).
    child: u64,
}

impl Check {
    fn new(i: u64, board: Board, from: u8) -> Check {
        Check {
            i,
            board,
            from,
            child: u64::MAX,
        }
    }
}

impl Pass<'_> {
    /// Where position `i` of the level is in the state, if it is held here.
    #[inline]
    fn at(&self, i: u64) -> Option<u64> {
        let at = i.wrapping_sub(self.base);
        (at < self.state.len).then_some(at)
    }

    /// The state of position `i`, held here.
    #[inline]
    fn get(&self, i: u64) -> u64 {
        self.state.get(i - self.base)
    }

    /// Scans one chunk of the exits file (`exits`, from position `first`) at threshold
    /// `t`: seeds its wins (`b == t`), opens its positions with `b == -t` to a loss and
    /// checks them, and settles what follows. Returns the positions it settled.
    fn seed(&self, exits: &[u8], first: u64, t: i8, work: &mut Work) -> u64 {
        with_pits!(self.index.pits_per_side(), P => self.seed_p::<P>(exits, first, t, work))
    }

    /// [`Pass::seed`] with the pits per side known at compile time.
    fn seed_p<const P: usize>(&self, exits: &[u8], first: u64, t: i8, work: &mut Work) -> u64 {
        let (index, n) = (self.index, self.n);
        let mut settled = 0;
        // Most blocks hold no exit of `t` or `-t`: they are passed over in vector compares.
        const BLOCK: usize = 64;
        for (k, block) in exits.chunks(BLOCK).enumerate() {
            if !block
                .iter()
                .fold(false, |any, &b| any | (b as i8 == t) | (b as i8 == -t))
            {
                continue;
            }
            for (j, &b) in block.iter().enumerate() {
                let (i, b) = (first + (k * BLOCK + j) as u64, b as i8);
                if b == t && self.settle(i, WON) {
                    work.stack.push((index.unrank(n, i), true));
                    settled += 1;
                } else if b == -t {
                    self.state.change(i - self.base, |s| s == OPEN_NOT, OPEN);
                    work.checks.push(Check::new(i, index.unrank(n, i), 0));
                }
            }
            if work.checks.len() >= BATCH {
                settled += self.check_p::<P>(work);
            }
            if !work.stack.is_empty() {
                settled += self.drain_p::<P>(work);
            }
        }
        settled += self.check_p::<P>(work);
        settled + self.drain_p::<P>(work)
    }

    /// Takes in the messages other ranks sent (words of [`message`]) about positions held
    /// here, and settles what follows, a batch at a time (the state words of a batch's
    /// positions prefetched before any is read). Returns the positions it settled.
    fn apply(&self, messages: &[u8], work: &mut Work) -> u64 {
        with_pits!(self.index.pits_per_side(), P => self.apply_p::<P>(messages, work))
    }

    /// [`Pass::apply`] with the pits per side known at compile time.
    fn apply_p<const P: usize>(&self, messages: &[u8], work: &mut Work) -> u64 {
        let (index, n) = (self.index, self.n);
        let mut settled = 0;
        for batch in messages.chunks(8 * BATCH) {
            for m in message::words(batch).map(message::decode) {
                if let Message::Settled { qi, .. } | Message::Lost { qi } = m {
                    self.state.prefetch(qi - self.base);
                }
            }
            for m in message::words(batch).map(message::decode) {
                match m {
                    // A child of `qi` settled on another rank: as a predecessor here.
                    Message::Settled { qi, won: false } => {
                        if self.settle(qi, WON) {
                            work.stack.push((index.unrank(n, qi), true));
                            settled += 1;
                        }
                    }
                    Message::Settled { qi, won: true } => {
                        if self.get(qi) == OPEN {
                            work.checks.push(Check::new(qi, index.unrank(n, qi), 0));
                        }
                    }
                    // A check of `qi` found every child won.
                    Message::Lost { qi } => {
                        if self.settle(qi, LOST) {
                            work.stack.push((index.unrank(n, qi), false));
                            settled += 1;
                        }
                    }
                    // A check of another rank's `qi`, going on at its child by `pit`.
                    Message::Check { qi, pit, .. } => {
                        work.checks.push(Check::new(qi, index.unrank(n, qi), pit));
                    }
                }
            }
            settled += self.check_p::<P>(work);
            settled += self.drain_p::<P>(work);
        }
        settled
    }

    /// Settles lost the positions of `work.checks` still open to a loss whose in-level
    /// children are all won, onto `work.stack`, and empties the checks. As the compact
    /// state's checks (DESIGN.md section 5.2), in rounds: each check's next child is ranked
    /// and prefetched, then, once every check has its own, the children are read; a check
    /// whose child is won goes on to the next round, one with no child left is lost. So the
    /// cache misses of a round overlap, and a check stops at its first child not won.
    /// Over ranks a check whose next child is another rank's goes on there (a message), and
    /// one of another rank's position that finds no child left tells it it is lost.
    /// Returns the positions it settled.
    fn check_p<const P: usize>(&self, work: &mut Work) -> u64 {
        let (index, n) = (self.index, self.n);
        let Work {
            stack,
            checks,
            next,
            outbox,
        } = work;
        checks.retain(|c| self.at(c.i).is_none() || self.get(c.i) == OPEN);
        let mut settled = 0;
        while !checks.is_empty() {
            next.clear();
            for c in checks.iter() {
                let mut found = None;
                for_each_stay_p::<P>(&c.board, self.rules, c.from as usize, |o, child| {
                    found = Some((o as u8, index.rank_in_p::<P>(child, n)));
                    false
                });
                match found {
                    Some((o, ci)) => match self.at(ci) {
                        Some(at) => {
                            self.state.prefetch(at);
                            next.push(Check {
                                from: o + 1,
                                child: ci,
                                ..*c
                            });
                        }
                        None => {
                            let m = Message::Check {
                                qi: c.i,
                                pit: o,
                                skip: NO_PIT,
                            };
                            self.remote.send(outbox, ci, m);
                        }
                    },
                    None if self.at(c.i).is_some() => {
                        if self.settle(c.i, LOST) {
                            stack.push((c.board, false));
                            settled += 1;
                        }
                    }
                    None => self.remote.send(outbox, c.i, Message::Lost { qi: c.i }),
                }
            }
            checks.clear();
            checks.extend(next.iter().filter(|c| self.get(c.child) == WON));
        }
        settled
    }

    /// Settles position `i` (held here) as `to` (won or lost) if it is unsettled (and, to
    /// lose it, open to a loss); whether this call did.
    fn settle(&self, i: u64, to: u64) -> bool {
        let from = |s: u64| if to == WON { unsettled(s) } else { s == OPEN };
        let at = i - self.base;
        let done = self.state.change(at, from, to);
        if done {
            self.dirty[(at / CHUNK) as usize].store(true, SeqCst);
        }
        done
    }

    /// Settles what the positions on `work.stack` (settled, `true` when won) lead to,
    /// until none is left: a lost position's unsettled predecessors are won; a won
    /// position's predecessors open to a loss are checked ([`Pass::check_p`]), and lost if
    /// every in-level child of theirs is won. Predecessors ranked near the board they are
    /// un-sown from, as the fast state's are (DESIGN.md section 5.2), and a long cascade
    /// split with another thread; a predecessor another rank holds is told of its child by
    /// a message. Returns the positions it settled.
    fn drain_p<const P: usize>(&self, work: &mut Work) -> u64 {
        let (index, n) = (self.index, self.n);
        let made = &mut RankBase::default();
        let mut settled = 0;
        // The predecessors of a batch of settled positions, their state words prefetched,
        // updated once the whole batch is generated: a random read of the state is a cache
        // miss, and a batch's work overlaps them.
        let mut preds: Vec<(u64, Board, bool)> = Vec::new();
        while !work.stack.is_empty() {
            if work.stack.len() >= SPLIT_AT {
                let mut half = Work {
                    stack: work.stack.split_off(work.stack.len() / 2),
                    ..Work::default()
                };
                let (a, b) =
                    rayon::join(|| self.drain_p::<P>(&mut half), || self.drain_p::<P>(work));
                merge_outboxes(&mut work.outbox, half.outbox);
                return settled + a + b;
            }
            preds.clear();
            for _ in 0..work.stack.len().min(BATCH) {
                let (board, won) = work.stack.pop().unwrap();
                let base_of = |base: &Board, opp_empty: u64, out: &mut RankBase| {
                    index.rank_base_p::<P>(base, opp_empty, n, out)
                };
                for_each_unmove_near_p::<P, _>(
                    &board,
                    self.rules,
                    made,
                    base_of,
                    |q, stored, top, low, near, _| {
                        if stored {
                            let qi = index.rank_pred_p::<P>(near, q, top, low);
                            match self.at(qi) {
                                Some(at) => {
                                    self.state.prefetch(at);
                                    preds.push((qi, *q, won));
                                }
                                None => {
                                    let m = Message::Settled { qi, won };
                                    self.remote.send(&mut work.outbox, qi, m);
                                }
                            }
                        }
                    },
                );
            }
            for &(qi, q, won) in &preds {
                if !won {
                    if self.settle(qi, WON) {
                        work.stack.push((q, true));
                        settled += 1;
                    }
                } else if self.get(qi) == OPEN {
                    work.checks.push(Check::new(qi, q, 0));
                }
            }
            settled += self.check_p::<P>(work);
        }
        settled
    }
}

#[cfg(test)]
mod tests;
