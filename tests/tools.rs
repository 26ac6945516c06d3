//! The Python tools against the binary: `tools/awari_db.py`, a second implementation of
//! the design contract, must answer every query as `awari query` does, accept the levels
//! the builder writes and refuse damaged ones; `tools/compare-romein-bal` must find a
//! changed byte in an export and unrank it to the right board. Only the binary and the
//! scripts are run (no library calls), so this checks the contract, not shared code.

use std::fs;
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;
use tempfile::TempDir;

use crate::common::{awari, awari_with_input, ok, text};

/// Levels built for the tests: 4.4 million positions at the top, a second to build.
const MAX: u64 = 14;
/// The published example (DESIGN.md section 2) has 16 seeds.
const RB_EXAMPLE: [&str; 12] = ["1", "1", "1", "1", "1", "2", "4", "2", "3", "0", "0", "0"];
/// Random positions compared per rule set.
const PER_RULES: usize = 1000;
/// Where a level's payload starts, after its header (DESIGN.md section 4).
const PAYLOAD_OFFSET: usize = 4096;

fn tool(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tools")
        .join(name)
}

/// Runs `python3 tools/<script> args` with `input` on stdin. Python is required: a
/// machine without it fails here, by name, rather than skipping the checks.
fn python(script: &str, args: &[&str], input: &[u8]) -> Output {
    let mut child = match Command::new("python3")
        .arg(tool(script))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    {
        Ok(child) => child,
        Err(e) if e.kind() == ErrorKind::NotFound => {
            panic!("python3 is not on PATH: these tests need Python 3 (3.9 or newer) to run tools/{script}")
        }
        Err(e) => panic!("cannot run python3 tools/{script}: {e}"),
    };
    child.stdin.take().unwrap().write_all(input).unwrap();
    child.wait_with_output().unwrap()
}

/// A Python tool run that must succeed; its stdout.
fn python_ok(script: &str, args: &[&str], input: &[u8]) -> String {
    let out = python(script, args, input);
    assert!(
        out.status.success(),
        "python3 tools/{script} {args:?} failed ({:?}):\nstdout:\n{}\nstderr:\n{}",
        out.status,
        text(&out.stdout),
        text(&out.stderr)
    );
    text(&out.stdout)
}

/// A Python tool run that must fail with exit status `code` and one `error:` line on
/// stderr, without a traceback; returns stdout and stderr.
fn python_fail(script: &str, args: &[&str], code: i32) -> (String, String) {
    let out = python(script, args, b"");
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    let ctx = format!("tools/{script} {args:?}:\nstdout:\n{stdout}\nstderr:\n{stderr}");
    assert_eq!(out.status.code(), Some(code), "{ctx}");
    assert!(!stderr.contains("Traceback"), "{ctx}");
    assert!(stderr.lines().all(|l| l.starts_with("error: ")), "{ctx}");
    (stdout, stderr)
}

/// A database root in a temporary folder, built with the binary.
struct Db {
    tmp: TempDir,
}

impl Db {
    /// Levels `0..=max` of each rule set in `rules`, 6 pits per side.
    fn built(rules: &[&str], max: u64) -> Db {
        let db = Db {
            tmp: tempfile::tempdir().unwrap(),
        };
        for r in rules {
            let max = max.to_string();
            ok(&[
                "build",
                "--max-seeds",
                &max,
                "--rules",
                r,
                "--dir",
                &db.root(),
            ]);
        }
        db
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.tmp.path().join(rel)
    }

    fn root(&self) -> String {
        self.path("db").to_str().unwrap().to_string()
    }

    /// A copy of the awari levels under the root `<tmp>/<name>`; the root.
    fn copy(&self, name: &str) -> String {
        let to = self.path(&format!("{name}/awari-6"));
        fs::create_dir_all(&to).unwrap();
        for entry in fs::read_dir(self.path("db/awari-6")).unwrap() {
            let entry = entry.unwrap();
            fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
        }
        self.path(name).to_str().unwrap().to_string()
    }

