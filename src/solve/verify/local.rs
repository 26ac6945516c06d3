//! The local check of `awari verify`: every stored value against the values of its
//! moves (DESIGN.md section 5.3), with the lower levels read as streams ([`Streamed`]) or
//! every level in memory ([`Ctx::local_check`]).

use std::ops::Range;
use std::sync::atomic::{AtomicI8, Ordering::Relaxed};

use rayon::prelude::*;

use super::batch::{Batch, Bits, Ctx};
use super::mismatch::{Mismatch, Mismatches, SAMPLES};
use crate::db::stack::LevelStack;
use crate::error::Result;
use crate::game::index::Index;
use crate::game::pits::with_pits;
use crate::game::rules::{legal_moves, legal_moves_p, Board, Rules, MAX_PITS};
use crate::game::scan::{scan_uncaptures, LowerRun, Stream, NO_EXIT};
use crate::util::{prefetch, LevelBar, BATCH, CHUNK};

/// A hash of a capture: parent `q` of the level checked, child `c` of level `m`. Summed
/// over the captures found each way, it must agree.
#[inline]
fn edge_hash(q: u64, m: usize, c: u64) -> u64 {
    fn mix(mut x: u64) -> u64 {
        // splitmix64's finaliser.
        x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        x ^ (x >> 31)
    }
    mix(q ^ mix(c ^ (m as u64) << 57))
}

/// One level checked with its lower levels read as streams.
pub(super) struct Streamed<'a> {
    pub(super) rules: Rules,
    pub(super) index: &'a Index,
    pub(super) n: usize,
    /// The level's values.
    pub(super) values: &'a [u8],
    /// The levels below it, streamed: those of `reach`.
    pub(super) lower: &'a LevelStack,
    /// The levels a capture reaches from it.
    pub(super) reach: Range<usize>,
}

