//! Packing, probing and damage of packed levels.

use std::fs;

use super::*;
use crate::db::layout::packed_path;

fn expect(positions: u64) -> Expect {
    Expect {
        rules: Rules::Awari,
        pits: 6,
        seeds: 9,
        positions,
    }
}

fn plain(block: u32) -> PackOptions {
    PackOptions {
        zstd_level: 3,
        block,
        model: Model::Plain,
    }
}

#[test]
fn pack_probe_damage_and_truncation() {
    let dir = tempfile::tempdir().unwrap();
    let path = packed_path(dir.path(), 9);
    let payload: Vec<u8> = (0..10_000u32).map(|i| (i % 7 + i / 1000) as u8).collect();
    let opts = plain(1000);
    let h = pack_payload(&path, Rules::Awari, 6, 9, &payload, &opts, &[]).unwrap();
    assert_eq!(h.blocks, 10);
    let first = fs::read(&path).unwrap();
    let l = PackedLevel::open(&path, &expect(10_000)).unwrap();
    assert_eq!(l.model(), Model::Plain);
    for i in (0..10_000).step_by(37) {
        assert_eq!(l.stored(i).unwrap(), payload[i as usize] as i8);
    }
    assert_eq!(l.decode_all(&[]).unwrap(), payload);
    // Deterministic.
    pack_payload(&path, Rules::Awari, 6, 9, &payload, &opts, &[]).unwrap();
    assert_eq!(fs::read(&path).unwrap(), first);
    // Wrong expectation.
    let e = PackedLevel::open(&path, &expect(9_999)).err().unwrap();
    assert!(e.to_string().contains("positions"), "{e}");
    // A flipped byte in the last block's data: named by level and block.
    let mut bad = first.clone();
    let n = bad.len();
    bad[n - 3] ^= 0x40;
    fs::write(&path, &bad).unwrap();
    let l = PackedLevel::open(&path, &expect(10_000)).unwrap();
    assert_eq!(l.stored(5).unwrap(), payload[5] as i8);
    let e = l.stored(9_500).unwrap_err().to_string();
    assert!(e.contains("level 9, block 9 of 10"), "{e}");
    let e = l.check_checksum(&[]).err().unwrap();
    assert!(e.to_string().contains("block 9"), "{e}");
    // Truncated.
    fs::write(&path, &first[..n - 1]).unwrap();
    let e = PackedLevel::open(&path, &expect(10_000)).err().unwrap();
    assert!(e.to_string().contains("truncated"), "{e}");
    fs::write(&path, &first[..100]).unwrap();
    let e = PackedLevel::open(&path, &expect(10_000)).err().unwrap();
    assert!(e.to_string().contains("truncated"), "{e}");
}

/// Packs written before the model byte (version 1) read as plain.
#[test]
fn version_1_reads_as_plain() {
    let dir = tempfile::tempdir().unwrap();
    let path = packed_path(dir.path(), 9);
    let payload: Vec<u8> = (0..5_000u32).map(|i| (i % 11) as u8).collect();
    let h = pack_payload(&path, Rules::Awari, 6, 9, &payload, &plain(1024), &[]).unwrap();
    let mut file = fs::read(&path).unwrap();
    assert_eq!(file[8..12], 2u32.to_le_bytes());
    // What version 1 wrote: version 1, bytes 52..56 zero, the table checksum over it.
    file[8..12].copy_from_slice(&1u32.to_le_bytes());
    file[52] = 0;
    let table_end = HEADER_LEN + PackHeader::table_len(h.blocks);
    let sum = table_checksum(&file[0..56], &file[HEADER_LEN..table_end]);
    file[56..64].copy_from_slice(&sum.to_le_bytes());
    fs::write(&path, &file).unwrap();
    let l = PackedLevel::open(&path, &expect(5_000)).unwrap();
    assert_eq!(l.model(), Model::Plain);
    assert_eq!(l.stored(4_321).unwrap(), payload[4_321] as i8);
    assert_eq!(l.decode_all(&[]).unwrap(), payload);
    // An unknown model or version is refused with a one-line reason.
    for (at, byte, want) in [(52, 7, "unknown value model 7"), (8, 3, "version 3")] {
        let mut f = file.clone();
        f[8..12].copy_from_slice(&2u32.to_le_bytes());
        f[at] = byte;
        let sum = table_checksum(&f[0..56], &f[HEADER_LEN..table_end]);
        f[56..64].copy_from_slice(&sum.to_le_bytes());
        fs::write(&path, &f).unwrap();
        let e = PackedLevel::open(&path, &expect(5_000)).err().unwrap();
        assert!(e.to_string().contains(want), "{e}");
    }
}

/// Exit-model packs of solved levels: the stored bytes differ from the values, the
/// values come back whole with the levels below, and damage is named.
#[test]
fn exit_model_round_trip() {
    use crate::db::store::LevelFile;
    let dir = tempfile::tempdir().unwrap();
    let (rules, pits, top) = (Rules::Oware, 4, 11);
    let index = Index::new(pits, top).unwrap();
    let levels = crate::solve::level::solve_in_memory(rules, &index, top);
    let all: Vec<&[u8]> = levels.iter().map(Vec::as_slice).collect();
    let opts = PackOptions {
        zstd_level: 3,
        block: 1024,
        model: Model::Exits,
    };
    for n in 0..=top {
        let (truth, below) = (all[n], &all[..n]);
        let path = packed_path(dir.path(), n);
        let want = Expect::level(rules, &index, n);
        let h = pack_payload(&path, rules, pits, n, truth, &opts, below).unwrap();
        assert_eq!(h.level.checksum, checksum(truth));
        let l = PackedLevel::open(&path, &want).unwrap();
        assert_eq!(l.model(), Model::Exits);
        assert_eq!(l.decode_all(below).unwrap(), truth, "level {n}");
        let mut stored = vec![0u8; truth.len()];
        assert!(l.decode_into(&mut stored).is_empty());
        if n == top {
            assert_ne!(stored, truth);
            // The same bytes with any number of threads.
            let first = fs::read(&path).unwrap();
            for threads in [1, 3] {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .unwrap();
                pool.install(|| pack_payload(&path, rules, pits, n, truth, &opts, below))
                    .unwrap();
                assert_eq!(fs::read(&path).unwrap(), first, "{threads} threads");
            }
            // The levels below are needed, and a value alone is refused.
            let e = l.decode_all(&below[..3]).unwrap_err().to_string();
            assert!(
                e.contains("exit model") && e.contains("levels 0..11"),
                "{e}"
            );
            let e = LevelFile::Packed(l).value(0).unwrap_err().to_string();
            assert!(e.contains("exit model"), "{e}");
            // A flipped byte in the last block: named by level and block.
            let mut bad = fs::read(&path).unwrap();
            let len = bad.len();
            bad[len - 5] ^= 0x08;
            fs::write(&path, &bad).unwrap();
            let l = PackedLevel::open(&path, &want).unwrap();
            let blocks = truth.len().div_ceil(1024);
            let e = l.decode_all(below).unwrap_err().to_string();
            assert!(
                e.contains(&format!("level {n}, block {} of {blocks}", blocks - 1)),
                "{e}"
            );
        }
    }
}
