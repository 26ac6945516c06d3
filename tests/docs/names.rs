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

use super::read;

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
pub(super) fn code_spans(text: &str) -> Vec<(usize, String)> {
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

pub(super) fn is_ident(s: &str) -> bool {
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
pub(super) fn words(line: &str) -> Vec<&str> {
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
pub(super) fn files_under(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
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
