//! What each level of a build needs per rank: solver memory and disk, raw and packed,
//! and whether a node has it ([`plan`]).
//!
//! A level is cut into `R` slices of consecutive indices, as even as they can be: slice
//! `r` is `[r * size / R, (r + 1) * size / R)` (integer division), so slice sizes differ
//! by at most one position. A single process is `R = 1`.

use super::method::{
    memory_need, slice_way, way, LevelMemory, LevelMethod, MethodRequest, SPILL_FROM,
};
use super::timing::{rate_at, Rate};
use crate::db::layout::largest_slice;
use crate::db::raw::PAYLOAD_OFFSET;
use crate::error::{Error, Result};
use crate::game::index::Index;
use crate::game::scan::lowest_captured_level;
use crate::solve::level::Lower;

/// Packed size against raw, when no pack of the database has been measured: levels
/// 16..=24 of Awari with the exit model (GUIDE.md, "Packing and sharing").
pub const DEFAULT_PACK_RATIO: f64 = 2.68;

/// What a build may use, per node (one rank per node).
#[derive(Clone, Copy, Debug)]
pub struct Machine {
    /// Nodes, one rank each.
    pub nodes: usize,
    /// Memory per node, bytes.
    pub memory: u64,
    /// Cores per node (worker threads of its rank).
    pub cores: usize,
    /// Disk per node for the database, bytes.
    pub disk: u64,
}

/// One level of a plan, per rank (the largest slice).
#[derive(Clone, Copy, Debug)]
pub struct LevelPlan {
    /// The level.
    pub seeds: usize,
    /// Positions of the whole level.
    pub positions: u64,
    /// How a node would build its slice of the level ([`way`] with the node's memory):
    /// `None` when no way fits.
    pub way: Option<LevelMethod>,
    /// Solver state of one rank while the level is built (of the way chosen, or of the
    /// smallest way when none fits).
    pub state: u64,
    /// The lower levels one rank holds in memory meanwhile: those a capture reaches when
    /// they are read at random (with spilling, not at the same time as the state), none
    /// when they are read as a stream.
    pub lower: u64,
    /// Buffers of the streamed reads (a chunk per thread), or 0.
    pub buffers: u64,
    /// The rank's slice of the level as a raw file (header and payload).
    pub raw: u64,
    /// The same, packed at the plan's ratio.
    pub packed: u64,
    /// The rank's raw files of levels `0..=seeds`.
    pub raw_so_far: u64,
    /// The same, packed.
    pub packed_so_far: u64,
    /// Disk the level's checkpoints take at their peak (0 without checkpoints): two of the
    /// rank's state while the newer is written and the older not yet removed.
    pub checkpoints: u64,
    /// Disk the lean state's files take beside the level while it is built (two bytes a
    /// position held, or streamed, if more, its exits and the raises kept for its later
    /// windows: [`crate::solve::level::StateKind::scratch_bytes`]), or 0.
    pub scratch: u64,
    /// Expected wall time of the level, at the plan's rate.
    pub seconds: Option<f64>,
    /// Built by a single process (which may spill its state), not over ranks.
    pub single: bool,
}

impl LevelPlan {
    /// Whether the level fits a node's memory one way or another.
    pub fn fits_memory(&self, _m: &Machine) -> bool {
        self.way.is_some()
    }

    /// The memory one rank holds at its peak while building the level.
    pub fn memory(&self) -> u64 {
        memory_need(self.state, self.lower, self.spilled()) + self.buffers
    }

    /// Whether the state is spilled while the lower levels are in memory (a single
    /// process only).
    fn spilled(&self) -> bool {
        self.single && self.lower > 0 && self.state >= SPILL_FROM
    }

    /// Whether the raw levels `0..=seeds` and the level's checkpoints fit a node's disk.
    pub fn fits_disk(&self, m: &Machine) -> bool {
        self.raw_so_far + self.checkpoints + self.scratch <= m.disk
    }

    /// Whether the levels `0..=seeds` packed and the level's checkpoints fit a node's
    /// disk.
    pub fn fits_disk_packed(&self, m: &Machine) -> bool {
        self.packed_so_far + self.checkpoints + self.scratch <= m.disk
    }

