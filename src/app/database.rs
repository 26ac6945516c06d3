//! An open database of one rule set and board size ([`Database`]): the value of any
//! position, the value of each move and the best moves (DESIGN.md section 3.6); its
//! principal variations are in [`crate::app::line`].

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use serde::Serialize;

use crate::db::dtc::DistanceTable;
use crate::db::layout::{build_command, db_dir, missing_level, Expect};
use crate::db::model::{bound_of, Bound, Model};
use crate::db::raw::Check;
use crate::db::store::LevelFile;
use crate::error::{Error, Result};
use crate::game::index::Index;
use crate::game::rules::{legal_moves, Board, Rules};

/// An open database: one rule set and board size. Levels are opened (and their
/// checksums checked) the first time a probe needs them.
pub struct Database {
    root: PathBuf,
    dir: PathBuf,
    rules: Rules,
    pits: usize,
    index: Index,
    levels: Vec<OnceLock<LevelFile>>,
    /// Each level's distance table, if it has one (DESIGN.md section 4.6).
    tables: Vec<OnceLock<Option<DistanceTable>>>,
    /// The levels whose table an answer left out as damaged or stale, each said once in
    /// [`Database::take_warnings`].
    left_out: Mutex<(HashSet<usize>, Vec<String>)>,
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
    /// Plies to the first conversion after this move, both sides keeping the values from
    /// then on (DESIGN.md section 5.7): 1 for a capture, a game end or a move into a game
    /// over, else 1 plus the child's distance; `None` where the child is drawn, or the
    /// level has no distance table.
    pub distance: Option<u16>,
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
    /// Plies to the first conversion (a capture or the game's end) when both sides keep
    /// the value, the winner converting as soon as it can and the loser as late as it
    /// can (DESIGN.md section 5.7); `None` for a draw, a game over, or a level without a
    /// distance table (`awari dtc` makes them).
    pub distance: Option<u16>,
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
            tables: (0..=max).map(|_| OnceLock::new()).collect(),
            left_out: Mutex::default(),
        })
    }

    /// What answers left out since the last call: a distance table damaged or not of its
    /// level, one line each, naming the command that makes it again. The values were
    /// answered all the same.
    pub fn take_warnings(&self) -> Vec<String> {
        std::mem::take(&mut self.left_out.lock().unwrap().1)
    }

    /// Whether level `n`'s table is still kept for an answer after reading it gave
    /// `found`: a format error of a distance table (a damaged block, a distance its moves
    /// contradict) leaves the table out, said once; any other error stops the answer.
    fn table_kept(&self, n: usize, found: Result<()>) -> Result<bool> {
        match found {
            Ok(()) => Ok(true),
            Err(Error::Format { path, problem }) if is_table(&path) => {
                self.leave_out(n, &path, &problem);
                Ok(false)
            }
            Err(e) => Err(e),
        }
    }

    /// Leaves level `n`'s table out of the answers from now on, with one warning.
    fn leave_out(&self, n: usize, path: &Path, problem: &str) {
        let mut left = self.left_out.lock().unwrap();
        if left.0.insert(n) {
            let name = path
                .file_name()
                .unwrap_or(path.as_os_str())
                .to_string_lossy();
            // The command this line ends with, not the one the problem may name too.
            let problem = problem.split(": `awari dtc").next().unwrap_or(problem);
            left.1.push(format!(
                "the distance table {name} of level {n} is left out ({problem}); `awari dtc \
                 --force --levels {n}` makes it again"
            ));
        }
    }

    /// Level `n`'s distance table for an answer, which holds the values first: a table
    /// damaged or not of its level (a format error) is left out, the answer's distances
    /// then `None` as without tables, and said once ([`Database::take_warnings`]). Other
    /// errors (a read that fails) stop the answer.
    fn answer_table(&self, n: usize) -> Result<Option<&DistanceTable>> {
        if self.left_out.lock().unwrap().0.contains(&n) {
            return Ok(None);
        }
        match self.distances(n) {
            Err(Error::Format { path, problem }) if is_table(&path) => {
                self.leave_out(n, &path, &problem);
                Ok(None)
            }
            r => r,
        }
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

    /// Level `n`'s distance table, opened and checked (against its checksum and its
    /// level's values) on first use; `None` if the level has none.
    pub fn distances(&self, n: usize) -> Result<Option<&DistanceTable>> {
        let cell = self.tables.get(n).ok_or_else(|| {
            Error::Input(format!("{n} seeds: more than this board size supports"))
        })?;
        if let Some(t) = cell.get() {
            return Ok(t.as_ref());
        }
        let values = self.level(n)?.header().checksum;
        let want = Expect::level(self.rules, &self.index, n);
        let table = DistanceTable::open(&self.dir, &want, values, Check::Full)?;
        let _ = cell.set(table);
        Ok(cell.get().unwrap().as_ref())
    }

    /// The distance to conversion of a position (DESIGN.md section 5.7), in plies; `None`
    /// for a draw, a game over, or a level without a distance table.
    pub fn distance(&self, board: &Board) -> Result<Option<u16>> {
        self.check_board(board)?;
        if board.is_stored() {
            let n = board.seeds();
            return Ok(match self.distances(n)? {
                Some(t) => t.distance(self.index.rank_in(board, n))?,
                None => None,
            });
        }
        Ok(self.analyze(board)?.distance)
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
                distance: None,
            });
        }
        // After the values: a missing level the moves need is named first.
        let mut tables = self
            .answer_table(n)
            .map_err(|e| self.needs(e, n))?
            .is_some();
        if tables {
            let found = (|| {
                for (m, mv) in legal.as_slice().iter().zip(&mut moves) {
                    let converts = m.ends_game
                        || m.captured > 0
                        || legal_moves(&m.child, self.rules).terminal_value.is_some();
                    mv.distance = if converts {
                        Some(1)
                    } else {
                        // An in-level child is stored (DESIGN.md section 3.6): its table's.
                        let child = match m.child.is_stored() {
                            true => match self.answer_table(n)? {
                                Some(table) => table.distance(self.index.rank_in(&m.child, n))?,
                                None => None,
                            },
                            false => self.analyze(&m.child)?.distance,
                        };
                        child.map(|d| d.saturating_add(1))
                    };
                }
                Ok(())
            })();
            tables = self.table_kept(n, found)?;
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
        // The winner's nearest value-keeping move, the loser's farthest.
        let keeping = moves
            .iter()
            .filter(|m| m.value == value)
            .map(|m| m.distance);
        let distance = match value {
            _ if !tables || game_over.is_some() || value == 0 => None,
            1.. => keeping.flatten().min(),
            _ => keeping
                .collect::<Option<Vec<u16>>>()
                .and_then(|d| d.into_iter().max()),
        };
        if stored && tables {
            let consistent = (|| match self.answer_table(n)? {
                Some(table) => {
                    let d = table.distance(self.index.rank_in(board, n))?;
                    match d == distance {
                        true => Ok(()),
                        false => Err(Error::format(
                            table.path(),
                            format!(
                                "inconsistent: position {board} has distance {d:?} in the table \
                                 but its moves give {distance:?}"
                            ),
                        )),
                    }
                }
                None => Ok(()),
            })();
            tables = self.table_kept(n, consistent)?;
        }
        // A table left out on the way: no distances at all, as without tables.
        let distance = if tables && self.answer_table(n)?.is_some() {
            distance
        } else {
            for m in &mut moves {
                m.distance = None;
            }
            None
        };
        Ok(Analysis {
            pits: board.pits().to_vec(),
            seeds: n,
            value,
            stored,
            moves,
            best,
            game_over,
            distance,
        })
    }
}

/// Whether `path` names a distance table (`level-NNN.awd`, packed `.adz`).
fn is_table(path: &Path) -> bool {
    matches!(
        path.extension().and_then(|e| e.to_str()),
        Some("awd" | "adz")
    )
}
