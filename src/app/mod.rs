//! The applications (layer 4): probing a database ([`query`]), a game against it
//! ([`play`]), value distributions ([`stats`]), the start positions of small variants
//! ([`variants`]), packing, unpacking and the Romein-Bal files ([`share`]), and the build
//! benchmark ([`mod@bench`]).

pub mod bench;
pub mod play;
pub mod query;
pub mod share;
pub mod stats;
pub mod variants;