    /// How the levels `0..=seeds` and the level's checkpoints fit a node's disk: the
    /// first of raw with every checkpoint planned, raw with one, packed with every one,
    /// packed with one, raw with none, packed with none (DESIGN.md section 5.5: the build
    /// keeps one checkpoint at a time, or none, where the disk holds no more).
    pub fn disk_fit(&self, m: &Machine) -> DiskFit {
        let one = self.checkpoints / 2;
        let fit = |levels: u64, checkpoints: u64| levels + checkpoints + self.scratch <= m.disk;
        let (raw, packed) = (self.raw_so_far, self.packed_so_far);
        [
            (raw, self.checkpoints, DiskFit::Raw),
            (raw, one, DiskFit::RawOneCheckpoint),
            (packed, self.checkpoints, DiskFit::Packed),
            (packed, one, DiskFit::PackedOneCheckpoint),
            (raw, 0, DiskFit::RawNoCheckpoint),
            (packed, 0, DiskFit::PackedNoCheckpoint),
        ]
        .into_iter()
        .find(|&(levels, checkpoints, _)| fit(levels, checkpoints))
        .map_or(DiskFit::No, |(_, _, f)| f)
    }
}

/// How a level fits a node's disk ([`LevelPlan::disk_fit`]), best first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DiskFit {
    /// Raw levels, and the checkpoints planned (two of the state; none with checkpoints
    /// off).
    Raw,
    /// Raw levels and one checkpoint: the build removes each before writing the next.
    RawOneCheckpoint,
    /// Packed levels and the checkpoints planned.
    Packed,
    /// Packed levels and one checkpoint.
    PackedOneCheckpoint,
    /// Raw levels and no checkpoint: the build skips them, saying so.
    RawNoCheckpoint,
    /// Packed levels and no checkpoint.
    PackedNoCheckpoint,
    /// Not even the packed levels.
    No,
}

/// Stream buffers per thread: a chunk of a lower level's values and the parents found in
/// it (generously).
pub const STREAM_BUFFER: u64 = 1 << 20;

/// The plan of levels `0..=max_seeds` on `machine`: `pack_ratio` is raw over packed
/// size; times come from `rate`, lowered for larger levels as [`rate_at`] says, and
/// assume every core of every node is busy (which a distributed build approaches only on
/// large levels). With `checkpoints`, each level's disk counts the checkpoints of its
/// state (DESIGN.md section 4.5).
pub fn plan(
    index: &Index,
    max_seeds: usize,
    machine: &Machine,
    pack_ratio: f64,
    rate: Option<Rate>,
    checkpoints: bool,
) -> Result<Vec<LevelPlan>> {
    let ranks = machine.nodes.max(1);
    let threads = (ranks * machine.cores.max(1)) as f64;
    let p = index.pits_per_side();
    if let Some(n) = first_too_large(index, max_seeds, machine, pack_ratio, checkpoints) {
        let fits = match n {
            0 => String::new(),
            n => format!("plan up to level {} at most, or ", n - 1),
        };
        return Err(Error::Input(format!(
            "level {n} of {p} pits per side needs more than 2^64 bytes a node on {ranks} \
             node(s) (its state, its checkpoints or the levels up to it): {fits}on more nodes"
        )));
    }
    let (mut raw_so_far, mut packed_so_far) = (0, 0);
    let levels = (0..=max_seeds)
        .map(|n| {
            let positions = index.level_size(n);
            let slice = largest_slice(positions, ranks);
            let raw = PAYLOAD_OFFSET as u64 + slice;
            // The ratio is measured on whole files, headers and block tables included.
            let packed = (raw as f64 / pack_ratio).ceil() as u64;
            raw_so_far += raw;
            packed_so_far += packed;
            let reach: u64 = (lowest_captured_level(p, n)..n.saturating_sub(1))
                .map(|m| largest_slice(index.level_size(m), ranks))
                .sum();
            let buffers = STREAM_BUFFER * machine.cores.max(1) as u64;
            // A build over several ranks reads its slices of the lower levels as streams,
            // with the fast state where a node holds it and the buffers, else the compact
            // one, else the lean one (DESIGN.md section 5.4).
            let chosen = if ranks > 1 {
                slice_way(n, slice, Some(machine.memory.saturating_sub(buffers)))
            } else {
                let fit = LevelMemory {
                    seeds: n,
                    positions: slice,
                    lower_bytes: reach,
                    free: Some(machine.memory),
                };
                way(&MethodRequest::default(), &fit)
            };
            let LevelMethod { state, lower } = chosen;
            let buffers = if lower == Lower::Stream { buffers } else { 0 };
            let held = state.peak_bytes(slice, n, lower);
            let scratch = state.scratch_bytes(slice, n, lower);
            let lower = if lower == Lower::Random { reach } else { 0 };
            let mut level = LevelPlan {
                seeds: n,
                positions,
                way: Some(chosen),
                state: held,
                lower,
                buffers,
                raw,
                packed,
                raw_so_far,
                packed_so_far,
                checkpoints: match checkpoints {
                    false => 0,
                    true => 2 * (PAYLOAD_OFFSET as u64 + state.checkpoint_bytes(slice)),
                },
                scratch,
                seconds: rate.map(|r| {
                    let per_thread = rate_at(r.per_thread, r.level_size, positions);
                    positions as f64 / (per_thread * threads) * r.ways.of(chosen)
                }),
                single: ranks == 1,
            };
            if level.memory() > machine.memory {
                level.way = None;
            }
            level
        })
        .collect();
    Ok(levels)
}

