//! Slice files (DESIGN.md section 5.4): rank `r` of a build over `R` ranks keeps only
//! its slice of every finished level, `level-NNN.<r>of<R>.aws` in its own folder. The
//! header is the raw level's (section 4) with its own magic and the slice's place:
//!
//! | bytes  | field |
//! |--------|-------|
//! | 0..8   | magic `AWARISL\0` |
//! | 8..12  | format version (1) |
//! | 12     | rule set (0 awari, 1 oware) |
//! | 13     | pits per side P |
//! | 14     | index scheme (1) |
//! | 15     | complete mark (1) |
//! | 16..20 | seeds n (the level) |
//! | 20..24 | payload offset (4096) |
//! | 24..32 | positions of the whole level |
//! | 32..40 | checksum (XXH3-64) of this slice's payload |
//! | 40..48 | first index of the slice |
//! | 48..56 | end of the slice (one past its last index) |
//! | 56..60 | ranks R |
//! | 60..64 | rank r |
//! | 64..72 | header checksum (XXH3-64 of bytes 0..64) |
//!
//! The payload is the values of indices `start..end` in index order, so the slices of a
//! level, concatenated in rank order, are the raw level's payload.

use std::fs::File;
use std::ops::Range;
use std::path::{Path, PathBuf};

use memmap2::Mmap;
use xxhash_rust::xxh3::{xxh3_64, Xxh3};

use crate::db::layout::Expect;
use crate::db::raw::{Header, TmpFile, PAYLOAD_OFFSET};
use crate::error::{Error, Result};
use crate::game::rules::Rules;

/// The magic of a slice file.
pub const MAGIC: [u8; 8] = *b"AWARISL\0";
/// The format version written and read.
pub const VERSION: u32 = 1;

/// The file of rank `rank`'s slice of level `n`, of a build over `ranks` ranks.
pub fn slice_path(dir: &Path, n: usize, rank: usize, ranks: usize) -> PathBuf {
    dir.join(format!("level-{n:03}.{rank}of{ranks}.aws"))
}

/// `(n, rank, ranks)` of a slice file name, if it is one.
pub fn parse_slice_name(name: &str) -> Option<(usize, usize, usize)> {
    let rest = name.strip_prefix("level-")?.strip_suffix(".aws")?;
    let (n, part) = rest.split_once('.')?;
    let (rank, ranks) = part.split_once("of")?;
    let (n, rank, ranks) = (n.parse().ok()?, rank.parse().ok()?, ranks.parse().ok()?);
    // Only the names this module writes.
    (slice_path(Path::new(""), n, rank, ranks).to_str() == Some(name)).then_some((n, rank, ranks))
}

/// What a slice file says about itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SliceHeader {
    /// The rule set.
    pub rules: Rules,
    /// Pits per side.
    pub pits: usize,
    /// The level.
    pub seeds: usize,
    /// Positions of the whole level.
    pub positions: u64,
    /// XXH3-64 of the slice's payload.
    pub checksum: u64,
    /// The indices the slice holds.
    pub range: Range<u64>,
    /// Ranks of the build.
    pub ranks: usize,
    /// This slice's rank.
    pub rank: usize,
}

impl SliceHeader {
    pub(crate) fn encode(&self) -> [u8; PAYLOAD_OFFSET] {
        let mut h = [0u8; PAYLOAD_OFFSET];
        let level = Header {
            rules: self.rules,
            pits: self.pits,
            seeds: self.seeds,
            positions: self.positions,
            checksum: self.checksum,
        };
        level.encode_fields(&mut h, MAGIC, VERSION);
        h[40..48].copy_from_slice(&self.range.start.to_le_bytes());
        h[48..56].copy_from_slice(&self.range.end.to_le_bytes());
        h[56..60].copy_from_slice(&(self.ranks as u32).to_le_bytes());
        h[60..64].copy_from_slice(&(self.rank as u32).to_le_bytes());
        let hc = xxh3_64(&h[0..64]);
        h[64..72].copy_from_slice(&hc.to_le_bytes());
        h
    }

    pub(crate) fn decode(path: &Path, h: &[u8]) -> Result<SliceHeader> {
        let level = Header::decode_layout(h, MAGIC, VERSION, 64, "a slice of an awari level")
            .map_err(|problem| Error::format(path, problem))?;
        let u32_at = |i: usize| u32::from_le_bytes(h[i..i + 4].try_into().unwrap());
        let u64_at = |i: usize| u64::from_le_bytes(h[i..i + 8].try_into().unwrap());
        Ok(SliceHeader {
            rules: level.rules,
            pits: level.pits,
            seeds: level.seeds,
            positions: level.positions,
            checksum: level.checksum,
            range: u64_at(40)..u64_at(48),
            ranks: u32_at(56) as usize,
            rank: u32_at(60) as usize,
        })
    }
}

