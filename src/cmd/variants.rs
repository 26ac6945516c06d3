//! `awari variants`: the value of the start position of small variants, as the markdown
//! table of data/variants.md.

use std::io::{IsTerminal, Write};

use clap::Args;

use awari::expert::figures::group;
use awari::expert::variants::{
    markdown, markdown_row, plan, result_in_words, solve, VariantOptions, DEFAULT_MAX_POSITIONS,
    DEFAULT_REFERENCE_LIMIT,
};
use awari::expert::MAX_PITS;
use awari::Rules;

use super::{whole, RootArg, Threads};

/// The largest number of positions the two limits take: more is a typo (a whole 6-pit
/// database of 48 seeds holds about 1.3e12).
const MAX_AMOUNT: u64 = 1_000_000_000_000_000;

/// The value of the start position of small variants (2 to 6 pits per side, k seeds per
/// pit, both rule sets), building what they need; prints a markdown table (the one in
/// data/variants.md).
#[derive(Args, Debug)]
pub struct VariantsArgs {
    #[command(flatten)]
    root: RootArg,
    /// Compute the variants whose database (levels 0..=2Pk) holds at most this many
    /// positions, 0..=1e15 (e.g. 1.2e9 or 50000000); larger ones get a row saying what
    /// they need.
    #[arg(long, default_value = "1.2e9", value_parser = parse_amount)]
    max_positions: u64,
    /// Run the independent solver only when the positions reachable from the start are at
    /// most this many (about 70 bytes each), 0..=1e15.
    #[arg(long, default_value = "2e7", value_parser = parse_amount)]
    reference_limit: u64,
    /// Only this rule set (default: both).
    #[arg(long)]
    rules: Option<Rules>,
    /// Only this board size, 2..=8 (default: 2 to 6 pits per side).
    #[arg(long, value_parser = whole::<usize>(2, MAX_PITS as u64))]
    pits: Option<usize>,
    #[command(flatten)]
    threads: Threads,
}

/// A count such as 1200000000, 1_200_000_000 or 1.2e9.
pub fn parse_amount(s: &str) -> Result<u64, String> {
    let t = s.replace(['_', ','], "");
    t.parse::<u64>()
        .ok()
        .or_else(|| {
            t.parse::<f64>()
                .ok()
                .filter(|x| x.is_finite() && *x >= 0.0)
                .map(|x| x.round() as u64)
        })
        .filter(|&n| n <= MAX_AMOUNT)
        .ok_or_else(|| format!("must be a number of positions in 0..=1e15 (e.g. 1.2e9), got '{s}'"))
}

pub fn run(args: VariantsArgs) -> anyhow::Result<()> {
    let VariantsArgs {
        root,
        max_positions,
        reference_limit,
        rules,
        pits,
        threads,
    } = args;
    // A database folder given as --dir: the variants of its rule set and board size.
    let own = root.agree(rules, pits)?;
    root.writable()?;
    let rules = rules.or(own.map(|o| o.0));
    let pits = pits.or(own.map(|o| o.1));
    let (pool, threads) = threads.pool()?;
    let opts = VariantOptions {
        root: root.root().to_path_buf(),
        max_positions,
        reference_limit: reference_limit as usize,
        pits: pits.map_or((2..=6).collect(), |p| vec![p]),
        rules: rules.map_or(vec![Rules::Awari, Rules::Oware], |r| vec![r]),
        progress: std::io::stderr().is_terminal(),
    };
    // The command that regenerates this table (the folder does not change it).
    let mut command = "cargo run --release -- variants".to_string();
    if max_positions != DEFAULT_MAX_POSITIONS {
        command += &format!(" --max-positions {max_positions}");
    }
    if reference_limit as usize != DEFAULT_REFERENCE_LIMIT {
        command += &format!(" --reference-limit {reference_limit}");
    }
    if let Some(r) = rules {
        command += &format!(" --rules {r}");
    }
    if let Some(p) = pits {
        command += &format!(" --pits {p}");
    }
    // Only the run with the defaults makes the whole published table; another one's
    // table is a part of it, not to be written over it.
    if command == "cargo run --release -- variants" {
        command += " > data/variants.md";
    }
    warn!(
        "variants into {} with {threads} thread(s), budget {} positions",
        opts.root.display(),
        group(max_positions)
    );
    let mut out = std::io::stdout().lock();
    write!(out, "{}", markdown(&[], &command))?;
    out.flush()?;
    for (variant, within) in plan(&opts) {
        let row =
            pool.install(|| solve(&opts, variant, within, &mut |w: &str| warn!("warning: {w}")))?;
        warn!(
            "{} {}x{}, {} per pit: {} ({:.1} s)",
            variant.rules,
            2,
            variant.pits,
            variant.per_pit,
            row.value.map_or("not computed".into(), |v| format!(
                "{v:+}, {}",
                result_in_words(v)
            )),
            row.seconds
        );
        write!(out, "{}", markdown_row(&row))?;
        out.flush()?;
    }
    Ok(())
}
