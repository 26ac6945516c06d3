//! `awari play` without a terminal, as a script meets it: whole games played through the
//! binary with perfect play on both sides (this test choosing the player's moves with the
//! library), the final score checked against the start position's value; bad input
//! answered and asked again; reproducible weaker play; a missing level named with its
//! build command; with distance tables, games that convert in exactly the distance.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};

use awari::expert::{Board, Conversion, Database};
use awari::Rules;
use tempfile::TempDir;

use crate::common::BIN;

/// What a finished game printed.
struct Transcript {
    text: String,
    /// `[you, database]` from the "score:" line.
    score: [f64; 2],
    my_moves: usize,
}

/// The board as the player sees it, from the drawing's "database" and "you" rows (the
/// database's row is printed right to left).
fn board_from_rows(db_row: &str, my_row: &str, p: usize) -> Board {
    let nums = |s: &str| -> Vec<u32> {
        s.split_whitespace()
            .skip(1)
            .take(p)
            .map(|w| w.parse().unwrap())
            .collect()
    };
    let mut counts = nums(my_row);
    counts.extend(nums(db_row).into_iter().rev());
    Board::from_counts(p, &counts).unwrap()
}

/// Plays a game through the binary; `choose` gives the player's pit (0-based) from the
/// position seen by the player.
fn play(root: &Path, extra: &[&str], mut choose: impl FnMut(&Board) -> u8) -> Transcript {
    let mut child = Command::new(BIN)
        .args(["play", "--dir", root.to_str().unwrap()])
        .args(extra)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    let (mut db_row, mut my_row) = (String::new(), String::new());
    let mut text = String::new();
    let mut my_moves = 0;
    for line in stdout.lines() {
        let line = line.unwrap();
        text += &line;
        text += "\n";
        if line.starts_with("  database ") {
            db_row = line.clone();
        } else if line.starts_with("  you ") {
            my_row = line.clone();
        } else if line.starts_with("your move") {
            let board = board_from_rows(&db_row, &my_row, 6);
            let pit = choose(&board);
            writeln!(stdin, "{}", (b'a' + pit) as char).unwrap();
            my_moves += 1;
            assert!(my_moves < 1000, "endless game:\n{text}");
        }
    }
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "play failed: {err}\n{text}");
    assert!(err.is_empty(), "stderr: {err}");
    let score_line = text
        .lines()
        .find(|l| l.starts_with("score: "))
        .unwrap_or_else(|| panic!("no score in:\n{text}"));
    // "score: you 7, database 5 (margin +2)."
    let words: Vec<&str> = score_line.split([' ', ',']).collect();
    let you: f64 = words[2].parse().unwrap();
    let db: f64 = words[5].parse().unwrap();
    Transcript {
        text,
        score: [you, db],
        my_moves,
    }
}

/// Perfect play for the player, as the database's own choice (progress in won positions).
fn perfect(db: &Database) -> impl FnMut(&Board) -> u8 + '_ {
    let mut conversion = Conversion::new();
    move |b: &Board| {
        let a = db.analyze(b).unwrap();
        db.perfect_move(b, &a, &mut conversion).unwrap().pit
    }
}

#[test]
fn perfect_games_end_at_the_start_value() {
    let dir = TempDir::new().unwrap();
    let mut repeats = 0;
    for rules in [Rules::Awari, Rules::Oware] {
        let db = crate::common::build_db(dir.path(), rules, 6, 12);
        let start = Board::start(6, 1);
        let v = db.probe(&start).unwrap() as f64;
        for (first, sign) in [("me", 1.0), ("db", -1.0)] {
            let t = play(
                dir.path(),
                &[
                    "--rules",
                    rules.name(),
                    "--seeds-per-pit",
                    "1",
                    "--first",
                    first,
                ],
                perfect(&db),
            );
            assert_eq!(
                t.score[0] - t.score[1],
                sign * v,
                "{rules} {first}:\n{}",
                t.text
            );
            assert_eq!(t.score[0] + t.score[1], 12.0);
            assert!(t.text.contains("you never gave a seed away"), "{}", t.text);
            assert!(!t.text.contains("the database gave away"), "{}", t.text);
            assert!(t.text.contains("game over: "), "{}", t.text);
            assert!(t.my_moves >= 2, "{}", t.text);
            repeats += t.text.contains("occurred for the third time") as usize;
        }
    }
    // Perfect play from this start ends in an endless cycle: the repetition rule is met.
    assert!(repeats >= 2, "{repeats}");
}

