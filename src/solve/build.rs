//! Building a database: every level from 0 up, each solved from the finished levels
//! below it, written and checked, resuming where an earlier build stopped.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Instant;

use rayon::prelude::*;

use crate::db::layout::{build_command, db_dir, level_path, packed_path, Expect};
use crate::db::lock::DirLock;
use crate::db::raw::{Check, LevelWriter, RawLevel};
use crate::db::store::{LevelFile, LevelStack, Values};
use crate::error::{Error, Result};
use crate::game::index::Index;
use crate::game::rules::Rules;
#[cfg(test)]
use crate::solve::level::STRIPE_IN_TESTS;
use crate::solve::level::{backward_pass, forward_pass, Outcomes, PhaseTimes};
use crate::solve::plan::{check_build_fits, check_level_fits, Room, STATE_BYTES};
use crate::util::{peak_rss, HugeBuf, LevelBar};

/// What to build.
#[derive(Clone, Debug)]
pub struct BuildOptions {
    /// The root folder; levels go to `<root>/<rules>-<pits>/`.
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
    /// before it starts when what it needs is not available (see [`check_level_fits`]).
    pub check: bool,
    /// Draw progress bars on stderr (when it is a terminal).
    pub progress: bool,
    /// Levels whose solver state takes at least this many bytes spill it to a temporary
    /// file in the forward pass so that it never shares memory with the lower levels
    /// (DESIGN.md section 5.2, "Spilling"); [`SPILL_FROM`] by default,
    /// 0 for every level, `u64::MAX` for none.
    pub spill_from: u64,
}

/// The default [`BuildOptions::spill_from`]: 256 MiB of solver state (6 pits: levels 22
/// and up). Below it the lower levels and the state together are small, and the extra
/// write and read of the state would cost more than the memory saved.
pub const SPILL_FROM: u64 = 256 << 20;

/// One line of the build report.
#[derive(Clone, Copy, Debug)]
pub struct LevelReport {
    /// The level.
    pub seeds: usize,
    /// Found complete and valid, not rebuilt.
    pub skipped: bool,
    /// Wall time spent on the level (0 when kept).
    pub seconds: f64,
    /// Wall time of the solver's forward and backward passes (the rest is gathering the
    /// values, counting outcomes and writing the file).
    pub phases: PhaseTimes,
    /// Positions won, drawn and lost by the side to move.
    pub stats: Outcomes,
    /// Peak resident memory of the process so far, as the OS counts it (Linux only).
    pub peak_rss: Option<u64>,
}

