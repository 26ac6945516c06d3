//! Principal variations and perfect play (DESIGN.md section 3.7): [`Database::line`]
//! and [`Database::perfect_move`], on top of the probes and analyses of
//! [`crate::app::database`].
//!
//! The database stores values, not distances: a winner that only plays best moves can
//! circle inside its level for ever. [`Conversion`] finds, for a won or lost position,
//! its distance to conversion: the plies until the winner leaves the level by a capture
//! or a game end that realises the value, the winner hurrying and the loser delaying,
//! both playing best moves only.
//!
//! It is a depth-first AND-OR search deepened one ply at a time, so that it expands only
//! what the shortest conversion needs: a winner tries one best move at a time and stops
//! at the first that converts in time; only the loser's best moves must all be answered.
//! Every position met is analysed once and remembers the bounds proven on its distance,
//! so the next ply of a line (or a game) starts from what the last one learnt. A breadth-
//! first retrograde pass over everything reachable by best moves gives the same
//! distances (the tests hold one as the reference) but, on a big level, has millions of
//! positions to analyse before its first answer.

use std::collections::{HashMap, HashSet};

use serde::Serialize;

use crate::app::database::{Analysis, Database};
use crate::db::layout::level_path;
use crate::error::{Error, Result};
use crate::game::rules::{legal_moves, Board, Move};

/// One step of a principal variation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Ply {
    /// 0 for the side to move at the start, 1 for its opponent.
    pub player: u8,
    /// The pit sowed from, 0-based, in the mover's frame.
    pub pit: u8,
    /// Seeds the move captured.
    pub captured: u8,
    /// The position after the move, seen from the side now to move.
    pub after: Vec<u8>,
}

/// A principal variation to the end of the game and its score.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Line {
    /// The moves, in order.
    pub plies: Vec<Ply>,
    /// How the line ends: "no seeds", "cannot feed", "opponent starved", "cycle", ...
    pub end: String,
    /// Seeds won from the start position by the side to move and by its opponent,
    /// counting the seeds left at the end (split evenly on a cycle).
    pub score: [f64; 2],
}

impl Database {
    /// Plays a principal variation from `board` to the end of the game: best moves only,
    /// and in a won position the winner makes progress (see [`Database::perfect_move`])
    /// so that the line realises the value. A drawn line ends when a position repeats
    /// (endless play: the seeds left are split evenly).
    pub fn line(&self, board: &Board, max_plies: usize) -> Result<Line> {
        let mut pos = *board;
        let mut score = [0f64; 2];
        let mut plies = Vec::new();
        let mut seen = HashSet::new();
        seen.insert(pos);
        let mut player = 0u8;
        let mut conversion = Conversion::new();
        let end;
        loop {
            let a = self.analyze(&pos)?;
            let n = pos.seeds() as f64;
            if let Some(why) = a.game_over {
                // The side to move gets (n + v) / 2 of what is left.
                let v = a.value as f64;
                score[player as usize] += (n + v) / 2.0;
                score[1 - player as usize] += (n - v) / 2.0;
                end = why.to_string();
                break;
            }
            let m = self.perfect_move(&pos, &a, &mut conversion)?;
            score[player as usize] += m.captured as f64;
            plies.push(Ply {
                player,
                pit: m.pit,
                captured: m.captured,
                after: m.child.pits().to_vec(),
            });
            if m.ends_game {
                score[player as usize] += m.child.seeds() as f64;
                end = "the opponent is left without seeds: the mover takes the rest".into();
                break;
            }
            pos = m.child;
            player = 1 - player;
            if !seen.insert(pos) {
                let left = pos.seeds() as f64;
                score[0] += left / 2.0;
                score[1] += left / 2.0;
                end = if self.probe(&pos)? == 0 {
                    "a position repeats (endless play): the seeds left are split evenly".into()
                } else {
                    // Only when the search for progress gave up: say that the score
                    // falls short of the value.
                    format!(
                        "a position repeats before the win converts (no conversion found \
                         within {CONVERSION_LIMIT} positions): the seeds left are split \
                         evenly, short of the value"
                    )
                };
                break;
            }
            if plies.len() >= max_plies {
                end = format!("stopped after {max_plies} plies");
                break;
            }
        }
        Ok(Line { plies, end, score })
    }

