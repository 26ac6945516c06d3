//! The lean state's unit tests: every small level against the fast state's, resuming
//! from every pass, and the windows' budget.
use std::path::Path;

use super::*;
use crate::util::unnamed_file;

/// Fresh unnamed files in `dir`.
fn files(dir: &Path) -> LeanFiles {
    LeanFiles {
        exits: unnamed_file(&dir.join("exits")).unwrap(),
        values: unnamed_file(&dir.join("values")).unwrap(),
    }
}

/// The bytes of `file`.
fn read_all(file: &File, len: usize) -> Vec<u8> {
    let mut got = vec![0u8; len];
    file.read_exact_at(&mut got, 0).unwrap();
    got
}

/// Every level of small boards, both rule sets, solved with the lean state from the
/// true lower levels, read at random and as streams (in windows): the values of the
/// fast state, byte for byte.
#[test]
fn lean_levels_are_the_fast_ones() {
    for rules in [Rules::Awari, Rules::Oware] {
        for (pits, top) in [(2, 12), (3, 14), (4, 14), (5, 12), (6, 11)] {
            let index = Index::new(pits, top).unwrap();
            let truth = crate::solve::level::solve_in_memory(rules, &index, top);
            let all: Vec<&[u8]> = truth.iter().map(Vec::as_slice).collect();
            let dir = tempfile::tempdir().unwrap();
            let bar = LevelBar::new(false, 0, 0, "");
            for n in 0..=top {
                let below = &all[..n];
                let random = |f: &File| exits_random(rules, &index, n, below, f, &bar);
                let part = Partition {
                    comm: &crate::solve::comm::Solo,
                    rules,
                    index: &index,
                    n,
                    mine: 0..index.level_size(n),
                    progress: &bar,
                };
                let stream = |f: &File| exits_stream(&part, below, f);
                let (a, b) = (files(dir.path()), files(dir.path()));
                let saves = &mut NoSaves;
                solve_lean(&part, &a, None, random, saves).unwrap();
                solve_lean(&part, &b, None, stream, saves).unwrap();
                for (f, how) in [(a, "random"), (b, "stream")] {
                    assert!(
                        read_all(&f.values, truth[n].len()) == truth[n],
                        "{rules} P={pits} level {n}: lean ({how}) differs"
                    );
                }
            }
            // Nothing left behind.
            assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        }
    }
}

/// Saves at every pass, each a copy of the files and where it stands.
struct Copies {
    len: usize,
    taken: Vec<(u8, Vec<u8>, Vec<u8>)>,
}

impl LeanSaves for Copies {
    fn due(&mut self) -> bool {
        true
    }

    fn save(&mut self, files: &LeanFiles, next: u8, _: PhaseTimes) {
        let (e, v) = (
            read_all(&files.exits, self.len),
            read_all(&files.values, self.len),
        );
        self.taken.push((next, e, v));
    }
}

/// A level resumed from each checkpoint, its files as a later pass left them (values of
/// the checkpoint's threshold and below written since): the same values, and the
/// checkpoint's checksum still holds on those files.
#[test]
fn lean_resumes_from_any_pass_with_later_files() {
    use crate::db::checkpoint::lean_checksum;
    for rules in [Rules::Awari, Rules::Oware] {
        let (pits, n) = (4, 13);
        let index = Index::new(pits, n).unwrap();
        let truth = crate::solve::level::solve_in_memory(rules, &index, n);
        let below: Vec<&[u8]> = truth[..n].iter().map(Vec::as_slice).collect();
        let dir = tempfile::tempdir().unwrap();
        let bar = LevelBar::new(false, 0, 0, "");
        let len = truth[n].len();
        let forward = |f: &File| exits_random(rules, &index, n, &below[..], f, &bar);
        let part = Partition {
            comm: &crate::solve::comm::Solo,
            rules,
            index: &index,
            n,
            mine: 0..len as u64,
            progress: &bar,
        };
        let mut copies = Copies {
            len,
            taken: Vec::new(),
        };
        let fresh = files(dir.path());
        solve_lean(&part, &fresh, None, forward, &mut copies).unwrap();
        assert_eq!(read_all(&fresh.values, len), truth[n]);
        // After the forward pass and after every pass but the last.
        assert_eq!(copies.taken.len(), n);
        let write = |f: &File, bytes: &[u8]| f.write_all_at(bytes, 0).unwrap();
        for (k, (next, exits, values)) in copies.taken.iter().enumerate() {
            let sum = |f: &LeanFiles| lean_checksum(&f.exits, &f.values, len as u64, *next);
            let then = files(dir.path());
            write(&then.exits, exits);
            write(&then.values, values);
            // Two passes later (or the level's end).
            let later = copies.taken.get(k + 2).map_or(&truth[n], |c| &c.2);
            let now = files(dir.path());
            write(&now.exits, exits);
            write(&now.values, later);
            assert_eq!(sum(&then).unwrap(), sum(&now).unwrap(), "{rules} at {next}");
            let no_forward = |_: &File| -> Result<()> { unreachable!("resumed") };
            let at = Some((*next, PhaseTimes::default()));
            solve_lean(&part, &now, at, no_forward, &mut NoSaves).unwrap();
            assert!(
                read_all(&now.values, len) == truth[n],
                "{rules} level {n} resumed at {next} differs"
            );
            // A damaged file does not hold the checksum.
            let mut bad = values.clone();
            bad[len / 2] ^= 0x40;
            write(&then.values, &bad);
            assert_ne!(sum(&then).unwrap(), sum(&now).unwrap());
        }
    }
}

/// A level's windows: 11/32 of a byte per position at most, four for a large level
/// (levels 28 and 29 of Awari, whose three would be 3/8 to within a few bytes), one
/// for none.
#[test]
fn windows_keep_to_the_budget() {
    for len in [1 << 30, 1_482_519_324, 2_025_703_680, 203_648_015_935] {
        assert_eq!(lean_windows(StateKind::Compact, len), 4, "{len}");
        assert_eq!(lean_windows(StateKind::Fast, len), 7, "{len}");
    }
    assert_eq!(lean_windows(StateKind::Compact, 0), 1);
    for len in [1u64, 7, 64, 1000, 123_457] {
        let count = lean_windows(StateKind::Compact, len);
        let widest = StateKind::Compact.bytes(len.div_ceil(count as u64));
        assert!(
            widest * 32 <= len * 11 || count as u64 >= len,
            "{len}: {count}"
        );
    }
}
