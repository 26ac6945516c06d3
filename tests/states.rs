//! The solver states and the two ways of reading the lower levels write the same files:
//! every level of each board size below, both rule sets, built the six ways and compared
//! byte for byte (DESIGN.md sections 5.2 and 5.6). The fast state reading at random is
//! the way the golden checksums and the cross-checks hold to.

use std::fs;
use std::path::Path;

use awari::expert::{db_dir, level_path};
use awari::{build, BuildOptions, LevelMethod, Lower, Rules, StateKind};

/// Builds levels `0..=top` under `root` the way asked, and reads every level's file.
fn build_way(
    root: &Path,
    rules: Rules,
    pits: usize,
    top: usize,
    state: StateKind,
    lower: Lower,
) -> Vec<Vec<u8>> {
    let opts = BuildOptions::new(root, rules, pits, top)
        .state(state)
        .lower(lower);
    let reports = build(&opts, |_| {}, |w| panic!("unexpected warning: {w}")).unwrap();
    assert!(reports
        .iter()
        .all(|r| r.way == Some(LevelMethod { state, lower })));
    let dir = db_dir(root, rules, pits);
    (0..=top)
        .map(|n| fs::read(level_path(&dir, n)).unwrap())
        .collect()
}

/// Every way against the fast state reading at random, level by level; the top level
/// holds more than `least` positions.
fn same_files(rules: Rules, pits: usize, top: usize, least: usize) {
    let tmp = tempfile::tempdir().unwrap();
    let ways = [
        (StateKind::Fast, Lower::Random),
        (StateKind::Fast, Lower::Stream),
        (StateKind::Compact, Lower::Random),
        (StateKind::Compact, Lower::Stream),
        (StateKind::Lean, Lower::Random),
        (StateKind::Lean, Lower::Stream),
    ];
    let files: Vec<Vec<Vec<u8>>> = ways
        .iter()
        .enumerate()
        .map(|(k, &(state, lower))| {
            build_way(
                &tmp.path().join(k.to_string()),
                rules,
                pits,
                top,
                state,
                lower,
            )
        })
        .collect();
    for (k, &(state, lower)) in ways.iter().enumerate().skip(1) {
        for (n, (got, want)) in files[k].iter().zip(&files[0]).enumerate() {
            assert!(
                got == want,
                "{rules} P={pits} level {n}: {} state reading {} differs from fast/random",
                state.name(),
                lower.name()
            );
        }
    }
    // Levels with positions of every kind, not a board too small to tell.
    assert!(
        files[0][top].len() > 4096 + least,
        "level {top} is too small"
    );
}

/// The larger boards, minutes in all: left out of the quick tier (`--skip slow::`).
mod slow {
    use super::*;

    /// Levels 0..=17 (level 17: 21 million positions; each level more costs CI about a
    /// minute and a half for nothing the smaller levels do not reach).
    #[test]
    fn six_pits_to_seventeen_seeds() {
        for rules in [Rules::Awari, Rules::Oware] {
            same_files(rules, 6, 17, 100_000);
        }
    }

    #[test]
    fn three_pits_to_forty_seeds() {
        for rules in [Rules::Awari, Rules::Oware] {
            same_files(rules, 3, 40, 100_000);
        }
    }

    /// Levels 0..=24 (level 24: 1.7 million positions). Up to 28 seeds this test was the
    /// slowest of all, a level's thresholds growing with its seeds; three pits go to 40.
    #[test]
    fn four_pits_to_twenty_four_seeds() {
        for rules in [Rules::Awari, Rules::Oware] {
            same_files(rules, 4, 24, 100_000);
        }
    }

    /// Levels 0..=11 (level 11: 7.7 million positions); six pits cross a spilled forward
    /// pass's stripe (2^24 positions) at level 17.
    #[test]
    fn eight_pits_to_eleven_seeds() {
        for rules in [Rules::Awari, Rules::Oware] {
            same_files(rules, 8, 11, 100_000);
        }
    }
}

/// The most seeds the compact state holds: its byte keeps eight codes for positions with
/// no exit (their moves not known won) beside the exits of up to 56 seeds (2 pits: level
/// 56 holds 3,249 positions).
#[test]
fn two_pits_to_fifty_six_seeds() {
    for rules in [Rules::Awari, Rules::Oware] {
        same_files(rules, 2, 56, 3_000);
    }
}

/// Above 56 seeds the compact state is refused before anything is built.
#[test]
fn compact_state_refused_above_fifty_six_seeds() {
    let tmp = tempfile::tempdir().unwrap();
    let opts = BuildOptions::new(tmp.path(), Rules::Awari, 2, 57).state(StateKind::Compact);
    let e = build(&opts, |_| {}, |_| {}).unwrap_err().to_string();
    assert!(
        e.contains("the compact state holds levels of at most 56 seeds"),
        "{e}"
    );
    assert!(!db_dir(tmp.path(), Rules::Awari, 2).exists());
}
