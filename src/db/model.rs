//! The value model of packed levels: what a packed level stores in place of each value,
//! so that the values compress better, and how the true value comes back.
//!
//! [`Model::Plain`] stores the values as they are. [`Model::Exits`] ("exit fill") uses
//! what the moves leaving the level already say. For a position of level `n` let `b` be
//! its best exit: the best `captured - v(child)` over its capturing moves (children in
//! lower levels), or the value itself when the position is *determined* by its exits
//! (the game is over, every move ends it, or every legal move captures). The true value
//! `v` satisfies `v >= b` (about 40% of positions have a capture, and ~80% of those are
//! worth exactly `b`). The stored byte `s` is
//!
//! - determined: the previous stored byte of the block (0 at the block start), since
//!   nothing is read back;
//! - a capture with `v == b`: the previous stored byte if it is `<= b`, else `b`;
//! - otherwise `v`;
//!
//! and the true value is `b` for a determined position, else `max(b, s)` (with no capture,
//! `s`). The repeats and the values pulled down to `b` make long runs for zstd: levels
//! 16..=20 of Awari pack 1.27 times smaller than with the plain model (ratio 2.74
//! against 2.15 at zstd level 9). The fill restarts at
//! each block, so blocks stay independent. The price: a level cannot be read alone. A
//! probe computes `b` from the lower levels (one probe per capture, recursively; see
//! [`crate::app::database::Database::probe`]), and a whole-level reader resolves every position
//! against the lower levels' true values ([`resolve_level`]).

use rayon::prelude::*;

use crate::error::Result;
use crate::game::index::Index;
use crate::game::rules::{for_each_exit, Board, Exits, Rules};
use crate::game::scan::{scan_exits, NO_EXIT};
use crate::util::CHUNK;

/// How a packed level stores its values (byte 52 of the packed header).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Model {
    /// The values themselves.
    Plain,
    /// Exit fill: see the module documentation.
    #[default]
    Exits,
}

impl Model {
    /// The code stored in byte 52 of the packed header.
    pub fn code(self) -> u8 {
        match self {
            Model::Plain => 0,
            Model::Exits => 1,
        }
    }

    /// The model of a header code, or `None` for an unknown one.
    pub fn from_code(code: u8) -> Option<Model> {
        match code {
            0 => Some(Model::Plain),
            1 => Some(Model::Exits),
            _ => None,
        }
    }

    /// The name `--model` takes and reports print (`plain`, `exits`).
    pub fn name(self) -> &'static str {
        match self {
            Model::Plain => "plain",
            Model::Exits => "exits",
        }
    }
}

impl std::fmt::Display for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Model {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Model, String> {
        match s {
            "plain" => Ok(Model::Plain),
            "exits" => Ok(Model::Exits),
            _ => Err(format!("unknown value model '{s}' (plain or exits)")),
        }
    }
}

/// What a position's exits say about its value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bound {
    /// The value: the game is over, every move ends it, or every legal move captures.
    Exact(i8),
    /// The best capture: the value is at least this.
    AtLeast(i8),
    /// No capture, and moves that stay in the level.
    Open,
}

impl Bound {
    /// From what [`for_each_exit`] returned for a position of `n` seeds and the best
    /// `captured - v(child)` over its captures (`NO_EXIT` if none).
    #[inline]
    fn of(exits: Exits, n: usize, best: i8) -> Bound {
        match exits {
            Exits::Terminal(v) => Bound::Exact(v),
            Exits::AllEnd => Bound::Exact(n as i8),
            // Legal moves, all capturing: at least one capture was seen.
            Exits::Moves { stay: 0 } => Bound::Exact(best),
            Exits::Moves { .. } if best == NO_EXIT => Bound::Open,
            Exits::Moves { .. } => Bound::AtLeast(best),
        }
    }

    /// The byte to store for true value `v`, after `prev` in the same block.
    #[inline]
    pub fn fill(self, v: i8, prev: i8) -> i8 {
        match self {
            Bound::Exact(_) => prev,
            Bound::AtLeast(b) if v == b => prev.min(b),
            _ => v,
        }
    }

    /// The true value of a position stored as `s`.
    #[inline]
    pub fn resolve(self, s: i8) -> i8 {
        match self {
            Bound::Exact(v) => v,
            Bound::AtLeast(b) => b.max(s),
            Bound::Open => s,
        }
    }
}

