//! The resident set of finished levels: the values of levels `0, 1, ...` of one database
//! that a reader of a whole level holds or streams, whole or a rank's slices, with one of
//! three policies ([`LevelStack`]):
//!
//! - **random**: the levels a level reads at random (from the lowest a capture reaches to
//!   two below it), in anonymous memory in huge pages (through the files' maps, 4 KiB
//!   pages, nearly every random read also missed the TLB): a level just built keeps the
//!   memory its solver state had, one found on disk is read into such memory the first
//!   time a level needs it;
//! - **stream**: the same levels read in index order through reads of their files
//!   ([`crate::db::source`]), nothing of them kept, unless held in memory already;
//! - **slices**: a rank's slices of them, mapped from its slice files and read in index
//!   order.
//!
//! A database with a level packed with the exit model keeps every level it has read
//! (`keep`): such a level's bytes become values only with all the levels below
//! (raw ones mapped, packed ones decompressed and resolved).
//!
//! The survey of the level files under a folder ([`survey`]) reads through it, so that
//! such a level can be checked.

use std::fs;
use std::ops::Range;
use std::path::{Path, PathBuf};

use crate::db::checkpoint::SliceOf;
use crate::db::dtc::{dtc_packed_path, dtc_path, list_tables, DistanceTable};
use crate::db::layout::{
    database_dirs, level_path, list_levels, missing_level, packed_path, Expect,
};
use crate::db::model::Model;
use crate::db::pack::PackedLevel;
use crate::db::raw::{Check, RawLevel, PAYLOAD_OFFSET};
use crate::db::store::{has_exit_model, level_memory, LevelFile, LevelValues};
use crate::error::{Error, Result};
use crate::game::index::Index;
use crate::game::rules::Rules;
use crate::game::scan::{lowest_captured_level, Stream};

/// Finished levels of one database held in memory, mapped, or open to be streamed (the
/// module says which and when).
pub struct LevelStack {
    dir: PathBuf,
    rules: Rules,
    index: Index,
    /// The part of each level this process reads: a rank's slice, or (`None`) the whole
    /// level (a build over one rank still reads its slice files).
    part: Option<SliceOf>,
    /// Level `m`, or `None` when not held.
    levels: Vec<Option<Held>>,
    keep: bool,
}

/// How the stack holds one level.
enum Held {
    /// The values of the whole level, mapped or in memory: read at random or as a stream.
    Values(LevelValues),
    /// A file (a whole level, or a rank's slice) read as a stream.
    File(LevelFile),
}

impl std::fmt::Debug for LevelStack {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LevelStack")
            .field("dir", &self.dir)
            .field("rules", &self.rules)
            .field("part", &self.part)
            .finish_non_exhaustive()
    }
}

impl LevelStack {
    /// The whole levels of the database in `dir`. `keep`: whether [`LevelStack::offer`]
    /// keeps what it is offered, and nothing is let go (only worth the memory when a level
    /// packed with the exit model will be read).
    pub fn new(dir: &Path, rules: Rules, pits: usize, keep: bool) -> Result<LevelStack> {
        let max = Index::max_supported(pits)?;
        Ok(LevelStack {
            dir: dir.to_path_buf(),
            rules,
            index: Index::new(pits, max)?,
            part: None,
            levels: Vec::new(),
            keep,
        })
    }

    /// Rank `part.rank`'s slices of the levels of the database in `dir`, of a build over
    /// `part.ranks` ranks.
    pub fn slices(dir: &Path, rules: Rules, pits: usize, part: SliceOf) -> Result<LevelStack> {
        Ok(LevelStack {
            part: Some(part),
            ..LevelStack::new(dir, rules, pits, false)?
        })
    }

    /// The database folder the levels are read from.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The ranking tables of the database's board size, valid for every level it supports.
    pub fn index(&self) -> &Index {
        &self.index
    }

    /// What level `n` of this database must be.
    pub fn expect(&self, n: usize) -> Expect {
        Expect::level(self.rules, &self.index, n)
    }

