//! Verifying a built database: headers and checksums, the local equation of DESIGN.md
//! section 2 on every stored position, and (`deep`) a second, independent solution of
//! every level compared byte for byte.
//!
//! The local check recomputes `v(p) = max over legal moves (captured - v(child))` (game
//! ends and forced moves as in the rules) from the stored values of the children: the
//! lower levels for captures, the same level for in-level moves. It catches a damaged
//! byte and most solver bugs, but not a wrong value that is consistent round a cycle:
//! that equation has other solutions than the true values.
//!
//! The deep check solves each level again by the threshold attractors of DESIGN.md section
//! 2(a), every threshold at once, by forward sweeps whose values come only from
//! [`legal_moves`] (un-moves only choose which positions to sweep again): no counters,
//! nothing of the builder's solver (`solve/level.rs`). For a position `p` let `w(p)` be the
//! largest `t >= 1` such that the side to move can force a capture or game end worth
//! `>= t` in finitely many moves (0 if none), and `l(p)` likewise for the opponent
//! forcing `<= -t`. With `b(p)` the best exit (capture or game end) and `c` the in-level
//! children, `(w, l)` is the least fixpoint of
//!
//! ```text
//! w(p) = max(b(p), 0, max_c l(c))          l(p) = max(0, min(-b(p), min_c w(c)))
//! ```
//!
//! and the value is `w - l` (never both non-zero). The operator is monotone, so sweeping
//! it in place from zero, in any order and in parallel, climbs to the least fixpoint; it
//! is reached when a whole sweep changes nothing. One signed byte per position holds
//! `w` or `-l`, another the exit `b`: two bytes per position.

use std::ops::RangeInclusive;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI8, AtomicU64, Ordering::Relaxed};
use std::time::Instant;

use rayon::prelude::*;

use crate::db::layout::{build_command, db_dir, missing_level, present_levels, Expect};
use crate::db::model::Model;
use crate::db::raw::Check;
use crate::db::store::{has_exit_model, LevelFile, LevelSource, Values};
use crate::error::{Error, Result};
use crate::game::index::Index;
use crate::game::rules::{for_each_unmove, legal_moves, Board, Rules, MAX_PITS};
use crate::game::scan::{lowest_captured_level, scan_uncaptures, Stream, NO_EXIT};
use crate::util::{prefetch, HugeBuf, LevelBar, BATCH, CHUNK};

/// Mismatches kept per level and check (the first ones in index order).
pub const SAMPLES: usize = 5;

/// What to verify.
#[derive(Clone, Debug)]
pub struct VerifyOptions {
    /// The root folder (as given to `awari build --dir`).
    pub root: PathBuf,
    /// The rule set of the database to check.
    pub rules: Rules,
    /// Pits per side of the database to check.
    pub pits: usize,
    /// The levels to check; `None`: every level present, from 0 up to the first gap.
    pub levels: Option<RangeInclusive<usize>>,
    /// Also solve each level again by the independent method and compare.
    pub deep: bool,
    /// Draw progress bars on stderr.
    pub progress: bool,
}

/// One stored position whose value is not what the check computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mismatch {
    /// The position's index in its level.
    pub index: u64,
    /// The position.
    pub board: Board,
    /// The value the level holds for it (resolved, for a pack with the exit model).
    pub stored: i8,
    /// The value from its moves (local check) or from the independent solution (deep).
    pub computed: i8,
}

/// Mismatches of one check of one level.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Mismatches {
    /// How many positions are wrong, in all.
    pub count: u64,
    /// The first few, in index order (at most 5).
    pub first: Vec<Mismatch>,
}

impl Mismatches {
    fn push(&mut self, m: Mismatch) {
        self.count += 1;
        if self.first.len() < SAMPLES {
            self.first.push(m);
        }
    }

    fn merge(mut self, other: Mismatches) -> Mismatches {
        self.count += other.count;
        self.first.extend(other.first);
        self.first.sort_by_key(|m| m.index);
        self.first.truncate(SAMPLES);
        self
    }
}

/// The deep check of one level.
#[derive(Clone, Debug)]
pub struct DeepCheck {
    /// Sweeps until nothing changed (the last one changes nothing).
    pub sweeps: u32,
    /// Positions whose stored value differs from the independent solution.
    pub mismatches: Mismatches,
    /// Wall time of the deep check alone, in seconds.
    pub seconds: f64,
}

