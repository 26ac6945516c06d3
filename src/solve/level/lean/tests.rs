//! The lean state's unit tests: every small level against the fast state's, resuming
//! from every pass, and the windows' budget.
use std::path::Path;
use std::time::Duration;

use super::*;
use crate::db::checkpoint::{CheckpointAt, SliceOf};
use crate::solve::comm::Solo;
use crate::solve::level::{
    backward_pass, NoSaves, PhaseTimes, Saves, Stage, SEGMENT, SEGMENT_SHIFT,
};
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

/// Solves `part`'s level with the lean state in `files` from its start, `forward` writing
/// the exits file, saving where `saves` says: the values.
fn solve(
    part: &Partition<Solo>,
    files: LeanFiles,
    forward: impl FnOnce(&File) -> Result<()>,
    saves: &mut dyn Saves<Lean>,
) -> Vec<u8> {
    let held = part.mine.end - part.mine.start;
    files.exits.set_len(held).unwrap();
    files.values.set_len(held).unwrap();
    forward(&files.exits).unwrap();
    let (state, present) = LeanState::fresh(files, part.n, held).unwrap();
    let from = Stage::start(part.n);
    let zero = Duration::ZERO;
    let (state, _) = backward_pass::<Lean, _>(part, state, present, zero, from, saves).unwrap();
    values_of(state)
}

/// The values a lean state's file holds once its pass is done.
fn values_of(state: LeanState) -> Vec<u8> {
    match Lean::into_values(state) {
        Values::File(f, len) => read_all(&f, len as usize),
        Values::Held(_) => unreachable!("the lean state's values are in a file"),
    }
}

/// The whole level `n` in one process.
fn whole<'a>(rules: Rules, index: &'a Index, n: usize, bar: &'a LevelBar) -> Partition<'a, Solo> {
    Partition {
        comm: &Solo,
        rules,
        index,
        n,
        mine: 0..index.level_size(n),
        progress: bar,
    }
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
                let part = whole(rules, &index, n, &bar);
                let random = |f: &File| exits_random(rules, &index, n, below, f, &bar);
                let stream = |f: &File| exits_stream(&part, below, f, &dir.path().join("x.exits"));
                let a = solve(&part, files(dir.path()), random, &mut NoSaves);
                let b = solve(&part, files(dir.path()), stream, &mut NoSaves);
                for (got, how) in [(a, "random"), (b, "stream")] {
                    assert!(
                        got == truth[n],
                        "{rules} P={pits} level {n}: lean ({how}) differs"
                    );
                }
            }
            // Nothing left behind.
            assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        }
    }
}

/// Saves at every chance (each threshold's start and each segment's end): the checkpoint
/// in `dir`, and a copy of the files as they stood.
struct Copies<'a> {
    dir: &'a Path,
    want: CheckpointHeader,
    taken: Vec<(std::path::PathBuf, Vec<u8>, Vec<u8>)>,
}

impl Saves<Lean> for Copies<'_> {
    fn due(&mut self) -> bool {
        true
    }

    fn deadline(&self) -> Option<std::time::Instant> {
        Some(std::time::Instant::now())
    }

    fn save(&mut self, state: &mut LeanState, stage: Stage, present: u64, _: PhaseTimes) {
        let path = self.dir.join(format!("c{}.awc", self.taken.len()));
        let head = CheckpointHeader {
            next: stage.next as u8,
            segment: stage.segment,
            segment_shift: if stage.segment == 0 { 0 } else { SEGMENT_SHIFT },
            present,
            ..self.want
        };
        Lean::save(state, &path, head).unwrap();
        let len = state.bits.len as usize;
        let files = &state.files;
        let copy = (read_all(&files.exits, len), read_all(&files.values, len));
        self.taken.push((path, copy.0, copy.1));
    }
}

/// A level resumed from each checkpoint (between thresholds and inside them), its values
/// file as a later save left it (values of the checkpoint's threshold and below written
/// since): the same values. A damaged file is refused.
#[test]
fn lean_resumes_from_any_save_with_later_files() {
    for rules in [Rules::Awari, Rules::Oware] {
        let (pits, n) = (4, 13);
        let index = Index::new(pits, n).unwrap();
        let truth = crate::solve::level::solve_in_memory(rules, &index, n);
        let below: Vec<&[u8]> = truth[..n].iter().map(Vec::as_slice).collect();
        let dir = tempfile::tempdir().unwrap();
        let bar = LevelBar::new(false, 0, 0, "");
        let len = truth[n].len();
        assert!(len as u64 > 4 * SEGMENT, "segments to pause at");
        let forward = |f: &File| exits_random(rules, &index, n, &below[..], f, &bar);
        let part = whole(rules, &index, n, &bar);
        let held = 0..len as u64;
        let want = CheckpointHeader::new(rules, pits, n, len as u64, SliceOf::WHOLE, held);
        let mut copies = Copies {
            dir: dir.path(),
            want,
            taken: Vec::new(),
        };
        assert_eq!(
            solve(&part, files(dir.path()), forward, &mut copies),
            truth[n]
        );
        let inside = copies.taken.iter().filter(|c| {
            let head = Checkpoint::open(&c.0, &want).unwrap().head;
            head.segment > 0
        });
        assert!(inside.count() > 10, "{rules}: saves inside thresholds");
        let write = |f: &File, bytes: &[u8]| f.write_all_at(bytes, 0).unwrap();
        for (k, (path, exits, _)) in copies.taken.iter().enumerate() {
            // Two saves later (or the level's end).
            let later = copies.taken.get(k + 2).map_or(&truth[n], |c| &c.2);
            let now = files(dir.path());
            write(&now.exits, exits);
            write(&now.values, later);
            let checkpoint = Checkpoint::open(path, &want).unwrap();
            let head = checkpoint.head;
            let state = LeanState::load(checkpoint, now).unwrap();
            let from = Stage::of_checkpoint(&head);
            let zero = Duration::ZERO;
            let passed =
                backward_pass::<Lean, _>(&part, state, head.present, zero, from, &mut NoSaves);
            let at = CheckpointAt {
                next: head.next,
                segment: head.segment,
            };
            assert!(
                values_of(passed.unwrap().0) == truth[n],
                "{rules} level {n} resumed at {at} differs"
            );
            // A damaged file does not hold the checksum.
            let bad = files(dir.path());
            let mut damaged = exits.clone();
            damaged[len / 2] ^= 0x40;
            write(&bad.exits, &damaged);
            write(&bad.values, later);
            let refused = LeanState::load(Checkpoint::open(path, &want).unwrap(), bad);
            let e = refused.err().expect("damaged exits refused").to_string();
            assert!(e.contains("damaged"), "{e}");
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
