//! Every subcommand with edge values in every option (issue 31), generated from the
//! binary's own clap definitions (`awari arguments`, hidden), so that an option added
//! later is tried too: each number and text option set to 0, -1, 1e30, nan, inf, an
//! empty string and a huge integer, and just outside the range its `--help` states; each
//! path set to a missing folder, a file, an empty folder and the database folder itself.
//! Every run must exit 0, 1 or 2 within its time, never panic, and on 1 or 2 print
//! exactly one `error:` line; a number out of its range is refused with exit 2; and a
//! `--dir` naming the database folder itself ends as the root folder does.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use awari::Rules;
use serde_json::Value;
use tempfile::TempDir;

use crate::common::{build_levels, ok, BIN};

/// The edge values every number and text option is given.
const EDGES: [&str; 7] = [
    "0",
    "-1",
    "1e30",
    "nan",
    "inf",
    "",
    "99999999999999999999999999",
];

/// The longest one case may take (a loaded machine of two cores).
const CASE_LIMIT: Duration = Duration::from_secs(30);

/// One argument of one subcommand, as `awari arguments` describes it.
#[derive(Clone, Debug)]
struct Arg {
    command: String,
    /// `--name`, or `<name>` for a positional.
    name: String,
    /// flag, choice, number, path or text.
    kind: String,
    help: String,
}

fn arguments() -> Vec<Arg> {
    ok(&["arguments"])
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            let s = |k: &str| v[k].as_str().unwrap().to_string();
            Arg {
                command: s("command"),
                name: s("arg"),
                kind: s("kind"),
                help: s("help"),
            }
        })
        .collect()
}

/// The range a number option's help states, `lo..=hi`, and whether it is written as a
/// real number (then "just outside" is half and double, not one less and one more).
fn stated_range(arg: &Arg) -> (String, String) {
    let ranges: Vec<(String, String)> = arg
        .help
        .match_indices("..=")
        .filter_map(|(i, _)| {
            let end = |c: char| !(c.is_ascii_alphanumeric() || c == '.');
            let lo = arg.help[..i].rsplit(end).next()?;
            let hi = arg.help[i + 3..].split(end).next()?;
            lo.parse::<f64>().ok()?;
            hi.parse::<f64>().ok()?;
            Some((lo.to_string(), hi.to_string()))
        })
        .collect();
    assert_eq!(
        ranges.len(),
        1,
        "{} {}: the help must state one range lo..=hi: {:?}",
        arg.command,
        arg.name,
        arg.help
    );
    ranges[0].clone()
}

/// Values just outside a stated range.
fn outside((lo, hi): &(String, String)) -> Vec<String> {
    let real = |s: &str| s.contains(['.', 'e']);
    let mut out = Vec::new();
    if real(lo) || real(hi) {
        let (lo, hi): (f64, f64) = (lo.parse().unwrap(), hi.parse().unwrap());
        if lo > 0.0 {
            out.push(format!("{}", lo / 2.0));
        }
        out.push(format!("{}", hi * 2.0));
    } else {
        let (lo, hi): (u128, u128) = (lo.parse().unwrap(), hi.parse().unwrap());
        if lo > 0 {
            out.push((lo - 1).to_string());
        }
        out.push((hi + 1).to_string());
    }
    out
}

/// What every case may use: a small database (`db/awari-6`, levels 0..=5), a file, an
/// empty folder and a bench CSV, copied afresh for each case.
struct Fixture {
    tmp: TempDir,
}

impl Fixture {
    fn new() -> Fixture {
        let tmp = TempDir::new().unwrap();
        let root = tmp.path();
        build_levels(&root.join("db"), Rules::Awari, 6, 5);
        fs::write(root.join("file.txt"), "not a folder\n").unwrap();
        fs::create_dir(root.join("empty")).unwrap();
        let csv = root.join("bench.csv");
        let scratch = root.join("scratch");
        ok(&[
            "bench",
            "--max-seeds",
            "4",
            "--threads",
            "1",
            "--csv",
            csv.to_str().unwrap(),
            "--scratch",
            scratch.to_str().unwrap(),
        ]);
        Fixture { tmp }
    }

