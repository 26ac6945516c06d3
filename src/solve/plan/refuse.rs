//! The refusals: a build, a level or a rank's slice that cannot finish on this machine
//! is refused before it starts, saying what it needs, what there is and what to do
//! (DESIGN.md section 5.4).

use std::path::Path;

use super::method::{memory_need, LevelMethod};
use crate::db::raw::PAYLOAD_OFFSET;
use crate::error::{Error, Result};
use crate::game::index::Index;
use crate::solve::level::{Lower, StateKind, COMPACT_MAX_SEEDS};
use crate::util::{bytes, disk_available, group, memory_available, memory_total};

/// What a single-process build holds in memory when a level starts.
#[derive(Clone, Copy, Debug, Default)]
pub struct LowerHeld {
    /// Bytes of the levels a random forward pass reads (one per position): the levels a
    /// capture reaches, up to the one two below. 0 for a streamed forward pass.
    pub lower: u64,
    /// Of those, the bytes in memory already.
    pub held: u64,
}

impl LowerHeld {
    /// The memory a level still needs beyond what is held, with `state` bytes of solver
    /// state at its peak ([`StateKind::peak_bytes`]): the state and the lower levels, or
    /// with `spill` the larger of the two, since a spilled state and the lower levels are
    /// never in memory together.
    pub fn need(&self, state: u64, spill: bool) -> u64 {
        memory_need(state, self.lower, spill).saturating_sub(self.held)
    }
}

/// Refuses to start level `n` of `positions` positions into `dir` when the solver state
/// and the lower levels would not fit the memory available now, or its file the free
/// disk under `dir`: the error says what it needs, what there is, and what to do. With
/// `spill`, the lower levels and the state are never in memory together.
pub fn check_level_fits(
    dir: &Path,
    n: usize,
    positions: u64,
    way: LevelMethod,
    spill: bool,
    packed: bool,
    held: LowerHeld,
) -> Result<()> {
    let LevelMethod { state: kind, lower } = way;
    let state = kind.peak_bytes(positions, n, lower);
    let need = held.need(state, spill);
    if let Some(free) = memory_available() {
        if need > free {
            let hint = match kind {
                StateKind::Fast if n <= COMPACT_MAX_SEEDS => {
                    "`--state compact` takes 1.125 bytes a position, `--state lean --lower stream` \
                     3 bits, "
                }
                StateKind::Fast | StateKind::Compact => {
                    "`--state lean --lower stream` takes 3 bits a position, "
                }
                StateKind::Lean => "",
            };
            return Err(Error::Resources(format!(
                "level {n} ({} positions) needs {} more memory ({} solver state {}, levels below \
                 read at random {}, of which {} in memory), and {} is available: free memory, \
                 {hint}or build it on several nodes (`awari plan --max-seeds {n} --nodes R`); \
                 `--no-check` starts it anyway",
                group(positions),
                bytes(need),
                kind.name(),
                bytes(state),
                bytes(held.lower),
                bytes(held.held),
                bytes(free)
            )));
        }
    }
    // A spilled state lies on disk beside the level until the backward pass; a packed
    // level is written from memory, about half the raw size (the plain model).
    // The lean state's files lie beside it (DESIGN.md section 5.6).
    let level = if packed { positions / 2 } else { positions };
    let scratch = match kind {
        StateKind::Lean => kind.scratch_bytes(positions, n, lower),
        _ if spill => state,
        _ => 0,
    };
    let file = PAYLOAD_OFFSET as u64 + level + scratch;
    if let Some(free) = disk_available(dir) {
        if file > free {
            return Err(Error::Resources(format!(
                "level {n} needs {} on disk and {} is free under {}: free space, or pack the \
                 levels below (`awari pack --all --remove-raw`); `--no-check` starts it anyway",
                bytes(file),
                bytes(free),
                dir.display()
            )));
        }
    }
    Ok(())
}

/// Refuses to start level `n` of a distributed build on this rank when its slice of
/// `slice` positions does not fit: the solver state `kind` against this node's free
/// memory shared by the `here` ranks on it, and the slice file against the free disk
/// under `dir`.
pub fn check_slice_fits(
    dir: &Path,
    n: usize,
    slice: u64,
    kind: StateKind,
    here: usize,
) -> Result<()> {
    let state = kind.peak_bytes(slice, n, Lower::Stream);
    if let Some(free) = memory_available() {
        let share = free / here.max(1) as u64;
        if state > share {
            return Err(Error::Resources(format!(
                "level {n}: this rank's slice ({} positions) needs {} of solver memory ({} \
                 state), and {} is free for each of the {here} rank(s) on this node: use more nodes or \
                 fewer ranks per node (`awari plan --max-seeds {n} --nodes R`); `--no-check` \
                 starts it anyway",
                group(slice),
                bytes(state),
                kind.name(),
                bytes(share)
            )));
        }
    }
    // The lean state's files lie beside the slice (DESIGN.md section 5.6).
    let scratch = kind.scratch_bytes(slice, n, Lower::Stream);
    let file = PAYLOAD_OFFSET as u64 + slice + scratch;
    if let Some(free) = disk_available(dir) {
        if file > free {
            return Err(Error::Resources(format!(
                "level {n}: this rank's slice needs {} on disk and {} is free under {}: free \
                 space, or gather and pack the levels below; `--no-check` starts it anyway",
                bytes(file),
                bytes(free),
                dir.display()
            )));
        }
    }
    Ok(())
}

