//! The wrong values a check finds, as the local and the deep check count and sample them
//! and the reports give them. A file of its own, under the entry point, so that the checks
//! use it without using `mod.rs`, which uses them.

use crate::game::rules::Board;

/// Mismatches kept per level and check (the first ones in index order).
pub const SAMPLES: usize = 5;

/// One stored position whose value is not what the check computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mismatch {
    /// The position's index in its level.
    pub index: u64,
    /// The position.
    pub board: Board,
    /// The value the level holds for it (resolved, for a pack with the exit model).
    pub stored: i8,
    /// The value from its moves (local check) or from the independent solution (deep).
    pub computed: i8,
}

/// What orders the samples of a check: a mismatch's index in its level.
pub trait Sample {
    /// The position's index in its level.
    fn index(&self) -> u64;
}

impl Sample for Mismatch {
    fn index(&self) -> u64 {
        self.index
    }
}

/// Mismatches of one check of one level: of values ([`Mismatch`]) or, for the distance
/// tables, of distances.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mismatches<M = Mismatch> {
    /// How many positions are wrong, in all.
    pub count: u64,
    /// The first few, in index order (at most 5).
    pub first: Vec<M>,
}

impl<M> Default for Mismatches<M> {
    fn default() -> Self {
        Mismatches {
            count: 0,
            first: Vec::new(),
        }
    }
}

impl<M: Sample> Mismatches<M> {
    /// Counts `m`, and keeps it if fewer than [`SAMPLES`] are kept.
    pub(super) fn push(&mut self, m: M) {
        self.count += 1;
        if self.first.len() < SAMPLES {
            self.first.push(m);
        }
    }

    /// The mismatches of two parts of a level: the counts added, the first few of both.
    pub(super) fn merge(mut self, other: Mismatches<M>) -> Mismatches<M> {
        self.count += other.count;
        self.first.extend(other.first);
        self.first.sort_by_key(|m| m.index());
        self.first.truncate(SAMPLES);
        self
    }
}
