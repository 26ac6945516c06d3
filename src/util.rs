//! Small helpers that know nothing of the game or its files: thousands separators, a
//! cache prefetch hint, anonymous memory in huge pages, parallel reads of a large file,
//! the process's peak memory and CPU time, and the progress bar of one level.

/// Positions per parallel task of a pass over a level (the solver's passes, verify, the
/// exit model): large enough to amortise an unrank, small enough to balance two to a few
/// dozen threads.
pub const CHUNK: u64 = 1 << 14;

/// Items per step of a prefetch pipeline (positions whose moves are generated, children
/// or parents whose cells are prefetched, before any of them is read): enough for the
/// random reads of a step to overlap, few enough to stay in the cache.
pub const BATCH: usize = 64;

/// The most worker threads a command takes (`--threads`): more is a typo, not a machine,
/// and would start that many OS threads before any work.
pub const MAX_THREADS: usize = 1024;

/// `--threads` checked: `1..=MAX_THREADS`, or the error line that says so.
pub fn check_threads(threads: usize) -> crate::error::Result<usize> {
    if (1..=MAX_THREADS).contains(&threads) {
        Ok(threads)
    } else {
        Err(crate::error::Error::Input(format!(
            "--threads must be 1..={MAX_THREADS}, not {threads}"
        )))
    }
}

/// A count with thousands separators: 1234567 -> "1,234,567".
pub fn group(x: u64) -> String {
    group_u128(x.into())
}

/// [`group`] of a sum that may pass 2^64: the positions of many levels.
pub fn group_u128(x: u128) -> String {
    let s = x.to_string();
    let mut out = String::new();
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// Asks the CPU to bring `x` into cache. Random reads of the level being built and of
/// lower levels dominate the solver; issuing a batch of them before using any lets their
/// memory latencies overlap.
#[inline(always)]
pub fn prefetch<T>(x: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is only a hint; it never faults, whatever the address.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(x as *const i8)
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = x;
}

/// Zeroed anonymous memory that the kernel is asked to back with huge pages (2 MiB on
/// x86-64): the solver reads its state and the lower levels at random, and with 4 KiB
/// pages nearly every such read would also miss the TLB.
pub struct HugeBuf {
    map: memmap2::MmapMut,
    len: usize,
}

impl HugeBuf {
    /// `len` zero bytes (at least one page is mapped, so that a level of no positions has
    /// a buffer too).
    pub fn zeroed(len: usize) -> std::io::Result<HugeBuf> {
        let map = memmap2::MmapMut::map_anon(len.max(1))?;
        // (Miri, which runs the unit tests of the state's memory, has no madvise.)
        #[cfg(all(target_os = "linux", not(miri)))]
        let _ = map.advise(memmap2::Advice::HugePage);
        Ok(HugeBuf { map, len })
    }

    /// Keeps the first `len` bytes and gives the memory of whole pages after them back to
    /// the kernel.
    pub fn truncate(&mut self, len: usize) {
        if len >= self.len {
            return;
        }
        self.len = len;
        let from = len.next_multiple_of(4096);
        if from < self.map.len() {
            self.discard(from..self.map.len());
        }
    }

    /// Gives the memory of the bytes `range` (from a page boundary) back to the kernel:
    /// they read as zeros after.
    pub fn discard(&mut self, range: std::ops::Range<usize>) {
        // SAFETY: slices of the buffer borrow `self`, which is borrowed mutably here.
        unsafe { self.discard_shared(range) }
    }

    /// [`HugeBuf::discard`] through a shared borrow, for a buffer whose other bytes
    /// threads go on using meanwhile.
    ///
    /// # Safety
    /// Nothing may read or write the bytes `range` meanwhile.
    pub unsafe fn discard_shared(&self, range: std::ops::Range<usize>) {
        // SAFETY: anonymous memory, which reads as zeros after; the caller makes sure no
        // reference to these bytes is in use. (Under Miri, which has no madvise, the bytes
        // are kept: nothing reads them before they are written again.)
        #[cfg(not(miri))]
        let _ = unsafe {
            self.map.unchecked_advise_range(
                memmap2::UncheckedAdvice::DontNeed,
                range.start,
                range.len(),
            )
        };
        #[cfg(miri)]
        let _ = range;
    }
}

impl std::fmt::Debug for HugeBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "HugeBuf({} bytes)", self.len)
    }
}

