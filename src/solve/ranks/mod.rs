//! Solving a level over `R` ranks that each hold one slice of it (DESIGN.md section 5.4),
//! talking only through a [`Comm`]: MPI on a cluster, threads in the tests. The
//! algorithm is section 5's, in bulk-synchronous rounds, with the rank's rayon threads
//! working inside each round (only the calling thread talks to the other ranks):
//!
//! - forward pass: a rank goes over its own positions' moves (game ends, forced moves,
//!   in-level moves counted by the fast state), then, in rounds of [`ROUND`] positions, streams its slices
//!   of the lower levels a capture reaches: each position hands its value to its parents
//!   by un-captures, raising those it holds at once and sending the others to their
//!   owners (one message per destination and round), which raise them when they arrive;
//! - backward pass: the one backward pass of the solver (`solve::level`'s rounds, which a
//!   process alone runs as a partition of one rank), one threshold `t` at a time in
//!   rounds: a rank settles the seeds of one segment of its slice ([`SEGMENT`] positions)
//!   and drains the cascades they start among its own positions; an update for a
//!   predecessor owned by another rank goes to that rank's outbox; then every rank
//!   exchanges its outboxes and applies what it got, which may start new cascades. With
//!   the compact and lean states, a check of whether a position is lost (are all its in-level
//!   children won?) that reaches a child another rank holds goes on there, as a message,
//!   and so on from child to child; the last rank tells the position's owner that it is
//!   lost. The threshold is done, once every segment is seeded, when a round sends
//!   nothing anywhere: a global sum of the messages sent, equal on every rank, so all
//!   ranks stop together and no update is lost or late.
//!
//! The pieces: the build of many levels into slice files ([`build_slices`]: what only
//! ranks check before they start, then the single process's driver, `solve::build`, with
//! this rank's slices as its target), and two ways for ranks to talk besides a process
//! alone: MPI ([`mpi_comm`], with the `mpi` feature) and threads standing for ranks
//! ([`local`]).
//!
//! The values settled do not depend on the order in which positions are settled
//! (DESIGN.md section 5.2, as implemented), so the slices are those of the
//! single-process build, whatever `R` and the threads of each rank.

mod build;
pub mod local;
#[cfg(feature = "mpi")]
pub mod mpi_comm;

pub use crate::solve::comm::{Comm, Mail};
pub use crate::solve::level::{ROUND, SEGMENT};
pub use build::build_slices;
