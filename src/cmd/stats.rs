//! `awari stats`: per level the positions, won / drawn / lost shares, mean and extreme
//! values, and the distribution of values, as a table or JSON, and optionally an SVG chart;
//! with `--dtc`, the same of the distances to conversion.

use std::path::PathBuf;

use clap::Args;
use serde::Serialize;

use awari::expert::figures::group;
use awari::expert::stats::{database_stats, distance_stats, DistanceStats, LevelStats};

use super::plot::{check_plot_path, write_plot};

use super::{DbArgs, LevelsArg, Threads};

/// Per level: positions, share won / drawn / lost by the side to move, mean, largest and
/// smallest value, and the distribution of values; optionally an SVG chart.
#[derive(Args, Debug)]
pub struct StatsArgs {
    #[command(flatten)]
    db: DbArgs,
    #[command(flatten)]
    levels: LevelsArg,
    /// Also write a chart to this file (SVG only, e.g. stats.svg): won / drawn / lost
    /// shares per level, and the share of each value per level with the mean.
    #[arg(long, value_name = "FILE")]
    plot: Option<PathBuf>,
    /// Print one JSON object instead of the table: every number per level, with the full
    /// histogram (positions per value), and the totals.
    #[arg(long)]
    json: bool,
    /// Also the distances to conversion, from the levels' tables (`awari dtc` makes them):
    /// per level the positions with one, the longest, mean, median and 99th percentile,
    /// and the table's size; in the JSON the histogram (positions per distance), in the
    /// chart a third panel.
    #[arg(long)]
    dtc: bool,
    #[command(flatten)]
    threads: Threads,
}

pub fn run(args: StatsArgs) -> anyhow::Result<()> {
    let StatsArgs {
        db,
        levels,
        plot,
        json,
        dtc,
        threads,
    } = args;
    db.readable()?;
    let levels = levels.range()?;
    // Refuse a bad chart name before reading gigabytes.
    if let Some(p) = &plot {
        check_plot_path(p)?;
    }
    let (pool, threads) = threads.pool()?;
    let dir = db.db_dir();
    warn!(
        "statistics of the {} levels in {} ({} pits per side) with {threads} thread(s)",
        db.rules(),
        dir.display(),
        db.pits()
    );
    let header = || {
        say!(
            "{:>5} {:>15} {:>7} {:>7} {:>7} {:>8} {:>16} {:>16}",
            "level",
            "positions",
            "won%",
            "drawn%",
            "lost%",
            "mean",
            "max (count)",
            "min (count)"
        )
    };
    let mut rows = 0;
    let stats = pool.install(|| {
        database_stats(db.dir(), db.rules(), db.pits(), levels.clone(), |s| {
            if !json {
                // A row as soon as its level is counted (large levels take seconds); the
                // header with the first, so that an error comes alone.
                if rows == 0 {
                    header();
                }
                rows += 1;
                say!("{}", row(&s.seeds.to_string(), s));
            }
        })
    })?;
    let total = LevelStats::total(&stats);
    if !json {
        say!("{}", row("total", &total));
        say!();
        say_part!("{}", histogram_grid(&stats));
    }
    let distances = match dtc {
        false => None,
        true => {
            if !json {
                say!();
                say!(
                    "distances to conversion (plies to the next capture, both sides keeping the value)"
                );
                say!(
                    "{:>5} {:>15} {:>15} {:>7} {:>7} {:>6} {:>6} {:>15}",
                    "level",
                    "positions",
                    "with distance",
                    "longest",
                    "mean",
                    "median",
                    "99%",
                    "table bytes"
                );
            }
            let d = pool.install(|| {
                distance_stats(db.dir(), db.rules(), db.pits(), levels, |s| {
                    if !json {
                        say!("{}", distance_row(s));
                    }
                })
            })?;
            Some(d)
        }
    };
    if json {
        let doc = Report {
            rules: db.rules().name(),
            pits: db.pits(),
            dir: dir.display().to_string(),
            levels: stats.iter().map(summary).collect(),
            total: summary(&total),
            distances: distances
                .as_deref()
                .map(|d| d.iter().map(distance_summary).collect()),
        };
        say!("{}", serde_json::to_string(&doc)?);
    }
    if let Some(p) = plot {
        write_plot(&p, db.rules(), db.pits(), &stats, distances.as_deref())?;
        let bytes = std::fs::metadata(&p).map(|m| m.len()).unwrap_or(0);
        warn!("chart written to {} ({} bytes)", p.display(), group(bytes));
    }
    Ok(())
}

/// One row of the distances' table.
fn distance_row(s: &DistanceStats) -> String {
    format!(
        "{:>5} {:>15} {:>15} {:>7} {:>7.2} {:>6} {:>6} {:>15}",
        s.seeds,
        group(s.positions()),
        group(s.with_distance()),
        s.longest(),
        s.mean(),
        s.quantile(0.5),
        s.quantile(0.99),
        group(s.file_bytes)
    )
}

