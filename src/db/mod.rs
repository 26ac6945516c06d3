//! The files (layer 2): where a database's levels live ([`layout`]), one writer per
//! folder ([`lock`]), raw level files ([`raw`]), packed levels ([`pack`]) with their value
//! model ([`model`]), rank's slices of levels ([`slice`]), one level file of any of these
//! forms, opened, probed ([`store`]) and read as a stream ([`source`]), the resident set
//! of finished levels that a level reads ([`stack`]), and the solver state saved inside a
//! level ([`checkpoint`]). DESIGN.md sections 4 and 6 to 9.

pub mod checkpoint;
pub mod dtc;
pub mod layout;
pub mod lock;
pub mod model;
pub mod pack;
pub mod raw;
pub mod slice;
pub mod source;
pub mod stack;
pub mod store;

/// The decoders of file headers fed random bytes, and valid headers with bytes changed:
/// an error, never a panic.
#[cfg(test)]
mod decoders {
    use std::path::Path;

    use proptest::prelude::*;

    use super::checkpoint::CheckpointHeader;
    use super::layout::Expect;
    use super::model::Model;
    use super::pack::{pack_payload, PackHeader, PackOptions, PackedLevel};
    use super::raw::Header;
    use super::slice::SliceHeader;
    use crate::game::rules::Rules;

    /// Every decoder on `bytes`: each may refuse them, none may panic.
    fn decode_all(bytes: &[u8]) {
        let path = Path::new("x");
        let _ = Header::decode(path, bytes);
        let _ = PackHeader::decode(path, bytes);
        let _ = SliceHeader::decode(path, bytes);
        let _ = CheckpointHeader::decode(path, bytes);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn random_bytes_are_refused_not_panicked(
            bytes in proptest::collection::vec(any::<u8>(), 0..6000)
        ) {
            decode_all(&bytes);
        }

        #[test]
        fn changed_headers_are_refused_not_panicked(
            at in proptest::collection::vec((0usize..4200, any::<u8>()), 1..6),
            cut in 0usize..4200,
        ) {
            let raw = Header {
                rules: Rules::Awari,
                pits: 6,
                seeds: 9,
                positions: 1000,
                checksum: 7,
            }
            .encode();
            let slice = SliceHeader {
                rules: Rules::Oware,
                pits: 4,
                seeds: 9,
                positions: 1000,
                checksum: 7,
                range: 300..600,
                ranks: 3,
                rank: 1,
            }
            .encode();
            for good in [&raw[..], &slice[..]] {
                let mut bytes = good.to_vec();
                for &(i, b) in &at {
                    if i < bytes.len() {
                        bytes[i] = b;
                    }
                }
                decode_all(&bytes);
                decode_all(&bytes[..cut.min(bytes.len())]);
            }
        }
    }

    /// A packed level with bytes changed anywhere, header, block table or blocks: opened
    /// and decoded, it is refused or read, never a panic.
    #[test]
    fn changed_packs_are_refused_not_panicked() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("level-009.awp");
        let payload: Vec<u8> = (0..5000u32).map(|i| (i * 7 % 19) as u8).collect();
        let opts = PackOptions {
            block: 512,
            model: Model::Plain,
            ..PackOptions::default()
        };
        pack_payload(&path, Rules::Awari, 6, 9, &payload, &opts, &[]).unwrap();
        let good = std::fs::read(&path).unwrap();
        let expect = Expect {
            rules: Rules::Awari,
            pits: 6,
            seeds: 9,
            positions: payload.len() as u64,
        };
        let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig::with_cases(300));
        let changes = proptest::collection::vec((0..good.len(), any::<u8>()), 1..4);
        // Cut short half the time: a file cut anywhere is refused at opening, so the blocks
        // are decoded only from whole files.
        let opened = std::cell::Cell::new(0);
        runner
            .run(
                &(changes, proptest::option::of(1..good.len())),
                |(changes, cut)| {
                    let mut bytes = good.clone();
                    for (i, b) in changes {
                        bytes[i] = b;
                    }
                    bytes.truncate(cut.unwrap_or(bytes.len()));
                    decode_all(&bytes);
                    let bad = dir.path().join("bad").join("level-009.awp");
                    std::fs::create_dir_all(bad.parent().unwrap()).unwrap();
                    std::fs::write(&bad, &bytes).unwrap();
                    if let Ok(level) = PackedLevel::open(&bad, &expect) {
                        opened.set(opened.get() + 1);
                        let mut out = vec![0u8; payload.len()];
                        let _ = level.decode_into(&mut out);
                        let _ = level.stored(4999);
                    }
                    Ok(())
                },
            )
            .unwrap();
        assert!(opened.get() > 20, "{} opened", opened.get());
    }

    /// Distance tables, raw and packed, with bytes changed anywhere: opened and read, each
    /// is refused or read, never a panic.
    #[test]
    fn changed_tables_are_refused_not_panicked() {
        use super::dtc::{dtc_packed_path, dtc_path, pack_table, write_distances, DistanceTable};
        use super::raw::Check;
        let dir = tempfile::tempdir().unwrap();
        let index = crate::game::index::Index::new(4, 9).unwrap();
        let expect = Expect::level(Rules::Oware, &index, 9);
        let n = expect.positions;
        write_distances(&dtc_path(dir.path(), 9), &expect, 5, |i| (i % 300) as u16).unwrap();
        let raw = std::fs::read(dtc_path(dir.path(), 9)).unwrap();
        pack_table(dir.path(), &expect, 5, 3, true).unwrap();
        let packed = std::fs::read(dtc_packed_path(dir.path(), 9)).unwrap();
        let bad = dir.path().join("bad");
        std::fs::create_dir_all(&bad).unwrap();
        let opened = std::cell::Cell::new(0);
        for (good, path) in [
            (&raw, dtc_path(&bad, 9)),
            (&packed, dtc_packed_path(&bad, 9)),
        ] {
            let mut runner =
                proptest::test_runner::TestRunner::new(ProptestConfig::with_cases(200));
            let changes = proptest::collection::vec((0..good.len(), any::<u8>()), 1..4);
            runner
                .run(
                    &(changes, proptest::option::of(0..good.len())),
                    |(changes, cut)| {
                        let mut bytes = good.clone();
                        for (i, b) in changes {
                            bytes[i] = b;
                        }
                        bytes.truncate(cut.unwrap_or(bytes.len()));
                        std::fs::write(&path, &bytes).unwrap();
                        if let Ok(Some(t)) =
                            DistanceTable::open(&bad, &expect, 5, Check::HeaderOnly)
                        {
                            opened.set(opened.get() + 1);
                            let _ = t.payload();
                            let _ = t.distance(n - 1);
                        }
                        Ok(())
                    },
                )
                .unwrap();
            // The raw table would be read before the packed one.
            std::fs::remove_file(&path).unwrap();
        }
        // Some changes leave a table that opens (a changed payload byte), and it was read.
        assert!(opened.get() > 20, "{} opened", opened.get());
    }
}
