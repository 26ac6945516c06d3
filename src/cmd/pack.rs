//! `awari pack`: levels compressed into packed files, a row per level.

use anyhow::bail;
use clap::Args;

use awari::expert::figures::group;
use awari::expert::pack::{
    LevelStack, Model, PackOptions, PackReport, DEFAULT_BLOCK, DEFAULT_ZSTD_LEVEL,
};

use awari::expert::MAX_SEEDS;

use super::{whole, DbArgs, Threads};

/// Compress levels into packed files (independent zstd blocks with a block index and a
/// checksum per block) that query, verify and build read directly; a level's distance
/// table (`awari dtc`) is packed with it, 16,384 distances a block.
#[derive(Args, Debug)]
// One of --level and --all, and clap names both when neither is given.
#[group(id = "which", required = true, multiple = false, args = ["level", "all"])]
pub struct PackArgs {
    #[command(flatten)]
    db: DbArgs,
    /// The level to pack, 0..=127.
    #[arg(long, value_parser = whole::<usize>(0, MAX_SEEDS as u64))]
    level: Option<usize>,
    /// Pack every raw level and raw distance table of the database.
    #[arg(long)]
    all: bool,
    /// zstd compression level, 1..=22 (higher: smaller and slower to pack; probing speed
    /// hardly changes).
    #[arg(long, default_value_t = DEFAULT_ZSTD_LEVEL, value_parser = whole::<i32>(1, 22))]
    level_of_compression: i32,
    /// Values per block: smaller blocks make a probe that misses the cache faster (it
    /// decompresses one block), larger ones compress a little better. 1024..=16777216.
    #[arg(long, default_value_t = DEFAULT_BLOCK, value_parser = whole::<u32>(1024, 1 << 24))]
    block_size: u32,
    /// What the blocks hold: 'exits' stores what the captures do not already say (about
    /// 1.27 times smaller; needs the levels below, and a probe reads them too), 'plain'
    /// the values themselves.
    #[arg(long, default_value = "exits")]
    model: Model,
    /// Remove each raw level or table once its pack is written and checked against it
    /// (default: keep both; the raw file is read when both are present).
    #[arg(long)]
    remove_raw: bool,
    #[command(flatten)]
    threads: Threads,
}

pub fn run(args: PackArgs) -> anyhow::Result<()> {
    let opts = PackOptions {
        zstd_level: args.level_of_compression,
        block: args.block_size,
        model: args.model,
    };
    // The exit model reads the levels below each one packed: keep them as we go up.
    let keep = opts.model == Model::Exits;
    each_level(
        &args.db,
        args.level,
        false,
        keep,
        args.threads,
        |levels, n| awari::expert::pack::pack_files(levels, n, &opts, args.remove_raw),
    )
}

/// The levels `pack --all` or `unpack --all` work on, or the one level asked for.
fn levels_to_do(
    dir: &std::path::Path,
    one: Option<usize>,
    packed: bool,
) -> anyhow::Result<Vec<usize>> {
    if let Some(n) = one {
        return Ok(vec![n]);
    }
    if !dir.is_dir() {
        bail!("no database in {}", dir.display());
    }
    // Levels and distance tables alike.
    let mut files = awari::expert::list_levels(dir)?;
    files.extend(awari::expert::list_tables(dir)?);
    let mut v: Vec<usize> = files
        .into_iter()
        .filter(|&(_, p)| p == packed)
        .map(|(n, _)| n)
        .collect();
    v.sort();
    v.dedup();
    if v.is_empty() {
        bail!(
            "no {} levels in {}",
            if packed { "packed" } else { "raw" },
            dir.display()
        );
    }
    Ok(v)
}

pub(super) fn print_pack_row(r: &PackReport) {
    say!(
        "{:>5} {:>15} {:>15} {:>15} {:>7.2} {:>9.2}  {}",
        r.seeds,
        group(r.positions),
        group(r.raw_bytes),
        group(r.packed_bytes),
        r.raw_bytes as f64 / r.packed_bytes.max(1) as f64,
        r.seconds,
        r.holds
    );
}

pub(super) fn print_pack_total(rows: &[PackReport]) {
    let raw: u64 = rows.iter().map(|r| r.raw_bytes).sum();
    let packed: u64 = rows.iter().map(|r| r.packed_bytes).sum();
    say!(
        "total: {} files, {} raw bytes, {} packed bytes, ratio {:.2}",
        rows.len(),
        group(raw),
        group(packed),
        raw as f64 / packed.max(1) as f64
    );
}

/// Runs `step` (pack or unpack) on the level asked for or on every level of the kind
/// `--all` takes (`packed`: the packed ones), in increasing order, printing a row for
/// each and a total. `keep`: whether the levels done are kept for the ones above.
pub(super) fn each_level(
    db: &DbArgs,
    level: Option<usize>,
    packed: bool,
    keep: bool,
    threads: Threads,
    mut step: impl FnMut(&mut LevelStack, usize) -> awari::Result<Vec<PackReport>> + Send,
) -> anyhow::Result<()> {
    db.readable()?;
    let (pool, _) = threads.pool()?;
    let dir = db.db_dir();
    let levels = levels_to_do(&dir, level, packed)?;
    // No build, pack or unpack into the same folder meanwhile.
    let what = if packed { "awari unpack" } else { "awari pack" };
    let _lock = awari::expert::DirLock::acquire(&dir, what)?;
    let mut stack = LevelStack::new(&dir, db.rules(), db.pits(), keep)?;
    say!(
        "{:>5} {:>15} {:>15} {:>15} {:>7} {:>9}  holds",
        "level",
        "positions",
        "raw bytes",
        "packed bytes",
        "ratio",
        "seconds"
    );
    let mut rows = Vec::new();
    for n in levels {
        for r in pool.install(|| step(&mut stack, n))? {
            print_pack_row(&r);
            rows.push(r);
        }
    }
    print_pack_total(&rows);
    Ok(())
}
