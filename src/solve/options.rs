//! What a build is asked to do, in one process or over ranks: one options type, and the
//! checks both builds make of it before anything is done.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::error::{Error, Result};
use crate::game::index::Index;
use crate::game::rules::Rules;
use crate::solve::level::{Lower, StateKind, COMPACT_MAX_SEEDS};
use crate::solve::plan::{MethodRequest, SPILL_FROM};

/// What to build: levels `0..=max_seeds` of one database. Made with
/// [`BuildOptions::new`] and changed with the methods named for each field, for
/// example `BuildOptions::new(root, Rules::Awari, 6, 20).force(true).pack(true)`.
///
/// The same options drive a build in one process ([`crate::build`]) and over ranks
/// (`expert::ranks::build_slices`), which refuses what it does not do yet (see
/// [`BuildOptions::unsupported_over_ranks`]).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct BuildOptions {
    /// The root folder; levels go to `<root>/<rules>-<pits>/` (over ranks, this rank's
    /// root).
    pub root: PathBuf,
    /// The rule set.
    pub rules: Rules,
    /// Pits per side.
    pub pits: usize,
    /// The highest level to build: levels `0..=max_seeds`.
    pub max_seeds: usize,
    /// Rebuild levels that are already complete.
    pub force: bool,
    /// Refuse a build that cannot finish (memory, disk) at its start, and each level
    /// before it starts when what it needs is not available
    /// ([`crate::plan::check_level_fits`], over ranks [`crate::plan::check_slice_fits`]).
    pub check: bool,
    /// Draw progress bars on stderr (when it is a terminal; one process only).
    pub progress: bool,
    /// Levels whose fast solver state, read at random, takes at least this many bytes
    /// spill it to a temporary file in the forward pass so that it never shares memory
    /// with the lower levels (DESIGN.md section 5.2, "Spilling"):
    /// [`crate::expert::SPILL_FROM`] by default, 0 for every level, `u64::MAX` for none.
    /// Over ranks the lower levels are read as streams, so nothing spills.
    pub spill_from: u64,
    /// The solver state; `None` chooses per level ([`crate::plan::way`]).
    pub state: Option<StateKind>,
    /// How the lower levels are read; `None` chooses per level ([`crate::plan::way`]).
    pub lower: Option<Lower>,
    /// Write each level packed (`level-NNN.awp`, the plain model, which a streamed build
    /// reads back) instead of raw, once checked. One process only.
    pub pack: bool,
    /// Over ranks: the ranks on this rank's node, which share its memory (1 by default).
    pub ranks_here: usize,
    /// What the folder's lock says to a second build into it; `None`: the
    /// `awari build` command of this database.
    pub command: Option<String>,
    /// Save a level's solver state after its forward pass and then between thresholds, at
    /// most this often (DESIGN.md section 5.5), so that a stopped build resumes inside the
    /// level: [`CHECKPOINT_EVERY`] by default, `Duration::ZERO` at every chance, `None`
    /// never.
    pub checkpoint_every: Option<Duration>,
}

/// The default [`BuildOptions::checkpoint_every`]: 15 minutes, so that a stopped build
/// loses at most that (and a level of a few minutes never writes one); writing a 16 GB
/// state takes under a minute.
pub const CHECKPOINT_EVERY: Duration = Duration::from_secs(15 * 60);

impl Default for BuildOptions {
    /// The database `awari build --max-seeds 16` makes (the README's first command):
    /// levels `0..=16` of Awari, 6 pits per side, under `db`, with [`BuildOptions::new`]'s
    /// defaults; change what differs with the methods (the type is `#[non_exhaustive]`).
    fn default() -> BuildOptions {
        BuildOptions::new(Path::new("db"), Rules::Awari, 6, 16)
    }
}

