//! One level's values, whichever file holds them: a raw level ([`crate::db::raw`]) or a
//! packed one ([`crate::db::pack`]). Raw and packed levels can mix in one folder; when both
//! files of a level are present, the raw one is read.
//!
//! Two ways to read: [`LevelFile::stored`] for probes (a packed level decompresses the
//! block it needs, through a small cache), and [`LevelValues`] for readers that touch a whole
//! level at random (the builder, verify): a packed level is decompressed once, whole,
//! into memory. A block takes tens of microseconds to decompress, so a cache in
//! the solver's inner loop would cost far more than the memory it saves: the memory is
//! the same as the pages a raw level's map brings in.
//!
//! A level packed with the exit model ([`crate::db::model`]) stores bytes that become values
//! only with the values of the levels below: a probe resolves them in
//! [`crate::app::database::Database`], a whole-level reader passes the lower levels' values
//! (`below`) to [`LevelFile::into_checked_values`], and [`LevelStack`] reads them
//! bottom-up for readers that do not hold them already.

use std::borrow::Cow;
use std::fs;
use std::path::{Path, PathBuf};

use crate::db::layout::{
    database_dirs, level_path, list_levels, missing_level, packed_path, Expect,
};
use crate::db::model::Model;
use crate::db::pack::{PackHeader, PackedLevel};
use crate::db::raw::{release_map, Check, Header, RawLevel, PAYLOAD_OFFSET};
use crate::error::{Error, Result};
use crate::game::index::Index;
use crate::game::rules::Rules;
use crate::util::HugeBuf;

/// An open level, raw or packed.
#[derive(Debug)]
pub enum LevelFile {
    /// A raw level (`level-NNN.awl`).
    Raw(RawLevel),
    /// A packed level (`level-NNN.awp`).
    Packed(PackedLevel),
}

impl LevelFile {
    /// Opens level `expect.seeds` in `dir`: the raw file if present, else the packed one;
    /// `None` if there is neither. `check` applies to a raw level as in [`RawLevel::open`]; a
    /// packed level's header and block table are checked, each block when it is
    /// decompressed, and the payload checksum by [`LevelFile::into_checked_values`] or
    /// [`LevelFile::check_checksum`].
    pub fn open(dir: &Path, expect: &Expect, check: Check) -> Result<Option<LevelFile>> {
        let raw = level_path(dir, expect.seeds);
        if raw.exists() {
            return RawLevel::open(&raw, expect, check).map(|l| Some(LevelFile::Raw(l)));
        }
        let packed = packed_path(dir, expect.seeds);
        if packed.exists() {
            return PackedLevel::open(&packed, expect).map(|l| Some(LevelFile::Packed(l)));
        }
        Ok(None)
    }

    /// The level's header (for a packed level, the fields it shares with a raw one).
    pub fn header(&self) -> &Header {
        match self {
            LevelFile::Raw(l) => l.header(),
            LevelFile::Packed(l) => l.header(),
        }
    }

    /// The file the level was opened from.
    pub fn path(&self) -> &Path {
        match self {
            LevelFile::Raw(l) => l.path(),
            LevelFile::Packed(l) => l.path(),
        }
    }

    /// Whether the level was opened from a packed file.
    pub fn is_packed(&self) -> bool {
        matches!(self, LevelFile::Packed(_))
    }

    /// How the level stores its values: [`Model::Plain`] for a raw level.
    pub fn model(&self) -> Model {
        match self {
            LevelFile::Raw(_) => Model::Plain,
            LevelFile::Packed(l) => l.model(),
        }
    }

    /// The value of the position with index `i`, for a level that stores values
    /// ([`Model::Plain`]). Fails on a damaged packed block (the error names the level and
    /// the block), and on a level packed with the exit model, whose values need the lower
    /// levels: probe it through [`crate::app::database::Database::probe`].
    #[inline]
    pub fn value(&self, i: u64) -> Result<i8> {
        match self {
            LevelFile::Raw(l) => Ok(l.value(i)),
            LevelFile::Packed(l) if l.model() == Model::Plain => l.stored(i),
            LevelFile::Packed(l) => Err(Error::format(
                l.path(),
                format!(
                    "level {} is packed with the exit model: its values need the lower levels (probe it through the database)",
                    l.header().seeds
                ),
            )),
        }
    }

