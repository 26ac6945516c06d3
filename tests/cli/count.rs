//! `awari count`: the Romein-Bal total, totals past 2^64 (and the plan that refuses them),
//! and a reader that closes the output early.

use std::fs;
use std::process::{Command, Stdio};

use super::{fail, usage_fail};
use crate::common::{ok, text, BIN};

#[test]
fn count_gives_the_romein_bal_total() {
    let out = ok(&["count"]);
    assert!(out.contains("889,063,398,406"), "{out}");
    assert!(out.contains("203,648,015,935"), "{out}");
    let e = usage_fail(&["count", "--pits", "9"]);
    assert!(e.contains("--pits must be 2..=8, got 9"), "{e}");
}

/// Totals past 2^64 are not wrapped: the positions of levels 0..=105 on 8 pits per side
/// come to 24,688,575,313,358,965,074 (each level's fit 64 bits); a plan whose figures per
/// node would pass 2^64 bytes is refused, naming the last level it can plan.
#[test]
fn totals_past_64_bits_are_counted_or_refused() {
    let out = ok(&["count", "--pits", "8", "--max-seeds", "105"]);
    assert!(
        out.contains("total levels 0..=105: 24,688,575,313,358,965,074 positions"),
        "{out}"
    );
    let tmp = tempfile::tempdir().unwrap();
    let csv = tmp.path().join("bench.csv");
    fs::write(
        &csv,
        "level,positions,threads,seconds,forward_seconds,backward_seconds,positions_per_second_per_thread,peak_rss_bytes\n\
         20,80214915,1,40.1,10.0,30.0,2000000,1\n",
    )
    .unwrap();
    let (dir, csv) = (tmp.path().to_str().unwrap(), csv.to_str().unwrap());
    let plan = |top: &'static str| {
        vec![
            "plan",
            "--pits",
            "8",
            "--max-seeds",
            top,
            "--memory-per-node",
            "100",
            "--cores-per-node",
            "2",
            "--disk-per-node",
            "100",
            "--dir",
            dir,
            "--rates",
            csv,
        ]
    };
    // Levels 0..=100 raw (12.3 EB) and two of level 100's fast state (7.0 EB) pass 2^64
    // bytes (18.4 EB).
    let e = fail(&plan("110"));
    assert!(
        e.contains("level 100 of 8 pits per side needs more than 2^64 bytes a node")
            && e.contains("plan up to level 99 at most, or on more nodes"),
        "{e}"
    );
    let out = ok(&plan("99"));
    assert!(
        out.contains("total: 10,644,276,044,892,071,165 positions")
            && out.contains("10644276.04 TB of raw levels"),
        "{out}"
    );
}

/// A reader that stops early (`awari count | head -1`) ends the output quietly: no error
/// line, success.
#[test]
fn closed_output_is_not_an_error() {
    let mut child = Command::new(BIN)
        .args(["count", "--pits", "8", "--max-seeds", "100"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Close the reading end before the table is written.
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{:?}", out.status);
    assert_eq!(text(&out.stderr), "");
}