    fn slot(&mut self, m: usize) -> &mut Option<Held> {
        if self.levels.len() <= m {
            self.levels.resize_with(m + 1, || None);
        }
        &mut self.levels[m]
    }

    /// The values of level `m`, if held whole.
    pub fn get(&self, m: usize) -> Option<&LevelValues> {
        match self.levels.get(m) {
            Some(Some(Held::Values(v))) => Some(v),
            _ => None,
        }
    }

    /// Reads the levels below `n` not held yet, every checksum checked (the raw file of a
    /// level if present, else its pack), bottom-up.
    pub fn load_below(&mut self, n: usize) -> Result<()> {
        for m in 0..n {
            if self.get(m).is_some() {
                continue;
            }
            let Some(level) = LevelFile::open(&self.dir, &self.expect(m), Check::HeaderOnly)?
            else {
                let pits = self.index.pits_per_side();
                return Err(missing_level(&self.dir, self.rules, pits, m, m));
            };
            let values = level.into_checked_values(&self.below(m))?;
            *self.slot(m) = Some(Held::Values(values));
        }
        Ok(())
    }

    /// The values of the levels below `n`, `[m]` for level `m`: those held whole, and an
    /// empty slice for the others (all of them are held after [`LevelStack::load_below`]).
    pub fn below(&self, n: usize) -> Vec<&[u8]> {
        (0..n)
            .map(|m| self.get(m).map_or(&[][..], LevelValues::bytes))
            .collect()
    }

    /// What a whole-level reader passes as `below` to read level `n`, stored with `model`:
    /// for the exit model every level below, read now if not held yet (a missing or
    /// damaged one is named, with why it is needed).
    pub fn below_for(&mut self, n: usize, model: Model) -> Result<Vec<&[u8]>> {
        if model == Model::Exits {
            self.load_below(n).map_err(|e| {
                e.context(format!(
                    "level {n} is packed with the exit model and needs the levels below it"
                ))
            })?;
        }
        Ok(self.below(n))
    }

    /// Whether [`LevelStack::offer`] would keep level `n`.
    pub fn wants(&self, n: usize) -> bool {
        self.keep && (0..n).all(|m| self.get(m).is_some())
    }

    /// The values of level `n`, which a caller has read: kept if wanted.
    pub fn offer(&mut self, n: usize, values: LevelValues) {
        if self.wants(n) {
            *self.slot(n) = Some(Held::Values(values));
        }
    }

    /// Holds the values of level `n` (a level just built, read at random next).
    pub fn hold(&mut self, n: usize, values: LevelValues) {
        *self.slot(n) = Some(Held::Values(values));
    }

    /// Holds the file of level `n` (this rank's slice of it, or the whole level), to be
    /// read as a stream.
    pub fn hold_file(&mut self, n: usize, file: LevelFile) {
        *self.slot(n) = Some(Held::File(file));
    }

    /// The levels level `n` reads: from the lowest a capture reaches to two below it.
    pub fn reach(&self, n: usize) -> Range<usize> {
        lowest_captured_level(self.index.pits_per_side(), n)..n.saturating_sub(1)
    }

    /// Bytes held in memory of the levels `range` (not counting maps).
    pub fn held_bytes(&self, range: Range<usize>) -> u64 {
        range
            .filter_map(|m| match self.get(m)? {
                LevelValues::Owned(v) => Some(v.len() as u64),
                _ => None,
            })
            .sum()
    }

    /// The random policy: holds in memory every level that level `n` reads
    /// ([`LevelStack::reach`]; one not in memory is read from its file, raw or packed) and
    /// lets go of the levels below those. A missing level is [`Error::MissingLevel`], whose
    /// command builds up to `build_to`.
    pub fn hold_for_random(&mut self, n: usize, build_to: usize) -> Result<()> {
        assert!(self.part.is_none(), "a rank's slices are read as streams");
        let reach = self.reach(n);
        (0..reach.start).for_each(|m| self.let_go(m));
        for m in reach {
            if matches!(self.get(m), Some(LevelValues::Owned(_))) {
                continue;
            }
            let expect = self.expect(m);
            let mut values = level_memory(m, expect.positions)?;
            match self.get(m) {
                Some(held) => values.copy_from_slice(held),
                None => LevelFile::open_stream_required(&self.dir, &expect, build_to)?
                    .read_parallel(&mut values)?,
            }
            *self.slot(m) = Some(Held::Values(LevelValues::Owned(values)));
        }
        Ok(())
    }

