//! The backward pass's work at one threshold `t`: settling the positions its exits seed
//! (won at `t`, lost at `-t`) and everything they settle in turn by predecessor
//! propagation (DESIGN.md section 5.1), over the whole level in a single process or one
//! rank's slice of it (section 5.4). `rounds.rs` runs it threshold by threshold.

use std::ops::Range;
use std::path::Path;

use super::state::{threshold_bit, Encoding, State, BLOCK};
use super::{StateKind, Values};
use crate::db::checkpoint::CheckpointHeader;
use crate::error::Result;
use crate::game::index::{Index, RankBase};
use crate::game::pits::with_pits;
use crate::game::rules::{for_each_stay_p, for_each_unmove_near_p, Board, Rules};
use crate::util::BATCH;

/// A stack of settled positions this long is split between threads.
const SPLIT_AT: usize = 1 << 12;

/// No pit: a check that knows none of the position's children.
pub(crate) const NO_PIT: u8 = u8::MAX;

/// What the one backward pass (this file and `rounds.rs`) needs of a solver state: where a
/// position is held, how a threshold's seeds are found, what a settled child does to a
/// predecessor, what a check is, and what a threshold's end and a save do. Implemented by
/// the three states: [`super::Fast`] and [`super::Compact`] over their cells (the seeds by
/// [`seed_cells`]), [`super::Lean`] over its two bits and its files.
pub(crate) trait Settle: Sized + Send + Sync + 'static {
    /// Which state this is.
    const STATE: StateKind;
    /// The state's memory during the pass: what the forward pass or a checkpoint gives,
    /// and the level's values come from.
    type Held: Send + Sync;

    /// Positions `state` holds.
    fn held(state: &Self::Held) -> u64;

    /// A hint that position `at`'s state (held here) will be read soon.
    fn prefetch(state: &Self::Held, at: u64);

    /// Settles the positions of `range` (indices of the level held here, from a multiple
    /// of [`CHUNK`](crate::util::CHUNK) of the slice and at most one) that threshold `t` seeds, and everything
    /// they settle here in turn ([`Backward::drain_p`]). Returns the positions handled.
    fn seed_range<const P: usize>(
        back: &Backward<Self>,
        t: i8,
        range: Range<u64>,
        work: &mut Buffers,
    ) -> u64;

    /// Tells position `qi` (held here) that a child of it settled at threshold `t`, won
    /// or lost for the child's side to move, by its move from pit `o`
    /// ([`NO_PIT`] if not known); a position this settles goes on the stack with
    /// its board, and one that may be lost (compact, lean) on the checks.
    fn update<const P: usize>(
        back: &Backward<Self>,
        qi: u64,
        board: impl FnOnce() -> Board,
        won: bool,
        o: u8,
        t: i8,
        out: &mut Queues,
    );

    /// Goes on with a check whose child `c.first` was prefetched a batch ago (compact,
    /// lean).
    fn check<const P: usize>(back: &Backward<Self>, c: &Check, t: i8, out: &mut Queues);

    /// Goes on with another rank's check of position `qi` at its child by `pit`, held here;
    /// the child by `skip` is known won (compact, lean).
    fn continue_check<const P: usize>(
        back: &Backward<Self>,
        qi: u64,
        board: Board,
        pit: u8,
        skip: u8,
        t: i8,
        out: &mut Queues,
    );

    /// Settles position `qi` (held here) lost at `-t`, as a check found every in-level
    /// child of it won; whether this call did.
    fn lose(back: &Backward<Self>, qi: u64, t: i8) -> bool;

    /// After threshold `t`'s rounds stopped, every thread and message done: `done` if the
    /// threshold is, else paused for a save. The lean state says here whether its pass
    /// read its files whole, and at a threshold's end writes what it settled to its values
    /// file. Collective errors are the caller's.
    fn after(_state: &mut Self::Held, _t: i8, _done: bool) -> Result<()> {
        Ok(())
    }

    /// Saves `state` as the checkpoint `path`, described by `head` (its encoding, sizes
    /// and checksum filled in here): no thread touches it, and nothing is in flight.
    fn save(state: &mut Self::Held, path: &Path, head: CheckpointHeader) -> Result<()>;

    /// The values of the positions held, once every threshold is done: each settled
    /// position's value, 0 for the others (draws).
    fn into_values(state: Self::Held) -> Values;
}

