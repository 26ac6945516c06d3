//! Distance tables (DESIGN.md section 4.6): level `n`'s distances to conversion (section
//! 5.7) in `level-NNN.awd` beside the level, one or two bytes a position in index order
//! from a page-aligned offset, under a header laid out as a raw level's.
//!
//! Header (little-endian, the rest of the first 4096 bytes zero):
//!
//! | bytes  | field |
//! |--------|-------|
//! | 0..40  | as a raw level's (section 4), magic `AWARIDT\0`, version 1; the payload checksum is the table's |
//! | 40     | bytes a distance, 1 or 2 (little-endian) |
//! | 42..44 | the longest distance of the level |
//! | 48..56 | the payload checksum of the level's values the table was made from |
//! | 56..64 | positions with a distance |
//! | 64..72 | header checksum (XXH3-64 of bytes 0..64) |
//!
//! A distance of 0 is none (a draw or a game over). The width is the least that holds the
//! level's longest distance, so that every distance is exact. Written under a temporary
//! name and renamed once complete, as the levels are.

use std::fs::File;
use std::path::{Path, PathBuf};

use memmap2::Mmap;
use xxhash_rust::xxh3::{xxh3_64, Xxh3};

use crate::db::layout::Expect;
use crate::db::raw::{check_expected, Check, Header, TmpFile, PAYLOAD_OFFSET};
use crate::error::{Error, Result};

/// The magic of a distance table.
pub const DTC_MAGIC: [u8; 8] = *b"AWARIDT\0";
/// The format version of distance tables this tool writes and reads.
pub const DTC_VERSION: u32 = 1;
/// Bytes of the header its checksum covers.
const CHECKED: usize = 64;

/// The file name of level `n`'s distance table in a database folder.
pub fn dtc_path(dir: &Path, n: usize) -> PathBuf {
    dir.join(format!("level-{n:03}.awd"))
}

/// What a distance table says about itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DistanceHeader {
    /// The level's fields (rule set, board, level, positions) and the table's payload
    /// checksum.
    pub level: Header,
    /// Bytes a distance: 1, or 2 where the longest passes 255.
    pub width: u8,
    /// The longest distance of the level, in plies.
    pub longest: u16,
    /// The payload checksum of the level's values the table was made from.
    pub values: u64,
    /// Positions with a distance.
    pub with_distance: u64,
}

impl DistanceHeader {
    /// The header block as stored at the start of the file.
    fn encode(&self) -> [u8; PAYLOAD_OFFSET] {
        let mut h = [0u8; PAYLOAD_OFFSET];
        self.level.encode_fields(&mut h, DTC_MAGIC, DTC_VERSION);
        h[40] = self.width;
        h[42..44].copy_from_slice(&self.longest.to_le_bytes());
        h[48..56].copy_from_slice(&self.values.to_le_bytes());
        h[56..64].copy_from_slice(&self.with_distance.to_le_bytes());
        let hc = xxh3_64(&h[0..CHECKED]);
        h[CHECKED..CHECKED + 8].copy_from_slice(&hc.to_le_bytes());
        h
    }

    /// Decodes the header of the table at `path`; the error says what is wrong with it.
    fn decode(path: &Path, h: &[u8]) -> Result<DistanceHeader> {
        let level = Header::decode_layout(h, DTC_MAGIC, DTC_VERSION, CHECKED, "a distance table")
            .map_err(|problem| Error::format(path, problem))?;
        let u64_at = |i: usize| u64::from_le_bytes(h[i..i + 8].try_into().unwrap());
        let width = h[40];
        if !matches!(width, 1 | 2) {
            return Err(Error::format(path, format!("unknown width {width}")));
        }
        Ok(DistanceHeader {
            level,
            width,
            longest: u16::from_le_bytes([h[42], h[43]]),
            values: u64_at(48),
            with_distance: u64_at(56),
        })
    }
}

/// Writes the distance table `plies` (the distance of each position of the level `expect`
/// describes, by its index; 0 for none) to `path`, made from the level's values whose payload checksum is
/// `values`: in the least width that holds its longest distance. Returns its header.
pub fn write_distances(
    path: &Path,
    expect: &Expect,
    values: u64,
    plies: impl Fn(u64) -> u16,
) -> Result<DistanceHeader> {
    let positions = expect.positions;
    let (longest, with_distance) = (0..positions).fold((0, 0u64), |(l, w), i| {
        let d = plies(i);
        (l.max(d), w + (d != 0) as u64)
    });
    let width: u8 = if longest <= u8::MAX as u16 { 1 } else { 2 };
    let mut file = TmpFile::create(path)?;
    file.write(&[0u8; PAYLOAD_OFFSET])?;
    let mut hasher = Xxh3::new();
    let mut buf = Vec::with_capacity(1 << 20);
    let mut i = 0;
    while i < positions {
        buf.clear();
        for j in i..positions.min(i + (1 << 19)) {
            let d = plies(j);
            match width {
                1 => buf.push(d as u8),
                _ => buf.extend_from_slice(&d.to_le_bytes()),
            }
        }
        i = positions.min(i + (1 << 19));
        hasher.update(&buf);
        file.write(&buf)?;
    }
    let head = DistanceHeader {
        level: Header {
            rules: expect.rules,
            pits: expect.pits,
            seeds: expect.seeds,
            positions: expect.positions,
            checksum: hasher.digest(),
        },
        width,
        longest,
        values,
        with_distance,
    };
    file.finish(&[&head.encode()])?;
    Ok(head)
}