    /// The move perfect play makes in `pos` (analysed as `a`, the game not over), lowest
    /// pit first among equals:
    /// - a draw: the first best move;
    /// - a win: a best move that leaves the level (a capture or a game end) if there is
    ///   one, else the best move whose child is nearest to conversion;
    /// - a loss: the best move that stays in the level whose child is furthest from
    ///   conversion, else the first best move.
    ///
    /// So play realises the value instead of circling. Where the level has a distance
    /// table (`awari dtc`), the distances are read from it: the winner plays the best move
    /// of least distance, the loser the one of most. Else they are searched for:
    /// `conversion` keeps what the search learnt between calls (one per line or game); if
    /// it gives up (see [`CONVERSION_LIMIT`]), the first best move is played.
    pub fn perfect_move(
        &self,
        pos: &Board,
        a: &Analysis,
        conversion: &mut Conversion,
    ) -> Result<Move> {
        let legal = legal_moves(pos, self.rules());
        let best: Vec<Move> = legal
            .as_slice()
            .iter()
            .zip(&a.moves)
            .filter(|(_, mv)| mv.value == a.value)
            .map(|(m, _)| *m)
            .collect();
        let first = best[0];
        if a.value == 0 {
            return Ok(first);
        }
        if a.distance.is_some() {
            // The level's distance table (DESIGN.md section 5.7): the winner's nearest
            // value-keeping move, the loser's farthest, the lowest pit among equals.
            let keeping = legal
                .as_slice()
                .iter()
                .zip(&a.moves)
                .filter(|(_, mv)| mv.value == a.value);
            let pick = if a.value > 0 {
                keeping.min_by_key(|(_, mv)| mv.distance.unwrap_or(u16::MAX))
            } else {
                keeping.max_by_key(|(_, mv)| (mv.distance, std::cmp::Reverse(mv.pit)))
            };
            return Ok(*pick.expect("a best move").0);
        }
        let exit = best.iter().find(|m| !m.stays_in_level()).copied();
        let inside: Vec<Move> = best.into_iter().filter(|m| m.stays_in_level()).collect();
        if (a.value > 0 && exit.is_some()) || inside.is_empty() {
            return Ok(exit.unwrap_or(first));
        }
        let Some(d) = conversion.distance(self, pos)? else {
            return Ok(first);
        };
        let broken = || {
            Error::format(
                level_path(self.dir(), pos.seeds()),
                format!("position {pos} has a value but no move keeps it converting; run `awari verify`"),
            )
        };
        if a.value > 0 {
            // The winner converts at once if it can (above), else gets one ply closer.
            for m in &inside {
                match conversion.converts_within(self, &m.child, d - 1)? {
                    Some(true) => return Ok(*m),
                    Some(false) => {}
                    None => return Ok(first),
                }
            }
            Err(broken())
        } else {
            // The loser delays as long as it can.
            let mut pick: Option<(u32, Move)> = None;
            for m in &inside {
                let Some(dk) = conversion.distance(self, &m.child)? else {
                    return Ok(first);
                };
                if dk + 1 > d {
                    return Err(broken());
                }
                if pick.is_none_or(|(far, _)| dk > far) {
                    pick = Some((dk, *m));
                }
            }
            Ok(pick.unwrap().1)
        }
    }
}

/// The most positions one [`Conversion`] analyses (each costs a few probes: on packed
/// levels, a block decompressed per probe). Past it the line falls back to the lowest-pit
/// best move and says so.
pub const CONVERSION_LIMIT: usize = 1_000_000;

/// No bound proven yet.
const UNKNOWN: u32 = u32::MAX;
/// A kid not looked up yet.
const NO_ID: u32 = u32::MAX;

/// One position of the in-level best-move graph.
struct Node {
    /// The side to move wins (value above 0).
    winner: bool,
    /// The in-level best moves' children, in pit order.
    kids: Box<[Board]>,
    /// Their node numbers, once met.
    kid_ids: Box<[u32]>,
    /// Proven: the distance is at least `lo`.
    lo: u32,
    /// Proven: the distance is at most `hi` (`UNKNOWN` if nothing is).
    hi: u32,
}

/// Why a search stopped without an answer.
enum Stop {
    /// More than the limit of positions would be needed.
    Limit,
    /// A probe failed (missing level, damaged file).
    Failed(Error),
}

impl From<Error> for Stop {
    fn from(e: Error) -> Stop {
        Stop::Failed(e)
    }
}

/// Distances to conversion in one level, remembered between the moves of a line or a
/// game: keep one per line and pass it to [`Database::perfect_move`] at every ply.
pub struct Conversion {
    limit: usize,
    /// The level the nodes belong to; `usize::MAX` before the first search.
    level: usize,
    ids: HashMap<Board, u32>,
    nodes: Vec<Node>,
    /// The limit was hit in this level: do not search it again.
    given_up: bool,
}

impl Default for Conversion {
    fn default() -> Conversion {
        Conversion::new()
    }
}

impl std::fmt::Debug for Conversion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Conversion")
            .field("level", &self.level)
            .field("positions", &self.nodes.len())
            .field("given_up", &self.given_up)
            .finish()
    }
}

impl Conversion {
    /// A search that analyses at most [`CONVERSION_LIMIT`] positions per level.
    pub fn new() -> Conversion {
        Conversion::with_limit(CONVERSION_LIMIT)
    }

    /// A search that analyses at most `limit` positions per level.
    pub fn with_limit(limit: usize) -> Conversion {
        Conversion {
            limit,
            level: usize::MAX,
            ids: HashMap::new(),
            nodes: Vec::new(),
            given_up: false,
        }
    }

    /// Positions analysed in the current level.
    pub fn positions(&self) -> usize {
        self.nodes.len()
    }

