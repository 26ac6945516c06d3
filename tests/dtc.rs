//! Distance tables played out (DESIGN.md section 5.7): from won and lost positions of
//! 2x6 Awari and Oware, a principal variation played by the tables reaches its first
//! conversion (a capture or the game's end) in exactly the position's distance, and
//! realises its value; the search the tables replace gives the same distances.

use awari::expert::{Conversion, Database, Index};
use awari::{make_tables, DtcOptions, Position, Rules, Tablebase};

use crate::common::{build_levels, ok, run};

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

/// Distance tables packed by `awari pack --all --remove-raw` answer every position of
/// levels 0..=12 of Oware as the raw tables do (the database's probe, the tablebase's
/// probe and best move); a damaged block leaves the table out of a query, which gives the
/// value and a warning naming the block, and `awari dtc` makes that
/// table again; `awari unpack` restores the raw tables byte for byte.
#[test]
fn packed_tables_answer_as_the_raw_ones() {
    let top = 12;
    let rules = Rules::Oware;
    let raw = tempfile::tempdir().unwrap();
    build_levels(raw.path(), rules, 6, top);
    let opts = DtcOptions {
        root: raw.path().to_path_buf(),
        rules,
        pits: 6,
        levels: None,
        force: false,
        progress: false,
    };
    make_tables(&opts, |_| {}, |w| panic!("unexpected warning: {w}")).unwrap();
    let packed = tempfile::tempdir().unwrap();
    let (from, to) = (raw.path().join("oware-6"), packed.path().join("oware-6"));
    std::fs::create_dir_all(&to).unwrap();
    for e in std::fs::read_dir(&from).unwrap() {
        let name = e.unwrap().file_name();
        std::fs::copy(from.join(&name), to.join(&name)).unwrap();
    }
    let dir = to.to_str().unwrap();
    let out = ok(&["pack", "--all", "--remove-raw", "--dir", dir]);
    // A row for each level and each table, and only packed files left.
    assert_eq!(out.matches(" distances\n").count(), top + 1, "{out}");
    assert!(
        out.contains(&format!("total: {} files", 2 * (top + 1))),
        "{out}"
    );
    let names: Vec<String> = std::fs::read_dir(&to)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("level-"))
        .collect();
    assert_eq!(names.len(), 2 * (top + 1), "{names:?}");
    assert!(names
        .iter()
        .all(|n| n.ends_with(".awp") || n.ends_with(".adz")));
    let a = Database::open(raw.path(), rules, 6).unwrap();
    let b = Database::open(packed.path(), rules, 6).unwrap();
    let tb = Tablebase::open_rules(packed.path(), rules).unwrap();
    let index = Index::new(6, top).unwrap();
    let mut with_distance = 0;
    for n in 0..=top {
        assert!(b.distances(n).unwrap().unwrap().is_packed());
        for i in 0..index.level_size(n) {
            let board = index.unrank(n, i);
            let d = a.distance(&board).unwrap();
            assert_eq!(b.distance(&board).unwrap(), d, "{board}");
            with_distance += d.is_some() as u64;
            if i % 101 == 0 {
                let pos = Position::from(board);
                assert_eq!(tb.probe_distance(&pos).unwrap(), d, "{board}");
                let first = a.line(&board, 1).unwrap().plies.first().map(|p| p.pit);
                assert_eq!(tb.best_move(&pos).unwrap(), first, "{board}");
            }
        }
    }
    assert!(with_distance > 1_000_000, "{with_distance}");
    // A damaged block of level 12's table: the query still gives the value, without
    // distances, and one warning names the file, the block and what makes it again.
    let table = to.join("level-012.adz");
    let mut bad = std::fs::read(&table).unwrap();
    let at = bad.len() - 100;
    bad[at] ^= 0x10;
    std::fs::write(&table, &bad).unwrap();
    let last = index.unrank(12, index.level_size(12) - 1);
    let mut args = vec!["query", "--json", "--dir", dir];
    let words = last.to_string();
    args.extend(words.split_whitespace());
    let (done, out, err) = run(&args);
    assert!(done, "{err}");
    let answer: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(answer["value"], a.probe(&last).unwrap(), "{out}");
    assert!(answer["distance"].is_null(), "{out}");
    assert!(
        err.starts_with("warning: ")
            && err.contains("level-012.adz")
            && err.contains("block")
            && err.contains("`awari dtc --force --levels 12`"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    // `awari info --check` lists the tables beside the levels and finds it.
    let root = packed.path().to_str().unwrap();
    let (done, out, err) = run(&["info", "--check", "--dir", root]);
    assert!(!done && err.contains("1 file(s)"), "{err}");
    assert!(
        out.contains("total: 13 level files and 13 distance tables"),
        "{out}"
    );
    let bad: Vec<&str> = out.lines().filter(|l| l.contains("BAD")).collect();
    assert_eq!(bad.len(), 1, "{out}");
    let cells: Vec<&str> = bad[0].split_whitespace().collect();
    assert_eq!(
        (cells[2], cells[4], cells[7]),
        ("12", "packed", "dtc"),
        "{out}"
    );
    assert!(bad[0].contains("block"), "{out}");
    // `awari dtc` finds it too, says so and makes the table again (raw), the packed one
    // removed.
    let (done, out, err) = run(&["dtc", "--rules", "oware", "--dir", root]);
    assert!(done, "{err}");
    assert!(out.contains("(1 made, 12 kept)"), "{out}");
    assert!(
        err.contains("level-012.adz") && err.contains("made again"),
        "{err}"
    );
    assert!(!table.exists());
    // Unpacked: the raw tables, byte for byte (level 12's made again by then).
    let out = ok(&["unpack", "--all", "--remove-packed", "--dir", dir]);
    assert_eq!(out.matches(" distances\n").count(), top, "{out}");
    for n in 0..=top {
        let name = format!("level-{n:03}.awd");
        let (x, y) = (
            std::fs::read(from.join(&name)),
            std::fs::read(to.join(&name)),
        );
        assert!(x.unwrap() == y.unwrap(), "{name}");
    }
}
