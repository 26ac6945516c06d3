//! The builder against the tests' oracle (value iteration from zero) on every position of
//! small levels, for both rule sets, and against the published Romein-Bal example.

use crate::common::{build_db, Oracle};
use awari::Rules;

/// Every position of levels 0..=max, stored ones read from the files and the others
/// answered from their children, equals the oracle.
fn check(pits: usize, rules: Rules, max: usize) {
    let dir = tempfile::tempdir().unwrap();
    let db = build_db(dir.path(), rules, pits, max);
    let oracle = Oracle::solve(pits, rules, max);
    let mut checked = 0u64;
    let mut nonzero = 0u64;
    for (n, level) in oracle.levels.iter().enumerate() {
        let mut stored = 0u64;
        for (board, &want) in level {
            let got = db.probe(board).unwrap();
            assert_eq!(
                got, want,
                "{rules} P={pits} position {board}: builder {got}, oracle {want}"
            );
            if board.is_stored() {
                stored += 1;
            }
            checked += 1;
            nonzero += (want != 0) as u64;
        }
        assert_eq!(stored, db.index().level_size(n), "level {n} size");
    }
    // The comparison must have bite: many non-zero values, and value iteration needed
    // real sweeps on the larger levels.
    assert!(nonzero * 2 > checked, "{nonzero} of {checked} non-zero");
    assert!(
        *oracle.sweeps.iter().max().unwrap() > 5,
        "{:?}",
        oracle.sweeps
    );
}

#[test]
fn six_pits_awari_levels_0_to_12() {
    check(6, Rules::Awari, 12);
}

#[test]
fn six_pits_oware_levels_0_to_12() {
    check(6, Rules::Oware, 12);
}

#[test]
fn three_pits_levels_0_to_16_both_rules() {
    check(3, Rules::Awari, 16);
    check(3, Rules::Oware, 16);
}

#[test]
fn four_pits_levels_0_to_16_both_rules() {
    check(4, Rules::Awari, 16);
    check(4, Rules::Oware, 16);
}

#[test]
fn two_and_five_pits_small_levels() {
    for rules in [Rules::Awari, Rules::Oware] {
        check(2, rules, 20);
        check(5, rules, 10);
    }
}

#[test]
fn the_rules_differ_where_they_should() {
    // Under Oware the grand slam and the game end without feeding change values; a
    // database of one rule set must not equal the other's.
    let a = Oracle::solve(4, Rules::Awari, 8);
    let o = Oracle::solve(4, Rules::Oware, 8);
    let differ = a.levels[8]
        .iter()
        .filter(|(b, v)| o.levels[8][b] != **v)
        .count();
    assert!(differ > 100, "only {differ} positions differ");
}

/// The public Romein-Bal lookup tool prints, for 1 1 1 1 1 2 4 2 3 0 0 0 (awari rules),
/// value 0 and move values -1 -1 -2 -2 -2 0.
#[test]
fn published_romein_bal_example() {
    let dir = tempfile::tempdir().unwrap();
    let db = build_db(dir.path(), Rules::Awari, 6, 16);
    let board = db.board(&[1, 1, 1, 1, 1, 2, 4, 2, 3, 0, 0, 0]).unwrap();
    let a = db.analyze(&board).unwrap();
    assert_eq!(a.value, 0);
    let values: Vec<i8> = a.moves.iter().map(|m| m.value).collect();
    assert_eq!(values, [-1, -1, -2, -2, -2, 0]);
    assert_eq!(a.best, [5]);
    // A principal variation scores exactly the value.
    let line = db.line(&board, 10_000).unwrap();
    assert_eq!(line.score[0] - line.score[1], 0.0, "{line:?}");
}

/// Minutes together: left out of the quick tier (`--skip slow::`, GUIDE.md "Testing").
mod slow {
    use super::*;

    /// A principal variation realises the value exactly: on every 61st position of levels
    /// 0..=10 (P = 4, both rule sets) and of levels 0..=8 (P = 6, awari).
    #[test]
    fn principal_variations_score_the_value() {
        for (pits, rules, max) in [
            (4, Rules::Awari, 10),
            (4, Rules::Oware, 10),
            (6, Rules::Awari, 8),
        ] {
            let dir = tempfile::tempdir().unwrap();
            let db = build_db(dir.path(), rules, pits, max);
            let mut won = 0;
            for n in 0..=max {
                for board in crate::common::all_positions(pits, n)
                    .into_iter()
                    .step_by(61)
                {
                    let v = db.probe(&board).unwrap();
                    let line = db.line(&board, 100_000).unwrap();
                    assert_eq!(line.score[0] + line.score[1], n as f64, "{board}: {line:?}");
                    assert_eq!(
                        line.score[0] - line.score[1],
                        v as f64,
                        "{rules} {board}: {line:?}"
                    );
                    won += (v != 0) as u32;
                }
            }
            assert!(won > 300, "{won}");
        }
    }
}
