//! The lean state (DESIGN.md section 5.6): a level solved with two bits of memory per
//! position, what else the algorithm needs kept on disk and read or written in index
//! order. Romein and Bal's way, with the thresholds of section 5.1, on the one backward
//! pass of every state (`backward.rs`, `rounds.rs`):
//!
//! - the forward pass writes each position's best exit `b` (section 5.1) to an exits file,
//!   one byte per position in index order, and keeps nothing of it in memory: reading the
//!   lower levels at random ([`exits_random`]), or as streams in windows of the level,
//!   each a streamed forward pass into a compact state of the window alone
//!   ([`exits_stream`]);
//! - a position is *unsettled* (`b` above `-t`: it cannot be lost at this threshold),
//!   *open to a loss* (unsettled and `b <= -t`, or no exit), *won* or *lost*, in two bits:
//!   the threshold it was settled at is not kept, since thresholds come in order;
//! - at threshold `t` a segment's seeds are found by reading its chunks of the exits
//!   file: the wins (`b == t`) are settled, the positions with `b == -t` opened to a loss
//!   and checked; a settled position's predecessors are updated as the compact state's
//!   are, but with no counter: a predecessor open to a loss whose child was just won has
//!   its other in-level children read again, one a batch, and is lost if every one is won;
//! - at a threshold's end, the positions settled in it are merged into a values file (one
//!   byte per position, 0 while unsettled: a settled value is never 0), in index order,
//!   the chunks where something was settled only. What is never settled is a draw;
//! - a checkpoint ([`Lean`]'s save) is the two bits, with the files synced and their
//!   checksum: between thresholds and inside one at a segment's end, as the other states'.

use std::fs::File;
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::{
    AtomicBool, AtomicU64,
    Ordering::{Relaxed, SeqCst},
};
use std::sync::Mutex;

use rayon::prelude::*;

use super::backward::{
    check_next, check_on, next_child, Backward, Buffers, Check, Queues, Settle, SettleChecks,
    NO_PIT,
};
use super::cells::Cells;
use super::forward::{forward_spilled, forward_stream, Window};
use super::raises::Spilled;
use super::rounds::Partition;
use super::state::{exit_and_stay, threshold_bit, Encoding, State};
use super::{byte_state, lean_windows, Compact, Fast, StateKind, Values};
use crate::db::checkpoint::{lean_checksum, write_checkpoint, Checkpoint, CheckpointHeader};
use crate::db::layout::largest_slice;
use crate::error::{Error, Result};
use crate::game::index::Index;
use crate::game::rules::{Board, Rules};
use crate::game::scan::{scan_exits, LowerValues, Stream, NO_EXIT};
use crate::solve::comm::{together, Comm};
use crate::util::{LevelBar, BATCH, CHUNK};

/// Unsettled, not open to a loss at this threshold.
const OPEN_NOT: u64 = 0;
/// Unsettled, open to a loss (its best exit is at most `-t`, or it has none).
const OPEN: u64 = 1;
/// Settled, won for its side to move.
const WON: u64 = 2;
/// Settled, lost for its side to move.
const LOST: u64 = 3;

/// Positions per word of the state (`StateKind::bytes` counts such words).
const PER_WORD: u64 = 32;

/// The high bit of each position's two in a word: set where it is settled (won or lost).
const SETTLED_BITS: u64 = 0xAAAA_AAAA_AAAA_AAAA;

/// Exits scanned at once when a threshold seeds: most such blocks hold no exit of `t` or
/// `-t`, and are passed over in vector compares.
const BLOCK: usize = 64;

/// Two bits per position, in words of 32 positions updated atomically, in anonymous
/// memory asked for huge pages ([`Cells`], viewed as words only).
struct Bits {
    cells: Cells,
    /// Positions held.
    len: u64,
}

impl Bits {
    fn new(len: u64) -> std::io::Result<Bits> {
        Ok(Bits {
            cells: Cells::zeroed(len.div_ceil(PER_WORD) as usize * 8)?,
            len,
        })
    }

    /// The words of the positions `at` (from a multiple of [`PER_WORD`]).
    fn words(&self, at: Range<u64>) -> &[AtomicU64] {
        debug_assert_eq!(at.start % PER_WORD, 0);
        &self.cells.words()[(at.start / PER_WORD) as usize..at.end.div_ceil(PER_WORD) as usize]
    }

