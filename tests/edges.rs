//! Every subcommand with edge values in every option (issue 31), generated from the
//! binary's own clap definitions (`awari arguments`, hidden), so that an option added
//! later is tried too: each number and text option set to 0, -1, 1e30, nan, inf, an
//! empty string and a huge integer, and just outside the range its `--help` states; each
//! path set to a missing folder, a file, an empty folder and the database folder itself.
//! Every run must exit 0, 1 or 2 within its time, never panic, and on 1 or 2 print
//! exactly one `error:` line (on 2, a refusal of the command line, nothing else); a
//! number out of its range is refused with exit 2, in a line that names the option, its
//! range and the value given; and a
//! `--dir` naming the database folder itself ends as the root folder does.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use awari::Rules;
use serde_json::Value;
use tempfile::TempDir;

use crate::common::{awari, build_levels, ok, text, BIN};

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
        "verify" | "stats" | "dtc" => words("--levels 0..=3"),
        "variants" => words("--pits 2 --rules awari --max-positions 1000 --reference-limit 1000"),
        "bench" if tried == "--dir" || tried == "--samples" => {
            words("--probe --max-seeds 3 --samples 100")
        }
        "bench" => {
            let mut a = words("--max-seeds 2 --threads 1 --scratch");
            a.push(p("scratch"));
            a
        }
        "pack" => words("--level 3 --level-of-compression 1"),
        "unpack" => words("--level 3"),
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
        // A refusal of the command line is its one line, nothing else (no usage, no hint).
        Some(2) if e.stderr.lines().filter(|l| !l.trim().is_empty()).count() != 1 => {
            Some("exit 2 with more than its one line".into())
        }
        // A number refused names its option, what it takes and what it was given.
        Some(2) if case.refuse && !refusal_says_why(case, &e.stderr) => {
            Some("refused without the option, its range and the value given".into())
        }
        _ => None,
    }
}

/// Whether the refusal of a number out of range reads `--option must be A..=B, got X`
/// (the case's last argument is `--option=X`; a positional is not checked).
fn refusal_says_why(case: &Case, stderr: &str) -> bool {
    let last = case.args.last().map(String::as_str).unwrap_or("");
    let Some((flag, given)) = last.strip_prefix("--").and_then(|a| a.split_once('=')) else {
        return true;
    };
    stderr.contains(&format!("error: --{flag} must be "))
        && (stderr.contains(&format!(", got {given}\n"))
            || stderr.contains(&format!(", got '{given}'\n")))
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
                    // The folder of the database the base arguments name (variants:
                    // --pits 2; another would be refused as contradicting them).
                    let own = match a.command.as_str() {
                        "variants" => "db/awari-2",
                        _ => "db/awari-6",
                    };
                    let root = push(a, &|dir| path(dir.join("db")), false, None);
                    push(a, &|dir| path(dir.join(own)), false, Some(root));
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

/// The one `error:` line of a run that must exit with `code`.
fn error_line(args: &[&str], out: &Output, code: i32) -> String {
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "awari {args:?}: {stderr}");
    let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(errors.len(), 1, "awari {args:?}: {stderr}");
    errors[0].to_string()
}

