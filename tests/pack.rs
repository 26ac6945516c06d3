//! Packed levels and Romein-Bal files: pack/unpack and export/import round trips are
//! byte-identical; probes, verify and the builder read packed levels (plain and exit
//! model) as they read raw ones; damage in a pack is named by level and block; bad input
//! files are refused.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use rayon::prelude::*;

use awari::expert::pack::{pack_level, unpack_level, Holds, LevelStack, Model, PackOptions};
use awari::expert::romein_bal::{export, import, scores_path, ImportOptions};
use awari::expert::{db_dir, level_path, packed_path, Database, Index};
use awari::{verify, Rules, VerifyOptions};

use crate::common::{build_levels, run};

const TOP: usize = 16;

/// Raw levels 0..=max of a database, built once per test run and kept between runs in
/// the target folder (the builder keeps complete levels).
fn built(rules: Rules, pits: usize, max: usize) -> PathBuf {
    // One build at a time: two tests may want the same database.
    static LOCK: Mutex<()> = Mutex::new(());
    let _g = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let root = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("pack-db");
    build_levels(&root, rules, pits, max);
    root
}

/// Levels 0..=16 of the default database.
fn shared() -> &'static Path {
    static ROOT: OnceLock<PathBuf> = OnceLock::new();
    ROOT.get_or_init(|| built(Rules::Awari, 6, TOP))
}

fn raw_dir() -> PathBuf {
    db_dir(shared(), Rules::Awari, 6)
}

/// A new root holding a copy of the raw levels 0..=max of the database under `from`.
fn copy_db(from: &Path, rules: Rules, pits: usize, max: usize) -> tempfile::TempDir {
    let t = tempfile::tempdir().unwrap();
    let (src, dir) = (db_dir(from, rules, pits), db_dir(t.path(), rules, pits));
    fs::create_dir_all(&dir).unwrap();
    for n in 0..=max {
        fs::copy(level_path(&src, n), level_path(&dir, n)).unwrap();
    }
    t
}

/// A copy of the raw levels 0..=max of the default database.
fn copy_levels(max: usize) -> tempfile::TempDir {
    copy_db(shared(), Rules::Awari, 6, max)
}

fn verify_opts(root: &Path, levels: std::ops::RangeInclusive<usize>) -> VerifyOptions {
    db_verify_opts(root, Rules::Awari, 6, levels)
}

fn db_verify_opts(
    root: &Path,
    rules: Rules,
    pits: usize,
    levels: std::ops::RangeInclusive<usize>,
) -> VerifyOptions {
    VerifyOptions {
        root: root.to_path_buf(),
        rules,
        pits,
        levels: Some(levels),
        deep: false,
        progress: false,
    }
}

fn stack(root: &Path, rules: Rules, pits: usize) -> LevelStack {
    LevelStack::new(&db_dir(root, rules, pits), rules, pits, true).unwrap()
}

