//! Checkpoints inside a level (DESIGN.md section 4.5): the solver state of a level being
//! built, saved after its forward pass and between thresholds of its backward pass, so
//! that a stopped build resumes there instead of starting the level again.
//!
//! A file `level-NNN.tTT.awc` (over ranks `level-NNN.tTT.RofS.awc`, rank `R` of `S`)
//! holds the state once every threshold above `TT` is done (`TT = NNN` right after the
//! forward pass). The file is laid out in DESIGN.md section 4.5: a header of 4096 bytes
//! that starts with a raw level's header fields (DESIGN.md section 4.2) under the magic
//! `AWARICKP` ([`MAGIC`], [`VERSION`]) and adds what resuming needs, then the threshold
//! map and the state's bytes, checksummed in 32 MiB pieces so that threads compute the
//! checksum at once. A checkpoint is written under a temporary name, synced and renamed
//! into place: a kill leaves the previous one whole.
//!
//! The lean state's checkpoint (encoding 3, DESIGN.md section 5.6) holds no threshold
//! map, and as its state its two bits a position (words of 32 positions, little-endian)
//! followed by the checksum of the two files the lean state keeps beside them,
//! `level-NNN.exits` and `level-NNN.values` ([`lean_paths`]), as they stand then
//! ([`lean_checksum`]: the values of `TT` and below, which later passes write, read as 0).

use std::fs::{self, File};
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use xxhash_rust::xxh3::xxh3_64;

use crate::db::raw::{Header, TmpFile, PAYLOAD_OFFSET};
use crate::error::{Error, Result};
use crate::game::rules::Rules;
use crate::util::{disk_available, read_exact_at_parallel, CHUNK};

/// The magic of a checkpoint.
pub const MAGIC: [u8; 8] = *b"AWARICKP";
/// The checkpoint format this tool writes and reads. Version 2: the compact state's byte
/// counts the in-level moves of a position with no exit (version 1 counted its won
/// children, up to 2), so a version 1 checkpoint is refused and its level built afresh.
pub const VERSION: u32 = 2;
/// Bytes of a header checked by its checksum.
const CHECKED: usize = 120;
/// Bytes hashed apart for the payload checksum.
const PIECE: usize = 1 << 25;

/// Which positions of a level a checkpoint holds: the whole level (one process), or rank
/// `rank`'s slice of a build over `ranks` ranks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SliceOf {
    /// This rank.
    pub rank: usize,
    /// Ranks in all (1 for one process).
    pub ranks: usize,
}

impl SliceOf {
    /// The whole level, in one process.
    pub const WHOLE: SliceOf = SliceOf { rank: 0, ranks: 1 };
}

/// What a checkpoint says of itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CheckpointHeader {
    /// The rule set.
    pub rules: Rules,
    /// Pits per side.
    pub pits: usize,
    /// The level.
    pub seeds: usize,
    /// Positions of the whole level.
    pub positions: u64,
    /// Which part of the level.
    pub part: SliceOf,
    /// The first position held.
    pub base: u64,
    /// Positions held.
    pub held: u64,
    /// The state's encoding: 1 fast, 2 compact, 3 lean (its two bits, its files beside).
    pub encoding: u8,
    /// The next threshold to run: every threshold above it is done.
    pub next: u8,
    /// How far threshold `next` has gone: its seeds are settled, and everything they
    /// settle, in the first `segment << segment_shift` positions held (0: not begun).
    pub segment: u32,
    /// The log2 of the positions of a segment (0 when `segment` is 0).
    pub segment_shift: u8,
    /// The thresholds at which a position held may seed (the threshold map's union).
    pub present: u64,
    /// The forward pass's wall time, nanoseconds.
    pub forward_ns: u64,
    /// The backward pass's wall time so far, nanoseconds.
    pub backward_ns: u64,
    /// When it was written, seconds since 1970 (UTC).
    pub written: u64,
    /// Bytes of the threshold map.
    pub map_bytes: u64,
    /// Bytes of the state.
    pub state_bytes: u64,
    /// The payload checksum (see the module).
    pub checksum: u64,
}

