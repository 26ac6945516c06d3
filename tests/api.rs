//! The library's public items, as `src/lib.rs` re-exports them, against the list committed
//! in `tests/public-api.txt`: a change of the surface is a deliberate diff. After a
//! change meant to be made, `AWARI_BLESS=1 cargo test --release --test tests api::`
//! writes the list again.

use std::fs;
use std::path::Path;

/// Every public item of `lib.rs`: `awari::X` for a root re-export, `awari::m::X` inside
/// `pub mod m { ... }`, `awari::m` for the module itself; `#[cfg(feature = "f")]` items
/// marked ` (feature f)`.
fn public_items(lib: &str) -> Vec<String> {
    // Comments and doc comments out; the rest as one string of tokens.
    let code: String = lib
        .lines()
        .map(|l| match l.trim_start() {
            t if t.starts_with("//") => "",
            _ => l,
        })
        .collect::<Vec<_>>()
        .join("\n");
    let mut items = Vec::new();
    let mut modules: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut feature: Option<String> = None;
    let mut rest = code.as_str();
    while !rest.is_empty() {
        let t = rest.trim_start();
        let path = |extra: &str| {
            let mut p = vec!["awari".to_string()];
            p.extend(modules.iter().map(|m| m.0.clone()));
            p.push(extra.to_string());
            p.join("::")
        };
        let mark = |f: &Option<String>| {
            f.as_ref()
                .map_or(String::new(), |f| format!(" (feature {f})"))
        };
        if let Some(after) = t.strip_prefix("#[cfg(feature = \"") {
            let end = after.find('"').unwrap();
            feature = Some(after[..end].to_string());
            rest = &after[end..];
            rest = &rest[rest.find(']').unwrap() + 1..];
            continue;
        }
        if let Some(after) = t.strip_prefix("pub mod ") {
            let name: String = after
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            items.push(format!("{}{}", path(&name), mark(&feature)));
            modules.push((name, depth));
            feature = None;
            let open = after.find('{').unwrap();
            depth += 1;
            rest = &after[open + 1..];
            continue;
        }
        if let Some(after) = t.strip_prefix("pub use ") {
            let end = after.find(';').unwrap();
            let stmt: String = after[..end]
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ");
            let names: Vec<String> = match stmt.find('{') {
                Some(open) => stmt[open + 1..stmt.rfind('}').unwrap()]
                    .split(',')
                    .map(|s| s.trim().to_string())
                    .filter(|s| !s.is_empty())
                    .collect(),
                None => vec![stmt.rsplit("::").next().unwrap().to_string()],
            };
            for n in names {
                let shown = n.rsplit(" as ").next().unwrap().to_string();
                items.push(format!("{}{}", path(&shown), mark(&feature)));
            }
            feature = None;
            rest = &after[end + 1..];
            continue;
        }
        let Some(c) = t.chars().next() else { break };
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if modules.last().is_some_and(|m| m.1 == depth) {
                    modules.pop();
                }
            }
            _ => {}
        }
        if c != '#' && !c.is_whitespace() {
            feature = feature.filter(|_| c == '#');
        }
        rest = &t[c.len_utf8()..];
    }
    items.sort();
    items
}

#[test]
fn the_public_items_are_the_committed_list() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let lib = fs::read_to_string(root.join("src/lib.rs")).unwrap();
    let now = public_items(&lib).join("\n") + "\n";
    let list = root.join("tests/public-api.txt");
    if std::env::var_os("AWARI_BLESS").is_some() {
        fs::write(&list, &now).unwrap();
        return;
    }
    let committed = fs::read_to_string(&list).unwrap_or_default();
    if committed != now {
        let old: Vec<&str> = committed.lines().collect();
        let new: Vec<&str> = now.lines().collect();
        let added: Vec<&&str> = new.iter().filter(|l| !old.contains(l)).collect();
        let removed: Vec<&&str> = old.iter().filter(|l| !new.contains(l)).collect();
        panic!(
            "the public surface changed: added {added:?}, removed {removed:?}; if meant, run \
             AWARI_BLESS=1 cargo test --release --test tests api:: and commit tests/public-api.txt"
        );
    }
}

#[test]
fn the_lister_reads_modules_groups_and_features() {
    let lib = "/// doc with pub use x;\npub use a::{B, c as D};\npub mod m {\n    pub use x::y::Z;\n    #[cfg(feature = \"f\")]\n    pub use q::R;\n    pub mod n {\n        pub use s::T;\n    }\n    pub use u::V;\n}\npub use w::X;\n";
    assert_eq!(
        public_items(lib),
        [
            "awari::B",
            "awari::D",
            "awari::X",
            "awari::m",
            "awari::m::R (feature f)",
            "awari::m::V",
            "awari::m::Z",
            "awari::m::n",
            "awari::m::n::T",
        ]
    );
}
