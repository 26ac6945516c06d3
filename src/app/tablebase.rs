//! The tablebase as programs embed it: open a folder, probe positions. Shaped like
//! shakmaty-syzygy's `Tablebase`: one type that finds the databases of a folder, a
//! position type, and a small value type; [`Database`] stays the one-board-size reader
//! underneath.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use crate::app::database::{Analysis, Database};
use crate::app::line::Line;
use crate::app::query::parse_counts;
use crate::db::layout::database_dirs;
use crate::error::{Error, Result};
use crate::game::rules::{Board, Rules, MAX_PITS};

/// A position: the `2P` pit counts, the side to move's pits first (its pit 0 is the one
/// on its left), then the opponent's. Parsed from counts separated by spaces or commas
/// (`"1 1 1 1 1 2 4 2 3 0 0 0"`), shown the same way.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Position(Board);

impl Position {
    /// The position of the pit counts `counts` (`2P` of them, `P` from 2 to 8), side to
    /// move first.
    pub fn from_counts(counts: &[u32]) -> Result<Position> {
        if !counts.len().is_multiple_of(2) || !(4..=2 * MAX_PITS).contains(&counts.len()) {
            return Err(Error::Input(format!(
                "a position is 4 to {} pit counts, an even number (both sides), not {}",
                2 * MAX_PITS,
                counts.len()
            )));
        }
        Ok(Position(Board::from_counts(counts.len() / 2, counts)?))
    }

    /// The pit counts, side to move first.
    pub fn counts(&self) -> &[u8] {
        self.0.pits()
    }

    /// Pits per side.
    pub fn pits_per_side(&self) -> usize {
        self.0.pits_per_side()
    }

    /// Seeds on the board: the level of the database that holds the position.
    pub fn seeds(&self) -> usize {
        self.0.seeds()
    }

    /// The board, for the expert functions of [`crate::expert`].
    pub fn board(&self) -> &Board {
        &self.0
    }
}

impl From<Board> for Position {
    fn from(board: Board) -> Position {
        Position(board)
    }
}

impl FromStr for Position {
    type Err = Error;

    fn from_str(s: &str) -> Result<Position> {
        let words: Vec<&str> = s
            .split(|c: char| c.is_whitespace() || c == ',')
            .filter(|w| !w.is_empty())
            .collect();
        Position::from_counts(&parse_counts(&words)?)
    }
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl fmt::Debug for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Position({self})")
    }
}

/// Who wins under perfect play, for the side to move.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// The side to move ends with more seeds.
    Win,
    /// Both sides end with as many seeds.
    Draw,
    /// The side to move ends with fewer seeds.
    Loss,
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Outcome::Win => "win",
            Outcome::Draw => "draw",
            Outcome::Loss => "loss",
        })
    }
}

/// The value of a position for the side to move under perfect play: the final margin,
/// seeds it captures from now on minus the opponent's (DESIGN.md section 2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Value(i8);

impl Value {
    /// The value of margin `margin`.
    pub fn new(margin: i8) -> Value {
        Value(margin)
    }

    /// The final margin for the side to move.
    pub fn margin(self) -> i8 {
        self.0
    }

    /// Win, draw or loss: the margin's sign.
    pub fn outcome(self) -> Outcome {
        match self.0 {
            m if m > 0 => Outcome::Win,
            0 => Outcome::Draw,
            _ => Outcome::Loss,
        }
    }
}

impl fmt::Display for Value {
    /// `margin 0, a draw`, `margin +3, a win`, `margin -2, a loss`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.outcome() {
            Outcome::Draw => write!(f, "margin 0, a draw"),
            o => write!(f, "margin {:+}, a {o}", self.0),
        }
    }
}

/// The databases of one rule set in a folder, every board size found: probe any position
/// of those sizes. Levels are opened on first use and checked (raw or packed).
///
/// ```no_run
/// # fn main() -> Result<(), awari::Error> {
/// let tb = awari::Tablebase::open("db")?;
/// let pos: awari::Position = "1 1 1 1 1 2 4 2 3 0 0 0".parse()?;
/// println!("{}", tb.probe(&pos)?); // margin 0, a draw
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct Tablebase {
    rules: Rules,
    dbs: Vec<Database>,
}

