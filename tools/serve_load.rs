//! A load generator for `awari serve` (scripts/serve-bench runs it), standard library
//! only: C connections kept alive on loopback, each a thread sending one GET after the
//! other, until N requests are answered in all. Positions are random: a seed count drawn
//! uniformly in 0..=MAX, each seed dropped in a random pit. Prints throughput, latency
//! percentiles and the errors (any answer but 200).
//!
//! One file, compiled on its own (`rustc --edition 2021 -O tools/serve_load.rs`):
//! `serve_load URL RULES PITS MAX N C`, e.g.
//! `serve_load http://127.0.0.1:8080 awari 6 20 100000 64`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() != 6 {
        eprintln!("usage: serve_load URL RULES PITS MAX_SEEDS REQUESTS CONNECTIONS");
        std::process::exit(2);
    }
    let host = args[0]
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_string();
    let rules = args[1].clone();
    let num = |i: usize| -> usize {
        args[i].parse().unwrap_or_else(|_| {
            eprintln!("error: '{}' is not a number", args[i]);
            std::process::exit(2)
        })
    };
    let (pits, max, total, conns) = (num(2), num(3), num(4), num(5));
    let next = AtomicUsize::new(0);
    let start = Instant::now();
    let results: Vec<(Vec<u32>, usize)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..conns)
            .map(|t| {
                let (host, rules, next) = (&host, &rules, &next);
                s.spawn(move || {
                    let mut rng = 0x9e37_79b9_7f4a_7c15u64 ^ ((t as u64 + 1) << 32);
                    let mut lat = Vec::new();
                    let mut errors = 0;
                    let mut conn = Conn::open(host);
                    while next.fetch_add(1, Ordering::Relaxed) < total {
                        let path = format!(
                            "/api/v1/{rules}/{pits}?position={}",
                            position(&mut rng, pits, max)
                        );
                        let t0 = Instant::now();
                        match conn.get(host, &path) {
                            Ok(200) => lat.push(t0.elapsed().as_micros() as u32),
                            Ok(_) => errors += 1,
                            Err(_) => {
                                errors += 1;
                                conn = Conn::open(host);
                            }
                        }
                    }
                    (lat, errors)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let secs = start.elapsed().as_secs_f64();
    let mut lat: Vec<u32> = results.iter().flat_map(|r| r.0.iter().copied()).collect();
    let errors: usize = results.iter().map(|r| r.1).sum();
    lat.sort_unstable();
    let pct = |p: f64| {
        lat.get(((lat.len() as f64 * p) as usize).min(lat.len().saturating_sub(1)))
            .map_or(0.0, |&us| us as f64 / 1000.0)
    };
    println!(
        "{} requests ({} answered 200, {errors} errors) in {secs:.2} s over {conns} connections: {:.0} requests/s, latency p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        lat.len() + errors,
        lat.len(),
        (lat.len() + errors) as f64 / secs,
        pct(0.50),
        pct(0.99),
        lat.last().map_or(0.0, |&us| us as f64 / 1000.0),
    );
    if errors > 0 {
        std::process::exit(1);
    }
}

/// xorshift64: a random position of at most `max` seeds on `2p` pits, "a,b,c,...".
fn position(rng: &mut u64, p: usize, max: usize) -> String {
    let mut next = || {
        *rng ^= *rng << 13;
        *rng ^= *rng >> 7;
        *rng ^= *rng << 17;
        *rng as usize
    };
    let n = next() % (max + 1);
    let mut pits = vec![0u32; 2 * p];
    for _ in 0..n {
        pits[next() % (2 * p)] += 1;
    }
    pits.iter()
        .map(|c| c.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

/// One keep-alive HTTP/1.1 connection.
struct Conn {
    reader: BufReader<TcpStream>,
}

impl Conn {
    fn open(host: &str) -> Conn {
        let stream = TcpStream::connect(host).expect("connect to the server");
        stream.set_nodelay(true).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        Conn {
            reader: BufReader::new(stream),
        }
    }

    /// Sends a GET and reads the whole answer; its status.
    fn get(&mut self, host: &str, path: &str) -> std::io::Result<u16> {
        write!(
            self.reader.get_mut(),
            "GET {path} HTTP/1.1\r\nHost: {host}\r\n\r\n"
        )?;
        let mut line = String::new();
        self.reader.read_line(&mut line)?;
        let status: u16 = line
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| std::io::Error::other(format!("bad status line {line:?}")))?;
        let mut length = 0;
        loop {
            line.clear();
            self.reader.read_line(&mut line)?;
            if line == "\r\n" || line.is_empty() {
                break;
            }
            if let Some((k, v)) = line.split_once(':') {
                if k.eq_ignore_ascii_case("content-length") {
                    length = v.trim().parse().unwrap_or(0);
                }
            }
        }
        let mut body = vec![0; length];
        self.reader.read_exact(&mut body)?;
        Ok(status)
    }
}