    /// `awari export --format romein-bal` into `<tmp>/<name>`; the folder.
    fn export(&self, name: &str) -> String {
        let out = self.path(name).to_str().unwrap().to_string();
        ok(&[
            "export",
            "--format",
            "romein-bal",
            "--out",
            &out,
            "--dir",
            &self.root(),
        ]);
        out
    }
}

/// xorshift64: the same positions on every run, without another crate.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }

    /// `n` seeds dropped one by one into the pits `from..to`, on top of `pits`.
    fn scatter(&mut self, pits: &mut [u64], n: u64, from: usize, to: usize) {
        for _ in 0..n {
            pits[from + self.below((to - from) as u64) as usize] += 1;
        }
    }
}

/// Random positions of `0..=MAX` seeds: mostly anywhere, and by design also with the
/// opponent row full (not stored: answered from the children), with no own seeds (game
/// over), and with an empty opponent row that the mover cannot reach (Awari: a forced
/// move that ends the game; Oware: game over).
fn random_positions(rng: &mut Rng, count: usize) -> Vec<String> {
    (0..count)
        .map(|i| {
            let mut pits = [0u64; 12];
            match i % 8 {
                0 => {
                    pits[6..].fill(1);
                    let n = rng.below(MAX - 5);
                    rng.scatter(&mut pits, n, 0, 12);
                }
                1 => {
                    let n = rng.below(MAX + 1);
                    rng.scatter(&mut pits, n, 6, 12);
                }
                2 => {
                    let o = rng.below(5) as usize;
                    pits[o] = 1 + rng.below(5 - o as u64);
                }
                _ => {
                    let n = rng.below(MAX + 1);
                    rng.scatter(&mut pits, n, 0, 12);
                }
            }
            pits.map(|c| c.to_string()).join(" ")
        })
        .collect()
}

/// The JSON lines of `awari query --stdin` and of `awari_db.py --stdin` on `input`.
fn both_answers(db: &Db, rules: &str, input: &str) -> (Vec<Value>, Vec<Value>) {
    let root = db.root();
    let args = ["--stdin", "--rules", rules, "--dir", &root];
    let rust = awari_with_input(&[&["query"], &args[..]].concat(), input.as_bytes());
    assert!(rust.status.success(), "{}", text(&rust.stderr));
    let py = python_ok("awari_db.py", &args, input.as_bytes());
    let parse = |s: &str| -> Vec<Value> {
        s.lines()
            .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
            .collect()
    };
    (parse(&text(&rust.stdout)), parse(&py))
}

/// The value and the value of each move, in pit order.
fn values(answer: &Value) -> (i64, Vec<(u64, i64)>) {
    let moves = answer["moves"].as_array().unwrap();
    let value = answer["value"].as_i64().unwrap();
    let per_move = moves
        .iter()
        .map(|m| (m["pit"].as_u64().unwrap(), m["value"].as_i64().unwrap()))
        .collect();
    (value, per_move)
}

#[test]
fn python_reader_answers_random_positions_as_the_binary_does() {
    let db = Db::built(&["awari", "oware"], MAX);
    // With their distance tables, so that the readers' distances are compared too.
    for rules in ["awari", "oware"] {
        ok(&["dtc", "--rules", rules, "--dir", &db.root()]);
    }
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut compared = 0;
    for rules in ["awari", "oware"] {
        let positions = random_positions(&mut rng, PER_RULES);
        let (rust, py) = both_answers(&db, rules, &(positions.join("\n") + "\n"));
        assert_eq!(rust.len(), PER_RULES, "{rules}: one answer per position");
        assert_eq!(py.len(), PER_RULES, "{rules}: one answer per position");
        let (mut unstored, mut over, mut ending, mut far) = (0, 0, 0, 0);
        for ((pos, r), p) in positions.iter().zip(&rust).zip(&py) {
            assert!(r.get("error").is_none(), "{rules} {pos}: {r}");
            assert_eq!(
                values(r),
                values(p),
                "{rules} {pos}:\nrust   {r}\npython {p}"
            );
            // Every other field is derived the same way, so the objects agree too.
            assert_eq!(r, p, "{rules} {pos}");
            unstored += usize::from(r["stored"] == false);
            far += usize::from(r["distance"].as_u64().is_some_and(|d| d >= 3));
            over += usize::from(!r["game_over"].is_null());
            ending += usize::from(
                r["moves"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|m| m["ends_game"] == true),
            );
            compared += 1;
        }
        assert!(
            unstored >= 100 && over >= 100 && far >= 100,
            "{rules}: {unstored} unstored, {over} over, {far} at distance 3 or more"
        );
        if rules == "awari" {
            assert!(
                ending >= 50,
                "awari: {ending} positions with a move that ends the game"
            );
        }
    }
    assert_eq!(compared, 2 * PER_RULES);
    // A table that is only packed (zstd, which this reader lacks): refused in one line
    // that says how to unpack it.
    let packed = db.copy("packed");
    let dir = Path::new(&packed).join("awari-6");
    let raw_level = fs::read(dir.join("level-012.awl")).unwrap();
    ok(&["pack", "--level", "12", "--dir", &packed, "--remove-raw"]);
    fs::write(dir.join("level-012.awl"), raw_level).unwrap();
    let twelve = ["0", "0", "0", "0", "0", "0", "12", "0", "0", "0", "0", "0"];
    let (_, err) = python_fail(
        "awari_db.py",
        &[&["--dir", &packed], &twelve[..]].concat(),
        1,
    );
    assert!(
        err.starts_with("error: level 12's distance table is only packed")
            && err.contains("unpack --level 12"),
        "{err}"
    );
}

