//! Solving a level over `R` ranks that each hold one slice of it (DESIGN.md section 5.4),
//! talking only through a [`Comm`]: MPI on a cluster, threads in the tests. The
//! algorithm is section 5's, in bulk-synchronous rounds, with the rank's rayon threads
//! working inside each round (only the calling thread talks to the other ranks):
//!
//! - forward pass: a rank goes over its own positions' moves (game ends, forced moves,
//!   in-level moves counted), then, in rounds of [`ROUND`] positions, streams its slices
//!   of the lower levels a capture reaches: each position hands its value to its parents
//!   by un-captures, raising those it holds at once and sending the others to their
//!   owners (one message per destination and round), which raise them when they arrive;
//! - backward pass, one threshold `t` at a time, in rounds: a rank settles the seeds of
//!   one segment of its slice (the first [`SEGMENT`] rounds) and drains the cascade
//!   they start among its own positions (the single-process solver's code, with its
//!   threads); an update for a predecessor owned by another rank goes to that rank's
//!   outbox; then every rank exchanges its outboxes and applies what it got, which may
//!   start new cascades. The threshold is done, once every segment is seeded, when a
//!   round sends nothing anywhere: a global sum of the updates sent, equal on every
//!   rank, so all ranks stop together and no update is lost or late.
//!
//! The values settled do not depend on the order (section 5.2), so the slices are those
//! of the single-process build, whatever `R` and the threads of each rank.

use std::ops::Range;
use std::sync::Mutex;

use rayon::prelude::*;

use crate::game::index::Index;
use crate::game::rules::Rules;
use crate::game::scan::{lowest_captured_level, scan_uncaptures};
use crate::solve::level::{threshold_bit, Backward, State, Work, CHUNK};
use crate::solve::plan::{largest_slice, slice};
use crate::util::prefetch;

pub use crate::db::layout::owner;

/// Lower positions a rank streams per forward round: bounds the updates it sends in a
/// round. (Small in the unit tests, so that their small levels take many rounds.)
pub const ROUND: u64 = if cfg!(test) { 1 << 12 } else { 1 << 18 };

/// Positions per rank whose seeds are settled in one backward round: bounds the outboxes
/// of a round.
pub const SEGMENT: u64 = if cfg!(test) { 1 << 13 } else { 1 << 22 };

/// What a rank needs of the others: a personalised all-to-all and global sums, all
/// collective (every rank calls them in the same order).
pub trait Comm {
    /// This rank.
    fn rank(&self) -> usize;
    /// Ranks in all.
    fn size(&self) -> usize;
    /// Sends `send[s]` to rank `s`; returns what each rank sent to this one.
    fn exchange(&self, send: Vec<Vec<u8>>) -> Mail;
    /// The sum of `x` over all ranks.
    fn sum(&self, x: u64) -> u64;
    /// Bytes this rank has sent so far (for the report).
    fn bytes_sent(&self) -> u64;
}

/// What the ranks sent to this one in an exchange, one after another in rank order in
/// one buffer (so that it is received without a copy per rank).
pub struct Mail {
    bytes: Vec<u8>,
    /// Where each rank's part starts in `bytes`, and the end.
    starts: Vec<usize>,
}

impl Mail {
    /// The parts of `parts[r]` from rank `r`.
    pub fn from_parts(parts: Vec<Vec<u8>>) -> Mail {
        let mut starts = vec![0];
        for p in &parts {
            starts.push(starts.last().unwrap() + p.len());
        }
        Mail {
            bytes: parts.concat(),
            starts,
        }
    }

    /// A buffer of `len` bytes to receive into, with the parts' starts.
    pub fn with_starts(bytes: Vec<u8>, starts: Vec<usize>) -> Mail {
        assert_eq!(starts.last().copied(), Some(bytes.len()));
        Mail { bytes, starts }
    }

    /// What rank `r` sent.
    pub fn from(&self, r: usize) -> &[u8] {
        &self.bytes[self.starts[r]..self.starts[r + 1]]
    }

