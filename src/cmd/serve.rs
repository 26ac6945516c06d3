//! `awari serve`: the HTTP API and the web explorer of every database under `--dir`.

use std::io::Write;
use std::net::SocketAddr;
use std::time::Duration;

use clap::Args;

use awari::expert::serve::{open_all, serve, ServeOptions};

use super::{real, whole, RootArg, Threads};

/// Parses `--bind`: `IP:PORT`, `HOST:PORT` (its first address), or an IP or host alone
/// (port 8080).
fn parse_bind(s: &str) -> Result<SocketAddr, String> {
    use std::net::{IpAddr, ToSocketAddrs};
    if let Ok(addr) = s.parse::<SocketAddr>() {
        return Ok(addr);
    }
    if let Ok(ip) = s.trim_matches(['[', ']']).parse::<IpAddr>() {
        return Ok(SocketAddr::new(ip, 8080));
    }
    let with_port = match s.rsplit_once(':') {
        Some((_, port)) if port.parse::<u16>().is_ok() => s.to_string(),
        _ => format!("{s}:8080"),
    };
    with_port
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .ok_or_else(|| {
            format!("must be an address and port, e.g. 127.0.0.1:8080 or localhost:8080, got '{s}'")
        })
}

/// Serve every database under --dir over HTTP: a JSON API and a web page to explore it.
#[derive(Args, Debug)]
pub struct ServeArgs {
    #[command(flatten)]
    root: RootArg,
    /// Address and port to listen on: an IP address or a host name (`localhost`), with a
    /// port or without (8080); loopback by default (port 0: any free port).
    #[arg(long, default_value = "127.0.0.1:8080", value_parser = parse_bind)]
    bind: SocketAddr,
    #[command(flatten)]
    threads: Threads,
    /// Probes running or queued at once, 1..=1000000; one more is answered 429 (too many
    /// requests).
    #[arg(long, default_value_t = 256, value_parser = whole::<usize>(1, 1_000_000))]
    max_concurrent: usize,
    /// Seconds a probe may take before the answer is 503, 0.001..=86400.
    #[arg(long, default_value_t = 10.0, value_parser = real(0.001, 86400.0))]
    timeout: f64,
}

pub fn run(args: ServeArgs) -> anyhow::Result<()> {
    // Refused before the databases are opened.
    let threads = args.threads.count()?;
    let own = args.root.database();
    let (rules, pits) = own.unwrap_or((awari::Rules::Awari, 6));
    args.root.readable(rules, pits)?;
    let opts = ServeOptions {
        root: args.root.root().to_path_buf(),
        bind: args.bind,
        threads,
        max_concurrent: args.max_concurrent,
        timeout: Duration::from_secs_f64(args.timeout),
    };
    let mut databases = open_all(&opts.root)?;
    // A database folder given as --dir: that database alone.
    if let Some((rules, pits)) = own {
        databases.retain(|s| s.db.rules() == rules && s.db.pits() == pits);
    }
    let names: Vec<String> = databases
        .iter()
        .map(|s| format!("{} {}", s.name(), s.summary()))
        .collect();
    serve(&opts, databases, |addr| {
        // One line, flushed: a supervisor or a test reads the address from it.
        let mut out = std::io::stdout().lock();
        let _ = writeln!(
            out,
            "serving http://{addr}/ with {threads} thread(s): {}",
            names.join("; ")
        );
        let _ = out.flush();
    })?;
    warn!("stopped");
    Ok(())
}
