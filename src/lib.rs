//! Awari and Oware endgame databases by exact, parallel retrograde analysis, in the
//! file order of Romein and Bal's 2002 solution of Awari.
//!
//! A database holds one level per seed count; a level is a memory-mapped table of one
//! signed byte per position: the final margin (seeds the side to move captures from now
//! on, minus the opponent's) under perfect play. Open a folder of databases as a
//! [`Tablebase`] and probe [`Position`]s:
//!
//! ```
//! # fn main() -> Result<(), awari::Error> {
//! # let tmp = std::env::temp_dir().join(format!("awari-doc-{}", std::process::id()));
//! # let _ = std::fs::remove_dir_all(&tmp);
//! # let opts = awari::BuildOptions::new(&tmp, awari::Rules::Awari, 6, 8).check(false);
//! # awari::build(&opts, |_| {}, |_| {})?;
//! # let db = tmp.to_str().unwrap();
//! // Levels built with `awari build --max-seeds 8 --dir <db>`.
//! let tb = awari::Tablebase::open(db)?;
//! let pos: awari::Position = "1 1 1 1 0 0 0 0 1 1 1 1".parse()?;
//! let value = tb.probe(&pos)?;
//! assert_eq!(value.to_string(), "margin +4, a win"); // for the side to move
//! assert_eq!((value.margin(), value.outcome()), (4, awari::Outcome::Win));
//! let moves = tb.moves(&pos)?; // every legal move's value, and the best ones
//! assert!(moves.moves.iter().all(|m| m.value <= value.margin()));
//! let line = tb.line(&pos, 100)?; // a principal variation to the end of the game
//! println!("{} plies: {}", line.plies.len(), line.end);
//! # std::fs::remove_dir_all(&tmp).ok();
//! # Ok(()) }
//! ```
//!
//! The other entry points: [`build()`] builds levels, [`verify()`] checks them, [`plan`]
//! says what a build needs. Everything else (the one-board-size [`expert::Database`],
//! the index, the rules move by move, packed and Romein-Bal files, the distributed
//! build, statistics, variants, play, the server) is in [`expert`], for programs that
//! work on the files or positions themselves. `DESIGN.md` at the root of the repository
//! is the contract: the rules, the value, the index order, the file formats and the
//! algorithm.
//!
//! Inside, the code is in one-way layers (DESIGN.md section 10): `game` (rules, index)
//! -> `db` (files) -> `solve` (one level, all levels, verification, the reference solver)
//! -> `app` (tablebase, query, play, stats, variants, sharing, bench, serve); the `awari`
//! binary is a thin layer on top.

#![warn(missing_docs, missing_debug_implementations)]

mod app;
mod db;
mod error;
mod game;
mod solve;
mod util;

pub use app::database::{Analysis, MoveValue};
pub use app::line::{Line, Ply};
pub use app::tablebase::{Outcome, Position, Tablebase, Value};
pub use error::{Error, Result};
pub use game::rules::Rules;
pub use solve::build::{build, LevelReport, Lower, StateKind};
pub use solve::dtc::{make_tables, DtcOptions, DtcReport};
pub use solve::options::BuildOptions;
pub use solve::plan::LevelMethod;
pub use solve::verify::{
    verify, DistanceCheck, DistanceMismatch, LevelCheck, Mismatch, Mismatches, VerifyOptions,
};

/// Planning a build: what each level needs per rank (memory, disk, time) and whether a
/// machine has it; the partition of a level into slices (DESIGN.md section 5.4).
pub mod plan {
    pub use crate::app::plan::{report, PlanOptions, MAX_NODES};
    pub use crate::solve::plan::{
        check_build_fits, check_level_fits, check_slice_fits, measured_rate, plan, rate_at,
        rate_fall, way, way_cost, Calibration, DiskFit, LevelMemory, LevelPlan, LowerHeld, Machine,
        Measured, MethodRequest, Rate, WayCosts, BUSY_AT_LEAST, DEFAULT_PACK_RATIO, MEASURED_FROM,
        MEASURED_LEVELS, RATE_FALL, RATE_FALL_LARGE, RATE_KNEE, STREAM_BUFFER,
    };