/// Won and lost positions: the winner must make progress for the score to reach the
/// value (with best moves alone a won game can circle until the third repetition).
#[test]
fn won_and_lost_starts_are_converted() {
    let dir = TempDir::new().unwrap();
    let db = crate::common::build_db(dir.path(), Rules::Awari, 6, 11);
    let mut games = 0;
    for (i, b) in crate::common::all_positions(6, 11).iter().enumerate() {
        if i % 5_000 != 0 || !b.is_stored() {
            continue;
        }
        let a = db.analyze(b).unwrap();
        if a.value == 0 || a.game_over.is_some() {
            continue;
        }
        let pits: Vec<String> = b.pits().iter().map(|c| c.to_string()).collect();
        let mut args = vec!["--position"];
        args.extend(pits.iter().map(|s| s.as_str()));
        let t = play(dir.path(), &args, perfect(&db));
        assert_eq!(t.score[0] - t.score[1], a.value as f64, "{b}:\n{}", t.text);
        games += 1;
    }
    assert!(games >= 10, "only {games} games");
}

/// The ply of a transcript at which the game first converts: the first move that
/// captures ("you play f, captures 3") or, without one, the last move before "game over".
fn first_conversion(text: &str) -> usize {
    let mut plies = 0;
    for l in text.lines() {
        if l.starts_with("database plays") || l.starts_with("you play") {
            plies += 1;
            if l.contains(", captures") {
                return plies;
            }
        } else if l.starts_with("game over") {
            return plies;
        }
    }
    panic!("no conversion in:\n{text}")
}

/// With distance tables (`awari dtc`), the database plays by them: from won and lost
/// positions, against the player's perfect play (by the tables too: the winner the
/// nearest value-keeping move, the loser the farthest), the game first converts at
/// exactly the position's distance and ends at its value.
#[test]
fn games_by_the_tables_convert_in_the_distance() {
    let dir = TempDir::new().unwrap();
    crate::common::build_levels(dir.path(), Rules::Oware, 6, 11);
    let root = dir.path().to_str().unwrap();
    crate::common::ok(&["dtc", "--dir", root, "--rules", "oware"]);
    let db = Database::open(dir.path(), Rules::Oware, 6).unwrap();
    let (mut won, mut lost, mut longest) = (0, 0, 0);
    for (i, b) in crate::common::all_positions(6, 11).iter().enumerate() {
        if i % 3_001 != 0 || !b.is_stored() {
            continue;
        }
        let Some(d) = db.distance(b).unwrap() else {
            continue;
        };
        let value = db.probe(b).unwrap() as f64;
        let pits: Vec<String> = b.pits().iter().map(|c| c.to_string()).collect();
        let mut args = vec!["--rules", "oware", "--first", "db", "--position"];
        args.extend(pits.iter().map(|s| s.as_str()));
        let t = play(dir.path(), &args, perfect(&db));
        assert_eq!(t.score[1] - t.score[0], value, "{b}:\n{}", t.text);
        assert_eq!(first_conversion(&t.text), d as usize, "{b}:\n{}", t.text);
        (won, lost) = if value > 0.0 {
            (won + 1, lost)
        } else {
            (won, lost + 1)
        };
        longest = longest.max(d);
    }
    assert!(
        won >= 5 && lost >= 5 && longest >= 8,
        "{won} won, {lost} lost, longest {longest}"
    );
}

#[test]
fn bad_input_asks_again() {
    let dir = TempDir::new().unwrap();
    crate::common::build_db(dir.path(), Rules::Awari, 6, 6);
    // Awari: 'a' would leave the empty opponent row empty while 'f' feeds it.
    let input =
        "z\n0\n7\n-1\nfoo\n\n99999999999999999999999\n\u{e9}\nb\na\nhint\nundo\nf\nundo\nquit\n";
    let root = dir.path().to_str().unwrap();
    let mut args = vec!["play", "--dir", root, "--position"];
    args.extend("1 0 0 0 0 1 0 0 0 0 0 0".split(' '));
    let out = crate::common::awari_with_input(&args, input.as_bytes());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for want in [
        "no pit 'z'",
        "no pit '0'",
        "no pit '7'",
        "'-1' is not a move",
        "'foo' is not a move",
        "'99999999999999999999999' is not a move",
        "'\u{e9}' is not a move",
        "b: that pit is empty",
        "a: that move leaves the opponent without seeds",
        "  f     0  best",
        "nothing to take back",
        "you play f",
        "took back your last move and the reply",
        "game abandoned",
    ] {
        assert!(text.contains(want), "missing {want:?} in:\n{text}");
    }
    // Every command line was read once and echoed.
    assert_eq!(
        text.matches("\n> ").count(),
        input.lines().count(),
        "{text}"
    );
}

