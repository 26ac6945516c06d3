//! `awari build`: the build table printed as levels finish.

use std::io::IsTerminal;

use anyhow::Context;
use clap::Args;

use awari::expert::figures::group;
use awari::expert::pack::{pack_files, Model, PackOptions, DEFAULT_BLOCK, DEFAULT_ZSTD_LEVEL};
use awari::expert::{level_path, Index, MAX_SEEDS};
use awari::{build, BuildOptions, LevelReport, Lower, StateKind};

use super::{interrupt, make_dir, parse_every, whole, DbArgs, Every, Threads};

/// Build levels 0..=N (skips levels already complete and valid, so an interrupted build
/// resumes).
#[derive(Args, Debug)]
pub struct BuildArgs {
    /// Highest level (seeds on the board) to build, 0..=127.
    #[arg(long, value_parser = whole::<usize>(0, MAX_SEEDS as u64))]
    max_seeds: usize,
    #[command(flatten)]
    db: DbArgs,
    #[command(flatten)]
    threads: Threads,
    /// Rebuild levels even if they are complete.
    #[arg(long)]
    force: bool,
    /// Start even when the machine lacks the memory or disk the levels need (by default
    /// the build refuses at its start, and before each level, with what it needs).
    #[arg(long)]
    no_check: bool,
    /// Then make the distance tables of the levels (`level-NNN.awd`, as `awari dtc`
    /// does): for each won or lost position, the plies to the next capture with both
    /// sides keeping the value, which engines play a won position out by.
    #[arg(long)]
    dtc: bool,
    /// Build over the ranks of an MPI job (`mpirun -np R awari build --distributed ...`;
    /// chosen by itself when more than one rank runs): each rank solves and keeps one
    /// slice of every level in its folder (`--dir` may hold `{rank}`) with `--threads`
    /// threads (default: the node's cores divided by its ranks); `awari gather` then
    /// assembles the level files. `--force` and `--state` work over ranks; `--pack`,
    /// `--lower random`, `--spill-from` and `--dtc` are refused (slices are raw, and read
    /// as streams; tables are made from whole levels). Needs the `mpi` feature.
    #[arg(long)]
    distributed: bool,
    /// Levels whose solver state, read at random, takes at least this many MiB write it
    /// to a temporary file during the forward pass and read it back once the lower levels
    /// are let go, so that the two never take memory at once (0..=1000000000; 0: every
    /// level; default: 256). Costs a write and a read of the state.
    #[arg(long, value_name = "MIB", value_parser = whole::<u64>(0, 1_000_000_000))]
    spill_from: Option<u64>,
    /// The solver state. The files are the same.
    #[arg(long, value_name = "KIND", value_enum, default_value_t = StateArg::Auto)]
    state: StateArg,
    /// How a level reads the levels below. The files are the same.
    #[arg(long, value_name = "HOW", value_enum, default_value_t = LowerArg::Auto)]
    lower: LowerArg,
    /// Save a level's solver state beside it after its forward pass and then between
    /// thresholds, at most this often (`30s`, `15m`, `1h`; `off`: never), so that a
    /// stopped build, run again, resumes inside the level where it stopped. A checkpoint
    /// takes the state's size on disk (up to 2.1 bytes a position) and is removed once the
    /// level is written.
    #[arg(long, value_name = "DURATION", default_value = "15m", value_parser = parse_every)]
    checkpoint_every: Every,
    /// Write each level packed (`level-NNN.awp`, zstd blocks of the values, about half the
    /// raw size; checked block by block once written) instead of raw: a build of many
    /// levels then needs about half the disk. Lower levels are read from their packs.
    #[arg(long)]
    pack: bool,
}

/// `--state`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum StateArg {
    /// 2.125 bytes a position: a count of each position's moves not yet known to lose.
    Fast,
    /// 1.125 bytes a position: a loss confirmed by generating the position's moves again;
    /// levels up to 56 seeds.
    Compact,
    /// 0.25 bytes a position (two bits), the best exits and the values so far in two files
    /// beside the level (2 bytes a position), read in index order once per threshold; with
    /// --lower stream about 3 bits a position in all, and about 3 bytes a position more
    /// on disk while its forward pass runs. About 1.5 times compact's time; also over MPI
    /// ranks.
    Lean,
    /// Fast where it fits the memory available, else compact, else lean (over MPI ranks:
    /// the leanest any rank's slice needs in its share of its node, by a vote).
    Auto,
}

