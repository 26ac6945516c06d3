//! Raw level files (DESIGN.md section 4): a fixed header, then one signed byte per position in
//! index order from a page-aligned offset.
//!
//! Header (little-endian, the rest of the first 4096 bytes zero):
//!
//! | bytes  | field |
//! |--------|-------|
//! | 0..8   | magic `AWARIDB\0` |
//! | 8..12  | format version (1) |
//! | 12     | rule set (0 awari, 1 oware) |
//! | 13     | pits per side P |
//! | 14     | index scheme (1 = Romein-Bal order, DESIGN.md section 3) |
//! | 15     | complete mark (1) |
//! | 16..20 | seeds n (the level) |
//! | 20..24 | payload offset (4096) |
//! | 24..32 | positions |
//! | 32..40 | payload checksum (XXH3-64) |
//! | 40..48 | header checksum (XXH3-64 of bytes 0..40) |
//!
//! A level is written under a temporary name and renamed into place only once complete,
//! checksummed and synced, so a crash never leaves a level that looks finished. Nothing
//! host- or time-dependent is stored: a level built twice is byte-identical.

use std::fs::{self, File, OpenOptions};
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use memmap2::Mmap;
use xxhash_rust::xxh3::{xxh3_64, Xxh3};

use crate::db::layout::Expect;
use crate::error::{Error, Result};
use crate::game::rules::Rules;
use crate::util::read_exact_at_parallel;

pub const MAGIC: [u8; 8] = *b"AWARIDB\0";
pub const VERSION: u32 = 1;
pub const INDEX_ROMEIN_BAL: u8 = 1;
/// Where the payload starts: one page, so the payload map is page-aligned.
pub const PAYLOAD_OFFSET: usize = 4096;

/// What a level file says about itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// The rule set the level was built under.
    pub rules: Rules,
    /// Pits per side, `P`.
    pub pits: usize,
    /// Seeds on the board: the level `n`.
    pub seeds: usize,
    /// Positions in the level: payload bytes, one value each.
    pub positions: u64,
    /// XXH3-64 of the payload (the values in index order).
    pub checksum: u64,
}

impl Header {
    /// The whole header block as stored at the start of the file: the fields, the header
    /// checksum over bytes `0..40`, zeros up to [`PAYLOAD_OFFSET`]. Always marked complete.
    pub fn encode(&self) -> [u8; PAYLOAD_OFFSET] {
        let mut h = [0u8; PAYLOAD_OFFSET];
        self.encode_fields(&mut h, MAGIC, VERSION);
        let hc = xxh3_64(&h[0..40]);
        h[40..48].copy_from_slice(&hc.to_le_bytes());
        h
    }

    /// Bytes `0..40` of a level's header (section 4), which slice files share with their
    /// own magic and version.
    pub(crate) fn encode_fields(&self, h: &mut [u8], magic: [u8; 8], version: u32) {
        h[0..8].copy_from_slice(&magic);
        h[8..12].copy_from_slice(&version.to_le_bytes());
        h[12] = self.rules.code();
        h[13] = self.pits as u8;
        h[14] = INDEX_ROMEIN_BAL;
        h[15] = 1;
        h[16..20].copy_from_slice(&(self.seeds as u32).to_le_bytes());
        h[20..24].copy_from_slice(&(PAYLOAD_OFFSET as u32).to_le_bytes());
        h[24..32].copy_from_slice(&self.positions.to_le_bytes());
        h[32..40].copy_from_slice(&self.checksum.to_le_bytes());
    }

    /// Decodes the header of the file at `path`; the error says what is wrong with it.
    pub fn decode(path: &Path, h: &[u8]) -> Result<Header> {
        Header::decode_fields(h).map_err(|problem| Error::format(path, problem))
    }

    fn decode_fields(h: &[u8]) -> std::result::Result<Header, String> {
        Header::decode_layout(h, MAGIC, VERSION, 40, "an awari level file")
    }

