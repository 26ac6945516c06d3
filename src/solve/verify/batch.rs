//! One level being checked, with the levels it reads in memory, and its positions'
//! moves expanded a batch at a time: what the in-memory local check and the deep check
//! read.

use std::sync::atomic::{AtomicI8, AtomicU64, Ordering::Relaxed};

use rayon::prelude::*;

use crate::game::index::Index;
use crate::game::rules::{legal_moves, Board, Rules, MAX_PITS};
use crate::game::scan::NO_EXIT;
use crate::util::{prefetch, BATCH, CHUNK};

/// One level being checked and the levels it reads.
pub(super) struct Ctx<'a> {
    pub(super) rules: Rules,
    pub(super) index: &'a Index,
    pub(super) n: usize,
    /// The payloads of levels `0..=n` and maybe more.
    pub(super) levels: &'a [&'a [u8]],
}

/// The expanded moves of a batch of positions: per position its exit value so far and
/// the children still to be read. Fixed arrays: nothing is allocated per position.
pub(super) struct Batch {
    pub(super) len: usize,
    /// Index and board per slot.
    pub(super) at: [u64; BATCH],
    pub(super) boards: [Board; BATCH],
    /// Best exit (game end, forced move, capture) per slot, `NO_EXIT` if none yet.
    pub(super) exit: [i8; BATCH],
    /// Children to read: slot, level, seeds captured, index.
    pub(super) reads: [(u8, u8, u8, u64); BATCH * MAX_PITS],
    pub(super) nreads: usize,
}

impl Batch {
    pub(super) fn new(p: usize) -> Batch {
        Batch {
            len: 0,
            at: [0; BATCH],
            boards: [Board::empty(p); BATCH],
            exit: [NO_EXIT; BATCH],
            reads: [(0, 0, 0, 0); BATCH * MAX_PITS],
            nreads: 0,
        }
    }

    pub(super) fn clear(&mut self) {
        self.len = 0;
        self.nreads = 0;
    }

    pub(super) fn is_full(&self) -> bool {
        self.len == BATCH
    }
}

/// A bitmap of positions, set concurrently.
pub(super) struct Bits(Vec<AtomicU64>);

impl Bits {
    pub(super) fn new(len: usize) -> Bits {
        Bits((0..len.div_ceil(64)).map(|_| AtomicU64::new(0)).collect())
    }

    #[inline]
    pub(super) fn set(&self, i: u64) {
        let w = &self.0[(i / 64) as usize];
        let bit = 1u64 << (i % 64);
        if w.load(Relaxed) & bit == 0 {
            w.fetch_or(bit, Relaxed);
        }
    }

    /// The address of the word holding bit `i`, for a prefetch (never dereferenced).
    #[inline(always)]
    pub(super) fn addr(&self, i: u64) -> *const AtomicU64 {
        self.0.as_ptr().wrapping_add((i / 64) as usize)
    }

    #[inline]
    pub(super) fn get(&self, i: u64) -> bool {
        self.0[(i / 64) as usize].load(Relaxed) & (1u64 << (i % 64)) != 0
    }

    /// Set bits in `start..end` (`start` a multiple of 64).
    pub(super) fn count(&self, start: u64, end: u64) -> u32 {
        let words = &self.0[(start / 64) as usize..end.div_ceil(64) as usize];
        words.iter().map(|w| w.load(Relaxed).count_ones()).sum()
    }

    pub(super) fn clear(&self) {
        self.0.par_iter().for_each(|w| w.store(0, Relaxed));
    }
}

impl Ctx<'_> {
    /// Adds `board` (index `i`) to the batch and expands its moves. `captures`: also
    /// queue the children of captures (else only in-level children are queued and
    /// `exit` holds only game ends). In-level children are prefetched from `solving`
    /// if given, else from the stored level.
    #[inline]
    pub(super) fn add(
        &self,
        board: &Board,
        i: u64,
        captures: bool,
        solving: Option<&[AtomicI8]>,
        batch: &mut Batch,
    ) {
        let n = self.n;
        let slot = batch.len;
        batch.len += 1;
        batch.at[slot] = i;
        batch.boards[slot] = *board;
        let moves = legal_moves(board, self.rules);
        batch.exit[slot] = moves.terminal_value.unwrap_or(NO_EXIT);
        for m in moves.as_slice() {
            if m.ends_game {
                batch.exit[slot] = n as i8;
                continue;
            }
            let c = m.captured as usize;
            if c > 0 && !captures {
                continue;
            }
            let ci = self.index.rank(&m.child);
            match solving {
                Some(s) if c == 0 => prefetch(&s[ci as usize]),
                _ => prefetch(&self.levels[n - c][ci as usize]),
            }
            batch.reads[batch.nreads] = (slot as u8, (n - c) as u8, c as u8, ci);
            batch.nreads += 1;
        }
    }

    pub(super) fn chunks(&self) -> u64 {
        self.index.level_size(self.n).div_ceil(CHUNK)
    }

    pub(super) fn bounds(&self, c: u64) -> (u64, u64) {
        let start = c * CHUNK;
        (start, (start + CHUNK).min(self.index.level_size(self.n)))
    }
}
