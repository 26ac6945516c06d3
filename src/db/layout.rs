//! Where a database's files live and what each level must hold (DESIGN.md section 8):
//! `<root>/<rules>-<P>/level-NNN.awl` (raw) and `level-NNN.awp` (packed), and the
//! `awari build` command that errors name when a level is missing.

use std::fs;
use std::ops::{Range, RangeInclusive};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::game::index::Index;
use crate::game::rules::Rules;

/// The folder of one database (rule set and board size) under a root folder, so that
/// databases never mix.
pub fn db_dir(root: &Path, rules: Rules, pits: usize) -> PathBuf {
    root.join(format!("{rules}-{pits}"))
}

/// The file name of raw level `n` in a database folder.
pub fn level_path(dir: &Path, n: usize) -> PathBuf {
    dir.join(format!("level-{n:03}.awl"))
}

/// The file name of packed level `n` in a database folder.
pub fn packed_path(dir: &Path, n: usize) -> PathBuf {
    dir.join(format!("level-{n:03}.awp"))
}

/// The command that builds levels up to `seeds`, for error messages.
pub fn build_command(root: &Path, rules: Rules, pits: usize, seeds: usize) -> String {
    let mut cmd = format!("awari build --max-seeds {seeds}");
    if pits != 6 {
        cmd += &format!(" --pits {pits}");
    }
    if rules != Rules::Awari {
        cmd += &format!(" --rules {rules}");
    }
    if root != Path::new("db") && root != Path::new("./db") {
        cmd += &format!(" --dir {}", root.display());
    }
    cmd
}

/// The error for level `seeds` missing from the database folder `dir` (a
/// `<root>/<rules>-<P>` folder), naming the command that builds levels up to `build_to`.
pub fn missing_level(
    dir: &Path,
    rules: Rules,
    pits: usize,
    seeds: usize,
    build_to: usize,
) -> Error {
    let root = match dir.parent() {
        Some(root) if !root.as_os_str().is_empty() => root,
        _ => Path::new("."),
    };
    Error::MissingLevel {
        seeds,
        rules: rules.name(),
        pits,
        dir: dir.to_path_buf(),
        command: build_command(root, rules, pits, build_to.max(seeds)),
    }
}

/// What the caller expects a level to be; opening refuses anything else.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Expect {
    /// The rule set.
    pub rules: Rules,
    /// Pits per side.
    pub pits: usize,
    /// The level: seeds on the board.
    pub seeds: usize,
    /// Positions stored in the level.
    pub positions: u64,
}

impl Expect {
    /// What level `n` of the database of `rules` and `index` holds.
    pub fn level(rules: Rules, index: &Index, n: usize) -> Expect {
        Expect {
            rules,
            pits: index.pits_per_side(),
            seeds: n,
            positions: index.level_size(n),
        }
    }
}

/// The partition of a level over `ranks` ranks (DESIGN.md section 5.4): slice `rank` is
/// `[rank * size / ranks, (rank + 1) * size / ranks)` (integer division), so the slices
/// tile the level and differ in size by at most one position.
/// The indices of slice `rank` of a level of `size` positions cut into `ranks` slices.
pub fn slice(size: u64, ranks: usize, rank: usize) -> Range<u64> {
    let cut = |r: usize| (size as u128 * r as u128 / ranks as u128) as u64;
    cut(rank)..cut(rank + 1)
}

/// The largest slice of a level of `size` positions on `ranks` ranks.
pub fn largest_slice(size: u64, ranks: usize) -> u64 {
    size.div_ceil(ranks as u64)
}

/// The rank that owns index `i` of a level of `size` positions cut into `ranks` slices
/// (the largest `r` whose slice starts at or before `i`: the inverse of [`slice()`]).
#[inline]
pub fn owner(i: u64, size: u64, ranks: usize) -> usize {
    (((i as u128 + 1) * ranks as u128 - 1) / size as u128) as usize
}

/// Whether level `n` has a file (raw or packed) in `dir`.
pub fn level_exists(dir: &Path, n: usize) -> bool {
    level_path(dir, n).exists() || packed_path(dir, n).exists()
}

/// The highest level `m` such that every level `0..=m` has a file in `dir`; `None` if
/// level 0 has none.
pub fn present_levels(dir: &Path) -> Option<usize> {
    let mut n = 0;
    while level_exists(dir, n) {
        n += 1;
    }
    n.checked_sub(1)
}

