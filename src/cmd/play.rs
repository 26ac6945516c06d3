//! `awari play`: a game in the terminal against the database. With a terminal it prompts
//! on the input line; without one (a pipe, a test) it reads one command per line, echoes
//! it, and prints plain text, so that a script can play a whole game.

use std::io::{BufRead, IsTerminal, Write};

use anyhow::bail;
use clap::Args;

use awari::expert::level_exists;
use awari::expert::play::{BadMove, Game, Played, Side};
use awari::expert::{Board, Database};

use super::{whole, DbArgs};
use awari::expert::parse_counts;

/// Play a game against the database in the terminal: type a pit (a-f or 1-6 from your
/// left), 'hint' for the value of each of your moves, 'undo' to take back your last move
/// and the reply, 'quit' to stop. Without a terminal it reads one command per line.
#[derive(Args, Debug)]
pub struct PlayArgs {
    #[command(flatten)]
    db: DbArgs,
    /// Start with this many seeds in every pit, 1..=31 (default: the largest start, up
    /// to 4, whose levels are built).
    #[arg(long, conflicts_with = "position", value_parser = whole::<usize>(1, 31))]
    seeds_per_pit: Option<usize>,
    /// Start from this position instead: the 2P pit counts, the side that moves first
    /// first (as in `awari query`).
    #[arg(long, num_args = 1.., allow_negative_numbers = true, value_name = "PITS")]
    position: Vec<String>,
    /// Who moves first.
    #[arg(long, default_value = "me")]
    first: First,
    /// How well the database plays: 100 always plays a best move; below, it picks weaker
    /// moves more often and gives away more seeds per move on average; 0 plays any legal
    /// move alike. 0..=100.
    #[arg(long, default_value_t = 100, value_parser = whole::<u8>(0, 100))]
    strength: u8,
    /// Seed of the database's random choices below strength 100 (default: from the
    /// clock, printed so that a game can be replayed), 0..=18446744073709551615.
    #[arg(long, value_parser = whole::<u64>(0, u64::MAX))]
    seed: Option<u64>,
}

/// Who moves first.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
enum First {
    /// You.
    Me,
    /// The database.
    Db,
}