/// The verdict on one level.
#[derive(Clone, Debug)]
pub struct LevelCheck {
    /// The level.
    pub seeds: usize,
    /// Positions in the level.
    pub positions: u64,
    /// `None` if the payload checksum matches the header, else what is wrong.
    pub checksum_problem: Option<String>,
    /// Positions whose stored value is not the best of its moves (the local check).
    pub mismatches: Mismatches,
    /// Wall time of the local check, in seconds (reading and checksums not included).
    pub seconds: f64,
    /// The deep check, if asked for.
    pub deep: Option<DeepCheck>,
    /// `None` if the level's capture moves and the un-captures of the levels below agree
    /// (the two ways the local check can find the captures), else what differs: a fault
    /// of the verifier, not of the level.
    pub capture_problem: Option<String>,
}

impl LevelCheck {
    /// Whether the level passed: its checksums match and no check found a wrong value.
    pub fn ok(&self) -> bool {
        self.checksum_problem.is_none()
            && self.capture_problem.is_none()
            && self.mismatches.count == 0
            && self.deep.as_ref().is_none_or(|d| d.mismatches.count == 0)
    }
}

/// Parses a level range: `A..=B`, `A..B` (B excluded) or a single level `N`.
pub fn parse_levels(s: &str) -> std::result::Result<RangeInclusive<usize>, String> {
    let bad = || format!("--levels '{s}': expected a range of levels like 0..=20, or one level");
    let num = |t: &str| t.trim().parse::<usize>().map_err(|_| bad());
    let (a, b) = if let Some((a, b)) = s.split_once("..=") {
        (num(a)?, num(b)?)
    } else if let Some((a, b)) = s.split_once("..") {
        let b = num(b)?;
        if b == 0 {
            return Err(format!("--levels '{s}': the range is empty"));
        }
        (num(a)?, b - 1)
    } else {
        let n = num(s)?;
        (n, n)
    };
    if a > b {
        return Err(format!(
            "--levels '{s}': the first level ({a}) is above the last ({b})"
        ));
    }
    Ok(a..=b)
}

/// Verifies the levels asked for, calling `report` after each. Fails (an `Err`) only
/// when a level cannot be read at all: missing, truncated, of another database, or a
/// damaged level below the range, which the checked levels read. Checksum and value
/// mismatches of the checked levels are in the reports: see [`LevelCheck::ok`].
pub fn verify(
    opts: &VerifyOptions,
    mut report: impl FnMut(&LevelCheck),
) -> Result<Vec<LevelCheck>> {
    let dir = db_dir(&opts.root, opts.rules, opts.pits);
    let range = match &opts.levels {
        Some(r) => r.clone(),
        None => {
            let top = present_levels(&dir).ok_or_else(|| {
                Error::Input(format!(
                    "no levels in {}; build some first, e.g. `{}`",
                    dir.display(),
                    build_command(&opts.root, opts.rules, opts.pits, 16)
                ))
            })?;
            0..=top
        }
    };
    let (first, last) = (*range.start(), *range.end());
    let index = Index::new(opts.pits, last)?;
    if !has_exit_model(&dir) {
        return verify_streamed(opts, &dir, first, last, &index, report);
    }
    // A level packed with the exit model is read with every level below it in memory:
    // the whole database is held, raw levels mapped, packed ones decompressed.
    let mut levels = Vec::with_capacity(last + 1);
    // What is wrong with the checksums of each checked level (a damaged block named).
    let mut checksum_problems: Vec<Option<String>> = Vec::with_capacity(last + 1);
    for n in 0..=last {
        let want = Expect::level(opts.rules, &index, n);
        let Some(level) = LevelFile::open(&dir, &want, Check::HeaderOnly)? else {
            return Err(missing_level(&dir, opts.rules, opts.pits, n, last));
        };
        // Levels below the range are trusted inputs: refuse them if damaged. Checked
        // levels report a bad checksum or block and still get their values checked, so
        // that the damaged positions are named.
        let below: Vec<&[u8]> = levels.iter().map(Values::bytes).collect();
        let mut problem = None;
        let values = match level {
            level if n < first => level.into_checked_values(&below)?,
            LevelFile::Raw(l) => {
                problem = l.check_checksum().err().map(Error::into_problem);
                Values::Mapped(l)
            }
            LevelFile::Packed(l) => {
                let mut bytes = vec![0u8; l.header().positions as usize];
                let problems = l.decode_into(&mut bytes);
                // With the exit model, the values come from the levels below: a damaged
                // one below makes this one's checksum fail too, so say which.
                l.resolve(&below, &mut bytes)?;
                if !problems.is_empty() {
                    let all: Vec<String> = problems.iter().map(|p| l.describe(p)).collect();
                    problem = Some(all.join("; "));
                } else if let Err(e) = l.check_payload(&bytes) {
                    let e = e.into_problem();
                    let damaged_below = (first..n).find(|&m| checksum_problems[m].is_some());
                    problem = Some(match damaged_below {
                        Some(m) if l.model() == Model::Exits => format!(
                            "{e} (packed with the exit model, resolved from level {m}, which is damaged)"
                        ),
                        _ => e,
                    });
                }
                Values::Owned(bytes.into_boxed_slice())
            }
        };
        drop(below);
        levels.push(values);
        checksum_problems.push(problem);
    }
    let bytes: Vec<&[u8]> = levels.iter().map(|l| l.bytes()).collect();
    let mut out = Vec::new();
    for (n, checksum_problem) in checksum_problems.into_iter().enumerate().skip(first) {
        let t0 = Instant::now();
        let ctx = Ctx {
            rules: opts.rules,
            index: &index,
            n,
            levels: &bytes,
        };
        let bar = LevelBar::new(opts.progress, index.level_size(n), n, "local");
        let mismatches = ctx.local_check(&bar);
        let seconds = t0.elapsed().as_secs_f64();
        let deep = opts.deep.then(|| {
            let t0 = Instant::now();
            bar.phase("deep", 0);
            let (sweeps, mismatches) = ctx.deep_check(&bar, None);
            DeepCheck {
                sweeps,
                mismatches,
                seconds: t0.elapsed().as_secs_f64(),
            }
        });
        bar.finish();
        let r = LevelCheck {
            seeds: n,
            positions: index.level_size(n),
            checksum_problem,
            mismatches,
            seconds,
            deep,
            capture_problem: None,
        };
        report(&r);
        out.push(r);
    }
    Ok(out)
}

