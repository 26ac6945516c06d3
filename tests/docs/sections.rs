//! Every DESIGN.md section that a comment under `src/` cites exists, and is about what
//! the comment says.
//!
//! A citation is `section 4.2`, `sections 4.5, 5.5`, `sections 4 and 6 to 9`,
//! `DESIGN.md 3.2`, `section 2(b)` (a part of a section, which its text must name), or,
//! in a comment that names DESIGN.md, a bare `(5.4)`; a citation followed by a quoted
//! name (`section 5.2, "Spilling"`) names a paragraph that the section must hold. A
//! `section N of X.md` of another page than DESIGN.md is not one. Comments are read
//! whole, over their lines, so a citation broken after `section` is read too.
//!
//! A cited section must exist, and it must be about what the comment says, as one of:
//! - the section (with its subsections, for a top section) names the commenting file in
//!   a code span: its path, its folder (`src/solve/level/`, `level/`), its name
//!   (`checkpoint.rs`), its module in a path (`app::line`), or a type or constant it
//!   defines (`BuildOptions::spill_from`);
//! - section 10, the source layout, lists the section (or the top section holding it)
//!   for the file or its folder (`checkpoint.rs` (...; sections 4.5, 5.5)); a folder's
//!   `mod.rs` also has the sections listed for the files of its folder;
//! - the sentence of the citation names the section's topic: a word of its heading (or
//!   of its subsections' headings, for a top section), stemmed, words such as "level"
//!   and "position" that every section could claim left out; or the quoted paragraph;
//! - the citation is one of [`ALLOWED`], each with its reason (an entry that no comment
//!   needs any more fails the test).
//!
//! So `a raw level's header fields (section 4.3)` in `src/db/checkpoint.rs` fails: 4.3 is
//! "Writing", names no checkpoint, and section 10 gives the file 4.5 and 5.5 only; the
//! header is 4.2, "Header".

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

use super::names::{code_spans, files_under, is_ident, words};
use super::read;

/// Citations that no rule above accepts but are right: (file, section, why).
const ALLOWED: [(&str, &str, &str); 2] = [
    (
        "src/app/share.rs",
        "3",
        "a `scores.N` file holds its values in the index order of section 3",
    ),
    (
        "src/solve/verify/mod.rs",
        "2",
        "the local equation the check recomputes is the value's, section 2",
    ),
];

/// Words of headings that say nothing of a section's topic, so many sections share them.
const STOP: [&str; 12] = [
    "the", "and", "any", "what", "inside", "level", "file", "position", "its", "for", "with",
    "name",
];

/// A section of DESIGN.md: its heading, and its text (the heading, its body and, for a
/// top section, its subsections).
struct Section {
    heading: String,
    text: String,
    /// The words of its heading, and of its subsections' for a top section, stemmed.
    topic: BTreeSet<String>,
}

/// The sections of DESIGN.md by number (`"4"`, `"4.2"`).
fn sections(design: &str) -> BTreeMap<String, Section> {
    let lines: Vec<&str> = design.lines().collect();
    let mut heads = Vec::new();
    let mut fenced = false;
    for (i, line) in lines.iter().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        }
        let rest = match (fenced, line.strip_prefix("## "), line.strip_prefix("### ")) {
            (false, Some(r), _) | (false, None, Some(r)) => r,
            _ => continue,
        };
        let (number, heading) = rest.split_once(' ').unwrap_or((rest, ""));
        let number = number.trim_end_matches('.');
        if !number.is_empty() && number.chars().all(|c| c.is_ascii_digit() || c == '.') {
            heads.push((number.to_string(), i, heading.to_string()));
        }
    }
    let mut out = BTreeMap::new();
    for (k, (number, start, heading)) in heads.iter().enumerate() {
        let top = !number.contains('.');
        let end = heads[k + 1..]
            .iter()
            .find(|(n, _, _)| !top || !n.contains('.'))
            .map_or(lines.len(), |h| h.1);
        let mut topic = stems(heading);
        if top {
            let prefix = format!("{number}.");
            for (_, _, h) in heads.iter().filter(|h| h.0.starts_with(&prefix)) {
                topic.extend(stems(h));
            }
        }
        let text = lines[*start..end].join("\n");
        out.insert(
            number.clone(),
            Section {
                heading: heading.clone(),
                text,
                topic,
            },
        );
    }
    out
}

