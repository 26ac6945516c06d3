//! The limits of `awari serve`: the longest URL answered, and the probes at once and
//! their deadline ([`Probes`]); with them the error answer ([`ApiError`]), which a request
//! past a limit gets, as does a probe that fails. Apart from `mod.rs`, which sets the
//! limits, so that the routes (`api.rs`) use them without using `mod.rs`, which uses
//! the routes.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Semaphore;

use crate::error::Error;

/// The longest URL answered (path and query); longer ones get 414. A position of the
/// largest board is 16 counts of at most 3 digits: far below.
pub const MAX_URL: usize = 2048;

/// An answer that is not a position's: the status and the words of the error.
#[derive(Debug, PartialEq, Eq)]
pub struct ApiError {
    /// The HTTP status, 4xx or 5xx.
    pub status: u16,
    /// What went wrong, in the command line's words.
    pub message: String,
}

impl ApiError {
    /// An error with this status and message.
    pub fn new(status: u16, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            message: message.into(),
        }
    }

    /// A library error met by a probe of the database `name` that serves levels
    /// `0..=max_seeds`: bad input is the client's (400), a level not built is not found
    /// (404, naming the levels served), anything else (a damaged file) is ours (500).
    /// The words name no server folder (a client has no business knowing it; the
    /// server's log keeps the whole error): a file by its name alone, no build command.
    pub fn of(e: &Error, name: &str, max_seeds: Option<usize>) -> ApiError {
        let file = |path: &std::path::Path| {
            path.file_name()
                .map_or_else(|| "a file".into(), |f| f.to_string_lossy().into_owned())
        };
        match e.root() {
            // Input errors echo what the client sent (pit counts), never a path.
            Error::Input(m) => ApiError::new(400, m.clone()),
            Error::MissingLevel { seeds, .. } => {
                let served = match max_seeds {
                    Some(m) => format!("served levels 0..={m}"),
                    None => "no level is served".into(),
                };
                ApiError::new(
                    404,
                    format!("level {seeds} of {name} is not served here; {served}"),
                )
            }
            Error::Format { path, problem } => {
                ApiError::new(500, format!("{name}: {}: {problem}", file(path)))
            }
            Error::Io { path, source } => {
                ApiError::new(500, format!("{name}: {}: {source}", file(path)))
            }
            Error::Compression { path, source } => {
                ApiError::new(500, format!("{name}: {}: zstd: {source}", file(path)))
            }
            _ => ApiError::new(
                500,
                format!("{name} cannot answer this position; the server's log says why"),
            ),
        }
    }
}

/// The probes of the server: at most `permits` running or queued on the blocking pool,
/// each answered within `timeout`.
#[derive(Clone, Debug)]
pub struct Probes {
    permits: Arc<Semaphore>,
    max: usize,
    timeout: Duration,
}

impl Probes {
    /// At most `max` probes at once, each within `timeout`.
    pub fn new(max: usize, timeout: Duration) -> Probes {
        Probes {
            permits: Arc::new(Semaphore::new(max)),
            max,
            timeout,
        }
    }

    /// Runs `f` on the blocking pool: 429 if `max` probes are already under way, 503 if
    /// it has not finished within the timeout. A probe past its deadline keeps its
    /// permit until its thread is free, so a slow disk cannot pile up threads.
    pub async fn run<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> std::result::Result<T, ApiError> {
        let Ok(permit) = self.permits.clone().try_acquire_owned() else {
            return Err(ApiError::new(
                429,
                format!(
                    "the server is busy ({} probes under way); try again shortly",
                    self.max
                ),
            ));
        };
        let task = tokio::task::spawn_blocking(move || {
            let _permit = permit;
            f()
        });
        match tokio::time::timeout(self.timeout, task).await {
            Ok(Ok(v)) => Ok(v),
            // A panic's words may name a file: they go to the log, not to the client.
            Ok(Err(e)) => {
                eprintln!("a probe failed: {e}");
                Err(ApiError::new(
                    500,
                    "the probe failed; the server's log says why",
                ))
            }
            Err(_) => Err(ApiError::new(
                503,
                format!(
                    "no answer within {} ms; try again later",
                    self.timeout.as_millis()
                ),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .max_blocking_threads(4)
            .enable_all()
            .build()
            .unwrap()
    }

    #[test]
    fn a_full_server_answers_429_and_frees_its_permits() {
        runtime().block_on(async {
            let probes = Probes::new(2, Duration::from_secs(10));
            let (tx, rx) = std::sync::mpsc::channel::<()>();
            let rx = Arc::new(std::sync::Mutex::new(rx));
            // Two probes that wait until told: the semaphore is full.
            let mut held = Vec::new();
            for _ in 0..2 {
                let (p, rx) = (probes.clone(), rx.clone());
                held.push(tokio::spawn(async move {
                    p.run(move || rx.lock().unwrap().recv().unwrap()).await
                }));
            }
            while probes.permits.available_permits() > 0 {
                tokio::task::yield_now().await;
            }
            let e = probes.run(|| 7).await.unwrap_err();
            assert_eq!(e.status, 429);
            assert!(e.message.contains("2 probes under way"), "{}", e.message);
            tx.send(()).unwrap();
            tx.send(()).unwrap();
            for h in held {
                assert_eq!(h.await.unwrap(), Ok(()));
            }
            assert_eq!(probes.run(|| 7).await, Ok(7));
        });
    }

    #[test]
    fn a_slow_probe_answers_503_and_keeps_its_permit_until_done() {
        runtime().block_on(async {
            let probes = Probes::new(1, Duration::from_millis(50));
            let e = probes
                .run(|| std::thread::sleep(Duration::from_millis(400)))
                .await
                .unwrap_err();
            assert_eq!(
                e,
                ApiError::new(503, "no answer within 50 ms; try again later")
            );
            // Its thread still sleeps: the one permit is still taken.
            assert_eq!(probes.run(|| 1).await.unwrap_err().status, 429);
            tokio::time::sleep(Duration::from_millis(600)).await;
            assert_eq!(probes.run(|| 1).await, Ok(1));
        });
    }

    #[test]
    fn errors_map_to_statuses_in_words_that_name_no_folder() {
        let e = ApiError::of(&Error::Input("bad".into()), "awari-6", Some(16));
        assert_eq!(e, ApiError::new(400, "bad"));
        let missing = Error::MissingLevel {
            seeds: 48,
            rules: "awari",
            pits: 6,
            dir: "/srv/secret/awari-6".into(),
            command: "awari build --max-seeds 48 --dir /srv/secret".into(),
        };
        let e = ApiError::of(&missing.context("probing"), "awari-6", Some(16));
        assert_eq!(
            e,
            ApiError::new(
                404,
                "level 48 of awari-6 is not served here; served levels 0..=16"
            )
        );
        let damaged = Error::format("/srv/secret/awari-6/level-005.awl", "damaged payload");
        assert_eq!(
            ApiError::of(&damaged.context("level 7 needs it"), "awari-6", Some(16)),
            ApiError::new(500, "awari-6: level-005.awl: damaged payload")
        );
        let io = Error::io("/srv/secret/x", std::io::Error::other("boom"));
        assert_eq!(
            ApiError::of(&io, "oware-4", None),
            ApiError::new(500, "oware-4: x: boom")
        );
        let busy = Error::Busy {
            dir: "/srv/secret".into(),
            holder: "pid 1".into(),
        };
        let e = ApiError::of(&busy, "awari-6", Some(16));
        assert_eq!(e.status, 500);
        assert!(!e.message.contains("secret"), "{}", e.message);
    }
}
