//! The ranks of an MPI job (`mpirun`): the world communicator. Only the thread that
//! made it calls MPI (the solver's rayon threads do not).

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use mpi::collective::SystemOperation;
use mpi::datatype::{Partition, PartitionMut};
use mpi::traits::*;

use crate::solve::ranks::{Comm, Mail};

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

impl std::fmt::Debug for MpiComm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MpiComm")
            .field("rank", &self.rank())
            .field("size", &self.size())
            .finish_non_exhaustive()
    }
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
            let recv_counts: Vec<mpi::Count> = recv_lens.iter().map(|&l| l as mpi::Count).collect();
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
                let recv_counts: Vec<mpi::Count> = recv_lens.iter().map(|&l| count(l, k)).collect();
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
                    let mut inp = PartitionMut::new(&mut buf[..], &recv_counts[..], &rd[..size]);
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
