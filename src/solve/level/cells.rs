//! The memory of a solver state: bytes that the threads of a pass read and update as
//! atomics, and that the state reads and writes as plain bytes between passes (spilled to
//! a file, read back, turned into the level's values).

use std::fs::File;
use std::io::Write;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, AtomicU8};

use crate::util::{read_exact_at_parallel, HugeBuf};

/// Zeroed bytes in anonymous memory, asked for huge pages (the backward pass reads them at
/// random, and with 4 KiB pages nearly every such read would also miss the TLB), owned by
/// this type alone.
///
/// Every view of the bytes is made from `ptr`, taken once from a mutable borrow of the
/// buffer; the buffer is not dereferenced again until [`Cells::into_buf`] gives it up. An
/// atomic view ([`Cells::atomics`]) borrows `&self`, a plain one ([`Cells::bytes_mut`])
/// borrows `&mut self`: a shared and a mutable view of the same bytes never coexist, and
/// while threads share the cells every access to a byte is atomic (or, in
/// [`Cells::write_to`], a plain read of bytes no thread touches meanwhile).
pub(crate) struct Cells {
    /// Owns the mapping; not dereferenced while `ptr` is in use.
    buf: HugeBuf,
    /// The first of `len` bytes of `buf`, from `as_mut_ptr`: the only way to them.
    ptr: *mut u8,
    len: usize,
}

// SAFETY: `Cells` owns its bytes as a `Box<[AtomicU8]>` would: `&Cells` gives only atomic
// access (and `write_to`'s plain reads, whose caller promises no concurrent access), and
// plain mutable access needs `&mut Cells`. The raw pointer is what keeps the compiler from
// deriving these.
unsafe impl Send for Cells {}
// SAFETY: as for `Send`.
unsafe impl Sync for Cells {}

impl Cells {
    /// `len` zero bytes.
    pub(crate) fn zeroed(len: usize) -> std::io::Result<Cells> {
        let mut buf = HugeBuf::zeroed(len)?;
        let ptr = buf.as_mut_ptr();
        Ok(Cells { buf, ptr, len })
    }

    /// Bytes held.
    #[inline(always)]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The bytes as atomics, for the threads of a pass.
    #[inline(always)]
    pub(crate) fn atomics(&self) -> &[AtomicU8] {
        // SAFETY: `ptr` points to `len` bytes that live as long as `self` (the mapping is
        // owned by `buf`, never moved or unmapped before `self` is dropped); `AtomicU8` has
        // the size and alignment of `u8`. While this shared borrow lives no `&mut [u8]` of
        // the bytes exists (`bytes_mut` needs `&mut self`), so all access through it is
        // atomic.
        unsafe { std::slice::from_raw_parts(self.ptr as *const AtomicU8, self.len) }
    }

    /// The bytes as atomic 64-bit words, for the threads of a pass over a state kept in
    /// words (the lean state's two bits a position). A state uses one of the two atomic
    /// views only, never both: mixed-size atomic accesses to the same bytes are not allowed.
    #[inline(always)]
    pub(crate) fn words(&self) -> &[AtomicU64] {
        // SAFETY: `ptr` is the start of an anonymous map, aligned to a page, more than a
        // word needs; the `len / 8` whole words lie within the `len` live bytes (see
        // `atomics`), and `AtomicU64` has the size of `u64`. While this shared borrow lives no `&mut [u8]` of the bytes exists, so
        // all access through it is atomic.
        unsafe { std::slice::from_raw_parts(self.ptr as *const AtomicU64, self.len / 8) }
    }

    /// The address of byte `i`, for a prefetch, which never faults and reads nothing: no
    /// view of the bytes and no bounds check (a checked byte taken only to prefetch it was
    /// 2 % of a build's instructions). Safe: the address is never dereferenced.
    #[inline(always)]
    pub(crate) fn addr(&self, i: usize) -> *const u8 {
        self.ptr.wrapping_add(i)
    }

