//! `awari plan`: what a build of levels 0..=N needs per node (solver memory, disk) and how
//! long it should take, on this machine or on the cluster described, before it starts.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use clap::Args;

use awari::expert::figures::group;
use awari::expert::figures::{bytes, disk_available, memory_total};
use awari::expert::pack::{survey, LevelInfo};
use awari::expert::{Index, MAX_PITS, MAX_SEEDS, MAX_THREADS};
use awari::plan::rates::{self, Rates};
use awari::plan::{
    measured_rate, plan, rate_fall, Calibration, DiskFit, LevelPlan, Machine, Rate, BUSY_AT_LEAST,
    DEFAULT_PACK_RATIO,
};
use awari::{build, BuildOptions, Rules};

use super::{parse_every, real, whole, Every, RootArg};

/// The most nodes `--nodes` takes, and the most that the advice on node counts tries.
const MAX_NODES: usize = 1_000_000;

/// What levels 0..=N need per node (solver memory, disk raw and packed) and how long
/// they should take, from rates measured on this machine; which levels do not fit, and
/// what would.
#[derive(Args, Debug)]
pub struct PlanArgs {
    /// Highest level to plan, 0..=127.
    #[arg(long, value_parser = whole::<usize>(0, MAX_SEEDS as u64))]
    max_seeds: usize,
    /// Pits per side, 2..=8 (default: 6, or what a database folder given as --dir says).
    #[arg(long = "pits", id = "pits", value_name = "PITS", value_parser = whole::<usize>(2, MAX_PITS as u64))]
    given_pits: Option<usize>,
    /// Rule set (the sizes do not depend on it; the measured rate does a little); default:
    /// awari, or what a database folder given as --dir says.
    #[arg(long = "rules", id = "rules", value_name = "RULES")]
    given_rules: Option<Rules>,
    /// The pits and rules planned: given, else from --dir's name, else 6 and awari.
    #[arg(skip = 6usize)]
    pits: usize,
    #[arg(skip = Rules::Awari)]
    rules: Rules,
    /// Nodes, one rank each, 1..=1000000 (default: 1, this machine).
    #[arg(long, default_value_t = 1, value_parser = whole::<usize>(1, MAX_NODES as u64))]
    nodes: usize,
    /// Memory per node in GB, 0.01..=1000000 (default: this machine's).
    #[arg(long, value_name = "GB", value_parser = real(0.01, 1e6))]
    memory_per_node: Option<f64>,
    /// Cores per node, 1..=1024 (default: this machine's).
    #[arg(long, value_parser = whole::<usize>(1, MAX_THREADS as u64))]
    cores_per_node: Option<usize>,
    /// Disk per node in GB, 0.01..=1000000000 (default: what is free under --dir, and
    /// what the levels of this database already built there take).
    #[arg(long, value_name = "GB", value_parser = real(0.01, 1e9))]
    disk_per_node: Option<f64>,
    /// The build's `--checkpoint-every` (`30s`, `15m`, `1h`; `off`: never): with
    /// checkpoints, each level's disk counts two of its solver state, the checkpoint
    /// being written and the one before.
    #[arg(long, value_name = "DURATION", default_value = "15m", value_parser = parse_every)]
    checkpoint_every: Every,
    /// Where the database goes: its free disk, and the pack ratio of levels packed there.
    #[command(flatten)]
    root: RootArg,
    /// Take the rate (positions per second per thread) from a CSV of `awari bench --csv`
    /// (or a database's rates.csv) instead of the rates measured by the builds in --dir's
    /// database, or else a calibration build of a few seconds.
    #[arg(long, value_name = "CSV")]
    rates: Option<PathBuf>,
}

