//! The build's own tests: spilling, building over packed levels, the rates file,
//! rebuilding a damaged pack, and ranks resuming a level together from their checkpoints
//! through the one driver.

use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use super::*;
use crate::db::checkpoint::{checkpoint_path, lean_paths, list_checkpoints};
use crate::db::layout::{level_path, packed_path};
use crate::db::pack::{pack_payload, PackOptions};
use crate::game::rules::Rules;
use crate::solve::level::{Compact, Fast, STRIPE_IN_TESTS};
use crate::solve::ranks::local::LocalComm;

fn opts(root: &Path, max_seeds: usize, force: bool) -> BuildOptions {
    BuildOptions::new(root, Rules::Awari, 3, max_seeds).force(force)
}

/// Builds, collecting the warnings.
fn build_warned(opts: &BuildOptions) -> (Vec<LevelReport>, Vec<String>) {
    let mut warnings = Vec::new();
    let reports = build(opts, |_| {}, |w| warnings.push(w.to_string())).unwrap();
    (reports, warnings)
}

/// A spilled state (in stripes of two chunks under test) and the lower levels let go
/// before the backward pass give the same files as a build in memory, under both
/// rule sets, and leave no spill file behind.
#[test]
fn spilling_the_state_changes_no_byte() {
    for rules in [Rules::Awari, Rules::Oware] {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let c = tempfile::tempdir().unwrap();
        let run = |root: &Path, spill_from: u64, state: StateKind| {
            let o = BuildOptions::new(root, rules, 4, 16)
                .spill_from(spill_from)
                .state(state)
                .lower(Lower::Random);
            build_warned(&o)
        };
        run(a.path(), u64::MAX, StateKind::Fast);
        run(b.path(), 0, StateKind::Fast);
        run(c.path(), 0, StateKind::Compact);
        let (da, db) = (db_dir(a.path(), rules, 4), db_dir(b.path(), rules, 4));
        let dc = db_dir(c.path(), rules, 4);
        for n in 0..=16 {
            let (x, y) = (level_path(&da, n), level_path(&dc, n));
            assert_eq!(
                fs::read(&x).unwrap(),
                fs::read(&y).unwrap(),
                "{rules} level {n}"
            );
        }
        // Level 16 spans several stripes.
        assert!(Index::new(4, 16).unwrap().level_size(16) > 3 * STRIPE_IN_TESTS);
        for n in 0..=16 {
            let (x, y) = (level_path(&da, n), level_path(&db, n));
            assert_eq!(
                fs::read(&x).unwrap(),
                fs::read(&y).unwrap(),
                "{rules} level {n}"
            );
        }
        let names: Vec<_> = fs::read_dir(&db)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|f| !f.ends_with(".awl") && !f.starts_with(".lock") && f != "rates.csv")
            .collect();
        assert!(names.is_empty(), "left behind: {names:?}");
    }
}

/// A level built over a lower level that is only packed (exit model, decompressed and
/// resolved into memory, not copied into huge pages) and over raw levels read back from
/// disk is the level a build from scratch writes.
#[test]
fn building_over_a_packed_level_reads_it() {
    let t = tempfile::tempdir().unwrap();
    let dir = db_dir(t.path(), Rules::Awari, 3);
    build_warned(&opts(t.path(), 9, false));
    let want = fs::read(level_path(&dir, 9)).unwrap();
    let below: Vec<Vec<u8>> = (0..5)
        .map(|m| fs::read(level_path(&dir, m)).unwrap()[4096..].to_vec())
        .collect();
    let below: Vec<&[u8]> = below.iter().map(|v| &v[..]).collect();
    let five = fs::read(level_path(&dir, 5)).unwrap();
    let (raw, packed) = (level_path(&dir, 5), packed_path(&dir, 5));
    pack_payload(
        &packed,
        Rules::Awari,
        3,
        5,
        &five[4096..],
        &PackOptions::default(),
        &below,
    )
    .unwrap();
    fs::remove_file(&raw).unwrap();
    fs::remove_file(level_path(&dir, 9)).unwrap();
    let (reports, warnings) = build_warned(&opts(t.path(), 9, false));
    assert!(warnings.is_empty(), "{warnings:?}");
    assert!(reports[..9].iter().all(|r| r.skipped) && !reports[9].skipped);
    assert!(packed.exists() && !raw.exists());
    assert_eq!(fs::read(level_path(&dir, 9)).unwrap(), want);
}

