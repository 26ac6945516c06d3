//! Romein and Bal's `scores.N` files: the published Awari database, one file per level,
//! one signed byte per position in the order of DESIGN.md section 3 and nothing else (no
//! header, no checksum). Levels of this tool's `awari` rules with 6 pits per side have
//! exactly that payload, so export writes the payload alone and import wraps a `scores.N`
//! file in a native level (header, checksum), raw or packed. Their files do not hold the
//! start position (no opponent pit is empty); a query answers it from its children.

use std::fs::{self, File};
use std::path::{Path, PathBuf};

use memmap2::Mmap;

use crate::db::dtc::{dtc_packed_path, dtc_path, pack_table, unpack_table, TableSizes};
use crate::db::layout::{
    db_dir, level_exists, level_path, list_levels, missing_level, packed_path, Expect,
};
use crate::db::lock::DirLock;
use crate::db::model::Model;
use crate::db::pack::{pack_payload, PackOptions, PackedLevel};
use crate::db::raw::{Check, LevelWriter, RawLevel, TmpFile, PAYLOAD_OFFSET};
use crate::db::stack::LevelStack;
use crate::db::store::{has_exit_model, LevelFile, LevelValues};
use crate::error::{Error, Result};
use crate::game::index::Index;
use crate::game::rules::Rules;

/// The file of level `n` in a folder of Romein-Bal files.
pub fn scores_path(dir: &Path, n: usize) -> PathBuf {
    dir.join(format!("scores.{n}"))
}

/// Refuses any database but the one Romein and Bal published.
pub fn check_romein_bal(rules: Rules, pits: usize) -> Result<()> {
    if rules != Rules::Awari || pits != 6 {
        return Err(Error::Input(format!(
            "the romein-bal format holds only the awari rules with 6 pits per side, not {rules} with {pits}"
        )));
    }
    Ok(())
}

/// One level exported or imported.
#[derive(Clone, Debug)]
pub struct Transfer {
    /// The level: seeds on the board.
    pub seeds: usize,
    /// Positions in the level (values transferred).
    pub positions: u64,
    /// The file written.
    pub path: PathBuf,
    /// Size of the file written, in bytes (a `scores.N` file is one byte per position).
    pub bytes: u64,
}

/// Writes `scores.N` into `out` for every level of the database under `root` (raw or
/// packed; every checksum checked), or for the levels in `only`.
pub fn export(
    root: &Path,
    rules: Rules,
    pits: usize,
    out: &Path,
    only: Option<std::ops::RangeInclusive<usize>>,
    mut report: impl FnMut(&Transfer),
) -> Result<Vec<Transfer>> {
    check_romein_bal(rules, pits)?;
    let dir = db_dir(root, rules, pits);
    let max = Index::max_supported(pits)?;
    let index = Index::new(pits, max)?;
    let mut levels: Vec<usize> = if dir.is_dir() {
        list_levels(&dir)?.into_iter().map(|(n, _)| n).collect()
    } else {
        Vec::new()
    };
    levels.dedup();
    levels.retain(|&n| n <= max && only.as_ref().is_none_or(|r| r.contains(&n)));
    if let Some(r) = &only {
        if let Some(n) = r.clone().find(|&n| n <= max && !level_exists(&dir, n)) {
            return Err(missing_level(&dir, rules, pits, n, *r.end()));
        }
    }
    if levels.is_empty() {
        return Err(Error::Input(format!(
            "no levels to export in {}",
            dir.display()
        )));
    }
    if out.exists() && !out.is_dir() {
        return Err(Error::Input(format!(
            "{} is a file: export writes a scores.N file per level into a folder; name a \
             folder (it is made if missing)",
            out.display()
        )));
    }
    fs::create_dir_all(out).map_err(|e| Error::io(out, e))?;
    // Levels packed with the exit model are read with the values of the levels below.
    let mut stack = LevelStack::new(&dir, rules, pits, has_exit_model(&dir))?;
    let mut done = Vec::new();
    for n in levels {
        // Listed a moment ago, but it may have gone since: say so rather than panic.
        let level = LevelFile::open(&dir, &Expect::level(rules, &index, n), Check::HeaderOnly)?
            .ok_or_else(|| missing_level(&dir, rules, pits, n, n))?;
        // Every checksum checked: a raw level's here, a packed one's blocks and payload
        // as it decompresses.
        let below = stack.below_for(n, level.model())?;
        let values = level.into_checked_values(&below)?;
        let payload = values.bytes();
        let path = scores_path(out, n);
        let mut f = TmpFile::create(&path)?;
        f.write(payload)?;
        f.finish(&[])?;
        let t = Transfer {
            seeds: n,
            positions: payload.len() as u64,
            bytes: payload.len() as u64,
            path,
        };
        stack.offer(n, values);
        report(&t);
        done.push(t);
    }
    Ok(done)
}

