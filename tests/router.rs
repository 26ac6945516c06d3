//! The router of `awari serve` driven in-process with random requests: query strings,
//! paths (`..`, percent escapes of any byte, very long ones) and headers. Whatever a
//! client sends, the answer is never a 5xx (the databases are sound, so every error is
//! the client's) and no handler panics; no answer names the server's folder.

#![cfg(feature = "serve")]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use awari::expert::serve::{open_all, router, AppState, Probes};
use awari::Rules;
use axum::body::Body;
use axum::http::{HeaderName, HeaderValue, Method, Request};
use proptest::prelude::*;
use tower::ServiceExt;

/// The start of the served folder's name, which no answer may carry.
const SECRET: &str = "awari-router-secret-";

/// A small served root: awari-6 levels 0..=8 and oware-4 levels 0..=6, built once and
/// kept between runs in the target folder (a temporary folder in a static is never
/// dropped, so it was left in /tmp by every run).
fn root() -> &'static Path {
    static ROOT: OnceLock<PathBuf> = OnceLock::new();
    ROOT.get_or_init(|| {
        let root = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("{SECRET}db"));
        crate::common::build_levels(&root, Rules::Awari, 6, 8);
        crate::common::build_levels(&root, Rules::Oware, 4, 6);
        root
    })
}

fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .max_blocking_threads(2)
            .enable_all()
            .build()
            .unwrap()
    })
}

fn app() -> &'static axum::Router {
    static APP: OnceLock<axum::Router> = OnceLock::new();
    APP.get_or_init(|| {
        let dbs = open_all(root()).unwrap();
        // Permits to spare and a generous deadline: a 429 or 503 here would be the
        // machine's, not the request's.
        router(AppState::new(dbs, Probes::new(64, Duration::from_secs(60))))
    })
}

/// A piece of a path or a query: words the API knows, separators, `..`, numbers (some
/// too large for any integer), and percent escapes of any byte (invalid UTF-8 too),
/// malformed ones included.
fn piece() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "api",
            "v1",
            "v2",
            "awari",
            "oware",
            "chess",
            "6",
            "4",
            "0",
            "9",
            "..",
            ".",
            "/",
            "//",
            "position",
            "line",
            "true",
            "=",
            "&",
            "?",
            ",",
            "-",
            "+",
            "#",
            "%",
            "%G1",
            "%2",
            "%2F",
            "%2C",
            "%00",
            "%FF",
            "%C0%AF",
            "%E2%82",
            "databases",
            "health",
            "app.js",
            "1,1,1,1,1,1,1,1,1,1,1,1",
            "18446744073709551616",
            "4294967296",
            "-1",
            " ",
            "%20",
            "\u{e9}",
            "\u{1F600}",
        ])
        .prop_map(str::to_string),
        any::<u8>().prop_map(|b| format!("%{b:02X}")),
        "[a-zA-Z0-9_.~-]{1,12}",
        (0u64..=u64::MAX).prop_map(|n| n.to_string()),
        // Long runs: past the URL limit now and then.
        ("[0-9,]{1,3}", 1usize..1500).prop_map(|(s, n)| s.repeat(n)),
    ]
    .boxed()
}

/// Mostly short pieces; a long run one time in twenty.
fn short_or_long() -> impl Strategy<Value = String> {
    prop_oneof![19 => piece_short(), 1 => piece()]
}

fn piece_short() -> impl Strategy<Value = String> {
    piece().prop_filter("short", |s| s.len() < 64)
}

fn pieces(max: usize) -> impl Strategy<Value = String> {
    prop::collection::vec(short_or_long(), 0..max).prop_map(|v| v.concat())
}

/// A path: often under a route the API has, with random pieces after it.
fn path() -> impl Strategy<Value = String> {
    // The position routes most often: they are the ones that read the databases.
    let head = prop_oneof![
        3 => prop::sample::select(vec!["/api/v1/awari/6", "/api/v1/oware/4", "/api/v1/awari/4"]),
        2 => prop::sample::select(vec![
            "/api/v1/",
            "/api/v1/databases",
            "/health",
            "/",
            "/app.js",
            "/style.css",
            "/../..",
            "",
        ]),
    ];
    // Most paths are a route as it is; the others have pieces after it.
    let tail = prop::option::weighted(0.3, (pieces(3), prop::collection::vec(pieces(3), 0..3)));
    (head, tail).prop_map(|(h, tail)| {
        let mut p = h.to_string();
        if let Some((glued, segs)) = tail {
            p += &glued;
            for s in segs {
                p = format!("{p}/{s}");
            }
        }
        if !p.starts_with('/') {
            p.insert(0, '/');
        }
        p
    })
}