/// Each level built adds its line to the rates file, with its positions, way and
/// threads; a level kept adds none.
#[test]
fn the_build_records_each_level_it_builds() {
    let t = tempfile::tempdir().unwrap();
    let dir = db_dir(t.path(), Rules::Awari, 3);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap();
    let (reports, _) = pool.install(|| build_warned(&opts(t.path(), 8, false)));
    let rates = rates::read(&dir).unwrap().unwrap();
    assert_eq!(rates.ignored, 0);
    let index = Index::new(3, 8).unwrap();
    assert_eq!(rates.levels.len(), 9);
    for (n, (line, report)) in rates.levels.iter().zip(&reports).enumerate() {
        assert_eq!((line.seeds, line.positions), (n, index.level_size(n)));
        assert_eq!(line.threads, 2);
        let way = report.way.unwrap();
        assert_eq!((line.state, line.lower), (way.state, way.lower));
        assert!((line.seconds - report.seconds).abs() < 0.001);
        assert!(line.cpu_seconds.is_some() && report.cpu_seconds.is_some());
    }
    let (reports, _) = build_warned(&opts(t.path(), 8, false));
    assert!(reports
        .iter()
        .all(|r| r.skipped && r.cpu_seconds == Some(0.0)));
    assert_eq!(rates::read(&dir).unwrap().unwrap().levels.len(), 9);
    build_warned(&opts(t.path(), 8, true));
    assert_eq!(rates::read(&dir).unwrap().unwrap().latest().len(), 9);
    assert_eq!(rates::read(&dir).unwrap().unwrap().levels.len(), 18);
}

#[test]
fn rebuilding_a_damaged_pack_removes_it() {
    let t = tempfile::tempdir().unwrap();
    let (reports, warnings) = build_warned(&opts(t.path(), 8, false));
    assert!(reports.iter().all(|r| !r.skipped) && warnings.is_empty());
    let dir = db_dir(t.path(), Rules::Awari, 3);
    let (raw, packed) = (level_path(&dir, 8), packed_path(&dir, 8));
    let good = fs::read(&raw).unwrap();
    // Level 8 packed only, then damaged: a flipped byte in its last block.
    let pack = PackOptions {
        block: 64,
        ..PackOptions::default()
    };
    let below: Vec<Vec<u8>> = (0..8)
        .map(|m| fs::read(level_path(&dir, m)).unwrap()[4096..].to_vec())
        .collect();
    let below: Vec<&[u8]> = below.iter().map(|v| &v[..]).collect();
    pack_payload(&packed, Rules::Awari, 3, 8, &good[4096..], &pack, &below).unwrap();
    fs::remove_file(&raw).unwrap();
    let mut bytes = fs::read(&packed).unwrap();
    let at = bytes.len() - 3;
    bytes[at] ^= 0x40;
    fs::write(&packed, &bytes).unwrap();

    let (reports, warnings) = build_warned(&opts(t.path(), 8, false));
    assert!(reports[..8].iter().all(|r| r.skipped) && !reports[8].skipped);
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(
        warnings[0].starts_with("rebuilding level 8"),
        "{warnings:?}"
    );
    assert!(
        warnings[1].starts_with("removed the stale packed level")
            && warnings[1].contains("level-008.awp"),
        "{warnings:?}"
    );
    assert!(!packed.exists());
    assert_eq!(fs::read(&raw).unwrap(), good);

    // With --force, a pack beside the raw level goes too; without, it stays.
    pack_payload(&packed, Rules::Awari, 3, 8, &good[4096..], &pack, &below).unwrap();
    let (_, warnings) = build_warned(&opts(t.path(), 8, false));
    assert!(warnings.is_empty() && packed.exists(), "{warnings:?}");
    let (reports, warnings) = build_warned(&opts(t.path(), 8, true));
    assert!(reports.iter().all(|r| !r.skipped));
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(!packed.exists());
    assert_eq!(fs::read(&raw).unwrap(), good);
}

