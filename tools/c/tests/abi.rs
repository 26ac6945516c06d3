//! The C functions called as C calls them, against the library's own answers, on a small
//! database (6 pits, up to 8 seeds) built here; and each error code.

use std::ffi::{c_int, CStr, CString};
use std::path::PathBuf;
use std::ptr::{null, null_mut};
use std::sync::OnceLock;

use awari_c::*;

/// The database root, built once per run.
fn db() -> &'static PathBuf {
    static DB: OnceLock<PathBuf> = OnceLock::new();
    DB.get_or_init(|| {
        let root = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("abi-db");
        let _ = std::fs::remove_dir_all(&root);
        let mut opts = awari::BuildOptions::new(&root, awari::Rules::Awari, 6, 8);
        opts.check = false;
        awari::build(&opts, |_| {}, |_| {}).expect("build the test database");
        root
    })
}

fn cpath(p: &std::path::Path) -> CString {
    CString::new(p.to_str().unwrap()).unwrap()
}

fn last_error() -> String {
    let p = awari_last_error();
    assert!(!p.is_null(), "awari_last_error is never NULL");
    unsafe { CStr::from_ptr(p) }.to_str().unwrap().to_string()
}

/// An open handle, closed on drop.
struct Tb(*mut AwariTb);

impl Tb {
    fn open() -> Tb {
        let tb = unsafe { awari_open(cpath(db()).as_ptr()) };
        assert!(!tb.is_null(), "awari_open: {}", last_error());
        assert_eq!(last_error(), "");
        Tb(tb)
    }

    fn probe(&self, counts: &[u8]) -> Result<i32, (c_int, String)> {
        let mut margin: c_int = 99;
        match unsafe { awari_probe(self.0, counts.as_ptr(), counts.len(), &mut margin) } {
            AWARI_OK => Ok(margin),
            c => Err((c, last_error())),
        }
    }

    fn moves(
        &self,
        counts: &[u8],
        cap: usize,
    ) -> Result<(i32, Vec<AwariMove>), (c_int, String, usize)> {
        let mut out = [AwariMove::default(); AWARI_MAX_MOVES];
        let (mut len, mut value) = (0usize, 0 as c_int);
        let r = unsafe {
            awari_moves(
                self.0,
                counts.as_ptr(),
                counts.len(),
                out.as_mut_ptr(),
                cap,
                &mut len,
                &mut value,
            )
        };
        match r {
            AWARI_OK => Ok((value, out[..len].to_vec())),
            c => Err((c, last_error(), len)),
        }
    }
}

impl Drop for Tb {
    fn drop(&mut self) {
        unsafe { awari_close(self.0) }
    }
}

/// Every 6-pit position of at most `max` seeds.
fn positions(max: u8) -> Vec<[u8; 12]> {
    fn fill(pos: &mut [u8; 12], i: usize, left: u8, out: &mut Vec<[u8; 12]>) {
        if i == 12 {
            out.push(*pos);
            return;
        }
        for c in 0..=left {
            pos[i] = c;
            fill(pos, i + 1, left - c, out);
        }
    }
    let mut out = Vec::new();
    fill(&mut [0; 12], 0, max, &mut out);
    out
}

#[test]
fn answers_are_the_librarys() {
    let tb = Tb::open();
    let lib = awari::Tablebase::open(db()).unwrap();
    let all = positions(6);
    assert_eq!(all.len(), 18_564);
    for counts in all {
        let pos = awari::Position::from_counts(&counts.map(u32::from)).unwrap();
        let want = lib.moves(&pos).unwrap();
        assert_eq!(
            tb.probe(&counts),
            Ok(lib.probe(&pos).unwrap().margin().into()),
            "{pos}"
        );
        let (value, moves) = tb.moves(&counts, AWARI_MAX_MOVES).unwrap();
        assert_eq!(value, i32::from(want.value), "{pos}");
        let want: Vec<AwariMove> = want
            .moves
            .iter()
            .map(|m| AwariMove {
                pit: m.pit,
                value: m.value,
                captured: m.captured,
                ends_game: m.ends_game.into(),
            })
            .collect();
        assert_eq!(moves, want, "{pos}");
    }
}

#[test]
fn one_handle_serves_threads() {
    let tb = Tb::open();
    let all = positions(5);
    let first: Vec<_> = all.iter().map(|c| tb.probe(c).unwrap()).collect();
    let h = tb.0 as usize;
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                let t = Tb(h as *mut AwariTb);
                for (c, v) in all.iter().zip(&first) {
                    assert_eq!(t.probe(c), Ok(*v));
                }
                std::mem::forget(t); // the handle is the test's
            });
        }
    });
}