/// A word's stem: lower case, one ending (`ing`, `ed`, `es`, `s`, `e`) taken off, so that
/// "Writing" and "writes", "Captures" and "captured" meet.
fn stem(word: &str) -> String {
    let w = word.to_lowercase();
    for end in ["ing", "ed", "es", "s", "e"] {
        if let Some(s) = w.strip_suffix(end).filter(|s| s.len() >= 3) {
            return s.to_string();
        }
    }
    w
}

/// The stems of a text's words outside code spans, stop words and short words left out.
fn stems(text: &str) -> BTreeSet<String> {
    let mut prose = String::new();
    for (k, part) in text.split('`').enumerate() {
        if k % 2 == 0 {
            prose.push_str(part);
            prose.push(' ');
        }
    }
    let stop: BTreeSet<String> = STOP.iter().map(|w| stem(w)).collect();
    prose
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| w.len() >= 3 && !w.chars().all(|c| c.is_ascii_digit()))
        .map(stem)
        .filter(|w| !stop.contains(w))
        .collect()
}

/// One citation of a DESIGN.md section in a comment.
#[derive(Debug, PartialEq)]
struct Citation {
    line: usize,
    /// The section cited, as `4.2`.
    section: String,
    /// The part named after it: `a` for `section 2(a)`.
    part: Option<char>,
    /// The paragraph named after it in quotes: `Spilling` for `section 5.2, "Spilling"`.
    quoted: Option<String>,
    /// The sentence it stands in.
    sentence: String,
}

/// The comments of a source file, each a run of comment lines joined with spaces, with
/// the line of each joined line's start.
fn comments(source: &str) -> Vec<(String, Vec<(usize, usize)>)> {
    let mut out: Vec<(String, Vec<(usize, usize)>)> = Vec::new();
    let mut open = false;
    for (i, line) in source.lines().enumerate() {
        let t = line.trim_start();
        let Some(body) = t.strip_prefix("//") else {
            open = false;
            continue;
        };
        let body = body
            .strip_prefix('!')
            .or_else(|| body.strip_prefix('/'))
            .unwrap_or(body);
        let body = body.strip_prefix(' ').unwrap_or(body);
        if !open {
            out.push((String::new(), Vec::new()));
            open = true;
        }
        let (text, starts) = out.last_mut().unwrap();
        if !text.is_empty() {
            text.push(' ');
        }
        starts.push((text.len(), i + 1));
        text.push_str(body);
    }
    out
}

/// A section number at the start of `s` (`4`, `4.2`, `2(a)`): the number, the part, and
/// the bytes read. A number followed by more of one (`2,000`, `4.2.1`, `1.5x`) is none.
fn number(s: &str) -> Option<(String, Option<char>, usize)> {
    let b = s.as_bytes();
    let digits = |from: usize| b[from..].iter().take_while(|c| c.is_ascii_digit()).count();
    let mut n = digits(0);
    if n == 0 || n > 2 {
        return None;
    }
    if b.get(n) == Some(&b'.') && b.get(n + 1).is_some_and(u8::is_ascii_digit) {
        let m = digits(n + 1);
        if m > 1 {
            return None;
        }
        n += 1 + m;
    }
    let mut part = None;
    let mut len = n;
    if b.get(n) == Some(&b'(')
        && b.get(n + 1).is_some_and(u8::is_ascii_lowercase)
        && b.get(n + 2) == Some(&b')')
    {
        part = Some(b[n + 1] as char);
        len = n + 3;
    }
    let next = b.get(len).copied().unwrap_or(b' ');
    let after = b.get(len + 1).copied().unwrap_or(b' ');
    let more =
        next.is_ascii_alphanumeric() || (matches!(next, b'.' | b',') && after.is_ascii_digit());
    (!more).then(|| (s[..n].to_string(), part, len))
}

