//! The small variants: the value of the start position (`k` seeds in each of the `2P`
//! pits) for boards of 2 to 6 pits per side, under both rule sets, from the builder's
//! database and, where the reachable graph fits in memory, from the independent solver
//! of [`crate::solve::reference`] as a second opinion. `awari variants` prints the table that
//! `data/variants.md` holds.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Instant;

use rayon::prelude::*;

use crate::app::database::Database;
use crate::error::{Error, Result};
use crate::game::index::Index;
use crate::game::rules::{Board, Rules, MAX_SEEDS};
use crate::solve::build::{build, BuildOptions};
use crate::solve::reference::Reference;
use crate::util::group;

/// Default budget: variants whose database (levels `0..=2Pk`) holds at most this many
/// positions are computed.
pub const DEFAULT_MAX_POSITIONS: u64 = 1_200_000_000;
/// Default limit of the independent solver: reachable positions it explores before it
/// gives up (about 70 bytes each).
pub const DEFAULT_REFERENCE_LIMIT: usize = 20_000_000;

/// One variant: `pits` per side, `per_pit` seeds in each pit at the start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Variant {
    /// The rule set.
    pub rules: Rules,
    /// Pits per side, `P`.
    pub pits: usize,
    /// Seeds in each pit at the start, `k`.
    pub per_pit: usize,
}

impl Variant {
    /// Seeds on the board at the start: the top level.
    pub fn seeds(&self) -> usize {
        2 * self.pits * self.per_pit
    }

    /// The start position: `k` seeds in each of the `2P` pits.
    pub fn start(&self) -> Board {
        Board::start(self.pits, self.per_pit)
    }

    /// Positions in levels `0..=2Pk`, what `awari build` makes for it; `None` if they
    /// cannot be indexed.
    pub fn positions(&self) -> Option<u64> {
        let index = Index::new(self.pits, self.seeds()).ok()?;
        (0..=self.seeds()).try_fold(0u64, |acc, n| acc.checked_add(index.level_size(n)))
    }

    /// Positions the start position can need, counted as Romein and Bal count theirs:
    /// levels `0..=2Pk-2` and `2Pk` (the first capture takes at least two seeds, so
    /// level `2Pk-1` is never reached), plus the start position.
    pub fn needed(&self) -> Option<u64> {
        let index = Index::new(self.pits, self.seeds()).ok()?;
        let n = self.seeds();
        (0..n - 1)
            .chain([n])
            .try_fold(1u64, |acc, l| acc.checked_add(index.level_size(l)))
    }
}

/// The independent solver's verdict on a variant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Second {
    /// It explored `reachable` positions and agrees with the database on all of them.
    Agrees {
        /// Positions reachable from the start, all compared.
        reachable: usize,
    },
    /// It disagrees on `count` of `reachable` positions, for example on `board`.
    Disagrees {
        /// Positions reachable from the start, all compared.
        reachable: usize,
        /// Positions where the two values differ.
        count: usize,
        /// The first of them in the solver's (breadth-first) order.
        board: Board,
        /// Its value in the database.
        database: i8,
        /// Its value by the independent solver.
        reference: i8,
    },
    /// Not run: the reachable graph has more positions than the limit.
    TooLarge {
        /// The solver's limit, in positions.
        limit: usize,
    },
    /// Not tried: the database has more than twice the limit of positions, so the
    /// reachable graph (about 60 to 70% of it on the variants that ran) would not fit.
    Skipped {
        /// The solver's limit, in positions.
        limit: usize,
    },
}

/// One row of the table.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// The variant this row is about.
    pub variant: Variant,
    /// Positions of levels `0..=2Pk`.
    pub positions: Option<u64>,
    /// The value for the first player, `None` when not computed.
    pub value: Option<i8>,
    /// Seconds this run spent on the row (building what was missing, probing, the
    /// independent solver).
    pub seconds: f64,
    /// The independent solver's verdict; `None` when the value was not computed.
    pub second: Option<Second>,
}