impl Tablebase {
    /// Opens the databases under `path`: a root folder as given to `awari build --dir`
    /// (holding `<rules>-<P>` folders; it must hold one rule set, else use
    /// [`Tablebase::open_rules`]), or one database folder such as `db/awari-6`.
    pub fn open(path: impl AsRef<Path>) -> Result<Tablebase> {
        Tablebase::open_with(path.as_ref(), None)
    }

    /// Opens the databases of `rules` under the root folder (or database folder) `path`.
    pub fn open_rules(path: impl AsRef<Path>, rules: Rules) -> Result<Tablebase> {
        Tablebase::open_with(path.as_ref(), Some(rules))
    }

    fn open_with(path: &Path, want: Option<Rules>) -> Result<Tablebase> {
        if !path.is_dir() {
            return Err(Error::io(
                path,
                std::io::Error::new(std::io::ErrorKind::NotFound, "no such folder"),
            ));
        }
        // A database folder itself: its name says what it holds.
        let own = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.rsplit_once('-'))
            .and_then(|(r, p)| Some((r.parse::<Rules>().ok()?, p.parse::<usize>().ok()?)));
        let found: Vec<(Rules, usize, PathBuf)> = match own {
            Some((rules, pits)) if want.is_none_or(|w| w == rules) => {
                let root = path.parent().unwrap_or(Path::new("."));
                vec![(rules, pits, root.to_path_buf())]
            }
            _ => database_dirs(path)?
                .into_iter()
                .map(|(r, p, _)| (r, p, path.to_path_buf()))
                .collect(),
        };
        let mut rules: Vec<Rules> = found.iter().map(|f| f.0).collect();
        rules.dedup();
        let rules = match (want, rules.as_slice()) {
            (Some(w), _) => w,
            (None, [one]) => *one,
            (None, []) => {
                return Err(Error::Input(format!(
                "{} holds no database (folders named like awari-6); build one with `awari build`",
                path.display()
            )))
            }
            (None, _) => {
                // Named in words every binding shares: Tablebase::open_rules in Rust,
                // rules= in Python, awari_open_rules in C.
                let names: Vec<&str> = rules.iter().map(|r| r.name()).collect();
                return Err(Error::Input(format!(
                    "{} holds databases of several rule sets ({}): name the one to open",
                    path.display(),
                    names.join(", ")
                )));
            }
        };
        let dbs = found
            .into_iter()
            .filter(|f| f.0 == rules)
            .map(|(r, p, root)| Database::open(&root, r, p))
            .collect::<Result<Vec<_>>>()?;
        if dbs.is_empty() {
            return Err(Error::Input(format!(
                "{} holds no {rules} database; build one with `awari build --rules {rules}`",
                path.display()
            )));
        }
        Ok(Tablebase { rules, dbs })
    }

    /// The rule set.
    pub fn rules(&self) -> Rules {
        self.rules
    }

    /// The board sizes held (pits per side), in order.
    pub fn pits(&self) -> Vec<usize> {
        self.dbs.iter().map(Database::pits).collect()
    }

    /// The database of positions like `pos`.
    pub fn database(&self, pits: usize) -> Result<&Database> {
        self.dbs.iter().find(|d| d.pits() == pits).ok_or_else(|| {
            Error::Input(format!(
                "no {} database of {pits} pits per side here (held: {:?})",
                self.rules,
                self.pits()
            ))
        })
    }

    /// The value of `pos` for the side to move under perfect play.
    pub fn probe(&self, pos: &Position) -> Result<Value> {
        let db = self.database(pos.pits_per_side())?;
        db.probe(&pos.0).map(Value)
    }

    /// The value of `pos`, of each of its legal moves, and the best moves.
    pub fn moves(&self, pos: &Position) -> Result<Analysis> {
        self.database(pos.pits_per_side())?.analyze(&pos.0)
    }

    /// A principal variation from `pos`, at most `max_plies` moves (see
    /// [`Database::line`]).
    pub fn line(&self, pos: &Position, max_plies: usize) -> Result<Line> {
        self.database(pos.pits_per_side())?.line(&pos.0, max_plies)
    }

    /// The distance to conversion of `pos` (DESIGN.md section 5.7): the plies to the next
    /// capture or the game's end when both sides keep the value, the winner converting as
    /// soon as it can and the loser as late as it can. `None` for a draw, a game over, or
    /// a level without a distance table (`awari dtc` makes them). Probe it beside the
    /// value, as chess engines probe Syzygy's DTZ beside its WDL.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), awari::Error> {
    /// let tb = awari::Tablebase::open("db/oware-6")?;
    /// let pos: awari::Position = "2 0 1 0 3 0 0 0 1 0 0 2".parse()?;
    /// if let Some(d) = tb.probe_distance(&pos)? {
    ///     println!("{}, converted in {d} plies", tb.probe(&pos)?);
    /// }
    /// # Ok(()) }
    /// ```
    pub fn probe_distance(&self, pos: &Position) -> Result<Option<u16>> {
        self.database(pos.pits_per_side())?.distance(&pos.0)
    }

    /// The move perfect play makes in `pos`, its pit (0-based, side to move); `None` if
    /// the game is over. A best move; where the level has a distance table, the winner's
    /// of least distance and the loser's of most (lowest pit among equals), so that a won
    /// game is converted, not played round a cycle; else found by a search (see
    /// [`Database::perfect_move`]).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), awari::Error> {
    /// let tb = awari::Tablebase::open("db/oware-6")?;
    /// let pos: awari::Position = "2 0 1 0 3 0 0 0 1 0 0 2".parse()?;
    /// assert_eq!(tb.best_move(&pos)?, Some(2)); // pit c: wins by 5 in 4 plies
    /// # Ok(()) }
    /// ```
    pub fn best_move(&self, pos: &Position) -> Result<Option<u8>> {
        let db = self.database(pos.pits_per_side())?;
        let a = db.analyze(&pos.0)?;
        if a.game_over.is_some() {
            return Ok(None);
        }
        let mut search = crate::app::line::Conversion::new();
        Ok(Some(db.perfect_move(&pos.0, &a, &mut search)?.pit))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_parse_and_show() {
        let p: Position = "1 1 1 1 1 2 4 2 3 0 0 0".parse().unwrap();
        assert_eq!(p.to_string(), "1 1 1 1 1 2 4 2 3 0 0 0");
        assert_eq!((p.pits_per_side(), p.seeds()), (6, 16));
        assert_eq!(
            "1,0, 2,3".parse::<Position>().unwrap().counts(),
            [1, 0, 2, 3]
        );
        for bad in [
            "",
            "1 2 3",
            "1 x 1 1",
            "1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1",
            "99 99 1 1",
        ] {
            assert!(bad.parse::<Position>().is_err(), "{bad}");
        }
    }

    #[test]
    fn folders_are_found_and_refused_in_words() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        let e = Tablebase::open(root).unwrap_err().to_string();
        assert!(
            e.ends_with(
                "holds no database (folders named like awari-6); build one with `awari build`"
            ),
            "{e}"
        );
        for name in ["awari-6", "oware-6", "awari-4", "notes"] {
            std::fs::create_dir(root.join(name)).unwrap();
        }
        let e = Tablebase::open(root).unwrap_err().to_string();
        assert!(
            e.ends_with(
                "holds databases of several rule sets (awari, oware): name the one to open"
            ),
            "{e}"
        );
        let tb = Tablebase::open_rules(root, Rules::Awari).unwrap();
        assert_eq!((tb.rules(), tb.pits()), (Rules::Awari, vec![4, 6]));
        // One database folder by itself.
        let tb = Tablebase::open(root.join("oware-6")).unwrap();
        assert_eq!((tb.rules(), tb.pits()), (Rules::Oware, vec![6]));
        let pos: Position = "1 0 0 1 0 0 0 0".parse().unwrap();
        let e = tb.probe(&pos).unwrap_err().to_string();
        assert!(e.contains("no oware database of 4 pits per side"), "{e}");
        let e = Tablebase::open(root.join("nowhere"))
            .unwrap_err()
            .one_line();
        assert!(e.ends_with("nowhere: no such folder"), "{e}");
    }

    #[test]
    fn values_say_who_wins() {
        assert_eq!(Value::new(0).to_string(), "margin 0, a draw");
        assert_eq!(Value::new(3).to_string(), "margin +3, a win");
        assert_eq!(Value::new(-2).outcome(), Outcome::Loss);
    }
}