/// A query string: mostly a position (valid or not) and perhaps `line`, else pairs of
/// keys and values the API knows or not, or any pieces.
fn query() -> impl Strategy<Value = Option<String>> {
    let counts = |n: usize, max: u32, sep: &'static str| {
        prop::collection::vec(0..max, n)
            .prop_map(move |v| v.iter().map(u32::to_string).collect::<Vec<_>>().join(sep))
    };
    let value = prop_oneof![
        // Positions of the boards served, some within the levels served.
        counts(12, 2, ","),
        counts(12, 6, ","),
        counts(8, 3, "%2C"),
        counts(8, 3, "+"),
        pieces(5),
    ];
    let line = prop::sample::select(vec!["true", "false", "1", "0", "", "maybe", "%74rue"]);
    let key = prop_oneof![
        prop::sample::select(vec!["position", "line", "pos", "", "position[]"])
            .prop_map(str::to_string),
        pieces(3),
    ];
    prop::option::weighted(
        0.9,
        prop_oneof![
            4 => (value.clone(), prop::option::of(line)).prop_map(|(v, l)| match l {
                Some(l) => format!("position={v}&line={l}"),
                None => format!("position={v}"),
            }),
            1 => prop::collection::vec((key, value), 0..5).prop_map(|kv| kv
                .into_iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join("&")),
            1 => pieces(6),
        ],
    )
}

/// Headers: names the server might read and any others, values of any visible bytes.
fn headers() -> impl Strategy<Value = Vec<(String, Vec<u8>)>> {
    let name = prop_oneof![
        prop::sample::select(vec![
            "host",
            "content-length",
            "content-type",
            "transfer-encoding",
            "accept",
            "accept-encoding",
            "connection",
            "range",
            "if-none-match",
            "origin",
            "cookie",
            "x-forwarded-for",
            "expect",
            "upgrade",
        ])
        .prop_map(str::to_string),
        "[a-z][a-z0-9-]{0,30}",
    ];
    let value = prop_oneof![
        prop::collection::vec(32u8..=255, 0..64),
        prop::sample::select(vec![
            "0",
            "-1",
            "18446744073709551616",
            "chunked",
            "*/*",
            "100-continue"
        ])
        .prop_map(|s| s.as_bytes().to_vec()),
        (1usize..10_000).prop_map(|n| vec![b'a'; n]),
    ];
    prop::collection::vec((name, value), 0..6)
}

fn method() -> impl Strategy<Value = Method> {
    prop_oneof![
        6 => Just(Method::GET),
        1 => prop::sample::select(vec![
            Method::HEAD,
            Method::POST,
            Method::PUT,
            Method::DELETE,
            Method::OPTIONS,
            Method::PATCH,
        ]),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn no_request_gets_a_5xx_or_a_panic(
        method in method(),
        path in path(),
        query in query(),
        headers in headers(),
    ) {
        let uri = match &query {
            Some(q) => format!("{path}?{q}"),
            None => path.clone(),
        };
        // What the HTTP layer refuses before the router (a URI or header no parser
        // takes) is not the router's to answer.
        let head = method == Method::HEAD;
        let Ok(mut request) = Request::builder().method(method).uri(&uri).body(Body::empty()) else {
            return Ok(());
        };
        for (name, value) in &headers {
            if let (Ok(n), Ok(v)) = (HeaderName::from_bytes(name.as_bytes()), HeaderValue::from_bytes(value)) {
                request.headers_mut().append(n, v);
            }
        }
        let (status, body) = runtime().block_on(async {
            let r = app().clone().oneshot(request).await.unwrap();
            let status = r.status();
            let body = axum::body::to_bytes(r.into_body(), usize::MAX).await.unwrap();
            (status, body)
        });
        let body = String::from_utf8_lossy(&body);
        prop_assert!(!status.is_server_error(), "{uri}: {status} {body}");
        prop_assert!(!body.contains(SECRET), "{uri}: {body}");
        // Errors are JSON (a HEAD answer has its headers alone).
        if status.is_client_error() && !head {
            let v: serde_json::Value = serde_json::from_str(&body).unwrap();
            prop_assert!(v["error"].is_string(), "{uri}: {body}");
        }
    }
}

/// A server with no probe to spare answers 429 at once, and still its health and bad
/// input (which is refused before it waits for a probe). `awari serve` itself takes
/// `--max-concurrent` 1 and up; the library's `Probes` with none is the full server.
#[test]
fn a_full_server_answers_429_and_still_its_health() {
    let full = {
        let dbs = open_all(root()).unwrap();
        router(AppState::new(dbs, Probes::new(0, Duration::from_secs(60))))
    };
    let get = |uri: &str| {
        let request = Request::builder().uri(uri).body(Body::empty()).unwrap();
        runtime().block_on(async {
            let r = full.clone().oneshot(request).await.unwrap();
            let status = r.status().as_u16();
            let body = axum::body::to_bytes(r.into_body(), usize::MAX)
                .await
                .unwrap();
            (status, String::from_utf8_lossy(&body).into_owned())
        })
    };
    let (status, body) = get("/api/v1/awari/6?position=1,1,1,1,1,2,0,0,0,0,0,0");
    assert_eq!(status, 429, "{body}");
    assert_eq!(
        body,
        r#"{"error":"the server is busy (0 probes under way); try again shortly"}"#
    );
    assert_eq!(get("/health").0, 200);
    assert_eq!(get("/api/v1/awari/6?position=1").0, 400);
}
