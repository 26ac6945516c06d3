//! The game: boards of 2 x P pits, moves, captures, game ends and un-moves, under the two
//! rule sets of DESIGN.md section 1.
//!
//! A board is always seen from the side to move: pits `0..P` are its own, `P..2P` the
//! opponent's, numbered counter-clockwise. After a move the board is turned round, so a
//! child is again seen from the side to move.
//!
//! Here: the rule sets, the board, a move and the limits. The parts, each re-exported
//! here: `moves` (sowing, captures, the legal moves), `exits` (what the solver's forward
//! pass needs of a position's moves), `unmoves` (the in-level predecessors) and
//! `uncaptures` (the predecessors by a capture).

use std::fmt;
use std::str::FromStr;

use crate::error::{Error, Result};

mod exits;
mod moves;
mod uncaptures;
mod unmoves;

pub(crate) use exits::{exits_p, for_each_exit_p, for_each_stay_p};
pub use exits::{for_each_exit, Exits};
pub use moves::legal_moves;
pub(crate) use moves::legal_moves_p;
pub(crate) use uncaptures::for_each_uncapture_p;
pub(crate) use unmoves::for_each_unmove_near_p;
pub use unmoves::{for_each_unmove, for_each_unmove_near, unmoves};

/// Most pits per side the builder supports.
pub const MAX_PITS: usize = 8;
/// Most seeds on a board: values are signed bytes, so `n <= 127`.
pub const MAX_SEEDS: usize = 127;

/// The rule set. Both play the same moves; they differ in what happens when a move would
/// leave the opponent without seeds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Rules {
    /// Romein & Bal's solution (Computer Olympiad rules): a move that leaves the opponent
    /// no seeds is illegal unless every move does so; then it is played and the mover takes
    /// every seed left.
    Awari,
    /// Abapa tournament rules: a capture of every opponent seed (grand slam) captures
    /// nothing; a player who cannot feed an empty opponent takes every seed left.
    Oware,
}

impl Rules {
    /// The lower-case name used on the command line and in folder names (`awari`,
    /// `oware`).
    pub fn name(self) -> &'static str {
        match self {
            Rules::Awari => "awari",
            Rules::Oware => "oware",
        }
    }

    /// Code stored in level file headers.
    pub fn code(self) -> u8 {
        match self {
            Rules::Awari => 0,
            Rules::Oware => 1,
        }
    }

    /// The rule set of a header code, or `None` for an unknown code.
    pub fn from_code(code: u8) -> Option<Rules> {
        match code {
            0 => Some(Rules::Awari),
            1 => Some(Rules::Oware),
            _ => None,
        }
    }
}

impl fmt::Display for Rules {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Rules {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "awari" => Ok(Rules::Awari),
            "oware" | "abapa" => Ok(Rules::Oware),
            _ => Err(format!(
                "unknown rule set '{s}' (expected 'awari' or 'oware')"
            )),
        }
    }
}

/// A position: `2P` pit counts, side to move first. Pits past `2P` are always zero, so
/// that boards of one size compare and hash by their array.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Board {
    pits: [u8; 2 * MAX_PITS],
    p: u8,
}

impl Board {
    /// An empty board with `p` pits per side.
    #[inline]
    pub fn empty(p: usize) -> Board {
        assert!((2..=MAX_PITS).contains(&p), "pits per side must be 2..=8");
        Board {
            pits: [0; 2 * MAX_PITS],
            p: p as u8,
        }
    }

    /// The board of `P` pits per side whose pits are the bytes of `word` (pit 0 in the
    /// low byte): for loops that hold a board in registers (a call of [`Board::empty`]
    /// per board there cost 1.7 % of a compact, streamed build's instructions).
    #[inline(always)]
    pub(crate) fn from_word_p<const P: usize>(word: u128) -> Board {
        Board {
            pits: word.to_le_bytes(),
            p: P as u8,
        }
    }

    /// A board from `2P` counts, side to move first. Errors say what is wrong, in words a
    /// user can act on.
    pub fn from_counts(p: usize, counts: &[u32]) -> Result<Board> {
        let bad = |msg: String| Err(Error::Input(msg));
        if !(2..=MAX_PITS).contains(&p) {
            return bad(format!("pits per side must be 2..={MAX_PITS}, not {p}"));
        }
        if counts.len() != 2 * p {
            return bad(format!(
                "a board of {p} pits per side needs {} pit counts, got {}",
                2 * p,
                counts.len()
            ));
        }
        let total: u64 = counts.iter().map(|&c| c as u64).sum();
        if total > MAX_SEEDS as u64 {
            return bad(format!(
                "{total} seeds on the board; at most {MAX_SEEDS} are supported"
            ));
        }
        let mut b = Board::empty(p);
        for (i, &c) in counts.iter().enumerate() {
            b.pits[i] = c as u8;
        }
        Ok(b)
    }

