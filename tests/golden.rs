//! Golden checksums: the levels the binary builds must have the positions and payload
//! checksums recorded in `data/golden-checksums.tsv`. The cross-checks compare the
//! builder with solvers that share its rules code, so a change in the rules moves both
//! sides alike; these numbers were recorded once and do not move with it. Regenerate them
//! (`tools/regen-data golden`) only for an intended change of the rules or of the format.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::Read;
use std::path::Path;

use crate::common::ok;

const GOLDEN: &str = include_str!("../data/golden-checksums.tsv");
const GOLDEN_NAME: &str = "data/golden-checksums.tsv";

/// What the golden file lists: rule set, pits per side, highest level (from 0).
const COVERED: [(&str, usize, usize); 4] = [
    ("awari", 4, 24),
    ("awari", 6, 20),
    ("oware", 4, 24),
    ("oware", 6, 20),
];

/// What this test builds and compares: 36 s of CPU in release, about 20 s on 2 idle
/// cores. P = 6 stops at 16: levels 17..=20 hold 186 million more positions, minutes to
/// build; for those run `tools/regen-data golden` and `git diff data/`.
const BUILT: [(&str, usize, usize); 4] = [
    ("awari", 4, 24),
    ("awari", 6, 16),
    ("oware", 4, 24),
    ("oware", 6, 16),
];

/// Rule set, pits per side, level.
type Key = (&'static str, usize, usize);

/// The golden file: positions and payload checksum per level. Panics on a malformed or
/// repeated line, naming it.
fn golden() -> BTreeMap<Key, (u64, u64)> {
    let mut levels = BTreeMap::new();
    for (i, line) in GOLDEN.lines().enumerate() {
        if line.starts_with('#') {
            continue;
        }
        let at = format!("{GOLDEN_NAME} line {}: {line:?}", i + 1);
        let fields: Vec<&str> = line.split('\t').collect();
        let [rules, pits, level, positions, checksum] = fields[..] else {
            panic!("{at}: want 5 tab-separated fields: rules, pits, level, positions, checksum");
        };
        let number = |s: &str, what: &str| -> u64 {
            s.parse()
                .unwrap_or_else(|_| panic!("{at}: {what} {s:?} is not a number"))
        };
        assert_eq!(
            checksum.len(),
            16,
            "{at}: the checksum must have 16 hex digits"
        );
        let checksum = u64::from_str_radix(checksum, 16)
            .unwrap_or_else(|_| panic!("{at}: checksum {checksum:?} is not hexadecimal"));
        let key = (
            rules,
            number(pits, "pits") as usize,
            number(level, "level") as usize,
        );
        let old = levels.insert(key, (number(positions, "positions"), checksum));
        assert!(old.is_none(), "{at}: level listed twice");
    }
    levels
}

/// Positions and payload checksum from a level file's header (layout: DESIGN.md section 4),
/// after checking its magic and that the file is the header plus one byte per position.
fn read_header(path: &Path) -> (u64, u64) {
    let name = path.display();
    let mut file = File::open(path).unwrap_or_else(|e| panic!("{name}: {e}"));
    let mut h = [0u8; 4096];
    file.read_exact(&mut h)
        .unwrap_or_else(|e| panic!("{name}: cannot read the 4096-byte header: {e}"));
    assert_eq!(&h[0..8], b"AWARIDB\0", "{name}: bad magic");
    let positions = u64::from_le_bytes(h[24..32].try_into().unwrap());
    let checksum = u64::from_le_bytes(h[32..40].try_into().unwrap());
    let len = file.metadata().unwrap().len();
    assert_eq!(
        len,
        4096 + positions,
        "{name}: {len} bytes, the header says 4096 + {positions} positions"
    );
    (positions, checksum)
}

/// The file lists exactly the ranges of `COVERED`, so that a shortened file cannot pass.
#[test]
fn golden_file_covers_its_ranges() {
    let want: BTreeSet<Key> = COVERED
        .iter()
        .flat_map(|&(rules, pits, max)| (0..=max).map(move |n| (rules, pits, n)))
        .collect();
    let have: BTreeSet<Key> = golden().into_keys().collect();
    let missing: Vec<_> = want.difference(&have).collect();
    let unexpected: Vec<_> = have.difference(&want).collect();
    assert!(
        missing.is_empty() && unexpected.is_empty(),
        "{GOLDEN_NAME} must list levels 0..=24 of P = 4 and 0..=20 of P = 6, both rule sets \
         (COVERED in tests/golden.rs); missing (rules, pits, level): {missing:?}; \
         unexpected: {unexpected:?}"
    );
}

/// The small levels of [`BUILT`], for the quick tier: seconds.
const SMALL: [(&str, usize, usize); 4] = [
    ("awari", 4, 18),
    ("awari", 6, 12),
    ("oware", 4, 18),
    ("oware", 6, 12),
];

/// The small levels, the fast state reading the lower levels at random and the compact
/// state reading them as a stream.
#[test]
fn small_levels_match_golden_checksums() {
    built_levels_match("fast", "random", &SMALL);
    built_levels_match("compact", "stream", &SMALL);
}

/// Every level of [`BUILT`], minutes: left out of the quick tier (`--skip slow::`).
mod slow {
    use super::*;

    /// The fast state reading the lower levels at random (what `auto` picks for these
    /// levels on any machine) and the compact state reading them as a stream.
    #[test]
    fn built_levels_match_golden_checksums() {
        built_levels_match("fast", "random", &BUILT);
    }

    #[test]
    fn built_levels_match_golden_checksums_compact() {
        built_levels_match("compact", "stream", &BUILT);
    }
}

fn built_levels_match(state: &str, lower: &str, levels: &[(&str, usize, usize)]) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_str().unwrap();
    for &(rules, pits, max) in levels {
        ok(&[
            "build",
            "--max-seeds",
            &max.to_string(),
            "--pits",
            &pits.to_string(),
            "--rules",
            rules,
            "--dir",
            dir,
            "--state",
            state,
            "--lower",
            lower,
        ]);
    }
    let mut compared = 0;
    let mut wrong = Vec::new();
    for (&(rules, pits, level), &(want_positions, want_checksum)) in &golden() {
        let built = levels
            .iter()
            .any(|&(r, p, max)| r == rules && p == pits && level <= max);
        if !built {
            continue;
        }
        let path = tmp
            .path()
            .join(format!("{rules}-{pits}"))
            .join(format!("level-{level:03}.awl"));
        let (positions, checksum) = read_header(&path);
        compared += 1;
        if (positions, checksum) != (want_positions, want_checksum) {
            wrong.push(format!(
                "{rules} P={pits} level {level} ({state} state, {lower} reads): expected {want_positions} positions, checksum \
                 {want_checksum:016x}; got {positions} positions, checksum {checksum:016x}"
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "{} of {compared} levels differ from {GOLDEN_NAME} (a change in the rules, the index \
         or the level format? if intended, regenerate it with tools/regen-data golden):\n{}",
        wrong.len(),
        wrong.join("\n")
    );
    let want: usize = levels.iter().map(|&(_, _, max)| max + 1).sum();
    assert_eq!(
        compared, want,
        "levels compared with {GOLDEN_NAME}: {compared}, every built level should be (BUILT \
         and SMALL in tests/golden.rs)"
    );
}
