//! Finished levels read in index order, a run of positions at a time, through reads of
//! their files rather than maps, so that nothing of them stays in this process's memory:
//! one level ([`LevelSource`]), and the lower levels that a level being built or checked
//! reads this way ([`LowerSources`]), which the streamed forward pass of the builder and
//! the local check of `verify` share.

use std::fs;
use std::ops::Range;
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use crate::db::layout::{missing_level, packed_path, Expect};
use crate::db::model::Model;
use crate::db::pack::{BlockProblem, PackedLevel};
use crate::db::raw::Check;
use crate::db::raw::{checksum, PAYLOAD_OFFSET};
use crate::db::store::LevelFile;
use crate::error::{Error, Result};
use crate::game::index::Index;
use crate::game::rules::Rules;
use crate::game::scan::Stream;

/// Bytes per read of a raw level streamed ([`LevelSource`]).
const STREAM_PIECE: usize = 1 << 22;

/// A finished level read in index order, a run of positions at a time, through reads of
/// its file rather than a map, so that nothing of it stays in this process's memory: the
/// raw file, or the packed one decompressed a block at a time. A level packed with the exit
/// model is refused: its values need the levels below at random.
pub struct LevelSource {
    kind: SourceKind,
    file: fs::File,
    positions: u64,
}

enum SourceKind {
    /// The raw file and the payload checksum of its header.
    Raw(PathBuf, u64),
    Packed(PackedLevel),
}

impl LevelSource {
    /// Opens level `expect.seeds` in `dir` (the raw file if present, else the packed one)
    /// checked against `expect`; `None` if there is neither.
    pub fn open(dir: &Path, expect: &Expect) -> Result<Option<LevelSource>> {
        let Some(level) = LevelFile::open(dir, expect, Check::HeaderOnly)? else {
            return Ok(None);
        };
        LevelSource::of(level, expect).map(Some)
    }

    /// Opens level `expect.seeds` in `dir` as [`LevelSource::open`] does; a level that is
    /// not there is [`Error::MissingLevel`], whose command builds up to `build_to`.
    pub fn open_required(dir: &Path, expect: &Expect, build_to: usize) -> Result<LevelSource> {
        LevelSource::open(dir, expect)?
            .ok_or_else(|| missing_level(dir, expect.rules, expect.pits, expect.seeds, build_to))
    }

    /// Opens the packed file of level `expect.seeds` in `dir`, even if a raw one is there.
    pub fn open_packed(dir: &Path, expect: &Expect) -> Result<LevelSource> {
        let path = packed_path(dir, expect.seeds);
        LevelSource::of(LevelFile::Packed(PackedLevel::open(&path, expect)?), expect)
    }

    fn of(level: LevelFile, expect: &Expect) -> Result<LevelSource> {
        let path = level.path().to_path_buf();
        let file = fs::File::open(&path).map_err(|e| Error::io(&path, e))?;
        let kind =
            match level {
                LevelFile::Raw(l) => SourceKind::Raw(path, l.header().checksum),
                LevelFile::Packed(l) if l.model() == Model::Plain => SourceKind::Packed(l),
                LevelFile::Packed(_) => return Err(Error::format(
                    &path,
                    "packed with the exit model, whose values need the levels below at random: \
                     it cannot be read as a stream (repack it with `awari pack --model plain`, or \
                     unpack it)",
                )),
            };
        Ok(LevelSource {
            kind,
            file,
            positions: expect.positions,
        })
    }

    /// The file read.
    pub fn path(&self) -> &Path {
        match &self.kind {
            SourceKind::Raw(p, _) => p,
            SourceKind::Packed(l) => l.path(),
        }
    }