/// The levels a command asks for in the database of `rules` and `pits` under `root`:
/// `levels` if given, else every level present from 0 up to the first gap; an error
/// naming the build to run if there is none.
pub fn levels_asked(
    root: &Path,
    rules: Rules,
    pits: usize,
    levels: &Option<RangeInclusive<usize>>,
) -> Result<RangeInclusive<usize>> {
    if let Some(r) = levels {
        return Ok(r.clone());
    }
    let dir = db_dir(root, rules, pits);
    let top = present_levels(&dir).ok_or_else(|| {
        // Other databases beside it: the user may have meant one of them.
        let others: Vec<String> = database_dirs(root)
            .unwrap_or_default()
            .into_iter()
            .filter(|&(r, p, ref d)| (r, p) != (rules, pits) && present_levels(d).is_some())
            .map(|(r, p, _)| format!("{}-{p} (--rules {} --pits {p})", r.name(), r.name()))
            .collect();
        let beside = match others.is_empty() {
            true => String::new(),
            false => format!("; {} holds {}", root.display(), others.join(", ")),
        };
        Error::Input(format!(
            "no levels in {}{beside}; build some first, e.g. `{}`",
            dir.display(),
            build_command(root, rules, pits, 16)
        ))
    })?;
    Ok(0..=top)
}

/// The level files in one database folder: `(n, packed)` in order of `n`, then raw
/// before packed. Only the exact names of [`level_path`] and [`packed_path`] count:
/// temporary and foreign files, and names such as `level-7.awl` or `level-+07.awl` that
/// no reader would open, are skipped.
pub fn list_levels(dir: &Path) -> Result<Vec<(usize, bool)>> {
    list_files(dir, "awl", "awp")
}

/// The files `level-NNN.<raw>` and `level-NNN.<packed>` in `dir`: `(n, packed)` in order
/// of `n`, then raw before packed, as [`list_levels`] says.
pub(crate) fn list_files(dir: &Path, raw: &str, packed: &str) -> Result<Vec<(usize, bool)>> {
    let (raw, packed) = (format!(".{raw}"), format!(".{packed}"));
    let mut out = Vec::new();
    for entry in fs::read_dir(dir).map_err(|e| Error::io(dir, e))? {
        let entry = entry.map_err(|e| Error::io(dir, e))?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some(rest) = name.strip_prefix("level-") else {
            continue;
        };
        let (num, packed) = match (rest.strip_suffix(&raw), rest.strip_suffix(&packed)) {
            (Some(num), _) => (num, false),
            (_, Some(num)) => (num, true),
            _ => continue,
        };
        match num.parse::<usize>() {
            Ok(n) if format!("{n:03}") == num => out.push((n, packed)),
            _ => {}
        }
    }
    out.sort();
    Ok(out)
}

/// The database folders under `root`: `(rules, P, folder)` in order of rules and P.
/// Folders whose name is not `<rules>-<P>` with a supported P are skipped.
pub fn database_dirs(root: &Path) -> Result<Vec<(Rules, usize, PathBuf)>> {
    let mut dbs = Vec::new();
    for entry in fs::read_dir(root).map_err(|e| Error::io(root, e))? {
        let entry = entry.map_err(|e| Error::io(root, e))?;
        let name = entry.file_name();
        let Some((rules, pits)) = name.to_str().and_then(|s| s.rsplit_once('-')) else {
            continue;
        };
        let (Ok(rules), Ok(pits)) = (rules.parse::<Rules>(), pits.parse::<usize>()) else {
            continue;
        };
        if entry.path().is_dir() && Index::max_supported(pits).is_ok() {
            dbs.push((rules, pits, entry.path()));
        }
    }
    dbs.sort_by_key(|d| (d.0.code(), d.1));
    Ok(dbs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn build_command_names_what_differs_from_the_defaults() {
        let db = Path::new("db");
        assert_eq!(
            build_command(db, Rules::Awari, 6, 16),
            "awari build --max-seeds 16"
        );
        assert_eq!(
            build_command(Path::new("/x"), Rules::Oware, 4, 9),
            "awari build --max-seeds 9 --pits 4 --rules oware --dir /x"
        );
        let e = missing_level(&db_dir(db, Rules::Awari, 6), Rules::Awari, 6, 12, 0);
        assert!(
            e.to_string().contains("run `awari build --max-seeds 12`"),
            "{e}"
        );
    }

    #[test]
    fn list_levels_takes_only_the_names_levels_are_written_under() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        for name in [
            "level-000.awl",
            "level-007.awp",
            "level-1000.awl",
            "level-7.awl",
            "level-0007.awl",
            "level-+07.awl",
            "level-007.awl.tmp",
            "level-abc.awl",
            "notes.txt",
        ] {
            fs::write(d.join(name), b"").unwrap();
        }
        assert_eq!(
            list_levels(d).unwrap(),
            [(0, false), (7, true), (1000, false)]
        );
        assert_eq!(level_path(d, 1000), d.join("level-1000.awl"));
        assert_eq!(packed_path(d, 7), d.join("level-007.awp"));
    }
}
