//! `awari stats`: the counts of a small built database against a recount done here by
//! probing every position, the text table and `--json` against the library, the SVG chart
//! opened and read, and the errors of a missing database or a chart that is not SVG.

use crate::common::{awari, ok, text};

use std::path::Path;

use awari::expert::figures::group;
use awari::expert::stats::{database_stats, LevelStats};
use awari::expert::{Database, Index};
use awari::Rules;
use serde_json::Value;
use tempfile::TempDir;

/// Levels 0..=10 of Awari, 6 pits per side: 550,000 positions, built in well under a second.
const TOP: usize = 10;

/// A failed run: status 1, no panic, and the last line of stderr the only `error:` line.
fn error_line(args: &[&str]) -> String {
    let out = awari(args);
    let stderr = text(&out.stderr);
    let ctx = format!("awari {args:?} ({:?}):\nstderr:\n{stderr}", out.status);
    assert_eq!(out.status.code(), Some(1), "{ctx}");
    assert!(!stderr.contains("panicked"), "{ctx}");
    let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(errors.len(), 1, "{ctx}");
    assert_eq!(stderr.lines().last(), Some(errors[0]), "{ctx}");
    errors[0].to_string()
}

/// A database of levels 0..=TOP under a fresh folder.
fn small_db() -> (TempDir, Database) {
    let tmp = TempDir::new().unwrap();
    let db = crate::common::build_db(tmp.path(), Rules::Awari, 6, TOP);
    (tmp, db)
}

fn dir_arg(tmp: &TempDir) -> String {
    tmp.path().to_str().unwrap().to_string()
}

/// Level `n` counted here without the stats code: every position unranked and probed.
fn recount(db: &Database, n: usize) -> Vec<u64> {
    let index = Index::new(6, n).unwrap();
    let mut counts = vec![0u64; 2 * n + 1];
    for r in 0..index.level_size(n) {
        let v = db.probe(&index.unrank(n, r)).unwrap() as i64;
        assert!(v.unsigned_abs() as usize <= n, "level {n} rank {r}: {v}");
        counts[(v + n as i64) as usize] += 1;
    }
    counts
}

fn library_stats(root: &Path) -> Vec<LevelStats> {
    database_stats(root, Rules::Awari, 6, None, |_| {}).unwrap()
}

#[test]
fn stats_equal_an_independent_recount() {
    let (tmp, db) = small_db();
    let stats = library_stats(tmp.path());
    assert_eq!(stats.len(), TOP + 1, "every level present, from 0");
    let index = Index::new(6, TOP).unwrap();
    for (n, s) in stats.iter().enumerate() {
        assert_eq!(s.seeds, n);
        assert_eq!(s.counts.len(), 2 * n + 1);
        assert_eq!(
            s.positions(),
            index.level_size(n),
            "level {n}: histogram sum"
        );
        assert_eq!(s.won() + s.drawn() + s.lost(), s.positions(), "level {n}");
        assert_eq!(s.counts, recount(&db, n), "level {n}: histogram");
        // The builder's own tally of won, drawn and lost, from the file's bytes.
        let payload = db.level(n).unwrap().payload(&[]).unwrap();
        let b = awari::expert::Outcomes::of(&payload);
        assert_eq!((s.won(), s.drawn(), s.lost()), (b.won, b.drawn, b.lost));
        let sum: i64 = payload.iter().map(|&x| x as i8 as i64).sum();
        assert!((s.mean() - sum as f64 / payload.len() as f64).abs() < 1e-12);
        let (max, min) = (s.max().unwrap(), s.min().unwrap());
        let hi = payload.iter().map(|&x| x as i8).max().unwrap() as i32;
        let lo = payload.iter().map(|&x| x as i8).min().unwrap() as i32;
        assert_eq!(max, (hi, s.count(hi)));
        assert_eq!(min, (lo, s.count(lo)));
    }
    // Known numbers: level 0 is the empty board, a draw; of the 12 one-seed positions the
    // side to move wins 5 (+1) and loses 7 (-1); level 10 has 351,351 positions.
    assert_eq!(stats[0].counts, vec![1]);
    assert_eq!(stats[1].counts, vec![7, 0, 5]);
    assert_eq!(stats[10].positions(), 351_351);
    let total = LevelStats::total(&stats);
    assert_eq!(
        total.positions(),
        (0..=TOP).map(|n| index.level_size(n)).sum::<u64>()
    );

    // The text table says the same: one row per level, then the total.
    let out = ok(&["stats", "--dir", &dir_arg(&tmp)]);
    let rows: Vec<Vec<&str>> = out
        .lines()
        .skip(1)
        .take(TOP + 2)
        .map(|l| l.split_whitespace().collect())
        .collect();
    for (row, s) in rows.iter().zip(stats.iter().chain([&total])) {
        let (max, min) = (s.max().unwrap(), s.min().unwrap());
        let want = [
            group(s.positions()),
            format!("{:.2}", s.percent(s.won())),
            format!("{:.2}", s.percent(s.drawn())),
            format!("{:.2}", s.percent(s.lost())),
            format!("{:+.3}", s.mean()),
            format!("{:+}", max.0),
            format!("({})", group(max.1)),
            format!("{:+}", min.0),
            format!("({})", group(min.1)),
        ];
        assert_eq!(row[1..], want, "row {row:?}\n{out}");
    }
    assert_eq!(rows[TOP + 1][0], "total", "{out}");
    assert!(out.contains("values from -10 to +10"), "{out}");

    // A range: only those levels.
    let out = ok(&["stats", "--dir", &dir_arg(&tmp), "--levels", "5..=7"]);
    let firsts: Vec<&str> = out
        .lines()
        .skip(1)
        .take(4)
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(firsts, ["5", "6", "7", "total"], "{out}");
}