/// How to import.
#[derive(Clone, Copy, Debug, Default)]
pub struct ImportOptions {
    /// Write packed levels instead of raw ones.
    pub pack: Option<PackOptions>,
    /// Replace levels already in the database.
    pub force: bool,
}

/// Makes native levels of the `scores.N` files in `src` (any subset of levels) in the
/// database under `root`. Every file is checked before anything is written: its size must
/// be the level size, and every byte a value of that level (`-n..=n`).
pub fn import(
    root: &Path,
    rules: Rules,
    pits: usize,
    src: &Path,
    opts: &ImportOptions,
    mut report: impl FnMut(&Transfer),
) -> Result<Vec<Transfer>> {
    check_romein_bal(rules, pits)?;
    let max = Index::max_supported(pits)?;
    let index = Index::new(pits, max)?;
    let mut found = Vec::new();
    for entry in fs::read_dir(src).map_err(|e| Error::io(src, e))? {
        let entry = entry.map_err(|e| Error::io(src, e))?;
        let name = entry.file_name();
        // Only the names `scores_path` gives (`scores.7`, not `scores.007` or `scores.+7`),
        // since that is the file opened below.
        if let Some(n) = name
            .to_str()
            .and_then(|s| s.strip_prefix("scores."))
            .and_then(|s| s.parse::<usize>().ok().filter(|n| n.to_string() == s))
        {
            found.push(n);
        }
    }
    found.sort();
    if found.is_empty() {
        return Err(Error::Input(format!(
            "no scores.N files in {}",
            src.display()
        )));
    }
    let dir = db_dir(root, rules, pits);
    let exits = opts.pack.is_some_and(|p| p.model == Model::Exits);
    // Check everything first, so that a bad file leaves the database as it was.
    let mut maps = Vec::new();
    for &n in &found {
        let path = scores_path(src, n);
        if n > max {
            return Err(Error::Input(format!(
                "{}: level {n} is beyond what a board of {pits} pits per side supports ({max})",
                path.display()
            )));
        }
        let file = File::open(&path).map_err(|e| Error::io(&path, e))?;
        let len = file.metadata().map_err(|e| Error::io(&path, e))?.len();
        let want = index.level_size(n);
        if len != want {
            return Err(Error::format(
                &path,
                format!(
                    "{len} bytes, expected {want} (the size of level {n}): not a scores.{n} file"
                ),
            ));
        }
        // SAFETY: read only; a file changed underneath gives wrong values, which the
        // checksum written now then vouches for, as it would for a copy.
        let map = unsafe { Mmap::map(&file) }.map_err(|e| Error::io(&path, e))?;
        if let Some(i) = map
            .iter()
            .position(|&b| (b as i8).unsigned_abs() as usize > n)
        {
            return Err(Error::format(
                &path,
                format!(
                    "byte {i} is {}, not a value of level {n} (-{n}..={n})",
                    map[i] as i8
                ),
            ));
        }
        if !opts.force && level_exists(&dir, n) {
            return Err(Error::Input(format!(
                "level {n} is already in {}; use --force to replace it",
                dir.display()
            )));
        }
        if exits {
            if let Some(m) =
                (0..n).find(|m| found.binary_search(m).is_err() && !level_exists(&dir, *m))
            {
                return Err(Error::Input(format!(
                    "packing level {n} with the exit model needs level {m}, which is neither imported nor in {}; import it too, or pack with --model plain",
                    dir.display()
                )));
            }
        }
        maps.push((n, map));
    }
    fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
    // No build or other writer into the same folder meanwhile.
    let _lock = DirLock::acquire(&dir, "awari import")?;
    // With the exit model: the values of the levels below each one packed, imported (in
    // increasing order) or read from the database.
    let mut stack = LevelStack::new(&dir, rules, pits, exits)?;
    let mut done = Vec::new();
    for (n, map) in maps {
        let (path, other) = match &opts.pack {
            Some(p) => {
                let path = packed_path(&dir, n);
                if exits {
                    stack.load_below(n)?;
                }
                pack_payload(&path, rules, pits, n, &map, p, &stack.below(n))?;
                (path, level_path(&dir, n))
            }
            None => {
                let path = level_path(&dir, n);
                let mut w = LevelWriter::create(&path, rules, pits, n, map.len() as u64)?;
                w.write(&map)?;
                w.finish()?;
                (path, packed_path(&dir, n))
            }
        };
        // The level's other file (replaced with --force) would hold the old values.
        if other.exists() {
            fs::remove_file(&other).map_err(|e| Error::io(&other, e))?;
        }
        let bytes = fs::metadata(&path).map_err(|e| Error::io(&path, e))?.len();
        let t = Transfer {
            seeds: n,
            positions: map.len() as u64,
            path,
            bytes,
        };
        stack.offer(n, LevelValues::File(map));
        report(&t);
        done.push(t);
    }
    Ok(done)
}

