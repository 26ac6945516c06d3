//! Planning a build: what each level needs (solver memory, disk) on each of `R` ranks,
//! how long it should take at a measured rate, and whether a machine has it, so that
//! nobody starts a build that cannot finish (DESIGN.md section 5.4).
//!
//! A level is cut into `R` slices of consecutive indices, as even as they can be: slice
//! `r` is `[r * size / R, (r + 1) * size / R)` (integer division), so slice sizes differ
//! by at most one position. A single process is `R = 1`.

use std::path::Path;

pub use crate::db::layout::largest_slice;
use crate::db::raw::PAYLOAD_OFFSET;
use crate::error::{Error, Result};
use crate::game::index::Index;
use crate::game::scan::lowest_captured_level;
use crate::solve::level::{Lower, StateKind, COMPACT_MAX_SEEDS};
use crate::solve::rates::{busy, LevelRate};
use crate::util::{bytes, disk_available, group, memory_available, memory_total};

/// Packed size against raw, when no pack of the database has been measured: levels
/// 16..=24 of Awari with the exit model (GUIDE.md, "Packing and sharing").
pub const DEFAULT_PACK_RATIO: f64 = 2.68;

/// How the build rate falls with the size of the level: positions per second per thread
/// go as `size^-RATE_FALL` up to [`RATE_KNEE`] positions and as `size^-RATE_FALL_LARGE`
/// beyond, where the state and the levels a capture reaches outgrow what the caches and
/// the TLB cover. Fitted to the quiet build of Oware levels 23..=29 on a 2-core machine
/// (fast state, random reads, 2 threads, December 2026): from the 3.76 million measured by
/// a calibration on level 14, 3.06 million planned on level 26 (3.06 built), 2.99 million
/// on level 27 (3.00) and 2.72 million on level 29 (2.75). The one power of 0.15 used
/// before planned levels 26 and 27 57 % and 61 % too long from that calibration.
pub const RATE_FALL: f64 = 0.04;

/// The fall beyond [`RATE_KNEE`]: levels 27 to 29 above.
pub const RATE_FALL_LARGE: f64 = 0.15;

/// The level size (positions) from which the rate falls as [`RATE_FALL_LARGE`].
pub const RATE_KNEE: u64 = 1_000_000_000;

/// The rate expected on a level of `size` positions from `rate` measured on a level of
/// `measured` positions (never above the measured rate).
pub fn rate_at(rate: f64, measured: u64, size: u64) -> f64 {
    if size <= measured || measured == 0 {
        return rate;
    }
    // The logarithm of the rate, less a constant, on a level of `s` positions.
    let curve = |s: u64| {
        let s = s as f64;
        let knee = RATE_KNEE as f64;
        -RATE_FALL * s.min(knee).ln() - RATE_FALL_LARGE * (s.max(knee) / knee).ln()
    };
    rate * (curve(size) - curve(measured)).exp()
}

/// How [`rate_at`] lowers a rate, in words for the plan's `rate:` line.
pub fn rate_fall() -> String {
    format!(
        "size^-{RATE_FALL} up to {:.1} billion positions and size^-{RATE_FALL_LARGE} beyond",
        RATE_KNEE as f64 / 1e9
    )
}

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
    pub way: Option<Way>,
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
        need(self.state, self.lower, self.spilled()) + self.buffers
    }

    /// Whether the state is spilled while the lower levels are in memory (a single
    /// process only).
    fn spilled(&self) -> bool {
        self.single && self.lower > 0 && self.state >= SPILL_FROM
    }

    /// Whether the raw levels `0..=seeds` and the level's checkpoints fit a node's disk.
    pub fn fits_disk(&self, m: &Machine) -> bool {
        self.raw_so_far + self.checkpoints <= m.disk
    }

    /// Whether the levels `0..=seeds` packed and the level's checkpoints fit a node's
    /// disk.
    pub fn fits_disk_packed(&self, m: &Machine) -> bool {
        self.packed_so_far + self.checkpoints <= m.disk
    }

    /// How the levels `0..=seeds` and the level's checkpoints fit a node's disk: the
    /// first of raw with every checkpoint planned, raw with one, packed with every one,
    /// packed with one, raw with none, packed with none (DESIGN.md section 5.5: the build
    /// keeps one checkpoint at a time, or none, where the disk holds no more).
    pub fn disk_fit(&self, m: &Machine) -> DiskFit {
        let one = self.checkpoints / 2;
        let fit = |levels: u64, checkpoints: u64| levels + checkpoints <= m.disk;
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

/// The default state size from which a random forward pass spills its state (DESIGN.md
/// section 5.2): 256 MiB.
pub const SPILL_FROM: u64 = 256 << 20;

/// Stream buffers per thread: a chunk of a lower level's values and the parents found in
/// it (generously).
pub const STREAM_BUFFER: u64 = 1 << 20;

/// The memory a level needs from `state` bytes of solver state and `lower` bytes of lower
/// levels read at random: both, or with `spill` the larger.
fn need(state: u64, lower: u64, spill: bool) -> u64 {
    if spill {
        state.max(lower)
    } else {
        state + lower
    }
}

/// Wall time of a level built each way against the fast state reading at random: levels
/// 24 to 26 of Awari, 2 threads (GUIDE.md, "Performance", and data/bench/: fast and
/// streamed 1.01 to 1.14, compact and streamed 1.37 to 1.61, compact reading at random
/// 1.38 on level 24).
pub fn way_cost(way: Way) -> f64 {
    match (way.state, way.lower) {
        (StateKind::Fast, Lower::Random) => 1.0,
        (StateKind::Fast, Lower::Stream) => 1.1,
        (StateKind::Compact, Lower::Random) => 1.4,
        (StateKind::Compact, Lower::Stream) => 1.5,
    }
}

/// How a level is built: its solver state and how its forward pass reads the lower
/// levels (DESIGN.md section 5.2). All four ways write the same file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Way {
    /// The solver state.
    pub state: StateKind,
    /// How the lower levels are read.
    pub lower: Lower,
}

