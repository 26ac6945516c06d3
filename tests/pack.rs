//! Packed levels and Romein-Bal files: pack/unpack and export/import round trips are
//! byte-identical; probes, verify and the builder read packed levels as they read raw
//! ones; damage in a pack is named by level and block; bad input files are refused.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use awari::build::expect;
use awari::export::{export, import, scores_path, ImportOptions};
use awari::pack::{pack_level, packed_path, unpack_level, PackOptions};
use awari::table::level_path;
use awari::verify::{verify, VerifyOptions};
use awari::{build, db_dir, BuildOptions, Database, Index, Rules};

const BIN: &str = env!("CARGO_BIN_EXE_awari");
const TOP: usize = 16;

/// Levels 0..=16 of the default database, built once (kept between runs: the builder
/// keeps complete levels).
fn shared() -> &'static Path {
    static ROOT: OnceLock<PathBuf> = OnceLock::new();
    ROOT.get_or_init(|| {
        let root = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("pack-db");
        let opts = BuildOptions {
            root: root.clone(),
            rules: Rules::Awari,
            pits: 6,
            max_seeds: TOP,
            force: false,
            progress: false,
        };
        build(&opts, |_| {}, |w| panic!("unexpected warning: {w}")).unwrap();
        root
    })
}

fn raw_dir() -> PathBuf {
    db_dir(shared(), Rules::Awari, 6)
}

/// A new root holding a copy of the raw levels 0..=max of the shared database.
fn copy_levels(max: usize) -> tempfile::TempDir {
    let t = tempfile::tempdir().unwrap();
    let dir = db_dir(t.path(), Rules::Awari, 6);
    fs::create_dir_all(&dir).unwrap();
    for n in 0..=max {
        fs::copy(level_path(&raw_dir(), n), level_path(&dir, n)).unwrap();
    }
    t
}

fn verify_opts(root: &Path, levels: std::ops::RangeInclusive<usize>) -> VerifyOptions {
    VerifyOptions {
        root: root.to_path_buf(),
        rules: Rules::Awari,
        pits: 6,
        levels: Some(levels),
        deep: false,
        progress: false,
    }
}

#[test]
fn export_import_verify_round_trip() {
    let out = tempfile::tempdir().unwrap();
    let scores = out.path().join("scores");
    let sent = export(shared(), Rules::Awari, 6, &scores, Some(0..=TOP), |_| {}).unwrap();
    assert_eq!(sent.len(), TOP + 1);
    for n in 0..=TOP {
        let raw = fs::read(level_path(&raw_dir(), n)).unwrap();
        assert_eq!(
            fs::read(scores_path(&scores, n)).unwrap(),
            raw[4096..],
            "scores.{n}"
        );
    }
    // Imported raw: the very same files. Imported packed: verify passes.
    let raw_root = out.path().join("raw");
    import(
        &raw_root,
        Rules::Awari,
        6,
        &scores,
        &ImportOptions::default(),
        |_| {},
    )
    .unwrap();
    let packed_root = out.path().join("packed");
    let opts = ImportOptions {
        pack: Some(PackOptions::default()),
        force: false,
    };
    import(&packed_root, Rules::Awari, 6, &scores, &opts, |_| {}).unwrap();
    let (raw_db, packed_db) = (
        db_dir(&raw_root, Rules::Awari, 6),
        db_dir(&packed_root, Rules::Awari, 6),
    );
    for n in 0..=TOP {
        assert_eq!(
            fs::read(level_path(&raw_db, n)).unwrap(),
            fs::read(level_path(&raw_dir(), n)).unwrap(),
            "level {n}"
        );
        assert!(packed_path(&packed_db, n).exists());
        assert!(!level_path(&packed_db, n).exists());
    }
    let checks = verify(&verify_opts(&packed_root, 0..=TOP), |_| {}).unwrap();
    assert!(checks.iter().all(|c| c.ok()), "{checks:?}");
    // The start of the published example, answered from packed levels.
    let db = Database::open(&packed_root, Rules::Awari, 6).unwrap();
    let b = db.board(&[1, 1, 1, 1, 1, 2, 4, 2, 3, 0, 0, 0]).unwrap();
    let per_move: Vec<i8> = db
        .analyze(&b)
        .unwrap()
        .moves
        .iter()
        .map(|m| m.value)
        .collect();
    assert_eq!(per_move, [-1, -1, -2, -2, -2, 0]);
    // Importing again is refused without --force; a level of the wrong size always.
    let e = import(
        &raw_root,
        Rules::Awari,
        6,
        &scores,
        &ImportOptions::default(),
        |_| {},
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("already in") && e.contains("--force"), "{e}");
    let bad = out.path().join("bad");
    fs::create_dir_all(&bad).unwrap();
    fs::write(scores_path(&bad, 5), vec![0u8; 4000]).unwrap();
    let e = import(
        &out.path().join("x"),
        Rules::Awari,
        6,
        &bad,
        &ImportOptions::default(),
        |_| {},
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("scores.5") && e.contains("4000 bytes") && e.contains("expected 4368"),
        "{e}"
    );
    assert!(!db_dir(&out.path().join("x"), Rules::Awari, 6).exists());
    let e = export(shared(), Rules::Oware, 6, &bad, None, |_| {})
        .unwrap_err()
        .to_string();
    assert!(e.contains("only the awari rules with 6 pits"), "{e}");
}