impl CheckpointHeader {
    /// The header of a checkpoint of the positions `held` (`part` of the level) of level
    /// `seeds` of `positions`, written now; its thresholds and times are zero, and its
    /// state's fields (encoding, sizes, checksum) are the writer's to fill in.
    pub fn new(
        rules: Rules,
        pits: usize,
        seeds: usize,
        positions: u64,
        part: SliceOf,
        held: std::ops::Range<u64>,
    ) -> CheckpointHeader {
        let written = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        CheckpointHeader {
            rules,
            pits,
            seeds,
            positions,
            part,
            base: held.start,
            held: held.end - held.start,
            encoding: 0,
            next: 0,
            segment: 0,
            segment_shift: 0,
            present: 0,
            forward_ns: 0,
            backward_ns: 0,
            written,
            map_bytes: 0,
            state_bytes: 0,
            checksum: 0,
        }
    }

    /// The header block as stored at the start of the file.
    pub fn encode(&self) -> [u8; PAYLOAD_OFFSET] {
        let mut h = [0u8; PAYLOAD_OFFSET];
        let level = Header {
            rules: self.rules,
            pits: self.pits,
            seeds: self.seeds,
            positions: self.positions,
            checksum: self.checksum,
        };
        level.encode_fields(&mut h, MAGIC, VERSION);
        h[40] = self.encoding;
        h[41] = self.next;
        h[42] = self.segment_shift;
        h[52..56].copy_from_slice(&self.segment.to_le_bytes());
        h[44..48].copy_from_slice(&(self.part.rank as u32).to_le_bytes());
        h[48..52].copy_from_slice(&(self.part.ranks as u32).to_le_bytes());
        for (at, x) in [
            (56, self.base),
            (64, self.held),
            (72, self.present),
            (80, self.forward_ns),
            (88, self.backward_ns),
            (96, self.written),
            (104, self.map_bytes),
            (112, self.state_bytes),
        ] {
            h[at..at + 8].copy_from_slice(&x.to_le_bytes());
        }
        let hc = xxh3_64(&h[0..CHECKED]);
        h[CHECKED..CHECKED + 8].copy_from_slice(&hc.to_le_bytes());
        h
    }

    /// Decodes the header of the file at `path`; the error says what is wrong with it.
    pub fn decode(path: &Path, h: &[u8]) -> Result<CheckpointHeader> {
        let level = Header::decode_layout(h, MAGIC, VERSION, CHECKED, "a checkpoint")
            .map_err(|problem| Error::format(path, problem))?;
        let u32_at = |i: usize| u32::from_le_bytes(h[i..i + 4].try_into().unwrap()) as usize;
        let u64_at = |i: usize| u64::from_le_bytes(h[i..i + 8].try_into().unwrap());
        let head = CheckpointHeader {
            rules: level.rules,
            pits: level.pits,
            seeds: level.seeds,
            positions: level.positions,
            part: SliceOf {
                rank: u32_at(44),
                ranks: u32_at(48),
            },
            base: u64_at(56),
            held: u64_at(64),
            encoding: h[40],
            next: h[41],
            segment: u32_at(52) as u32,
            segment_shift: h[42],
            present: u64_at(72),
            forward_ns: u64_at(80),
            backward_ns: u64_at(88),
            written: u64_at(96),
            map_bytes: u64_at(104),
            state_bytes: u64_at(112),
            checksum: level.checksum,
        };
        let bad = |problem: String| Err(Error::format(path, problem));
        if !(1..=3).contains(&head.encoding) {
            return bad(format!("unknown state encoding {}", head.encoding));
        }
        if head.next as usize > head.seeds || head.next == 0 {
            return bad(format!(
                "threshold {} out of range for level {}",
                head.next, head.seeds
            ));
        }
        // A rank's segments are counted over the largest slice, which may pass its own.
        if head.segment_shift >= 64
            || (head.segment as u128) << head.segment_shift
                > head.positions as u128 + (1u128 << head.segment_shift)
        {
            return bad(format!(
                "segment {} of 2^{} positions out of range for {} positions held",
                head.segment, head.segment_shift, head.held
            ));
        }
        if head.part.ranks == 0 || head.part.rank >= head.part.ranks {
            return bad(format!("rank {} of {}", head.part.rank, head.part.ranks));
        }
        if head
            .base
            .checked_add(head.held)
            .is_none_or(|e| e > head.positions)
        {
            return bad(format!(
                "positions {}..+{} outside a level of {}",
                head.base, head.held, head.positions
            ));
        }
        Ok(head)
    }