/// The states whose cells hold each position's best exit until it is settled (fast and
/// compact): their seeds are found in the cells by [`seed_cells`].
pub(crate) trait SettleCells: Encoding + Settle<Held = State<Self>> {
    /// Settles the position at `at` of `back`'s state at value `v` unless it is settled
    /// already; `seen` is its exit byte as last read, unsettled. Whether this call did.
    fn settle(back: &Backward<Self>, at: usize, seen: i8, v: i8) -> bool;

    /// Settles a seed of threshold `t` that [`Encoding::seeds`] found, at `at` (index
    /// `i`), won or (fast) lost; a lost one of the compact state may be lost, and its
    /// children are checked first. `board` gives its board.
    fn seed<const P: usize>(
        back: &Backward<Self>,
        i: u64,
        at: usize,
        won: bool,
        t: i8,
        board: impl FnOnce() -> Board,
        out: &mut Queues,
    );
}

/// The states that confirm a loss by reading a position's in-level children (compact,
/// lean): a check goes one child a batch ([`next_child`]).
pub(crate) trait SettleChecks: Settle {
    /// Whether the child at `at` (held here) is settled and won for its side to move.
    fn won(back: &Backward<Self>, at: u64) -> bool;

    /// Settles the checked position at `at` (held here; `code` its byte as the check saw
    /// it, compact) lost at `-t`, every in-level child of it being won; whether this call
    /// did.
    fn lose_checked(back: &Backward<Self>, at: u64, code: i8, t: i8) -> bool;
}

/// A position that is lost if all its in-level children are won (its best exit gives at
/// most `-t`, compact and lean): its byte as read (compact), its board, the pit of a move
/// whose child is known won ([`NO_PIT`] if none), and the pit and index of the next
/// child to read, whose cell is being prefetched.
#[derive(Clone, Copy)]
pub(crate) struct Check {
    pub(super) qi: u64,
    pub(super) code: i8,
    pub(super) board: Board,
    pub(super) skip: u8,
    pub(super) pit: u8,
    pub(super) first: u64,
}

/// What the backward pass of one rank's slice tells another rank about a position that
/// rank holds (DESIGN.md section 5.4); the ranks put it in words of their own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Message {
    /// A child of position `qi` settled: won for the child's side to move if `won`, lost
    /// if not.
    Settled { qi: u64, won: bool },
    /// Every in-level child of position `qi` is won: `qi` is lost (compact and lean).
    Lost { qi: u64 },
    /// Whether position `qi` (maybe another rank's) is lost goes on being checked at its
    /// child by `pit`, held by the receiver; its child by `skip` is known won ([`NO_PIT`]:
    /// none) (compact and lean).
    Check { qi: u64, pit: u8, skip: u8 },
}

/// Where the backward pass sends what concerns a position it does not hold.
pub(crate) trait Remote: Sync {
    /// Puts `m` in `outbox` for the holder of position `to` of the level.
    fn send(&self, outbox: &mut Vec<Vec<u8>>, to: u64, m: Message);
}

/// Per-thread buffers of the backward pass, reused across tasks.
#[derive(Default)]
pub(crate) struct Buffers {
    /// Settled positions whose predecessors are still to be told: index, board, and
    /// whether it is won for its side to move.
    pub(super) stack: Vec<(u64, Board, bool)>,
    /// Predecessors of a batch of settled positions: index, board, whether the settled
    /// child is won for its side to move, and the pit of the move to it; their cells are
    /// being prefetched.
    pub(super) pending: Vec<(u64, Board, bool, u8)>,
    /// The predecessors of the batch after, being generated.
    pub(super) ahead: Vec<(u64, Board, bool, u8)>,
    /// Positions that may be lost (compact, lean), whose next child to read is being
    /// prefetched; read after the next batch.
    pub(super) checks: Vec<Check>,
    /// The same, queued during this batch.
    pub(super) checks_ahead: Vec<Check>,
    /// Messages for other ranks, per rank, in the words [`Remote::send`] writes (empty in
    /// a single process).
    pub(crate) outbox: Vec<Vec<u8>>,
    /// The lean state: the chunk of the exits file being seeded.
    pub(super) exits: Vec<u8>,
}