/// The section numbers of a list at the start of `s` (`4.5, 5.5`, `4 and 6 to 9`,
/// `1, 2 and 3`), each with its part, and the bytes read.
fn number_list(s: &str) -> (Vec<(String, Option<char>)>, usize) {
    let mut out: Vec<(String, Option<char>)> = Vec::new();
    let Some((n, part, mut at)) = number(s) else {
        return (out, 0);
    };
    out.push((n, part));
    loop {
        let rest = &s[at..];
        let Some((sep, skip)) = [", and ", ", ", " and ", " to "]
            .iter()
            .find_map(|sep| rest.strip_prefix(sep).map(|_| (*sep, sep.len())))
        else {
            break;
        };
        let Some((n, part, len)) = number(&rest[skip..]) else {
            break;
        };
        if sep == " to " {
            // A range of top sections or of the subsections of one: `6 to 9`, `5.1 to 5.3`.
            let (from, _) = out.pop().unwrap();
            let split = |x: &str| {
                let (a, b) = x.split_once('.').map_or((x, None), |(a, b)| (a, Some(b)));
                (a.to_string(), b.and_then(|b| b.parse::<u32>().ok()))
            };
            match (split(&from), split(&n)) {
                ((a, None), (b, None)) => {
                    let (a, b): (u32, u32) = (a.parse().unwrap(), b.parse().unwrap());
                    out.extend((a..=b).map(|k| (k.to_string(), None)));
                }
                ((a, Some(x)), (b, Some(y))) if a == b => {
                    out.extend((x..=y).map(|k| (format!("{a}.{k}"), None)));
                }
                _ => {
                    out.push((from, None));
                    out.push((n, part));
                }
            }
        } else {
            out.push((n, part));
        }
        at += skip + len;
    }
    (out, at)
}

/// The DESIGN.md citations of one source file's comments.
fn citations(source: &str) -> Vec<Citation> {
    let mut out = Vec::new();
    for (text, starts) in comments(source) {
        let names_design = text.contains("DESIGN.md");
        let line_of = |at: usize| starts.iter().rev().find(|(o, _)| *o <= at).unwrap().1;
        let b = text.as_bytes();
        let mut i = 0;
        while i < b.len() {
            let rest = &text[i..];
            // Where a list of numbers starts, and whether it must be subsections in
            // parentheses (the bare form).
            let (start, bare) = if let Some(r) = ["section ", "sections ", "Section ", "Sections "]
                .iter()
                .find_map(|w| rest.strip_prefix(w).map(|_| w.len()))
            {
                (i + r, false)
            } else if rest.starts_with("DESIGN.md ") {
                (i + "DESIGN.md ".len(), false)
            } else if names_design && rest.starts_with('(') {
                (i + 1, true)
            } else {
                i += rest.chars().next().unwrap().len_utf8();
                continue;
            };
            let (list, len) = number_list(&text[start..]);
            let end = start + len;
            let after = &text[end..];
            let valid = !list.is_empty()
                && (!bare || (after.starts_with(')') && list.iter().all(|(n, _)| n.contains('.'))));
            // `section 3 of GUIDE.md` cites another page.
            let elsewhere = after.strip_prefix(" of ").is_some_and(|a| {
                a.split_whitespace()
                    .next()
                    .map(|w| w.trim_end_matches(|c: char| ",.;:)".contains(c)))
                    .is_some_and(|w| w.ends_with(".md") && w != "DESIGN.md")
            });
            if !valid || elsewhere {
                i = start;
                continue;
            }
            let quoted = after
                .strip_prefix(", \"")
                .and_then(|q| q.split_once('"'))
                .map(|(q, _)| q.to_string());
            let sentence = sentence(&text, i, end);
            for (section, part) in list {
                out.push(Citation {
                    line: line_of(i),
                    section,
                    part,
                    quoted: quoted.clone(),
                    sentence: sentence.clone(),
                });
            }
            i = end;
        }
    }
    out
}