impl std::fmt::Display for Way {
    /// `state/lower` as the build and plan tables print it: `fast/random`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.state.name(), self.lower.name())
    }
}

/// What a build asks of the way its levels are built; [`way`] chooses the rest per level.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ask {
    /// The solver state; `None` chooses per level.
    pub state: Option<StateKind>,
    /// How the lower levels are read; `None` chooses per level.
    pub lower: Option<Lower>,
    /// A random forward pass whose state takes at least this many bytes spills it
    /// ([`crate::expert::SPILL_FROM`] by default).
    pub spill_from: u64,
}

impl Default for Ask {
    /// Everything chosen per level, spilling from [`crate::expert::SPILL_FROM`].
    fn default() -> Ask {
        Ask {
            state: None,
            lower: None,
            spill_from: SPILL_FROM,
        }
    }
}

/// One level (or one rank's slice of it) as [`way`] fits it into memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fit {
    /// The level: seeds on the board (above 56 only the fast state holds it).
    pub seeds: usize,
    /// Positions whose state is held: the level's, or a rank's slice's.
    pub positions: u64,
    /// Bytes of the lower levels a random forward pass holds (one per position).
    pub lower_bytes: u64,
    /// Memory free for the level; `None`: unknown, assume it fits.
    pub free: Option<u64>,
}

/// How a level is built: what `ask` fixes, and else the fastest way that fits `fit.free`:
/// the fast state reading at random (its state spilled from `ask.spill_from` bytes, so
/// that it needs the larger of the state and the lower levels, not their sum), else the
/// fast state with a stream, else the compact state with a stream. The compact state
/// holds levels up to 56 seeds; the compact state asked for without a way of reading
/// reads as a stream. Each state costs what [`StateKind::bytes`] says.
pub fn way(ask: &Ask, fit: &Fit) -> Way {
    let fits = |need: u64| fit.free.is_none_or(|f| need <= f);
    let random_need = |state: StateKind| {
        let bytes = state.bytes(fit.positions);
        need(bytes, fit.lower_bytes, bytes >= ask.spill_from)
    };
    let state = ask.state.unwrap_or_else(|| {
        if fit.seeds > COMPACT_MAX_SEEDS || fits(StateKind::Fast.bytes(fit.positions)) {
            StateKind::Fast
        } else {
            StateKind::Compact
        }
    });
    let lower = ask.lower.unwrap_or_else(|| {
        if state == StateKind::Fast && fits(random_need(state)) {
            Lower::Random
        } else {
            Lower::Stream
        }
    });
    Way { state, lower }
}

/// How a rank builds its slice of `positions` positions of level `seeds`, given `free`
/// bytes of its share of the node's memory ([`way`] asked for nothing but the stream):
/// over ranks the lower levels are read as streams, with the fast state where the slice
/// holds it, else the compact one (DESIGN.md section 5.4). The plan and the ranks' vote
/// both ask this.
pub(crate) fn slice_way(seeds: usize, positions: u64, free: Option<u64>) -> Way {
    let ask = Ask {
        lower: Some(Lower::Stream),
        ..Ask::default()
    };
    let fit = Fit {
        seeds,
        positions,
        lower_bytes: 0,
        free,
    };
    way(&ask, &fit)
}

