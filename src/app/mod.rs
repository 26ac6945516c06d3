//! The applications (layer 4): probing a database ([`database`]; principal variations
//! and perfect play, [`line`]; what `awari query` and the server print of it,
//! [`query`]), a game against it ([`play`]), value distributions
//! ([`stats`]), the start positions of small variants ([`variants`]), packing, unpacking
//! and the Romein-Bal files ([`share`]), the build benchmark ([`mod@bench`]), what
//! `awari plan` prints ([`plan`](mod@plan)), and the HTTP
//! server and web page (`serve`, feature `serve`).

pub mod bench;
pub mod database;
pub mod line;
pub mod plan;
pub mod play;
pub mod query;
#[cfg(feature = "serve")]
pub mod serve;
pub mod share;
pub mod stats;
pub mod tablebase;
pub mod variants;