    /// Bytes of the payload.
    fn payload_bytes(&self) -> u64 {
        self.map_bytes.saturating_add(self.state_bytes)
    }
}

/// Where a checkpoint stands in its level's backward pass: the next threshold to run, and
/// the segments of it done (section 5.5). Ordered from the furthest on: a lower threshold,
/// then more segments.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CheckpointAt {
    /// The next threshold to run: every threshold above it is done.
    pub next: u8,
    /// Segments of threshold `next` done.
    pub segment: u32,
}

impl CheckpointAt {
    /// The start of threshold `next`.
    pub fn threshold(next: u8) -> CheckpointAt {
        CheckpointAt { next, segment: 0 }
    }

    /// Whether `self` is further on in the level than `other`.
    pub fn beyond(self, other: CheckpointAt) -> bool {
        self < other
    }
}

impl Ord for CheckpointAt {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        // The furthest on first: the backward pass runs thresholds downwards and segments
        // upwards.
        (self.next, std::cmp::Reverse(self.segment))
            .cmp(&(other.next, std::cmp::Reverse(other.segment)))
    }
}

impl PartialOrd for CheckpointAt {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl std::fmt::Display for CheckpointAt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "threshold {}", self.next)?;
        if self.segment > 0 {
            write!(f, ", segment {}", self.segment)?;
        }
        Ok(())
    }
}

/// The file of the checkpoint of level `n` at `at`: `level-NNN.tTT.awc` at a threshold's
/// start, `level-NNN.tTT.sK.awc` after `K` of its segments; over ranks, the rank's part
/// before `.awc`.
pub fn checkpoint_path(dir: &Path, n: usize, at: CheckpointAt, part: SliceOf) -> PathBuf {
    let next = at.next;
    let segment = match at.segment {
        0 => String::new(),
        k => format!(".s{k}"),
    };
    if part == SliceOf::WHOLE {
        dir.join(format!("level-{n:03}.t{next:02}{segment}.awc"))
    } else {
        let SliceOf { rank, ranks } = part;
        dir.join(format!(
            "level-{n:03}.t{next:02}{segment}.{rank}of{ranks}.awc"
        ))
    }
}

/// Where the checkpoint named `name` of level `n` stands, if the name is one of
/// [`checkpoint_path`]'s (of any part).
fn parse_name(name: &str, n: usize) -> Option<CheckpointAt> {
    let rest = name.strip_prefix(&format!("level-{n:03}.t"))?;
    let next = rest.get(..2)?.parse::<u8>().ok()?;
    let rest = &rest[2..];
    let segment = match rest.strip_prefix(".s") {
        Some(r) => {
            let digits = r.bytes().take_while(u8::is_ascii_digit).count();
            r[..digits].parse::<u32>().ok().filter(|&k| k > 0)?
        }
        None => 0,
    };
    Some(CheckpointAt { next, segment })
}

