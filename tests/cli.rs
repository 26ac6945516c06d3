//! The `awari` binary as a user meets it: every error is one line on stderr starting with
//! `error:`, a non-zero exit code and never a panic; damaged, truncated and foreign level
//! files are refused by name; a stopped build keeps its finished levels and resumes;
//! files do not depend on the thread count; the JSON interface of `query` keeps its shape.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;
use tempfile::TempDir;

use crate::common::{awari, awari_with_input, ok, run, text, BIN};

/// The Romein-Bal example (DESIGN.md section 2): 16 seeds.
const RB_EXAMPLE: &str = "1 1 1 1 1 2 4 2 3 0 0 0";
/// A stored position of 5 seeds (opponent row empty): probing it opens level 5.
const FIVE: &str = "1 1 1 1 1 0 0 0 0 0 0 0";
/// A stored position of 3 seeds.
const THREE: &str = "1 1 1 0 0 0 0 0 0 0 0 0";

/// `args` followed by the words of `position`.
fn with_position<'a>(args: &[&'a str], position: &'a str) -> Vec<&'a str> {
    let mut v = args.to_vec();
    v.extend(position.split_whitespace());
    v
}

/// Checks a failed run: a non-zero exit code (not a signal), no panic, exactly one
/// `error:` line, and it is the last line of stderr. Lines before it may only be the
/// build's banner or warnings. Returns the error line.
fn error_of(args: &[&str], out: &Output) -> String {
    let stderr = text(&out.stderr);
    let ctx = format!(
        "awari {args:?} ({:?}):\nstdout:\n{}\nstderr:\n{stderr}",
        out.status,
        text(&out.stdout)
    );
    assert!(!out.status.success(), "should have failed: {ctx}");
    let code = out.status.code();
    assert!(
        code.is_some_and(|c| c != 0),
        "exit code must be non-zero, not a signal: {ctx}"
    );
    assert!(!stderr.contains("panicked"), "panic: {ctx}");
    let lines: Vec<&str> = stderr.lines().collect();
    let errors = lines.iter().filter(|l| l.starts_with("error:")).count();
    assert_eq!(errors, 1, "exactly one error line: {ctx}");
    let last = *lines.last().unwrap();
    assert!(last.starts_with("error:"), "the error comes last: {ctx}");
    for l in &lines[..lines.len() - 1] {
        assert!(
            l.starts_with("building ") || l.starts_with("warning: "),
            "unexpected stderr line {l:?}: {ctx}"
        );
    }
    // No part of the message said twice ("x: No space left: No space left").
    let parts: Vec<&str> = last.split(": ").collect();
    for w in parts.windows(2) {
        assert_ne!(w[0], w[1], "repeated part in the error: {ctx}");
    }
    last.to_string()
}

/// Checks a run that clap refused (a usage error): exit status 2, no panic, one `error:`
/// line, the first (clap's usage hint may follow it). Returns the error line.
fn usage_error(args: &[&str], out: &Output) -> String {
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "awari {args:?}: {stderr}");
    assert!(!stderr.contains("panicked"), "awari {args:?}: {stderr}");
    let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(errors.len(), 1, "awari {args:?}: {stderr}");
    assert!(stderr.starts_with(errors[0]), "awari {args:?}: {stderr}");
    errors[0].to_string()
}

/// Runs a command that clap must refuse; returns its one error line.
fn usage_fail(args: &[&str]) -> String {
    usage_error(args, &awari(args))
}

/// Runs a command that must fail; returns its one error line.
fn fail(args: &[&str]) -> String {
    error_of(args, &awari(args))
}

/// Runs a query that must fail: stderr is the error line and nothing else.
fn query_fail(args: &[&str]) -> String {
    let out = awari(args);
    let e = error_of(args, &out);
    assert_eq!(text(&out.stderr).lines().count(), 1, "{args:?}: {e}");
    e
}

/// A temporary folder holding the database root `<tmp>/db`.
struct Db {
    tmp: TempDir,
}

impl Db {
    fn empty() -> Db {
        Db {
            tmp: tempfile::tempdir().unwrap(),
        }
    }

    /// Levels 0..=max of the awari rules, P = 6.
    fn built(max: usize) -> Db {
        let db = Db::empty();
        db.build(&["--max-seeds", &max.to_string()]);
        db
    }

    fn root(&self) -> PathBuf {
        self.tmp.path().join("db")
    }

    fn root_str(&self) -> String {
        self.root().to_str().unwrap().to_string()
    }

    fn level(&self, rules: &str, n: usize) -> PathBuf {
        self.root()
            .join(format!("{rules}-6"))
            .join(format!("level-{n:03}.awl"))
    }

