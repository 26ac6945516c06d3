//! The shared set-up of the integration tests, and their own solver, the oracle (named
//! apart from the library's `expert::reference`, which `awari variants` uses): value
//! iteration from zero (DESIGN.md section 2(b)) over every position of a level, stored or
//! not, with positions found by a hash map (no ranking, no level files, no un-moves). It
//! shares only the rules code with the builder.

use std::collections::HashMap;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use awari::expert::{legal_moves, Board, Database};
use awari::{build, BuildOptions, LevelReport, Rules};
use rayon::prelude::*;

/// The `awari` binary of this build.
pub const BIN: &str = env!("CARGO_BIN_EXE_awari");

/// Builds levels `0..=max` under `root` with the builder (complete levels already there
/// are kept); a report per level.
pub fn build_levels(root: &Path, rules: Rules, pits: usize, max: usize) -> Vec<LevelReport> {
    let opts = BuildOptions::new(root, rules, pits, max);
    build(&opts, |_| {}, |w| panic!("unexpected warning: {w}")).unwrap()
}

/// Builds levels `0..=max` under `root` with the builder and opens the database.
pub fn build_db(root: &Path, rules: Rules, pits: usize, max: usize) -> Database {
    build_levels(root, rules, pits, max);
    Database::open(root, rules, pits).unwrap()
}

/// Runs the binary with nothing on its standard input.
pub fn awari(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run the awari binary")
}

/// Runs the binary with `input` on its standard input.
pub fn awari_with_input(args: &[&str], input: &[u8]) -> Output {
    let mut child = Command::new(BIN)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run the awari binary");
    child.stdin.take().unwrap().write_all(input).unwrap();
    child.wait_with_output().unwrap()
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Runs a command that must succeed; returns its stdout.
pub fn ok(args: &[&str]) -> String {
    let out = awari(args);
    assert!(
        out.status.success(),
        "awari {args:?} failed ({:?}):\nstdout:\n{}\nstderr:\n{}",
        out.status,
        text(&out.stdout),
        text(&out.stderr)
    );
    text(&out.stdout)
}

/// Runs a command: whether it succeeded, its stdout and its stderr.
pub fn run(args: &[&str]) -> (bool, String, String) {
    let out = awari(args);
    (out.status.success(), text(&out.stdout), text(&out.stderr))
}

/// Every position of `n` seeds on `2p` pits (stored or not).
pub fn all_positions(p: usize, n: usize) -> Vec<Board> {
    let mut out = Vec::new();
    let mut pits = vec![0u32; 2 * p];
    fn rec(i: usize, left: u32, pits: &mut Vec<u32>, p: usize, out: &mut Vec<Board>) {
        if i + 1 == pits.len() {
            pits[i] = left;
            out.push(Board::from_counts(p, pits).unwrap());
            return;
        }
        for x in 0..=left {
            pits[i] = x;
            rec(i + 1, left - x, pits, p, out);
        }
    }
    rec(0, n as u32, &mut pits, p, &mut out);
    out
}

/// Exact values of every position of levels `0..=max`, by value iteration per level.
pub struct Oracle {
    pub levels: Vec<HashMap<Board, i8>>,
    /// Sweeps value iteration took per level, to show the reference really iterates.
    pub sweeps: Vec<usize>,
}

impl Oracle {
    pub fn value(&self, b: &Board) -> i8 {
        self.levels[b.seeds()][b]
    }

    pub fn solve(p: usize, rules: Rules, max: usize) -> Oracle {
        let mut r = Oracle {
            levels: Vec::new(),
            sweeps: Vec::new(),
        };
        for n in 0..=max {
            let positions = all_positions(p, n);
            let at: HashMap<Board, u32> = positions
                .iter()
                .enumerate()
                .map(|(i, b)| (*b, i as u32))
                .collect();
            // Per position: the best move leaving the level (or the game end), and the
            // in-level children.
            let mut exit = vec![i16::MIN; positions.len()];
            let mut kids: Vec<Vec<u32>> = vec![Vec::new(); positions.len()];
            for (i, b) in positions.iter().enumerate() {
                let moves = legal_moves(b, rules);
                if let Some(v) = moves.terminal_value {
                    exit[i] = v as i16;
                    continue;
                }
                for m in moves.as_slice() {
                    if m.ends_game {
                        exit[i] = exit[i].max(n as i16);
                    } else if m.captured > 0 {
                        let v = m.captured as i16 - r.value(&m.child) as i16;
                        exit[i] = exit[i].max(v);
                    } else {
                        kids[i].push(at[&m.child]);
                    }
                }
            }
            let mut v = vec![0i16; positions.len()];
            let mut sweeps = 0;
            loop {
                sweeps += 1;
                assert!(sweeps < 100_000, "value iteration does not converge");
                let next: Vec<i16> = (0..positions.len())
                    .into_par_iter()
                    .map(|i| {
                        let mut best = exit[i];
                        for &c in &kids[i] {
                            best = best.max(-v[c as usize]);
                        }
                        best
                    })
                    .collect();
                if next == v {
                    break;
                }
                v = next;
            }
            r.sweeps.push(sweeps);
            r.levels.push(
                positions
                    .iter()
                    .zip(&v)
                    .map(|(b, &x)| {
                        assert!(x.unsigned_abs() as usize <= n);
                        (*b, x as i8)
                    })
                    .collect(),
            );
        }
        r
    }
}
