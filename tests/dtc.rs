//! Distance tables played out (DESIGN.md section 5.7): from won and lost positions of
//! 2x6 Awari and Oware, a principal variation played by the tables reaches its first
//! conversion (a capture or the game's end) in exactly the position's distance, and
//! realises its value; the search the tables replace gives the same distances.

use awari::expert::{Conversion, Database, Index};
use awari::{make_tables, DtcOptions, Position, Rules, Tablebase};

use crate::common::build_levels;

/// A small deterministic generator (xorshift64*), so that a failure names a position
/// that a rerun meets again.
struct Draws(u64);

impl Draws {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n
    }
}

#[test]
fn lines_convert_in_exactly_the_distance() {
    let top = 15;
    for rules in [Rules::Awari, Rules::Oware] {
        let tmp = tempfile::tempdir().unwrap();
        build_levels(tmp.path(), rules, 6, top);
        let opts = DtcOptions {
            root: tmp.path().to_path_buf(),
            rules,
            pits: 6,
            levels: None,
            force: false,
            progress: false,
        };
        let made = make_tables(&opts, |_| {}, |w| panic!("unexpected warning: {w}")).unwrap();
        assert_eq!(made.len(), top + 1);
        let with = Database::open(tmp.path(), rules, 6).unwrap();
        // The same levels without their tables: the search's distances.
        let bare = tempfile::tempdir().unwrap();
        let bare_dir = bare.path().join(format!("{rules}-6"));
        std::fs::create_dir_all(&bare_dir).unwrap();
        for n in 0..=top {
            let name = format!("level-{n:03}.awl");
            std::fs::copy(with.dir().join(&name), bare_dir.join(&name)).unwrap();
        }
        let without = Database::open(bare.path(), rules, 6).unwrap();
        let tb = Tablebase::open_rules(tmp.path(), rules).unwrap();
        let index = Index::new(6, top).unwrap();
        let mut draws = Draws(0x5eed ^ rules as u64);
        let mut searched = Conversion::new();
        let (mut tried, mut longest) = (0, 0);
        while tried < 200 {
            let n = 10 + draws.below((top - 9) as u64) as usize;
            let board = index.unrank(n, draws.below(index.level_size(n)));
            let value = with.probe(&board).unwrap();
            let Some(d) = with.distance(&board).unwrap() else {
                assert!(value == 0 || with.analyze(&board).unwrap().game_over.is_some());
                continue;
            };
            assert_ne!(value, 0, "{board}: a draw with a distance");
            tried += 1;
            longest = longest.max(d);
            // The search counts the plies before the converting move.
            assert_eq!(
                searched.distance(&without, &board).unwrap(),
                Some(u32::from(d) - 1),
                "{rules} {board}: the search's distance"
            );
            assert_eq!(without.distance(&board).unwrap(), None);
            let line = with.line(&board, 10_000).unwrap();
            // The tablebase's probes say the same.
            let pos = Position::from(board);
            assert_eq!(tb.probe_distance(&pos).unwrap(), Some(d));
            assert_eq!(tb.best_move(&pos).unwrap(), Some(line.plies[0].pit));
            // The first conversion: the first capture, else the line's last ply (the game
            // ends with it or right after it).
            let first = line
                .plies
                .iter()
                .position(|p| p.captured > 0)
                .unwrap_or(line.plies.len() - 1);
            assert_eq!(first + 1, d as usize, "{rules} {board}: {line:?}");
            assert_eq!(
                line.score[0] - line.score[1],
                f64::from(value),
                "{rules} {board}: {}",
                line.end
            );
        }
        assert!(longest > 20, "{rules}: longest {longest}");
    }
}