    /// What each rank sent, in rank order.
    pub fn parts(&self) -> impl Iterator<Item = &[u8]> {
        self.starts.windows(2).map(|w| &self.bytes[w[0]..w[1]])
    }

    /// Everything received, the ranks' parts one after another.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }
}

/// This rank's slices of the finished levels: `values[m]` holds the indices
/// `starts[m]..` of level `m`.
pub struct LowerSlices<'a> {
    /// The values of this rank's slice of each level below.
    pub values: Vec<&'a [u8]>,
    /// Where each slice starts in its level.
    pub starts: Vec<u64>,
}

/// Solves this rank's slice of level `n` with the threads of the current rayon pool and
/// calls `f` with its values in index order.
pub fn solve_slice<C: Comm, T>(
    comm: &C,
    rules: Rules,
    index: &Index,
    n: usize,
    lower: &LowerSlices,
    f: impl FnOnce(&[u8]) -> T,
) -> T {
    let ranks = comm.size();
    let size = index.level_size(n);
    let mine = slice(size, ranks, comm.rank());
    let mut state = State::<false>::new(mine.end - mine.start);
    forward(comm, rules, index, n, lower, &mine, &state);
    // The thresholds that seed anything on any rank: a threshold `t` with no exit worth
    // `t` or `-t` anywhere settles nothing, and every rank skips it alike.
    let mask = state.survey(0..state.len());
    let masks = comm.exchange(vec![mask.to_le_bytes().to_vec(); ranks]);
    let needed = |t: i8| {
        masks
            .parts()
            .any(|m| u64::from_le_bytes(m.try_into().unwrap()) & threshold_bit(t) != 0)
    };
    let back = Backward {
        rules,
        index,
        n,
        state: &state,
        base: mine.start,
        ranks,
    };
    for t in (1..=n as i8).rev() {
        if needed(t) {
            threshold(comm, &back, &mine, t);
        }
    }
    f(state.finish())
}

/// The forward pass of this rank's slice, with the lower levels read as streams: first
/// the own moves of its positions (game ends, forced moves, in-level moves counted), then,
/// in rounds, a piece of [`ROUND`] positions of its slices of the lower levels a capture
/// reaches: each position hands its value to its parents by un-captures, raising the best
/// exit of those held here at once and sending the others to their owners (8 bytes each:
/// the index, and the value in the top byte), one message per destination and round. The
/// rounds are the same on every rank: every rank knows every slice.
fn forward<C: Comm>(
    comm: &C,
    rules: Rules,
    index: &Index,
    n: usize,
    lower: &LowerSlices,
    mine: &Range<u64>,
    state: &State<false>,
) {
    let (rank, ranks) = (comm.rank(), comm.size());
    let size = index.level_size(n);
    state.own_moves(rules, index, n, mine.clone(), mine.start, |_| {});
    // The pieces of each rank's slices of the lower levels, level by level.
    let levels = lowest_captured_level(index.pits_per_side(), n)..n.saturating_sub(1);
    let pieces = |r: usize| -> Vec<(usize, Range<u64>)> {
        levels
            .clone()
            .flat_map(|m| {
                let part = slice(index.level_size(m), ranks, r);
                (part.start..part.end)
                    .step_by(ROUND as usize)
                    .map(move |a| (m, a..(a + ROUND).min(part.end)))
            })
            .collect()
    };
    let rounds = (0..ranks).map(|r| pieces(r).len()).max().unwrap_or(0);
    let mut mine_pieces = pieces(rank).into_iter();
    for _ in 0..rounds {
        let outbox: Vec<Vec<u8>> = match mine_pieces.next() {
            Some((m, piece)) => {
                let values = lower.values[m];
                let base = lower.starts[m];
                let sent: Mutex<Vec<Vec<u8>>> = Mutex::new(vec![Vec::new(); ranks]);
                (piece.start..piece.end)
                    .step_by(CHUNK as usize)
                    .collect::<Vec<_>>()
                    .into_par_iter()
                    .for_each(|start| {
                        let end = (start + CHUNK).min(piece.end);
                        let mut out = vec![Vec::new(); ranks];
                        let held = |qi: u64| mine.contains(&qi);
                        scan_uncaptures(
                            rules,
                            index,
                            n,
                            m,
                            start,
                            &values[(start - base) as usize..(end - base) as usize],
                            |qi| {
                                if held(qi) {
                                    prefetch(state.exit((qi - mine.start) as usize));
                                }
                            },
                            |qi, x, _| {
                                if held(qi) {
                                    state.raise((qi - mine.start) as usize, x);
                                } else {
                                    let word = qi | ((x as u8 as u64) << 56);
                                    out[owner(qi, size, ranks)]
                                        .extend_from_slice(&word.to_le_bytes());
                                }
                            },
                        );
                        let mut sent = sent.lock().unwrap();
                        for (to, part) in sent.iter_mut().zip(out) {
                            to.extend_from_slice(&part);
                        }
                    });
                sent.into_inner().unwrap()
            }
            None => vec![Vec::new(); ranks],
        };
        let got = comm.exchange(outbox);
        got.bytes().par_chunks(8 * CHUNK as usize).for_each(|part| {
            for w in part.chunks_exact(8) {
                let word = u64::from_le_bytes(w.try_into().unwrap());
                let qi = word & ((1 << 56) - 1);
                state.raise((qi - mine.start) as usize, (word >> 56) as u8 as i8);
            }
        });
    }
}

