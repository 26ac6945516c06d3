//! What `awari plan` prints: the plan of a build ([`crate::plan::plan`]) on this machine
//! or on the nodes described, with the rate it was timed at and where that came from
//! (a bench CSV, the rates the builds in the folder measured, or a calibration build),
//! what does not fit, and what would (DESIGN.md section 5.4).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::db::layout::db_dir;
use crate::db::raw::PAYLOAD_OFFSET;
use crate::db::stack::{survey, LevelInfo};
use crate::error::{Error, Result};
use crate::game::index::Index;
use crate::game::rules::Rules;
use crate::solve::build::build;
use crate::solve::level::{Lower, StateKind};
use crate::solve::options::BuildOptions;
use crate::solve::plan::rates::{self, Rates};
use crate::solve::plan::schema::largest_level_rate;
use crate::solve::plan::{
    measured_rate, plan, rate_fall, Calibration, DiskFit, LevelMethod, LevelPlan, Machine, Rate,
    WayCosts, BUSY_AT_LEAST, DEFAULT_PACK_RATIO,
};
use crate::util::{bytes, disk_available, group, group_u128, memory_total};

/// The most nodes a plan takes, and the most that its advice on node counts tries.
pub const MAX_NODES: usize = 1_000_000;

/// What `awari plan` is asked: the levels, the nodes (this machine's figures where not
/// given), and where the database goes.
#[derive(Clone, Debug)]
pub struct PlanOptions {
    /// The root folder of the databases: its free disk, the levels built and packed
    /// there, and the rates its builds measured.
    pub root: PathBuf,
    /// The rule set (the sizes do not depend on it; the measured rate does a little).
    pub rules: Rules,
    /// Pits per side.
    pub pits: usize,
    /// The highest level planned.
    pub max_seeds: usize,
    /// Nodes, one rank each.
    pub nodes: usize,
    /// Memory per node, bytes; `None`: this machine's.
    pub memory: Option<u64>,
    /// Cores per node; `None`: this machine's.
    pub cores: Option<usize>,
    /// Disk per node, bytes; `None`: what is free under `root`, and what the levels and
    /// checkpoints of this database there take.
    pub disk: Option<u64>,
    /// Whether the build writes checkpoints (each level's disk counts two of its state).
    pub checkpoints: bool,
    /// A bench CSV or rates file to take the rate from, instead of the rates measured in
    /// the folder or a calibration.
    pub rates: Option<PathBuf>,
    /// Also plan the distance tables (`awari dtc`, `awari build --dtc`; one process only).
    pub dtc: bool,
}

/// Bytes a position held while a level's distance table is made (DESIGN.md section 5.7):
/// its word of distance, count and value.
pub const DTC_STATE_BYTES: u64 = 4;

/// How many times a level's build time making its distance table takes: measured on 2
/// threads here, alternating with builds of the same levels (Awari level 22: 92 to 112 s
/// against 34 s; level 27: 904 s against 289 s; other work on the machine in both).
pub const DTC_TIME_FACTOR: f64 = 3.0;

/// How many times smaller `awari pack` makes a distance table (zstd level 9, 16,384
/// distances a block): 2.42 to 2.45 measured on levels 25..=30 of both rule sets (2.3
/// from level 18; half the won and lost positions convert within 3 plies, draws are 0).
pub const DTC_PACK_RATIO: f64 = 2.4;

/// The way a plan's rate is for, against which it times the others.
const FAST_RANDOM: LevelMethod = LevelMethod {
    state: StateKind::Fast,
    lower: Lower::Random,
};

/// The rate a plan is timed at, in words where it comes from, and (when its measurement
/// was disturbed by other work) how much longer a build beside that work takes.
struct RateFrom {
    rate: Rate,
    from: String,
    busy_by: Option<f64>,
    /// The ways whose time (`rate.ways`) was measured, each with where.
    ways_from: Vec<(LevelMethod, String)>,
}