/// [`verify`] with the lower levels read as streams: each checked level is held in
/// memory (a byte per position, and two bits: some move gives the stored value, some
/// move gives more), its in-level moves read from it, and its captures valued by the
/// un-captures of the levels below read in index order from their files. So checking
/// level `n` holds 1.25 bytes per position of level `n` and no lower level. The capture
/// moves that the level's own positions generate and the un-captures that the levels
/// below give must be the same (parent, child) pairs: a hash of each pair summed both ways
/// must agree, so that a fault in either generator cannot hide a wrong value.
fn verify_streamed(
    opts: &VerifyOptions,
    dir: &Path,
    first: usize,
    last: usize,
    index: &Index,
    mut report: impl FnMut(&LevelCheck),
) -> Result<Vec<LevelCheck>> {
    let p = index.pits_per_side();
    let expect = |m: usize| Expect::level(opts.rules, index, m);
    // Every level needed is there before anything is checked.
    let lowest = lowest_captured_level(p, first);
    for m in lowest..=last {
        if LevelFile::open(dir, &expect(m), Check::HeaderOnly)?.is_none() {
            return Err(missing_level(dir, opts.rules, opts.pits, m, last));
        }
    }
    // The levels below the range that the checked ones read are trusted inputs: refuse
    // them if damaged.
    for m in lowest..first {
        let source = open_source(dir, opts, &expect(m), last)?;
        source.check_checksum_with(|_| {})?;
    }
    let mut out = Vec::new();
    for n in first..=last {
        let size = index.level_size(n);
        let source = open_source(dir, opts, &expect(n), last)?;
        let mut values = HugeBuf::zeroed(size as usize).map_err(|e| {
            Error::Resources(format!("cannot allocate {size} bytes for level {n}: {e}"))
        })?;
        let checksum_problem = source.read_all(&mut values)?;
        drop(source);
        let below = lowest_captured_level(p, n);
        let lower = Below {
            first: below,
            sources: (below..n.saturating_sub(1))
                .map(|m| open_source(dir, opts, &expect(m), last))
                .collect::<Result<_>>()?,
        };
        let t0 = Instant::now();
        let bar = LevelBar::new(opts.progress, 2 * size, n, "local");
        let check = Streamed {
            rules: opts.rules,
            index,
            n,
            values: &values,
            lower: &lower,
        };
        let (mismatches, edges) = check.local(&bar)?;
        let seconds = t0.elapsed().as_secs_f64();
        let deep = if opts.deep {
            let t0 = Instant::now();
            bar.phase("deep", 0);
            let exits = check.exits()?;
            let levels: Vec<&[u8]> = (0..=n)
                .map(|m| if m == n { &values[..] } else { &[][..] })
                .collect();
            let ctx = Ctx {
                rules: opts.rules,
                index,
                n,
                levels: &levels,
            };
            let (sweeps, mismatches) = ctx.deep_check(&bar, Some(exits));
            Some(DeepCheck {
                sweeps,
                mismatches,
                seconds: t0.elapsed().as_secs_f64(),
            })
        } else {
            None
        };
        bar.finish();
        let r = LevelCheck {
            seeds: n,
            positions: size,
            checksum_problem,
            mismatches,
            seconds,
            deep,
            capture_problem: edges,
        };
        report(&r);
        out.push(r);
    }
    Ok(out)
}

