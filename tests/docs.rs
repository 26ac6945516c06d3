//! The commands shown in README.md and GUIDE.md run. Every fenced code block names its
//! language; the shell blocks are `console` (a transcript: lines that start with `$ ` are
//! commands, the rest is their output) and `sh` (every line that is not blank or a `#`
//! comment is a command). Each command runs with `bash -c` in a scratch folder that holds
//! the database of the README's first command (levels 0..=16 of Awari in `db/awari-6`),
//! a `bench.csv` as GUIDE.md describes it, and an empty `data/`; `awari` is this build's
//! binary, and `cargo run --release --` is read as `awari`. A command must exit with
//! status 0, or with 1 where its line ends in `# exits 1: <why>`, and where a transcript
//! shows its output, print the first line shown (not `...`), numbers aside.
//!
//! A command that cannot run here (a long build, `mpirun`, `awari serve`, which does not
//! end, a command that needs files the scratch folder lacks) says so on its line with
//! `# not run by tests/docs.rs: <why>`; a block whose first line is that comment is
//! skipped whole. A command that is neither runnable (every part of a pipeline or `&&`
//! chain an `awari` command, or `printf`/`echo` feeding one) nor marked fails the test,
//! naming its file and line. The one exception is `cargo test --release` in the README's
//! first block: it is the suite this test is part of, and `.ci/run` runs it.
//!
//! The test also checks that the README stays short, that its first block is the two
//! commands a newcomer runs, and that the links of every page ([`LINKED`]: the README,
//! GUIDE.md, DESIGN.md, CHANGELOG.md and the pages under `data/` and `tools/`) to files
//! and headings resolve, each read from its page's folder.
//!
//! Two more checks read the pages against the source: [`names`], that DESIGN.md names
//! only files and items that exist, and [`sections`], that every DESIGN.md section a
//! comment under `src/` cites exists and is about what the comment says.

mod names;
mod sections;

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::BIN;

/// The mark of a command, or of a whole block, that the test does not run.
const SKIP: &str = "# not run by tests/docs.rs:";
/// The mark of a command whose example shows an error: it must exit with status 1.
const FAILS: &str = "# exits 1:";
/// The pages whose commands run, in this order, in one scratch folder.
const PAGES: [&str; 2] = ["README.md", "GUIDE.md"];
/// Pages whose commands are not run (a log of measurements) but must be marked so.
const NOT_RUN: [&str; 1] = ["data/bench/README.md"];
/// The README's first block: the two commands a newcomer runs on a fresh machine.
const FIRST_BLOCK: [&str; 2] = [
    "cargo run --release -- build --max-seeds 16 && cargo run --release -- query 1 1 1 1 1 2 4 2 3 0 0 0",
    "cargo test --release",
];
/// The test suite itself, which `.ci/run` runs.
const SUITE: &str = "cargo test --release";
/// The most lines the README may have.
const README_LINES: usize = 350;
/// The longest any one command may take.
const COMMAND_LIMIT: Duration = Duration::from_secs(120);

/// A fenced code block: its page, the line of its opening fence, its language and lines.
struct Block {
    page: &'static str,
    line: usize,
    lang: String,
    lines: Vec<String>,
}

/// What to do with a command of a page.
#[derive(Debug, PartialEq)]
enum Step {
    /// Run it; `fails` when it must exit with status 1. `shown`: the first line of output
    /// the page shows for it, if any (not `...`).
    Run {
        command: String,
        fails: bool,
        shown: Option<String>,
    },
    /// A command the docs mark as not run here, with the reason they give.
    Skip,
    /// `cargo test --release`: the suite this test is part of.
    Suite,
}

