//! The moves of a position as the solver's forward pass sees them: its exits (the
//! captures and game ends that leave the level) and the moves that stay in it.

use super::moves::{play_raw_p, sow_word};
use super::{turn, Board, Rules};

/// Whether the move from own pit `o`, holding `s > 0` seeds, may capture: where its last
/// seed lands and how many seeds that pit then holds follow from the count, without
/// sowing (a division only for the rare move that laps the board; the wrap is a
/// subtraction: a division here was a tenth of the forward pass). A move that may capture
/// is played out to know; any other captures nothing.
#[inline(always)]
fn may_capture<const P: usize>(board: &Board, o: usize, s: usize) -> bool {
    let p = P;
    let np = 2 * p;
    let (laps, rem) = if s < np - 1 {
        (0, s)
    } else {
        (s / (np - 1), s % (np - 1))
    };
    let (last, lands) = if rem == 0 {
        (if o == 0 { np - 1 } else { o - 1 }, laps)
    } else if o + rem >= np {
        (o + rem - np, laps + 1)
    } else {
        (o + rem, laps + 1)
    };
    last >= p && matches!(board.pits[last] as usize + lands, 2 | 3)
}

/// What the forward pass of the solver needs of a position's moves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exits {
    /// The game is over before any move; the value for the side to move.
    Terminal(i8),
    /// Every move leaves the opponent without seeds (Awari): each is worth `n`.
    AllEnd,
    /// The number of legal moves that stay in the level; the capturing ones were given
    /// to the callback.
    Moves {
        /// Legal moves that capture nothing and leave the opponent seeds.
        stay: u8,
    },
}

impl Exits {
    /// What the moves of `board` come to once counted: `stay` moves that stay in the level
    /// if any move is `legal`; else every move would leave the opponent no seeds, which
    /// Awari plays (each worth `n`) and Oware forbids (the mover takes the board).
    #[inline(always)]
    fn of_moves(board: &Board, rules: Rules, legal: bool, stay: u8) -> Exits {
        if legal {
            Exits::Moves { stay }
        } else {
            match rules {
                Rules::Awari => Exits::AllEnd,
                Rules::Oware => Exits::Terminal(board.seeds() as i8),
            }
        }
    }
}

/// The moves of `board` as the solver's forward pass sees them, the same as
/// [`legal_moves`](super::legal_moves) without building a child for moves that stay in
/// the level: calls `capture(captured, child)` for each legal capturing move and counts
/// the others.
#[inline]
pub fn for_each_exit(board: &Board, rules: Rules, capture: impl FnMut(u8, &Board)) -> Exits {
    with_pits!(board.p, P => for_each_exit_p::<P>(board, rules, capture))
}

/// [`for_each_exit`] with the pits per side, `P`, known at compile time (the board's).
#[inline(always)]
pub(crate) fn for_each_exit_p<const P: usize>(
    board: &Board,
    rules: Rules,
    mut capture: impl FnMut(u8, &Board),
) -> Exits {
    let p = P;
    if board.own_empty_p::<P>() {
        return Exits::Terminal(-(board.seeds() as i8));
    }
    let opponent_empty = board.opponent_empty_p::<P>();
    let mut stay = 0u8;
    let mut legal = false;
    for o in 0..p {
        let s = board.pits[o] as usize;
        if s == 0 {
            continue;
        }
        // Most moves neither capture nor starve, and that shows without sowing.
        if !may_capture::<P>(board, o, s) {
            // Without a capture the opponent is starved only if it had no seeds and the
            // sowing stops short of its row.
            if opponent_empty && o + s < p {
                continue;
            }
            legal = true;
            stay += 1;
            continue;
        }
        let (pits, captured, starved) = play_raw_p::<P>(board, rules, o);
        if starved {
            // Legal only if every move starves; then all are worth n.
            continue;
        }
        legal = true;
        if captured > 0 {
            capture(captured, &turn(&pits, p));
        } else {
            stay += 1;
        }
    }
    Exits::of_moves(board, rules, legal, stay)
}

/// [`for_each_exit`] without the captures: what a position's own moves say before any
/// lower level is read (the forward pass that streams the lower levels, DESIGN.md section
/// 5.2). Moves that cannot capture are told apart without sowing; under Awari a move that
/// may capture never stays in the level (it captures, or starves the opponent), so it is
/// played out only when no other move is legal.
#[cfg(test)]
#[inline]
pub fn exits(board: &Board, rules: Rules) -> Exits {
    with_pits!(board.p, P => exits_p::<P>(board, rules))
}