/// The contents of the SVG's `<text>` elements, trimmed.
fn svg_texts(svg: &str) -> Vec<String> {
    svg.split("<text")
        .skip(1)
        .map(|t| {
            let body = &t[t.find('>').unwrap() + 1..t.find("</text>").unwrap()];
            body.trim().to_string()
        })
        .collect()
}

#[test]
fn plot_writes_a_labelled_svg() {
    let (tmp, _db) = small_db();
    let out_dir = TempDir::new().unwrap();
    let svg_path = out_dir.path().join("out.svg");
    ok(&[
        "stats",
        "--dir",
        &dir_arg(&tmp),
        "--plot",
        svg_path.to_str().unwrap(),
    ]);
    let svg = std::fs::read_to_string(&svg_path).unwrap();
    assert!(svg.len() > 20_000, "{} bytes", svg.len());
    assert!(svg.starts_with("<svg") || svg.starts_with("<?xml"));
    assert!(svg.trim_end().ends_with("</svg>"));
    let texts = svg_texts(&svg);
    for want in [
        "Awari 2x6: outcome for the side to move by seeds on the board",
        "level: seeds on the board",
        "positions of the level",
        "value (seeds)",
        "won",
        "drawn",
        "lost",
        "mean value",
        "100%",
        "0%",
    ] {
        assert!(
            texts.iter().any(|t| t == want),
            "no text {want:?} in {texts:?}"
        );
    }
    // Every level on the x axis.
    for n in 0..=TOP {
        assert!(texts.contains(&n.to_string()), "no level {n} label");
    }
    // A heat-map cell per value held by some position, a bar per non-empty share, and
    // more: the rectangles are there.
    let stats = library_stats(tmp.path());
    let cells: usize = stats
        .iter()
        .map(|s| s.counts.iter().filter(|&&c| c > 0).count())
        .sum();
    assert!(svg.matches("<rect").count() > cells, "too few rectangles");

    // Only SVG: a .png is refused before anything is read, and no file appears.
    let png = out_dir.path().join("out.png");
    let e = error_line(&[
        "stats",
        "--dir",
        &dir_arg(&tmp),
        "--plot",
        png.to_str().unwrap(),
    ]);
    assert!(e.contains("only SVG"), "{e}");
    assert!(!png.exists());
    // A folder that does not exist: said before the levels are read.
    let lost = out_dir.path().join("no-such-folder").join("out.svg");
    let e = error_line(&[
        "stats",
        "--dir",
        &dir_arg(&tmp),
        "--plot",
        lost.to_str().unwrap(),
    ]);
    assert!(e.contains("does not exist"), "{e}");
}

#[test]
fn json_matches_the_library_and_packed_levels() {
    let (tmp, _db) = small_db();
    let stats = library_stats(tmp.path());
    let out = ok(&["stats", "--dir", &dir_arg(&tmp), "--json"]);
    let doc: Value = serde_json::from_str(&out).expect("one JSON object");
    assert_eq!(doc["rules"], "awari");
    assert_eq!(doc["pits"], 6);
    let levels = doc["levels"].as_array().unwrap();
    assert_eq!(levels.len(), stats.len());
    for (j, s) in levels.iter().zip(&stats) {
        assert_eq!(j["seeds"], s.seeds);
        assert_eq!(j["positions"], s.positions());
        assert_eq!(j["won"], s.won());
        assert_eq!(j["drawn"], s.drawn());
        assert_eq!(j["lost"], s.lost());
        let pct: f64 = ["won_percent", "drawn_percent", "lost_percent"]
            .iter()
            .map(|k| j[k].as_f64().unwrap())
            .sum();
        assert!((pct - 100.0).abs() < 1e-9, "{pct}");
        assert!((j["mean"].as_f64().unwrap() - s.mean()).abs() < 1e-12);
        let (max, min) = (s.max().unwrap(), s.min().unwrap());
        assert_eq!(j["max"]["value"], max.0);
        assert_eq!(j["max"]["count"], max.1);
        assert_eq!(j["min"]["value"], min.0);
        assert_eq!(j["min"]["count"], min.1);
        let hist: Vec<(i64, u64)> = j["histogram"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| (h["value"].as_i64().unwrap(), h["count"].as_u64().unwrap()))
            .collect();
        let want: Vec<(i64, u64)> = s.histogram().map(|(v, c)| (v as i64, c)).collect();
        assert_eq!(hist, want, "level {}", s.seeds);
    }
    let total = LevelStats::total(&stats);
    assert_eq!(doc["total"]["positions"], total.positions());
    assert_eq!(doc["total"]["won"], total.won());
    assert_eq!(
        doc["total"]["histogram"].as_array().unwrap().len(),
        2 * TOP + 1
    );

    // Packed levels give the same numbers.
    ok(&[
        "pack",
        "--dir",
        &dir_arg(&tmp),
        "--all",
        "--remove-raw",
        "--block-size",
        "4096",
    ]);
    assert!(!tmp.path().join("awari-6/level-010.awl").exists());
    let packed = ok(&["stats", "--dir", &dir_arg(&tmp), "--json"]);
    let packed: Value = serde_json::from_str(&packed).unwrap();
    assert_eq!(packed["levels"], doc["levels"]);
    assert_eq!(library_stats(tmp.path()), stats);
}