    /// Fills `out` with the values of the positions from `start` on. A damaged packed
    /// block is an error that names it.
    pub fn read(&self, start: u64, out: &mut [u8]) -> Result<()> {
        assert!(start + out.len() as u64 <= self.positions);
        match &self.kind {
            SourceKind::Raw(path, _) => {
                use std::os::unix::fs::FileExt;
                self.file
                    .read_exact_at(out, PAYLOAD_OFFSET as u64 + start)
                    .map_err(|e| Error::io(path, e))
            }
            SourceKind::Packed(l) => {
                let s = l.pack_header().block as u64;
                let end = start + out.len() as u64;
                let mut src = Vec::new();
                let mut block = Vec::new();
                for b in start / s..end.div_ceil(s) {
                    let r = l.block_range(b);
                    let (lo, hi) = (r.start.max(start), r.end.min(end));
                    let dst = &mut out[(lo - start) as usize..(hi - start) as usize];
                    let whole = lo == r.start && hi == r.end;
                    if !whole {
                        block.resize((r.end - r.start) as usize, 0);
                    }
                    let into = if whole { &mut *dst } else { &mut block[..] };
                    self.read_block(l, b, &mut src, into)?
                        .map_err(|p| l.block_error(&p))?;
                    if !whole {
                        dst.copy_from_slice(
                            &block[(lo - r.start) as usize..(hi - r.start) as usize],
                        );
                    }
                }
                Ok(())
            }
        }
    }

    /// Reads block `b` of the packed level `l` from the file into `src` and decompresses
    /// it into `out` (as long as the block): a file that cannot be read is the outer error,
    /// a damaged block the inner one.
    fn read_block(
        &self,
        l: &PackedLevel,
        b: u64,
        src: &mut Vec<u8>,
        out: &mut [u8],
    ) -> Result<std::result::Result<(), BlockProblem>> {
        use std::os::unix::fs::FileExt;
        let bytes = l.block_bytes(b);
        src.resize((bytes.end - bytes.start) as usize, 0);
        self.file
            .read_exact_at(src, bytes.start)
            .map_err(|e| Error::io(l.path(), e))?;
        Ok(l.decode_block_bytes(b, src, out))
    }

    /// Fills `out` (as long as the level) with the whole level, in pieces read in
    /// parallel; a damaged packed block is an error that names it.
    pub fn read_parallel(&self, out: &mut [u8]) -> Result<()> {
        assert_eq!(out.len() as u64, self.positions);
        out.par_chunks_mut(STREAM_PIECE)
            .enumerate()
            .try_for_each(|(k, piece)| self.read((k * STREAM_PIECE) as u64, piece))
    }

    /// The payload checksum the level's header gives.
    fn header_checksum(&self) -> u64 {
        match &self.kind {
            SourceKind::Raw(_, sum) => *sum,
            SourceKind::Packed(l) => l.header().checksum,
        }
    }

    /// Reads the whole level into `out` (as long as the level), in pieces read in
    /// parallel, and returns what is wrong with it: the damaged blocks of a packed level
    /// (read as zeros), else a payload checksum that differs from the header's; `None`
    /// if nothing is.
    pub fn read_all(&self, out: &mut [u8]) -> Result<Option<String>> {
        assert_eq!(out.len() as u64, self.positions);
        let problems: Vec<String> = match &self.kind {
            SourceKind::Raw(..) => {
                self.read_parallel(out)?;
                Vec::new()
            }
            SourceKind::Packed(l) => {
                let s = l.pack_header().block as usize;
                let found: Vec<Option<String>> = out
                    .par_chunks_mut(s)
                    .enumerate()
                    .map(|(b, piece)| {
                        let read = self.read_block(l, b as u64, &mut Vec::new(), piece)?;
                        Ok(read.err().map(|p| {
                            piece.fill(0);
                            l.describe(&p)
                        }))
                    })
                    .collect::<Result<_>>()?;
                found.into_iter().flatten().collect()
            }
        };
        if !problems.is_empty() {
            return Ok(Some(problems.join("; ")));
        }
        let (got, want) = (checksum(out), self.header_checksum());
        Ok((got != want)
            .then(|| format!("damaged payload (checksum {got:016x}, header says {want:016x})")))
    }

