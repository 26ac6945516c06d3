//! Un-captures: the predecessors of a position by a capturing move.

use super::moves::play_raw;
use super::{turn, Board, Rules, MAX_PITS};

/// Calls `f(parent, stored)` with every position that reaches `child` by a legal move
/// capturing `captured` seeds (at least 2), each once, and whether the database stores
/// it: the *un-captures* that let a level's exits be found from its lower levels read in
/// index order (DESIGN.md section 5.1). Moves that end the game (Awari's forced starving
/// moves) are not among them: such a move leaves the opponent, `child`'s side to move, no
/// seeds, and is worth `n` whatever the child. Nor is Oware's forfeited grand slam, which
/// captures nothing. So both rule sets have the same un-captures; `rules` is only for
/// the debug check that plays each one forward.
///
/// Turned round, `child` is the board after the capture in the mover's frame. The
/// captured pits were a chain of opponent pits holding 2 or 3 after sowing, from the pit
/// `j` of the last seed down; now empty. The mover sowed from an own pit `o` through
/// every pit `o+1..=j`, each of which holds a seed after sowing: so `o` is the highest
/// empty own pit, the chain is the lowest run of empty opponent pits (any empty opponent
/// pit below it would be on the path), it starts where that run does, and the pit below
/// it, if an opponent pit, holds neither 2 nor 3 (else the chain would go on). Each
/// filling of the chain with 2s and 3s that sums to `captured` is the board after sowing;
/// taking the sowing back gives the parents: `k` whole laps (every pit but `o` gives back
/// `k` seeds) and one more seed from each pit `o+1..=j`.
#[cfg(test)]
#[inline]
pub fn for_each_uncapture(
    child: &Board,
    captured: usize,
    rules: Rules,
    f: impl FnMut(&Board, bool),
) {
    with_pits!(child.p, P => for_each_uncapture_p::<P>(child, captured, rules, f))
}

/// [`for_each_uncapture`] with the pits per side, `P`, known at compile time (the
/// child's).
///
/// Each row is a 64-bit word, one byte a pit: a parent is the chain's 2s and the sowing
/// taken back by one addition and subtraction a row, the 3s of a filling spread from a
/// bit mask by a table, with no byte ever borrowing from its neighbour (every pit on the
/// path holds a seed after sowing). Only the fillings with as many 3s as `captured` asks
/// are visited.
#[inline(always)]
pub(crate) fn for_each_uncapture_p<const P: usize>(
    child: &Board,
    captured: usize,
    rules: Rules,
    mut f: impl FnMut(&Board, bool),
) {
    debug_assert_eq!(child.p as usize, P);
    let np = 2 * P;
    // A capture leaving the opponent (the child's side to move) no seeds starves it: not
    // a capture exit (see above).
    if captured < 2 {
        return;
    }
    let after = turn(&child.pits, P);
    let zeros = after.empty_pits_p::<P>();
    let own = zeros & ((1 << P) - 1);
    let opponent = zeros >> P;
    // The opponent keeps seeds (child.own_seeds() > 0), and some pits are empty: the
    // origin and the chain.
    if own == 0 || opponent == 0 || opponent == (1 << P) - 1 {
        return;
    }
    let o = 31 - own.leading_zeros() as usize;
    // The chain in the opponent's row: pits `lo..=hi` of it are empty.
    let lo = opponent.trailing_zeros() as usize;
    let hi = lo + (!(opponent >> lo)).trailing_zeros() as usize - 1;
    let word = u128::from_le_bytes(after.pits);
    let row = u64::MAX >> (64 - 8 * P);
    let theirs = (word >> (8 * P)) as u64 & row;
    if lo > 0 && matches!(theirs >> (8 * (lo - 1)) & 0xff, 2 | 3) {
        return;
    }
    // The chain's lengths whose 2s and 3s can sum to `captured`.
    let shortest = captured.div_ceil(3);
    let longest = (captured / 2).min(hi - lo + 1);
    if shortest > longest {
        return;
    }
    // Whole laps are possible only if no pit but `o` and the chain is empty.
    let chain = ((1u32 << (hi + 1)) - (1 << lo)) << P;
    let others_empty = zeros & !(1 << o) & !chain != 0;
    // The mover's row after sowing, less the seed each pit above `o` got.
    let mine = (word as u64 & row) - (ONES[P] - ONES[o + 1]);
    for len in shortest..=longest {
        // The sowing ended in the opponent's pit `top`: its pits `0..=top` gave a seed.
        let top = lo + len - 1;
        let mine = mine + (((P + top - o) as u64) << (8 * o));
        // Each chain pit held 2 (or 3, below) after sowing: one left here, after the
        // seed every pit `0..=top` gives back; below the chain one seed less.
        let theirs = theirs + ONES[top + 1] - 2 * ONES[lo];
        // Laps each pit can give back happen only with no other pit empty.
        let lapping = !others_empty && top == hi;
        // Which pits of the chain held 3 (the others 2): `threes` of the `len`, the masks
        // with that many bits in increasing order (Gosper's hack).
        let threes = captured - 2 * len;
        let mut mask = (1u32 << threes) - 1;
        while mask < 1 << len {
            let theirs = theirs + (SPREAD[mask as usize] << (8 * lo));
            let mut parent = mine as u128 | (theirs as u128) << (8 * P);
            let laps = if lapping {
                let bytes = parent.to_le_bytes();
                (0..np)
                    .filter(|&x| x != o)
                    .map(|x| bytes[x])
                    .min()
                    .unwrap_or(0)
            } else {
                0
            };
            for k in 0..=laps {
                if k > 0 {
                    // A lap takes a seed from every pit of both rows but `o`, all `np - 1`
                    // into `o`.
                    let every = ONES[P] as u128 * (1 | 1 << (8 * P));
                    parent =
                        parent - (every & !(0xff << (8 * o))) + (((np - 1) as u128) << (8 * o));
                }
                let board = Board::from_word_p::<P>(parent);
                debug_assert!(check(&board, rules, o, captured, child));
                let stored = board.opponent_empty_pits_p::<P>() != 0;
                f(&board, stored);
            }
            if mask == 0 {
                break;
            }
            let t = mask | (mask - 1);
            mask = (t + 1) | (((!t & t.wrapping_add(1)) - 1) >> (mask.trailing_zeros() + 1));
        }
    }
}

