//! `awari bench`: the build timed per thread count, and `--probe`.

use super::usage_fail;
use crate::common::{ok, run};

#[test]
fn bench_times_each_thread_count_and_writes_csv() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("bench.csv");
    let scratch = dir.path().join("scratch");
    let out = ok(&[
        "bench",
        "--max-seeds",
        "8",
        "--threads",
        "1,2",
        "--scratch",
        scratch.to_str().unwrap(),
        "--csv",
        csv.to_str().unwrap(),
    ]);
    assert!(
        out.contains("level files identical across thread counts: yes"),
        "{out}"
    );
    assert!(out.contains("2t/1t"), "{out}");
    // Level 8 has 75,504 positions; the total of levels 0..=8 is 125,879.
    assert!(out.contains("75,504") && out.contains("125,879"), "{out}");
    let rows = std::fs::read_to_string(&csv).unwrap();
    let lines: Vec<&str> = rows.lines().collect();
    // A header, nine levels and a total per thread count.
    assert_eq!(lines.len(), 1 + 2 * 10, "{rows}");
    assert!(lines[0].starts_with("level,positions,threads,seconds"));
    assert!(lines.iter().any(|l| l.starts_with("8,75504,2,")), "{rows}");
    assert!(!scratch.join("threads-1").exists() && !scratch.join("threads-2").exists());
    let e = usage_fail(&["bench", "--threads", "0"]);
    assert!(e.contains("--threads") && e.contains("1..=1024"), "{e}");
}

/// `bench --probe`: the latency of probes of a built database, raw and packed, and its
/// refusals.
#[test]
fn bench_probe_times_probes_of_raw_and_packed_levels() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_str().unwrap();
    ok(&["build", "--max-seeds", "8", "--dir", root]);
    let probe = |max: &str| {
        run(&[
            "bench",
            "--probe",
            "--dir",
            root,
            "--max-seeds",
            max,
            "--samples",
            "5000",
        ])
    };
    let (done, out, err) = probe("8");
    assert!(done, "{err}");
    assert!(
        out.starts_with("5,000 probes of levels 0..=8 (9 raw, 0 packed), warm: p50 "),
        "{out}"
    );
    ok(&["pack", "--dir", root, "--all", "--remove-raw"]);
    let (done, out, err) = probe("8");
    assert!(done, "{err}");
    assert!(out.contains("(0 raw, 9 packed)"), "{out}");
    // A level not built, no samples: one line each.
    let (done, _, err) = probe("9");
    assert!(
        !done && err.contains("level 9") && err.lines().count() == 2,
        "{err}"
    );
    let e = usage_fail(&["bench", "--probe", "--dir", root, "--samples", "0"]);
    assert!(e.contains("--samples must be 1..=1000000000, got 0"), "{e}");
}