#[test]
fn errors_have_codes_and_messages() {
    // open
    assert!(unsafe { awari_open(null()) }.is_null());
    assert_eq!(last_error(), "path is NULL");
    let nowhere = db().join("nowhere");
    assert!(unsafe { awari_open(cpath(&nowhere).as_ptr()) }.is_null());
    assert!(last_error().contains("nowhere"), "{}", last_error());
    let oware = CString::new("oware").unwrap();
    assert!(unsafe { awari_open_rules(cpath(db()).as_ptr(), oware.as_ptr()) }.is_null());
    assert!(last_error().contains("oware"), "{}", last_error());
    let chess = CString::new("chess").unwrap();
    assert!(unsafe { awari_open_rules(cpath(db()).as_ptr(), chess.as_ptr()) }.is_null());
    assert!(last_error().contains("chess"), "{}", last_error());
    let awari = CString::new("awari").unwrap();
    let t = unsafe {
        awari_open_rules(
            cpath(db().join("awari-6").as_path()).as_ptr(),
            awari.as_ptr(),
        )
    };
    assert!(!t.is_null(), "{}", last_error());
    unsafe { awari_close(t) };
    unsafe { awari_close(null_mut()) };
    assert_eq!(last_error(), "");

    let tb = Tb::open();
    // Not a position: the library's words.
    let e = awari::Position::from_counts(&[1, 1, 1])
        .unwrap_err()
        .one_line();
    assert_eq!(tb.probe(&[1, 1, 1]), Err((AWARI_EINPUT, e)));
    assert_eq!(tb.probe(&[1; 17]).unwrap_err().0, AWARI_EINPUT);
    assert_eq!(tb.probe(&[200, 200, 0, 0]).unwrap_err().0, AWARI_EINPUT);
    // A board size the folder lacks.
    let (c, m) = tb.probe(&[1, 1, 1, 1]).unwrap_err();
    assert_eq!(c, AWARI_EINPUT);
    assert!(m.contains("2 pits"), "{m}");
    // A level not built: the command that builds it.
    let readme = [1, 1, 1, 1, 1, 2, 4, 2, 3, 0, 0, 0];
    let (c, m) = tb.probe(&readme).unwrap_err();
    assert_eq!(c, AWARI_EMISSING);
    assert!(m.contains("awari build"), "{m}");
    assert_eq!(
        tb.moves(&readme, AWARI_MAX_MOVES).unwrap_err().0,
        AWARI_EMISSING
    );
    let six = [1, 1, 1, 1, 1, 1, 0, 1, 0, 0, 0, 0]; // 7 seeds, 6 moves
                                                    // Success clears the message.
    assert!(tb.probe(&six).is_ok());
    assert_eq!(last_error(), "");
    // Too small an array: how many are needed.
    let (c, m, len) = tb.moves(&six, 2).unwrap_err();
    assert_eq!((c, len), (AWARI_EINPUT, 6));
    assert!(m.contains("6 moves"), "{m}");
    // NULL pointers.
    let mut v: c_int = 0;
    let mut len = 0usize;
    let counts = six;
    unsafe {
        assert_eq!(
            awari_probe(null(), counts.as_ptr(), 12, &mut v),
            AWARI_EINPUT
        );
        assert_eq!(awari_probe(tb.0, null(), 12, &mut v), AWARI_EINPUT);
        assert_eq!(
            awari_probe(tb.0, counts.as_ptr(), 12, null_mut()),
            AWARI_EINPUT
        );
        assert_eq!(
            awari_moves(tb.0, counts.as_ptr(), 12, null_mut(), 8, &mut len, &mut v),
            AWARI_EINPUT
        );
        assert_eq!(
            awari_moves(tb.0, counts.as_ptr(), 12, null_mut(), 0, null_mut(), &mut v),
            AWARI_EINPUT
        );
    }
    // cap 0 and no array: a count of the moves.
    unsafe {
        assert_eq!(
            awari_moves(tb.0, counts.as_ptr(), 12, null_mut(), 0, &mut len, &mut v),
            AWARI_EINPUT
        );
    }
    assert_eq!(len, 6);
}

