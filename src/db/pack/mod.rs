//! Packed level files: the payload of a level cut into blocks of a fixed number of
//! values, each block compressed on its own with zstd, so that a probe decompresses one
//! block and a damaged byte is found and named by its block.
//!
//! What the blocks hold depends on the value model (byte 52, [`crate::db::model`]): the
//! values themselves (`plain`), or bytes from which the values come back with the lower
//! levels' values (`exits`, the default: about 1.27 times smaller). Either way the payload
//! checksum is that of the true values, the same number as in the raw level's header, and
//! a block checksum is that of the block's bytes as they decompress.
//!
//! Layout (little-endian):
//!
//! | bytes           | field |
//! |-----------------|-------|
//! | 0..8            | magic `AWARIPK\0` |
//! | 8..12           | format version (2; version 1 files have no model byte and read as `plain`) |
//! | 12              | rule set (0 awari, 1 oware) |
//! | 13              | pits per side P |
//! | 14              | index scheme (1 = Romein-Bal order, DESIGN.md section 3) |
//! | 15              | complete mark (1) |
//! | 16..20          | seeds n (the level) |
//! | 20..24          | values per block `S` (the last block may be shorter) |
//! | 24..32          | positions |
//! | 32..40          | payload checksum: XXH3-64 of the level's true values in index order, the same number as in the raw level's header |
//! | 40..48          | block count `B` |
//! | 48..52          | zstd level used (informational) |
//! | 52              | value model: 0 plain, 1 exits (version 2; zero in version 1) |
//! | 53..56          | zero |
//! | 56..64          | table checksum: XXH3-64 of bytes 0..56 followed by the block table |
//! | 64..            | block table: `B + 1` file offsets (block `b` is bytes `off[b]..off[b+1]`, `off[B]` is the file length), then `B` block checksums (XXH3-64 of the block's bytes as stored, i.e. decompressed but not resolved) |
//! | `off[0]`..      | the blocks, each one zstd frame |
//!
//! Like a raw level, a pack is written under a temporary name and renamed into place once
//! complete and synced, and holds nothing host- or time-dependent: blocks are filled and
//! compressed independently (in parallel) at a fixed level, so the same level packs to
//! the same bytes with any number of threads.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use memmap2::Mmap;
use rayon::prelude::*;
use xxhash_rust::xxh3::{xxh3_64, Xxh3};

use crate::db::layout::Expect;
use crate::db::model::{fill_block, resolve_level, Model};
use crate::db::raw::{check_expected, checksum, Header, TmpFile, INDEX_ROMEIN_BAL};
use crate::error::{Error, Result};
use crate::game::index::Index;
use crate::game::rules::Rules;

pub const MAGIC: [u8; 8] = *b"AWARIPK\0";
/// The version written. Version 1 (no model byte) is still read, as [`Model::Plain`].
pub const VERSION: u32 = 2;
const HEADER_LEN: usize = 64;
/// Values per block by default: 16 KiB. A probe that misses the cache decompresses one
/// block: on level 21 (2 cores, loaded) the median probe took 34 us with 16 KiB blocks,
/// 137 us with 64 KiB, for a size within 1% (ratio 2.09 against 2.10).
pub const DEFAULT_BLOCK: u32 = 1 << 14;
/// zstd level by default.
pub const DEFAULT_ZSTD_LEVEL: i32 = 9;
/// Blocks compressed in parallel before they are written: bounds the memory of packing.
const WRITE_BATCH: usize = 256;
/// Decompressed blocks kept per packed level for probes: shards x ways x 16 KiB = 512 KiB.
const CACHE_SHARDS: usize = 8;
const CACHE_WAYS: usize = 4;

/// How to pack.
#[derive(Clone, Copy, Debug)]
pub struct PackOptions {
    /// zstd compression level (1..=22).
    pub zstd_level: i32,
    /// Values per block.
    pub block: u32,
    /// What the blocks hold.
    pub model: Model,
}

impl Default for PackOptions {
    fn default() -> Self {
        PackOptions {
            zstd_level: DEFAULT_ZSTD_LEVEL,
            block: DEFAULT_BLOCK,
            model: Model::default(),
        }
    }
}

/// What a packed file says about itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PackHeader {
    /// The same fields as a raw level's header.
    pub level: Header,
    pub block: u32,
    pub blocks: u64,
    pub zstd_level: i32,
    pub model: Model,
}