    /// Decodes a header laid out as a raw level's (section 4): `magic`, format `version`,
    /// the fields of bytes `0..40`, and a header checksum of bytes `0..checked` stored at
    /// `checked` (40 for a raw level; a slice file's covers its own fields too). `what`
    /// names the kind of file in errors.
    pub(crate) fn decode_layout(
        h: &[u8],
        magic: [u8; 8],
        version: u32,
        checked: usize,
        what: &str,
    ) -> std::result::Result<Header, String> {
        if h.len() < PAYLOAD_OFFSET {
            return Err(format!(
                "truncated: {} bytes, shorter than the {PAYLOAD_OFFSET}-byte header",
                h.len()
            ));
        }
        if h[0..8] != magic {
            return Err(format!("not {what} (bad magic)"));
        }
        let u32_at = |i: usize| u32::from_le_bytes(h[i..i + 4].try_into().unwrap());
        let u64_at = |i: usize| u64::from_le_bytes(h[i..i + 8].try_into().unwrap());
        let found = u32_at(8);
        if found != version {
            return Err(format!(
                "format version {found}, this tool reads version {version}"
            ));
        }
        if u64_at(checked) != xxh3_64(&h[0..checked]) {
            return Err("damaged header (header checksum mismatch)".into());
        }
        if h[15] != 1 {
            return Err("unfinished level (no complete mark)".into());
        }
        if h[14] != INDEX_ROMEIN_BAL {
            return Err(format!("unknown index scheme {}", h[14]));
        }
        if u32_at(20) as usize != PAYLOAD_OFFSET {
            return Err(format!("unexpected payload offset {}", u32_at(20)));
        }
        let rules = Rules::from_code(h[12]).ok_or_else(|| format!("unknown rule set {}", h[12]))?;
        Ok(Header {
            rules,
            pits: h[13] as usize,
            seeds: u32_at(16) as usize,
            positions: u64_at(24),
            checksum: u64_at(32),
        })
    }
}

/// The checksum of a payload.
pub fn checksum(payload: &[u8]) -> u64 {
    xxh3_64(payload)
}

/// Refuses a level whose header is not what the caller expects.
pub fn check_expected(path: &Path, header: &Header, expect: &Expect) -> Result<()> {
    let mismatch = |what: &str, got: String, want: String| {
        Error::format(
            path,
            format!("holds {what} {got}, expected {want}: a level of another database"),
        )
    };
    if header.rules != expect.rules {
        return Err(mismatch(
            "rules",
            header.rules.to_string(),
            expect.rules.to_string(),
        ));
    }
    if header.pits != expect.pits {
        return Err(mismatch(
            "P =",
            header.pits.to_string(),
            expect.pits.to_string(),
        ));
    }
    if header.seeds != expect.seeds {
        return Err(mismatch(
            "level",
            header.seeds.to_string(),
            expect.seeds.to_string(),
        ));
    }
    if header.positions != expect.positions {
        return Err(mismatch(
            "positions:",
            header.positions.to_string(),
            expect.positions.to_string(),
        ));
    }
    Ok(())
}

/// Whether opening a level reads the whole payload to check its checksum.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Check {
    /// The header and the file length only: cheap, the payload is not read.
    HeaderOnly,
    /// Also the payload checksum, which reads every byte of the level.
    Full,
}

/// An open, memory-mapped, complete level.
pub struct RawLevel {
    path: PathBuf,
    header: Header,
    map: Mmap,
    /// The file, for reads that bring nothing of it into this process's memory.
    file: File,
}

impl std::fmt::Debug for RawLevel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RawLevel")
            .field("path", &self.path)
            .field("header", &self.header)
            .finish_non_exhaustive()
    }
}

impl RawLevel {
    /// Opens the level at `path`, checking it against `expect` (and its payload checksum
    /// with [`Check::Full`]).
    pub fn open(path: &Path, expect: &Expect, check: Check) -> Result<RawLevel> {
        let file = File::open(path).map_err(|e| Error::io(path, e))?;
        // SAFETY: level files are written once under a temporary name and never changed
        // in place; a file changed underneath is a user error that checksums catch.
        let map = unsafe { Mmap::map(&file) }.map_err(|e| Error::io(path, e))?;
        let header = Header::decode(path, &map)?;
        check_expected(path, &header, expect)?;
        let want_len = PAYLOAD_OFFSET as u64 + header.positions;
        if map.len() as u64 != want_len {
            return Err(Error::format(
                path,
                format!(
                    "{} bytes, expected {want_len}: {}",
                    map.len(),
                    if (map.len() as u64) < want_len {
                        "truncated"
                    } else {
                        "trailing data"
                    }
                ),
            ));
        }
        let level = RawLevel {
            path: path.to_path_buf(),
            header,
            map,
            file,
        };
        if check == Check::Full {
            level.check_checksum()?;
        }
        Ok(level)
    }