/// Refuses a build of levels `0..=max_seeds` into `dir` at its start when it cannot
/// finish on this machine: the largest level not built yet needs more solver memory than
/// the machine has, or the levels not built yet more disk than is free under `dir`.
pub fn check_build_fits(
    dir: &Path,
    index: &Index,
    max_seeds: usize,
    kind: Option<StateKind>,
    packed: bool,
) -> Result<()> {
    let missing: Vec<usize> = (0..=max_seeds)
        .filter(|&n| !crate::db::layout::level_exists(dir, n))
        .collect();
    let Some(&top) = missing.last() else {
        return Ok(());
    };
    let positions = index.level_size(top);
    if let Some(total) = memory_total() {
        // The smallest state the build may use for the level (the lean state, streamed,
        // unless one is asked for).
        let kind = kind.unwrap_or(StateKind::Lean);
        let state = kind.peak_bytes(positions, top, Lower::Stream);
        if state > total {
            return Err(Error::Resources(format!(
                "level {top} ({} positions) needs {} of solver memory (the {} state), and this \
                 machine has {}: `awari plan --max-seeds {max_seeds} --nodes R` says on how many \
                 nodes it fits; `--no-check` starts anyway",
                group(positions),
                bytes(state),
                kind.name(),
                bytes(total)
            )));
        }
    }
    let disk: u64 = missing
        .iter()
        .map(|&n| PAYLOAD_OFFSET as u64 + index.level_size(n) / if packed { 2 } else { 1 })
        .sum();
    if let Some(free) = disk_available(dir) {
        if disk > free {
            return Err(Error::Resources(format!(
                "levels {}..={max_seeds} need {} on disk and {} is free under {}: free space, \
                 or pack levels as they are built (`awari pack --all --remove-raw`); \
                 `--no-check` starts anyway",
                missing[0],
                bytes(disk),
                bytes(free),
                dir.display()
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_level_too_big_for_this_machine_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let none = LowerHeld::default();
        assert!(check_level_fits(
            dir.path(),
            10,
            351_351,
            LevelMethod {
                state: StateKind::Fast,
                lower: Lower::Random,
            },
            true,
            false,
            none
        )
        .is_ok());
        let e = check_level_fits(
            dir.path(),
            60,
            u64::MAX / 8,
            LevelMethod {
                state: StateKind::Fast,
                lower: Lower::Random,
            },
            false,
            false,
            none,
        )
        .unwrap_err();
        assert!(
            e.to_string().contains("needs") && e.to_string().contains("--no-check"),
            "{e}"
        );
        // A spilled state may take the memory of the lower levels held, not more; an
        // unspilled one needs its own. (Pure arithmetic: the memory free now changes while
        // other tests run, so the refusal itself is tested on a size no machine has.)
        let gib = 1u64 << 30;
        let held = LowerHeld {
            lower: 2 * gib,
            held: 2 * gib,
        };
        // 3 GiB of fast state: 2 bytes and a bit per position.
        let positions = 3 * gib * 8 / 17;
        let fast = |rest: u64| {
            let need = held.need(StateKind::Fast.bytes(positions), true);
            assert_eq!(need, StateKind::Fast.bytes(positions) - 2 * gib);
            assert!((need as i64 - rest as i64).abs() < 64, "{need}");
        };
        fast(gib);
        let state = StateKind::Fast.bytes(positions);
        assert_eq!(held.need(StateKind::Fast.bytes(positions), false), state);
        assert_eq!(none.need(StateKind::Fast.bytes(positions), true), state);
        let part = LowerHeld {
            lower: 5 * gib,
            held: gib,
        };
        assert_eq!(part.need(StateKind::Fast.bytes(positions), true), 4 * gib);
        assert_eq!(
            part.need(StateKind::Fast.bytes(positions), false),
            state + 4 * gib
        );
        // The compact state: a byte and a bit per position.
        let compact = StateKind::Compact.bytes(positions);
        assert_eq!(compact, positions + positions.div_ceil(64) * 8);
        assert_eq!(
            none.need(StateKind::Compact.bytes(positions), false),
            compact
        );
        // 2^60 bytes of fast state and more: no machine has it.
        let huge = 1u64 << 59;
        let e = check_level_fits(
            dir.path(),
            30,
            huge,
            LevelMethod {
                state: StateKind::Fast,
                lower: Lower::Random,
            },
            true,
            false,
            none,
        )
        .unwrap_err();
        assert!(e.to_string().contains("more memory"), "{e}");
    }
}