#[test]
fn a_game_over_has_no_moves() {
    let tb = Tb::open();
    // The side to move has no seeds: the opponent takes the rest.
    let (value, moves) = tb
        .moves(&[0, 0, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0], AWARI_MAX_MOVES)
        .unwrap();
    assert_eq!((value, moves.len()), (-3, 0));
}

/// A database with distance tables (6 pits, up to 8 seeds), built once per run.
fn db_with_tables() -> &'static PathBuf {
    static DB: OnceLock<PathBuf> = OnceLock::new();
    DB.get_or_init(|| {
        let root = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("abi-dtc");
        let _ = std::fs::remove_dir_all(&root);
        let mut opts = awari::BuildOptions::new(&root, awari::Rules::Oware, 6, 8);
        opts.check = false;
        awari::build(&opts, |_| {}, |_| {}).expect("build the test database");
        let dtc = awari::DtcOptions {
            root: root.clone(),
            rules: awari::Rules::Oware,
            pits: 6,
            levels: None,
            force: false,
            progress: false,
        };
        awari::make_tables(&dtc, |_| {}, |_| {}).expect("make the distance tables");
        root
    })
}

/// The database of [`db_with_tables`], levels and tables packed (`awari pack --all
/// --remove-raw`).
fn db_with_packed_tables() -> &'static PathBuf {
    static DB: OnceLock<PathBuf> = OnceLock::new();
    DB.get_or_init(|| {
        use awari::expert::pack::{pack_files, LevelStack, PackOptions};
        let root = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("abi-dtc-packed");
        let _ = std::fs::remove_dir_all(&root);
        let (from, to) = (db_with_tables().join("oware-6"), root.join("oware-6"));
        std::fs::create_dir_all(&to).unwrap();
        for e in std::fs::read_dir(&from).unwrap() {
            let name = e.unwrap().file_name();
            std::fs::copy(from.join(&name), to.join(&name)).unwrap();
        }
        let mut stack = LevelStack::new(&to, awari::Rules::Oware, 6, true).unwrap();
        for n in 0..=8 {
            let done = pack_files(&mut stack, n, &PackOptions::default(), true).unwrap();
            assert_eq!(done.len(), 2, "level {n}: the level and its table");
        }
        root
    })
}

/// `awari_distance` and `awari_best_move` answer as the library, with tables (raw and
/// packed) and without (distance 0 then), -1 for a game over; a NULL out pointer is
/// refused.
#[test]
fn distances_and_best_moves_are_the_librarys() {
    let cases = [
        (db(), false, db()),
        (db_with_tables(), true, db_with_tables()),
        // Packed tables answer as the raw ones.
        (db_with_packed_tables(), true, db_with_tables()),
    ];
    for (root, tables, reference) in cases {
        let tb = unsafe { awari_open(cpath(root).as_ptr()) };
        assert!(!tb.is_null(), "awari_open: {}", last_error());
        let lib = awari::Tablebase::open(reference).unwrap();
        let mut with_distance = 0;
        for counts in positions(6) {
            let pos = awari::Position::from_counts(&counts.map(u32::from)).unwrap();
            let (mut plies, mut pit): (c_int, c_int) = (99, 99);
            let n = counts.len();
            assert_eq!(
                unsafe { awari_distance(tb, counts.as_ptr(), n, &mut plies) },
                AWARI_OK
            );
            let want = lib.probe_distance(&pos).unwrap();
            assert_eq!(plies, want.map_or(0, c_int::from), "{pos}");
            assert!(tables || want.is_none(), "{pos}: a distance without tables");
            with_distance += usize::from(want.is_some());
            assert_eq!(
                unsafe { awari_best_move(tb, counts.as_ptr(), n, &mut pit) },
                AWARI_OK
            );
            let best = lib.best_move(&pos).unwrap();
            assert_eq!(pit, best.map_or(-1, c_int::from), "{pos}");
        }
        assert_eq!(
            with_distance > 1000,
            tables,
            "{with_distance} positions with a distance"
        );
        let counts = [1u8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
        assert_eq!(
            unsafe { awari_distance(tb, counts.as_ptr(), 12, null_mut()) },
            AWARI_EINPUT
        );
        assert_eq!(last_error(), "plies is NULL");
        assert_eq!(
            unsafe { awari_best_move(tb, counts.as_ptr(), 12, null_mut()) },
            AWARI_EINPUT
        );
        assert_eq!(last_error(), "pit is NULL");
        unsafe { awari_close(tb) };
    }
}
