//! The `awari` binary as a user meets it: every error is one line on stderr starting with
//! `error:`, a non-zero exit code and never a panic; damaged, truncated and foreign level
//! files are refused by name; a stopped build keeps its finished levels and resumes;
//! files do not depend on the thread count; the JSON interface of `query` keeps its shape.
//!
//! The shared helpers live here; the tests sit in one file per command: [`query`] (its
//! refusals, damaged and foreign levels, JSON, `--line`, `--stdin`), [`build`] (bad
//! arguments, a full disk, resuming, the folder's lock), [`count`], [`bench`], [`dtc`],
//! [`plan`] and [`pipes`] (every subcommand with its standard output closed).

mod bench;
mod build;
mod count;
mod dtc;
mod pipes;
mod plan;
mod query;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;
use tempfile::TempDir;

use crate::common::{awari, ok, text};

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

/// Checks a run that clap refused (a usage error): exit status 2, no panic, and stderr
/// is one `error:` line, nothing else. Returns the error line.
fn usage_error(args: &[&str], out: &Output) -> String {
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "awari {args:?}: {stderr}");
    assert!(!stderr.contains("panicked"), "awari {args:?}: {stderr}");
    assert!(
        stderr.starts_with("error: ") && stderr.lines().count() == 1,
        "awari {args:?}: {stderr}"
    );
    stderr.trim_end().to_string()
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