impl SliceHeader {
    /// The header of the slice file at `path`, checked on its own (the payload is not
    /// read).
    pub fn read(path: &Path) -> Result<SliceHeader> {
        use std::io::Read;
        let mut h = Vec::with_capacity(PAYLOAD_OFFSET);
        File::open(path)
            .and_then(|f| f.take(PAYLOAD_OFFSET as u64).read_to_end(&mut h))
            .map_err(|e| Error::io(path, e))?;
        SliceHeader::decode(path, &h)
    }
}

/// An open, memory-mapped, checked slice.
pub struct SliceLevel {
    path: PathBuf,
    header: SliceHeader,
    /// The fields it shares with a raw level's header (the whole level's).
    level: Header,
    map: Mmap,
}

impl std::fmt::Debug for SliceLevel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SliceLevel")
            .field("header", &self.header)
            .finish_non_exhaustive()
    }
}

impl SliceLevel {
    /// Opens the slice at `path`: it must be slice `rank` of `ranks`, holding `range` of
    /// the level `expect` describes, complete, with its payload checksum right.
    pub fn open(
        path: &Path,
        expect: &Expect,
        rank: usize,
        ranks: usize,
        range: Range<u64>,
    ) -> Result<SliceLevel> {
        let file = File::open(path).map_err(|e| Error::io(path, e))?;
        // SAFETY: slices are written once under a temporary name and renamed into place;
        // the checksum below catches a file changed underneath before it is read.
        let map = unsafe { Mmap::map(&file) }.map_err(|e| Error::io(path, e))?;
        let header = SliceHeader::decode(path, &map)?;
        let want = SliceHeader {
            rules: expect.rules,
            pits: expect.pits,
            seeds: expect.seeds,
            positions: expect.positions,
            checksum: header.checksum,
            range: range.clone(),
            ranks,
            rank,
        };
        if header != want {
            return Err(Error::format(
                path,
                format!(
                    "holds {} level {} slice {}..{} of rank {} of {}, expected {} level {} slice {}..{} of rank {rank} of {ranks}",
                    header.rules, header.seeds, header.range.start, header.range.end, header.rank,
                    header.ranks, expect.rules, expect.seeds, range.start, range.end
                ),
            ));
        }
        let want_len = PAYLOAD_OFFSET as u64 + (range.end - range.start);
        if map.len() as u64 != want_len {
            return Err(Error::format(
                path,
                format!("{} bytes, expected {want_len}", map.len()),
            ));
        }
        let level = Header {
            rules: header.rules,
            pits: header.pits,
            seeds: header.seeds,
            positions: header.positions,
            checksum: header.checksum,
        };
        let slice = SliceLevel {
            path: path.to_path_buf(),
            header,
            level,
            map,
        };
        if xxh3_64(slice.bytes()) != slice.header.checksum {
            return Err(Error::format(path, "damaged payload (checksum mismatch)"));
        }
        Ok(slice)
    }

    /// The header.
    pub fn header(&self) -> &SliceHeader {
        &self.header
    }

    /// The fields of the header that a raw level's has; `checksum` is the slice's.
    pub fn level_header(&self) -> &Header {
        &self.level
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The indices of the level the slice holds.
    pub fn range(&self) -> Range<u64> {
        self.header.range.clone()
    }

    /// The values of the slice's indices, in order.
    pub fn bytes(&self) -> &[u8] {
        &self.map[PAYLOAD_OFFSET..]
    }

    /// The value of the position with index `i` of the level, which must be in the slice.
    pub fn value(&self, i: u64) -> Result<i8> {
        let r = &self.header.range;
        if !r.contains(&i) {
            return Err(Error::Input(format!(
                "index {i} is not in slice {}..{} of level {}",
                r.start, r.end, self.header.seeds
            )));
        }
        Ok(self.bytes()[(i - r.start) as usize] as i8)
    }

    /// Lets the kernel take back the pages of the map read so far: a stream of the slice
    /// leaves none of it in this process's memory.
    pub fn release(&self) {
        crate::db::raw::release_map(&self.map);
    }
}

/// Writes the slice `head` describes (its checksum is computed here from `payload`, the
/// values of its range) to `path`: under a temporary name, synced and renamed into place.
pub fn write_slice(path: &Path, head: SliceHeader, payload: &[u8]) -> Result<()> {
    let range = head.range.clone();
    if payload.len() as u64 != range.end - range.start {
        return Err(Error::Input(format!(
            "slice {}..{} given {} values",
            range.start,
            range.end,
            payload.len()
        )));
    }
    let mut hasher = Xxh3::new();
    hasher.update(payload);
    let header = SliceHeader {
        checksum: hasher.digest(),
        ..head
    };
    let mut file = TmpFile::create(path)?;
    file.write(&[0u8; PAYLOAD_OFFSET])?;
    file.write(payload)?;
    file.finish(&[&header.encode()])
}

/// The slice files in a database folder: `(n, rank, ranks)` in order.
pub fn list_slices(dir: &Path) -> Result<Vec<(usize, usize, usize)>> {
    let mut out = Vec::new();
    if !dir.is_dir() {
        return Ok(out);
    }
    for entry in std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))? {
        let entry = entry.map_err(|e| Error::io(dir, e))?;
        if let Some(s) = entry.file_name().to_str().and_then(parse_slice_name) {
            out.push(s);
        }
    }
    out.sort();
    Ok(out)
}

