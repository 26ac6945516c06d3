//! Distance tables (DESIGN.md section 4.6): level `n`'s distances to conversion (section
//! 5.7) in `level-NNN.awd` beside the level, one or two bytes a position in index order
//! from a page-aligned offset, under a header laid out as a raw level's; or packed, in
//! `level-NNN.adz`: the same header, then the distances packed as a plain packed level's
//! values are (section 6), so that a probe decompresses one block.
//!
//! Header (little-endian, the rest of the first 4096 bytes zero):
//!
//! | bytes  | field |
//! |--------|-------|
//! | 0..40  | as a raw level's (section 4), magic `AWARIDT\0` (packed: `AWARIDZ\0`), version 1; the payload checksum is the table's |
//! | 40     | bytes a distance, 1 or 2 (little-endian) |
//! | 42..44 | the longest distance of the level |
//! | 48..56 | the payload checksum of the level's values the table was made from |
//! | 56..64 | positions with a distance |
//! | 64..72 | header checksum (XXH3-64 of bytes 0..64) |
//!
//! A distance of 0 is none (a draw or a game over). The width is the least that holds the
//! level's longest distance, so that every distance is exact. Written under a temporary
//! name and renamed once complete, as the levels are.

use std::borrow::Cow;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use memmap2::Mmap;
use xxhash_rust::xxh3::{xxh3_64, Xxh3};

use crate::db::layout::{list_files, Expect};
use crate::db::model::Model;
use crate::db::pack::{write_pack, PackOptions, PackedLevel, DEFAULT_BLOCK};
use crate::db::raw::{check_expected, Check, Header, TmpFile, PAYLOAD_OFFSET};
use crate::error::{Error, Result};

/// The magic of a distance table.
pub const DTC_MAGIC: [u8; 8] = *b"AWARIDT\0";
/// The magic of a packed distance table.
pub const DTC_PACKED_MAGIC: [u8; 8] = *b"AWARIDZ\0";
/// The format version of distance tables this tool writes and reads.
pub const DTC_VERSION: u32 = 1;
/// Bytes of the header its checksum covers.
const CHECKED: usize = 64;

/// The file name of level `n`'s distance table in a database folder.
pub fn dtc_path(dir: &Path, n: usize) -> PathBuf {
    dir.join(format!("level-{n:03}.awd"))
}

/// The file name of level `n`'s packed distance table in a database folder.
pub fn dtc_packed_path(dir: &Path, n: usize) -> PathBuf {
    dir.join(format!("level-{n:03}.adz"))
}