/// The backward pass of threshold `t` over this rank's slice, in rounds until no rank
/// has anything left to send.
fn threshold<C: Comm>(comm: &C, back: &Backward<false>, mine: &Range<u64>, t: i8) {
    let ranks = comm.size();
    let segments = largest_slice(back.index.level_size(back.n), ranks).div_ceil(SEGMENT);
    // The outboxes of the round, filled by the tasks as they end.
    let sink: Mutex<Work> = Mutex::new(Work::default());
    let flush = |work: &mut Work| {
        if work.outbox.iter().any(|b| !b.is_empty()) {
            sink.lock().unwrap().merge(std::mem::take(&mut work.outbox));
        }
    };
    let mut round = 0;
    loop {
        if round < segments {
            let lo = (mine.start + round * SEGMENT).min(mine.end);
            let hi = (lo + SEGMENT).min(mine.end);
            (0..(hi - lo).div_ceil(CHUNK))
                .into_par_iter()
                .for_each_init(Work::default, |work, c| {
                    let start = lo + c * CHUNK;
                    back.seed_range(t, start..(start + CHUNK).min(hi), work);
                    flush(work);
                });
        }
        let mut outbox = std::mem::take(&mut sink.lock().unwrap().outbox);
        outbox.resize(ranks, Vec::new());
        let sent: u64 = outbox.iter().map(|b| b.len() as u64 / 8).sum();
        // Every rank knows `segments`, so all ask for the sum in the same rounds.
        if round + 1 >= segments && comm.sum(sent) == 0 {
            return;
        }
        let got = comm.exchange(outbox);
        // Every part is whole 8-byte updates, so the buffer cuts anywhere on 8 bytes.
        got.bytes()
            .par_chunks(8 * CHUNK as usize)
            .for_each_init(Work::default, |work, updates| {
                back.apply(t, updates, work);
                flush(work);
            });
        round += 1;
    }
}

/// One level of a distributed build, as this rank saw it.
#[derive(Clone, Copy, Debug)]
pub struct SliceReport {
    /// The level.
    pub seeds: usize,
    /// Positions of the whole level.
    pub positions: u64,
    /// Positions of this rank's slice.
    pub slice: u64,
    /// Found complete on every rank, not rebuilt.
    pub kept: bool,
    /// Wall time of the level.
    pub seconds: f64,
    /// Bytes this rank sent for the level.
    pub bytes_sent: u64,
    /// This rank's peak resident memory so far, where the system says.
    pub peak_rss: Option<u64>,
}

