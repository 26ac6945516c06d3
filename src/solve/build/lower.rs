//! The finished levels a random forward pass reads, held in memory between levels.

use std::path::Path;

use crate::db::layout::Expect;
use crate::db::source::LevelSource;
use crate::db::store::{LevelStack, LevelValues};
use crate::error::{Error, Result};
use crate::game::index::Index;
use crate::game::rules::Rules;
use crate::game::scan::lowest_captured_level;
use crate::util::HugeBuf;

/// The finished levels a random forward pass reads, in anonymous memory in huge pages: a
/// level just built keeps the memory its solver state had (`State::into_values`); one
/// found on disk is read into such memory from its file (raw, or packed and decompressed)
/// the first time a level needs it. Through the files' maps (4 KiB pages) nearly every
/// random read of a lower level also missed the TLB. A level whose state spills lets the
/// level below it go before its forward pass (which reads levels up to two below) and all
/// the others after it; the next level reads them again.
#[derive(Default)]
pub(super) struct LowerInMemory {
    /// Level `m`, or `None` when not held.
    levels: Vec<Option<HugeBuf>>,
}

impl LowerInMemory {
    /// Holds every level that level `n` reads (from the lowest a capture reaches to `n -
    /// 2`), from the files in `dir`, or from `done` for a level it holds decompressed;
    /// lets go of the levels below those.
    pub(super) fn fill(
        &mut self,
        n: usize,
        index: &Index,
        dir: &Path,
        rules: Rules,
        done: &LevelStack,
    ) -> Result<()> {
        let first = lowest_captured_level(index.pits_per_side(), n);
        self.levels.resize_with(self.levels.len().max(n), || None);
        for m in 0..first {
            self.levels[m] = None;
        }
        for m in first..n.saturating_sub(1) {
            if self.levels[m].is_some() {
                continue;
            }
            let len = index.level_size(m) as usize;
            let mut buf = HugeBuf::zeroed(len).map_err(|e| {
                Error::Resources(format!("cannot allocate {len} bytes for level {m}: {e}"))
            })?;
            match done.get(m) {
                Some(LevelValues::Owned(v)) => buf.copy_from_slice(v),
                _ => {
                    let want = Expect::level(rules, index, m);
                    LevelSource::open_required(dir, &want, index.max_seeds())?
                        .read_parallel(&mut buf)?
                }
            }
            self.levels[m] = Some(buf);
        }
        Ok(())
    }

    /// The values of the levels below `n` as a random forward pass reads them: the
    /// levels held, and empty slices for the others, which it never reads.
    pub(super) fn below(&self, n: usize) -> Vec<&[u8]> {
        (0..n)
            .map(|m| match self.levels.get(m) {
                Some(Some(buf)) => &buf[..],
                _ => &[][..],
            })
            .collect()
    }

    /// Holds the values of level `n`, just built.
    pub(super) fn keep(&mut self, n: usize, values: HugeBuf) {
        self.levels
            .resize_with(self.levels.len().max(n + 1), || None);
        self.levels[n] = Some(values);
    }

    /// Bytes held of the levels `range`.
    pub(super) fn held(&self, range: &std::ops::Range<usize>) -> u64 {
        range
            .clone()
            .filter_map(|m| self.levels.get(m)?.as_ref())
            .map(|b| b.len() as u64)
            .sum()
    }

    /// Lets level `m` go, if held.
    pub(super) fn let_go(&mut self, m: usize) {
        if let Some(level) = self.levels.get_mut(m) {
            *level = None;
        }
    }

    /// Lets every level go.
    pub(super) fn release(&mut self) {
        self.levels.iter_mut().for_each(|l| *l = None);
    }
}
