//! An independent solver, a second opinion on the builder that shares only the rules
//! code with it: from given start positions it explores every reachable position into a
//! hash map (no ranking, no level files, no un-moves), then solves that graph by value
//! iteration from zero (DESIGN.md section 2(b)).
//!
//! A capture only lowers the seed count, so the graph is solved by seed count from the
//! bottom up: the nodes of `n` seeds iterate `v <- max over moves (captured - v(child))`
//! from all zeros, with the final values of lower counts for captures, until a sweep
//! changes nothing. Memory is about 100 bytes per reachable position.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use rayon::prelude::*;

use crate::game::rules::{legal_moves, Board, Rules};

/// An edge's child for a move that ends the game (the mover takes every seed left).
const ENDS_GAME: u32 = u32::MAX;
/// The terminal value of a node that has legal moves.
const NOT_TERMINAL: i8 = i8::MIN;

/// A small, fast hash for boards (FxHash's multiply-rotate): the explorer does one
/// look-up per move.
#[derive(Default, Clone, Copy, Debug)]
pub struct BoardHasher(u64);

impl Hasher for BoardHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut w = [0u8; 8];
            w[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(w));
        }
    }

    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.write_u64(i as u64);
    }

    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.0 = (self.0.rotate_left(5) ^ i).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }

    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
}

type BoardMap = HashMap<Board, u32, BuildHasherDefault<BoardHasher>>;

/// The reachable graph was larger than the limit given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TooLarge {
    /// The most positions the caller allowed.
    pub limit: usize,
}

impl std::fmt::Display for TooLarge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "more than {} reachable positions", self.limit)
    }
}

/// Every position reachable from the start positions, with its exact value.
pub struct Reference {
    rules: Rules,
    boards: Vec<Board>,
    at: BoardMap,
    values: Vec<i8>,
    /// Node `i`'s moves are `edges[first[i]..first[i + 1]]`: child (or [`ENDS_GAME`]) and
    /// seeds captured.
    first: Vec<u64>,
    edges: Vec<(u32, u8)>,
    /// The value of a game over, [`NOT_TERMINAL`] for a node with moves.
    terminal: Vec<i8>,
    /// The most sweeps value iteration took at one seed count.
    pub max_sweeps: usize,
}

impl std::fmt::Debug for Reference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reference")
            .field("rules", &self.rules)
            .finish_non_exhaustive()
    }
}