#[test]
fn packed_levels_probe_verify_unpack_and_damage() {
    let t = copy_levels(12);
    let dir = db_dir(t.path(), Rules::Awari, 6);
    let index = Index::new(6, 12).unwrap();
    let small = PackOptions {
        block: 4096,
        ..PackOptions::default()
    };
    for n in 0..=12 {
        pack_level(&dir, &expect(Rules::Awari, &index, n), &small, true).unwrap();
        assert!(!level_path(&dir, n).exists());
    }
    // Every position of level 10, probed through the packed file, as stored raw.
    let db = Database::open(t.path(), Rules::Awari, 6).unwrap();
    let raw10 = fs::read(level_path(&raw_dir(), 10)).unwrap();
    let mut b = index.first(10);
    for (i, &want) in raw10[4096..].iter().enumerate() {
        assert_eq!(db.probe(&b).unwrap(), want as i8, "index {i}");
        index.next(&mut b);
    }
    assert!(db.level(10).unwrap().is_packed());
    drop(db);
    let checks = verify(&verify_opts(t.path(), 0..=12), |_| {}).unwrap();
    assert!(checks.iter().all(|c| c.ok()), "{checks:?}");
    // The builder reads packed lower levels: level 13 comes out as built from raw ones.
    let opts = BuildOptions {
        root: t.path().to_path_buf(),
        rules: Rules::Awari,
        pits: 6,
        max_seeds: 13,
        force: false,
        progress: false,
    };
    let reports = build(&opts, |_| {}, |w| panic!("unexpected warning: {w}")).unwrap();
    assert!(reports[..13].iter().all(|r| r.skipped) && !reports[13].skipped);
    assert_eq!(
        fs::read(level_path(&dir, 13)).unwrap(),
        fs::read(level_path(&raw_dir(), 13)).unwrap()
    );
    // Unpack restores the raw files byte for byte; packing is deterministic.
    let pack12 = fs::read(packed_path(&dir, 12)).unwrap();
    for n in 0..=12 {
        unpack_level(&dir, &expect(Rules::Awari, &index, n), false).unwrap();
        assert_eq!(
            fs::read(level_path(&dir, n)).unwrap(),
            fs::read(level_path(&raw_dir(), n)).unwrap(),
            "level {n}"
        );
    }
    pack_level(&dir, &expect(Rules::Awari, &index, 12), &small, true).unwrap();
    assert_eq!(fs::read(packed_path(&dir, 12)).unwrap(), pack12);
    // A flipped byte near the end of level 11's pack (its last block): verify and probes
    // name the level and the block; probes elsewhere still work.
    fs::remove_file(level_path(&dir, 11)).unwrap();
    let p11 = packed_path(&dir, 11);
    let mut bytes = fs::read(&p11).unwrap();
    let at = bytes.len() - 10;
    bytes[at] ^= 0x10;
    fs::write(&p11, &bytes).unwrap();
    let blocks = index.level_size(11).div_ceil(4096);
    let last = blocks - 1;
    let checks = verify(&verify_opts(t.path(), 11..=11), |_| {}).unwrap();
    let problem = checks[0].checksum_problem.clone().expect("damage found");
    assert!(
        problem.contains(&format!("level 11, block {last} of {blocks}")),
        "{problem}"
    );
    let db = Database::open(t.path(), Rules::Awari, 6).unwrap();
    let e = db
        .probe(&index.unrank(11, index.level_size(11) - 1))
        .unwrap_err()
        .to_string();
    assert!(e.contains(&format!("level 11, block {last}")), "{e}");
    assert!(db.probe(&index.unrank(11, 0)).is_ok());
    // A truncated pack is refused when opened.
    let p12 = packed_path(&dir, 12);
    fs::write(&p12, &pack12[..pack12.len() - 1]).unwrap();
    let e = db.probe(&index.unrank(12, 0)).unwrap_err().to_string();
    assert!(
        e.contains("level-012.awp") && e.contains("truncated"),
        "{e}"
    );
}