/// What a rank of a distributed build builds, and where.
#[derive(Clone, Debug)]
pub struct DistOptions {
    /// This rank's database folder (its own, or one shared by the ranks).
    pub dir: std::path::PathBuf,
    /// The rule set.
    pub rules: Rules,
    /// Pits per side.
    pub pits: usize,
    /// The highest level to build.
    pub max_seeds: usize,
    /// Check before each level that this rank's slice fits its share of the node's free
    /// memory and the free disk under `dir`, and stop every rank if one does not.
    pub check: bool,
    /// Ranks running on this rank's node, which share its memory.
    pub ranks_here: usize,
    /// The command, for the lock file (what a second build into the folder is told).
    pub command: String,
}

/// Builds levels `0..=max_seeds` of the database `rules`-`pits` over the ranks of
/// `comm`, this rank keeping its slices in `opts.dir`. A level whose slices are complete
/// on every rank is kept; any other is built again by all. Slices of a build over
/// another number of ranks in the folder are refused before anything is done, and so is
/// a folder where another build holds this rank's lock.
pub fn build_slices<C: Comm>(
    comm: &C,
    opts: &DistOptions,
    mut report: impl FnMut(&SliceReport),
) -> crate::error::Result<Vec<SliceReport>> {
    use crate::db::layout::Expect;
    use crate::db::lock::DirLock;
    use crate::db::slice::{list_slices, slice_path, write_slice, SliceHeader, SliceLevel};
    use crate::error::Error;
    use crate::solve::plan::check_slice_fits;
    let (rank, ranks) = (comm.rank(), comm.size());
    let DistOptions {
        dir,
        rules,
        pits,
        max_seeds,
        ..
    } = opts;
    let (dir, rules, pits, max_seeds) = (dir.as_path(), *rules, *pits, *max_seeds);
    let index = Index::new(pits, max_seeds)?;
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    // Every rank learns whether all could start, so that all stop alike.
    let together = |mine: crate::error::Result<()>, what: &str| {
        let failed = comm.sum(mine.is_err() as u64);
        match mine {
            Err(e) => Err(e),
            Ok(()) if failed > 0 => Err(Error::Input(format!(
                "{failed} other rank(s) {what}; their lines say why"
            ))),
            Ok(()) => Ok(()),
        }
    };
    let what = format!("rank {rank} of {ranks}: {}", opts.command);
    let (_lock, locked) = match DirLock::acquire_rank(dir, rank, &what) {
        Ok(lock) => (Some(lock), Ok(())),
        Err(e) => (None, Err(e)),
    };
    together(locked, "found their folder held by another build")?;
    // Slices of another partition would be read as this one's: refuse them, on every
    // rank at once.
    let foreign = list_slices(dir)?.into_iter().find(|&(_, _, r)| r != ranks);
    together(
        match foreign {
            Some((n, r, rs)) => Err(Error::Input(format!(
                "{} holds slices of a build over {rs} ranks (level {n}, rank {r}); this build has {ranks}: use another folder, or run with {rs} ranks",
                dir.display()
            ))),
            None => Ok(()),
        },
        "found slices of a build over another number of ranks",
    )?;
    // A slice of another database (copied or moved in) would be overwritten: refuse it.
    let other = list_slices(dir)?.into_iter().find_map(|(n, r, rs)| {
        let path = slice_path(dir, n, r, rs);
        let h = SliceHeader::read(&path).ok()?;
        (h.rules != rules || h.pits != pits).then_some((path, h))
    });
    together(
        match other {
            Some((path, h)) => Err(Error::Input(format!(
                "{} is a slice of the {}-{} database, and this build is {rules}-{pits}: move it away",
                path.display(),
                h.rules,
                h.pits
            ))),
            None => Ok(()),
        },
        "found slices of another database in their folder",
    )?;
    let mut done: Vec<SliceLevel> = Vec::new();
    let mut starts = Vec::new();
    let mut reports = Vec::new();
    for n in 0..=max_seeds {
        let t0 = std::time::Instant::now();
        let sent0 = comm.bytes_sent();
        let expect = Expect::level(rules, &index, n);
        let range = slice(expect.positions, ranks, rank);
        let path = slice_path(dir, n, rank, ranks);
        let found = SliceLevel::open(&path, &expect, rank, ranks, range.clone()).ok();
        let everywhere = comm.sum(found.is_some() as u64) == ranks as u64;
        let level = match found {
            Some(level) if everywhere => level,
            _ => {
                let fits = if opts.check {
                    check_slice_fits(dir, n, range.end - range.start, opts.ranks_here)
                } else {
                    Ok(())
                };
                together(fits, &format!("lack the memory or disk for level {n}"))?;
                let lower = LowerSlices {
                    values: done.iter().map(|s| s.bytes()).collect(),
                    starts: starts.clone(),
                };
                solve_slice(comm, rules, &index, n, &lower, |values| {
                    write_slice(
                        &path,
                        rules,
                        pits,
                        n,
                        expect.positions,
                        rank,
                        ranks,
                        range.clone(),
                        values,
                    )
                })?;
                // The stream read the slices below: let their pages go.
                done.iter().for_each(SliceLevel::release);
                SliceLevel::open(&path, &expect, rank, ranks, range.clone())?
            }
        };
        let r = SliceReport {
            seeds: n,
            positions: expect.positions,
            slice: range.end - range.start,
            kept: everywhere,
            seconds: t0.elapsed().as_secs_f64(),
            bytes_sent: comm.bytes_sent() - sent0,
            peak_rss: crate::util::peak_rss(),
        };
        report(&r);
        reports.push(r);
        starts.push(range.start);
        done.push(level);
    }
    Ok(reports)
}

