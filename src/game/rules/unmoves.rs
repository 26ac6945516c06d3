//! Un-moves: the predecessors of a position by a legal move that stays in the level.

use super::moves::play_raw;
use super::{count_lanes, turn, Board, Rules, MAX_SEEDS};

/// Calls `f(parent, stored)` with every predecessor of `child` by a legal move that
/// stays in the level (no capture, the game goes on), each once, and whether the
/// database stores it (some of them have a full opponent row). Predecessors are seen
/// from their own side to move.
///
/// Each candidate is made by un-sowing and then confirmed by playing the move forward,
/// which keeps this exactly the inverse of [`legal_moves`](super::legal_moves) for
/// in-level moves.
pub fn for_each_unmove(child: &Board, rules: Rules, mut f: impl FnMut(&Board, bool)) {
    for_each_unmove_near(
        child,
        rules,
        &mut (),
        |_, _| (),
        |q, stored, _, _, _| f(q, stored),
    );
}

/// [`for_each_unmove`] that also shows the board every predecessor is made from:
/// `base_of` gets it once, before any predecessor, to write what it makes of it into
/// `made`, and `f` gets with each predecessor the highest pit (at least 1) in which it
/// differs from that board and `made`, so that ranking it can start there
/// ([`crate::game::index::Index::rank_near`]), and the pit its move sows from.
#[inline]
pub fn for_each_unmove_near<B>(
    child: &Board,
    rules: Rules,
    made: &mut B,
    base_of: impl FnOnce(&Board, &mut B),
    f: impl FnMut(&Board, bool, usize, &B, usize),
) {
    let mut f = f;
    with_pits!(child.p, P => for_each_unmove_near_p::<P, B>(
        child,
        rules,
        made,
        |base, _, made| base_of(base, made),
        |q, stored, top, _, made, o| f(q, stored, top, made, o),
    ))
}

