//! The deep check of `awari verify --deep`.
//!
//! It solves each level again by the threshold attractors of DESIGN.md section 2(a),
//! every threshold at once, by forward sweeps whose values come only from
//! [`crate::game::rules::legal_moves`] (un-moves only choose which positions to sweep
//! again): no counters, nothing of the builder's solver (`solve/level`). For a position
//! `p` let `w(p)` be the largest `t >= 1` such that the side to move can force a capture
//! or game end worth `>= t` in finitely many moves (0 if none), and `l(p)` likewise for
//! the opponent forcing `<= -t`. With `b(p)` the best exit (capture or game end) and `c`
//! the in-level children, `(w, l)` is the least fixpoint of
//!
//! ```text
//! w(p) = max(b(p), 0, max_c l(c))          l(p) = max(0, min(-b(p), min_c w(c)))
//! ```
//!
//! and the value is `w - l` (never both non-zero). The operator is monotone, so sweeping
//! it in place from zero, in any order and in parallel, climbs to the least fixpoint; it
//! is reached when a whole sweep changes nothing. One signed byte per position holds
//! `w` or `-l`, another the exit `b`: two bytes per position.

use std::sync::atomic::{AtomicBool, AtomicI8, Ordering::Relaxed};

use rayon::prelude::*;

use super::batch::{Batch, Bits, Ctx};
use super::mismatch::{Mismatch, Mismatches};
use crate::game::rules::for_each_unmove;
use crate::game::scan::NO_EXIT;
use crate::util::{LevelBar, BATCH};

impl Ctx<'_> {
    /// The deep check: solves the level by in-place sweeps of the attractor operator
    /// (module doc) and compares with the stored values. Returns the rounds and the
    /// mismatches.
    ///
    /// Only the first round evaluates every position. Later rounds evaluate the
    /// predecessors of the positions that changed in the round before (found with the
    /// un-move generator), which is only a schedule: every update applies the operator
    /// by forward moves, so values never pass the least fixpoint, whatever the schedule.
    /// When nothing is left to do, one more full sweep must change nothing: then the
    /// values are a fixpoint not above the least one, so they are the least one. If it
    /// changes something (the schedule missed a position), the rounds go on.
    ///
    /// `known`: the best exit of every position, found already (then no lower level is
    /// read here); else the first sweep finds them from the lower levels.
    pub(super) fn deep_check(
        &self,
        bar: &LevelBar,
        known: Option<Vec<AtomicI8>>,
    ) -> (u32, Mismatches) {
        let size = self.index.level_size(self.n) as usize;
        // b: best exit per position, found in the first sweep unless known. s: w, or -l.
        let given = known.is_some();
        let exits: Vec<AtomicI8> =
            known.unwrap_or_else(|| (0..size).map(|_| AtomicI8::new(NO_EXIT)).collect());
        let s: Vec<AtomicI8> = (0..size).map(|_| AtomicI8::new(0)).collect();
        let mut todo = Bits::new(size);
        let mut next = Bits::new(size);
        let mut rounds = 0u32;
        // Full sweeps: the first, and the confirming ones.
        let mut full = true;
        let mut first = !given;
        loop {
            rounds += 1;
            bar.phase(&format!("deep round {rounds}"), 0);
            let changed = AtomicBool::new(false);
            (0..self.chunks()).into_par_iter().for_each_init(
                || Batch::new(self.index.pits_per_side()),
                |batch, c| {
                    let (start, end) = self.bounds(c);
                    let marked = if full {
                        (end - start) as u32
                    } else {
                        todo.count(start, end)
                    };
                    if marked == 0 {
                        bar.inc(end - start);
                        return;
                    }
                    // Dense: step through the chunk; sparse: unrank each marked one.
                    let dense = full || marked as u64 * 16 > end - start;
                    let mut board = self.index.unrank(self.n, start);
                    let mut i = start;
                    let mut any = false;
                    loop {
                        batch.clear();
                        while !batch.is_full() && i < end {
                            if full || todo.get(i) {
                                if !dense {
                                    board = self.index.unrank(self.n, i);
                                }
                                self.add(&board, i, first, Some(&s), batch);
                            }
                            i += 1;
                            if dense && i < end {
                                self.index.next(&mut board);
                            }
                        }
                        if batch.len == 0 {
                            break;
                        }
                        any |= self.deep_batch(batch, first, &exits, &s, &next);
                    }
                    if any {
                        changed.store(true, Relaxed);
                    }
                    bar.inc(end - start);
                },
            );
            let changed = changed.load(Relaxed);
            if full && !first && !changed {
                break;
            }
            first = false;
            std::mem::swap(&mut todo, &mut next);
            next.clear();
            // Nothing scheduled: confirm with a full sweep.
            full = !changed || todo.count(0, size as u64) == 0;
        }
        drop(exits);
        let here = self.levels[self.n];
        let mismatches = (0..self.chunks())
            .into_par_iter()
            .map(|c| {
                let (start, end) = self.bounds(c);
                let mut found = Mismatches::default();
                for i in start..end {
                    let (stored, want) = (here[i as usize] as i8, s[i as usize].load(Relaxed));
                    if stored != want {
                        found.push(Mismatch {
                            index: i,
                            board: self.index.unrank(self.n, i),
                            stored,
                            computed: want,
                        });
                    }
                }
                found
            })
            .reduce(Mismatches::default, Mismatches::merge);
        (rounds, mismatches)
    }

    /// Applies the operator to every position of an expanded batch; schedules the
    /// predecessors of those that change into `next`. Returns whether any changed.
    fn deep_batch(
        &self,
        batch: &Batch,
        first: bool,
        exits: &[AtomicI8],
        s: &[AtomicI8],
        next: &Bits,
    ) -> bool {
        // Per slot: the largest l(c) and the smallest w(c) over in-level children.
        let mut max_l = [0i8; BATCH];
        let mut min_w = [i8::MAX; BATCH];
        let mut exit = batch.exit;
        for &(slot, level, c, ci) in &batch.reads[..batch.nreads] {
            let slot = slot as usize;
            if c > 0 {
                let v = c as i8 - self.levels[level as usize][ci as usize] as i8;
                exit[slot] = exit[slot].max(v);
            } else {
                let sc = s[ci as usize].load(Relaxed);
                max_l[slot] = max_l[slot].max(-sc.min(0));
                min_w[slot] = min_w[slot].min(sc.max(0));
            }
        }
        let mut any = false;
        for slot in 0..batch.len {
            let at = batch.at[slot] as usize;
            let b = if first {
                exits[at].store(exit[slot], Relaxed);
                exit[slot]
            } else {
                exits[at].load(Relaxed)
            };
            let w = b.max(0).max(max_l[slot]);
            let neg_b = if b == NO_EXIT { i8::MAX } else { -b };
            let l = neg_b.min(min_w[slot]).max(0);
            debug_assert!(w == 0 || l == 0, "w and l both set");
            let new = if w > 0 { w } else { -l };
            let old = s[at].load(Relaxed);
            // Monotone: values only move away from zero.
            if new.unsigned_abs() > old.unsigned_abs() {
                debug_assert!(old == 0 || (old > 0) == (new > 0));
                s[at].store(new, Relaxed);
                any = true;
                for_each_unmove(&batch.boards[slot], self.rules, |q, stored| {
                    if stored {
                        next.set(self.index.rank(q));
                    }
                });
            }
        }
        any
    }
}