/// An open, memory-mapped distance table.
#[derive(Debug)]
pub struct DistanceTable {
    path: PathBuf,
    header: DistanceHeader,
    map: Mmap,
}

impl DistanceTable {
    /// Opens level `expect.seeds`'s table in `dir`, made from the values whose payload
    /// checksum is `values`; `None` if there is none. Refused in one line if it is not a
    /// table of this level (another database, another level), is truncated, or was made
    /// from other values (the level was built again since); with [`Check::Full`], also if
    /// its payload does not hold its checksum.
    pub fn open(
        dir: &Path,
        expect: &Expect,
        values: u64,
        check: Check,
    ) -> Result<Option<DistanceTable>> {
        let path = dtc_path(dir, expect.seeds);
        let file = match File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::io(&path, e)),
        };
        // SAFETY: tables are written under a temporary name and renamed into place, never
        // changed in place; a table replaced meanwhile keeps this map's pages.
        let map = unsafe { Mmap::map(&file) }.map_err(|e| Error::io(&path, e))?;
        let header = DistanceHeader::decode(&path, &map)?;
        check_expected(&path, &header.level, expect)?;
        let want = PAYLOAD_OFFSET as u64 + expect.positions * header.width as u64;
        if map.len() as u64 != want {
            return Err(Error::format(
                &path,
                format!(
                    "truncated or padded: {} bytes, a table of {} positions has {want}",
                    map.len(),
                    expect.positions
                ),
            ));
        }
        if header.values != values {
            return Err(Error::format(
                &path,
                format!(
                    "made from other values than level {}'s (checksum {:016x}, the level's is \
                     {values:016x}): the level was built again; run `awari dtc` again",
                    expect.seeds, header.values
                ),
            ));
        }
        let table = DistanceTable { path, header, map };
        if check == Check::Full {
            let sum = xxh3_64(&table.map[PAYLOAD_OFFSET..]);
            if sum != header.level.checksum {
                return Err(Error::format(
                    &table.path,
                    "damaged (payload checksum mismatch): run `awari dtc --force` for this level",
                ));
            }
        }
        Ok(Some(table))
    }

    /// The table's header.
    pub fn header(&self) -> &DistanceHeader {
        &self.header
    }

    /// The file the table was opened from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The distances as stored: [`DistanceHeader::width`] bytes a position (little-endian),
    /// in index order.
    pub fn payload(&self) -> &[u8] {
        &self.map[PAYLOAD_OFFSET..]
    }

    /// The distance of the position with index `i`, in plies; `None` for a draw or a
    /// game over.
    pub fn distance(&self, i: u64) -> Option<u16> {
        let at = PAYLOAD_OFFSET + (i * self.header.width as u64) as usize;
        let d = match self.header.width {
            1 => self.map[at] as u16,
            _ => u16::from_le_bytes([self.map[at], self.map[at + 1]]),
        };
        (d != 0).then_some(d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::game::index::Index;
    use crate::game::rules::Rules;

    /// A table written and read back: every distance, the width the longest needs, and
    /// each way a file can be wrong refused in one line naming the file.
    #[test]
    fn tables_read_back_and_bad_ones_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let index = Index::new(4, 6).unwrap();
        let want = Expect::level(Rules::Oware, &index, 6);
        let len = want.positions as usize;
        for longest in [200u16, 300] {
            let mut plies: Vec<u16> = (0..len).map(|i| (i % 97) as u16).collect();
            plies[len / 2] = longest;
            let path = dtc_path(dir.path(), 6);
            let head = write_distances(&path, &want, 0xabc, |i| plies[i as usize]).unwrap();
            assert_eq!(head.width, if longest > 255 { 2 } else { 1 });
            assert_eq!(head.longest, longest);
            let t = DistanceTable::open(dir.path(), &want, 0xabc, Check::Full)
                .unwrap()
                .unwrap();
            assert_eq!(*t.header(), head);
            for (i, &d) in plies.iter().enumerate() {
                assert_eq!(t.distance(i as u64), (d != 0).then_some(d));
            }
            let good = std::fs::read(&path).unwrap();
            let refused = |bytes: &[u8], values: u64, says: &str| {
                std::fs::write(&path, bytes).unwrap();
                let e = DistanceTable::open(dir.path(), &want, values, Check::Full).unwrap_err();
                let line = e.to_string();
                assert!(
                    line.contains(says) && line.contains("level-006.awd"),
                    "{line}"
                );
                assert!(!line.contains('\n'), "{line}");
            };
            refused(&good, 0xabd, "made from other values");
            let mut damaged = good.clone();
            damaged[PAYLOAD_OFFSET + 3] ^= 1;
            refused(&damaged, 0xabc, "damaged");
            refused(&good[..good.len() - 1], 0xabc, "truncated");
            let mut foreign = good.clone();
            foreign[0..8].copy_from_slice(b"AWARIDB\0");
            refused(&foreign, 0xabc, "not a distance table");
            let other = Expect::level(Rules::Awari, &index, 6);
            std::fs::write(&path, &good).unwrap();
            let e = DistanceTable::open(dir.path(), &other, 0xabc, Check::Full).unwrap_err();
            assert!(e.to_string().contains("another database"), "{e}");
        }
        // None where there is no table.
        let five = Expect::level(Rules::Oware, &index, 5);
        assert!(DistanceTable::open(dir.path(), &five, 0, Check::Full)
            .unwrap()
            .is_none());
    }
}
