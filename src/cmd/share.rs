//! `awari pack`, `unpack`, `export`, `import` and `info`: packed levels and Romein-Bal files.

use std::path::PathBuf;

use anyhow::bail;

use awari::group;
use awari::pack::LevelStack;

use super::{levels_arg, thread_pool};
use crate::DbArgs;

/// The levels `pack --all` or `unpack --all` work on, or the one level asked for.
pub fn levels_to_do(
    dir: &std::path::Path,
    one: Option<usize>,
    packed: bool,
) -> anyhow::Result<Vec<usize>> {
    if let Some(n) = one {
        return Ok(vec![n]);
    }
    if !dir.is_dir() {
        bail!("no database in {}", dir.display());
    }
    let mut v: Vec<usize> = awari::list_levels(dir)?
        .into_iter()
        .filter(|&(_, p)| p == packed)
        .map(|(n, _)| n)
        .collect();
    v.dedup();
    if v.is_empty() {
        bail!(
            "no {} levels in {}",
            if packed { "packed" } else { "raw" },
            dir.display()
        );
    }
    Ok(v)
}

pub fn print_pack_row(r: &awari::pack::PackReport) {
    println!(
        "{:>5} {:>15} {:>15} {:>15} {:>7.2} {:>9.2}  {}",
        r.seeds,
        group(r.positions),
        group(r.raw_bytes),
        group(r.packed_bytes),
        r.raw_bytes as f64 / r.packed_bytes.max(1) as f64,
        r.seconds,
        r.model
    );
}

pub fn print_pack_total(rows: &[awari::pack::PackReport]) {
    let raw: u64 = rows.iter().map(|r| r.raw_bytes).sum();
    let packed: u64 = rows.iter().map(|r| r.packed_bytes).sum();
    println!(
        "total: {} levels, {} raw bytes, {} packed bytes, ratio {:.2}",
        rows.len(),
        group(raw),
        group(packed),
        raw as f64 / packed.max(1) as f64
    );
}

pub fn cmd_pack(
    db: DbArgs,
    level: Option<usize>,
    opts: awari::pack::PackOptions,
    remove_raw: bool,
    threads: Option<usize>,
) -> anyhow::Result<()> {
    // The exit model reads the levels below each one packed: keep them as we go up.
    let keep = opts.model == awari::pack::Model::Exits;
    each_level(db, level, false, keep, threads, |levels, n| {
        awari::pack::pack_level(levels, n, &opts, remove_raw)
    })
}

pub fn cmd_unpack(
    db: DbArgs,
    level: Option<usize>,
    remove_packed: bool,
    threads: Option<usize>,
) -> anyhow::Result<()> {
    let dir = awari::db_dir(&db.dir, db.rules, db.pits);
    let keep = awari::pack::has_exit_model(&dir);
    each_level(db, level, true, keep, threads, |levels, n| {
        awari::pack::unpack_level(levels, n, remove_packed)
    })
}

/// Runs `step` (pack or unpack) on the level asked for or on every level of the kind
/// `--all` takes (`packed`: the packed ones), in increasing order, printing a row for
/// each and a total. `keep`: whether the levels done are kept for the ones above.
fn each_level(
    db: DbArgs,
    level: Option<usize>,
    packed: bool,
    keep: bool,
    threads: Option<usize>,
    mut step: impl FnMut(&mut LevelStack, usize) -> awari::Result<awari::pack::PackReport> + Send,
) -> anyhow::Result<()> {
    let (pool, _) = thread_pool(threads)?;
    let dir = awari::db_dir(&db.dir, db.rules, db.pits);
    let levels = levels_to_do(&dir, level, packed)?;
    let mut stack = LevelStack::new(&dir, db.rules, db.pits, keep)?;
    println!(
        "{:>5} {:>15} {:>15} {:>15} {:>7} {:>9}  model",
        "level", "positions", "raw bytes", "packed bytes", "ratio", "seconds"
    );
    let mut rows = Vec::new();
    for n in levels {
        let r = pool.install(|| step(&mut stack, n))?;
        print_pack_row(&r);
        rows.push(r);
    }
    print_pack_total(&rows);
    Ok(())
}

pub fn cmd_export(
    out: PathBuf,
    db: DbArgs,
    levels: Option<String>,
    threads: Option<usize>,
) -> anyhow::Result<()> {
    let levels = levels_arg(levels)?;
    let (pool, _) = thread_pool(threads)?;
    let rows = pool.install(|| {
        awari::romein_bal::export(&db.dir, db.rules, db.pits, &out, levels, |t| {
            println!(
                "level {:>3}: {} ({} bytes)",
                t.seeds,
                t.path.display(),
                group(t.bytes)
            )
        })
    })?;
    let bytes: u64 = rows.iter().map(|t| t.bytes).sum();
    println!(
        "exported {} levels, {} bytes, to {}",
        rows.len(),
        group(bytes),
        out.display()
    );
    Ok(())
}

pub fn cmd_import(
    from: PathBuf,
    db: DbArgs,
    pack: Option<awari::pack::PackOptions>,
    force: bool,
    threads: Option<usize>,
) -> anyhow::Result<()> {
    use awari::romein_bal::{import, ImportOptions};
    let (pool, _) = thread_pool(threads)?;
    let opts = ImportOptions { pack, force };
    let rows = pool.install(|| {
        import(&db.dir, db.rules, db.pits, &from, &opts, |t| {
            println!(
                "level {:>3}: {} positions -> {} ({} bytes)",
                t.seeds,
                group(t.positions),
                t.path.display(),
                group(t.bytes)
            )
        })
    })?;
    println!(
        "imported {} levels into {}",
        rows.len(),
        awari::db_dir(&db.dir, db.rules, db.pits).display()
    );
    Ok(())
}

pub fn cmd_info(dir: PathBuf, check: bool, threads: Option<usize>) -> anyhow::Result<()> {
    let (pool, _) = thread_pool(threads)?;
    let levels = pool.install(|| awari::pack::survey(&dir, check))?;
    if levels.is_empty() {
        bail!("no levels under {}", dir.display());
    }
    println!(
        "{:>6} {:>3} {:>5} {:>15} {:>6} {:>15} {:>7} {:>5}  checksum",
        "rules", "P", "level", "positions", "kind", "bytes", "ratio", "model"
    );
    let mut bad = 0;
    for l in &levels {
        let state = match (&l.problem, l.checked) {
            (None, true) => "ok".to_string(),
            (None, false) => "header ok (--check to recompute)".to_string(),
            (Some(p), _) => {
                bad += 1;
                format!("BAD: {p}")
            }
        };
        println!(
            "{:>6} {:>3} {:>5} {:>15} {:>6} {:>15} {:>7.2} {:>5}  {state}",
            l.rules.name(),
            l.pits,
            l.seeds,
            group(l.positions),
            if l.packed { "packed" } else { "raw" },
            group(l.bytes),
            l.raw_bytes as f64 / l.bytes.max(1) as f64,
            l.model.map_or("-", |m| m.name()),
        );
    }
    let raw: u64 = levels.iter().map(|l| l.raw_bytes).sum();
    let bytes: u64 = levels.iter().map(|l| l.bytes).sum();
    println!(
        "total: {} level files, {} bytes on disk ({} as raw levels, ratio {:.2}){}",
        levels.len(),
        group(bytes),
        group(raw),
        raw as f64 / bytes.max(1) as f64,
        if bad > 0 {
            format!(", {bad} damaged")
        } else {
            String::new()
        }
    );
    if bad > 0 {
        bail!(
            "{bad} level file(s) under {} are damaged (see the table above)",
            dir.display()
        );
    }
    Ok(())
}
