//! Sowing and captures: the legal moves of a position.

use super::{turn, Board, Move, Moves, Rules, MAX_PITS};

/// `SOWN[P - 2][o][s]`: what sowing `s < 2P` seeds from own pit `o` of a board of `P`
/// pits per side does to the board as the bytes of a little-endian `u128`: a seed in each
/// pit `o+1..=o+s` (past `2P - 1` on from pit 0), and the `s` seeds taken from pit `o`, as
/// one wrapping difference. Added (wrapping) to a board whose pit `o` holds `s`, it is the
/// board sown: no byte borrows or carries, so a first lap is one addition.
const SOWN: [[[u128; 2 * MAX_PITS]; MAX_PITS]; MAX_PITS - 1] = {
    let mut table = [[[0u128; 2 * MAX_PITS]; MAX_PITS]; MAX_PITS - 1];
    let mut p = 2;
    while p <= MAX_PITS {
        let np = 2 * p;
        let mut o = 0;
        while o < p {
            let mut s = 1;
            while s < np {
                let j = (o + s) % np;
                table[p - 2][o][s] = table[p - 2][o][s - 1] | 1 << (8 * j);
                s += 1;
            }
            // Pit `o` emptied.
            s = 1;
            while s < np {
                table[p - 2][o][s] = table[p - 2][o][s].wrapping_sub((s as u128) << (8 * o));
                s += 1;
            }
            o += 1;
        }
        p += 1;
    }
    table
};

/// Sows pit `o` (in the mover's frame, not turned): returns the pits sown as the bytes of
/// a little-endian `u128`, and the last pit sown. Every lap skips `o`, so `o` is empty
/// afterwards. A first lap (fewer seeds than pits, nearly every move) is one addition
/// from a table, in registers: emptying the pit by a byte store and then reading the 16
/// bytes back as a word stalled each move on a failed store-to-load forwarding (a fifth
/// of `awari verify`'s own-moves pass, by perf).
#[inline(always)]
pub(super) fn sow_word(pits: &[u8; 2 * MAX_PITS], np: usize, o: usize) -> (u128, usize) {
    let s = pits[o] as usize;
    debug_assert!(s > 0);
    if s < np {
        // One lap at most, which never comes back to `o`: no byte carries, a pit holding
        // at most 127 seeds.
        let last = o + s;
        return (
            u128::from_le_bytes(*pits).wrapping_add(SOWN[np / 2 - 2][o][s]),
            if last >= np { last - np } else { last },
        );
    }
    let mut pits = *pits;
    pits[o] = 0;
    let laps = s / (np - 1);
    let rem = s % (np - 1);
    if laps > 0 {
        for (j, c) in pits[..np].iter_mut().enumerate() {
            if j != o {
                *c += laps as u8;
            }
        }
    }
    if rem == 0 {
        // The last seed of a whole lap lands just before the origin.
        return (u128::from_le_bytes(pits), (o + np - 1) % np);
    }
    let mut j = o;
    for _ in 0..rem {
        j += 1;
        if j == np {
            j = 0;
        }
        pits[j] += 1;
    }
    (u128::from_le_bytes(pits), j)
}

/// Plays the sowing of pit `o` of `board` (non-empty) with captures, but before turning
/// the board. Returns the board in the mover's frame, the seeds captured, and whether the
/// opponent is left without seeds. Under Oware a grand slam captures nothing.
#[inline]
pub(super) fn play_raw(board: &Board, rules: Rules, o: usize) -> ([u8; 2 * MAX_PITS], u8, bool) {
    with_pits!(board.p, P => play_raw_p::<P>(board, rules, o))
}

/// [`play_raw`] with the pits per side, `P`, known at compile time (the board's). The
/// board stays in registers throughout (captures clear bytes by masks), so that no byte
/// written is read back inside a wider word.
#[inline(always)]
pub(super) fn play_raw_p<const P: usize>(
    board: &Board,
    rules: Rules,
    o: usize,
) -> ([u8; 2 * MAX_PITS], u8, bool) {
    debug_assert_eq!(board.p as usize, P);
    let p = P;
    let np = 2 * p;
    let (sown, last) = sow_word(&board.pits, np, o);
    // The opponent's row (bytes `p..np`) as one 64-bit word: a constant shift out and
    // back, and the captures' shifts within one register.
    let low = sown & !(u128::MAX << (8 * p));
    let mut row = (sown >> (8 * p)) as u64;
    let mut captured = 0u8;
    if last >= p {
        let mut taken = row;
        let mut j = last - p;
        loop {
            let c = (taken >> (8 * j)) as u8;
            if c != 2 && c != 3 {
                break;
            }
            captured += c;
            taken &= !(0xff << (8 * j));
            if j == 0 {
                break;
            }
            j -= 1;
        }
        if captured > 0 {
            if rules == Rules::Oware && taken == 0 {
                // Grand slam: the capture would take every opponent seed, so it takes none.
                captured = 0;
            } else {
                row = taken;
            }
        }
    }
    (
        (low | (row as u128) << (8 * p)).to_le_bytes(),
        captured,
        row == 0,
    )
}