#[test]
fn python_reader_gives_the_published_example_and_checks_levels() {
    let db = Db::built(&["awari"], 16);
    let root = db.root();
    let json = python_ok(
        "awari_db.py",
        &[&["--json", "--dir", &root], &RB_EXAMPLE[..]].concat(),
        b"",
    );
    let (value, moves) = values(&serde_json::from_str(&json).unwrap());
    assert_eq!(value, 0, "{json}");
    let per_pit: Vec<i64> = moves.iter().map(|m| m.1).collect();
    assert_eq!(per_pit, [-1, -1, -2, -2, -2, 0], "{json}");
    // The text too is the binary's, line for line.
    let shown = python_ok(
        "awari_db.py",
        &[&["--dir", &root], &RB_EXAMPLE[..]].concat(),
        b"",
    );
    assert_eq!(
        shown,
        ok(&[&["query", "--dir", &root], &RB_EXAMPLE[..]].concat())
    );

    let levels = format!("0..={MAX}");
    let check = |root: &str| {
        python(
            "awari_db.py",
            &["check", "--dir", root, "--levels", &levels],
            b"",
        )
    };
    let report = check(&root);
    assert!(report.status.success(), "{}", text(&report.stderr));
    let report = text(&report.stdout);
    assert!(
        report.contains(&format!("checked {} of {} levels", MAX + 1, MAX + 1)),
        "{report}"
    );

    // Two pits per side: levels of (n+1)^2 positions, so that the payload checksums
    // the builder wrote also test XXH3's paths for short and medium inputs (4 to 240
    // bytes), as the header checksums test the 40-byte one.
    ok(&["build", "--max-seeds", "20", "--pits", "2", "--dir", &root]);
    let report = python_ok(
        "awari_db.py",
        &["check", "--pits", "2", "--dir", &root],
        b"",
    );
    assert!(report.contains("checked 21 of 21 levels"), "{report}");

    // One flipped payload byte: the check fails and names the file.
    let flipped = db.copy("flipped");
    let path = Path::new(&flipped).join("awari-6/level-009.awl");
    let mut bytes = fs::read(&path).unwrap();
    bytes[PAYLOAD_OFFSET + 1000] ^= 1;
    fs::write(&path, &bytes).unwrap();
    let (_, err) = python_fail(
        "awari_db.py",
        &["check", "--dir", &flipped, "--levels", &levels],
        1,
    );
    let named = format!("error: {}: damaged payload", path.display());
    assert!(err.lines().any(|l| l.starts_with(&named)), "{err}");
    let failed = format!("error: 1 of {} levels failed the check", MAX + 1);
    assert!(err.lines().any(|l| l == failed), "{err}");

    // Truncated: the header check refuses it, and so does a query that needs it.
    let truncated = db.copy("truncated");
    let path = Path::new(&truncated).join("awari-6/level-009.awl");
    let bytes = fs::read(&path).unwrap();
    fs::write(&path, &bytes[..bytes.len() - 1]).unwrap();
    let (_, err) = python_fail(
        "awari_db.py",
        &["check", "--dir", &truncated, "--levels", "9"],
        1,
    );
    let named = format!(
        "error: {}: {} bytes, expected {}: truncated",
        path.display(),
        bytes.len() - 1,
        bytes.len()
    );
    assert!(err.lines().any(|l| l == named), "{err}");
    let nine = ["0", "0", "0", "0", "0", "0", "9", "0", "0", "0", "0", "0"];
    let (_, err) = python_fail(
        "awari_db.py",
        &[&["--dir", &truncated], &nine[..]].concat(),
        1,
    );
    assert_eq!(err.trim_end(), named, "{err}");
}