/// One row of the table.
fn row(label: &str, s: &LevelStats) -> String {
    let extreme =
        |x: Option<(i32, u64)>| x.map_or("-".into(), |(v, c)| format!("{v:+} ({})", group(c)));
    format!(
        "{label:>5} {:>15} {:>7.2} {:>7.2} {:>7.2} {:>+8.3} {:>16} {:>16}",
        group(s.positions()),
        s.percent(s.won()),
        s.percent(s.drawn()),
        s.percent(s.lost()),
        s.mean(),
        extreme(s.max()),
        extreme(s.min()),
    )
}

/// The `--json` document. Fields in this order, so that the file reads top-down.
#[derive(Serialize)]
struct Report {
    rules: &'static str,
    pits: usize,
    dir: String,
    levels: Vec<Summary>,
    /// All the positions of the levels together (`seeds`: the largest level).
    total: Summary,
    /// With `--dtc`: the distances to conversion of each level.
    #[serde(skip_serializing_if = "Option::is_none")]
    distances: Option<Vec<DistanceSummary>>,
}

/// The distances to conversion of one level, the histogram in full.
#[derive(Serialize)]
struct DistanceSummary {
    seeds: usize,
    positions: u64,
    with_distance: u64,
    longest: usize,
    mean: f64,
    median: usize,
    p99: usize,
    width: u8,
    table_bytes: u64,
    /// Positions at each distance from 1 to the longest, in order, zeros included.
    histogram: Vec<u64>,
}

fn distance_summary(s: &DistanceStats) -> DistanceSummary {
    DistanceSummary {
        seeds: s.seeds,
        positions: s.positions(),
        with_distance: s.with_distance(),
        longest: s.longest(),
        mean: s.mean(),
        median: s.quantile(0.5),
        p99: s.quantile(0.99),
        width: s.width,
        table_bytes: s.file_bytes,
        histogram: s.histogram().map(|(_, c)| c).collect(),
    }
}

/// The numbers of one level (or the total), the histogram in full.
#[derive(Serialize)]
struct Summary {
    seeds: usize,
    positions: u64,
    won: u64,
    drawn: u64,
    lost: u64,
    won_percent: f64,
    drawn_percent: f64,
    lost_percent: f64,
    mean: f64,
    max: Option<Count>,
    min: Option<Count>,
    /// Every value from -seeds to +seeds, in order, zeros included.
    histogram: Vec<Count>,
}

#[derive(Serialize)]
struct Count {
    value: i32,
    count: u64,
}

fn summary(s: &LevelStats) -> Summary {
    let count = |(value, count)| Count { value, count };
    Summary {
        seeds: s.seeds,
        positions: s.positions(),
        won: s.won(),
        drawn: s.drawn(),
        lost: s.lost(),
        won_percent: s.percent(s.won()),
        drawn_percent: s.percent(s.drawn()),
        lost_percent: s.percent(s.lost()),
        mean: s.mean(),
        max: s.max().map(count),
        min: s.min().map(count),
        histogram: s.histogram().map(count).collect(),
    }
}

/// The distribution of values as text: one row per level, one column per value, a bar
/// whose height is the value's share relative to the level's most common value.
fn histogram_grid(stats: &[LevelStats]) -> String {
    const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let top = stats.iter().map(|s| s.seeds).max().unwrap_or(0) as i32;
    let width = (2 * top + 1) as usize;
    let mut text = format!(
        "values from {:+} to {:+}, one column each; bar height: positions relative to the \
         level's most common value\n('.' under 1/16 of it, blank: no position; --json for the counts)\n",
        -top, top
    );
    // Axis: the ends and 0 marked.
    let mut axis = vec![' '; width + 2];
    let mut put = |at: usize, s: &str| {
        for (i, ch) in s.chars().enumerate() {
            if let Some(c) = axis.get_mut(at + i) {
                *c = ch;
            }
        }
    };
    let left = format!("{:+}", -top);
    put(0, &left);
    put(top as usize, "0");
    let right = format!("{:+}", top);
    put(width.saturating_sub(right.len()), &right);
    let axis: String = axis.into_iter().collect();
    text += &format!("{:>5}  {}\n", "value", axis.trim_end());
    for s in stats {
        let most = s.counts.iter().copied().max().unwrap_or(0).max(1) as f64;
        let cells: String = (-top..=top)
            .map(|v| match s.count(v) {
                0 => ' ',
                c if (c as f64) < most / 16.0 => '.',
                c => BARS[((c as f64 / most * 8.0).round() as usize).clamp(1, 8) - 1],
            })
            .collect();
        text += &format!("{:>5}  {}\n", s.seeds, cells.trim_end());
    }
    text
}