    /// The bytes as plain bytes, between passes.
    pub(crate) fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: `ptr` points to `len` live bytes (see `atomics`); `&mut self` means no
        // atomic view and no other plain view is alive, so this one is unique.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }

    /// Writes the bytes `range` to `file`, then gives their memory back to the kernel: they
    /// read as zeros until written again. `range` starts at a page boundary.
    ///
    /// # Safety
    /// No thread may read or write the bytes of `range` meanwhile (the others may be in
    /// use).
    pub(crate) unsafe fn write_to(
        &self,
        range: Range<usize>,
        file: &mut File,
    ) -> std::io::Result<()> {
        assert!(range.end <= self.len);
        // SAFETY: in bounds (checked above) of the bytes `ptr` points to; by the caller's
        // promise nothing writes them while this plain view lives, and it is dropped before
        // the memory is given back below.
        let raw = unsafe { std::slice::from_raw_parts(self.ptr.add(range.start), range.len()) };
        file.write_all(raw)?;
        // SAFETY: anonymous memory, which reads as zeros after; nothing uses these bytes
        // meanwhile (the caller's promise) and no view of them is left.
        unsafe { self.buf.discard_shared(range) };
        Ok(())
    }

    /// Reads every byte from `file`, from its start.
    pub(crate) fn read_from(&mut self, file: &File) -> std::io::Result<()> {
        read_exact_at_parallel(file, 0, self.bytes_mut())
    }

    /// The buffer, its first `len` bytes kept and the memory of the pages after them given
    /// back.
    pub(crate) fn into_buf(self, len: usize) -> HugeBuf {
        // `ptr` dies with `self`: from here the buffer is reached through itself again.
        let mut buf = self.buf;
        buf.truncate(len);
        buf
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Seek, SeekFrom};
    use std::sync::atomic::Ordering::Relaxed;

    /// The life of a state's memory: threads update the cells through atomics, one range is
    /// written out while other threads go on with the rest, the bytes are read back and
    /// turned plain, and the buffer is given up with the bytes kept. (Also run under Miri,
    /// which checks that no view of the bytes outlives its borrow.)
    #[test]
    fn atomic_and_plain_views_take_turns() {
        let len = 2 * 4096;
        let mut cells = Cells::zeroed(len).unwrap();
        let (low, high) = (0..4096, 4096..len);
        std::thread::scope(|s| {
            for k in 0..2u8 {
                let cells = &cells;
                s.spawn(move || {
                    for i in (k as usize..len).step_by(2) {
                        cells.atomics()[i].fetch_add(i as u8 ^ k, Relaxed);
                    }
                });
            }
        });
        let mut file = tempfile::tempfile().unwrap();
        std::thread::scope(|s| {
            let cells = &cells;
            s.spawn(|| {
                for c in &cells.atomics()[high.clone()] {
                    c.fetch_add(1, Relaxed);
                }
            });
            // SAFETY: the other thread touches only `high`.
            unsafe { cells.write_to(low.clone(), &mut file).unwrap() };
        });
        // Written out, the low bytes read as zeros (but under Miri, which keeps them); the
        // high ones went on.
        let want = |i: usize| i as u8 ^ (i % 2) as u8;
        let zeros = cells.atomics()[low.clone()]
            .iter()
            .all(|c| c.load(Relaxed) == 0);
        assert!(zeros || cfg!(miri));
        for i in high.clone() {
            assert_eq!(cells.atomics()[i].load(Relaxed), want(i).wrapping_add(1));
        }
        let mut written = Vec::new();
        file.seek(SeekFrom::Start(0)).unwrap();
        file.read_to_end(&mut written).unwrap();
        assert_eq!(written, low.clone().map(want).collect::<Vec<_>>());
        // Read back over the whole buffer: the file holds the low bytes only.
        let bytes = cells.bytes_mut();
        bytes[..4096].copy_from_slice(&written);
        bytes[4096] = 7;
        let buf = cells.into_buf(4097);
        assert_eq!(buf.len(), 4097);
        assert_eq!(&buf[..4096], &written[..]);
        assert_eq!(buf[4096], 7);
    }
}
