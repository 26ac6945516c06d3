//! Solving a level over `R` ranks that each hold one slice of it (DESIGN.md section 5.4),
//! talking only through a [`Comm`]: MPI on a cluster, threads in the tests. The
//! algorithm is section 5's, in bulk-synchronous rounds:
//!
//! - forward pass, in rounds of [`ROUND`] positions per rank: a rank generates the moves
//!   of its positions, sends each capture's child index to the rank that owns it (one
//!   message per destination and round), answers the requests it gets from its slices of
//!   the lower levels, and takes the best exit from the answers;
//! - backward pass, one threshold `t` at a time: a rank settles its seeds and drains its
//!   own cascade; an update for a predecessor owned by another rank is kept in that
//!   rank's outbox; then every rank exchanges its outboxes and applies what it got, which
//!   may start new cascades. The threshold is done when a round sends nothing anywhere:
//!   a global sum of the updates sent, equal on every rank, so all ranks stop together
//!   and no update is lost or late.
//!
//! The values settled do not depend on the order (section 5.2), so the slices are those
//! of the single-process build, whatever `R`.

use std::ops::Range;

use crate::game::index::Index;
use crate::game::rules::{for_each_exit, for_each_unmove, Board, Exits, Rules};
use crate::game::scan::NO_EXIT;
use crate::solve::level::seed;
use crate::solve::plan::{largest_slice, slice};

/// Positions per rank per forward round: bounds the request buffers.
pub const ROUND: u64 = 1 << 16;

const SETTLED: u8 = 0x80;

/// What a rank needs of the others: a personalised all-to-all and global sums, all
/// collective (every rank calls them in the same order).
pub trait Comm {
    /// This rank.
    fn rank(&self) -> usize;
    /// Ranks in all.
    fn size(&self) -> usize;
    /// Sends `send[s]` to rank `s`; returns what each rank sent to this one.
    fn exchange(&self, send: Vec<Vec<u8>>) -> Vec<Vec<u8>>;
    /// The sum of `x` over all ranks.
    fn sum(&self, x: u64) -> u64;
    /// Bytes this rank has sent so far (for the report).
    fn bytes_sent(&self) -> u64;
}

/// The rank that owns index `i` of a level of `size` positions cut into `ranks` slices
/// (the largest `r` whose slice starts at or before `i`).
#[inline]
pub fn owner(i: u64, size: u64, ranks: usize) -> usize {
    (((i as u128 + 1) * ranks as u128 - 1) / size as u128) as usize
}

/// This rank's slices of the finished levels: `values[m]` holds the indices
/// `starts[m]..` of level `m`.
pub struct LowerSlices<'a> {
    /// The values of this rank's slice of each level below.
    pub values: Vec<&'a [u8]>,
    /// Where each slice starts in its level.
    pub starts: Vec<u64>,
}

/// Solves this rank's slice of level `n`; returns its values in index order.
pub fn solve_slice<C: Comm>(
    comm: &C,
    rules: Rules,
    index: &Index,
    n: usize,
    lower: &LowerSlices,
) -> Vec<u8> {
    let ranks = comm.size();
    let size = index.level_size(n);
    let mine = slice(size, ranks, comm.rank());
    let len = (mine.end - mine.start) as usize;
    let mut count = vec![0u8; len];
    let mut value = vec![0u8; len];
    forward(comm, rules, index, n, lower, &mine, &mut count, &mut value);
    // The thresholds that seed anything on any rank: a threshold `t` with no exit worth
    // `t` or `-t` anywhere settles nothing, and every rank skips it alike.
    let mut mask = [0u8; 16];
    for &b in &value {
        let t = (b as i8).unsigned_abs() as usize;
        if (1..=n).contains(&t) {
            mask[t / 8] |= 1 << (t % 8);
        }
    }
    let masks = comm.exchange(vec![mask.to_vec(); ranks]);
    let needed = |t: usize| masks.iter().any(|m| m[t / 8] & (1 << (t % 8)) != 0);
    let mut solver = Slice {
        rules,
        index,
        n,
        size,
        mine: mine.clone(),
        count,
        value,
        stack: Vec::new(),
    };
    for t in (1..=n as i8).rev() {
        if needed(t as usize) {
            solver.threshold(comm, t);
        }
    }
    (0..len)
        .map(|i| {
            if solver.count[i] & SETTLED != 0 {
                solver.value[i]
            } else {
                0
            }
        })
        .collect()
}

