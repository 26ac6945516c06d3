//! Solving one level exactly (DESIGN.md section 5): a forward pass that scores every move
//! leaving the level (and, in the fast state, counts the moves staying in it), then a
//! backward pass over thresholds `t = n..1` that settles wins and losses by predecessor
//! propagation.
//!
//! The files, in the order a level is solved:
//!
//! - [`kind`]: the states and the reads of the lower levels, what each costs, and what
//!   solving a level gives (outcomes, values, times);
//! - [`cells`]: the state's memory, one owner that threads update through atomics;
//! - [`state`]: a level's solver state over those cells, and the [`Encoding`](state::Encoding) of a
//!   position in them, one of two:
//!   - [`fast`]: two bytes per position side by side, a *count* byte (the settled mark and
//!     the number of in-level moves not yet known to reach a child worth `>= t`, kept only
//!     while `b[p] < 0`) and a *value* byte (the best exit `b[p]` until the position is
//!     settled, its value after). The backward pass reads and updates count bytes at
//!     random and needs the value byte whenever it settles a position or a count runs out:
//!     with the two in one cache line, an update costs one miss instead of two (level 20:
//!     backward pass 10.7 s against 13.0 s with two arrays);
//!   - [`compact`]: one byte per position, the best exit while unsettled and the value
//!     once settled, told apart by the code. No count: a position is confirmed lost by
//!     generating its in-level moves and reading its children, as Syzygy's generator does;
//! - [`lean`]: two bits per position, the best exits and the values so far in two files
//!   read and written in index order (section 5.6);
//! - [`forward`]: the forward pass, reading the lower levels either at random (each
//!   capture's child read where it lies, [`forward_pass`]) or as a stream (each lower
//!   position hands its value to its parents by un-captures, [`forward_stream`], over
//!   the whole level or one rank's slice of it): then only the level being built is in
//!   memory;
//! - [`backward`]: the one backward pass's work at a threshold, over the `Settle` trait
//!   that the three states implement, over the whole level or one rank's slice of it
//!   (what concerns another rank's positions goes out as a [`Message`]), and [`rounds`]:
//!   the thresholds in rounds of segments, where the state may be saved;
//! - [`message`]: the 8-byte words ranks send each other.
//!
//! Every combination writes the same values.

mod backward;
mod cells;
mod compact;
mod fast;
mod forward;
mod kind;
mod lean;
pub(crate) mod message;
mod raises;
mod rounds;
mod state;

pub(crate) use backward::{Settle, SettleCells};
pub(crate) use compact::Compact;
pub(crate) use fast::Fast;
pub use forward::ROUND;
#[cfg(test)]
pub(crate) use forward::STRIPE_IN_TESTS;
pub(crate) use forward::{forward_pass, forward_stream, Forwarded, Window};
pub(crate) use kind::{byte_state, lean_windows, Values};
pub use kind::{Lower, Outcomes, PhaseTimes, StateKind, COMPACT_MAX_SEEDS};
pub(crate) use lean::{exits_random, exits_stream, Lean, LeanFiles, LeanState};
#[cfg(test)]
pub(crate) use rounds::NoSaves;
pub(crate) use rounds::{backward_pass, Partition, Saves, Stage};
pub use rounds::{SEGMENT, SEGMENT_SHIFT};
pub(crate) use state::{exit_and_stay, State};

/// Levels `0..=top` solved in memory, one byte per position: the true values that the
/// unit tests of the levels' readers compare with.
#[cfg(test)]
pub(crate) fn solve_in_memory(
    rules: crate::game::rules::Rules,
    index: &crate::game::index::Index,
    top: usize,
) -> Vec<Vec<u8>> {
    use crate::game::scan::LowerValues;
    use crate::util::LevelBar;
    struct Below(Vec<Vec<u8>>);
    impl LowerValues for Below {
        fn value(&self, seeds: usize, index: u64) -> i8 {
            self.0[seeds][index as usize] as i8
        }
    }
    let mut lower = Below(Vec::new());
    for n in 0..=top {
        let bar = LevelBar::new(false, 0, 0, "");
        let f = forward_pass::<Fast, _>(rules, index, n, &lower, &bar, None).unwrap();
        let part = Partition {
            comm: &crate::solve::comm::Solo,
            rules,
            index,
            n,
            mine: 0..index.level_size(n),
            progress: &bar,
        };
        let (state, _) = backward_pass::<Fast, _>(
            &part,
            f.state,
            f.present,
            f.forward,
            Stage::start(n),
            &mut NoSaves,
        )
        .unwrap();
        lower.0.push(state.into_values().to_vec());
    }
    lower.0
}
