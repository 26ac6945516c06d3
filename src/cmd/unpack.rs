//! `awari unpack`: raw levels restored from packed files, a row per level.

use clap::Args;

use super::pack::each_level;
use super::{whole, DbArgs, Threads};
use awari::expert::MAX_SEEDS;

/// Restore raw levels and distance tables from packed files, byte for byte.
#[derive(Args, Debug)]
// One of --level and --all, and clap names both when neither is given.
#[group(id = "which", required = true, multiple = false, args = ["level", "all"])]
pub struct UnpackArgs {
    #[command(flatten)]
    db: DbArgs,
    /// The level to unpack, 0..=127.
    #[arg(long, value_parser = whole::<usize>(0, MAX_SEEDS as u64))]
    level: Option<usize>,
    /// Unpack every packed level and packed distance table of the database.
    #[arg(long)]
    all: bool,
    /// Remove each packed file once its raw level is written (default: keep it).
    #[arg(long)]
    remove_packed: bool,
    #[command(flatten)]
    threads: Threads,
}

pub fn run(args: UnpackArgs) -> anyhow::Result<()> {
    let UnpackArgs {
        db,
        level,
        all: _,
        remove_packed,
        threads,
    } = args;
    let dir = db.db_dir();
    let keep = awari::expert::pack::has_exit_model(&dir);
    each_level(&db, level, true, keep, threads, |levels, n| {
        awari::expert::pack::unpack_files(levels, n, remove_packed)
    })
}