/// The sentence of `text` around bytes `from..to`: from the last `. `, `; ` or `|` before
/// it to the first after it.
fn sentence(text: &str, from: usize, to: usize) -> String {
    let marks = [". ", "; ", "|"];
    let start = marks
        .iter()
        .filter_map(|m| text[..from].rfind(m).map(|k| k + m.len()))
        .max()
        .unwrap_or(0);
    let end = marks
        .iter()
        .filter_map(|m| text[to..].find(m).map(|k| to + k))
        .min()
        .unwrap_or(text.len());
    text[start..end].trim().to_string()
}

/// What names a source file in a code span of DESIGN.md: its path, folders, name, module.
struct FileNames {
    /// `src/db/checkpoint.rs`.
    path: String,
    /// Its folders below `src/` with their `/`: `src/db/`.
    folders: Vec<String>,
    /// Its name, unless `mod.rs`, `lib.rs` or `main.rs`: `checkpoint.rs`.
    name: Option<String>,
    /// The name of its folder with a `/`, below `src/`: `db/`.
    folder: Option<String>,
    /// Its module: the file's stem, or a `mod.rs`'s folder.
    module: String,
    /// The types, traits, constants and statics it defines.
    items: BTreeSet<String>,
    /// Whether it is a folder's `mod.rs`: it stands for its folder's files too.
    is_mod: bool,
}

impl FileNames {
    fn new(path: &str, source: &str) -> FileNames {
        let parts: Vec<&str> = path.split('/').collect();
        let file = parts[parts.len() - 1];
        let folders: Vec<String> = (2..parts.len())
            .map(|k| format!("{}/", parts[..k].join("/")))
            .collect();
        let folder = (parts.len() > 2).then(|| format!("{}/", parts[parts.len() - 2]));
        let is_mod = file == "mod.rs";
        let module = if is_mod {
            parts[parts.len() - 2].to_string()
        } else {
            file.trim_end_matches(".rs").to_string()
        };
        let name = (!matches!(file, "mod.rs" | "lib.rs" | "main.rs")).then(|| file.to_string());
        let mut items = BTreeSet::new();
        for line in source.lines() {
            if line.trim_start().starts_with("//") {
                continue;
            }
            for pair in words(line).windows(2) {
                if matches!(
                    pair[0],
                    "struct" | "enum" | "trait" | "type" | "const" | "static"
                ) && is_ident(pair[1])
                {
                    items.insert(pair[1].to_string());
                }
            }
        }
        FileNames {
            path: path.to_string(),
            folders,
            name,
            folder,
            module,
            items,
            is_mod,
        }
    }

    /// Whether a code span names this file, its folder or what it defines.
    fn named_by(&self, span: &str) -> bool {
        if span == self.path
            || self.folders.iter().any(|f| f == span)
            || self.name.as_deref() == Some(span)
            || self.folder.as_deref() == Some(span)
        {
            return true;
        }
        if self.is_mod && span.starts_with(self.folders.last().unwrap().as_str()) {
            return true;
        }
        let path = span.split('(').next().unwrap_or(span);
        let segments: Vec<&str> = path.split("::").collect();
        (segments.len() > 1 && segments.contains(&self.module.as_str()))
            || self.items.contains(segments[0])
    }
}

