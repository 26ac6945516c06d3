//! The build benchmark: the same levels built from scratch with each of several thread
//! counts, timed per level, with the peak memory the OS reports and a check that every
//! run wrote the same files.

use std::fs;
use std::path::PathBuf;

use crate::db::layout::{db_dir, level_path};
use crate::db::raw::Header;
use crate::error::{Error, Result};
use crate::game::rules::Rules;
use crate::solve::build::{build, BuildOptions, LevelReport};
use crate::solve::plan::schema::{header, BenchRow, BENCH_COLUMNS};
use crate::util::peak_rss;

/// What to measure.
#[derive(Clone, Debug)]
pub struct BenchOptions {
    /// Scratch folder; each thread count builds into its own sub-folder, removed first.
    pub scratch: PathBuf,
    /// The rule set of the levels built.
    pub rules: Rules,
    /// Pits per side.
    pub pits: usize,
    /// The highest level built: levels `0..=max_seeds` each run.
    pub max_seeds: usize,
    /// Thread counts to run, in order (e.g. 1 and 2).
    pub threads: Vec<usize>,
}

/// One build run: its per-level reports and its peak memory.
#[derive(Clone, Debug)]
pub struct Run {
    /// Threads in the run's rayon pool.
    pub threads: usize,
    /// The builder's report of each level, in order.
    pub levels: Vec<LevelReport>,
    /// Wall time of the whole build, in seconds (reading checksums back not included).
    pub seconds: f64,
    /// Peak resident memory of the run in bytes (Linux; the peak is reset between runs).
    pub peak_rss: Option<u64>,
    /// Payload checksum of each level written.
    pub checksums: Vec<u64>,
}

/// Builds levels `0..=max_seeds` once per thread count. `on_level` sees each level as
/// it finishes.
pub fn bench(
    opts: &BenchOptions,
    mut on_level: impl FnMut(usize, &LevelReport) + Send,
) -> Result<Vec<Run>> {
    let mut runs = Vec::new();
    for &threads in &opts.threads {
        let root = opts.scratch.join(format!("threads-{threads}"));
        if root.exists() {
            fs::remove_dir_all(&root).map_err(|e| Error::io(&root, e))?;
        }
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .map_err(|e| Error::Input(format!("cannot start {threads} threads: {e}")))?;
        reset_peak_rss();
        let build_opts =
            BuildOptions::new(&root, opts.rules, opts.pits, opts.max_seeds).force(true);
        let started = std::time::Instant::now();
        let levels = pool.install(|| build(&build_opts, |r| on_level(threads, r), |_| {}))?;
        let seconds = started.elapsed().as_secs_f64();
        let dir = db_dir(&root, opts.rules, opts.pits);
        let checksums = (0..=opts.max_seeds)
            .map(|n| {
                let path = level_path(&dir, n);
                let head = fs::read(&path).map_err(|e| Error::io(&path, e))?;
                Header::decode(&path, &head).map(|h| h.checksum)
            })
            .collect::<Result<Vec<_>>>()?;
        runs.push(Run {
            threads,
            levels,
            seconds,
            peak_rss: peak_rss(),
            checksums,
        });
        fs::remove_dir_all(&root).map_err(|e| Error::io(&root, e))?;
    }
    Ok(runs)
}

/// Lets the next [`peak_rss`] reading start from the current size (Linux: writing 5 to
/// `clear_refs` resets `VmHWM`), so that each run reports its own peak.
fn reset_peak_rss() {
    let _ = fs::write("/proc/self/clear_refs", "5");
}

/// The runs as CSV: one line per level and thread count, then one total line per run
/// (level `total`). The columns are the first ones of a rates file.
pub fn csv(runs: &[Run]) -> String {
    let mut out = header(BENCH_COLUMNS) + "\n";
    for run in runs {
        for r in &run.levels {
            let row = BenchRow {
                seeds: Some(r.seeds),
                positions: r.stats.positions,
                threads: run.threads,
                seconds: r.seconds,
                passes: Some((
                    r.phases.forward.as_secs_f64(),
                    r.phases.backward.as_secs_f64(),
                )),
                peak_rss: r.peak_rss,
            };
            out += &(row.line() + "\n");
        }
        let total = BenchRow {
            seeds: None,
            positions: run.levels.iter().map(|r| r.stats.positions).sum(),
            threads: run.threads,
            seconds: run.seconds,
            passes: None,
            peak_rss: run.peak_rss,
        };
        out += &(total.line() + "\n");
    }
    out
}

/// What an in-process probe costs: the latencies of probing random stored positions of
/// levels `0..=max_seeds` one at a time, after a pass that warms the caches (the pages of
/// raw levels, the block cache of packed ones).
#[derive(Clone, Debug)]
pub struct ProbeReport {
    /// Positions probed (each timed).
    pub samples: usize,
    /// Median latency, in nanoseconds.
    pub p50_ns: f64,
    /// 99th percentile latency, in nanoseconds.
    pub p99_ns: f64,
    /// Mean latency, in nanoseconds.
    pub mean_ns: f64,
    /// Levels read from packed files among `0..=max_seeds`.
    pub packed_levels: usize,
}

/// Probes `samples` stored positions of levels `0..=max_seeds` of `tb` (board size
/// `pits`), drawn with `seed`: a level uniformly, then a position of it uniformly (levels
/// of one or two positions repeat often, which a program probing an endgame also does).
/// Each probe goes through [`Tablebase::probe`](crate::Tablebase::probe), ranking
/// included, and is timed alone.
pub fn probe_latency(
    tb: &crate::app::tablebase::Tablebase,
    pits: usize,
    max_seeds: usize,
    samples: usize,
    seed: u64,
) -> Result<ProbeReport> {
    use crate::app::tablebase::Position;
    let db = tb.database(pits)?;
    let index = db.index();
    let mut random = crate::app::play::Random::new(seed);
    let mut positions = Vec::with_capacity(samples);
    for _ in 0..samples {
        let n = (random.next_u64() % (max_seeds as u64 + 1)) as usize;
        let i = random.next_u64() % index.level_size(n);
        positions.push(Position::from(index.unrank(n, i)));
    }
    let mut packed_levels = 0;
    for n in 0..=max_seeds {
        if matches!(db.level(n)?, crate::db::store::LevelFile::Packed(_)) {
            packed_levels += 1;
        }
    }
    // Warm: every level opened and checked, its pages and blocks read once.
    let mut sum = 0i64;
    for p in &positions {
        sum += tb.probe(p)?.margin() as i64;
    }
    let mut ns = Vec::with_capacity(samples);
    let mut again = 0i64;
    for p in &positions {
        let t = std::time::Instant::now();
        let v = tb.probe(p)?;
        ns.push(t.elapsed().as_nanos() as f64);
        again += v.margin() as i64;
    }
    if sum != again {
        return Err(Error::Input(
            "a probe answered differently the second time".into(),
        ));
    }
    ns.sort_by(f64::total_cmp);
    let at = |q: f64| ns[((ns.len() - 1) as f64 * q).round() as usize];
    Ok(ProbeReport {
        samples,
        p50_ns: at(0.5),
        p99_ns: at(0.99),
        mean_ns: ns.iter().sum::<f64>() / ns.len().max(1) as f64,
        packed_levels,
    })
}