impl Streamed<'_> {
    /// The local check: every stored value against its moves. First the level's own
    /// positions: game ends and forced moves, and in-level moves from the stored values;
    /// a position whose moves so far give more than it holds is wrong (`bad`), one whose
    /// moves give exactly that is right so far (`ok`). Then the captures, from the levels
    /// below by un-captures, the same way. The wrong positions are `bad` or not `ok`.
    /// Returns the mismatches, and a problem if the two ways of finding the captures
    /// disagree.
    pub(super) fn local(&self, bar: &LevelBar) -> Result<(Mismatches, Option<String>)> {
        let (index, n, values) = (self.index, self.n, self.values);
        let size = index.level_size(n);
        let (ok, bad) = (Bits::new(size as usize), Bits::new(size as usize));
        let chunks = size.div_ceil(CHUNK);
        let (forward, moves) = (0..chunks)
            .into_par_iter()
            .map(|c| {
                let start = c * CHUNK;
                let end = (start + CHUNK).min(size);
                let got = with_pits!(index.pits_per_side(), P => {
                    self.own_moves_p::<P>(start..end, &ok, &bad)
                });
                bar.inc(end - start);
                got
            })
            .reduce(|| (0, 0), |a, b| (a.0.wrapping_add(b.0), a.1 + b.1));
        // The captures, from the levels below: the parent's value and both its bits
        // prefetched a batch ahead (the bits unprefetched, their loads were 80 % of this
        // pass's updates; perf, Oware level 22).
        let back = self.uncaptures(
            Some(bar),
            |q| {
                prefetch(&values[q as usize]);
                prefetch(ok.addr(q));
                prefetch(bad.addr(q));
            },
            |q, x, m, ci| {
                let v = values[q as usize] as i8;
                if x > v {
                    bad.set(q);
                } else if x == v {
                    ok.set(q);
                }
                edge_hash(q, m, ci)
            },
        )?;
        let edges = (back != (forward, moves)).then(|| {
            format!(
                "the level's {moves} capture moves and the {} un-captures of the levels below \
                 disagree (hashes {forward:016x} and {:016x}): a fault of the verifier, please \
                 report it",
                back.1, back.0
            )
        });
        // The wrong positions, the first ones with what their moves give.
        let found = (0..chunks)
            .into_par_iter()
            .map(|c| -> Result<Mismatches> {
                let start = c * CHUNK;
                let end = (start + CHUNK).min(size);
                let mut found = Mismatches::default();
                for i in start..end {
                    if bad.get(i) || !ok.get(i) {
                        let board = index.unrank(n, i);
                        let computed = if found.first.len() < SAMPLES {
                            self.value_of(&board)?
                        } else {
                            0
                        };
                        found.push(Mismatch {
                            index: i,
                            board,
                            stored: values[i as usize] as i8,
                            computed,
                        });
                    }
                }
                Ok(found)
            })
            .try_reduce(Mismatches::default, |a, b| Ok(a.merge(b)))?;
        Ok((found, edges))
    }

    /// The level's own moves for the positions `range`: game ends, forced moves and
    /// in-level moves set `ok` and `bad` as [`Streamed::local`] says, and each capture
    /// move is hashed. Returns the sum of the hashes and the number of capture moves. The
    /// pits per side, `P`, are known at compile time (the rules' reference move
    /// generator, specialised: a generic one cost verify twice a build's time).
    fn own_moves_p<const P: usize>(&self, range: Range<u64>, ok: &Bits, bad: &Bits) -> (u64, u64) {
        let (rules, index, n, values) = (self.rules, self.index, self.n, self.values);
        let (start, end) = (range.start, range.end);
        let (mut hash, mut count) = (0u64, 0u64);
        let mut board = index.unrank(n, start);
        let mut reads: Vec<(usize, u64)> = Vec::with_capacity(BATCH * MAX_PITS);
        let mut best = [NO_EXIT; BATCH];
        let mut i = start;
        while i < end {
            let k = ((end - i) as usize).min(BATCH);
            reads.clear();
            for (slot, b) in best[..k].iter_mut().enumerate() {
                let moves = legal_moves_p::<P>(&board, rules);
                *b = moves.terminal_value.unwrap_or(NO_EXIT);
                for m in moves.as_slice() {
                    if m.ends_game {
                        *b = n as i8;
                    } else if m.captured > 0 {
                        let c = n - m.captured as usize;
                        hash = hash.wrapping_add(edge_hash(
                            i + slot as u64,
                            c,
                            index.rank_in_p::<P>(&m.child, c),
                        ));
                        count += 1;
                    } else {
                        let ci = index.rank_in_p::<P>(&m.child, n);
                        prefetch(&values[ci as usize]);
                        reads.push((slot, ci));
                    }
                }
                if i + (slot as u64) + 1 < end {
                    index.next_p::<P>(&mut board);
                }
            }
            for &(slot, ci) in &reads {
                best[slot] = best[slot].max(-(values[ci as usize] as i8));
            }
            for (slot, &b) in best[..k].iter().enumerate() {
                let at = i + slot as u64;
                let v = values[at as usize] as i8;
                if b > v {
                    bad.set(at);
                } else if b == v {
                    ok.set(at);
                }
            }
            i += k as u64;
        }
        (hash, count)
    }

    /// What the moves of `board`, a position of the level, give: its value if the values
    /// it reads are right.
    fn value_of(&self, board: &Board) -> Result<i8> {
        let moves = legal_moves(board, self.rules);
        let mut best = moves.terminal_value.unwrap_or(NO_EXIT);
        for m in moves.as_slice() {
            let v = if m.ends_game {
                self.n as i8
            } else if m.captured > 0 {
                let c = self.n - m.captured as usize;
                let mut v = [0u8];
                self.lower
                    .read(c, self.index.rank_in(&m.child, c), &mut v)?;
                m.captured as i8 - v[0] as i8
            } else {
                -(self.values[self.index.rank_in(&m.child, self.n) as usize] as i8)
            };
            best = best.max(v);
        }
        Ok(best)
    }

    /// Every capture into this level, from the levels below read as streams (their
    /// positions in index order, a chunk per task, each handing its value to its parents
    /// by un-captures): `apply(parent, captured - v(child), child level, child)`, with
    /// `touch(parent)` a batch ahead. Returns the sum of what `apply` returned and the
    /// number of captures; advances `bar` by the level's size in all.
    fn uncaptures(
        &self,
        bar: Option<&LevelBar>,
        touch: impl Fn(u64) + Sync,
        apply: impl Fn(u64, i8, usize, u64) -> u64 + Sync,
    ) -> Result<(u64, u64)> {
        let (index, n) = (self.index, self.n);
        let size = index.level_size(n);
        let levels = self.reach.clone();
        let total: u64 = levels.clone().map(|m| index.level_size(m)).sum();
        let mut sum = (0u64, 0u64);
        for m in levels {
            let len = index.level_size(m);
            let part = (0..len.div_ceil(CHUNK))
                .into_par_iter()
                .map_init(Vec::new, |buf: &mut Vec<u8>, c| -> Result<(u64, u64)> {
                    let start = c * CHUNK;
                    let end = (start + CHUNK).min(len);
                    buf.resize((end - start) as usize, 0);
                    self.lower.read(m, start, buf)?;
                    let (mut got, mut count) = (0u64, 0u64);
                    let run = LowerRun {
                        m,
                        start,
                        values: buf,
                    };
                    scan_uncaptures(self.rules, index, n, run, &touch, |q, x, ci| {
                        got = got.wrapping_add(apply(q, x, m, ci));
                        count += 1;
                    });
                    if let Some(bar) = bar {
                        bar.inc(
                            ((end - start) as u128 * size as u128 / total.max(1) as u128) as u64,
                        );
                    }
                    Ok((got, count))
                })
                .try_reduce(|| (0, 0), |a, b| Ok((a.0.wrapping_add(b.0), a.1 + b.1)))?;
            sum = (sum.0.wrapping_add(part.0), sum.1 + part.1);
        }
        Ok(sum)
    }

    /// The best exit of every position (game ends, forced moves, captures), for the deep
    /// check: the level's own moves, then the captures by un-captures of the levels below.
    pub(super) fn exits(&self) -> Result<Vec<AtomicI8>> {
        let (rules, index, n) = (self.rules, self.index, self.n);
        let size = index.level_size(n);
        let exits: Vec<AtomicI8> = (0..size).map(|_| AtomicI8::new(NO_EXIT)).collect();
        (0..size.div_ceil(CHUNK)).into_par_iter().for_each(|c| {
            let start = c * CHUNK;
            let end = (start + CHUNK).min(size);
            let mut board = index.unrank(n, start);
            for i in start..end {
                let moves = legal_moves(&board, rules);
                let mut b = moves.terminal_value.unwrap_or(NO_EXIT);
                if moves.as_slice().iter().any(|m| m.ends_game) {
                    b = n as i8;
                }
                exits[i as usize].store(b, Relaxed);
                if i + 1 < end {
                    index.next(&mut board);
                }
            }
        });
        self.uncaptures(
            None,
            |q| prefetch(&exits[q as usize]),
            |q, x, _, _| {
                exits[q as usize].fetch_max(x, Relaxed);
                0
            },
        )?;
        Ok(exits)
    }
}

