//! `awari build`: the build table printed as levels finish.

use std::io::IsTerminal;

use anyhow::Context;
use clap::Args;

use awari::{build, group, BuildOptions, Index, LevelReport};

use super::{DbArgs, Threads};

/// Build levels 0..=N (skips levels already complete and valid, so an interrupted build
/// resumes).
#[derive(Args, Debug)]
pub struct BuildArgs {
    /// Highest level (seeds on the board) to build.
    #[arg(long)]
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
}

pub fn run(args: BuildArgs) -> anyhow::Result<()> {
    let BuildArgs {
        max_seeds,
        db,
        threads,
        force,
        no_check,
    } = args;
    // Bad arguments are not a stopped build: refuse them before starting.
    Index::new(db.pits, max_seeds)?;
    let (pool, threads) = threads.pool()?;
    let opts = BuildOptions {
        root: db.dir().to_path_buf(),
        rules: db.rules,
        pits: db.pits,
        max_seeds,
        force,
        check: !no_check,
        progress: std::io::stderr().is_terminal(),
    };
    let dir = db.db_dir();
    // A build that cannot finish is not started (build checks again, level by level).
    if !no_check {
        awari::plan::check_build_fits(&dir, &Index::new(db.pits, max_seeds)?, max_seeds)?;
    }
    eprintln!(
        "building {} levels 0..={max_seeds}, {} pits per side, into {} with {threads} thread(s)",
        db.rules,
        db.pits,
        dir.display()
    );
    let started = std::time::Instant::now();
    println!(
        "{:>5} {:>15} {:>9} {:>7} {:>7} {:>12} {:>7} {:>6} {:>6} {:>6}",
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
    let reports = match reports {
        // Another build's folder: this one never started.
        Err(e @ awari::Error::Busy { .. }) => return Err(e.into()),
        r => r.with_context(|| {
            format!(
                "build stopped; finished levels in {} stay valid",
                dir.display()
            )
        })?,
    };
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
