//! What `--dir` names, as a new user meets it: a `--pits` or `--rules` that contradicts a
//! database folder given as `--dir` is refused by every command (exit status 2, one line
//! naming the folder's database, what was asked and the command to run instead), never
//! nested inside it; a `--dir` that does not exist, or is a file, is said so (exit status
//! 1) rather than reported as a missing level with a build that cannot work.
//!
//! The commands run in the temporary folder with relative paths, as a user types them, so
//! that each message is compared whole.

use std::fs;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use awari::Rules;
use tempfile::TempDir;

use crate::common::{build_levels, text, BIN};

/// A position of 2 seeds on 4, 5 and 6 pits per side.
const FOUR_PITS: &[&str] = &["1", "0", "0", "0", "1", "0", "0", "0"];
const FIVE_PITS: &[&str] = &["1", "0", "0", "0", "0", "1", "0", "0", "0", "0"];
const SIX_PITS: &[&str] = &["1", "0", "0", "0", "0", "0", "1", "0", "0", "0", "0", "0"];

/// Runs the binary in `cwd` with nothing on its standard input.
fn awari_in(cwd: &Path, args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .output()
        .expect("run the awari binary")
}

/// Runs `args` in `cwd`, which must fail with exit status `code`, nothing on stdout and
/// exactly `want` on stderr (one line).
fn refused(cwd: &Path, args: &[&str], code: i32, want: &str) {
    let out = awari_in(cwd, args);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "awari {args:?}: {stderr}");
    assert_eq!(stderr, format!("{want}\n"), "awari {args:?}");
    assert!(
        out.stdout.is_empty(),
        "awari {args:?}: {}",
        text(&out.stdout)
    );
}

/// A temporary folder holding `db/awari-6`, built to level 4.
fn setup() -> TempDir {
    let tmp = TempDir::new().unwrap();
    build_levels(&tmp.path().join("db"), Rules::Awari, 6, 4);
    tmp
}

/// Every command that takes `--dir` and `--pits`/`--rules`: its words before `--dir` and
/// after it (the position of `query`, `play`'s none, ...).
fn commands_with_pits(
    position: &'static [&'static str],
) -> Vec<(Vec<&'static str>, Vec<&'static str>)> {
    vec![
        (vec!["build", "--max-seeds", "3"], vec![]),
        (vec!["query"], position.to_vec()),
        (vec!["play"], vec![]),
        (vec!["verify"], vec![]),
        (vec!["stats"], vec![]),
        (vec!["pack", "--all"], vec![]),
        (vec!["unpack", "--all"], vec![]),
        (vec!["export", "--out", "scores"], vec![]),
        (vec!["import", "scores"], vec![]),
        (vec!["gather", "--from", "ranks"], vec![]),
        (vec!["plan", "--max-seeds", "3"], vec![]),
        (vec!["variants", "--max-positions", "10"], vec![]),
    ]
}

#[test]
fn a_pits_or_rules_against_the_database_folder_is_refused_by_every_command() {
    let tmp = setup();
    let cwd = tmp.path();
    for (asked, want_db, position) in [
        (&["--pits", "5"][..], "awari-5", FIVE_PITS),
        (&["--rules", "oware"][..], "oware-6", SIX_PITS),
        (
            &["--rules", "oware", "--pits", "4"][..],
            "oware-4",
            FOUR_PITS,
        ),
    ] {
        let asked_words = asked.join(" ");
        for (before, after) in commands_with_pits(position) {
            let mut args = before.clone();
            args.extend(["--dir", "db/awari-6"]);
            args.extend(asked);
            args.extend(&after);
            let mut instead = before.clone();
            instead.extend(["--dir", "db"]);
            instead.extend(asked);
            instead.extend(&after);
            let want = format!(
                "error: --dir db/awari-6 is the database awari-6 (awari, 6 pits per side), \
                 not the {want_db} asked for by {asked_words}: run `awari {}` for db/{want_db}, \
                 or leave out {asked_words}",
                instead.join(" ")
            );
            refused(cwd, &args, 2, &want);
        }
        // Nothing made inside the database folder, nor beside it.
        let mut made: Vec<String> = fs::read_dir(cwd.join("db/awari-6"))
            .unwrap()
            .flatten()
            .filter(|e| e.path().is_dir())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        made.sort();
        assert!(made.is_empty(), "folders made in db/awari-6: {made:?}");
        assert!(!cwd.join("db").join(want_db).exists());
    }
    // `--dir=` and a trailing slash: the command suggested keeps the user's spelling.
    refused(
        cwd,
        &[
            "build",
            "--max-seeds",
            "3",
            "--dir=db/awari-6/",
            "--rules",
            "oware",
        ],
        2,
        "error: --dir db/awari-6/ is the database awari-6 (awari, 6 pits per side), not the \
         oware-6 asked for by --rules oware: run `awari build --max-seeds 3 --dir=db --rules \
         oware` for db/oware-6, or leave out --rules oware",
    );
    // Only what contradicts is named: --rules awari agrees.
    refused(
        cwd,
        &[
            "stats",
            "--dir",
            "db/awari-6",
            "--rules",
            "awari",
            "--pits",
            "5",
        ],
        2,
        "error: --dir db/awari-6 is the database awari-6 (awari, 6 pits per side), not the \
         awari-5 asked for by --pits 5: run `awari stats --dir db --rules awari --pits 5` for \
         db/awari-5, or leave out --pits 5",
    );
    assert!(!cwd.join("db/awari-6/oware-6").exists());
}

