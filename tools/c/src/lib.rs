//! The C ABI of the awari tablebase library, declared in `awari.h` beside this crate:
//! open a folder of databases, probe positions, list the moves' values, close, and read
//! the last error's message. `tests/header.rs` checks that the header and this file
//! declare the same functions, constants and struct.
//!
//! Every function catches panics (none may unwind into C), checks its pointers for NULL
//! and reports failure by a negative code (or NULL) and a message that
//! [`awari_last_error`] returns.

#![warn(unsafe_op_in_unsafe_fn)]
// The functions take raw pointers from C; their contracts are in awari.h.
#![allow(clippy::missing_safety_doc)]

use std::cell::RefCell;
use std::ffi::{c_char, c_int, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

use awari::{Error, Position, Rules, Tablebase};

/// Success.
pub const AWARI_OK: c_int = 0;
/// A bad argument: a NULL pointer, a position that is not one, a buffer too small.
pub const AWARI_EINPUT: c_int = -1;
/// A level the answer needs is not built.
pub const AWARI_EMISSING: c_int = -2;
/// Reading a file or folder failed.
pub const AWARI_EIO: c_int = -3;
/// A file is damaged, truncated or of another format.
pub const AWARI_EFORMAT: c_int = -4;
/// A bug: the library panicked (the panic was caught).
pub const AWARI_EPANIC: c_int = -5;
/// Anything else (a folder in use, too little memory).
pub const AWARI_EOTHER: c_int = -6;

/// The most legal moves of a position: one per pit of the side to move, 8 pits at most.
pub const AWARI_MAX_MOVES: usize = 8;
const _: () = assert!(AWARI_MAX_MOVES == awari::expert::MAX_PITS);

/// An open tablebase, opaque to C (`awari_tb`).
pub struct AwariTb(Tablebase);

/// One legal move and its value (`awari_move`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AwariMove {
    /// The pit sowed from, 0-based, side to move.
    pub pit: u8,
    /// Final margin for the side to move after this move, under perfect play.
    pub value: i8,
    /// Seeds the move captures.
    pub captured: u8,
    /// 1 if the game ends with this move, else 0.
    pub ends_game: u8,
}

// Probes from several threads on one handle are safe: awari.h says so.
const _: () = {
    const fn sync<T: Sync + Send>() {}
    sync::<AwariTb>()
};

thread_local! {
    // The message of this thread's last failure; "" after a success.
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

fn set_error(msg: String) {
    // A message with a NUL inside would be cut short in C anyway.
    let msg = CString::new(msg.replace('\0', " ")).unwrap_or_default();
    LAST_ERROR.with(|e| *e.borrow_mut() = msg);
}

fn code(e: &Error) -> c_int {
    match e.root() {
        Error::Input(_) => AWARI_EINPUT,
        Error::MissingLevel { .. } => AWARI_EMISSING,
        Error::Io { .. } => AWARI_EIO,
        Error::Format { .. } | Error::Compression { .. } => AWARI_EFORMAT,
        _ => AWARI_EOTHER,
    }
}

/// A failure: its code and message.
struct Fail(c_int, String);

impl From<Error> for Fail {
    fn from(e: Error) -> Fail {
        Fail(code(&e), e.one_line())
    }
}

fn input(msg: impl Into<String>) -> Fail {
    Fail(AWARI_EINPUT, msg.into())
}

/// Runs `f` with panics caught, and sets the last error from what it returns.
fn guard<T>(f: impl FnOnce() -> Result<T, Fail>) -> Result<T, c_int> {
    let r = catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|p| {
        let what = p
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| p.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        Err(Fail(
            AWARI_EPANIC,
            format!("internal error (panic): {what}"),
        ))
    });
    match r {
        Ok(v) => {
            set_error(String::new());
            Ok(v)
        }
        Err(Fail(c, msg)) => {
            set_error(msg);
            Err(c)
        }
    }
}

unsafe fn path_arg<'a>(path: *const c_char) -> Result<&'a std::path::Path, Fail> {
    if path.is_null() {
        return Err(input("path is NULL"));
    }
    let bytes = unsafe { CStr::from_ptr(path) }.to_bytes();
    // Unix paths are bytes; elsewhere they must be UTF-8.
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        Ok(std::path::Path::new(std::ffi::OsStr::from_bytes(bytes)))
    }
    #[cfg(not(unix))]
    {
        std::str::from_utf8(bytes)
            .map(std::path::Path::new)
            .map_err(|_| input("path is not UTF-8"))
    }
}

unsafe fn position_arg<'a>(
    tb: *const AwariTb,
    counts: *const u8,
    n: usize,
) -> Result<(&'a Tablebase, Position), Fail> {
    if tb.is_null() {
        return Err(input("tablebase is NULL"));
    }
    if counts.is_null() {
        return Err(input("counts is NULL"));
    }
    // Bound n before reading: a position has at most 2 * MAX_PITS counts.
    if n > 2 * AWARI_MAX_MOVES {
        return Err(input(format!(
            "a position is 4 to {} pit counts, not {n}",
            2 * AWARI_MAX_MOVES
        )));
    }
    let counts: Vec<u32> = unsafe { std::slice::from_raw_parts(counts, n) }
        .iter()
        .map(|&c| u32::from(c))
        .collect();
    let tb = unsafe { &(*tb).0 };
    Ok((tb, Position::from_counts(&counts)?))
}