fn read(page: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(page);
    fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The fenced code blocks of a page; a fence without a language fails.
fn blocks(page: &'static str, text: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut open: Option<Block> = None;
    for (i, line) in text.lines().enumerate() {
        let t = line.trim_start();
        if !t.starts_with("```") {
            if let Some(b) = open.as_mut() {
                b.lines.push(line.to_string());
            }
            continue;
        }
        match open.take() {
            Some(b) => out.push(b),
            None => {
                let lang = t.trim_start_matches('`').trim().to_string();
                assert!(
                    !lang.is_empty(),
                    "{page} line {}: a code block without a language (console, sh, text, rust, ...)",
                    i + 1
                );
                open = Some(Block {
                    page,
                    line: i + 1,
                    lang,
                    lines: Vec::new(),
                });
            }
        }
    }
    assert!(open.is_none(), "{page}: a code block is not closed");
    out
}

/// Whether a command is one the test can run: every part of its pipelines and chains an
/// `awari` command, or `printf`/`echo` feeding one.
fn runnable(command: &str) -> bool {
    let parts: Vec<&str> = command
        .split("&&")
        .flat_map(|p| p.split('|'))
        .map(str::trim)
        .collect();
    parts.iter().any(|p| p.starts_with("awari "))
        && parts.iter().all(|p| {
            ["awari ", "printf ", "echo "]
                .iter()
                .any(|w| p.starts_with(w))
        })
}

/// The commands of a shell block, each with its line in the page and what to do with it;
/// an error names a command that is neither runnable nor marked.
fn steps(block: &Block) -> Result<Vec<(usize, Step)>, String> {
    let console = match block.lang.as_str() {
        "console" => true,
        "sh" => false,
        "bash" | "shell" | "shell-session" => {
            let (page, line, lang) = (block.page, block.line, &block.lang);
            let want = "`console` (a transcript) or `sh` (commands)";
            return Err(format!(
                "{page} line {line}: a shell block is {want}, not `{lang}`"
            ));
        }
        _ => return Ok(Vec::new()),
    };
    let where_ = |k: usize| format!("{} line {}", block.page, block.line + 1 + k);
    let whole = block
        .lines
        .first()
        .is_some_and(|l| l.trim_start().starts_with(SKIP));
    let mut out = Vec::new();
    for (k, line) in block.lines.iter().enumerate() {
        let command = if console {
            match line.strip_prefix("$ ") {
                Some(c) => c.trim(),
                None => continue,
            }
        } else {
            let t = line.trim();
            if t.is_empty() || t.starts_with('#') {
                continue;
            }
            t
        };
        if command.ends_with('\\') {
            return Err(format!(
                "{}: a command continued on the next line; write it on one line",
                where_(k)
            ));
        }
        if let Some((_, why)) = command.split_once(SKIP) {
            if why.trim().is_empty() {
                return Err(format!("{}: `{SKIP}` without a reason", where_(k)));
            }
            out.push((block.line + 1 + k, Step::Skip));
            continue;
        }
        if whole {
            out.push((block.line + 1 + k, Step::Skip));
            continue;
        }
        if block.page == "README.md" && command == SUITE {
            out.push((block.line + 1 + k, Step::Suite));
            continue;
        }
        let (command, fails) = match command.split_once(FAILS) {
            Some((c, why)) if !why.trim().is_empty() => (c.trim(), true),
            Some(_) => return Err(format!("{}: `{FAILS}` without a reason", where_(k))),
            None => (command, false),
        };
        let command = command.replace("cargo run --release -- ", "awari ");
        if !runnable(&command) {
            return Err(format!(
                "{}: `{command}` is neither a command tests/docs.rs runs (awari, or printf/echo \
                 piped into it) nor marked `{SKIP} <why>`",
                where_(k)
            ));
        }
        // The first output line shown under it, in a transcript.
        let shown = match console {
            false => None,
            true => block.lines[k + 1..]
                .iter()
                .take_while(|l| !l.starts_with("$ "))
                .map(|l| l.trim_end())
                .find(|l| !l.is_empty() && l.trim() != "...")
                .map(str::to_string),
        };
        out.push((
            block.line + 1 + k,
            Step::Run {
                command,
                fails,
                shown,
            },
        ));
    }
    Ok(out)
}

/// Runs one command in `dir` with `bin` first on the path; its exit status and output.
fn run(dir: &Path, bin: &Path, logs: &Path, n: usize, command: &str) -> (Option<i32>, String) {
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out_path = logs.join(format!("{n}.out"));
    let out = fs::File::create(&out_path).unwrap();
    let err = out.try_clone().unwrap();
    let mut child = Command::new("bash")
        .args(["-c", command])
        .current_dir(dir)
        .env("PATH", path)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .expect("run bash");
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s.code();
        }
        if start.elapsed() > COMMAND_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    (status, fs::read_to_string(&out_path).unwrap_or_default())
}

/// The anchor GitHub gives a heading: lower case, punctuation other than `-` and `_`
/// dropped, spaces as `-`.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of a page's headings (outside code blocks).
fn anchors(text: &str) -> BTreeSet<String> {
    let mut fenced = false;
    let mut out = BTreeSet::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced && line.starts_with('#') {
            out.insert(slug(line.trim_start_matches('#')));
        }
    }
    out
}