/// What to compute.
#[derive(Clone, Debug)]
pub struct VariantOptions {
    /// The root folder of the databases (as `awari build --dir`).
    pub root: PathBuf,
    /// Budget: a variant whose levels `0..=2Pk` hold more positions is not built, only
    /// answered from levels already present.
    pub max_positions: u64,
    /// Reachable positions the independent solver explores before it gives up.
    pub reference_limit: usize,
    /// Board sizes to include, in pits per side.
    pub pits: Vec<usize>,
    /// Rule sets to include.
    pub rules: Vec<Rules>,
    /// Draw progress bars on stderr while building.
    pub progress: bool,
}

impl Default for VariantOptions {
    fn default() -> Self {
        VariantOptions {
            root: "db".into(),
            max_positions: DEFAULT_MAX_POSITIONS,
            reference_limit: DEFAULT_REFERENCE_LIMIT,
            pits: (2..=6).collect(),
            rules: vec![Rules::Awari, Rules::Oware],
            progress: false,
        }
    }
}

/// The variants of the table: per rule set and board size, every `k` within the budget,
/// then the first one beyond it (and for 6 pits, up to Awari itself, `k = 4`).
pub fn plan(opts: &VariantOptions) -> Vec<(Variant, bool)> {
    let mut out = Vec::new();
    for &rules in &opts.rules {
        for &pits in &opts.pits {
            for per_pit in 1.. {
                let v = Variant {
                    rules,
                    pits,
                    per_pit,
                };
                if v.seeds() > MAX_SEEDS {
                    break;
                }
                let within = v.positions().is_some_and(|p| p <= opts.max_positions);
                out.push((v, within));
                // Past the budget: one row, except that 6 pits go on to Awari itself.
                if !(within || pits == 6 && per_pit < 4) {
                    break;
                }
            }
        }
    }
    out
}

/// "draw", "first player wins by 4", "second player wins by 2".
pub fn result_in_words(value: i8) -> String {
    match value {
        0 => "draw".into(),
        1.. => format!("first player wins by {value}"),
        _ => format!("second player wins by {}", -(value as i32)),
    }
}

/// Computes one row. `within`: build what is missing; otherwise answer only from levels
/// already present (a row beyond the budget gives `value: None` when they are not).
pub fn solve(
    opts: &VariantOptions,
    variant: Variant,
    within: bool,
    warn: &mut dyn FnMut(&str),
) -> Result<Row> {
    let t0 = Instant::now();
    let mut row = Row {
        variant,
        positions: variant.positions(),
        value: None,
        seconds: 0.0,
        second: None,
    };
    if within {
        let b = BuildOptions::new(&opts.root, variant.rules, variant.pits, variant.seeds())
            .progress(opts.progress);
        build(&b, |_| {}, |w| warn(w))?;
    }
    let db = Database::open(&opts.root, variant.rules, variant.pits)?;
    let value = match db.analyze(&variant.start()) {
        Ok(a) => a.value,
        Err(Error::MissingLevel { .. }) if !within => return Ok(row),
        Err(e) => return Err(e),
    };
    row.value = Some(value);
    row.second = Some(second_opinion(&db, variant, opts.reference_limit)?);
    row.seconds = t0.elapsed().as_secs_f64();
    Ok(row)
}

/// Runs the independent solver from the start position and compares every position it
/// reaches with the database.
pub fn second_opinion(db: &Database, variant: Variant, limit: usize) -> Result<Second> {
    if variant.positions().is_none_or(|p| p > 2 * limit as u64) {
        return Ok(Second::Skipped { limit });
    }
    let reference = match Reference::solve(variant.rules, &[variant.start()], limit) {
        Ok(r) => r,
        Err(e) => return Ok(Second::TooLarge { limit: e.limit }),
    };
    let all: Vec<(Board, i8)> = reference.iter().map(|(b, v)| (*b, v)).collect();
    let wrong: Vec<(Board, i8, i8)> = all
        .par_iter()
        .map(|&(b, want)| db.probe(&b).map(|got| (b, got, want)))
        .filter(|r| !matches!(r, Ok((_, got, want)) if got == want))
        .collect::<Result<Vec<_>>>()?;
    Ok(match wrong.first() {
        None => Second::Agrees {
            reachable: all.len(),
        },
        Some(&(board, database, reference)) => Second::Disagrees {
            reachable: all.len(),
            count: wrong.len(),
            board,
            database,
            reference,
        },
    })
}