    fn build(&self, extra: &[&str]) -> String {
        let root = self.root_str();
        let mut args = vec!["build", "--dir", &root];
        args.extend_from_slice(extra);
        ok(&args)
    }

    fn query(&self, extra: &[&str], position: &str) -> String {
        let root = self.root_str();
        let mut args = vec!["query", "--dir", &root];
        args.extend_from_slice(extra);
        ok(&with_position(&args, position))
    }

    fn query_json(&self, position: &str) -> Value {
        serde_json::from_str(&self.query(&["--json"], position)).unwrap()
    }

    fn query_fail(&self, position: &str) -> String {
        let root = self.root_str();
        query_fail(&with_position(&["query", "--dir", &root], position))
    }
}

/// The level files of one database folder, in order, with their bytes (not the rates
/// file, which holds times).
fn level_files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<_> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap() != "rates.csv")
        .map(|p| {
            let name = p.file_name().unwrap().to_str().unwrap().to_string();
            (name, fs::read(&p).unwrap())
        })
        .collect();
    files.sort();
    files
}

fn assert_same_files(a: &Path, b: &Path) {
    let (fa, fb) = (level_files(a), level_files(b));
    let names = |f: &[(String, Vec<u8>)]| f.iter().map(|x| x.0.clone()).collect::<Vec<_>>();
    assert_eq!(names(&fa), names(&fb), "{} vs {}", a.display(), b.display());
    for ((name, x), (_, y)) in fa.iter().zip(&fb) {
        assert!(
            x == y,
            "{name} differs between {} and {}",
            a.display(),
            b.display()
        );
    }
}

/// The rows of the build table: (level, seconds column).
fn build_rows(stdout: &str) -> Vec<(usize, String)> {
    stdout
        .lines()
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            let n = w.first()?.parse().ok()?;
            Some((n, w.get(2)?.to_string()))
        })
        .collect()
}

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
fn build_into_an_unwritable_folder() {
    let db = Db::empty();
    let file = db.tmp.path().join("file");
    fs::write(&file, b"a regular file").unwrap();
    let below = file.join("db");
    let e = fail(&[
        "build",
        "--max-seeds",
        "4",
        "--dir",
        below.to_str().unwrap(),
    ]);
    assert!(
        e.contains(&format!("{} is a file, not a folder", file.display())),
        "{e}"
    );
    assert!(fs::metadata(&file).unwrap().is_file());
}

#[test]
fn build_refuses_bad_arguments_before_starting() {
    let db = Db::empty();
    let root = db.root_str();
    for (extra, needle) in [
        (
            &["--max-seeds", "4", "--pits", "9"][..],
            "'9' for '--pits <PITS>': 9 is not in 2..=8",
        ),
        (
            &["--max-seeds", "4", "--pits", "1"][..],
            "'1' for '--pits <PITS>': 1 is not in 2..=8",
        ),
        (&["--max-seeds", "200"][..], "200 is not in 0..=127"),
        (
            &["--max-seeds", "4", "--threads", "0"][..],
            "0 is not in 1..=1024",
        ),
    ] {
        let mut args = vec!["build", "--dir", &root];
        args.extend_from_slice(extra);
        let e = usage_error(&args, &awari(&args));
        assert!(e.contains(needle), "{e}");
    }
    // Within clap's ranges, what only the library knows (pits and seeds together) is
    // refused by it, before any work.
    let args = ["build", "--dir", &root, "--max-seeds", "127", "--pits", "8"];
    let e = error_of(&args, &awari(&args));
    assert!(!e.contains("build stopped"), "not a stopped build: {e}");
    assert!(!db.root().exists(), "nothing written for bad arguments");
}