/// The sections that section 10, the source layout, lists for a file: in the parentheses
/// after a code span that names the file or its folder (`checkpoint.rs` (...; sections
/// 4.5, 5.5)), a top section standing for its subsections too. A folder's `mod.rs` also
/// takes those of the files of its folder.
fn layout_sections(
    root: &Path,
    layout: &str,
    file: &FileNames,
    all: &BTreeMap<String, Section>,
) -> BTreeSet<String> {
    let folder = root.join(file.folders.last().map_or("src/", String::as_str));
    let mut out = BTreeSet::new();
    let ticks: Vec<usize> = layout.match_indices('`').map(|(i, _)| i).collect();
    for pair in ticks.chunks_exact(2) {
        let span = &layout[pair[0] + 1..pair[1]];
        let named = file.named_by(span) && !span.contains("::");
        let in_folder = file.is_mod
            && span.ends_with(".rs")
            && span != "mod.rs"
            && !span.contains('/')
            && folder.join(span).exists();
        if !(named || in_folder) {
            continue;
        }
        let after = layout[pair[1] + 1..].trim_start();
        if !after.starts_with('(') {
            continue;
        }
        let mut depth = 0;
        let close = after
            .char_indices()
            .find(|&(_, c)| {
                depth += match c {
                    '(' => 1,
                    ')' => -1,
                    _ => 0,
                };
                depth == 0
            })
            .map_or(after.len(), |(i, _)| i);
        let inner = &after[..close];
        for mark in ["section ", "sections ", "; "] {
            for (at, _) in inner.match_indices(mark) {
                for (n, _) in number_list(&inner[at + mark.len()..]).0 {
                    let prefix = format!("{n}.");
                    out.extend(all.keys().filter(|s| s.starts_with(&prefix)).cloned());
                    out.insert(n);
                }
            }
        }
    }
    out
}

/// The citations under `src/` that are wrong, one line each, and how many were read.
fn wrong_citations(root: &Path, design: &str) -> (usize, Vec<String>, BTreeSet<(String, String)>) {
    let all = sections(design);
    let layout = all.get("10").map_or(String::new(), |s| s.text.clone());
    let mut files = Vec::new();
    files_under(&root.join("src"), &mut files);
    files.sort();
    let mut bad = Vec::new();
    let mut allowed_used = BTreeSet::new();
    let mut count = 0;
    for f in files
        .iter()
        .filter(|f| f.extension().is_some_and(|e| e == "rs"))
    {
        let source = fs::read_to_string(f).unwrap();
        let path = f
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        let names = FileNames::new(&path, &source);
        let given = layout_sections(root, &layout, &names, &all);
        for c in citations(&source) {
            count += 1;
            let at = format!("{path} line {}: section {}", c.line, c.section);
            let Some(s) = all.get(&c.section) else {
                bad.push(format!("{at}: DESIGN.md has no such section"));
                continue;
            };
            if let Some(p) = c.part.filter(|p| !s.text.contains(&format!("({p})"))) {
                bad.push(format!(
                    "{at}({p}): section {} has no part ({p})",
                    c.section
                ));
                continue;
            }
            if let Some(q) = c.quoted.as_ref().filter(|q| !s.text.contains(q.as_str())) {
                bad.push(format!("{at} (\"{}\"): no paragraph \"{q}\"", s.heading));
                continue;
            }
            let spans = code_spans(&s.text);
            let names_file = spans.iter().any(|(_, span)| names.named_by(span));
            let topic = !stems(&c.sentence).is_disjoint(&s.topic) || c.quoted.is_some();
            if names_file || given.contains(&c.section) || topic {
                continue;
            }
            if ALLOWED
                .iter()
                .any(|(f, n, _)| *f == path && *n == c.section)
            {
                allowed_used.insert((path.clone(), c.section.clone()));
                continue;
            }
            bad.push(format!(
                "{at} (\"{}\"): the section does not name this file, section 10 does not give \
                 it to the file, and the sentence names nothing of its heading: \"{}\"",
                s.heading, c.sentence
            ));
        }
    }
    (count, bad, allowed_used)
}

#[test]
fn design_sections_cited_in_src_exist_and_fit() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let (count, bad, used) = wrong_citations(root, &read("DESIGN.md"));
    assert!(
        count >= 50,
        "only {count} citations of DESIGN.md found under src/: is the parser broken?"
    );
    assert!(
        bad.is_empty(),
        "comments under src/ cite DESIGN.md sections that do not exist or are about something \
         else (correct the comment, or section 10's list for the file):\n{}",
        bad.join("\n")
    );
    for (file, section, _) in ALLOWED {
        assert!(
            used.contains(&(file.to_string(), section.to_string())),
            "ALLOWED holds ({file}, {section}), which no comment needs any more: remove it"
        );
    }
}

