//! The commands shown in README.md and GUIDE.md run. Every fenced code block names its
//! language; the shell blocks are `console` (a transcript: lines that start with `$ ` are
//! commands, the rest is their output) and `sh` (every line that is not blank or a `#`
//! comment is a command). Each command runs with `bash -c` in a scratch folder that holds
//! the database of the README's first command (levels 0..=16 of Awari in `db/awari-6`),
//! a `bench.csv` as GUIDE.md describes it, and an empty `data/`; `awari` is this build's
//! binary, and `cargo run --release --` is read as `awari`. A command must exit with
//! status 0, or with 1 where its line ends in `# exits 1: <why>`.
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
//! commands a newcomer runs, and that links to files and headings of the two pages
//! resolve.
//!
//! DESIGN.md, the contract, must name only what exists: every code span that is a path
//! of the repository (`src/...`, `tests/...`, `tools/...`, `benches/...`, `scripts/...`,
//! `data/...`, `.ci/...`), a bare source file or folder name (`level.rs`, `ranks/`) or a
//! Rust path (`Type::item`, `Type::item()`, `module::item`) must resolve. Items are found
//! by reading `src/` as text: the last segment must be a name the source defines (a
//! function, constant, static, type, trait, module, variant or field), the first a type
//! (upper case) or a module (lower case) of the source. Paths into the standard library,
//! the dependencies and the primitive types (`u8::MAX`) are not checked.

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
    /// Run it; `fails` when it must exit with status 1.
    Run { command: String, fails: bool },
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
        out.push((block.line + 1 + k, Step::Run { command, fails }));
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

/// The page whose names of files and items must exist: the contract.
const CONTRACT: &str = "DESIGN.md";
/// The repository's folders: a span that starts with one of them names a file or folder.
const TREES: [&str; 7] = [
    "src/", "tests/", "tools/", "benches/", "scripts/", "data/", ".ci/",
];
/// Where a bare file or folder name (`level.rs`, `ranks/`) must be found: DESIGN.md's
/// source layout names the files of a folder after naming the folder.
const SOURCE_TREES: [&str; 4] = ["src", "tests", "benches", "tools"];
/// The roots of paths into other crates than this one (besides its dependencies) and of
/// the primitive types' items (`u8::MAX`).
const OTHER_ROOTS: [&str; 17] = [
    "std", "core", "alloc", "u8", "u16", "u32", "u64", "u128", "usize", "i8", "i16", "i32", "i64",
    "i128", "isize", "f32", "f64",
];

/// What a code span of DESIGN.md names.
#[derive(Debug, PartialEq)]
enum Ref {
    /// A file or folder of the repository (`src/game/`, `src/cmd/*.rs`).
    Path(String),
    /// A file or folder by its bare name (`level.rs`, `ranks/`), in a source folder.
    File(String),
    /// A Rust item by its path, `crate::` left out (`State::finish` is `State`, `finish`).
    Item(Vec<String>),
}

/// The code spans of a page outside its fenced blocks, each with the line it starts on
/// (a span may run over a line break). A span opened by a run of `k` backticks is closed
/// by the next run of `k`, as in Markdown.
fn code_spans(text: &str) -> Vec<(usize, String)> {
    let mut prose = String::new();
    let mut fenced = false;
    for line in text.lines() {
        // A fenced line is kept as an empty one, so that line numbers stay right.
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced {
            prose.push_str(line);
        }
        prose.push('\n');
    }
    let b = prose.as_bytes();
    let run = |i: usize| b[i..].iter().take_while(|&&c| c == b'`').count();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'`' {
            i += 1;
            continue;
        }
        let k = run(i);
        let start = i + k;
        let mut j = start;
        let close = loop {
            if j >= b.len() {
                break None;
            }
            if b[j] == b'`' {
                let r = run(j);
                if r == k {
                    break Some(j);
                }
                j += r;
            } else {
                j += 1;
            }
        };
        // An unmatched run is text, as in Markdown.
        let Some(end) = close else {
            i = start;
            continue;
        };
        let line = 1 + b[..start].iter().filter(|&&c| c == b'\n').count();
        out.push((line, prose[start..end].trim().replace('\n', " ")));
        i = end + k;
    }
    out
}