    /// The byte stored for the position with index `i`: its value unless the level is
    /// packed with the exit model (DESIGN.md section 7).
    #[inline]
    pub fn stored(&self, i: u64) -> Result<i8> {
        match self {
            LevelFile::Raw(l) => Ok(l.value(i)),
            LevelFile::Packed(l) => l.stored(i),
        }
    }

    /// The level's values: borrowed from a raw level's map, decompressed (every block and
    /// the payload checksum checked) from a packed one. `below[m]` holds the values of
    /// level `m`; only a level packed with the exit model reads them, and needs all of
    /// `0..n`.
    pub fn payload(&self, below: &[&[u8]]) -> Result<Cow<'_, [u8]>> {
        match self {
            LevelFile::Raw(l) => Ok(Cow::Borrowed(l.bytes())),
            LevelFile::Packed(l) => l.decode_all(below).map(Cow::Owned),
        }
    }

    /// Recomputes the payload checksum (and, packed, every block's) against the file;
    /// `below` as in [`LevelFile::payload`].
    pub fn check_checksum(&self, below: &[&[u8]]) -> Result<()> {
        match self {
            LevelFile::Raw(l) => l.check_checksum(),
            LevelFile::Packed(l) => l.check_checksum(below),
        }
    }

    /// The level for readers of the whole level, its payload checksum checked: a packed
    /// one is decompressed in full (every block checked) and resolved against `below` (as
    /// in [`LevelFile::payload`]).
    pub fn into_checked_values(self, below: &[&[u8]]) -> Result<LevelValues> {
        match self {
            LevelFile::Raw(l) => {
                l.check_checksum()?;
                Ok(LevelValues::Mapped(l))
            }
            LevelFile::Packed(l) => LevelValues::decoded(&l, below),
        }
    }
}

/// A whole level's values, for readers that touch the level at random (the builder,
/// verify, pack, import, stats): a raw level's map, values in memory (a packed level
/// decompressed, and resolved; a level just built), or a bare payload file's map (a
/// `scores.N` file being imported). Read as a slice of one signed byte per position in
/// index order ([`LevelValues::bytes`], or through `Deref`).
///
/// Values in memory are anonymous memory that the kernel is asked to back with huge
/// pages ([`HugeBuf`]), decompressed into it in place ([`LevelValues::decoded`]): no copy.
pub enum LevelValues {
    /// A raw level's payload, read through its memory map.
    Mapped(RawLevel),
    /// Values in memory: a packed level decompressed (and resolved), or a copy of a level
    /// just built.
    Owned(HugeBuf),
    /// A memory-mapped bare payload file.
    File(memmap2::Mmap),
}

impl std::fmt::Debug for LevelValues {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LevelValues::Mapped(level) => f.debug_tuple("Mapped").field(level).finish(),
            LevelValues::Owned(v) => write!(f, "Owned({} values)", v.len()),
            LevelValues::File(m) => write!(f, "File({} bytes)", m.len()),
        }
    }
}

impl LevelValues {
    /// The values of the packed level `l`, decompressed straight into memory of their
    /// own (every block and the payload checksum checked) and resolved against `below`
    /// as in [`PackedLevel::decode_all`].
    pub fn decoded(l: &PackedLevel, below: &[&[u8]]) -> Result<LevelValues> {
        let mut values = level_memory(l.header().seeds, l.header().positions)?;
        l.decode_all_into(below, &mut values)?;
        Ok(LevelValues::Owned(values))
    }

    /// A copy of the values of level `n` into memory of their own.
    pub fn copied(n: usize, values: &[u8]) -> Result<LevelValues> {
        let mut copy = level_memory(n, values.len() as u64)?;
        copy.copy_from_slice(values);
        Ok(LevelValues::Owned(copy))
    }

    /// The payload, one signed byte per position in index order.
    #[inline]
    pub fn bytes(&self) -> &[u8] {
        match self {
            LevelValues::Mapped(l) => l.bytes(),
            LevelValues::Owned(b) => b,
            LevelValues::File(m) => m,
        }
    }

    /// Lets the kernel take back the pages of a file map ([`RawLevel::release`]); values
    /// in memory stay.
    pub fn release(&self) {
        match self {
            LevelValues::Mapped(l) => l.release(),
            LevelValues::Owned(_) => {}
            LevelValues::File(m) => release_map(m),
        }
    }
}