impl StateArg {
    /// The state asked for; `None` chooses per level.
    fn kind(self) -> Option<StateKind> {
        match self {
            StateArg::Fast => Some(StateKind::Fast),
            StateArg::Compact => Some(StateKind::Compact),
            StateArg::Lean => Some(StateKind::Lean),
            StateArg::Auto => None,
        }
    }
}

/// `--lower`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum LowerArg {
    /// The levels a capture reaches held in memory, each child read where it lies.
    Random,
    /// Each lower level read once in order, its positions handing their values to their
    /// parents: only the level's own state in memory.
    Stream,
    /// Random with the fast state where the two fit the memory, a stream otherwise (over
    /// MPI ranks: always a stream).
    Auto,
}

impl LowerArg {
    /// The way asked for; `None` chooses per level.
    fn lower(self) -> Option<Lower> {
        match self {
            LowerArg::Random => Some(Lower::Random),
            LowerArg::Stream => Some(Lower::Stream),
            LowerArg::Auto => None,
        }
    }
}

/// The report's last column: the state and the reading of the lower levels, and whether
/// the level resumed from a checkpoint or wrote any.
fn way_said(r: &LevelReport) -> String {
    let Some(way) = r.way else {
        return "-".into();
    };
    let mut said = match r.resumed {
        Some(t) => format!("{}, resumed at {t}", way.state.name()),
        None => way.to_string(),
    };
    if r.checkpoints > 0 {
        said += &format!(", {} checkpoint(s)", r.checkpoints);
    }
    said
}

/// The ranks of the MPI job this process was started in by `mpirun`, if it says (Open
/// MPI and MPICH set these).
fn mpi_ranks() -> Option<usize> {
    ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE"]
        .iter()
        .find_map(|v| std::env::var(v).ok()?.parse().ok())
}

/// The library's options for what `args` asks.
fn options(args: &BuildArgs) -> BuildOptions {
    let spill_from = args
        .spill_from
        .map_or(awari::expert::SPILL_FROM, |mib| mib.saturating_mul(1 << 20));
    BuildOptions::new(
        args.db.dir(),
        args.db.rules(),
        args.db.pits(),
        args.max_seeds,
    )
    .force(args.force)
    .check(!args.no_check)
    .progress(std::io::stderr().is_terminal())
    .spill_from(spill_from)
    .state(args.state.kind())
    .lower(args.lower.lower())
    .pack(args.pack)
    .checkpoint_every(args.checkpoint_every.0)
}

/// The flag of `args` that a build over ranks does not do yet, as the user wrote it:
/// refused before any work rather than dropped. (`--spill-from` says when a level that
/// reads its lower levels at random spills; the ranks read streams.)
fn refused_over_ranks(args: &BuildArgs) -> Option<&'static str> {
    if args.spill_from.is_some() {
        return Some("--spill-from");
    }
    if args.dtc {
        return Some("--dtc");
    }
    options(args).unsupported_over_ranks()
}

