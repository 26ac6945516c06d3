//! What kind of solver a level is built with and what solving it gives: the states
//! ([`StateKind`]) and how the lower levels are read ([`Lower`]), what each costs, and the
//! level's outcomes, values and times. The files of this folder use these; this file uses
//! none of them, so the folder's uses go one way.

use rayon::prelude::*;

/// The most seeds a level built with the compact state may hold, 56: its byte holds the
/// exits and values `-56..=56` twice over, and below them the bytes of positions with no
/// exit (`compact.rs` checks its codes against this).
pub const COMPACT_MAX_SEEDS: usize = 56;

/// The solver state a level is built with (DESIGN.md section 5.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StateKind {
    /// Two bytes per position and the threshold map's bit (2.125 bytes): a count of the
    /// in-level moves not yet known to lose, so that a loss costs one update.
    Fast,
    /// One byte per position and the threshold map's bit (1.125 bytes): a loss is
    /// confirmed by generating the position's moves again. Levels up to 56 seeds.
    Compact,
    /// Two bits per position (0.25 bytes): won, lost, or unsettled and whether open to a
    /// loss; the best exits and the values settled so far on disk, read and written in
    /// index order once per threshold (DESIGN.md section 5.6); with the lower levels
    /// streamed, about 3 bits a position in all; in one process and over ranks.
    Lean,
}

impl StateKind {
    /// Bytes of memory the state of `positions` positions takes.
    pub fn bytes(self, positions: u64) -> u64 {
        match self {
            // Two bits a position, in `lean.rs`'s words of 32.
            StateKind::Lean => positions.div_ceil(32) * 8,
            _ => self.cell_bytes() as u64 * positions + positions.div_ceil(64) * 8,
        }
    }

    /// Bytes of a checkpoint's payload of the state of `positions` positions (DESIGN.md
    /// section 4.5): the state's bytes, and for the lean state the checksum of its files
    /// after its two bits.
    pub fn checkpoint_bytes(self, positions: u64) -> u64 {
        match self {
            StateKind::Lean => self.bytes(positions) + 8,
            _ => self.bytes(positions),
        }
    }

    /// Bytes of memory a level (or slice) of `positions` positions of `seeds` seeds takes
    /// at its peak with this state: the state's own, and for the lean state with the
    /// lower levels streamed the larger of its two bits and a window of its forward pass
    /// (a compact state of a quarter of a large level; DESIGN.md section 5.6).
    pub fn peak_bytes(self, positions: u64, seeds: usize, lower: Lower) -> u64 {
        match (self, lower) {
            (StateKind::Lean, Lower::Stream) => {
                let kind = byte_state(seeds);
                let count = lean_windows(kind, positions) as u64;
                self.bytes(positions)
                    .max(kind.bytes(positions.div_ceil(count)))
            }
            _ => self.bytes(positions),
        }
    }

    /// Bytes of disk the state takes beside a level (or slice) of `positions` positions of
    /// `seeds` seeds while it is built, at the most: the lean state's two files (a byte a
    /// position each), or with the lower levels streamed, if more, its exits file and the
    /// raises its forward pass keeps for the windows after the first (DESIGN.md section
    /// 5.6), counted at 0.8 raises a position (`RAISES_PER_POSITION`). None for the others.
    pub fn scratch_bytes(self, positions: u64, seeds: usize, lower: Lower) -> u64 {
        match (self, lower) {
            (StateKind::Lean, Lower::Random) => 2 * positions,
            (StateKind::Lean, Lower::Stream) => {
                let count = lean_windows(byte_state(seeds), positions) as f64;
                let kept = positions as f64 * RAISES_PER_POSITION * (count - 1.0) / count;
                (2 * positions).max(positions + (kept * RAISE_BYTES as f64) as u64)
            }
            _ => 0,
        }
    }

