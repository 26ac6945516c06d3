//! The routes of `awari serve` and their answers:
//!
//! - `GET /api/v1/{rules}/{pits}?position=...[&line=true]`: the object of
//!   `awari query --json` (built by the same function, [`Database::query_json`]);
//! - `GET /api/v1/databases`: what is served;
//! - `GET /health`: for a process supervisor;
//! - `GET /`, `/app.js`, `/style.css`: the explorer page.
//!
//! Every error is JSON, `{"error": "..."}`, in the words of the command line, less any
//! server folder (the server's log keeps the whole error).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

use super::limits::{ApiError, Probes, MAX_URL};
use super::served::{start_seeds, Served};
use crate::app::database::Database;
use crate::app::query::parse_counts;
use crate::game::rules::Rules;

/// What the handlers share.
#[derive(Clone)]
pub struct AppState {
    inner: Arc<Inner>,
}

struct Inner {
    databases: Vec<Arc<Served>>,
    probes: Probes,
    /// The answer of `/api/v1/databases`, made once: the databases are opened once.
    listing: String,
    /// The errors already written to the log: a client that asks again and again for a
    /// missing level writes its path once, not once a request.
    logged: Mutex<HashSet<String>>,
}

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppState").finish_non_exhaustive()
    }
}

/// The most distinct errors remembered as logged; past it each is logged every time.
const LOGGED: usize = 4096;

impl AppState {
    /// The state of a server of `databases`, running probes through `probes`.
    pub fn new(databases: Vec<Served>, probes: Probes) -> AppState {
        let listing = serde_json::json!({
            "api": "v1",
            "databases": databases.iter().map(|s| serde_json::json!({
                "rules": s.db.rules().name(),
                "pits": s.db.pits(),
                "max_seeds": s.max_seeds,
                "levels": s.raw + s.packed,
                "raw": s.raw,
                "packed": s.packed,
                "positions": s.positions,
                "start_seeds": s.max_seeds.map_or(Vec::new(), |m| start_seeds(s.db.index(), s.db.pits(), m)),
            })).collect::<Vec<_>>(),
        })
        .to_string();
        AppState {
            inner: Arc::new(Inner {
                databases: databases.into_iter().map(Arc::new).collect(),
                probes,
                listing,
                logged: Mutex::new(HashSet::new()),
            }),
        }
    }
}

impl AppState {
    /// The answer to the client for a probe's error `e` on `served`, which names no
    /// server folder; the whole error, path and all, goes to the log (stderr) the first
    /// time it happens. Errors of the client's input are not logged.
    fn probe_error(&self, served: &Served, e: &crate::error::Error) -> ApiError {
        let answer = ApiError::of(e, &served.name(), served.max_seeds);
        if answer.status != 400 {
            let line = format!("{}: {}", served.name(), e.one_line());
            let mut logged = self.inner.logged.lock().unwrap_or_else(|p| p.into_inner());
            if !logged.contains(&line) {
                eprintln!("{line}");
                if logged.len() < LOGGED {
                    logged.insert(line);
                }
            }
        }
        answer
    }
}

/// The application: routes, the URL limit, JSON answers for unknown paths and methods.
pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/", get(|| page(PAGE_HTML, "text/html; charset=utf-8")))
        .route(
            "/app.js",
            get(|| page(PAGE_JS, "text/javascript; charset=utf-8")),
        )
        .route(
            "/style.css",
            get(|| page(PAGE_CSS, "text/css; charset=utf-8")),
        )
        .route("/health", get(health))
        .route("/api/v1/databases", get(databases))
        .route("/api/v1/{rules}/{pits}", get(position))
        .fallback(not_found)
        .method_not_allowed_fallback(|| async {
            error(ApiError::new(405, "only GET is answered here"))
        })
        .layer(axum::middleware::from_fn(limit_url))
        .with_state(state)
}

const PAGE_HTML: &str = include_str!("page/index.html");
const PAGE_JS: &str = include_str!("page/app.js");
const PAGE_CSS: &str = include_str!("page/style.css");