/// Where the backward pass puts what it finds: positions settled, checks to go on with
/// after the next batch, messages for other ranks.
pub(crate) struct Queues<'w> {
    pub(super) stack: &'w mut Vec<(u64, Board, bool)>,
    pub(super) checks: &'w mut Vec<Check>,
    pub(super) outbox: &'w mut Vec<Vec<u8>>,
}

/// The backward pass over the positions `base..base + state.len()` of level `n`: the
/// whole level in a single process, one rank's slice over ranks. What concerns a position
/// outside goes to `remote`.
pub(crate) struct Backward<'a, E: Settle> {
    pub(crate) rules: Rules,
    pub(crate) index: &'a Index,
    /// The level: seeds on every board.
    pub(crate) n: usize,
    pub(crate) state: &'a E::Held,
    /// The first index `state` holds.
    pub(crate) base: u64,
    pub(crate) remote: &'a dyn Remote,
}

impl<E: Settle> Backward<'_, E> {
    /// Settles the positions of `range` (indices of the level, held here) that threshold
    /// `t` seeds, and everything they settle here in turn. Returns the positions handled.
    pub(crate) fn seed_range(&self, t: i8, range: Range<u64>, work: &mut Buffers) -> u64 {
        with_pits!(self.index.pits_per_side(), P => E::seed_range::<P>(self, t, range, work))
    }

    /// Takes in what another rank sent about a position held here, `m`, at threshold `t`:
    /// what it settles goes on `work`'s stack, for [`Backward::drain`].
    pub(crate) fn receive(&self, m: Message, t: i8, work: &mut Buffers) {
        with_pits!(self.index.pits_per_side(), P => self.receive_p::<P>(m, t, work))
    }

    /// [`Backward::receive`] with the pits per side, `P`, known at compile time.
    fn receive_p<const P: usize>(&self, m: Message, t: i8, work: &mut Buffers) {
        let (index, n) = (self.index, self.n);
        let mut out = work.queues();
        match m {
            Message::Settled { qi, won } => {
                E::update::<P>(self, qi, || index.unrank(n, qi), won, NO_PIT, t, &mut out)
            }
            Message::Lost { qi } => {
                if E::lose(self, qi, t) {
                    out.stack.push((qi, index.unrank(n, qi), false));
                }
            }
            Message::Check { qi, pit, skip } => {
                E::continue_check::<P>(self, qi, index.unrank(n, qi), pit, skip, t, &mut out)
            }
        }
    }

    /// Propagates every settled position on the stack to its predecessors at threshold
    /// `t` until nothing more is settled here. Returns the positions handled.
    pub(crate) fn drain(&self, t: i8, work: &mut Buffers) -> u64 {
        with_pits!(self.index.pits_per_side(), P => self.drain_p::<P>(t, work))
    }

    /// [`Backward::drain`] with the pits per side, `P`, known at compile time: the
    /// un-moves, their ranks and the updates unroll for the board size.
    pub(super) fn drain_p<const P: usize>(&self, t: i8, work: &mut Buffers) -> u64 {
        let held = E::held(self.state);
        let mut done = 0;
        // What ranking each settled position's base board leaves, refilled per position.
        let made = &mut RankBase::default();
        while !work.stack.is_empty()
            || !work.pending.is_empty()
            || !work.checks.is_empty()
            || !work.checks_ahead.is_empty()
        {
            if work.stack.len() >= SPLIT_AT {
                // A cascade this large would keep one thread busy while the others run
                // out of chunks (level 20: no speed-up at all from a second thread).
                // Hand half of it to rayon, which lets an idle thread take it.
                let half = work.stack.split_off(work.stack.len() / 2);
                let ((a, outbox), b) = rayon::join(
                    || {
                        let mut other = Buffers {
                            stack: half,
                            ..Buffers::default()
                        };
                        (self.drain_p::<P>(t, &mut other), other.outbox)
                    },
                    || self.drain_p::<P>(t, work),
                );
                work.merge(outbox);
                return done + a + b;
            }
            let Buffers {
                stack,
                pending,
                ahead,
                checks,
                checks_ahead,
                outbox,
                ..
            } = &mut *work;
            // A pipeline of two batches: generate the predecessors of the next batch and
            // prefetch their cells, then update those of the batch before, whose cells
            // have had a whole batch's time to arrive.
            ahead.clear();
            for _ in 0..stack.len().min(BATCH) {
                let (_, board, won) = stack.pop().unwrap();
                done += 1;
                // Predecessors are ranked from the board they are un-sown from, only
                // below the highest pit un-sowing touched.
                let base_of = |base: &Board, opp_empty: u64, out: &mut RankBase| {
                    self.index.rank_base_p::<P>(base, opp_empty, self.n, out)
                };
                for_each_unmove_near_p::<P, _>(
                    &board,
                    self.rules,
                    made,
                    base_of,
                    #[inline(always)]
                    |q, stored, top, low, near, o| {
                        if stored {
                            let qi = self.index.rank_pred_p::<P>(near, q, top, low);
                            let at = qi.wrapping_sub(self.base);
                            if at < held {
                                E::prefetch(self.state, at);
                                ahead.push((qi, *q, won, o as u8));
                            } else {
                                self.remote.send(outbox, qi, Message::Settled { qi, won });
                            }
                        }
                    },
                );
            }
            let mut out = Queues {
                stack,
                checks: checks_ahead,
                outbox,
            };
            for &(qi, q, won, o) in pending.iter() {
                E::update::<P>(self, qi, || q, won, o, t, &mut out);
            }
            // The checks queued a batch ago: their first children have had time to arrive.
            for c in checks.iter() {
                E::check::<P>(self, c, t, &mut out);
            }
            checks.clear();
            std::mem::swap(checks, checks_ahead);
            std::mem::swap(pending, ahead);
        }
        done
    }
}