/// Level `n` of 4-pit Oware over `ranks` thread ranks through the one driver, each rank
/// in `root/rank<r>`, its slices of the levels below built first, saving its checkpoints
/// at every chance; `keep` copies, when the level is solved and before it is written, what
/// each rank's folder holds to `root/kept<r>` (a build killed after its last checkpoint).
/// The slices concatenated, where each rank resumed, and the warnings of each rank.
#[allow(clippy::type_complexity)]
fn solve_saved(
    root: &Path,
    n: usize,
    ranks: usize,
    kind: StateKind,
    keep: bool,
) -> (Vec<u8>, Vec<Option<CheckpointAt>>, Vec<Vec<String>>) {
    let index = Index::new(4, n).unwrap();
    let truth = crate::solve::level::solve_in_memory(Rules::Oware, &index, n);
    let comms = LocalComm::group(ranks);
    let parts: Vec<(Vec<u8>, Option<CheckpointAt>, Vec<String>)> = std::thread::scope(|s| {
        let handles: Vec<_> = comms
            .iter()
            .map(|comm| {
                s.spawn(move || {
                    let r = comm.rank();
                    let opts =
                        BuildOptions::new(&root.join(format!("rank{r}")), Rules::Oware, 4, n)
                            .state(Some(kind))
                            .ranks_here(ranks)
                            .command("test")
                            .checkpoint_every(Duration::ZERO);
                    let below = BuildOptions {
                        max_seeds: n - 1,
                        ..opts.clone()
                    }
                    .checkpoint_every(None);
                    crate::solve::ranks::build_slices(comm, &below, |_| {}, |_| {}).unwrap();
                    let said = Mutex::new(Vec::new());
                    let warn = |w: &str| said.lock().unwrap().push(w.to_string());
                    let dir = db_dir(&opts.root, Rules::Oware, 4);
                    let part = SliceOf { rank: r, ranks };
                    let index = opts.checked_index().unwrap();
                    let mut b =
                        Builder::new(comm, &opts, index, dir.clone(), Target::Slices(part), &warn)
                            .unwrap();
                    let (values, solved) = match b.resume_level(n).unwrap() {
                        Some((solved, values)) => (values, solved),
                        None => {
                            b.lower.open_for_stream(n, n).unwrap();
                            let solved = match kind {
                                StateKind::Fast => b.solve::<Fast>(n, Lower::Stream, false),
                                StateKind::Compact => b.solve::<Compact>(n, Lower::Stream, false),
                                StateKind::Lean => b.solve_lean(n, Lower::Stream),
                            };
                            let (values, solved) = solved.unwrap();
                            (values, solved)
                        }
                    };
                    // The lean state's are in its values file.
                    let values = values.held().unwrap();
                    if keep {
                        let to = root.join(format!("kept{r}"));
                        std::fs::create_dir_all(&to).unwrap();
                        for e in std::fs::read_dir(&dir).unwrap() {
                            let e = e.unwrap();
                            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
                        }
                    }
                    assert!(solved.checkpoints > 0 || solved.resumed.is_some());
                    let said = said.lock().unwrap().clone();
                    (values.to_vec(), solved.resumed, said)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert!(
        parts
            .iter()
            .flat_map(|p| p.0.iter().copied())
            .eq(truth[n].iter().copied()),
        "level {n} over {ranks} ranks differs from the single process"
    );
    (
        parts.iter().flat_map(|p| p.0.clone()).collect(),
        parts.iter().map(|p| p.1).collect(),
        parts.iter().map(|p| p.2.clone()).collect(),
    )
}

/// Thread ranks save their slices at the same places (between thresholds and inside
/// them, after a segment) and resume from them, all together, to the single process's
/// level, also from inside a threshold; when one rank's checkpoint is damaged, every
/// rank starts the level afresh, to the same level.
#[test]
fn ranks_resume_from_their_checkpoints_together() {
    // One rank is a process alone (the single-process build runs this code with its own
    // one-rank comm).
    for (kind, ranks) in [
        (StateKind::Fast, 3),
        (StateKind::Compact, 3),
        (StateKind::Lean, 3),
        (StateKind::Fast, 1),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let (root, n) = (tmp.path(), 14);
        let last = ranks - 1;
        let rank_dir = |r: usize| db_dir(&root.join(format!("rank{r}")), Rules::Oware, 4);
        let (_, resumed, said) = solve_saved(root, n, ranks, kind, true);
        assert_eq!(resumed, vec![None; ranks]);
        assert_eq!(said, vec![Vec::<String>::new(); ranks]);
        // The checkpoints left when the level was solved, as a kill would leave them.
        let restore = || {
            for r in 0..ranks {
                let from = root.join(format!("kept{r}"));
                for e in std::fs::read_dir(&from).unwrap() {
                    let e = e.unwrap();
                    std::fs::copy(e.path(), rank_dir(r).join(e.file_name())).unwrap();
                }
            }
        };
        restore();
        let left = list_checkpoints(&rank_dir(0), n, SliceOf { rank: 0, ranks }).unwrap();
        assert_eq!(left.len(), 1, "{left:?}");
        let t = left[0].0;
        // Saved at every chance, the last one is inside the last threshold, after all but
        // its last segment.
        let segments =
            crate::db::layout::largest_slice(Index::new(4, n).unwrap().level_size(n), ranks)
                .div_ceil(crate::solve::level::SEGMENT);
        assert!(segments > 2, "{segments} segments");
        assert_eq!((t.next, t.segment as u64), (1, segments - 1));
        let (_, resumed, said) = solve_saved(root, n, ranks, kind, false);
        assert_eq!(resumed, vec![Some(t); ranks]);
        assert_eq!(said, vec![Vec::<String>::new(); ranks]);
        // The last rank's checkpoint damaged: no rank resumes, each starts the level
        // afresh.
        restore();
        let part = SliceOf { rank: last, ranks };
        let path = match kind {
            // A lean checkpoint holds the checksum of the state's files: one of them
            // damaged.
            StateKind::Lean => lean_paths(&rank_dir(last), n, part)[1].clone(),
            _ => checkpoint_path(&rank_dir(last), n, t, part),
        };
        let mut bytes = std::fs::read(&path).unwrap();
        *bytes.last_mut().unwrap() ^= 0x40;
        std::fs::write(&path, bytes).unwrap();
        let (_, resumed, said) = solve_saved(root, n, ranks, kind, false);
        assert_eq!(resumed, vec![None; ranks]);
        assert!(said[..last].iter().all(|s| s.is_empty()), "{said:?}");
        assert_eq!(said[last].len(), 1, "{said:?}");
        assert!(
            said[last][0].contains("refused (") && said[last][0].contains("damaged"),
            "{said:?}"
        );
    }
}
