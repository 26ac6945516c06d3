//! One level's values, whichever file holds them: a raw level ([`crate::table`]) or a
//! packed one ([`crate::pack`]). Raw and packed levels can mix in one folder; when both
//! files of a level are present, the raw one is read.
//!
//! Two ways to read: [`LevelData::value`] for probes (a packed level decompresses the
//! block it needs, through a small cache), and [`Values`] for readers that touch a whole
//! level at random (the builder, verify): a packed level is decompressed once, whole,
//! into memory. A block takes tens of microseconds to decompress, so a cache in
//! the solver's inner loop would cost far more than the memory it saves: the memory is
//! the same as the pages a raw level's map brings in.

use std::borrow::Cow;
use std::fs;
use std::path::Path;

use crate::error::{Error, Result};
use crate::index::Index;
use crate::pack::{packed_path, PackedLevel};
use crate::rules::Rules;
use crate::table::{level_path, Check, Expect, Header, Level, PAYLOAD_OFFSET};

/// An open level, raw or packed.
pub enum LevelData {
    Raw(Level),
    Packed(PackedLevel),
}

/// Whether level `n` has a file (raw or packed) in `dir`.
pub fn level_exists(dir: &Path, n: usize) -> bool {
    level_path(dir, n).exists() || packed_path(dir, n).exists()
}

impl LevelData {
    /// Opens level `expect.seeds` in `dir`: the raw file if present, else the packed one;
    /// `None` if there is neither. `check` applies as in [`Level::open`] and
    /// [`PackedLevel::open`]; a packed level opened with [`Check::HeaderOnly`] still checks
    /// each block when it decompresses it.
    pub fn open(dir: &Path, expect: &Expect, check: Check) -> Result<Option<LevelData>> {
        let raw = level_path(dir, expect.seeds);
        if raw.exists() {
            return Level::open(&raw, expect, check).map(|l| Some(LevelData::Raw(l)));
        }
        let packed = packed_path(dir, expect.seeds);
        if packed.exists() {
            return PackedLevel::open(&packed, expect, check).map(|l| Some(LevelData::Packed(l)));
        }
        Ok(None)
    }

    pub fn header(&self) -> &Header {
        match self {
            LevelData::Raw(l) => l.header(),
            LevelData::Packed(l) => l.header(),
        }
    }

    pub fn path(&self) -> &Path {
        match self {
            LevelData::Raw(l) => l.path(),
            LevelData::Packed(l) => l.path(),
        }
    }

    pub fn is_packed(&self) -> bool {
        matches!(self, LevelData::Packed(_))
    }

    /// The value of the position with index `i`. Fails only on a damaged packed block
    /// (the error names the level and the block).
    #[inline]
    pub fn value(&self, i: u64) -> Result<i8> {
        match self {
            LevelData::Raw(l) => Ok(l.value(i)),
            LevelData::Packed(l) => l.value(i),
        }
    }

    /// The whole payload: borrowed from a raw level's map, decompressed (and every block
    /// checked) from a packed one.
    pub fn payload(&self) -> Result<Cow<'_, [u8]>> {
        match self {
            LevelData::Raw(l) => Ok(Cow::Borrowed(l.bytes())),
            LevelData::Packed(l) => l.decode_all().map(Cow::Owned),
        }
    }

    /// Recomputes the payload checksum (and, packed, every block's) against the file.
    pub fn check_checksum(&self) -> Result<()> {
        match self {
            LevelData::Raw(l) => l.check_checksum(),
            LevelData::Packed(l) => l.check_checksum(),
        }
    }

    /// The level for readers of the whole level, its payload checksum checked: a packed
    /// one is decompressed in full (every block checked).
    pub fn into_checked_values(self) -> Result<Values> {
        match self {
            LevelData::Raw(l) => {
                l.check_checksum()?;
                Ok(Values::Mapped(l))
            }
            LevelData::Packed(l) => l.decode_all().map(|v| Values::Owned(v.into_boxed_slice())),
        }
    }
}

/// A whole level's values in memory: a raw level's map, or a packed level decompressed.
pub enum Values {
    Mapped(Level),
    Owned(Box<[u8]>),
}

impl Values {
    /// The payload, one signed byte per position in index order.
    #[inline]
    pub fn bytes(&self) -> &[u8] {
        match self {
            Values::Mapped(l) => l.bytes(),
            Values::Owned(b) => b,
        }
    }
}

/// The level files in one database folder: `(n, packed)` in order of `n`, then raw
/// before packed. Temporary and foreign files are skipped.
pub fn list_levels(dir: &Path) -> Result<Vec<(usize, bool)>> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir).map_err(|e| Error::io(dir, e))? {
        let entry = entry.map_err(|e| Error::io(dir, e))?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some(rest) = name.strip_prefix("level-") else {
            continue;
        };
        let (num, packed) = match (rest.strip_suffix(".awl"), rest.strip_suffix(".awp")) {
            (Some(num), _) => (num, false),
            (_, Some(num)) => (num, true),
            _ => continue,
        };
        if let Ok(n) = num.parse::<usize>() {
            out.push((n, packed));
        }
    }
    out.sort();
    Ok(out)
}

/// One level file found by [`survey`].
#[derive(Clone, Debug)]
pub struct LevelInfo {
    pub rules: Rules,
    pub pits: usize,
    pub seeds: usize,
    pub positions: u64,
    pub packed: bool,
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
    let mut dbs = Vec::new();
    for entry in fs::read_dir(root).map_err(|e| Error::io(root, e))? {
        let entry = entry.map_err(|e| Error::io(root, e))?;
        let name = entry.file_name();
        let Some((rules, pits)) = name.to_str().and_then(|s| s.rsplit_once('-')) else {
            continue;
        };
        let (Ok(rules), Ok(pits)) = (rules.parse::<Rules>(), pits.parse::<usize>()) else {
            continue;
        };
        if entry.path().is_dir() && Index::max_supported(pits).is_ok() {
            dbs.push((rules.code(), pits, rules, entry.path()));
        }
    }
    dbs.sort_by_key(|d| (d.0, d.1));
    let mut out = Vec::new();
    for (_, pits, rules, dir) in dbs {
        let max = Index::max_supported(pits).map_err(Error::Input)?;
        let index = Index::new(pits, max).map_err(Error::Input)?;
        for (n, packed) in list_levels(&dir)? {
            if n > max {
                continue;
            }
            let path = if packed {
                packed_path(&dir, n)
            } else {
                level_path(&dir, n)
            };
            let positions = index.level_size(n);
            let bytes = fs::metadata(&path).map_err(|e| Error::io(&path, e))?.len();
            let want = crate::build::expect(rules, &index, n);
            let how = if check {
                Check::Full
            } else {
                Check::HeaderOnly
            };
            let opened = if packed {
                PackedLevel::open(&path, &want, how).map(drop)
            } else {
                Level::open(&path, &want, how).map(drop)
            };
            out.push(LevelInfo {
                rules,
                pits,
                seeds: n,
                positions,
                packed,
                bytes,
                raw_bytes: PAYLOAD_OFFSET as u64 + positions,
                problem: opened.err().map(|e| match e {
                    Error::BadLevel { problem, .. } => problem,
                    e => e.to_string(),
                }),
                checked: check,
                path,
            });
        }
    }
    Ok(out)
}
