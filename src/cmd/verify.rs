//! `awari verify` and `awari variants`: the checks and the table of small variants.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;

use anyhow::bail;

use awari::{group, Rules};

use super::{levels_arg, thread_pool};
use crate::DbArgs;

pub fn cmd_verify(
    db: DbArgs,
    levels: Option<String>,
    deep: bool,
    threads: Option<usize>,
) -> anyhow::Result<()> {
    use awari::{verify, LevelCheck, Mismatches, VerifyOptions};
    let levels = levels_arg(levels)?;
    let (pool, threads) = thread_pool(threads)?;
    let opts = VerifyOptions {
        root: db.dir.clone(),
        rules: db.rules,
        pits: db.pits,
        levels,
        deep,
        progress: std::io::stderr().is_terminal(),
    };
    let dir = awari::db_dir(&db.dir, db.rules, db.pits);
    eprintln!(
        "verifying {} levels in {} ({} pits per side){} with {threads} thread(s)",
        db.rules,
        dir.display(),
        db.pits,
        if deep { ", deep" } else { "" }
    );
    let started = std::time::Instant::now();
    print!(
        "{:>5} {:>15} {:>9} {:>10} {:>9}",
        "level", "positions", "checksum", "mismatches", "seconds"
    );
    if deep {
        print!(" {:>7} {:>10} {:>9}", "sweeps", "deep mism.", "deep s");
    }
    println!();
    let samples = |n: usize, m: &Mismatches, what: &str| {
        for x in &m.first {
            println!(
                "  level {n} index {}: {} stored {:+}, {what} {:+}",
                x.index, x.board, x.stored, x.computed
            );
        }
        if m.count > m.first.len() as u64 {
            println!("  ... {} more", m.count - m.first.len() as u64);
        }
    };
    let print = |r: &LevelCheck| {
        print!(
            "{:>5} {:>15} {:>9} {:>10} {:>9.2}",
            r.seeds,
            group(r.positions),
            if r.checksum_problem.is_some() {
                "BAD"
            } else {
                "ok"
            },
            r.mismatches.count,
            r.seconds
        );
        if let Some(d) = &r.deep {
            print!(
                " {:>7} {:>10} {:>9.2}",
                d.sweeps, d.mismatches.count, d.seconds
            );
        }
        println!();
        if let Some(p) = &r.checksum_problem {
            println!("  level {}: {p}", r.seeds);
        }
        samples(r.seeds, &r.mismatches, "its moves give");
        if let Some(d) = &r.deep {
            samples(r.seeds, &d.mismatches, "the independent solution gives");
        }
    };
    let reports = pool.install(|| verify(&opts, print))?;
    let positions: u64 = reports.iter().map(|r| r.positions).sum();
    let secs = started.elapsed().as_secs_f64();
    let bad: Vec<String> = reports
        .iter()
        .filter(|r| !r.ok())
        .map(|r| r.seeds.to_string())
        .collect();
    println!(
        "total: {} levels, {} positions in {secs:.2} s, {:.0} positions/s: {}",
        reports.len(),
        group(positions),
        positions as f64 / secs.max(1e-9),
        if bad.is_empty() {
            "all consistent"
        } else {
            "FAILED"
        }
    );
    if !bad.is_empty() {
        bail!(
            "verify failed in {}: level(s) {} (see the table above)",
            dir.display(),
            bad.join(", ")
        );
    }
    Ok(())
}

/// A count such as 1200000000, 1_200_000_000 or 1.2e9.
pub fn parse_amount(s: &str) -> Result<u64, String> {
    let t = s.replace(['_', ','], "");
    t.parse::<u64>()
        .ok()
        .or_else(|| {
            t.parse::<f64>()
                .ok()
                .filter(|x| x.is_finite() && *x >= 0.0 && *x < 1.8e19)
                .map(|x| x.round() as u64)
        })
        .ok_or_else(|| format!("'{s}' is not a number of positions (e.g. 1.2e9)"))
}

pub fn cmd_variants(
    dir: PathBuf,
    max_positions: u64,
    reference_limit: u64,
    rules: Option<Rules>,
    pits: Option<usize>,
    threads: Option<usize>,
) -> anyhow::Result<()> {
    use awari::variants::{
        markdown, markdown_row, plan, result_in_words, solve, VariantOptions,
        DEFAULT_MAX_POSITIONS, DEFAULT_REFERENCE_LIMIT,
    };
    if let Some(p) = pits {
        if !(2..=8).contains(&p) {
            bail!("--pits must be 2..=8, not {p}");
        }
    }
    let (pool, threads) = thread_pool(threads)?;
    let opts = VariantOptions {
        root: dir,
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
    command += " > data/variants.md";
    eprintln!(
        "variants into {} with {threads} thread(s), budget {} positions",
        opts.root.display(),
        group(max_positions)
    );
    let mut out = std::io::stdout().lock();
    write!(out, "{}", markdown(&[], &command))?;
    out.flush()?;
    for (variant, within) in plan(&opts) {
        let row = pool.install(|| {
            solve(&opts, variant, within, &mut |w: &str| {
                eprintln!("warning: {w}")
            })
        })?;
        eprintln!(
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
