//! What a build says when it stops before its end: interrupted (Ctrl-C, SIGINT or
//! SIGTERM) or failed, which levels are finished and kept, and that the same command
//! resumes. A build killed at any point leaves its finished levels valid (each is written
//! to a temporary file and renamed), so saying so is all there is to do.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};

use awari::expert::present_levels;

/// The highest level `m` such that levels `0..=m` are finished (built or kept), or -1.
static FINISHED: AtomicI64 = AtomicI64::new(-1);

/// Level `n` is finished (levels are reported in order).
pub fn finished(n: usize) {
    FINISHED.store(n as i64, Ordering::Relaxed);
}

/// Says in one line what an interrupted build keeps, then exits with 128 + the signal,
/// as the shell does for a process the signal ends.
pub fn install() {
    use std::io::IsTerminal;
    TERMINAL.store(std::io::stderr().is_terminal(), Ordering::Relaxed);
    // SAFETY: the handler calls only async-signal-safe functions (write, _exit) on a
    // message made on its own stack.
    unsafe {
        libc::signal(libc::SIGINT, said as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, said as *const () as libc::sighandler_t);
    }
}

/// Whether standard error is a terminal (asked before any signal: the handler may not).
static TERMINAL: AtomicBool = AtomicBool::new(false);

extern "C" fn said(signal: libc::c_int) {
    let mut buf = [0u8; 160];
    let mut len = 0;
    let mut put = |s: &[u8]| {
        let n = s.len().min(buf.len() - len);
        buf[len..len + n].copy_from_slice(&s[..n]);
        len += n;
    };
    // On a terminal, past the `^C` and the progress bar; in a log, no blank line.
    if TERMINAL.load(Ordering::Relaxed) {
        put(b"\n");
    }
    put(b"error: interrupted: ");
    match FINISHED.load(Ordering::Relaxed) {
        m if m < 0 => put(b"no level is finished yet"),
        m => {
            put(b"levels 0..=");
            // The digits of m, without allocating.
            let mut digits = [0u8; 20];
            let mut i = digits.len();
            let mut v = m as u64;
            loop {
                i -= 1;
                digits[i] = b'0' + (v % 10) as u8;
                v /= 10;
                if v == 0 {
                    break;
                }
            }
            put(&digits[i..]);
            put(b" are finished and kept");
        }
    }
    put(b"; run the same command to resume\n");
    // SAFETY: write(2) and _exit(2) are async-signal-safe.
    unsafe {
        libc::write(2, buf.as_ptr().cast(), len);
        libc::_exit(128 + signal);
    }
}

/// The words before the cause of a build that failed: what it keeps in `dir`.
pub fn stopped(dir: &Path) -> String {
    match present_levels(dir) {
        Some(m) => format!(
            "build stopped: levels 0..={m} in {} are finished and kept; run the same command to resume once the cause is mended",
            dir.display()
        ),
        None => format!("build stopped before level 0 was finished in {}", dir.display()),
    }
}
