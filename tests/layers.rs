//! The library's modules form one-way layers (DESIGN.md section 10): a module may use
//! modules of its own layer or below, never above, and the modules of one layer use each
//! other without a circle; nor do the files of a module that is a folder. These tests read
//! the paths of every library file (`crate::` between modules, `super::` too between the
//! files of a folder) and fail on an upward edge or a circle, naming the file and line.

use std::collections::{BTreeMap, VecDeque};
use std::fs;
use std::path::{Path, PathBuf};

/// The layers, bottom first: the first segment of a `crate::` path names its layer.
const LAYERS: [&[&str]; 5] = [&["error", "util"], &["game"], &["db"], &["solve"], &["app"]];

fn layer_of(top: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&top))
}

/// A library module, as `top::file` (`db::store`) or `top` for a single-file module
/// (`error`), and the layer it is in; `None` for files outside the layers (lib.rs, the
/// binary's main.rs and cmd/).
fn module_of(src: &Path, file: &Path) -> Option<(String, usize)> {
    let rel = file.strip_prefix(src).ok()?;
    let parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_string())
        .collect();
    let layer = layer_of(&parts[0])?;
    Some(match parts.as_slice() {
        [top] => (top.clone(), layer),
        [top, file] if file == "mod" => (top.clone(), layer),
        [top, file] => (format!("{top}::{file}"), layer),
        // A module that is a folder (app/serve/): its files are one module.
        [top, sub, _] => (format!("{top}::{sub}"), layer),
        _ => panic!("{}: modules are at most two folders deep", rel.display()),
    })
}

/// The library's files under `dir`, but for those that only unit tests compile: a file
/// of its own for a module declared under `#[cfg(test)]` (`#[cfg(test)] mod tests;`),
/// which is left out as an inline test module is ([`code_lines`]).
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut all = Vec::new();
    all_rust_files(dir, &mut all);
    let mut test_only = Vec::new();
    for f in &all {
        let text = fs::read_to_string(f).unwrap();
        let lines: Vec<&str> = text.lines().map(str::trim).collect();
        // The folder that holds the file's child modules.
        let stem = f.file_stem().unwrap().to_string_lossy();
        let home = if stem == "mod" || stem == "lib" || stem == "main" {
            f.parent().unwrap().to_path_buf()
        } else {
            f.with_extension("")
        };
        for (i, l) in lines.iter().enumerate() {
            let decl = match l.strip_prefix("#[cfg(test)]").map(str::trim) {
                Some("") => lines.get(i + 1).copied().unwrap_or(""),
                Some(rest) => rest,
                None => continue,
            };
            if let Some(name) = decl.strip_prefix("mod ").and_then(|d| d.strip_suffix(';')) {
                test_only.push(home.join(format!("{name}.rs")));
                test_only.push(home.join(name).join("mod.rs"));
            }
        }
    }
    out.extend(all.into_iter().filter(|f| !test_only.contains(f)));
}

fn all_rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            all_rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The code of a file that belongs to the library proper, each line trimmed, with its
/// number: comments and every item under `#[cfg(test)]` are left out (the unit-test
/// module, a helper that other modules' unit tests call, a `use` only they need). Test-only
/// code may use anything: a unit test may check a module against one above it, as the
/// tests of the packed format do against the solver. A `use` over several lines is joined
/// into its first, so that a group broken by rustfmt is read whole.
fn code_lines(text: &str) -> Vec<(usize, String)> {
    let mut out: Vec<(usize, String)> = Vec::new();
    // Inside a test-only item: its depth of brackets so far (those in strings pair up).
    let mut skip: Option<i64> = None;
    let mut open_use = false;
    for (i, line) in text.lines().enumerate() {
        let mut t = line.trim();
        if skip.is_none() {
            if let Some(rest) = t.strip_prefix("#[cfg(test)]") {
                skip = Some(0);
                t = rest.trim();
            }
        }
        if t.is_empty() || t.starts_with("//") {
            continue;
        }
        if let Some(d) = skip.as_mut() {
            // The item ends where its brackets close on a line that ends it: `;` for a
            // `use` or a constant, `}` for a block, `,` for a field. Its other
            // attributes come first.
            if !t.starts_with("#[") {
                *d += t.matches(['(', '[', '{']).count() as i64;
                *d -= t.matches([')', ']', '}']).count() as i64;
                if *d <= 0 && t.ends_with([';', '}', ',']) {
                    skip = None;
                }
            }
            continue;
        }
        if open_use {
            out.last_mut().unwrap().1.push_str(t);
        } else {
            out.push((i + 1, t.to_string()));
        }
        open_use = (open_use || use_path(t).is_some()) && !t.contains(';');
    }
    out
}

