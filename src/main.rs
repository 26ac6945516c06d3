//! `awari`: build, query and inspect Awari/Oware endgame databases. A thin layer over
//! the library: parse arguments, call it, print.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

use awari::Rules;

mod cmd;
use cmd::bench::{cmd_bench, cmd_count};
use cmd::build::cmd_build;
use cmd::play::{cmd_play, PlayOptions};
use cmd::query::cmd_query;
use cmd::share::{cmd_export, cmd_import, cmd_info, cmd_pack, cmd_unpack};
use cmd::stats::cmd_stats;
use cmd::verify::{cmd_variants, cmd_verify, parse_amount};

#[derive(Parser)]
#[command(
    name = "awari",
    version,
    about = "Perfect-play endgame databases for Awari and Oware, by retrograde analysis",
    long_about = "Perfect-play endgame databases for Awari and Oware, by retrograde analysis.\n\n\
        A database holds one level per number of seeds on the board; each level stores, for every \
        position, the final margin (seeds the side to move captures from now on, minus the \
        opponent's) under perfect play. Levels use the file order of Romein and Bal's 2002 \
        solution of Awari.\n\nStart with:  awari build --max-seeds 16  then  awari query 1 1 1 1 1 2 4 2 3 0 0 0"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Args, Clone)]
pub(crate) struct DbArgs {
    /// Root folder of the databases; each rule set and board size has a sub-folder
    /// (e.g. db/awari-6).
    #[arg(long, default_value = "db")]
    pub dir: PathBuf,
    /// Pits per side (2..=8).
    #[arg(long, default_value_t = 6)]
    pub pits: usize,
    /// Rule set: 'awari' (Romein-Bal, Computer Olympiad) or 'oware' (Abapa: grand slam
    /// captures nothing, a player who cannot feed takes the rest).
    #[arg(long, default_value = "awari")]
    pub rules: Rules,
}

