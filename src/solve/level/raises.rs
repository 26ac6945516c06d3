//! Raises a streamed forward pass keeps on disk for a window of the level it does not
//! hold (the lean state's windows, DESIGN.md section 5.6): the lower levels are streamed
//! and un-captured once, and each later window takes its raises from its file instead of
//! a stream of its own.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rayon::prelude::*;

use super::kind::RAISE_BYTES;
use super::state::{Encoding, State};
use crate::error::{Error, Result};
use crate::util::unnamed_file;

/// Bytes gathered before they are written: few, large writes.
const FLUSH_AT: usize = 1 << 20;

/// Bytes read at once when the raises are applied, by each thread.
const READ_AT_ONCE: usize = RAISE_BYTES << 17;

/// The raises kept for one window, in an unnamed file, appended by any thread.
pub(crate) struct Spilled {
    file: File,
    path: PathBuf,
    /// Raises not written yet, and the bytes written so far.
    tail: Mutex<(Vec<u8>, u64)>,
}

impl Spilled {
    /// An empty one, its file made at `path` and unnamed at once.
    pub(crate) fn new(path: &Path) -> Result<Spilled> {
        Ok(Spilled {
            file: unnamed_file(path)?,
            path: path.to_path_buf(),
            tail: Mutex::new((Vec::new(), 0)),
        })
    }

    /// Appends `raises` (made by [`push_raise`]); written once enough have gathered.
    pub(crate) fn append(&self, raises: &mut Vec<u8>) -> Result<()> {
        if raises.is_empty() {
            return Ok(());
        }
        let mut tail = self.tail.lock().unwrap();
        tail.0.append(raises);
        if tail.0.len() < FLUSH_AT {
            return Ok(());
        }
        let full = std::mem::take(&mut tail.0);
        let at = tail.1;
        tail.1 += full.len() as u64;
        // Written outside the lock: the others append meanwhile.
        drop(tail);
        self.file
            .write_all_at(&full, at)
            .map_err(|e| Error::io(&self.path, e))
    }

    /// Raises every position of `state` (window `base..`) that a kept raise names, in
    /// parallel; the file is then let go.
    pub(crate) fn apply<E: Encoding>(self, state: &State<E>) -> Result<()> {
        let (rest, at) = self.tail.into_inner().unwrap();
        self.file
            .write_all_at(&rest, at)
            .map_err(|e| Error::io(&self.path, e))?;
        let len = at + rest.len() as u64;
        drop(rest);
        let (file, path) = (&self.file, &self.path);
        (0..len.div_ceil(READ_AT_ONCE as u64))
            .into_par_iter()
            .try_for_each_init(Vec::new, |buf: &mut Vec<u8>, p| {
                let first = p * READ_AT_ONCE as u64;
                buf.resize((len - first).min(READ_AT_ONCE as u64) as usize, 0);
                file.read_exact_at(buf, first)
                    .map_err(|e| Error::io(path, e))?;
                for raise in buf.chunks_exact(RAISE_BYTES) {
                    let (i, x) = raised(raise);
                    state.raise(i as usize, x);
                }
                Ok(())
            })
    }
}

/// Appends to `out` the raise of the position at offset `i` of its window to `x`: 6 bytes,
/// the offset's 40 bits (far above the largest level's 2^38 positions) and the value.
#[inline(always)]
pub(crate) fn push_raise(out: &mut Vec<u8>, i: u64, x: i8) {
    let word = i | (x as u8 as u64) << 40;
    out.extend_from_slice(&word.to_le_bytes()[..RAISE_BYTES]);
}

/// The offset and value of a raise [`push_raise`] wrote.
#[inline(always)]
fn raised(raise: &[u8]) -> (u64, i8) {
    let mut word = [0u8; 8];
    word[..RAISE_BYTES].copy_from_slice(raise);
    let word = u64::from_le_bytes(word);
    (word & ((1 << 40) - 1), (word >> 40) as u8 as i8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raises_round_trip() {
        for i in [0, 1, 12_345_678_901, (1 << 40) - 1] {
            for x in [-128, -48, -1, 0, 1, 47, 127i8] {
                let mut out = vec![9];
                push_raise(&mut out, i, x);
                assert_eq!(out.len(), 1 + RAISE_BYTES);
                assert_eq!(raised(&out[1..]), (i, x));
            }
        }
    }
}
