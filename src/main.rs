//! `awari`: build, query and inspect Awari/Oware endgame databases. A thin layer over
//! the library: clap parses the arguments into each subcommand's `Args` (in `cmd/`), its
//! `run` calls the library and prints, and `main` turns an error into one line.

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

mod cmd;

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

#[derive(Subcommand)]
enum Command {
    /// Build levels 0..=N (skips levels already complete and valid, so an interrupted
    /// build resumes).
    Build(cmd::build::BuildArgs),
    /// Value of a position, of each legal move, and the best moves.
    Query(cmd::query::QueryArgs),
    /// Play a game against the database in the terminal: type a pit (a-f or 1-6 from your
    /// left), 'hint' for the value of each of your moves, 'undo' to take back your last
    /// move and the reply, 'quit' to stop. Without a terminal it reads one command per line.
    Play(cmd::play::PlayArgs),
    /// Check a built database: headers, checksums, and every stored value against the
    /// values of its moves; with --deep, also solve every level again by an independent
    /// method and compare byte for byte.
    Verify(cmd::verify::VerifyArgs),
    /// Add distance-to-conversion tables to built levels: for each won or lost position,
    /// the plies to the next capture when both sides keep the value, which engines play a
    /// won position out by.
    Dtc(cmd::dtc::DtcArgs),
    /// Per level: positions, share won / drawn / lost by the side to move, mean, largest
    /// and smallest value, and the distribution of values; optionally an SVG chart.
    Stats(cmd::stats::StatsArgs),
    /// The value of the start position of small variants (2 to 6 pits per side, k seeds
    /// per pit, both rule sets), building what they need; prints a markdown table (the
    /// one in data/variants.md).
    Variants(cmd::variants::VariantsArgs),
    /// Benchmark the builder: build levels 0..=N from scratch with each thread count,
    /// and print per level the seconds, positions per second per thread, peak memory
    /// and the speed-up of the last thread count over the first.
    Bench(cmd::bench::BenchArgs),
    /// Compress levels into packed files (independent zstd blocks with a block index and
    /// a checksum per block) that query, verify and build read directly.
    Pack(cmd::pack::PackArgs),
    /// Restore raw levels from packed files, byte for byte.
    Unpack(cmd::unpack::UnpackArgs),
    /// Write levels as Romein and Bal's scores.N files (payload only: one signed byte per
    /// position, in their order; awari rules, 6 pits per side).
    Export(cmd::export::ExportArgs),
    /// Make native levels of a folder of Romein and Bal's scores.N files (any subset of
    /// levels; each file's size must be its level's size).
    Import(cmd::import::ImportArgs),
    /// List every level under the root folder (every rule set and board size): positions,
    /// raw or packed, bytes on disk, compression ratio and checksum state.
    Info(cmd::info::InfoArgs),
    /// Print the number of positions of every level and the total.
    Count(cmd::count::CountArgs),
    /// What levels 0..=N need per node (solver memory, disk raw and packed) and how long
    /// they should take, from rates measured on this machine; which levels do not fit,
    /// and what would.
    Plan(cmd::plan::PlanArgs),
    /// Assemble the level files of a database from the slices that the ranks of a
    /// distributed build kept (byte for byte what a single process builds).
    Gather(cmd::gather::GatherArgs),
    /// Serve every database under --dir over HTTP: a JSON API (GET
    /// /api/v1/{rules}/{pits}?position=..., /api/v1/databases, /health) and a web page
    /// at / to explore it: move values on the board, play, undo, edit, permalinks.
    #[cfg(feature = "serve")]
    Serve(cmd::serve::ServeArgs),
    /// Every option and argument of every subcommand, one JSON object a line: what the
    /// test of edge values (tests/edges.rs) tries, read from these definitions so that a
    /// new option is tried too. Hidden: not for users.
    #[command(name = "arguments", hide = true)]
    Arguments,
}

fn main() -> ExitCode {
    let cli = match parse() {
        Ok(cli) => cli,
        Err(e) => return refused(e),
    };
    // Standard output's failures other than a closed pipe, said once the work is done.
    let run = run(cli).and_then(|()| match cmd::out::failure() {
        Some(e) => Err(anyhow::Error::new(e).context("could not write standard output")),
        None => Ok(()),
    });
    match run {
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
            // Every error prints its own part only: the chain says each cause once.
            let msg: Vec<String> = e.chain().map(|c| c.to_string()).collect();
            // One write, so that ranks sharing mpirun's stream do not interleave mid-line.
            let line = format!("error: {}\n", msg.join(": "));
            let _ = std::io::Write::write_all(&mut std::io::stderr(), line.as_bytes());
            if e.downcast_ref::<cmd::Usage>().is_some() {
                ExitCode::from(2)
            } else {
                ExitCode::FAILURE
            }
        }
    }
}