/// The path of a `use` statement, and whether it re-exports (`pub use`, `pub(crate) use`).
fn use_path(stmt: &str) -> Option<(bool, &str)> {
    if let Some(path) = stmt.strip_prefix("use ") {
        return Some((false, path));
    }
    let (vis, path) = stmt.split_once(" use ")?;
    let public = vis == "pub" || (vis.starts_with("pub(") && !vis.contains(' '));
    public.then_some((true, path))
}

/// The modules a line names through `crate::`: `crate::db::store::X` gives `db::store`,
/// `crate::util::group` gives `util`, `crate::game::{index::Index, rules::Board}` gives
/// both.
fn targets(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(at) = rest.find("crate::") {
        rest = &rest[at + "crate::".len()..];
        let top: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let after = &rest[top.len()..];
        if layer_of(&top).is_none() {
            out.push(top);
            continue;
        }
        let single = matches!(top.as_str(), "error" | "util");
        if single {
            out.push(top);
        } else if let Some(inner) = after.strip_prefix("::{") {
            // A group: each item's first segment is a file of the folder.
            let group = &inner[..inner.find('}').unwrap_or(inner.len())];
            for item in group.split(',') {
                let file: String = item
                    .trim()
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if !file.is_empty() {
                    out.push(format!("{top}::{file}"));
                }
            }
        } else if let Some(inner) = after.strip_prefix("::") {
            let file: String = inner
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            out.push(format!("{top}::{file}"));
        } else {
            out.push(top);
        }
    }
    out
}

/// What follows each `prefix` (`super::`, `crate::solve::level::`) that starts a path in a
/// line (not the `super::` of `super::super::`, nor the `state::` of `mystate::`).
fn tails<'a>(line: &'a str, prefix: &str) -> Vec<&'a str> {
    line.match_indices(prefix)
        .filter(|(at, _)| {
            !line[..*at].ends_with(|c: char| c == ':' || c == '_' || c.is_alphanumeric())
        })
        .map(|(at, _)| &line[at + prefix.len()..])
        .collect()
}

/// The paths a tail names: `{a::X, Y as Z}` gives `a::X` and `Y as Z`, `a::X;` gives `a::X`.
fn items(tail: &str) -> Vec<&str> {
    let Some(group) = tail.strip_prefix('{') else {
        return vec![tail.split(';').next().unwrap()];
    };
    let (mut out, mut depth, mut start) = (Vec::new(), 0, 0);
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' | ',' if depth == 0 => {
                out.push(group[start..i].trim());
                if c == '}' {
                    break;
                }
                start = i + 1;
            }
            '}' => depth -= 1,
            _ => {}
        }
    }
    out.retain(|s| !s.is_empty());
    out
}

/// The first segment of a path.
fn ident(path: &str) -> String {
    path.trim()
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect()
}

/// The names a `use` brings in: `{a::X, Y as Z, b::{V, W}}` gives `X`, `Z`, `V` and `W`.
fn leaves(tail: &str) -> Vec<String> {
    items(tail)
        .into_iter()
        .flat_map(|item| match item.find('{') {
            Some(at) => leaves(&item[at..]),
            None => vec![item.rsplit([' ', ':']).next().unwrap().to_string()],
        })
        .collect()
}

/// From a file to the files it uses, each with the line that first does.
type Edges<L> = BTreeMap<String, BTreeMap<String, L>>;