    /// Bytes per position of the state's cells, besides the threshold map's bit: each
    /// encoding's `Encoding::BYTES` is this.
    pub(crate) const fn cell_bytes(self) -> usize {
        match self {
            StateKind::Fast => 2,
            StateKind::Compact => 1,
            // Two bits: no byte per position (see `StateKind::bytes`).
            StateKind::Lean => 0,
        }
    }

    /// The name used on the command line (`fast`, `compact`).
    pub fn name(self) -> &'static str {
        match self {
            StateKind::Fast => "fast",
            StateKind::Compact => "compact",
            StateKind::Lean => "lean",
        }
    }

    /// The state's code in a checkpoint's header (DESIGN.md section 4.5).
    pub(crate) fn code(self) -> u8 {
        match self {
            StateKind::Fast => 1,
            StateKind::Compact => 2,
            // Its two bits, and the checksum of the files beside it.
            StateKind::Lean => 3,
        }
    }

    /// The state of a checkpoint's code.
    pub(crate) fn from_code(code: u8) -> Option<StateKind> {
        match code {
            1 => Some(StateKind::Fast),
            2 => Some(StateKind::Compact),
            3 => Some(StateKind::Lean),
            _ => None,
        }
    }
}

/// Raises a streamed forward pass hands to the positions of a level per position (its
/// un-captures into it), as [`StateKind::scratch_bytes`] counts them: measured on 2x6
/// Awari 0.63 at level 22, 0.66 at 25, 0.68 at 28, slowly growing.
pub(crate) const RAISES_PER_POSITION: f64 = 0.8;

/// Bytes a raise kept on disk for a later window takes (`raises.rs`).
pub(crate) const RAISE_BYTES: usize = 6;

/// The smallest state of whole bytes per position that holds a level of `seeds` seeds:
/// compact, or fast above the compact state's 56. The lean state's streamed forward pass
/// makes its windows in it.
pub(crate) fn byte_state(seeds: usize) -> StateKind {
    if seeds <= COMPACT_MAX_SEEDS {
        StateKind::Compact
    } else {
        StateKind::Fast
    }
}

/// The windows a streamed lean forward pass makes a slice of `len` positions in
/// (DESIGN.md section 5.6): each window's state of `kind` (compact; fast above 56 seeds)
/// within 11/32 of a byte per position of the slice, so that with the rest of the
/// process it keeps within the lean state's budget of 3/8. Four compact windows for a
/// large level, whatever the memory free: the lean state is asked for to use little.
pub(crate) fn lean_windows(kind: StateKind, len: u64) -> usize {
    let window = |count: u64| kind.bytes(len.div_ceil(count));
    // A tiny slice's window never fits (its words and blocks round up): one a position.
    (1..=len)
        .find(|&c| window(c) * 32 <= len * 11)
        .unwrap_or(len)
        .max(1) as usize
}

/// How a level's forward pass reads the levels below (`--lower`; DESIGN.md section 5.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Lower {
    /// Each capture's child read where it lies: the lower levels a capture reaches are
    /// held in memory (or, with spilling, held while the state is on disk).
    Random,
    /// The lower levels read once in index order, each position giving its value to its
    /// parents by un-captures: only the level's state is in memory.
    Stream,
}

impl Lower {
    /// The name used on the command line (`random`, `stream`).
    pub fn name(self) -> &'static str {
        match self {
            Lower::Random => "random",
            Lower::Stream => "stream",
        }
    }
}

/// What solving a level found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Outcomes {
    /// Positions counted: `won + drawn + lost`.
    pub positions: u64,
    /// Positions won by the side to move (value `> 0`).
    pub won: u64,
    /// Positions drawn (value 0).
    pub drawn: u64,
    /// Positions lost by the side to move (value `< 0`).
    pub lost: u64,
}

impl Outcomes {
    /// Counts one position worth `v`.
    pub fn add(&mut self, v: i8) {
        self.positions += 1;
        match v {
            1.. => self.won += 1,
            0 => self.drawn += 1,
            _ => self.lost += 1,
        }
    }