/// A flag that the build over ranks does not do is refused before any work, in one line
/// that names it, with clap's status for a usage error; the flags it does are taken.
#[test]
fn distributed_build_refuses_the_flags_it_does_not_do() {
    let db = Db::empty();
    let root = db.root_str();
    let pack = "each rank writes its slice raw; pack the levels `awari gather` makes with \
                `awari pack`";
    let random = "each rank holds only its slices of the lower levels, so it reads them as \
                  streams (--lower stream)";
    let spill = "the ranks read the lower levels as streams, so no solver state is spilled";
    for (extra, flag, why) in [
        (&["--pack"][..], "--pack", pack),
        (&["--lower", "random"][..], "--lower random", random),
        (&["--spill-from", "0"][..], "--spill-from", spill),
        (&["--force", "--pack"][..], "--pack", pack),
    ] {
        let mut args = vec!["build", "--distributed", "--max-seeds", "4", "--dir", &root];
        args.extend_from_slice(extra);
        let out = awari(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert_eq!(
            text(&out.stderr),
            format!("error: {flag} does not work with --distributed: {why}\n"),
            "{args:?}"
        );
        assert!(out.stdout.is_empty(), "{args:?}");
    }
    assert!(!db.root().exists(), "nothing written for refused flags");
    // Without --distributed the same flags build.
    db.build(&[
        "--max-seeds",
        "4",
        "--pack",
        "--lower",
        "random",
        "--spill-from",
        "0",
    ]);
    assert!(db.root().join("awari-6/level-004.awp").exists());
    // --force, --state and --lower stream pass the check: a binary without the mpi
    // feature then says it needs it (with it, MPI would start).
    if !cfg!(feature = "mpi") {
        let e = fail(&[
            "build",
            "--distributed",
            "--force",
            "--state",
            "compact",
            "--lower",
            "stream",
            "--max-seeds",
            "4",
            "--dir",
            &db.root_str(),
        ]);
        assert!(e.contains("needs the mpi feature"), "{e}");
    }
}

/// `--threads` above 1,024 (or 0) is refused at once, in one line, by every command that
/// takes it: a typo must not start 100,000 OS threads.
#[test]
fn threads_out_of_bounds_are_refused_in_one_line() {
    let db = Db::empty();
    let root = db.root_str();
    for t in ["100000", "1025", "0"] {
        let mut cases: Vec<Vec<&str>> = vec![
            vec!["build", "--max-seeds", "4", "--dir", &root],
            vec!["verify", "--dir", &root],
            vec!["stats", "--dir", &root],
            vec!["info", "--dir", &root],
            vec!["pack", "--all", "--dir", &root],
            vec!["unpack", "--all", "--dir", &root],
            vec!["variants", "--dir", &root],
            vec!["bench", "--max-seeds", "4"],
        ];
        if cfg!(feature = "serve") {
            cases.push(vec!["serve", "--dir", &root, "--bind", "127.0.0.1:0"]);
        }
        for mut args in cases {
            args.extend(["--threads", t]);
            let e = usage_fail(&args);
            assert!(
                e.starts_with(&format!(
                    "error: invalid value '{t}' for '--threads <THREADS>': {t} is not in 1..=1024"
                )),
                "{args:?}: {e}"
            );
        }
    }
    assert!(!db.root().exists(), "nothing written for bad arguments");
    // The bound itself is taken.
    db.build(&["--max-seeds", "2", "--threads", "1024"]);
}

/// Checks a build to 12 seeds that stopped when its file system refused a write: one
/// error line naming the temporary file, finished levels intact (byte-identical to a
/// fresh build, opened and queried), no temporary files left, and a second attempt that
/// keeps them all.
fn check_stopped_build(root: &Path, args: &[&str], run: impl Fn() -> Output, reason: &str) {
    let e = error_of(args, &run());
    assert!(e.contains(reason), "{e}");
    assert!(e.contains(".awl.tmp"), "names the file being written: {e}");
    let dir = root.join("awari-6");
    let files = level_files(&dir);
    let names: Vec<&str> = files.iter().map(|f| f.0.as_str()).collect();
    assert!(
        names.iter().all(|n| !n.ends_with(".tmp")),
        "temporary files left: {names:?}"
    );
    let finished = files.len();
    assert!(
        (4..12).contains(&finished),
        "the limit should stop the build between levels 4 and 11: {names:?}"
    );
    let expected: Vec<String> = (0..finished).map(|n| format!("level-{n:03}.awl")).collect();
    assert_eq!(names, expected);
    // The finished levels are the levels a fresh build writes.
    let fresh = Db::built(finished - 1);
    assert_same_files(&dir, &fresh.root().join("awari-6"));
    // And they open and answer queries.
    let r = root.to_str().unwrap();
    let q: Value =
        serde_json::from_str(&ok(&with_position(&["query", "--json", "--dir", r], THREE))).unwrap();
    assert_eq!(q["value"], 3, "{q}");
    // A second attempt keeps every finished level and stops at the same place.
    let again = run();
    error_of(args, &again);
    let rows = build_rows(&text(&again.stdout));
    assert_eq!(rows.len(), finished, "{rows:?}");
    assert!(rows.iter().all(|r| r.1 == "kept"), "{rows:?}");
}

/// A disk that fills up during a build: a 300 KiB tmpfs (Linux, needs the right to mount,
/// as CI has). Where mounting is not allowed the test says so and checks nothing more;
/// `build_stops_at_the_file_size_limit` covers the same path everywhere.
#[cfg(target_os = "linux")]
#[test]
fn build_stops_on_a_full_disk() {
    struct Mounted(PathBuf);
    impl Drop for Mounted {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(&self.0).status();
        }
    }
    let tmp = tempfile::tempdir().unwrap();
    let mnt = tmp.path().join("mnt");
    fs::create_dir(&mnt).unwrap();
    let mount = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=300k", "tmpfs"])
        .arg(&mnt)
        .output();
    let mounted = match mount {
        Ok(o) if o.status.success() => Mounted(mnt.clone()),
        Ok(o) => {
            eprintln!(
                "NOTICE: build_stops_on_a_full_disk skipped its tmpfs part: cannot mount ({}); \
                 build_stops_at_the_file_size_limit covers the same failure",
                text(&o.stderr).trim()
            );
            return;
        }
        Err(e) => {
            eprintln!("NOTICE: build_stops_on_a_full_disk skipped: no mount command ({e})");
            return;
        }
    };
    let root = mnt.join("db");
    let r = root.to_str().unwrap();
    // Checked at its start, the build is refused: its levels need 3 MB, 300 kB is there.
    let e = fail(&["build", "--max-seeds", "12", "--dir", r]);
    assert!(
        e.starts_with("error: levels 0..=12 need 3 MB on disk and ")
            && e.contains("`--no-check` starts anyway"),
        "{e}"
    );
    assert!(!root.join("awari-6").exists() || level_files(&root.join("awari-6")).is_empty());
    // Started anyway, it runs into the full disk.
    let args = ["build", "--max-seeds", "12", "--dir", r, "--no-check"];
    check_stopped_build(&root, &args, || awari(&args), "No space left on device");
    drop(mounted);
}