/// The checkpoints of level `n` of `part` in `dir`: where each stands and its file, the
/// furthest on first. Temporary files left by a kill are removed.
pub fn list_checkpoints(
    dir: &Path,
    n: usize,
    part: SliceOf,
) -> Result<Vec<(CheckpointAt, PathBuf)>> {
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io(dir, e)),
    };
    let mut found = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| Error::io(dir, e))?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some(at) = parse_name(name, n) else {
            continue;
        };
        let path = checkpoint_path(dir, n, at, part);
        if path.file_name() == Some(entry.file_name().as_os_str()) {
            found.push((at, path));
        } else if name.ends_with(".awc.tmp")
            && path.with_extension("awc.tmp").file_name() == Some(entry.file_name().as_os_str())
        {
            // A checkpoint being written when the build stopped.
            let tmp = entry.path();
            fs::remove_file(&tmp).map_err(|e| Error::io(&tmp, e))?;
        }
    }
    found.sort();
    Ok(found)
}

/// Whether the disk holds a level's next checkpoint (DESIGN.md section 5.5). A checkpoint
/// is a safety net, not worth the level: the level's file must still fit after it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CheckpointRoom {
    /// It fits beside the checkpoints already there (or the free disk is not known).
    Beside,
    /// It fits once the checkpoints already there are removed: `free` bytes are free, and
    /// it and the level's file need `need`.
    Instead { free: u64, need: u64 },
    /// It does not fit even then.
    Short { free: u64, need: u64 },
}

/// What a checkpoint of `state` bytes of solver state and the file of the `held`
/// positions it is for need on disk together: each with its header.
pub fn checkpoint_need(state: u64, held: u64) -> u64 {
    PAYLOAD_OFFSET as u64 + state + PAYLOAD_OFFSET as u64 + held
}

/// The room under `dir` for a checkpoint that, with the level's file, needs `need` bytes,
/// the checkpoints `older` (as [`list_checkpoints`] gives them) being there.
pub fn checkpoint_room(dir: &Path, older: &[(CheckpointAt, PathBuf)], need: u64) -> CheckpointRoom {
    let Some(free) = disk_available(dir).filter(|&f| f < need) else {
        return CheckpointRoom::Beside;
    };
    let older: u64 = older
        .iter()
        .filter_map(|(_, p)| fs::metadata(p).ok())
        .map(|m| m.len())
        .sum();
    if free + older < need {
        CheckpointRoom::Short { free, need }
    } else {
        CheckpointRoom::Instead { free, need }
    }
}

/// Removes every checkpoint of level `n` of `part` in `dir`, and the lean state's files
/// (the level is done, or its checkpoints are not to be used).
pub fn remove_checkpoints(dir: &Path, n: usize, part: SliceOf) -> Result<()> {
    for (_, path) in list_checkpoints(dir, n, part)? {
        fs::remove_file(&path).map_err(|e| Error::io(&path, e))?;
    }
    for path in lean_paths(dir, n, part) {
        match fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(Error::io(&path, e)),
            _ => {}
        }
    }
    Ok(())
}

/// The lean state's files of level `n` of `part` in `dir`, named when it is checkpointed:
/// its best exits and its values so far (DESIGN.md section 5.6), `level-NNN.exits` and
/// `level-NNN.values` (over ranks `level-NNN.RofS.exits` and `.values`).
pub fn lean_paths(dir: &Path, n: usize, part: SliceOf) -> [PathBuf; 2] {
    let stem = if part == SliceOf::WHOLE {
        format!("level-{n:03}")
    } else {
        format!("level-{n:03}.{}of{}", part.rank, part.ranks)
    };
    [
        dir.join(format!("{stem}.exits")),
        dir.join(format!("{stem}.values")),
    ]
}