/// The ranks of an MPI job (`mpirun`): the world communicator. Only the thread that
/// made it calls MPI (the solver's rayon threads do not).
#[cfg(feature = "mpi")]
pub mod mpi_comm {
    use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

    use mpi::collective::SystemOperation;
    use mpi::datatype::{Partition, PartitionMut};
    use mpi::traits::*;

    use super::{Comm, Mail};

    /// The world of an MPI job.
    pub struct MpiComm {
        world: mpi::topology::SimpleCommunicator,
        sent: AtomicU64,
        /// The largest piece of a message sent in one collective.
        piece: u64,
    }

    /// Where each of `counts` starts when they are laid one after another, and the end.
    fn displacements(counts: &[mpi::Count]) -> Vec<mpi::Count> {
        let mut at = 0;
        let mut d = Vec::with_capacity(counts.len() + 1);
        for &c in counts {
            d.push(at);
            at += c;
        }
        d.push(at);
        d
    }

    impl MpiComm {
        /// The world communicator of the job `universe` belongs to.
        pub fn world(universe: &mpi::environment::Universe) -> MpiComm {
            // AWARI_MPI_PIECE_BYTES makes the pieces small, for the tests of messages
            // sent in several pieces.
            let piece = std::env::var("AWARI_MPI_PIECE_BYTES")
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(1 << 30);
            MpiComm {
                world: universe.world(),
                sent: AtomicU64::new(0),
                piece,
            }
        }

        /// Ends the whole job: every rank stops (a rank that cannot go on must not leave
        /// the others waiting in a collective).
        pub fn abort(&self, code: i32) -> ! {
            self.world.abort(code)
        }
    }

    impl Comm for MpiComm {
        fn rank(&self) -> usize {
            self.world.rank() as usize
        }

        fn size(&self) -> usize {
            self.world.size() as usize
        }