pub fn run(mut args: PlanArgs) -> anyhow::Result<()> {
    // A plan may be of a database not made yet, but not in the folder of another one.
    let own = args.root.agree(args.given_rules, args.given_pits)?;
    args.root.writable()?;
    args.pits = args.given_pits.or(own.map(|o| o.1)).unwrap_or(6);
    args.rules = args
        .given_rules
        .or(own.map(|o| o.0))
        .unwrap_or(Rules::Awari);
    if args.nodes == 0 {
        bail!("--nodes must be at least 1");
    }
    let index = Index::new(args.pits, args.max_seeds)?;
    // The levels of this database already on disk (the raw file of a level if both are).
    let found: Vec<LevelInfo> = survey(args.root.root(), false)
        .unwrap_or_default()
        .into_iter()
        .filter(|l| l.rules == args.rules && l.pits == args.pits && l.problem.is_none())
        .collect();
    let mut on_disk = BTreeMap::new();
    for l in found.iter().rev() {
        on_disk.insert(l.seeds, (l.bytes, l.packed));
    }
    let built: u64 = on_disk.values().map(|&(b, _)| b).sum();
    let db_dir = awari::expert::db_dir(args.root.root(), args.rules, args.pits);
    // A level being built has its checkpoints there, which the plan counts in its own.
    let saved = checkpoint_bytes(&db_dir);
    let gb = |x: f64| (x * 1e9) as u64;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let machine = Machine {
        nodes: args.nodes,
        memory: args
            .memory_per_node
            .map(gb)
            .or_else(memory_total)
            .context("this machine does not say its memory; give --memory-per-node")?,
        cores: args.cores_per_node.unwrap_or(cores),
        disk: match args.disk_per_node {
            Some(g) => gb(g),
            // The plan counts the levels built already and the checkpoints of the one
            // being built: their room is the database's.
            None => {
                disk_available(args.root.root())
                    .context("no free disk figure for --dir; give --disk-per-node")?
                    + built
                    + saved
            }
        },
    };
    let (ratio, ratio_from) = pack_ratio(&found);
    // The rates file of the folder: measured by the builds there.
    let recorded = rates::read(&db_dir).unwrap_or_else(|e| {
        eprintln!("warning: {}", e.one_line());
        None
    });
    // `busy_by`: how much longer a build beside the work that disturbed the measurement
    // would take, when it was disturbed.
    let (rate, rate_from, busy_by) = match &args.rates {
        Some(csv) => rate_from_csv(csv)?,
        None => match recorded
            .as_ref()
            .and_then(|r| measured(r, &db_dir, args.pits))
        {
            Some(measured) => measured,
            None => calibrate(args.rules, args.pits)?,
        },
    };
    // The time each level took to build here, by the latest line of the rates file.
    let built_in: BTreeMap<usize, f64> = recorded
        .map(|r| r.latest().iter().map(|l| (l.seeds, l.seconds)).collect())
        .unwrap_or_default();
    let checkpoints = args.checkpoint_every.0.is_some();
    let levels = plan(
        &index,
        args.max_seeds,
        &machine,
        ratio,
        Some(rate),
        checkpoints,
    );
    let disk_from = match (args.disk_per_node, built, saved) {
        (Some(_), _, _) => String::new(),
        (None, 0, 0) => " free".to_string(),
        (None, b, 0) => format!(" (free, and {} of levels built)", bytes(b)),
        (None, 0, c) => format!(" (free, and {} of checkpoints)", bytes(c)),
        (None, b, c) => format!(
            " (free, and {} of levels built and {} of checkpoints)",
            bytes(b),
            bytes(c)
        ),
    };
    println!(
        "plan: {} levels 0..={}, {} pits per side, on {} node(s) of {} memory, {} cores, {} disk{disk_from} ({})",
        args.rules,
        args.max_seeds,
        args.pits,
        machine.nodes,
        bytes(machine.memory),
        machine.cores,
        bytes(machine.disk),
        db_dir.display()
    );
    if checkpoints {
        println!(
            "checkpoints: each level's disk counts two of its solver state (`--checkpoint-every off`: none)"
        );
    }
    println!(
        "rate: {:.0} positions/s/thread ({rate_from}), falling as {}; pack ratio {ratio:.2} ({ratio_from})",
        rate.per_thread,
        rate_fall()
    );
    println!(
        "{:>5} {:>19} {:>15} {:>11} {:>11} {:>11} {:>11} {:>11} {:>12} {:>12} {:>11} {:>10}  fits",
        "level",
        "positions",
        "state/lower",
        "memory/node",
        "state",
        "lower held",
        "raw/node",
        "packed/node",
        "raw so far",
        "packed so far",
        "checkpoints",
        "time"
    );
    for l in &levels {
        let way = l.way.map_or("-".to_string(), |w| w.to_string());
        println!(
            "{:>5} {:>19} {:>15} {:>11} {:>11} {:>11} {:>11} {:>11} {:>12} {:>12} {:>11} {:>10}  {}{}",
            l.seeds,
            group(l.positions),
            way,
            bytes(l.memory()),
            bytes(l.state),
            bytes(l.lower),
            bytes(l.raw),
            bytes(l.packed),
            bytes(l.raw_so_far),
            bytes(l.packed_so_far),
            bytes(l.checkpoints),
            duration(l.seconds.unwrap_or(0.0)),
            fits(l, &machine),
            on_disk
                .get(&l.seeds)
                .map_or(String::new(), |&(b, packed)| format!(
                    " (built: {} {}{})",
                    bytes(b),
                    if packed { "packed" } else { "raw" },
                    built_in
                        .get(&l.seeds)
                        .map_or(String::new(), |&s| format!(" in {}", duration(s)))
                ))
        );
    }
    let total: u64 = levels.iter().map(|l| l.positions).sum();
    let seconds: f64 = levels.iter().filter_map(|l| l.seconds).sum();
    let last = levels.last().expect("level 0 at least");
    let peak = levels.iter().map(|l| l.memory()).max().unwrap_or(0);
    let ckpt = levels.iter().map(|l| l.checkpoints).max().unwrap_or(0);
    let ckpt = if ckpt > 0 {
        format!(", and up to {} of checkpoints", bytes(ckpt))
    } else {
        String::new()
    };
    let beside = busy_by.map_or(String::new(), |k| {
        format!(
            " (about {} beside work like that which disturbed the measurement)",
            duration(seconds * k)
        )
    });
    println!(
        "total: {} positions; per node: at most {} of memory, {} of raw levels ({} packed){ckpt}; about {}{beside}",
        group(total),
        bytes(peak),
        bytes(last.raw_so_far),
        bytes(last.packed_so_far),
        duration(seconds)
    );
    advise(&levels, &machine, |m| {
        plan(&index, args.max_seeds, m, ratio, None, checkpoints)
    });
    Ok(())
}

