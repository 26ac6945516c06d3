//! The board size as a constant: [`with_pits`] runs a hot loop specialised for it.

/// Evaluates `$body` with `$P` a constant equal to `$p`, the pits per side (2..=8): one
/// copy of the hot loops per board size (ranking, moves, un-moves, the solver's passes),
/// so that they unroll and need no bounds checks. Ranking the predecessors of settled
/// positions is the largest single cost of a build.
macro_rules! with_pits {
    ($p:expr, $P:ident => $body:expr) => {
        match $p {
            2 => {
                const $P: usize = 2;
                $body
            }
            3 => {
                const $P: usize = 3;
                $body
            }
            4 => {
                const $P: usize = 4;
                $body
            }
            5 => {
                const $P: usize = 5;
                $body
            }
            6 => {
                const $P: usize = 6;
                $body
            }
            7 => {
                const $P: usize = 7;
                $body
            }
            _ => {
                const $P: usize = 8;
                $body
            }
        }
    };
}
pub(crate) use with_pits;