impl Buffers {
    /// The queues that settling a seed or a message fills.
    pub(super) fn queues(&mut self) -> Queues<'_> {
        Queues {
            stack: &mut self.stack,
            checks: &mut self.checks_ahead,
            outbox: &mut self.outbox,
        }
    }

    /// Appends another thread's outbox to this one.
    pub(crate) fn merge(&mut self, other: Vec<Vec<u8>>) {
        merge_outboxes(&mut self.outbox, other);
    }
}

/// [`Settle::seed_range`] of the states whose cells hold the best exits (fast, compact):
/// the blocks of the threshold map that hold `t`, each scanned in its cells.
#[inline]
pub(super) fn seed_cells<E: SettleCells, const P: usize>(
    back: &Backward<E>,
    t: i8,
    range: Range<u64>,
    work: &mut Buffers,
) -> u64 {
    let mut settled = 0;
    let (lo, hi) = (
        (range.start - back.base) as usize,
        (range.end - back.base) as usize,
    );
    let bit = threshold_bit(t);
    // Seeds come in index order: each is unranked from the one before.
    let mut cursor = back.index.cursor(back.n);
    let mut from = lo;
    while from < hi {
        let block = from / BLOCK;
        let to = ((block + 1) * BLOCK).min(hi);
        let scan = back.state.blocks[block] & bit != 0;
        let start = from;
        from = to;
        if !scan {
            continue;
        }
        // The seeds of the block as two masks first, in a loop without calls or
        // unpredictable branches (most blocks hold few seeds). A seed is won at `t` by
        // its exit, or lost at `-t` when no move stays in the level any more and its
        // exit gives `-t`. A seed settled by a cascade meanwhile fails in `settle`,
        // and one made a seed by a cascade is settled by that cascade.
        let (mut seeds, wins) = back.state.seeds(start, to, t);
        while seeds != 0 {
            let j = seeds.trailing_zeros() as usize;
            seeds &= seeds - 1;
            let won = wins >> j & 1 != 0;
            let at = start + j;
            let i = back.base + at as u64;
            let board = || *back.index.seek_p::<P>(&mut cursor, i);
            E::seed::<P>(back, i, at, won, t, board, &mut work.queues());
            // Seeds are gathered into a batch before their predecessors are
            // generated: one seed alone has too few for the prefetches to overlap.
            if work.stack.len() >= BATCH || work.checks_ahead.len() >= BATCH {
                settled += back.drain_p::<P>(t, work);
            }
        }
    }
    settled + back.drain_p::<P>(t, work)
}