/// A build that cannot write a file past the size limit (`ulimit -f`, with SIGXFSZ
/// ignored, so the write fails with EFBIG): the same path as a full disk, without root.
#[cfg(unix)]
#[test]
fn build_stops_at_the_file_size_limit() {
    let db = Db::empty();
    let root = db.root();
    let r = root.to_str().unwrap();
    let args = ["build", "--max-seeds", "12", "--dir", r];
    // 64 KiB: level 7 (35,908 bytes) fits, level 8 (79,600 bytes) does not.
    let limited = || {
        Command::new("bash")
            .arg("-c")
            .arg("ulimit -f 64 && trap '' XFSZ && exec \"$0\" \"$@\"")
            .arg(BIN)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("run bash")
    };
    check_stopped_build(&root, &args, limited, "File too large");
    assert_eq!(level_files(&root.join("awari-6")).len(), 8);
    // Without the limit the same command finishes the build.
    let rows = build_rows(&ok(&args));
    assert_eq!(rows.len(), 13);
    assert!(rows[..8].iter().all(|r| r.1 == "kept"), "{rows:?}");
    assert!(rows[8..].iter().all(|r| r.1 != "kept"), "{rows:?}");
}

#[test]
fn interrupted_build_resumes() {
    let db = Db::built(8);
    let dir = db.root().join("awari-6");
    fs::remove_file(db.level("awari", 8)).unwrap();
    // A temporary file left by a killed build does not get in the way.
    fs::write(dir.join("level-008.awl.tmp"), b"partial").unwrap();
    let stdout = db.build(&["--max-seeds", "8"]);
    let rows = build_rows(&stdout);
    assert_eq!(rows.len(), 9, "{stdout}");
    for (n, (level, secs)) in rows.iter().enumerate() {
        assert_eq!(*level, n, "{stdout}");
        assert_eq!(secs == "kept", n < 8, "level {n}: {stdout}");
    }
    assert!(stdout.contains("1 levels built (8 kept)"), "{stdout}");
    assert!(!dir.join("level-008.awl.tmp").exists());

    let one = Db::empty();
    one.build(&["--max-seeds", "8", "--threads", "1"]);
    let two = Db::empty();
    two.build(&["--max-seeds", "8", "--threads", "2"]);
    assert_same_files(&dir, &one.root().join("awari-6"));
    assert_same_files(&dir, &two.root().join("awari-6"));
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

#[test]
fn count_gives_the_romein_bal_total() {
    let out = ok(&["count"]);
    assert!(out.contains("889,063,398,406"), "{out}");
    assert!(out.contains("203,648,015,935"), "{out}");
    let e = usage_fail(&["count", "--pits", "9"]);
    assert!(e.contains("9 is not in 2..=8"), "{e}");
}

/// Totals past 2^64 are not wrapped: the positions of levels 0..=105 on 8 pits per side
/// come to 24,688,575,313,358,965,074 (each level's fit 64 bits); a plan whose figures per
/// node would pass 2^64 bytes is refused, naming the last level it can plan.
#[test]
fn totals_past_64_bits_are_counted_or_refused() {
    let out = ok(&["count", "--pits", "8", "--max-seeds", "105"]);
    assert!(
        out.contains("total levels 0..=105: 24,688,575,313,358,965,074 positions"),
        "{out}"
    );
    let tmp = tempfile::tempdir().unwrap();
    let csv = tmp.path().join("bench.csv");
    fs::write(
        &csv,
        "level,positions,threads,seconds,forward_seconds,backward_seconds,positions_per_second_per_thread,peak_rss_bytes\n\
         20,80214915,1,40.1,10.0,30.0,2000000,1\n",
    )
    .unwrap();
    let (dir, csv) = (tmp.path().to_str().unwrap(), csv.to_str().unwrap());
    let plan = |top: &'static str| {
        vec![
            "plan",
            "--pits",
            "8",
            "--max-seeds",
            top,
            "--memory-per-node",
            "100",
            "--cores-per-node",
            "2",
            "--disk-per-node",
            "100",
            "--dir",
            dir,
            "--rates",
            csv,
        ]
    };
    // Levels 0..=100 raw (12.3 EB) and two of level 100's fast state (7.0 EB) pass 2^64
    // bytes (18.4 EB).
    let e = fail(&plan("110"));
    assert!(
        e.contains("level 100 of 8 pits per side needs more than 2^64 bytes a node")
            && e.contains("plan up to level 99 at most, or on more nodes"),
        "{e}"
    );
    let out = ok(&plan("99"));
    assert!(
        out.contains("total: 10,644,276,044,892,071,165 positions")
            && out.contains("10644276.04 TB of raw levels"),
        "{out}"
    );
}