/// The command line, each option's value given to its own parser even where it starts
/// with a minus (`--max-seeds -1` is refused as a value out of range, not taken for a flag).
fn parse() -> Result<Cli, clap::Error> {
    let negative = |a: clap::Arg| {
        let takes = a.get_action().takes_values();
        a.allow_negative_numbers(takes)
    };
    let mut command = Cli::command();
    let names: Vec<String> = command
        .get_subcommands()
        .map(|s| s.get_name().to_string())
        .collect();
    for name in names {
        command = command.mut_subcommand(name, |s| s.mut_args(negative));
    }
    let matches = command.try_get_matches()?;
    Cli::from_arg_matches(&matches)
}

/// Says a refusal of the command line in one line (`--help` and `--version` as clap
/// prints them): exit 2.
fn refused(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind::{
        DisplayHelp, DisplayHelpOnMissingArgumentOrSubcommand, DisplayVersion,
    };
    match e.kind() {
        DisplayHelp | DisplayVersion | DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = e.print();
            ExitCode::from(e.exit_code() as u8)
        }
        _ => {
            let line = format!("error: {}\n", cmd::one_line(&e));
            let _ = std::io::Write::write_all(&mut std::io::stderr(), line.as_bytes());
            ExitCode::from(2)
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Build(args) => cmd::build::run(args),
        Command::Query(args) => cmd::query::run(args),
        Command::Play(args) => cmd::play::run(args),
        Command::Verify(args) => cmd::verify::run(args),
        Command::Dtc(args) => cmd::dtc::run(args),
        Command::Stats(args) => cmd::stats::run(args),
        Command::Variants(args) => cmd::variants::run(args),
        Command::Bench(args) => cmd::bench::run(args),
        Command::Pack(args) => cmd::pack::run(args),
        Command::Unpack(args) => cmd::unpack::run(args),
        Command::Export(args) => cmd::export::run(args),
        Command::Import(args) => cmd::import::run(args),
        Command::Info(args) => cmd::info::run(args),
        Command::Count(args) => cmd::count::run(args),
        Command::Plan(args) => cmd::plan::run(args),
        Command::Gather(args) => cmd::gather::run(args),
        #[cfg(feature = "serve")]
        Command::Serve(args) => cmd::serve::run(args),
        Command::Arguments => {
            arguments();
            Ok(())
        }
    }
}

/// Prints what `Command::Arguments` says: per argument its subcommand, its name (`--x`,
/// or `<X>` for a positional), whether it is required, what kind of value it takes
/// (`flag`, `choice`, `number`, `path` or `text`, from its value parser) and its help.
fn arguments() {
    use std::any::TypeId;
    let cli = Cli::command();
    let numbers = [
        TypeId::of::<usize>(),
        TypeId::of::<u64>(),
        TypeId::of::<u32>(),
        TypeId::of::<u8>(),
        TypeId::of::<i32>(),
        TypeId::of::<f64>(),
    ];
    for sub in cli.get_subcommands().filter(|s| !s.is_hide_set()) {
        for arg in sub.get_arguments().filter(|a| !a.is_hide_set()) {
            let name = match arg.get_long() {
                Some(long) => format!("--{long}"),
                None if arg.is_positional() => format!("<{}>", arg.get_id()),
                // --help and --version: clap's own.
                None => continue,
            };
            let parser = arg.get_value_parser();
            let kind = if !arg.get_action().takes_values() {
                "flag"
            } else if !arg.get_possible_values().is_empty() {
                "choice"
            } else if numbers.iter().any(|t| parser.type_id() == *t) {
                "number"
            } else if parser.type_id() == TypeId::of::<std::path::PathBuf>() {
                "path"
            } else {
                "text"
            };
            let help = arg
                .get_long_help()
                .or(arg.get_help())
                .map(|h| h.to_string())
                .unwrap_or_default();
            let line = serde_json::json!({
                "command": sub.get_name(),
                "arg": name,
                "required": arg.is_required_set(),
                "kind": kind,
                "help": help,
            });
            cmd::out::line(format_args!("{line}"));
        }
    }
}
