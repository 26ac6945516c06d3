//! `awari dtc`: the distance tables of a built database's levels, a row per level.

use std::io::IsTerminal;

use clap::Args;

use awari::expert::figures::{bytes, group, peak_rss};
use awari::{make_tables, DtcOptions, DtcReport};

use super::{levels_range, DbArgs, Threads};

/// Add distance-to-conversion tables to the levels of a built database: for each won or
/// lost position, the plies until a capture or the game's end when both sides keep the
/// value (the winner converting as soon as it can, the loser as late as it can). Level by
/// level from 0, each table beside its level (level-NNN.awd); tables there and good are
/// kept, so a stopped run goes on where it stopped.
#[derive(Args, Debug)]
pub struct DtcArgs {
    #[command(flatten)]
    db: DbArgs,
    /// Levels to make tables of, e.g. 0..=20 or 17 (default: every level present, from 0
    /// up to the first missing one). The levels below are read, their tables not made.
    #[arg(long, value_name = "A..=B")]
    levels: Option<String>,
    /// Make every table again, even those there and good.
    #[arg(long)]
    force: bool,
    #[command(flatten)]
    threads: Threads,
}

pub fn run(args: DtcArgs) -> anyhow::Result<()> {
    let DtcArgs {
        db,
        levels,
        force,
        threads,
    } = args;
    db.readable()?;
    let levels = levels_range(levels.as_deref())?;
    let (pool, threads) = threads.pool()?;
    let opts = DtcOptions {
        root: db.dir().to_path_buf(),
        rules: db.rules(),
        pits: db.pits(),
        levels,
        force,
        progress: std::io::stderr().is_terminal(),
    };
    let dir = db.db_dir();
    warn!(
        "distance tables of {} levels in {} ({} pits per side) with {threads} thread(s)",
        db.rules(),
        dir.display(),
        db.pits(),
    );
    pool.install(|| make_and_print(&opts, threads))
}

/// Makes the distance tables `opts` asks for, a row per level on stdout (also after
/// `awari build --dtc`), and the total; warnings on stderr.
pub fn make_and_print(opts: &DtcOptions, threads: usize) -> anyhow::Result<()> {
    let started = std::time::Instant::now();
    // The table's header, before its first row: a refusal (no levels, another process
    // holds the folder) prints its error alone.
    let header = || {
        say!(
            "{:>5} {:>15} {:>15} {:>7} {:>5} {:>9} {:>12} {:>9}",
            "level",
            "positions",
            "with distance",
            "longest",
            "bytes",
            "seconds",
            "pos/s/thread",
            "peak"
        )
    };
    let headed = std::sync::atomic::AtomicBool::new(false);
    let print = |r: &DtcReport| {
        if !headed.swap(true, std::sync::atomic::Ordering::Relaxed) {
            header();
        }
        let rate = if r.kept || r.seconds <= 0.0 {
            "kept".to_string()
        } else {
            format!("{:.0}", r.positions as f64 / r.seconds / threads as f64)
        };
        say!(
            "{:>5} {:>15} {:>15} {:>7} {:>5} {:>9.2} {:>12} {:>9}",
            r.seeds,
            group(r.positions),
            group(r.with_distance),
            r.longest,
            r.width,
            r.seconds,
            rate,
            peak_rss().map_or("?".into(), bytes)
        );
    };
    let warn = |w: &str| warn!("warning: {w}");
    let reports = make_tables(opts, print, warn)?;
    let made = reports.iter().filter(|r| !r.kept).count();
    let longest = reports.iter().map(|r| r.longest).max().unwrap_or(0);
    say!(
        "total: {} levels ({made} made, {} kept), longest distance {longest} plies, in {:.2} s",
        reports.len(),
        reports.len() - made,
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