/// The edges between the files of a folder module (`solve::level`), given each file's
/// code by name (`mod` for mod.rs). A file uses another through `super::file::...` or
/// `crate::solve::level::file::...`; `super::Item` uses the file mod.rs takes `Item`
/// from (`pub use file::{Item, ...}`, `use file::Item`), or mod.rs for an item of its own.
/// mod.rs uses a file through `file::...` or `self::file::...`, or by a name it takes
/// from the file (`pub use file::Item` then `Item` in its own code); its `mod file;` and
/// `pub use file::...` lines themselves only declare: a child using an item re-exported
/// there is not a circle, but mod.rs using a file's item in its own code while the file
/// uses mod.rs is.
fn folder_edges(folder: &str, files: &BTreeMap<String, Vec<(usize, String)>>) -> Edges<usize> {
    let root = files.get("mod").map_or(&[][..], |c| c.as_slice());
    let mut names: BTreeMap<String, &str> = BTreeMap::new();
    for (_, line) in root {
        let Some((_, path)) = use_path(line) else {
            continue;
        };
        let path = path.strip_prefix("self::").unwrap_or(path);
        for file in files.keys() {
            if let Some(rest) = path.strip_prefix(&format!("{file}::")) {
                for name in leaves(rest) {
                    names.insert(name, file);
                }
            }
        }
    }
    let resolve = |head: &str| match head {
        "super" => None, // `super::super::`: out of the folder
        h if files.contains_key(h) => Some(h.to_string()),
        h => Some(names.get(h).copied().unwrap_or("mod").to_string()),
    };
    let in_crate = format!("crate::{folder}::");
    let mut edges = Edges::new();
    for (file, code) in files {
        for (n, line) in code {
            let mut paths = tails(line, &in_crate);
            if file != "mod" {
                paths.extend(tails(line, "super::"));
            } else if use_path(line).is_some_and(|(public, _)| public) {
                continue;
            } else {
                paths.extend(tails(line, "self::"));
                // `file::...`: the file, however the path goes on.
                for f in files.keys() {
                    if !tails(line, &format!("{f}::")).is_empty() {
                        paths.push(f);
                    }
                }
                // A name taken from a file, used in mod.rs's own code (not a `mod file;`).
                let declares = line.starts_with("mod ") || line.contains(" mod ");
                if use_path(line).is_none() && !declares {
                    for (name, f) in &names {
                        if has_word(line, name) {
                            paths.push(f);
                        }
                    }
                }
            }
            for t in paths
                .into_iter()
                .flat_map(items)
                .filter_map(|p| resolve(&ident(p)))
            {
                if &t != file {
                    edges
                        .entry(file.clone())
                        .or_default()
                        .entry(t)
                        .or_insert(*n);
                }
            }
        }
    }
    edges
}

/// Whether `word` is in `line` as a whole identifier that starts a path (not the
/// `Fast` of `StateKind::Fast`), and not as an enum variant declared (`Fast,`).
fn has_word(line: &str, word: &str) -> bool {
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    let variant = line
        .strip_prefix(word)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with([',', '(', ' ']));
    !variant
        && line.match_indices(word).any(|(at, _)| {
            let before = line[..at].chars().next_back();
            let after = line[at + word.len()..].chars().next();
            !before.is_some_and(|c| is_ident(c) || c == ':') && !after.is_some_and(is_ident)
        })
}

/// The circles of a graph, enough of them to show every edge that is on one: for each
/// edge `a -> b` where `b` leads back to `a`, the shortest way round, each circle once.
fn circles<L>(edges: &Edges<L>) -> Vec<Vec<String>> {
    let mut out: Vec<Vec<String>> = Vec::new();
    for (a, targets) in edges {
        for b in targets.keys() {
            // A breadth-first search from `b`, each node with the node it was reached from.
            let mut from: BTreeMap<&str, &str> = BTreeMap::from([(b.as_str(), "")]);
            let mut queue = VecDeque::from([b.as_str()]);
            while let Some(m) = queue.pop_front() {
                for t in edges.get(m).into_iter().flat_map(|t| t.keys()) {
                    if !from.contains_key(t.as_str()) {
                        from.insert(t, m);
                        queue.push_back(t);
                    }
                }
            }
            if !from.contains_key(a.as_str()) {
                continue;
            }
            // The way back from `a` to `b`, turned round: `a -> b -> ... -> a`.
            let mut circle = vec![a.to_string()];
            let mut m = a.as_str();
            while m != b {
                m = from[m];
                circle.push(m.to_string());
            }
            circle.push(a.to_string());
            circle.reverse();
            // The same circle from another of its nodes is not new.
            let n = circle.len() - 1;
            let seen = out.iter().any(|o| {
                o.len() == n + 1 && (0..n).any(|r| (0..n).all(|k| o[(k + r) % n] == circle[k]))
            });
            if !seen {
                out.push(circle);
            }
        }
    }
    out
}