#[test]
fn missing_database_names_the_build_command() {
    let empty = TempDir::new().unwrap();
    let e = error_line(&["stats", "--dir", &dir_arg(&empty)]);
    assert!(e.contains("awari build"), "{e}");
    assert!(e.contains("no levels in"), "{e}");

    // A range above what is built names the missing level and the build that adds it.
    let (tmp, _db) = small_db();
    let e = error_line(&["stats", "--dir", &dir_arg(&tmp), "--levels", "8..=12"]);
    assert!(e.contains("level 11"), "{e}");
    assert!(e.contains("awari build --max-seeds 12"), "{e}");

    // A damaged level is refused by name, not counted.
    let path = tmp.path().join("awari-6/level-006.awl");
    let mut bytes = std::fs::read(&path).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(&path, bytes).unwrap();
    let e = error_line(&["stats", "--dir", &dir_arg(&tmp), "--json"]);
    assert!(e.contains("level-006.awl"), "{e}");
}

/// `--dtc`: the distances of each level counted from its table equal a recount by probing
/// every position (`Database::distance`), in the text, the JSON and the chart; a level
/// without a table is named in one line with the command that makes it.
#[test]
fn distances_equal_a_recount_by_probing() {
    let (tmp, _db) = small_db();
    let dir = dir_arg(&tmp);
    let e = error_line(&["stats", "--dir", &dir, "--dtc"]);
    assert!(e.contains("level 0 of") && e.contains("awari dtc"), "{e}");
    ok(&["dtc", "--dir", &dir, "--levels", "0..=8"]);
    let e = error_line(&["stats", "--dir", &dir, "--dtc"]);
    assert!(
        e.contains("level 9 of") && e.contains("no distance table"),
        "{e}"
    );
    let out = ok(&[
        "stats", "--dir", &dir, "--dtc", "--levels", "0..=8", "--json",
    ]);
    let doc: Value = serde_json::from_str(&out).unwrap();
    let db = Database::open(tmp.path(), Rules::Awari, 6).unwrap();
    let levels = doc["distances"].as_array().unwrap();
    assert_eq!(levels.len(), 9);
    for (n, l) in levels.iter().enumerate() {
        let index = Index::new(6, n).unwrap();
        let mut counts = vec![0u64];
        for r in 0..index.level_size(n) {
            let d = db.distance(&index.unrank(n, r)).unwrap().unwrap_or(0) as usize;
            if counts.len() <= d {
                counts.resize(d + 1, 0);
            }
            counts[d] += 1;
        }
        let histogram: Vec<u64> = l["histogram"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_u64().unwrap())
            .collect();
        assert_eq!(histogram, counts[1..], "level {n}");
        assert_eq!(l["longest"], counts.len() - 1, "level {n}");
        assert_eq!(
            l["with_distance"],
            counts[1..].iter().sum::<u64>(),
            "level {n}"
        );
        assert_eq!(l["positions"], index.level_size(n), "level {n}");
    }
    // Level 8's row in the text, and the chart's third panel.
    let svg = tmp.path().join("d.svg");
    let text = ok(&[
        "stats",
        "--dir",
        &dir,
        "--dtc",
        "--levels",
        "0..=8",
        "--plot",
        svg.to_str().unwrap(),
    ]);
    let l8 = &levels[8];
    let row = text
        .lines()
        .skip_while(|l| !l.starts_with("distances to conversion"))
        .find(|l| l.split_whitespace().next() == Some("8"))
        .unwrap();
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(
        cells[2],
        group(l8["with_distance"].as_u64().unwrap()),
        "{row}"
    );
    assert_eq!(cells[3], l8["longest"].to_string(), "{row}");
    assert_eq!(cells[5], l8["median"].to_string(), "{row}");
    let texts = svg_texts(&std::fs::read_to_string(&svg).unwrap());
    for want in ["distance (plies)", "longest", "mean"] {
        assert!(texts.iter().any(|t| t == want), "no text {want:?}");
    }
}