/// Builds levels `0..=max_seeds`, calling `report` after each. Complete, valid levels are
/// kept; a damaged or unfinished one is rebuilt (`warn` says so). A rebuilt level is
/// written raw, and a packed file of that level is then removed (`warn` says so too): it
/// holds the old values, damaged perhaps, and would be reported as if still in use.
pub fn build(
    opts: &BuildOptions,
    mut report: impl FnMut(&LevelReport),
    mut warn: impl FnMut(&str),
) -> Result<Vec<LevelReport>> {
    let index = Index::new(opts.pits, opts.max_seeds)?;
    let dir = db_dir(&opts.root, opts.rules, opts.pits);
    fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
    // One build per folder: a second one would write the same levels at once.
    let command = build_command(&opts.root, opts.rules, opts.pits, opts.max_seeds);
    let _lock = DirLock::acquire(&dir, &command)?;
    if opts.check {
        check_build_fits(&dir, &index, opts.max_seeds)?;
    }
    // The finished levels: raw ones mapped, packed ones decompressed whole.
    let mut done = LevelStack::new(&dir, opts.rules, opts.pits, true)?;
    // The same levels as the forward pass reads them.
    let mut hot = Hot::default();
    let mut reports = Vec::new();
    for n in 0..=opts.max_seeds {
        let path = level_path(&dir, n);
        let want = Expect::level(opts.rules, &index, n);
        // A raw level, else a packed one (decompressed whole, every block checked).
        let found = if opts.force {
            Ok(None)
        } else {
            LevelFile::open(&dir, &want, Check::HeaderOnly).and_then(|l| {
                // A pack with the exit model is resolved against the levels below.
                l.map(|l| l.into_checked_values(&done.below(n))).transpose()
            })
        };
        let (skipped, seconds, phases, stats) = match found {
            Ok(Some(level)) => {
                let stats = Outcomes::of(level.bytes());
                done.offer(n, level);
                (true, 0.0, PhaseTimes::default(), stats)
            }
            found => {
                if let Err(e) = found {
                    warn(&format!("rebuilding level {n}: {}", e.one_line()));
                }
                let size = index.level_size(n);
                let spill = STATE_BYTES * size >= opts.spill_from;
                if opts.check {
                    let lower = (0..n.saturating_sub(1)).map(|m| index.level_size(m)).sum();
                    let room = Room {
                        lower,
                        held: hot.held(n.saturating_sub(1)),
                    };
                    check_level_fits(&dir, n, size, spill, room)?;
                }
                let t0 = Instant::now();
                if let (true, Some(m)) = (spill, n.checked_sub(1)) {
                    // Level n - 1 is not read now (a capture takes 2 seeds or more); the
                    // next level reads it back from its file.
                    hot.drop_level(m);
                }
                hot.fill(n, &done)?;
                let (values, stats, phases) =
                    solve_to_values(opts, &index, n, &mut hot, &done, &path, spill)?;
                write_level(opts, n, &path, &values)?;
                let packed = packed_path(&dir, n);
                if packed.exists() {
                    fs::remove_file(&packed).map_err(|e| Error::io(&packed, e))?;
                    warn(&format!(
                        "removed the stale packed level {} (level {n} rebuilt as {})",
                        packed.display(),
                        path.display()
                    ));
                }
                done.offer(
                    n,
                    Values::Mapped(RawLevel::open(&path, &want, Check::HeaderOnly)?),
                );
                hot.keep(n, values);
                (false, t0.elapsed().as_secs_f64(), phases, stats)
            }
        };
        let r = LevelReport {
            seeds: n,
            skipped,
            seconds,
            phases,
            stats,
            peak_rss: peak_rss(),
        };
        report(&r);
        reports.push(r);
    }
    Ok(reports)
}

/// The finished levels the forward pass reads, in anonymous memory in huge pages: a
/// level just built keeps the memory its solver state had ([`State::into_values`]); one
/// found on disk is read into such memory from its file the first time a level needs
/// it. Through the files' maps (4 KiB pages) nearly every random read of a lower level
/// also missed the TLB. A level whose state spills lets them all go after its forward
/// pass, and the next level reads them again.
#[derive(Default)]
struct Hot {
    /// Level `m`, or `None` to read it through [`LevelStack`] (a packed level, which is
    /// in memory already) or when let go.
    levels: Vec<Option<HugeBuf>>,
}

impl Hot {
    /// Reads every raw level that level `n` reads (below `n - 1`: a capture takes 2 seeds
    /// or more) and that is not held from its file in `done`.
    fn fill(&mut self, n: usize, done: &LevelStack) -> Result<()> {
        self.levels.resize_with(self.levels.len().max(n), || None);
        for m in 0..n.saturating_sub(1) {
            if self.levels[m].is_some() {
                continue;
            }
            if let Some(Values::Mapped(raw)) = done.get(m) {
                let len = raw.bytes().len();
                let mut buf = HugeBuf::zeroed(len).map_err(|e| {
                    Error::Resources(format!("cannot allocate {len} bytes for level {m}: {e}"))
                })?;
                raw.read_payload(&mut buf)?;
                self.levels[m] = Some(buf);
            }
        }
        Ok(())
    }

    /// The values of the levels below `n`: held here, else as `done` holds them (level
    /// `n - 1` through its map, which level `n` never reads).
    fn below<'a>(&'a self, n: usize, done: &'a LevelStack) -> Vec<&'a [u8]> {
        (0..n)
            .map(|m| match self.levels.get(m) {
                Some(Some(buf)) => &buf[..],
                _ => done.get(m).expect("every level below is finished").bytes(),
            })
            .collect()
    }

    /// Holds the values of level `n`, just built.
    fn keep(&mut self, n: usize, values: HugeBuf) {
        self.levels
            .resize_with(self.levels.len().max(n + 1), || None);
        self.levels[n] = Some(values);
    }

    /// Lets level `m` go, if held.
    fn drop_level(&mut self, m: usize) {
        if let Some(l) = self.levels.get_mut(m) {
            *l = None;
        }
    }

