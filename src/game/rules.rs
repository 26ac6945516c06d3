//! The game: boards of 2 x P pits, moves, captures, game ends and un-moves, under the two
//! rule sets of DESIGN.md section 1.
//!
//! A board is always seen from the side to move: pits `0..P` are its own, `P..2P` the
//! opponent's, numbered counter-clockwise. After a move the board is turned round, so a
//! child is again seen from the side to move.

use std::fmt;
use std::str::FromStr;

use crate::error::{Error, Result};

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
    pub fn empty(p: usize) -> Board {
        assert!((2..=MAX_PITS).contains(&p), "pits per side must be 2..=8");
        Board {
            pits: [0; 2 * MAX_PITS],
            p: p as u8,
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

/// Sows pit `o` in place (in the mover's frame, not turned) and returns the last pit sown.
/// Every lap skips `o`, so `o` is empty afterwards.
#[inline]
fn sow(pits: &mut [u8; 2 * MAX_PITS], np: usize, o: usize) -> usize {
    let s = pits[o] as usize;
    debug_assert!(s > 0);
    pits[o] = 0;
    let laps = s / (np - 1);
    let rem = s % (np - 1);
    if laps > 0 {
        for (j, c) in pits[..np].iter_mut().enumerate() {
            if j != o {
                *c += laps as u8;
            }
        }
    }
    if rem == 0 {
        // The last seed of a whole lap lands just before the origin.
        return (o + np - 1) % np;
    }
    let mut j = o;
    for _ in 0..rem {
        j += 1;
        if j == np {
            j = 0;
        }
        pits[j] += 1;
    }
    j
}

/// Plays the sowing of pit `o` of `board` (non-empty) with captures, but before turning
/// the board. Returns the board in the mover's frame, the seeds captured, and whether the
/// opponent is left without seeds. Under Oware a grand slam captures nothing.
#[inline]
fn play_raw(board: &Board, rules: Rules, o: usize) -> ([u8; 2 * MAX_PITS], u8, bool) {
    let p = board.p as usize;
    let np = 2 * p;
    let mut pits = board.pits;
    let last = sow(&mut pits, np, o);
    let mut captured = 0u8;
    if last >= p {
        let before = pits;
        let mut j = last;
        while j >= p && (pits[j] == 2 || pits[j] == 3) {
            captured += pits[j];
            pits[j] = 0;
            j -= 1;
        }
        if captured > 0 && rules == Rules::Oware && pits[p..np].iter().all(|&c| c == 0) {
            // Grand slam: the capture would take every opponent seed, so it takes none.
            pits = before;
            captured = 0;
        }
    }
    let starved = pits[p..np].iter().all(|&c| c == 0);
    (pits, captured, starved)
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

/// Every legal move of `board` under `rules`, in pit order.
#[inline]
pub fn legal_moves(board: &Board, rules: Rules) -> Moves {
    let p = board.p as usize;
    let empty = Move {
        pit: 0,
        captured: 0,
        ends_game: false,
        child: Board::empty(p),
    };
    let mut out = Moves {
        list: [empty; MAX_PITS],
        len: 0,
        terminal_value: None,
    };
    let n = board.seeds();
    if board.own_seeds() == 0 {
        // No seeds to move: the opponent takes every seed left.
        out.terminal_value = Some(-(n as i8));
        return out;
    }
    let mut starving = [false; MAX_PITS];
    let mut all_starve = true;
    for o in 0..p {
        if board.pits[o] == 0 {
            continue;
        }
        let (pits, captured, starved) = play_raw(board, rules, o);
        let i = out.len as usize;
        out.list[i] = Move {
            pit: o as u8,
            captured,
            ends_game: false,
            child: turn(&pits, p),
        };
        starving[i] = starved;
        all_starve &= starved;
        out.len += 1;
    }
    if all_starve {
        match rules {
            // Forced: the move is played and the mover takes every seed left.
            Rules::Awari => {
                for m in &mut out.list[..out.len as usize] {
                    m.ends_game = true;
                }
            }
            // Cannot feed: the game ends before any move, the mover takes every seed.
            Rules::Oware => {
                out.len = 0;
                out.terminal_value = Some(n as i8);
            }
        }
        return out;
    }
    // Some move leaves the opponent seeds: the others are illegal under both rule sets
    // (Oware: they fail to feed an empty opponent; a grand slam never starves).
    let mut k = 0;
    for (i, &starves) in starving.iter().enumerate().take(out.len as usize) {
        if !starves {
            out.list[k] = out.list[i];
            k += 1;
        }
    }
    out.len = k as u8;
    out
}

/// Whether the move from own pit `o`, holding `s > 0` seeds, may capture: where its last
/// seed lands and how many seeds that pit then holds follow from the count, without
/// sowing (a division only for the rare move that laps the board; the wrap is a
/// subtraction: a division here was a tenth of the forward pass). A move that may capture
/// is played out to know; any other captures nothing.
#[inline(always)]
fn may_capture(board: &Board, o: usize, s: usize) -> bool {
    let p = board.p as usize;
    let np = 2 * p;
    let (laps, rem) = if s < np - 1 {
        (0, s)
    } else {
        (s / (np - 1), s % (np - 1))
    };
    let (last, lands) = if rem == 0 {
        (if o == 0 { np - 1 } else { o - 1 }, laps)
    } else if o + rem >= np {
        (o + rem - np, laps + 1)
    } else {
        (o + rem, laps + 1)
    };
    last >= p && matches!(board.pits[last] as usize + lands, 2 | 3)
}

/// What the forward pass of the solver needs of a position's moves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exits {
    /// The game is over before any move; the value for the side to move.
    Terminal(i8),
    /// Every move leaves the opponent without seeds (Awari): each is worth `n`.
    AllEnd,
    /// The number of legal moves that stay in the level; the capturing ones were given
    /// to the callback.
    Moves {
        /// Legal moves that capture nothing and leave the opponent seeds.
        stay: u8,
    },
}

/// The moves of `board` as the solver's forward pass sees them, the same as
/// [`legal_moves`] without building a child for moves that stay in the level: calls
/// `capture(captured, child)` for each legal capturing move and counts the others.
#[inline]
pub fn for_each_exit(board: &Board, rules: Rules, mut capture: impl FnMut(u8, &Board)) -> Exits {
    let p = board.p as usize;
    if board.own_seeds() == 0 {
        return Exits::Terminal(-(board.seeds() as i8));
    }
    let np = 2 * p;
    let opponent_empty = board.pits[p..np].iter().all(|&c| c == 0);
    let mut stay = 0u8;
    let mut legal = false;
    for o in 0..p {
        let s = board.pits[o] as usize;
        if s == 0 {
            continue;
        }
        // Most moves neither capture nor starve, and that shows without sowing.
        if !may_capture(board, o, s) {
            // Without a capture the opponent is starved only if it had no seeds and the
            // sowing stops short of its row.
            if opponent_empty && o + s < p {
                continue;
            }
            legal = true;
            stay += 1;
            continue;
        }
        let (pits, captured, starved) = play_raw(board, rules, o);
        if starved {
            // Legal only if every move starves; then all are worth n.
            continue;
        }
        legal = true;
        if captured > 0 {
            capture(captured, &turn(&pits, p));
        } else {
            stay += 1;
        }
    }
    if legal {
        Exits::Moves { stay }
    } else {
        match rules {
            Rules::Awari => Exits::AllEnd,
            Rules::Oware => Exits::Terminal(board.seeds() as i8),
        }
    }
}

/// Calls `f(parent, stored)` with every predecessor of `child` by a legal move that
/// stays in the level (no capture, the game goes on), each once, and whether the
/// database stores it (some of them have a full opponent row). Predecessors are seen
/// from their own side to move.
///
/// Each candidate is made by un-sowing and then confirmed by playing the move forward,
/// which keeps this exactly the inverse of [`legal_moves`] for in-level moves.
pub fn for_each_unmove(child: &Board, rules: Rules, mut f: impl FnMut(&Board, bool)) {
    for_each_unmove_near(
        child,
        rules,
        &mut (),
        |_, _| (),
        |q, stored, _, _, _| f(q, stored),
    );
}

/// [`for_each_unmove`] that also shows the board every predecessor is made from:
/// `base_of` gets it once, before any predecessor, to write what it makes of it into
/// `made`, and `f` gets with each predecessor the highest pit (at least 1) in which it
/// differs from that board and `made`, so that ranking it can start there
/// ([`crate::game::index::Index::rank_near`]), and the pit its move sows from.
#[inline]
pub fn for_each_unmove_near<B>(
    child: &Board,
    rules: Rules,
    made: &mut B,
    base_of: impl FnOnce(&Board, &mut B),
    mut f: impl FnMut(&Board, bool, usize, &B, usize),
) {
    let p = child.p as usize;
    let np = 2 * p;
    // The mover's own row is the child's opponent row; a move that stays in the level
    // leaves the mover's opponent (the child's side to move) with seeds.
    if child.own_seeds() == 0 {
        return;
    }
    // The position after the move, in the mover's frame. Nothing was captured, so it is
    // also the board right after sowing.
    let base = turn(&child.pits, p);
    base_of(&base, made);
    let made = &*made;
    // Empty pits in the opponent row of the base; a predecessor is stored if its own
    // count (base less the seeds sown into that row) is not zero.
    let opp_zeros0 = base.pits[p..np].iter().filter(|&&c| c == 0).count();
    // Whether a sowing that ends in pit j leaves the level: it captures there unless
    // (Oware) the capture would take every opponent seed, which captures nothing. Only
    // pits of 2 or 3 can end in a capture, so most candidates skip this test.
    let captures_at = |j: usize| -> bool {
        if rules == Rules::Awari {
            return true;
        }
        let mut k = j;
        let mut chain = 0usize;
        while k >= p && (base.pits[k] == 2 || base.pits[k] == 3) {
            chain += base.pits[k] as usize;
            k -= 1;
        }
        let opponent: usize = base.pits[p..np].iter().map(|&c| c as usize).sum();
        chain != opponent
    };
    for o in 0..p {
        if base.pits[o] != 0 {
            continue;
        }
        let mut parent = base;
        let mut opp_zeros = opp_zeros0;
        // Seeds taken back so far: the count of pit `o` in the predecessor at hand.
        let mut s = 0u8;
        // The board taken back so far with `s` seeds in pit `o` is a predecessor whose
        // highest pit changed is `top`. (A macro: a closure could not borrow `parent`,
        // which the loops change between calls.)
        macro_rules! emit {
            ($top:expr) => {
                parent.pits[o] = s;
                debug_assert!(confirms(&parent, rules, o, child));
                debug_assert_eq!(parent.is_stored(), opp_zeros > 0);
                f(&parent, opp_zeros > 0, $top, made, o);
            };
        }
        // The first lap in three runs, each without the tests of the others: the mover's
        // pits after `o` (the last seed lands there: no capture; they are the highest pits
        // changed), the opponent's pits (where a capture may be; still the highest), then
        // the mover's pits before `o` (every pit above changed). A pit that would have to
        // give back a seed it does not hold ends the search: larger counts need it too.
        'laps: {
            for j in o + 1..p {
                let c = parent.pits[j];
                if c == 0 {
                    break 'laps;
                }
                parent.pits[j] = c - 1;
                s += 1;
                emit!(j);
            }
            for j in p..np {
                let c = parent.pits[j];
                if c == 0 {
                    break 'laps;
                }
                parent.pits[j] = c - 1;
                s += 1;
                opp_zeros += (c == 1) as usize;
                // The s-th seed lands in pit j, the last one: a move that captures there
                // leaves the level.
                if (base.pits[j] == 2 || base.pits[j] == 3) && captures_at(j) {
                    continue;
                }
                emit!(j);
            }
            for j in 0..o {
                let c = parent.pits[j];
                if c == 0 {
                    break 'laps;
                }
                parent.pits[j] = c - 1;
                s += 1;
                emit!(np - 1);
            }
            // Moves that lap the board (rare): pit by pit around it, skipping `o`.
            let mut j = o;
            while (s as usize) < MAX_SEEDS {
                j = if j + 1 == np { 0 } else { j + 1 };
                if j == o {
                    continue;
                }
                let c = parent.pits[j];
                if c == 0 {
                    break 'laps;
                }
                parent.pits[j] = c - 1;
                s += 1;
                opp_zeros += (c == 1 && j >= p) as usize;
                if j >= p && (base.pits[j] == 2 || base.pits[j] == 3) && captures_at(j) {
                    continue;
                }
                emit!(np - 1);
            }
        }
    }
}

/// [`for_each_exit`] without the captures: what a position's own moves say before any
/// lower level is read (the forward pass that streams the lower levels, DESIGN.md section
/// 5.2). Moves that cannot capture are told apart without sowing; under Awari a move that
/// may capture never stays in the level (it captures, or starves the opponent), so it is
/// played out only when no other move is legal.
#[inline]
pub fn exits(board: &Board, rules: Rules) -> Exits {
    let p = board.p as usize;
    if board.own_seeds() == 0 {
        return Exits::Terminal(-(board.seeds() as i8));
    }
    let np = 2 * p;
    let opponent_empty = board.pits[p..np].iter().all(|&c| c == 0);
    let mut stay = 0u8;
    // Pits whose move may capture, to play out when needed.
    let mut captures = 0u32;
    for o in 0..p {
        let s = board.pits[o] as usize;
        if s == 0 {
            continue;
        }
        if may_capture(board, o, s) {
            captures |= 1 << o;
        } else if !(opponent_empty && o + s < p) {
            stay += 1;
        }
    }
    if rules == Rules::Awari && stay > 0 {
        return Exits::Moves { stay };
    }
    let mut legal = stay > 0;
    while captures != 0 {
        let o = captures.trailing_zeros() as usize;
        captures &= captures - 1;
        let (_, captured, starved) = play_raw(board, rules, o);
        if !starved {
            legal = true;
            stay += (captured == 0) as u8;
        }
    }
    if legal {
        Exits::Moves { stay }
    } else {
        match rules {
            Rules::Awari => Exits::AllEnd,
            Rules::Oware => Exits::Terminal(board.seeds() as i8),
        }
    }
}

/// Calls `f(pit, child)` with the child of every legal move of `board` from pit `from` on
/// that stays in the level (nothing captured, the game goes on; under Oware a forfeited
/// grand slam), in pit order, until `f` returns false: the children a compact solver
/// reads to confirm a loss (DESIGN.md section 5.2). From pit 0 they are as many as
/// [`for_each_exit`]'s `stay`, and none for a position whose game is over or whose moves
/// all end it.
#[inline]
pub fn for_each_stay(
    board: &Board,
    rules: Rules,
    from: usize,
    mut f: impl FnMut(usize, &Board) -> bool,
) {
    let p = board.p as usize;
    let np = 2 * p;
    if board.own_seeds() == 0 {
        return;
    }
    let opponent_empty = board.pits[p..np].iter().all(|&c| c == 0);
    for o in from..p {
        let s = board.pits[o] as usize;
        if s == 0 {
            continue;
        }
        if !may_capture(board, o, s) {
            if opponent_empty && o + s < p {
                // Starves the opponent: illegal, or (every move starving) ends the game.
                continue;
            }
            let mut pits = board.pits;
            sow(&mut pits, np, o);
            if !f(o, &turn(&pits, p)) {
                return;
            }
            continue;
        }
        let (pits, captured, starved) = play_raw(board, rules, o);
        if !starved && captured == 0 && !f(o, &turn(&pits, p)) {
            return;
        }
    }
}

/// Calls `f(parent, stored)` with every position that reaches `child` by a legal move
/// capturing `captured` seeds (at least 2), each once, and whether the database stores
/// it: the *un-captures* that let a level's exits be found from its lower levels read in
/// index order (DESIGN.md section 5.1). Moves that end the game (Awari's forced starving
/// moves) are not among them: such a move leaves the opponent, `child`'s side to move, no
/// seeds, and is worth `n` whatever the child. Nor is Oware's forfeited grand slam, which
/// captures nothing. So both rule sets have the same un-captures; `rules` is only for
/// the debug check that plays each one forward.
///
/// Turned round, `child` is the board after the capture in the mover's frame. The
/// captured pits were a chain of opponent pits holding 2 or 3 after sowing, from the pit
/// `j` of the last seed down; now empty. The mover sowed from an own pit `o` through
/// every pit `o+1..=j`, each of which holds a seed after sowing: so `o` is the highest
/// empty own pit, the chain is the lowest run of empty opponent pits (any empty opponent
/// pit below it would be on the path), it starts where that run does, and the pit below
/// it, if an opponent pit, holds neither 2 nor 3 (else the chain would go on). Each
/// filling of the chain with 2s and 3s that sums to `captured` is the board after sowing;
/// taking the sowing back gives the parents: `k` whole laps (every pit but `o` gives back
/// `k` seeds) and one more seed from each pit `o+1..=j`.
#[inline]
pub fn for_each_uncapture(
    child: &Board,
    captured: usize,
    rules: Rules,
    mut f: impl FnMut(&Board, bool),
) {
    let p = child.p as usize;
    let np = 2 * p;
    // A capture leaving the opponent (the child's side to move) no seeds starves it: not
    // a capture exit (see above).
    if captured < 2 {
        return;
    }
    let after = turn(&child.pits, p);
    let mut zeros = 0u32;
    for (i, &c) in after.pits[..np].iter().enumerate() {
        zeros |= ((c == 0) as u32) << i;
    }
    let own = zeros & ((1 << p) - 1);
    let opponent = zeros >> p;
    // The opponent keeps seeds (child.own_seeds() > 0), and some pits are empty: the
    // origin and the chain.
    if own == 0 || opponent == 0 || opponent == (1 << p) - 1 {
        return;
    }
    let o = 31 - own.leading_zeros() as usize;
    let lo = p + opponent.trailing_zeros() as usize;
    let hi = lo + (!(opponent >> (lo - p))).trailing_zeros() as usize - 1;
    if lo > p && matches!(after.pits[lo - 1], 2 | 3) {
        return;
    }
    // Whole laps are possible only if no pit but `o` and the chain is empty.
    let others_empty = (zeros & !(1 << o)).count_ones() as usize > hi - lo + 1;
    for top in lo..=hi {
        let len = top - lo + 1;
        if captured < 2 * len {
            break;
        }
        if captured > 3 * len {
            continue;
        }
        // Which pits of the chain held 3 (the others 2): `threes` of the `len`.
        let threes = (captured - 2 * len) as u32;
        for mask in 0u32..1 << len {
            if mask.count_ones() != threes {
                continue;
            }
            let mut sown = after;
            for (b, pit) in (lo..=top).enumerate() {
                sown.pits[pit] = 2 + (mask >> b & 1) as u8;
            }
            // Laps each pit can give back: the path's pits keep one seed for the last one.
            let laps = if others_empty || top < hi {
                0
            } else {
                (0..np)
                    .filter(|&x| x != o)
                    .map(|x| sown.pits[x] - (x > o && x <= top) as u8)
                    .min()
                    .unwrap_or(0)
            };
            let mut parent = sown;
            for x in o + 1..=top {
                parent.pits[x] -= 1;
            }
            let mut s = (top - o) as u8;
            for k in 0..=laps {
                if k > 0 {
                    for x in 0..np {
                        if x != o {
                            parent.pits[x] -= 1;
                        }
                    }
                    s += (np - 1) as u8;
                }
                parent.pits[o] = s;
                debug_assert!({
                    let (pits, c, starved) = play_raw(&parent, rules, o);
                    c as usize == captured && !starved && turn(&pits, p) == *child
                });
                f(&parent, parent.is_stored());
            }
        }
    }
}

/// Whether sowing pit `o` of `parent` is a legal in-level move that leads to `child`: the
/// slow definition, which the fast test of [`for_each_unmove`] must agree with.
fn confirms(parent: &Board, rules: Rules, o: usize, child: &Board) -> bool {
    let p = parent.p as usize;
    let (pits, captured, starved) = play_raw(parent, rules, o);
    // A non-starving move is legal under both rule sets.
    captured == 0 && !starved && turn(&pits, p) == *child
}

/// Collects [`for_each_unmove`] into a vector (tests and tools; not for hot loops).
pub fn unmoves(child: &Board, rules: Rules) -> Vec<Board> {
    let mut v = Vec::new();
    for_each_unmove(child, rules, |b, _| v.push(*b));
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(counts: &[u32]) -> Board {
        Board::from_counts(counts.len() / 2, counts).unwrap()
    }

    fn find(moves: &Moves, pit: u8) -> Move {
        *moves.as_slice().iter().find(|m| m.pit == pit).unwrap()
    }

    /// Every board of `n` seeds on `p` pits per side (stored or not).
    fn all_boards(p: usize, n: usize, f: &mut impl FnMut(&Board)) {
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

    /// The solver's shortcut (no sowing for moves that cannot capture) against the full
    /// move generator, on every board of small levels, laps included.
    #[test]
    fn exits_agree_with_legal_moves() {
        for rules in [Rules::Awari, Rules::Oware] {
            for (p, top) in [(2, 16), (3, 18), (4, 13), (6, 9)] {
                let mut boards = 0;
                for n in 0..=top {
                    all_boards(p, n, &mut |board| {
                        boards += 1;
                        let mut caps = Vec::new();
                        let exits = for_each_exit(board, rules, |c, child| caps.push((c, *child)));
                        let moves = legal_moves(board, rules);
                        let want = if let Some(v) = moves.terminal_value {
                            Exits::Terminal(v)
                        } else if moves.as_slice().iter().all(|m| m.ends_game) {
                            Exits::AllEnd
                        } else {
                            let stay = moves.as_slice().iter().filter(|m| m.captured == 0).count();
                            Exits::Moves { stay: stay as u8 }
                        };
                        assert_eq!(exits, want, "{rules} {board:?}");
                        assert_eq!(super::exits(board, rules), want, "{rules} {board:?}");
                        let want_caps: Vec<(u8, Board)> = match want {
                            Exits::Moves { .. } => moves
                                .as_slice()
                                .iter()
                                .filter(|m| m.captured > 0)
                                .map(|m| (m.captured, m.child))
                                .collect(),
                            _ => Vec::new(),
                        };
                        if matches!(want, Exits::Moves { .. }) {
                            assert_eq!(caps, want_caps, "{rules} {board:?}");
                        }
                    });
                }
                assert!(boards > 4_000, "{p} pits: only {boards} boards");
            }
        }
    }

    /// Un-captures against forward moves: on every board of small levels and every board
    /// size, the (parent, child, captured) triples that un-capturing each child gives are
    /// exactly those of the parents' legal capturing moves that do not end the game
    /// (Awari's forced starving moves do; Oware's forfeited grand slam captures nothing),
    /// stored parents and others alike.
    #[test]
    fn uncaptures_are_the_capturing_moves_taken_back() {
        use std::collections::HashSet;
        for rules in [Rules::Awari, Rules::Oware] {
            for (p, top) in [(2, 16), (3, 14), (4, 11), (5, 9), (6, 8), (7, 7), (8, 6)] {
                let mut edges = 0;
                for n in 2..=top {
                    let mut forward = HashSet::new();
                    all_boards(p, n, &mut |board| {
                        for m in legal_moves(board, rules).as_slice() {
                            if m.captured > 0 && !m.ends_game {
                                assert!(forward.insert((*board, m.child, m.captured as usize)));
                            }
                        }
                    });
                    let mut back = HashSet::new();
                    for m in 0..=n - 2 {
                        all_boards(p, m, &mut |child| {
                            for_each_uncapture(child, n - m, rules, |parent, stored| {
                                assert_eq!(stored, parent.is_stored());
                                assert!(
                                    back.insert((*parent, *child, n - m)),
                                    "{rules} {parent:?} -> {child:?} twice"
                                );
                            });
                        });
                    }
                    assert!(forward == back, "{rules} P={p} level {n}");
                    edges += forward.len();
                }
                assert!(edges > 1_000, "{rules} P={p}: only {edges} captures");
            }
        }
    }

    /// In-level children against the full move generator, on every board of small levels.
    #[test]
    fn stays_are_the_moves_that_stay_in_the_level() {
        for rules in [Rules::Awari, Rules::Oware] {
            for (p, top) in [(2, 16), (3, 14), (4, 11), (6, 8), (8, 6)] {
                for n in 0..=top {
                    all_boards(p, n, &mut |board| {
                        let mut got = Vec::new();
                        for_each_stay(board, rules, 0, |o, c| {
                            got.push((o as u8, *c));
                            true
                        });
                        let want: Vec<(u8, Board)> = legal_moves(board, rules)
                            .as_slice()
                            .iter()
                            .filter(|m| m.stays_in_level())
                            .map(|m| (m.pit, m.child))
                            .collect();
                        assert_eq!(got, want, "{rules} {board:?}");
                    });
                }
            }
        }
    }

    #[test]
    fn simple_sow_and_turn() {
        let board = b(&[4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4]);
        let m = legal_moves(&board, Rules::Awari);
        assert_eq!(m.len(), 6);
        let m0 = find(&m, 0);
        assert_eq!(m0.captured, 0);
        // Mover's frame after sowing pit 0: 0 5 5 5 5 4 | 4 ... ; turned: opponent first.
        assert_eq!(m0.child, b(&[4, 4, 4, 4, 4, 4, 0, 5, 5, 5, 5, 4]));
    }

    #[test]
    fn lap_of_twelve_or_more_skips_origin() {
        // 12 seeds from pit 2 on a 2x6 board: 11 pits get one, the 12th seed goes to pit 3
        // again, never back into pit 2.
        let mut counts = [0u32; 12];
        counts[2] = 12;
        counts[8] = 1;
        let board = b(&counts);
        let m = find(&legal_moves(&board, Rules::Awari), 2);
        let mut expect = [1u8; 12];
        expect[2] = 0;
        expect[3] = 2;
        expect[8] = 2;
        // Last seed in pit 3 (own row): no capture.
        assert_eq!(m.captured, 0);
        assert_eq!(m.child.turned().pits(), &expect[..]);
        // 23 seeds: two full laps (22) plus one; origin still empty.
        let mut counts = [0u32; 12];
        counts[0] = 23;
        counts[7] = 1;
        let m = find(&legal_moves(&b(&counts), Rules::Awari), 0);
        let after = m.child.turned();
        assert_eq!(after.get(0), 0);
        assert_eq!(after.get(1), 3);
        assert_eq!(after.get(7), 3);
        assert_eq!(after.get(11), 2);
        assert_eq!(after.seeds(), 24);
    }

    #[test]
    fn capture_chain_stops_at_own_row_and_at_1_or_4() {
        // Sow pit 5 (3 seeds) into 6, 7, 8: they hold 1, 2, 1 before -> 2, 3, 2: all
        // captured back to pit 6, and the chain stops at the own row (pit 5).
        let board = b(&[0, 0, 0, 0, 1, 3, 1, 2, 1, 0, 0, 5]);
        let m = find(&legal_moves(&board, Rules::Awari), 5);
        assert_eq!(m.captured, 7);
        assert_eq!(m.child.turned(), b(&[0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 5]));
        // A pit of 4 in the chain stops it: 6 holds 3 -> 4.
        let board = b(&[0, 0, 0, 0, 1, 3, 3, 2, 1, 0, 0, 5]);
        let m = find(&legal_moves(&board, Rules::Awari), 5);
        assert_eq!(m.captured, 5);
        assert_eq!(m.child.turned(), b(&[0, 0, 0, 0, 1, 0, 4, 0, 0, 0, 0, 5]));
        // A pit of 1 stops it: 7 holds 0 -> 1.
        let board = b(&[0, 0, 0, 0, 1, 3, 1, 0, 1, 0, 0, 5]);
        let m = find(&legal_moves(&board, Rules::Awari), 5);
        assert_eq!(m.captured, 2);
        // Last seed in own row: nothing captured.
        let board = b(&[0, 0, 1, 0, 1, 0, 1, 1, 1, 0, 0, 5]);
        let m = find(&legal_moves(&board, Rules::Awari), 2);
        assert_eq!(m.captured, 0);
    }

    #[test]
    fn grand_slam_under_each_rule_set() {
        // Pit 5 with 2 seeds into 6 and 7, each holding 1 -> 2 and 2: all opponent seeds.
        // Pit 0 gives another move that does not starve.
        let board = b(&[1, 0, 0, 0, 0, 2, 1, 1, 0, 0, 0, 0]);
        let aw = legal_moves(&board, Rules::Awari);
        assert_eq!(aw.as_slice().iter().map(|m| m.pit).collect::<Vec<_>>(), [0]);
        let ow = legal_moves(&board, Rules::Oware);
        assert_eq!(ow.len(), 2);
        let slam = find(&ow, 5);
        assert_eq!(slam.captured, 0);
        assert!(!slam.ends_game);
        assert_eq!(
            slam.child.turned(),
            b(&[1, 0, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0])
        );
        // Awari, every move starves: forced, the mover takes every seed left.
        let board = b(&[0, 0, 0, 0, 0, 2, 1, 1, 0, 0, 0, 0]);
        let aw = legal_moves(&board, Rules::Awari);
        assert_eq!(aw.len(), 1);
        let m = find(&aw, 5);
        assert!(m.ends_game);
        assert_eq!(m.captured, 4);
        // Same under Oware: no capture, the game goes on.
        let ow = legal_moves(&board, Rules::Oware);
        assert_eq!(ow.len(), 1);
        assert!(ow.as_slice()[0].stays_in_level());
    }

    #[test]
    fn feeding_and_game_end() {
        // Opponent empty; pit 5 (1 seed) feeds, pit 0 (1 seed) does not.
        let board = b(&[1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0]);
        for rules in [Rules::Awari, Rules::Oware] {
            let m = legal_moves(&board, rules);
            assert_eq!(m.as_slice().iter().map(|m| m.pit).collect::<Vec<_>>(), [5]);
            assert_eq!(m.terminal_value, None);
        }
        // Nobody can be fed: Awari plays a forced move worth everything, Oware ends.
        let board = b(&[2, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        let aw = legal_moves(&board, Rules::Awari);
        assert_eq!(aw.len(), 2);
        assert!(aw.as_slice().iter().all(|m| m.ends_game));
        let ow = legal_moves(&board, Rules::Oware);
        assert!(ow.is_empty());
        assert_eq!(ow.terminal_value, Some(3));
        // No seeds of my own: the opponent takes the rest.
        let board = b(&[0, 0, 0, 0, 0, 0, 0, 3, 0, 1, 0, 0]);
        for rules in [Rules::Awari, Rules::Oware] {
            let m = legal_moves(&board, rules);
            assert!(m.is_empty());
            assert_eq!(m.terminal_value, Some(-4));
        }
    }

    #[test]
    fn unmoves_invert_a_known_move() {
        let parent = b(&[4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4]);
        let child = find(&legal_moves(&parent, Rules::Awari), 3).child;
        assert!(unmoves(&child, Rules::Awari).contains(&parent));
    }
}
