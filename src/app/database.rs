//! An open database of one rule set and board size ([`Database`]): the value of any
//! position, the value of each move, the best moves and a principal variation
//! (DESIGN.md sections 3.6 and 3.7).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde::Serialize;

use crate::db::layout::{build_command, db_dir, level_path, missing_level, Expect};
use crate::db::model::{bound_of, Bound, Model};
use crate::db::raw::Check;
use crate::db::store::LevelFile;
use crate::error::{Error, Result};
use crate::game::index::Index;
use crate::game::rules::{legal_moves, Board, Move, Rules};

/// An open database: one rule set and board size. Levels are opened (and their
/// checksums checked) the first time a probe needs them.
pub struct Database {
    root: PathBuf,
    dir: PathBuf,
    rules: Rules,
    pits: usize,
    index: Index,
    levels: Vec<OnceLock<LevelFile>>,
}

/// One legal move and what it is worth to the side to move.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct MoveValue {
    /// The pit sowed from, 0-based, side to move.
    pub pit: u8,
    /// Final margin for the side to move after this move, under perfect play.
    pub value: i8,
    /// Seeds the move captures.
    pub captured: u8,
    /// The game ends with this move (the mover takes every seed left).
    pub ends_game: bool,
}

/// A position, its value and the value of each move.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Analysis {
    /// The `2P` pit counts, side to move first.
    pub pits: Vec<u8>,
    /// Seeds on the board: the level.
    pub seeds: usize,
    /// The final margin for the side to move under perfect play (DESIGN.md section 2):
    /// the best move's value, or the game end's when there is no move.
    pub value: i8,
    /// Whether the position is stored in the database (some opponent pit empty); if not,
    /// its value comes from its children.
    pub stored: bool,
    /// Every legal move and its value, in pit order; empty when the game is over.
    pub moves: Vec<MoveValue>,
    /// The pits of the best moves.
    pub best: Vec<u8>,
    /// Why the game is over, if it is.
    pub game_over: Option<&'static str>,
}

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

impl std::fmt::Debug for Database {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Database")
            .field("dir", &self.dir)
            .field("rules", &self.rules)
            .field("pits", &self.pits)
            .finish_non_exhaustive()
    }
}

impl Database {
    /// Opens the database of `rules` and `pits` under the root folder `root` (as given to
    /// `awari build --dir`). Fails only if the board size is not supported; missing
    /// levels are reported when a probe needs them.
    pub fn open(root: &Path, rules: Rules, pits: usize) -> Result<Database> {
        let max = Index::max_supported(pits)?;
        let index = Index::new(pits, max)?;
        Ok(Database {
            root: root.to_path_buf(),
            dir: db_dir(root, rules, pits),
            rules,
            pits,
            index,
            levels: (0..=max).map(|_| OnceLock::new()).collect(),
        })
    }

    /// The rule set of the database.
    pub fn rules(&self) -> Rules {
        self.rules
    }

    /// Pits per side.
    pub fn pits(&self) -> usize {
        self.pits
    }

    /// The database folder, `<root>/<rules>-<P>`.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The ranking tables of the board size, for every level it supports.
    pub fn index(&self) -> &Index {
        &self.index
    }

    /// Level `n`, raw or packed, opened and checked on first use: a raw level's payload
    /// checksum at once, a packed level's blocks as probes decompress them. What a packed
    /// level stores may need the lower levels to become values: ask [`Database::probe`].
    pub fn level(&self, n: usize) -> Result<&LevelFile> {
        let cell = self.levels.get(n).ok_or_else(|| {
            Error::Input(format!("{n} seeds: more than this board size supports"))
        })?;
        if let Some(l) = cell.get() {
            return Ok(l);
        }
        let want = Expect::level(self.rules, &self.index, n);
        let Some(level) = LevelFile::open(&self.dir, &want, Check::Full)? else {
            return Err(missing_level(&self.dir, self.rules, self.pits, n, n));
        };
        let _ = cell.set(level);
        Ok(cell.get().unwrap())
    }

    /// A level missing below `n`, found while probing a position of `n` seeds: the command
    /// to run builds up to `n`, so that one build answers the query.
    fn needs(&self, e: Error, n: usize) -> Error {
        match e {
            Error::MissingLevel {
                seeds,
                rules,
                pits,
                dir,
                ..
            } => Error::MissingLevel {
                seeds,
                rules,
                pits,
                dir,
                command: build_command(&self.root, self.rules, pits, n),
            },
            e => e,
        }
    }