impl PackHeader {
    fn table_len(blocks: u64) -> usize {
        (blocks as usize + 1) * 8 + blocks as usize * 8
    }

    fn encode(&self, table: &[u8]) -> [u8; HEADER_LEN] {
        let l = &self.level;
        let mut h = [0u8; HEADER_LEN];
        h[0..8].copy_from_slice(&MAGIC);
        h[8..12].copy_from_slice(&VERSION.to_le_bytes());
        h[12] = l.rules.code();
        h[13] = l.pits as u8;
        h[14] = INDEX_ROMEIN_BAL;
        h[15] = 1;
        h[16..20].copy_from_slice(&(l.seeds as u32).to_le_bytes());
        h[20..24].copy_from_slice(&self.block.to_le_bytes());
        h[24..32].copy_from_slice(&l.positions.to_le_bytes());
        h[32..40].copy_from_slice(&l.checksum.to_le_bytes());
        h[40..48].copy_from_slice(&self.blocks.to_le_bytes());
        h[48..52].copy_from_slice(&self.zstd_level.to_le_bytes());
        h[52] = self.model.code();
        let sum = table_checksum(&h[0..56], table);
        h[56..64].copy_from_slice(&sum.to_le_bytes());
        h
    }

    /// The value model named by the first bytes of a packed file, unchecked (a hint for
    /// what to keep in memory; opening the file checks it).
    pub fn peek_model(head: &[u8]) -> Option<Model> {
        if head.len() < HEADER_LEN || head[0..8] != MAGIC {
            return None;
        }
        match u32::from_le_bytes(head[8..12].try_into().unwrap()) {
            1 => Some(Model::Plain),
            VERSION => Model::from_code(head[52]),
            _ => None,
        }
    }

    /// Decodes the header of the packed file at `path` (`file` is the whole file); the
    /// error says what is wrong with it.
    pub fn decode(path: &Path, file: &[u8]) -> Result<PackHeader> {
        PackHeader::decode_fields(file).map_err(|problem| Error::format(path, problem))
    }

    fn decode_fields(file: &[u8]) -> std::result::Result<PackHeader, String> {
        if file.len() < HEADER_LEN {
            return Err(format!(
                "truncated: {} bytes, shorter than the {HEADER_LEN}-byte header",
                file.len()
            ));
        }
        let h = &file[..HEADER_LEN];
        if h[0..8] != MAGIC {
            return Err("not a packed awari level (bad magic)".into());
        }
        let u32_at = |i: usize| u32::from_le_bytes(h[i..i + 4].try_into().unwrap());
        let u64_at = |i: usize| u64::from_le_bytes(h[i..i + 8].try_into().unwrap());
        let version = u32_at(8);
        if version != 1 && version != VERSION {
            return Err(format!(
                "packed format version {version}, this tool reads versions 1 and {VERSION}"
            ));
        }
        let (block, positions, blocks) = (u32_at(20), u64_at(24), u64_at(40));
        if block == 0 || blocks != positions.div_ceil(block as u64) {
            return Err(format!(
                "damaged header ({blocks} blocks of {block} for {positions} positions)"
            ));
        }
        let end = HEADER_LEN as u64 + PackHeader::table_len(blocks) as u64;
        if (file.len() as u64) < end {
            return Err(format!(
                "truncated: {} bytes, shorter than its header and block table ({end} bytes)",
                file.len()
            ));
        }
        let table = &file[HEADER_LEN..end as usize];
        if u64_at(56) != table_checksum(&h[0..56], table) {
            return Err("damaged header or block table (checksum mismatch)".into());
        }
        if h[15] != 1 {
            return Err("unfinished pack (no complete mark)".into());
        }
        if h[14] != INDEX_ROMEIN_BAL {
            return Err(format!("unknown index scheme {}", h[14]));
        }
        let rules = Rules::from_code(h[12]).ok_or_else(|| format!("unknown rule set {}", h[12]))?;
        // Version 1 had no model: its values are stored as they are.
        let model = if version == 1 {
            Model::Plain
        } else {
            Model::from_code(h[52]).ok_or_else(|| format!("unknown value model {}", h[52]))?
        };
        Ok(PackHeader {
            level: Header {
                rules,
                pits: h[13] as usize,
                seeds: u32_at(16) as usize,
                positions,
                checksum: u64_at(32),
            },
            block,
            blocks,
            zstd_level: u32_at(48) as i32,
            model,
        })
    }
}