impl BuildOptions {
    /// Levels `0..=max_seeds` of `rules` with `pits` pits per side under `root`, with the
    /// defaults: keep complete levels, check memory and disk, no progress bars, spill
    /// from [`crate::expert::SPILL_FROM`], the state and the reading of the lower levels chosen per
    /// level, raw files, one rank a node.
    pub fn new(root: &Path, rules: Rules, pits: usize, max_seeds: usize) -> BuildOptions {
        BuildOptions {
            root: root.to_path_buf(),
            rules,
            pits,
            max_seeds,
            force: false,
            check: true,
            progress: false,
            spill_from: SPILL_FROM,
            state: None,
            lower: None,
            pack: false,
            ranks_here: 1,
            command: None,
            checkpoint_every: Some(CHECKPOINT_EVERY),
        }
    }

    /// Sets [`BuildOptions::force`].
    pub fn force(mut self, force: bool) -> BuildOptions {
        self.force = force;
        self
    }

    /// Sets [`BuildOptions::check`].
    pub fn check(mut self, check: bool) -> BuildOptions {
        self.check = check;
        self
    }

    /// Sets [`BuildOptions::progress`].
    pub fn progress(mut self, progress: bool) -> BuildOptions {
        self.progress = progress;
        self
    }

    /// Sets [`BuildOptions::spill_from`] (bytes).
    pub fn spill_from(mut self, bytes: u64) -> BuildOptions {
        self.spill_from = bytes;
        self
    }

    /// Sets [`BuildOptions::state`]: a [`StateKind`], or `None` to choose per level.
    pub fn state(mut self, state: impl Into<Option<StateKind>>) -> BuildOptions {
        self.state = state.into();
        self
    }

    /// Sets [`BuildOptions::lower`]: a [`Lower`], or `None` to choose per level.
    pub fn lower(mut self, lower: impl Into<Option<Lower>>) -> BuildOptions {
        self.lower = lower.into();
        self
    }

    /// Sets [`BuildOptions::pack`].
    pub fn pack(mut self, pack: bool) -> BuildOptions {
        self.pack = pack;
        self
    }

    /// Sets [`BuildOptions::ranks_here`].
    pub fn ranks_here(mut self, ranks: usize) -> BuildOptions {
        self.ranks_here = ranks;
        self
    }

    /// Sets [`BuildOptions::checkpoint_every`]: an interval, or `None` for no checkpoints.
    pub fn checkpoint_every(mut self, every: impl Into<Option<Duration>>) -> BuildOptions {
        self.checkpoint_every = every.into();
        self
    }

    /// Sets [`BuildOptions::command`].
    pub fn command(mut self, command: impl Into<String>) -> BuildOptions {
        self.command = Some(command.into());
        self
    }

    /// What the options ask of the way each level is built.
    pub fn ask(&self) -> MethodRequest {
        MethodRequest {
            state: self.state,
            lower: self.lower,
            spill_from: self.spill_from,
        }
    }

    /// The one-line refusal of `flag` (`--pack`, `--lower random`, `--spill-from`) in a build
    /// over ranks, saying why the ranks cannot do it.
    pub fn refusal_over_ranks(flag: &str) -> String {
        let why = match flag {
            "--pack" => {
                "each rank writes its slice raw, which the levels above read; `awari gather \
                 --pack` packs the levels it gathers"
            }
            "--lower random" => {
                "each rank holds only its slices of the lower levels, so it reads them as \
                 streams (--lower stream)"
            }
            "--spill-from" => {
                "the ranks read the lower levels as streams, so no solver state is spilled"
            }
            "--dtc" => {
                "the distance tables are made from whole levels: gather the slices, then run \
                 `awari dtc`"
            }
            _ => "the ranks do not do it",
        };
        format!("{flag} does not work with --distributed: {why}")
    }

