//! `awari gather`: the standard level files of a database assembled from the slices of a
//! build over several ranks.

use std::path::PathBuf;

use clap::Args;

use awari::expert::{db_dir, Index};

use super::DbArgs;

/// Assemble the level files of a database (in --dir) from the slices that the ranks of a
/// distributed build kept in their folders (--from, one or more roots): byte for byte the
/// levels a single process builds.
#[derive(Args, Debug)]
pub struct GatherArgs {
    /// Root folders holding the ranks' slices (each with its <rules>-<P> folder).
    #[arg(long, num_args = 1.., required = true, value_name = "DIR")]
    from: Vec<PathBuf>,
    #[command(flatten)]
    db: DbArgs,
}

pub fn run(args: GatherArgs) -> anyhow::Result<()> {
    let GatherArgs { from, db } = args;
    db.writable()?;
    let index = Index::new(db.pits(), Index::max_supported(db.pits())?)?;
    let from: Vec<PathBuf> = from
        .iter()
        .map(|root| db_dir(root, db.rules(), db.pits()))
        .collect();
    let out = db.db_dir();
    std::fs::create_dir_all(&out)?;
    let _lock = awari::expert::DirLock::acquire(&out, "awari gather")?;
    let levels = awari::expert::ranks::gather(&from, &out, &index, db.rules())?;
    println!(
        "gathered {} levels ({}..={}) into {}",
        levels.len(),
        levels.first().copied().unwrap_or(0),
        levels.last().copied().unwrap_or(0),
        out.display()
    );
    Ok(())
}
