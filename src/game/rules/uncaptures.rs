//! Un-captures: the predecessors of a position by a capturing move.

use super::moves::play_raw;
use super::{turn, Board, Rules};

/// The bits set in each byte: a chain is at most `MAX_PITS` (8) pits long.
const ONES_IN: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut i = 1;
    while i < 256 {
        t[i] = t[i / 2] + (i & 1) as u8;
        i += 1;
    }
    t
};

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
#[inline(always)]
pub(crate) fn for_each_uncapture_p<const P: usize>(
    child: &Board,
    captured: usize,
    rules: Rules,
    mut f: impl FnMut(&Board, bool),
) {
    debug_assert_eq!(child.p as usize, P);
    let p = P;
    let np = 2 * p;
    // A capture leaving the opponent (the child's side to move) no seeds starves it: not
    // a capture exit (see above).
    if captured < 2 {
        return;
    }
    let after = turn(&child.pits, p);
    let zeros = after.empty_pits_p::<P>();
    let own = zeros & ((1 << p) - 1);
    let opponent = zeros >> p;
    // The opponent keeps seeds (child.own_seeds() > 0), and some pits are empty: the
    // origin and the chain.
    if own == 0 || opponent == 0 || opponent == (1 << p) - 1 {
        return;
    }
    let o = 31 - own.leading_zeros() as usize;
    let lo = p + opponent.trailing_zeros() as usize;
    let hi = lo + (!(opponent >> (lo - p))).trailing_zeros() as usize - 1;
    if lo > p && matches!(after.pits[lo - 1], 2 | 3) {
        return;
    }
    // Whole laps are possible only if no pit but `o` and the chain is empty.
    let chain = (1u32 << (hi + 1)) - (1 << lo);
    let others_empty = zeros & !(1 << o) & !chain != 0;
    for top in lo..=hi {
        let len = top - lo + 1;
        if captured < 2 * len {
            break;
        }
        if captured > 3 * len {
            continue;
        }
        // Which pits of the chain held 3 (the others 2): `threes` of the `len`.
        let threes = (captured - 2 * len) as u32;
        for mask in 0u32..1 << len {
            // A table: `count_ones` is a dozen instructions without POPCNT, which the
            // default x86_64 target does not assume (a tenth of the streamed forward pass).
            if ONES_IN[mask as usize] as u32 != threes {
                continue;
            }
            let mut sown = after;
            for (b, pit) in (lo..=top).enumerate() {
                sown.pits[pit] = 2 + (mask >> b & 1) as u8;
            }
            // Laps each pit can give back: the path's pits keep one seed for the last one.
            let laps = if others_empty || top < hi {
                0
            } else {
                (0..np)
                    .filter(|&x| x != o)
                    .map(|x| sown.pits[x] - (x > o && x <= top) as u8)
                    .min()
                    .unwrap_or(0)
            };
            let mut parent = sown;
            for x in o + 1..=top {
                parent.pits[x] -= 1;
            }
            let mut s = (top - o) as u8;
            for k in 0..=laps {
                if k > 0 {
                    for x in 0..np {
                        if x != o {
                            parent.pits[x] -= 1;
                        }
                    }
                    s += (np - 1) as u8;
                }
                parent.pits[o] = s;
                debug_assert!({
                    let (pits, c, starved) = play_raw(&parent, rules, o);
                    c as usize == captured && !starved && turn(&pits, p) == *child
                });
                f(&parent, parent.is_stored_p::<P>());
            }
        }
    }
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