    /// The distance to conversion of `pos`, a won or lost position: `None` if finding it
    /// needs more positions than the limit (or did in this level before). A position
    /// whose game is over, or whose value is 0, has distance 0: nothing to convert.
    pub fn distance(&mut self, db: &Database, pos: &Board) -> Result<Option<u32>> {
        let n = pos.seeds();
        if n != self.level {
            // Positions of other levels are never met again: free them.
            *self = Conversion::with_limit(self.limit);
            self.level = n;
        }
        if self.given_up {
            return Ok(None);
        }
        match self.exact(db, pos) {
            Ok(d) => Ok(Some(d)),
            Err(Stop::Limit) => {
                self.given_up = true;
                Ok(None)
            }
            Err(Stop::Failed(e)) => Err(e),
        }
    }

    /// Whether `pos` (of the current level, after [`Conversion::distance`]) converts
    /// within `d` plies; `None` past the limit.
    pub fn converts_within(&mut self, db: &Database, pos: &Board, d: u32) -> Result<Option<bool>> {
        if self.given_up || pos.seeds() != self.level {
            return Ok(None);
        }
        let r = self.id(db, pos).and_then(|x| self.within(db, x, d));
        match r {
            Ok(ok) => Ok(Some(ok)),
            Err(Stop::Limit) => {
                self.given_up = true;
                Ok(None)
            }
            Err(Stop::Failed(e)) => Err(e),
        }
    }

    /// The smallest `d` for which the winner converts within `d` plies.
    fn exact(&mut self, db: &Database, pos: &Board) -> std::result::Result<u32, Stop> {
        let x = self.id(db, pos)?;
        let mut d = self.nodes[x as usize].lo;
        loop {
            if self.within(db, x, d)? {
                return Ok(d);
            }
            d += 1;
            // A distance is below the number of positions it passes through: beyond the
            // limit, the win never converts here (a damaged level) or not within reach.
            if d as usize > self.limit {
                return Err(Stop::Limit);
            }
        }
    }

    /// Whether the winner converts from node `x` within `d` plies. Proven bounds are kept
    /// on the node, so a position is decided once per depth at most.
    fn within(&mut self, db: &Database, x: u32, d: u32) -> std::result::Result<bool, Stop> {
        let node = &self.nodes[x as usize];
        if node.hi <= d {
            return Ok(true);
        }
        if node.lo > d {
            return Ok(false);
        }
        // Here d >= lo >= 1: a node of distance 0 has hi = 0.
        let winner = node.winner;
        let kids = node.kids.len();
        for i in 0..kids {
            let k = self.kid(db, x, i)?;
            let ok = self.within(db, k, d - 1)?;
            // A winner needs one kid that converts in time; a loser escapes with one
            // that does not.
            if ok == winner {
                self.prove(x, d, winner);
                return Ok(winner);
            }
        }
        self.prove(x, d, !winner);
        Ok(!winner)
    }

    /// Records that node `x` converts within `d` plies (`ok`) or does not.
    fn prove(&mut self, x: u32, d: u32, ok: bool) {
        let node = &mut self.nodes[x as usize];
        if ok {
            node.hi = node.hi.min(d);
        } else {
            node.lo = node.lo.max(d + 1);
        }
    }

    /// The node of kid `i` of node `x`, met now if it was not yet.
    fn kid(&mut self, db: &Database, x: u32, i: usize) -> std::result::Result<u32, Stop> {
        let id = self.nodes[x as usize].kid_ids[i];
        if id != NO_ID {
            return Ok(id);
        }
        let board = self.nodes[x as usize].kids[i];
        let id = self.id(db, &board)?;
        self.nodes[x as usize].kid_ids[i] = id;
        Ok(id)
    }

    /// The node of `pos`, analysed now if it was not met yet.
    fn id(&mut self, db: &Database, pos: &Board) -> std::result::Result<u32, Stop> {
        if let Some(&id) = self.ids.get(pos) {
            return Ok(id);
        }
        if self.nodes.len() >= self.limit {
            return Err(Stop::Limit);
        }
        let a = db.analyze(pos)?;
        let mut kids = Vec::new();
        let mut exit = false;
        if a.game_over.is_none() && a.value != 0 {
            for (m, mv) in legal_moves(pos, db.rules()).as_slice().iter().zip(&a.moves) {
                if mv.value != a.value {
                    continue;
                }
                if m.stays_in_level() {
                    kids.push(m.child);
                } else {
                    exit = true;
                }
            }
        }
        let winner = a.value > 0;
        // Converted already: the game is over, a winner can leave the level now, or a
        // loser cannot stay in it.
        let done = a.game_over.is_some()
            || a.value == 0
            || (winner && exit)
            || (!winner && kids.is_empty());
        let id = self.nodes.len() as u32;
        self.nodes.push(Node {
            winner,
            kid_ids: vec![NO_ID; kids.len()].into(),
            kids: kids.into(),
            lo: if done { 0 } else { 1 },
            hi: if done { 0 } else { UNKNOWN },
        });
        self.ids.insert(*pos, id);
        Ok(id)
    }
}