#[test]
fn bench_times_each_thread_count_and_writes_csv() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("bench.csv");
    let scratch = dir.path().join("scratch");
    let out = ok(&[
        "bench",
        "--max-seeds",
        "8",
        "--threads",
        "1,2",
        "--scratch",
        scratch.to_str().unwrap(),
        "--csv",
        csv.to_str().unwrap(),
    ]);
    assert!(
        out.contains("level files identical across thread counts: yes"),
        "{out}"
    );
    assert!(out.contains("2t/1t"), "{out}");
    // Level 8 has 75,504 positions; the total of levels 0..=8 is 125,879.
    assert!(out.contains("75,504") && out.contains("125,879"), "{out}");
    let rows = std::fs::read_to_string(&csv).unwrap();
    let lines: Vec<&str> = rows.lines().collect();
    // A header, nine levels and a total per thread count.
    assert_eq!(lines.len(), 1 + 2 * 10, "{rows}");
    assert!(lines[0].starts_with("level,positions,threads,seconds"));
    assert!(lines.iter().any(|l| l.starts_with("8,75504,2,")), "{rows}");
    assert!(!scratch.join("threads-1").exists() && !scratch.join("threads-2").exists());
    let e = usage_fail(&["bench", "--threads", "0"]);
    assert!(e.contains("--threads") && e.contains("1..=1024"), "{e}");
}

/// `bench --probe`: the latency of probes of a built database, raw and packed, and its
/// refusals.
#[test]
fn bench_probe_times_probes_of_raw_and_packed_levels() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_str().unwrap();
    ok(&["build", "--max-seeds", "8", "--dir", root]);
    let probe = |max: &str| {
        run(&[
            "bench",
            "--probe",
            "--dir",
            root,
            "--max-seeds",
            max,
            "--samples",
            "5000",
        ])
    };
    let (done, out, err) = probe("8");
    assert!(done, "{err}");
    assert!(
        out.starts_with("5,000 probes of levels 0..=8 (9 raw, 0 packed), warm: p50 "),
        "{out}"
    );
    ok(&["pack", "--dir", root, "--all", "--remove-raw"]);
    let (done, out, err) = probe("8");
    assert!(done, "{err}");
    assert!(out.contains("(0 raw, 9 packed)"), "{out}");
    // A level not built, no samples: one line each.
    let (done, _, err) = probe("9");
    assert!(
        !done && err.contains("level 9") && err.lines().count() == 2,
        "{err}"
    );
    let e = usage_fail(&["bench", "--probe", "--dir", root, "--samples", "0"]);
    assert!(e.contains("0 is not in 1..=1000000000"), "{e}");
}