        fn exchange(&self, send: Vec<Vec<u8>>) -> Mail {
            let size = self.size();
            let lens: Vec<u64> = send.iter().map(|b| b.len() as u64).collect();
            let mut recv_lens = vec![0u64; size];
            self.world.all_to_all_into(&lens[..], &mut recv_lens[..]);
            // MPI's counts and displacements are 32-bit: a message of 2 GiB or more, or
            // a round whose messages add up to that, goes in pieces of at most `piece`
            // bytes per pair of ranks, as many rounds as the longest message needs.
            let piece = self.piece.min(i32::MAX as u64 / size as u64).max(1);
            let longest = lens.iter().chain(&recv_lens).max().copied().unwrap_or(0);
            let mut rounds = 0u64;
            self.world.all_reduce_into(
                &longest.div_ceil(piece),
                &mut rounds,
                SystemOperation::max(),
            );
            let mut starts = vec![0usize];
            for &l in &recv_lens {
                starts.push(starts[starts.len() - 1] + l as usize);
            }
            let total = starts[size];
            let part = |len: u64, k: u64| (k * piece).min(len)..((k + 1) * piece).min(len);
            // At most `piece`, so below 2^31.
            let count = |len: u64, k: u64| {
                let r = part(len, k);
                (r.end - r.start) as mpi::Count
            };
            // One spare byte after each buffer: two empty vectors share one dangling
            // address, which MPI takes for the same buffer given twice and refuses.
            let mut bytes = vec![0u8; total + 1];
            if rounds == 1 {
                // One round: the parts land in their places, and the outboxes are given
                // back before the answers arrive.
                let counts: Vec<mpi::Count> = lens.iter().map(|&l| l as mpi::Count).collect();
                let recv_counts: Vec<mpi::Count> =
                    recv_lens.iter().map(|&l| l as mpi::Count).collect();
                let (sd, rd) = (displacements(&counts), displacements(&recv_counts));
                let mut flat = send.concat();
                drop(send);
                self.sent.fetch_add(flat.len() as u64, Relaxed);
                flat.push(0);
                let out = Partition::new(&flat[..], &counts[..], &sd[..size]);
                let mut inp = PartitionMut::new(&mut bytes[..], &recv_counts[..], &rd[..size]);
                self.world.all_to_all_varcount_into(&out, &mut inp);
            } else {
                for k in 0..rounds {
                    let counts: Vec<mpi::Count> = lens.iter().map(|&l| count(l, k)).collect();
                    let recv_counts: Vec<mpi::Count> =
                        recv_lens.iter().map(|&l| count(l, k)).collect();
                    let (sd, rd) = (displacements(&counts), displacements(&recv_counts));
                    let mut flat: Vec<u8> = Vec::with_capacity(sd[size] as usize + 1);
                    for (s, b) in send.iter().enumerate() {
                        let r = part(lens[s], k);
                        flat.extend_from_slice(&b[r.start as usize..r.end as usize]);
                    }
                    self.sent.fetch_add(flat.len() as u64, Relaxed);
                    flat.push(0);
                    let mut buf = vec![0u8; rd[size] as usize + 1];
                    {
                        let out = Partition::new(&flat[..], &counts[..], &sd[..size]);
                        let mut inp =
                            PartitionMut::new(&mut buf[..], &recv_counts[..], &rd[..size]);
                        self.world.all_to_all_varcount_into(&out, &mut inp);
                    }
                    for r in 0..size {
                        let at = starts[r] + part(recv_lens[r], k).start as usize;
                        let piece = &buf[rd[r] as usize..rd[r + 1] as usize];
                        bytes[at..at + piece.len()].copy_from_slice(piece);
                    }
                }
            }
            bytes.truncate(total);
            Mail::with_starts(bytes, starts)
        }

        fn sum(&self, x: u64) -> u64 {
            let mut total = 0u64;
            self.world
                .all_reduce_into(&x, &mut total, SystemOperation::sum());
            total
        }

        fn bytes_sent(&self) -> u64 {
            self.sent.load(Relaxed)
        }
    }
}

/// Ranks as threads of one process, for tests: each call of a collective waits for
/// every rank.
pub mod local {
    use std::sync::{Arc, Barrier, Mutex};

    use super::{Comm, Mail};

    /// The shared mailbox of the ranks.
    struct Shared {
        barrier: Barrier,
        // mail[from][to]
        mail: Mutex<Vec<Vec<Vec<u8>>>>,
        sums: Mutex<Vec<u64>>,
    }