/// The levels with a distance table in `dir`, in order, each with whether the table
/// is packed (a level with both is listed twice, raw first).
pub fn list_tables(dir: &Path) -> Result<Vec<(usize, bool)>> {
    list_files(dir, "awd", "adz")
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
    /// The header block as stored at the start of the file, raw or (`magic`) packed.
    fn encode(&self, magic: [u8; 8]) -> [u8; PAYLOAD_OFFSET] {
        let mut h = [0u8; PAYLOAD_OFFSET];
        self.level.encode_fields(&mut h, magic, DTC_VERSION);
        h[40] = self.width;
        h[42..44].copy_from_slice(&self.longest.to_le_bytes());
        h[48..56].copy_from_slice(&self.values.to_le_bytes());
        h[56..64].copy_from_slice(&self.with_distance.to_le_bytes());
        let hc = xxh3_64(&h[0..CHECKED]);
        h[CHECKED..CHECKED + 8].copy_from_slice(&hc.to_le_bytes());
        h
    }

    /// Decodes the header of the table at `path`, raw or (`magic`) packed; the error says
    /// what is wrong with it.
    fn decode(path: &Path, h: &[u8], magic: [u8; 8]) -> Result<DistanceHeader> {
        let what = if magic == DTC_MAGIC {
            "a distance table"
        } else {
            "a packed distance table"
        };
        let level = Header::decode_layout(h, magic, DTC_VERSION, CHECKED, what)
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

    /// Refuses a table of another level, or of other values than `values` (the payload
    /// checksum of the level's values).
    fn check(&self, path: &Path, expect: &Expect, values: u64) -> Result<()> {
        check_expected(path, &self.level, expect)?;
        if self.values != values {
            return Err(Error::format(
                path,
                format!(
                    "made from other values than level {}'s (checksum {:016x}, the level's is \
                     {values:016x}): the level was built again; run `awari dtc` again",
                    expect.seeds, self.values
                ),
            ));
        }
        Ok(())
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
    file.finish(&[&head.encode(DTC_MAGIC)])?;
    Ok(head)
}

/// An open distance table: raw and memory-mapped, or packed (blocks decompressed as
/// probes need them and checked then).
#[derive(Debug)]
pub struct DistanceTable {
    path: PathBuf,
    header: DistanceHeader,
    store: Store,
}

#[derive(Debug)]
enum Store {
    Raw(Mmap),
    Packed(PackedLevel),
}

/// Opens `path`; `None` if there is no such file.
fn open_file(path: &Path) -> Result<Option<File>> {
    match File::open(path) {
        Ok(f) => Ok(Some(f)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io(path, e)),
    }
}

impl DistanceTable {
    /// Opens level `expect.seeds`'s table in `dir`, raw (read when both are there) or
    /// packed, made from the values whose payload checksum is `values`; `None` if there is
    /// none. Refused in one line if it is not a table of this level (another database,
    /// another level), is truncated, or was made from other values (the level was built
    /// again since); with [`Check::Full`], also a raw table whose payload does not hold its
    /// checksum. A packed table's blocks are checked as they are decompressed, and all of
    /// them by [`DistanceTable::payload`].
    pub fn open(
        dir: &Path,
        expect: &Expect,
        values: u64,
        check: Check,
    ) -> Result<Option<DistanceTable>> {
        let path = dtc_path(dir, expect.seeds);
        if let Some(file) = open_file(&path)? {
            return DistanceTable::open_raw(path, &file, expect, values, check).map(Some);
        }
        let path = dtc_packed_path(dir, expect.seeds);
        match open_file(&path)? {
            Some(file) => DistanceTable::open_packed(path, &file, expect, values).map(Some),
            None => Ok(None),
        }
    }

    /// Opens the table file at `path`, raw or `packed`, as [`DistanceTable::open`] opens
    /// the one it reads (a raw one with [`Check::HeaderOnly`]).
    pub fn open_file(
        path: &Path,
        packed: bool,
        expect: &Expect,
        values: u64,
    ) -> Result<DistanceTable> {
        let file = File::open(path).map_err(|e| Error::io(path, e))?;
        let path = path.to_path_buf();
        if packed {
            DistanceTable::open_packed(path, &file, expect, values)
        } else {
            DistanceTable::open_raw(path, &file, expect, values, Check::HeaderOnly)
        }
    }

    fn open_raw(
        path: PathBuf,
        file: &File,
        expect: &Expect,
        values: u64,
        check: Check,
    ) -> Result<DistanceTable> {
        // SAFETY: tables are written under a temporary name and renamed into place, never
        // changed in place; a table replaced meanwhile keeps this map's pages.
        let map = unsafe { Mmap::map(file) }.map_err(|e| Error::io(&path, e))?;
        let header = DistanceHeader::decode(&path, &map, DTC_MAGIC)?;
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
        header.check(&path, expect, values)?;
        let table = DistanceTable {
            path,
            header,
            store: Store::Raw(map),
        };
        if check == Check::Full {
            table.check_payload()?;
        }
        Ok(table)
    }

    fn open_packed(
        path: PathBuf,
        file: &File,
        expect: &Expect,
        values: u64,
    ) -> Result<DistanceTable> {
        let mut h = vec![0u8; PAYLOAD_OFFSET];
        let got = file.read_at(&mut h, 0).map_err(|e| Error::io(&path, e))?;
        let header = DistanceHeader::decode(&path, &h[..got], DTC_PACKED_MAGIC)?;
        header.check(&path, expect, values)?;
        // The pack counts bytes: `width` of them a position.
        let bytes = Expect {
            positions: expect.positions * header.width as u64,
            ..*expect
        };
        let pack = PackedLevel::open_at(&path, PAYLOAD_OFFSET as u64, &bytes)?;
        let p = pack.pack_header();
        if p.model != Model::Plain
            || p.level.checksum != header.level.checksum
            || p.block % header.width as u32 != 0
        {
            return Err(Error::format(
                &path,
                format!(
                    "damaged (its pack does not match its header): `awari dtc --levels {}` \
                     makes it again",
                    expect.seeds
                ),
            ));
        }
        Ok(DistanceTable {
            path,
            header,
            store: Store::Packed(pack),
        })
    }

    /// The table's header.
    pub fn header(&self) -> &DistanceHeader {
        &self.header
    }

    /// The file the table was opened from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the table is packed (`level-NNN.adz`).
    pub fn is_packed(&self) -> bool {
        matches!(self.store, Store::Packed(_))
    }

    /// Bytes on disk.
    pub fn file_len(&self) -> u64 {
        match &self.store {
            Store::Raw(map) => map.len() as u64,
            Store::Packed(pack) => pack.file_len(),
        }
    }

    /// The distances as stored: [`DistanceHeader::width`] bytes a position (little-endian),
    /// in index order. A packed table is decompressed whole, every block and the payload
    /// checksum checked.
    pub fn payload(&self) -> Result<Cow<'_, [u8]>> {
        match &self.store {
            Store::Raw(map) => Ok(Cow::Borrowed(&map[PAYLOAD_OFFSET..])),
            Store::Packed(pack) => pack.decode_all(&[]).map(Cow::Owned),
        }
    }

    /// Checks the payload against its checksum: a packed table's every block decompressed
    /// and checked too (a raw one opened with [`Check::Full`] was checked already).
    pub fn check_payload(&self) -> Result<()> {
        match &self.store {
            Store::Raw(map) if xxh3_64(&map[PAYLOAD_OFFSET..]) != self.header.level.checksum => {
                Err(Error::format(
                    &self.path,
                    format!(
                        "damaged (payload checksum mismatch): `awari dtc --levels {}` makes it \
                         again",
                        self.header.level.seeds
                    ),
                ))
            }
            Store::Raw(_) => Ok(()),
            Store::Packed(_) => self.payload().map(drop),
        }
    }

    /// The distance of the position with index `i`, in plies; `None` for a draw or a
    /// game over. Fails only on a damaged block of a packed table.
    pub fn distance(&self, i: u64) -> Result<Option<u16>> {
        let w = self.header.width as u64;
        let byte = |at: u64| -> Result<u8> {
            match &self.store {
                Store::Raw(map) => Ok(map[PAYLOAD_OFFSET + at as usize]),
                Store::Packed(pack) => pack.stored(at).map(|b| b as u8),
            }
        };
        let d = match w {
            1 => byte(i)? as u16,
            _ => u16::from_le_bytes([byte(i * w)?, byte(i * w + 1)?]),
        };
        Ok((d != 0).then_some(d))
    }
}

/// What packing or unpacking a distance table did: the sizes of both files.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TableSizes {
    /// Bytes of the raw table (`.awd`).
    pub raw_bytes: u64,
    /// Bytes of the packed table (`.adz`).
    pub packed_bytes: u64,
}