/// The targets of a page's markdown links `](target)`.
fn links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("](") {
        rest = &rest[i + 2..];
        if let Some(j) = rest.find(')') {
            out.push(rest[..j].to_string());
        }
    }
    out
}

#[test]
fn readme_is_short_and_starts_with_the_two_commands() {
    let text = read("README.md");
    let lines = text.lines().count();
    assert!(
        lines <= README_LINES,
        "README.md has {lines} lines; at most {README_LINES} (the details go to GUIDE.md)"
    );
    let first = &blocks("README.md", &text)[0];
    assert_eq!(
        first.lang, "sh",
        "the README's first block is the newcomer's commands"
    );
    assert_eq!(first.lines, FIRST_BLOCK, "the README's first block");
    let ci = fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(".ci/run")).unwrap();
    assert!(
        ci.lines().any(|l| l.trim() == SUITE),
        ".ci/run runs the README's test command, `{SUITE}`"
    );
}

/// The pages whose links must resolve: the two above, the contract, the changes, and the
/// pages beside the data and the bindings. A link is read from the page's own folder.
const LINKED: [&str; 8] = [
    "README.md",
    "GUIDE.md",
    "DESIGN.md",
    "CHANGELOG.md",
    "data/bench/README.md",
    "data/variants.md",
    "tools/python/README.md",
    "tools/c/README.md",
];

/// The links of `page` (a path from the repository's root) that do not resolve: to a file
/// or folder that does not exist, or to a heading that a page does not have.
fn broken_links(root: &Path, page: &str, text: &str) -> Vec<String> {
    let dir = Path::new(page).parent().unwrap_or(Path::new(""));
    let mut bad = Vec::new();
    for link in links(text) {
        if link.starts_with("http://") || link.starts_with("https://") {
            continue;
        }
        let (file, anchor) = match link.split_once('#') {
            Some((f, a)) => (f, Some(a)),
            None => (link.as_str(), None),
        };
        let target = if file.is_empty() {
            root.join(page)
        } else {
            root.join(dir).join(file)
        };
        if !target.exists() {
            bad.push(format!("{page}: link to {link}: no file {file}"));
            continue;
        }
        if let Some(a) = anchor {
            let is_page = target.extension().is_some_and(|e| e == "md");
            let text = fs::read_to_string(&target).unwrap_or_default();
            if !is_page || !anchors(&text).contains(a) {
                let name = if file.is_empty() { page } else { file };
                bad.push(format!("{page}: link to {link}: no such heading in {name}"));
            }
        }
    }
    bad
}

#[test]
fn links_resolve() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut bad = Vec::new();
    let mut count = 0;
    for page in LINKED {
        let text = read(page);
        count += links(&text).len();
        bad.extend(broken_links(root, page, &text));
    }
    assert!(
        count >= 50,
        "only {count} links found: is the parser broken?"
    );
    assert!(bad.is_empty(), "broken links:\n{}", bad.join("\n"));

    // A link is read from its page's folder; a heading must be one of the target page's.
    let page = "data/bench/README.md";
    let text = "[a](../../GUIDE.md#performance) [b](#the-files) [c](2026-12-01-changes.csv)\n\
                [d](GUIDE.md) [e](../../GUIDE.md#nonesuch) [f](#nonesuch)\n";
    assert_eq!(
        broken_links(root, page, text),
        [
            "data/bench/README.md: link to GUIDE.md: no file GUIDE.md",
            "data/bench/README.md: link to ../../GUIDE.md#nonesuch: no such heading in ../../GUIDE.md",
            "data/bench/README.md: link to #nonesuch: no such heading in data/bench/README.md",
        ]
    );
}