fn table_checksum(head: &[u8], table: &[u8]) -> u64 {
    let mut x = Xxh3::new();
    x.update(head);
    x.update(table);
    x.digest()
}

/// A damaged block found while decompressing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockProblem {
    pub block: u64,
    pub problem: String,
}

/// An open packed level: the file memory-mapped, blocks decompressed when a probe needs
/// them and kept in a small cache. What it stores is a value only with [`Model::Plain`]:
/// with [`Model::Exits`], [`PackedLevel::stored`] bytes become values through
/// [`crate::app::database::Database::probe`], and whole levels through [`PackedLevel::decode_all`]
/// given the lower levels' values.
pub struct PackedLevel {
    path: PathBuf,
    header: PackHeader,
    map: Mmap,
    cache: Box<BlockCache>,
    /// The file, for reads of blocks that bring nothing of it into this process's memory.
    file: File,
    /// Where the pack starts in the file (a distance table's pack follows its own header,
    /// DESIGN.md section 4.6); the map and the block offsets start there.
    base: u64,
}

impl std::fmt::Debug for PackedLevel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PackedLevel")
            .field("path", &self.path)
            .field("header", &self.header)
            .finish_non_exhaustive()
    }
}

impl PackedLevel {
    /// Opens the packed level at `path`, checking its header and block table against
    /// `expect`. Blocks are checked as they are decompressed; the payload checksum by
    /// [`PackedLevel::check_checksum`] (which, with the exit model, needs the lower levels).
    pub fn open(path: &Path, expect: &Expect) -> Result<PackedLevel> {
        PackedLevel::open_at(path, 0, expect)
    }

    /// Opens the pack that starts at byte `base` of the file at `path` and runs to its
    /// end, as [`PackedLevel::open`] does a whole file.
    pub fn open_at(path: &Path, base: u64, expect: &Expect) -> Result<PackedLevel> {
        let file = File::open(path).map_err(|e| Error::io(path, e))?;
        let len = file.metadata().map_err(|e| Error::io(path, e))?.len();
        if len < base {
            return Err(Error::format(
                path,
                format!("truncated: {len} bytes, shorter than its {base}-byte header"),
            ));
        }
        // SAFETY: as for raw levels, packs are written once and renamed into place; a file
        // changed underneath is caught by the checksums.
        let map = unsafe { memmap2::MmapOptions::new().offset(base).map(&file) }
            .map_err(|e| Error::io(path, e))?;
        let header = PackHeader::decode(path, &map)?;
        check_expected(path, &header.level, expect)?;
        let level = PackedLevel {
            path: path.to_path_buf(),
            header,
            map,
            cache: Box::new(BlockCache::new()),
            file,
            base,
        };
        level.check_table()?;
        Ok(level)
    }

    /// The block table must tile the file exactly: a truncated pack fails here.
    fn check_table(&self) -> Result<()> {
        let b = self.header.blocks;
        let start = (HEADER_LEN + PackHeader::table_len(b)) as u64;
        if self.offset(0) != start {
            return Err(Error::format(
                &self.path,
                "damaged block table (first offset)",
            ));
        }
        for i in 0..b {
            if self.offset(i + 1) < self.offset(i) {
                return Err(Error::format(
                    &self.path,
                    format!("damaged block table (offset of block {})", i + 1),
                ));
            }
        }
        let want = self.base + self.offset(b);
        let len = self.file_len();
        if len != want {
            return Err(Error::format(
                &self.path,
                format!(
                    "{len} bytes, expected {want}: {}",
                    if len < want {
                        "truncated"
                    } else {
                        "trailing data"
                    }
                ),
            ));
        }
        Ok(())
    }

    fn u64_at(&self, at: usize) -> u64 {
        u64::from_le_bytes(self.map[at..at + 8].try_into().unwrap())
    }

    fn offset(&self, b: u64) -> u64 {
        self.u64_at(HEADER_LEN + 8 * b as usize)
    }

    fn block_checksum(&self, b: u64) -> u64 {
        self.u64_at(HEADER_LEN + 8 * (self.header.blocks as usize + 1) + 8 * b as usize)
    }

    pub fn header(&self) -> &Header {
        &self.header.level
    }

    pub fn pack_header(&self) -> &PackHeader {
        &self.header
    }

