//! The subcommands, one file each: its clap `Args` (what the user may say) and `run`
//! (call the library, print). The flags that several subcommands share are defined once
//! here.

pub mod bench;
pub mod build;
pub mod count;
pub mod export;
pub mod gather;
pub mod import;
pub mod info;
pub mod pack;
pub mod plan;
pub mod play;
pub mod plot;
pub mod query;
#[cfg(feature = "serve")]
pub mod serve;
pub mod stats;
pub mod unpack;
pub mod variants;
pub mod verify;

use std::ops::RangeInclusive;
use std::path::PathBuf;

use clap::Args;

use awari::Rules;

/// Which database: `--dir`, `--pits`, `--rules`.
#[derive(Args, Clone, Debug)]
pub struct DbArgs {
    #[command(flatten)]
    pub root: RootArg,
    /// Pits per side (2..=8).
    #[arg(long, default_value_t = 6)]
    pub pits: usize,
    /// Rule set: 'awari' (Romein-Bal, Computer Olympiad) or 'oware' (Abapa: grand slam
    /// captures nothing, a player who cannot feed takes the rest).
    #[arg(long, default_value = "awari")]
    pub rules: Rules,
}

impl DbArgs {
    /// The root folder.
    pub fn dir(&self) -> &std::path::Path {
        &self.root.dir
    }

    /// The folder of this database: `<root>/<rules>-<pits>`.
    pub fn db_dir(&self) -> PathBuf {
        awari::expert::db_dir(self.dir(), self.rules, self.pits)
    }
}

/// `--dir`: the root folder of the databases.
#[derive(Args, Clone, Debug)]
pub struct RootArg {
    /// Root folder of the databases; each rule set and board size has a sub-folder
    /// (e.g. db/awari-6).
    #[arg(long, default_value = "db")]
    pub dir: PathBuf,
}

/// `--threads`: the size of the worker pool.
#[derive(Args, Clone, Copy, Debug)]
pub struct Threads {
    /// Worker threads (default: one per core).
    #[arg(long)]
    pub threads: Option<usize>,
}

impl Threads {
    /// The threads asked for, checked (`1..=MAX_THREADS`); by default one per core, at
    /// most `MAX_THREADS`.
    pub fn count(self) -> anyhow::Result<usize> {
        match self.threads {
            Some(t) => Ok(awari::expert::check_threads(t)?),
            None => Ok(default_threads()),
        }
    }

    /// A rayon pool of the threads asked for, and their number.
    pub fn pool(self) -> anyhow::Result<(rayon::ThreadPool, usize)> {
        let threads = self.count()?;
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()?;
        Ok((pool, threads))
    }
}

/// One thread per core, at most `MAX_THREADS` (a default is never refused).
pub fn default_threads() -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(awari::expert::MAX_THREADS)
}

/// `--levels A..=B`: which levels a reader works on.
#[derive(Args, Clone, Debug)]
pub struct LevelsArg {
    /// Levels to read, e.g. 0..=20 or 17 (default: every level present).
    #[arg(long, value_name = "A..=B")]
    pub levels: Option<String>,
}

impl LevelsArg {
    /// The range asked for, if any.
    pub fn range(&self) -> anyhow::Result<Option<RangeInclusive<usize>>> {
        levels_range(self.levels.as_deref())
    }
}

/// A `--levels` range, if one was given. Parsed here rather than by clap, so that a bad
/// range is one `error:` line like every other error of the tool.
pub fn levels_range(levels: Option<&str>) -> anyhow::Result<Option<RangeInclusive<usize>>> {
    levels
        .map(awari::expert::parse_levels)
        .transpose()
        .map_err(|e| anyhow::anyhow!(e))
}

/// File formats of other programs (`export --format`, `import --format`).
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum ShareFormat {
    /// Romein and Bal's scores.N files (awari, 6 pits per side).
    RomeinBal,
}

/// A usage error found once clap has parsed the arguments (flags that cannot go
/// together): `main` prints it as one `error:` line and exits with status 2, as clap does
/// for its own.
#[derive(Debug)]
pub struct Usage(pub String);

impl std::fmt::Display for Usage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Usage {}