    /// The option a build over ranks does not do, as the command line names it
    /// (`--pack`, `--lower random`); `None` when it does them all. Spilling needs the
    /// lower levels read at random, so it never happens over ranks. [`BuildOptions::refusal_over_ranks`]
    /// says why, in the line that refuses it.
    pub fn unsupported_over_ranks(&self) -> Option<&'static str> {
        if self.pack {
            Some("--pack")
        } else if self.lower == Some(Lower::Random) {
            Some("--lower random")
        } else {
            None
        }
    }

    /// The index of the levels asked for, after the checks both builds make before
    /// anything is done: a board size and a top level the index supports, and a state
    /// that holds the top level.
    pub(crate) fn checked_index(&self) -> Result<Index> {
        let index = Index::new(self.pits, self.max_seeds)?;
        if self.state == Some(StateKind::Compact) && self.max_seeds > COMPACT_MAX_SEEDS {
            return Err(Error::Input(format!(
                "the compact state holds levels of at most {COMPACT_MAX_SEEDS} seeds, and this \
                 build goes to {}: use --state fast or auto",
                self.max_seeds
            )));
        }
        Ok(index)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builder_methods_set_their_field() {
        let o = BuildOptions::new(Path::new("db"), Rules::Oware, 4, 20)
            .force(true)
            .check(false)
            .progress(true)
            .spill_from(7)
            .state(StateKind::Compact)
            .lower(Lower::Stream)
            .pack(true)
            .ranks_here(3)
            .checkpoint_every(Duration::from_secs(30))
            .command("awari build (test)");
        assert_eq!(
            (o.root.as_path(), o.rules, o.pits),
            (Path::new("db"), Rules::Oware, 4)
        );
        assert_eq!(o.max_seeds, 20);
        assert!(o.force && !o.check && o.progress && o.pack);
        assert_eq!(o.spill_from, 7);
        assert_eq!(
            (o.state, o.lower),
            (Some(StateKind::Compact), Some(Lower::Stream))
        );
        assert_eq!(o.ranks_here, 3);
        assert_eq!(o.checkpoint_every, Some(Duration::from_secs(30)));
        assert_eq!(o.clone().checkpoint_every(None).checkpoint_every, None);
        assert_eq!(o.command.as_deref(), Some("awari build (test)"));
        let o = o.state(None).lower(None);
        assert_eq!((o.state, o.lower), (None, None));
    }

    /// The default is the README's first build (struct update syntax works inside the crate).
    #[test]
    fn the_default_is_the_readme_build() {
        let o = BuildOptions {
            max_seeds: 8,
            ..Default::default()
        };
        assert_eq!(
            (o.root.as_path(), o.rules, o.pits, o.max_seeds),
            (Path::new("db"), Rules::Awari, 6, 8)
        );
        assert!(!o.force && o.check && !o.pack && o.spill_from == SPILL_FROM);
        assert_eq!((o.state, o.lower, o.ranks_here), (None, None, 1));
        assert_eq!(o.checkpoint_every, Some(CHECKPOINT_EVERY));
        assert_eq!(BuildOptions::default().max_seeds, 16);
    }

    #[test]
    fn ranks_refuse_what_they_do_not_do() {
        let o = BuildOptions::new(Path::new("db"), Rules::Awari, 6, 20);
        assert_eq!(o.unsupported_over_ranks(), None);
        let o = o.force(true).state(StateKind::Compact).lower(Lower::Stream);
        assert_eq!(o.unsupported_over_ranks(), None);
        assert_eq!(
            o.clone().pack(true).unsupported_over_ranks(),
            Some("--pack")
        );
        let random = o.lower(Lower::Random);
        assert_eq!(random.unsupported_over_ranks(), Some("--lower random"));
    }

    #[test]
    fn the_compact_state_is_refused_above_56_seeds() {
        let o = BuildOptions::new(Path::new("db"), Rules::Awari, 2, 57);
        assert!(o.checked_index().is_ok());
        let e = o.state(StateKind::Compact).checked_index().unwrap_err();
        assert_eq!(
            e.to_string(),
            "the compact state holds levels of at most 56 seeds, and this build goes to 57: use \
             --state fast or auto"
        );
        let e = BuildOptions::new(Path::new("db"), Rules::Awari, 9, 4).checked_index();
        assert!(e.is_err());
    }
}