impl std::ops::Deref for HugeBuf {
    type Target = [u8];
    #[inline]
    fn deref(&self) -> &[u8] {
        &self.map[..self.len]
    }
}

impl std::ops::DerefMut for HugeBuf {
    #[inline]
    fn deref_mut(&mut self) -> &mut [u8] {
        &mut self.map[..self.len]
    }
}

/// Bytes per piece of [`read_exact_at_parallel`].
const READ_PIECE: usize = 1 << 25;

/// A new empty file at `path`, open to read and write, that has no name once open: nothing
/// of it is left behind, even by a kill (a solver's spill and scratch files).
pub(crate) fn unnamed_file(path: &std::path::Path) -> crate::error::Result<std::fs::File> {
    let io = |e| crate::error::Error::io(path, e);
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)
        .map_err(io)?;
    std::fs::remove_file(path).map_err(io)?;
    Ok(file)
}

/// Fills `out` with the bytes of `file` from `offset`, in pieces of 32 MiB that the rayon
/// threads read at once. Large reads here come from the page cache into fresh memory, and
/// one thread alone spends as long faulting in and copying as the others wait: at level
/// 25 the solver's reads of its spill file and of the lower levels took 2 s on one thread.
pub fn read_exact_at_parallel(
    file: &std::fs::File,
    offset: u64,
    out: &mut [u8],
) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use rayon::prelude::*;
        use std::os::unix::fs::FileExt;
        out.par_chunks_mut(READ_PIECE)
            .enumerate()
            .try_for_each(|(k, piece)| file.read_exact_at(piece, offset + (k * READ_PIECE) as u64))
    }
    #[cfg(not(unix))]
    {
        use std::io::{Read, Seek, SeekFrom};
        let mut file = file;
        file.seek(SeekFrom::Start(offset))?;
        file.read_exact(out)
    }
}

/// The peak resident set size of this process in bytes (`VmHWM`), where the OS says.
pub fn peak_rss() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// CPU time this process's threads have had so far, in seconds, where the OS says.
/// Against wall time it tells how much of a timed run the machine gave it: a run whose
/// threads were kept off the cores by other work has much less CPU time than wall time.
pub fn cpu_seconds() -> Option<f64> {
    #[cfg(unix)]
    {
        let mut t = std::mem::MaybeUninit::<libc::timespec>::uninit();
        // SAFETY: `t` is a timespec that clock_gettime fills when it returns 0.
        let t = unsafe {
            if libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, t.as_mut_ptr()) != 0 {
                return None;
            }
            t.assume_init()
        };
        Some(t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9)
    }
    #[cfg(not(unix))]
    None
}

/// A field of `/proc/meminfo` in bytes (`MemTotal`, `MemAvailable`), where the OS says.
fn meminfo(field: &str) -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with(field))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// The machine's memory in bytes, where the OS says.
pub fn memory_total() -> Option<u64> {
    meminfo("MemTotal:")
}

/// The memory a new allocation can have without swapping, in bytes (free memory and
/// page cache the kernel can drop), where the OS says.
pub fn memory_available() -> Option<u64> {
    meminfo("MemAvailable:")
}

/// The bytes an unprivileged writer can still put on the file system that holds `path`
/// (or, if `path` does not exist yet, its nearest existing ancestor).
pub fn disk_available(path: &std::path::Path) -> Option<u64> {
    let mut at = path;
    while !at.exists() {
        at = match at.parent()? {
            p if p.as_os_str().is_empty() => std::path::Path::new("."),
            p => p,
        };
    }
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        let c = std::ffi::CString::new(at.as_os_str().as_bytes()).ok()?;
        let mut st = std::mem::MaybeUninit::<libc::statvfs>::uninit();
        // SAFETY: `c` is a NUL-terminated path and `st` a buffer of the right type that
        // statvfs fills when it returns 0.
        let st = unsafe {
            if libc::statvfs(c.as_ptr(), st.as_mut_ptr()) != 0 {
                return None;
            }
            st.assume_init()
        };
        Some(st.f_bavail as u64 * st.f_frsize as u64)
    }
    #[cfg(not(unix))]
    None
}

