//! awari.h against src/lib.rs: the same functions (names, argument names and types,
//! return types), constants and struct fields, so that a change on one side that the
//! other lacks fails here. The header is hand-written (no cbindgen to build); this reads
//! both files as text, maps the Rust types to C, and compares. Then the header compiles
//! as C99 and as C++ with warnings as errors.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(name: &str) -> String {
    std::fs::read_to_string(dir().join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// C source without comments and preprocessor lines other than `#define`.
fn c_code(src: &str) -> String {
    let mut out = String::new();
    let mut rest = src;
    while let Some(i) = rest.find("/*") {
        out += &rest[..i];
        let end = rest[i..].find("*/").expect("unclosed comment") + i + 2;
        out.push(' ');
        rest = &rest[end..];
    }
    out += rest;
    out.lines()
        .filter(|l| !l.trim_start().starts_with('#') || l.trim_start().starts_with("#define"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Identifiers, numbers and punctuation, one space apart: a spelling for comparing C.
fn tokens(s: &str) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut word = String::new();
    for c in s.chars() {
        if c.is_alphanumeric() || c == '_' {
            word.push(c);
            continue;
        }
        if !word.is_empty() {
            out.push(std::mem::take(&mut word));
        }
        if !c.is_whitespace() {
            out.push(c.to_string());
        }
    }
    if !word.is_empty() {
        out.push(word);
    }
    out.join(" ")
}

/// The C type of a Rust type of the ABI.
fn c_type(rust: &str) -> String {
    let t = rust.trim();
    if let Some(r) = t.strip_prefix("*const ") {
        return format!("const {} *", c_type(r));
    }
    if let Some(r) = t.strip_prefix("*mut ") {
        return format!("{} *", c_type(r));
    }
    match t {
        "c_char" => "char",
        "c_int" => "int",
        "u8" => "unsigned char",
        "i8" => "signed char",
        "usize" => "size_t",
        "AwariTb" => "awari_tb",
        "AwariMove" => "awari_move",
        _ => panic!("no C type for Rust type {t}: add it to c_type"),
    }
    .to_string()
}

/// The C prototypes of the `extern "C"` functions of src/lib.rs, by name.
fn rust_prototypes(src: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for part in src.split("extern \"C\" fn ").skip(1) {
        let sig = &part[..part.find('{').expect("a body")];
        let (name, rest) = sig.split_once('(').unwrap();
        let (args, ret) = rest.rsplit_once(')').unwrap();
        let ret = match ret.trim().strip_prefix("->") {
            Some(r) => c_type(r),
            None => "void".into(),
        };
        let params: Vec<String> = args
            .split(',')
            .filter(|a| !a.trim().is_empty())
            .map(|a| {
                let (n, t) = a.split_once(':').unwrap();
                format!("{} {}", c_type(t), n.trim())
            })
            .collect();
        let params = if params.is_empty() {
            "void".into()
        } else {
            params.join(", ")
        };
        let name = name.trim().to_string();
        out.insert(name.clone(), tokens(&format!("{ret} {name}({params})")));
    }
    out
}

/// The function prototypes of awari.h, by name.
fn header_prototypes(code: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for stmt in code.split(';') {
        let s = stmt.trim();
        let s = s.rsplit('}').next().unwrap().trim();
        if !s.contains('(') || s.starts_with("typedef") || s.contains("#define") {
            continue;
        }
        let name = s[..s.find('(').unwrap()]
            .rsplit(|c: char| !(c.is_alphanumeric() || c == '_'))
            .next()
            .unwrap()
            .to_string();
        out.insert(name, tokens(s));
    }
    out
}

#[test]
fn functions_match() {
    let rust = rust_prototypes(&read("src/lib.rs"));
    let c = header_prototypes(&c_code(&read("awari.h")));
    assert!(
        rust.len() >= 6,
        "too few functions found in src/lib.rs: {rust:?}"
    );
    assert_eq!(
        rust, c,
        "awari.h and src/lib.rs declare different functions (left: Rust, right: C)"
    );
}

#[test]
fn constants_match() {
    let lib = read("src/lib.rs");
    let mut rust = BTreeMap::new();
    for line in lib.lines() {
        if let Some(rest) = line.strip_prefix("pub const AWARI_") {
            let (name, rest) = rest.split_once(':').unwrap();
            let value = rest.split_once('=').unwrap().1.trim().trim_end_matches(';');
            rust.insert(format!("AWARI_{name}"), value.to_string());
        }
    }
    let code = c_code(&read("awari.h"));
    let mut c = BTreeMap::new();
    for line in code.lines() {
        let l = line.trim().trim_end_matches(',');
        if let Some(rest) = l.strip_prefix("#define AWARI_") {
            if let Some((name, value)) = rest.split_once(' ') {
                c.insert(format!("AWARI_{name}"), value.trim().to_string());
            }
        } else if let Some((name, value)) = l.split_once('=') {
            if name.trim().starts_with("AWARI_") {
                c.insert(name.trim().to_string(), value.trim().to_string());
            }
        }
    }
    assert!(rust.len() >= 8, "too few constants found: {rust:?}");
    assert_eq!(rust, c, "awari.h and src/lib.rs: constants differ");
}

#[test]
fn move_struct_matches() {
    let lib = read("src/lib.rs");
    let body = lib.split("pub struct AwariMove {").nth(1).unwrap();
    let body = &body[..body.find('}').unwrap()];
    let rust: Vec<String> = body
        .lines()
        .filter_map(|l| l.trim().strip_prefix("pub "))
        .map(|f| {
            let (n, t) = f.trim_end_matches(',').split_once(':').unwrap();
            tokens(&format!("{} {};", c_type(t), n.trim()))
        })
        .collect();
    let code = c_code(&read("awari.h"));
    let (before, _) = code
        .split_once("} awari_move;")
        .expect("awari_move in awari.h");
    let body = before.rsplit_once("typedef struct {").unwrap().1;
    let c: Vec<String> = body
        .split(';')
        .map(str::trim)
        .filter(|f| !f.is_empty())
        .map(|f| tokens(&format!("{f};")))
        .collect();
    assert_eq!(rust, c, "awari_move: fields differ (left: Rust, right: C)");
    assert_eq!(std::mem::size_of::<awari_c::AwariMove>(), 4);
    assert_eq!(std::mem::align_of::<awari_c::AwariMove>(), 1);
}

/// Compiles `src` with `compiler` (C or C++ by `lang`), syntax only; false if the
/// compiler is not installed.
fn compiles(compiler: &str, lang: &str, std: &str, src: &str) -> bool {
    let mut child = match Command::new(compiler)
        .args(["-fsyntax-only", "-Wall", "-Wextra", "-Werror", "-pedantic"])
        .arg(format!("-std={std}"))
        .arg("-I")
        .arg(dir())
        .args(["-x", lang, "-"])
        .stdin(std::process::Stdio::piped())
        .spawn()
    {
        Ok(c) => c,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return false,
        Err(e) => panic!("{compiler}: {e}"),
    };
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(src.as_bytes())
        .unwrap();
    let status = child.wait().unwrap();
    assert!(
        status.success(),
        "{compiler} -x {lang}: awari.h does not compile"
    );
    true
}

#[test]
fn header_compiles_as_c_and_cpp() {
    let check = "#include \"awari.h\"\n\
        typedef char size_ok[sizeof(awari_move) == 4 ? 1 : -1];\n\
        typedef char max_ok[AWARI_MAX_MOVES == 8 ? 1 : -1];\n\
        int use(void);\n\
        int use(void) { size_ok a; max_ok b; (void)a; (void)b; return AWARI_OK; }\n";
    // cc is what .ci/run compiles the example with: it must be there.
    assert!(
        compiles("cc", "c", "c99", check),
        "cc not found: the C interface needs a C compiler to test"
    );
    if !compiles("c++", "c++", "c++11", check) {
        eprintln!("c++ not found: the header's C++ guard is not checked");
    }
}