    /// The outcomes of two sets of positions together.
    pub fn merge(self, o: Outcomes) -> Outcomes {
        Outcomes {
            positions: self.positions + o.positions,
            won: self.won + o.won,
            drawn: self.drawn + o.drawn,
            lost: self.lost + o.lost,
        }
    }

    /// The outcomes of a payload: one signed byte per position.
    pub fn of(payload: &[u8]) -> Outcomes {
        // Counted without branches (values of either sign come at random), in byte lanes
        // of `LANES` positions, which the compiler turns into vector compares: counted one
        // by one into 64-bit sums, a position took 16 instructions, 1.7 % of a build's. A
        // lane counts one position per block, so the lanes are summed every 255 blocks.
        const LANES: usize = 64;
        let whole = payload.len() / LANES * LANES;
        let (mut won, mut lost) = (0u64, 0u64);
        for run in payload[..whole].chunks(LANES * 255) {
            let (mut w, mut l) = ([0u8; LANES], [0u8; LANES]);
            for block in run.chunks_exact(LANES) {
                let block: &[u8; LANES] = block.try_into().unwrap();
                for k in 0..LANES {
                    let v = block[k] as i8;
                    w[k] += (v > 0) as u8;
                    l[k] += (v < 0) as u8;
                }
            }
            won += w.iter().map(|&c| c as u64).sum::<u64>();
            lost += l.iter().map(|&c| c as u64).sum::<u64>();
        }
        for &v in &payload[whole..] {
            let v = v as i8;
            won += (v > 0) as u64;
            lost += (v < 0) as u64;
        }
        let positions = payload.len() as u64;
        Outcomes {
            positions,
            won,
            drawn: positions - won - lost,
            lost,
        }
    }

    /// [`Outcomes::of`] with the threads of the current rayon pool.
    pub fn of_parallel(payload: &[u8]) -> Outcomes {
        payload
            .par_chunks(1 << 20)
            .map(Outcomes::of)
            .reduce(Outcomes::default, Outcomes::merge)
    }
}

/// A level's values (or a rank's slice's) as solving leaves them, one byte a position in
/// index order: in memory (fast, compact), or in the lean state's values file of so many
/// bytes, never held whole unless a writer needs them at once.
pub(crate) enum Values {
    Held(crate::util::HugeBuf),
    File(std::fs::File, u64),
}

/// Wall time of the two passes of one level.
#[derive(Clone, Copy, Debug, Default)]
pub struct PhaseTimes {
    /// The forward pass: best exit of every position, in-level moves counted.
    pub forward: std::time::Duration,
    /// The backward pass: wins and losses settled threshold by threshold.
    pub backward: std::time::Duration,
}

#[cfg(test)]
mod tests {
    use super::Outcomes;

    /// The lanes of [`Outcomes::of`] count what [`Outcomes::add`] counts one by one: at
    /// lengths around a block and a run of blocks, and with every byte of a lane of one
    /// sign (a lane at 255 just before it is summed).
    #[test]
    fn lanes_count_as_positions_one_by_one() {
        let one_by_one = |p: &[u8]| {
            let mut o = Outcomes::default();
            p.iter().for_each(|&v| o.add(v as i8));
            o
        };
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut random = |len: usize| -> Vec<u8> {
            (0..len)
                .map(|_| {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    // Zeros as often as either sign.
                    [0, 1, 0x7f, 0x80, 0xff, 3][(seed % 6) as usize]
                })
                .collect()
        };
        let run = 64 * 255;
        for len in [0, 1, 63, 64, 65, 1000, run - 1, run, run + 1, 2 * run + 77] {
            let p = random(len);
            assert_eq!(Outcomes::of(&p), one_by_one(&p), "length {len}");
        }
        for v in [1u8, 0x80, 0] {
            let p = vec![v; 2 * run + 5];
            let o = Outcomes::of(&p);
            let n = p.len() as u64;
            let want = match v {
                0 => (0, n, 0),
                1 => (n, 0, 0),
                _ => (0, 0, n),
            };
            assert_eq!((o.won, o.drawn, o.lost), want, "all {v}");
        }
    }
}
