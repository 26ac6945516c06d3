//! `awari gather`: the standard level files of a database assembled from the slices of a
//! build over several ranks.

use std::path::PathBuf;

use clap::Args;

use awari::expert::pack::{pack_level, LevelStack, Model, PackOptions};
use awari::expert::{db_dir, figures, Index};

use super::DbArgs;

/// Assemble the level files of a database (in --dir) from the slices that the ranks of a
/// distributed build kept in their folders (--from, one or more roots): byte for byte the
/// levels a single process builds (with --pack, the packed levels `awari pack` makes of
/// them).
#[derive(Args, Debug)]
pub struct GatherArgs {
    /// Root folders holding the ranks' slices (each with its <rules>-<P> folder).
    #[arg(long, num_args = 1.., required = true, value_name = "DIR")]
    from: Vec<PathBuf>,
    /// Pack each level once gathered (the plain model, default block and zstd level; every
    /// block checked against the raw level, which is then removed): a build over ranks
    /// gives a packed database this way, one raw level on disk at a time.
    #[arg(long)]
    pack: bool,
    #[command(flatten)]
    db: DbArgs,
}

pub fn run(args: GatherArgs) -> anyhow::Result<()> {
    let GatherArgs { from, db, pack } = args;
    db.writable()?;
    let index = Index::new(db.pits(), Index::max_supported(db.pits())?)?;
    let from: Vec<PathBuf> = from
        .iter()
        .map(|root| db_dir(root, db.rules(), db.pits()))
        .collect();
    let out = db.db_dir();
    std::fs::create_dir_all(&out)?;
    let _lock = awari::expert::DirLock::acquire(&out, "awari gather")?;
    let mut stack = LevelStack::new(&out, db.rules(), db.pits(), false)?;
    let (mut raw, mut packed) = (0u64, 0u64);
    let opts = PackOptions {
        model: Model::Plain,
        ..PackOptions::default()
    };
    let levels = awari::expert::ranks::gather_then(&from, &out, &index, db.rules(), |n| {
        if pack {
            let r = pack_level(&mut stack, n, &opts, true)?;
            (raw, packed) = (raw + r.raw_bytes, packed + r.packed_bytes);
        }
        Ok(())
    })?;
    say!(
        "gathered {} levels ({}..={}) into {}{}",
        levels.len(),
        levels.first().copied().unwrap_or(0),
        levels.last().copied().unwrap_or(0),
        out.display(),
        if pack {
            format!(
                ", packed: {} raw, {} packed",
                figures::bytes(raw),
                figures::bytes(packed)
            )
        } else {
            String::new()
        }
    );
    Ok(())
}
