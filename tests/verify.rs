//! `verify` and the independent solver: verify passes on built databases, names the level
//! and board of a changed byte, and its deep mode catches a wrong valuation that the local
//! check cannot; the independent solver (src/reference.rs) agrees with the builder on
//! every position reachable from 10,000 random positions per rule set.

use std::fs;
use std::path::Path;

use rayon::prelude::*;

use awari::expert::raw::LevelWriter;
use awari::expert::reference::Reference;
use awari::expert::{db_dir, legal_moves, level_path, Board, Database, Index};
use awari::{verify, Rules, VerifyOptions};

use crate::common::{build_db, run};

fn options(root: &Path, rules: Rules, pits: usize, deep: bool) -> VerifyOptions {
    VerifyOptions {
        root: root.to_path_buf(),
        rules,
        pits,
        levels: None,
        deep,
        progress: false,
    }
}

/// A small deterministic generator (splitmix64), so that failures can be replayed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Minutes together: left out of the quick tier (`--skip slow::`, GUIDE.md "Testing").
mod slow {
    use super::*;

    #[test]
    fn verify_and_deep_verify_pass_on_built_databases() {
        for (rules, pits, max) in [
            (Rules::Awari, 6, 12),
            (Rules::Oware, 6, 12),
            (Rules::Oware, 4, 14),
        ] {
            let dir = tempfile::tempdir().unwrap();
            build_db(dir.path(), rules, pits, max);
            let mut seen = Vec::new();
            let reports = verify(&options(dir.path(), rules, pits, true), |r| {
                seen.push(r.seeds)
            })
            .unwrap();
            assert_eq!(seen, (0..=max).collect::<Vec<_>>());
            let index = Index::new(pits, max).unwrap();
            for r in &reports {
                assert!(r.ok(), "{rules} P={pits} level {}: {r:?}", r.seeds);
                assert_eq!(r.positions, index.level_size(r.seeds));
                let deep = r.deep.as_ref().unwrap();
                // The independent method really iterates on the larger levels.
                if r.seeds >= 10 {
                    assert!(
                        deep.sweeps > 10,
                        "level {}: {} sweeps",
                        r.seeds,
                        deep.sweeps
                    );
                }
            }
        }
    }

    /// The independent solver against the builder: 10,000 random positions of levels 0..=12
    /// (P = 6, stored or not) per rule set, and every position reachable from them.
    #[test]
    fn independent_solver_agrees_on_random_positions() {
        for (rules, seed) in [(Rules::Awari, 1u64), (Rules::Oware, 2)] {
            let dir = tempfile::tempdir().unwrap();
            build_db(dir.path(), rules, 6, 12);
            let db = Database::open(dir.path(), rules, 6).unwrap();
            let mut rng = Rng(seed);
            let starts: Vec<Board> = (0..10_000)
                .map(|_| {
                    // A uniform composition of n seeds into 12 pits (stars and bars).
                    let n = rng.below(13) as u32;
                    let mut cuts: Vec<u32> =
                        (0..11).map(|_| rng.below(n as u64 + 1) as u32).collect();
                    cuts.sort();
                    let mut counts = Vec::with_capacity(12);
                    let mut prev = 0;
                    for &c in cuts.iter().chain([n].iter()) {
                        counts.push(c - prev);
                        prev = c;
                    }
                    db.board(&counts).unwrap()
                })
                .collect();
            let twelve = starts.iter().filter(|b| b.seeds() == 12).count();
            let unstored = starts.iter().filter(|b| !b.is_stored()).count();
            assert!(twelve > 500 && unstored > 20, "{twelve} {unstored}");
            let t0 = std::time::Instant::now();
            let reference = Reference::solve(rules, &starts, 20_000_000).unwrap();
            eprintln!(
                "{rules}: {} reachable, solved in {:.1} s",
                reference.len(),
                t0.elapsed().as_secs_f64()
            );
            assert!(reference.max_sweeps > 10, "{}", reference.max_sweeps);
            for b in &starts {
                let want = reference.value(b).unwrap();
                assert_eq!(db.probe(b).unwrap(), want, "{rules} {b}");
            }
            let all: Vec<(Board, i8)> = reference.iter().map(|(b, v)| (*b, v)).collect();
            all.par_iter().for_each(|(b, want)| {
                assert_eq!(db.probe(b).unwrap(), *want, "{rules} {b} (reached)");
            });
            let nonzero = all.iter().filter(|x| x.1 != 0).count();
            assert!(
                reference.len() > 100_000 && nonzero * 3 > reference.len(),
                "{}",
                reference.len()
            );
        }
    }
}

