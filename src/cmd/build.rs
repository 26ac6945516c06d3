//! `awari build`: the build table printed as levels finish.

use std::io::IsTerminal;

use anyhow::Context;

use awari::{build, group, BuildOptions, Index, LevelReport};

use super::thread_pool;
use crate::DbArgs;

pub fn cmd_build(
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