/// "0.4 s", "12 min", "3.1 h".
fn duration(seconds: f64) -> String {
    match seconds {
        s if s < 60.0 => format!("{s:.1} s"),
        s if s < 3600.0 => format!("{:.1} min", s / 60.0),
        s => format!("{:.1} h", s / 3600.0),
    }
}

/// The bytes of the checkpoints in the database folder `dir` (`.awc` files, and `.awc.tmp`
/// ones a kill left).
fn checkpoint_bytes(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .filter(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            name.ends_with(".awc") || name.ends_with(".awc.tmp")
        })
        .filter_map(|e| e.metadata().ok())
        .map(|m| m.len())
        .sum()
}

/// "yes", or what does not fit.
fn fits(l: &LevelPlan, m: &Machine) -> &'static str {
    if !l.fits_memory(m) {
        return match l.disk_fit(m) {
            DiskFit::No => "NO: memory, disk",
            _ => "NO: memory",
        };
    }
    match l.disk_fit(m) {
        DiskFit::Raw => "yes",
        DiskFit::RawOneCheckpoint => "yes, one checkpoint at a time",
        DiskFit::Packed => "disk: packed only",
        DiskFit::PackedOneCheckpoint => "disk: packed, one checkpoint at a time",
        DiskFit::RawNoCheckpoint => "yes, no room for a checkpoint",
        DiskFit::PackedNoCheckpoint => "disk: packed, no room for a checkpoint",
        DiskFit::No => "NO: disk",
    }
}