/// The plan of `opts` as `awari plan` prints it, line by line. `note` hears what goes to
/// stderr as it happens (warnings, notes, the calibration), each line whole with its
/// `warning:` or `note:`.
pub fn report(opts: &PlanOptions, mut note: impl FnMut(&str)) -> Result<String> {
    if opts.nodes == 0 {
        return Err(Error::Input("--nodes must be at least 1".into()));
    }
    if opts.dtc && opts.nodes > 1 {
        return Err(Error::Input(
            "--dtc plans the tables of one process (`awari dtc` does not run over ranks \
             yet): leave out --nodes"
                .into(),
        ));
    }
    let index = Index::new(opts.pits, opts.max_seeds)?;
    let root = opts.root.as_path();
    // The levels of this database already on disk (the raw file of a level if both are).
    let found: Vec<LevelInfo> = survey(root, false)
        .unwrap_or_default()
        .into_iter()
        .filter(|l| l.rules == opts.rules && l.pits == opts.pits && !l.table && l.problem.is_none())
        .collect();
    let mut on_disk = BTreeMap::new();
    for l in found.iter().rev() {
        on_disk.insert(l.seeds, (l.bytes, l.packed));
    }
    let built: u64 = on_disk.values().map(|&(b, _)| b).sum();
    let dir = db_dir(root, opts.rules, opts.pits);
    // A level being built has its checkpoints there, which the plan counts in its own.
    let saved = checkpoint_bytes(&dir);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let given = |what: &str| Error::Input(what.to_string());
    let machine = Machine {
        nodes: opts.nodes,
        memory: opts
            .memory
            .or_else(memory_total)
            .ok_or_else(|| given("this machine does not say its memory; give --memory-per-node"))?,
        cores: opts.cores.unwrap_or(cores),
        disk: match opts.disk {
            Some(d) => d,
            // The plan counts the levels built already and the checkpoints of the one
            // being built: their room is the database's.
            None => {
                disk_available(root)
                    .ok_or_else(|| given("no free disk figure for --dir; give --disk-per-node"))?
                    + built
                    + saved
            }
        },
    };
    let (ratio, ratio_from) = pack_ratio(&found);
    // The rates file of the folder: measured by the builds there.
    let recorded = rates::read(&dir).unwrap_or_else(|e| {
        note(&format!("warning: {}", e.one_line()));
        None
    });
    // The ways the levels are built (by memory: the same at any rate), whose times a
    // calibration measures.
    let ways: Vec<LevelMethod> = plan(
        &index,
        opts.max_seeds,
        &machine,
        ratio,
        None,
        opts.checkpoints,
    )?
    .iter()
    .filter_map(|l| l.way)
    .fold(Vec::new(), |mut ways, w| {
        if !ways.contains(&w) {
            ways.push(w);
        }
        ways
    });
    let RateFrom {
        rate,
        from: rate_from,
        busy_by,
        ways_from,
    } = match &opts.rates {
        Some(csv) => rate_from_csv(csv)?,
        None => match recorded
            .as_ref()
            .and_then(|r| measured(r, &dir, opts.pits, &mut note))
        {
            Some(measured) => measured,
            None => calibrate(opts.rules, opts.pits, &ways, &mut note)?,
        },
    };
    // The time each level took to build here, by the latest line of the rates file.
    let built_in: BTreeMap<usize, f64> = recorded
        .map(|r| r.latest().iter().map(|l| (l.seeds, l.seconds)).collect())
        .unwrap_or_default();
    let levels = plan(
        &index,
        opts.max_seeds,
        &machine,
        ratio,
        Some(rate),
        opts.checkpoints,
    )?;
    let mut out = Vec::new();
    let disk_from = match (opts.disk, built, saved) {
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
    out.push(format!(
        "plan: {} levels 0..={}, {} pits per side, on {} node(s) of {} memory, {} cores, {} disk{disk_from} ({})",
        opts.rules,
        opts.max_seeds,
        opts.pits,
        machine.nodes,
        bytes(machine.memory),
        machine.cores,
        bytes(machine.disk),
        dir.display()
    ));
    if opts.checkpoints {
        out.push(
            "checkpoints: each level's disk counts two of its solver state (`--checkpoint-every off`: none)"
                .into(),
        );
    }
    if levels.iter().any(|l| l.scratch > 0) {
        out.push(
            "lean: the lean state keeps its best exits and values in two files beside the level, 2 bytes a position, and streamed, while its forward pass runs, its exits and the raises kept for its later windows (counted at 0.8 raises a position of 6 bytes: 3.6 bytes a position with four windows), the larger counted under checkpoints (a lean checkpoint holds its two bits a position and the files' checksum)"
                .into(),
        );
    }
    out.push(format!(
        "rate: {:.0} positions/s/thread ({rate_from}), falling as {}; pack ratio {ratio:.2} ({ratio_from})",
        rate.per_thread,
        rate_fall()
    ));
    let times: Vec<String> = ways
        .iter()
        .filter(|&&w| w != FAST_RANDOM)
        .map(|&w| {
            let from = ways_from
                .iter()
                .find(|(m, _)| *m == w)
                .map_or("a constant, nothing measured here", |(_, f)| f.as_str());
            format!("{w} {:.2} ({from})", rate.ways.of(w))
        })
        .collect();
    if !times.is_empty() {
        out.push(format!(
            "ways: each one's time against the fast state reading at random: {}",
            times.join(", ")
        ));
    }
    out.push(format!(
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
    ));
    for l in &levels {
        let way = l.way.map_or("-".to_string(), |w| w.to_string());
        let on_disk = on_disk.get(&l.seeds).map_or(String::new(), |&(b, packed)| {
            format!(
                " (built: {} {}{})",
                bytes(b),
                if packed { "packed" } else { "raw" },
                built_in
                    .get(&l.seeds)
                    .map_or(String::new(), |&s| format!(" in {}", duration(s)))
            )
        });
        out.push(format!(
            "{:>5} {:>19} {:>15} {:>11} {:>11} {:>11} {:>11} {:>11} {:>12} {:>12} {:>11} {:>10}  {}{on_disk}",
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
            bytes(l.checkpoints + l.scratch),
            duration(l.seconds.unwrap_or(0.0)),
            fits(l, &machine),
        ));
    }
    // The positions of all levels may pass 2^64 where each level's do not.
    let total: u128 = levels.iter().map(|l| l.positions as u128).sum();
    let seconds: f64 = levels.iter().filter_map(|l| l.seconds).sum();
    let last = levels.last().expect("level 0 at least");
    let peak = levels.iter().map(|l| l.memory()).max().unwrap_or(0);
    let ckpt = levels
        .iter()
        .map(|l| l.checkpoints + l.scratch)
        .max()
        .unwrap_or(0);
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
    out.push(format!(
        "total: {} positions; per node: at most {} of memory, {} of raw levels ({} packed){ckpt}; about {}{beside}",
        group_u128(total),
        bytes(peak),
        bytes(last.raw_so_far),
        bytes(last.packed_so_far),
        duration(seconds)
    ));
    advise(&levels, &machine, &mut out, |m| {
        plan(&index, opts.max_seeds, m, ratio, None, opts.checkpoints)
    });
    if opts.dtc {
        dtc_plan(&levels, &machine, &mut out);
    }
    out.push(String::new());
    Ok(out.join("\n"))
}

/// The distance tables' part of a plan: per level the memory of making its table (a word
/// a position, the level's values and every level below, read at random), the table's
/// size (a byte a position: no level measured passes 255 plies), raw and packed
/// ([`DTC_PACK_RATIO`]), and the time, about [`DTC_TIME_FACTOR`] times the level's build.
fn dtc_plan(levels: &[LevelPlan], machine: &Machine, out: &mut Vec<String>) {
    out.push(format!(
        "distance tables (`awari dtc`): a word (4 bytes) a position while a level's table is \
         made, with the level's values and the levels below (read at random); a table of a \
         byte a position (two where a level's longest passes 255 plies: none measured, up to \
         level 30 of either rule set), about {DTC_PACK_RATIO:.1} times smaller packed; about \
         {DTC_TIME_FACTOR:.0} times the level's build"
    ));
    out.push(format!(
        "{:>5} {:>19} {:>11} {:>11} {:>11} {:>12} {:>10}  fits",
        "level", "positions", "memory", "table", "packed", "with levels", "time"
    ));
    let (mut tables, mut packed, mut seconds, mut peak) = (0u64, 0u64, 0.0, 0u64);
    for l in levels {
        // Every level below is mapped (or in memory, packed) and read at random.
        let memory = l.positions * (DTC_STATE_BYTES + 1) + (l.raw_so_far - l.raw);
        let table = PAYLOAD_OFFSET as u64 + l.positions;
        let table_packed = (l.positions as f64 / DTC_PACK_RATIO) as u64;
        tables += table;
        packed += table_packed;
        seconds += l.seconds.unwrap_or(0.0) * DTC_TIME_FACTOR;
        peak = peak.max(memory);
        let fits = match (
            memory <= machine.memory,
            l.raw_so_far + tables <= machine.disk,
        ) {
            (true, true) => "yes",
            (false, true) => "NO: memory",
            (true, false) => "NO: disk",
            (false, false) => "NO: memory, disk",
        };
        out.push(format!(
            "{:>5} {:>19} {:>11} {:>11} {:>11} {:>12} {:>10}  {fits}",
            l.seeds,
            group(l.positions),
            bytes(memory),
            bytes(table),
            bytes(table_packed),
            bytes(l.raw_so_far + tables),
            duration(l.seconds.unwrap_or(0.0) * DTC_TIME_FACTOR),
        ));
    }
    out.push(format!(
        "tables total: at most {} of memory, {} of tables ({} packed; {} with the raw \
         levels); about {}",
        bytes(peak),
        bytes(tables),
        bytes(packed),
        bytes(levels.last().map_or(0, |l| l.raw_so_far) + tables),
        duration(seconds)
    ));
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
/// ones a kill left), with the lean state's named files (`.exits`, `.values`).
fn checkpoint_bytes(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .filter(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            [".awc", ".awc.tmp", ".exits", ".values"]
                .iter()
                .any(|end| name.starts_with("level-") && name.ends_with(end))
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

/// What would make the levels that do not fit fit, as lines of `out`. The advice is a
/// fixed point: `plan_on` plans the same levels on another machine, and the node count and
/// the memory advised are ones that plan says fit, so that running plan again with them
/// says every level fits.
fn advise(
    levels: &[LevelPlan],
    m: &Machine,
    out: &mut Vec<String>,
    plan_on: impl Fn(&Machine) -> Result<Vec<LevelPlan>>,
) {
    let Some(big) = levels.iter().find(|l| !l.fits_memory(m)) else {
        if let Some(l) = levels.iter().find(|l| l.disk_fit(m) == DiskFit::No) {
            out.push(disk_advice(levels, l.seeds, m.nodes));
        } else if let Some(l) = levels.iter().find(|l| !l.fits_disk(m)) {
            out.push(format!(
                "disk: raw levels{} run out of disk at level {}; packing them as they are built (`awari pack --all --remove-raw`) needs {} per node",
                if l.checkpoints > 0 { " and checkpoints" } else { "" },
                l.seeds,
                bytes(
                    levels
                        .iter()
                        .map(|l| l.packed_so_far + l.checkpoints + l.scratch)
                        .max()
                        .unwrap_or(0)
                )
            ));
        } else {
            out.push("every level fits".into());
        }
        // What the build does where the raw levels leave less room than two checkpoints.
        let raw = |f: DiskFit| levels.iter().filter(move |l| l.disk_fit(m) == f);
        if let Some(l) = raw(DiskFit::RawOneCheckpoint).next() {
            out.push(format!(
                "raw, from level {} on the build keeps one checkpoint at a time (it removes each before writing the next: a stop while one is written costs the level)",
                l.seeds
            ));
        }
        if let Some(l) = raw(DiskFit::RawNoCheckpoint).next() {
            out.push(format!(
                "raw, from level {} on the build has no room for a checkpoint and skips them",
                l.seeds
            ));
        }
        return;
    };
    let fits = |nodes: usize| {
        plan_on(&Machine { nodes, ..*m }).is_ok_and(|p| p.iter().all(|l| l.fits_memory(m)))
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
    out.push(format!(
        "memory: level {} is the first that does not fit ({} per node even with the smallest \
         state, {} there is); {spread}, or on {} with --memory-per-node {gb}",
        big.seeds,
        bytes(big.memory()),
        bytes(m.memory),
        on(m.nodes),
    ));
    // The disk those nodes need: the advice above is about memory alone.
    let advised = Machine {
        nodes: nodes.unwrap_or(m.nodes),
        ..*m
    };
    if let Ok(there) = plan_on(&advised) {
        if let Some(l) = there.iter().find(|l| l.disk_fit(m) == DiskFit::No) {
            out.push(disk_advice(&there, l.seeds, advised.nodes));
        }
    }
}

/// The disk advice where level `seeds` does not fit even packed, on `nodes` nodes: the
/// disk per node that every level of `levels` fits, raw and packed as built.
fn disk_advice(levels: &[LevelPlan], seeds: usize, nodes: usize) -> String {
    let need = |f: fn(&LevelPlan) -> u64| {
        let most = levels
            .iter()
            .map(|l| f(l) + l.checkpoints + l.scratch)
            .max();
        // Rounded up to what --disk-per-node takes (0.01 GB).
        (most.unwrap_or(0) as f64 / 1e7).ceil() / 100.0
    };
    format!(
        "disk: level {seeds} does not fit the disk of {nodes} node{} even packed; every level \
         fits with --disk-per-node {} raw, or {} with each level packed as it is built \
         (`awari build --pack`)",
        if nodes == 1 { "" } else { "s" },
        need(|l| l.raw_so_far),
        need(|l| l.packed_so_far),
    )
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
        format!(
            "measured on the {} packed level{} there",
            packed.len(),
            if packed.len() == 1 { "" } else { "s" }
        ),
    )
}

/// The rate of the largest level of the largest thread count in a bench CSV.
fn rate_from_csv(path: &Path) -> Result<RateFrom> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    let Some((per_thread, positions, threads)) = largest_level_rate(&text) else {
        return Err(Error::Input(format!(
            "{}: no level rows (is it a CSV of `awari bench --csv`?)",
            path.display()
        )));
    };
    Ok(RateFrom {
        rate: Rate {
            per_thread,
            level_size: positions,
            ways: WayCosts::default(),
        },
        from: format!(
            "{}: its largest level, {} positions, with {threads} threads",
            path.display(),
            group(positions)
        ),
        busy_by: None,
        ways_from: Vec::new(),
    })
}

/// The rate of the largest levels built in `dir`, from its rates file, and where it comes
/// from; warnings to `note` for levels built beside other work. `None` when no level
/// large enough was measured there.
fn measured(
    recorded: &Rates,
    dir: &Path,
    pits: usize,
    note: &mut impl FnMut(&str),
) -> Option<RateFrom> {
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
        note(&format!(
            "warning: {} line(s) of {} not understood and left out",
            recorded.ignored,
            path.display()
        ));
    }
    if !m.left_out.is_empty() {
        note(&format!(
            "note: level(s) {} of {} left out: built beside other work (threads on a CPU under {:.0} % of the time)",
            list(&m.left_out),
            path.display(),
            100.0 * BUSY_AT_LEAST
        ));
    }
    if !m.disturbed.is_empty() {
        let shares: Vec<String> = m
            .disturbed
            .iter()
            .map(|(n, b)| format!("level {n} {:.0} %", 100.0 * b))
            .collect();
        note(&format!(
            "warning: the levels measured were all built beside other work (threads on a CPU: {}): the times below use their rates per CPU second, what the threads did while they ran; a build beside such work takes longer",
            shares.join(", ")
        ));
    }
    let top = *m.levels.last().expect("a level at least");
    Some(RateFrom {
        rate: m.rate,
        from: format!(
            "measured by the build of level(s) {} in {}, {} thread(s): the median, referred to \
             the fast state reading at random on level {top}'s {} positions",
            list(&m.levels),
            path.display(),
            m.threads,
            group(m.rate.level_size)
        ),
        busy_by: (!m.disturbed.is_empty()).then(|| m.rate.per_thread / m.by_wall.max(1e-9)),
        ways_from: m
            .ways_from
            .iter()
            .map(|(w, levels)| {
                let from = format!("measured on level(s) {} built {w} here", list(levels));
                (*w, from)
            })
            .collect(),
    })
}

/// Builds small levels in a scratch folder with every core and returns the rate of the
/// largest one, then builds that level again in each of `ways` but the fast state reading
/// at random, timing each against it: a few seconds. A calibration disturbed by other work
/// is said to `note`.
fn calibrate(
    rules: Rules,
    pits: usize,
    ways: &[LevelMethod],
    note: &mut impl FnMut(&str),
) -> Result<RateFrom> {
    let top = Index::max_supported(pits)?;
    let index = Index::new(pits, top)?;
    // The largest level of at most about 5 million positions: a few seconds in all.
    let max_seeds = (1..=top)
        .take_while(|&n| index.level_size(n) <= 5_000_000)
        .last()
        .unwrap_or(1);
    let scratch = std::env::temp_dir().join(format!("awari-plan-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).map_err(|e| Error::io(&scratch, e))?;
    let opts = BuildOptions::new(&scratch, rules, pits, max_seeds).force(true);
    note(&format!(
        "calibrating: {rules} levels 0..={max_seeds}, {pits} pits per side"
    ));
    let reports = build(&opts, |_| {}, |_| {});
    // The same level in each other way the plan takes, its time against the fast state's
    // reading at random (the calibration's way: its levels fit the memory).
    let mut timed = Vec::new();
    if let Ok(reports) = &reports {
        let fast_seconds = reports.last().expect("level 0 at least").seconds;
        for &way in ways.iter().filter(|&&w| w != FAST_RANDOM) {
            note(&format!("calibrating: level {max_seeds} built {way}"));
            let level = crate::db::layout::level_path(&db_dir(&scratch, rules, pits), max_seeds);
            let _ = std::fs::remove_file(&level);
            let again = BuildOptions {
                state: Some(way.state),
                lower: Some(way.lower),
                ..BuildOptions::new(&scratch, rules, pits, max_seeds)
            };
            let built = build(&again, |_| {}, |_| {});
            if let Some(last) = built.ok().and_then(|r| r.last().cloned()) {
                timed.push((way, last.seconds / fast_seconds.max(1e-9)));
            }
        }
    }
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
        note(&format!("warning: {w}"));
    }
    let busy = calibration.busy().map_or(String::new(), |b| {
        format!(", threads on a CPU {:.0} % of the time", 100.0 * b)
    });
    let per = if calibration.disturbed() {
        "per CPU second: disturbed"
    } else {
        "by the wall clock"
    };
    let mut rate = calibration.rate();
    let mut ways_from = Vec::new();
    for (way, factor) in timed {
        rate.ways = rate.ways.with(way, factor);
        ways_from.push((way, format!("calibrated here on level {max_seeds}")));
    }
    Ok(RateFrom {
        rate,
        from: format!(
            "calibrated here on level {max_seeds} ({} positions) with {threads} threads{busy}, {per}",
            group(last.stats.positions)
        ),
        busy_by: calibration
            .disturbed()
            .then(|| calibration.rate().per_thread / calibration.by_wall().max(1e-9)),
        ways_from,
    })
}