/// Level `want.seeds` of the database as a stream (the database holds no level packed
/// with the exit model: [`verify`] reads those otherwise).
fn open_source(
    dir: &Path,
    opts: &VerifyOptions,
    want: &Expect,
    last: usize,
) -> Result<LevelSource> {
    LevelSource::open(dir, want)?
        .ok_or_else(|| missing_level(dir, opts.rules, opts.pits, want.seeds, last))
}

/// The levels a checked level reads, as streams: level `m` at `m - first`.
struct Below {
    first: usize,
    sources: Vec<LevelSource>,
}

impl Stream for Below {
    fn read(&self, seeds: usize, start: u64, out: &mut [u8]) -> Result<()> {
        self.sources[seeds - self.first].read(start, out)
    }
}

impl Below {
    /// The value of one position of level `m`.
    fn value(&self, m: usize, i: u64) -> Result<i8> {
        let mut v = [0u8];
        self.read(m, i, &mut v)?;
        Ok(v[0] as i8)
    }
}

/// A hash of a capture: parent `q` of the level checked, child `c` of level `m`. Summed
/// over the captures found each way, it must agree.
#[inline]
fn edge_hash(q: u64, m: usize, c: u64) -> u64 {
    fn mix(mut x: u64) -> u64 {
        // splitmix64's finaliser.
        x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        x ^ (x >> 31)
    }
    mix(q ^ mix(c ^ (m as u64) << 57))
}

/// One level checked with its lower levels read as streams.
struct Streamed<'a> {
    rules: Rules,
    index: &'a Index,
    n: usize,
    /// The level's values.
    values: &'a [u8],
    lower: &'a Below,
}