/// What a packed file holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Holds {
    /// A level's values, stored in this model.
    Values(Model),
    /// A level's distance table (DESIGN.md section 4.6).
    Distances,
}

impl std::fmt::Display for Holds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Holds::Values(m) => f.write_str(m.name()),
            Holds::Distances => f.write_str("distances"),
        }
    }
}

/// Packs what of level `n` is raw: the level (as [`pack_level`]) and its distance table
/// (as [`pack_table`], at `opts`'s zstd level), a report for each file packed. Refused
/// where neither is raw.
pub fn pack_files(
    levels: &mut LevelStack,
    n: usize,
    opts: &PackOptions,
    remove_raw: bool,
) -> Result<Vec<PackReport>> {
    let dir = levels.dir().to_path_buf();
    let mut done = Vec::new();
    // A packed level with a raw table: the table alone.
    if level_path(&dir, n).exists() || !dtc_path(&dir, n).exists() {
        done.push(pack_level(levels, n, opts, remove_raw)?);
    }
    let t0 = std::time::Instant::now();
    let (expect, values) = level_checksum(levels, n)?;
    if let Some(t) = pack_table(&dir, &expect, values, opts.zstd_level, remove_raw)? {
        done.push(table_report(&expect, t, t0));
    }
    Ok(done)
}

/// Unpacks what of level `n` is packed: the level (as [`unpack_level`]) and its distance
/// table (as [`unpack_table`]), a report for each file restored. Refused where neither
/// is packed.
pub fn unpack_files(
    levels: &mut LevelStack,
    n: usize,
    remove_packed: bool,
) -> Result<Vec<PackReport>> {
    let dir = levels.dir().to_path_buf();
    let mut done = Vec::new();
    if packed_path(&dir, n).exists() || !dtc_packed_path(&dir, n).exists() {
        done.push(unpack_level(levels, n, remove_packed)?);
    }
    let t0 = std::time::Instant::now();
    let (expect, values) = level_checksum(levels, n)?;
    if let Some(t) = unpack_table(&dir, &expect, values, remove_packed)? {
        done.push(table_report(&expect, t, t0));
    }
    Ok(done)
}

