//! `awari bench`: build figures per thread count, per level.

use std::path::PathBuf;

use anyhow::{bail, Context};
use clap::Args;

use awari::expert::bench::{bench, csv as to_csv, probe_latency, BenchOptions};
use awari::expert::figures::group;
use awari::expert::{Index, MAX_PITS, MAX_SEEDS, MAX_THREADS};
use awari::Rules;

use super::whole;

/// Benchmark the builder: build levels 0..=N from scratch with each thread count, and
/// print per level the seconds, positions per second per thread, peak memory and the
/// speed-up of the last thread count over the first. With `--probe`: the latency of an
/// in-process probe of random positions of levels 0..=N of a built database instead.
#[derive(Args, Debug)]
pub struct BenchArgs {
    /// Highest level to build, 0..=127.
    #[arg(long, default_value_t = 20, value_parser = whole::<usize>(0, MAX_SEEDS as u64))]
    max_seeds: usize,
    /// Thread counts to compare, in order, each 1..=1024.
    #[arg(long, value_delimiter = ',', default_value = "1,2", value_parser = whole::<usize>(1, MAX_THREADS as u64))]
    threads: Vec<usize>,
    /// Pits per side, 2..=8.
    #[arg(long, default_value_t = 6, value_parser = whole::<usize>(2, MAX_PITS as u64))]
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
    /// Measure probes instead of builds: random stored positions of levels 0..=N of the
    /// database under `--dir` (raw or packed, as built), each probed once to warm the
    /// caches and once timed; prints the median and 99th percentile.
    #[arg(long)]
    probe: bool,
    /// The database root that `--probe` reads.
    #[arg(long, default_value = "db", requires = "probe")]
    dir: PathBuf,
    /// Positions that `--probe` times, 1..=1000000000.
    #[arg(long, default_value_t = 1_000_000, requires = "probe", value_parser = whole::<usize>(1, 1_000_000_000))]
    samples: usize,
}

pub fn run(args: BenchArgs) -> anyhow::Result<()> {
    let BenchArgs {
        max_seeds,
        threads,
        pits,
        rules,
        scratch,
        csv,
        probe,
        dir,
        samples,
    } = args;
    if probe {
        // A --dir that is not there, or is a file, said so.
        let root = super::RootArg { dir: dir.clone() };
        let (r, p) = root.database().unwrap_or((rules, pits));
        root.readable(r, p)?;
        return probe_bench(&dir, rules, pits, max_seeds, samples);
    }
    if threads.is_empty() {
        bail!("--threads needs one or more counts of at least 1, e.g. 1,2");
    }
    for &t in &threads {
        awari::expert::check_threads(t)?;
    }
    Index::new(pits, max_seeds)?;
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
    warn!(
        "benchmark: {rules} levels 0..={max_seeds}, {pits} pits per side, threads {threads:?}, scratch {}",
        scratch.display()
    );
    let runs = bench(&opts, |t, r| {
        warn!("  threads {t}: level {:>3} {:>8.2} s", r.seeds, r.seconds)
    })?;
    let _ = std::fs::remove_dir(&scratch);
    // One run's cells of a row: seconds, positions/s/thread, peak MB.
    let cells = |positions: u64, seconds: f64, threads: usize, rss: Option<u64>| {
        format!(
            " {:>9.2} {:>12.0} {:>7}",
            seconds,
            positions as f64 / seconds.max(1e-9) / threads as f64,
            rss.map_or("-".to_string(), |b| format!("{:.0}", b as f64 / 1e6))
        )
    };
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
    say!("{head}");
    for n in 0..=max_seeds {
        let positions = first.levels[n].stats.positions;
        let mut line = format!("{:>5} {:>15}", n, group(positions));
        for r in &runs {
            let l = &r.levels[n];
            line += &cells(positions, l.seconds, r.threads, l.peak_rss);
        }
        if runs.len() > 1 {
            line += &format!(
                " {:>8.2}",
                first.levels[n].seconds / last.levels[n].seconds.max(1e-9)
            );
        }
        say!("{line}");
    }
    let positions: u64 = first.levels.iter().map(|l| l.stats.positions).sum();
    let mut line = format!("{:>5} {:>15}", "total", group(positions));
    for r in &runs {
        line += &cells(positions, r.seconds, r.threads, r.peak_rss);
    }
    if runs.len() > 1 {
        line += &format!(" {:>8.2}", first.seconds / last.seconds.max(1e-9));
    }
    say!("{line}");
    let same = runs.iter().all(|r| r.checksums == first.checksums);
    if runs.len() > 1 {
        say!(
            "level files identical across thread counts: {}",
            if same { "yes" } else { "NO" }
        );
    } else {
        say!("level files across thread counts: one thread count, nothing to compare");
    }
    if let Some(path) = csv {
        std::fs::write(&path, to_csv(&runs))
            .with_context(|| format!("writing {}", path.display()))?;
        warn!("wrote {}", path.display());
    }
    if !same {
        bail!("thread counts wrote different level files: the builder is not deterministic");
    }
    Ok(())
}

/// `awari bench --probe`: the latency of in-process probes.
fn probe_bench(
    dir: &std::path::Path,
    rules: Rules,
    pits: usize,
    max_seeds: usize,
    samples: usize,
) -> anyhow::Result<()> {
    if samples == 0 {
        bail!("--samples must be at least 1");
    }
    Index::new(pits, max_seeds)?;
    let tb = awari::Tablebase::open_rules(dir, rules)?;
    warn!(
        "probing {} random positions of {rules}-{pits} levels 0..={max_seeds} under {}",
        group(samples as u64),
        dir.display()
    );
    let r = probe_latency(&tb, pits, max_seeds, samples, 1)?;
    say!(
        "{} probes of levels 0..={max_seeds} ({} raw, {} packed), warm: p50 {:.3} us, p99 {:.3} us, mean {:.3} us",
        group(r.samples as u64),
        max_seeds + 1 - r.packed_levels,
        r.packed_levels,
        r.p50_ns / 1e3,
        r.p99_ns / 1e3,
        r.mean_ns / 1e3
    );
    Ok(())
}
