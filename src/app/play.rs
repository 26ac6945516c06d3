//! A game against the database: the rules of play (turns, captures, game ends, the third
//! repetition), the database's choice of move at a given strength, take-backs, and the
//! record of the moves where the player lost seeds. The terminal front end is in the CLI.

use std::collections::HashMap;

use crate::app::database::{Analysis, Database};
use crate::app::line::Conversion;
use crate::error::{Error, Result};
use crate::game::rules::{legal_moves, Board, Move};

/// One of the two players of a game.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Side {
    /// The person at the keyboard.
    Me,
    /// The database.
    Db,
}

impl Side {
    fn other(self) -> Side {
        match self {
            Side::Me => Side::Db,
            Side::Db => Side::Me,
        }
    }

    fn at(self) -> usize {
        self as usize
    }
}

/// Why a move the player typed cannot be played; the game goes on and asks again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BadMove {
    /// Not a pit of this board.
    OutOfRange,
    /// The pit holds no seeds.
    Empty,
    /// The move leaves the opponent without seeds while another move feeds them (Awari).
    Starves,
    /// It is not the player's turn, or the game is over.
    NotYourTurn,
}

impl std::fmt::Display for BadMove {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            BadMove::OutOfRange => "no such pit",
            BadMove::Empty => "that pit is empty",
            BadMove::Starves => {
                "that move leaves the opponent without seeds, and another move feeds them"
            }
            BadMove::NotYourTurn => "it is not your turn",
        })
    }
}

/// One move of the game, with what the database thought of it.
#[derive(Clone, Debug, PartialEq)]
pub struct Played {
    /// Who moved.
    pub side: Side,
    /// 0-based pit of the mover.
    pub pit: u8,
    /// Seeds the move captured (not counting `took_rest`).
    pub captured: u8,
    /// Final margin for the mover after this move, under perfect play from then on.
    pub value: i8,
    /// The best margin the mover had.
    pub best: i8,
    /// The pits of the best moves.
    pub best_pits: Vec<u8>,
    /// Seeds the mover took at the end of the game with this move (Awari: the opponent is
    /// left without seeds), else 0.
    pub took_rest: u8,
}

/// How the game ended.
#[derive(Clone, Debug, PartialEq)]
pub struct Ending {
    /// Why, in words.
    pub why: String,
    /// Seeds each side took when the game ended (split evenly on a repetition, so a
    /// half is possible), `[me, db]`.
    pub shares: [f64; 2],
}

#[derive(Clone)]
struct Snapshot {
    pos: Board,
    to_move: Side,
    captured: [u32; 2],
    seen: HashMap<(Board, Side), u8>,
    moves: usize,
}

/// A reproducible stream of random numbers (splitmix64): the database's weaker moves
/// are chosen with it, so `--seed` replays a game.
#[derive(Clone, Debug)]
pub struct Random(u64);

impl Random {
    /// The stream of `seed`: the same seed gives the same numbers.
    pub fn new(seed: u64) -> Random {
        Random(seed)
    }

    /// The next number, uniform over all of `u64`.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// The chance of each move at a given strength `s`: weights `exp(-loss / T)` where loss
/// is the seeds a move gives away against the best one and the temperature
/// `T = 320 / s - 2.688 (s / 100)^2` grows as strength falls: 100 plays only best moves, 0
/// every move alike, and in between the seeds lost per move fall about linearly with `s`
/// (the curve was fitted on the positions of levels 8, 10 and 12: at 50 about half the
/// loss of random play, at 90 a tenth).
pub fn move_weights(values: &[i8], strength: u8) -> Vec<f64> {
    let best = values.iter().copied().max().unwrap_or(0);
    let s = strength.min(100) as f64;
    values
        .iter()
        .map(|&v| {
            let loss = (best - v) as f64;
            if s >= 100.0 {
                if loss == 0.0 {
                    1.0
                } else {
                    0.0
                }
            } else if s <= 0.0 {
                1.0
            } else {
                (-loss / (320.0 / s - 2.688 * (s / 100.0).powi(2))).exp()
            }
        })
        .collect()
}

/// A game in progress against the database.
pub struct Game<'a> {
    db: &'a Database,
    start: Board,
    first: Side,
    /// The board seen from the side to move.
    pos: Board,
    to_move: Side,
    captured: [u32; 2],
    /// How often each position (board and side to move) has occurred.
    seen: HashMap<(Board, Side), u8>,
    moves: Vec<Played>,
    /// The state before each of the player's moves, for `undo`.
    undo: Vec<Snapshot>,
    ending: Option<Ending>,
    strength: u8,
    random: Random,
    conversion: Conversion,
}