/// [`for_each_unmove_near`] with the pits per side, `P`, known at compile time (the
/// child's); `f` also gets, after the highest pit changed, the lowest (the pit sown
/// from in a first lap, else 0): the predecessor agrees with the board it is made from
/// outside `low..=top` ([`crate::game::index::Index::rank_pred_p`]). `base_of` also gets
/// the base's empty opponent pits as [`Board::opponent_empty_pits_p`] gives them.
#[inline(always)]
pub(crate) fn for_each_unmove_near_p<const P: usize, B>(
    child: &Board,
    rules: Rules,
    made: &mut B,
    base_of: impl FnOnce(&Board, u64, &mut B),
    mut f: impl FnMut(&Board, bool, usize, usize, &B, usize),
) {
    debug_assert_eq!(child.p as usize, P);
    let p = P;
    let np = 2 * p;
    // The mover's own row is the child's opponent row; a move that stays in the level
    // leaves the mover's opponent (the child's side to move) with seeds.
    if child.own_empty_p::<P>() {
        return;
    }
    // The position after the move, in the mover's frame. Nothing was captured, so it is
    // also the board right after sowing.
    let base = turn(&child.pits, p);
    // The base's opponent row is the child's own row: its empty pits from one word.
    let opp_empty = child.own_empty_pits_p::<P>();
    base_of(&base, opp_empty, made);
    let made = &*made;
    // Empty pits in the opponent row of the base; a predecessor is stored if its own
    // count (base less the seeds sown into that row) is not zero.
    let opp_zeros0 = count_lanes(opp_empty);
    // Whether a sowing that ends in pit j leaves the level: it captures there unless
    // (Oware) the capture would take every opponent seed, which captures nothing. Only
    // pits of 2 or 3 can end in a capture, so most candidates skip this test.
    let captures_at = |j: usize| -> bool {
        if rules == Rules::Awari {
            return true;
        }
        let mut k = j;
        let mut chain = 0usize;
        while k >= p && (base.pits[k] == 2 || base.pits[k] == 3) {
            chain += base.pits[k] as usize;
            k -= 1;
        }
        let opponent: usize = base.pits[p..np].iter().map(|&c| c as usize).sum();
        chain != opponent
    };
    for o in 0..p {
        if base.pits[o] != 0 {
            continue;
        }
        let mut parent = base;
        let mut opp_zeros = opp_zeros0;
        // Seeds taken back so far: the count of pit `o` in the predecessor at hand.
        let mut s = 0u8;
        // The board taken back so far with `s` seeds in pit `o` is a predecessor whose
        // highest pit changed is `top`. (A macro: a closure could not borrow `parent`,
        // which the loops change between calls.)
        macro_rules! emit {
            ($top:expr, $low:expr) => {
                parent.pits[o] = s;
                debug_assert!(confirms(&parent, rules, o, child));
                debug_assert_eq!(parent.is_stored(), opp_zeros > 0);
                f(&parent, opp_zeros > 0, $top, $low, made, o);
            };
        }
        // The first lap in three runs, each without the tests of the others: the mover's
        // pits after `o` (the last seed lands there: no capture; they are the highest pits
        // changed), the opponent's pits (where a capture may be; still the highest), then
        // the mover's pits before `o` (every pit above changed). A pit that would have to
        // give back a seed it does not hold ends the search: larger counts need it too.
        'laps: {
            for j in o + 1..p {
                let c = parent.pits[j];
                if c == 0 {
                    break 'laps;
                }
                parent.pits[j] = c - 1;
                s += 1;
                emit!(j, o);
            }
            for j in p..np {
                let c = parent.pits[j];
                if c == 0 {
                    break 'laps;
                }
                parent.pits[j] = c - 1;
                s += 1;
                opp_zeros += (c == 1) as usize;
                // The s-th seed lands in pit j, the last one: a move that captures there
                // leaves the level.
                if (base.pits[j] == 2 || base.pits[j] == 3) && captures_at(j) {
                    continue;
                }
                emit!(j, o);
            }
            for j in 0..o {
                let c = parent.pits[j];
                if c == 0 {
                    break 'laps;
                }
                parent.pits[j] = c - 1;
                s += 1;
                emit!(np - 1, 0);
            }
            // Moves that lap the board (rare): pit by pit around it, skipping `o`.
            let mut j = o;
            while (s as usize) < MAX_SEEDS {
                j = if j + 1 == np { 0 } else { j + 1 };
                if j == o {
                    continue;
                }
                let c = parent.pits[j];
                if c == 0 {
                    break 'laps;
                }
                parent.pits[j] = c - 1;
                s += 1;
                opp_zeros += (c == 1 && j >= p) as usize;
                if j >= p && (base.pits[j] == 2 || base.pits[j] == 3) && captures_at(j) {
                    continue;
                }
                emit!(np - 1, 0);
            }
        }
    }
}

/// Whether sowing pit `o` of `parent` is a legal in-level move that leads to `child`: the
/// slow definition, which the fast test of [`for_each_unmove`] must agree with.
fn confirms(parent: &Board, rules: Rules, o: usize, child: &Board) -> bool {
    let p = parent.p as usize;
    let (pits, captured, starved) = play_raw(parent, rules, o);
    // A non-starving move is legal under both rule sets.
    captured == 0 && !starved && turn(&pits, p) == *child
}

/// Collects [`for_each_unmove`] into a vector (tests and tools; not for hot loops).
pub fn unmoves(child: &Board, rules: Rules) -> Vec<Board> {
    let mut v = Vec::new();
    for_each_unmove(child, rules, |b, _| v.push(*b));
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::game::rules::legal_moves;
    use crate::game::rules::tests::{b, find};

    #[test]
    fn unmoves_invert_a_known_move() {
        let parent = b(&[4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4]);
        let child = find(&legal_moves(&parent, Rules::Awari), 3).child;
        assert!(unmoves(&child, Rules::Awari).contains(&parent));
    }
}