/// Packs level `expect.seeds`'s raw table in `dir` (made from the values whose payload
/// checksum is `values`; its own checksum checked first) into `level-NNN.adz` beside it,
/// 16,384 distances a block at zstd level `zstd_level`; `None` if the level has no raw
/// table. With `remove_raw`, the pack is decompressed and compared with the raw table
/// before the raw table is removed.
pub fn pack_table(
    dir: &Path,
    expect: &Expect,
    values: u64,
    zstd_level: i32,
    remove_raw: bool,
) -> Result<Option<TableSizes>> {
    let raw_path = dtc_path(dir, expect.seeds);
    let Some(file) = open_file(&raw_path)? else {
        return Ok(None);
    };
    let raw = DistanceTable::open_raw(raw_path.clone(), &file, expect, values, Check::Full)?;
    let h = *raw.header();
    let payload = raw.payload()?;
    let out = dtc_packed_path(dir, expect.seeds);
    let mut tmp = TmpFile::create(&out)?;
    tmp.write(&[0u8; PAYLOAD_OFFSET])?;
    let opts = PackOptions {
        zstd_level,
        block: DEFAULT_BLOCK * h.width as u32,
        model: Model::Plain,
    };
    let Expect {
        rules, pits, seeds, ..
    } = *expect;
    let (_, pack) = write_pack(&mut tmp, rules, pits, seeds, &payload, &opts, &[])?;
    tmp.finish(&[&h.encode(DTC_PACKED_MAGIC), &pack])?;
    let packed = DistanceTable::open_file(&out, true, expect, values)?;
    if remove_raw {
        if packed.payload()? != payload {
            return Err(Error::format(
                &out,
                "the pack does not decompress to the raw table; raw table kept",
            ));
        }
        drop(payload);
        drop(raw);
        std::fs::remove_file(&raw_path).map_err(|e| Error::io(&raw_path, e))?;
    }
    Ok(Some(TableSizes {
        raw_bytes: PAYLOAD_OFFSET as u64 + h.level.positions * h.width as u64,
        packed_bytes: packed.file_len(),
    }))
}