    /// Parses a position given as pit counts, side to move first.
    pub fn board(&self, counts: &[u32]) -> Result<Board> {
        Board::from_counts(self.pits, counts)
    }

    fn check_board(&self, board: &Board) -> Result<()> {
        if board.pits_per_side() != self.pits {
            return Err(Error::Input(format!(
                "a board of {} pits per side, but the database has {}",
                board.pits_per_side(),
                self.pits
            )));
        }
        Ok(())
    }

    /// The value of a position for the side to move: its final margin under perfect play.
    pub fn probe(&self, board: &Board) -> Result<i8> {
        self.check_board(board)?;
        if board.is_stored() {
            return self.stored_value(board);
        }
        Ok(self.analyze(board)?.value)
    }

    /// The value of a stored position. A level packed with the exit model stores a byte
    /// that becomes the value with the position's best capture (see [`crate::db::model`]):
    /// its children are probed here, recursively (each capture lowers the level by two
    /// or more seeds, so the recursion is at most `n / 2` deep).
    fn stored_value(&self, board: &Board) -> Result<i8> {
        let n = board.seeds();
        let level = self.level(n)?;
        let i = self.index.rank_in(board, n);
        if level.model() == Model::Plain {
            return level.value(i);
        }
        let bound = bound_of(board, self.rules, n, |child| self.stored_value(child))
            .map_err(|e| self.needs(e, n))?;
        match bound {
            // The stored byte says nothing: do not decompress its block.
            Bound::Exact(v) => Ok(v),
            b => Ok(b.resolve(level.stored(i)?)),
        }
    }

    /// The value of a position and of each of its legal moves.
    pub fn analyze(&self, board: &Board) -> Result<Analysis> {
        self.check_board(board)?;
        let n = board.seeds();
        let legal = legal_moves(board, self.rules);
        let mut moves = Vec::with_capacity(legal.len());
        for m in legal.as_slice() {
            let value = if m.ends_game {
                n as i8
            } else {
                m.captured as i8 - self.probe(&m.child).map_err(|e| self.needs(e, n))?
            };
            moves.push(MoveValue {
                pit: m.pit,
                value,
                captured: m.captured,
                ends_game: m.ends_game,
            });
        }
        let (value, game_over) = match legal.terminal_value {
            Some(v) if v < 0 || n == 0 => {
                (v, Some("no seeds to move: the opponent takes the rest"))
            }
            Some(v) => (
                v,
                Some("cannot feed the opponent: the side to move takes the rest"),
            ),
            None => (moves.iter().map(|m| m.value).max().unwrap(), None),
        };
        let stored = board.is_stored();
        if stored {
            let v = self.stored_value(board)?;
            if v != value {
                return Err(Error::format(
                    self.level(n)?.path(),
                    format!(
                        "inconsistent: position {board} is stored as {v} but its moves give {value}; run `awari verify`"
                    ),
                ));
            }
        }
        let best = moves
            .iter()
            .filter(|m| m.value == value)
            .map(|m| m.pit)
            .collect();
        Ok(Analysis {
            pits: board.pits().to_vec(),
            seeds: n,
            value,
            stored,
            moves,
            best,
            game_over,
        })
    }