/// A byte count for people: "1.5 GB", "380 MB", "4 kB" (powers of 1000).
pub fn bytes(b: u64) -> String {
    let b = b as f64;
    match b {
        _ if b >= 1e12 => format!("{:.2} TB", b / 1e12),
        _ if b >= 1e9 => format!("{:.1} GB", b / 1e9),
        _ if b >= 1e6 => format!("{:.0} MB", b / 1e6),
        _ if b >= 1e3 => format!("{:.0} kB", b / 1e3),
        _ => format!("{b} B"),
    }
}

/// The time of day of `at` in UTC, `HH:MM:SS` (for progress lines; no time zone data).
pub fn clock_utc(at: std::time::SystemTime) -> String {
    let s = at
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
        % 86_400;
    format!("{:02}:{:02}:{:02} UTC", s / 3600, s / 60 % 60, s % 60)
}

/// The progress of one level's work on stderr: phase, positions done, rate and time left.
/// Drawn by indicatif with the `cli` feature (the default); without it, or when not
/// enabled, every call does nothing, so that the library needs no terminal crate.
pub struct LevelBar {
    #[cfg(feature = "cli")]
    bar: indicatif::ProgressBar,
}

impl LevelBar {
    /// A bar of `len` steps for level `n`, starting in `phase`; hidden unless `enabled`.
    pub fn new(enabled: bool, len: u64, n: usize, phase: &str) -> LevelBar {
        #[cfg(feature = "cli")]
        {
            use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
            if !enabled {
                return LevelBar {
                    bar: ProgressBar::hidden(),
                };
            }
            let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
            bar.set_style(
                ProgressStyle::with_template(
                    // A share and times, not positions: the steps of a level are
                    // its positions once per pass (forward and backward), and
                    // indicatif's rate has four decimals.
                    "level {prefix:>3} {msg:14} [{bar:30}] {percent:>3}% {elapsed} eta {eta}",
                )
                .expect("a valid template")
                .progress_chars("=> "),
            );
            bar.set_prefix(n.to_string());
            bar.set_message(phase.to_string());
            LevelBar { bar }
        }
        #[cfg(not(feature = "cli"))]
        {
            let _ = (enabled, len, n, phase);
            LevelBar {}
        }
    }

    /// Advances by `steps`.
    #[inline]
    pub fn inc(&self, steps: u64) {
        #[cfg(feature = "cli")]
        self.bar.inc(steps);
        #[cfg(not(feature = "cli"))]
        let _ = steps;
    }

    /// Starts phase `phase` at step `position`.
    pub fn phase(&self, phase: &str, position: u64) {
        #[cfg(feature = "cli")]
        {
            self.bar.set_message(phase.to_string());
            self.bar.set_position(position);
        }
        #[cfg(not(feature = "cli"))]
        let _ = (phase, position);
    }

    /// Says `text` where the phase is said, the position kept.
    pub fn note(&self, text: &str) {
        #[cfg(feature = "cli")]
        self.bar.set_message(text.to_string());
        #[cfg(not(feature = "cli"))]
        let _ = text;
    }

    /// Removes the bar from the screen.
    pub fn finish(&self) {
        #[cfg(feature = "cli")]
        self.bar.finish_and_clear();
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn group_separates_thousands() {
        assert_eq!(super::group(0), "0");
        assert_eq!(super::group(999), "999");
        assert_eq!(super::group(1000), "1,000");
        assert_eq!(super::group(1234567), "1,234,567");
    }

    #[test]
    fn probes_of_the_machine() {
        // Linux is where the tool runs its builds; these must answer there.
        let total = super::memory_total().unwrap();
        let available = super::memory_available().unwrap();
        assert!(
            total > 100 << 20 && available <= total,
            "{total} {available}"
        );
        let here = super::disk_available(std::path::Path::new(".")).unwrap();
        let below = super::disk_available(std::path::Path::new("no/such/folder")).unwrap();
        assert!(here > 0 && below > 0);
        assert_eq!(super::bytes(1_500_000_000), "1.5 GB");
        assert_eq!(super::bytes(407_296_031_870), "407.3 GB");
        assert_eq!(super::bytes(2_000_000_000_000), "2.00 TB");
    }
}