/// Opens the databases under `path`: see awari.h.
#[no_mangle]
pub unsafe extern "C" fn awari_open(path: *const c_char) -> *mut AwariTb {
    unsafe { awari_open_rules(path, std::ptr::null()) }
}

/// Opens the databases of one rule set under `path`: see awari.h.
#[no_mangle]
pub unsafe extern "C" fn awari_open_rules(
    path: *const c_char,
    rules: *const c_char,
) -> *mut AwariTb {
    guard(|| {
        let path = unsafe { path_arg(path) }?;
        let tb = if rules.is_null() {
            Tablebase::open(path)?
        } else {
            let name = unsafe { CStr::from_ptr(rules) }.to_string_lossy();
            let rules: Rules = name
                .parse()
                .map_err(|_| input(format!("unknown rule set '{name}' (awari or oware)")))?;
            Tablebase::open_rules(path, rules)?
        };
        Ok(Box::into_raw(Box::new(AwariTb(tb))))
    })
    .unwrap_or(std::ptr::null_mut())
}

/// Closes a tablebase: see awari.h.
#[no_mangle]
pub unsafe extern "C" fn awari_close(tb: *mut AwariTb) {
    let _ = guard(|| {
        if !tb.is_null() {
            drop(unsafe { Box::from_raw(tb) });
        }
        Ok(())
    });
}

/// The value of a position: see awari.h.
#[no_mangle]
pub unsafe extern "C" fn awari_probe(
    tb: *const AwariTb,
    counts: *const u8,
    n: usize,
    margin: *mut c_int,
) -> c_int {
    guard(|| {
        if margin.is_null() {
            return Err(input("margin is NULL"));
        }
        let (tb, pos) = unsafe { position_arg(tb, counts, n) }?;
        let v = tb.probe(&pos)?;
        unsafe { *margin = c_int::from(v.margin()) };
        Ok(AWARI_OK)
    })
    .unwrap_or_else(|c| c)
}

/// The value of a position and of each legal move: see awari.h.
#[no_mangle]
pub unsafe extern "C" fn awari_moves(
    tb: *const AwariTb,
    counts: *const u8,
    n: usize,
    out: *mut AwariMove,
    cap: usize,
    len: *mut usize,
    value: *mut c_int,
) -> c_int {
    guard(|| {
        if len.is_null() || value.is_null() {
            return Err(input("len or value is NULL"));
        }
        if out.is_null() && cap > 0 {
            return Err(input("out is NULL but cap is not 0"));
        }
        let (tb, pos) = unsafe { position_arg(tb, counts, n) }?;
        let a = tb.moves(&pos)?;
        unsafe {
            *len = a.moves.len();
            *value = c_int::from(a.value);
        }
        if a.moves.len() > cap {
            return Err(input(format!(
                "the position has {} moves but out holds {cap} (AWARI_MAX_MOVES always suffices)",
                a.moves.len()
            )));
        }
        for (i, m) in a.moves.iter().enumerate() {
            let m = AwariMove {
                pit: m.pit,
                value: m.value,
                captured: m.captured,
                ends_game: u8::from(m.ends_game),
            };
            unsafe { out.add(i).write(m) };
        }
        Ok(AWARI_OK)
    })
    .unwrap_or_else(|c| c)
}

/// The distance to conversion of a position: see awari.h.
#[no_mangle]
pub unsafe extern "C" fn awari_distance(
    tb: *const AwariTb,
    counts: *const u8,
    n: usize,
    plies: *mut c_int,
) -> c_int {
    guard(|| {
        if plies.is_null() {
            return Err(input("plies is NULL"));
        }
        let (tb, pos) = unsafe { position_arg(tb, counts, n) }?;
        let d = tb.probe_distance(&pos)?;
        unsafe { *plies = d.map_or(0, c_int::from) };
        Ok(AWARI_OK)
    })
    .unwrap_or_else(|c| c)
}

/// The move perfect play makes: see awari.h.
#[no_mangle]
pub unsafe extern "C" fn awari_best_move(
    tb: *const AwariTb,
    counts: *const u8,
    n: usize,
    pit: *mut c_int,
) -> c_int {
    guard(|| {
        if pit.is_null() {
            return Err(input("pit is NULL"));
        }
        let (tb, pos) = unsafe { position_arg(tb, counts, n) }?;
        let m = tb.best_move(&pos)?;
        unsafe { *pit = m.map_or(-1, c_int::from) };
        Ok(AWARI_OK)
    })
    .unwrap_or_else(|c| c)
}

/// The message of this thread's last failure: see awari.h.
#[no_mangle]
pub extern "C" fn awari_last_error() -> *const c_char {
    LAST_ERROR.with(|e| e.borrow().as_ptr())
}
