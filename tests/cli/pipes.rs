//! Every subcommand with its reader gone (`awari build | head -3`): standard output closed
//! before it prints a line. None panics; each exits as it would have (0 but for the
//! refusal asked for); the work asked for is done all the same: the levels built, the
//! tables made, the files packed, unpacked, exported and imported, the chart written.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use super::{with_position, FIVE};
use crate::common::{text, BIN};

/// Runs the binary with its standard output closed at once (the pipe's reading end
/// dropped before it starts); standard error kept. With `no_stderr`, that too.
fn closed(args: &[&str], no_stderr: bool) -> Output {
    let mut child = Command::new(BIN)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run the awari binary");
    drop(child.stdout.take());
    if no_stderr {
        drop(child.stderr.take());
    }
    child.wait_with_output().unwrap()
}

/// Runs `args` with standard output closed (and with `no_stderr`, standard error): no
/// panic, and exit status 0.
fn quiet_with(args: &[&str], no_stderr: bool) {
    let out = closed(args, no_stderr);
    let stderr = text(&out.stderr);
    assert!(
        out.status.success() && !stderr.contains("panicked"),
        "awari {args:?} with stdout closed (stderr closed: {no_stderr}): {:?}\n{stderr}",
        out.status
    );
}

fn quiet(args: &[&str]) {
    quiet_with(args, false);
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn no_subcommand_panics_on_a_closed_stdout_and_its_work_is_done() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("db");
    let db = root.join("awari-6");
    let level = |n: usize, ext: &str| db.join(format!("level-{n:03}.{ext}"));

    // The build goes on to its last level although nobody reads its report.
    let out = closed(&["build", "--max-seeds", "10", "--dir", s(&root)], false);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(!text(&out.stderr).contains("panicked"));
    for n in 0..=10 {
        assert!(level(n, "awl").exists(), "level {n} not built");
    }
    quiet_with(&["build", "--max-seeds", "11", "--dir", s(&root)], true);
    assert!(level(11, "awl").exists());

    // The distance tables, and a chart of them.
    quiet(&["dtc", "--dir", s(&root)]);
    assert!(level(11, "awd").exists(), "no table of level 11");
    let plot = tmp.path().join("st.svg");
    quiet(&["stats", "--dtc", "--plot", s(&plot), "--dir", s(&root)]);
    let svg = std::fs::read_to_string(&plot).unwrap();
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));

    quiet(&["verify", "--dir", s(&root)]);
    quiet(&with_position(&["query", "--dir", s(&root)], FIVE));
    // Five seeds to move, two the opponent's: a game that goes on.
    let seven = "1 1 1 1 1 0 0 0 2 0 0 0";
    quiet(&with_position(
        &["play", "--dir", s(&root), "--position"],
        seven,
    ));
    quiet(&["info", "--dir", s(&root)]);
    quiet_with(&["stats", "--json", "--dir", s(&root)], true);

    // Packed, unpacked, exported and imported, as asked.
    quiet(&["pack", "--level", "11", "--remove-raw", "--dir", s(&root)]);
    assert!(level(11, "awp").exists() && !level(11, "awl").exists());
    quiet(&[
        "unpack",
        "--level",
        "11",
        "--remove-packed",
        "--dir",
        s(&root),
    ]);
    assert!(level(11, "awl").exists() && !level(11, "awp").exists());
    let scores = tmp.path().join("scores");
    quiet(&[
        "export",
        "--levels",
        "0..=11",
        "--out",
        s(&scores),
        "--dir",
        s(&root),
    ]);
    assert!(scores.join("scores.11").exists());
    let again = tmp.path().join("again");
    quiet(&["import", s(&scores), "--dir", s(&again)]);
    assert_eq!(
        std::fs::read(again.join("awari-6/level-011.awl")).unwrap(),
        std::fs::read(level(11, "awl")).unwrap()
    );

    quiet_with(&["count", "--max-seeds", "30"], true);
    quiet(&["plan", "--max-seeds", "20", "--dir", s(&root)]);
    quiet(&["bench", "--max-seeds", "6", "--threads", "1"]);
    quiet(&[
        "variants",
        "--max-positions",
        "2000",
        "--dir",
        s(&tmp.path().join("v")),
    ]);
    quiet(&["arguments"]);
    // Nothing to gather is a refusal, said on standard error, never a panic.
    std::fs::create_dir_all(tmp.path().join("empty")).unwrap();
    let out = closed(&["gather", "--from", s(&tmp.path().join("empty"))], false);
    let stderr = text(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(out.status.code().is_some(), "gather ended by a signal");
}