/// The checksum of the lean state's files of `len` positions once every threshold above
/// `next` is done: the exits, and the values with those of thresholds `next` and below
/// (which a pass after the checkpoint may have written, and resuming clears) read as 0.
/// Each piece of [`CHUNK`] positions hashed apart by the rayon threads.
pub fn lean_checksum(exits: &File, values: &File, len: u64, next: u8) -> std::io::Result<u64> {
    use std::os::unix::fs::FileExt;
    let hashes: Vec<[u64; 2]> = (0..len.div_ceil(CHUNK))
        .into_par_iter()
        .map_init(
            || (Vec::new(), Vec::new()),
            |(b, v): &mut (Vec<u8>, Vec<u8>), c| {
                let at = c * CHUNK;
                let piece = CHUNK.min(len - at) as usize;
                b.resize(piece, 0);
                v.resize(piece, 0);
                exits.read_exact_at(b, at)?;
                values.read_exact_at(v, at)?;
                for x in v.iter_mut() {
                    if (*x as i8).unsigned_abs() <= next {
                        *x = 0;
                    }
                }
                Ok([xxh3_64(b), xxh3_64(v)])
            },
        )
        .collect::<std::io::Result<_>>()?;
    let bytes: Vec<u8> = hashes
        .iter()
        .flatten()
        .flat_map(|h| h.to_le_bytes())
        .collect();
    Ok(xxh3_64(&bytes))
}

/// The payload checksum of `parts` (see the module), computed by the rayon threads.
fn checksum(parts: &[&[u8]]) -> u64 {
    let mut hashes = Vec::new();
    for part in parts {
        let piece: Vec<u64> = part.par_chunks(PIECE).map(xxh3_64).collect();
        hashes.extend(piece.iter().flat_map(|h| h.to_le_bytes()));
    }
    xxh3_64(&hashes)
}

/// Writes a checkpoint to `path`: `head` (its sizes and checksum filled in here), the
/// threshold map, and the state's bytes, the pieces of `state` one after another, under a
/// temporary name, synced and renamed into place.
pub fn write_checkpoint(
    path: &Path,
    mut head: CheckpointHeader,
    map: &[u8],
    state: &[&[u8]],
) -> Result<()> {
    head.map_bytes = map.len() as u64;
    head.state_bytes = state.iter().map(|p| p.len() as u64).sum();
    let mut parts = vec![map];
    parts.extend_from_slice(state);
    head.checksum = checksum(&parts);
    let mut file = TmpFile::create(path)?;
    for part in [&[0u8; PAYLOAD_OFFSET][..]].iter().chain(&parts) {
        file.write(part)?;
    }
    file.finish(&[&head.encode()])
}

/// An open checkpoint whose header has been checked.
#[derive(Debug)]
pub struct Checkpoint {
    path: PathBuf,
    file: File,
    /// What it says of itself.
    pub head: CheckpointHeader,
}

impl Checkpoint {
    /// Opens the checkpoint at `path` and checks its header against what the build wants
    /// (`want`'s rule set, pits, level, positions, part and positions held): a damaged,
    /// truncated or foreign file is refused with what is wrong.
    pub fn open(path: &Path, want: &CheckpointHeader) -> Result<Checkpoint> {
        let file = File::open(path).map_err(|e| Error::io(path, e))?;
        let len = file.metadata().map_err(|e| Error::io(path, e))?.len();
        let mut h = vec![0u8; PAYLOAD_OFFSET.min(len as usize)];
        read_exact_at_parallel(&file, 0, &mut h).map_err(|e| Error::io(path, e))?;
        let head = CheckpointHeader::decode(path, &h)?;
        let what = |h: &CheckpointHeader| {
            format!(
                "{}-{} level {} ({} positions), rank {} of {}, positions {}..+{}",
                h.rules, h.pits, h.seeds, h.positions, h.part.rank, h.part.ranks, h.base, h.held
            )
        };
        let same = (head.rules, head.pits, head.seeds, head.positions, head.part)
            == (want.rules, want.pits, want.seeds, want.positions, want.part)
            && (head.base, head.held) == (want.base, want.held);
        if !same {
            return Err(Error::format(
                path,
                format!(
                    "a checkpoint of {}, not of this build's {}",
                    what(&head),
                    what(want)
                ),
            ));
        }
        let expect = PAYLOAD_OFFSET as u64 + head.payload_bytes();
        if len != expect {
            return Err(Error::format(
                path,
                format!("truncated or extended: {len} bytes, its header says {expect}"),
            ));
        }
        Ok(Checkpoint {
            path: path.to_path_buf(),
            file,
            head,
        })
    }

