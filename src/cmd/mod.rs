//! The subcommands: each parses nothing (clap did), calls the library and prints.

pub mod bench;
pub mod build;
pub mod play;
pub mod plot;
pub mod query;
pub mod share;
pub mod stats;
pub mod verify;

use std::ops::RangeInclusive;

use anyhow::bail;

/// A `--levels A..=B` argument, parsed (an error says what a range looks like).
pub fn levels_arg(levels: Option<String>) -> anyhow::Result<Option<RangeInclusive<usize>>> {
    levels
        .map(|s| awari::parse_levels(&s))
        .transpose()
        .map_err(|e| anyhow::anyhow!(e))
}

pub fn thread_pool(threads: Option<usize>) -> anyhow::Result<(rayon::ThreadPool, usize)> {
    let threads =
        threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    if threads == 0 {
        bail!("--threads must be at least 1");
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()?;
    Ok((pool, threads))
}