#[test]
fn flags_that_agree_with_the_database_folder_and_the_command_suggested_work() {
    let tmp = setup();
    let cwd = tmp.path();
    let ok = |args: &[&str]| {
        let out = awari_in(cwd, args);
        assert!(
            out.status.success(),
            "awari {args:?}: {}",
            text(&out.stderr)
        );
        text(&out.stdout)
    };
    // The folder's own rules and size, said again: that database, nothing nested.
    ok(&[
        "build",
        "--max-seeds",
        "4",
        "--dir",
        "db/awari-6",
        "--rules",
        "awari",
        "--pits",
        "6",
    ]);
    let mut query = vec!["query", "--dir", "db/awari-6", "--pits", "6"];
    query.extend(SIX_PITS);
    assert!(ok(&query).contains("value"), "{}", ok(&query));
    // What the refusal says to run builds the database asked for beside it.
    ok(&["build", "--max-seeds", "3", "--dir", "db", "--pits", "5"]);
    assert!(cwd.join("db/awari-5/level-003.awl").exists());
    let dirs: Vec<_> = fs::read_dir(cwd.join("db/awari-6"))
        .unwrap()
        .flatten()
        .filter(|e| e.path().is_dir())
        .collect();
    assert!(dirs.is_empty(), "{dirs:?}");
}

/// Every command that reads databases, with the words after `--dir X`.
fn readers() -> Vec<Vec<&'static str>> {
    let mut query = vec!["query"];
    query.extend(SIX_PITS);
    let mut all = vec![
        query,
        vec!["query", "--stdin"],
        vec!["play"],
        vec!["verify"],
        vec!["stats"],
        vec!["pack", "--all"],
        vec!["unpack", "--level", "3"],
        vec!["export", "--out", "scores"],
        vec!["info"],
        vec!["bench", "--probe", "--max-seeds", "2", "--samples", "10"],
    ];
    if cfg!(feature = "serve") {
        all.push(vec!["serve", "--bind", "127.0.0.1:0"]);
    }
    all
}

/// `words` with `--dir dir` after the first (the subcommand).
fn with_dir<'a>(words: &[&'a str], dir: &'a str) -> Vec<&'a str> {
    let mut args = vec![words[0], "--dir", dir];
    args.extend(&words[1..]);
    args
}

#[test]
fn a_dir_that_does_not_exist_is_said_so_by_every_reader() {
    let tmp = setup();
    let cwd = tmp.path();
    for words in readers() {
        refused(
            cwd,
            &with_dir(&words, "dbb"),
            1,
            "error: --dir dbb: no such folder; give the folder the databases were built in, \
             or build one there: `awari build --max-seeds N --dir dbb` builds levels 0..=N",
        );
        // A database folder that is not there: the build that makes it, under its root.
        refused(
            cwd,
            &with_dir(&words, "db/oware-4"),
            1,
            "error: --dir db/oware-4: no such folder; give the folder the databases were \
             built in, or build one there: `awari build --max-seeds N --pits 4 --rules oware` \
             builds levels 0..=N",
        );
    }
    assert!(!cwd.join("dbb").exists() && !cwd.join("db/oware-4").exists());
    assert!(!cwd.join("scores").exists());
    // The default --dir, where a new user starts: the same.
    let mut query = vec!["query"];
    query.extend(SIX_PITS);
    let empty = TempDir::new().unwrap();
    refused(
        empty.path(),
        &query,
        1,
        "error: --dir db: no such folder; give the folder the databases were built in, or \
         build one there: `awari build --max-seeds N` builds levels 0..=N",
    );
    // A build makes the folder it is given.
    let out = awari_in(cwd, &["build", "--max-seeds", "2", "--dir", "dbb"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(cwd.join("dbb/awari-6/level-002.awl").exists());
}

#[test]
fn a_dir_that_is_a_file_is_said_so_by_every_command() {
    let tmp = setup();
    let cwd = tmp.path();
    fs::write(cwd.join("notes.txt"), "not a folder").unwrap();
    let mut all = readers();
    all.extend([
        vec!["build", "--max-seeds", "3"],
        vec!["import", "scores"],
        vec!["gather", "--from", "ranks"],
        vec!["plan", "--max-seeds", "3"],
        vec!["variants", "--max-positions", "10"],
    ]);
    for words in all {
        for dir in ["notes.txt", "notes.txt/db"] {
            refused(
                cwd,
                &with_dir(&words, dir),
                1,
                "error: notes.txt is a file, not a folder: --dir names the folder of the \
                 databases",
            );
        }
    }
    assert_eq!(
        fs::read_to_string(cwd.join("notes.txt")).unwrap(),
        "not a folder"
    );
}