    /// The start position: `k` seeds in each of the `2p` pits.
    pub fn start(p: usize, k: usize) -> Board {
        let mut b = Board::empty(p);
        for i in 0..2 * p {
            b.pits[i] = k as u8;
        }
        b
    }

    /// Pits per side, `P`.
    #[inline]
    pub fn pits_per_side(&self) -> usize {
        self.p as usize
    }

    /// All pit slots, zero past `2P` (for hot loops specialised to a board size).
    #[inline]
    pub fn raw(&self) -> &[u8; 2 * MAX_PITS] {
        &self.pits
    }

    /// The pits as [`Board::raw`] gives them, to change; the pits past `2P` must stay
    /// zero.
    #[inline]
    pub(crate) fn raw_mut(&mut self) -> &mut [u8; 2 * MAX_PITS] {
        &mut self.pits
    }

    /// The `2P` pit counts, side to move first.
    #[inline]
    pub fn pits(&self) -> &[u8] {
        &self.pits[..2 * self.p as usize]
    }

    /// The `2P` pit counts, side to move first, to change in place. Pits past `2P` are
    /// not reachable, so they stay zero.
    #[inline]
    pub fn pits_mut(&mut self) -> &mut [u8] {
        let n = 2 * self.p as usize;
        &mut self.pits[..n]
    }

    /// The seeds in pit `i` (`i < 2P`).
    #[inline]
    pub fn get(&self, i: usize) -> u8 {
        self.pits[i]
    }

    /// Puts `v` seeds in pit `i`. Callers keep `i < 2P`: a non-zero slot past `2P` would
    /// break comparing and hashing boards.
    #[inline]
    pub fn set(&mut self, i: usize, v: u8) {
        self.pits[i] = v;
    }

    /// Seeds on the board: the level the position belongs to.
    #[inline]
    pub fn seeds(&self) -> usize {
        self.pits().iter().map(|&c| c as usize).sum()
    }

    /// Seeds in the side to move's pits `0..P`.
    #[inline]
    pub fn own_seeds(&self) -> usize {
        self.pits[..self.p as usize]
            .iter()
            .map(|&c| c as usize)
            .sum()
    }

    /// Seeds in the opponent's pits `P..2P`.
    #[inline]
    pub fn opponent_seeds(&self) -> usize {
        let p = self.p as usize;
        self.pits[p..2 * p].iter().map(|&c| c as usize).sum()
    }

    /// Whether the database stores this position: some opponent pit is empty (the
    /// opponent has just sowed from it). Others are answered from their children.
    #[inline]
    pub fn is_stored(&self) -> bool {
        let p = self.p as usize;
        // A plain loop: `contains` on bytes calls memchr, slow for a handful of pits.
        #[allow(clippy::manual_contains)]
        self.pits[p..2 * p].iter().any(|&c| c == 0)
    }

    /// The board seen from the other side.
    #[inline]
    pub fn turned(&self) -> Board {
        turn(&self.pits, self.p as usize)
    }

    /// Whether every own pit of a board of `P` pits per side is empty: one word test
    /// instead of a sum (the test starts every un-move and move generation).
    #[inline(always)]
    pub(crate) fn own_empty_p<const P: usize>(&self) -> bool {
        debug_assert_eq!(self.p as usize, P);
        let row = u64::from_le_bytes(self.pits[..8].try_into().unwrap());
        row & (u64::MAX >> (64 - 8 * P)) == 0
    }

    /// Whether every opponent pit of a board of `P` pits per side is empty (the slots
    /// past `2P`, read with them, are zero).
    #[inline(always)]
    pub(crate) fn opponent_empty_p<const P: usize>(&self) -> bool {
        debug_assert_eq!(self.p as usize, P);
        self.opponent_row_p::<P>() == 0
    }

    /// The empty pits of the opponent row of a board of `P` pits per side: bit 7 of byte
    /// `k` set for each empty pit `P + k`, in one word (the same shape as
    /// [`Board::own_empty_pits_p`] of the board turned).
    #[inline(always)]
    pub(crate) fn opponent_empty_pits_p<const P: usize>(&self) -> u64 {
        debug_assert_eq!(self.p as usize, P);
        zero_bytes(self.opponent_row_p::<P>()) & lanes::<P>()
    }

