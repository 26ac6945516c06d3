//! The integration tests, one binary (as ripgrep does): one module per subject, the
//! helpers in `common`. `mpi` and `browser` need their features (and `.ci/run` installs
//! what they run).

mod common;

mod api;
#[cfg(feature = "browser")]
mod browser;
mod checkpoints;
mod cli;
mod crosscheck;
mod dirs;
mod docs;
mod dtc;
mod edges;
mod golden;
mod layers;
#[cfg(feature = "mpi")]
mod mpi;
mod pack;
mod play;
mod properties;
mod ranks;
#[cfg(feature = "serve")]
mod router;
#[cfg(feature = "serve")]
mod serve;
mod states;
mod stats;
mod tools;
mod variants;
mod verify;