    /// Plays a principal variation from `board` to the end of the game: best moves only,
    /// and in a won position the winner makes progress (see [`Database::conversion_plan`])
    /// so that the line realises the value. A drawn line ends when a position repeats
    /// (endless play: the seeds left are split evenly).
    pub fn line(&self, board: &Board, max_plies: usize) -> Result<Line> {
        let mut pos = *board;
        let mut score = [0f64; 2];
        let mut plies = Vec::new();
        let mut seen = HashSet::new();
        seen.insert(pos);
        let mut player = 0u8;
        let mut plan: Option<HashMap<Board, u32>> = None;
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
            let m = self.perfect_move(&pos, &a, &mut plan)?;
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
                end = "a position repeats (endless play): the seeds left are split evenly".into();
                break;
            }
            if plies.len() >= max_plies {
                end = format!("stopped after {max_plies} plies");
                break;
            }
        }
        Ok(Line { plies, end, score })
    }

    /// The move perfect play makes in `pos` (analysed as `a`, the game not over): a best
    /// move, and in a won position one that gets closer to converting (the loser delays),
    /// so that play realises the value instead of circling. `plan` caches the
    /// [`Database::conversion_plan`] of the current level between calls.
    pub fn perfect_move(
        &self,
        pos: &Board,
        a: &Analysis,
        plan: &mut Option<HashMap<Board, u32>>,
    ) -> Result<Move> {
        if a.value != 0 && !plan.as_ref().is_some_and(|p| p.contains_key(pos)) {
            *plan = self.conversion_plan(pos, PLAN_LIMIT)?;
        }
        let legal = legal_moves(pos, self.rules);
        let best: Vec<Move> = legal
            .as_slice()
            .iter()
            .zip(&a.moves)
            .filter(|(_, mv)| mv.value == a.value)
            .map(|(m, _)| *m)
            .collect();
        Ok(match plan.as_ref() {
            Some(dist) if a.value != 0 => {
                let exit = best.iter().find(|m| !m.stays_in_level());
                let inside = best.iter().filter(|m| m.stays_in_level());
                if a.value > 0 {
                    // The winner converts at once if it can, else gets closer.
                    *exit.unwrap_or_else(|| inside.min_by_key(|m| dist[&m.child]).unwrap())
                } else {
                    // The loser delays as long as it can.
                    *inside
                        .max_by_key(|m| (dist[&m.child], std::cmp::Reverse(m.pit)))
                        .or(exit)
                        .unwrap()
                }
            }
            _ => best[0],
        })
    }

    /// For a won or lost position: the positions reachable from it by best moves that stay
    /// in its level, each with its distance to conversion (the plies until the winner can
    /// leave the level by a capture or a game end that realises the value, the winner
    /// hurrying and the loser delaying). The database stores values, not distances, so
    /// this is a small retrograde analysis of that graph. `None` for a draw, or if the
    /// graph has more than `limit` positions.
    pub fn conversion_plan(
        &self,
        start: &Board,
        limit: usize,
    ) -> Result<Option<HashMap<Board, u32>>> {
        let mut id: HashMap<Board, usize> = HashMap::new();
        let mut nodes = vec![*start];
        id.insert(*start, 0);
        let mut winner = Vec::new();
        let mut exit = Vec::new();
        let mut kids: Vec<Vec<usize>> = Vec::new();
        let mut next = 0;
        while next < nodes.len() {
            let x = nodes[next];
            next += 1;
            let a = self.analyze(&x)?;
            if a.value == 0 || a.game_over.is_some() {
                return Ok(None);
            }
            winner.push(a.value > 0);
            let mut has_exit = false;
            let mut ks = Vec::new();
            for (m, mv) in legal_moves(&x, self.rules).as_slice().iter().zip(&a.moves) {
                if mv.value != a.value {
                    continue;
                }
                if !m.stays_in_level() {
                    has_exit = true;
                    continue;
                }
                let k = *id.entry(m.child).or_insert_with(|| {
                    nodes.push(m.child);
                    nodes.len() - 1
                });
                ks.push(k);
            }
            exit.push(has_exit);
            kids.push(ks);
            if nodes.len() > limit {
                return Ok(None);
            }
        }
        let mut parents: Vec<Vec<usize>> = vec![Vec::new(); nodes.len()];
        for (x, ks) in kids.iter().enumerate() {
            for &k in ks {
                parents[k].push(x);
            }
        }
        const UNKNOWN: u32 = u32::MAX;
        let mut dist = vec![UNKNOWN; nodes.len()];
        let mut left: Vec<usize> = kids.iter().map(|k| k.len()).collect();
        let mut queue = std::collections::VecDeque::new();
        for x in 0..nodes.len() {
            if (winner[x] && exit[x]) || (!winner[x] && kids[x].is_empty()) {
                dist[x] = 0;
                queue.push_back(x);
            }
        }
        // Breadth first, so distances come out in order: a winner takes its first
        // (smallest) child distance, a loser its last (largest).
        while let Some(y) = queue.pop_front() {
            for &x in &parents[y] {
                if dist[x] != UNKNOWN {
                    continue;
                }
                if !winner[x] {
                    left[x] -= 1;
                    if left[x] > 0 {
                        continue;
                    }
                }
                dist[x] = dist[y] + 1;
                queue.push_back(x);
            }
        }
        if dist.contains(&UNKNOWN) {
            // Cannot happen with exact values: every won position converts.
            return Err(Error::format(
                level_path(&self.dir, start.seeds()),
                format!(
                    "position {start} is valued {} but its win never converts; run `awari verify`",
                    self.probe(start)?
                ),
            ));
        }
        Ok(Some(nodes.into_iter().zip(dist).collect()))
    }
}

/// The most positions [`Database::line`] explores in one level to find a converting line.
const PLAN_LIMIT: usize = 2_000_000;