/// [`exits`] with the pits per side, `P`, known at compile time (the board's).
#[inline(always)]
pub(crate) fn exits_p<const P: usize>(board: &Board, rules: Rules) -> Exits {
    let p = P;
    if board.own_empty_p::<P>() {
        return Exits::Terminal(-(board.seeds() as i8));
    }
    let opponent_empty = board.opponent_empty_p::<P>();
    let mut stay = 0u8;
    // Pits whose move may capture, to play out when needed.
    let mut captures = 0u32;
    for o in 0..p {
        let s = board.pits[o] as usize;
        if s == 0 {
            continue;
        }
        if may_capture::<P>(board, o, s) {
            captures |= 1 << o;
        } else if !(opponent_empty && o + s < p) {
            stay += 1;
        }
    }
    if rules == Rules::Awari && stay > 0 {
        return Exits::Moves { stay };
    }
    let mut legal = stay > 0;
    while captures != 0 {
        let o = captures.trailing_zeros() as usize;
        captures &= captures - 1;
        let (_, captured, starved) = play_raw_p::<P>(board, rules, o);
        if !starved {
            legal = true;
            stay += (captured == 0) as u8;
        }
    }
    Exits::of_moves(board, rules, legal, stay)
}

/// Calls `f(pit, child)` with the child of every legal move of `board` from pit `from` on
/// that stays in the level (nothing captured, the game goes on; under Oware a forfeited
/// grand slam), in pit order, until `f` returns false: the children a compact solver
/// reads to confirm a loss (DESIGN.md section 5.2). From pit 0 they are as many as
/// [`for_each_exit`]'s `stay`, and none for a position whose game is over or whose moves
/// all end it.
#[cfg(test)]
#[inline]
pub fn for_each_stay(
    board: &Board,
    rules: Rules,
    from: usize,
    f: impl FnMut(usize, &Board) -> bool,
) {
    with_pits!(board.p, P => for_each_stay_p::<P>(board, rules, from, f))
}

/// [`for_each_stay`] with the pits per side, `P`, known at compile time (the board's).
#[inline(always)]
pub(crate) fn for_each_stay_p<const P: usize>(
    board: &Board,
    rules: Rules,
    from: usize,
    mut f: impl FnMut(usize, &Board) -> bool,
) {
    let p = P;
    let np = 2 * p;
    if board.own_empty_p::<P>() {
        return;
    }
    let opponent_empty = board.opponent_empty_p::<P>();
    for o in from..p {
        let s = board.pits[o] as usize;
        if s == 0 {
            continue;
        }
        if !may_capture::<P>(board, o, s) {
            if opponent_empty && o + s < p {
                // Starves the opponent: illegal, or (every move starving) ends the game.
                continue;
            }
            let (sown, _) = sow_word(&board.pits, np, o);
            if !f(o, &turn(&sown.to_le_bytes(), p)) {
                return;
            }
            continue;
        }
        let (pits, captured, starved) = play_raw_p::<P>(board, rules, o);
        if !starved && captured == 0 && !f(o, &turn(&pits, p)) {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::game::rules::legal_moves;
    use crate::game::rules::tests::all_boards;

    /// The solver's shortcut (no sowing for moves that cannot capture) against the full
    /// move generator, on every board of small levels, laps included.
    #[test]
    fn exits_agree_with_legal_moves() {
        for rules in [Rules::Awari, Rules::Oware] {
            for (p, top) in [(2, 16), (3, 18), (4, 13), (6, 9)] {
                let mut boards = 0;
                for n in 0..=top {
                    all_boards(p, n, &mut |board| {
                        boards += 1;
                        let mut caps = Vec::new();
                        let exits = for_each_exit(board, rules, |c, child| caps.push((c, *child)));
                        let moves = legal_moves(board, rules);
                        let want = if let Some(v) = moves.terminal_value {
                            Exits::Terminal(v)
                        } else if moves.as_slice().iter().all(|m| m.ends_game) {
                            Exits::AllEnd
                        } else {
                            let stay = moves.as_slice().iter().filter(|m| m.captured == 0).count();
                            Exits::Moves { stay: stay as u8 }
                        };
                        assert_eq!(exits, want, "{rules} {board:?}");
                        assert_eq!(super::exits(board, rules), want, "{rules} {board:?}");
                        let want_caps: Vec<(u8, Board)> = match want {
                            Exits::Moves { .. } => moves
                                .as_slice()
                                .iter()
                                .filter(|m| m.captured > 0)
                                .map(|m| (m.captured, m.child))
                                .collect(),
                            _ => Vec::new(),
                        };
                        if matches!(want, Exits::Moves { .. }) {
                            assert_eq!(caps, want_caps, "{rules} {board:?}");
                        }
                    });
                }
                assert!(boards > 4_000, "{p} pits: only {boards} boards");
            }
        }
    }

    /// In-level children against the full move generator, on every board of small levels.
    #[test]
    fn stays_are_the_moves_that_stay_in_the_level() {
        for rules in [Rules::Awari, Rules::Oware] {
            for (p, top) in [(2, 16), (3, 14), (4, 11), (6, 8), (8, 6)] {
                for n in 0..=top {
                    all_boards(p, n, &mut |board| {
                        let mut got = Vec::new();
                        for_each_stay(board, rules, 0, |o, c| {
                            got.push((o as u8, *c));
                            true
                        });
                        let want: Vec<(u8, Board)> = legal_moves(board, rules)
                            .as_slice()
                            .iter()
                            .filter(|m| m.stays_in_level())
                            .map(|m| (m.pit, m.child))
                            .collect();
                        assert_eq!(got, want, "{rules} {board:?}");
                    });
                }
            }
        }
    }
}
