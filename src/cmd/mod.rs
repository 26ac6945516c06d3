//! The subcommands, one file each: its clap `Args` (what the user may say) and `run`
//! (call the library, print). The flags that several subcommands share are defined once
//! here.

/// `say!` that never panics: [`out::line`].
macro_rules! say {
    () => {
        $crate::cmd::out::line(format_args!(""))
    };
    ($($arg:tt)*) => {
        $crate::cmd::out::line(format_args!($($arg)*))
    };
}

/// `print!` that never panics, flushed at once: [`out::part`].
macro_rules! say_part {
    ($($arg:tt)*) => {
        $crate::cmd::out::part(format_args!($($arg)*))
    };
}

/// `warn!` that never panics: [`out::warn`].
macro_rules! warn {
    ($($arg:tt)*) => {
        $crate::cmd::out::warn(format_args!($($arg)*))
    };
}

pub mod bench;
pub mod build;
pub mod count;
pub mod dtc;
pub mod export;
pub mod gather;
pub mod import;
pub mod info;
pub mod interrupt;
pub mod out;
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

use awari::expert::{MAX_PITS, MAX_THREADS};
use awari::Rules;

/// Which database: `--dir`, `--pits`, `--rules`. `--dir` may name the root folder (`db`)
/// or the database folder itself (`db/awari-6`), as `Tablebase::open` takes either; a
/// `--pits` or `--rules` that contradicts such a folder is refused ([`DbArgs::check`]),
/// not taken for another database to nest inside it.
#[derive(Args, Clone, Debug)]
pub struct DbArgs {
    #[command(flatten)]
    pub root: RootArg,
    /// Pits per side, 2..=8 (default: 6, or what a database folder given as --dir says).
    #[arg(long = "pits", id = "pits", value_name = "PITS", value_parser = whole::<usize>(2, MAX_PITS as u64))]
    given_pits: Option<usize>,
    /// Rule set: 'awari' (Romein-Bal, Computer Olympiad) or 'oware' (Abapa: grand slam
    /// captures nothing, a player who cannot feed takes the rest); default: awari, or what
    /// a database folder given as --dir says.
    #[arg(long = "rules", id = "rules", value_name = "RULES")]
    given_rules: Option<Rules>,
}

impl DbArgs {
    /// Refuses a `--pits` or `--rules` that contradicts the database folder `--dir` names
    /// itself (a usage error), rather than taking `--dir` for a root and nesting another
    /// database inside that folder.
    pub fn check(&self) -> anyhow::Result<()> {
        self.root.agree(self.given_rules, self.given_pits)?;
        Ok(())
    }

    /// [`DbArgs::check`], for a command that reads the database: `--dir` must also be a
    /// folder that exists ([`RootArg::readable`]).
    pub fn readable(&self) -> anyhow::Result<()> {
        self.check()?;
        self.root.readable(self.rules(), self.pits())
    }

    /// [`DbArgs::check`], for a command that writes the database: no file may stand where
    /// `--dir` or a folder above it should be (a folder that does not exist is made).
    pub fn writable(&self) -> anyhow::Result<()> {
        self.check()?;
        self.root.writable()
    }

    /// The database folder that `--dir` names itself, when it does and `--pits` and
    /// `--rules` (if given) agree with its name.
    fn own(&self) -> Option<(Rules, usize)> {
        let (rules, pits) = self.root.database()?;
        let agree = self.given_rules.is_none_or(|r| r == rules)
            && self.given_pits.is_none_or(|p| p == pits);
        agree.then_some((rules, pits))
    }

    /// The root folder: `--dir`, or the folder above it when `--dir` is the database.
    pub fn dir(&self) -> &std::path::Path {
        match self.own() {
            Some(_) => self.root.parent(),
            None => &self.root.dir,
        }
    }

    /// Pits per side.
    pub fn pits(&self) -> usize {
        self.given_pits.or(self.own().map(|o| o.1)).unwrap_or(6)
    }

    /// The rule set.
    pub fn rules(&self) -> Rules {
        self.given_rules
            .or(self.own().map(|o| o.0))
            .unwrap_or(Rules::Awari)
    }

    /// The folder of this database: `<root>/<rules>-<pits>` (`--dir` itself when it names
    /// the database).
    pub fn db_dir(&self) -> PathBuf {
        match self.own() {
            Some(_) => self.root.dir.clone(),
            None => awari::expert::db_dir(self.dir(), self.rules(), self.pits()),
        }
    }
}

/// `--dir`: the root folder of the databases.
#[derive(Args, Clone, Debug)]
pub struct RootArg {
    /// Root folder of the databases, each rule set and board size in a sub-folder (e.g.
    /// db holds db/awari-6); or one database folder itself (db/awari-6).
    #[arg(long, default_value = "db")]
    pub dir: PathBuf,
}