/// A build rate measured on one level.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rate {
    /// Positions per second per thread.
    pub per_thread: f64,
    /// The positions of the level it was measured on.
    pub level_size: u64,
}

/// Below this share of their wall time on a CPU ([`busy`]), a timed
/// run's threads were kept off their cores by other work, and its rate is too low. On
/// this 2-core machine the passes of level 24 alone keep both cores 96 % and 98 % busy
/// (GUIDE.md, "Performance"); beside other builds (load 6 to 10) the calibration's
/// threads were on a CPU 27 to 33 % of the time, levels 23 to 27 15 to 21 %.
pub const BUSY_AT_LEAST: f64 = 0.8;

/// Levels smaller than this are left out of a rate measured by a build: their time is
/// mostly fixed costs (starting the threads' work, writing and syncing the file).
pub const MEASURED_FROM: u64 = 1_000_000;

/// How many of the largest levels a build measured a rate is taken from.
pub const MEASURED_LEVELS: usize = 3;

/// The calibration of `awari plan`: small levels built in a scratch folder, the largest
/// one timed.
#[derive(Clone, Copy, Debug)]
pub struct Calibration {
    /// The level timed.
    pub seeds: usize,
    /// Its positions.
    pub positions: u64,
    /// Its wall time.
    pub seconds: f64,
    /// CPU time of the threads on it, where the OS says.
    pub cpu_seconds: Option<f64>,
    /// Worker threads.
    pub threads: usize,
}

impl Calibration {
    /// The share of the threads' wall time they were on a CPU, where known.
    pub fn busy(&self) -> Option<f64> {
        self.cpu_seconds
            .map(|cpu| busy(cpu, self.seconds, self.threads))
    }

    /// Whether other work kept the threads off their cores (less than [`BUSY_AT_LEAST`]
    /// of their time on a CPU).
    pub fn disturbed(&self) -> bool {
        self.busy().is_some_and(|b| b < BUSY_AT_LEAST)
    }

    /// The rate to plan with: positions per second per thread by the wall clock, or, when
    /// the calibration was disturbed, per second of CPU time (what the threads did while
    /// they ran: the rate of a machine that runs nothing else).
    pub fn rate(&self) -> Rate {
        let per_thread = match self.cpu_seconds {
            Some(cpu) if self.disturbed() => self.positions as f64 / cpu.max(1e-9),
            _ => self.by_wall(),
        };
        Rate {
            per_thread,
            level_size: self.positions,
        }
    }

    /// The rate per thread by the wall clock: what a build beside the same work would
    /// have.
    pub fn by_wall(&self) -> f64 {
        self.positions as f64 / self.seconds.max(1e-9) / self.threads.max(1) as f64
    }

    /// What to say of a disturbed calibration, in one line; `None` when it was not.
    pub fn warning(&self) -> Option<String> {
        let busy = self.busy().filter(|_| self.disturbed())?;
        let wall = self.by_wall();
        Some(format!(
            "the calibration was disturbed by other work on this machine: its {} threads were \
             on a CPU {:.0} % of the time ({:.2} s of CPU in {:.2} s), so the times below use \
             its rate per CPU second, {:.0} positions/s/thread, not {:.0} by the wall clock; \
             a build beside that work takes longer. Build a few large levels in this folder \
             first (plan then uses their measured rates) or give --rates",
            self.threads,
            100.0 * busy,
            self.cpu_seconds.unwrap_or(0.0),
            self.seconds,
            self.rate().per_thread,
            wall
        ))
    }
}

/// A rate taken from the levels a build measured ([`measured_rate`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Measured {
    /// The rate: for the fast state reading at random, on the largest level used.
    pub rate: Rate,
    /// The levels it was taken from, smallest first.
    pub levels: Vec<usize>,
    /// Their worker threads (the largest count if they differ).
    pub threads: usize,
    /// Those among them whose threads were on a CPU less than [`BUSY_AT_LEAST`] of the
    /// time, with that share: used, by their rate per CPU second, only because every
    /// level considered was so.
    pub disturbed: Vec<(usize, f64)>,
    /// Of the largest levels considered, those left out for being disturbed.
    pub left_out: Vec<usize>,
    /// The rate per thread by the wall clock: below the rate's when the levels used were
    /// disturbed, what a build beside the same work would have.
    pub by_wall: f64,
}