    /// Recomputes the payload checksum (and, packed, every block's) from the file, a
    /// piece at a time, and compares it with the header's; `each` sees every piece of
    /// the payload, in order.
    pub fn check_checksum_with(&self, mut each: impl FnMut(&[u8])) -> Result<()> {
        let mut hasher = xxhash_rust::xxh3::Xxh3::new();
        // Pieces read in parallel, hashed in order.
        let piece = match &self.kind {
            SourceKind::Raw(..) => STREAM_PIECE as u64,
            SourceKind::Packed(l) => l.pack_header().block as u64 * 64,
        };
        let batch = piece * rayon::current_num_threads().max(1) as u64;
        let mut buf = vec![0u8; batch.min(self.positions) as usize];
        let mut at = 0;
        while at < self.positions {
            let len = batch.min(self.positions - at) as usize;
            buf[..len]
                .par_chunks_mut(piece as usize)
                .enumerate()
                .try_for_each(|(k, out)| self.read(at + k as u64 * piece, out))?;
            hasher.update(&buf[..len]);
            each(&buf[..len]);
            at += len as u64;
        }
        let (got, want) = (hasher.digest(), self.header_checksum());
        if got != want {
            return Err(Error::format(
                self.path(),
                format!("damaged payload (checksum {got:016x}, header says {want:016x})"),
            ));
        }
        Ok(())
    }
}

/// The lower levels a level reads as streams, `first..end` (from the lowest a capture
/// reaches to two below the level): each from its file, or from memory where the caller
/// holds its values already (a level packed with the exit model, resolved).
pub struct LowerSources<'a> {
    first: usize,
    /// Level `m` at `m - first`.
    levels: Vec<Source<'a>>,
}

/// How [`LowerSources`] reads one level: not a holder of values (that is
/// [`crate::db::store::LevelValues`]) but a choice of reader.
enum Source<'a> {
    /// Streamed from its file, nothing of it kept.
    File(LevelSource),
    /// Copied from values the caller holds (a [`crate::db::store::LevelValues`] in memory).
    Memory(&'a [u8]),
}

impl std::fmt::Debug for LowerSources<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LowerSources")
            .field("levels", &self.levels())
            .finish_non_exhaustive()
    }
}

impl<'a> LowerSources<'a> {
    /// Opens `levels` of the `rules` database in `dir` (a level for which `held` gives
    /// values is read from them instead). A missing level is [`Error::MissingLevel`],
    /// whose command builds up to `build_to`.
    pub fn open(
        dir: &Path,
        rules: Rules,
        index: &Index,
        levels: Range<usize>,
        build_to: usize,
        held: impl Fn(usize) -> Option<&'a [u8]>,
    ) -> Result<LowerSources<'a>> {
        let first = levels.start;
        let levels = levels
            .map(|m| match held(m) {
                Some(values) => Ok(Source::Memory(values)),
                None => {
                    let want = Expect::level(rules, index, m);
                    LevelSource::open_required(dir, &want, build_to).map(Source::File)
                }
            })
            .collect::<Result<_>>()?;
        Ok(LowerSources { first, levels })
    }

    /// The levels held: `first..end`.
    pub fn levels(&self) -> Range<usize> {
        self.first..self.first + self.levels.len()
    }

    /// The value of the position with index `i` of level `m`.
    pub fn value(&self, m: usize, i: u64) -> Result<i8> {
        let mut v = [0u8];
        self.read(m, i, &mut v)?;
        Ok(v[0] as i8)
    }
}

impl Stream for LowerSources<'_> {
    fn read(&self, seeds: usize, start: u64, out: &mut [u8]) -> Result<()> {
        match &self.levels[seeds - self.first] {
            Source::File(f) => f.read(start, out),
            Source::Memory(v) => {
                let start = start as usize;
                out.copy_from_slice(&v[start..start + out.len()]);
                Ok(())
            }
        }
    }
}
