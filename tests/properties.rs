//! Property tests of the rules and the index on random positions.

use awari::expert::{legal_moves, rules::unmoves, Board, Index};
use awari::Rules;
use proptest::prelude::*;

/// A random board of `p` pits per side with at most `max` seeds.
fn board(p: usize, max: u32) -> impl Strategy<Value = Board> {
    prop::collection::vec(0..=max / 3, 2 * p).prop_map(move |mut v| {
        // Keep the total within the level range the index supports.
        while v.iter().sum::<u32>() > max {
            let i = v.iter().position(|&x| x > 0).unwrap();
            v[i] -= 1;
        }
        Board::from_counts(p, &v).unwrap()
    })
}

/// A random stored board (some opponent pit empty) of six pits per side, up to 48 seeds.
fn stored_board() -> impl Strategy<Value = Board> {
    (prop::collection::vec(0u32..=8, 12), 6usize..12).prop_map(|(mut v, empty)| {
        v[empty] = 0;
        while v.iter().sum::<u32>() > 48 {
            let i = v.iter().position(|&x| x > 0).unwrap();
            v[i] -= 1;
        }
        Board::from_counts(6, &v).unwrap()
    })
}

fn rules() -> impl Strategy<Value = Rules> {
    prop_oneof![Just(Rules::Awari), Just(Rules::Oware)]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    /// Every in-level child lists its parent among its un-moves, and every un-move really
    /// reaches the child by a legal move that stays in the level.
    #[test]
    fn unmoves_invert_moves(b in (2usize..=8).prop_flat_map(|p| board(p, 40)), r in rules()) {
        for m in legal_moves(&b, r).as_slice() {
            if m.stays_in_level() {
                prop_assert!(unmoves(&m.child, r).contains(&b), "{b:?} -> {:?}", m.child);
            }
        }
        for parent in unmoves(&b, r) {
            prop_assert_eq!(parent.seeds(), b.seeds());
            let reaches = legal_moves(&parent, r)
                .as_slice()
                .iter()
                .any(|m| m.stays_in_level() && m.child == b);
            prop_assert!(reaches, "{parent:?} does not reach {b:?}");
        }
    }

    /// Rank and unrank are inverse on random stored positions of levels up to 48 (P = 6).
    #[test]
    fn rank_unrank_round_trip_large_levels(b in stored_board()) {
        let idx = Index::new(6, 48).unwrap();
        let n = b.seeds();
        let r = idx.rank(&b);
        prop_assert!(r < idx.level_size(n));
        prop_assert_eq!(idx.unrank(n, r), b);
    }

    /// Stepping with `next` from a random position gives the position of the next rank.
    #[test]
    fn next_is_rank_plus_one(b in stored_board()) {
        let idx = Index::new(6, 48).unwrap();
        let n = b.seeds();
        let r = idx.rank(&b);
        let mut c = b;
        if idx.next(&mut c) {
            prop_assert_eq!(idx.rank(&c), r + 1);
        } else {
            prop_assert_eq!(r + 1, idx.level_size(n));
        }
    }
}