/// Every legal move of `board` under `rules`, in pit order.
#[inline]
pub fn legal_moves(board: &Board, rules: Rules) -> Moves {
    with_pits!(board.p, P => legal_moves_p::<P>(board, rules))
}

/// [`legal_moves`] with the pits per side, `P`, known at compile time (the board's): for
/// loops over many positions, such as `awari verify`'s.
#[inline(always)]
pub(crate) fn legal_moves_p<const P: usize>(board: &Board, rules: Rules) -> Moves {
    debug_assert_eq!(board.p as usize, P);
    let p = P;
    let empty = Move {
        pit: 0,
        captured: 0,
        ends_game: false,
        child: Board::empty(p),
    };
    let mut out = Moves {
        list: [empty; MAX_PITS],
        len: 0,
        terminal_value: None,
    };
    let n = board.seeds();
    if board.own_seeds() == 0 {
        // No seeds to move: the opponent takes every seed left.
        out.terminal_value = Some(-(n as i8));
        return out;
    }
    let mut starving = [false; MAX_PITS];
    let mut all_starve = true;
    for o in 0..p {
        if board.pits[o] == 0 {
            continue;
        }
        let (pits, captured, starved) = play_raw_p::<P>(board, rules, o);
        let i = out.len as usize;
        out.list[i] = Move {
            pit: o as u8,
            captured,
            ends_game: false,
            child: turn(&pits, p),
        };
        starving[i] = starved;
        all_starve &= starved;
        out.len += 1;
    }
    if all_starve {
        match rules {
            // Forced: the move is played and the mover takes every seed left.
            Rules::Awari => {
                for m in &mut out.list[..out.len as usize] {
                    m.ends_game = true;
                }
            }
            // Cannot feed: the game ends before any move, the mover takes every seed.
            Rules::Oware => {
                out.len = 0;
                out.terminal_value = Some(n as i8);
            }
        }
        return out;
    }
    // Some move leaves the opponent seeds: the others are illegal under both rule sets
    // (Oware: they fail to feed an empty opponent; a grand slam never starves).
    let mut k = 0;
    for (i, &starves) in starving.iter().enumerate().take(out.len as usize) {
        if !starves {
            out.list[k] = out.list[i];
            k += 1;
        }
    }
    out.len = k as u8;
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::game::rules::tests::{b, find};

    #[test]
    fn simple_sow_and_turn() {
        let board = b(&[4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4]);
        let m = legal_moves(&board, Rules::Awari);
        assert_eq!(m.len(), 6);
        let m0 = find(&m, 0);
        assert_eq!(m0.captured, 0);
        // Mover's frame after sowing pit 0: 0 5 5 5 5 4 | 4 ... ; turned: opponent first.
        assert_eq!(m0.child, b(&[4, 4, 4, 4, 4, 4, 0, 5, 5, 5, 5, 4]));
    }

    #[test]
    fn lap_of_twelve_or_more_skips_origin() {
        // 12 seeds from pit 2 on a 2x6 board: 11 pits get one, the 12th seed goes to pit 3
        // again, never back into pit 2.
        let mut counts = [0u32; 12];
        counts[2] = 12;
        counts[8] = 1;
        let board = b(&counts);
        let m = find(&legal_moves(&board, Rules::Awari), 2);
        let mut expect = [1u8; 12];
        expect[2] = 0;
        expect[3] = 2;
        expect[8] = 2;
        // Last seed in pit 3 (own row): no capture.
        assert_eq!(m.captured, 0);
        assert_eq!(m.child.turned().pits(), &expect[..]);
        // 23 seeds: two full laps (22) plus one; origin still empty.
        let mut counts = [0u32; 12];
        counts[0] = 23;
        counts[7] = 1;
        let m = find(&legal_moves(&b(&counts), Rules::Awari), 0);
        let after = m.child.turned();
        assert_eq!(after.get(0), 0);
        assert_eq!(after.get(1), 3);
        assert_eq!(after.get(7), 3);
        assert_eq!(after.get(11), 2);
        assert_eq!(after.seeds(), 24);
    }

    #[test]
    fn capture_chain_stops_at_own_row_and_at_1_or_4() {
        // Sow pit 5 (3 seeds) into 6, 7, 8: they hold 1, 2, 1 before -> 2, 3, 2: all
        // captured back to pit 6, and the chain stops at the own row (pit 5).
        let board = b(&[0, 0, 0, 0, 1, 3, 1, 2, 1, 0, 0, 5]);
        let m = find(&legal_moves(&board, Rules::Awari), 5);
        assert_eq!(m.captured, 7);
        assert_eq!(m.child.turned(), b(&[0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 5]));
        // A pit of 4 in the chain stops it: 6 holds 3 -> 4.
        let board = b(&[0, 0, 0, 0, 1, 3, 3, 2, 1, 0, 0, 5]);
        let m = find(&legal_moves(&board, Rules::Awari), 5);
        assert_eq!(m.captured, 5);
        assert_eq!(m.child.turned(), b(&[0, 0, 0, 0, 1, 0, 4, 0, 0, 0, 0, 5]));
        // A pit of 1 stops it: 7 holds 0 -> 1.
        let board = b(&[0, 0, 0, 0, 1, 3, 1, 0, 1, 0, 0, 5]);
        let m = find(&legal_moves(&board, Rules::Awari), 5);
        assert_eq!(m.captured, 2);
        // Last seed in own row: nothing captured.
        let board = b(&[0, 0, 1, 0, 1, 0, 1, 1, 1, 0, 0, 5]);
        let m = find(&legal_moves(&board, Rules::Awari), 2);
        assert_eq!(m.captured, 0);
    }

    #[test]
    fn grand_slam_under_each_rule_set() {
        // Pit 5 with 2 seeds into 6 and 7, each holding 1 -> 2 and 2: all opponent seeds.
        // Pit 0 gives another move that does not starve.
        let board = b(&[1, 0, 0, 0, 0, 2, 1, 1, 0, 0, 0, 0]);
        let aw = legal_moves(&board, Rules::Awari);
        assert_eq!(aw.as_slice().iter().map(|m| m.pit).collect::<Vec<_>>(), [0]);
        let ow = legal_moves(&board, Rules::Oware);
        assert_eq!(ow.len(), 2);
        let slam = find(&ow, 5);
        assert_eq!(slam.captured, 0);
        assert!(!slam.ends_game);
        assert_eq!(
            slam.child.turned(),
            b(&[1, 0, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0])
        );
        // Awari, every move starves: forced, the mover takes every seed left.
        let board = b(&[0, 0, 0, 0, 0, 2, 1, 1, 0, 0, 0, 0]);
        let aw = legal_moves(&board, Rules::Awari);
        assert_eq!(aw.len(), 1);
        let m = find(&aw, 5);
        assert!(m.ends_game);
        assert_eq!(m.captured, 4);
        // Same under Oware: no capture, the game goes on.
        let ow = legal_moves(&board, Rules::Oware);
        assert_eq!(ow.len(), 1);
        assert!(ow.as_slice()[0].stays_in_level());
    }

    #[test]
    fn feeding_and_game_end() {
        // Opponent empty; pit 5 (1 seed) feeds, pit 0 (1 seed) does not.
        let board = b(&[1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0]);
        for rules in [Rules::Awari, Rules::Oware] {
            let m = legal_moves(&board, rules);
            assert_eq!(m.as_slice().iter().map(|m| m.pit).collect::<Vec<_>>(), [5]);
            assert_eq!(m.terminal_value, None);
        }
        // Nobody can be fed: Awari plays a forced move worth everything, Oware ends.
        let board = b(&[2, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        let aw = legal_moves(&board, Rules::Awari);
        assert_eq!(aw.len(), 2);
        assert!(aw.as_slice().iter().all(|m| m.ends_game));
        let ow = legal_moves(&board, Rules::Oware);
        assert!(ow.is_empty());
        assert_eq!(ow.terminal_value, Some(3));
        // No seeds of my own: the opponent takes the rest.
        let board = b(&[0, 0, 0, 0, 0, 0, 0, 3, 0, 1, 0, 0]);
        for rules in [Rules::Awari, Rules::Oware] {
            let m = legal_moves(&board, rules);
            assert!(m.is_empty());
            assert_eq!(m.terminal_value, Some(-4));
        }
    }
}
