//! Awari and Oware endgame databases by exact, parallel retrograde analysis, in the
//! file order of Romein and Bal's 2002 solution of Awari.
//!
//! A database holds one level per seed count; a level is a memory-mapped table of one
//! signed byte per position: the final margin (seeds the side to move captures from now
//! on, minus the opponent's) under perfect play. `DESIGN.md` at the root of the
//! repository is the contract: the rules, the value, the index order, the file formats
//! and the algorithm.
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
//! Build a database with [`build`], check it with [`verify`], probe it through
//! [`Database`]. The rest is grouped by what it is for: [`pack`] (packed levels),
//! [`romein_bal`] (their `scores.N` files), [`stats`], [`variants`], [`play`], [`mod@bench`],
//! `serve` (the HTTP API and web page of `awari serve`, feature `serve`), and [`rules`] and
//! [`mod@reference`] for programs that work on positions themselves.
//!
//! Inside, the code is in one-way layers (DESIGN.md section 10): `game` (rules, index)
//! -> `db` (files) -> `solve` (one level, all levels, verification, the reference solver)
//! -> `app` (query, play, stats, variants, sharing, bench, serve); the `awari` binary is a thin
//! layer on top. None of those modules is public: this page lists what is.

#![warn(missing_docs)]

mod app;
mod db;
mod error;
mod game;
mod solve;
mod util;

pub use app::query::{draw, parse_counts, Analysis, Database, Line, MoveValue, LINE_PLIES};
pub use db::layout::{
    build_command, db_dir, level_exists, level_path, list_levels, packed_path, present_levels,
};
pub use db::lock::DirLock;
pub use error::{Error, Result};
pub use game::index::{Cursor, Index, RankBase};
pub use game::rules::{legal_moves, Board, Move, Rules, MAX_PITS, MAX_SEEDS};
pub use solve::build::{build, choose, BuildOptions, LevelReport, Reads, StateKind, SPILL_FROM};
pub use solve::level::{Outcomes, PhaseTimes};
pub use solve::verify::{parse_levels, verify, LevelCheck, Mismatches, VerifyOptions};
pub use util::{check_threads, group, peak_rss, MAX_THREADS};

/// Planning a build: what each level needs per rank (memory, disk, time) and whether a
/// machine has it; the partition of a level into slices (DESIGN.md section 5.4).
pub mod plan {
    pub use crate::solve::plan::*;
    pub use crate::util::{bytes, disk_available, memory_available, memory_total};
}

/// A build over several ranks (DESIGN.md section 5.4): each rank solves and keeps one
/// slice of every level, talking to the others through a [`dist::Comm`]; `gather`
/// assembles the standard level files from the slices.
pub mod dist {
    pub use crate::db::layout::{owner, slice};
    pub use crate::db::slice::{
        gather, list_slices, slice_path, write_slice, SliceHeader, SliceLevel,
    };
    pub use crate::solve::dist::local::LocalComm;
    #[cfg(feature = "mpi")]
    pub use crate::solve::dist::mpi_comm::MpiComm;
    pub use crate::solve::dist::{
        build_slices, solve_slice, Comm, DistOptions, LowerSlices, Mail, SliceReport, ROUND,
        SEGMENT,
    };
    #[cfg(feature = "mpi")]
    pub use mpi;
}

/// The rules at the level of single moves: what the solver and the property tests use
/// (DESIGN.md section 1).
pub mod rules {
    pub use crate::game::rules::{
        for_each_exit, for_each_unmove, for_each_unmove_near, legal_moves, unmoves, Board, Exits,
        Move, Rules,
    };
}

/// Raw level files (DESIGN.md section 4), for programs that read or write levels
/// themselves.
pub mod raw {
    pub use crate::db::layout::Expect;
    pub use crate::db::raw::{checksum, Check, Header, LevelWriter, RawLevel, PAYLOAD_OFFSET};
}

/// Packed levels (DESIGN.md sections 6 and 7): independent zstd blocks with a block
/// table and checksums, and the value model that makes them smaller.
pub mod pack {
    pub use crate::app::share::{pack_level, unpack_level, PackReport};
    pub use crate::db::model::Model;
    pub use crate::db::pack::{PackOptions, DEFAULT_BLOCK, DEFAULT_ZSTD_LEVEL};
    pub use crate::db::store::{has_exit_model, survey, LevelInfo, LevelStack};
}

/// Romein and Bal's `scores.N` files (DESIGN.md section 9): export and import.
pub mod romein_bal {
    pub use crate::app::share::{
        check_romein_bal, export, import, scores_path, ImportOptions, Transfer,
    };
}

/// What a database holds, level by level: won / drawn / lost shares and value
/// histograms.
pub mod stats {
    pub use crate::app::stats::{database_stats, histogram, level_stats, LevelStats};
}

/// The start positions of small variants: boards of 2 to 6 pits, both rule sets.
pub mod variants {
    pub use crate::app::variants::*;
}

/// A game against the database at a chosen strength.
pub mod play {
    pub use crate::app::play::*;
}

/// `awari serve`: the HTTP API and the web explorer of the databases (feature `serve`).
#[cfg(feature = "serve")]
pub mod serve {
    pub use crate::app::serve::api::{router, AppState};
    pub use crate::app::serve::{
        open_all, serve, start_seeds, ApiError, Probes, ServeOptions, Served, MAX_URL,
    };
}

/// The build benchmark of `awari bench`.
pub mod bench {
    pub use crate::app::bench::*;
}

/// The independent solver of the tests and `awari variants`: value iteration over the
/// positions reachable from a start, with no level files.
pub mod reference {
    pub use crate::solve::reference::*;
}