async fn page(body: &'static str, kind: &'static str) -> Response {
    // The page changes with the binary: revalidate rather than cache.
    (
        [
            (header::CONTENT_TYPE, kind),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
        .into_response()
}

/// A JSON answer with this status; errors are never cached.
fn json(status: StatusCode, body: String, cache: &'static str) -> Response {
    let mut r = (status, body).into_response();
    api_headers(r.headers_mut(), cache);
    r
}

/// The headers of every JSON answer.
fn api_headers(h: &mut HeaderMap, cache: &'static str) {
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    // Other sites' pages (a teaching site, a notebook) may call the API.
    h.insert(
        header::ACCESS_CONTROL_ALLOW_ORIGIN,
        HeaderValue::from_static("*"),
    );
}

/// A successful answer that can change (a level rebuilt or packed, a distance table made
/// or removed, the server restarted on another folder): its validator is the answer's
/// own hash, so it changes exactly when the answer does. Clients may keep it but must
/// ask again before using it (`no-cache`); one that sends the validator it holds
/// (`If-None-Match`) and still holds the answer gets 304 and no body.
fn validated(asked: &HeaderMap, body: String) -> Response {
    let tag = format!("\"{:016x}\"", xxhash_rust::xxh3::xxh3_64(body.as_bytes()));
    let held = asked
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|v| v.trim().trim_start_matches("W/"))
        .any(|v| v == tag || v == "*");
    let mut r = match held {
        true => StatusCode::NOT_MODIFIED.into_response(),
        false => (StatusCode::OK, body).into_response(),
    };
    let h = r.headers_mut();
    api_headers(h, REVALIDATE);
    h.insert(
        header::ETAG,
        HeaderValue::from_str(&tag).expect("hex in quotes"),
    );
    r
}

fn error(e: ApiError) -> Response {
    let status = StatusCode::from_u16(e.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    json(
        status,
        serde_json::json!({ "error": e.message }).to_string(),
        "no-store",
    )
}

async fn limit_url(req: Request, next: Next) -> Response {
    let len = req.uri().path_and_query().map_or(0, |p| p.as_str().len());
    if len > MAX_URL {
        return error(ApiError::new(
            414,
            format!("the URL has {len} bytes; at most {MAX_URL} are answered"),
        ));
    }
    next.run(req).await
}

async fn not_found(req: Request) -> Response {
    error(ApiError::new(
        404,
        format!(
            "nothing at {}: the API is /api/v1/{{rules}}/{{pits}}?position=..., /api/v1/databases and /health",
            req.uri().path()
        ),
    ))
}

async fn health() -> Response {
    json(StatusCode::OK, r#"{"status":"ok"}"#.into(), "no-store")
}

async fn databases(State(state): State<AppState>, asked: HeaderMap) -> Response {
    validated(&asked, state.inner.listing.clone())
}

/// A value is a fact about a position, but an answer also holds its distance, which
/// appears when a table is made, and what is served changes with the folder: clients and
/// proxies may keep an answer and ask whether it still holds ([`validated`]).
const REVALIDATE: &str = "public, no-cache";

async fn position(
    State(state): State<AppState>,
    asked: HeaderMap,
    path: Result<Path<(String, String)>, PathRejection>,
    query: Result<Query<HashMap<String, String>>, QueryRejection>,
) -> Response {
    let answer = async {
        let Path((rules, pits)) = path.map_err(|e| ApiError::new(400, e.body_text()))?;
        let Query(query) = query.map_err(|e| ApiError::new(400, e.body_text()))?;
        let served = find(&state, &rules, &pits)?;
        if let Some(k) = query
            .keys()
            .find(|k| !matches!(k.as_str(), "position" | "line"))
        {
            return Err(ApiError::new(
                400,
                format!("unknown parameter '{k}' (expected position, and line=true for a principal variation)"),
            ));
        }
        let line = match query.get("line").map(String::as_str) {
            None | Some("false") | Some("0") => false,
            Some("true") | Some("1") | Some("") => true,
            Some(x) => {
                return Err(ApiError::new(
                    400,
                    format!("line={x}: expected line=true or line=false"),
                ))
            }
        };
        let text = query.get("position").ok_or_else(|| {
            ApiError::new(
                400,
                format!(
                    "no position: add ?position= and the {} pit counts, side to move first, e.g. ?position={}",
                    2 * served.db.pits(),
                    vec!["1"; 2 * served.db.pits()].join(",")
                ),
            )
        })?;
        let db: &Database = &served.db;
        let board = parse_counts(&[text])
            .and_then(|c| db.board(&c))
            .map_err(|e| state.probe_error(served, &e))?;
        let probed = served.clone();
        state
            .inner
            .probes
            .run(move || {
                let answer = probed.db.query_json(&board, line).map(|v| v.to_string());
                // A table left out (damaged, stale): said once in the log.
                for w in probed.db.take_warnings() {
                    eprintln!("warning: {w}");
                }
                answer
            })
            .await?
            .map_err(|e| state.probe_error(served, &e))
    };
    match answer.await {
        Ok(body) => validated(&asked, body),
        Err(e) => error(e),
    }
}

/// The served database named by the path, or 404 in words that say what is served.
fn find<'a>(state: &'a AppState, rules: &str, pits: &str) -> Result<&'a Arc<Served>, ApiError> {
    let served = || {
        state
            .inner
            .databases
            .iter()
            .map(|s| s.name())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let rules: Rules = rules
        .parse()
        .map_err(|e: String| ApiError::new(404, format!("{e}; served here: {}", served())))?;
    let pits: usize = pits.parse().map_err(|_| {
        ApiError::new(
            404,
            format!(
                "'{pits}' is not a number of pits per side; served here: {}",
                served()
            ),
        )
    })?;
    state
        .inner
        .databases
        .iter()
        .find(|s| s.db.rules() == rules && s.db.pits() == pits)
        .ok_or_else(|| {
            ApiError::new(
                404,
                format!(
                    "no {} database of {pits} pits per side is served here; served: {}",
                    rules.name(),
                    served()
                ),
            )
        })
}