impl Streamed<'_> {
    /// The local check: every stored value against its moves. First the level's own
    /// positions: game ends and forced moves, and in-level moves from the stored values;
    /// a position whose moves so far give more than it holds is wrong (`bad`), one whose
    /// moves give exactly that is right so far (`ok`). Then the captures, from the levels
    /// below by un-captures, the same way. The wrong positions are `bad` or not `ok`.
    /// Returns the mismatches, and a problem if the two ways of finding the captures
    /// disagree.
    fn local(&self, bar: &LevelBar) -> Result<(Mismatches, Option<String>)> {
        let (rules, index, n, values) = (self.rules, self.index, self.n, self.values);
        let size = index.level_size(n);
        let (ok, bad) = (Bits::new(size as usize), Bits::new(size as usize));
        let chunks = size.div_ceil(CHUNK);
        let (forward, moves) = (0..chunks)
            .into_par_iter()
            .map(|c| {
                let start = c * CHUNK;
                let end = (start + CHUNK).min(size);
                let (mut hash, mut count) = (0u64, 0u64);
                let mut board = index.unrank(n, start);
                let mut reads: Vec<(usize, u64)> = Vec::with_capacity(BATCH * MAX_PITS);
                let mut best = [NO_EXIT; BATCH];
                let mut i = start;
                while i < end {
                    let k = ((end - i) as usize).min(BATCH);
                    reads.clear();
                    for (slot, b) in best[..k].iter_mut().enumerate() {
                        let moves = legal_moves(&board, rules);
                        *b = moves.terminal_value.unwrap_or(NO_EXIT);
                        for m in moves.as_slice() {
                            if m.ends_game {
                                *b = n as i8;
                            } else if m.captured > 0 {
                                let c = n - m.captured as usize;
                                hash = hash.wrapping_add(edge_hash(
                                    i + slot as u64,
                                    c,
                                    index.rank_in(&m.child, c),
                                ));
                                count += 1;
                            } else {
                                let ci = index.rank_in(&m.child, n);
                                prefetch(&values[ci as usize]);
                                reads.push((slot, ci));
                            }
                        }
                        if i + (slot as u64) + 1 < end {
                            index.next(&mut board);
                        }
                    }
                    for &(slot, ci) in &reads {
                        best[slot] = best[slot].max(-(values[ci as usize] as i8));
                    }
                    for (slot, &b) in best[..k].iter().enumerate() {
                        let at = i + slot as u64;
                        let v = values[at as usize] as i8;
                        if b > v {
                            bad.set(at);
                        } else if b == v {
                            ok.set(at);
                        }
                    }
                    i += k as u64;
                }
                bar.inc(end - start);
                (hash, count)
            })
            .reduce(|| (0, 0), |a, b| (a.0.wrapping_add(b.0), a.1 + b.1));
        // The captures, from the levels below.
        let back = self.uncaptures(
            Some(bar),
            |q| prefetch(&values[q as usize]),
            |q, x, m, ci| {
                let v = values[q as usize] as i8;
                if x > v {
                    bad.set(q);
                } else if x == v {
                    ok.set(q);
                }
                edge_hash(q, m, ci)
            },
        )?;
        let edges = (back != (forward, moves)).then(|| {
            format!(
                "the level's {moves} capture moves and the {} un-captures of the levels below \
                 disagree (hashes {forward:016x} and {:016x}): a fault of the verifier, please \
                 report it",
                back.1, back.0
            )
        });
        // The wrong positions, the first ones with what their moves give.
        let found = (0..chunks)
            .into_par_iter()
            .map(|c| -> Result<Mismatches> {
                let start = c * CHUNK;
                let end = (start + CHUNK).min(size);
                let mut found = Mismatches::default();
                for i in start..end {
                    if bad.get(i) || !ok.get(i) {
                        let board = index.unrank(n, i);
                        let computed = if found.first.len() < SAMPLES {
                            self.value_of(&board)?
                        } else {
                            0
                        };
                        found.push(Mismatch {
                            index: i,
                            board,
                            stored: values[i as usize] as i8,
                            computed,
                        });
                    }
                }
                Ok(found)
            })
            .try_reduce(Mismatches::default, |a, b| Ok(a.merge(b)))?;
        Ok((found, edges))
    }

    /// What the moves of `board`, a position of the level, give: its value if the values
    /// it reads are right.
    fn value_of(&self, board: &Board) -> Result<i8> {
        let moves = legal_moves(board, self.rules);
        let mut best = moves.terminal_value.unwrap_or(NO_EXIT);
        for m in moves.as_slice() {
            let v = if m.ends_game {
                self.n as i8
            } else if m.captured > 0 {
                let c = self.n - m.captured as usize;
                m.captured as i8 - self.lower.value(c, self.index.rank_in(&m.child, c))?
            } else {
                -(self.values[self.index.rank_in(&m.child, self.n) as usize] as i8)
            };
            best = best.max(v);
        }
        Ok(best)
    }

    /// Every capture into this level, from the levels below read as streams (their
    /// positions in index order, a chunk per task, each handing its value to its parents
    /// by un-captures): `apply(parent, captured - v(child), child level, child)`, with
    /// `touch(parent)` a batch ahead. Returns the sum of what `apply` returned and the
    /// number of captures; advances `bar` by the level's size in all.
    fn uncaptures(
        &self,
        bar: Option<&LevelBar>,
        touch: impl Fn(u64) + Sync,
        apply: impl Fn(u64, i8, usize, u64) -> u64 + Sync,
    ) -> Result<(u64, u64)> {
        let (index, n) = (self.index, self.n);
        let size = index.level_size(n);
        let levels = self.lower.first..n.saturating_sub(1);
        let total: u64 = levels.clone().map(|m| index.level_size(m)).sum();
        let mut sum = (0u64, 0u64);
        for m in levels {
            let len = index.level_size(m);
            let part = (0..len.div_ceil(CHUNK))
                .into_par_iter()
                .map_init(Vec::new, |buf: &mut Vec<u8>, c| -> Result<(u64, u64)> {
                    let start = c * CHUNK;
                    let end = (start + CHUNK).min(len);
                    buf.resize((end - start) as usize, 0);
                    self.lower.read(m, start, buf)?;
                    let (mut got, mut count) = (0u64, 0u64);
                    scan_uncaptures(self.rules, index, n, m, start, buf, &touch, |q, x, ci| {
                        got = got.wrapping_add(apply(q, x, m, ci));
                        count += 1;
                    });
                    if let Some(bar) = bar {
                        bar.inc(
                            ((end - start) as u128 * size as u128 / total.max(1) as u128) as u64,
                        );
                    }
                    Ok((got, count))
                })
                .try_reduce(|| (0, 0), |a, b| Ok((a.0.wrapping_add(b.0), a.1 + b.1)))?;
            sum = (sum.0.wrapping_add(part.0), sum.1 + part.1);
        }
        Ok(sum)
    }

    /// The best exit of every position (game ends, forced moves, captures), for the deep
    /// check: the level's own moves, then the captures by un-captures of the levels below.
    fn exits(&self) -> Result<Vec<AtomicI8>> {
        let (rules, index, n) = (self.rules, self.index, self.n);
        let size = index.level_size(n);
        let exits: Vec<AtomicI8> = (0..size).map(|_| AtomicI8::new(NO_EXIT)).collect();
        (0..size.div_ceil(CHUNK)).into_par_iter().for_each(|c| {
            let start = c * CHUNK;
            let end = (start + CHUNK).min(size);
            let mut board = index.unrank(n, start);
            for i in start..end {
                let moves = legal_moves(&board, rules);
                let mut b = moves.terminal_value.unwrap_or(NO_EXIT);
                if moves.as_slice().iter().any(|m| m.ends_game) {
                    b = n as i8;
                }
                exits[i as usize].store(b, Relaxed);
                if i + 1 < end {
                    index.next(&mut board);
                }
            }
        });
        self.uncaptures(
            None,
            |q| prefetch(&exits[q as usize]),
            |q, x, _, _| {
                exits[q as usize].fetch_max(x, Relaxed);
                0
            },
        )?;
        Ok(exits)
    }
}

