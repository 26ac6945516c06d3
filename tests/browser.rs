//! The explorer page of `awari serve` in a real browser: headless Chromium driven through
//! WebDriver (chromedriver) by fantoccini. It reads the move values shown on the pits,
//! plays the best move and sees the database's reply and the new values, undoes, plays
//! by keyboard, edits a position, follows the permalink, asks for the principal
//! variation, checks the phone-width layout and saves a screenshot. Needs Debian's
//! `chromium` and `chromium-driver` (`.ci/run` installs them); feature `browser`.

#![cfg(feature = "browser")]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{json, Value};

use awari::Rules;

use crate::common::{build_levels, BIN};

const START: &str = "1,1,1,1,1,2,4,2,3,0,0,0";

/// A child process, killed when dropped.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Levels 0..=16 of awari-6 with their distance tables and 0..=12 of oware-6, kept between
/// runs.
fn root() -> PathBuf {
    let root = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("browser-db");
    build_levels(&root, Rules::Awari, 6, 16);
    build_levels(&root, Rules::Oware, 6, 12);
    // The distance tables of awari-6 (kept when there and good).
    let made = Command::new(BIN)
        .args(["dtc", "--dir", root.to_str().unwrap(), "--rules", "awari"])
        .output()
        .unwrap();
    assert!(made.status.success(), "{made:?}");
    root
}