/// Sets byte `i` of a `scores.N` file of level `n` to another value of that level;
/// returns the old and the new value.
fn change_value(path: &Path, i: usize, n: i8) -> (i8, i8) {
    let mut bytes = fs::read(path).unwrap();
    let old = bytes[i] as i8;
    let new = if old < n { old + 1 } else { old - 1 };
    bytes[i] = new as u8;
    fs::write(path, bytes).unwrap();
    (old, new)
}

/// The script runs by itself, not only through `python3`.
#[cfg(unix)]
#[test]
fn compare_romein_bal_is_executable() {
    use std::os::unix::fs::PermissionsExt;
    let mode = fs::metadata(tool("compare-romein-bal"))
        .unwrap()
        .permissions()
        .mode();
    assert_ne!(
        mode & 0o111,
        0,
        "tools/compare-romein-bal must be executable"
    );
}

#[test]
fn compare_romein_bal_finds_and_unranks_a_changed_value() {
    let db = Db::built(&["awari"], MAX);
    let run = |args: &[&str]| -> (Option<i32>, String, String) {
        let out = python("compare-romein-bal", args, b"");
        (out.status.code(), text(&out.stdout), text(&out.stderr))
    };
    let (a, b) = (db.export("a"), db.export("b"));
    let (code, out, err) = run(&[&a, &b]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(
        out.contains(&format!(
            "{} of {} levels compared are identical",
            MAX + 1,
            MAX + 1
        )),
        "{out}"
    );
    // Our raw levels against an export: the payloads are the same bytes.
    let (code, out, err) = run(&[&format!("{}/awari-6", db.root()), &a]);
    assert_eq!(code, Some(0), "{out}{err}");

    let i = 1_234_567;
    let (old, new) = change_value(&db.path(&format!("b/scores.{MAX}")), i, MAX as i8);
    let (code, out, err) = run(&[&a, &b]);
    assert_eq!(code, Some(1), "{out}{err}");
    let line = out
        .lines()
        .find(|l| l.starts_with(&format!("level {MAX}: 1 of ")))
        .unwrap_or_else(|| panic!("no difference reported in level {MAX}:\n{out}"));
    assert!(line.contains(&format!("index {i}: board ")), "{line}");
    assert!(
        line.contains(&format!(": {old} in ")) && line.contains(&format!(", {new} in ")),
        "{line}"
    );
    let board: Vec<&str> = line
        .split("board ")
        .nth(1)
        .and_then(|s| s.split(" (pits").next())
        .unwrap()
        .split(' ')
        .collect();
    assert_eq!(board.len(), 12, "{line}");

    // The board is the position at index i: in a database imported from the changed
    // files, the binary, which ranks it itself, finds exactly that byte changed.
    let imported = db.path("imported").to_str().unwrap().to_string();
    ok(&["import", "--format", "romein-bal", &b, "--dir", &imported]);
    let query = [&["query", "--dir", &imported], &board[..]].concat();
    let out = awari(&query);
    let err = text(&out.stderr);
    let expect = format!("is stored as {new} but its moves give {old}");
    assert!(
        !out.status.success() && err.contains(&expect),
        "{query:?}: {err}"
    );
    let (_, err) = python_fail(
        "awari_db.py",
        &[&["--dir", &imported], &board[..]].concat(),
        1,
    );
    assert!(err.contains(&expect), "{err}");
}