/// What level `n` of `levels` is, and the payload checksum of its values (which its
/// distance table names).
fn level_checksum(levels: &LevelStack, n: usize) -> Result<(Expect, u64)> {
    let (dir, expect) = (levels.dir(), levels.expect(n));
    match LevelFile::open(dir, &expect, Check::HeaderOnly)? {
        Some(level) => Ok((expect, level.header().checksum)),
        None => Err(missing_level(dir, expect.rules, expect.pits, n, n)),
    }
}

fn table_report(expect: &Expect, t: TableSizes, t0: std::time::Instant) -> PackReport {
    PackReport {
        seeds: expect.seeds,
        positions: expect.positions,
        raw_bytes: t.raw_bytes,
        packed_bytes: t.packed_bytes,
        holds: Holds::Distances,
        seconds: t0.elapsed().as_secs_f64(),
    }
}

/// What packing or unpacking one file of a level (its values, or its distance table)
/// did.
#[derive(Clone, Copy, Debug)]
pub struct PackReport {
    /// The level: seeds on the board.
    pub seeds: usize,
    /// Positions in the level.
    pub positions: u64,
    /// Size of the raw file.
    pub raw_bytes: u64,
    /// Size of the packed file.
    pub packed_bytes: u64,
    /// What the file holds: values in a model (packed, or unpacked from), or distances.
    pub holds: Holds,
    /// Wall-clock time the file took, in seconds.
    pub seconds: f64,
}

/// Packs the raw level `n` of the database of `levels` (its checksum checked first) into
/// a packed file beside it. With [`Model::Exits`], the levels below are read through
/// `levels` (which keeps them for the next level up). With `remove_raw`, the pack is
/// decompressed and compared with the raw level before the raw file is removed.
pub fn pack_level(
    levels: &mut LevelStack,
    n: usize,
    opts: &PackOptions,
    remove_raw: bool,
) -> Result<PackReport> {
    let t0 = std::time::Instant::now();
    let dir = levels.dir().to_path_buf();
    let expect = levels.expect(n);
    let raw_path = level_path(&dir, n);
    let out = packed_path(&dir, n);
    if !raw_path.exists() {
        if !out.exists() {
            let (rules, pits) = (expect.rules, expect.pits);
            return Err(missing_level(&dir, rules, pits, n, n));
        }
        return Err(Error::Input(format!(
            "level {n} in {} is already packed ({})",
            dir.display(),
            out.display()
        )));
    }
    let raw = RawLevel::open(&raw_path, &expect, Check::Full)?;
    if opts.model == Model::Exits {
        levels.load_below(n).map_err(|e| {
            Error::Input(format!(
                "packing level {n} with the exit model needs the levels below it: {}; `--model plain` packs it alone",
                e.one_line()
            ))
        })?;
    }
    let below = levels.below(n);
    let h = raw.header();
    pack_payload(&out, h.rules, h.pits, h.seeds, raw.bytes(), opts, &below)?;
    let packed = PackedLevel::open(&out, &expect)?;
    let values = if remove_raw {
        let values = LevelValues::decoded(&packed, &below)?;
        if values.bytes() != raw.bytes() {
            return Err(Error::format(
                &out,
                "the pack does not decompress to the raw level; raw level kept",
            ));
        }
        drop(raw);
        fs::remove_file(&raw_path).map_err(|e| Error::io(&raw_path, e))?;
        values
    } else {
        LevelValues::Mapped(raw)
    };
    drop(below);
    levels.offer(n, values);
    Ok(PackReport {
        seeds: n,
        positions: expect.positions,
        raw_bytes: (PAYLOAD_OFFSET as u64) + expect.positions,
        packed_bytes: packed.file_len(),
        holds: Holds::Values(opts.model),
        seconds: t0.elapsed().as_secs_f64(),
    })
}

