//! `awari`: build, query and inspect Awari/Oware endgame databases. A thin layer over
//! the library: parse arguments, call it, print.

use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context};
use clap::{Args, Parser, Subcommand};

use awari::query::{draw, Line};
use awari::{build, group, Analysis, BuildOptions, Database, Index, LevelReport, Rules};

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
struct DbArgs {
    /// Root folder of the databases; each rule set and board size has a sub-folder
    /// (e.g. db/awari-6).
    #[arg(long, default_value = "db")]
    dir: PathBuf,
    /// Pits per side (2..=8).
    #[arg(long, default_value_t = 6)]
    pits: usize,
    /// Rule set: 'awari' (Romein-Bal, Computer Olympiad) or 'oware' (Abapa: grand slam
    /// captures nothing, a player who cannot feed takes the rest).
    #[arg(long, default_value = "awari")]
    rules: Rules,
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
        Command::Count { pits, max_seeds } => cmd_count(pits, max_seeds),
        Command::Pack {
            db,
            level,
            all: _,
            level_of_compression,
            block_size,
            remove_raw,
            threads,
        } => cmd_pack(
            db,
            level,
            (level_of_compression, block_size),
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
            force,
            threads,
        } => cmd_import(
            from,
            db,
            pack.then_some(level_of_compression),
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

fn cmd_build(
    max_seeds: usize,
    db: DbArgs,
    threads: Option<usize>,
    force: bool,
) -> anyhow::Result<()> {
    // Bad arguments are not a stopped build: refuse them before starting.
    Index::new(db.pits, max_seeds).map_err(|e| anyhow::anyhow!(e))?;
    let (pool, threads) = thread_pool(threads)?;
    let opts = BuildOptions {
        root: db.dir.clone(),
        rules: db.rules,
        pits: db.pits,
        max_seeds,
        force,
        progress: std::io::stderr().is_terminal(),
    };
    let dir = awari::db_dir(&db.dir, db.rules, db.pits);
    eprintln!(
        "building {} levels 0..={max_seeds}, {} pits per side, into {} with {threads} thread(s)",
        db.rules,
        db.pits,
        dir.display()
    );
    let started = std::time::Instant::now();
    println!(
        "{:>5} {:>15} {:>9} {:>7} {:>7} {:>12} {:>6} {:>6} {:>6}",
        "level",
        "positions",
        "seconds",
        "fwd s",
        "bwd s",
        "pos/s/thread",
        "won%",
        "drawn%",
        "lost%"
    );
    let print = |r: &LevelReport| {
        let s = &r.stats;
        let pct = |x: u64| 100.0 * x as f64 / s.positions.max(1) as f64;
        let (secs, fwd, bwd, rate) = if r.skipped {
            ("kept".to_string(), "-".into(), "-".into(), "-".to_string())
        } else {
            (
                format!("{:.2}", r.seconds),
                format!("{:.2}", r.phases.forward.as_secs_f64()),
                format!("{:.2}", r.phases.backward.as_secs_f64()),
                format!(
                    "{:.0}",
                    s.positions as f64 / r.seconds.max(1e-9) / threads as f64
                ),
            )
        };
        println!(
            "{:>5} {:>15} {:>9} {:>7} {:>7} {:>12} {:>7} {:>6.2} {:>6.2} {:>6.2}",
            r.seeds,
            group(s.positions),
            secs,
            fwd,
            bwd,
            rate,
            r.peak_rss
                .map_or("-".into(), |b| format!("{:.0}", b as f64 / 1e6)),
            pct(s.won),
            pct(s.drawn),
            pct(s.lost)
        );
    };
    let reports = pool.install(|| build(&opts, print, |w| eprintln!("warning: {w}")));
    let reports = reports.with_context(|| {
        format!(
            "build stopped; finished levels in {} stay valid",
            dir.display()
        )
    })?;
    let built: Vec<_> = reports.iter().filter(|r| !r.skipped).collect();
    let positions: u64 = built.iter().map(|r| r.stats.positions).sum();
    let secs = started.elapsed().as_secs_f64();
    println!(
        "total: {} levels built ({} kept), {} positions in {:.2} s, {:.0} positions/s/thread",
        built.len(),
        reports.len() - built.len(),
        group(positions),
        secs,
        positions as f64 / secs.max(1e-9) / threads as f64
    );
    Ok(())
}

fn parse_counts(words: &[String]) -> anyhow::Result<Vec<u32>> {
    words
        .iter()
        .flat_map(|w| w.split([',', ' ', '\t']).filter(|s| !s.is_empty()))
        .map(|w| {
            if w.starts_with('-') {
                bail!("'{w}' is negative: pit counts are 0 or more seeds");
            }
            w.parse::<u32>()
                .map_err(|_| anyhow::anyhow!("'{w}' is not a number of seeds"))
        })
        .collect()
}

fn cmd_query(
    words: Vec<String>,
    db: DbArgs,
    line: bool,
    json: bool,
    stdin: bool,
) -> anyhow::Result<()> {
    let database = Database::open(&db.dir, db.rules, db.pits)?;
    if stdin {
        let input = std::io::stdin().lock();
        let mut out = std::io::BufWriter::new(std::io::stdout().lock());
        for text in input.lines() {
            let text = text.context("reading standard input")?;
            if text.trim().is_empty() {
                continue;
            }
            let result = parse_counts(&[text])
                .and_then(|c| Ok(database.board(&c)?))
                .and_then(|b| {
                    let a = database.analyze(&b)?;
                    let l = if line {
                        Some(database.line(&b, 10_000)?)
                    } else {
                        None
                    };
                    Ok(json_of(&database, &a, l.as_ref()))
                });
            let obj = match result {
                Ok(v) => v,
                Err(e) => serde_json::json!({ "error": e.to_string() }),
            };
            writeln!(out, "{obj}")?;
        }
        out.flush()?;
        return Ok(());
    }
    let counts = parse_counts(&words)?;
    let board = database.board(&counts)?;
    let a = database.analyze(&board)?;
    let l = if line {
        Some(database.line(&board, 10_000)?)
    } else {
        None
    };
    let mut out = std::io::stdout().lock();
    if json {
        writeln!(out, "{}", json_of(&database, &a, l.as_ref()))?;
        return Ok(());
    }
    write!(out, "{}", draw(&board))?;
    writeln!(
        out,
        "{} rules, {} seeds: value {:+} for the side to move ({})",
        database.rules(),
        a.seeds,
        a.value,
        verdict(a.value)
    )?;
    if let Some(why) = a.game_over {
        writeln!(out, "game over: {why}")?;
    }
    if !a.moves.is_empty() {
        writeln!(out, "{:>5} {:>6} {:>9}", "move", "value", "captures")?;
        for m in &a.moves {
            writeln!(
                out,
                "{:>5} {:>+6} {:>9}{}{}",
                pit_name(m.pit),
                m.value,
                m.captured,
                if a.best.contains(&m.pit) {
                    "  best"
                } else {
                    ""
                },
                if m.ends_game { "  (ends the game)" } else { "" }
            )?;
        }
    }
    if let Some(l) = l {
        writeln!(out, "principal variation:")?;
        for (i, ply) in l.plies.iter().enumerate() {
            writeln!(
                out,
                "{:>4}. {} plays {}{}",
                i + 1,
                if ply.player == 0 {
                    "side to move"
                } else {
                    "opponent    "
                },
                pit_name(ply.pit),
                if ply.captured > 0 {
                    format!(", captures {}", ply.captured)
                } else {
                    String::new()
                }
            )?;
        }
        writeln!(out, "end: {}", l.end)?;
        writeln!(
            out,
            "seeds won from here: side to move {}, opponent {}",
            l.score[0], l.score[1]
        )?;
    }
    Ok(())
}

fn pit_name(pit: u8) -> String {
    format!("{} ({})", (b'a' + pit) as char, pit)
}

fn verdict(v: i8) -> String {
    match v {
        0 => "draw".into(),
        1.. => format!("wins by {v}"),
        _ => format!("loses by {}", -(v as i32)),
    }
}

fn json_of(db: &Database, a: &Analysis, line: Option<&Line>) -> serde_json::Value {
    let mut v = serde_json::json!({
        "rules": db.rules().name(),
        "pits": a.pits,
        "seeds": a.seeds,
        "value": a.value,
        "stored": a.stored,
        "moves": a.moves,
        "best": a.best,
        "game_over": a.game_over,
    });
    if let Some(l) = line {
        v["line"] = serde_json::to_value(l).unwrap();
    }
    v
}

fn thread_pool(threads: Option<usize>) -> anyhow::Result<(rayon::ThreadPool, usize)> {
    let threads =
        threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    if threads == 0 {
        bail!("--threads must be at least 1");
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()?;
    Ok((pool, threads))
}

fn cmd_verify(
    db: DbArgs,
    levels: Option<String>,
    deep: bool,
    threads: Option<usize>,
) -> anyhow::Result<()> {
    use awari::verify::{parse_levels, verify, LevelCheck, Mismatches, VerifyOptions};
    let levels = levels
        .map(|s| parse_levels(&s))
        .transpose()
        .map_err(|e| anyhow::anyhow!(e))?;
    let (pool, threads) = thread_pool(threads)?;
    let opts = VerifyOptions {
        root: db.dir.clone(),
        rules: db.rules,
        pits: db.pits,
        levels,
        deep,
        progress: std::io::stderr().is_terminal(),
    };
    let dir = awari::db_dir(&db.dir, db.rules, db.pits);
    eprintln!(
        "verifying {} levels in {} ({} pits per side){} with {threads} thread(s)",
        db.rules,
        dir.display(),
        db.pits,
        if deep { ", deep" } else { "" }
    );
    let started = std::time::Instant::now();
    print!(
        "{:>5} {:>15} {:>9} {:>10} {:>9}",
        "level", "positions", "checksum", "mismatches", "seconds"
    );
    if deep {
        print!(" {:>7} {:>10} {:>9}", "sweeps", "deep mism.", "deep s");
    }
    println!();
    let samples = |n: usize, m: &Mismatches, what: &str| {
        for x in &m.first {
            println!(
                "  level {n} index {}: {} stored {:+}, {what} {:+}",
                x.index, x.board, x.stored, x.computed
            );
        }
        if m.count > m.first.len() as u64 {
            println!("  ... {} more", m.count - m.first.len() as u64);
        }
    };
    let print = |r: &LevelCheck| {
        print!(
            "{:>5} {:>15} {:>9} {:>10} {:>9.2}",
            r.seeds,
            group(r.positions),
            if r.checksum_problem.is_some() {
                "BAD"
            } else {
                "ok"
            },
            r.mismatches.count,
            r.seconds
        );
        if let Some(d) = &r.deep {
            print!(
                " {:>7} {:>10} {:>9.2}",
                d.sweeps, d.mismatches.count, d.seconds
            );
        }
        println!();
        if let Some(p) = &r.checksum_problem {
            println!("  level {}: {p}", r.seeds);
        }
        samples(r.seeds, &r.mismatches, "its moves give");
        if let Some(d) = &r.deep {
            samples(r.seeds, &d.mismatches, "the independent solution gives");
        }
    };
    let reports = pool.install(|| verify(&opts, print))?;
    let positions: u64 = reports.iter().map(|r| r.positions).sum();
    let secs = started.elapsed().as_secs_f64();
    let bad: Vec<String> = reports
        .iter()
        .filter(|r| !r.ok())
        .map(|r| r.seeds.to_string())
        .collect();
    println!(
        "total: {} levels, {} positions in {secs:.2} s, {:.0} positions/s: {}",
        reports.len(),
        group(positions),
        positions as f64 / secs.max(1e-9),
        if bad.is_empty() {
            "all consistent"
        } else {
            "FAILED"
        }
    );
    if !bad.is_empty() {
        bail!(
            "verify failed in {}: level(s) {} (see the table above)",
            dir.display(),
            bad.join(", ")
        );
    }
    Ok(())
}

/// A count such as 1200000000, 1_200_000_000 or 1.2e9.
fn parse_amount(s: &str) -> Result<u64, String> {
    let t = s.replace(['_', ','], "");
    t.parse::<u64>()
        .ok()
        .or_else(|| {
            t.parse::<f64>()
                .ok()
                .filter(|x| x.is_finite() && *x >= 0.0 && *x < 1.8e19)
                .map(|x| x.round() as u64)
        })
        .ok_or_else(|| format!("'{s}' is not a number of positions (e.g. 1.2e9)"))
}

fn cmd_variants(
    dir: PathBuf,
    max_positions: u64,
    reference_limit: u64,
    rules: Option<Rules>,
    pits: Option<usize>,
    threads: Option<usize>,
) -> anyhow::Result<()> {
    use awari::variants::{
        markdown, markdown_row, plan, result_in_words, solve, VariantOptions,
        DEFAULT_MAX_POSITIONS, DEFAULT_REFERENCE_LIMIT,
    };
    if let Some(p) = pits {
        if !(2..=8).contains(&p) {
            bail!("--pits must be 2..=8, not {p}");
        }
    }
    let (pool, threads) = thread_pool(threads)?;
    let opts = VariantOptions {
        root: dir,
        max_positions,
        reference_limit: reference_limit as usize,
        pits: pits.map_or((2..=6).collect(), |p| vec![p]),
        rules: rules.map_or(vec![Rules::Awari, Rules::Oware], |r| vec![r]),
        progress: std::io::stderr().is_terminal(),
    };
    // The command that regenerates this table (the folder does not change it).
    let mut command = "cargo run --release -- variants".to_string();
    if max_positions != DEFAULT_MAX_POSITIONS {
        command += &format!(" --max-positions {max_positions}");
    }
    if reference_limit as usize != DEFAULT_REFERENCE_LIMIT {
        command += &format!(" --reference-limit {reference_limit}");
    }
    if let Some(r) = rules {
        command += &format!(" --rules {r}");
    }
    if let Some(p) = pits {
        command += &format!(" --pits {p}");
    }
    command += " > data/variants.md";
    eprintln!(
        "variants into {} with {threads} thread(s), budget {} positions",
        opts.root.display(),
        group(max_positions)
    );
    let mut out = std::io::stdout().lock();
    write!(out, "{}", markdown(&[], &command))?;
    out.flush()?;
    for (variant, within) in plan(&opts) {
        let row = pool.install(|| {
            solve(&opts, variant, within, &mut |w: &str| {
                eprintln!("warning: {w}")
            })
        })?;
        eprintln!(
            "{} {}x{}, {} per pit: {} ({:.1} s)",
            variant.rules,
            2,
            variant.pits,
            variant.per_pit,
            row.value.map_or("not computed".into(), |v| format!(
                "{v:+}, {}",
                result_in_words(v)
            )),
            row.seconds
        );
        write!(out, "{}", markdown_row(&row))?;
        out.flush()?;
    }
    Ok(())
}

fn cmd_bench(
    max_seeds: usize,
    threads: Vec<usize>,
    pits: usize,
    rules: Rules,
    scratch: Option<PathBuf>,
    csv: Option<PathBuf>,
) -> anyhow::Result<()> {
    use awari::bench::{bench, csv as to_csv, BenchOptions};
    if threads.is_empty() || threads.contains(&0) {
        bail!("--threads needs one or more counts of at least 1, e.g. 1,2");
    }
    Index::new(pits, max_seeds).map_err(|e| anyhow::anyhow!(e))?;
    let scratch = scratch.unwrap_or_else(|| {
        std::env::temp_dir().join(format!("awari-bench-{}", std::process::id()))
    });
    let opts = BenchOptions {
        scratch: scratch.clone(),
        rules,
        pits,
        max_seeds,
        threads: threads.clone(),
    };
    eprintln!(
        "benchmark: {rules} levels 0..={max_seeds}, {pits} pits per side, threads {threads:?}, scratch {}",
        scratch.display()
    );
    let runs = bench(&opts, |t, r| {
        eprintln!("  threads {t}: level {:>3} {:>8.2} s", r.seeds, r.seconds)
    })?;
    let _ = std::fs::remove_dir(&scratch);
    let mb = |b: Option<u64>| b.map_or("-".to_string(), |b| format!("{:.0}", b as f64 / 1e6));
    let mut head = format!("{:>5} {:>15}", "level", "positions");
    for r in &runs {
        let t = r.threads;
        head += &format!(
            " {:>9} {:>12} {:>7}",
            format!("s ({t}t)"),
            format!("pos/s/t ({t}t)"),
            format!("MB ({t}t)")
        );
    }
    let (first, last) = (&runs[0], &runs[runs.len() - 1]);
    if runs.len() > 1 {
        head += &format!(" {:>8}", format!("{}t/{}t", last.threads, first.threads));
    }
    println!("{head}");
    for n in 0..=max_seeds {
        let positions = first.levels[n].stats.positions;
        let mut line = format!("{:>5} {:>15}", n, group(positions));
        for r in &runs {
            let l = &r.levels[n];
            line += &format!(
                " {:>9.2} {:>12.0} {:>7}",
                l.seconds,
                positions as f64 / l.seconds.max(1e-9) / r.threads as f64,
                mb(l.peak_rss)
            );
        }
        if runs.len() > 1 {
            line += &format!(
                " {:>8.2}",
                first.levels[n].seconds / last.levels[n].seconds.max(1e-9)
            );
        }
        println!("{line}");
    }
    let positions: u64 = first.levels.iter().map(|l| l.stats.positions).sum();
    let mut line = format!("{:>5} {:>15}", "total", group(positions));
    for r in &runs {
        line += &format!(
            " {:>9.2} {:>12.0} {:>7}",
            r.seconds,
            positions as f64 / r.seconds.max(1e-9) / r.threads as f64,
            mb(r.peak_rss)
        );
    }
    if runs.len() > 1 {
        line += &format!(" {:>8.2}", first.seconds / last.seconds.max(1e-9));
    }
    println!("{line}");
    let same = runs.iter().all(|r| r.checksums == first.checksums);
    println!(
        "level files identical across thread counts: {}",
        if same { "yes" } else { "NO" }
    );
    if let Some(path) = csv {
        std::fs::write(&path, to_csv(&runs))
            .with_context(|| format!("writing {}", path.display()))?;
        eprintln!("wrote {}", path.display());
    }
    if !same {
        bail!("thread counts wrote different level files: the builder is not deterministic");
    }
    Ok(())
}

fn cmd_count(pits: usize, max_seeds: Option<usize>) -> anyhow::Result<()> {
    let max = max_seeds.unwrap_or(8 * pits);
    let index = Index::new(pits, max).map_err(|e| anyhow::anyhow!(e))?;
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "{:>5} {:>22} {:>22}",
        "level", "positions", "cumulative"
    )?;
    let mut total: u128 = 0;
    for n in 0..=max {
        let s = index.level_size(n);
        total += s as u128;
        writeln!(out, "{:>5} {:>22} {:>22}", n, group(s), group(total as u64))?;
    }
    writeln!(
        out,
        "total levels 0..={max}: {} positions",
        group(total as u64)
    )?;
    if pits == 6 && max >= 48 {
        // The Romein-Bal count: level 47 cannot occur (the first capture takes at least
        // two seeds) and the start position, not stored, is counted once.
        let rb: u64 = (0..=46).map(|n| index.level_size(n)).sum::<u64>() + index.level_size(48) + 1;
        writeln!(
            out,
            "Romein-Bal database (levels 0..=46 and 48, plus the start position): {} positions",
            group(rb)
        )?;
    }
    Ok(())
}

/// File formats of other programs.
#[derive(Clone, Copy, clap::ValueEnum)]
enum ShareFormat {
    /// Romein and Bal's scores.N files (awari, 6 pits per side).
    RomeinBal,
}

/// The levels `pack --all` or `unpack --all` work on, or the one level asked for.
fn levels_to_do(
    dir: &std::path::Path,
    one: Option<usize>,
    packed: bool,
) -> anyhow::Result<Vec<usize>> {
    if let Some(n) = one {
        return Ok(vec![n]);
    }
    if !dir.is_dir() {
        bail!("no database in {}", dir.display());
    }
    let mut v: Vec<usize> = awari::store::list_levels(dir)?
        .into_iter()
        .filter(|&(_, p)| p == packed)
        .map(|(n, _)| n)
        .collect();
    v.dedup();
    if v.is_empty() {
        bail!(
            "no {} levels in {}",
            if packed { "packed" } else { "raw" },
            dir.display()
        );
    }
    Ok(v)
}

fn print_pack_row(r: &awari::pack::PackReport) {
    println!(
        "{:>5} {:>15} {:>15} {:>15} {:>7.2} {:>9.2}",
        r.seeds,
        group(r.positions),
        group(r.raw_bytes),
        group(r.packed_bytes),
        r.raw_bytes as f64 / r.packed_bytes.max(1) as f64,
        r.seconds
    );
}

fn print_pack_total(rows: &[awari::pack::PackReport]) {
    let raw: u64 = rows.iter().map(|r| r.raw_bytes).sum();
    let packed: u64 = rows.iter().map(|r| r.packed_bytes).sum();
    println!(
        "total: {} levels, {} raw bytes, {} packed bytes, ratio {:.2}",
        rows.len(),
        group(raw),
        group(packed),
        raw as f64 / packed.max(1) as f64
    );
}

fn cmd_pack(
    db: DbArgs,
    level: Option<usize>,
    (zstd_level, block): (i32, u32),
    remove_raw: bool,
    threads: Option<usize>,
) -> anyhow::Result<()> {
    use awari::pack::{pack_level, PackOptions};
    let (pool, _) = thread_pool(threads)?;
    let dir = awari::db_dir(&db.dir, db.rules, db.pits);
    let levels = levels_to_do(&dir, level, false)?;
    let max = *levels.iter().max().unwrap();
    let index = Index::new(db.pits, max).map_err(|e| anyhow::anyhow!(e))?;
    let opts = PackOptions { zstd_level, block };
    println!(
        "{:>5} {:>15} {:>15} {:>15} {:>7} {:>9}",
        "level", "positions", "raw bytes", "packed bytes", "ratio", "seconds"
    );
    let mut rows = Vec::new();
    for n in levels {
        let want = awari::build::expect(db.rules, &index, n);
        let r = pool.install(|| pack_level(&dir, &want, &opts, remove_raw))?;
        print_pack_row(&r);
        rows.push(r);
    }
    print_pack_total(&rows);
    Ok(())
}

fn cmd_unpack(
    db: DbArgs,
    level: Option<usize>,
    remove_packed: bool,
    threads: Option<usize>,
) -> anyhow::Result<()> {
    let (pool, _) = thread_pool(threads)?;
    let dir = awari::db_dir(&db.dir, db.rules, db.pits);
    let levels = levels_to_do(&dir, level, true)?;
    let max = *levels.iter().max().unwrap();
    let index = Index::new(db.pits, max).map_err(|e| anyhow::anyhow!(e))?;
    println!(
        "{:>5} {:>15} {:>15} {:>15} {:>7} {:>9}",
        "level", "positions", "raw bytes", "packed bytes", "ratio", "seconds"
    );
    let mut rows = Vec::new();
    for n in levels {
        let want = awari::build::expect(db.rules, &index, n);
        let r = pool.install(|| awari::pack::unpack_level(&dir, &want, remove_packed))?;
        print_pack_row(&r);
        rows.push(r);
    }
    print_pack_total(&rows);
    Ok(())
}

fn cmd_export(
    out: PathBuf,
    db: DbArgs,
    levels: Option<String>,
    threads: Option<usize>,
) -> anyhow::Result<()> {
    let levels = levels
        .map(|s| awari::verify::parse_levels(&s))
        .transpose()
        .map_err(|e| anyhow::anyhow!(e))?;
    let (pool, _) = thread_pool(threads)?;
    let rows = pool.install(|| {
        awari::export::export(&db.dir, db.rules, db.pits, &out, levels, |t| {
            println!(
                "level {:>3}: {} ({} bytes)",
                t.seeds,
                t.path.display(),
                group(t.bytes)
            )
        })
    })?;
    let bytes: u64 = rows.iter().map(|t| t.bytes).sum();
    println!(
        "exported {} levels, {} bytes, to {}",
        rows.len(),
        group(bytes),
        out.display()
    );
    Ok(())
}

fn cmd_import(
    from: PathBuf,
    db: DbArgs,
    pack: Option<i32>,
    force: bool,
    threads: Option<usize>,
) -> anyhow::Result<()> {
    use awari::export::{import, ImportOptions};
    let (pool, _) = thread_pool(threads)?;
    let opts = ImportOptions {
        pack: pack.map(|zstd_level| awari::pack::PackOptions {
            zstd_level,
            ..Default::default()
        }),
        force,
    };
    let rows = pool.install(|| {
        import(&db.dir, db.rules, db.pits, &from, &opts, |t| {
            println!(
                "level {:>3}: {} positions -> {} ({} bytes)",
                t.seeds,
                group(t.positions),
                t.path.display(),
                group(t.bytes)
            )
        })
    })?;
    println!(
        "imported {} levels into {}",
        rows.len(),
        awari::db_dir(&db.dir, db.rules, db.pits).display()
    );
    Ok(())
}

fn cmd_info(dir: PathBuf, check: bool, threads: Option<usize>) -> anyhow::Result<()> {
    let (pool, _) = thread_pool(threads)?;
    let levels = pool.install(|| awari::store::survey(&dir, check))?;
    if levels.is_empty() {
        bail!("no levels under {}", dir.display());
    }
    println!(
        "{:>6} {:>3} {:>5} {:>15} {:>6} {:>15} {:>7}  checksum",
        "rules", "P", "level", "positions", "kind", "bytes", "ratio"
    );
    let mut bad = 0;
    for l in &levels {
        let state = match (&l.problem, l.checked) {
            (None, true) => "ok".to_string(),
            (None, false) => "header ok (--check to recompute)".to_string(),
            (Some(p), _) => {
                bad += 1;
                format!("BAD: {p}")
            }
        };
        println!(
            "{:>6} {:>3} {:>5} {:>15} {:>6} {:>15} {:>7.2}  {state}",
            l.rules.name(),
            l.pits,
            l.seeds,
            group(l.positions),
            if l.packed { "packed" } else { "raw" },
            group(l.bytes),
            l.raw_bytes as f64 / l.bytes.max(1) as f64,
        );
    }
    let raw: u64 = levels.iter().map(|l| l.raw_bytes).sum();
    let bytes: u64 = levels.iter().map(|l| l.bytes).sum();
    println!(
        "total: {} level files, {} bytes on disk ({} as raw levels, ratio {:.2}){}",
        levels.len(),
        group(bytes),
        group(raw),
        raw as f64 / bytes.max(1) as f64,
        if bad > 0 {
            format!(", {bad} damaged")
        } else {
            String::new()
        }
    );
    if bad > 0 {
        bail!(
            "{bad} level file(s) under {} are damaged (see the table above)",
            dir.display()
        );
    }
    Ok(())
}