/// `out` without what the clock says: seconds (`0.04`) and rates after " in ".
fn untimed(out: &str) -> String {
    out.lines()
        .map(|l| {
            let l = l.split(" in ").next().unwrap();
            l.split_whitespace()
                .filter(|w| !(w.contains('.') && w.parse::<f64>().is_ok()))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Runs `awari` with `input` on its standard input, which it may leave unread (a run
/// refused before it reads).
fn with_input(args: &[&str], input: &[u8]) -> Output {
    let mut child = Command::new(BIN)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let _ = child.stdin.take().unwrap().write_all(input);
    child.wait_with_output().unwrap()
}

/// Runs `awari` with `args`, words as owned strings.
fn ok_owned(args: &[String]) -> String {
    ok(&args.iter().map(String::as_str).collect::<Vec<_>>())
}

#[test]
fn query_stdin_exits_1_when_the_database_cannot_be_opened() {
    let tmp = TempDir::new().unwrap();
    let root = tmp.path().join("db");
    build_levels(&root, Rules::Awari, 6, 8);
    fs::write(tmp.path().join("file.txt"), "x").unwrap();
    fs::create_dir(tmp.path().join("empty")).unwrap();
    let input = b"1 1 1 1 1 2 4 2 3 0 0 0\n1 1 1 0 0 0 0 0 0 0 0 0\n";
    for (dir, why) in [
        ("missing", "no such folder"),
        ("file.txt", "a file, not a folder"),
        ("empty", "no such folder"),
        ("db/awari-6/../../empty", "no such folder"),
    ] {
        let dir = tmp.path().join(dir);
        let args = ["query", "--stdin", "--dir", dir.to_str().unwrap()];
        let out = with_input(&args, input);
        let e = error_line(&args, &out, 1);
        // A file is no place to build: no build is suggested there.
        let build = e.contains("awari build --max-seeds N");
        assert!(e.contains(why) && build != why.contains("file"), "{e}");
        assert!(
            out.stdout.is_empty(),
            "nothing answered: {}",
            text(&out.stdout)
        );
    }
    // A database folder without level files is no database either.
    let bare = tmp.path().join("bare/awari-6");
    fs::create_dir_all(&bare).unwrap();
    let args = ["query", "--stdin", "--dir", bare.to_str().unwrap()];
    let e = error_line(&args, &with_input(&args, input), 1);
    assert!(e.contains("no level files"), "{e}");
    // Only some positions out of reach: answered line by line, exit 0.
    let args = ["query", "--stdin", "--dir", root.to_str().unwrap()];
    let out = with_input(&args, input);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let lines: Vec<Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(lines[0]["error"].as_str().unwrap().contains("level 16"));
    assert_eq!(lines[1]["value"], 3);
}

#[test]
fn every_command_takes_the_database_folder_itself_as_dir() {
    let tmp = TempDir::new().unwrap();
    let root = tmp.path().join("db");
    build_levels(&root, Rules::Awari, 6, 8);
    let own = root.join("awari-6");
    let (r, o) = (root.to_str().unwrap(), own.to_str().unwrap());
    let three = ["1", "1", "1", "0", "0", "0", "0", "0", "0", "0", "0", "0"];
    let csv = tmp.path().join("bench.csv");
    fs::write(&csv, BENCH_CSV).unwrap();
    let words = |s: &str| s.split_whitespace().map(String::from).collect::<Vec<_>>();
    let mut query = words("query --json");
    query.extend(three.map(String::from));
    let mut plan = words("plan --max-seeds 8 --disk-per-node 10 --rates");
    plan.push(csv.to_str().unwrap().into());
    for args in [
        words("info"),
        query,
        words("stats --json"),
        words("verify"),
        plan,
    ] {
        let with = |dir: &str| {
            let mut a = args.clone();
            a.extend(["--dir".into(), dir.into()]);
            untimed(&ok_owned(&a))
        };
        assert_eq!(with(r), with(o), "awari {args:?}");
    }
    // A level not built: named in the folder given, never in a folder inside it.
    let sixteen = ["1", "1", "1", "1", "1", "2", "4", "2", "3", "0", "0", "0"];
    let mut args = vec!["query", "--dir", o];
    args.extend(sixteen);
    let e = error_line(&args, &awari(&args), 1);
    assert!(
        e.contains(&format!("not built in {o};")) && !e.contains("awari-6/awari-6"),
        "{e}"
    );
    // A build into the folder itself adds to it, nests nothing; the name says the rules.
    ok(&["build", "--max-seeds", "9", "--dir", o]);
    assert!(own.join("level-009.awl").exists() && !own.join("awari-6").exists());
    let oware = root.join("oware-6");
    ok(&[
        "build",
        "--max-seeds",
        "3",
        "--dir",
        oware.to_str().unwrap(),
    ]);
    assert!(oware.join("level-003.awl").exists() && !oware.join("awari-6").exists());
    let mut args = vec!["query", "--json", "--dir", oware.to_str().unwrap()];
    args.extend(three);
    let q: Value = serde_json::from_str(&ok(&args)).unwrap();
    assert_eq!(q["rules"], "oware");
    // info of the folder lists that database alone; of the root, both.
    let of = |dir: &str| ok(&["info", "--dir", dir]);
    assert!(of(o).contains("total: 10 level files"), "{}", of(o));
    assert!(of(r).contains("total: 14 level files"), "{}", of(r));
}

/// A bench CSV of one level: the rate plan takes.
const BENCH_CSV: &str = "level,positions,threads,seconds,forward_seconds,backward_seconds,positions_per_second_per_thread,peak_rss_bytes\n\
    20,84672315,1,40.0,10.0,30.0,2116808,100000000\n";

#[test]
fn build_names_a_file_in_the_way_and_a_folder_it_cannot_make() {
    let tmp = TempDir::new().unwrap();
    let file = tmp.path().join("file.txt");
    fs::write(&file, "x").unwrap();
    for dir in [file.clone(), file.join("sub")] {
        let args = ["build", "--max-seeds", "3", "--dir", dir.to_str().unwrap()];
        let e = error_line(&args, &awari(&args), 1);
        assert_eq!(
            e,
            format!(
                "error: {} is a file, not a folder: --dir names the folder of the databases",
                file.display()
            )
        );
    }
    // /proc takes no new folder, whoever asks.
    #[cfg(target_os = "linux")]
    {
        let args = ["build", "--max-seeds", "3", "--dir", "/proc/awari-edges"];
        let e = error_line(&args, &awari(&args), 1);
        assert!(
            e.starts_with("error: cannot make the folder /proc/awari-edges/awari-6: ")
                && !e.contains("free"),
            "{e}"
        );
    }
}

#[cfg(unix)]
#[test]
fn an_interrupted_build_says_what_it_keeps() {
    let tmp = TempDir::new().unwrap();
    let root = tmp.path().join("db");
    let r = root.to_str().unwrap();
    let args = ["build", "--max-seeds", "24", "--threads", "1", "--dir", r];
    let child = Command::new(BIN)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let dir = root.join("awari-6");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !dir.join("level-012.awl").exists() {
        assert!(Instant::now() < deadline, "level 12 not built in a minute");
        std::thread::sleep(Duration::from_millis(5));
    }
    // SAFETY: a signal to the child this test started.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    let out = child.wait_with_output().unwrap();
    let e = error_line(&args, &out, 130);
    let m: usize = e
        .strip_prefix("error: interrupted: levels 0..=")
        .and_then(|s| s.strip_suffix(" are finished and kept; run the same command to resume"))
        .unwrap_or_else(|| panic!("{e}"))
        .parse()
        .unwrap();
    // The level said is finished, and at most one more (written as the signal came).
    let files = (0..=24)
        .take_while(|n| dir.join(format!("level-{n:03}.awl")).exists())
        .count();
    assert!(
        m >= 11 && (m + 1..=m + 2).contains(&files),
        "{m} said, {files} files: {e}"
    );
    // The same command, to one level more, keeps them.
    let more = (m + 1).to_string();
    let out = ok(&["build", "--max-seeds", &more, "--threads", "1", "--dir", r]);
    assert_eq!(out.matches(" kept ").count(), files.min(m + 2), "{out}");
}

#[test]
fn plans_advice_is_a_fixed_point() {
    let tmp = TempDir::new().unwrap();
    let csv = tmp.path().join("bench.csv");
    fs::write(&csv, BENCH_CSV).unwrap();
    let plan = |max: &str, memory: &str, nodes: &str| {
        let out = ok(&[
            "plan",
            "--max-seeds",
            max,
            "--memory-per-node",
            memory,
            "--nodes",
            nodes,
            "--disk-per-node",
            "1000000",
            "--rates",
            csv.to_str().unwrap(),
            "--dir",
            tmp.path().to_str().unwrap(),
        ]);
        out.lines()
            .find(|l| l.starts_with("memory: ") || *l == "every level fits")
            .unwrap_or_else(|| panic!("no advice: {out}"))
            .to_string()
    };
    let mut advised = 0;
    for (max, memory, nodes) in [
        ("30", "0.01", "1"),
        ("30", "0.05", "3"),
        ("30", "0.5", "1"),
        ("36", "0.5", "2"),
        ("48", "64", "16"),
    ] {
        let advice = plan(max, memory, nodes);
        if advice == "every level fits" {
            continue;
        }
        advised += 1;
        let after = |s: &str| advice.split(s).nth(1).unwrap_or_else(|| panic!("{advice}"));
        let n: usize = after("every level fits on ")
            .split(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        let gb = after("with --memory-per-node ").trim();
        assert_eq!(
            plan(max, memory, &n.to_string()),
            "every level fits",
            "{advice}"
        );
        assert_eq!(plan(max, gb, nodes), "every level fits", "{advice}");
        // The least number of nodes: one fewer does not fit.
        if n - 1 > nodes.parse().unwrap() {
            assert_ne!(plan(max, memory, &(n - 1).to_string()), "every level fits");
        }
    }
    assert!(advised >= 4, "only {advised} plans needed advice");
}

#[test]
fn the_small_untruths_mended() {
    // pack and unpack name both ways of saying which levels.
    for command in ["pack", "unpack"] {
        let args = [command, "--dir", "no-such-db"];
        let e = error_line(&args, &awari(&args), 2);
        assert!(e.contains("required"), "{e}");
        let stderr = text(&awari(&args).stderr);
        assert!(stderr.contains("--level <LEVEL>|--all"), "{stderr}");
    }
    // The line names the opponent's pits as the board does: upper case.
    let tmp = TempDir::new().unwrap();
    let root = tmp.path().join("db");
    build_levels(&root, Rules::Awari, 6, 6);
    let out = ok(&[
        "query",
        "--line",
        "--dir",
        root.to_str().unwrap(),
        "1",
        "1",
        "0",
        "0",
        "0",
        "0",
        "0",
        "0",
        "0",
        "0",
        "0",
        "1",
    ]);
    let plies: Vec<&str> = out.lines().filter(|l| l.contains(" plays ")).collect();
    assert!(plies.len() >= 2, "{out}");
    for l in plies {
        let pit = l.split(" plays ").nth(1).unwrap().chars().next().unwrap();
        assert_eq!(pit.is_ascii_uppercase(), l.contains("opponent"), "{out}");
    }
    // A run of part of the variants does not offer to overwrite the published table.
    let out = ok(&[
        "variants",
        "--pits",
        "2",
        "--rules",
        "awari",
        "--max-positions",
        "1000",
        "--reference-limit",
        "1000",
        "--dir",
        root.to_str().unwrap(),
    ]);
    assert!(!out.contains("data/variants.md"), "{out}");
    assert!(out.contains("cargo run --release -- variants --max-positions 1000 --reference-limit 1000 --rules awari --pits 2\n"), "{out}");
}
