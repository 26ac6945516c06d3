//! `awari serve` through a real HTTP client: a server on an ephemeral port, over
//! databases of both rule sets and a packed one; its answers are byte for byte those of
//! `awari query --json`; bad input gets a 4xx in the command line's words and the server
//! goes on; concurrent clients; a full server answers 429; SIGTERM stops it cleanly.

#![cfg(feature = "serve")]

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use awari::expert::{db_dir, level_path, Index};
use awari::Rules;

use crate::common::{awari_with_input, build_levels, ok, BIN};

/// The databases served: levels 0..=13 of awari-6 and oware-6 (raw) and 0..=10 of
/// awari-4 (packed), built once and kept between runs in the target folder.
fn root() -> &'static Path {
    static ROOT: OnceLock<PathBuf> = OnceLock::new();
    ROOT.get_or_init(|| {
        let root = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("serve-db");
        build_levels(&root, Rules::Awari, 6, 13);
        build_levels(&root, Rules::Oware, 6, 13);
        build_levels(&root, Rules::Awari, 4, 10);
        if level_path(&db_dir(&root, Rules::Awari, 4), 0).exists() {
            let r = root.to_str().unwrap();
            ok(&["pack", "--dir", r, "--pits", "4", "--all", "--remove-raw"]);
        }
        root
    })
}

/// A running `awari serve`, stopped when dropped.
struct Server {
    child: Child,
    base: String,
    /// The line it printed when it listened.
    line: String,
}

impl Server {
    fn start(extra: &[&str]) -> Server {
        let server = Server::start_on(root(), extra);
        assert!(
            server.line.contains(
                "awari-4 levels 0..=10 (packed); awari-6 levels 0..=13 (raw); oware-6 levels 0..=13 (raw)"
            ),
            "{}",
            server.line
        );
        server
    }

    fn start_on(root: &Path, extra: &[&str]) -> Server {
        let mut child = Command::new(BIN)
            .args(["serve", "--dir", root.to_str().unwrap()])
            .args(["--bind", "127.0.0.1:0", "--threads", "2"])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        // "serving http://127.0.0.1:PORT/ with 2 thread(s): awari-4 levels 0..=10 (packed); ..."
        assert!(line.starts_with("serving http://127.0.0.1:"), "{line}");
        let base = line
            .split_whitespace()
            .nth(1)
            .unwrap()
            .trim_end_matches('/')
            .to_string();
        Server { base, child, line }
    }