impl std::fmt::Debug for Game<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Game")
            .field("start", &self.start)
            .field("pos", &self.pos)
            .field("to_move", &self.to_move)
            .field("captured", &self.captured)
            .finish_non_exhaustive()
    }
}

impl<'a> Game<'a> {
    /// A game from `start` (seen from `first`, who moves first). Checks that the database
    /// holds every level the game can reach, so that a missing one is reported now, with
    /// the command that builds it, rather than in the middle of the game.
    pub fn new(
        db: &'a Database,
        start: Board,
        first: Side,
        strength: u8,
        seed: u64,
    ) -> Result<Game<'a>> {
        if start.pits_per_side() != db.pits() {
            return Err(Error::Input(format!(
                "a board of {} pits per side, but the database has {}",
                start.pits_per_side(),
                db.pits()
            )));
        }
        for n in (0..=start.seeds()).rev() {
            db.level(n)?;
        }
        let mut game = Game {
            db,
            start,
            first,
            pos: start,
            to_move: first,
            captured: [0, 0],
            seen: HashMap::new(),
            moves: Vec::new(),
            undo: Vec::new(),
            ending: None,
            strength: strength.min(100),
            random: Random::new(seed),
            conversion: Conversion::new(),
        };
        game.seen.insert((start, first), 1);
        game.check_end()?;
        Ok(game)
    }

    /// The start position, seen from the side that moves first.
    pub fn start(&self) -> Board {
        self.start
    }

    /// Who moved first.
    pub fn first(&self) -> Side {
        self.first
    }

    /// Whose turn it is (still set once the game is over: see [`Game::ending`]).
    pub fn to_move(&self) -> Side {
        self.to_move
    }

    /// The board seen from the player (their pits are 0..P).
    pub fn board_for_me(&self) -> Board {
        match self.to_move {
            Side::Me => self.pos,
            Side::Db => self.pos.turned(),
        }
    }

    /// Seeds captured so far, `[me, db]`.
    pub fn captured(&self) -> [u32; 2] {
        self.captured
    }

    /// The moves played so far, in order (those taken back by [`Game::undo`] are gone).
    pub fn moves(&self) -> &[Played] {
        &self.moves
    }

    /// How the game ended; `None` while it goes on.
    pub fn ending(&self) -> Option<&Ending> {
        self.ending.as_ref()
    }

    /// The final score `[me, db]`, the seeds left shared as the ending says.
    pub fn score(&self) -> [f64; 2] {
        let e = self.ending.as_ref().map_or([0.0; 2], |e| e.shares);
        [
            self.captured[0] as f64 + e[0],
            self.captured[1] as f64 + e[1],
        ]
    }

    /// The value of the start position for the side that moved first.
    pub fn start_value(&self) -> Result<i8> {
        self.db.probe(&self.start)
    }

    /// The value of the position and of each move for the side to move.
    pub fn analysis(&self) -> Result<Analysis> {
        self.db.analyze(&self.pos)
    }

    /// Plays the player's move from pit `pit` (0-based).
    pub fn play_mine(&mut self, pit: usize) -> Result<std::result::Result<Played, BadMove>> {
        if self.ending.is_some() || self.to_move != Side::Me {
            return Ok(Err(BadMove::NotYourTurn));
        }
        if pit >= self.pos.pits_per_side() {
            return Ok(Err(BadMove::OutOfRange));
        }
        if self.pos.get(pit) == 0 {
            return Ok(Err(BadMove::Empty));
        }
        let legal = legal_moves(&self.pos, self.db.rules());
        let Some(m) = legal.as_slice().iter().find(|m| m.pit as usize == pit) else {
            return Ok(Err(BadMove::Starves));
        };
        let m = *m;
        self.undo.push(Snapshot {
            pos: self.pos,
            to_move: self.to_move,
            captured: self.captured,
            seen: self.seen.clone(),
            moves: self.moves.len(),
        });
        let a = self.analysis()?;
        Ok(Ok(self.apply(&m, &a)?))
    }

    /// The database's move at the game's strength; an error when the game is over or it
    /// is not the database's turn.
    pub fn play_db(&mut self) -> Result<Played> {
        if self.ending.is_some() {
            return Err(Error::Input("the game is over".into()));
        }
        if self.to_move != Side::Db {
            return Err(Error::Input(
                "it is the player's turn, not the database's".into(),
            ));
        }
        let a = self.analysis()?;
        let legal = legal_moves(&self.pos, self.db.rules());
        let values: Vec<i8> = a.moves.iter().map(|m| m.value).collect();
        let weights = move_weights(&values, self.strength);
        let mut r = self.random.unit() * weights.iter().sum::<f64>();
        let mut pick = weights.len() - 1;
        for (i, w) in weights.iter().enumerate() {
            if r < *w {
                pick = i;
                break;
            }
            r -= w;
        }
        let m = if values[pick] == a.value {
            // Among the best moves, the one that makes progress in a won position.
            self.db.perfect_move(&self.pos, &a, &mut self.conversion)?
        } else {
            legal.as_slice()[pick]
        };
        self.apply(&m, &a)
    }

    fn apply(&mut self, m: &Move, a: &Analysis) -> Result<Played> {
        let mover = self.to_move;
        let mv = a
            .moves
            .iter()
            .find(|x| x.pit == m.pit)
            .expect("a legal move");
        let mut played = Played {
            side: mover,
            pit: m.pit,
            captured: m.captured,
            value: mv.value,
            best: a.value,
            best_pits: a.best.clone(),
            took_rest: 0,
        };
        self.captured[mover.at()] += m.captured as u32;
        self.pos = m.child;
        self.to_move = mover.other();
        if m.ends_game {
            let rest = m.child.seeds();
            played.took_rest = rest as u8;
            let mut shares = [0.0; 2];
            shares[mover.at()] = rest as f64;
            self.ending = Some(Ending {
                why: "the opponent is left without seeds: the mover takes the rest".into(),
                shares,
            });
        }
        self.moves.push(played.clone());
        if self.ending.is_none() {
            let count = self.seen.entry((self.pos, self.to_move)).or_insert(0);
            *count += 1;
            if *count >= 3 {
                let half = self.pos.seeds() as f64 / 2.0;
                self.ending = Some(Ending {
                    why:
                        "the position occurred for the third time: the seeds left are split evenly"
                            .into(),
                    shares: [half, half],
                });
            } else {
                self.check_end()?;
            }
        }
        Ok(played)
    }

    /// Ends the game if the side to move has no move (DESIGN.md section 1).
    fn check_end(&mut self) -> Result<()> {
        let a = self.analysis()?;
        if let Some(why) = a.game_over {
            let n = self.pos.seeds() as f64;
            let v = a.value as f64;
            let mut shares = [0.0; 2];
            shares[self.to_move.at()] = (n + v) / 2.0;
            shares[self.to_move.other().at()] = (n - v) / 2.0;
            self.ending = Some(Ending {
                why: why.to_string(),
                shares,
            });
        }
        Ok(())
    }

    /// Takes back the player's last move and the database's reply. False if the player
    /// has not moved yet.
    pub fn undo(&mut self) -> bool {
        let Some(s) = self.undo.pop() else {
            return false;
        };
        self.pos = s.pos;
        self.to_move = s.to_move;
        self.captured = s.captured;
        self.seen = s.seen;
        self.moves.truncate(s.moves);
        self.ending = None;
        true
    }

    /// The player's moves that gave seeds away: (move number, the move) for each move
    /// whose value was below the best.
    pub fn mistakes(&self) -> Vec<(usize, &Played)> {
        self.moves
            .iter()
            .enumerate()
            .filter(|(_, p)| p.side == Side::Me && p.value < p.best)
            .map(|(i, p)| (i + 1, p))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expected_loss(values: &[i8], strength: u8) -> f64 {
        let w = move_weights(values, strength);
        let best = *values.iter().max().unwrap();
        let total: f64 = w.iter().sum();
        values
            .iter()
            .zip(&w)
            .map(|(&v, &w)| (best - v) as f64 * w / total)
            .sum()
    }

    #[test]
    fn weaker_play_loses_more_on_average() {
        let values = [3, 3, 1, -2, -7, 0];
        assert_eq!(expected_loss(&values, 100), 0.0);
        // Every move alike at 0: the mean loss of the six moves.
        let mean = [0.0, 0.0, 2.0, 5.0, 10.0, 3.0].iter().sum::<f64>() / 6.0;
        assert!((expected_loss(&values, 0) - mean).abs() < 1e-12);
        let mut last = 0.0;
        for s in (0..100).rev() {
            let l = expected_loss(&values, s);
            assert!(l > last, "strength {s}: loss {l} not above {last}");
            last = l;
        }
        // A single best move keeps weight 1 at any strength.
        assert_eq!(move_weights(&[5, 1], 50)[0], 1.0);
    }

    #[test]
    fn random_is_reproducible_and_uniform_enough() {
        let mut a = Random::new(7);
        let mut b = Random::new(7);
        let xs: Vec<f64> = (0..10_000).map(|_| a.unit()).collect();
        assert!(xs.iter().all(|&x| (0.0..1.0).contains(&x)));
        assert_eq!(xs[123], {
            for _ in 0..123 {
                b.unit();
            }
            b.unit()
        });
        let mean = xs.iter().sum::<f64>() / xs.len() as f64;
        assert!((mean - 0.5).abs() < 0.02, "mean {mean}");
    }
}