    /// One rank of a group of threads.
    pub struct LocalComm {
        rank: usize,
        size: usize,
        shared: Arc<Shared>,
        sent: std::sync::atomic::AtomicU64,
    }

    impl LocalComm {
        /// A group of `size` ranks, one handle each.
        pub fn group(size: usize) -> Vec<LocalComm> {
            let shared = Arc::new(Shared {
                barrier: Barrier::new(size),
                mail: Mutex::new(vec![vec![Vec::new(); size]; size]),
                sums: Mutex::new(vec![0; size]),
            });
            (0..size)
                .map(|rank| LocalComm {
                    rank,
                    size,
                    shared: shared.clone(),
                    sent: std::sync::atomic::AtomicU64::new(0),
                })
                .collect()
        }
    }

    impl Comm for LocalComm {
        fn rank(&self) -> usize {
            self.rank
        }

        fn size(&self) -> usize {
            self.size
        }

        fn exchange(&self, send: Vec<Vec<u8>>) -> Mail {
            let bytes: u64 = send.iter().map(|b| b.len() as u64).sum();
            self.sent
                .fetch_add(bytes, std::sync::atomic::Ordering::Relaxed);
            self.shared.mail.lock().unwrap()[self.rank] = send;
            self.shared.barrier.wait();
            let got = {
                let mail = self.shared.mail.lock().unwrap();
                Mail::from_parts(
                    (0..self.size)
                        .map(|from| mail[from][self.rank].clone())
                        .collect(),
                )
            };
            self.shared.barrier.wait();
            got
        }

        fn sum(&self, x: u64) -> u64 {
            self.shared.sums.lock().unwrap()[self.rank] = x;
            self.shared.barrier.wait();
            let total = self.shared.sums.lock().unwrap().iter().sum();
            self.shared.barrier.wait();
            total
        }