    /// The rates a build measured, one line per level built, in `rates.csv` of the
    /// database folder (DESIGN.md section 8).
    pub mod rates {
        pub use crate::solve::plan::rates::{
            append, busy, rates_path, read, LevelRate, Rates, HEADER, RATES_FILE,
        };
    }
}

/// For programs that work on the files or positions themselves, and for the `awari`
/// binary: the one-board-size reader, the index, file names and locks, the rules move by
/// move, and one module per application.
pub mod expert {
    pub use crate::app::database::Database;
    pub use crate::app::line::{Conversion, CONVERSION_LIMIT};
    pub use crate::app::query::{draw, parse_counts, LINE_PLIES};
    pub use crate::db::checkpoint::CheckpointAt;
    pub use crate::db::dtc::{
        dtc_packed_path, dtc_path, list_tables, pack_table, unpack_table, DistanceHeader,
        DistanceTable, TableSizes,
    };
    pub use crate::db::layout::{
        build_command, db_dir, level_exists, level_path, list_levels, packed_path, present_levels,
    };
    pub use crate::db::lock::DirLock;
    pub use crate::db::store::LevelFile;
    pub use crate::game::index::{Cursor, Index, RankBase};
    pub use crate::game::rules::{legal_moves, Board, Move, MAX_PITS, MAX_SEEDS};
    pub use crate::solve::build::SPILL_FROM;
    pub use crate::solve::level::{Outcomes, PhaseTimes};
    pub use crate::solve::options::CHECKPOINT_EVERY;
    pub use crate::solve::verify::parse_levels;
    pub use crate::util::{check_threads, MAX_THREADS};

    /// Figures as the `awari` binary prints them, and what the system says of this
    /// process and machine.
    pub mod figures {
        pub use crate::util::{
            bytes, cpu_seconds, disk_available, group, group_u128, memory_available, memory_total,
            peak_rss,
        };
    }

    /// A build over several ranks (DESIGN.md section 5.4): each rank solves and keeps one
    /// slice of every level, talking to the others through a [`ranks::Comm`]; `gather`
    /// assembles the standard level files from the slices.
    pub mod ranks {
        pub use crate::db::layout::{owner, slice};
        pub use crate::db::slice::{
            gather, gather_then, list_slices, slice_path, write_slice, SliceHeader, SliceLevel,
        };
        pub use crate::solve::comm::Solo;
        pub use crate::solve::ranks::local::LocalComm;
        #[cfg(feature = "mpi")]
        pub use crate::solve::ranks::mpi_comm::MpiComm;
        pub use crate::solve::ranks::{build_slices, Comm, Mail, ROUND, SEGMENT};
    }

    /// The rules at the level of single moves: what the solver and the property tests use
    /// (DESIGN.md section 1).
    pub mod rules {
        pub use crate::game::rules::{
            for_each_exit, for_each_unmove, for_each_unmove_near, legal_moves, unmoves, Board,
            Exits, Move, Rules,
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
        pub use crate::app::share::{
            pack_files, pack_level, unpack_files, unpack_level, Holds, PackReport,
        };
        pub use crate::db::model::Model;
        pub use crate::db::pack::{PackOptions, DEFAULT_BLOCK, DEFAULT_ZSTD_LEVEL};
        pub use crate::db::stack::{survey, LevelInfo, LevelStack};
        pub use crate::db::store::has_exit_model;
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
        pub use crate::app::stats::{
            database_stats, distance_stats, histogram, level_stats, DistanceStats, LevelStats,
        };
    }

    /// The start positions of small variants: boards of 2 to 6 pits, both rule sets.
    pub mod variants {
        pub use crate::app::variants::{
            markdown, markdown_row, parse_table, plan, result_in_words, second_opinion, solve, Row,
            Second, Variant, VariantOptions, DEFAULT_MAX_POSITIONS, DEFAULT_REFERENCE_LIMIT,
            TABLE_HEADER,
        };
    }

    /// A game against the database at a chosen strength.
    pub mod play {
        pub use crate::app::play::{move_weights, BadMove, Ending, Game, Played, Random, Side};
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
        pub use crate::app::bench::{bench, csv, probe_latency, BenchOptions, ProbeReport, Run};
    }

    /// The independent solver of the tests and `awari variants`: value iteration over the
    /// positions reachable from a start, with no level files.
    pub mod reference {
        pub use crate::solve::reference::{BoardHasher, Reference, TooLarge};
    }
}
