//! What a build measured, level by level: `rates.csv` in the database folder (DESIGN.md
//! section 8), one line appended per level built. `awari plan` extrapolates from the
//! largest levels there rather than from a calibration of a few seconds, which other
//! work on the machine can make wrong by a factor of three.
//!
//! The first eight columns are those of `awari bench --csv`, so that either file serves
//! `awari plan --rates`. A reader keeps the lines it understands and counts the others: a
//! last line without its newline (a build killed while writing it), or anything foreign.

use std::fs;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

pub use super::schema::HEADER;
use super::schema::{Col, FIELDS};
use crate::error::{Error, Result};
use crate::game::rules::MAX_SEEDS;
use crate::solve::level::{Lower, StateKind};

/// The file's name in a database folder.
pub const RATES_FILE: &str = "rates.csv";

/// One level built: how long it took, on how many threads, with which state and way of
/// reading the lower levels, and how much CPU time its threads had.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LevelRate {
    /// The level.
    pub seeds: usize,
    /// Its positions.
    pub positions: u64,
    /// Worker threads of the build.
    pub threads: usize,
    /// Wall time of the level, from its start to its file written and checked.
    pub seconds: f64,
    /// Of it, the forward pass, seconds.
    pub forward: f64,
    /// And the backward pass.
    pub backward: f64,
    /// Peak resident memory of the process so far (the level's or an earlier one's).
    pub peak_rss: Option<u64>,
    /// CPU time of the process's threads during the level.
    pub cpu_seconds: Option<f64>,
    /// The solver state.
    pub state: StateKind,
    /// How the forward pass read the lower levels.
    pub lower: Lower,
    /// When the level was finished, seconds since 1970 (UTC).
    pub finished: u64,
}

impl LevelRate {
    /// Positions per second per thread, by the wall clock.
    pub fn per_thread(&self) -> f64 {
        self.positions as f64 / self.seconds.max(1e-9) / self.threads.max(1) as f64
    }

    /// The share of the threads' wall time they were on a CPU, where known.
    pub fn busy(&self) -> Option<f64> {
        self.cpu_seconds
            .map(|cpu| busy(cpu, self.seconds, self.threads))
    }

    /// The line of the file, without its newline.
    pub fn line(&self) -> String {
        let opt = |x: Option<String>| x.unwrap_or_default();
        format!(
            "{},{},{},{:.3},{:.3},{:.3},{:.0},{},{},{},{},{}",
            self.seeds,
            self.positions,
            self.threads,
            self.seconds,
            self.forward,
            self.backward,
            self.per_thread(),
            opt(self.peak_rss.map(|b| b.to_string())),
            opt(self.cpu_seconds.map(|c| format!("{c:.3}"))),
            self.state.name(),
            self.lower.name(),
            self.finished
        )
    }

    /// A line of the file (without its newline), or `None` when it is not one: wrong
    /// number of columns, a number that does not parse or makes no sense, an unknown
    /// state or way of reading.
    pub fn parse(line: &str) -> Option<LevelRate> {
        let f: Vec<&str> = line.split(',').collect();
        if f.len() != FIELDS {
            return None;
        }
        let at = |c: Col| f[c as usize];
        let secs = |s: &str| s.parse::<f64>().ok().filter(|x| x.is_finite() && *x >= 0.0);
        // Small levels take less than the millisecond written.
        let seconds = secs(at(Col::Seconds))?;
        let threads = at(Col::Threads).parse::<usize>().ok().filter(|&t| t >= 1)?;
        let positions = at(Col::Positions).parse::<u64>().ok().filter(|&p| p >= 1)?;
        let state = match at(Col::State) {
            "fast" => StateKind::Fast,
            "compact" => StateKind::Compact,
            "lean" => StateKind::Lean,
            _ => return None,
        };
        let lower = match at(Col::Lower) {
            "random" => Lower::Random,
            "stream" => Lower::Stream,
            _ => return None,
        };
        // Empty where the OS did not say.
        let peak_rss = match at(Col::PeakRss) {
            "" => None,
            s => Some(s.parse::<u64>().ok()?),
        };
        let cpu_seconds = match at(Col::CpuSeconds) {
            "" => None,
            s => Some(secs(s)?),
        };
        Some(LevelRate {
            seeds: at(Col::Level).parse().ok().filter(|&n| n <= MAX_SEEDS)?,
            positions,
            threads,
            seconds,
            forward: secs(at(Col::Forward))?,
            backward: secs(at(Col::Backward))?,
            peak_rss,
            cpu_seconds,
            state,
            lower,
            finished: at(Col::Finished).parse().ok()?,
        })
    }
}