#[test]
fn cli_pack_info_unpack() {
    let t = copy_levels(9);
    let root = t.path().to_str().unwrap();
    let run = |args: &[&str]| {
        let out = Command::new(BIN).args(args).output().unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (ok, out, err) = run(&["pack", "--dir", root, "--level", "9", "--remove-raw"]);
    assert!(ok, "{out}{err}");
    assert!(out.contains("ratio"), "{out}");
    let (ok, out, err) = run(&["info", "--dir", root, "--check"]);
    assert!(ok, "{out}{err}");
    let line = |n: &str| {
        out.lines()
            .find(|l| l.split_whitespace().nth(2) == Some(n))
            .unwrap_or_else(|| panic!("no level {n} in:\n{out}"))
            .to_string()
    };
    let nine = line("9");
    assert!(nine.contains("packed") && nine.ends_with("ok"), "{nine}");
    let ratio: f64 = nine.split_whitespace().nth(6).unwrap().parse().unwrap();
    assert!(ratio > 2.0, "{nine}");
    let eight = line("8");
    assert!(eight.contains(" raw ") && eight.contains("1.00"), "{eight}");
    // Query reads the packed level.
    let (ok, out, err) = run(&[
        "query", "--dir", root, "1", "1", "1", "1", "1", "0", "0", "0", "0", "4", "0", "0",
    ]);
    assert!(ok, "{out}{err}");
    // Errors: one line, no panic.
    let (ok, _, err) = run(&["pack", "--dir", root, "--level", "9"]);
    assert!(
        !ok && err.trim().starts_with("error: level 9") && err.contains("already packed"),
        "{err}"
    );
    let (ok, _, err) = run(&["export", "--dir", root, "--pits", "4", "--out", root]);
    assert!(
        !ok && err.contains("error: the romein-bal format holds only"),
        "{err}"
    );
    let (ok, out, err) = run(&["unpack", "--dir", root, "--all", "--remove-packed"]);
    assert!(ok, "{out}{err}");
    let dir = db_dir(t.path(), Rules::Awari, 6);
    assert_eq!(
        fs::read(level_path(&dir, 9)).unwrap(),
        fs::read(level_path(&raw_dir(), 9)).unwrap()
    );
    assert!(!packed_path(&dir, 9).exists());
}
