//! Ranks as threads of one process, for tests: each call of a collective waits for
//! every rank.

use std::sync::{Arc, Barrier, Mutex};

use crate::solve::ranks::{Comm, Mail};

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

impl std::fmt::Debug for LocalComm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalComm")
            .field("rank", &self.rank)
            .field("size", &self.size)
            .finish_non_exhaustive()
    }
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