impl RootArg {
    /// The rule set and board size when `--dir` is a database folder itself: its name is
    /// `<rules>-<P>` and it holds no database folders of its own (a root that happens to
    /// be named so stays a root).
    pub fn database(&self) -> Option<(Rules, usize)> {
        let own = db_name(self.dir.file_name()?.to_str()?)?;
        let nested = std::fs::read_dir(&self.dir).is_ok_and(|entries| {
            entries
                .flatten()
                .any(|e| e.path().is_dir() && e.file_name().to_str().and_then(db_name).is_some())
        });
        (!nested).then_some(own)
    }

    /// The database `--dir` names itself ([`RootArg::database`]), if any, once `rules`
    /// and `pits` (what `--rules` and `--pits` gave, if given) agree with it; a usage error
    /// (exit status 2) that names the folder's database, what was asked and the command
    /// to run instead when they do not.
    pub fn agree(
        &self,
        rules: Option<Rules>,
        pits: Option<usize>,
    ) -> anyhow::Result<Option<(Rules, usize)>> {
        let Some((own_rules, own_pits)) = self.database() else {
            return Ok(None);
        };
        let mut asked = Vec::new();
        if let Some(r) = rules.filter(|&r| r != own_rules) {
            asked.push(format!("--rules {r}"));
        }
        if let Some(p) = pits.filter(|&p| p != own_pits) {
            asked.push(format!("--pits {p}"));
        }
        if asked.is_empty() {
            return Ok(Some((own_rules, own_pits)));
        }
        let (want_rules, want_pits) = (rules.unwrap_or(own_rules), pits.unwrap_or(own_pits));
        let asked = asked.join(" ");
        Err(Usage(format!(
            "--dir {} is the database {own_rules}-{own_pits} ({own_rules}, {own_pits} pits per side), \
             not the {want_rules}-{want_pits} asked for by {asked}: run `{}` for {}, or leave out {asked}",
            self.dir.display(),
            self.command_with_root(),
            awari::expert::db_dir(self.parent(), want_rules, want_pits).display(),
        ))
        .into())
    }

    /// For a command that reads databases: `--dir` must be a folder that exists, or the
    /// error says so (with the build of the database of `rules` and `pits` there), rather
    /// than that a level is missing.
    pub fn readable(&self, rules: Rules, pits: usize) -> anyhow::Result<()> {
        if let Some(e) = file_in_the_way(&self.dir) {
            return Err(e);
        }
        if !self.dir.is_dir() {
            let build = awari::expert::build_command(self.root(), rules, pits, 0)
                .replace("--max-seeds 0", "--max-seeds N");
            anyhow::bail!(
                "--dir {}: no such folder; give the folder the databases were built in, or \
                 build one there: `{build}` builds levels 0..=N",
                self.dir.display()
            );
        }
        Ok(())
    }

    /// For a command that writes databases: no file where `--dir` or a folder above it
    /// should be.
    pub fn writable(&self) -> anyhow::Result<()> {
        file_in_the_way(&self.dir).map_or(Ok(()), Err)
    }

    /// The command line this process was started with, `--dir` replaced by the folder
    /// above it (the root of the database it names), quoted for a shell.
    fn command_with_root(&self) -> String {
        let root = self.parent().to_string_lossy().into_owned();
        let mut words = vec!["awari".to_string()];
        let mut args = std::env::args_os()
            .skip(1)
            .map(|a| a.to_string_lossy().into_owned());
        while let Some(arg) = args.next() {
            if arg == "--dir" {
                words.push(arg);
                if args.next().is_some() {
                    words.push(root.clone());
                }
            } else if arg.starts_with("--dir=") {
                words.push(format!("--dir={root}"));
            } else {
                words.push(arg);
            }
        }
        words
            .iter()
            .map(|w| shell_word(w))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// The folder above `--dir` (`.` when it has none).
    fn parent(&self) -> &std::path::Path {
        match self.dir.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => std::path::Path::new("."),
        }
    }

    /// The root folder: `--dir`, or the folder above it when `--dir` is a database folder.
    pub fn root(&self) -> &std::path::Path {
        match self.database() {
            Some(_) => self.parent(),
            None => &self.dir,
        }
    }
}

