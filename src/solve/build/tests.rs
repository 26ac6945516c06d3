//! The single-process build's own tests: spilling, building over packed levels, the
//! rates file, rebuilding a damaged pack.

use super::*;
use crate::db::pack::{pack_payload, PackOptions};
use crate::game::rules::Rules;

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