impl Reference {
    /// Explores every position reachable from `starts` under `rules` and solves them.
    /// Gives up with [`TooLarge`] once more than `limit` positions are found.
    pub fn solve(rules: Rules, starts: &[Board], limit: usize) -> Result<Reference, TooLarge> {
        // Breadth-first: `boards` is also the queue.
        let mut boards: Vec<Board> = Vec::new();
        let mut at = BoardMap::default();
        for b in starts {
            if !at.contains_key(b) {
                at.insert(*b, boards.len() as u32);
                boards.push(*b);
            }
        }
        // Moves in compressed rows: node i's are edges[first[i]..first[i + 1]].
        let mut first: Vec<u64> = vec![0];
        let mut edges: Vec<(u32, u8)> = Vec::new();
        let mut terminal: Vec<i8> = Vec::new();
        let mut i = 0;
        while i < boards.len() {
            let b = boards[i];
            let moves = legal_moves(&b, rules);
            terminal.push(moves.terminal_value.unwrap_or(NOT_TERMINAL));
            for m in moves.as_slice() {
                let child = if m.ends_game {
                    ENDS_GAME
                } else {
                    let next = boards.len() as u32;
                    let id = *at.entry(m.child).or_insert(next);
                    if id == next {
                        if boards.len() >= limit {
                            return Err(TooLarge { limit });
                        }
                        boards.push(m.child);
                    }
                    id
                };
                edges.push((child, m.captured));
            }
            first.push(edges.len() as u64);
            i += 1;
        }

        // Solve by seed count, lowest first.
        let seeds: Vec<u8> = boards.iter().map(|b| b.seeds() as u8).collect();
        let top = seeds.iter().copied().max().unwrap_or(0) as usize;
        let mut by_seeds: Vec<Vec<u32>> = vec![Vec::new(); top + 1];
        for (id, &s) in seeds.iter().enumerate() {
            by_seeds[s as usize].push(id as u32);
        }
        let mut values = vec![0i8; boards.len()];
        let mut max_sweeps = 0;
        for (n, ids) in by_seeds.iter().enumerate() {
            // Per node: the best move leaving the count (capture, game end) and whether
            // it has moves staying in it.
            let exit: Vec<i16> = ids
                .par_iter()
                .map(|&id| {
                    let id = id as usize;
                    if terminal[id] != NOT_TERMINAL {
                        return terminal[id] as i16;
                    }
                    let mut best = i16::MIN;
                    for &(child, captured) in &edges[first[id] as usize..first[id + 1] as usize] {
                        if child == ENDS_GAME {
                            best = best.max(n as i16);
                        } else if captured > 0 {
                            best = best.max(captured as i16 - values[child as usize] as i16);
                        }
                    }
                    best
                })
                .collect();
            // Jacobi sweeps from zero. A node's next value can differ from its current
            // one only if a child changed in the sweep before, so after the first sweep
            // only the in-level parents of changed nodes (reverse edges, built from the
            // forward ones) are recomputed: the same sequence of values as full sweeps.
            let local: HashMap<u32, u32, BuildHasherDefault<BoardHasher>> = ids
                .iter()
                .enumerate()
                .map(|(j, &id)| (id, j as u32))
                .collect();
            let mut parents: Vec<Vec<u32>> = vec![Vec::new(); ids.len()];
            for (j, &id) in ids.iter().enumerate() {
                for &(child, captured) in
                    &edges[first[id as usize] as usize..first[id as usize + 1] as usize]
                {
                    if child != ENDS_GAME && captured == 0 {
                        parents[local[&child] as usize].push(j as u32);
                    }
                }
            }
            let mut todo: Vec<u32> = (0..ids.len() as u32).collect();
            let mut mark = vec![0u32; ids.len()];
            let mut sweeps = 0;
            while !todo.is_empty() {
                sweeps += 1;
                let next: Vec<i8> = todo
                    .par_iter()
                    .map(|&j| {
                        let id = ids[j as usize] as usize;
                        let mut best = exit[j as usize];
                        for &(child, captured) in &edges[first[id] as usize..first[id + 1] as usize]
                        {
                            if child != ENDS_GAME && captured == 0 {
                                best = best.max(-(values[child as usize] as i16));
                            }
                        }
                        assert!(best.unsigned_abs() as usize <= n, "value out of range");
                        best as i8
                    })
                    .collect();
                let mut again = Vec::new();
                for (&j, &v) in todo.iter().zip(&next) {
                    let id = ids[j as usize] as usize;
                    if values[id] != v {
                        values[id] = v;
                        for &q in &parents[j as usize] {
                            if mark[q as usize] != sweeps {
                                mark[q as usize] = sweeps;
                                again.push(q);
                            }
                        }
                    }
                }
                todo = again;
            }
            max_sweeps = max_sweeps.max(sweeps as usize);
        }
        Ok(Reference {
            rules,
            boards,
            at,
            values,
            first,
            edges,
            terminal,
            max_sweeps,
        })
    }

    /// The rule set the positions were solved under.
    pub fn rules(&self) -> Rules {
        self.rules
    }

    /// Positions explored.
    pub fn len(&self) -> usize {
        self.boards.len()
    }

    /// Whether nothing was explored (no start position given).
    pub fn is_empty(&self) -> bool {
        self.boards.is_empty()
    }

    /// The value of a reachable position for its side to move; `None` if not reached.
    pub fn value(&self, board: &Board) -> Option<i8> {
        self.at.get(board).map(|&i| self.values[i as usize])
    }

