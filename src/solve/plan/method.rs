//! The way each level is built: its solver state and how its forward pass reads the
//! lower levels, the fastest that fits the memory unless the build asks for one
//! (DESIGN.md section 5.2).

use crate::solve::level::{Lower, StateKind, COMPACT_MAX_SEEDS};

/// The default state size from which a random forward pass spills its state (the spilling of
/// DESIGN.md section 5.2): 256 MiB.
pub const SPILL_FROM: u64 = 256 << 20;

/// The memory a level needs from `state` bytes of solver state and `lower` bytes of lower
/// levels read at random: both, or with `spill` the larger, since a spilled state and the
/// lower levels are never in memory together. The one spill rule of the plan, the way
/// chosen and the refusals.
pub(crate) fn memory_need(state: u64, lower: u64, spill: bool) -> u64 {
    if spill {
        state.max(lower)
    } else {
        state + lower
    }
}

/// How a level is built: its solver state and how its forward pass reads the lower
/// levels (DESIGN.md section 5.2). All four ways write the same file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LevelMethod {
    /// The solver state.
    pub state: StateKind,
    /// How the lower levels are read.
    pub lower: Lower,
}

impl std::fmt::Display for LevelMethod {
    /// `state/lower` as the build and plan tables print it: `fast/random`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.state.name(), self.lower.name())
    }
}

/// What a build asks of the way its levels are built; [`way`] chooses the rest per level.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MethodRequest {
    /// The solver state; `None` chooses per level.
    pub state: Option<StateKind>,
    /// How the lower levels are read; `None` chooses per level.
    pub lower: Option<Lower>,
    /// A random forward pass whose state takes at least this many bytes spills it
    /// ([`crate::expert::SPILL_FROM`] by default).
    pub spill_from: u64,
}

impl Default for MethodRequest {
    /// Everything chosen per level, spilling from [`crate::expert::SPILL_FROM`].
    fn default() -> MethodRequest {
        MethodRequest {
            state: None,
            lower: None,
            spill_from: SPILL_FROM,
        }
    }
}

/// One level (or one rank's slice of it) as [`way`] fits it into memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LevelMemory {
    /// The level: seeds on the board (above 56 only the fast state holds it).
    pub seeds: usize,
    /// Positions whose state is held: the level's, or a rank's slice's.
    pub positions: u64,
    /// Bytes of the lower levels a random forward pass holds (one per position).
    pub lower_bytes: u64,
    /// Memory free for the level; `None`: unknown, assume it fits.
    pub free: Option<u64>,
}

/// How a level is built: what `request` fixes, and else the fastest way that fits `level.free`:
/// the fast state reading at random (its state spilled from `request.spill_from` bytes, so
/// that it needs the larger of the state and the lower levels, not their sum), else the
/// fast state with a stream, else the compact state with a stream, else the lean state
/// with a stream (DESIGN.md section 5.6). The compact state holds levels up to 56 seeds;
/// the compact and lean states asked for without a way of reading read as a stream. Each
/// state costs what [`StateKind::peak_bytes`] says.
pub fn way(request: &MethodRequest, level: &LevelMemory) -> LevelMethod {
    let fits = |need: u64| level.free.is_none_or(|f| need <= f);
    let random_need = |state: StateKind| {
        let bytes = state.bytes(level.positions);
        memory_need(bytes, level.lower_bytes, bytes >= request.spill_from)
    };
    let streamed = |state: StateKind| state.peak_bytes(level.positions, level.seeds, Lower::Stream);
    let state = request.state.unwrap_or_else(|| {
        if fits(streamed(StateKind::Fast)) {
            StateKind::Fast
        } else if level.seeds <= COMPACT_MAX_SEEDS && fits(streamed(StateKind::Compact)) {
            StateKind::Compact
        } else {
            StateKind::Lean
        }
    });
    let lower = request.lower.unwrap_or_else(|| {
        if state == StateKind::Fast && fits(random_need(state)) {
            Lower::Random
        } else {
            Lower::Stream
        }
    });
    LevelMethod { state, lower }
}