/// A circle as `a -> b -> a`, then where each of its edges is (`at(a, b)`: file and line).
fn show_circle(circle: &[String], at: impl Fn(&str, &str) -> String) -> String {
    let at: Vec<String> = circle
        .windows(2)
        .map(|w| format!("{} uses {}", at(&w[0], &w[1]), w[1]))
        .collect();
    format!("{} ({})", circle.join(" -> "), at.join(", "))
}

#[test]
fn no_module_uses_one_above_it_and_no_circle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    // A module and its layer; its files (several for a folder module).
    let mut modules: BTreeMap<String, usize> = BTreeMap::new();
    let mut module_files = Vec::new();
    for f in &files {
        if let Some((m, layer)) = module_of(&src, f) {
            modules.insert(m.clone(), layer);
            module_files.push((m, layer, f.clone()));
        }
    }
    // Every layer has its modules, so a renamed folder cannot empty the check.
    for layer in LAYERS {
        for top in layer {
            assert!(
                modules.keys().any(|m| m.split("::").next() == Some(top)),
                "no module in the layer `{top}`"
            );
        }
    }
    let mut problems = Vec::new();
    let mut edges: Edges<String> = Edges::new();
    let mut uses = 0;
    for (m, layer, file) in &module_files {
        let text = fs::read_to_string(file).unwrap();
        let rel = file.strip_prefix(&src).unwrap().display();
        for (n, line) in code_lines(&text) {
            for t in targets(&line) {
                uses += 1;
                let top = t.split("::").next().unwrap();
                let Some(tl) = layer_of(top) else {
                    problems.push(format!(
                        "src/{rel}:{n}: `crate::{t}` is not a module of a layer (use the module's own path, not the crate root's re-export)"
                    ));
                    continue;
                };
                if tl > *layer {
                    problems.push(format!(
                        "src/{rel}:{n}: `{m}` (layer {layer}) uses `{t}` (layer {tl}), a layer above it"
                    ));
                }
                if !modules.contains_key(&t) {
                    problems.push(format!("src/{rel}:{n}: `crate::{t}`: no such module"));
                }
                if &t != m {
                    let at = format!("src/{rel}:{n}");
                    edges.entry(m.clone()).or_default().entry(t).or_insert(at);
                }
            }
        }
    }
    assert!(
        uses > 50,
        "only {uses} crate:: paths found: is the parser broken?"
    );
    for c in circles(&edges) {
        let circle = show_circle(&c, |a, b| edges[a][b].clone());
        problems.push(format!("a circle: {circle}"));
    }
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
}

/// Within a folder module (`solve/level/`) the files are one-way too: a circle between
/// them is invisible to the test above, which sees the folder as one module, and ties
/// the files together so that none can be read or changed alone.
#[test]
fn no_circle_among_the_files_of_a_folder() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    // A folder module (`solve::level`) and the code of its files by name (`mod`: mod.rs).
    let mut folders: BTreeMap<String, BTreeMap<String, Vec<(usize, String)>>> = BTreeMap::new();
    for f in &files {
        let rel: Vec<String> = f
            .strip_prefix(&src)
            .unwrap()
            .iter()
            .map(|p| p.to_string_lossy().into())
            .collect();
        if let [top, sub, file] = rel.as_slice() {
            if layer_of(top).is_some() {
                let text = fs::read_to_string(f).unwrap();
                let name = file.trim_end_matches(".rs").to_string();
                folders
                    .entry(format!("{top}::{sub}"))
                    .or_default()
                    .insert(name, code_lines(&text));
            }
        }
    }
    assert!(
        folders.len() >= 4,
        "only {} folder modules found",
        folders.len()
    );
    let (mut problems, mut found) = (Vec::new(), 0);
    for (folder, code) in &folders {
        let edges = folder_edges(folder, code);
        found += edges.values().map(|t| t.len()).sum::<usize>();
        let dir = folder.replace("::", "/");
        for c in circles(&edges) {
            let circle = show_circle(&c, |a, b| format!("src/{dir}/{a}.rs:{}", edges[a][b]));
            problems.push(format!("a circle inside {folder}: {circle}"));
        }
    }
    // 38 edges when this was written (2 in app::serve, 7 in game::rules, 16 in solve::level,
    // 7 in solve::ranks, 6 in solve::verify): a parser that finds far fewer is broken.
    assert!(
        found >= 30,
        "only {found} edges between the files of a folder: is the parser broken?"
    );
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
}