#[derive(Subcommand)]
enum Command {
    /// Build levels 0..=N (skips levels already complete and valid, so an interrupted
    /// build resumes).
    Build {
        /// Highest level (seeds on the board) to build.
        #[arg(long)]
        max_seeds: usize,
        #[command(flatten)]
        db: DbArgs,
        /// Worker threads (default: one per core).
        #[arg(long)]
        threads: Option<usize>,
        /// Rebuild levels even if they are complete.
        #[arg(long)]
        force: bool,
    },
    /// Value of a position, of each legal move, and the best moves.
    Query {
        /// The 2P pit counts, side to move first, counter-clockwise from its leftmost pit
        /// (as in the Romein-Bal lookup tool), e.g. 1 1 1 1 1 2 4 2 3 0 0 0.
        #[arg(required_unless_present = "stdin", num_args = 1.., allow_negative_numbers = true)]
        pits_counts: Vec<String>,
        #[command(flatten)]
        db: DbArgs,
        /// Also print a principal variation to the end of the game.
        #[arg(long)]
        line: bool,
        /// Print one JSON object instead of text.
        #[arg(long)]
        json: bool,
        /// Read one position per line from standard input and write one JSON object per
        /// line (an object with "error" for a bad line).
        #[arg(long, conflicts_with = "pits_counts")]
        stdin: bool,
    },
    /// Play a game against the database in the terminal: type a pit (a-f or 1-6 from your
    /// left), 'hint' for the value of each of your moves, 'undo' to take back your last
    /// move and the reply, 'quit' to stop. Without a terminal it reads one command per line.
    Play {
        #[command(flatten)]
        db: DbArgs,
        /// Start with this many seeds in every pit (default: the largest start, up to 4,
        /// whose levels are built).
        #[arg(long, conflicts_with = "position")]
        seeds_per_pit: Option<usize>,
        /// Start from this position instead: the 2P pit counts, the side that moves
        /// first first (as in `awari query`).
        #[arg(long, num_args = 1.., allow_negative_numbers = true, value_name = "PITS")]
        position: Vec<String>,
        /// Who moves first.
        #[arg(long, default_value = "me")]
        first: First,
        /// How well the database plays: 100 always plays a best move; below, it picks
        /// weaker moves more often and gives away more seeds per move on average; 0 plays
        /// any legal move alike.
        #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u8).range(0..=100))]
        strength: u8,
        /// Seed of the database's random choices below strength 100 (default: from the
        /// clock, printed so that a game can be replayed).
        #[arg(long)]
        seed: Option<u64>,
    },
    /// Check a built database: headers, checksums, and every stored value against the
    /// values of its moves; with --deep, also solve every level again by an independent
    /// method and compare byte for byte.
    Verify {
        #[command(flatten)]
        db: DbArgs,
        /// Levels to check, e.g. 0..=20 or 17 (default: every level present, from 0 up to
        /// the first missing one). Levels below the range are read, not checked.
        #[arg(long, value_name = "A..=B")]
        levels: Option<String>,
        /// Also solve each level again by forward sweeps of the threshold attractors (not
        /// the builder's method) and compare byte for byte: catches values that are
        /// wrong but consistent round a cycle, which the local check cannot. Slower.
        #[arg(long)]
        deep: bool,
        /// Worker threads (default: one per core).
        #[arg(long)]
        threads: Option<usize>,
    },
    /// Per level: positions, share won / drawn / lost by the side to move, mean, largest
    /// and smallest value, and the distribution of values; optionally an SVG chart.
    Stats {
        #[command(flatten)]
        db: DbArgs,
        /// Levels to count, e.g. 0..=20 or 17 (default: every level present, from 0 up to
        /// the first missing one).
        #[arg(long, value_name = "A..=B")]
        levels: Option<String>,
        /// Also write a chart to this file (SVG only, e.g. stats.svg): won / drawn / lost
        /// shares per level, and the share of each value per level with the mean.
        #[arg(long, value_name = "FILE")]
        plot: Option<PathBuf>,
        /// Print one JSON object instead of the table: every number per level, with the
        /// full histogram (positions per value), and the totals.
        #[arg(long)]
        json: bool,
        /// Worker threads for counting (default: one per core).
        #[arg(long)]
        threads: Option<usize>,
    },
    /// The value of the start position of small variants (2 to 6 pits per side, k seeds
    /// per pit, both rule sets), building what they need; prints a markdown table (the
    /// one in data/variants.md).
    Variants {
        /// Root folder of the databases; levels already built there are reused.
        #[arg(long, default_value = "db")]
        dir: PathBuf,
        /// Compute the variants whose database (levels 0..=2Pk) holds at most this many
        /// positions (e.g. 1.2e9 or 50000000); larger ones get a row saying what they need.
        #[arg(long, default_value = "1.2e9", value_parser = parse_amount)]
        max_positions: u64,
        /// Run the independent solver only when the positions reachable from the start
        /// are at most this many (about 70 bytes each).
        #[arg(long, default_value = "2e7", value_parser = parse_amount)]
        reference_limit: u64,
        /// Only this rule set (default: both).
        #[arg(long)]
        rules: Option<Rules>,
        /// Only this board size (default: 2 to 6 pits per side).
        #[arg(long)]
        pits: Option<usize>,
        /// Worker threads (default: one per core).
        #[arg(long)]
        threads: Option<usize>,
    },
    /// Benchmark the builder: build levels 0..=N from scratch with each thread count,
    /// and print per level the seconds, positions per second per thread, peak memory
    /// and the speed-up of the last thread count over the first.
    Bench {
        /// Highest level to build.
        #[arg(long, default_value_t = 20)]
        max_seeds: usize,
        /// Thread counts to compare, in order.
        #[arg(long, value_delimiter = ',', default_value = "1,2")]
        threads: Vec<usize>,
        /// Pits per side (2..=8).
        #[arg(long, default_value_t = 6)]
        pits: usize,
        /// Rule set.
        #[arg(long, default_value = "awari")]
        rules: Rules,
        /// Scratch folder for the builds (removed after each run); default: the system's
        /// temporary folder.
        #[arg(long)]
        scratch: Option<PathBuf>,
        /// Also write the figures as CSV to this file.
        #[arg(long)]
        csv: Option<PathBuf>,
    },
    /// Compress levels into packed files (independent zstd blocks with a block index and
    /// a checksum per block) that query, verify and build read directly.
    Pack {
        #[command(flatten)]
        db: DbArgs,
        /// The level to pack.
        #[arg(long, required_unless_present = "all", conflicts_with = "all")]
        level: Option<usize>,
        /// Pack every raw level of the database.
        #[arg(long)]
        all: bool,
        /// zstd compression level, 1..=22 (higher: smaller and slower to pack; probing
        /// speed hardly changes).
        #[arg(long, default_value_t = awari::pack::DEFAULT_ZSTD_LEVEL, value_parser = clap::value_parser!(i32).range(1..=22))]
        level_of_compression: i32,
        /// Values per block: smaller blocks make a probe that misses the cache faster
        /// (it decompresses one block), larger ones compress a little better.
        #[arg(long, default_value_t = awari::pack::DEFAULT_BLOCK, value_parser = clap::value_parser!(u32).range(1024..=1 << 24))]
        block_size: u32,
        /// What the blocks hold: 'exits' stores what the captures do not already say
        /// (about 1.27 times smaller; needs the levels below, and a probe reads them
        /// too), 'plain' the values themselves.
        #[arg(long, default_value = "exits")]
        model: awari::pack::Model,
        /// Remove each raw level once its pack is written and checked against it
        /// (default: keep both; the raw file is read when both are present).
        #[arg(long)]
        remove_raw: bool,
        /// Worker threads (default: one per core).
        #[arg(long)]
        threads: Option<usize>,
    },
    /// Restore raw levels from packed files, byte for byte.
    Unpack {
        #[command(flatten)]
        db: DbArgs,
        /// The level to unpack.
        #[arg(long, required_unless_present = "all", conflicts_with = "all")]
        level: Option<usize>,
        /// Unpack every packed level of the database.
        #[arg(long)]
        all: bool,
        /// Remove each packed file once its raw level is written (default: keep it).
        #[arg(long)]
        remove_packed: bool,
        /// Worker threads (default: one per core).
        #[arg(long)]
        threads: Option<usize>,
    },
    /// Write levels as Romein and Bal's scores.N files (payload only: one signed byte per
    /// position, in their order; awari rules, 6 pits per side).
    Export {
        /// File format; only 'romein-bal' for now.
        #[arg(long, default_value = "romein-bal")]
        format: ShareFormat,
        /// Folder to write scores.N into (created if missing).
        #[arg(long)]
        out: PathBuf,
        #[command(flatten)]
        db: DbArgs,
        /// Levels to export, e.g. 0..=20 or 17 (default: every level present).
        #[arg(long, value_name = "A..=B")]
        levels: Option<String>,
        /// Worker threads for decompressing packed levels (default: one per core).
        #[arg(long)]
        threads: Option<usize>,
    },
    /// Make native levels of a folder of Romein and Bal's scores.N files (any subset of
    /// levels; each file's size must be its level's size).
    Import {
        /// Folder holding scores.0, scores.1, ...
        from: PathBuf,
        /// File format; only 'romein-bal' for now.
        #[arg(long, default_value = "romein-bal")]
        format: ShareFormat,
        #[command(flatten)]
        db: DbArgs,
        /// Write packed levels instead of raw ones.
        #[arg(long)]
        pack: bool,
        /// zstd compression level with --pack, 1..=22.
        #[arg(long, default_value_t = awari::pack::DEFAULT_ZSTD_LEVEL, value_parser = clap::value_parser!(i32).range(1..=22))]
        level_of_compression: i32,
        /// Value model with --pack (see `pack --help`); 'exits' needs every level below
        /// each one imported, imported too or already in the database.
        #[arg(long, default_value = "exits")]
        model: awari::pack::Model,
        /// Replace levels already in the database (default: refuse).
        #[arg(long)]
        force: bool,
        /// Worker threads for packing (default: one per core).
        #[arg(long)]
        threads: Option<usize>,
    },
    /// List every level under the root folder (every rule set and board size): positions,
    /// raw or packed, bytes on disk, compression ratio and checksum state.
    Info {
        /// Root folder of the databases.
        #[arg(long, default_value = "db")]
        dir: PathBuf,
        /// Recompute every checksum (reads every level; decompresses packed ones).
        /// Default: check headers and block tables only.
        #[arg(long)]
        check: bool,
        /// Worker threads for --check (default: one per core).
        #[arg(long)]
        threads: Option<usize>,
    },
    /// Print the number of positions of every level and the total.
    Count {
        /// Pits per side (2..=8).
        #[arg(long, default_value_t = 6)]
        pits: usize,
        /// Highest level to count (default 4 seeds per pit).
        #[arg(long)]
        max_seeds: Option<usize>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        // A reader that stopped early (`awari play | head`): nothing left to say.
        Err(e)
            if e.chain().any(|c| {
                c.downcast_ref::<std::io::Error>()
                    .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            }) =>
        {
            ExitCode::SUCCESS
        }
        Err(e) => {
            let mut msg = format!("{e}");
            for cause in e.chain().skip(1).map(|c| c.to_string()) {
                // Library errors print their source themselves; say it once.
                if !msg.ends_with(&cause) {
                    msg += &format!(": {cause}");
                }
            }
            eprintln!("error: {msg}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Build {
            max_seeds,
            db,
            threads,
            force,
        } => cmd_build(max_seeds, db, threads, force),
        Command::Query {
            pits_counts,
            db,
            line,
            json,
            stdin,
        } => cmd_query(pits_counts, db, line, json, stdin),
        Command::Play {
            db,
            seeds_per_pit,
            position,
            first,
            strength,
            seed,
        } => cmd_play(PlayOptions {
            db,
            seeds_per_pit,
            position,
            first: match first {
                First::Me => awari::play::Side::Me,
                First::Db => awari::play::Side::Db,
            },
            strength,
            seed,
        }),
        Command::Count { pits, max_seeds } => cmd_count(pits, max_seeds),
        Command::Pack {
            db,
            level,
            all: _,
            level_of_compression,
            block_size,
            model,
            remove_raw,
            threads,
        } => cmd_pack(
            db,
            level,
            awari::pack::PackOptions {
                zstd_level: level_of_compression,
                block: block_size,
                model,
            },
            remove_raw,
            threads,
        ),
        Command::Unpack {
            db,
            level,
            all: _,
            remove_packed,
            threads,
        } => cmd_unpack(db, level, remove_packed, threads),
        Command::Export {
            format: ShareFormat::RomeinBal,
            out,
            db,
            levels,
            threads,
        } => cmd_export(out, db, levels, threads),
        Command::Import {
            from,
            format: ShareFormat::RomeinBal,
            db,
            pack,
            level_of_compression,
            model,
            force,
            threads,
        } => cmd_import(
            from,
            db,
            pack.then_some(awari::pack::PackOptions {
                zstd_level: level_of_compression,
                model,
                ..Default::default()
            }),
            force,
            threads,
        ),
        Command::Info {
            dir,
            check,
            threads,
        } => cmd_info(dir, check, threads),
        Command::Bench {
            max_seeds,
            threads,
            pits,
            rules,
            scratch,
            csv,
        } => cmd_bench(max_seeds, threads, pits, rules, scratch, csv),
        Command::Verify {
            db,
            levels,
            deep,
            threads,
        } => cmd_verify(db, levels, deep, threads),
        Command::Stats {
            db,
            levels,
            plot,
            json,
            threads,
        } => cmd_stats(db, levels, plot, json, threads),
        Command::Variants {
            dir,
            max_positions,
            reference_limit,
            rules,
            pits,
            threads,
        } => cmd_variants(dir, max_positions, reference_limit, rules, pits, threads),
    }
}

/// Who moves first in `awari play`.
#[derive(Clone, Copy, clap::ValueEnum)]
enum First {
    /// You.
    Me,
    /// The database.
    Db,
}

/// File formats of other programs.
#[derive(Clone, Copy, clap::ValueEnum)]
enum ShareFormat {
    /// Romein and Bal's scores.N files (awari, 6 pits per side).
    RomeinBal,
}
