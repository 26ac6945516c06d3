//! The one schema of the rates file (`rates.csv`, [`super::rates`]) and of
//! `awari bench --csv`, whose columns are the file's first ones, so that either file
//! serves `awari plan --rates`: the columns' names and numbers, the header, the bench
//! lines, and the rate `awari plan --rates` reads from either.

/// The file's one schema: each column's name and number, from which the header, the
/// lines of both files and their readers all take their columns.
macro_rules! columns {
    ($first:ident = $first_name:literal $(, $col:ident = $name:literal)* $(,)?) => {
        /// The columns of a line, in order.
        #[derive(Clone, Copy, Debug)]
        pub(super) enum Col {
            $first,
            $($col,)*
        }

        /// The first line of the file: the columns' names.
        pub const HEADER: &str = concat!($first_name $(, ",", $name)*);

        /// Columns of a line.
        pub(super) const FIELDS: usize = [$first_name $(, $name)*].len();
    };
}

columns!(
    Level = "level",
    Positions = "positions",
    Threads = "threads",
    Seconds = "seconds",
    Forward = "forward_seconds",
    Backward = "backward_seconds",
    PerThread = "positions_per_second_per_thread",
    PeakRss = "peak_rss_bytes",
    CpuSeconds = "cpu_seconds",
    State = "state",
    Lower = "lower",
    Finished = "finished_unix",
);

/// The columns of `awari bench --csv`: the file's first ones, up to the peak memory.
pub const BENCH_COLUMNS: usize = Col::CpuSeconds as usize;

/// The header of a file of the first `columns` columns (all of them: [`HEADER`]).
pub fn header(columns: usize) -> String {
    HEADER
        .split(',')
        .take(columns)
        .collect::<Vec<_>>()
        .join(",")
}

/// A line of `awari bench --csv`: a level, or a run's total (no level, no passes), with
/// seconds to four places (a rates file's to three).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BenchRow {
    /// The level; `None` for the total of a run.
    pub seeds: Option<usize>,
    /// Positions built.
    pub positions: u64,
    /// Worker threads.
    pub threads: usize,
    /// Wall time, seconds.
    pub seconds: f64,
    /// The forward and backward passes of a level, seconds.
    pub passes: Option<(f64, f64)>,
    /// Peak resident memory, where the OS says.
    pub peak_rss: Option<u64>,
}

impl BenchRow {
    /// The line, without its newline.
    pub fn line(&self) -> String {
        let per_thread =
            self.positions as f64 / self.seconds.max(1e-9) / self.threads.max(1) as f64;
        let (forward, backward) = self
            .passes
            .map_or((String::new(), String::new()), |(f, b)| {
                (format!("{f:.4}"), format!("{b:.4}"))
            });
        format!(
            "{},{},{},{:.4},{forward},{backward},{per_thread:.0},{}",
            self.seeds.map_or("total".to_string(), |n| n.to_string()),
            self.positions,
            self.threads,
            self.seconds,
            self.peak_rss.map_or(String::new(), |b| b.to_string()),
        )
    }
}

/// The rate of the largest level of the largest thread count in the text of a bench CSV
/// or a rates file (`awari plan --rates`): its positions per second per thread, its
/// positions and its threads; `None` when it has no level line. Only the columns the two
/// files share are read.
pub fn largest_level_rate(text: &str) -> Option<(f64, u64, usize)> {
    let mut best: Option<(usize, u64, f64)> = None;
    for line in text.lines().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        let at = |c: Col| f.get(c as usize);
        let (Some(Ok(threads)), Some(Ok(positions)), Some(Ok(rate))) = (
            at(Col::Threads).map(|s| s.parse::<usize>()),
            at(Col::Positions).map(|s| s.parse::<u64>()),
            at(Col::PerThread).map(|s| s.parse::<f64>()),
        ) else {
            continue;
        };
        if f[Col::Level as usize] == "total" {
            continue;
        }
        if best.is_none_or(|(t, p, _)| (threads, positions) > (t, p)) {
            best = Some((threads, positions, rate));
        }
    }
    best.map(|(threads, positions, rate)| (rate, positions, threads))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A bench CSV's lines, and the rate `awari plan --rates` takes from it or from a
    /// rates file: the largest level of the most threads, totals left out.
    #[test]
    fn bench_lines_share_the_columns_and_serve_plan() {
        let level = BenchRow {
            seeds: Some(20),
            positions: 80_214_915,
            threads: 2,
            seconds: 5.0,
            passes: Some((1.5, 3.25)),
            peak_rss: Some(812_000_000),
        };
        let total = BenchRow {
            seeds: None,
            passes: None,
            peak_rss: None,
            seconds: 7.5,
            ..level
        };
        assert_eq!(
            level.line(),
            "20,80214915,2,5.0000,1.5000,3.2500,8021492,812000000"
        );
        assert_eq!(total.line(), "total,80214915,2,7.5000,,,5347661,");
        let one = BenchRow {
            seeds: Some(21),
            positions: 116_297_583,
            threads: 1,
            ..level
        };
        let bench = format!(
            "{}\n{}\n{}\n{}\n",
            header(BENCH_COLUMNS),
            one.line(),
            level.line(),
            total.line()
        );
        assert_eq!(
            largest_level_rate(&bench),
            Some((8_021_492.0, 80_214_915, 2))
        );
        let rates = format!(
            "{HEADER}\n22,167947595,2,12.000,1.500,3.250,6997816,,,fast,random,1764734400\n"
        );
        assert_eq!(
            largest_level_rate(&rates),
            Some((6_997_816.0, 167_947_595, 2))
        );
        assert_eq!(largest_level_rate(&format!("{HEADER}\n")), None);
    }
}