/// The first level of `0..=max_seeds` with a figure of [`plan`] per node past 2^64 bytes,
/// which 64-bit sums would wrap: counted in 128 bits, the fast state of its slice (the
/// larger, 2.125 bytes a position and a bit, [`crate::solve::level::StateKind::bytes`]) beside the lower
/// levels and the buffers, and its checkpoints beside the levels so far, raw or packed.
fn first_too_large(
    index: &Index,
    max_seeds: usize,
    machine: &Machine,
    pack_ratio: f64,
    checkpoints: bool,
) -> Option<usize> {
    let p = index.pits_per_side();
    let ranks = machine.nodes.max(1);
    let slice = |n: usize| largest_slice(index.level_size(n), ranks) as u128;
    let header = PAYLOAD_OFFSET as u128;
    let (mut raw_so_far, mut packed_so_far) = (0u128, 0u128);
    (0..=max_seeds).find(|&n| {
        let raw = header + slice(n);
        raw_so_far += raw;
        packed_so_far += (raw as f64 / pack_ratio).ceil() as u128;
        let state = slice(n) * 17 / 8 + 8;
        let saved = if checkpoints { 2 * (header + state) } else { 0 };
        let reach: u128 = (lowest_captured_level(p, n)..n.saturating_sub(1))
            .map(slice)
            .sum();
        let buffers = STREAM_BUFFER as u128 * machine.cores.max(1) as u128;
        [
            state + reach + buffers,
            raw_so_far + saved,
            packed_so_far + saved,
        ]
        .iter()
        .any(|&b| b > u64::MAX as u128)
    })
}

#[cfg(test)]
mod tests {
    use std::ops::Range;

    use super::*;
    use crate::db::layout::slice;
    use crate::solve::level::StateKind;
    use crate::solve::plan::timing::WayCosts;

    #[test]
    fn slices_tile_the_level_and_differ_by_at_most_one() {
        for (size, ranks) in [(0u64, 1usize), (10, 3), (12_685_179, 7), (5, 8)] {
            let slices: Vec<Range<u64>> = (0..ranks).map(|r| slice(size, ranks, r)).collect();
            assert_eq!(slices[0].start, 0);
            assert_eq!(slices[ranks - 1].end, size);
            for w in slices.windows(2) {
                assert_eq!(w[0].end, w[1].start);
            }
            let lens: Vec<u64> = slices.iter().map(|s| s.end - s.start).collect();
            let (lo, hi) = (lens.iter().min().unwrap(), lens.iter().max().unwrap());
            assert!(hi - lo <= 1, "{lens:?}");
            assert_eq!(*hi, largest_slice(size, ranks));
        }
    }