#[allow(clippy::too_many_arguments)]
fn forward<C: Comm>(
    comm: &C,
    rules: Rules,
    index: &Index,
    n: usize,
    lower: &LowerSlices,
    mine: &Range<u64>,
    count: &mut [u8],
    value: &mut [u8],
) {
    let ranks = comm.size();
    // Every rank takes part in as many rounds as the largest slice needs; each rank
    // knows that number without asking.
    let rounds = largest_slice(index.level_size(n), ranks).div_ceil(ROUND);
    // Per capture: the position (offset in the slice), the seeds taken, the owner and the
    // place of its request in the owner's buffer.
    let mut captures: Vec<(u32, u8, u32, u32)> = Vec::new();
    for round in 0..rounds {
        let lo = (mine.start + round * ROUND).min(mine.end);
        let hi = (lo + ROUND).min(mine.end);
        captures.clear();
        let mut requests = vec![Vec::new(); ranks];
        if lo < hi {
            let mut board = index.unrank(n, lo);
            for i in lo..hi {
                let at = (i - mine.start) as usize;
                let exits = for_each_exit(&board, rules, |c, child| {
                    let m = n - c as usize;
                    let ci = index.rank_in(child, m);
                    let o = owner(ci, index.level_size(m), ranks);
                    let k = requests[o].len() / 8;
                    requests[o].extend_from_slice(&(((m as u64) << 56) | ci).to_le_bytes());
                    captures.push(((i - lo) as u32, c, o as u32, k as u32));
                });
                let (b, stay) = match exits {
                    Exits::Terminal(v) => (v, 0),
                    Exits::AllEnd => (n as i8, 0),
                    Exits::Moves { stay } => (NO_EXIT, stay),
                };
                count[at] = stay;
                value[at] = b as u8;
                if i + 1 < hi {
                    index.next(&mut board);
                }
            }
        }
        // Answer the requests for this rank's slices of the lower levels.
        let asked = comm.exchange(requests);
        let answers: Vec<Vec<u8>> = asked
            .iter()
            .map(|buf| {
                buf.chunks_exact(8)
                    .map(|b| {
                        let x = u64::from_le_bytes(b.try_into().unwrap());
                        let (m, ci) = ((x >> 56) as usize, x & ((1 << 56) - 1));
                        lower.values[m][(ci - lower.starts[m]) as usize]
                    })
                    .collect()
            })
            .collect();
        let got = comm.exchange(answers);
        for &(j, c, o, k) in &captures {
            let at = (lo - mine.start) as usize + j as usize;
            let v = c as i8 - got[o as usize][k as usize] as i8;
            // Only positions with moves have captures: their exit starts at NO_EXIT.
            value[at] = (value[at] as i8).max(v) as u8;
        }
    }
}

/// One rank's slice of the level being solved.
struct Slice<'a> {
    rules: Rules,
    index: &'a Index,
    n: usize,
    size: u64,
    mine: Range<u64>,
    count: Vec<u8>,
    value: Vec<u8>,
    /// Settled positions whose predecessors are still to be told: index, board, won.
    stack: Vec<(u64, Board, bool)>,
}

impl Slice<'_> {
    fn settle(&mut self, i: u64, v: i8) -> bool {
        let at = (i - self.mine.start) as usize;
        if self.count[at] & SETTLED != 0 {
            return false;
        }
        self.count[at] |= SETTLED;
        self.value[at] = v as u8;
        true
    }

    /// A settled child of `q` (index `qi`, owned here) at threshold `t`.
    fn update(&mut self, qi: u64, q: Option<Board>, won: bool, t: i8) {
        let at = (qi - self.mine.start) as usize;
        if self.count[at] & SETTLED != 0 {
            return;
        }
        let (index, n) = (self.index, self.n);
        let board = || q.unwrap_or_else(|| index.unrank(n, qi));
        if !won {
            // The child is lost for its side to move: q wins by moving there.
            let q = board();
            if self.settle(qi, t) {
                self.stack.push((qi, q, true));
            }
            return;
        }
        self.count[at] -= 1;
        let b = self.value[at] as i8;
        if self.count[at] == 0 && b <= -t {
            let q = board();
            if self.settle(qi, -t) {
                self.stack.push((qi, q, false));
            }
        }
    }

    fn threshold<C: Comm>(&mut self, comm: &C, t: i8) {
        let ranks = comm.size();
        for i in self.mine.clone() {
            let at = (i - self.mine.start) as usize;
            let (k, b) = (self.count[at], self.value[at] as i8);
            if k & SETTLED != 0 {
                continue;
            }
            let Some(won) = seed(k, b, t) else {
                continue;
            };
            if self.settle(i, if won { t } else { -t }) {
                self.stack.push((i, self.index.unrank(self.n, i), won));
            }
        }
        loop {
            let mut outbox = vec![Vec::new(); ranks];
            let mut sent = 0u64;
            while let Some((_, board, won)) = self.stack.pop() {
                let mut preds: Vec<(u64, Board)> = Vec::new();
                for_each_unmove(&board, self.rules, |q, stored| {
                    if stored {
                        preds.push((self.index.rank_in(q, self.n), *q));
                    }
                });
                for (qi, q) in preds {
                    let o = owner(qi, self.size, ranks);
                    if o == comm.rank() {
                        self.update(qi, Some(q), won, t);
                    } else {
                        outbox[o].extend_from_slice(&(qi | (won as u64) << 63).to_le_bytes());
                        sent += 1;
                    }
                }
            }
            if comm.sum(sent) == 0 {
                return;
            }
            for buf in comm.exchange(outbox) {
                for b in buf.chunks_exact(8) {
                    let x = u64::from_le_bytes(b.try_into().unwrap());
                    self.update(x & !(1 << 63), None, x >> 63 == 1, t);
                }
            }
        }
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
}

