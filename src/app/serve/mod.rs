//! `awari serve`: every database under a root folder behind an HTTP API and a web page.
//!
//! axum on tokio, the HTTP stack of Rust's web ecosystem. The async threads only parse
//! requests and write answers; a probe reads level files (a page fault on a raw level, a
//! block to decompress on a packed one), so it runs on tokio's blocking pool, behind a
//! semaphore (a full server answers 429 at once rather than queueing without bound) and
//! a deadline (503).
//!
//! The parts: this file the entry point, the server's runtime and its shutdown;
//! [`served`] the databases served; [`limits`] the limits on requests and probes, and
//! the error answers; [`api`] the routes and their answers. The page's HTML, CSS and
//! JavaScript are files in `page/`, compiled into the binary. This file uses the others
//! and none of them uses it.

pub mod api;
mod limits;
mod served;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use crate::error::{Error, Result};

// Named here as before the split (`expert::serve` re-exports them from this module).
pub use limits::{ApiError, Probes, MAX_URL};
pub use served::{open_all, start_seeds, Served};

/// What `awari serve` is asked for.
#[derive(Clone, Debug)]
pub struct ServeOptions {
    /// The root folder of the databases (each `<rules>-<P>` folder in it is served).
    pub root: PathBuf,
    /// The address to listen on (port 0: any free port).
    pub bind: SocketAddr,
    /// Threads of the blocking pool that runs probes (and of the async runtime).
    pub threads: usize,
    /// Probes running or waiting at once; one more is answered 429.
    pub max_concurrent: usize,
    /// The longest a probe may take before the answer is 503.
    pub timeout: Duration,
}

/// Serves the databases of `databases` until Ctrl-C or SIGTERM; `started` is called
/// once the socket listens, with its address (the port chosen when asked for port 0).
pub fn serve(
    opts: &ServeOptions,
    databases: Vec<Served>,
    started: impl FnOnce(SocketAddr),
) -> Result<()> {
    crate::util::check_threads(opts.threads)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(opts.threads)
        .max_blocking_threads(opts.threads)
        .enable_all()
        .build()
        .map_err(|e| Error::Resources(format!("cannot start the server's threads: {e}")))?;
    let state = api::AppState::new(databases, Probes::new(opts.max_concurrent, opts.timeout));
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(opts.bind)
            .await
            .map_err(|e| Error::Input(format!("cannot listen on {}: {e}", opts.bind)))?;
        let addr = listener
            .local_addr()
            .map_err(|e| Error::Input(format!("cannot listen on {}: {e}", opts.bind)))?;
        // The handler is in place before anyone is told the server is up: a SIGTERM right
        // after the first answer stops it gracefully, not by the default action.
        let term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
        started(addr);
        axum::serve(listener, api::router(state))
            .with_graceful_shutdown(shutdown(term))
            .await
            .map_err(|e| Error::Resources(format!("the server stopped: {e}")))
    })
}

/// Resolves on Ctrl-C or SIGTERM (`term`, the handler's stream): the server stops taking
/// connections and finishes the requests under way.
async fn shutdown(term: Option<tokio::signal::unix::Signal>) {
    let term = async {
        match term {
            Some(mut s) => {
                s.recv().await;
            }
            // No SIGTERM handler: Ctrl-C still stops the server.
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term => {}
    }
}
