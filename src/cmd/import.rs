//! `awari import`: Romein and Bal's `scores.N` files made native levels, raw or packed.

use std::path::PathBuf;

use clap::Args;

use awari::expert::figures::group;
use awari::expert::pack::{Model, PackOptions, DEFAULT_ZSTD_LEVEL};
use awari::expert::romein_bal::{import, ImportOptions};

use super::{whole, DbArgs, ShareFormat, Threads};

/// Make native levels of a folder of Romein and Bal's scores.N files (any subset of
/// levels; each file's size must be its level's size).
#[derive(Args, Debug)]
pub struct ImportArgs {
    /// Folder holding scores.0, scores.1, ...
    from: PathBuf,
    /// File format; only 'romein-bal' for now.
    #[arg(long, default_value = "romein-bal")]
    format: ShareFormat,
    #[command(flatten)]
    db: DbArgs,
    /// Write packed levels instead of raw ones.
    #[arg(long)]
    pack: bool,
    /// zstd compression level with --pack, 1..=22.
    #[arg(long, default_value_t = DEFAULT_ZSTD_LEVEL, value_parser = whole::<i32>(1, 22))]
    level_of_compression: i32,
    /// Value model with --pack (see `pack --help`); 'exits' needs every level below each
    /// one imported, imported too or already in the database.
    #[arg(long, default_value = "exits")]
    model: Model,
    /// Replace levels already in the database (default: refuse).
    #[arg(long)]
    force: bool,
    #[command(flatten)]
    threads: Threads,
}

pub fn run(args: ImportArgs) -> anyhow::Result<()> {
    let ImportArgs {
        from,
        format: ShareFormat::RomeinBal,
        db,
        pack,
        level_of_compression,
        model,
        force,
        threads,
    } = args;
    db.writable()?;
    let pack = pack.then_some(PackOptions {
        zstd_level: level_of_compression,
        model,
        ..Default::default()
    });
    let (pool, _) = threads.pool()?;
    let opts = ImportOptions { pack, force };
    let rows = pool.install(|| {
        import(db.dir(), db.rules(), db.pits(), &from, &opts, |t| {
            say!(
                "level {:>3}: {} positions -> {} ({} bytes)",
                t.seeds,
                group(t.positions),
                t.path.display(),
                group(t.bytes)
            )
        })
    })?;
    say!(
        "imported {} levels into {}",
        rows.len(),
        db.db_dir().display()
    );
    Ok(())
}