/// Minutes together: left out of the quick tier (`--skip slow::`, GUIDE.md "Testing").
mod slow {
    use super::*;

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
        // Imported packs use the exit model; exported again, they give the same files.
        let db = Database::open(&packed_root, Rules::Awari, 6).unwrap();
        assert_eq!(db.level(TOP).unwrap().model(), Model::Exits);
        drop(db);
        let again = out.path().join("again");
        export(&packed_root, Rules::Awari, 6, &again, None, |_| {}).unwrap();
        for n in 0..=TOP {
            assert_eq!(
                fs::read(scores_path(&again, n)).unwrap(),
                fs::read(scores_path(&scores, n)).unwrap(),
                "scores.{n} after export -> import --pack -> export"
            );
        }
        // The exit model needs every level below each one imported.
        let part = out.path().join("part");
        fs::create_dir_all(&part).unwrap();
        fs::copy(scores_path(&scores, 9), scores_path(&part, 9)).unwrap();
        let e = import(&out.path().join("y"), Rules::Awari, 6, &part, &opts, |_| {})
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("needs level 0") && e.contains("--model plain"),
            "{e}"
        );
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

    /// The plain model (the values themselves, as version 1 packs hold).
    #[test]
    fn packed_levels_probe_verify_unpack_and_damage() {
        let t = copy_levels(12);
        let dir = db_dir(t.path(), Rules::Awari, 6);
        let index = Index::new(6, 12).unwrap();
        let small = PackOptions {
            block: 4096,
            model: Model::Plain,
            ..PackOptions::default()
        };
        let mut levels = stack(t.path(), Rules::Awari, 6);
        for n in 0..=12 {
            pack_level(&mut levels, n, &small, true).unwrap();
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
        assert_eq!(db.level(10).unwrap().model(), Model::Plain);
        drop(db);
        let checks = verify(&verify_opts(t.path(), 0..=12), |_| {}).unwrap();
        assert!(checks.iter().all(|c| c.ok()), "{checks:?}");
        // The builder reads packed lower levels: level 13 comes out as built from raw ones.
        let reports = build_levels(t.path(), Rules::Awari, 6, 13);
        assert!(reports[..13].iter().all(|r| r.skipped) && !reports[13].skipped);
        assert_eq!(
            fs::read(level_path(&dir, 13)).unwrap(),
            fs::read(level_path(&raw_dir(), 13)).unwrap()
        );
        // Unpack restores the raw files byte for byte; packing is deterministic.
        let pack12 = fs::read(packed_path(&dir, 12)).unwrap();
        let mut levels = stack(t.path(), Rules::Awari, 6);
        for n in 0..=12 {
            unpack_level(&mut levels, n, false).unwrap();
            assert_eq!(
                fs::read(level_path(&dir, n)).unwrap(),
                fs::read(level_path(&raw_dir(), n)).unwrap(),
                "level {n}"
            );
        }
        pack_level(&mut stack(t.path(), Rules::Awari, 6), 12, &small, true).unwrap();
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

    /// The exit model on levels 0..=14 of Awari: probes, verify and unpack as raw; the
    /// builder reads the packs; damage is named by level and block.
    #[test]
    fn exit_model_awari() {
        let t = exit_packs_match_raw(Rules::Awari, 6, 14, 4096);
        let dir = db_dir(t.path(), Rules::Awari, 6);
        let index = Index::new(6, 15).unwrap();
        // Level 15 built from exit-model packs is level 15 built from raw levels.
        let reports = build_levels(t.path(), Rules::Awari, 6, 15);
        assert!(reports[..15].iter().all(|r| r.skipped) && !reports[15].skipped);
        assert_eq!(
            fs::read(level_path(&dir, 15)).unwrap(),
            fs::read(level_path(&raw_dir(), 15)).unwrap()
        );
        // A flipped byte in the last block of level 13: verify names the level and block,
        // and so do probes that read a byte of that block; other blocks still answer.
        let p13 = packed_path(&dir, 13);
        let original13 = fs::read(&p13).unwrap();
        let mut bytes = original13.clone();
        let at = bytes.len() - 10;
        bytes[at] ^= 0x10;
        fs::write(&p13, &bytes).unwrap();
        let size = index.level_size(13);
        let blocks = size.div_ceil(4096);
        let name = format!("level 13, block {} of {blocks}", blocks - 1);
        let checks = verify(&verify_opts(t.path(), 13..=13), |_| {}).unwrap();
        let problem = checks[0].checksum_problem.clone().expect("damage found");
        assert!(problem.contains(&name), "{problem}");
        let db = Database::open(t.path(), Rules::Awari, 6).unwrap();
        let errors: Vec<String> = ((blocks - 1) * 4096..size)
            .filter_map(|i| db.probe(&index.unrank(13, i)).err())
            .map(|e| e.to_string())
            .collect();
        assert!(!errors.is_empty());
        assert!(errors.iter().all(|e| e.contains(&name)), "{errors:?}");
        assert!(db.probe(&index.unrank(13, 0)).is_ok());
        // Verifying the levels above reads level 13 whole: refused, named.
        let e = verify(&verify_opts(t.path(), 14..=14), |_| {})
            .unwrap_err()
            .to_string();
        assert!(e.contains(&name), "{e}");
        // With a block of level 12 lost (its zstd frame unreadable), values of level 14,
        // which captures into level 12, come out wrong: verify says which level is to blame.
        fs::write(&p13, &original13).unwrap();
        let p12 = packed_path(&dir, 12);
        let mut bytes = fs::read(&p12).unwrap();
        let mid = index.level_size(12).div_ceil(4096) / 2;
        let at = 64 + 8 * mid as usize;
        let off = u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap()) as usize;
        bytes[off..off + 4].copy_from_slice(b"XXXX");
        fs::write(&p12, &bytes).unwrap();
        let checks = verify(&verify_opts(t.path(), 12..=14), |_| {}).unwrap();
        let problem = checks[0].checksum_problem.clone().expect("damage found");
        assert!(
            problem.contains(&format!("level 12, block {mid} of"))
                && problem.contains("cannot be decompressed"),
            "{problem}"
        );
        let problem = checks[2].checksum_problem.clone().expect("level 14 fails");
        assert!(
            problem.contains("from level 12, which is damaged"),
            "{problem}"
        );
    }

    #[test]
    fn exit_model_oware() {
        exit_packs_match_raw(Rules::Oware, 6, 14, 4096);
    }

    /// Another board size, both rule sets, at the default block size.
    #[test]
    fn exit_model_four_pits() {
        for rules in [Rules::Awari, Rules::Oware] {
            exit_packs_match_raw(rules, 4, 16, awari::expert::pack::DEFAULT_BLOCK);
        }
    }
}