/// The rate of the largest levels a build measured in the folder (the latest line of
/// each level in its rates file), or `None` when none of at least [`MEASURED_FROM`]
/// positions is there. Of the [`MEASURED_LEVELS`] largest, those whose threads had their
/// cores ([`BUSY_AT_LEAST`]) are used, or all of them by their rate per CPU second
/// (as [`Calibration::rate`]) if none had; a line whose
/// positions are not those of its level in `index` (another board size) is left out.
/// Each level's rate is referred to the fast state reading at random ([`way_cost`]) and
/// to the size of the largest level used ([`rate_at`]); the rate is their median.
pub fn measured_rate(levels: &[LevelRate], index: &Index) -> Option<Measured> {
    let mut large: Vec<_> = levels
        .iter()
        .filter(|r| r.seeds <= index.max_seeds() && index.level_size(r.seeds) == r.positions)
        .filter(|r| r.positions >= MEASURED_FROM)
        .collect();
    large.sort_by_key(|r| std::cmp::Reverse(r.positions));
    large.truncate(MEASURED_LEVELS);
    let quiet = |r: &LevelRate| r.busy().is_none_or(|b| b >= BUSY_AT_LEAST);
    let any_quiet = large.iter().any(|r| quiet(r));
    let (used, left_out): (Vec<&LevelRate>, Vec<&LevelRate>) =
        large.into_iter().partition(|r| !any_quiet || quiet(r));
    let top = used.first()?.positions;
    // The median of the levels' rates, each referred to the fast state reading at random
    // and to the largest level's size; by their CPU time or by the wall clock.
    let median = |by_cpu: bool| {
        let mut rates: Vec<f64> = used
            .iter()
            .map(|r| {
                let way = Way {
                    state: r.state,
                    lower: r.lower,
                };
                let per_thread = match r.cpu_seconds {
                    Some(cpu) if by_cpu && !quiet(r) => r.positions as f64 / cpu.max(1e-9),
                    _ => r.per_thread(),
                };
                rate_at(per_thread * way_cost(way), r.positions, top)
            })
            .collect();
        rates.sort_by(f64::total_cmp);
        let k = rates.len();
        (rates[(k - 1) / 2] + rates[k / 2]) / 2.0
    };
    // A level built beside other work counts by its CPU time, as a calibration does: the
    // rate its threads had while they ran.
    let (median, by_wall) = (median(true), median(false));
    let mut seeds: Vec<usize> = used.iter().map(|r| r.seeds).collect();
    seeds.sort();
    let mut left: Vec<usize> = left_out.iter().map(|r| r.seeds).collect();
    left.sort();
    let mut disturbed: Vec<(usize, f64)> = used
        .iter()
        .filter_map(|r| {
            r.busy()
                .filter(|&b| b < BUSY_AT_LEAST)
                .map(|b| (r.seeds, b))
        })
        .collect();
    disturbed.sort_by_key(|d| d.0);
    Some(Measured {
        rate: Rate {
            per_thread: median,
            level_size: top,
        },
        levels: seeds,
        threads: used.iter().map(|r| r.threads).max().unwrap_or(1),
        disturbed,
        left_out: left,
        by_wall,
    })
}

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
) -> Vec<LevelPlan> {
    let ranks = machine.nodes.max(1);
    let threads = (ranks * machine.cores.max(1)) as f64;
    let p = index.pits_per_side();
    let (mut raw_so_far, mut packed_so_far) = (0, 0);
    (0..=max_seeds)
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
            // one (DESIGN.md section 5.4).
            let chosen = if ranks > 1 {
                slice_way(n, slice, Some(machine.memory.saturating_sub(buffers)))
            } else {
                let fit = Fit {
                    seeds: n,
                    positions: slice,
                    lower_bytes: reach,
                    free: Some(machine.memory),
                };
                way(&Ask::default(), &fit)
            };
            let Way { state, lower } = chosen;
            let buffers = if lower == Lower::Stream { buffers } else { 0 };
            let lower = if lower == Lower::Random { reach } else { 0 };
            let mut level = LevelPlan {
                seeds: n,
                positions,
                way: Some(chosen),
                state: state.bytes(slice),
                lower,
                buffers,
                raw,
                packed,
                raw_so_far,
                packed_so_far,
                checkpoints: if checkpoints {
                    2 * (PAYLOAD_OFFSET as u64 + state.bytes(slice))
                } else {
                    0
                },
                seconds: rate.map(|r| {
                    let per_thread = rate_at(r.per_thread, r.level_size, positions);
                    positions as f64 / (per_thread * threads) * way_cost(chosen)
                }),
                single: ranks == 1,
            };
            if level.memory() > machine.memory {
                level.way = None;
            }
            level
        })
        .collect()
}