/// What would make the levels that do not fit fit. The advice is a fixed point: `plan_on`
/// plans the same levels on another machine, and the node count and the memory advised
/// are ones that plan says fit, so that running plan again with them says every level
/// fits.
fn advise(levels: &[LevelPlan], m: &Machine, plan_on: impl Fn(&Machine) -> Vec<LevelPlan>) {
    let Some(big) = levels.iter().find(|l| !l.fits_memory(m)) else {
        if let Some(l) = levels.iter().find(|l| !l.fits_disk(m)) {
            println!(
                "disk: raw levels{} run out of disk at level {}; packing them as they are built (`awari pack --all --remove-raw`) needs {} per node",
                if l.checkpoints > 0 { " and checkpoints" } else { "" },
                l.seeds,
                bytes(
                    levels
                        .iter()
                        .map(|l| l.packed_so_far + l.checkpoints)
                        .max()
                        .unwrap_or(0)
                )
            );
        } else {
            println!("every level fits");
        }
        // What the build does where the raw levels leave less room than two checkpoints.
        let raw = |f: DiskFit| levels.iter().filter(move |l| l.disk_fit(m) == f);
        if let Some(l) = raw(DiskFit::RawOneCheckpoint).next() {
            println!(
                "raw, from level {} on the build keeps one checkpoint at a time (it removes each before writing the next: a stop while one is written costs the level)",
                l.seeds
            );
        }
        if let Some(l) = raw(DiskFit::RawNoCheckpoint).next() {
            println!(
                "raw, from level {} on the build has no room for a checkpoint and skips them",
                l.seeds
            );
        }
        return;
    };
    let fits = |nodes: usize| {
        plan_on(&Machine { nodes, ..*m })
            .iter()
            .all(|l| l.fits_memory(m))
    };
    // More nodes, smaller slices: the least that fits, by doubling then halving.
    let (mut lo, mut hi) = (m.nodes, m.nodes.saturating_mul(2).min(MAX_NODES));
    while !fits(hi) && hi < MAX_NODES {
        lo = hi;
        hi = hi.saturating_mul(2).min(MAX_NODES);
    }
    let nodes = fits(hi).then(|| {
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if fits(mid) {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        hi
    });
    // The memory that every level needs on these nodes, rounded up to what
    // --memory-per-node takes (0.01 GB).
    let peak = levels.iter().map(LevelPlan::memory).max().unwrap_or(0);
    let gb = (peak as f64 / 1e7).ceil() / 100.0;
    let on = |n: usize| format!("{n} node{}", if n == 1 { "" } else { "s" });
    let spread = match nodes {
        Some(n) => format!("every level fits on {} of {}", on(n), bytes(m.memory)),
        None => format!(
            "no number of nodes up to {MAX_NODES} of {} fits it",
            bytes(m.memory)
        ),
    };
    println!(
        "memory: level {} is the first that does not fit ({} per node even with the smallest \
         state, {} there is); {spread}, or on {} with --memory-per-node {gb}",
        big.seeds,
        bytes(big.memory()),
        bytes(m.memory),
        on(m.nodes),
    );
}

/// Raw over packed bytes of the levels packed in the database folder, if any.
fn pack_ratio(found: &[LevelInfo]) -> (f64, String) {
    let packed: Vec<&LevelInfo> = found.iter().filter(|l| l.packed).collect();
    let raw: u64 = packed.iter().map(|l| l.raw_bytes).sum();
    let bytes: u64 = packed.iter().map(|l| l.bytes).sum();
    if packed.is_empty() || bytes == 0 {
        return (
            DEFAULT_PACK_RATIO,
            "levels 16..=24 of Awari with the exit model; no packed level to measure".into(),
        );
    }
    (
        raw as f64 / bytes as f64,
        format!("measured on the {} packed levels there", packed.len()),
    )
}

/// The rate of the largest level of the largest thread count in a bench CSV.
fn rate_from_csv(path: &std::path::Path) -> anyhow::Result<(Rate, String, Option<f64>)> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let mut best: Option<(usize, u64, f64)> = None;
    for line in text.lines().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        let (Some(Ok(threads)), Some(Ok(positions)), Some(Ok(rate))) = (
            f.get(2).map(|s| s.parse::<usize>()),
            f.get(1).map(|s| s.parse::<u64>()),
            f.get(6).map(|s| s.parse::<f64>()),
        ) else {
            continue;
        };
        if f[0] == "total" {
            continue;
        }
        if best.is_none_or(|(t, p, _)| (threads, positions) > (t, p)) {
            best = Some((threads, positions, rate));
        }
    }
    let Some((threads, positions, rate)) = best else {
        bail!(
            "{}: no level rows (is it a CSV of `awari bench --csv`?)",
            path.display()
        );
    };
    let rate = Rate {
        per_thread: rate,
        level_size: positions,
    };
    Ok((
        rate,
        format!(
            "{}: its largest level, {} positions, with {threads} threads",
            path.display(),
            group(positions)
        ),
        None,
    ))
}