    /// The stream policy: opens, to be read as streams, the levels that level `n` reads
    /// ([`LevelStack::reach`]) and that are not held (whole files, or this rank's slices);
    /// lets go of the levels below those. A missing level is [`Error::MissingLevel`], whose
    /// command builds up to `build_to`.
    pub fn open_for_stream(&mut self, n: usize, build_to: usize) -> Result<()> {
        let reach = self.reach(n);
        (0..reach.start).for_each(|m| self.let_go(m));
        for m in reach {
            if self.levels.get(m).is_some_and(Option::is_some) {
                continue;
            }
            let expect = self.expect(m);
            let file = match self.part {
                None => LevelFile::open_stream_required(&self.dir, &expect, build_to)?,
                Some(part) => {
                    LevelFile::open_slice(&self.dir, &expect, part)?.ok_or_else(|| {
                        Error::Input(format!(
                            "level {m}: rank {} of {} has no slice of it in {}",
                            part.rank,
                            part.ranks,
                            self.dir.display()
                        ))
                    })?
                }
            };
            *self.slot(m) = Some(Held::File(file));
        }
        Ok(())
    }

    /// Lets level `m` go, unless every level is kept.
    pub fn let_go(&mut self, m: usize) {
        if !self.keep {
            if let Some(level) = self.levels.get_mut(m) {
                *level = None;
            }
        }
    }

    /// Lets every level go, unless every level is kept or they are a rank's slices (whose
    /// opening reads them whole to check them): then the pages of their maps.
    pub fn let_go_all(&mut self) {
        if self.keep || self.part.is_some() {
            self.release();
        } else {
            self.levels.iter_mut().for_each(|l| *l = None);
        }
    }

    /// Lets the kernel take back the pages of every map held (a map's pages, not values
    /// in memory): a stream has read them, or no level is read for a while.
    pub fn release(&self) {
        for level in self.levels.iter().flatten() {
            match level {
                Held::Values(v) => v.release(),
                Held::File(f) => f.release(),
            }
        }
    }
}

/// The levels held, read in index order: from memory or a map, or through their files.
impl Stream for LevelStack {
    fn read(&self, seeds: usize, start: u64, out: &mut [u8]) -> Result<()> {
        match self.levels.get(seeds) {
            Some(Some(Held::Values(v))) => {
                let start = start as usize;
                out.copy_from_slice(&v[start..start + out.len()]);
                Ok(())
            }
            Some(Some(Held::File(f))) => f.read(start, out),
            _ => Err(Error::Input(format!(
                "level {seeds} is not held to be read (a bug: the stack was not opened for it)"
            ))),
        }
    }
}

/// One level file found by [`survey`].
#[derive(Clone, Debug)]
pub struct LevelInfo {
    /// The rule set of the database folder the file is in.
    pub rules: Rules,
    /// Pits per side of that database.
    pub pits: usize,
    /// The level, from the file name.
    pub seeds: usize,
    /// Positions the level must hold (from the index, not from the file).
    pub positions: u64,
    /// A packed file (`level-NNN.awp`, `level-NNN.adz`), else a raw one.
    pub packed: bool,
    /// The level's distance table (`level-NNN.awd`, `level-NNN.adz`), not its values.
    pub table: bool,
    /// The value model of a packed level whose header could be read.
    pub model: Option<Model>,
    /// The level file.
    pub path: std::path::PathBuf,
    /// Size of the file.
    pub bytes: u64,
    /// Size of the file raw (header and one byte per position; a table's width bytes).
    pub raw_bytes: u64,
    /// `None` if the file opened (and, when checked, its checksums matched), else why not.
    pub problem: Option<String>,
    /// Whether the payload checksum was recomputed.
    pub checked: bool,
}

