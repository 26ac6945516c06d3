//! `awari query`: its one-line refusals, damaged, truncated and foreign levels refused by
//! name, the JSON shape, principal variations, `--stdin` and the text answer.

use std::fs;

use serde_json::Value;

use super::{query_fail, with_position, Db, FIVE, RB_EXAMPLE, THREE};
use crate::common::{awari, awari_with_input, ok, text};

#[test]
fn query_with_the_wrong_number_of_pits() {
    let db = Db::built(6);
    let e = db.query_fail("1 1 1 1 1 1 0 0 0 0 0");
    assert!(e.contains("12") && e.contains("11"), "{e}");
    let root = db.root_str();
    let args = with_position(
        &["query", "--dir", &root, "--pits", "4"],
        "1 1 1 1 1 1 0 0 0 0 0 0",
    );
    let e = query_fail(&args);
    assert!(e.contains('8') && e.contains("12"), "{e}");
    // No counts at all is a usage error of its own, still without a panic.
    let out = awari(&["query", "--dir", &root]);
    assert!(!out.status.success());
    assert!(!text(&out.stderr).contains("panicked"));
}

#[test]
fn query_with_a_bad_count() {
    let db = Db::built(6);
    let e = db.query_fail("1 1 1 1 1 x 0 0 0 0 0 0");
    assert!(e.contains("'x'") && e.contains("not a number"), "{e}");
    let e = db.query_fail("1 1 1 1 1 -1 0 0 0 0 0 0");
    assert!(e.contains("'-1'") && e.contains("negative"), "{e}");
    let e = db.query_fail("1 1 1 1 1 99999999999 0 0 0 0 0 0");
    assert!(e.contains("99999999999"), "{e}");
    let e = db.query_fail("1 1 1 1 1 1 0 0 0 0 0 200");
    assert!(e.contains("206") && e.contains("127"), "{e}");
}

#[test]
fn query_above_the_built_levels_says_what_to_build() {
    let db = Db::built(6);
    let dir = format!("--dir {}", db.root_str());
    let e = db.query_fail(RB_EXAMPLE);
    assert!(e.contains("level 16 "), "{e}");
    assert!(e.contains("awari build --max-seeds 16"), "{e}");
    assert!(e.contains(&dir), "the command names the folder: {e}");

    // The first move captures 2 (child at level 8), but the position has 10 seeds: the
    // command must build what the query needs, not only the first missing level.
    let pos = "6 0 0 0 0 0 1 0 0 0 0 3";
    let e = db.query_fail(pos);
    assert!(e.contains("level 8 "), "{e}");
    let start = e.find('`').expect("a command in backquotes") + 1;
    let len = e[start..].find('`').unwrap();
    let command = &e[start..start + len];
    assert!(command.starts_with("awari build --max-seeds 10"), "{e}");
    // Running that command makes the query work.
    let words: Vec<&str> = command.split_whitespace().skip(1).collect();
    ok(&words);
    let a = db.query_json(pos);
    assert_eq!(a["seeds"], 10);
}

#[test]
fn start_position_needs_level_48() {
    let db = Db::built(8);
    let e = db.query_fail("4 4 4 4 4 4 4 4 4 4 4 4");
    assert!(e.contains("level 48 "), "{e}");
    assert!(e.contains("awari build --max-seeds 48"), "{e}");
}

#[test]
fn unstored_position_is_answered_from_its_children() {
    let db = Db::built(8);
    // Every opponent pit holds a seed: not stored, answered from its children.
    let a = db.query_json("0 0 0 0 0 1 1 1 1 1 1 1");
    assert_eq!(a["stored"], false, "{a}");
    assert_eq!(a["seeds"], 7);
    let moves = a["moves"].as_array().unwrap();
    assert_eq!(moves.len(), 1, "{a}");
    let m = &moves[0];
    assert_eq!(
        (m["pit"].as_u64(), m["captured"].as_u64()),
        (Some(5), Some(2))
    );
    // Pit 5 sows into pit 6 and captures its 2 seeds; the child, turned round, is
    // 0 1 1 1 1 1 | 0 0 0 0 0 0, a stored position of 5 seeds.
    let child = db.query_json("0 1 1 1 1 1 0 0 0 0 0 0");
    assert_eq!(child["stored"], true);
    let v = 2 - child["value"].as_i64().unwrap();
    assert_eq!(m["value"].as_i64(), Some(v), "{a}\n{child}");
    assert_eq!(a["value"].as_i64(), Some(v), "{a}");
    assert_eq!(a["best"], serde_json::json!([5]));
}

#[test]
fn damaged_level_is_refused_by_name() {
    let db = Db::built(6);
    let path = db.level("awari", 5);
    let original = fs::read(&path).unwrap();
    let mut bytes = original.clone();
    bytes[4096 + 17] ^= 0x55;
    fs::write(&path, &bytes).unwrap();
    let e = db.query_fail(FIVE);
    assert!(e.contains("level-005.awl"), "{e}");
    assert!(e.contains("damaged"), "{e}");
    // Levels the query does not touch still answer.
    db.query(&[], THREE);
    // A build sees the damage, says so, and rebuilds the level as it was.
    let root = db.root_str();
    let args = ["build", "--dir", &root, "--max-seeds", "6"];
    let out = awari(&args);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("warning: rebuilding level 5") && stderr.contains("damaged"),
        "{stderr}"
    );
    assert!(
        fs::read(&path).unwrap() == original,
        "rebuilt level differs"
    );
    db.query(&[], FIVE);
}

