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

/// Mismatches of one check of one level.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Mismatches {
    /// How many positions are wrong, in all.
    pub count: u64,
    /// The first few, in index order (at most 5).
    pub first: Vec<Mismatch>,
}

impl Mismatches {
    /// Counts `m`, and keeps it if fewer than [`SAMPLES`] are kept.
    pub(super) fn push(&mut self, m: Mismatch) {
        self.count += 1;
        if self.first.len() < SAMPLES {
            self.first.push(m);
        }
    }

    /// The mismatches of two parts of a level: the counts added, the first few of both.
    pub(super) fn merge(mut self, other: Mismatches) -> Mismatches {
        self.count += other.count;
        self.first.extend(other.first);
        self.first.sort_by_key(|m| m.index);
        self.first.truncate(SAMPLES);
        self
    }
}