fn is_ident(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// What a code span names, or `None` for the rest (commands, formulas, file names with
/// placeholders such as `level-NNN.awl`, single identifiers).
fn reference(span: &str) -> Option<Ref> {
    let path_chars = |s: &str| {
        s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-./*".contains(c))
    };
    if TREES.iter().any(|t| span.starts_with(t)) && path_chars(span) {
        return Some(Ref::Path(span.to_string()));
    }
    let folder = span.strip_suffix('/').is_some_and(is_ident);
    if (span.ends_with(".rs") && !span.contains('/') || folder) && path_chars(span) {
        return Some(Ref::File(span.to_string()));
    }
    // `Type::item()`, `Type::item(x, y)` and `Type::item(x)?` name the item; a path
    // broken over two lines has a space after a `::`.
    let span = span.replace(":: ", "::");
    let call = span.strip_suffix('?').unwrap_or(&span);
    let path = match call.split_once('(') {
        Some((p, _)) if call.ends_with(')') => p,
        _ => call,
    };
    let segments: Vec<&str> = path.split("::").collect();
    if segments.len() < 2 || !segments.iter().all(|s| is_ident(s)) {
        return None;
    }
    let segments: Vec<String> = segments
        .into_iter()
        .skip_while(|s| matches!(*s, "crate" | "awari" | "self" | "super"))
        .map(str::to_string)
        .collect();
    (!segments.is_empty()).then_some(Ref::Item(segments))
}

/// The names the crate's source defines, found by reading it as text.
#[derive(Default)]
struct Defined {
    /// Every defined name: functions, constants, statics, types, traits, modules, enum
    /// variants and fields.
    names: BTreeSet<String>,
    /// The names of types and traits.
    types: BTreeSet<String>,
    /// The names of modules (`mod x` and the files).
    modules: BTreeSet<String>,
}

impl Defined {
    /// Reads one file of the source.
    fn read(&mut self, text: &str) {
        // Inside the body of a struct or an enum: whether an enum, and the brace depth.
        let mut body: Option<(bool, i64)> = None;
        for line in text.lines() {
            let t = line.trim_start();
            if t.starts_with("//") || t.starts_with('#') {
                continue;
            }
            let words = words(line);
            for pair in words.windows(2) {
                let (keyword, name) = (pair[0], pair[1]);
                let kind = match keyword {
                    "struct" | "enum" | "union" | "trait" | "type" => &mut self.types,
                    "mod" => &mut self.modules,
                    "fn" | "const" | "static" | "macro_rules" => &mut self.names,
                    _ => continue,
                };
                kind.insert(name.to_string());
                self.names.insert(name.to_string());
            }
            if let Some((is_enum, depth)) = body.as_mut() {
                let field = t
                    .strip_prefix("pub(crate) ")
                    .or_else(|| t.strip_prefix("pub(super) "))
                    .or_else(|| t.strip_prefix("pub "))
                    .unwrap_or(t);
                let name: String = field
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                let after = &field[name.len()..];
                let is_field = after.starts_with(':') && !after.starts_with("::");
                let is_variant = *is_enum && *depth == 1;
                if is_ident(&name) && (is_field || is_variant) {
                    self.names.insert(name);
                }
                *depth += brace_balance(line);
                if *depth <= 0 {
                    body = None;
                }
            } else if words
                .iter()
                .any(|w| matches!(*w, "struct" | "enum" | "union"))
                && line.contains('{')
            {
                let is_enum = words.contains(&"enum");
                let depth = brace_balance(line);
                body = (depth > 0).then_some((is_enum, depth));
            }
        }
    }
}

/// The identifiers of a line in order, without lifetimes (`'static` is no `static`).
fn words(line: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in line.char_indices().chain([(line.len(), ' ')]) {
        let part = c.is_ascii_alphanumeric() || c == '_';
        match (start, part) {
            (None, true) => start = Some(i),
            (Some(s), false) => {
                if !line[..s].ends_with('\'') {
                    out.push(&line[s..i]);
                }
                start = None;
            }
            _ => {}
        }
    }
    out
}

fn brace_balance(line: &str) -> i64 {
    line.matches('{').count() as i64 - line.matches('}').count() as i64
}

/// Every file under `dir`, recursively, build outputs and hidden folders left out.
fn files_under(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy();
        if path.is_dir() && (name == "target" || name.starts_with('.')) {
            continue;
        }
        if path.is_dir() {
            files_under(&path, out);
        } else {
            out.push(path);
        }
    }
}

/// Whether a path of the repository exists; a `*` in its last part matches any run of
/// characters (`src/cmd/*.rs`).
fn path_exists(root: &Path, path: &str) -> bool {
    let Some((dir, pattern)) = path.rsplit_once('/').filter(|(_, p)| p.contains('*')) else {
        return root.join(path).exists();
    };
    let (head, tail) = pattern.split_once('*').unwrap();
    let Ok(entries) = fs::read_dir(root.join(dir)) else {
        return false;
    };
    entries.filter_map(|e| e.ok()).any(|e| {
        let name = e.file_name().to_string_lossy().to_string();
        name.len() >= head.len() + tail.len() && name.starts_with(head) && name.ends_with(tail)
    })
}

/// The crates this one depends on, by the names its code uses (`xxhash_rust`).
fn dependencies(manifest: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut in_deps = false;
    for line in manifest.lines() {
        let t = line.trim();
        if t.starts_with('[') {
            in_deps = t.ends_with("dependencies]");
        } else if in_deps && !t.starts_with('#') {
            if let Some((name, _)) = t.split_once('=') {
                out.insert(name.trim().replace('-', "_"));
            }
        }
    }
    out
}

/// How many references to files and items a page makes, and those that do not resolve,
/// one line each with the page's line.
fn broken_references(page: &str, text: &str, root: &Path) -> (usize, Vec<String>) {
    let mut source = Vec::new();
    for tree in SOURCE_TREES {
        files_under(&root.join(tree), &mut source);
    }
    // The names of the files, and of their folders with a `/`.
    let mut file_names = BTreeSet::new();
    for f in &source {
        file_names.insert(f.file_name().unwrap().to_string_lossy().to_string());
        for dir in f
            .strip_prefix(root)
            .unwrap()
            .parent()
            .into_iter()
            .flat_map(Path::iter)
        {
            file_names.insert(format!("{}/", dir.to_string_lossy()));
        }
    }
    let mut defined = Defined::default();
    let mut src = Vec::new();
    files_under(&root.join("src"), &mut src);
    for f in src
        .iter()
        .filter(|f| f.extension().is_some_and(|e| e == "rs"))
    {
        defined.read(&fs::read_to_string(f).unwrap());
        // A file is a module by its name, a folder's `mod.rs` by the folder's.
        let stem = f.file_stem().unwrap().to_string_lossy();
        let module = if stem == "mod" {
            f.parent().unwrap().file_name().unwrap().to_string_lossy()
        } else {
            stem
        };
        defined.modules.insert(module.to_string());
        defined.names.insert(module.to_string());
    }
    let other: BTreeSet<String> = OTHER_ROOTS
        .iter()
        .map(|s| s.to_string())
        .chain(dependencies(&read("Cargo.toml")))
        .collect();
    let mut bad = Vec::new();
    let mut checked = 0;
    for (line, span) in code_spans(text) {
        let Some(r) = reference(&span) else {
            continue;
        };
        checked += 1;
        let problem = match r {
            Ref::Path(p) if !path_exists(root, &p) => "no such file or folder",
            Ref::File(f) if !file_names.contains(&f) => {
                "nothing of that name under src/, tests/, benches/ or tools/"
            }
            Ref::Item(segments) => {
                let (first, last) = (&segments[0], &segments[segments.len() - 1]);
                if other.contains(first) {
                    continue;
                }
                let upper = first.starts_with(|c: char| c.is_ascii_uppercase());
                let known_type = defined.types.contains(first) || first == "Self";
                if segments.len() > 1 && upper && !known_type {
                    "no type of that name under src/"
                } else if segments.len() > 1 && !upper && !defined.modules.contains(first) {
                    "no module of that name under src/"
                } else if !defined.names.contains(last) {
                    "no item of that name under src/"
                } else {
                    continue;
                }
            }
            Ref::Path(_) | Ref::File(_) => continue,
        };
        bad.push(format!("{page} line {line}: `{span}`: {problem}"));
    }
    (checked, bad)
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

#[test]
fn links_resolve() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut bad = Vec::new();
    for page in PAGES {
        let text = read(page);
        for link in links(&text) {
            if link.starts_with("http://") || link.starts_with("https://") {
                continue;
            }
            let (file, anchor) = match link.split_once('#') {
                Some((f, a)) => (f, Some(a)),
                None => (link.as_str(), None),
            };
            let target = if file.is_empty() { page } else { file };
            if !root.join(target).exists() {
                bad.push(format!("{page}: link to {link}: no file {target}"));
                continue;
            }
            if let Some(a) = anchor {
                let ok = target.ends_with(".md") && anchors(&read(target)).contains(a);
                if !ok {
                    bad.push(format!(
                        "{page}: link to {link}: no such heading in {target}"
                    ));
                }
            }
        }
    }
    assert!(bad.is_empty(), "broken links:\n{}", bad.join("\n"));
}

#[test]
fn design_names_only_what_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let (checked, bad) = broken_references(CONTRACT, &read(CONTRACT), root);
    assert!(
        checked >= 40,
        "only {checked} references to files and items found in {CONTRACT}: is the parser broken?"
    );
    assert!(
        bad.is_empty(),
        "{CONTRACT} names what does not exist (correct it to the real names):\n{}",
        bad.join("\n")
    );
}

#[test]
fn references_are_read() {
    let text = "Read `src/x.rs` and `State::finish`, not\n\
                `awari build --max-seeds 16`, `level-NNN.awl`, `n - 2` or `Rules`.\n\
                ```text\n\
                `src/in/a/block.rs`\n\
                ```\n\
                `Index::rank_near()`, `Database::open(dir)?`, `` `a` ``, `crate::game::rules::\n\
                Board`, `crate::`, `level.rs`, `ranks/`, `db/awari-6/` and `src/cmd/*.rs`.\n";
    let refs: Vec<(usize, Ref)> = code_spans(text)
        .into_iter()
        .filter_map(|(line, span)| reference(&span).map(|r| (line, r)))
        .collect();
    let item = |s: &[&str]| Ref::Item(s.iter().map(|s| s.to_string()).collect());
    assert_eq!(
        refs,
        [
            (1, Ref::Path("src/x.rs".into())),
            (1, item(&["State", "finish"])),
            (6, item(&["Index", "rank_near"])),
            (6, item(&["Database", "open"])),
            (6, item(&["game", "rules", "Board"])),
            (7, Ref::File("level.rs".into())),
            (7, Ref::File("ranks/".into())),
            (7, Ref::Path("src/cmd/*.rs".into())),
        ]
    );

    // Against this repository: what exists passes, what does not is named with its line.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let good =
        "`src/game/rules/mod.rs` `src/game/` `src/cmd/*.rs` `tests/docs.rs` `scan.rs` `rules/`\n\
                `Board::turned` `rules::for_each_exit()` `Exits::Moves` `Move::captured`\n\
                `crate::game::rules::MAX_SEEDS` `u8::MAX` `std::mem::swap` `zstd::encode_all`\n";
    let (checked, bad) = broken_references("good", good, root);
    assert_eq!((checked, bad), (14, Vec::<String>::new()));
    let wrong = "`src/nowhere.rs` `src/cmd/*.py` `nowhere.rs` `dist/`\n\
                 `Board::nonesuch` `Nonesuch::turned` `nomodule::for_each_exit` `Exits::Nonesuch`\n";
    let (_, bad) = broken_references("wrong", wrong, root);
    assert_eq!(
        bad,
        [
            "wrong line 1: `src/nowhere.rs`: no such file or folder",
            "wrong line 1: `src/cmd/*.py`: no such file or folder",
            "wrong line 1: `nowhere.rs`: nothing of that name under src/, tests/, benches/ or tools/",
            "wrong line 1: `dist/`: nothing of that name under src/, tests/, benches/ or tools/",
            "wrong line 2: `Board::nonesuch`: no item of that name under src/",
            "wrong line 2: `Nonesuch::turned`: no type of that name under src/",
            "wrong line 2: `nomodule::for_each_exit`: no module of that name under src/",
            "wrong line 2: `Exits::Nonesuch`: no item of that name under src/",
        ]
    );
}

#[test]
fn shell_blocks_are_marked() {
    // A page's commands are all runnable or marked, checked without running them, so that
    // a mistake is named before the slow test below runs anything.
    let mut bad = Vec::new();
    for page in PAGES {
        for b in blocks(page, &read(page)) {
            if let Err(e) = steps(&b) {
                bad.push(e);
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
    let run = |c: &str, fails| Step::Run {
        command: c.to_string(),
        fails,
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
            (11, run("awari count --max-seeds 3", false)),
            (13, run("awari query 4 4 4", true)),
            (14, Step::Skip),
            (15, run("printf '1\\n' | awari query --stdin", false)),
            (16, run("awari count", false)),
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
        let mut failures: Vec<String> = Vec::new();
        let start = Instant::now();
        for page in PAGES {
            for b in blocks(page, &read(page)) {
                let steps = steps(&b).unwrap_or_else(|e| panic!("{e}"));
                for (line, step) in steps {
                    let (command, fails) = match step {
                        Step::Run { command, fails } => (command, fails),
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
