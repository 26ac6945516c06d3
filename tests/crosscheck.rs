//! The builder against the tests' oracle (value iteration from zero) on every position of
//! small levels, for both rule sets, and against the published Romein-Bal example.

use std::collections::{HashMap, VecDeque};

use crate::common::{all_positions, build_db, Oracle};
use awari::expert::{legal_moves, Board, Conversion, Database};
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

/// The reference for distances to conversion: everything reachable from `start` by best
/// moves that stay in its level, then a breadth-first retrograde pass (a winner's distance
/// is 1 + its nearest child's, a loser's 1 + its furthest once all are known). The
/// library searches depth-first instead; both must give the same distances. `None` for
/// a draw, or where a game ends inside the graph (the library counts that as converted).
fn distances(db: &Database, start: &Board) -> Option<HashMap<Board, u32>> {
    let mut id: HashMap<Board, usize> = HashMap::from([(*start, 0)]);
    let mut nodes = vec![*start];
    let (mut winner, mut exit, mut kids) = (Vec::new(), Vec::new(), Vec::<Vec<usize>>::new());
    let mut next = 0;
    while next < nodes.len() {
        let x = nodes[next];
        next += 1;
        let a = db.analyze(&x).unwrap();
        if a.value == 0 || a.game_over.is_some() {
            return None;
        }
        winner.push(a.value > 0);
        let mut has_exit = false;
        let mut ks = Vec::new();
        for (m, mv) in legal_moves(&x, db.rules()).as_slice().iter().zip(&a.moves) {
            if mv.value != a.value {
                continue;
            }
            if !m.stays_in_level() {
                has_exit = true;
                continue;
            }
            ks.push(*id.entry(m.child).or_insert_with(|| {
                nodes.push(m.child);
                nodes.len() - 1
            }));
        }
        exit.push(has_exit);
        kids.push(ks);
    }
    let mut parents = vec![Vec::new(); nodes.len()];
    for (x, ks) in kids.iter().enumerate() {
        for &k in ks {
            parents[k].push(x);
        }
    }
    let mut dist = vec![u32::MAX; nodes.len()];
    let mut left: Vec<usize> = kids.iter().map(Vec::len).collect();
    let mut queue = VecDeque::new();
    for x in 0..nodes.len() {
        if (winner[x] && exit[x]) || (!winner[x] && kids[x].is_empty()) {
            dist[x] = 0;
            queue.push_back(x);
        }
    }
    while let Some(y) = queue.pop_front() {
        for &x in &parents[y] {
            if dist[x] != u32::MAX {
                continue;
            }
            if !winner[x] {
                left[x] -= 1;
                if left[x] > 0 {
                    continue;
                }
            }
            dist[x] = dist[y] + 1;
            queue.push_back(x);
        }
    }
    assert!(
        !dist.contains(&u32::MAX),
        "{start}: a win that never converts"
    );
    Some(nodes.into_iter().zip(dist).collect())
}

/// The depth-first search for distances to conversion against the breadth-first
/// reference, on every won or lost position of levels 0..=max: the same distance for the
/// position and each best in-level child, and the move perfect play makes is the one
/// the reference's distances choose (the winner's nearest, the loser's furthest, lowest
/// pit on ties). One search per level, as a line keeps it; and a search with a tiny
/// limit gives up and still plays a best move.
#[test]
fn distances_to_conversion_match_a_breadth_first_reference() {
    for (pits, rules, max) in [
        (4, Rules::Awari, 9),
        (4, Rules::Oware, 9),
        (3, Rules::Awari, 12),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let db = build_db(dir.path(), rules, pits, max);
        let (mut compared, mut far) = (0u32, 0u32);
        for n in 1..=max {
            let mut conversion = Conversion::new();
            for board in all_positions(pits, n) {
                let a = db.analyze(&board).unwrap();
                if a.game_over.is_some() {
                    continue;
                }
                let m = db.perfect_move(&board, &a, &mut conversion).unwrap();
                assert!(a.best.contains(&m.pit), "{rules} {board}");
                let Some(dist) = distances(&db, &board) else {
                    continue;
                };
                let d = dist[&board];
                assert_eq!(
                    conversion.distance(&db, &board).unwrap(),
                    Some(d),
                    "{rules} {board}"
                );
                let legal = legal_moves(&board, rules);
                let best: Vec<_> = legal
                    .as_slice()
                    .iter()
                    .filter(|k| {
                        let mv = a.moves.iter().find(|mv| mv.pit == k.pit).unwrap();
                        mv.value == a.value
                    })
                    .collect();
                let exit = best.iter().find(|k| !k.stays_in_level());
                let inside = best.iter().filter(|k| k.stays_in_level());
                let want = if a.value > 0 {
                    exit.copied()
                        .or_else(|| inside.min_by_key(|k| dist[&k.child]).copied())
                } else {
                    inside
                        .max_by_key(|k| (dist[&k.child], std::cmp::Reverse(k.pit)))
                        .copied()
                        .or(exit.copied())
                };
                assert_eq!(m.pit, want.unwrap().pit, "{rules} {board}: distance {d}");
                compared += 1;
                far += (d >= 3) as u32;
            }
        }
        assert!(
            compared > 1000 && far > 50,
            "{rules} P={pits}: {compared} compared, {far} at distance 3 or more"
        );
    }
    // A limit of 3 positions: the search gives up on a far position, says so, and the
    // move is still a best one.
    let dir = tempfile::tempdir().unwrap();
    let db = build_db(dir.path(), Rules::Awari, 4, 9);
    let far = (1..=9)
        .flat_map(|n| all_positions(4, n))
        .find(|b| distances(&db, b).is_some_and(|d| d[b] >= 4))
        .expect("a position at distance 4 or more");
    let mut conversion = Conversion::with_limit(3);
    assert_eq!(conversion.distance(&db, &far).unwrap(), None);
    let a = db.analyze(&far).unwrap();
    let m = db.perfect_move(&far, &a, &mut conversion).unwrap();
    assert!(
        a.best.contains(&m.pit),
        "{far}: {} not among {:?}",
        m.pit,
        a.best
    );
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