/// Now, in seconds since 1970 (UTC): a line's `finished`.
pub fn now_unix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The share of `threads` threads' wall time `wall` that they spent on a CPU, given the
/// CPU time `cpu` they had together: near 1 on a machine that runs nothing else, and
/// about a half when other work holds one of two cores.
pub fn busy(cpu: f64, wall: f64, threads: usize) -> f64 {
    cpu / (wall.max(1e-9) * threads.max(1) as f64)
}

/// The path of the rates file of the database folder `dir`.
pub fn rates_path(dir: &Path) -> PathBuf {
    dir.join(RATES_FILE)
}

/// Appends `rate` to the rates file of `dir`, writing the header first if the file is new
/// or empty. A last line cut short (a build killed while writing it) is cut off first, so
/// that it can never be read as a complete line once another follows it.
pub fn append(dir: &Path, rate: &LevelRate) -> Result<()> {
    let path = rates_path(dir);
    let io = |e| Error::io(&path, e);
    let mut file = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(io)?;
    let mut text = Vec::new();
    file.read_to_end(&mut text).map_err(io)?;
    let whole = text.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    if whole < text.len() {
        file.set_len(whole as u64).map_err(io)?;
    }
    file.seek(SeekFrom::Start(whole as u64)).map_err(io)?;
    let mut out = String::new();
    if whole == 0 {
        out.push_str(HEADER);
        out.push('\n');
    }
    out.push_str(&rate.line());
    out.push('\n');
    // One write: the line is whole or (killed meanwhile) cut short, never mixed.
    file.write_all(out.as_bytes()).map_err(io)
}

/// The rates a file holds.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Rates {
    /// The lines understood, in the file's order (a level built again comes again).
    pub levels: Vec<LevelRate>,
    /// Lines not understood and left out (the header is not counted).
    pub ignored: usize,
}

impl Rates {
    /// The lines of `text`: only those that end with a newline count, since a build
    /// writes each line whole with its newline.
    pub fn parse(text: &str) -> Rates {
        let mut rates = Rates::default();
        let mut lines: Vec<&str> = text.split('\n').collect();
        // What follows the last newline: empty, or a line cut short.
        if lines.pop().is_some_and(|rest| !rest.is_empty()) {
            rates.ignored += 1;
        }
        for line in lines {
            let line = line.strip_suffix('\r').unwrap_or(line);
            if line == HEADER || line.is_empty() {
                continue;
            }
            match LevelRate::parse(line) {
                Some(r) => rates.levels.push(r),
                None => rates.ignored += 1,
            }
        }
        rates
    }

    /// The latest line of each level, by level.
    pub fn latest(&self) -> Vec<LevelRate> {
        let mut by_level = std::collections::BTreeMap::new();
        for r in &self.levels {
            by_level.insert(r.seeds, *r);
        }
        by_level.into_values().collect()
    }
}

/// The rates file of `dir`, or `None` when there is none.
pub fn read(dir: &Path) -> Result<Option<Rates>> {
    let path = rates_path(dir);
    match fs::read(&path) {
        Ok(bytes) => Ok(Some(Rates::parse(&String::from_utf8_lossy(&bytes)))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io(&path, e)),
    }
}

#[cfg(test)]
mod tests {
    use super::super::schema::{header, BENCH_COLUMNS};
    use super::*;

    fn level(seeds: usize, positions: u64, seconds: f64) -> LevelRate {
        LevelRate {
            seeds,
            positions,
            threads: 2,
            seconds,
            forward: 1.5,
            backward: 3.25,
            peak_rss: Some(812_000_000),
            cpu_seconds: Some(9.5),
            state: StateKind::Fast,
            lower: Lower::Random,
            finished: 1_764_734_400,
        }
    }