/// One level being checked and the levels it reads.
struct Ctx<'a> {
    rules: Rules,
    index: &'a Index,
    n: usize,
    /// The payloads of levels `0..=n` and maybe more.
    levels: &'a [&'a [u8]],
}

/// The expanded moves of a batch of positions: per position its exit value so far and
/// the children still to be read. Fixed arrays: nothing is allocated per position.
struct Batch {
    len: usize,
    /// Index and board per slot.
    at: [u64; BATCH],
    boards: [Board; BATCH],
    /// Best exit (game end, forced move, capture) per slot, `NO_EXIT` if none yet.
    exit: [i8; BATCH],
    /// Children to read: slot, level, seeds captured, index.
    reads: [(u8, u8, u8, u64); BATCH * MAX_PITS],
    nreads: usize,
}

impl Batch {
    fn new(p: usize) -> Batch {
        Batch {
            len: 0,
            at: [0; BATCH],
            boards: [Board::empty(p); BATCH],
            exit: [NO_EXIT; BATCH],
            reads: [(0, 0, 0, 0); BATCH * MAX_PITS],
            nreads: 0,
        }
    }

    fn clear(&mut self) {
        self.len = 0;
        self.nreads = 0;
    }

    fn is_full(&self) -> bool {
        self.len == BATCH
    }
}

/// A bitmap of positions, set concurrently.
struct Bits(Vec<AtomicU64>);

impl Bits {
    fn new(len: usize) -> Bits {
        Bits((0..len.div_ceil(64)).map(|_| AtomicU64::new(0)).collect())
    }

    #[inline]
    fn set(&self, i: u64) {
        let w = &self.0[(i / 64) as usize];
        let bit = 1u64 << (i % 64);
        if w.load(Relaxed) & bit == 0 {
            w.fetch_or(bit, Relaxed);
        }
    }

    #[inline]
    fn get(&self, i: u64) -> bool {
        self.0[(i / 64) as usize].load(Relaxed) & (1u64 << (i % 64)) != 0
    }

    /// Set bits in `start..end` (`start` a multiple of 64).
    fn count(&self, start: u64, end: u64) -> u32 {
        let words = &self.0[(start / 64) as usize..end.div_ceil(64) as usize];
        words.iter().map(|w| w.load(Relaxed).count_ones()).sum()
    }

    fn clear(&self) {
        self.0.par_iter().for_each(|w| w.store(0, Relaxed));
    }
}

