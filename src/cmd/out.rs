//! What the subcommands print, without `say!`'s panic when the reader has gone
//! (`awari build | head -3`): once a write to standard output fails, what is printed
//! after is dropped and the command's work goes on, so that a build, a pack or a plot is
//! not cut short by whoever reads its report; the exit status is still 0, as `grep |
//! head` gives. A failure other than a closed pipe (a full disk under `> file`) is said
//! when the command is done ([`failure`]). The macros `say!`, `say_part!` and `warn!`
//! (in `cmd/mod.rs`) call these.

use std::fmt::Arguments;
use std::io::{self, ErrorKind, Write};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Mutex;

/// Set once a write to standard output failed.
static GONE: AtomicBool = AtomicBool::new(false);

/// The first failure to write standard output that was not a closed pipe.
static FAILED: Mutex<Option<io::Error>> = Mutex::new(None);

/// Prints `args` and a newline on standard output, unless its reader has gone.
pub fn line(args: Arguments) {
    write(args, true);
}

/// Prints `args` on standard output with no newline, at once (a line finished later).
pub fn part(args: Arguments) {
    write(args, false);
}

fn write(args: Arguments, newline: bool) {
    if GONE.load(Relaxed) {
        return;
    }
    let mut out = io::stdout().lock();
    let written = out.write_fmt(args).and_then(|()| match newline {
        true => out.write_all(b"\n"),
        false => out.flush(),
    });
    if let Err(e) = written {
        GONE.store(true, Relaxed);
        if e.kind() != ErrorKind::BrokenPipe {
            FAILED.lock().unwrap().get_or_insert(e);
        }
    }
}

/// Prints `args` and a newline on standard error; nothing if it cannot.
pub fn warn(args: Arguments) {
    // One write, so that ranks sharing mpirun's stream do not interleave mid-line.
    let _ = io::stderr().write_all(format!("{args}\n").as_bytes());
}

/// The failure to write standard output that is not a closed pipe, if there was one.
pub fn failure() -> Option<io::Error> {
    FAILED.lock().unwrap().take()
}
