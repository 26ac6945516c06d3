//! How the ranks of a build talk (DESIGN.md section 5.4): a personalised all-to-all and
//! global sums, the only collectives the solver needs. A single process is a partition
//! of one rank, [`Solo`], so that one driver builds a level alone or over ranks; MPI
//! (`ranks::mpi_comm`) and threads standing for ranks (`ranks::local`) are the others.

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

impl std::fmt::Debug for Mail {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mail")
            .field("starts", &self.starts)
            .finish_non_exhaustive()
    }
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

/// A process alone: a partition of one rank, where an exchange returns what was sent to
/// this rank and a sum is its own value.
#[derive(Debug, Default)]
pub struct Solo;

impl Comm for Solo {
    fn rank(&self) -> usize {
        0
    }

    fn size(&self) -> usize {
        1
    }

    fn exchange(&self, send: Vec<Vec<u8>>) -> Mail {
        Mail::from_parts(send)
    }

    fn sum(&self, x: u64) -> u64 {
        x
    }

    fn bytes_sent(&self) -> u64 {
        0
    }
}

/// `mine`, unless another rank's is an error: every rank learns whether all could go on,
/// so that all stop alike (`what` says what the others did). Collective: every rank calls
/// it at the same point.
pub(crate) fn together<M: Comm, T>(
    comm: &M,
    mine: crate::error::Result<T>,
    what: &str,
) -> crate::error::Result<T> {
    let failed = comm.sum(mine.is_err() as u64);
    match mine {
        Ok(_) if failed > 0 => Err(crate::error::Error::Input(format!(
            "{failed} other rank(s) {what}; their lines say why"
        ))),
        mine => mine,
    }
}