/// Restores the raw level `n` of the database of `levels` from its pack, byte for byte
/// (every block and the payload checksum checked; with [`Model::Exits`] the levels below
/// are read through `levels`). With `remove_packed`, the pack is removed once the raw
/// level is in place.
pub fn unpack_level(levels: &mut LevelStack, n: usize, remove_packed: bool) -> Result<PackReport> {
    let t0 = std::time::Instant::now();
    let dir = levels.dir().to_path_buf();
    let path = packed_path(&dir, n);
    if !path.exists() {
        return Err(Error::Input(format!(
            "level {n} has no packed file in {} ({} not found)",
            dir.display(),
            path.display()
        )));
    }
    let packed = PackedLevel::open(&path, &levels.expect(n))?;
    let payload = packed.decode_all(&levels.below_for(n, packed.model())?)?;
    let h = *packed.header();
    let raw_path = level_path(&dir, n);
    let mut w = LevelWriter::create(&raw_path, h.rules, h.pits, h.seeds, h.positions)?;
    w.write(&payload)?;
    w.finish()?;
    drop(payload);
    let (packed_bytes, model) = (packed.file_len(), packed.model());
    drop(packed);
    if remove_packed {
        fs::remove_file(&path).map_err(|e| Error::io(&path, e))?;
    }
    if levels.wants(n) {
        levels.offer(
            n,
            LevelValues::Mapped(RawLevel::open(
                &raw_path,
                &levels.expect(n),
                Check::HeaderOnly,
            )?),
        );
    }
    Ok(PackReport {
        seeds: n,
        positions: h.positions,
        raw_bytes: (PAYLOAD_OFFSET as u64) + h.positions,
        packed_bytes,
        holds: Holds::Values(model),
        seconds: t0.elapsed().as_secs_f64(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes raw levels `0..=top` of the `awari`, 6-pit database under `root`, all
    /// values 0 (checksums are all that export looks at).
    fn zero_levels(root: &Path, top: usize) -> PathBuf {
        let dir = db_dir(root, Rules::Awari, 6);
        fs::create_dir_all(&dir).unwrap();
        let index = Index::new(6, top).unwrap();
        for n in 0..=top {
            let size = index.level_size(n);
            let mut w =
                LevelWriter::create(&level_path(&dir, n), Rules::Awari, 6, n, size).unwrap();
            w.write(&vec![0; size as usize]).unwrap();
            w.finish().unwrap();
        }
        dir
    }

    #[test]
    fn export_skips_files_no_level_is_written_under() {
        let root = tempfile::tempdir().unwrap();
        let dir = zero_levels(root.path(), 1);
        // Stray names that parse as level numbers but are not what `level_path` writes.
        fs::write(dir.join("level-7.awl"), b"junk").unwrap();
        fs::write(dir.join("level-0002.awp"), b"junk").unwrap();
        let out = root.path().join("out");
        let done = export(root.path(), Rules::Awari, 6, &out, None, |_| {}).unwrap();
        let levels: Vec<usize> = done.iter().map(|t| t.seeds).collect();
        assert_eq!(levels, [0, 1]);
        assert_eq!(fs::read(scores_path(&out, 1)).unwrap(), vec![0; 12]);
    }

    #[test]
    fn import_takes_only_canonical_scores_names() {
        let root = tempfile::tempdir().unwrap();
        let src = root.path().join("scores");
        fs::create_dir_all(&src).unwrap();
        fs::write(scores_path(&src, 0), [0]).unwrap();
        fs::write(scores_path(&src, 1), [0; 12]).unwrap();
        // Not `scores.N` names: skipped, even though `scores.1` exists beside them.
        fs::write(src.join("scores.001"), [0; 12]).unwrap();
        fs::write(src.join("scores.+1"), [0; 12]).unwrap();
        // Would be refused (wrong size) if it were taken for `scores.2`.
        fs::write(src.join("scores.02"), b"junk").unwrap();
        let db = root.path().join("db");
        let done = import(
            &db,
            Rules::Awari,
            6,
            &src,
            &ImportOptions::default(),
            |_| {},
        )
        .unwrap();
        let levels: Vec<usize> = done.iter().map(|t| t.seeds).collect();
        assert_eq!(levels, [0, 1]);
        let dir = db_dir(&db, Rules::Awari, 6);
        assert_eq!(list_levels(&dir).unwrap(), [(0, false), (1, false)]);
    }
}