    /// Every reachable position and its value, in the order they were found.
    pub fn iter(&self) -> impl Iterator<Item = (&Board, i8)> + '_ {
        self.boards.iter().zip(self.values.iter().copied())
    }

    /// The distance to conversion of every position, in the order of [`Reference::iter`]:
    /// 0 for a draw or a game over (DESIGN.md section 5.7). Found forward, apart from the
    /// builder's retrograde rounds: in sweep `k`, a won position whose value a move keeps
    /// that leaves its seed count (a capture, a game end, a move into a game over), or
    /// that reaches a position given a distance in an earlier sweep, gets 1 plus the
    /// least such; a lost one all of whose value-keeping moves are such gets 1 plus the
    /// largest; until a sweep gives none.
    pub fn distances(&self) -> Vec<u16> {
        const UNSET: u16 = u16::MAX;
        let len = self.boards.len();
        let mut d: Vec<u16> = (0..len)
            .map(|i| match (self.terminal[i], self.values[i]) {
                (NOT_TERMINAL, 0) => 0,
                (NOT_TERMINAL, _) => UNSET,
                // A game over ends play: a move into one converts at once.
                _ => 0,
            })
            .collect();
        loop {
            let given: Vec<(usize, u16)> = (0..len)
                .into_par_iter()
                .filter(|&i| d[i] == UNSET)
                .filter_map(|i| {
                    let v = self.values[i] as i16;
                    let n = self.boards[i].seeds() as i16;
                    // The plies each value-keeping move takes to convert, if known.
                    let mut known = Vec::new();
                    let mut unknown = false;
                    let range = self.first[i] as usize..self.first[i + 1] as usize;
                    for &(child, captured) in &self.edges[range] {
                        let (worth, plies) = if child == ENDS_GAME {
                            (n, Some(1))
                        } else {
                            let c = child as usize;
                            let worth = captured as i16 - self.values[c] as i16;
                            let plies = if captured > 0 {
                                Some(1)
                            } else {
                                (d[c] != UNSET).then(|| d[c] + 1)
                            };
                            (worth, plies)
                        };
                        if worth == v {
                            match plies {
                                Some(p) => known.push(p),
                                None => unknown = true,
                            }
                        }
                    }
                    let best = if v > 0 {
                        known.iter().min()
                    } else if unknown {
                        None
                    } else {
                        known.iter().max()
                    };
                    best.map(|&p| (i, p))
                })
                .collect();
            if given.is_empty() {
                break;
            }
            for (i, p) in given {
                d[i] = p;
            }
        }
        d.into_iter()
            .map(|x| if x == UNSET { 0 } else { x })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_positions_by_hand() {
        let b = |c: &[u32]| Board::from_counts(2, c).unwrap();
        // No seeds to move: the opponent takes both.
        let r = Reference::solve(Rules::Awari, &[b(&[0, 0, 1, 1])], 100).unwrap();
        assert_eq!(r.value(&b(&[0, 0, 1, 1])), Some(-2));
        assert_eq!(r.len(), 1);
        // 1 0 | 1 0 (P = 2): pit 0 sows into pit 1, the opponent must move its seed,
        // and so on round the board without a capture: a draw.
        let r = Reference::solve(Rules::Awari, &[b(&[1, 0, 1, 0])], 100).unwrap();
        assert_eq!(r.value(&b(&[1, 0, 1, 0])), Some(0));
        assert!(r.len() > 2);
        // Pit 1 sows its seed into opponent pit 2 (1 -> 2) and captures every opponent
        // seed. Awari: it is the only move, so it is forced and the mover takes all: +2.
        let start = b(&[0, 1, 1, 0]);
        let aw = Reference::solve(Rules::Awari, &[start], 100).unwrap();
        assert_eq!(aw.value(&start), Some(2));
        // Oware: a grand slam captures nothing and play goes on.
        let ow = Reference::solve(Rules::Oware, &[start], 100).unwrap();
        assert_ne!(ow.value(&start), Some(2));
        assert!(matches!(
            Reference::solve(Rules::Awari, &[Board::start(6, 4)], 1000),
            Err(TooLarge { limit: 1000 })
        ));
    }
}