/// A wrong valuation that satisfies the local equation everywhere: in-place sweeps of
/// `v(p) = max over moves (captured - v(child))` from `+n` instead of 0 settle on
/// another fixpoint (a cycle of in-level moves can carry `a, -a, a, ...`). The local
/// check passes it; the deep check finds exactly the positions that differ.
#[test]
fn deep_verify_catches_a_consistent_wrong_level() {
    let (rules, pits, n) = (Rules::Awari, 6, 8);
    let dir = tempfile::tempdir().unwrap();
    build_db(dir.path(), rules, pits, n);
    let db = Database::open(dir.path(), rules, pits).unwrap();
    let index = Index::new(pits, n).unwrap();
    let size = index.level_size(n) as usize;
    let truth = db.level(n).unwrap().payload(&[]).unwrap().to_vec();
    let mut boards = Vec::with_capacity(size);
    let mut b = index.first(n);
    loop {
        boards.push(b);
        if !index.next(&mut b) {
            break;
        }
    }
    // Per position: the best exit and the in-level children.
    let mut exit = vec![i16::MIN; size];
    let mut kids: Vec<Vec<usize>> = vec![Vec::new(); size];
    for (i, b) in boards.iter().enumerate() {
        let moves = legal_moves(b, rules);
        if let Some(v) = moves.terminal_value {
            exit[i] = v as i16;
        }
        for m in moves.as_slice() {
            if m.ends_game {
                exit[i] = exit[i].max(n as i16);
            } else if m.captured > 0 {
                exit[i] = exit[i].max(m.captured as i16 - db.probe(&m.child).unwrap() as i16);
            } else {
                kids[i].push(index.rank(&m.child) as usize);
            }
        }
    }
    let mut v = vec![n as i16; size];
    let mut sweeps = 0;
    loop {
        sweeps += 1;
        assert!(
            sweeps < 10_000,
            "in-place iteration from +n does not settle"
        );
        let mut changed = false;
        for i in 0..size {
            let x = kids[i].iter().map(|&c| -v[c]).fold(exit[i], i16::max);
            changed |= x != v[i];
            v[i] = x;
        }
        if !changed {
            break;
        }
    }
    let wrong: Vec<u8> = v.iter().map(|&x| x as i8 as u8).collect();
    let differ = wrong.iter().zip(&truth).filter(|(a, b)| a != b).count() as u64;
    assert!(differ > 100, "only {differ} positions differ: no test");
    // Replace the level by the wrong one, with a valid header and checksum.
    let path = level_path(&db_dir(dir.path(), rules, pits), n);
    drop(db);
    fs::remove_file(&path).unwrap();
    let mut w = LevelWriter::create(&path, rules, pits, n, size as u64).unwrap();
    w.write(&wrong).unwrap();
    w.finish().unwrap();

    let mut opts = options(dir.path(), rules, pits, false);
    opts.levels = Some(n..=n);
    let local = verify(&opts, |_| {}).unwrap();
    assert!(
        local[0].ok(),
        "the local check cannot see it: {:?}",
        local[0]
    );
    opts.deep = true;
    let deep = verify(&opts, |_| {}).unwrap();
    let d = deep[0].deep.as_ref().unwrap();
    assert!(!deep[0].ok());
    assert_eq!(deep[0].mismatches.count, 0);
    assert_eq!(d.mismatches.count, differ);
    let first = d.mismatches.first[0];
    assert_eq!(first.stored, wrong[first.index as usize] as i8);
    assert_eq!(first.computed, truth[first.index as usize] as i8);
    assert_eq!(first.board, boards[first.index as usize]);
}