pub fn run(args: BuildArgs) -> anyhow::Result<()> {
    // Not another database nested in the one --dir names, nor a folder over a file.
    args.db.writable()?;
    if args.distributed || mpi_ranks().is_some_and(|r| r > 1) {
        if let Some(flag) = refused_over_ranks(&args) {
            return Err(super::Usage(BuildOptions::refusal_over_ranks(flag)).into());
        }
        #[cfg(feature = "mpi")]
        return distributed(args);
        #[cfg(not(feature = "mpi"))]
        anyhow::bail!(
            "a build over MPI ranks needs the mpi feature: cargo build --release --features mpi"
        );
    }
    let opts = options(&args);
    let pack = opts.pack;
    let BuildArgs {
        max_seeds,
        db,
        threads,
        no_check,
        dtc,
        force,
        ..
    } = args;
    // Bad arguments are not a stopped build: refuse them before starting.
    Index::new(db.pits(), max_seeds)?;
    let threads_asked = threads;
    let (pool, threads) = threads.pool()?;
    let dir = db.db_dir();
    // The folders this call makes, taken back if the build is refused before it starts.
    let made: Vec<std::path::PathBuf> = dir
        .ancestors()
        .take_while(|d| !d.as_os_str().is_empty() && !d.exists())
        .map(|d| d.to_path_buf())
        .collect();
    make_dir(&dir)?;
    // A build that cannot finish is not started (build checks again, level by level).
    if !no_check {
        let fits = awari::plan::check_build_fits(
            &dir,
            &Index::new(db.pits(), max_seeds)?,
            max_seeds,
            opts.state,
            opts.pack,
        );
        if let Err(e) = fits {
            for d in &made {
                // Only while empty: nothing but the folders made here is removed.
                let _ = std::fs::remove_dir(d);
            }
            return Err(e.into());
        }
    }
    warn!(
        "building {} levels 0..={max_seeds}, {} pits per side, into {} with {threads} thread(s)",
        db.rules(),
        db.pits(),
        dir.display()
    );
    interrupt::install();
    let started = std::time::Instant::now();
    // The table's header, before its first row: a build refused (another holds the
    // folder) prints its error alone.
    let header = || {
        say!(
            "{:>5} {:>15} {:>9} {:>7} {:>7} {:>12} {:>7} {:>6} {:>6} {:>6}  state/lower",
            "level",
            "positions",
            "seconds",
            "fwd s",
            "bwd s",
            "pos/s/thread",
            "peak MB",
            "won%",
            "drawn%",
            "lost%"
        )
    };
    let headed = std::sync::atomic::AtomicBool::new(false);
    let print = |r: &LevelReport| {
        if !headed.swap(true, std::sync::atomic::Ordering::Relaxed) {
            header();
        }
        interrupt::finished(r.seeds);
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
        say!(
            "{:>5} {:>15} {:>9} {:>7} {:>7} {:>12} {:>7} {:>6.2} {:>6.2} {:>6.2}  {}",
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
            pct(s.lost),
            way_said(r)
        );
    };
    let reports = pool.install(|| build(&opts, print, |w| warn!("warning: {w}")));
    let reports = match reports {
        // Another build's folder: this one never started.
        Err(e @ awari::Error::Busy { .. }) => return Err(e.into()),
        r => r.with_context(|| interrupt::stopped(&dir))?,
    };
    let built: Vec<_> = reports.iter().filter(|r| !r.skipped).collect();
    let positions: u64 = built.iter().map(|r| r.stats.positions).sum();
    let secs = started.elapsed().as_secs_f64();
    say!(
        "total: {} levels built ({} kept), {} positions in {:.2} s, {:.0} positions/s/thread",
        built.len(),
        reports.len() - built.len(),
        group(positions),
        secs,
        positions as f64 / secs.max(1e-9) / threads as f64
    );
    if dtc {
        let opts = awari::DtcOptions {
            root: db.dir().to_path_buf(),
            rules: db.rules(),
            pits: db.pits(),
            levels: Some(0..=max_seeds),
            force,
            progress: std::io::stderr().is_terminal(),
        };
        warn!("distance tables of levels 0..={max_seeds}");
        pool.install(|| super::dtc::make_and_print(&opts, threads))?;
        if pack {
            // Packed as the levels are: each table beside a packed level (a level kept raw
            // from before keeps its raw table).
            warn!("packing the distance tables");
            let table = PackOptions {
                zstd_level: DEFAULT_ZSTD_LEVEL,
                block: DEFAULT_BLOCK,
                model: Model::Plain,
            };
            let dir = db.db_dir();
            super::pack::each_level(&db, None, false, false, threads_asked, |levels, n| {
                match level_path(&dir, n).exists() || n > max_seeds {
                    true => Ok(Vec::new()),
                    false => pack_files(levels, n, &table, true),
                }
            })?;
        }
    }
    Ok(())
}

/// The ranks of this MPI job on this node, if `mpirun` says (Open MPI, MPICH).
#[cfg(feature = "mpi")]
fn ranks_here() -> Option<usize> {
    ["OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"]
        .iter()
        .find_map(|v| std::env::var(v).ok()?.parse().ok())
}

