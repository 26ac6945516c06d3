//! The files (layer 2): where a database's levels live ([`layout`]), one writer per
//! folder ([`lock`]), raw level files
//! ([`raw`]), packed levels ([`pack`]) with their value model ([`model`]), and one level
//! read either way ([`store`]). DESIGN.md sections 4 and 6 to 9.

pub mod layout;
pub mod lock;
pub mod model;
pub mod pack;
pub mod raw;
pub mod slice;
pub mod store;