/// How a rank builds its slice of `positions` positions of level `seeds`, given `free`
/// bytes of its share of the node's memory: [`way`] asked for nothing but the stream,
/// since over ranks the lower levels are read as streams (DESIGN.md section 5.4): the fast
/// state where the slice holds it, else the compact one, else the lean one. The plan and
/// the ranks' vote both ask this.
pub(crate) fn slice_way(seeds: usize, positions: u64, free: Option<u64>) -> LevelMethod {
    let request = MethodRequest {
        lower: Some(Lower::Stream),
        ..MethodRequest::default()
    };
    let level = LevelMemory {
        seeds,
        positions,
        lower_bytes: 0,
        free,
    };
    way(&request, &level)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// state 813.1 MB, compact 430.5 MB) over 1 GB of lower levels.
    #[test]
    fn the_way_is_the_fastest_that_fits() {
        let positions = 382_628_610;
        let (fast, compact) = (
            StateKind::Fast.bytes(positions),
            StateKind::Compact.bytes(positions),
        );
        assert_eq!((fast, compact), (813_085_804, 430_457_194));
        let lower_bytes = 1_000_000_000;
        let at = |free: u64, ask: &MethodRequest| {
            let fit = LevelMemory {
                seeds: 24,
                positions,
                lower_bytes,
                free: Some(free),
            };
            way(ask, &fit)
        };
        let w = |state, lower| LevelMethod { state, lower };
        let auto = MethodRequest::default();
        // Spilled (the state is over 256 MiB): the larger of state and lower levels.
        assert_eq!(at(lower_bytes, &auto), w(StateKind::Fast, Lower::Random));
        assert_eq!(
            at(lower_bytes - 1, &auto),
            w(StateKind::Fast, Lower::Stream)
        );
        // Not spilled: both at once.
        let no_spill = MethodRequest {
            spill_from: u64::MAX,
            ..auto
        };
        let both = fast + lower_bytes;
        assert_eq!(at(both, &no_spill), w(StateKind::Fast, Lower::Random));
        assert_eq!(at(both - 1, &no_spill), w(StateKind::Fast, Lower::Stream));
        // The fast state alone does not fit: compact, streamed; nor the compact one: lean,
        // streamed, in four windows of 11/32 of a byte a position at most.
        assert_eq!(at(fast - 1, &auto), w(StateKind::Compact, Lower::Stream));
        assert_eq!(at(compact, &auto), w(StateKind::Compact, Lower::Stream));
        assert_eq!(at(compact - 1, &auto), w(StateKind::Lean, Lower::Stream));
        let lean = StateKind::Lean.peak_bytes(positions, 24, Lower::Stream);
        assert_eq!(lean, StateKind::Compact.bytes(positions.div_ceil(4)));
        assert!(lean * 8 <= positions * 3, "{lean}");
        assert_eq!(at(0, &auto), w(StateKind::Lean, Lower::Stream));
        // A rank's slice too: lean where the compact state does not fit.
        assert_eq!(
            slice_way(24, positions, Some(0)),
            w(StateKind::Lean, Lower::Stream)
        );
        assert_eq!(
            slice_way(24, positions, Some(compact)),
            w(StateKind::Compact, Lower::Stream)
        );
        // What is asked is kept, whatever the memory.
        let asked = MethodRequest {
            state: Some(StateKind::Compact),
            ..auto
        };
        assert_eq!(at(u64::MAX, &asked), w(StateKind::Compact, Lower::Stream));
        let asked = MethodRequest {
            lower: Some(Lower::Random),
            ..asked
        };
        assert_eq!(at(0, &asked), w(StateKind::Compact, Lower::Random));
        // Above 56 seeds the compact state cannot hold a level.
        let fit = LevelMemory {
            seeds: 57,
            positions,
            lower_bytes,
            free: Some(0),
        };
        assert_eq!(way(&auto, &fit), w(StateKind::Lean, Lower::Stream));
        let fit = LevelMemory {
            free: Some(StateKind::Fast.bytes(positions)),
            ..fit
        };
        assert_eq!(way(&auto, &fit), w(StateKind::Fast, Lower::Stream));
        assert_eq!(
            slice_way(57, positions, Some(0)),
            w(StateKind::Lean, Lower::Stream)
        );
        assert_eq!(
            format!("{}", w(StateKind::Compact, Lower::Stream)),
            "compact/stream"
        );
    }
}