pub fn run(opts: PlayArgs) -> anyhow::Result<()> {
    opts.db.readable()?;
    let first = match opts.first {
        First::Me => Side::Me,
        First::Db => Side::Db,
    };
    let db = Database::open(opts.db.dir(), opts.db.rules(), opts.db.pits())?;
    let p = opts.db.pits();
    let start = if !opts.position.is_empty() {
        db.board(&parse_counts(&opts.position)?)?
    } else {
        let k = match opts.seeds_per_pit {
            Some(0) => bail!("--seeds-per-pit must be at least 1"),
            Some(k) => k,
            None => default_seeds_per_pit(&opts.db),
        };
        if 2 * p * k > 255 {
            bail!("{k} seeds per pit: more than a board of {p} pits per side holds");
        }
        Board::start(p, k)
    };
    let seed = opts.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64 % 1_000_000)
    });
    let mut game = Game::new(&db, start, first, opts.strength, seed)?;
    let tty = std::io::stdin().is_terminal() && std::io::stdout().is_terminal();
    let mut out = std::io::stdout().lock();
    let mut input = std::io::stdin().lock();
    writeln!(
        out,
        "{} on {} pits per side, {} seeds; {} first; database strength {}{}.",
        opts.db.rules(),
        p,
        start.seeds(),
        if first == Side::Me {
            "you move"
        } else {
            "the database moves"
        },
        game_strength(opts.strength),
        if opts.strength < 100 {
            format!(" (replay with --seed {seed})")
        } else {
            String::new()
        }
    )?;
    writeln!(
        out,
        "Type a pit ({}), 'hint' for the value of your moves, 'undo', or 'quit'.",
        pit_names(p)
    )?;
    let mut line = String::new();
    'game: while game.ending().is_none() {
        if game.to_move() == Side::Db {
            let m = game.play_db()?;
            writeln!(out, "database plays {}{}", db_pit(m.pit), took(&m))?;
            continue;
        }
        writeln!(out)?;
        write!(out, "{}", drawing(&game))?;
        loop {
            if tty {
                write!(out, "your move> ")?;
            } else {
                writeln!(out, "your move ({}, hint, undo, quit):", pit_names(p))?;
            }
            out.flush()?;
            line.clear();
            if input.read_line(&mut line)? == 0 {
                writeln!(out, "\ninput ended: game abandoned.")?;
                break 'game;
            }
            let word = line.trim().to_lowercase();
            if !tty {
                writeln!(out, "> {word}")?;
            }
            match word.as_str() {
                "" => continue,
                "quit" | "exit" => {
                    writeln!(out, "game abandoned.")?;
                    break 'game;
                }
                "hint" | "?" => {
                    write!(out, "{}", hint(&game)?)?;
                    continue;
                }
                "undo" => {
                    if game.undo() {
                        writeln!(out, "took back your last move and the reply.")?;
                        continue 'game;
                    }
                    writeln!(out, "nothing to take back.")?;
                    continue;
                }
                "board" => {
                    write!(out, "{}", drawing(&game))?;
                    continue;
                }
                _ => {}
            }
            let Some(pit) = parse_pit(&word, p) else {
                writeln!(
                    out,
                    "'{word}' is not a move: type a pit ({}), hint, undo or quit.",
                    pit_names(p)
                )?;
                continue;
            };
            match game.play_mine(pit)? {
                Ok(m) => {
                    writeln!(out, "you play {}{}", my_pit(m.pit), took(&m))?;
                    continue 'game;
                }
                Err(BadMove::OutOfRange) => {
                    writeln!(out, "no pit '{word}': your pits are {}.", pit_names(p))?
                }
                Err(e) => writeln!(out, "{}: {e}; try again.", my_pit(pit as u8))?,
            }
        }
    }
    if let Some(end) = game.ending() {
        writeln!(out)?;
        write!(out, "{}", drawing(&game))?;
        writeln!(out, "game over: {}.", end.why)?;
        write!(out, "{}", summary(&game)?)?;
    } else if game.moves().iter().any(|m| m.side == Side::Me) {
        write!(out, "{}", lessons(&game))?;
    }
    out.flush()?;
    Ok(())
}

/// The largest start (seeds per pit, up to the usual 4) whose levels are all built; 1
/// if none is, so that the error names the smallest build that plays.
fn default_seeds_per_pit(db: &DbArgs) -> usize {
    let dir = db.db_dir();
    (1..=4)
        .rev()
        .find(|k| (0..=2 * db.pits() * k).all(|n| level_exists(&dir, n)))
        .unwrap_or(1)
}

fn game_strength(s: u8) -> String {
    if s >= 100 {
        "100 (perfect play)".into()
    } else {
        s.to_string()
    }
}

fn pit_names(p: usize) -> String {
    format!("a-{} or 1-{p}", (b'a' + p as u8 - 1) as char)
}

fn my_pit(pit: u8) -> char {
    (b'a' + pit) as char
}

fn db_pit(pit: u8) -> char {
    (b'A' + pit) as char
}

/// A pit by letter (a = the player's leftmost) or number (1 = a).
fn parse_pit(word: &str, p: usize) -> Option<usize> {
    let mut chars = word.chars();
    if let (Some(c @ 'a'..='z'), None) = (chars.next(), chars.next()) {
        return Some(c as usize - 'a' as usize);
    }
    let n: usize = word.parse().ok()?;
    // Out-of-range numbers still name a pit, so that the answer says which pits exist.
    Some(n.checked_sub(1).unwrap_or(p))
}

fn took(m: &Played) -> String {
    let mut s = String::new();
    if m.captured > 0 {
        s += &format!(", captures {}", m.captured);
    }
    if m.took_rest > 0 {
        s += &format!(", and takes the {} seeds left", m.took_rest);
    }
    s
}