/// `awari build` over the ranks of an MPI job: every rank builds its slices; rank 0
/// prints the table. A rank that fails says so in one line and ends the whole job, so
/// that no rank waits forever for it.
#[cfg(feature = "mpi")]
fn distributed(args: BuildArgs) -> anyhow::Result<()> {
    use awari::expert::ranks::{build_slices, Comm, MpiComm};
    let Some((universe, _)) = mpi::initialize_with_threading(mpi::Threading::Funneled) else {
        anyhow::bail!("MPI could not be started");
    };
    let comm = MpiComm::world(&universe);
    let (rank, ranks) = (comm.rank(), comm.size());
    on_termination(format!(
        "error: rank {rank} of {ranks} stopped: the job was ended (another rank died or mpirun was stopped); finished slices stay valid: rerun the same command to resume\n"
    ));
    let root = args
        .db
        .dir()
        .to_string_lossy()
        .replace("{rank}", &rank.to_string());
    let mut opts = options(&args)
        .ranks_here(ranks_here().unwrap_or(1).max(1))
        .command(std::env::args().collect::<Vec<_>>().join(" "));
    opts.root = root.into();
    let dir = awari::expert::db_dir(&opts.root, args.db.rules(), args.db.pits());
    // The threads of a rank: by default the node's cores shared by its ranks. They form
    // the global pool, so that this thread, the only one that calls MPI (funneled),
    // stays outside it.
    let here = opts.ranks_here;
    let threads = match args.threads.threads {
        Some(t) => awari::expert::check_threads(t)?,
        None => (super::default_threads() / here).max(1),
    };
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build_global()
        .context("cannot start the rank's threads")?;
    if rank == 0 {
        warn!(
            "building {} levels 0..={} over {ranks} rank(s) ({here} on this node), {} pits per side, into {}, {threads} thread(s) per rank",
            args.db.rules(),
            args.max_seeds,
            args.db.pits(),
            dir.display()
        );
        say!(
            "{:>5} {:>15} {:>15} {:>9} {:>14} {:>10}  state",
            "level",
            "positions",
            "slice",
            "seconds",
            "bytes sent",
            "peak RSS"
        );
    }
    let print = |r: &LevelReport| {
        if rank == 0 {
            say!(
                "{:>5} {:>15} {:>15} {:>9} {:>14} {:>10}  {}",
                r.seeds,
                group(r.positions),
                group(r.stats.positions),
                if r.skipped {
                    "kept".to_string()
                } else {
                    format!("{:.2}", r.seconds)
                },
                group(r.bytes_sent),
                r.peak_rss
                    .map_or("?".to_string(), awari::expert::figures::bytes),
                slice_said(r)
            );
        }
    };
    let started = std::time::Instant::now();
    let result = build_slices(&comm, &opts, print, |line| {
        say(&format!("warning: rank {rank} of {ranks}: {line}"))
    });
    match result {
        Ok(reports) => {
            let sent: u64 = reports.iter().map(|r| r.bytes_sent).sum();
            if rank == 0 {
                say!(
                    "total: {} levels over {ranks} rank(s) in {:.2} s; rank 0 sent {} bytes; gather with `awari gather --from <the ranks' folders>`",
                    reports.len(),
                    started.elapsed().as_secs_f64(),
                    group(sent)
                );
            }
            Ok(())
        }
        Err(e) => {
            say(&format!("error: rank {rank} of {ranks}: {}", e.one_line()));
            // The first abort ends the job: when ranks stop together (a refusal all of them
            // agreed on), each waits a moment so that the others' lines, which may be the
            // ones that say why, are printed too (one was lost in a CI run).
            std::thread::sleep(std::time::Duration::from_secs(1));
            comm.abort(1)
        }
    }
}

/// The last column of a rank's report: the state, and whether the level resumed from the
/// ranks' checkpoints or wrote any.
#[cfg(feature = "mpi")]
fn slice_said(r: &LevelReport) -> String {
    let mut said = r.way.map_or("-", |w| w.state.name()).to_string();
    if let Some(t) = r.resumed {
        said += &format!(", resumed at {t}");
    }
    if r.checkpoints > 0 {
        said += &format!(", {} checkpoint(s)", r.checkpoints);
    }
    said
}