/// Every level file under `root`, in every database folder (`<rules>-<P>`), in order of
/// rules, P and level. `check`: recompute every checksum (decompressing packed levels).
pub fn survey(root: &Path, check: bool) -> Result<Vec<LevelInfo>> {
    let mut out = Vec::new();
    for (rules, pits, dir) in database_dirs(root)? {
        // With --check, the values of the levels checked so far, for exit-model levels.
        let mut stack = LevelStack::new(&dir, rules, pits, check && has_exit_model(&dir))?;
        let max = stack.index().max_seeds();
        for (n, packed) in list_levels(&dir)? {
            if n > max {
                continue;
            }
            let path = if packed {
                packed_path(&dir, n)
            } else {
                level_path(&dir, n)
            };
            let want = stack.expect(n);
            let bytes = fs::metadata(&path).map_err(|e| Error::io(&path, e))?.len();
            let mut model = None;
            let opened = if packed {
                PackedLevel::open(&path, &want).and_then(|l| {
                    model = Some(l.model());
                    if !check {
                        return Ok(());
                    }
                    if l.model() == Model::Exits {
                        // Levels below that are missing or damaged fail here, named.
                        stack.load_below(n).map_err(|e| {
                            e.context("cannot be checked without the levels below it")
                        })?;
                    }
                    let values = LevelValues::decoded(&l, &stack.below(n))?;
                    stack.offer(n, values);
                    Ok(())
                })
            } else {
                let how = if check {
                    Check::Full
                } else {
                    Check::HeaderOnly
                };
                RawLevel::open(&path, &want, how).map(|l| {
                    if check {
                        stack.offer(n, LevelValues::Mapped(l));
                    }
                })
            };
            out.push(LevelInfo {
                rules,
                pits,
                seeds: n,
                positions: want.positions,
                packed,
                model,
                bytes,
                raw_bytes: PAYLOAD_OFFSET as u64 + want.positions,
                problem: opened.err().map(Error::into_problem),
                checked: check,
                table: false,
                path,
            });
        }
        for (n, packed) in list_tables(&dir)? {
            if n <= max {
                out.push(survey_table(&dir, stack.expect(n), packed, check)?);
            }
        }
    }
    // Each level's table after it.
    out.sort_by_key(|l| (l.rules.code(), l.pits, l.seeds, l.table));
    Ok(out)
}

/// What [`survey`] says of level `expect.seeds`'s table in `dir`: its header checked
/// against the level's (whose header must open), and with `check` its payload (every
/// block of a packed one).
fn survey_table(dir: &Path, expect: Expect, packed: bool, check: bool) -> Result<LevelInfo> {
    let n = expect.seeds;
    let path = if packed {
        dtc_packed_path(dir, n)
    } else {
        dtc_path(dir, n)
    };
    let bytes = fs::metadata(&path).map_err(|e| Error::io(&path, e))?.len();
    let mut raw_bytes = PAYLOAD_OFFSET as u64 + expect.positions;
    let opened = LevelFile::open(dir, &expect, Check::HeaderOnly).and_then(|level| {
        let values = match level {
            Some(l) => l.header().checksum,
            None => {
                return Err(Error::Input(format!(
                    "no level {n} beside it to check it against"
                )))
            }
        };
        // Whichever file is read where both are there: check this one.
        let t = DistanceTable::open_file(&path, packed, &expect, values)?;
        raw_bytes = PAYLOAD_OFFSET as u64 + expect.positions * t.header().width as u64;
        if check {
            t.check_payload()?;
        }
        Ok(())
    });
    Ok(LevelInfo {
        rules: expect.rules,
        pits: expect.pits,
        seeds: n,
        positions: expect.positions,
        packed,
        table: true,
        model: None,
        bytes,
        raw_bytes,
        problem: opened.err().map(Error::into_problem),
        checked: check,
        path,
    })
}
