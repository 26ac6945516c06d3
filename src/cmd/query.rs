//! `awari query`: one position (text or JSON) or a stream of them (`--stdin`).

use std::io::{BufRead, Write};

use anyhow::{bail, Context};
use clap::Args;

use awari::expert::{build_command, draw, level_exists, parse_counts, Database, LINE_PLIES};

use super::DbArgs;

/// Value of a position, of each legal move, and the best moves.
#[derive(Args, Debug)]
pub struct QueryArgs {
    /// The 2P pit counts, side to move first, counter-clockwise from its leftmost pit
    /// (as in the Romein-Bal lookup tool), e.g. 1 1 1 1 1 2 4 2 3 0 0 0.
    #[arg(required_unless_present = "stdin", num_args = 1.., allow_negative_numbers = true)]
    pits_counts: Vec<String>,
    #[command(flatten)]
    db: DbArgs,
    /// Also print a principal variation to the end of the game.
    #[arg(long)]
    line: bool,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
    /// Read one position per line from standard input and write one JSON object per
    /// line (an object with "error" for a bad line).
    #[arg(long, conflicts_with = "pits_counts")]
    stdin: bool,
}

pub fn run(args: QueryArgs) -> anyhow::Result<()> {
    let QueryArgs {
        pits_counts: words,
        db,
        line,
        json,
        stdin,
    } = args;
    db.readable()?;
    let database = Database::open(db.dir(), db.rules(), db.pits())?;
    if stdin {
        // A script learns from the exit status that nothing can be answered, rather than
        // from an error object per line.
        // (--dir itself is a folder: `readable` said so otherwise.)
        let dir = db.db_dir();
        let why = if !dir.is_dir() {
            "no such folder"
        } else {
            "no level files in it"
        };
        if !dir.is_dir() || !level_exists(&dir, 0) {
            let build = build_command(db.dir(), db.rules(), db.pits(), 0)
                .replace("--max-seeds 0", "--max-seeds N");
            bail!(
                "no {} database of {} pits per side at {}: {why}; `{build}` builds levels 0..=N",
                db.rules(),
                db.pits(),
                dir.display()
            );
        }
        let input = std::io::stdin().lock();
        let mut out = std::io::BufWriter::new(std::io::stdout().lock());
        for text in input.lines() {
            let text = text.context("reading standard input")?;
            if text.trim().is_empty() {
                continue;
            }
            let result = parse_counts(&[text])
                .and_then(|c| database.board(&c))
                .and_then(|b| database.query_json(&b, line));
            let obj = match result {
                Ok(v) => v,
                Err(e) => serde_json::json!({ "error": e.one_line() }),
            };
            writeln!(out, "{obj}")?;
            warn_left_out(&database);
        }
        out.flush()?;
        return Ok(());
    }
    let counts = parse_counts(&words)?;
    let board = database.board(&counts)?;
    let mut out = std::io::stdout().lock();
    if json {
        let answer = database.query_json(&board, line)?;
        warn_left_out(&database);
        writeln!(out, "{answer}")?;
        return Ok(());
    }
    let a = database.analyze(&board)?;
    let l = if line {
        Some(database.line(&board, LINE_PLIES)?)
    } else {
        None
    };
    warn_left_out(&database);
    write!(out, "{}", draw(&board))?;
    writeln!(
        out,
        "{} rules, {} seeds: value {:+} for the side to move ({})",
        database.rules(),
        a.seeds,
        a.value,
        verdict(a.value)
    )?;
    if let Some(why) = a.game_over {
        writeln!(out, "game over: {why}")?;
    }
    if let Some(d) = a.distance {
        writeln!(
            out,
            "distance to conversion: {d} plies (the next capture or the game's end, both \
             sides keeping the value)"
        )?;
    }
    // The distances column where the level has a table (`awari dtc`).
    let tables = a.moves.iter().any(|m| m.distance.is_some());
    let distance = |d: Option<u16>| match (tables, d) {
        (false, _) => String::new(),
        (true, Some(d)) => format!(" {d:>8}"),
        (true, None) => format!(" {:>8}", "-"),
    };
    if !a.moves.is_empty() {
        writeln!(
            out,
            "{:>5} {:>6} {:>9}{}",
            "move",
            "value",
            "captures",
            if tables { "  distance" } else { "" }
        )?;
        for m in &a.moves {
            writeln!(
                out,
                "{:>5} {:>+6} {:>9}{}{}{}",
                pit_name(m.pit),
                m.value,
                m.captured,
                distance(m.distance),
                if a.best.contains(&m.pit) {
                    "  best"
                } else {
                    ""
                },
                if m.ends_game { "  (ends the game)" } else { "" }
            )?;
        }
    }
    if let Some(l) = l {
        writeln!(out, "principal variation:")?;
        for (i, ply) in l.plies.iter().enumerate() {
            writeln!(
                out,
                "{:>4}. {} plays {}{}",
                i + 1,
                if ply.player == 0 {
                    "side to move"
                } else {
                    "opponent    "
                },
                if ply.player == 0 {
                    pit_name(ply.pit)
                } else {
                    opponent_pit_name(ply.pit)
                },
                if ply.captured > 0 {
                    format!(", captures {}", ply.captured)
                } else {
                    String::new()
                }
            )?;
        }
        writeln!(out, "end: {}", l.end)?;
        writeln!(
            out,
            "seeds won from here: side to move {}, opponent {}",
            l.score[0], l.score[1]
        )?;
    }
    Ok(())
}

pub fn pit_name(pit: u8) -> String {
    format!("{} ({})", (b'a' + pit) as char, pit)
}

/// An opponent's pit as the board names it: upper case.
fn opponent_pit_name(pit: u8) -> String {
    format!("{} ({})", (b'A' + pit) as char, pit)
}

pub fn verdict(v: i8) -> String {
    match v {
        0 => "draw".into(),
        1.. => format!("wins by {v}"),
        _ => format!("loses by {}", -(v as i32)),
    }
}

/// Says on standard error what the answers left out (a damaged or stale distance table).
fn warn_left_out(database: &Database) {
    for w in database.take_warnings() {
        warn!("warning: {w}");
    }
}