    /// Bytes held of the levels below `n`.
    fn held(&self, n: usize) -> u64 {
        self.levels
            .iter()
            .take(n)
            .flatten()
            .map(|b| b.len() as u64)
            .sum()
    }

    /// Lets every level go.
    fn release(&mut self) {
        self.levels.iter_mut().for_each(|l| *l = None);
    }
}

/// Solves level `n` from the lower levels in `hot` and `done`: its values (in the
/// state's memory) and what they hold.
fn solve_to_values(
    opts: &BuildOptions,
    index: &Index,
    n: usize,
    hot: &mut Hot,
    done: &LevelStack,
    path: &Path,
    spill: bool,
) -> Result<(HugeBuf, Outcomes, PhaseTimes)> {
    let size = index.level_size(n);
    // One bar: forward pass then settled positions (at most the level size).
    let bar = LevelBar::new(opts.progress, size * 2, n, "solving");
    // The spill file has no name once open: nothing is left behind, even by a kill.
    let spill_path = path.with_extension("spill");
    let mut spill_file = if spill {
        let file = fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&spill_path)
            .map_err(|e| Error::io(&spill_path, e))?;
        fs::remove_file(&spill_path).map_err(|e| Error::io(&spill_path, e))?;
        Some(file)
    } else {
        None
    };
    let io = |e| Error::io(&spill_path, e);
    let below = hot.below(n, done);
    let forwarded =
        forward_pass(opts.rules, index, n, &below[..], &bar, spill_file.as_mut()).map_err(io)?;
    drop(below);
    if spill {
        // The backward pass reads no lower level: the state has their memory.
        hot.release();
        done.release();
    }
    let (state, phases) =
        backward_pass(opts.rules, index, n, forwarded, &bar, spill_file.as_mut()).map_err(io)?;
    drop(spill_file);
    let values = state.into_values();
    let stats = values
        .par_chunks(1 << 20)
        .map(Outcomes::of)
        .reduce(Outcomes::default, Outcomes::merge);
    bar.finish();
    Ok((values, stats, phases))
}