impl Ctx<'_> {
    /// The local check: every stored value against the values of its children.
    pub(super) fn local_check(&self, bar: &LevelBar) -> Mismatches {
        let here = self.levels[self.n];
        (0..self.chunks())
            .into_par_iter()
            .map_init(
                || Batch::new(self.index.pits_per_side()),
                |batch, c| {
                    let (start, end) = self.bounds(c);
                    let mut found = Mismatches::default();
                    let mut board = self.index.unrank(self.n, start);
                    let mut i = start;
                    // Batches of consecutive positions: generate every move and
                    // prefetch every child, then read.
                    loop {
                        batch.clear();
                        while !batch.is_full() && i < end {
                            self.add(&board, i, true, None, batch);
                            i += 1;
                            if i < end {
                                self.index.next(&mut board);
                            }
                        }
                        if batch.len == 0 {
                            break;
                        }
                        let mut best = batch.exit;
                        for &(slot, level, c, ci) in &batch.reads[..batch.nreads] {
                            let v = c as i8 - self.levels[level as usize][ci as usize] as i8;
                            let b = &mut best[slot as usize];
                            *b = (*b).max(v);
                        }
                        for (slot, &want) in best[..batch.len].iter().enumerate() {
                            let at = batch.at[slot];
                            let stored = here[at as usize] as i8;
                            if stored != want {
                                found.push(Mismatch {
                                    index: at,
                                    board: batch.boards[slot],
                                    stored,
                                    computed: want,
                                });
                            }
                        }
                    }
                    bar.inc(end - start);
                    found
                },
            )
            .reduce(Mismatches::default, Mismatches::merge)
    }
}
