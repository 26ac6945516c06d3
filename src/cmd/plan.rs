//! `awari plan`: what a build of levels 0..=N needs per node (solver memory, disk) and how
//! long it should take, on this machine or on the cluster described, before it starts.

use std::path::PathBuf;

use clap::Args;

use awari::expert::{MAX_PITS, MAX_SEEDS, MAX_THREADS};
use awari::plan::{report, PlanOptions, MAX_NODES};
use awari::Rules;

use super::{parse_every, real, whole, Every, RootArg};

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
    /// Also plan the distance tables (`awari dtc`, `awari build --dtc`): per level the
    /// memory of making its table, its size and time (one process; not with --nodes).
    #[arg(long)]
    dtc: bool,
}

pub fn run(args: PlanArgs) -> anyhow::Result<()> {
    // The pits and rules planned: given, else from --dir's name, else 6 and awari. A plan
    // may be of a database not made yet, but not in the folder of another one.
    let own = args.root.agree(args.given_rules, args.given_pits)?;
    args.root.writable()?;
    let gb = |x: f64| (x * 1e9) as u64;
    let opts = PlanOptions {
        root: args.root.root().to_path_buf(),
        rules: args
            .given_rules
            .or(own.map(|o| o.0))
            .unwrap_or(Rules::Awari),
        pits: args.given_pits.or(own.map(|o| o.1)).unwrap_or(6),
        max_seeds: args.max_seeds,
        nodes: args.nodes,
        memory: args.memory_per_node.map(gb),
        cores: args.cores_per_node,
        disk: args.disk_per_node.map(gb),
        checkpoints: args.checkpoint_every.0.is_some(),
        rates: args.rates,
        dtc: args.dtc,
    };
    let text = report(&opts, |line| warn!("{line}"))?;
    say_part!("{text}");
    Ok(())
}
