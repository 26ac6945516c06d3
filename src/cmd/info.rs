//! `awari info`: every level file under a root folder, with its state.

use anyhow::bail;
use clap::Args;

use awari::expert::figures::group;

use super::{RootArg, Threads};

/// List every level and distance table under the root folder (every rule set and board
/// size): positions, raw or packed, bytes on disk, compression ratio and checksum state
/// (model `dtc`: a level's distance table).
#[derive(Args, Debug)]
pub struct InfoArgs {
    #[command(flatten)]
    root: RootArg,
    /// Recompute every checksum (reads every level; decompresses packed ones). Default:
    /// check headers and block tables only.
    #[arg(long)]
    check: bool,
    #[command(flatten)]
    threads: Threads,
}

pub fn run(args: InfoArgs) -> anyhow::Result<()> {
    let InfoArgs {
        root,
        check,
        threads,
    } = args;
    let (rules, pits) = root.database().unwrap_or((awari::Rules::Awari, 6));
    root.readable(rules, pits)?;
    let (pool, _) = threads.pool()?;
    let mut levels = pool.install(|| awari::expert::pack::survey(root.root(), check))?;
    // A database folder given as --dir: its levels alone.
    if let Some((rules, pits)) = root.database() {
        levels.retain(|l| l.rules == rules && l.pits == pits);
    }
    let dir = root.dir;
    if levels.is_empty() {
        bail!("no levels under {}", dir.display());
    }
    say!(
        "{:>6} {:>3} {:>5} {:>15} {:>6} {:>15} {:>7} {:>5}  checksum",
        "rules",
        "P",
        "level",
        "positions",
        "kind",
        "bytes",
        "ratio",
        "model"
    );
    let mut bad = 0;
    for l in &levels {
        let state = match (&l.problem, l.checked) {
            (None, true) => "ok".to_string(),
            (None, false) => "header ok (--check to recompute)".to_string(),
            (Some(p), _) => {
                bad += 1;
                format!("BAD: {p}")
            }
        };
        say!(
            "{:>6} {:>3} {:>5} {:>15} {:>6} {:>15} {:>7.2} {:>5}  {state}",
            l.rules.name(),
            l.pits,
            l.seeds,
            group(l.positions),
            if l.packed { "packed" } else { "raw" },
            group(l.bytes),
            l.raw_bytes as f64 / l.bytes.max(1) as f64,
            if l.table {
                "dtc"
            } else {
                l.model.map_or("-", |m| m.name())
            },
        );
    }
    let raw: u64 = levels.iter().map(|l| l.raw_bytes).sum();
    let bytes: u64 = levels.iter().map(|l| l.bytes).sum();
    say!(
        "total: {} level files{}, {} bytes on disk ({} raw, ratio {:.2}){}",
        levels.iter().filter(|l| !l.table).count(),
        match levels.iter().filter(|l| l.table).count() {
            0 => String::new(),
            t => format!(" and {t} distance tables"),
        },
        group(bytes),
        group(raw),
        raw as f64 / bytes.max(1) as f64,
        if bad > 0 {
            format!(", {bad} damaged")
        } else {
            String::new()
        }
    );
    if bad > 0 {
        bail!(
            "{bad} file(s) under {} are damaged (see the table above)",
            dir.display()
        );
    }
    Ok(())
}
