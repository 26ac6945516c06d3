//! `awari export`: levels written as Romein and Bal's `scores.N` files.

use std::path::PathBuf;

use clap::Args;

use awari::expert::figures::group;

use super::{DbArgs, LevelsArg, ShareFormat, Threads};

/// Write levels as Romein and Bal's scores.N files (payload only: one signed byte per
/// position, in their order; awari rules, 6 pits per side).
#[derive(Args, Debug)]
pub struct ExportArgs {
    /// File format; only 'romein-bal' for now.
    #[arg(long, default_value = "romein-bal")]
    format: ShareFormat,
    /// Folder to write scores.N into (created if missing).
    #[arg(long)]
    out: PathBuf,
    #[command(flatten)]
    db: DbArgs,
    #[command(flatten)]
    levels: LevelsArg,
    #[command(flatten)]
    threads: Threads,
}

pub fn run(args: ExportArgs) -> anyhow::Result<()> {
    let ExportArgs {
        format: ShareFormat::RomeinBal,
        out,
        db,
        levels,
        threads,
    } = args;
    db.readable()?;
    let levels = levels.range()?;
    let (pool, _) = threads.pool()?;
    let rows = pool.install(|| {
        awari::expert::romein_bal::export(db.dir(), db.rules(), db.pits(), &out, levels, |t| {
            say!(
                "level {:>3}: {} ({} bytes)",
                t.seeds,
                t.path.display(),
                group(t.bytes)
            )
        })
    })?;
    let bytes: u64 = rows.iter().map(|t| t.bytes).sum();
    say!(
        "exported {} levels, {} bytes, to {}",
        rows.len(),
        group(bytes),
        out.display()
    );
    Ok(())
}