    #[test]
    fn the_whole_game_on_one_and_on_sixteen_nodes() {
        let index = Index::new(6, 48).unwrap();
        let one = Machine {
            nodes: 1,
            memory: 1 << 40,
            cores: 64,
            disk: 4 << 40,
        };
        let rate = Rate {
            per_thread: 2e6,
            level_size: 80_214_915,
            ways: WayCosts::default(),
        };
        let p = plan(&index, 48, &one, 2.0, Some(rate), false).unwrap();
        // Level 20 at the measured rate on 64 threads; level 28 at 0.853 of it:
        // (1e9 / 80,214,915)^-0.04 (0.904) up to the knee, (1,482,519,324 / 1e9)^-0.15
        // (0.943) beyond.
        assert!((p[20].seconds.unwrap() - 80_214_915.0 / 2e6 / 64.0).abs() < 1e-6);
        let r28 = 1_482_519_324.0 / p[28].seconds.unwrap() / 64.0;
        assert!((r28 / 2e6 - 0.853).abs() < 0.002, "{r28}");
        // Level 48: 203,648,015,935 positions; on 1 TiB the fast state (2 bytes and a bit
        // each) spilled while the levels a capture reaches (33..=46, 667 GB) are read.
        assert_eq!(p[48].positions, 203_648_015_935);
        assert_eq!(
            p[48].way,
            Some(LevelMethod {
                state: StateKind::Fast,
                lower: Lower::Random
            })
        );
        assert_eq!(p[48].state, 432_752_033_862);
        assert_eq!(p[48].lower, 667_032_175_005);
        assert_eq!(p[48].memory(), 667_032_175_005);
        let total: u64 = p.iter().map(|l| l.positions).sum();
        assert_eq!(p[48].raw_so_far, total + 49 * PAYLOAD_OFFSET as u64);
        // 256 GB and 64 cores: every level fits, level 48 with the compact state (1.125
        // bytes a position) and its lower levels read as a stream.
        let node = Machine {
            memory: 256_000_000_000,
            ..one
        };
        let p = plan(&index, 48, &node, 2.0, None, false).unwrap();
        assert!(p.iter().all(|l| l.fits_memory(&node)));
        assert_eq!(
            p[48].way,
            Some(LevelMethod {
                state: StateKind::Compact,
                lower: Lower::Stream
            })
        );
        assert_eq!(p[48].state, 229_104_017_927);
        assert_eq!(p[48].lower, 0);
        assert_eq!(p[48].memory(), 229_104_017_927 + 64 * STREAM_BUFFER);
        // Level 36, the last of the 2x6 games with 3 seeds a pit, on this machine's
        // 24 GiB: the compact state, 16.0 GB.
        let here = Machine {
            memory: 24 << 30,
            cores: 2,
            ..one
        };
        let p = plan(&index, 36, &here, 2.0, None, false).unwrap();
        assert_eq!(
            p[36].way,
            Some(LevelMethod {
                state: StateKind::Compact,
                lower: Lower::Stream
            })
        );
        assert_eq!(p[36].state, 16_039_880_609);
        // With checkpoints, two of the state while the newer is written: on this
        // machine's 80 GB the raw levels (58.6 GB) and the checkpoints of level 36 do not
        // fit, packed ones do.
        let disk = Machine {
            disk: 80_000_000_000,
            ..here
        };
        let with = plan(&index, 36, &disk, 2.68, None, true).unwrap();
        let raw = with[36].raw_so_far;
        assert_eq!(raw, p[36].raw_so_far);
        assert_eq!(
            with[36].checkpoints,
            2 * (16_039_880_609 + PAYLOAD_OFFSET as u64)
        );
        assert!(raw <= disk.disk && raw + with[36].checkpoints > disk.disk);
        assert!(!with[36].fits_disk(&disk) && with[36].fits_disk_packed(&disk));
        assert!(p[36].fits_disk(&disk) && p[36].checkpoints == 0);
        assert_eq!(
            p[35].way,
            Some(LevelMethod {
                state: StateKind::Fast,
                lower: Lower::Random
            })
        );
        // Over 16 ranks of 64 GiB, the fast state of a slice and a stream of the slices
        // below: level 48 needs 27.0 GB a rank.
        let sixteen = Machine {
            nodes: 16,
            memory: 64 << 30,
            ..one
        };
        let p = plan(&index, 48, &sixteen, 2.0, None, false).unwrap();
        let slice = 203_648_015_935u64.div_ceil(16);
        assert_eq!(
            p[48].way,
            Some(LevelMethod {
                state: StateKind::Fast,
                lower: Lower::Stream
            })
        );
        assert_eq!(p[48].state, 2 * slice + slice.div_ceil(64) * 8);
        assert_eq!(p[48].lower, 0);
        assert!(p.iter().all(|l| l.fits_memory(&sixteen)));
        // Nodes that hold a slice's compact state but not its fast one: compact there.
        let small = Machine {
            memory: 20 << 30,
            ..sixteen
        };
        let p = plan(&index, 48, &small, 2.0, None, false).unwrap();
        assert_eq!(
            p[48].way,
            Some(LevelMethod {
                state: StateKind::Compact,
                lower: Lower::Stream
            })
        );
        assert_eq!(p[48].state, slice + slice.div_ceil(64) * 8);
        assert_eq!(
            p[40].way,
            Some(LevelMethod {
                state: StateKind::Fast,
                lower: Lower::Stream
            })
        );
        assert!(p.iter().all(|l| l.fits_memory(&small)));
        let tiny = Machine {
            memory: 1 << 30,
            ..sixteen
        };
        let first_too_big = plan(&index, 48, &tiny, 2.0, None, false)
            .unwrap()
            .iter()
            .find(|l| !l.fits_memory(&tiny))
            .map(|l| l.seeds);
        // With the lean state (at its peak, its forward pass's window: the compact state of
        // a quarter of the slice), level 41 (a slice of 2,941.4 million positions) needs
        // 0.83 GB a rank besides its stream buffers, under 1 GiB; level 42 (a slice of
        // 3,675.4 million) 1.03 GB. (The compact state stopped at level 37.)
        assert_eq!(first_too_big, Some(42));
        let p = plan(&index, 48, &tiny, 2.0, None, false).unwrap();
        let lean = Some(LevelMethod {
            state: StateKind::Lean,
            lower: Lower::Stream,
        });
        assert_eq!(p[41].way, lean);
        assert_eq!(p[37].way, lean);
    }
}
