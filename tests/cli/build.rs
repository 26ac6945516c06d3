//! `awari build`: arguments refused before any work, a full disk and a file size limit
//! that stop it with its finished levels intact, a resumed build, the folder's lock and a
//! build too large for the machine.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

use super::{
    assert_same_files, build_rows, error_of, fail, level_files, usage_error, usage_fail,
    with_position, Db, THREE,
};
use crate::common::{awari, ok, text, BIN};

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
            "error: --pits must be 2..=8, got 9",
        ),
        (
            &["--max-seeds", "4", "--pits", "1"][..],
            "error: --pits must be 2..=8, got 1",
        ),
        (
            &["--max-seeds", "200"][..],
            "error: --max-seeds must be 0..=127, got 200",
        ),
        (
            &["--max-seeds", "-1"][..],
            "error: --max-seeds must be 0..=127, got -1",
        ),
        (
            &["--max-seeds=-1"][..],
            "error: --max-seeds must be 0..=127, got -1",
        ),
        (
            &["--max-seeds", "1.5"][..],
            "error: --max-seeds must be a whole number in 0..=127, got '1.5'",
        ),
        (
            &["--max-seeds", "4", "--threads", "0"][..],
            "error: --threads must be 1..=1024, got 0",
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
    let pack = "each rank writes its slice raw, which the levels above read; `awari gather \
                --pack` packs the levels it gathers";
    let random = "each rank holds only its slices of the lower levels, so it reads them as \
                  streams (--lower stream)";
    let spill = "the ranks read the lower levels as streams, so no solver state is spilled";
    let dtc = "the distance tables are made from whole levels: gather the slices, then run \
               `awari dtc`";
    for (extra, flag, why) in [
        (&["--pack"][..], "--pack", pack),
        (&["--lower", "random"][..], "--lower random", random),
        (&["--spill-from", "0"][..], "--spill-from", spill),
        (&["--force", "--pack"][..], "--pack", pack),
        (&["--dtc"][..], "--dtc", dtc),
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
    // The lean state reads its lower levels as streams too: the same level as a build
    // reading them at random.
    let lean = |lower: &str, to: &str| {
        let args = [
            "build",
            "--max-seeds",
            "6",
            "--state",
            "lean",
            "--lower",
            lower,
        ];
        let out = awari(&[&args[..], &["--dir", to]].concat());
        assert!(out.status.success(), "{}", text(&out.stderr));
        assert!(text(&out.stdout).contains(&format!("lean/{lower}")));
        std::fs::read(Path::new(to).join("awari-6/level-006.awl")).unwrap()
    };
    let other = db.root().join("lean");
    let (a, b) = (
        lean("stream", &format!("{root}/lean-stream")),
        lean("random", &other.to_string_lossy()),
    );
    assert!(a == b && a.len() > 64);
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
                e.starts_with("error: --threads must be ")
                    && (e.contains(&format!(", got {t}")) || e.contains(&format!(", got '{t}'"))),
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
            "error: level 56 (866,969,192,310 positions) needs 243.8 GB of solver memory (the lean state), and this machine has "
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