#[test]
fn truncated_level_is_refused_by_name() {
    let db = Db::built(6);
    let path = db.level("awari", 5);
    let bytes = fs::read(&path).unwrap();
    fs::write(&path, &bytes[..bytes.len() - 1]).unwrap();
    let e = db.query_fail(FIVE);
    assert!(
        e.contains("level-005.awl") && e.contains("truncated"),
        "{e}"
    );
    // Shorter than the header, even empty.
    fs::write(&path, b"").unwrap();
    let e = db.query_fail(FIVE);
    assert!(
        e.contains("level-005.awl") && e.contains("truncated"),
        "{e}"
    );
}

#[test]
fn level_of_another_database_is_refused() {
    let db = Db::built(6);
    db.build(&["--max-seeds", "6", "--rules", "oware"]);
    let five = db.level("awari", 5);
    // An oware level in the awari folder.
    fs::copy(db.level("oware", 5), &five).unwrap();
    let e = db.query_fail(FIVE);
    assert!(e.contains("level-005.awl"), "{e}");
    assert!(e.contains("oware") && e.contains("expected awari"), "{e}");
    assert!(e.contains("another database"), "{e}");
    // Level 4 renamed to level 5.
    fs::copy(db.level("awari", 4), &five).unwrap();
    let e = db.query_fail(FIVE);
    assert!(e.contains("level-005.awl"), "{e}");
    assert!(e.contains("level 4") && e.contains("expected 5"), "{e}");
    assert!(e.contains("another database"), "{e}");
}

#[test]
fn query_json_shape() {
    let db = Db::built(8);
    let a = db.query_json("1 1 1 1 1 2 0 0 0 0 0 0");
    for key in [
        "rules",
        "pits",
        "seeds",
        "value",
        "stored",
        "moves",
        "best",
        "game_over",
    ] {
        assert!(a.get(key).is_some(), "no {key}: {a}");
    }
    assert_eq!(a["rules"], "awari");
    assert_eq!(
        a["pits"],
        serde_json::json!([1, 1, 1, 1, 1, 2, 0, 0, 0, 0, 0, 0])
    );
    assert_eq!(a["seeds"], 7);
    assert_eq!(a["stored"], true);
    assert!(a["game_over"].is_null());
    assert!(a.get("line").is_none());
    let value = a["value"].as_i64().unwrap();
    let moves = a["moves"].as_array().unwrap();
    assert!(!moves.is_empty());
    let mut best = Vec::new();
    for m in moves {
        for key in ["pit", "value", "captured", "ends_game"] {
            assert!(m.get(key).is_some(), "no {key} in a move: {a}");
        }
        assert!(m["value"].as_i64().unwrap() <= value);
        if m["value"].as_i64() == Some(value) {
            best.push(m["pit"].clone());
        }
    }
    assert_eq!(a["best"], Value::Array(best));

    // With --line: a principal variation to the end of the game that scores the value.
    let l = line_of(&db, "1 1 0 0 0 0 0 0 0 0 0 1");
    assert_eq!(l["value"], 3);
    let line = &l["line"];
    assert_eq!(line["plies"].as_array().unwrap().len(), 3, "{l}");
    for ply in line["plies"].as_array().unwrap() {
        for key in ["player", "pit", "captured", "after"] {
            assert!(ply.get(key).is_some(), "no {key} in a ply: {l}");
        }
    }
    assert!(line["end"].is_string(), "{l}");
    assert_eq!(line["score"], serde_json::json!([3.0, 0.0]), "{l}");

    // A finished game.
    let g = db.query_json("0 0 0 0 0 0 1 1 0 0 0 0");
    assert_eq!(g["value"], -2);
    assert!(g["game_over"].is_string(), "{g}");
    assert_eq!(g["moves"], serde_json::json!([]));
}

fn line_of(db: &Db, position: &str) -> Value {
    serde_json::from_str(&db.query(&["--json", "--line"], position)).unwrap()
}

/// The score of a principal variation is the value: `score[0] - score[1] == value`
/// (here +7, which a greedy line would miss by going round a cycle).
#[test]
fn principal_variation_realises_the_value() {
    let db = Db::built(8);
    for position in ["1 1 0 0 0 0 0 0 0 0 0 1", "1 1 1 1 1 2 0 0 0 0 0 0"] {
        let l = line_of(&db, position);
        let score = l["line"]["score"].as_array().unwrap();
        let (s0, s1) = (score[0].as_f64().unwrap(), score[1].as_f64().unwrap());
        assert_eq!(s0 + s1, l["seeds"].as_f64().unwrap(), "{l}");
        assert_eq!(s0 - s1, l["value"].as_f64().unwrap(), "{l}");
    }
}

#[test]
fn query_stdin_answers_line_by_line() {
    let db = Db::built(8);
    let root = db.root_str();
    let out = awari_with_input(
        &["query", "--stdin", "--dir", &root],
        b"1 1 1 1 1 2 0 0 0 0 0 0\n1 1 x 0 0 0 0 0 0 0 0 0\n0,0,0,0,0,1,1,1,1,1,1,1\n",
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let lines: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3, "{stdout}");
    assert_eq!(lines[0]["seeds"], 7);
    assert!(lines[0].get("error").is_none());
    assert!(
        lines[1]["error"].as_str().unwrap().contains("'x'"),
        "{stdout}"
    );
    assert!(lines[1].get("value").is_none());
    assert_eq!(lines[2]["stored"], false);
    assert!(lines[2].get("error").is_none());
    assert_eq!(
        lines[0],
        db.query_json("1 1 1 1 1 2 0 0 0 0 0 0"),
        "--stdin and a single --json query agree"
    );
}

#[test]
fn text_query() {
    let db = Db::built(6);
    let out = db.query(&["--line"], "1 1 0 0 0 0 0 0 0 0 0 1");
    assert!(out.contains("3 seeds: value +3"), "{out}");
    assert!(out.contains("principal variation:"), "{out}");
}