    pub fn model(&self) -> Model {
        self.header.model
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Bytes on disk (the whole file's).
    pub fn file_len(&self) -> u64 {
        self.base + self.map.len() as u64
    }

    /// The positions of block `b`.
    pub fn block_range(&self, b: u64) -> std::ops::Range<u64> {
        let s = self.header.block as u64;
        b * s..((b + 1) * s).min(self.header.level.positions)
    }

    /// Decompresses block `b` into `out` (exactly its length) and checks it.
    pub fn decode_block(&self, b: u64, out: &mut [u8]) -> std::result::Result<(), BlockProblem> {
        let src = &self.map[self.offset(b) as usize..self.offset(b + 1) as usize];
        self.decode_block_bytes(b, src, out)
    }

    /// The bytes of block `b` in the file: `off[b]..off[b+1]` from the pack's start.
    pub fn block_bytes(&self, b: u64) -> std::ops::Range<u64> {
        self.base + self.offset(b)..self.base + self.offset(b + 1)
    }

    /// Lets the kernel take back the pages of the file's map read so far.
    pub fn release(&self) {
        crate::db::raw::release_map(&self.map);
    }

    /// Reads block `b` from the file (not the map, so that nothing of it stays in this
    /// process's memory) into `src` and decompresses it into `out` (as long as the block):
    /// a file that cannot be read is the outer error, a damaged block the inner one.
    pub fn read_block(
        &self,
        b: u64,
        src: &mut Vec<u8>,
        out: &mut [u8],
    ) -> Result<std::result::Result<(), BlockProblem>> {
        use std::os::unix::fs::FileExt;
        let bytes = self.block_bytes(b);
        src.resize((bytes.end - bytes.start) as usize, 0);
        self.file
            .read_exact_at(src, bytes.start)
            .map_err(|e| Error::io(&self.path, e))?;
        Ok(self.decode_block_bytes(b, src, out))
    }

    /// Decompresses block `b` from `src`, its bytes as the file holds them (read by the
    /// caller, not through this level's map), into `out` and checks it.
    pub fn decode_block_bytes(
        &self,
        b: u64,
        src: &[u8],
        out: &mut [u8],
    ) -> std::result::Result<(), BlockProblem> {
        let problem = |p: String| BlockProblem {
            block: b,
            problem: p,
        };
        // One decompression context per thread: making one costs more than a small block.
        thread_local! {
            static DCTX: std::cell::RefCell<Option<zstd::bulk::Decompressor<'static>>> =
                const { std::cell::RefCell::new(None) };
        }
        let n = DCTX
            .with(|d| {
                let mut d = d.borrow_mut();
                if d.is_none() {
                    *d = Some(zstd::bulk::Decompressor::new()?);
                }
                d.as_mut().unwrap().decompress_to_buffer(src, out)
            })
            .map_err(|e| problem(format!("cannot be decompressed ({e})")))?;
        if n != out.len() {
            return Err(problem(format!(
                "decompresses to {n} bytes, expected {}",
                out.len()
            )));
        }
        let (got, want) = (xxh3_64(out), self.block_checksum(b));
        if got != want {
            return Err(problem(format!(
                "damaged (checksum {got:016x}, block table says {want:016x})"
            )));
        }
        Ok(())
    }

    /// The error for a damaged block: names the level and the block.
    pub fn block_error(&self, p: &BlockProblem) -> Error {
        Error::format(&self.path, self.describe(p))
    }

    /// "level 7, block 0 of 1 (positions 0..31812): damaged (...)".
    pub fn describe(&self, p: &BlockProblem) -> String {
        let r = self.block_range(p.block);
        format!(
            "level {}, block {} of {} (positions {}..{}): {}",
            self.header.level.seeds, p.block, self.header.blocks, r.start, r.end, p.problem
        )
    }

    /// The byte stored for the position with index `i`, decompressing its block if it is
    /// not in the cache: its value with [`Model::Plain`], not with [`Model::Exits`].
    pub fn stored(&self, i: u64) -> Result<i8> {
        let s = self.header.block as u64;
        let b = i / s;
        let at = (i % s) as usize;
        if let Some(v) = self.cache.get(b, at) {
            return Ok(v as i8);
        }
        let mut buf = vec![0u8; (self.block_range(b).end - b * s) as usize].into_boxed_slice();
        self.decode_block(b, &mut buf)
            .map_err(|p| self.block_error(&p))?;
        let v = buf[at];
        self.cache.put(b, buf);
        Ok(v as i8)
    }

    /// Decompresses every block (in parallel) into `out`, which must hold the whole
    /// payload, and returns the damaged blocks (their bytes as decompressed, or zero).
    /// These are the stored bytes: [`PackedLevel::resolve`] makes them values.
    pub fn decode_into(&self, out: &mut [u8]) -> Vec<BlockProblem> {
        assert_eq!(out.len() as u64, self.header.level.positions);
        let mut problems: Vec<BlockProblem> = out
            .par_chunks_mut(self.header.block as usize)
            .enumerate()
            .filter_map(|(b, chunk)| {
                let r = self.decode_block(b as u64, chunk).err();
                if r.as_ref().is_some_and(|p| p.problem.starts_with("cannot")) {
                    // What zstd left half-written is no value: read zeros instead.
                    chunk.fill(0);
                }
                r
            })
            .collect();
        problems.sort_by_key(|p| p.block);
        problems
    }

    /// Turns the stored bytes of the whole level (from [`PackedLevel::decode_into`]) into
    /// its values, in place: nothing to do with [`Model::Plain`]; with [`Model::Exits`],
    /// `below[m]` must hold the values of every level `m < n`.
    pub fn resolve(&self, below: &[&[u8]], values: &mut [u8]) -> Result<()> {
        let h = &self.header.level;
        if self.header.model == Model::Plain {
            return Ok(());
        }
        let n = h.seeds;
        if below.len() < n {
            return Err(Error::Input(format!(
                "level {n} is packed with the exit model: reading it whole needs levels 0..{n}, {} given",
                below.len()
            )));
        }
        let index = Index::new(h.pits, n)?;
        resolve_level(h.rules, &index, n, &below[..n], values);
        Ok(())
    }

    /// The level's values: every block decompressed and checked, resolved against
    /// `below` (the values of the levels below; ignored with [`Model::Plain`]), then the
    /// payload checksum checked.
    pub fn decode_all(&self, below: &[&[u8]]) -> Result<Vec<u8>> {
        let mut out = vec![0u8; self.header.level.positions as usize];
        self.decode_all_into(below, &mut out)?;
        Ok(out)
    }

    /// [`PackedLevel::decode_all`] into `out` (as long as the level), so that the
    /// caller chooses the memory the values live in.
    pub fn decode_all_into(&self, below: &[&[u8]], out: &mut [u8]) -> Result<()> {
        if let Some(p) = self.decode_into(out).first() {
            return Err(self.block_error(p));
        }
        self.resolve(below, out)?;
        self.check_payload(out)
    }

    /// Compares the checksum of the level's values (decompressed and resolved) with the
    /// header.
    pub fn check_payload(&self, payload: &[u8]) -> Result<()> {
        let got = checksum(payload);
        if got != self.header.level.checksum {
            return Err(Error::format(
                &self.path,
                format!(
                    "damaged payload (checksum {got:016x}, header says {:016x})",
                    self.header.level.checksum
                ),
            ));
        }
        Ok(())
    }

    /// Decompresses every block and checks the block and payload checksums (`below` as
    /// in [`PackedLevel::decode_all`]).
    pub fn check_checksum(&self, below: &[&[u8]]) -> Result<()> {
        self.decode_all(below).map(drop)
    }
}

/// Decompressed blocks of one packed level, for probes: a few shards, each a small
/// least-recently-used list behind its own mutex, so that threads probing different
/// blocks rarely meet. A lock costs tens of nanoseconds against the tens of microseconds
/// of decompressing a block; bulk readers (the builder, verify) decompress whole levels
/// instead and never come here.
/// Blocks of one shard, most recently used first.
type Shard = Mutex<Vec<(u64, Box<[u8]>)>>;

struct BlockCache {
    shards: [Shard; CACHE_SHARDS],
}

impl BlockCache {
    fn new() -> BlockCache {
        BlockCache {
            shards: std::array::from_fn(|_| Mutex::new(Vec::with_capacity(CACHE_WAYS))),
        }
    }

    fn shard(&self, b: u64) -> std::sync::MutexGuard<'_, Vec<(u64, Box<[u8]>)>> {
        // A panic while holding the lock leaves a consistent list: carry on.
        self.shards[b as usize % CACHE_SHARDS]
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    fn get(&self, b: u64, at: usize) -> Option<u8> {
        let mut s = self.shard(b);
        let k = s.iter().position(|(x, _)| *x == b)?;
        let v = s[k].1[at];
        // Most recent first.
        s[..=k].rotate_right(1);
        Some(v)
    }

    fn put(&self, b: u64, data: Box<[u8]>) {
        let mut s = self.shard(b);
        if s.iter().any(|(x, _)| *x == b) {
            return;
        }
        if s.len() == CACHE_WAYS {
            s.pop();
        }
        s.insert(0, (b, data));
    }
}

/// Packs `payload` (a level's values in index order) into `path`, written under a
/// temporary name and renamed into place. With [`Model::Exits`], `below[m]` must hold the
/// values of every level `m < seeds` (it is not read with [`Model::Plain`]). Returns the
/// header written.
pub fn pack_payload(
    path: &Path,
    rules: Rules,
    pits: usize,
    seeds: usize,
    payload: &[u8],
    opts: &PackOptions,
    below: &[&[u8]],
) -> Result<PackHeader> {
    let mut file = TmpFile::create(path)?;
    let (header, head) = write_pack(&mut file, rules, pits, seeds, payload, opts, below)?;
    file.finish(&[&head])?;
    Ok(header)
}

/// Writes the pack of `payload` to `file` from where it stands (errors name the path it
/// gets): zeros for its header and block table, then the blocks, whose offsets count
/// from the pack's first byte. Returns the header and the bytes (header and block table)
/// the zeros stand for, for the caller to write in their place when it finishes the file.
pub(crate) fn write_pack(
    file: &mut TmpFile,
    rules: Rules,
    pits: usize,
    seeds: usize,
    payload: &[u8],
    opts: &PackOptions,
    below: &[&[u8]],
) -> Result<(PackHeader, Vec<u8>)> {
    if opts.block == 0 {
        return Err(Error::Input("the block size must be at least 1".into()));
    }
    let index = match opts.model {
        Model::Plain => None,
        Model::Exits if below.len() < seeds => {
            return Err(Error::Input(format!(
                "packing level {seeds} with the exit model needs levels 0..{seeds}, {} given",
                below.len()
            )))
        }
        Model::Exits => Some(Index::new(pits, seeds)?),
    };
    let positions = payload.len() as u64;
    let blocks = positions.div_ceil(opts.block as u64);
    let header = PackHeader {
        level: Header {
            rules,
            pits,
            seeds,
            positions,
            checksum: checksum(payload),
        },
        block: opts.block,
        blocks,
        zstd_level: opts.zstd_level,
        model: opts.model,
    };
    let table_len = PackHeader::table_len(blocks);
    let mut offsets = Vec::with_capacity(blocks as usize + 1);
    let mut sums = Vec::with_capacity(blocks as usize);
    let mut at = (HEADER_LEN + table_len) as u64;
    file.write(&vec![0u8; HEADER_LEN + table_len])?;
    let block = opts.block as usize;
    let chunks: Vec<&[u8]> = payload.chunks(block).collect();
    for (k, batch) in chunks.chunks(WRITE_BATCH).enumerate() {
        let packed: Vec<(Vec<u8>, u64)> = batch
            .par_iter()
            .enumerate()
            // One fill buffer per task: the block's stored bytes under the exit model.
            .map_init(Vec::new, |buf, (j, c)| {
                let stored = match &index {
                    None => *c,
                    Some(index) => {
                        buf.resize(c.len(), 0);
                        let start = ((k * WRITE_BATCH + j) * block) as u64;
                        fill_block(rules, index, seeds, &below[..seeds], start, c, buf);
                        &buf[..]
                    }
                };
                zstd::bulk::compress(stored, opts.zstd_level).map(|z| (z, xxh3_64(stored)))
            })
            .collect::<std::io::Result<_>>()
            .map_err(|source| Error::Compression {
                path: file.path().to_path_buf(),
                source,
            })?;
        for (z, sum) in packed {
            offsets.push(at);
            sums.push(sum);
            at += z.len() as u64;
            file.write(&z)?;
        }
    }
    offsets.push(at);
    let mut table = Vec::with_capacity(table_len);
    for x in offsets.iter().chain(&sums) {
        table.extend_from_slice(&x.to_le_bytes());
    }
    let mut head = header.encode(&table).to_vec();
    head.extend_from_slice(&table);
    Ok((header, head))
}

#[cfg(test)]
mod tests;