#[test]
fn weaker_play_is_reproducible_and_gives_seeds_away() {
    let dir = TempDir::new().unwrap();
    let db = crate::common::build_db(dir.path(), Rules::Awari, 6, 12);
    let mut given = 0;
    for seed in ["1", "2", "3"] {
        let args = ["--seeds-per-pit", "1", "--strength", "0", "--seed", seed];
        let a = play(dir.path(), &args, perfect(&db));
        let b = play(dir.path(), &args, perfect(&db));
        assert_eq!(a.text, b.text);
        assert!(a.text.contains(&format!("--seed {seed}")), "{}", a.text);
        // The player never errs, so the margin is at least the start value (0).
        assert!(a.score[0] - a.score[1] >= 0.0, "{}", a.text);
        if a.text.contains("the database gave away") {
            given += 1;
        }
    }
    assert!(
        given >= 2,
        "random play gave nothing away in {given} of 3 games"
    );
}

#[test]
fn a_missing_level_names_the_build() {
    let dir = TempDir::new().unwrap();
    crate::common::build_db(dir.path(), Rules::Awari, 6, 8);
    let root = dir.path().to_str().unwrap();
    let out = crate::common::awari(&["play", "--dir", root, "--seeds-per-pit", "2"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("error: level 24 "), "{err}");
    assert!(err.contains("awari build --max-seeds 24"), "{err}");
    // Without --seeds-per-pit and with nothing big enough built: the smallest start.
    let out = crate::common::awari(&["play", "--dir", root]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("awari build --max-seeds 12"), "{err}");
}

/// Over the real positions of a level, the seeds the database gives away per move (the
/// exact expectation under its move weights) fall steadily, about linearly, as strength
/// rises.
#[test]
fn loss_per_move_falls_with_strength() {
    let dir = TempDir::new().unwrap();
    let db = crate::common::build_db(dir.path(), Rules::Awari, 6, 10);
    let mut values = Vec::new();
    for b in crate::common::all_positions(6, 10) {
        let a = db.analyze(&b).unwrap();
        if a.moves.len() > 1 {
            values.push(a.moves.iter().map(|m| m.value).collect::<Vec<i8>>());
        }
    }
    let mut last = f64::INFINITY;
    let mut uniform = 0.0;
    for s in [0u8, 10, 25, 50, 75, 90, 100] {
        let loss: f64 = values
            .iter()
            .map(|v| {
                let w = awari::expert::play::move_weights(v, s);
                let best = *v.iter().max().unwrap();
                let total: f64 = w.iter().sum();
                v.iter()
                    .zip(&w)
                    .map(|(&x, &w)| (best - x) as f64 * w / total)
                    .sum::<f64>()
            })
            .sum::<f64>()
            / values.len() as f64;
        println!("strength {s:>3}: {loss:.3} seeds lost per move");
        assert!(loss < last, "strength {s}: {loss} not below {last}");
        if s == 0 {
            uniform = loss;
        }
        // About linear in strength: within a fifth of the uniform loss of the line.
        let line = uniform * (100 - s) as f64 / 100.0;
        assert!(
            (loss - line).abs() < 0.2 * uniform,
            "strength {s}: {loss} vs {line}"
        );
        last = loss;
    }
    assert_eq!(last, 0.0);
}

#[test]
fn the_database_refuses_to_move_out_of_turn() {
    use awari::expert::play::{Game, Side};
    let dir = TempDir::new().unwrap();
    let db = crate::common::build_db(dir.path(), Rules::Awari, 6, 6);
    let start = Board::from_counts(6, &[1, 1, 1, 0, 0, 0, 1, 1, 1, 0, 0, 0]).unwrap();
    let mut game = Game::new(&db, start, Side::Me, 100, 1).unwrap();
    let e = game.play_db().unwrap_err().to_string();
    assert!(e.contains("the player's turn"), "{e}");
}