impl Ctx<'_> {
    /// Adds `board` (index `i`) to the batch and expands its moves. `captures`: also
    /// queue the children of captures (else only in-level children are queued and
    /// `exit` holds only game ends). In-level children are prefetched from `solving`
    /// if given, else from the stored level.
    #[inline]
    fn add(
        &self,
        board: &Board,
        i: u64,
        captures: bool,
        solving: Option<&[AtomicI8]>,
        batch: &mut Batch,
    ) {
        let n = self.n;
        let slot = batch.len;
        batch.len += 1;
        batch.at[slot] = i;
        batch.boards[slot] = *board;
        let moves = legal_moves(board, self.rules);
        batch.exit[slot] = moves.terminal_value.unwrap_or(NO_EXIT);
        for m in moves.as_slice() {
            if m.ends_game {
                batch.exit[slot] = n as i8;
                continue;
            }
            let c = m.captured as usize;
            if c > 0 && !captures {
                continue;
            }
            let ci = self.index.rank(&m.child);
            match solving {
                Some(s) if c == 0 => prefetch(&s[ci as usize]),
                _ => prefetch(&self.levels[n - c][ci as usize]),
            }
            batch.reads[batch.nreads] = (slot as u8, (n - c) as u8, c as u8, ci);
            batch.nreads += 1;
        }
    }

    fn chunks(&self) -> u64 {
        self.index.level_size(self.n).div_ceil(CHUNK)
    }

    fn bounds(&self, c: u64) -> (u64, u64) {
        let start = c * CHUNK;
        (start, (start + CHUNK).min(self.index.level_size(self.n)))
    }

    /// The local check: every stored value against the values of its children.
    fn local_check(&self, bar: &LevelBar) -> Mismatches {
        let here = self.levels[self.n];
        (0..self.chunks())
            .into_par_iter()
            .map_init(
                || Batch::new(self.index.pits_per_side()),
                |batch, c| {
                    let (start, end) = self.bounds(c);
                    let mut found = Mismatches::default();
                    let mut board = self.index.unrank(self.n, start);
                    let mut i = start;
                    // Batches of consecutive positions: generate every move and
                    // prefetch every child, then read.
                    loop {
                        batch.clear();
                        while !batch.is_full() && i < end {
                            self.add(&board, i, true, None, batch);
                            i += 1;
                            if i < end {
                                self.index.next(&mut board);
                            }
                        }
                        if batch.len == 0 {
                            break;
                        }
                        let mut best = batch.exit;
                        for &(slot, level, c, ci) in &batch.reads[..batch.nreads] {
                            let v = c as i8 - self.levels[level as usize][ci as usize] as i8;
                            let b = &mut best[slot as usize];
                            *b = (*b).max(v);
                        }
                        for (slot, &want) in best[..batch.len].iter().enumerate() {
                            let at = batch.at[slot];
                            let stored = here[at as usize] as i8;
                            if stored != want {
                                found.push(Mismatch {
                                    index: at,
                                    board: batch.boards[slot],
                                    stored,
                                    computed: want,
                                });
                            }
                        }
                    }
                    bar.inc(end - start);
                    found
                },
            )
            .reduce(Mismatches::default, Mismatches::merge)
    }

    /// The deep check: solves the level by in-place sweeps of the attractor operator
    /// (module doc) and compares with the stored values. Returns the rounds and the
    /// mismatches.
    ///
    /// Only the first round evaluates every position. Later rounds evaluate the
    /// predecessors of the positions that changed in the round before (found with the
    /// un-move generator), which is only a schedule: every update applies the operator
    /// by forward moves, so values never pass the least fixpoint, whatever the schedule.
    /// When nothing is left to do, one more full sweep must change nothing: then the
    /// values are a fixpoint not above the least one, so they are the least one. If it
    /// changes something (the schedule missed a position), the rounds go on.
    ///
    /// `known`: the best exit of every position, found already (then no lower level is
    /// read here); else the first sweep finds them from the lower levels.
    fn deep_check(&self, bar: &LevelBar, known: Option<Vec<AtomicI8>>) -> (u32, Mismatches) {
        let size = self.index.level_size(self.n) as usize;
        // b: best exit per position, found in the first sweep unless known. s: w, or -l.
        let given = known.is_some();
        let exits: Vec<AtomicI8> =
            known.unwrap_or_else(|| (0..size).map(|_| AtomicI8::new(NO_EXIT)).collect());
        let s: Vec<AtomicI8> = (0..size).map(|_| AtomicI8::new(0)).collect();
        let mut todo = Bits::new(size);
        let mut next = Bits::new(size);
        let mut rounds = 0u32;
        // Full sweeps: the first, and the confirming ones.
        let mut full = true;
        let mut first = !given;
        loop {
            rounds += 1;
            bar.phase(&format!("deep round {rounds}"), 0);
            let changed = AtomicBool::new(false);
            (0..self.chunks()).into_par_iter().for_each_init(
                || Batch::new(self.index.pits_per_side()),
                |batch, c| {
                    let (start, end) = self.bounds(c);
                    let marked = if full {
                        (end - start) as u32
                    } else {
                        todo.count(start, end)
                    };
                    if marked == 0 {
                        bar.inc(end - start);
                        return;
                    }
                    // Dense: step through the chunk; sparse: unrank each marked one.
                    let dense = full || marked as u64 * 16 > end - start;
                    let mut board = self.index.unrank(self.n, start);
                    let mut i = start;
                    let mut any = false;
                    loop {
                        batch.clear();
                        while !batch.is_full() && i < end {
                            if full || todo.get(i) {
                                if !dense {
                                    board = self.index.unrank(self.n, i);
                                }
                                self.add(&board, i, first, Some(&s), batch);
                            }
                            i += 1;
                            if dense && i < end {
                                self.index.next(&mut board);
                            }
                        }
                        if batch.len == 0 {
                            break;
                        }
                        any |= self.deep_batch(batch, first, &exits, &s, &next);
                    }
                    if any {
                        changed.store(true, Relaxed);
                    }
                    bar.inc(end - start);
                },
            );
            let changed = changed.load(Relaxed);
            if full && !first && !changed {
                break;
            }
            first = false;
            std::mem::swap(&mut todo, &mut next);
            next.clear();
            // Nothing scheduled: confirm with a full sweep.
            full = !changed || todo.count(0, size as u64) == 0;
        }
        drop(exits);
        let here = self.levels[self.n];
        let mismatches = (0..self.chunks())
            .into_par_iter()
            .map(|c| {
                let (start, end) = self.bounds(c);
                let mut found = Mismatches::default();
                for i in start..end {
                    let (stored, want) = (here[i as usize] as i8, s[i as usize].load(Relaxed));
                    if stored != want {
                        found.push(Mismatch {
                            index: i,
                            board: self.index.unrank(self.n, i),
                            stored,
                            computed: want,
                        });
                    }
                }
                found
            })
            .reduce(Mismatches::default, Mismatches::merge);
        (rounds, mismatches)
    }

    /// Applies the operator to every position of an expanded batch; schedules the
    /// predecessors of those that change into `next`. Returns whether any changed.
    fn deep_batch(
        &self,
        batch: &Batch,
        first: bool,
        exits: &[AtomicI8],
        s: &[AtomicI8],
        next: &Bits,
    ) -> bool {
        // Per slot: the largest l(c) and the smallest w(c) over in-level children.
        let mut max_l = [0i8; BATCH];
        let mut min_w = [i8::MAX; BATCH];
        let mut exit = batch.exit;
        for &(slot, level, c, ci) in &batch.reads[..batch.nreads] {
            let slot = slot as usize;
            if c > 0 {
                let v = c as i8 - self.levels[level as usize][ci as usize] as i8;
                exit[slot] = exit[slot].max(v);
            } else {
                let sc = s[ci as usize].load(Relaxed);
                max_l[slot] = max_l[slot].max(-sc.min(0));
                min_w[slot] = min_w[slot].min(sc.max(0));
            }
        }
        let mut any = false;
        for slot in 0..batch.len {
            let at = batch.at[slot] as usize;
            let b = if first {
                exits[at].store(exit[slot], Relaxed);
                exit[slot]
            } else {
                exits[at].load(Relaxed)
            };
            let w = b.max(0).max(max_l[slot]);
            let neg_b = if b == NO_EXIT { i8::MAX } else { -b };
            let l = neg_b.min(min_w[slot]).max(0);
            debug_assert!(w == 0 || l == 0, "w and l both set");
            let new = if w > 0 { w } else { -l };
            let old = s[at].load(Relaxed);
            // Monotone: values only move away from zero.
            if new.unsigned_abs() > old.unsigned_abs() {
                debug_assert!(old == 0 || (old > 0) == (new > 0));
                s[at].store(new, Relaxed);
                any = true;
                for_each_unmove(&batch.boards[slot], self.rules, |q, stored| {
                    if stored {
                        next.set(self.index.rank(q));
                    }
                });
            }
        }
        any
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn level_ranges() {
        assert_eq!(parse_levels("0..=20"), Ok(0..=20));
        assert_eq!(parse_levels("3..7"), Ok(3..=6));
        assert_eq!(parse_levels(" 12 "), Ok(12..=12));
        assert!(parse_levels("5..=2")
            .unwrap_err()
            .contains("above the last"));
        assert!(parse_levels("0..0").unwrap_err().contains("empty"));
        assert!(parse_levels("a..=3")
            .unwrap_err()
            .contains("expected a range"));
        assert!(parse_levels("1-3")
            .unwrap_err()
            .contains("expected a range"));
    }
}
