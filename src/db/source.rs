//! A level file read as a stream: in index order, a run of positions at a time, through
//! reads of the file rather than its map, so that nothing of it stays in this process's
//! memory (a raw level read as it lies, a packed one a block at a time, a slice from its
//! map). The resident set of lower levels ([`crate::db::store::LevelStack`]) streams the
//! levels it does not hold this way, for the builder's streamed forward pass and the local
//! check of `verify`.

use std::path::Path;

use rayon::prelude::*;

use crate::db::layout::{missing_level, packed_path, Expect};
use crate::db::model::Model;
use crate::db::pack::PackedLevel;
use crate::db::raw::{checksum, Check};
use crate::db::store::LevelFile;
use crate::error::{Error, Result};

/// Bytes per read of a raw level streamed.
const STREAM_PIECE: usize = 1 << 22;

impl LevelFile {
    /// Opens level `expect.seeds` in `dir` to be read as a stream (the raw file if present,
    /// else the packed one); `None` if there is neither. A level packed with the exit
    /// model is refused: its values need the levels below at random.
    pub fn open_stream(dir: &Path, expect: &Expect) -> Result<Option<LevelFile>> {
        let Some(level) = LevelFile::open(dir, expect, Check::HeaderOnly)? else {
            return Ok(None);
        };
        level.streamable().map(Some)
    }

    /// Opens level `expect.seeds` in `dir` as [`LevelFile::open_stream`] does; a level
    /// that is not there is [`Error::MissingLevel`], whose command builds up to `build_to`.
    pub fn open_stream_required(dir: &Path, expect: &Expect, build_to: usize) -> Result<LevelFile> {
        LevelFile::open_stream(dir, expect)?
            .ok_or_else(|| missing_level(dir, expect.rules, expect.pits, expect.seeds, build_to))
    }

    /// Opens the packed file of level `expect.seeds` in `dir`, even if a raw one is there.
    pub fn open_packed(dir: &Path, expect: &Expect) -> Result<LevelFile> {
        let path = packed_path(dir, expect.seeds);
        Ok(LevelFile::Packed(PackedLevel::open(&path, expect)?))
    }

    /// The level, if it can be read as a stream: not packed with the exit model.
    fn streamable(self) -> Result<LevelFile> {
        if self.model() == Model::Plain {
            return Ok(self);
        }
        Err(not_streamable(self.path()))
    }

    /// Fills `out` with the values of the positions from `start` on (which the file must
    /// hold, [`LevelFile::range`]). A damaged packed block is an error that names it, and
    /// so is a level packed with the exit model.
    pub fn read(&self, start: u64, out: &mut [u8]) -> Result<()> {
        let range = self.range();
        assert!(range.start <= start && start + out.len() as u64 <= range.end);
        match self {
            LevelFile::Raw(l) => l.read_at(start, out),
            LevelFile::Slice(l) => {
                let at = (start - range.start) as usize;
                out.copy_from_slice(&l.bytes()[at..at + out.len()]);
                Ok(())
            }
            LevelFile::Packed(l) if l.model() != Model::Plain => Err(not_streamable(l.path())),
            LevelFile::Packed(l) => {
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
                    l.read_block(b, &mut src, into)?
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

    /// Fills `out` (as long as the file's range) with its values, in pieces read in
    /// parallel; a damaged packed block is an error that names it.
    pub fn read_parallel(&self, out: &mut [u8]) -> Result<()> {
        let range = self.range();
        assert_eq!(out.len() as u64, range.end - range.start);
        out.par_chunks_mut(STREAM_PIECE)
            .enumerate()
            .try_for_each(|(k, piece)| self.read(range.start + (k * STREAM_PIECE) as u64, piece))
    }

    /// Reads the whole level into `out` (as long as the level), in pieces read in
    /// parallel, and returns what is wrong with it: the damaged blocks of a packed level
    /// (read as zeros), else a payload checksum that differs from the header's; `None`
    /// if nothing is.
    pub fn read_all(&self, out: &mut [u8]) -> Result<Option<String>> {
        let problems: Vec<String> = match self {
            LevelFile::Packed(l) if l.model() == Model::Plain => {
                assert_eq!(out.len() as u64, l.header().positions);
                let s = l.pack_header().block as usize;
                let found: Vec<Option<String>> = out
                    .par_chunks_mut(s)
                    .enumerate()
                    .map(|(b, piece)| {
                        let read = l.read_block(b as u64, &mut Vec::new(), piece)?;
                        Ok(read.err().map(|p| {
                            piece.fill(0);
                            l.describe(&p)
                        }))
                    })
                    .collect::<Result<_>>()?;
                found.into_iter().flatten().collect()
            }
            _ => {
                self.read_parallel(out)?;
                Vec::new()
            }
        };
        if !problems.is_empty() {
            return Ok(Some(problems.join("; ")));
        }
        let (got, want) = (checksum(out), self.header().checksum);
        Ok((got != want)
            .then(|| format!("damaged payload (checksum {got:016x}, header says {want:016x})")))
    }

    /// Recomputes the payload checksum (and, packed, every block's) from the file, a
    /// piece at a time, and compares it with the header's; `each` sees every piece of
    /// the payload, in order.
    pub fn check_checksum_with(&self, mut each: impl FnMut(&[u8])) -> Result<()> {
        let mut hasher = xxhash_rust::xxh3::Xxh3::new();
        // Pieces read in parallel, hashed in order.
        let piece = match self {
            LevelFile::Packed(l) => l.pack_header().block as u64 * 64,
            _ => STREAM_PIECE as u64,
        };
        let range = self.range();
        let batch = piece * rayon::current_num_threads().max(1) as u64;
        let mut buf = vec![0u8; batch.min(range.end - range.start) as usize];
        let mut at = range.start;
        while at < range.end {
            let len = batch.min(range.end - at) as usize;
            buf[..len]
                .par_chunks_mut(piece as usize)
                .enumerate()
                .try_for_each(|(k, out)| self.read(at + k as u64 * piece, out))?;
            hasher.update(&buf[..len]);
            each(&buf[..len]);
            at += len as u64;
        }
        let (got, want) = (hasher.digest(), self.header().checksum);
        if got != want {
            return Err(Error::format(
                self.path(),
                format!("damaged payload (checksum {got:016x}, header says {want:016x})"),
            ));
        }
        Ok(())
    }
}

/// Why a level packed with the exit model is not read as a stream.
fn not_streamable(path: &Path) -> Error {
    Error::format(
        path,
        "packed with the exit model, whose values need the levels below at random: it cannot \
         be read as a stream (repack it with `awari pack --model plain`, or unpack it)",
    )
}
