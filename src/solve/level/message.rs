//! The words ranks send each other, 8 bytes little-endian each, with the index of a
//! position held by the receiver in the low bits and what happened above them.
//!
//! - the forward pass: [`raise`], a capture's value for a parent's best exit;
//! - the backward pass: [`encode`] and [`decode`] of a [`Message`].

use super::backward::{Message, NO_PIT};

/// Bits of a position's index in a backward word: levels of a build over ranks hold at
/// most `2^54` positions (checked before such a build starts).
pub const INDEX_BITS: u32 = 54;
/// The index in a backward word.
pub(crate) const INDEX: u64 = (1 << INDEX_BITS) - 1;
/// Without [`CHECK`]: a child of the position settled, won for its side to move with this
/// bit, lost without. With it: the position is lost (every in-level child won).
const WON: u64 = 1 << 63;
/// A check of whether the position is lost, going on at its child by the pit in bits
/// 58..62, held by the receiver; bits 54..58 are the pit of a child known won.
const CHECK: u64 = 1 << 62;
/// A pit field's value for no pit.
const NONE: u64 = 15;

/// The word of a backward message.
#[inline]
pub(crate) fn encode(m: Message) -> u64 {
    match m {
        Message::Settled { qi, won } => qi | if won { WON } else { 0 },
        Message::Lost { qi } => CHECK | WON | qi,
        Message::Check { qi, pit, skip } => {
            let skip = if skip == NO_PIT { NONE } else { skip as u64 };
            CHECK | (pit as u64) << 58 | skip << 54 | qi
        }
    }
}

/// The backward message of a word [`encode`] wrote.
#[inline]
pub(crate) fn decode(x: u64) -> Message {
    let qi = x & INDEX;
    if x & CHECK == 0 {
        return Message::Settled {
            qi,
            won: x & WON != 0,
        };
    }
    if x & WON != 0 {
        return Message::Lost { qi };
    }
    let skip = x >> 54 & NONE;
    Message::Check {
        qi,
        pit: (x >> 58 & NONE) as u8,
        skip: if skip == NONE { NO_PIT } else { skip as u8 },
    }
}

/// Bits of a position's index in a forward word.
const RAISE_BITS: u32 = 56;
// Every index a backward word holds fits a forward one too.
const _: () = assert!(INDEX < 1 << RAISE_BITS);

/// The word of the forward pass that raises the best exit of position `qi` to at least
/// `x`.
#[inline]
pub(crate) fn raise(qi: u64, x: i8) -> u64 {
    qi | (x as u8 as u64) << RAISE_BITS
}

/// The position and value of a [`raise`] word.
#[inline]
pub(crate) fn raised(word: u64) -> (u64, i8) {
    (
        word & ((1 << RAISE_BITS) - 1),
        (word >> RAISE_BITS) as u8 as i8,
    )
}

/// The words of a buffer of messages.
pub(crate) fn words(bytes: &[u8]) -> impl Iterator<Item = u64> + '_ {
    bytes
        .chunks_exact(8)
        .map(|w| u64::from_le_bytes(w.try_into().unwrap()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every message round-trips through its word, at the largest indices and every pit.
    #[test]
    fn messages_round_trip() {
        let indices = [0, 1, 12_345, INDEX - 1, INDEX];
        let mut all = Vec::new();
        for qi in indices {
            for won in [false, true] {
                all.push(Message::Settled { qi, won });
            }
            all.push(Message::Lost { qi });
            for pit in 0..crate::game::rules::MAX_PITS as u8 {
                for skip in (0..crate::game::rules::MAX_PITS as u8).chain([NO_PIT]) {
                    all.push(Message::Check { qi, pit, skip });
                }
            }
        }
        let mut seen = std::collections::HashSet::new();
        for m in all {
            let w = encode(m);
            assert_eq!(decode(w), m, "{w:#x}");
            assert!(seen.insert(w), "two messages share {w:#x}");
        }
    }

    /// Every raise round-trips, at the largest indices and every value a level can have.
    #[test]
    fn raises_round_trip() {
        for qi in [0, 7, (1 << RAISE_BITS) - 1] {
            for x in -127..=127i8 {
                assert_eq!(raised(raise(qi, x)), (qi, x));
            }
        }
    }
}
