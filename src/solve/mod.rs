//! Solving (layer 3): one level by retrograde analysis ([`level`]), its distances to
//! conversion ([`dtc`]), every level of a
//! database with resume ([`build`]; over ranks, [`ranks`]) from one set of options
//! ([`options`]), what a build needs and how long it takes ([`plan`]; what a build
//! measured, [`plan::rates`]), checking a built database ([`verify`]), and the
//! independent solver that the checks compare with ([`mod@reference`]). DESIGN.md
//! section 5.

pub mod build;
pub(crate) mod checkpoints;
pub mod comm;
pub mod dtc;
pub mod level;
pub mod options;
pub mod plan;
pub mod ranks;
pub mod reference;
pub mod verify;