/// The header of the markdown table.
pub const TABLE_HEADER: &str = "| rules | pits per side | seeds per pit | seeds | value | result | database positions | independent solver | seconds |\n|---|---:|---:|---:|---:|---|---:|---|---:|\n";

/// One row of the markdown table.
pub fn markdown_row(row: &Row) -> String {
    let v = row.variant;
    let positions = row.positions.map_or("-".into(), group);
    let (value, result) = match row.value {
        Some(x) => (format!("{x:+}"), result_in_words(x)),
        // The positions column counts the whole database; only Romein and Bal's own
        // board has levels to import (`awari import` reads theirs alone).
        None if v.rules == Rules::Awari && v.pits == 6 => {
            let needed = v.needed().map_or("too many".into(), group);
            (
                "?".into(),
                format!(
                    "not computed: more positions than --max-positions; or import Romein and Bal's levels 0..={} and {} ({needed} positions, what the start reaches) with `awari import`",
                    v.seeds() - 2,
                    v.seeds()
                ),
            )
        }
        None => (
            "?".into(),
            "not computed: more positions than --max-positions; raise it".into(),
        ),
    };
    let second = match &row.second {
        None => "-".into(),
        Some(Second::Agrees { reachable }) => {
            format!("agrees on all {} reachable positions", group(*reachable as u64))
        }
        Some(Second::Disagrees {
            reachable,
            count,
            board,
            database,
            reference,
        }) => format!(
            "DISAGREES on {count} of {} reachable positions, e.g. {board}: database {database:+}, independent {reference:+}",
            group(*reachable as u64)
        ),
        Some(Second::TooLarge { limit }) => {
            format!("not run (more than {} reachable positions)", group(*limit as u64))
        }
        Some(Second::Skipped { limit }) => format!(
            "not run (database over {} positions, twice its limit)",
            group(2 * *limit as u64)
        ),
    };
    let seconds = if row.value.is_some() {
        format!("{:.1}", row.seconds)
    } else {
        "-".into()
    };
    format!(
        "| {} | {} | {} | {} | {value} | {result} | {positions} | {second} | {seconds} |\n",
        v.rules,
        v.pits,
        v.per_pit,
        v.seeds()
    )
}

/// The cells of the table rows of a markdown text (header and rule lines skipped).
pub fn parse_table(text: &str) -> Vec<Vec<String>> {
    text.lines()
        .filter(|l| l.starts_with('|') && !l.starts_with("|---") && !l.starts_with("| rules"))
        .map(|l| {
            l.trim()
                .trim_matches('|')
                .split('|')
                .map(|c| c.trim().to_string())
                .collect()
        })
        .collect()
}

/// A whole table document: a title, the command that regenerates it, the table.
pub fn markdown(rows: &[Row], command: &str) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# The start positions of small Awari and Oware variants\n"
    );
    let _ = writeln!(
        s,
        "The value of the start position (`k` seeds in each of the `2P` pits) for the first \
         player under perfect play: seeds it captures from the start minus seeds its opponent \
         captures, the seeds left in an endless cycle split evenly. From the databases built by \
         `awari build`; the independent solver (`src/solve/reference.rs`: every position reachable \
         from the start, value iteration, no level files) was run where the reachable graph \
         fits its limit and compared on every position it reached. `seconds` is the time this \
         run spent on the row on 2 cores (building the levels not built by an earlier row, \
         probing, the independent solver).\n"
    );
    let _ = writeln!(s, "Regenerate with:\n\n```sh\n{command}\n```\n");
    s += TABLE_HEADER;
    for r in rows {
        s += &markdown_row(r);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_budget() {
        let v = |pits, per_pit| Variant {
            rules: Rules::Awari,
            pits,
            per_pit,
        };
        assert_eq!(v(6, 4).needed(), Some(889_063_398_406));
        assert_eq!(v(6, 2).positions(), Some(1_165_184_475));
        let plan = plan(&VariantOptions::default());
        let within = |p, k| plan.contains(&(v(p, k), true));
        assert!(within(6, 2) && within(5, 3) && within(4, 6));
        assert!(plan.contains(&(v(6, 4), false)) && !within(6, 3) && !within(5, 4));
        assert_eq!(result_in_words(-3), "second player wins by 3");
        assert_eq!(group(1_165_184_475), "1,165,184,475");
    }
}