    /// Recomputes the payload checksum and compares it with the header.
    pub fn check_checksum(&self) -> Result<()> {
        let got = checksum(self.bytes());
        if got != self.header.checksum {
            return Err(Error::format(
                &self.path,
                format!(
                    "damaged payload (checksum {got:016x}, header says {:016x})",
                    self.header.checksum
                ),
            ));
        }
        Ok(())
    }

    /// The header, as checked when the level was opened.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The file the level was opened from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The payload as raw bytes.
    #[inline]
    pub fn bytes(&self) -> &[u8] {
        &self.map[PAYLOAD_OFFSET..]
    }

    /// The value of the position with index `i`.
    #[inline]
    pub fn value(&self, i: u64) -> i8 {
        self.map[PAYLOAD_OFFSET + i as usize] as i8
    }

    /// Copies the payload into `out` (as long as the payload) by reading the file, not the
    /// map, so that the copy is the only one counted in this process's memory.
    pub fn read_payload(&self, out: &mut [u8]) -> Result<()> {
        debug_assert_eq!(out.len() as u64, self.header.positions);
        read_exact_at_parallel(&self.file, PAYLOAD_OFFSET as u64, out)
            .map_err(|e| Error::io(&self.path, e))
    }

    /// Fills `out` with the values of the positions from `start` on, by reading the file
    /// (not the map).
    pub fn read_at(&self, start: u64, out: &mut [u8]) -> Result<()> {
        use std::os::unix::fs::FileExt;
        self.file
            .read_exact_at(out, PAYLOAD_OFFSET as u64 + start)
            .map_err(|e| Error::io(&self.path, e))
    }

    /// Lets the kernel take back the pages of the map read so far (they no longer count
    /// in this process's memory); a later read brings them back from the file (the page
    /// cache, usually). Best effort: a kernel that refuses only keeps the pages.
    pub fn release(&self) {
        release_map(&self.map);
    }
}

/// [`RawLevel::release`] for any read-only file map.
pub(crate) fn release_map(map: &Mmap) {
    // SAFETY: the map is a read-only private map of a file that is never changed in place
    // (see `open`): dropped pages read back the same bytes from the file.
    let _ = unsafe { map.unchecked_advise(memmap2::UncheckedAdvice::DontNeed) };
}

/// Writes one level under a temporary name; [`LevelWriter::finish`] makes it visible.
/// Dropped unfinished (an error, a panic), it removes its temporary file.
pub struct LevelWriter {
    file: TmpFile,
    hasher: Xxh3,
    header: Header,
    written: u64,
}

impl std::fmt::Debug for LevelWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LevelWriter")
            .field("header", &self.header)
            .field("written", &self.written)
            .finish_non_exhaustive()
    }
}

impl LevelWriter {
    /// Starts level `seeds` of `positions` values under `<path>.tmp` (created or
    /// truncated): a zero header, no complete mark, until [`LevelWriter::finish`].
    pub fn create(
        path: &Path,
        rules: Rules,
        pits: usize,
        seeds: usize,
        positions: u64,
    ) -> Result<Self> {
        let mut file = TmpFile::create(path)?;
        // A zero header (no magic, no complete mark) until the payload is in.
        file.write(&[0u8; PAYLOAD_OFFSET])?;
        Ok(LevelWriter {
            file,
            hasher: Xxh3::new(),
            header: Header {
                rules,
                pits,
                seeds,
                positions,
                checksum: 0,
            },
            written: 0,
        })
    }

    /// Appends payload bytes in index order.
    pub fn write(&mut self, payload: &[u8]) -> Result<()> {
        self.hasher.update(payload);
        self.written += payload.len() as u64;
        self.file.write(payload)
    }

    /// Writes the header, syncs and renames the file into place.
    pub fn finish(mut self) -> Result<Header> {
        if self.written != self.header.positions {
            return Err(Error::format(
                &self.file.tmp,
                format!(
                    "wrote {} positions, level has {}",
                    self.written, self.header.positions
                ),
            ));
        }
        self.header.checksum = self.hasher.digest();
        self.file.finish(&[&self.header.encode()])?;
        Ok(self.header)
    }
}

/// A file written under `<path>.tmp`, renamed to `path` when finished, removed if dropped
/// unfinished.
pub(crate) struct TmpFile {
    tmp: PathBuf,
    path: PathBuf,
    file: Option<std::io::BufWriter<File>>,
}