/// The bound of one stored position of `n` seeds, each capture's child (a stored position
/// of a lower level) valued by `child` (a probe).
pub fn bound_of(
    board: &Board,
    rules: Rules,
    n: usize,
    mut child: impl FnMut(&Board) -> Result<i8>,
) -> Result<Bound> {
    let mut best = NO_EXIT;
    let mut err = None;
    let exits = for_each_exit(board, rules, |c, kid| {
        if err.is_none() {
            match child(kid) {
                Ok(v) => best = best.max(c as i8 - v),
                Err(e) => err = Some(e),
            }
        }
    });
    match err {
        Some(e) => Err(e),
        None => Ok(Bound::of(exits, n, best)),
    }
}

/// Calls `f(j, bound)` for the positions `start + j`, `j` in `0..len` in order, of level
/// `n`, reading captures from `below` (true values of the lower levels).
#[inline]
fn for_each_bound(
    rules: Rules,
    index: &Index,
    n: usize,
    below: &[&[u8]],
    start: u64,
    len: usize,
    mut f: impl FnMut(usize, Bound),
) {
    scan_exits(rules, index, n, below, start, len, |j, exits, best| {
        f(j, Bound::of(exits, n, best))
    });
}

/// Fills one block: `out[j]` is the stored byte of position `start + j` of level `n`,
/// whose true value is `values[j]`.
pub fn fill_block(
    rules: Rules,
    index: &Index,
    n: usize,
    below: &[&[u8]],
    start: u64,
    values: &[u8],
    out: &mut [u8],
) {
    debug_assert_eq!(values.len(), out.len());
    let mut prev = 0i8;
    for_each_bound(rules, index, n, below, start, values.len(), |j, b| {
        prev = b.fill(values[j] as i8, prev);
        out[j] = prev as u8;
    });
}

/// Turns the stored bytes of level `n` (the whole level, in index order) into its true
/// values in place, in parallel; `below[m]` holds the true values of level `m < n`.
pub fn resolve_level(rules: Rules, index: &Index, n: usize, below: &[&[u8]], values: &mut [u8]) {
    values
        .par_chunks_mut(CHUNK as usize)
        .enumerate()
        .for_each(|(c, chunk)| {
            let start = c as u64 * CHUNK;
            let len = chunk.len();
            for_each_bound(rules, index, n, below, start, len, |j, b| {
                chunk[j] = b.resolve(chunk[j] as i8) as u8;
            });
        });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fill_then_resolve_is_identity() {
        let bounds = [
            Bound::Exact(3),
            Bound::AtLeast(-2),
            Bound::AtLeast(1),
            Bound::Open,
        ];
        for b in bounds {
            for v in -5i8..=5 {
                if matches!(b, Bound::Exact(x) if x != v) || matches!(b, Bound::AtLeast(x) if v < x)
                {
                    continue;
                }
                for prev in -5i8..=5 {
                    assert_eq!(b.resolve(b.fill(v, prev)), v, "{b:?} v {v} prev {prev}");
                }
            }
        }
        // Runs: a value equal to its bound repeats the previous byte when it can.
        assert_eq!(Bound::AtLeast(1).fill(1, -3), -3);
        assert_eq!(Bound::AtLeast(1).fill(1, 4), 1);
        assert_eq!(Bound::Exact(7).fill(7, 2), 2);
        assert_eq!("exits".parse::<Model>(), Ok(Model::Exits));
        assert!("zip"
            .parse::<Model>()
            .unwrap_err()
            .contains("plain or exits"));
    }

    #[test]
    fn resolve_level_inverts_fill_on_a_built_level() {
        for (rules, pits, top) in [(Rules::Awari, 4, 12), (Rules::Oware, 3, 12)] {
            let index = Index::new(pits, top).unwrap();
            let levels = crate::solve::level::solve_in_memory(rules, &index, top);
            let all: Vec<&[u8]> = levels.iter().map(Vec::as_slice).collect();
            for n in 0..=top {
                let (truth, below) = (all[n], &all[..n]);
                let block = 100;
                let mut stored = vec![0u8; truth.len()];
                for (b, (t, s)) in truth
                    .chunks(block)
                    .zip(stored.chunks_mut(block))
                    .enumerate()
                {
                    fill_block(rules, &index, n, below, (b * block) as u64, t, s);
                }
                let mut back = stored.clone();
                resolve_level(rules, &index, n, below, &mut back);
                assert_eq!(back, truth, "{rules} P={pits} level {n}");
            }
        }
    }
}