    /// A fresh folder for case `n`, with a copy of everything.
    fn case(&self, n: usize) -> PathBuf {
        let dir = self.tmp.path().join(format!("case-{n}"));
        copy_tree(&self.tmp.path().join("db"), &dir.join("db"));
        fs::copy(self.tmp.path().join("file.txt"), dir.join("file.txt")).unwrap();
        fs::copy(self.tmp.path().join("bench.csv"), dir.join("bench.csv")).unwrap();
        fs::create_dir(dir.join("empty")).unwrap();
        dir
    }
}

fn copy_tree(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for e in fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.path().is_dir() {
            copy_tree(&e.path(), &to.join(e.file_name()));
        } else {
            fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

/// The path values a path option is given, by name (`case` is the case's folder).
fn path_values(case: &Path) -> Vec<(&'static str, PathBuf)> {
    vec![
        ("a missing folder", case.join("missing/sub")),
        ("a file", case.join("file.txt")),
        ("an empty folder", case.join("empty")),
        ("the database folder itself", case.join("db/awari-6")),
    ]
}

/// A cheap invocation of `command` in the case folder `case` (a few seconds at most),
/// without `tried`, the argument under test. A subcommand added to the binary needs a line
/// here; the arguments tried come from its definitions.
fn base(command: &str, tried: &str, case: &Path) -> Vec<String> {
    let p = |x: &str| case.join(x).to_str().unwrap().to_string();
    let words = |s: &str| s.split_whitespace().map(String::from).collect::<Vec<_>>();
    let mut args: Vec<String> = match command {
        "build" => words("--max-seeds 3"),
        "query" => words("1 1 1 1 1 0 0 0 0 0 0 0"),
        "play" if tried == "--seeds-per-pit" => vec![],
        "play" => words("--position 1 1 1 0 0 0 0 0 0 0 0 0"),
        "verify" | "stats" => words("--levels 0..=3"),
        "variants" => words("--pits 2 --rules awari --max-positions 1000 --reference-limit 1000"),
        "bench" if tried == "--dir" || tried == "--samples" => {
            words("--probe --max-seeds 3 --samples 100")
        }
        "bench" => {
            let mut a = words("--max-seeds 2 --threads 1 --scratch");
            a.push(p("scratch"));
            a
        }
        "pack" | "unpack" => words("--level 3 --level-of-compression 1"),
        "export" => vec!["--out".into(), p("out"), "--levels".into(), "0..=3".into()],
        "import" => vec![p("empty")],
        "info" | "count" => vec![],
        "plan" => vec![
            "--max-seeds".into(),
            "4".into(),
            "--rates".into(),
            p("bench.csv"),
        ],
        "gather" => vec!["--from".into(), p("empty")],
        "serve" => words("--bind 127.0.0.1:0"),
        other => panic!("no cheap invocation of `awari {other}` in tests/edges.rs: add one"),
    };
    // The argument under test replaces what the base says of it.
    if tried.starts_with('<') {
        args.retain(|a| a.starts_with("--"));
    } else if let Some(i) = args.iter().position(|a| a == tried) {
        args.remove(i);
        while args.get(i).is_some_and(|a| !a.starts_with("--")) {
            args.remove(i);
        }
    }
    if tried != "--dir" && command != "count" && command != "bench" {
        args.push("--dir".into());
        args.push(p("db"));
    }
    args
}

/// One run of the binary.
struct Case {
    args: Vec<String>,
    /// A number out of its stated range: must be refused with exit 2.
    refuse: bool,
    /// The case that must end as this one does (`--dir` as the database folder against
    /// the root), by index.
    same_as: Option<usize>,
}

/// How a run ended: its exit code (`Some(0)` also for a server seen serving) and stderr.
struct Ended {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    seconds: f64,
}

fn run(args: &[String], dir: &Path) -> Ended {
    let out = dir.join("stdout.txt");
    let err = dir.join("stderr.txt");
    let start = Instant::now();
    let mut child = Command::new(BIN)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(fs::File::create(&out).unwrap())
        .stderr(fs::File::create(&err).unwrap())
        .spawn()
        .unwrap();
    let serving = || fs::read_to_string(&out).is_ok_and(|s| s.contains("serving http://"));
    let code = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status.code();
        }
        // A server that serves has done what it was asked: stopped here.
        if args[0] == "serve" && serving() {
            child.kill().unwrap();
            child.wait().unwrap();
            break Some(0);
        }
        if start.elapsed() > CASE_LIMIT {
            child.kill().unwrap();
            child.wait().unwrap();
            break None;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    Ended {
        code,
        stdout: fs::read_to_string(&out).unwrap_or_default(),
        stderr: fs::read_to_string(&err).unwrap_or_default(),
        seconds: start.elapsed().as_secs_f64(),
    }
}

/// What is wrong with how a case ended, if anything.
fn problem(case: &Case, e: &Ended) -> Option<String> {
    let errors = e.stderr.lines().filter(|l| l.starts_with("error:")).count();
    match e.code {
        None => Some(format!(
            "no exit within {CASE_LIMIT:?} (a hang, or killed by a signal)"
        )),
        _ if e.stderr.contains("panicked") => Some("a panic".into()),
        Some(c) if !(0..=2).contains(&c) => Some(format!("exit {c}, not 0, 1 or 2")),
        Some(c) if c != 0 && errors != 1 => Some(format!("exit {c} with {errors} error lines")),
        Some(c) if case.refuse && c != 2 => Some(format!("exit {c}: out of range, not refused")),
        _ => None,
    }
}

#[test]
fn every_option_of_every_command_answers_edge_values_in_one_line() {
    let fixture = Fixture::new();
    let args = arguments();
    let kinds = |k: &str| args.iter().filter(|a| a.kind == k).count();
    assert!(
        kinds("number") >= 40 && kinds("path") >= 15,
        "`awari arguments` lists too few options: {args:?}"
    );
    let mut cases: Vec<(Case, PathBuf)> = Vec::new();
    // A case of `a` set to the value made from the case's folder.
    let mut push = |a: &Arg, value: &dyn Fn(&Path) -> String, refuse, same_as| {
        let dir = fixture.case(cases.len());
        let mut argv = vec![a.command.clone()];
        argv.extend(base(&a.command, &a.name, &dir));
        let value = value(&dir);
        if a.name.starts_with('<') {
            argv.push(value);
        } else {
            argv.push(format!("{}={value}", a.name));
        }
        let case = Case {
            args: argv,
            refuse,
            same_as,
        };
        cases.push((case, dir));
        cases.len() - 1
    };
    let path = |p: PathBuf| p.to_str().unwrap().to_string();
    for a in &args {
        match a.kind.as_str() {
            "number" => {
                let range = stated_range(a);
                let lo_is_zero = range.0.parse::<f64>().unwrap() == 0.0;
                for v in EDGES {
                    push(a, &|_| v.into(), v != "0" || !lo_is_zero, None);
                }
                for v in outside(&range) {
                    push(a, &|_| v.clone(), true, None);
                }
            }
            "text" => {
                for v in EDGES {
                    push(a, &|_| v.into(), false, None);
                }
            }
            "path" => {
                for i in 0..path_values(Path::new("")).len() {
                    push(a, &|dir| path(path_values(dir)[i].1.clone()), false, None);
                }
                if a.name == "--dir" {
                    let root = push(a, &|dir| path(dir.join("db")), false, None);
                    push(a, &|dir| path(dir.join("db/awari-6")), false, Some(root));
                }
            }
            _ => {}
        }
    }

    let next = AtomicUsize::new(0);
    let ended: Vec<Mutex<Option<Ended>>> = cases.iter().map(|_| Mutex::new(None)).collect();
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some((case, dir)) = cases.get(i) else {
                    break;
                };
                *ended[i].lock().unwrap() = Some(run(&case.args, dir));
            });
        }
    });
    let ended: Vec<Ended> = ended
        .into_iter()
        .map(|m| m.into_inner().unwrap().unwrap())
        .collect();

    let mut wrong = Vec::new();
    for (i, (case, _)) in cases.iter().enumerate() {
        let e = &ended[i];
        let mut what = problem(case, e);
        if let Some(j) = case.same_as {
            if what.is_none() && e.code != ended[j].code {
                what = Some(format!(
                    "exit {:?} with the database folder as --dir, {:?} with its root",
                    e.code, ended[j].code
                ));
            }
        }
        if let Some(what) = what {
            wrong.push(format!(
                "awari {:?}: {what} ({:.1} s)\nstdout: {}\nstderr: {}",
                case.args,
                e.seconds,
                e.stdout.lines().take(5).collect::<Vec<_>>().join("\n  "),
                e.stderr
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "{} of {} cases:\n{}",
        wrong.len(),
        cases.len(),
        wrong.join("\n")
    );
}
