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
//! (`below`) to [`LevelFile::into_checked_values`], and [`crate::db::stack::LevelStack`] reads them
//! bottom-up for readers that do not hold them already.

use std::borrow::Cow;
use std::fs;
use std::ops::Range;
use std::path::Path;

use crate::db::checkpoint::SliceOf;
use crate::db::layout::slice;
use crate::db::layout::{level_path, list_levels, packed_path, Expect};
use crate::db::model::Model;
use crate::db::pack::{PackHeader, PackedLevel};
use crate::db::raw::{release_map, Check, Header, RawLevel};
use crate::db::slice::{slice_path, SliceLevel};
use crate::error::{Error, Result};
use crate::util::HugeBuf;

/// An open level file: raw, packed, or a rank's slice of a level. Opened and checked
/// here, probed here, and read as a stream in index order through reads of the file
/// ([`LevelFile::read`]), so that nothing of it stays in this process's memory.
#[derive(Debug)]
pub enum LevelFile {
    /// A raw level (`level-NNN.awl`).
    Raw(RawLevel),
    /// A packed level (`level-NNN.awp`).
    Packed(PackedLevel),
    /// A rank's slice of a level (`level-NNN.<r>of<R>.aws`): the values of its range of
    /// indices only, its checksum checked on opening.
    Slice(SliceLevel),
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

    /// Opens rank `part.rank`'s slice of level `expect.seeds` in `dir`, of a build over
    /// `part.ranks` ranks, its payload checksum checked; `None` if there is none.
    pub fn open_slice(dir: &Path, expect: &Expect, part: SliceOf) -> Result<Option<LevelFile>> {
        let path = slice_path(dir, expect.seeds, part.rank, part.ranks);
        if !path.exists() {
            return Ok(None);
        }
        let range = slice(expect.positions, part.ranks, part.rank);
        SliceLevel::open(&path, expect, part.rank, part.ranks, range)
            .map(|l| Some(LevelFile::Slice(l)))
    }

    /// The level's header (for a packed level or a slice, the fields it shares with a raw
    /// level's; a slice's checksum is of its own values).
    pub fn header(&self) -> &Header {
        match self {
            LevelFile::Raw(l) => l.header(),
            LevelFile::Packed(l) => l.header(),
            LevelFile::Slice(l) => l.level_header(),
        }
    }

    /// The file the level was opened from.
    pub fn path(&self) -> &Path {
        match self {
            LevelFile::Raw(l) => l.path(),
            LevelFile::Packed(l) => l.path(),
            LevelFile::Slice(l) => l.path(),
        }
    }

    /// The indices whose values the file holds: the whole level, or a slice's range.
    pub fn range(&self) -> Range<u64> {
        match self {
            LevelFile::Slice(l) => l.range(),
            _ => 0..self.header().positions,
        }
    }

    /// Lets the kernel take back the pages of the file's map read so far (its values stay
    /// readable, from the file).
    pub fn release(&self) {
        match self {
            LevelFile::Raw(l) => l.release(),
            LevelFile::Packed(l) => l.release(),
            LevelFile::Slice(l) => l.release(),
        }
    }

    /// Whether the level was opened from a packed file.
    pub fn is_packed(&self) -> bool {
        matches!(self, LevelFile::Packed(_))
    }

    /// How the level stores its values: [`Model::Plain`] for a raw level.
    pub fn model(&self) -> Model {
        match self {
            LevelFile::Packed(l) => l.model(),
            _ => Model::Plain,
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
            LevelFile::Slice(l) => l.value(i),
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
            LevelFile::Slice(l) => l.value(i),
        }
    }

    /// The values the file holds ([`LevelFile::range`]): borrowed from a raw level's or a
    /// slice's map, decompressed (every block and the payload checksum checked) from a
    /// packed one. `below[m]` holds the values of level `m`; only a level packed with the
    /// exit model reads them, and needs all of `0..n`.
    pub fn payload(&self, below: &[&[u8]]) -> Result<Cow<'_, [u8]>> {
        match self {
            LevelFile::Raw(l) => Ok(Cow::Borrowed(l.bytes())),
            LevelFile::Packed(l) => l.decode_all(below).map(Cow::Owned),
            LevelFile::Slice(l) => Ok(Cow::Borrowed(l.bytes())),
        }
    }

    /// Recomputes the payload checksum (and, packed, every block's) against the file;
    /// `below` as in [`LevelFile::payload`]. A slice's was checked on opening.
    pub fn check_checksum(&self, below: &[&[u8]]) -> Result<()> {
        match self {
            LevelFile::Raw(l) => l.check_checksum(),
            LevelFile::Packed(l) => l.check_checksum(below),
            LevelFile::Slice(_) => Ok(()),
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
            LevelFile::Slice(l) => Err(Error::format(
                l.path(),
                "a slice of a level, not the whole level (gather the slices first)",
            )),
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