/// The board from the player's side: the database's row on top, labelled from its own
/// left (A at the far right, as it sits across the board), the player's row below.
fn drawing(game: &Game) -> String {
    let b = game.board_for_me();
    let p = b.pits_per_side();
    let [mine, theirs] = game.captured();
    let mut s = String::from("              ");
    for i in (0..p).rev() {
        s += &format!("{:>4}", db_pit(i as u8));
    }
    s += "\n  database    ";
    for i in (p..2 * p).rev() {
        s += &format!("{:>4}", b.get(i));
    }
    s += &format!("    captured {theirs}\n  you         ");
    for i in 0..p {
        s += &format!("{:>4}", b.get(i));
    }
    s += &format!("    captured {mine}\n              ");
    for i in 0..p {
        s += &format!("{:>4}", my_pit(i as u8));
    }
    s += "\n";
    s
}

fn margin(v: f64) -> String {
    let v = if v == 0.0 { 0.0 } else { v };
    if v > 0.0 {
        format!("+{v}")
    } else {
        format!("{v}")
    }
}

/// The value of the position and of each of the player's moves.
fn hint(game: &Game) -> anyhow::Result<String> {
    let a = game.analysis()?;
    let [mine, theirs] = game.captured();
    let sofar = mine as f64 - theirs as f64;
    let mut s = format!(
        "from here perfect play gives you a margin of {} (a final score margin of {}), and each move:\n",
        margin(a.value as f64),
        margin(sofar + a.value as f64)
    );
    for m in &a.moves {
        s += &format!(
            "  {}  {:>4}{}{}\n",
            my_pit(m.pit),
            margin(m.value as f64),
            if m.captured > 0 {
                format!("  captures {}", m.captured)
            } else {
                String::new()
            },
            if m.value == a.value { "  best" } else { "" }
        );
    }
    Ok(s)
}

/// The score, what perfect play would have given, and where the player lost seeds.
fn summary(game: &Game) -> anyhow::Result<String> {
    let [me, db] = game.score();
    let mut s = format!(
        "score: you {me}, database {db} (margin {}).\n",
        margin(me - db)
    );
    if let Some(end) = game.ending() {
        let [a, b] = end.shares;
        if a + b > 0.0 {
            let [ca, cb] = game.captured();
            s += &format!("  captured: you {ca}, database {cb}; seeds left at the end: you {a}, database {b}.\n");
        }
    }
    let v = game.start_value()? as f64;
    let perfect = if game.first() == Side::Me { v } else { -v };
    s += &format!(
        "perfect play from the start gives you a margin of {}.\n",
        margin(perfect)
    );
    s += &lessons(game);
    Ok(s)
}

/// The player's moves that gave seeds away, and the seeds the database gave away.
fn lessons(game: &Game) -> String {
    let mut s = String::new();
    let mistakes = game.mistakes();
    if mistakes.is_empty() {
        s += "you never gave a seed away.\n";
    } else {
        s += "where you lost seeds:\n";
        for (k, m) in mistakes {
            let k = game.moves()[..k]
                .iter()
                .filter(|m| m.side == Side::Me)
                .count();
            let best: Vec<String> = m.best_pits.iter().map(|&p| my_pit(p).to_string()).collect();
            s += &format!(
                "  your move {k}: {} (worth {}), best {} (worth {}): {} seeds\n",
                my_pit(m.pit),
                margin(m.value as f64),
                best.join(" or "),
                margin(m.best as f64),
                m.best as i32 - m.value as i32
            );
        }
    }
    let given: i32 = game
        .moves()
        .iter()
        .filter(|m| m.side == Side::Db)
        .map(|m| m.best as i32 - m.value as i32)
        .sum();
    if given > 0 {
        s += &format!("the database gave away {given} seeds.\n");
    }
    s
}
