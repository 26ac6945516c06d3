//! `awari count`: the number of positions of every level, no database needed.

use std::io::Write;

use clap::Args;

use awari::expert::figures::{group, group_u128};
use awari::expert::{Index, MAX_PITS, MAX_SEEDS};

use super::whole;

/// Print the number of positions of every level and the total.
#[derive(Args, Debug)]
pub struct CountArgs {
    /// Pits per side, 2..=8.
    #[arg(long, default_value_t = 6, value_parser = whole::<usize>(2, MAX_PITS as u64))]
    pits: usize,
    /// Highest level to count, 0..=127 (default 4 seeds per pit).
    #[arg(long, value_parser = whole::<usize>(0, MAX_SEEDS as u64))]
    max_seeds: Option<usize>,
}

pub fn run(args: CountArgs) -> anyhow::Result<()> {
    let CountArgs { pits, max_seeds } = args;
    let max = max_seeds.unwrap_or(8 * pits);
    let index = Index::new(pits, max)?;
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "{:>5} {:>22} {:>22}",
        "level", "positions", "cumulative"
    )?;
    let mut total: u128 = 0;
    for n in 0..=max {
        let s = index.level_size(n);
        total += s as u128;
        writeln!(out, "{:>5} {:>22} {:>22}", n, group(s), group_u128(total))?;
    }
    writeln!(
        out,
        "total levels 0..={max}: {} positions",
        group_u128(total)
    )?;
    if pits == 6 && max >= 48 {
        // The Romein-Bal count: level 47 cannot occur (the first capture takes at least
        // two seeds) and the start position, not stored, is counted once.
        let rb: u64 = (0..=46).map(|n| index.level_size(n)).sum::<u64>() + index.level_size(48) + 1;
        writeln!(
            out,
            "Romein-Bal database (levels 0..=46 and 48, plus the start position): {} positions",
            group(rb)
        )?;
    }
    Ok(())
}