/// Writes level `n`'s file (section 4.3 of DESIGN.md).
fn write_level(opts: &BuildOptions, n: usize, path: &Path, values: &[u8]) -> Result<()> {
    let mut w = LevelWriter::create(path, opts.rules, opts.pits, n, values.len() as u64)?;
    w.write(values)?;
    w.finish().map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::pack::{pack_payload, PackOptions};

    fn opts(root: &Path, max_seeds: usize, force: bool) -> BuildOptions {
        BuildOptions {
            root: root.to_path_buf(),
            rules: Rules::Awari,
            pits: 3,
            max_seeds,
            force,
            check: true,
            progress: false,
            spill_from: SPILL_FROM,
        }
    }

    /// Builds, collecting the warnings.
    fn build_warned(opts: &BuildOptions) -> (Vec<LevelReport>, Vec<String>) {
        let mut warnings = Vec::new();
        let reports = build(opts, |_| {}, |w| warnings.push(w.to_string())).unwrap();
        (reports, warnings)
    }

    /// A spilled state (in stripes of two chunks under test) and the lower levels let go
    /// before the backward pass give the same files as a build in memory, under both
    /// rule sets, and leave no spill file behind.
    #[test]
    fn spilling_the_state_changes_no_byte() {
        for rules in [Rules::Awari, Rules::Oware] {
            let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
            let run = |root: &Path, spill_from: u64| {
                let o = BuildOptions {
                    rules,
                    pits: 4,
                    spill_from,
                    ..opts(root, 16, false)
                };
                build_warned(&o)
            };
            run(a.path(), u64::MAX);
            run(b.path(), 0);
            let (da, db) = (db_dir(a.path(), rules, 4), db_dir(b.path(), rules, 4));
            // Level 16 spans several stripes.
            assert!(Index::new(4, 16).unwrap().level_size(16) > 3 * STRIPE_IN_TESTS);
            for n in 0..=16 {
                let (x, y) = (level_path(&da, n), level_path(&db, n));
                assert_eq!(
                    fs::read(&x).unwrap(),
                    fs::read(&y).unwrap(),
                    "{rules} level {n}"
                );
            }
            let names: Vec<_> = fs::read_dir(&db)
                .unwrap()
                .map(|e| e.unwrap().file_name().into_string().unwrap())
                .filter(|f| !f.ends_with(".awl") && !f.starts_with(".lock"))
                .collect();
            assert!(names.is_empty(), "left behind: {names:?}");
        }
    }

    /// A level built over a lower level that is only packed (exit model, decompressed and
    /// resolved into memory, not copied into huge pages) and over raw levels read back from
    /// disk is the level a build from scratch writes.
    #[test]
    fn building_over_a_packed_level_reads_it() {
        let t = tempfile::tempdir().unwrap();
        let dir = db_dir(t.path(), Rules::Awari, 3);
        build_warned(&opts(t.path(), 9, false));
        let want = fs::read(level_path(&dir, 9)).unwrap();
        let below: Vec<Vec<u8>> = (0..5)
            .map(|m| fs::read(level_path(&dir, m)).unwrap()[4096..].to_vec())
            .collect();
        let below: Vec<&[u8]> = below.iter().map(|v| &v[..]).collect();
        let five = fs::read(level_path(&dir, 5)).unwrap();
        let (raw, packed) = (level_path(&dir, 5), packed_path(&dir, 5));
        pack_payload(
            &packed,
            Rules::Awari,
            3,
            5,
            &five[4096..],
            &PackOptions::default(),
            &below,
        )
        .unwrap();
        fs::remove_file(&raw).unwrap();
        fs::remove_file(level_path(&dir, 9)).unwrap();
        let (reports, warnings) = build_warned(&opts(t.path(), 9, false));
        assert!(warnings.is_empty(), "{warnings:?}");
        assert!(reports[..9].iter().all(|r| r.skipped) && !reports[9].skipped);
        assert!(packed.exists() && !raw.exists());
        assert_eq!(fs::read(level_path(&dir, 9)).unwrap(), want);
    }

    #[test]
    fn rebuilding_a_damaged_pack_removes_it() {
        let t = tempfile::tempdir().unwrap();
        let (reports, warnings) = build_warned(&opts(t.path(), 8, false));
        assert!(reports.iter().all(|r| !r.skipped) && warnings.is_empty());
        let dir = db_dir(t.path(), Rules::Awari, 3);
        let (raw, packed) = (level_path(&dir, 8), packed_path(&dir, 8));
        let good = fs::read(&raw).unwrap();
        // Level 8 packed only, then damaged: a flipped byte in its last block.
        let pack = PackOptions {
            block: 64,
            ..PackOptions::default()
        };
        let below: Vec<Vec<u8>> = (0..8)
            .map(|m| fs::read(level_path(&dir, m)).unwrap()[4096..].to_vec())
            .collect();
        let below: Vec<&[u8]> = below.iter().map(|v| &v[..]).collect();
        pack_payload(&packed, Rules::Awari, 3, 8, &good[4096..], &pack, &below).unwrap();
        fs::remove_file(&raw).unwrap();
        let mut bytes = fs::read(&packed).unwrap();
        let at = bytes.len() - 3;
        bytes[at] ^= 0x40;
        fs::write(&packed, &bytes).unwrap();

        let (reports, warnings) = build_warned(&opts(t.path(), 8, false));
        assert!(reports[..8].iter().all(|r| r.skipped) && !reports[8].skipped);
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(
            warnings[0].starts_with("rebuilding level 8"),
            "{warnings:?}"
        );
        assert!(
            warnings[1].starts_with("removed the stale packed level")
                && warnings[1].contains("level-008.awp"),
            "{warnings:?}"
        );
        assert!(!packed.exists());
        assert_eq!(fs::read(&raw).unwrap(), good);

        // With --force, a pack beside the raw level goes too; without, it stays.
        pack_payload(&packed, Rules::Awari, 3, 8, &good[4096..], &pack, &below).unwrap();
        let (_, warnings) = build_warned(&opts(t.path(), 8, false));
        assert!(warnings.is_empty() && packed.exists(), "{warnings:?}");
        let (reports, warnings) = build_warned(&opts(t.path(), 8, true));
        assert!(reports.iter().all(|r| !r.skipped));
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(!packed.exists());
        assert_eq!(fs::read(&raw).unwrap(), good);
    }
}