/// The acceptance test: one byte of a level changed by hand; `awari verify` fails and
/// names the level, the checksum, and the board.
#[test]
fn cli_verify_names_the_level_and_board_of_a_changed_byte() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("db");
    let root_s = root.to_str().unwrap();
    let (ok, _, err) = run(&["build", "--max-seeds", "9", "--dir", root_s]);
    assert!(ok, "{err}");
    let (ok, out, err) = run(&["verify", "--dir", root_s]);
    assert!(ok, "{out}{err}");
    assert!(out.contains("total: 10 levels, 293,475 positions"), "{out}");
    assert!(out.contains("all consistent"), "{out}");

    let (n, i) = (7usize, 12_345u64);
    let path = root.join("awari-6").join(format!("level-{n:03}.awl"));
    let mut bytes = fs::read(&path).unwrap();
    let at = 4096 + i as usize;
    let old = bytes[at] as i8;
    bytes[at] = (if old == 3 { -3i8 } else { 3 }) as u8;
    fs::write(&path, &bytes).unwrap();
    let board = Index::new(6, n).unwrap().unrank(n, i);

    let (ok, out, err) = run(&["verify", "--dir", root_s]);
    assert!(!ok, "{out}");
    let row = out
        .lines()
        .find(|l| l.trim_start().starts_with("7 "))
        .unwrap();
    assert!(row.contains("BAD"), "{row}");
    assert!(out.contains("level 7: damaged payload"), "{out}");
    let line = format!(
        "level 7 index {i}: {board} stored {:+}, its moves give {old:+}",
        bytes[at] as i8
    );
    assert!(out.contains(&line), "no '{line}' in:\n{out}");
    // Levels below are fine; the last line of stderr is the one error.
    for l in out
        .lines()
        .filter(|l| l.trim_start().starts_with(|c: char| c.is_ascii_digit()))
    {
        let level: usize = l.split_whitespace().next().unwrap().parse().unwrap();
        assert_eq!(l.contains("BAD"), level == 7, "{l}");
    }
    let last = err.lines().last().unwrap();
    assert!(last.starts_with("error: verify failed in "), "{err}");
    assert!(
        last.ends_with("level(s) 7 (see the table above)") || last.contains("level(s) 7,"),
        "{err}"
    );
    assert_eq!(
        err.lines().filter(|l| l.starts_with("error:")).count(),
        1,
        "{err}"
    );
    // Checking only the levels below passes.
    let (ok, out, _) = run(&["verify", "--dir", root_s, "--levels", "0..=6"]);
    assert!(ok, "{out}");
}