impl TmpFile {
    pub(crate) fn create(path: &Path) -> Result<TmpFile> {
        let mut tmp = path.as_os_str().to_owned();
        tmp.push(".tmp");
        let tmp = PathBuf::from(tmp);
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&tmp)
            .map_err(|e| Error::io(&tmp, e))?;
        Ok(TmpFile {
            tmp,
            path: path.to_path_buf(),
            file: Some(std::io::BufWriter::with_capacity(1 << 20, file)),
        })
    }

    /// The path the file gets once finished, which errors name.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    pub(crate) fn write(&mut self, bytes: &[u8]) -> Result<()> {
        let f = self.file.as_mut().expect("written after finish");
        f.write_all(bytes).map_err(|e| Error::io(&self.tmp, e))
    }

    /// Writes `head` (the parts in order) at the start, syncs and renames into place.
    pub(crate) fn finish(mut self, head: &[&[u8]]) -> Result<()> {
        let mut f = self.file.take().expect("finished twice");
        let r = (|| {
            f.flush()?;
            let file = f.get_mut();
            file.seek(SeekFrom::Start(0))?;
            for part in head {
                file.write_all(part)?;
            }
            file.sync_all()
        })();
        if let Err(e) = r {
            let _ = fs::remove_file(&self.tmp);
            return Err(Error::io(&self.tmp, e));
        }
        drop(f);
        if let Err(e) = fs::rename(&self.tmp, &self.path) {
            let _ = fs::remove_file(&self.tmp);
            return Err(Error::io(&self.path, e));
        }
        if let Some(dir) = self.path.parent() {
            // Make the rename itself durable; not all file systems allow this.
            if let Ok(d) = File::open(dir) {
                let _ = d.sync_all();
            }
        }
        Ok(())
    }
}

impl Drop for TmpFile {
    fn drop(&mut self) {
        if self.file.take().is_some() {
            let _ = fs::remove_file(&self.tmp);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::layout::level_path;

    #[test]
    fn write_open_and_refuse() {
        let dir = tempfile::tempdir().unwrap();
        let path = level_path(dir.path(), 3);
        let mut w = LevelWriter::create(&path, Rules::Awari, 6, 3, 5).unwrap();
        w.write(&[1, 2]).unwrap();
        w.write(&[0xff, 0, 3]).unwrap();
        assert!(!path.exists());
        w.finish().unwrap();
        let expect = Expect {
            rules: Rules::Awari,
            pits: 6,
            seeds: 3,
            positions: 5,
        };
        let l = RawLevel::open(&path, &expect, Check::Full).unwrap();
        assert_eq!(l.value(2), -1);
        assert_eq!(l.bytes(), &[1, 2, 0xff, 0, 3]);
        let other = Expect {
            rules: Rules::Oware,
            ..expect
        };
        let e = RawLevel::open(&path, &other, Check::HeaderOnly)
            .err()
            .unwrap();
        assert!(
            e.to_string().contains("rules oware") || e.to_string().contains("awari"),
            "{e}"
        );
        // One changed payload byte fails the full check only.
        let mut bytes = fs::read(&path).unwrap();
        bytes[PAYLOAD_OFFSET + 1] ^= 1;
        fs::write(&path, &bytes).unwrap();
        assert!(RawLevel::open(&path, &expect, Check::HeaderOnly).is_ok());
        let e = RawLevel::open(&path, &expect, Check::Full).err().unwrap();
        assert!(e.to_string().contains("damaged payload"), "{e}");
        // Truncated.
        fs::write(&path, &bytes[..bytes.len() - 1]).unwrap();
        let e = RawLevel::open(&path, &expect, Check::HeaderOnly)
            .err()
            .unwrap();
        assert!(e.to_string().contains("truncated"), "{e}");
    }

    #[test]
    fn unfinished_writer_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = level_path(dir.path(), 1);
        {
            let mut w = LevelWriter::create(&path, Rules::Oware, 4, 1, 3).unwrap();
            w.write(&[1]).unwrap();
        }
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn failed_rename_leaves_no_tmp() {
        let dir = tempfile::tempdir().unwrap();
        let path = level_path(dir.path(), 1);
        // A non-empty folder under the final name: the rename fails.
        fs::create_dir(&path).unwrap();
        fs::write(path.join("keep"), b"x").unwrap();
        let mut w = LevelWriter::create(&path, Rules::Awari, 6, 1, 2).unwrap();
        w.write(&[0, 1]).unwrap();
        let e = w.finish().err().unwrap();
        assert!(e.to_string().contains("level-001.awl"), "{e}");
        let names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, [std::ffi::OsString::from("level-001.awl")]);
    }
}
