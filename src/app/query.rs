//! What `awari query` and the server say of a position: pit counts read from words, the
//! JSON object of a query, and the board drawn as text. The reader itself is
//! [`crate::app::database::Database`].

use crate::app::database::Database;
use crate::error::{Error, Result};
use crate::game::rules::{Board, MAX_SEEDS};

/// The longest principal variation that `awari query --line` and the server play, in
/// plies: a drawn line ends at its first repeated position well before this.
pub const LINE_PLIES: usize = 10_000;

/// Parses pit counts given as words, each holding counts separated by spaces, tabs or
/// commas (`["1", "1,2"]`, `["1 1 2"]`). The words of the errors are the command line's
/// and the server's.
pub fn parse_counts<S: AsRef<str>>(words: &[S]) -> Result<Vec<u32>> {
    words
        .iter()
        .flat_map(|w| w.as_ref().split([',', ' ', '\t']).filter(|s| !s.is_empty()))
        .map(|w| {
            if w.starts_with('-') {
                return Err(Error::Input(format!(
                    "'{w}' is negative: pit counts are 0 or more seeds"
                )));
            }
            w.parse::<u32>().map_err(|_| {
                Error::Input(if w.bytes().all(|b| b.is_ascii_digit()) {
                    format!("'{w}' seeds: more than a board holds (at most {MAX_SEEDS})")
                } else {
                    format!("'{w}' is not a number of seeds")
                })
            })
        })
        .collect()
}

impl Database {
    /// The JSON object that `awari query --json` prints and the server answers: the
    /// analysis of `board` and, with `line`, its principal variation (at most
    /// [`LINE_PLIES`] plies). One function for both, so that they stay byte-identical.
    pub fn query_json(&self, board: &Board, line: bool) -> Result<serde_json::Value> {
        let a = self.analyze(board)?;
        // Keys print in sorted order (serde_json's map without preserve_order).
        let mut v = serde_json::json!({
            "rules": self.rules().name(),
            "pits": a.pits,
            "seeds": a.seeds,
            "value": a.value,
            "stored": a.stored,
            "moves": a.moves,
            "best": a.best,
            "game_over": a.game_over,
            "distance": a.distance,
        });
        if line {
            let l = self.line(board, LINE_PLIES)?;
            v["line"] = serde_json::json!({ "plies": l.plies, "end": l.end, "score": l.score });
        }
        Ok(v)
    }
}

/// The board as text: the opponent's row on top (pit 2P-1 on the left), the side to
/// move below (pit 0 on the left), as players see it across the board.
pub fn draw(board: &Board) -> String {
    let p = board.pits_per_side();
    let cell = |i: usize| format!("{:>4}", board.get(i));
    let mut s = String::new();
    s += "  opponent ";
    for i in (p..2 * p).rev() {
        s += &format!(
            "{:>4}",
            format!("{}", (b'a' + i as u8 - p as u8) as char).to_uppercase()
        );
    }
    s += "\n           ";
    for i in (p..2 * p).rev() {
        s += &cell(i);
    }
    s += "\n           ";
    for i in 0..p {
        s += &cell(i);
    }
    s += "\n  to move  ";
    for i in 0..p {
        s += &format!("{:>4}", (b'a' + i as u8) as char);
    }
    s += "\n";
    s
}
