//! `awari verify`: the checks of a built database, a row per level.

use std::io::IsTerminal;

use anyhow::bail;
use clap::Args;

use awari::expert::figures::group;
use awari::{verify, DistanceCheck, LevelCheck, Mismatches, VerifyOptions};

use super::{levels_range, DbArgs, Threads};

/// Check a built database: headers, checksums, and every stored value against the values
/// of its moves (and every distance of a level's distance table against the distances of
/// its moves); with --deep, also solve every level again by an independent method and
/// compare byte for byte.
#[derive(Args, Debug)]
pub struct VerifyArgs {
    #[command(flatten)]
    db: DbArgs,
    /// Levels to check, e.g. 0..=20 or 17 (default: every level present, from 0 up to the
    /// first missing one). Levels below the range are read, not checked.
    #[arg(long, value_name = "A..=B")]
    levels: Option<String>,
    /// Also solve each level again by forward sweeps of the threshold attractors (not the
    /// builder's method) and compare byte for byte: catches values that are wrong but
    /// consistent round a cycle, which the local check cannot. Slower.
    #[arg(long)]
    deep: bool,
    #[command(flatten)]
    threads: Threads,
}

pub fn run(args: VerifyArgs) -> anyhow::Result<()> {
    let VerifyArgs {
        db,
        levels,
        deep,
        threads,
    } = args;
    db.readable()?;
    let levels = levels_range(levels.as_deref())?;
    let (pool, threads) = threads.pool()?;
    let opts = VerifyOptions {
        root: db.dir().to_path_buf(),
        rules: db.rules(),
        pits: db.pits(),
        levels,
        deep,
        progress: std::io::stderr().is_terminal(),
    };
    let dir = db.db_dir();
    warn!(
        "verifying {} levels in {} ({} pits per side){} with {threads} thread(s)",
        db.rules(),
        dir.display(),
        db.pits(),
        if deep { ", deep" } else { "" }
    );
    let started = std::time::Instant::now();
    say_part!(
        "{:>5} {:>15} {:>9} {:>10} {:>9}",
        "level",
        "positions",
        "checksum",
        "mismatches",
        "seconds"
    );
    if deep {
        say_part!(" {:>7} {:>10} {:>9}", "sweeps", "deep mism.", "deep s");
    }
    say!(" {:>9} {:>9}", "distances", "dist s");
    let samples = |n: usize, m: &Mismatches, what: &str| {
        for x in &m.first {
            say!(
                "  level {n} index {}: {} stored {:+}, {what} {:+}",
                x.index,
                x.board,
                x.stored,
                x.computed
            );
        }
        if m.count > m.first.len() as u64 {
            say!("  ... {} more", m.count - m.first.len() as u64);
        }
    };
    let print = |r: &LevelCheck| {
        say_part!(
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
            say_part!(
                " {:>7} {:>10} {:>9.2}",
                d.sweeps,
                d.mismatches.count,
                d.seconds
            );
        }
        // "-": the level has no distance table. The table's check is timed apart: the
        // level's seconds are its values' check.
        let (distances, seconds) = match &r.distances {
            None => ("-", "-".to_string()),
            Some(d) => (
                if d.ok() { "ok" } else { "BAD" },
                format!("{:.2}", d.seconds),
            ),
        };
        say!(" {distances:>9} {seconds:>9}");
        if let Some(p) = &r.checksum_problem {
            // A problem found in a packed block names its level already.
            if p.starts_with(&format!("level {}, ", r.seeds)) {
                say!("  {p}");
            } else {
                say!("  level {}: {p}", r.seeds);
            }
        }
        if let Some(p) = &r.capture_problem {
            say!("  level {}: {p}", r.seeds);
        }
        samples(r.seeds, &r.mismatches, "its moves give");
        if let Some(d) = &r.deep {
            samples(r.seeds, &d.mismatches, "the independent solution gives");
        }
        if let Some(d) = &r.distances {
            distance_samples(r.seeds, d);
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
    say!(
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

/// The lines under a level's row for its distance table: what is wrong with the file,
/// then the first wrong distances.
fn distance_samples(n: usize, d: &DistanceCheck) {
    if let Some(p) = &d.problem {
        say!("  level {n} distances: {p}");
    }
    for x in &d.mismatches.first {
        let computed = match x.computed {
            Some(0) => "none".to_string(),
            Some(c) => c.to_string(),
            None => "none (no move keeps the value: the values are wrong)".to_string(),
        };
        let stored = match x.stored {
            0 => "none".to_string(),
            s => s.to_string(),
        };
        say!(
            "  level {n} index {}: {} distance stored {stored}, its moves give {computed}",
            x.index,
            x.board
        );
    }
    let more = d.mismatches.count - d.mismatches.first.len() as u64;
    if more > 0 {
        say!("  ... {more} more distance(s)");
    }
}
