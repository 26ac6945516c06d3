//! The library's modules form one-way layers (DESIGN.md section 10): a module may use
//! modules of its own layer or below, never above, and the modules of one layer use each
//! other without a circle. This test reads the `crate::` paths of every library file and
//! fails on an upward edge or a circle, naming the file and line.

use std::collections::{BTreeMap, BTreeSet};
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

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The code of a file that belongs to the library proper: comments and the unit-test
/// module at the end are left out (unit tests may check a module against one above it,
/// as the tests of the packed format do against the solver).
fn code_lines(text: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let lines: Vec<&str> = text.lines().collect();
    // Inside the test module: its brace depth (braces in strings come in pairs).
    let mut depth: Option<i64> = None;
    for (i, line) in lines.iter().enumerate() {
        let t = line.trim_start();
        if let Some(d) = depth.as_mut() {
            *d += line.matches('{').count() as i64 - line.matches('}').count() as i64;
            if *d <= 0 {
                depth = None;
            }
            continue;
        }
        if t == "#[cfg(test)]" && lines.get(i + 1).is_some_and(|l| l.trim() == "mod tests {") {
            depth = Some(0);
            continue;
        }
        if t.starts_with("//") {
            continue;
        }
        out.push((i + 1, *line));
    }
    out
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
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut uses = 0;
    for (m, layer, file) in &module_files {
        let text = fs::read_to_string(file).unwrap();
        let rel = file.strip_prefix(&src).unwrap().display();
        for (n, line) in code_lines(&text) {
            for t in targets(line) {
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
                    edges.entry(m.clone()).or_default().insert(t);
                }
            }
        }
    }
    assert!(
        uses > 50,
        "only {uses} crate:: paths found: is the parser broken?"
    );
    // A circle: a depth-first search that meets a module still on its path.
    fn visit(
        m: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
        problems: &mut Vec<String>,
    ) {
        if let Some(at) = path.iter().position(|p| p == m) {
            let mut circle = path[at..].to_vec();
            circle.push(m.to_string());
            problems.push(format!("a circle: {}", circle.join(" -> ")));
            return;
        }
        if !done.insert(m.to_string()) {
            return;
        }
        path.push(m.to_string());
        for t in edges.get(m).into_iter().flatten() {
            visit(t, edges, path, done, problems);
        }
        path.pop();
    }
    let mut done = BTreeSet::new();
    for m in modules.keys() {
        visit(m, &edges, &mut Vec::new(), &mut done, &mut problems);
    }
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
    let code: Vec<&str> = code_lines(text).into_iter().map(|(_, l)| l).collect();
    assert_eq!(code, ["use crate::app::query;", "use crate::db::z;"]);
}
