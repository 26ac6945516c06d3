//! Awari and Oware endgame databases by exact, parallel retrograde analysis, in the
//! file order of Romein and Bal's 2002 solution of Awari.
//!
//! The database holds one level per seed count; a level is a memory-mapped table of one
//! signed byte per position: the final margin (seeds the side to move captures from now
//! on, minus the opponent's) under perfect play.
//!
//! ```no_run
//! use awari::{Board, Database, Rules};
//! # fn main() -> Result<(), awari::Error> {
//! // Levels built with `awari build --max-seeds 16` into ./db.
//! let db = Database::open("db".as_ref(), Rules::Awari, 6)?;
//! let board = db.board(&[1, 1, 1, 1, 1, 2, 4, 2, 3, 0, 0, 0])?;
//! let a = db.analyze(&board)?;
//! assert_eq!(a.value, 0);
//! let per_move: Vec<i8> = a.moves.iter().map(|m| m.value).collect();
//! assert_eq!(per_move, [-1, -1, -2, -2, -2, 0]);
//! # Ok(()) }
//! ```
//!
//! The stages follow the data: [`rules`] (board, moves, un-moves) -> [`index`] (ranking)
//! -> [`table`] (level files) -> [`solve`] (one level) -> [`build`] (all levels) ->
//! [`query`] (probing) -> [`verify`] (checking a built database), with [`reference`] (an
//! independent solver), [`variants`] (the start positions of small boards), [`stats`]
//! (the distribution of values per level, and its chart) and [`play`] (a game against the
//! database). Levels can also be packed ([`pack`], with the value model of [`model`]) and
//! read either way through [`store`].

pub mod bench;
pub mod build;
pub mod error;
pub mod export;
pub mod index;
pub mod model;
pub mod pack;
pub mod play;
pub mod query;
pub mod reference;
pub mod rules;
pub mod solve;
pub mod stats;
pub mod store;
pub mod table;
pub mod variants;
pub mod verify;

pub use build::{build, db_dir, BuildOptions, LevelReport};
pub use error::{Error, Result};
pub use index::Index;
pub use query::{Analysis, Database, MoveValue};
pub use rules::{legal_moves, Board, Rules};

/// A count with thousands separators: 1234567 -> "1,234,567".
pub fn group(x: u64) -> String {
    let s = x.to_string();
    let mut out = String::new();
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}