#[test]
fn the_parser_finds_edges() {
    assert_eq!(
        targets("use crate::db::store::{LevelFile, Values};"),
        ["db::store"]
    );
    assert_eq!(
        targets("use crate::game::{index::Index, rules::Board};"),
        ["game::index", "game::rules"]
    );
    assert_eq!(targets("let x = crate::util::group(3);"), ["util"]);
    assert_eq!(targets("crate::Rules::Awari"), ["Rules"]);
    let text = "use crate::app::query;\n// crate::solve::x\n#[cfg(test)]\nmod tests {\n    fn f() {\n        crate::solve::y();\n    }\n}\nuse crate::db::z;\n";
    let code: Vec<String> = code_lines(text).into_iter().map(|(_, l)| l).collect();
    assert_eq!(code, ["use crate::app::query;", "use crate::db::z;"]);
}

/// The pieces of the folders' parser on a small folder `solve::f`: test-only items left
/// out, a `use` over lines joined, `super::` paths resolved through mod.rs's re-exports.
#[test]
fn the_parser_finds_edges_inside_a_folder() {
    let text = "#[cfg(test)]\n#[inline]\npub(crate) fn only_in_tests(\n    x: u8,\n) -> u8 {\n    x\n}\n#[cfg(test)] use crate::app::z;\nuse super::{\n    a::X,\n    B,\n};\n";
    let code = code_lines(text);
    assert_eq!(code, [(9, "use super::{a::X,B,};".to_string())]);
    let root = "mod a;\nmod b;\npub(crate) use a::{Alpha, Beta as B2};\npub use b::Gamma;\nuse a::Delta;\npub struct Shared;\n#[cfg(test)]\nfn t() {\n    b::y();\n}\nfn h() -> u8 {\n    self::c::N\n}\nconst G: u8 = Gamma + Gammas + x::Alpha;\n";
    let a = "use super::{b::Gamma, Shared};\nuse super::B2;\n";
    let b = "// super::a::x\nfn g() {\n    super::Delta::new();\n    super::super::x::y();\n    crate::solve::f::Alpha;\n}\n";
    let c = "use super::Gamma;\n";
    let files: BTreeMap<String, Vec<(usize, String)>> =
        [("mod", root), ("a", a), ("b", b), ("c", c)]
            .into_iter()
            .map(|(name, text)| (name.to_string(), code_lines(text)))
            .collect();
    let edges = folder_edges("solve::f", &files);
    let want: Edges<usize> = [
        ("a", vec![("b", 1), ("mod", 1)]),
        ("b", vec![("a", 3)]),
        ("c", vec![("b", 1)]),
        ("mod", vec![("a", 5), ("b", 14), ("c", 12)]),
    ]
    .into_iter()
    .map(|(f, t)| {
        (
            f.into(),
            t.into_iter().map(|(t, n)| (t.into(), n)).collect(),
        )
    })
    .collect();
    assert_eq!(edges, want);
    // Each circle once, though `c -> b -> a -> mod -> c` is met again from `mod -> c`;
    // mod.rs using `Gamma` of b.rs, which uses a.rs, which uses mod.rs, is one.
    let want = [
        vec!["a", "b", "a"],
        vec!["a", "mod", "a"],
        vec!["c", "b", "a", "mod", "c"],
        vec!["mod", "b", "a", "mod"],
    ];
    assert_eq!(circles(&edges), want);
}