/// Assembles the standard level files of the database `rules`-`pits` in `out` from the
/// slices in the database folders `from` (one per rank, or one holding several ranks'
/// slices): every level whose slices are all there, each checked, is written as the raw
/// level a single process builds, byte for byte. Returns the levels written.
pub fn gather(
    from: &[PathBuf],
    out: &Path,
    index: &crate::game::index::Index,
    rules: Rules,
) -> Result<Vec<usize>> {
    gather_then(from, out, index, rules, |_| Ok(()))
}

/// [`gather`], calling `then(n)` once level `n` is written (to pack it, say), before the
/// next level is gathered.
pub fn gather_then(
    from: &[PathBuf],
    out: &Path,
    index: &crate::game::index::Index,
    rules: Rules,
    mut then: impl FnMut(usize) -> Result<()>,
) -> Result<Vec<usize>> {
    use crate::db::raw::LevelWriter;
    let pits = index.pits_per_side();
    // Where each (n, rank, ranks) slice is.
    let mut found = std::collections::BTreeMap::new();
    for dir in from {
        for (n, rank, ranks) in list_slices(dir)? {
            found.insert((n, ranks, rank), slice_path(dir, n, rank, ranks));
        }
    }
    let ranks: std::collections::BTreeSet<usize> = found.keys().map(|k| k.1).collect();
    if ranks.len() > 1 {
        return Err(Error::Input(format!(
            "slices of builds over different numbers of ranks ({:?}): gather one build at a time",
            ranks
        )));
    }
    let Some(&ranks) = ranks.iter().next() else {
        return Err(Error::Input(format!(
            "no slice files in {}",
            from.iter()
                .map(|d| d.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )));
    };
    let levels: std::collections::BTreeSet<usize> = found.keys().map(|k| k.0).collect();
    std::fs::create_dir_all(out).map_err(|e| Error::io(out, e))?;
    let mut written = Vec::new();
    for n in levels {
        if n > index.max_seeds() {
            continue;
        }
        let expect = Expect::level(rules, index, n);
        let missing: Vec<usize> = (0..ranks)
            .filter(|r| !found.contains_key(&(n, ranks, *r)))
            .collect();
        if !missing.is_empty() {
            return Err(Error::Input(format!(
                "level {n}: the slices of rank(s) {missing:?} of {ranks} are not in the folders given"
            )));
        }
        let path = crate::db::layout::level_path(out, n);
        let mut w = LevelWriter::create(&path, rules, pits, n, expect.positions)?;
        for r in 0..ranks {
            let range = crate::db::layout::slice(expect.positions, ranks, r);
            let s = SliceLevel::open(&found[&(n, ranks, r)], &expect, r, ranks, range)?;
            w.write(s.bytes())?;
        }
        w.finish()?;
        then(n)?;
        written.push(n);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_open_refuse() {
        let dir = tempfile::tempdir().unwrap();
        let path = slice_path(dir.path(), 7, 1, 3);
        assert_eq!(path.file_name().unwrap(), "level-007.1of3.aws");
        assert_eq!(parse_slice_name("level-007.1of3.aws"), Some((7, 1, 3)));
        assert_eq!(parse_slice_name("level-7.1of3.aws"), None);
        let head = SliceHeader {
            rules: Rules::Oware,
            pits: 4,
            seeds: 7,
            positions: 10,
            checksum: 0,
            range: 3..6,
            ranks: 3,
            rank: 1,
        };
        write_slice(&path, head, &[1, 2, 3]).unwrap();
        let expect = Expect {
            rules: Rules::Oware,
            pits: 4,
            seeds: 7,
            positions: 10,
        };
        let s = SliceLevel::open(&path, &expect, 1, 3, 3..6).unwrap();
        assert_eq!(s.bytes(), &[1, 2, 3]);
        let e = SliceLevel::open(&path, &expect, 1, 2, 5..10).err().unwrap();
        assert!(
            e.to_string()
                .contains("expected oware level 7 slice 5..10 of rank 1 of 2"),
            "{e}"
        );
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[PAYLOAD_OFFSET] ^= 1;
        std::fs::write(&path, &bytes).unwrap();
        let e = SliceLevel::open(&path, &expect, 1, 3, 3..6).err().unwrap();
        assert!(e.to_string().contains("damaged payload"), "{e}");
    }
}