/// `word` as a shell reads it back: as it is when it holds only characters no shell
/// treats specially, else in single quotes.
fn shell_word(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// The error for a file where the folder `dir` or one above it should be, if there is
/// one (`--dir` names folders).
fn file_in_the_way(dir: &std::path::Path) -> Option<anyhow::Error> {
    let file = dir.ancestors().find(|a| a.exists() && !a.is_dir())?;
    Some(anyhow::anyhow!(
        "{} is a file, not a folder: --dir names the folder of the databases",
        file.display()
    ))
}

/// `awari-6` -> (awari, 6): a database folder's name.
fn db_name(name: &str) -> Option<(Rules, usize)> {
    let (r, p) = name.rsplit_once('-')?;
    let pits = p.parse::<usize>().ok()?;
    (2..=MAX_PITS)
        .contains(&pits)
        .then_some((r.parse::<Rules>().ok()?, pits))
}

/// `--threads`: the size of the worker pool.
#[derive(Args, Clone, Copy, Debug)]
pub struct Threads {
    /// Worker threads, 1..=1024 (default: one per core).
    #[arg(long, value_parser = whole::<usize>(1, MAX_THREADS as u64))]
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

/// A whole-number option in `lo..=hi` (stated in its `--help`): anything else (zero where
/// 1 is the least, a sign, a fraction, nan, a number too large) is refused before any
/// work, in one line that says what the option takes and what it was given
/// (`--max-seeds must be 0..=127, got -1`; [`one_line`]), exit 2.
pub fn whole<T>(lo: u64, hi: u64) -> impl Fn(&str) -> Result<T, String> + Clone + Send + Sync
where
    T: TryFrom<u64> + Clone + Send + Sync + 'static,
{
    move |s| {
        let refused = || format!("must be a whole number in {lo}..={hi}, got '{s}'");
        let x: i128 = s.trim().parse().map_err(|_| refused())?;
        if (lo as i128..=hi as i128).contains(&x) {
            T::try_from(x as u64).map_err(|_| refused())
        } else {
            Err(format!("must be {lo}..={hi}, got {s}"))
        }
    }
}

/// A real-number option in `lo..=hi` (stated in its `--help`): nan, inf and anything
/// outside are refused as [`whole`] refuses.
pub fn real(lo: f64, hi: f64) -> impl Fn(&str) -> Result<f64, String> + Clone + Send + Sync {
    move |s| {
        let x: f64 = s
            .trim()
            .parse()
            .map_err(|_| format!("must be a number in {lo}..={hi}, got '{s}'"))?;
        if x.is_finite() && (lo..=hi).contains(&x) {
            Ok(x)
        } else {
            Err(format!("must be {lo}..={hi}, got {s}"))
        }
    }
}

/// The one line a refusal of the parser says (after `error: `): clap's own message has a
/// usage and a hint below it, and a value refused by the option's parser names the
/// option first (`--max-seeds must be 0..=127, got -1`); its other lines (the values a
/// choice takes, the arguments missing) are joined to the first.
pub fn one_line(e: &clap::Error) -> String {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if e.kind() == ErrorKind::ValueValidation {
        if let (Some(ContextValue::String(arg)), Some(why)) =
            (e.get(ContextKind::InvalidArg), std::error::Error::source(e))
        {
            // `--max-seeds <MAX_SEEDS>`: the flag alone.
            let flag = arg.split_whitespace().next().unwrap_or(arg);
            let why = why.to_string();
            return match why.starts_with("must ") {
                true => format!("{flag} {why}"),
                false => format!("{flag}: {why}"),
            };
        }
    }
    let text = e.render().to_string();
    let mut parts = Vec::new();
    for line in text.lines().map(str::trim) {
        if line.starts_with("Usage:") || line.starts_with("For more information") {
            break;
        }
        if !line.is_empty() && !line.starts_with("tip:") {
            parts.push(line.strip_prefix("error: ").unwrap_or(line));
        }
    }
    parts.join(" ")
}

/// `--checkpoint-every`: an interval, or none.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Every(pub Option<std::time::Duration>);

/// The longest `--checkpoint-every` taken: a week.
pub const EVERY_MAX: u64 = 7 * 24 * 3600;

/// Parses `--checkpoint-every`: a whole number of seconds, minutes or hours (`30s`,
/// `15m`, `1h`), or `off`.
pub fn parse_every(s: &str) -> Result<Every, String> {
    if s == "off" {
        return Ok(Every(None));
    }
    let unit = |c: char| match c {
        's' => Some(1),
        'm' => Some(60),
        'h' => Some(3600),
        _ => None,
    };
    let wrong = || format!("`{s}` is not a duration: write 30s, 15m, 1h or off");
    let last = s.chars().last().ok_or_else(wrong)?;
    let per = unit(last).ok_or_else(wrong)?;
    let count: u64 = s[..s.len() - 1].parse().map_err(|_| wrong())?;
    match count.checked_mul(per) {
        Some(secs) if secs <= EVERY_MAX => Ok(Every(Some(std::time::Duration::from_secs(secs)))),
        _ => Err(format!(
            "`{s}` is longer than a week (168h); use off for no checkpoints"
        )),
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

/// Makes the folder `dir` (and those above it) that a command writes into, or says why it
/// cannot: a file in the way, or the system's refusal (before the disk is measured, so
/// that a folder that cannot be made is not blamed on a full disk).
pub fn make_dir(dir: &std::path::Path) -> anyhow::Result<()> {
    if let Some(e) = file_in_the_way(dir) {
        return Err(e);
    }
    std::fs::create_dir_all(dir)
        .map_err(|e| anyhow::anyhow!("cannot make the folder {}: {e}", dir.display()))
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