/// `awari verify` checks the distance tables beside the levels: every entry against the
/// distances of its moves. A wrong distance whose file holds its checksums (which `awari
/// info --check` and `awari dtc` accept) is named with its board, by both ways the check
/// reads the captures (streamed, and every level in memory once one is packed with the
/// exit model); a damaged byte is named with the file's checksum.
#[test]
fn cli_verify_checks_the_distance_tables() {
    use xxhash_rust::xxh3::xxh3_64;
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("db");
    let root_s = root.to_str().unwrap();
    let args = ["--dir", root_s, "--rules", "oware"];
    let (ok, _, err) = run(&[&["build", "--max-seeds", "10", "--dtc"][..], &args].concat());
    assert!(ok, "{err}");
    let verify = || run(&[&["verify"][..], &args].concat());
    let (ok, out, err) = verify();
    assert!(ok, "{out}{err}");
    let rows: Vec<&str> = out
        .lines()
        .filter(|l| l.trim_start().starts_with(|c: char| c.is_ascii_digit()))
        .collect();
    assert_eq!(rows.len(), 11, "{out}");
    // The distances' column, then their check's seconds.
    let distances = |r: &str| r.split_whitespace().rev().nth(1).map(str::to_string);
    assert!(
        rows.iter().all(|r| distances(r).as_deref() == Some("ok")),
        "{out}"
    );
    assert!(
        out.lines().next().unwrap().ends_with("distances    dist s"),
        "{out}"
    );

    // A distance one more than the truth, on a position of level 9 with a distance below
    // the longest; the payload and header checksums written again (DESIGN.md 4.2, 4.6).
    let (n, dir) = (9usize, root.join("oware-6"));
    let path = dir.join(format!("level-{n:03}.awd"));
    let good = fs::read(&path).unwrap();
    let longest = u16::from_le_bytes([good[42], good[43]]) as u8;
    let i = (0..good.len() - 4096)
        .find(|&i| (2..longest).contains(&good[4096 + i]) && i > 1000)
        .unwrap();
    let d = good[4096 + i];
    let mut wrong = good.clone();
    wrong[4096 + i] = d + 1;
    let sum = xxh3_64(&wrong[4096..]);
    wrong[32..40].copy_from_slice(&sum.to_le_bytes());
    let head = xxh3_64(&wrong[0..64]);
    wrong[64..72].copy_from_slice(&head.to_le_bytes());
    fs::write(&path, &wrong).unwrap();
    let (ok, out, err) = run(&["info", "--check", "--dir", dir.to_str().unwrap()]);
    assert!(ok, "info --check reads the table as good: {out}{err}");
    let board = Index::new(6, n).unwrap().unrank(n, i as u64);
    let line = format!(
        "level {n} index {i}: {board} distance stored {}, its moves give {d}",
        d + 1
    );
    let check = |out: &str, err: &str| {
        assert!(out.contains(&line), "no '{line}' in:\n{out}");
        let bad: Vec<&str> = out
            .lines()
            .filter(|l| l.split_whitespace().rev().nth(1) == Some("BAD"))
            .collect();
        assert_eq!(bad.len(), 1, "{out}");
        assert!(bad[0].trim_start().starts_with("9 "), "{out}");
        assert!(err.contains("level(s) 9 (see the table above)"), "{err}");
    };
    let (ok, out, err) = verify();
    assert!(!ok, "{out}");
    check(&out, &err);
    assert!(!out.contains("level 9 distances:"), "checksums hold: {out}");
    // Every level in memory: a level packed with the exit model.
    let (ok, _, err) = run(&[&["pack", "--level", "5"][..], &args].concat());
    assert!(ok, "{err}");
    let (ok, out, err) = verify();
    assert!(!ok, "{out}");
    check(&out, &err);

    // A byte changed and the checksums left: the file's damage is named too.
    let mut damaged = good;
    damaged[4096 + i] = d + 1;
    fs::write(&path, &damaged).unwrap();
    let (ok, out, err) = verify();
    assert!(!ok, "{out}");
    check(&out, &err);
    assert!(
        out.contains(&format!("level 9 distances: {}", path.display()))
            && out.contains("damaged (payload checksum mismatch)"),
        "{out}"
    );
}

#[test]
fn cli_verify_argument_errors_are_one_line() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("db");
    let root_s = root.to_str().unwrap();
    assert!(run(&["build", "--max-seeds", "4", "--dir", root_s]).0);
    for (levels, want) in [
        (
            "5..=2",
            "--levels '5..=2': the first level (5) is above the last (2)",
        ),
        (
            "x",
            "--levels 'x': expected a range of levels like 0..=20, or one level",
        ),
    ] {
        let (ok, out, err) = run(&["verify", "--dir", root_s, "--levels", levels]);
        assert!(!ok && out.is_empty(), "{out}");
        assert_eq!(err.trim_end(), format!("error: {want}"), "{err}");
    }
    let (ok, _, err) = run(&["verify", "--dir", root_s, "--levels", "0..=6"]);
    assert!(!ok);
    let last = err.lines().last().unwrap();
    assert!(
        last.starts_with("error: level 5 (awari, 6 pits per side) is not built in "),
        "{err}"
    );
    assert!(
        last.ends_with(
            "run `awari build --max-seeds 6 --dir "
                .to_string()
                .as_str()
                .trim_end()
        ) || last.contains("--max-seeds 6"),
        "{err}"
    );
    let empty = tmp.path().join("nothing");
    fs::create_dir(&empty).unwrap();
    let (ok, _, err) = run(&["verify", "--dir", empty.to_str().unwrap()]);
    assert!(!ok);
    assert!(
        err.lines()
            .last()
            .unwrap()
            .starts_with("error: no levels in "),
        "{err}"
    );
}