#[test]
fn shell_blocks_are_marked() {
    // A page's commands are all runnable or marked, checked without running them, so that
    // a mistake is named before the slow test below runs anything.
    let mut bad = Vec::new();
    for page in PAGES.into_iter().chain(NOT_RUN) {
        for b in blocks(page, &read(page)) {
            match steps(&b) {
                Err(e) => bad.push(e),
                // A page whose commands are not run marks every one of them.
                Ok(steps) if NOT_RUN.contains(&page) => {
                    for (line, step) in steps {
                        if matches!(step, Step::Run { .. }) {
                            bad.push(format!("{page} line {line}: a command not marked `{SKIP} <why>` on a page whose commands are not run"));
                        }
                    }
                }
                Ok(_) => {}
            }
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn marks_are_read() {
    let block = |lang: &str, lines: &[&str]| Block {
        page: "GUIDE.md",
        line: 10,
        lang: lang.to_string(),
        lines: lines.iter().map(|s| s.to_string()).collect(),
    };
    let run = |c: &str, fails, shown: Option<&str>| Step::Run {
        command: c.to_string(),
        fails,
        shown: shown.map(str::to_string),
    };
    let b = block(
        "console",
        &[
            "$ awari count --max-seeds 3",
            "output",
            "$ awari query 4 4 4  # exits 1: too few pits",
            "$ awari serve  # not run by tests/docs.rs: does not end",
            "$ printf '1\\n' | awari query --stdin",
            "$ cargo run --release -- count",
        ],
    );
    assert_eq!(
        steps(&b).unwrap(),
        vec![
            (11, run("awari count --max-seeds 3", false, Some("output"))),
            (13, run("awari query 4 4 4", true, None)),
            (14, Step::Skip),
            (15, run("printf '1\\n' | awari query --stdin", false, None)),
            (16, run("awari count", false, None)),
        ]
    );
    let b = block(
        "sh",
        &["# not run by tests/docs.rs: MPI", "mpirun -np 2 awari"],
    );
    assert_eq!(steps(&b).unwrap(), vec![(12, Step::Skip)]);
    let b = block("sh", &["# a comment", "mpirun -np 2 awari build"]);
    let e = steps(&b).unwrap_err();
    assert!(
        e.contains("GUIDE.md line 12") && e.contains("mpirun"),
        "{e}"
    );
    let b = block(
        "console",
        &["$ curl -s http://x/  # not run by tests/docs.rs:"],
    );
    assert!(steps(&b).unwrap_err().contains("without a reason"));
    assert!(steps(&block("bash", &["awari count"])).is_err());
    assert_eq!(steps(&block("text", &["$ rm -rf /"])).unwrap(), vec![]);
    assert_eq!(
        slug("The JSON interface of `query`"),
        "the-json-interface-of-query"
    );
    assert_eq!(
        slug("Rules, values and the file format"),
        "rules-values-and-the-file-format"
    );
}

/// Minutes together: left out of the quick tier (`--skip slow::`, GUIDE.md "Testing").
mod slow {
    use super::*;

    #[test]
    fn commands_in_the_docs_run() {
        let scratch = tempfile::tempdir().unwrap();
        let bin = scratch.path().join("bin");
        let work = scratch.path().join("work");
        let logs = scratch.path().join("logs");
        for d in [&bin, &work, &logs, &work.join("data")] {
            fs::create_dir_all(d).unwrap();
        }
        std::os::unix::fs::symlink(BIN, bin.join("awari")).unwrap();
        // The rate GUIDE.md's plan example names: 2,000,000 positions a second per thread on
        // level 20, in the columns of `awari bench --csv`.
        fs::write(
            work.join("bench.csv"),
            "level,positions,threads,seconds,forward_seconds,backward_seconds,\
             positions_per_second_per_thread,peak_rss_bytes\n\
             20,80214915,1,40.1075,,,2000000,\n",
        )
        .unwrap();

        let mut ran = 0;
        let mut skipped = 0;
        let mut shown_lines = Vec::new();
        let mut failures: Vec<String> = Vec::new();
        let start = Instant::now();
        for page in PAGES {
            for b in blocks(page, &read(page)) {
                let steps = steps(&b).unwrap_or_else(|e| panic!("{e}"));
                for (line, step) in steps {
                    let (command, fails) = match step {
                        Step::Run {
                            command,
                            fails,
                            shown,
                        } => {
                            shown_lines.push((page, line, command.clone(), shown));
                            (command, fails)
                        }
                        Step::Skip | Step::Suite => {
                            skipped += 1;
                            continue;
                        }
                    };
                    ran += 1;
                    let t = Instant::now();
                    let (status, output) = run(&work, &bin, &logs, ran, &command);
                    let want = if fails { 1 } else { 0 };
                    eprintln!(
                        "{page} line {line}: {command}: status {status:?} in {:.1} s",
                        t.elapsed().as_secs_f64()
                    );
                    if let Some((_, _, _, Some(shown))) = shown_lines.last() {
                        let said = |l: &str| masked(l) == masked(shown);
                        if !output.lines().any(said) {
                            failures.push(format!(
                                "{page} line {line}: `{command}` printed no line like the one \
                                 shown, `{shown}` (numbers aside); it printed:\n{}",
                                output.lines().take(8).collect::<Vec<_>>().join("\n")
                            ));
                        }
                    }
                    if status != Some(want) {
                        let tail: Vec<&str> = output.lines().rev().take(20).collect();
                        let tail: Vec<&str> = tail.into_iter().rev().collect();
                        failures.push(format!(
                            "{page} line {line}: `{command}` exited with {status:?}, expected {want}; \
                             its last lines:\n{}",
                            tail.join("\n")
                        ));
                    }
                }
            }
        }
        eprintln!(
            "{ran} commands run, {skipped} marked as not run, in {:.1} s",
            start.elapsed().as_secs_f64()
        );
        assert!(failures.is_empty(), "{}", failures.join("\n\n"));
        assert!(ran >= 10, "only {ran} commands of the docs ran");
    }
}

/// DESIGN.md section 10 names every source file: a file added under `src/` is placed in
/// its layer on that page too.
#[test]
fn the_source_layout_names_every_file() {
    let design = read("DESIGN.md");
    let start = design
        .find("## 10. Source layout")
        .expect("DESIGN.md section 10");
    let section = &design[start..];
    let section = &section[..section[3..].find("\n## ").map_or(section.len(), |e| e + 3)];
    let mut missing = Vec::new();
    let mut stack = vec![Path::new(env!("CARGO_MANIFEST_DIR")).join("src")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if path.is_dir() {
                stack.push(path);
            } else if name.ends_with(".rs") && name != "tests.rs" && !section.contains(&name) {
                missing.push(path.display().to_string());
            }
        }
    }
    missing.sort();
    assert!(
        missing.is_empty(),
        "not named in DESIGN.md section 10: {missing:?}"
    );
}

/// The keys of a JSON value, nested: `a`, `a.b`, and `a[].b` for the objects of an
/// array (its first element's).
fn json_keys(v: &serde_json::Value, at: &str, out: &mut BTreeSet<String>) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, v) in m {
                let key = if at.is_empty() {
                    k.clone()
                } else {
                    format!("{at}.{k}")
                };
                out.insert(key.clone());
                json_keys(v, &key, out);
            }
        }
        serde_json::Value::Array(a) => {
            if let Some(first) = a.first() {
                json_keys(first, &format!("{at}[]"), out);
            }
        }
        _ => {}
    }
}