    #[inline(always)]
    fn word(&self, i: u64) -> &AtomicU64 {
        &self.cells.words()[(i / PER_WORD) as usize]
    }

    /// The state of position `i`. Sequentially consistent, as are the changes: of two
    /// threads that each settle a child of one position and then read its other children,
    /// at least one sees both settled.
    #[inline(always)]
    fn get(&self, i: u64) -> u64 {
        (self.word(i).load(SeqCst) >> (2 * (i % PER_WORD))) & 3
    }

    /// Sets position `i` to `to` if its state is one `from` accepts; whether it did.
    #[inline(always)]
    fn change(&self, i: u64, from: impl Fn(u64) -> bool, to: u64) -> bool {
        let shift = 2 * (i % PER_WORD);
        self.word(i)
            .fetch_update(SeqCst, SeqCst, |w| {
                from((w >> shift) & 3).then_some((w & !(3 << shift)) | (to << shift))
            })
            .is_ok()
    }
}

fn unsettled(s: u64) -> bool {
    s == OPEN_NOT || s == OPEN
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
/// [`exits_random`] writes them), made window by window ([`lean_windows`]): the lower
/// levels are streamed once ([`forward_stream`]) into the first window's state, the raises
/// of each other window kept in a file of its own (unnamed, made at `scratch` with the
/// window's number), which then makes that window's exits with its own moves
/// ([`forward_spilled`]).
pub(crate) fn exits_stream<M: Comm, S: Stream + ?Sized>(
    part: &Partition<M>,
    lower: &S,
    exits: &File,
    scratch: &Path,
) -> Result<()> {
    match byte_state(part.n) {
        StateKind::Compact => exits_stream_with::<Compact, M, S>(part, lower, exits, scratch),
        _ => exits_stream_with::<Fast, M, S>(part, lower, exits, scratch),
    }
}

/// [`exits_stream`] with the windows' state in the encoding `E`.
fn exits_stream_with<E: Encoding, M: Comm, S: Stream + ?Sized>(
    part: &Partition<M>,
    lower: &S,
    exits: &File,
    scratch: &Path,
) -> Result<()> {
    // Every rank makes as many windows as the largest slice needs, so that all run the
    // same rounds.
    let size = part.index.level_size(part.n);
    let count = lean_windows(E::KIND, largest_slice(size, part.comm.size()));
    if largest_slice(size, part.comm.size()).div_ceil(count as u64) >> 40 != 0 {
        // A kept raise names its position in 40 bits; such a window's state would take
        // more than a terabyte.
        return Err(Error::Input(format!(
            "level {}: a window of the lean state's forward pass would hold 2^40 positions              or more; build it over more ranks",
            part.n
        )));
    }
    let spills = (1..count)
        .map(|k| Spilled::new(&scratch.with_extension(format!("raises{k}"))))
        .collect::<Result<Vec<_>>>();
    let spills = together(part.comm, spills, "could not make their files of raises")?;
    let first = Window { k: 0, count };
    let forwarded = forward_stream::<E, M, S>(part, lower, first, &spills)?;
    write_exits(part, first, &forwarded.state, exits)?;
    drop(forwarded);
    for (k, spilled) in (1..count).zip(spills) {
        let window = Window { k, count };
        let state = forward_spilled::<E, M>(part, window, spilled)?;
        write_exits(part, window, &state, exits)?;
    }
    Ok(())
}

/// Writes the best exits of `window` of this rank's slice, from its forward pass's
/// `state`, to their place in `exits`.
fn write_exits<E: Encoding, M: Comm>(
    part: &Partition<M>,
    window: Window,
    state: &State<E>,
    exits: &File,
) -> Result<()> {
    let made = window.of(part.mine.clone());
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
        .map_err(|e| file_error(part.n, "exits", e))
}

/// The lean state's two files (DESIGN.md section 5.6), each one byte a position of the
/// level in index order: the best exits, and the values settled so far (0 while
/// unsettled). Unnamed, or named beside the level where it is checkpointed.
pub(crate) struct LeanFiles {
    pub(crate) exits: File,
    pub(crate) values: File,
}

/// The lean state as the backward pass holds it: the two bits of the positions held, a
/// flag per chunk of them settled in the threshold running, and the two files.
pub(crate) struct LeanState {
    bits: Bits,
    /// Per chunk of [`CHUNK`] positions: whether one was settled since the last merge.
    dirty: Box<[AtomicBool]>,
    /// Per chunk: the thresholds its exits seed at ([`threshold_bit`]), so that a
    /// threshold reads only the chunks of the exits file where it seeds.
    seeds: Box<[u64]>,
    files: LeanFiles,
    /// The level.
    n: usize,
    /// The first error of a read of the exits file in the passes' threads, said at the
    /// end of the rounds.
    failed: Mutex<Option<Error>>,
}

impl LeanState {
    /// The state after the forward pass wrote `files.exits` (of `held` positions, the
    /// values file zeroed): open to a loss what has no exit, before any threshold's
    /// cascade may reach it. With the thresholds at which some position held may seed
    /// (those of its exits).
    pub(crate) fn fresh(files: LeanFiles, n: usize, held: u64) -> Result<(LeanState, u64)> {
        let mut state = LeanState::new(files, n, held)?;
        state.survey(true)?;
        let present = state.seeds.iter().fold(0, |a, b| a | b);
        Ok((state, present))
    }

    /// Reads the exits file for the thresholds each chunk seeds at, and with `open`,
    /// opens to a loss every position without an exit.
    fn survey(&mut self, open: bool) -> Result<()> {
        let (held, state) = (self.bits.len, &*self);
        let seeds = (0..held.div_ceil(CHUNK))
            .into_par_iter()
            .map_init(Vec::new, |b: &mut Vec<u8>, c| {
                let first = c * CHUNK;
                state.read_exits(b, first..(first + CHUNK).min(held))?;
                let mut present = 0;
                for (j, &b) in b.iter().enumerate() {
                    let b = b as i8;
                    if b == NO_EXIT {
                        if open {
                            state.bits.change(first + j as u64, |_| true, OPEN);
                        }
                    } else if b != 0 {
                        present |= threshold_bit(b);
                    }
                }
                Ok(present)
            })
            .collect::<Result<Vec<u64>>>()?;
        self.seeds = seeds.into_boxed_slice();
        Ok(())
    }

    /// The state `checkpoint` holds (at threshold `head.next`, its first `head.segment`
    /// segments done), with its `files`: their checksum checked against the checkpoint's,
    /// the values of thresholds `next` and below (written by a pass after the checkpoint,
    /// which runs again) cleared, and every chunk where a position settled at `next` is
    /// not in the values file yet marked for the threshold's merge.
    pub(crate) fn load(checkpoint: Checkpoint, files: LeanFiles) -> Result<LeanState> {
        let head = checkpoint.head;
        let path = checkpoint.path().to_path_buf();
        let mut state = LeanState::new(files, head.seeds, head.held)?;
        let mut sum = [0u8; 8];
        checkpoint.read(&mut [], &mut [state.bits.cells.bytes_mut(), &mut sum])?;
        let files = &state.files;
        let got = lean_checksum(&files.exits, &files.values, head.held, head.next)
            .map_err(|e| Error::io(&path, e))?;
        let want = u64::from_le_bytes(sum);
        if got != want {
            return Err(Error::format(
                &path,
                format!(
                    "the lean state's files are damaged (checksum {got:016x}, the checkpoint \
                     says {want:016x})"
                ),
            ));
        }
        state.survey(false)?;
        let next = head.next;
        let (held, values) = (head.held, &state.files.values);
        (0..held.div_ceil(CHUNK))
            .into_par_iter()
            .try_for_each_init(Vec::new, |v: &mut Vec<u8>, c| {
                let first = c * CHUNK;
                v.resize(CHUNK.min(held - first) as usize, 0);
                values
                    .read_exact_at(v, first)
                    .map_err(|e| state.io("values", e))?;
                let (mut stale, mut dirty) = (false, false);
                for (j, x) in v.iter_mut().enumerate() {
                    if (*x as i8).unsigned_abs() <= next {
                        stale |= *x != 0;
                        *x = 0;
                        dirty |= !unsettled(state.bits.get(first + j as u64));
                    }
                }
                state.dirty[c as usize].store(dirty, Relaxed);
                if stale {
                    values
                        .write_all_at(v, first)
                        .map_err(|e| state.io("values", e))?;
                }
                Ok(())
            })?;
        Ok(state)
    }

    fn new(files: LeanFiles, n: usize, held: u64) -> Result<LeanState> {
        let bits = Bits::new(held).map_err(|e| {
            Error::Resources(format!("cannot allocate the lean state of level {n}: {e}"))
        })?;
        Ok(LeanState {
            bits,
            dirty: (0..held.div_ceil(CHUNK))
                .map(|_| AtomicBool::new(false))
                .collect(),
            seeds: Box::default(),
            files,
            n,
            failed: Mutex::new(None),
        })
    }

    /// An error of the `what` file.
    fn io(&self, what: &str, e: std::io::Error) -> Error {
        file_error(self.n, what, e)
    }

    /// Reads the exits of the positions `at` (held here) into `buf`.
    fn read_exits(&self, buf: &mut Vec<u8>, at: Range<u64>) -> Result<()> {
        buf.resize((at.end - at.start) as usize, 0);
        self.files
            .exits
            .read_exact_at(buf, at.start)
            .map_err(|e| self.io("exits", e))
    }

    /// Settles position `at` as `to` (won or lost) if it is unsettled (and, to lose it,
    /// open to a loss); whether this call did.
    #[inline]
    fn settle(&self, at: u64, to: u64) -> bool {
        let from = |s: u64| if to == WON { unsettled(s) } else { s == OPEN };
        let done = self.bits.change(at, from, to);
        if done {
            self.dirty[(at / CHUNK) as usize].store(true, Relaxed);
        }
        done
    }

    /// The positions settled at `t` since the last merge into the values file: `t` for
    /// won, `-t` for lost, where it holds 0, in the chunks flagged.
    fn merge(&mut self, t: i8) -> Result<()> {
        let (held, state) = (self.bits.len, &*self);
        (0..held.div_ceil(CHUNK)).into_par_iter().try_for_each_init(
            Vec::new,
            |buf: &mut Vec<u8>, c| {
                if !state.dirty[c as usize].swap(false, Relaxed) {
                    return Ok(());
                }
                let first = c * CHUNK;
                let values = &state.files.values;
                buf.resize(CHUNK.min(held - first) as usize, 0u8);
                values
                    .read_exact_at(buf, first)
                    .map_err(|e| state.io("values", e))?;
                // A word at a time: most hold no position settled, and those that do
                // are visited by their settled bits alone.
                let words = state.bits.words(first..first + buf.len() as u64);
                for (k, word) in words.iter().enumerate() {
                    let w = word.load(Relaxed);
                    let mut settled = w & SETTLED_BITS;
                    while settled != 0 {
                        let bit = settled.trailing_zeros();
                        settled &= settled - 1;
                        let v = &mut buf[k * PER_WORD as usize + bit as usize / 2];
                        if *v == 0 {
                            let lost = (w >> (bit - 1)) & 3 == LOST;
                            *v = if lost { -t } else { t } as u8;
                        }
                    }
                }
                values
                    .write_all_at(buf, first)
                    .map_err(|e| state.io("values", e))
            },
        )
    }
}

/// The lean state (DESIGN.md section 5.6) in the one backward pass.
#[derive(Debug)]
pub(crate) enum Lean {}

impl Settle for Lean {
    const STATE: StateKind = StateKind::Lean;
    type Held = LeanState;

    #[inline(always)]
    fn held(state: &LeanState) -> u64 {
        state.bits.len
    }

    #[inline(always)]
    fn prefetch(state: &LeanState, at: u64) {
        crate::util::prefetch(state.bits.word(at));
    }

    /// Reads the range's chunk of the exits file: its wins (`b == t`) are settled, its
    /// positions with `b == -t` opened to a loss and checked, a batch at a time.
    fn seed_range<const P: usize>(
        back: &Backward<Lean>,
        t: i8,
        range: Range<u64>,
        work: &mut Buffers,
    ) -> u64 {
        let state = back.state;
        let at0 = range.start - back.base;
        if state.seeds[(at0 / CHUNK) as usize] & threshold_bit(t) == 0 {
            return 0;
        }
        let mut exits = std::mem::take(&mut work.exits);
        if let Err(e) = state.read_exits(&mut exits, at0..range.end - back.base) {
            state.failed.lock().unwrap().get_or_insert(e);
            work.exits = exits;
            return 0;
        }
        let mut settled = 0;
        // Seeds come in index order: each is unranked from the one before.
        let mut cursor = back.index.cursor(back.n);
        for (k, block) in exits.chunks(BLOCK).enumerate() {
            let any = block
                .iter()
                .fold(false, |any, &b| any | (b as i8 == t) | (b as i8 == -t));
            if !any {
                continue;
            }
            for (j, &b) in block.iter().enumerate() {
                let b = b as i8;
                if b != t && b != -t {
                    continue;
                }
                let at = at0 + (k * BLOCK + j) as u64;
                let i = back.base + at;
                if b == t {
                    if state.settle(at, WON) {
                        let board = *back.index.seek_p::<P>(&mut cursor, i);
                        work.stack.push((i, board, true));
                    }
                } else {
                    // Opened, unless settled already (by a cascade, or a threshold above).
                    if state.bits.change(at, unsettled, OPEN) {
                        let board = *back.index.seek_p::<P>(&mut cursor, i);
                        let c = Check::new(i, 0, board, NO_PIT);
                        next_child::<Lean, P>(back, &c, 0, t, &mut work.queues());
                    }
                }
                // Seeds are gathered into a batch before their predecessors are
                // generated, as the other states' are.
                if work.stack.len() >= BATCH || work.checks_ahead.len() >= BATCH {
                    settled += back.drain_p::<P>(t, work);
                }
            }
        }
        work.exits = exits;
        settled + back.drain_p::<P>(t, work)
    }

    #[inline]
    fn update<const P: usize>(
        back: &Backward<Lean>,
        qi: u64,
        board: impl FnOnce() -> Board,
        won: bool,
        o: u8,
        t: i8,
        out: &mut Queues,
    ) {
        let state = back.state;
        let at = qi - back.base;
        let s = state.bits.get(at);
        if !won {
            // The child is lost for its side to move: q wins by moving there.
            if unsettled(s) && state.settle(at, WON) {
                out.stack.push((qi, board(), true));
            }
        } else if s == OPEN {
            // The child is won (>= t): q is lost if every other in-level child is too.
            next_child::<Lean, P>(back, &Check::new(qi, 0, board(), o), 0, t, out);
        }
    }

    #[inline]
    fn check<const P: usize>(back: &Backward<Lean>, c: &Check, t: i8, out: &mut Queues) {
        check_next::<Lean, P>(back, c, t, out);
    }

    fn continue_check<const P: usize>(
        back: &Backward<Lean>,
        qi: u64,
        board: Board,
        pit: u8,
        skip: u8,
        t: i8,
        out: &mut Queues,
    ) {
        check_on::<Lean, P>(back, qi, board, pit, skip, t, out);
    }

    #[inline]
    fn lose(back: &Backward<Lean>, qi: u64, _t: i8) -> bool {
        back.state.settle(qi - back.base, LOST)
    }

    fn after(state: &mut LeanState, t: i8, done: bool) -> Result<()> {
        if let Some(e) = state.failed.lock().unwrap().take() {
            return Err(e);
        }
        if done {
            state.merge(t)?;
        }
        Ok(())
    }

    /// The two bits, then the checksum of the files (synced first) as they stand: every
    /// threshold above `head.next` merged into the values file, none of `next`'s.
    fn save(state: &mut LeanState, path: &Path, head: CheckpointHeader) -> Result<()> {
        let io = |e| Error::io(path, e);
        let files = &state.files;
        files.exits.sync_data().map_err(io)?;
        files.values.sync_data().map_err(io)?;
        let held = state.bits.len;
        let sum = lean_checksum(&files.exits, &files.values, held, head.next).map_err(io)?;
        let head = CheckpointHeader {
            encoding: StateKind::Lean.code(),
            held,
            ..head
        };
        write_checkpoint(
            path,
            head,
            &[],
            &[state.bits.cells.bytes_mut(), &sum.to_le_bytes()],
        )
    }

    fn into_values(state: LeanState) -> Values {
        Values::File(state.files.values, state.bits.len)
    }
}

impl SettleChecks for Lean {
    #[inline(always)]
    fn won(back: &Backward<Lean>, at: u64) -> bool {
        back.state.bits.get(at) == WON
    }

    #[inline]
    fn lose_checked(back: &Backward<Lean>, at: u64, _code: i8, _t: i8) -> bool {
        back.state.settle(at, LOST)
    }
}

#[cfg(test)]
mod tests;