        fn bytes_sent(&self) -> u64 {
            self.sent.load(std::sync::atomic::Ordering::Relaxed)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::local::LocalComm;
    use super::*;

    /// Every level `0..=top` solved by `ranks` threads as ranks, each level's slices
    /// concatenated.
    fn solve_distributed(rules: Rules, pits: usize, top: usize, ranks: usize) -> Vec<Vec<u8>> {
        let index = Index::new(pits, top).unwrap();
        let comms = LocalComm::group(ranks);
        let slices: Vec<Vec<Vec<u8>>> = std::thread::scope(|s| {
            let handles: Vec<_> = comms
                .iter()
                .map(|comm| {
                    let index = &index;
                    s.spawn(move || {
                        let mut mine: Vec<Vec<u8>> = Vec::new();
                        let mut starts = Vec::new();
                        for n in 0..=top {
                            let lower = LowerSlices {
                                values: mine.iter().map(|v| v.as_slice()).collect(),
                                starts: starts.clone(),
                            };
                            let values = solve_slice(comm, rules, index, n, &lower, |v| v.to_vec());
                            starts.push(slice(index.level_size(n), ranks, comm.rank()).start);
                            mine.push(values);
                        }
                        mine
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        (0..=top)
            .map(|n| slices.iter().flat_map(|s| s[n].iter().copied()).collect())
            .collect()
    }

    #[test]
    fn owners_match_the_slices() {
        for (size, ranks) in [(10u64, 3usize), (1, 1), (7, 7), (100, 6), (5, 8)] {
            for r in 0..ranks {
                for i in slice(size, ranks, r) {
                    assert_eq!(owner(i, size, ranks), r, "{i} of {size} on {ranks}");
                }
            }
        }
    }

    #[test]
    fn slices_over_ranks_are_the_single_process_levels() {
        for rules in [Rules::Awari, Rules::Oware] {
            for (pits, top) in [(6, 11), (4, 16), (3, 14)] {
                let index = Index::new(pits, top).unwrap();
                let truth = crate::solve::level::solve_in_memory(rules, &index, top);
                for ranks in [1, 2, 3] {
                    let got = solve_distributed(rules, pits, top, ranks);
                    for n in 0..=top {
                        assert!(
                            got[n] == truth[n],
                            "{rules} P={pits} level {n} on {ranks} ranks differs"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn slices_on_disk_gather_into_the_single_process_levels() {
        let tmp = tempfile::tempdir().unwrap();
        let (rules, pits, top) = (Rules::Oware, 4, 14);
        let single = tmp.path().join("single");
        crate::solve::build::build(
            &crate::solve::build::BuildOptions {
                root: single.clone(),
                rules,
                pits,
                max_seeds: top,
                force: false,
                check: true,
                progress: false,
                spill_from: crate::solve::build::SPILL_FROM,
                state: None,
                reads: None,
                pack: false,
            },
            |_| {},
            |_| {},
        )
        .unwrap();
        let db = |root: &std::path::Path| crate::db::layout::db_dir(root, rules, pits);
        let rank_dir = |r: usize| db(&tmp.path().join(format!("rank{r}")));
        let run = |ranks: usize| -> Vec<crate::error::Result<Vec<SliceReport>>> {
            let comms = LocalComm::group(ranks);
            std::thread::scope(|s| {
                let handles: Vec<_> = comms
                    .iter()
                    .map(|comm| {
                        let dir = rank_dir(comm.rank());
                        let opts = DistOptions {
                            dir,
                            rules,
                            pits,
                            max_seeds: top,
                            check: true,
                            ranks_here: ranks,
                            command: "test".into(),
                        };
                        s.spawn(move || build_slices(comm, &opts, |_| {}))
                    })
                    .collect();
                handles.into_iter().map(|h| h.join().unwrap()).collect()
            })
        };
        for r in run(3) {
            assert!(r.unwrap().iter().all(|l| !l.kept));
        }
        // Each rank's folder holds its slices only.
        for r in 0..3 {
            let names = crate::db::slice::list_slices(&rank_dir(r)).unwrap();
            assert_eq!(names.len(), top + 1);
            assert!(names
                .iter()
                .all(|&(_, rank, ranks)| rank == r && ranks == 3));
        }
        let out = db(&tmp.path().join("out"));
        let index = Index::new(pits, top).unwrap();
        let from: Vec<_> = (0..3).map(rank_dir).collect();
        let levels = crate::db::slice::gather(&from, &out, &index, rules).unwrap();
        assert_eq!(levels, (0..=top).collect::<Vec<_>>());
        for n in 0..=top {
            let a = std::fs::read(crate::db::layout::level_path(&out, n)).unwrap();
            let b = std::fs::read(crate::db::layout::level_path(&db(&single), n)).unwrap();
            assert!(a == b, "level {n} gathered differs from the single build");
        }
        // A lost slice is rebuilt by a rerun, the rest kept.
        std::fs::remove_file(crate::db::slice::slice_path(&rank_dir(1), 9, 1, 3)).unwrap();
        for r in run(3) {
            let r = r.unwrap();
            assert!(r[..9].iter().all(|l| l.kept) && !r[9].kept && r[10].kept);
        }
        // A rank whose folder another build holds stops, and every rank with it.
        let held =
            crate::db::lock::DirLock::acquire_rank(&rank_dir(1), 1, "the other job").unwrap();
        let said: Vec<String> = run(3)
            .into_iter()
            .map(|r| r.unwrap_err().to_string())
            .collect();
        assert!(
            said[1].contains("in use by another process") && said[1].contains("the other job"),
            "{}",
            said[1]
        );
        assert!(
            said[0].contains("1 other rank(s) found their folder held"),
            "{}",
            said[0]
        );
        drop(held);
        // Another number of ranks over these slices is refused, on every rank.
        for r in run(2) {
            let e = r.unwrap_err().to_string();
            assert!(
                e.contains("over 3 ranks") || e.contains("another number"),
                "{e}"
            );
        }
    }
}