/// What a single-process build holds in memory when a level starts.
#[derive(Clone, Copy, Debug, Default)]
pub struct Room {
    /// Bytes of the levels a random forward pass reads (one per position): the levels a
    /// capture reaches, up to the one two below. 0 for a streamed forward pass.
    pub lower: u64,
    /// Of those, the bytes in memory already.
    pub held: u64,
}

impl Room {
    /// The memory level `n` of `positions` positions still needs beyond what is held: the
    /// solver state and the lower levels, or with `spill` the larger of the two, since a
    /// spilled state and the lower levels are never in memory together.
    pub fn need(&self, positions: u64, state: StateKind, spill: bool) -> u64 {
        let state = state.bytes(positions);
        let need = if spill {
            state.max(self.lower)
        } else {
            state + self.lower
        };
        need.saturating_sub(self.held)
    }
}

/// Refuses to start level `n` of `positions` positions into `dir` when the solver state
/// and the lower levels would not fit the memory available now, or its file the free
/// disk under `dir`: the error says what it needs, what there is, and what to do. With
/// `spill`, the lower levels and the state are never in memory together.
#[allow(clippy::too_many_arguments)]
pub fn check_level_fits(
    dir: &Path,
    n: usize,
    positions: u64,
    kind: StateKind,
    spill: bool,
    packed: bool,
    room: Room,
) -> Result<()> {
    let state = kind.bytes(positions);
    let need = room.need(positions, kind, spill);
    if let Some(free) = memory_available() {
        if need > free {
            let hint = if kind == StateKind::Fast && n <= COMPACT_MAX_SEEDS {
                "`--state compact` takes 1.125 bytes a position, "
            } else {
                ""
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
                bytes(room.lower),
                bytes(room.held),
                bytes(free)
            )));
        }
    }
    // A spilled state lies on disk beside the level until the backward pass; a packed
    // level is written from memory, about half the raw size (the plain model).
    let level = if packed { positions / 2 } else { positions };
    let file = PAYLOAD_OFFSET as u64 + level + if spill { state } else { 0 };
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
    let state = kind.bytes(slice);
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
    let file = PAYLOAD_OFFSET as u64 + slice;
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
        // The smallest state the build may use for the level.
        let kind = kind.unwrap_or(if top <= COMPACT_MAX_SEEDS {
            StateKind::Compact
        } else {
            StateKind::Fast
        });
        let state = kind.bytes(positions);
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
    use std::ops::Range;

    use super::*;
    use crate::db::layout::slice;
    use crate::solve::rates::busy as busy_share;

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
        };
        let p = plan(&index, 48, &one, 2.0, Some(rate), false);
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
            Some(Way {
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
        let p = plan(&index, 48, &node, 2.0, None, false);
        assert!(p.iter().all(|l| l.fits_memory(&node)));
        assert_eq!(
            p[48].way,
            Some(Way {
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
        let p = plan(&index, 36, &here, 2.0, None, false);
        assert_eq!(
            p[36].way,
            Some(Way {
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
        let with = plan(&index, 36, &disk, 2.68, None, true);
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
            Some(Way {
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
        let p = plan(&index, 48, &sixteen, 2.0, None, false);
        let slice = 203_648_015_935u64.div_ceil(16);
        assert_eq!(
            p[48].way,
            Some(Way {
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
        let p = plan(&index, 48, &small, 2.0, None, false);
        assert_eq!(
            p[48].way,
            Some(Way {
                state: StateKind::Compact,
                lower: Lower::Stream
            })
        );
        assert_eq!(p[48].state, slice + slice.div_ceil(64) * 8);
        assert_eq!(
            p[40].way,
            Some(Way {
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
            .iter()
            .find(|l| !l.fits_memory(&tiny))
            .map(|l| l.seeds);
        // With the compact state, level 36 (a slice of 891.1 million positions) needs 1.00
        // GB a rank besides its stream buffers, under 1 GiB; level 37 (a slice of 1,144.7
        // million) 1.29 GB.
        assert_eq!(first_too_big, Some(37));
    }

    /// The way each memory allows, for level 24 of Awari (382,628,610 positions: fast
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
        let at = |free: u64, ask: &Ask| {
            let fit = Fit {
                seeds: 24,
                positions,
                lower_bytes,
                free: Some(free),
            };
            way(ask, &fit)
        };
        let w = |state, lower| Way { state, lower };
        let auto = Ask::default();
        // Spilled (the state is over 256 MiB): the larger of state and lower levels.
        assert_eq!(at(lower_bytes, &auto), w(StateKind::Fast, Lower::Random));
        assert_eq!(
            at(lower_bytes - 1, &auto),
            w(StateKind::Fast, Lower::Stream)
        );
        // Not spilled: both at once.
        let no_spill = Ask {
            spill_from: u64::MAX,
            ..auto
        };
        let both = fast + lower_bytes;
        assert_eq!(at(both, &no_spill), w(StateKind::Fast, Lower::Random));
        assert_eq!(at(both - 1, &no_spill), w(StateKind::Fast, Lower::Stream));
        // The fast state alone does not fit: compact, streamed.
        assert_eq!(at(fast - 1, &auto), w(StateKind::Compact, Lower::Stream));
        // What is asked is kept, whatever the memory.
        let asked = Ask {
            state: Some(StateKind::Compact),
            ..auto
        };
        assert_eq!(at(u64::MAX, &asked), w(StateKind::Compact, Lower::Stream));
        let asked = Ask {
            lower: Some(Lower::Random),
            ..asked
        };
        assert_eq!(at(0, &asked), w(StateKind::Compact, Lower::Random));
        // Above 56 seeds the compact state cannot hold a level.
        let fit = Fit {
            seeds: 57,
            positions,
            lower_bytes,
            free: Some(0),
        };
        assert_eq!(way(&auto, &fit), w(StateKind::Fast, Lower::Stream));
        assert_eq!(
            format!("{}", w(StateKind::Compact, Lower::Stream)),
            "compact/stream"
        );
    }

    /// A line of a rates file: level `seeds` of Awari built at `per_thread` positions per
    /// second per thread on 2 threads, `busy` of their time on a CPU.
    fn built(
        seeds: usize,
        per_thread: f64,
        busy: f64,
        state: StateKind,
        lower: Lower,
    ) -> LevelRate {
        let positions = Index::new(6, seeds).unwrap().level_size(seeds);
        let seconds = positions as f64 / per_thread / 2.0;
        LevelRate {
            seeds,
            positions,
            threads: 2,
            seconds,
            forward: seconds / 3.0,
            backward: seconds * 2.0 / 3.0,
            peak_rss: None,
            cpu_seconds: Some(busy * seconds * 2.0),
            state,
            lower,
            finished: 1_764_734_400,
        }
    }

    #[test]
    fn the_plan_takes_the_rates_of_the_largest_levels_built() {
        let index = Index::new(6, 48).unwrap();
        let (fast, random) = (StateKind::Fast, Lower::Random);
        let one = Machine {
            nodes: 1,
            memory: 1 << 40,
            cores: 2,
            disk: 4 << 40,
        };
        // Levels 22..=25 built quietly (level 25 with the compact state and a stream, 1.5
        // times as long); level 20 is not among the three largest.
        let levels = vec![
            built(20, 9e6, 0.95, fast, random),
            built(22, 4.0e6, 0.96, fast, random),
            built(23, 3.9e6, 0.97, fast, random),
            built(24, 3.8e6, 0.94, fast, random),
            built(25, 3.7e6 / 1.5, 0.95, StateKind::Compact, Lower::Stream),
        ];
        let m = measured_rate(&levels, &index).unwrap();
        assert_eq!(m.levels, vec![23, 24, 25]);
        assert_eq!((m.threads, m.disturbed.len(), m.left_out.len()), (2, 0, 0));
        let size = |n: usize| index.level_size(n);
        assert_eq!(m.rate.level_size, size(25));
        // The median of the three, each referred to level 25's size: level 24's.
        let at25 = |n: usize, r: f64| rate_at(r, size(n), size(25));
        let mut three = [at25(23, 3.9e6), at25(24, 3.8e6), 3.7e6];
        three.sort_by(f64::total_cmp);
        assert!((m.rate.per_thread - three[1]).abs() < 1.0, "{m:?}");
        assert!((m.rate.per_thread - at25(24, 3.8e6)).abs() < 1.0, "{m:?}");
        // The plan for levels 26 and 27 at that rate, not at a calibration's.
        let calibrated = Rate {
            per_thread: 1e6,
            level_size: size(14),
        };
        let p = plan(&index, 27, &one, 2.0, Some(m.rate), false);
        let q = plan(&index, 27, &one, 2.0, Some(calibrated), false);
        for n in [26, 27] {
            let want = size(n) as f64 / (rate_at(m.rate.per_thread, size(25), size(n)) * 2.0);
            assert!((p[n].seconds.unwrap() - want).abs() < 1e-6, "level {n}");
            assert!(q[n].seconds.unwrap() > 2.0 * p[n].seconds.unwrap());
        }
        // Level 25 built again beside other work, 45 % of the time on a CPU: the later
        // line counts, and it is left out for the quiet ones.
        let mut again = levels.clone();
        again.push(built(25, 1.5e6, 0.45, fast, random));
        let latest = crate::solve::rates::Rates {
            levels: again,
            ignored: 0,
        }
        .latest();
        let m = measured_rate(&latest, &index).unwrap();
        assert_eq!(
            (m.levels.clone(), m.left_out.clone()),
            (vec![23, 24], vec![25])
        );
        assert!(m.disturbed.is_empty());
        assert_eq!(m.rate.level_size, size(24));
        let mean = (rate_at(3.9e6, size(23), size(24)) + 3.8e6) / 2.0;
        assert!((m.rate.per_thread - mean).abs() < 1.0, "{m:?}");
        // Every one disturbed: used all the same, and said.
        let busy: Vec<LevelRate> = levels
            .iter()
            .map(|l| LevelRate {
                cpu_seconds: Some(0.5 * l.seconds * 2.0),
                ..*l
            })
            .collect();
        let quiet = measured_rate(&levels, &index).unwrap();
        let m = measured_rate(&busy, &index).unwrap();
        assert_eq!(m.levels, vec![23, 24, 25]);
        assert_eq!(m.disturbed, vec![(23, 0.5), (24, 0.5), (25, 0.5)]);
        assert!(m.left_out.is_empty());
        // Counted by their CPU time: on a CPU half the time, twice the wall clock's rate.
        assert!((m.rate.per_thread - 2.0 * quiet.rate.per_thread).abs() < 1.0);
        assert!((m.by_wall - quiet.rate.per_thread).abs() < 1.0);
        assert_eq!(quiet.by_wall, quiet.rate.per_thread);
        // No CPU time recorded: trusted.
        let unknown: Vec<LevelRate> = busy
            .iter()
            .map(|l| LevelRate {
                cpu_seconds: None,
                ..*l
            })
            .collect();
        assert!(measured_rate(&unknown, &index)
            .unwrap()
            .disturbed
            .is_empty());
        // Only small levels, or lines of another board size: no measured rate.
        let mut small: Vec<LevelRate> = (8..=11)
            .map(|n| built(n, 5e6, 0.95, fast, random))
            .collect();
        assert!(index.level_size(11) < MEASURED_FROM && index.level_size(12) >= MEASURED_FROM);
        assert_eq!(measured_rate(&small, &index), None);
        small.push(built(14, 5e6, 0.95, fast, random));
        assert_eq!(measured_rate(&small, &index).unwrap().levels, vec![14]);
        let other = Index::new(5, 48).unwrap();
        assert_eq!(measured_rate(&levels, &other), None);
        assert_eq!(measured_rate(&[], &index), None);
    }

    /// Levels 26 and 27 of Awari planned from level 24 as built on this 2-core machine
    /// when quiet (55.3 s on levels 0..=23, GUIDE.md "Performance"), against their builds
    /// (113.5 s and 168.6 s, fast and random, 2 threads): within 10 %; level 27 from
    /// levels 24 and 26 within 5 %.
    #[test]
    fn planned_times_of_levels_26_and_27_are_those_built() {
        let index = Index::new(6, 27).unwrap();
        let here = Machine {
            nodes: 1,
            memory: 24 << 30,
            cores: 2,
            disk: 1 << 40,
        };
        let quiet = |seeds: usize, seconds: f64| {
            let r = built(seeds, 1.0, 0.95, StateKind::Fast, Lower::Random);
            LevelRate {
                seconds,
                cpu_seconds: Some(0.95 * seconds * 2.0),
                ..r
            }
        };
        let within = |planned: f64, built: f64, share: f64| {
            assert!(
                (planned / built - 1.0).abs() < share,
                "{planned} s planned, {built} s built"
            );
        };
        let m = measured_rate(&[quiet(24, 55.3)], &index).unwrap();
        let p = plan(&index, 27, &here, 2.0, Some(m.rate), false);
        assert_eq!(p[26].way.unwrap().to_string(), "fast/random");
        // 114.5 s and 163.1 s planned.
        within(p[26].seconds.unwrap(), 113.5, 0.10);
        within(p[27].seconds.unwrap(), 168.6, 0.10);
        let m = measured_rate(&[quiet(24, 55.3), quiet(26, 113.5)], &index).unwrap();
        assert_eq!(m.levels, vec![24, 26]);
        let p = plan(&index, 27, &here, 2.0, Some(m.rate), false);
        // 162.4 s planned.
        within(p[27].seconds.unwrap(), 168.6, 0.05);
    }

    #[test]
    fn a_calibration_beside_other_work_is_said_and_not_trusted() {
        // Level 14 of Awari in 0.80 s on 2 threads with 1.52 s of CPU: 95 % busy, trusted.
        let quiet = Calibration {
            seeds: 14,
            positions: 4_381_818,
            seconds: 0.8,
            cpu_seconds: Some(1.52),
            threads: 2,
        };
        assert!((quiet.busy().unwrap() - 0.95).abs() < 1e-12);
        assert!(!quiet.disturbed());
        assert_eq!(quiet.warning(), None);
        assert_eq!(quiet.rate().per_thread, 4_381_818.0 / 0.8 / 2.0);
        assert_eq!(quiet.rate().level_size, 4_381_818);
        // The same work with a test suite on the other core: 2.45 s, 1.32 s of CPU (27 %).
        let busy = Calibration {
            seconds: 2.45,
            cpu_seconds: Some(1.32),
            ..quiet
        };
        assert!(busy.disturbed());
        assert_eq!(busy.rate().per_thread, 4_381_818.0 / 1.32);
        assert_eq!(busy.by_wall(), 4_381_818.0 / 2.45 / 2.0);
        let w = busy.warning().unwrap();
        assert!(
            w.contains("disturbed by other work")
                && w.contains("2 threads were on a CPU 27 % of the time (1.32 s of CPU in 2.45 s)")
                && w.contains("3319559 positions/s/thread, not 894249 by the wall clock")
                && w.contains("--rates"),
            "{w}"
        );
        // The line between: 80 % of the time is enough.
        let edge = |cpu: f64| Calibration {
            seconds: 0.5,
            cpu_seconds: Some(cpu),
            ..quiet
        };
        assert!(!edge(0.8).disturbed());
        assert!(edge(0.799).disturbed());
        // No CPU time from the OS: nothing to say, the wall clock's rate.
        let unknown = Calibration {
            cpu_seconds: None,
            ..busy
        };
        assert!(!unknown.disturbed() && unknown.warning().is_none());
        assert_eq!(unknown.rate().per_thread, 4_381_818.0 / 2.45 / 2.0);
        assert_eq!(busy_share(1.0, 1.0, 2), 0.5);
    }

    #[test]
    fn a_level_too_big_for_this_machine_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let none = Room::default();
        assert!(
            check_level_fits(dir.path(), 10, 351_351, StateKind::Fast, true, false, none).is_ok()
        );
        let e = check_level_fits(
            dir.path(),
            60,
            u64::MAX / 8,
            StateKind::Fast,
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
        let held = Room {
            lower: 2 * gib,
            held: 2 * gib,
        };
        // 3 GiB of fast state: 2 bytes and a bit per position.
        let positions = 3 * gib * 8 / 17;
        let fast = |rest: u64| {
            let need = held.need(positions, StateKind::Fast, true);
            assert_eq!(need, StateKind::Fast.bytes(positions) - 2 * gib);
            assert!((need as i64 - rest as i64).abs() < 64, "{need}");
        };
        fast(gib);
        let state = StateKind::Fast.bytes(positions);
        assert_eq!(held.need(positions, StateKind::Fast, false), state);
        assert_eq!(none.need(positions, StateKind::Fast, true), state);
        let part = Room {
            lower: 5 * gib,
            held: gib,
        };
        assert_eq!(part.need(positions, StateKind::Fast, true), 4 * gib);
        assert_eq!(
            part.need(positions, StateKind::Fast, false),
            state + 4 * gib
        );
        // The compact state: a byte and a bit per position.
        let compact = StateKind::Compact.bytes(positions);
        assert_eq!(compact, positions + positions.div_ceil(64) * 8);
        assert_eq!(none.need(positions, StateKind::Compact, false), compact);
        // 2^60 bytes of fast state and more: no machine has it.
        let huge = 1u64 << 59;
        let e =
            check_level_fits(dir.path(), 30, huge, StateKind::Fast, true, false, none).unwrap_err();
        assert!(e.to_string().contains("more memory"), "{e}");
    }
}
