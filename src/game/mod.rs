//! The game (layer 1): the rules of both rule sets on boards of 2 to 8 pits per side,
//! and the ranking of a level's positions (DESIGN.md sections 1 and 3). Knows nothing of
//! files, solving or machines.

#[macro_use]
pub(crate) mod pits;

pub mod index;
pub mod rules;
pub mod scan;