    #[test]
    fn lines_are_written_and_read_back() {
        let t = tempfile::tempdir().unwrap();
        assert_eq!(read(t.path()).unwrap(), None);
        let a = level(20, 80_214_915, 5.0);
        let b = LevelRate {
            cpu_seconds: None,
            peak_rss: None,
            state: StateKind::Compact,
            lower: Lower::Stream,
            ..level(21, 116_297_583, 8.125)
        };
        append(t.path(), &a).unwrap();
        append(t.path(), &b).unwrap();
        let text = fs::read_to_string(t.path().join("rates.csv")).unwrap();
        assert_eq!(
            text,
            format!(
                "{HEADER}\n\
                 20,80214915,2,5.000,1.500,3.250,8021492,812000000,9.500,fast,random,1764734400\n\
                 21,116297583,2,8.125,1.500,3.250,7156774,,,compact,stream,1764734400\n"
            )
        );
        let rates = read(t.path()).unwrap().unwrap();
        assert_eq!(rates.ignored, 0);
        assert_eq!(rates.levels, vec![a, b]);
        // 80,214,915 positions in 5 s on 2 threads; 9.5 s of CPU of 10 s.
        assert_eq!(a.per_thread(), 8_021_491.5);
        assert_eq!(a.busy(), Some(0.95));
        assert_eq!(b.busy(), None);
        // The first eight columns are those of `awari bench --csv`.
        assert_eq!(
            header(BENCH_COLUMNS),
            "level,positions,threads,seconds,forward_seconds,backward_seconds,\
             positions_per_second_per_thread,peak_rss_bytes"
        );
        assert_eq!((FIELDS, header(FIELDS)), (12, HEADER.to_string()));
    }

    #[test]
    fn a_truncated_last_line_is_left_out_and_cut_before_the_next() {
        let t = tempfile::tempdir().unwrap();
        let path = t.path().join(RATES_FILE);
        append(t.path(), &level(20, 80_214_915, 5.0)).unwrap();
        let whole = fs::read_to_string(&path).unwrap();
        // A build killed in the middle of its line for level 21: cut inside the last
        // column, which would still parse as a number.
        let cut = level(21, 116_297_583, 8.0).line();
        fs::write(&path, format!("{whole}{}", &cut[..cut.len() - 3])).unwrap();
        let rates = read(t.path()).unwrap().unwrap();
        assert_eq!(rates.ignored, 1);
        assert_eq!(rates.levels, vec![level(20, 80_214_915, 5.0)]);
        // The next build drops the fragment before its own line.
        append(t.path(), &level(21, 116_297_583, 8.0)).unwrap();
        let rates = read(t.path()).unwrap().unwrap();
        assert_eq!(rates.ignored, 0);
        assert_eq!(rates.levels.len(), 2);
        assert_eq!(rates.levels[1], level(21, 116_297_583, 8.0));
        assert_eq!(fs::read_to_string(&path).unwrap().lines().count(), 3);
        // A file holding only a fragment of its header starts afresh.
        fs::write(&path, "level,posi").unwrap();
        append(t.path(), &level(20, 80_214_915, 5.0)).unwrap();
        assert!(fs::read_to_string(&path)
            .unwrap()
            .starts_with(&format!("{HEADER}\n20,")));
    }

    #[test]
    fn foreign_lines_are_counted_and_left_out() {
        let good = level(22, 167_947_595, 12.0);
        let text = format!(
            "{HEADER}\n\
             # a comment\n\
             level,positions,threads,seconds\n\
             {}\n\
             22,167947595,2,12.000,1.500,3.250,6997816,,,dense,random,1764734400\n\
             22,167947595,0,12.000,1.500,3.250,6997816,,,fast,random,1764734400\n\
             22,167947595,2,-1.000,1.500,3.250,6997816,,,fast,random,1764734400\n\
             22,167947595,2,NaN,1.500,3.250,6997816,,,fast,random,1764734400\n\
             22,167947595,2,12.000,1.500,3.250,6997816,,x,fast,random,1764734400\n\
             \u{fffd}\u{fffd}\n\
             \n\
             {}\r\n",
            good.line(),
            level(23, 237_983_836, 20.0).line(),
        );
        let rates = Rates::parse(&text);
        assert_eq!(rates.ignored, 8);
        assert_eq!(rates.levels, vec![good, level(23, 237_983_836, 20.0)]);
        // A level built twice: the later line counts.
        let again = level(22, 167_947_595, 10.0);
        let rates = Rates::parse(&format!(
            "{}\n{}\n{}\n",
            good.line(),
            again.line(),
            good.line()
        ));
        assert_eq!(rates.latest(), vec![good]);
        let rates = Rates::parse(&format!("{}\n{}\n", good.line(), again.line()));
        assert_eq!(rates.latest(), vec![again]);
        // Not text at all.
        let t = tempfile::tempdir().unwrap();
        fs::write(t.path().join(RATES_FILE), [0xff, 0xfe, 0, 1, b'\n', 7]).unwrap();
        let rates = read(t.path()).unwrap().unwrap();
        assert_eq!((rates.levels.len(), rates.ignored), (0, 2));
    }
}