/// `ONES[k]`: a seed in each of the `k` lowest pits of a row.
const ONES: [u64; MAX_PITS + 1] = {
    let mut t = [0u64; MAX_PITS + 1];
    let mut k = 1;
    while k <= MAX_PITS {
        t[k] = t[k - 1] << 8 | 1;
        k += 1;
    }
    t
};

/// `SPREAD[mask]`: a seed in pit `b` for each bit `b` of `mask` (a chain of at most
/// `MAX_PITS - 1` pits).
const SPREAD: [u64; 1 << (MAX_PITS - 1)] = {
    let mut t = [0u64; 1 << (MAX_PITS - 1)];
    let mut mask = 0;
    while mask < t.len() {
        let mut b = 0;
        while b < MAX_PITS - 1 {
            t[mask] |= ((mask >> b & 1) as u64) << (8 * b);
            b += 1;
        }
        mask += 1;
    }
    t
};

/// Whether playing `o` from `parent` captures `captured` seeds, starves no one and
/// leaves `child` (the debug builds' check of each un-capture).
fn check(parent: &Board, rules: Rules, o: usize, captured: usize, child: &Board) -> bool {
    let (pits, c, starved) = play_raw(parent, rules, o);
    c as usize == captured && !starved && turn(&pits, parent.p as usize) == *child
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::game::rules::legal_moves;
    use crate::game::rules::tests::all_boards;

    /// Un-captures against forward moves: on every board of small levels and every board
    /// size, the (parent, child, captured) triples that un-capturing each child gives are
    /// exactly those of the parents' legal capturing moves that do not end the game
    /// (Awari's forced starving moves do; Oware's forfeited grand slam captures nothing),
    /// stored parents and others alike.
    #[test]
    fn uncaptures_are_the_capturing_moves_taken_back() {
        use std::collections::HashSet;
        for rules in [Rules::Awari, Rules::Oware] {
            for (p, top) in [(2, 16), (3, 14), (4, 11), (5, 9), (6, 8), (7, 7), (8, 6)] {
                let mut edges = 0;
                for n in 2..=top {
                    let mut forward = HashSet::new();
                    all_boards(p, n, &mut |board| {
                        for m in legal_moves(board, rules).as_slice() {
                            if m.captured > 0 && !m.ends_game {
                                assert!(forward.insert((*board, m.child, m.captured as usize)));
                            }
                        }
                    });
                    let mut back = HashSet::new();
                    for m in 0..=n - 2 {
                        all_boards(p, m, &mut |child| {
                            for_each_uncapture(child, n - m, rules, |parent, stored| {
                                assert_eq!(stored, parent.is_stored());
                                assert!(
                                    back.insert((*parent, *child, n - m)),
                                    "{rules} {parent:?} -> {child:?} twice"
                                );
                            });
                        });
                    }
                    assert!(forward == back, "{rules} P={p} level {n}");
                    edges += forward.len();
                }
                assert!(edges > 1_000, "{rules} P={p}: only {edges} captures");
            }
        }
    }
}