#[test]
fn citations_are_read() {
    let source = "//! Raw files (DESIGN.md section 4): see sections 4.5, 5.5 and\n\
                  //! section 6 to 8, DESIGN.md 3.2, and sections 4 and 6.\n\
                  /// The value (section 2(b)), of 2,000 positions in section 4.3 of GUIDE.md.\n\
                  /// Spilling (DESIGN.md section 5.2, \"Spilling\"), 1.5 times (5.4, 5.5).\n\
                  fn f() {}\n\
                  // (5.4) is bare, and this comment names no page.\n";
    let got: Vec<(usize, String, Option<char>, Option<String>)> = citations(source)
        .into_iter()
        .map(|c| (c.line, c.section, c.part, c.quoted))
        .collect();
    let c = |line: usize, s: &str| (line, s.to_string(), None, None);
    assert_eq!(
        got,
        [
            c(1, "4"),
            c(1, "4.5"),
            c(1, "5.5"),
            c(2, "6"),
            c(2, "7"),
            c(2, "8"),
            c(2, "3.2"),
            c(2, "4"),
            c(2, "6"),
            (3, "2".to_string(), Some('b'), None),
            (4, "5.2".to_string(), None, Some("Spilling".to_string())),
            c(4, "5.4"),
            c(4, "5.5"),
        ]
    );
    assert_eq!(stem("Writing"), stem("writes"));
    assert_eq!(stem("Captures"), stem("captured"));
    assert_eq!(
        sentence("A b. The x (section 4) y; z", 8, 20),
        "The x (section 4) y"
    );
}

#[test]
fn wrong_citations_are_found() {
    // The header of a checkpoint, cited as section 4.3 (Writing) where it is 4.2 (Header):
    // the mistake this check was written for.
    let root = tempfile::tempdir().unwrap();
    let src = root.path().join("src/db");
    fs::create_dir_all(&src).unwrap();
    let checkpoint = |section: &str| {
        format!(
            "//! Checkpoints inside a level (DESIGN.md section 4.5).\n\
             //!\n\
             //! | bytes    | field |\n\
             //! | 0..40    | a raw level's header fields (section {section}) with the magic `AWARICKP` |\n\
             //! | 40       | state encoding (1 fast, 2 compact) |\n\
             pub struct CheckpointHeader;\n"
        )
    };
    let design = read("DESIGN.md");
    fs::write(src.join("checkpoint.rs"), checkpoint("4.3")).unwrap();
    let (count, bad, _) = wrong_citations(root.path(), &design);
    assert_eq!(count, 2);
    assert_eq!(bad.len(), 1, "{bad:?}");
    assert!(
        bad[0].starts_with("src/db/checkpoint.rs line 4: section 4.3 (\"Writing\")"),
        "{}",
        bad[0]
    );
    fs::write(src.join("checkpoint.rs"), checkpoint("4.2")).unwrap();
    assert_eq!(
        wrong_citations(root.path(), &design).1,
        Vec::<String>::new()
    );

    // A section that does not exist, a part it lacks, a paragraph it does not hold, a file
    // the section is not about.
    fs::write(
        src.join("checkpoint.rs"),
        "//! The layout (DESIGN.md section 4.9), the value (section 2(z)).\n\
         //! The spill (DESIGN.md section 5.2, \"Nonesuch\").\n\
         //! Sowing a move (DESIGN.md section 3.5).\n",
    )
    .unwrap();
    let bad = wrong_citations(root.path(), &design).1;
    assert_eq!(bad.len(), 4, "{bad:?}");
    assert!(
        bad[0].contains("line 1: section 4.9: DESIGN.md has no such section"),
        "{}",
        bad[0]
    );
    assert!(
        bad[1].contains("line 1: section 2(z): section 2 has no part (z)"),
        "{}",
        bad[1]
    );
    assert!(
        bad[2].contains("line 2: section 5.2 (\"As implemented"),
        "{}",
        bad[2]
    );
    assert!(
        bad[3].contains("line 3: section 3.5 (\"Limits\")"),
        "{}",
        bad[3]
    );
}