/// Restores level `expect.seeds`'s raw table in `dir` from its packed one, byte for byte
/// (every block and the payload checksum checked); `None` if the level has no packed
/// table. With `remove_packed`, the packed table is removed once the raw one is in place.
pub fn unpack_table(
    dir: &Path,
    expect: &Expect,
    values: u64,
    remove_packed: bool,
) -> Result<Option<TableSizes>> {
    let path = dtc_packed_path(dir, expect.seeds);
    let Some(file) = open_file(&path)? else {
        return Ok(None);
    };
    let packed = DistanceTable::open_packed(path.clone(), &file, expect, values)?;
    let h = *packed.header();
    let payload = packed.payload()?;
    let mut tmp = TmpFile::create(&dtc_path(dir, expect.seeds))?;
    tmp.write(&[0u8; PAYLOAD_OFFSET])?;
    tmp.write(&payload)?;
    tmp.finish(&[&h.encode(DTC_MAGIC)])?;
    let sizes = TableSizes {
        raw_bytes: PAYLOAD_OFFSET as u64 + payload.len() as u64,
        packed_bytes: packed.file_len(),
    };
    if remove_packed {
        drop(packed);
        std::fs::remove_file(&path).map_err(|e| Error::io(&path, e))?;
    }
    Ok(Some(sizes))
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
                assert_eq!(t.distance(i as u64).unwrap(), (d != 0).then_some(d));
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

    /// Tables of both widths packed and unpacked: every distance and the payload the
    /// same, the raw table restored byte for byte, and a damaged block named.
    #[test]
    fn packed_tables_read_as_the_raw_ones() {
        let dir = tempfile::tempdir().unwrap();
        let index = Index::new(5, 9).unwrap();
        let want = Expect::level(Rules::Awari, &index, 9);
        let len = want.positions as usize;
        assert!(len > 2 * DEFAULT_BLOCK as usize, "several blocks");
        for longest in [200u16, 300] {
            let plies: Vec<u16> = (0..len)
                .map(|i| {
                    if i == len - 1 {
                        longest
                    } else {
                        (i % 7 * (i % 5)) as u16
                    }
                })
                .collect();
            let raw = dtc_path(dir.path(), 9);
            let head = write_distances(&raw, &want, 7, |i| plies[i as usize]).unwrap();
            let bytes = std::fs::read(&raw).unwrap();
            // Packing refuses a table of other values, and writes nothing.
            let e = pack_table(dir.path(), &want, 8, 9, true).unwrap_err();
            assert!(e.to_string().contains("made from other values"), "{e}");
            assert!(!dtc_packed_path(dir.path(), 9).exists());
            let sizes = pack_table(dir.path(), &want, 7, 9, true).unwrap().unwrap();
            assert!(!raw.exists());
            assert_eq!(sizes.raw_bytes, bytes.len() as u64);
            let t = DistanceTable::open(dir.path(), &want, 7, Check::Full)
                .unwrap()
                .unwrap();
            assert!(t.is_packed());
            assert_eq!(*t.header(), head);
            assert_eq!(t.file_len(), sizes.packed_bytes);
            assert_eq!(&t.payload().unwrap()[..], &bytes[PAYLOAD_OFFSET..]);
            for (i, &d) in plies.iter().enumerate() {
                assert_eq!(t.distance(i as u64).unwrap(), (d != 0).then_some(d));
            }
            // Of other values: refused as the raw table is.
            let e = DistanceTable::open(dir.path(), &want, 8, Check::Full).unwrap_err();
            assert!(e.to_string().contains("made from other values"), "{e}");
            drop(t);
            // A damaged block: named by a probe into it and by reading the whole table.
            let packed = dtc_packed_path(dir.path(), 9);
            let good = std::fs::read(&packed).unwrap();
            let mut bad = good.clone();
            let last = bad.len() - 2;
            bad[last] ^= 0x40;
            std::fs::write(&packed, &bad).unwrap();
            let t = DistanceTable::open(dir.path(), &want, 7, Check::Full)
                .unwrap()
                .unwrap();
            let e = t.distance(want.positions - 1).unwrap_err().to_string();
            assert!(e.contains("level-009.adz") && e.contains("block"), "{e}");
            let e = t.payload().unwrap_err().to_string();
            assert!(e.contains("level-009.adz") && e.contains("block"), "{e}");
            assert!(t.distance(0).is_ok());
            drop(t);
            // A truncated one at opening, and a raw table's magic refused in a packed one.
            std::fs::write(&packed, &good[..good.len() - 1]).unwrap();
            let e = DistanceTable::open(dir.path(), &want, 7, Check::Full).unwrap_err();
            assert!(e.to_string().contains("truncated"), "{e}");
            let mut foreign = good.clone();
            foreign[0..8].copy_from_slice(&DTC_MAGIC);
            std::fs::write(&packed, &foreign).unwrap();
            let e = DistanceTable::open(dir.path(), &want, 7, Check::Full).unwrap_err();
            assert!(e.to_string().contains("not a packed distance table"), "{e}");
            // Unpacked: the raw table again, byte for byte.
            std::fs::write(&packed, &good).unwrap();
            let sizes = unpack_table(dir.path(), &want, 7, true).unwrap().unwrap();
            assert_eq!(sizes.packed_bytes, good.len() as u64);
            assert!(!packed.exists());
            assert_eq!(std::fs::read(&raw).unwrap(), bytes);
            std::fs::remove_file(&raw).unwrap();
        }
        // Nothing to pack or unpack: None.
        assert_eq!(pack_table(dir.path(), &want, 7, 9, false).unwrap(), None);
        assert_eq!(unpack_table(dir.path(), &want, 7, false).unwrap(), None);
    }
}