    /// The checkpoint's file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reads the threshold map into `map` and the state into the pieces of `state`, one
    /// after another (as long in all as the header says), and checks the payload checksum.
    /// The file is closed after: a resumed level removes its checkpoint when it saves the
    /// next, and an open file would keep its disk taken until the level ends.
    pub fn read(self, map: &mut [u8], state: &mut [&mut [u8]]) -> Result<()> {
        let io = |e| Error::io(&self.path, e);
        let state_len: u64 = state.iter().map(|p| p.len() as u64).sum();
        if (map.len() as u64, state_len) != (self.head.map_bytes, self.head.state_bytes) {
            return Err(Error::format(
                &self.path,
                format!(
                    "holds {} + {} bytes of state, this build's has {} + {}",
                    self.head.map_bytes,
                    self.head.state_bytes,
                    map.len(),
                    state_len
                ),
            ));
        }
        let mut at = PAYLOAD_OFFSET as u64;
        read_exact_at_parallel(&self.file, at, map).map_err(io)?;
        at += map.len() as u64;
        for part in state.iter_mut() {
            read_exact_at_parallel(&self.file, at, part).map_err(io)?;
            at += part.len() as u64;
        }
        let mut parts: Vec<&[u8]> = vec![map];
        parts.extend(state.iter().map(|p| &**p));
        let got = checksum(&parts);
        if got != self.head.checksum {
            return Err(Error::format(
                &self.path,
                format!(
                    "damaged payload (checksum {got:016x}, header says {:016x})",
                    self.head.checksum
                ),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head() -> CheckpointHeader {
        CheckpointHeader {
            rules: Rules::Oware,
            pits: 6,
            seeds: 20,
            positions: 1000,
            part: SliceOf::WHOLE,
            base: 0,
            held: 1000,
            encoding: 2,
            next: 7,
            segment: 0,
            segment_shift: 0,
            present: 0b1010_0110,
            forward_ns: 123,
            backward_ns: 456,
            written: 1_800_000_000,
            map_bytes: 0,
            state_bytes: 0,
            checksum: 0,
        }
    }

    #[test]
    fn written_checkpoints_read_back_and_list_furthest_first() {
        let dir = tempfile::tempdir().unwrap();
        let map: Vec<u8> = (0..128u32).map(|i| i as u8).collect();
        let state: Vec<u8> = (0..1000u32).map(|i| (i * 7) as u8).collect();
        for next in [9, 7] {
            let h = CheckpointHeader { next, ..head() };
            write_checkpoint(
                &checkpoint_path(
                    dir.path(),
                    20,
                    CheckpointAt::threshold(next),
                    SliceOf::WHOLE,
                ),
                h,
                &map,
                &[&state],
            )
            .unwrap();
        }
        // Another level's, another rank's, and a temporary file left by a kill.
        write_checkpoint(
            &checkpoint_path(dir.path(), 21, CheckpointAt::threshold(3), SliceOf::WHOLE),
            head(),
            &map,
            &[&state],
        )
        .unwrap();
        let other = SliceOf { rank: 1, ranks: 2 };
        write_checkpoint(
            &checkpoint_path(dir.path(), 20, CheckpointAt::threshold(5), other),
            head(),
            &map,
            &[&state],
        )
        .unwrap();
        // Two of threshold 9 after some of its segments: further on than its start, and
        // than fewer segments.
        for segment in [2, 12] {
            let at = CheckpointAt { next: 9, segment };
            let h = CheckpointHeader {
                next: 9,
                segment,
                segment_shift: 6,
                ..head()
            };
            let path = checkpoint_path(dir.path(), 20, at, SliceOf::WHOLE);
            write_checkpoint(&path, h, &map, &[&state[..600], &state[600..]]).unwrap();
            let back = Checkpoint::open(&path, &head()).unwrap().head;
            assert_eq!((back.segment, back.segment_shift), (segment, 6));
        }
        assert!(checkpoint_path(
            dir.path(),
            20,
            CheckpointAt {
                next: 9,
                segment: 12
            },
            other
        )
        .ends_with("level-020.t09.s12.1of2.awc"));
        let tmp = dir.path().join("level-020.t05.awc.tmp");
        fs::write(&tmp, b"half").unwrap();
        let listed = list_checkpoints(dir.path(), 20, SliceOf::WHOLE).unwrap();
        let at: Vec<(u8, u32)> = listed.iter().map(|(t, _)| (t.next, t.segment)).collect();
        assert_eq!(at, [(7, 0), (9, 12), (9, 2), (9, 0)]);
        assert!(listed[1].1.ends_with("level-020.t09.s12.awc"));
        assert!(CheckpointAt {
            next: 9,
            segment: 12
        }
        .beyond(CheckpointAt::threshold(9)));
        assert!(!tmp.exists());
        let c = Checkpoint::open(&listed[0].1, &head()).unwrap();
        assert_eq!(c.head.next, 7);
        assert_eq!(c.head.present, 0b1010_0110);
        assert_eq!((c.head.map_bytes, c.head.state_bytes), (128, 1000));
        let (mut m, mut s) = (vec![0; 128], vec![0; 1000]);
        c.read(&mut m, &mut [&mut s]).unwrap();
        assert_eq!((m, s), (map.clone(), state.clone()));
        remove_checkpoints(dir.path(), 20, SliceOf::WHOLE).unwrap();
        assert!(list_checkpoints(dir.path(), 20, SliceOf::WHOLE)
            .unwrap()
            .is_empty());
        assert_eq!(list_checkpoints(dir.path(), 20, other).unwrap().len(), 1);
    }

    #[test]
    fn damaged_truncated_and_foreign_checkpoints_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = checkpoint_path(dir.path(), 20, CheckpointAt::threshold(7), SliceOf::WHOLE);
        let state = vec![3u8; 1000];
        write_checkpoint(&path, head(), &[1; 16], &[&state]).unwrap();
        let good = fs::read(&path).unwrap();
        let refused = |bytes: &[u8], want: &CheckpointHeader| -> String {
            fs::write(&path, bytes).unwrap();
            match Checkpoint::open(&path, want) {
                Err(e) => e.to_string(),
                Ok(c) => c
                    .read(&mut [0; 16], &mut [&mut [0; 1000]])
                    .unwrap_err()
                    .to_string(),
            }
        };
        let mut flipped = good.clone();
        flipped[PAYLOAD_OFFSET + 500] ^= 1;
        assert!(refused(&flipped, &head()).contains("damaged payload"));
        let mut header = good.clone();
        header[70] ^= 1;
        assert!(refused(&header, &head()).contains("damaged header"));
        assert!(refused(&good[..good.len() - 1], &head()).contains("truncated"));
        assert!(refused(&good[..100], &head()).contains("truncated"));
        let awari = CheckpointHeader {
            rules: Rules::Awari,
            ..head()
        };
        let e = refused(&good, &awari);
        assert!(e.contains("a checkpoint of oware-6 level 20"), "{e}");
        let mut level = good.clone();
        level[0..8].copy_from_slice(b"AWARIDB\0");
        assert!(refused(&level, &head()).contains("not a checkpoint"));
        // A checkpoint of the format before (the compact state's byte changed) is refused.
        let mut old = good.clone();
        old[8..12].copy_from_slice(&1u32.to_le_bytes());
        let e = refused(&old, &head());
        assert!(
            e.contains("format version 1, this tool reads version 2"),
            "{e}"
        );
        // The good one still reads.
        fs::write(&path, &good).unwrap();
        let c = Checkpoint::open(&path, &head()).unwrap();
        c.read(&mut [0; 16], &mut [&mut [0; 1000]]).unwrap();
    }
}