impl Check {
    /// A check of position `qi`, its byte seen as `code` (compact; the lean state keeps
    /// none), the child by pit `skip` known won ([`NO_PIT`]: none), from its first child.
    #[inline(always)]
    pub(super) fn new(qi: u64, code: i8, board: Board, skip: u8) -> Check {
        Check {
            qi,
            code,
            board,
            skip,
            pit: 0,
            first: 0,
        }
    }
}

/// [`Settle::check`] of the states that read children: the child prefetched a batch ago
/// is read, and if won the check goes on with the next one.
#[inline]
pub(super) fn check_next<E: SettleChecks, const P: usize>(
    back: &Backward<E>,
    c: &Check,
    t: i8,
    out: &mut Queues,
) {
    if E::won(back, c.first - back.base) {
        next_child::<E, P>(back, c, c.pit as usize + 1, t, out);
    }
}

/// [`Settle::continue_check`] of the states that read children: another rank's check of
/// position `qi` goes on here at its child by `pit` (its byte, read only if `qi` is held
/// here, guessed `-t`).
#[inline]
pub(super) fn check_on<E: SettleChecks, const P: usize>(
    back: &Backward<E>,
    qi: u64,
    board: Board,
    pit: u8,
    skip: u8,
    t: i8,
    out: &mut Queues,
) {
    next_child::<E, P>(back, &Check::new(qi, -t, board, skip), pit as usize, t, out);
}

/// The next in-level child of check `c` from pit `from` on (but the known one): ranked,
/// prefetched and queued on the checks for the batch after, so that no child's cache miss
/// is waited for; when none is left, every child is won, and the position is lost at `t`
/// and goes on the stack. Over ranks, a child held by another rank sends the check on to
/// that rank, and a position lost there is told its holder.
#[inline]
pub(super) fn next_child<E: SettleChecks, const P: usize>(
    back: &Backward<E>,
    c: &Check,
    from: usize,
    t: i8,
    out: &mut Queues,
) {
    let mut next = None;
    for_each_stay_p::<P>(&c.board, back.rules, from, |o, child| {
        if o as u8 == c.skip {
            return true;
        }
        next = Some((o, back.index.rank_in_p::<P>(child, back.n)));
        false
    });
    let held = E::held(back.state);
    match next {
        Some((pit, ci)) => {
            let at = ci.wrapping_sub(back.base);
            if at < held {
                E::prefetch(back.state, at);
                out.checks.push(Check {
                    pit: pit as u8,
                    first: ci,
                    ..*c
                });
            } else {
                let m = Message::Check {
                    qi: c.qi,
                    pit: pit as u8,
                    skip: c.skip,
                };
                back.remote.send(out.outbox, ci, m);
            }
        }
        None => {
            let at = c.qi.wrapping_sub(back.base);
            if at < held {
                if E::lose_checked(back, at, c.code, t) {
                    out.stack.push((c.qi, c.board, false));
                }
            } else {
                back.remote
                    .send(out.outbox, c.qi, Message::Lost { qi: c.qi });
            }
        }
    }
}

/// Appends the outbox `other` (messages per rank) to `mine`.
pub(crate) fn merge_outboxes(mine: &mut Vec<Vec<u8>>, other: Vec<Vec<u8>>) {
    if mine.len() < other.len() {
        mine.resize(other.len(), Vec::new());
    }
    for (mine, theirs) in mine.iter_mut().zip(other) {
        if mine.is_empty() {
            *mine = theirs;
        } else {
            mine.extend_from_slice(&theirs);
        }
    }
}