/// The rate of the largest levels built in `dir`, from its rates file, and where it comes
/// from; warnings on stderr for levels built beside other work. `None` when no level
/// large enough was measured there.
fn measured(recorded: &Rates, dir: &Path, pits: usize) -> Option<(Rate, String, Option<f64>)> {
    let index = Index::new(pits, Index::max_supported(pits).ok()?).ok()?;
    let m = measured_rate(&recorded.latest(), &index)?;
    let path = rates::rates_path(dir);
    let list = |levels: &[usize]| {
        levels
            .iter()
            .map(|n| n.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    if recorded.ignored > 0 {
        eprintln!(
            "warning: {} line(s) of {} not understood and left out",
            recorded.ignored,
            path.display()
        );
    }
    if !m.left_out.is_empty() {
        eprintln!(
            "note: level(s) {} of {} left out: built beside other work (threads on a CPU under {:.0} % of the time)",
            list(&m.left_out),
            path.display(),
            100.0 * BUSY_AT_LEAST
        );
    }
    if !m.disturbed.is_empty() {
        let shares: Vec<String> = m
            .disturbed
            .iter()
            .map(|(n, b)| format!("level {n} {:.0} %", 100.0 * b))
            .collect();
        eprintln!(
            "warning: the levels measured were all built beside other work (threads on a CPU: {}): the times below use their rates per CPU second, what the threads did while they ran; a build beside such work takes longer",
            shares.join(", ")
        );
    }
    let top = *m.levels.last().expect("a level at least");
    Some((
        m.rate,
        format!(
            "measured by the build of level(s) {} in {}, {} thread(s): the median, referred to \
             the fast state reading at random on level {top}'s {} positions",
            list(&m.levels),
            path.display(),
            m.threads,
            group(m.rate.level_size)
        ),
        (!m.disturbed.is_empty()).then(|| m.rate.per_thread / m.by_wall.max(1e-9)),
    ))
}

/// Builds small levels in a scratch folder with every core and returns the rate of the
/// largest one: a few seconds. A calibration disturbed by other work is said on stderr.
fn calibrate(rules: Rules, pits: usize) -> anyhow::Result<(Rate, String, Option<f64>)> {
    let top = Index::max_supported(pits)?;
    let index = Index::new(pits, top)?;
    // The largest level of at most about 5 million positions: a few seconds in all.
    let max_seeds = (1..=top)
        .take_while(|&n| index.level_size(n) <= 5_000_000)
        .last()
        .unwrap_or(1);
    let scratch = tempdir()?;
    let opts = BuildOptions::new(&scratch, rules, pits, max_seeds).force(true);
    eprintln!("calibrating: {rules} levels 0..={max_seeds}, {pits} pits per side");
    let reports = build(&opts, |_| {}, |_| {});
    let _ = std::fs::remove_dir_all(&scratch);
    let reports = reports?;
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let last = reports.last().expect("level 0 at least");
    let calibration = Calibration {
        seeds: max_seeds,
        positions: last.stats.positions,
        seconds: last.seconds,
        cpu_seconds: last.cpu_seconds,
        threads,
    };
    if let Some(w) = calibration.warning() {
        eprintln!("warning: {w}");
    }
    let busy = calibration.busy().map_or(String::new(), |b| {
        format!(", threads on a CPU {:.0} % of the time", 100.0 * b)
    });
    let per = if calibration.disturbed() {
        "per CPU second: disturbed"
    } else {
        "by the wall clock"
    };
    Ok((
        calibration.rate(),
        format!(
            "calibrated here on level {max_seeds} ({} positions) with {threads} threads{busy}, {per}",
            group(last.stats.positions)
        ),
        calibration
            .disturbed()
            .then(|| calibration.rate().per_thread / calibration.by_wall().max(1e-9)),
    ))
}

fn tempdir() -> anyhow::Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("awari-plan-{}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    Ok(dir)
}