    /// The opponent's pits as a word, read as the two aligned halves of the board: a
    /// word read across the middle of the row just written (by `Index::next_p`, say)
    /// would wait for the write to reach the cache.
    #[inline(always)]
    fn opponent_row_p<const P: usize>(&self) -> u64 {
        (u128::from_le_bytes(self.pits) >> (8 * P)) as u64
    }

    /// The empty pits among the side to move's `P`: bit 7 of byte `o` set for each empty
    /// pit `o`, in one word.
    #[inline(always)]
    pub(crate) fn own_empty_pits_p<const P: usize>(&self) -> u64 {
        debug_assert_eq!(self.p as usize, P);
        zero_bytes(u64::from_le_bytes(self.pits[..8].try_into().unwrap())) & lanes::<P>()
    }

    /// The empty pits of a board of `P` pits per side: bit `i` for each empty pit `i <
    /// 2P`, from two words (a loop over the pits was a tenth of the un-captures).
    #[inline(always)]
    pub(crate) fn empty_pits_p<const P: usize>(&self) -> u32 {
        debug_assert_eq!(self.p as usize, P);
        let (low, high) = self.pits.split_at(8);
        let word = |bytes: &[u8]| zero_bytes(u64::from_le_bytes(bytes.try_into().unwrap()));
        (gather_high_bits(word(low)) | gather_high_bits(word(high)) << 8) & ((1 << (2 * P)) - 1)
    }
}

/// Bit 7 of each byte of `word` that is zero, and no other bit: the high bit of
/// `(b & 0x7f) + 0x7f` is set for every byte with a low bit set, and `b`'s own for the rest
/// (no carry crosses a byte).
#[inline(always)]
fn zero_bytes(word: u64) -> u64 {
    const LOW: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    !(((word & LOW) + LOW) | word | LOW)
}

/// How many bytes of `word` have bit 7 set, its other bits clear (a mask such as
/// [`Board::own_empty_pits_p`] gives): bytes of 0 or 1 summed by one multiplication
/// (`count_ones` is a dozen instructions on a CPU without POPCNT, which Rust's default
/// x86_64 target does not assume).
#[inline(always)]
pub(crate) fn count_lanes(word: u64) -> usize {
    ((word >> 7).wrapping_mul(0x0101_0101_0101_0101) >> 56) as usize
}

/// Bit 7 of byte `k` of `word` (whose other bits are clear) as bit `k` of the result: the
/// product's terms `8k + 7 + 7i` never meet for `k, i < 8`, so nothing carries, and byte
/// `k`'s bit lands at `56 + k` for `i = 7 - k`.
#[inline(always)]
fn gather_high_bits(word: u64) -> u32 {
    (word.wrapping_mul(0x0002_0408_1020_4081) >> 56) as u32
}

/// Bit 7 of each of the first `P` bytes of a word.
#[inline(always)]
const fn lanes<const P: usize>() -> u64 {
    0x8080_8080_8080_8080 >> (64 - 8 * P)
}

/// The board with its two rows swapped, as one 128-bit rotation of the `2p` pits in use:
/// two slice copies of a length known only at run time were calls to `memmove`, 2.6 % of
/// a build.
#[inline]
fn turn(pits: &[u8; 2 * MAX_PITS], p: usize) -> Board {
    debug_assert!((2..=MAX_PITS).contains(&p));
    let row = 8 * p as u32;
    let used = u128::MAX >> (128 - 2 * row);
    let x = u128::from_le_bytes(*pits) & used;
    Board {
        pits: ((x >> row | x << row) & used).to_le_bytes(),
        p: p as u8,
    }
}

impl fmt::Debug for Board {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Board(")?;
        for (i, c) in self.pits().iter().enumerate() {
            if i > 0 {
                write!(f, " ")?;
            }
            write!(f, "{c}")?;
        }
        write!(f, ")")
    }
}

impl fmt::Display for Board {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, c) in self.pits().iter().enumerate() {
            if i > 0 {
                write!(f, " ")?;
            }
            write!(f, "{c}")?;
        }
        Ok(())
    }
}

/// One legal move and where it leads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Move {
    /// The pit sowed from (0-based, side to move).
    pub pit: u8,
    /// Seeds captured by the move.
    pub captured: u8,
    /// The game ends after the move and the mover takes every seed left (an Awari move
    /// forced to leave the opponent without seeds). Such a move is worth `n`.
    pub ends_game: bool,
    /// The position after the move, seen from the opponent (now to move).
    pub child: Board,
}

impl Move {
    /// Whether the move stays in the level: nothing captured and the game goes on.
    #[inline]
    pub fn stays_in_level(&self) -> bool {
        self.captured == 0 && !self.ends_game
    }
}