#[test]
fn cli_pack_info_unpack() {
    let t = copy_levels(9);
    let root = t.path().to_str().unwrap();
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
    assert!(
        nine.contains("packed") && nine.contains("exits") && nine.ends_with("ok"),
        "{nine}"
    );
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
    // The exit model needs the levels below; the plain one packs a level alone.
    let lone = tempfile::tempdir().unwrap();
    let lone_dir = db_dir(lone.path(), Rules::Awari, 6);
    fs::create_dir_all(&lone_dir).unwrap();
    fs::copy(level_path(&raw_dir(), 5), level_path(&lone_dir, 5)).unwrap();
    let lone_root = lone.path().to_str().unwrap();
    let (ok, _, err) = run(&["pack", "--dir", lone_root, "--level", "5"]);
    assert!(
        !ok && err.lines().count() == 1
            && err.contains("error: packing level 5 with the exit model needs the levels below it: level 0 (awari, 6 pits per side) is not built in")
            && err.contains("run `awari build --max-seeds 0 --dir")
            && err.contains("--model plain"),
        "{err}"
    );
    let (ok, out, err) = run(&[
        "pack", "--dir", lone_root, "--level", "5", "--model", "plain",
    ]);
    assert!(ok && out.contains("plain"), "{out}{err}");
    let (ok, out, err) = run(&["unpack", "--dir", root, "--all", "--remove-packed"]);
    assert!(ok, "{out}{err}");
    let dir = db_dir(t.path(), Rules::Awari, 6);
    assert_eq!(
        fs::read(level_path(&dir, 9)).unwrap(),
        fs::read(level_path(&raw_dir(), 9)).unwrap()
    );
    assert!(!packed_path(&dir, 9).exists());
}

/// Positions of level `n` probed through `db` against the raw payload `raw`: every one of
/// the first and last chunks, and every 7th elsewhere (a probe of the exit model probes
/// the captures' children too, down the levels: probing all of them was most of these
/// tests' time, and verify and unpack check every value anyway).
fn probe_sample(db: &Database, index: &Index, n: usize, raw: &[u8]) {
    const CHUNK: usize = 4096;
    const STRIDE: usize = 7;
    let last = raw.len().saturating_sub(1) / CHUNK;
    let probed: usize = raw
        .par_chunks(CHUNK)
        .enumerate()
        .map(|(c, values)| {
            let every = if c == 0 || c == last { 1 } else { STRIDE };
            let start = (c * CHUNK) as u64;
            let mut b = index.unrank(n, start);
            let mut probed = 0;
            for (j, &want) in values.iter().enumerate() {
                if j % every == c % every {
                    let got = db.probe(&b).unwrap();
                    assert_eq!(got, want as i8, "level {n}, index {}", start + j as u64);
                    probed += 1;
                }
                index.next(&mut b);
            }
            probed
        })
        .sum();
    assert!(probed >= raw.len() / STRIDE, "{probed} of {}", raw.len());
}

/// Packs levels 0..=top of the built database of `rules` and `pits` with the exit model
/// (raw files removed), then: positions probe to their raw values, verify passes,
/// and unpack restores the raw files byte for byte. Returns the packed copy.
fn exit_packs_match_raw(rules: Rules, pits: usize, top: usize, block: u32) -> tempfile::TempDir {
    let src = built(rules, pits, top);
    let t = copy_db(&src, rules, pits, top);
    let (src_dir, dir) = (db_dir(&src, rules, pits), db_dir(t.path(), rules, pits));
    let index = Index::new(pits, top).unwrap();
    let opts = PackOptions {
        block,
        ..PackOptions::default()
    };
    assert_eq!(opts.model, Model::Exits);
    let mut levels = stack(t.path(), rules, pits);
    let mut packed_bytes = 0;
    for n in 0..=top {
        let r = pack_level(&mut levels, n, &opts, true).unwrap();
        assert_eq!(r.holds, Holds::Values(Model::Exits));
        packed_bytes += r.packed_bytes;
    }
    drop(levels);
    let raw = |n: usize| fs::read(level_path(&src_dir, n)).unwrap();
    let db = Database::open(t.path(), rules, pits).unwrap();
    for n in 0..=top {
        assert_eq!(db.level(n).unwrap().model(), Model::Exits);
        probe_sample(&db, &index, n, &raw(n)[4096..]);
    }
    drop(db);
    let checks = verify(&db_verify_opts(t.path(), rules, pits, 0..=top), |_| {}).unwrap();
    assert!(
        checks.iter().all(|c| c.ok()),
        "{rules} P={pits}: {checks:?}"
    );
    // Unpacked into a copy, so that the caller gets the packs alone.
    let u = tempfile::tempdir().unwrap();
    let udir = db_dir(u.path(), rules, pits);
    fs::create_dir_all(&udir).unwrap();
    for n in 0..=top {
        fs::copy(packed_path(&dir, n), packed_path(&udir, n)).unwrap();
    }
    let mut levels = stack(u.path(), rules, pits);
    for n in 0..=top {
        unpack_level(&mut levels, n, true).unwrap();
        assert_eq!(
            fs::read(level_path(&udir, n)).unwrap(),
            raw(n),
            "{rules} P={pits} level {n}"
        );
    }
    let raw_bytes: u64 = (0..=top).map(|n| 4096 + index.level_size(n)).sum();
    eprintln!(
        "{rules} P={pits} levels 0..={top}: exit-model packs {packed_bytes} bytes, ratio {:.2}",
        raw_bytes as f64 / packed_bytes as f64
    );
    t
}
