//! `awari dtc`: a table beside every level, kept on a rerun, a damaged one made again to
//! the same bytes, a missing level refused in one line.

use std::fs;

use crate::common::{awari, ok, run, text};

#[test]
fn tables_are_made_kept_and_mended() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().to_str().unwrap();
    for rules in ["awari", "oware"] {
        ok(&[
            "build",
            "--max-seeds",
            "12",
            "--rules",
            rules,
            "--dir",
            root,
        ]);
        let dir = tmp.path().join(format!("{rules}-6"));
        let args = ["dtc", "--rules", rules, "--dir", root];
        let made = ok(&args);
        assert!(
            made.contains("total: 13 levels (13 made, 0 kept), longest distance 130 plies"),
            "{made}"
        );
        // Level 12's row: its positions, those with a distance, the longest, one byte.
        let row = made
            .lines()
            .find(|l| l.trim_start().starts_with("12 "))
            .unwrap();
        let cells: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(cells[1], "1,339,702", "{row}");
        assert_eq!((cells[3], cells[4]), ("130", "1"), "{row}");
        let table = |n: usize| dir.join(format!("level-{n:03}.awd"));
        let tables: Vec<Vec<u8>> = (0..=12).map(|n| fs::read(table(n)).unwrap()).collect();
        let again = ok(&args);
        assert!(again.contains("(0 made, 13 kept)"), "{again}");
        // A damaged table is said and made again, to the same bytes.
        let mut bad = tables[10].clone();
        let last = bad.len() - 1;
        bad[last] ^= 1;
        fs::write(table(10), &bad).unwrap();
        // Meanwhile a query gives the value, its distances left out with one warning.
        let position = ["1", "1", "1", "1", "1", "2", "1", "0", "2", "0", "0", "0"];
        let mut query = vec!["query", "--rules", rules, "--dir", root];
        query.extend(position);
        let (done, out, err) = run(&query);
        assert!(done && out.contains(": value "), "{err}");
        assert_eq!(
            err,
            "warning: the distance table level-010.awd of level 10 is left out (damaged \
             (payload checksum mismatch)); `awari dtc --force --levels 10` makes it again\n"
        );
        let (done, out, err) = run(&args);
        assert!(done, "{err}");
        assert!(out.contains("(1 made, 12 kept)"), "{out}");
        assert!(
            err.contains("warning: ") && err.contains("level-010.awd") && err.contains("damaged"),
            "{err}"
        );
        assert_eq!(fs::read(table(10)).unwrap(), tables[10]);
        // --force makes every table of the levels asked for again, the same.
        let forced = ok(&[
            "dtc", "--rules", rules, "--dir", root, "--force", "--levels", "5..=8",
        ]);
        assert!(
            forced.contains("total: 4 levels (4 made, 0 kept)"),
            "{forced}"
        );
        for (n, was) in tables.iter().enumerate() {
            assert_eq!(&fs::read(table(n)).unwrap(), was, "{rules} level {n}");
        }
    }
    // `build --dtc` makes the tables after the levels: the same files.
    let both = tempfile::tempdir().unwrap();
    let out = ok(&[
        "build",
        "--max-seeds",
        "9",
        "--dtc",
        "--dir",
        both.path().to_str().unwrap(),
    ]);
    assert!(out.contains("total: 10 levels (10 made, 0 kept)"), "{out}");
    for n in 0..=9 {
        let name = format!("awari-6/level-{n:03}.awd");
        let a = fs::read(both.path().join(&name)).unwrap();
        assert_eq!(a, fs::read(tmp.path().join(&name)).unwrap(), "{name}");
    }
    // Levels asked for that are not built: one line, naming the level.
    let out = awari(&["dtc", "--dir", root, "--levels", "0..=14"]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(errors.len(), 1, "{err}");
    assert!(errors[0].starts_with("error: level 13 is missing"), "{err}");
    assert!(!tmp.path().join("awari-6/level-013.awd").exists());
}

/// `build --pack --dtc` packs the tables as it packs the levels: no raw file is left,
/// and a query answers with a distance from them.
#[test]
fn build_pack_dtc_leaves_no_raw_table() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().to_str().unwrap();
    ok(&[
        "build",
        "--max-seeds",
        "10",
        "--pack",
        "--dtc",
        "--dir",
        root,
    ]);
    let mut kinds: Vec<String> = fs::read_dir(tmp.path().join("awari-6"))
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().to_string_lossy().into_owned();
            name.starts_with("level-").then(|| name[10..].to_string())
        })
        .collect();
    kinds.sort();
    kinds.dedup();
    assert_eq!(kinds, ["adz", "awp"]);
    let out = ok(&[
        "query", "--json", "--dir", root, "1", "1", "1", "1", "1", "2", "1", "0", "2", "0", "0",
        "0",
    ]);
    let answer: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(answer["distance"].as_u64().is_some_and(|d| d > 0), "{out}");
}