/// Builds levels `0..=max_seeds` of the database `rules`-`pits` over the ranks of
/// `comm`, this rank keeping its slices in `dir` (a database folder of its own, or one
/// shared by the ranks). A level whose slices are complete on every rank is kept; any
/// other is built again by all. Slices of a build over another number of ranks in `dir`
/// are refused before anything is done.
pub fn build_slices<C: Comm>(
    comm: &C,
    dir: &std::path::Path,
    rules: Rules,
    pits: usize,
    max_seeds: usize,
    mut report: impl FnMut(&SliceReport),
) -> crate::error::Result<Vec<SliceReport>> {
    use crate::db::layout::Expect;
    use crate::db::slice::{list_slices, slice_path, write_slice, SliceLevel};
    use crate::error::Error;
    let (rank, ranks) = (comm.rank(), comm.size());
    let index = Index::new(pits, max_seeds)?;
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    // Slices of another partition would be read as this one's: refuse them, on every
    // rank at once.
    let foreign = list_slices(dir)?.into_iter().find(|&(_, _, r)| r != ranks);
    let refused = comm.sum(foreign.is_some() as u64);
    if let Some((n, r, rs)) = foreign {
        return Err(Error::Input(format!(
            "{} holds slices of a build over {rs} ranks (level {n}, rank {r}); this build has {ranks}: use another folder, or run with {rs} ranks",
            dir.display()
        )));
    }
    if refused > 0 {
        return Err(Error::Input(format!(
            "another rank's folder holds slices of a build over another number of ranks than {ranks}"
        )));
    }
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
                let lower = LowerSlices {
                    values: done.iter().map(|s| s.bytes()).collect(),
                    starts: starts.clone(),
                };
                let values = solve_slice(comm, rules, &index, n, &lower);
                write_slice(
                    &path,
                    rules,
                    pits,
                    n,
                    expect.positions,
                    rank,
                    ranks,
                    range.clone(),
                    &values,
                )?;
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

    use super::Comm;

    /// The world of an MPI job.
    pub struct MpiComm {
        world: mpi::topology::SimpleCommunicator,
        sent: AtomicU64,
    }

    impl MpiComm {
        /// The world communicator of the job `universe` belongs to.
        pub fn world(universe: &mpi::environment::Universe) -> MpiComm {
            MpiComm {
                world: universe.world(),
                sent: AtomicU64::new(0),
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

        fn exchange(&self, send: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
            let size = self.size();
            let count = |b: &Vec<u8>| {
                mpi::Count::try_from(b.len())
                    .expect("a message under 2 GiB (MPI counts are 32-bit)")
            };
            let counts: Vec<mpi::Count> = send.iter().map(count).collect();
            let mut recv_counts = vec![0 as mpi::Count; size];
            self.world
                .all_to_all_into(&counts[..], &mut recv_counts[..]);
            let displs = |c: &[mpi::Count]| -> Vec<mpi::Count> {
                c.iter()
                    .scan(0, |at, &n| {
                        let d = *at;
                        *at += n;
                        Some(d)
                    })
                    .collect()
            };
            let (sd, rd) = (displs(&counts), displs(&recv_counts));
            let mut flat: Vec<u8> = send.concat();
            self.sent.fetch_add(flat.len() as u64, Relaxed);
            let total: usize = recv_counts.iter().map(|&c| c as usize).sum();
            // One spare byte each: two empty vectors share one dangling address, which
            // MPI takes for the same buffer given twice and refuses.
            flat.push(0);
            let mut buf = vec![0u8; total + 1];
            {
                let out = Partition::new(&flat[..], &counts[..], &sd[..]);
                let mut inp = PartitionMut::new(&mut buf[..], &recv_counts[..], &rd[..]);
                self.world.all_to_all_varcount_into(&out, &mut inp);
            }
            (0..size)
                .map(|r| buf[rd[r] as usize..(rd[r] + recv_counts[r]) as usize].to_vec())
                .collect()
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

    use super::Comm;

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

        fn exchange(&self, send: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
            let bytes: u64 = send.iter().map(|b| b.len() as u64).sum();
            self.sent
                .fetch_add(bytes, std::sync::atomic::Ordering::Relaxed);
            self.shared.mail.lock().unwrap()[self.rank] = send;
            self.shared.barrier.wait();
            let got = {
                let mail = self.shared.mail.lock().unwrap();
                (0..self.size)
                    .map(|from| mail[from][self.rank].clone())
                    .collect()
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
                            let values = solve_slice(comm, rules, index, n, &lower);
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
                        s.spawn(move || build_slices(comm, &dir, rules, pits, top, |_| {}))
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