/// Prints a rank's line to stderr in one write: `warn!` writes each piece of its
/// format separately, and the ranks share mpirun's stream, so their lines interleaved
/// mid-word (a CI run read "error: rank error: rank 1 of 2: ...").
#[cfg(feature = "mpi")]
fn say(line: &str) {
    use std::io::Write;
    let _ = std::io::stderr().write_all(format!("{line}\n").as_bytes());
}

/// What a rank says when `mpirun` ends the job under it (it sends SIGTERM to the ranks
/// left when one dies): one line, instead of nothing.
#[cfg(feature = "mpi")]
fn on_termination(message: String) {
    static MESSAGE: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    extern "C" fn said(_: libc::c_int) {
        if let Some(m) = MESSAGE.get() {
            // SAFETY: write(2) and _exit(2) are async-signal-safe; the message was set
            // before the handler was installed and is never changed.
            unsafe {
                libc::write(2, m.as_ptr().cast(), m.len());
                libc::_exit(1);
            }
        }
    }
    let _ = MESSAGE.set(message);
    // SAFETY: installs a handler that only calls async-signal-safe functions.
    unsafe {
        libc::signal(libc::SIGTERM, said as *const () as libc::sighandler_t);
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        build: BuildArgs,
    }

    fn args(flags: &[&str]) -> BuildArgs {
        let argv = ["awari", "--max-seeds", "20"].iter().chain(flags);
        Cli::try_parse_from(argv).unwrap().build
    }

    #[test]
    fn flags_the_ranks_do_not_do_are_named() {
        for (flags, refused) in [
            (&[][..], None),
            (&["--force", "--no-check", "--threads", "2"][..], None),
            (&["--state", "compact", "--lower", "stream"][..], None),
            (&["--lower", "auto", "--state", "fast"][..], None),
            (&["--pack"][..], Some("--pack")),
            (&["--lower", "random"][..], Some("--lower random")),
            (&["--spill-from", "256"][..], Some("--spill-from")),
            (&["--spill-from", "0"][..], Some("--spill-from")),
        ] {
            assert_eq!(refused_over_ranks(&args(flags)), refused, "{flags:?}");
        }
    }

    #[test]
    fn checkpoint_intervals_parse() {
        let secs = |s: u64| Ok(Every(Some(std::time::Duration::from_secs(s))));
        assert_eq!(parse_every("30s"), secs(30));
        assert_eq!(parse_every("15m"), secs(900));
        assert_eq!(parse_every("1h"), secs(3600));
        assert_eq!(parse_every("0s"), secs(0));
        assert_eq!(parse_every("168h"), secs(super::super::EVERY_MAX));
        assert_eq!(parse_every("off"), Ok(Every(None)));
        for bad in [
            "", "15", "m", "-1m", "1.5h", "1d", "15 m", "nan", "inf", "169h",
        ] {
            assert!(parse_every(bad).is_err(), "{bad}");
        }
        assert!(parse_every("99999999999999999999h").is_err());
        let o = options(&args(&["--checkpoint-every", "off"]));
        assert_eq!(o.checkpoint_every, None);
        let o = options(&args(&["--checkpoint-every", "2m"]));
        assert_eq!(
            o.checkpoint_every,
            Some(std::time::Duration::from_secs(120))
        );
    }

    #[test]
    fn flags_become_the_library_options() {
        let o = options(&args(&[]));
        assert_eq!((o.max_seeds, o.pits, o.rules), (20, 6, awari::Rules::Awari));
        assert!(!o.force && o.check && !o.pack);
        assert_eq!((o.state, o.lower), (None, None));
        assert_eq!(o.spill_from, 256 << 20);
        let o = options(&args(&[
            "--force",
            "--no-check",
            "--state",
            "compact",
            "--lower",
            "random",
            "--spill-from",
            "3",
            "--pack",
        ]));
        assert!(o.force && !o.check && o.pack);
        assert_eq!(
            (o.state, o.lower),
            (Some(StateKind::Compact), Some(Lower::Random))
        );
        assert_eq!(o.spill_from, 3 << 20);
        assert_eq!(o.checkpoint_every, Some(awari::expert::CHECKPOINT_EVERY));
        assert!(Cli::try_parse_from(["awari", "--max-seeds", "2", "--state", "small"]).is_err());
    }
}