impl std::ops::Deref for LevelValues {
    type Target = [u8];

    #[inline]
    fn deref(&self) -> &[u8] {
        self.bytes()
    }
}

/// `positions` zero bytes of memory for the values of level `n` ([`HugeBuf`]); a
/// failure is [`Error::Resources`].
pub fn level_memory(n: usize, positions: u64) -> Result<HugeBuf> {
    let len = positions as usize;
    HugeBuf::zeroed(len)
        .map_err(|e| Error::Resources(format!("cannot allocate {len} bytes for level {n}: {e}")))
}

/// The values of levels `0, 1, ...` of one database, read bottom-up, for whole-level
/// readers of levels packed with the exit model, which need every level below. Raw
/// levels are memory-mapped; packed ones are decompressed and resolved into memory.
pub struct LevelStack {
    dir: PathBuf,
    rules: Rules,
    index: Index,
    levels: Vec<LevelValues>,
    keep: bool,
}

impl std::fmt::Debug for LevelStack {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LevelStack")
            .field("dir", &self.dir)
            .field("rules", &self.rules)
            .finish_non_exhaustive()
    }
}

impl LevelStack {
    /// The levels of the database in `dir`. `keep`: whether [`LevelStack::offer`] keeps
    /// what it is offered (only worth the memory when an exit-model level will be read).
    pub fn new(dir: &Path, rules: Rules, pits: usize, keep: bool) -> Result<LevelStack> {
        let max = Index::max_supported(pits)?;
        Ok(LevelStack {
            dir: dir.to_path_buf(),
            rules,
            index: Index::new(pits, max)?,
            levels: Vec::new(),
            keep,
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

    /// Levels held: `0..len`.
    pub fn len(&self) -> usize {
        self.levels.len()
    }

    /// Whether no level is held yet.
    pub fn is_empty(&self) -> bool {
        self.levels.is_empty()
    }

    /// Reads the levels below `n` not held yet, every checksum checked (the raw file of a
    /// level if present, else its pack).
    pub fn load_below(&mut self, n: usize) -> Result<()> {
        while self.levels.len() < n {
            let m = self.levels.len();
            let Some(level) = LevelFile::open(&self.dir, &self.expect(m), Check::HeaderOnly)?
            else {
                let pits = self.index.pits_per_side();
                return Err(missing_level(&self.dir, self.rules, pits, m, m));
            };
            let values = level.into_checked_values(&self.below(m))?;
            self.levels.push(values);
        }
        Ok(())
    }

    /// The values of the levels below `n` that are held (all of them after
    /// [`LevelStack::load_below`]).
    pub fn below(&self, n: usize) -> Vec<&[u8]> {
        self.levels.iter().take(n).map(LevelValues::bytes).collect()
    }

    /// Level `m`, if held.
    pub fn get(&self, m: usize) -> Option<&LevelValues> {
        self.levels.get(m)
    }

    /// Lets the kernel take back the pages of every mapped level held
    /// (a map's pages, not values in memory): the builder's backward pass reads no lower level.
    pub fn release(&self) {
        self.levels.iter().for_each(LevelValues::release);
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
        self.keep && self.levels.len() == n
    }

    /// The values of level `n`, which a caller has read: kept if wanted.
    pub fn offer(&mut self, n: usize, values: LevelValues) {
        if self.wants(n) {
            self.levels.push(values);
        }
    }
}

/// Whether a packed level in `dir` uses the exit model (whole-level readers of the
/// database then keep the levels below it).
pub fn has_exit_model(dir: &Path) -> bool {
    let Ok(levels) = list_levels(dir) else {
        return false;
    };
    levels.iter().filter(|(_, p)| *p).any(|&(n, _)| {
        let mut head = [0u8; 64];
        let read = fs::File::open(packed_path(dir, n))
            .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut head));
        read.is_ok() && PackHeader::peek_model(&head) == Some(Model::Exits)
    })
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
    /// A packed file (`level-NNN.awp`), else a raw one (`level-NNN.awl`).
    pub packed: bool,
    /// The value model of a packed level whose header could be read.
    pub model: Option<Model>,
    /// The level file.
    pub path: std::path::PathBuf,
    /// Size of the file.
    pub bytes: u64,
    /// Size of the level as a raw file (header and one byte per position).
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
                path,
            });
        }
    }
    Ok(out)
}
