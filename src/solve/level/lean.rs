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
use std::time::{Duration, Instant};

use rayon::prelude::*;

use super::forward::{forward_stream, Window};
use super::rounds::{NoSaves, Partition};
use super::state::{exit_and_stay, Encoding};
use super::{byte_state, lean_windows, Compact, Fast, PhaseTimes, StateKind};
use crate::db::layout::largest_slice;
use crate::error::{Error, Result};
use crate::game::index::{Index, RankBase};
use crate::game::pits::with_pits;
use crate::game::rules::{for_each_stay_p, for_each_unmove_near_p, Board, Rules};
use crate::game::scan::{scan_exits, LowerValues, Stream, NO_EXIT};
use crate::solve::comm::Comm;
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
}

impl Bits {
    fn new(len: u64) -> Bits {
        Bits {
            words: (0..len.div_ceil(PER_WORD))
                .map(|_| AtomicU64::new(0))
                .collect(),
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

/// Solves level `n` of `index`'s board with the lean state in `files`: from its start
/// (`resumed` `None`: `forward` writes the best exits to the exits file, with
/// [`exits_random`] or [`exits_stream`]), or from a checkpoint once every threshold above
/// `next` is done (`resumed` is `next` and the times so far: the files are as they were
/// then, but for values of thresholds `next` and below, which are cleared). `saves` says
/// when a checkpoint is due between passes. Returns the time of the two passes; the
/// values file then holds the level's values.
#[allow(clippy::too_many_arguments)]
pub(crate) fn solve_lean(
    rules: Rules,
    index: &Index,
    n: usize,
    files: &LeanFiles,
    progress: &LevelBar,
    resumed: Option<(u8, PhaseTimes)>,
    forward: impl FnOnce(&File) -> Result<()>,
    saves: &mut dyn LeanSaves,
) -> Result<PhaseTimes> {
    let size = index.level_size(n);
    let LeanFiles { exits, values } = files;
    let io = |what: &str, e| file_error(n, what, e);
    let fresh = resumed.is_none();
    let (next, mut times) = match resumed {
        Some((next, times)) => (next, times),
        None => {
            let start = Instant::now();
            for (file, what) in [(values, "values"), (exits, "exits")] {
                // Zeros, whatever a file named so held before.
                file.set_len(0).map_err(|e| io(what, e))?;
                file.set_len(size).map_err(|e| io(what, e))?;
            }
            forward(exits)?;
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
    let state = Bits::new(size);
    let chunks = size.div_ceil(CHUNK);
    let read_exits = |buf: &mut Vec<u8>, c: u64| {
        let first = c * CHUNK;
        buf.resize(CHUNK.min(size - first) as usize, 0u8);
        exits.read_exact_at(buf, first).map_err(|e| io("exits", e))
    };
    // The state at `next`: the values above it won or lost, and open to a loss what has
    // no exit or one below `-next` (opened by a threshold done); values of `next` and
    // below, left by a pass stopped after the checkpoint, cleared (that pass runs again
    // and settles them again). From the start, `next` is `n`, and only the positions with
    // no exit are open: before any threshold's cascade may reach them.
    (0..chunks).into_par_iter().try_for_each_init(
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
    )?;
    let dirty: Vec<AtomicBool> = (0..chunks).map(|_| AtomicBool::new(false)).collect();
    let pass = Pass {
        rules,
        index,
        n,
        state: &state,
        dirty: &dirty,
    };
    for t in (1..=next as i8).rev() {
        // Open, seed and settle, a chunk of the exits file at a time.
        (0..chunks).into_par_iter().try_for_each_init(
            || (Vec::new(), Work::default()),
            |(buf, work), c| {
                read_exits(buf, c)?;
                let first = c * CHUNK;
                let settled = pass.seed(buf, first, t, work);
                progress.inc(settled);
                Ok::<(), Error>(())
            },
        )?;
        // The positions settled at `t` into the values file.
        (0..chunks)
            .into_par_iter()
            .try_for_each_init(Vec::new, |buf, c| {
                if !dirty[c as usize].swap(false, SeqCst) {
                    return Ok(());
                }
                let first = c * CHUNK;
                buf.resize(CHUNK.min(size - first) as usize, 0u8);
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
            })?;
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

/// One threshold's pass over the lean state.
struct Pass<'a> {
    rules: Rules,
    index: &'a Index,
    n: usize,
    state: &'a Bits,
    /// Per chunk: whether a position of it was settled in this pass.
    dirty: &'a [AtomicBool],
}

/// A thread's buffers for a pass: the settled positions whose predecessors are to be
/// updated, and the positions to check for a loss.
#[derive(Default)]
struct Work {
    /// Settled positions, `true` when won.
    stack: Vec<(Board, bool)>,
    /// Positions open to a loss to check.
    checks: Vec<Check>,
    /// The checks of the next round.
    next: Vec<Check>,
}

/// A position open to a loss whose in-level children are being read, one a round: lost
/// if every one is won.
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
    fn new(i: u64, board: Board) -> Check {
        Check {
            i,
            board,
            from: 0,
            child: u64::MAX,
        }
    }
}

impl Pass<'_> {
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
                    self.state.change(i, |s| s == OPEN_NOT, OPEN);
                    work.checks.push(Check::new(i, index.unrank(n, i)));
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

    /// Settles lost the positions of `work.checks` still open to a loss whose in-level
    /// children are all won, onto `work.stack`, and empties the checks. As the compact
    /// state's checks (DESIGN.md section 5.2), in rounds: each check's next child is ranked
    /// and prefetched, then, once every check has its own, the children are read; a check
    /// whose child is won goes on to the next round, one with no child left is lost. So the
    /// cache misses of a round overlap, and a check stops at its first child not won.
    /// Returns the positions it settled.
    fn check_p<const P: usize>(&self, work: &mut Work) -> u64 {
        let (index, n, state) = (self.index, self.n, self.state);
        let Work {
            stack,
            checks,
            next,
        } = work;
        checks.retain(|c| state.get(c.i) == OPEN);
        let mut settled = 0;
        while !checks.is_empty() {
            next.clear();
            for c in checks.iter() {
                let mut found = None;
                for_each_stay_p::<P>(&c.board, self.rules, c.from as usize, |o, child| {
                    found = Some((o, index.rank_in_p::<P>(child, n)));
                    false
                });
                match found {
                    Some((o, ci)) => {
                        state.prefetch(ci);
                        next.push(Check {
                            from: o as u8 + 1,
                            child: ci,
                            ..*c
                        });
                    }
                    None => {
                        if self.settle(c.i, LOST) {
                            stack.push((c.board, false));
                            settled += 1;
                        }
                    }
                }
            }
            checks.clear();
            checks.extend(next.iter().filter(|c| state.get(c.child) == WON));
        }
        settled
    }

    /// Settles position `i` as `to` (won or lost) if it is unsettled (and, to lose it,
    /// open to a loss); whether this call did.
    fn settle(&self, i: u64, to: u64) -> bool {
        let from = |s: u64| if to == WON { unsettled(s) } else { s == OPEN };
        let done = self.state.change(i, from, to);
        if done {
            self.dirty[(i / CHUNK) as usize].store(true, SeqCst);
        }
        done
    }

    /// Settles what the positions on `work.stack` (settled, `true` when won) lead to,
    /// until none is left: a lost position's unsettled predecessors are won; a won
    /// position's predecessors open to a loss are checked ([`Pass::check_p`]), and lost if
    /// every in-level child of theirs is won. Predecessors ranked near the board they are
    /// un-sown from, as the fast state's are (DESIGN.md section 5.2), and a long cascade
    /// split with another thread. Returns the positions it settled.
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
                            self.state.prefetch(qi);
                            preds.push((qi, *q, won));
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
                } else if self.state.get(qi) == OPEN {
                    work.checks.push(Check::new(qi, q));
                }
            }
            settled += self.check_p::<P>(work);
        }
        settled
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::util::unnamed_file;

    /// Fresh unnamed files in `dir`.
    fn files(dir: &Path) -> LeanFiles {
        LeanFiles {
            exits: unnamed_file(&dir.join("exits")).unwrap(),
            values: unnamed_file(&dir.join("values")).unwrap(),
        }
    }

    /// The bytes of `file`.
    fn read_all(file: &File, len: usize) -> Vec<u8> {
        let mut got = vec![0u8; len];
        file.read_exact_at(&mut got, 0).unwrap();
        got
    }

    /// Every level of small boards, both rule sets, solved with the lean state from the
    /// true lower levels, read at random and as streams (in windows): the values of the
    /// fast state, byte for byte.
    #[test]
    fn lean_levels_are_the_fast_ones() {
        for rules in [Rules::Awari, Rules::Oware] {
            for (pits, top) in [(2, 12), (3, 14), (4, 14), (5, 12), (6, 11)] {
                let index = Index::new(pits, top).unwrap();
                let truth = crate::solve::level::solve_in_memory(rules, &index, top);
                let all: Vec<&[u8]> = truth.iter().map(Vec::as_slice).collect();
                let dir = tempfile::tempdir().unwrap();
                let bar = LevelBar::new(false, 0, 0, "");
                for n in 0..=top {
                    let below = &all[..n];
                    let random = |f: &File| exits_random(rules, &index, n, below, f, &bar);
                    let part = Partition {
                        comm: &crate::solve::comm::Solo,
                        rules,
                        index: &index,
                        n,
                        mine: 0..index.level_size(n),
                        progress: &bar,
                    };
                    let stream = |f: &File| exits_stream(&part, below, f);
                    let (a, b) = (files(dir.path()), files(dir.path()));
                    let saves = &mut NoSaves;
                    solve_lean(rules, &index, n, &a, &bar, None, random, saves).unwrap();
                    solve_lean(rules, &index, n, &b, &bar, None, stream, saves).unwrap();
                    for (f, how) in [(a, "random"), (b, "stream")] {
                        assert!(
                            read_all(&f.values, truth[n].len()) == truth[n],
                            "{rules} P={pits} level {n}: lean ({how}) differs"
                        );
                    }
                }
                // Nothing left behind.
                assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
            }
        }
    }

    /// Saves at every pass, each a copy of the files and where it stands.
    struct Copies {
        len: usize,
        taken: Vec<(u8, Vec<u8>, Vec<u8>)>,
    }

    impl LeanSaves for Copies {
        fn due(&mut self) -> bool {
            true
        }

        fn save(&mut self, files: &LeanFiles, next: u8, _: PhaseTimes) {
            let (e, v) = (
                read_all(&files.exits, self.len),
                read_all(&files.values, self.len),
            );
            self.taken.push((next, e, v));
        }
    }

    /// A level resumed from each checkpoint, its files as a later pass left them (values of
    /// the checkpoint's threshold and below written since): the same values, and the
    /// checkpoint's checksum still holds on those files.
    #[test]
    fn lean_resumes_from_any_pass_with_later_files() {
        use crate::db::checkpoint::lean_checksum;
        for rules in [Rules::Awari, Rules::Oware] {
            let (pits, n) = (4, 13);
            let index = Index::new(pits, n).unwrap();
            let truth = crate::solve::level::solve_in_memory(rules, &index, n);
            let below: Vec<&[u8]> = truth[..n].iter().map(Vec::as_slice).collect();
            let dir = tempfile::tempdir().unwrap();
            let bar = LevelBar::new(false, 0, 0, "");
            let len = truth[n].len();
            let forward = |f: &File| exits_random(rules, &index, n, &below[..], f, &bar);
            let mut copies = Copies {
                len,
                taken: Vec::new(),
            };
            let fresh = files(dir.path());
            solve_lean(rules, &index, n, &fresh, &bar, None, forward, &mut copies).unwrap();
            assert_eq!(read_all(&fresh.values, len), truth[n]);
            // After the forward pass and after every pass but the last.
            assert_eq!(copies.taken.len(), n);
            let write = |f: &File, bytes: &[u8]| f.write_all_at(bytes, 0).unwrap();
            for (k, (next, exits, values)) in copies.taken.iter().enumerate() {
                let sum = |f: &LeanFiles| lean_checksum(&f.exits, &f.values, len as u64, *next);
                let then = files(dir.path());
                write(&then.exits, exits);
                write(&then.values, values);
                // Two passes later (or the level's end).
                let later = copies.taken.get(k + 2).map_or(&truth[n], |c| &c.2);
                let now = files(dir.path());
                write(&now.exits, exits);
                write(&now.values, later);
                assert_eq!(sum(&then).unwrap(), sum(&now).unwrap(), "{rules} at {next}");
                let no_forward = |_: &File| -> Result<()> { unreachable!("resumed") };
                let at = Some((*next, PhaseTimes::default()));
                solve_lean(rules, &index, n, &now, &bar, at, no_forward, &mut NoSaves).unwrap();
                assert!(
                    read_all(&now.values, len) == truth[n],
                    "{rules} level {n} resumed at {next} differs"
                );
                // A damaged file does not hold the checksum.
                let mut bad = values.clone();
                bad[len / 2] ^= 0x40;
                write(&then.values, &bad);
                assert_ne!(sum(&then).unwrap(), sum(&now).unwrap());
            }
        }
    }

    /// A level's windows: 11/32 of a byte per position at most, four for a large level
    /// (levels 28 and 29 of Awari, whose three would be 3/8 to within a few bytes), one
    /// for none.
    #[test]
    fn windows_keep_to_the_budget() {
        for len in [1 << 30, 1_482_519_324, 2_025_703_680, 203_648_015_935] {
            assert_eq!(lean_windows(StateKind::Compact, len), 4, "{len}");
            assert_eq!(lean_windows(StateKind::Fast, len), 7, "{len}");
        }
        assert_eq!(lean_windows(StateKind::Compact, 0), 1);
        for len in [1u64, 7, 64, 1000, 123_457] {
            let count = lean_windows(StateKind::Compact, len);
            let widest = StateKind::Compact.bytes(len.div_ceil(count as u64));
            assert!(
                widest * 32 <= len * 11 || count as u64 >= len,
                "{len}: {count}"
            );
        }
    }
}