/// The answers the README and GUIDE show for a position (`{"best":...}` lines, from
/// `query --json` and the API) have the keys of a real answer, nested ones included.
#[test]
fn json_examples_have_the_keys_of_real_answers() {
    use awari::expert::Database;
    use awari::Rules;
    let tmp = tempfile::tempdir().unwrap();
    crate::common::build_levels(tmp.path(), Rules::Awari, 6, 3);
    let db = Database::open(tmp.path(), Rules::Awari, 6).unwrap();
    let board = db.board(&[0, 0, 0, 0, 0, 1, 1, 1, 0, 0, 0, 0]).unwrap();
    let mut checked = 0;
    for page in ["README.md", "GUIDE.md"] {
        for line in read(page).lines().filter(|l| l.starts_with(r#"{"best":"#)) {
            // The README elides the moves: `[...]`.
            let shown: serde_json::Value = serde_json::from_str(&line.replace("[...]", "[]"))
                .unwrap_or_else(|e| panic!("{page}: {e}: {line}"));
            let real = db.query_json(&board, shown.get("line").is_some()).unwrap();
            let (mut want, mut got) = (BTreeSet::new(), BTreeSet::new());
            json_keys(&real, "", &mut want);
            json_keys(&shown, "", &mut got);
            // Keys under an array the example leaves empty (`[...]`) are not shown.
            want.retain(|k| match k.split_once("[]") {
                None => true,
                Some((array, _)) => got.iter().any(|g| g.starts_with(&format!("{array}[]"))),
            });
            assert_eq!(got, want, "{page}: {line}");
            checked += 1;
        }
    }
    assert!(checked >= 6, "{checked} examples");
}

/// A line of output with its numbers masked (each word holding a digit is `#`) and its
/// spacing made one space: what a page shows and what a run prints compare alike although
/// times, rates and sizes differ.
fn masked(line: &str) -> String {
    line.split_whitespace()
        .map(|w| match w.chars().any(|c| c.is_ascii_digit()) {
            true => "#",
            false => w,
        })
        .collect::<Vec<_>>()
        .join(" ")
}