/// A reader that stops early (`awari count | head -1`) ends the output quietly: no error
/// line, success.
#[test]
fn closed_output_is_not_an_error() {
    let mut child = Command::new(BIN)
        .args(["count", "--pits", "8", "--max-seeds", "100"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Close the reading end before the table is written.
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{:?}", out.status);
    assert_eq!(text(&out.stderr), "");
}

#[test]
fn a_second_build_into_the_same_folder_is_refused_while_the_first_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().to_str().unwrap();
    let lock = tmp.path().join("awari-6").join(".lock");
    // Long enough (level 20 alone is seconds with one thread) to be caught running.
    let mut first = Command::new(BIN)
        .args([
            "build",
            "--max-seeds",
            "22",
            "--threads",
            "1",
            "--dir",
            root,
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let holder = format!(
        "process {}: awari build --max-seeds 22 --dir {root}",
        first.id()
    );
    let started = std::time::Instant::now();
    while fs::read_to_string(&lock).map_or(true, |s| s != holder) {
        assert!(
            started.elapsed().as_secs() < 30,
            "the first build never took the lock"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let args = ["build", "--max-seeds", "9", "--dir", root];
    let e = fail(&args);
    assert_eq!(
        e,
        format!(
            "error: {} is in use by another process ({holder}); wait for it to finish, or stop it",
            tmp.path().join("awari-6").display()
        )
    );
    // Killed, the first build leaves its finished levels valid and the folder free.
    first.kill().unwrap();
    first.wait().unwrap();
    let out = ok(&args);
    assert!(out.contains("total: "), "{out}");
    assert!(!lock.exists());
}

#[test]
fn a_build_that_cannot_finish_is_not_started() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().to_str().unwrap();
    let e = fail(&["build", "--max-seeds", "56", "--dir", root]);
    assert!(
        e.starts_with(
            "error: level 56 (866,969,192,310 positions) needs 975.3 GB of solver memory (the compact state), and this machine has "
        ) && e.contains("`awari plan --max-seeds 56 --nodes R`")
            && e.ends_with("`--no-check` starts anyway"),
        "{e}"
    );
    // The fast state asked for: 2.125 bytes a position.
    let e = fail(&[
        "build",
        "--max-seeds",
        "56",
        "--dir",
        root,
        "--state",
        "fast",
    ]);
    assert!(
        e.starts_with(
            "error: level 56 (866,969,192,310 positions) needs 1.84 TB of solver memory (the fast state)"
        ),
        "{e}"
    );
    // Nothing was written.
    let dir = tmp.path().join("awari-6");
    assert!(!dir.exists() || fs::read_dir(&dir).unwrap().count() == 0);
}

#[test]
fn plan_gives_level_sizes_memory_and_what_does_not_fit() {
    let tmp = tempfile::tempdir().unwrap();
    // A bench CSV instead of a calibration run: 2,000,000 positions/s/thread on level 20.
    let csv = tmp.path().join("bench.csv");
    fs::write(
        &csv,
        "level,positions,threads,seconds,forward_seconds,backward_seconds,positions_per_second_per_thread,peak_rss_bytes\n\
         20,80214915,1,40.1,10.0,30.0,2000000,1\n\
         total,216135140,1,100.0,,,2000000,1\n",
    )
    .unwrap();
    let run = |memory: &str| {
        ok(&[
            "plan",
            "--max-seeds",
            "48",
            "--nodes",
            "16",
            "--memory-per-node",
            memory,
            "--cores-per-node",
            "16",
            "--disk-per-node",
            "200",
            "--rates",
            csv.to_str().unwrap(),
        ])
    };
    let out = run("64");
    let row = |out: &str, n: usize| -> Vec<String> {
        out.lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .find(|w| w.first() == Some(&n.to_string().as_str()) && w.len() > 10)
            .unwrap_or_else(|| panic!("no row for level {n}:\n{out}"))
            .iter()
            .map(|s| s.to_string())
            .collect()
    };
    // Level 48: 203,648,015,935 positions over 16 nodes, each with the fast state of its
    // slice (2.125 bytes a position, 27.0 GB) and its slices of the lower levels read as
    // streams (16 MB of buffers).
    let r48 = row(&out, 48);
    assert_eq!(r48[1], "203,648,015,935", "{out}");
    assert_eq!(r48[2], "fast/stream", "{out}");
    assert_eq!(&r48[3..9], ["27.1", "GB", "27.0", "GB", "0", "B"], "{out}");
    assert_eq!(r48.last().unwrap(), "yes", "{out}");
    assert_eq!(row(&out, 16)[1], "12,685,179");
    assert!(out.contains("every level fits"), "{out}");
    assert!(out.contains("2000000 positions/s/thread"), "{out}");
    // 8 GB nodes: the fast state up to level 42, the compact one from level 43 (73.1
    // billion positions, 5.2 GB a node); level 46 (9.6 GB a node even compact) is the
    // first too big.
    let out = run("8");
    assert_eq!(row(&out, 42)[2], "fast/stream", "{out}");
    assert_eq!(row(&out, 43)[2], "compact/stream", "{out}");
    assert_eq!(row(&out, 45).last().unwrap(), "yes", "{out}");
    assert_eq!(row(&out, 46).last().unwrap(), "memory", "{out}");
    assert!(
        out.contains("memory: level 46 is the first that does not fit")
            && out.contains("every level fits on 29 nodes of 8.0 GB"),
        "{out}"
    );
    // One node of 256 GB and 64 cores: every level fits, level 48 with the compact state
    // (229.1 GB) and its lower levels read as a stream.
    let out = ok(&[
        "plan",
        "--max-seeds",
        "48",
        "--memory-per-node",
        "256",
        "--cores-per-node",
        "64",
        "--disk-per-node",
        "2000",
        "--rates",
        csv.to_str().unwrap(),
    ]);
    let r48 = row(&out, 48);
    assert_eq!(r48[2], "compact/stream", "{out}");
    assert_eq!(
        &r48[3..9],
        ["229.2", "GB", "229.1", "GB", "0", "B"],
        "{out}"
    );
    assert!(out.contains("every level fits"), "{out}");
    // Built levels: their bytes on disk (level 4: 4096 + 1,365 bytes).
    let root = tmp.path().join("db");
    let r = root.to_str().unwrap();
    ok(&["build", "--max-seeds", "4", "--dir", r]);
    let csv = csv.to_str().unwrap();
    let out = ok(&["plan", "--max-seeds", "6", "--dir", r, "--rates", csv]);
    let line = |n: usize| {
        out.lines()
            .find(|l| l.split_whitespace().next() == Some(&n.to_string()))
            .unwrap()
            .to_string()
    };
    // With the time the build took, from the rates file it wrote.
    assert!(line(4).ends_with("yes (built: 5 kB raw in 0.0 s)"), "{out}");
    assert!(line(5).ends_with("yes"), "{out}");
    let recorded = fs::read_to_string(root.join("awari-6/rates.csv")).unwrap();
    assert_eq!(recorded.lines().count(), 6, "{recorded}");
    assert!(
        recorded.lines().nth(5).unwrap().starts_with("4,1365,"),
        "{recorded}"
    );
    // Checkpoints: a level's disk counts two of its solver state, the one being written
    // and the one before. Levels 0..=13 take 5.2 MB raw (1.9 MB packed at the default
    // ratio), level 13's checkpoints 10.5 MB (twice 5,236,680 bytes of fast state and a
    // 4,096-byte header). On 16 MB both fit raw; on 14 MB one of them (the build keeps one
    // at a time); on 10 MB one beside the packed levels. Levels 0..=14 take 9.6 MB raw, 3.5
    // MB packed, and a checkpoint of level 14 9.3 MB: on 11 MB none fits beside them.
    let empty = tmp.path().join("empty");
    fs::create_dir_all(&empty).unwrap();
    let plan_to = |top: &str, disk: Option<&str>, more: &[&str]| {
        let mut a = vec![
            "plan",
            "--max-seeds",
            top,
            "--memory-per-node",
            "24",
            "--cores-per-node",
            "2",
            "--dir",
            empty.to_str().unwrap(),
            "--rates",
            csv,
        ];
        if let Some(d) = disk {
            a.extend_from_slice(&["--disk-per-node", d]);
        }
        a.extend_from_slice(more);
        ok(&a)
    };
    let plan13 = |disk: Option<&str>, more: &[&str]| plan_to("13", disk, more);
    let line = |out: &str, n: usize| {
        out.lines()
            .find(|l| l.split_whitespace().next() == Some(&n.to_string()))
            .unwrap()
            .to_string()
    };
    let out = plan13(Some("0.016"), &[]);
    assert!(line(&out, 13).ends_with("yes"), "{out}");
    assert!(
        out.contains("every level fits") && !out.contains("raw, from"),
        "{out}"
    );
    let out = plan13(Some("0.014"), &[]);
    let r13 = line(&out, 13);
    assert!(r13.contains(" 5 MB ") && r13.contains(" 10 MB "), "{out}");
    assert!(r13.ends_with("yes, one checkpoint at a time"), "{out}");
    assert!(line(&out, 12).ends_with("yes"), "{out}");
    assert!(
        out.contains("and up to 10 MB of checkpoints")
            && out.contains("disk: raw levels and checkpoints run out of disk at level 13")
            && out.contains("needs 12 MB per node")
            && out.contains("raw, from level 13 on the build keeps one checkpoint at a time"),
        "{out}"
    );
    let out = plan13(Some("0.010"), &[]);
    assert!(
        line(&out, 13).ends_with("disk: packed, one checkpoint at a time"),
        "{out}"
    );
    let out = plan13(Some("0.010"), &["--checkpoint-every", "off"]);
    assert!(
        line(&out, 13).ends_with("yes") && !out.contains("of checkpoints"),
        "{out}"
    );
    assert!(out.contains("every level fits"), "{out}");
    let out = plan_to("14", Some("0.011"), &[]);
    assert!(
        line(&out, 14).ends_with("yes, no room for a checkpoint")
            && out.contains("raw, from level 14 on the build has no room for a checkpoint"),
        "{out}"
    );
    // Without --disk-per-node, the checkpoints of a level being built in the folder count
    // as the database's room, as the levels built do.
    let dir = empty.join("awari-6");
    fs::create_dir_all(&dir).unwrap();
    fs::write(dir.join("level-013.t05.awc"), vec![0u8; 3_000_000]).unwrap();
    let out = plan13(None, &[]);
    assert!(
        out.contains(" disk (free, and 3 MB of checkpoints)"),
        "{out}"
    );
}

/// `awari plan` in a folder whose builds recorded their rates: it plans with those of the
/// largest levels, says which and from which file, and runs no calibration.
#[test]
fn plan_takes_the_rates_a_build_recorded() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("db");
    let dir = root.join("awari-6");
    fs::create_dir_all(&dir).unwrap();
    // Levels 22..=25 of Awari on 2 threads, quiet (the CPU time near twice the wall
    // time); level 25 with the compact state and a stream. A level 24 line cut short
    // (a killed build) and a foreign line are left out.
    fs::write(
        dir.join("rates.csv"),
        "level,positions,threads,seconds,forward_seconds,backward_seconds,positions_per_second_per_thread,peak_rss_bytes,cpu_seconds,state,lower,finished_unix\n\
         22,180498825,2,22.562,7.0,15.0,4000063,,42.868,fast,random,1764734400\n\
         23,264623580,2,33.926,11.0,22.0,3900011,,64.459,fast,random,1764734400\n\
         not,a,line\n\
         24,382628610,2,50.346,17.0,33.0,3799990,,95.657,fast,random,1764734400\n\
         25,546177996,2,110.712,36.0,73.0,2466661,,210.353,compact,stream,1764734400\n\
         24,382628610,2,10.0,",
    )
    .unwrap();
    // Level 27 planned on 2 cores and 24 GB from the folder's rates.
    let plan = || {
        run(&[
            "plan",
            "--max-seeds",
            "27",
            "--dir",
            root.to_str().unwrap(),
            "--cores-per-node",
            "2",
            "--memory-per-node",
            "24",
        ])
    };
    let (done, stdout, stderr) = plan();
    assert!(done, "{stderr}");
    assert!(!stderr.contains("calibrating"), "{stderr}");
    assert!(
        stderr.contains("2 line(s) of") && stderr.contains("rates.csv not understood"),
        "{stderr}"
    );
    assert!(
        stdout.contains("measured by the build of level(s) 23, 24, 25 in ")
            && stdout.contains("rates.csv, 2 thread(s)"),
        "{stdout}"
    );
    // Each referred to level 25's size (as size^-0.04 below a billion positions) and to
    // the fast state reading at random: level 23's 3.9 million is 3.79, level 24's 3.8
    // million 3.75, and level 25's 2.47 million compact and streamed 3.70 (times 1.5).
    // The median: level 24's.
    assert!(
        stdout.contains("rate: 3746280 positions/s/thread")
            && stdout.contains(
                "falling as size^-0.04 up to 1.0 billion positions and size^-0.15 beyond"
            ),
        "{stdout}"
    );
    // Level 26 (770,319,837 positions) at that rate lowered to its size, on 2 threads:
    // 1.7 minutes.
    let r26 = 3_746_279.73 * (770_319_837.0f64 / 546_177_996.0).powf(-0.04);
    let minutes = 770_319_837.0 / (r26 * 2.0) / 60.0;
    let row = stdout
        .lines()
        .find(|l| l.trim_start().starts_with("26 "))
        .unwrap();
    assert!(
        row.contains(&format!(" {minutes:.1} min ")),
        "{minutes} {row}"
    );
    assert!(!stdout.contains("beside"), "{stdout}");
    // The same levels built beside other work, their threads on a CPU half the time:
    // said, counted by their CPU time (twice the rate), and the total beside such work.
    let disturbed = |cpu: &str, half: &str| (cpu.to_string(), half.to_string());
    let mut text = fs::read_to_string(dir.join("rates.csv")).unwrap();
    for (cpu, half) in [
        disturbed(",42.868,", ",22.562,"),
        disturbed(",64.459,", ",33.926,"),
        disturbed(",95.657,", ",50.346,"),
        disturbed(",210.353,", ",110.712,"),
    ] {
        text = text.replace(&cpu, &half);
    }
    fs::write(dir.join("rates.csv"), text).unwrap();
    let (done, stdout, stderr) = plan();
    assert!(done, "{stderr}");
    assert!(
        stderr.contains(
            "the levels measured were all built beside other work (threads on a CPU: level 23 \
             50 %, level 24 50 %, level 25 50 %)"
        ),
        "{stderr}"
    );
    assert!(
        stdout.contains("rate: 7492559 positions/s/thread"),
        "{stdout}"
    );
    let total = stdout.lines().find(|l| l.starts_with("total:")).unwrap();
    assert!(
        total.contains(" beside work like that which disturbed the measurement"),
        "{total}"
    );
}