/// The legal moves of a position, or why there are none.
#[derive(Clone, Copy, Debug)]
pub struct Moves {
    list: [Move; MAX_PITS],
    len: u8,
    /// The value of the game end when there is no legal move: `-n` when the side to move
    /// has no seeds, `+n` under Oware when it cannot feed the opponent.
    pub terminal_value: Option<i8>,
}

impl Moves {
    /// The legal moves, in pit order.
    pub fn as_slice(&self) -> &[Move] {
        &self.list[..self.len as usize]
    }
    /// The number of legal moves.
    pub fn len(&self) -> usize {
        self.len as usize
    }
    /// Whether there is no legal move: the game is over, see `terminal_value`.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// What the parts' tests share: a board from its counts, a move by its pit, every board
/// of a level.
#[cfg(test)]
mod tests {
    use super::*;

    pub(super) fn b(counts: &[u32]) -> Board {
        Board::from_counts(counts.len() / 2, counts).unwrap()
    }

    pub(super) fn find(moves: &Moves, pit: u8) -> Move {
        *moves.as_slice().iter().find(|m| m.pit == pit).unwrap()
    }

    /// Every board of `n` seeds on `p` pits per side (stored or not).
    pub(super) fn all_boards(p: usize, n: usize, f: &mut impl FnMut(&Board)) {
        fn fill(b: &mut Board, i: usize, left: usize, f: &mut impl FnMut(&Board)) {
            if i == 0 {
                b.set(0, left as u8);
                f(b);
                return;
            }
            for x in 0..=left {
                b.set(i, x as u8);
                fill(b, i - 1, left - x, f);
            }
            b.set(i, 0);
        }
        fill(&mut Board::empty(p), 2 * p - 1, n, f);
    }

    /// The word tests of empty pits agree with pit-by-pit counts on every board of 2, 3
    /// and 8 pits per side up to a few seeds; a zero byte is told from bytes of 1, 0x7f,
    /// 0x80 and 0xff.
    #[test]
    fn empty_pits_by_word_agree_with_the_pits() {
        fn check<const P: usize>(n: usize) -> usize {
            let mut boards = 0;
            all_boards(P, n, &mut |b| {
                let own = b.own_empty_pits_p::<P>();
                for o in 0..8 {
                    let empty = o < P && b.pits[o] == 0;
                    assert_eq!(own >> (8 * o + 7) & 1 == 1, empty, "{b:?} pit {o}");
                }
                assert_eq!(own & !0x8080_8080_8080_8080, 0);
                boards += 1;
            });
            boards
        }
        assert_eq!(check::<2>(5), 56);
        assert_eq!(check::<3>(4), 126);
        assert_eq!(check::<8>(2), 136);
        for x in [1u64, 0x7f, 0x80, 0xff] {
            let word = x << 16 | x << 40;
            assert_eq!(zero_bytes(word), 0x8080_0080_8000_8080, "{x:#x}");
        }
    }

    /// The empty pits of both rows from two words: every empty pit and no other, on every
    /// board of 2, 6 and 8 pits per side of a few seeds (slots past `2P` never count).
    #[test]
    fn empty_pits_of_both_rows_by_two_words() {
        fn check<const P: usize>(n: usize) -> usize {
            let mut boards = 0;
            all_boards(P, n, &mut |b| {
                let want = (0..2 * P)
                    .filter(|&i| b.pits[i] == 0)
                    .fold(0u32, |m, i| m | 1 << i);
                assert_eq!(b.empty_pits_p::<P>(), want, "{b:?}");
                boards += 1;
            });
            boards
        }
        assert_eq!(check::<2>(8), 165);
        assert_eq!(check::<6>(3), 364);
        assert_eq!(check::<8>(3), 816);
    }

    #[test]
    fn empty_opponent_pits_by_one_word() {
        // Returns the boards seen and how many had no empty opponent pit.
        fn check<const P: usize>(n: usize) -> (usize, usize) {
            let (mut boards, mut full) = (0, 0);
            all_boards(P, n, &mut |b| {
                let want = (0..P)
                    .filter(|&k| b.pits[P + k] == 0)
                    .fold(0u64, |m, k| m | 0x80 << (8 * k));
                full += (want == 0) as usize;
                assert_eq!(b.opponent_empty_pits_p::<P>(), want, "{b:?}");
                assert_eq!(turn(&b.pits, P).own_empty_pits_p::<P>(), want, "{b:?}");
                boards += 1;
            });
            (boards, full)
        }
        // Full opponent rows: the boards of n - P seeds.
        assert_eq!(check::<2>(8), (165, 84));
        assert_eq!(check::<6>(7), (31824, 12));
        assert_eq!(check::<8>(9), (1307504, 16));
    }
}