fn serve(root: &Path) -> (Proc, String) {
    let mut child = Command::new(BIN)
        .args([
            "serve",
            "--dir",
            root.to_str().unwrap(),
            "--bind",
            "127.0.0.1:0",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let base = line
        .split_whitespace()
        .nth(1)
        .unwrap()
        .trim_end_matches('/');
    (Proc(child), base.to_string())
}

/// chromedriver; when dropped (also when the test fails midway) it is asked to shut down,
/// which closes the browsers it started, and then killed.
struct Driver {
    proc: Proc,
    url: String,
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = ureq::get(format!("{}/shutdown", self.url)).call();
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline && matches!(self.proc.0.try_wait(), Ok(None)) {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// chromedriver on a free port of loopback, once it answers.
fn chromedriver() -> Driver {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new("chromedriver")
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("chromedriver (Debian: apt-get install chromium chromium-driver)");
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "chromedriver did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    Driver {
        proc: Proc(child),
        url: format!("http://127.0.0.1:{port}"),
    }
}

/// The API's answer for a position (a plain HTTP client, not the browser).
fn api(base: &str, rules: &str, position: &str, line: bool) -> Value {
    let url = format!(
        "{base}/api/v1/{rules}/6?position={position}{}",
        if line { "&line=true" } else { "" }
    );
    let body = ureq::get(&url)
        .call()
        .unwrap()
        .body_mut()
        .read_to_string()
        .unwrap();
    serde_json::from_str(&body).unwrap()
}

fn counts(v: &Value) -> String {
    v.as_array()
        .unwrap()
        .iter()
        .map(|c| c.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

async fn attr(c: &Client, css: &str, name: &str) -> Option<String> {
    c.find(Locator::Css(css))
        .await
        .unwrap()
        .attr(name)
        .await
        .unwrap()
}

async fn text(c: &Client, css: &str) -> String {
    c.find(Locator::Css(css))
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

async fn click(c: &Client, css: &str) {
    c.find(Locator::Css(css))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
}

async fn keys(c: &Client, k: &str) {
    c.find(Locator::Css("body"))
        .await
        .unwrap()
        .send_keys(k)
        .await
        .unwrap();
}

/// Waits until the board shows `position` with its values loaded.
async fn ready(c: &Client, position: &str) {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let state = attr(c, "#board", "data-state").await;
        let at = attr(c, "#board", "data-position").await;
        if state.as_deref() == Some("ready") && at.as_deref() == Some(position) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the page shows {at:?} ({state:?}), not {position} ready; error: {}",
            text(c, "#error").await
        );
        tokio::time::sleep(Duration::from_millis(40)).await;
    }
}

/// The values shown on the side to move's pits (None: not a legal move) and the pits
/// marked best.
async fn shown(c: &Client) -> (Vec<Option<i64>>, Vec<usize>) {
    let mut values = Vec::new();
    let mut best = Vec::new();
    for i in 0..6 {
        let pit = format!("#pit-{i}");
        let v = attr(c, &pit, "data-value").await;
        if let Some(v) = &v {
            // The number drawn on the pit is the one in the attribute.
            let drawn = text(c, &format!("{pit} .value")).await;
            assert_eq!(drawn.trim_start_matches('+'), v.as_str(), "{pit}");
        }
        values.push(v.map(|v| v.parse().unwrap()));
        if attr(c, &pit, "data-best").await.is_some() {
            best.push(i);
        }
    }
    (values, best)
}

/// What the page should show for an analysis from the API.
fn expected(a: &Value) -> (Vec<Option<i64>>, Vec<usize>) {
    let mut values = vec![None; 6];
    for m in a["moves"].as_array().unwrap() {
        values[m["pit"].as_u64().unwrap() as usize] = m["value"].as_i64();
    }
    let best = a["best"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_u64().unwrap() as usize)
        .collect();
    (values, best)
}

async fn moves_played(c: &Client) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    for li in c.find_all(Locator::Css("#moves li")).await.unwrap() {
        let a = |n: &'static str| {
            let li = li.clone();
            async move { li.attr(n).await.unwrap().unwrap() }
        };
        out.push((
            a("data-player").await,
            a("data-pit").await,
            a("data-lost").await,
        ));
    }
    out
}

#[test]
fn the_page_in_headless_chromium() {
    let root = root();
    let (_server, base) = serve(&root);
    // Before the driver, so that it outlives the browser (dropped in reverse order).
    let profile = tempfile::tempdir().unwrap();
    let driver = chromedriver();
    let shot = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("serve.png");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut caps = serde_json::Map::new();
        caps.insert(
            "goog:chromeOptions".into(),
            json!({
                "binary": "/usr/bin/chromium",
                "args": [
                    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                    "--no-first-run", "--disable-background-networking",
                    "--disable-component-update", "--disable-sync",
                    "--disable-dev-shm-usage", "--window-size=1000,1200",
                    format!("--user-data-dir={}", profile.path().display()),
                ],
            }),
        );
        let c = ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
            .capabilities(caps)
            .connect(&driver.url)
            .await
            .expect("a Chromium session through chromedriver");

        // Romein and Bal's example: the values on the pits are the database's.
        c.goto(&format!("{base}/#awari/6/{START}")).await.unwrap();
        ready(&c, START).await;
        let start = api(&base, "awari", START, false);
        assert_eq!(
            shown(&c).await,
            (
                vec![Some(-1), Some(-1), Some(-2), Some(-2), Some(-2), Some(0)],
                vec![5]
            )
        );
        assert_eq!(shown(&c).await, expected(&start));
        assert_eq!(
            text(&c, "#value-words").await,
            "Player 1 to move: a draw: the seeds are shared evenly (value 0)"
        );
        // The side to move is drawn at the bottom, its pit a on the left; the opponent's
        // row on top from its last pit.
        assert_eq!(
            attr(&c, "#row-bottom .pit:first-child", "id")
                .await
                .unwrap(),
            "pit-0"
        );
        assert_eq!(
            attr(&c, "#row-top .pit:first-child", "id").await.unwrap(),
            "opp-5"
        );
        assert_eq!(attr(&c, "#opp-0", "data-count").await.unwrap(), "4");

        // The database plays Player 2; Player 1 clicks the best move, f.
        let line = api(&base, "awari", START, true);
        let plies = line["line"]["plies"].as_array().unwrap();
        click(&c, "#db-plays-1").await;
        click(&c, "#pit-5").await;
        let after_reply = counts(&plies[1]["after"]);
        ready(&c, &after_reply).await;
        assert_eq!(
            moves_played(&c).await,
            [
                ("0".into(), "5".into(), "0".into()),
                ("1".into(), plies[1]["pit"].to_string(), "0".into())
            ]
        );
        let reply = api(&base, "awari", &after_reply, false);
        assert_eq!(shown(&c).await, expected(&reply));
        assert!(c
            .current_url()
            .await
            .unwrap()
            .as_str()
            .ends_with(&format!("#awari/6/{after_reply}")));

        // Undo (key u) goes back past the database's reply to Player 1's move.
        keys(&c, "u").await;
        ready(&c, START).await;
        assert_eq!(shown(&c).await, expected(&start));

        // Without the database: key a plays pit a, a move that gives away a seed.
        click(&c, "#db-plays-1").await;
        keys(&c, "a").await;
        let after_a = "4,2,3,0,0,0,0,2,1,1,1,2";
        ready(&c, after_a).await;
        assert_eq!(
            moves_played(&c).await,
            [("0".into(), "0".into(), "1".into())]
        );
        assert!(text(&c, "#moves li").await.contains("gave away 1 seed"));
        assert_eq!(
            shown(&c).await,
            expected(&api(&base, "awari", after_a, false))
        );
        click(&c, "#undo").await;
        ready(&c, START).await;
        click(&c, "#redo").await;
        ready(&c, after_a).await;

        // The editor: type a position, then flip the side to move.
        click(&c, "#edit").await;
        let input = c.find(Locator::Id("position-input")).await.unwrap();
        input.clear().await.unwrap();
        input.send_keys("0 0 0 0 0 1 1 1 1 1 1 1").await.unwrap();
        click(&c, "#apply-position").await;
        ready(&c, "0,0,0,0,0,1,1,1,1,1,1,1").await;
        assert_eq!(
            shown(&c).await,
            (vec![None, None, None, None, None, Some(-3)], vec![5])
        );
        assert!(text(&c, "#value-words")
            .await
            .contains("the side to move loses by 3 seeds"));
        // After a's move Player 2 was to move; an edited position keeps the side to move.
        assert_eq!(text(&c, "#name-bottom").await, "Player 2");
        click(&c, "#edit").await;
        click(&c, "#flip").await;
        // A click adds a seed to the pit (here the opponent's pit A).
        click(&c, "#opp-0").await;
        click(&c, "#done-edit").await;
        let flipped = "1,1,1,1,1,1,1,0,0,0,0,1";
        ready(&c, flipped).await;
        assert_eq!(
            shown(&c).await,
            expected(&api(&base, "awari", flipped, false))
        );
        assert_eq!(text(&c, "#name-bottom").await, "Player 1");
        assert_eq!(text(&c, "#name-top").await, "Player 2");

        // The principal variation on request.
        click(&c, "#show-pv").await;
        let pv = api(&base, "awari", flipped, true);
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let shown = c.find_all(Locator::Css("#pv li")).await.unwrap().len();
            if shown == pv["line"]["plies"].as_array().unwrap().len() && shown > 0 {
                break;
            }
            assert!(Instant::now() < deadline, "{shown} plies of the line shown");
            tokio::time::sleep(Duration::from_millis(40)).await;
        }

        // A permalink of a level not built: the page says which levels are served (and
        // names no folder of the server).
        c.goto(&format!("{base}/#awari/6/4,4,4,4,4,4,4,4,4,4,4,4"))
            .await
            .unwrap();
        c.refresh().await.unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while attr(&c, "#board", "data-state").await.as_deref() != Some("error") {
            assert!(Instant::now() < deadline, "no error shown");
            tokio::time::sleep(Duration::from_millis(40)).await;
        }
        assert!(text(&c, "#error")
            .await
            .contains("level 48 of awari-6 is not served here; served levels 0..="));
        // The headline says it too, not "...".
        let headline = text(&c, "#value-words").await;
        assert!(
            headline.starts_with("No value for this position: level 48 of awari-6"),
            "{headline}"
        );

        // A permalink that names no position served here: the page says why, and shows
        // the start position.
        for (link, why) in [
            (
                "#awari/6/1,1,1",
                "gives 3 pit counts; a board of 6 pits per side has 12",
            ),
            (
                "#foo/9/1,2",
                "no foo database of 9 pits per side is served here",
            ),
            ("#awari-6", "is not a permalink"),
        ] {
            c.goto(&format!("{base}/{link}")).await.unwrap();
            c.refresh().await.unwrap();
            // The start of the largest k whose levels are served: 1 seed per pit.
            ready(&c, "1,1,1,1,1,1,1,1,1,1,1,1").await;
            let said = text(&c, "#notice").await;
            assert!(said.contains(why), "{link}: {said}");
            assert_eq!(attr(&c, "#notice", "hidden").await, None, "{link}");
        }

        // The other served database, from the selector: the start position of oware.
        click(&c, "#db-select option[value='oware-6']").await;
        let ones = "1,1,1,1,1,1,1,1,1,1,1,1";
        ready(&c, ones).await;
        assert_eq!(shown(&c).await, expected(&api(&base, "oware", ones, false)));
        assert!(c
            .current_url()
            .await
            .unwrap()
            .as_str()
            .ends_with(&format!("#oware/6/{ones}")));

        // The screenshot of the README: the example, the database's reply, the line.
        c.goto(&format!("{base}/#awari/6/{START}")).await.unwrap();
        c.refresh().await.unwrap();
        ready(&c, START).await;
        click(&c, "#db-plays-1").await;
        click(&c, "#pit-5").await;
        ready(&c, &after_reply).await;
        click(&c, "#show-pv").await;
        while c.find_all(Locator::Css("#pv li")).await.unwrap().is_empty() {
            tokio::time::sleep(Duration::from_millis(40)).await;
        }
        let png = c.screenshot().await.unwrap();
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
        assert!(png.len() > 20_000, "{} bytes", png.len());
        std::fs::write(&shot, &png).unwrap();

        // The database plays both sides to the end of a short game.
        click(&c, "#db-plays-1").await;
        c.goto(&format!("{base}/#awari/6/0,0,0,0,0,1,1,1,0,0,0,0"))
            .await
            .unwrap();
        c.refresh().await.unwrap();
        ready(&c, "0,0,0,0,0,1,1,1,0,0,0,0").await;
        assert_eq!(
            shown(&c).await,
            (vec![None, None, None, None, None, Some(1)], vec![5])
        );
        click(&c, "#db-plays-0").await;
        click(&c, "#db-plays-1").await;
        let deadline = Instant::now() + Duration::from_secs(15);
        while !text(&c, "#value-words").await.starts_with("Game over") {
            assert!(Instant::now() < deadline, "the game did not end");
            tokio::time::sleep(Duration::from_millis(40)).await;
        }
        assert_eq!(
            text(&c, "#value-words").await,
            "Game over: Player 2 leaves Player 1 no seeds and takes the rest"
        );
        assert_eq!(
            text(&c, "#score-words").await,
            "Final score: Player 1 2, Player 2 1: Player 1 wins."
        );
        assert_eq!(
            moves_played(&c).await,
            [
                ("0".into(), "5".into(), "0".into()),
                ("1".into(), "1".into(), "0".into())
            ]
        );

        // Where the level has a distance table: the headline says in how many plies the
        // value converts, and each pit the distance of playing it, as the API gives them.
        let won = "3,3,0,0,2,1,0,1,0,2,1,1";
        c.goto(&format!("{base}/#awari/6/{won}")).await.unwrap();
        c.refresh().await.unwrap();
        ready(&c, won).await;
        let a = api(&base, "awari", won, false);
        assert_eq!(a["distance"], 8, "{a}");
        assert_eq!(
            text(&c, "#value-words").await,
            "Player 1 to move: the side to move wins by 1 seed (value +1; converts in 8 plies)"
        );
        for m in a["moves"].as_array().unwrap() {
            let pit = format!("#pit-{}", m["pit"]);
            let d = m["distance"].as_u64().unwrap();
            assert_eq!(attr(&c, &pit, "data-distance").await, Some(d.to_string()));
            assert_eq!(
                text(&c, &format!("{pit} .distance")).await,
                format!("in {d}")
            );
        }

        // A phone's width: nothing wider than the screen.
        c.set_window_size(390, 844).await.unwrap();
        let fits = c
            .execute(
                "return document.documentElement.scrollWidth <= window.innerWidth",
                vec![],
            )
            .await
            .unwrap();
        assert_eq!(fits, json!(true));
        c.close().await.unwrap();
    });
    // AWARI_SCREENSHOT=data/serve.png keeps the screenshot for the README.
    if let Some(to) = std::env::var_os("AWARI_SCREENSHOT") {
        std::fs::copy(&shot, to).unwrap();
    }
}