    fn get(&self, path: &str) -> Answer {
        get(&agent(), &format!("{}{path}", self.base))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An HTTP client that hands 4xx and 5xx answers back instead of failing.
fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into()
}

#[derive(Debug)]
struct Answer {
    status: u16,
    cache: String,
    kind: String,
    body: String,
}

fn get(agent: &ureq::Agent, url: &str) -> Answer {
    let mut r = agent.get(url).call().unwrap();
    let header = |h: &str| {
        r.headers()
            .get(h)
            .map(|v| v.to_str().unwrap().to_string())
            .unwrap_or_default()
    };
    let (cache, kind) = (header("cache-control"), header("content-type"));
    Answer {
        status: r.status().as_u16(),
        cache,
        kind,
        body: r.body_mut().read_to_string().unwrap(),
    }
}

/// A small deterministic generator (xorshift), so that a failure repeats.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A position of at most `max` seeds on `2p` pits, as "a,b,c,...".
    fn position(&mut self, p: usize, max: usize) -> String {
        let n = self.next() as usize % (max + 1);
        let mut pits = vec![0u32; 2 * p];
        for _ in 0..n {
            pits[self.next() as usize % (2 * p)] += 1;
        }
        pits.iter()
            .map(|c| c.to_string())
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// The databases under test: (rules, P, top level) and how many random positions each.
const DBS: [(&str, usize, usize, usize); 3] = [
    ("awari", 6, 13, 400),
    ("oware", 6, 13, 400),
    ("awari", 4, 10, 200),
];

/// What `awari query --stdin` (one JSON object per line, as `--json` prints it) says of
/// `positions`.
fn cli_answers(rules: &str, p: usize, positions: &[String], line: bool) -> Vec<String> {
    let r = root().to_str().unwrap();
    let ps = p.to_string();
    let mut args = vec![
        "query", "--stdin", "--dir", r, "--rules", rules, "--pits", &ps,
    ];
    if line {
        args.push("--line");
    }
    let out = awari_with_input(&args, positions.join("\n").as_bytes());
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    text.lines().map(str::to_string).collect()
}

#[test]
fn the_api_answers_what_query_json_prints_on_1000_random_positions() {
    let server = Server::start(&[]);
    let agent = agent();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut answered = 0;
    for (rules, p, max, count) in DBS {
        let positions: Vec<String> = (0..count).map(|_| rng.position(p, max)).collect();
        let want = cli_answers(rules, p, &positions, false);
        assert_eq!(want.len(), count);
        for (pos, want) in positions.iter().zip(&want) {
            let a = get(
                &agent,
                &format!("{}/api/v1/{rules}/{p}?position={pos}", server.base),
            );
            assert_eq!(a.status, 200, "{rules}-{p} {pos}: {}", a.body);
            assert_eq!(&a.body, want, "{rules}-{p} {pos}");
            assert_eq!(a.kind, "application/json");
            assert_eq!(a.cache, "public, no-cache");
            answered += 1;
        }
        // The principal variation, on a few of them.
        let few = &positions[..10];
        for (pos, want) in few.iter().zip(cli_answers(rules, p, few, true)) {
            let a = get(
                &agent,
                &format!(
                    "{}/api/v1/{rules}/{p}?position={pos}&line=true",
                    server.base
                ),
            );
            assert_eq!(a.body, want, "{rules}-{p} {pos} with its line");
            assert!(a.body.contains(r#""line":{"end":""#), "{}", a.body);
        }
    }
    assert_eq!(answered, 1000);
    // And one through `awari query --json` itself, with spaces in the position.
    let r = root().to_str().unwrap();
    let json = ok(&[
        "query", "--json", "--dir", r, "1", "1", "1", "1", "1", "2", "4", "2", "0", "0", "0", "0",
    ]);
    let a = server.get("/api/v1/awari/6?position=1%201%201%201%201%202%204%202%200%200%200%200");
    assert_eq!(a.body, json.trim_end());
    assert!(a.body.starts_with(r#"{"best":["#), "{}", a.body);
}

#[test]
fn databases_health_and_the_page() {
    let server = Server::start(&[]);
    let h = server.get("/health");
    assert_eq!((h.status, h.body.as_str()), (200, r#"{"status":"ok"}"#));
    let d = server.get("/api/v1/databases");
    assert_eq!(d.status, 200);
    let v: serde_json::Value = serde_json::from_str(&d.body).unwrap();
    let dbs = v["databases"].as_array().unwrap();
    assert_eq!(dbs.len(), 3);
    let positions = |p: usize, max: usize| {
        let index = Index::new(p, max).unwrap();
        (0..=max).map(|n| index.level_size(n)).sum::<u64>()
    };
    assert_eq!(
        dbs[0],
        serde_json::json!({"rules": "awari", "pits": 4, "max_seeds": 10, "levels": 11,
            "raw": 0, "packed": 11, "positions": positions(4, 10), "start_seeds": [1]})
    );
    assert_eq!(
        dbs[2],
        serde_json::json!({"rules": "oware", "pits": 6, "max_seeds": 13, "levels": 14,
            "raw": 14, "packed": 0, "positions": positions(6, 13), "start_seeds": [1]})
    );
    assert_eq!(dbs[1]["positions"], positions(6, 13));
    assert_eq!(dbs[1]["rules"], "awari");
    let page = server.get("/");
    assert_eq!(page.status, 200);
    assert_eq!(page.kind, "text/html; charset=utf-8");
    assert_eq!(page.body, include_str!("../src/app/serve/page/index.html"));
    assert!(page.body.contains(r#"<script src="app.js">"#));
    assert_eq!(page.cache, "no-cache");
    let js = server.get("/app.js");
    assert_eq!(js.body, include_str!("../src/app/serve/page/app.js"));
    assert_eq!(js.kind, "text/javascript; charset=utf-8");
    let css = server.get("/style.css");
    assert_eq!(css.body, include_str!("../src/app/serve/page/style.css"));
    assert_eq!(css.kind, "text/css; charset=utf-8");
}

#[test]
fn bad_input_gets_a_4xx_in_the_words_of_the_cli_and_the_server_goes_on() {
    let server = Server::start(&[]);
    let long = format!("/api/v1/awari/6?position={}", "1,".repeat(1100));
    let cases: &[(&str, u16, &str)] = &[
        ("/api/v1/awari/6?position=1,1,1", 400, "a board of 6 pits per side needs 12 pit counts, got 3"),
        ("/api/v1/awari/6?position=", 400, "a board of 6 pits per side needs 12 pit counts, got 0"),
        ("/api/v1/awari/6?position=1,1,1,1,1,1,1,1,1,1,1,-1", 400, "'-1' is negative: pit counts are 0 or more seeds"),
        ("/api/v1/awari/6?position=1,1,1,1,1,1,1,1,1,1,1,x", 400, "'x' is not a number of seeds"),
        ("/api/v1/awari/6?position=1,1,1,1,1,1,1,1,1,1,1,1.5", 400, "'1.5' is not a number of seeds"),
        ("/api/v1/awari/6?position=99999999999,0,0,0,0,0,0,0,0,0,0,0", 400, "'99999999999' seeds: more than a board holds (at most 127)"),
        ("/api/v1/awari/6?position=200,0,0,0,0,0,0,0,0,0,0,0", 400, "200 seeds on the board; at most 127 are supported"),
        ("/api/v1/awari/6?position=4,4,4,4,4,4,4,4,4,4,4,4", 404, "level 48 of awari-6 is not served here; served levels 0..=13"),
        ("/api/v1/oware/6?position=2,2,2,2,2,2,2,2,0,0,0,0", 404, "level 16 of oware-6 is not served here; served levels 0..=13"),
        ("/api/v1/awari/4?position=3,3,3,3,0,0,0,0", 404, "level 12 of awari-4 is not served here; served levels 0..=10"),
        ("/api/v1/awari/9?position=1", 404, "no awari database of 9 pits per side is served here; served: awari-4, awari-6, oware-6"),
        ("/api/v1/awari/x?position=1", 404, "'x' is not a number of pits per side; served here: awari-4, awari-6, oware-6"),
        ("/api/v1/chess/6?position=1", 404, "unknown rule set 'chess' (expected 'awari' or 'oware')"),
        ("/api/v1/awari/6", 400, "no position: add ?position= and the 12 pit counts"),
        ("/api/v1/awari/6?position=1,1,1,1,1,2,4,2,3,0,0,0&line=maybe", 400, "line=maybe: expected line=true or line=false"),
        ("/api/v1/awari/6?pos=1", 400, "unknown parameter 'pos'"),
        ("/api/v2/awari/6?position=1", 404, "nothing at /api/v2/awari/6"),
        (&long, 414, "the URL has 2225 bytes; at most 2048 are answered"),
    ];
    let agent = agent();
    for &(path, status, words) in cases {
        let a = get(&agent, &format!("{}{path}", server.base));
        assert_eq!(a.status, status, "{path}: {}", a.body);
        let v: serde_json::Value = serde_json::from_str(&a.body).unwrap();
        let e = v["error"].as_str().unwrap();
        assert!(e.contains(words), "{path}: {e}");
        assert!(!e.contains(root().to_str().unwrap()), "{path}: {e}");
        assert_eq!(v.as_object().unwrap().len(), 1);
        assert_eq!(a.cache, "no-store", "{path}");
        assert_eq!(server.get("/health").status, 200, "after {path}");
    }
    // The CLI says the same words.
    let r = root().to_str().unwrap();
    let out = crate::common::awari(&[
        "query", "--dir", r, "1", "1", "1", "1", "1", "1", "1", "1", "1", "1", "1", "x",
    ]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("'x' is not a number of seeds"));
    // POST is not answered, in JSON too.
    let post = agent
        .post(format!("{}/health", server.base))
        .send("")
        .unwrap()
        .into_body()
        .read_to_string()
        .unwrap();
    assert_eq!(post, r#"{"error":"only GET is answered here"}"#);
    assert_eq!(
        server
            .get("/api/v1/awari/4?position=1,1,1,1,1,1,1,1")
            .status,
        200
    );
}

#[test]
fn a_damaged_level_is_a_500_that_names_it_and_the_rest_still_answers() {
    let tmp = tempfile::tempdir().unwrap();
    build_levels(tmp.path(), Rules::Awari, 6, 6);
    let path = level_path(&db_dir(tmp.path(), Rules::Awari, 6), 5);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[4096 + 17] ^= 0x55;
    std::fs::write(&path, &bytes).unwrap();
    let server = Server::start_on(tmp.path(), &[]);
    assert!(
        server.line.ends_with("awari-6 levels 0..=6 (raw)\n"),
        "{}",
        server.line
    );
    let a = server.get("/api/v1/awari/6?position=1,1,1,1,1,0,0,0,0,0,0,0");
    assert_eq!(a.status, 500, "{}", a.body);
    // The file by its name, not its folder; the problem as the CLI words it.
    assert!(
        a.body
            .starts_with(r#"{"error":"awari-6: level-005.awl: damaged payload (checksum "#),
        "{}",
        a.body
    );
    let three = server.get("/api/v1/awari/6?position=1,1,1,0,0,0,0,0,0,0,0,0");
    assert_eq!(three.status, 200, "{}", three.body);
    assert_eq!(server.get("/health").status, 200);
}

/// No answer names the server's folder, whatever goes wrong: the client reads which
/// database and level, the server's log (stderr) the whole error with its path, once.
#[test]
fn answers_name_no_server_folder_and_the_log_keeps_the_path_once() {
    let tmp = tempfile::Builder::new()
        .prefix("awari-private-folder-")
        .tempdir()
        .unwrap();
    let secret = tmp.path().to_str().unwrap().to_string();
    build_levels(tmp.path(), Rules::Awari, 6, 6);
    let damaged = level_path(&db_dir(tmp.path(), Rules::Awari, 6), 5);
    let mut bytes = std::fs::read(&damaged).unwrap();
    bytes[4096 + 17] ^= 0x55;
    std::fs::write(&damaged, &bytes).unwrap();
    let mut server = Server::start_on(tmp.path(), &[]);
    let cases: &[(&str, u16, &str)] = &[
        (
            "/api/v1/awari/6?position=4,4,4,4,4,4,4,4,4,4,4,4",
            404,
            "level 48 of awari-6 is not served here; served levels 0..=6",
        ),
        (
            "/api/v1/awari/6?position=4,4,4,4,4,4,4,4,4,4,4,4&line=true",
            404,
            "level 48 of awari-6 is not served here; served levels 0..=6",
        ),
        (
            "/api/v1/awari/6?position=1,1,1,1,1,1,1,0,0,0,0,0",
            404,
            "level 7 of awari-6 is not served here; served levels 0..=6",
        ),
        (
            "/api/v1/awari/6?position=1,1,1,1,1,0,0,0,0,0,0,0",
            500,
            "awari-6: level-005.awl: damaged payload",
        ),
        (
            "/api/v1/awari/6?position=1,1,1,1,1,0,0,0,0,0,0,0&line=true",
            500,
            "awari-6: level-005.awl: damaged payload",
        ),
        (
            "/api/v1/awari/6?position=1,1,1",
            400,
            "a board of 6 pits per side needs 12 pit counts, got 3",
        ),
        (
            "/api/v1/awari/6?position=1,1,1,1,1,1,1,1,1,1,1,x",
            400,
            "'x' is not a number of seeds",
        ),
        (
            "/api/v1/oware/6?position=1",
            404,
            "no oware database of 6 pits per side is served here; served: awari-6",
        ),
        ("/api/v1/awari/6?pos=1", 400, "unknown parameter 'pos'"),
        ("/nothing/here", 404, "nothing at /nothing/here"),
    ];
    for &(path, status, words) in cases {
        let a = server.get(path);
        assert_eq!(a.status, status, "{path}: {}", a.body);
        let v: serde_json::Value = serde_json::from_str(&a.body).unwrap();
        assert_eq!(v.as_object().unwrap().len(), 1, "{path}");
        let e = v["error"].as_str().unwrap();
        // Whole words, but a damaged file's checksums follow its problem, and a path's
        // answer names the API.
        assert!(
            e == words
                || e.starts_with(&format!("{words} ("))
                || e.starts_with(&format!("{words}: ")),
            "{path}: {e}"
        );
        assert!(!a.body.contains(&secret), "{path}: {}", a.body);
        assert!(
            !a.body.contains("awari-private-folder-"),
            "{path}: {}",
            a.body
        );
    }
    let d = server.get("/api/v1/databases");
    assert!(!d.body.contains("awari-private-folder-"), "{}", d.body);
    let _ = server.child.kill();
    let _ = server.child.wait();
    let mut log = String::new();
    server
        .child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut log)
        .unwrap();
    // Asked twice each, logged once each; the client's own mistakes are not logged.
    let damaged = damaged.to_str().unwrap();
    assert_eq!(log.matches(damaged).count(), 1, "{log}");
    assert!(
        log.contains(&format!("{damaged}: damaged payload")),
        "{log}"
    );
    assert_eq!(
        log.matches("level 48 (awari, 6 pits per side) is not built in ")
            .count(),
        1,
        "{log}"
    );
    assert!(
        log.contains(&format!("awari build --max-seeds 48 --dir {secret}")),
        "{log}"
    );
    assert_eq!(log.lines().count(), 3, "{log}");
}

#[test]
fn concurrent_clients_get_the_answers_of_one_client() {
    let server = Server::start(&[]);
    let mut rng = Rng(42);
    let paths: Vec<String> = (0..200)
        .map(|i| {
            let (rules, p, max, _) = DBS[i % 3];
            format!("/api/v1/{rules}/{p}?position={}", rng.position(p, max))
        })
        .collect();
    let want: Vec<String> = paths.iter().map(|q| server.get(q).body).collect();
    let start = Instant::now();
    std::thread::scope(|s| {
        for t in 0..16 {
            let (paths, want, base) = (&paths, &want, &server.base);
            s.spawn(move || {
                let agent = agent();
                for i in (0..paths.len()).map(|i| (i * 7 + t * 13) % paths.len()) {
                    let a = get(&agent, &format!("{base}{}", paths[i]));
                    assert_eq!(a.status, 200, "{}", paths[i]);
                    assert_eq!(a.body, want[i], "{}", paths[i]);
                }
            });
        }
    });
    assert!(start.elapsed() < Duration::from_secs(60));
}

/// The load generator of scripts/serve-bench (tools/serve_load.rs, one standard-library
/// file): compiled here as the script compiles it, it sends its requests and counts no
/// error.
#[test]
fn the_load_generator_of_the_benchmark_runs_clean() {
    let out_dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let load = out_dir.join("serve_load");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tools/serve_load.rs");
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_string());
    let built = Command::new(rustc)
        .args(["--edition", "2021", "-O"])
        .arg(&src)
        .arg("-o")
        .arg(&load)
        .output()
        .unwrap();
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let server = Server::start(&[]);
    let out = Command::new(&load)
        .args([&server.base, "awari", "6", "13", "300", "8"])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        said.starts_with("300 requests (300 answered 200, 0 errors)"),
        "{said}"
    );
}

/// A server that could answer no probe is refused before it starts (it would say it is
/// healthy and answer every probe 429; tests/router.rs checks what a full one answers).
/// An answer with the validator a client sends back.
fn get_tagged(agent: &ureq::Agent, url: &str, held: Option<&str>) -> (u16, String, String) {
    let mut request = agent.get(url);
    if let Some(tag) = held {
        request = request.header("if-none-match", tag);
    }
    let mut r = request.call().unwrap();
    let tag = r
        .headers()
        .get("etag")
        .map(|v| v.to_str().unwrap().to_string());
    let body = r.body_mut().read_to_string().unwrap_or_default();
    (r.status().as_u16(), tag.unwrap_or_default(), body)
}

/// A cache that keeps an answer asks whether it still holds and is told so (304), until
/// what the answer is made of changes: a distance table made (seen after a restart, the
/// server reading its folder's files once), and the answer and its validator change.
#[test]
fn an_answers_validator_changes_when_a_table_is_made() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("db");
    build_levels(&root, Rules::Awari, 6, 10);
    let agent = agent();
    let path = "/api/v1/awari/6?position=1,1,1,1,1,0,0,0,2,0,0,0";
    let server = Server::start_on(&root, &[]);
    let url = format!("{}{path}", server.base);
    let (status, before, body) = get_tagged(&agent, &url, None);
    assert_eq!(status, 200, "{body}");
    assert!(body.contains(r#""distance":null"#), "{body}");
    assert!(before.starts_with('"') && before.len() == 18, "{before}");
    // The same answer: 304, no body, the same validator.
    let (status, tag, body) = get_tagged(&agent, &url, Some(&before));
    assert_eq!(
        (status, tag.as_str(), body.as_str()),
        (304, before.as_str(), "")
    );
    let (status, _, _) = get_tagged(&agent, &url, Some(r#""0000000000000000""#));
    assert_eq!(status, 200);
    drop(server);

    ok(&["dtc", "--dir", root.to_str().unwrap()]);
    let server = Server::start_on(&root, &[]);
    let url = format!("{}{path}", server.base);
    let (status, after, body) = get_tagged(&agent, &url, Some(&before));
    assert_eq!(status, 200, "the old validator no longer holds");
    assert_ne!(after, before);
    assert!(!body.contains(r#""distance":null,"game_over""#), "{body}");
    assert_eq!(
        body,
        ok(&[
            "query",
            "--json",
            "--dir",
            root.to_str().unwrap(),
            "1",
            "1",
            "1",
            "1",
            "1",
            "0",
            "0",
            "0",
            "2",
            "0",
            "0",
            "0"
        ])
        .trim_end()
    );
    let (status, _, _) = get_tagged(&agent, &url, Some(&after));
    assert_eq!(status, 304);
}

#[test]
fn a_server_that_could_answer_nothing_is_refused() {
    let r = root().to_str().unwrap();
    for (flag, value) in [
        ("--max-concurrent", "0"),
        ("--timeout", "0"),
        ("--timeout", "nan"),
    ] {
        let out =
            crate::common::awari(&["serve", "--dir", r, "--bind", "127.0.0.1:0", flag, value]);
        let err = crate::common::text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flag} {value}: {err}");
        assert!(
            err.starts_with(&format!("error: {flag} must be "))
                && err.ends_with(&format!(", got {value}\n"))
                && err.lines().count() == 1,
            "{err}"
        );
        assert!(out.stdout.is_empty());
    }
}

#[test]
fn sigterm_stops_the_server_and_bad_setups_are_one_error_line() {
    let mut server = Server::start(&[]);
    assert_eq!(server.get("/health").status, 200);
    // A client that keeps its connection open, idle, does not hold the stop up.
    let mut idle = std::net::TcpStream::connect(server.base.trim_start_matches("http://")).unwrap();
    std::io::Write::write_all(&mut idle, b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let mut head = [0u8; 15];
    idle.read_exact(&mut head).unwrap();
    assert_eq!(&head, b"HTTP/1.1 200 OK");
    let pid = server.child.id() as i32;
    // SAFETY: kill(2) on our own child process.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(s) = server.child.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < deadline, "the server did not stop");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "{status:?}");
    let mut err = String::new();
    server
        .child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert_eq!(err, "stopped\n");

    let empty = tempfile::tempdir().unwrap();
    let e = empty.path().to_str().unwrap();
    let (good, _, err) = crate::common::run(&["serve", "--dir", e, "--bind", "127.0.0.1:0"]);
    assert!(!good);
    assert_eq!(
        err,
        format!("error: no database under {e}: build one first, e.g. `awari build --max-seeds 16 --dir {e}`\n")
    );
    // A port already taken.
    let held = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = held.local_addr().unwrap().to_string();
    let (good, _, err) =
        crate::common::run(&["serve", "--dir", root().to_str().unwrap(), "--bind", &addr]);
    assert!(!good);
    assert!(
        err.starts_with(&format!("error: cannot listen on {addr}: ")),
        "{err}"
    );
    let (good, _, err) =
        crate::common::run(&["serve", "--dir", root().to_str().unwrap(), "--threads", "0"]);
    assert!(!good);
    assert!(err == "error: --threads must be 1..=1024, got 0\n", "{err}");
}
