//! `awari plan`: level sizes, memory and disk per node, and the rates it plans with.

use std::fs;

use crate::common::{ok, run};

#[test]
fn plan_gives_level_sizes_memory_and_what_does_not_fit() {
    let tmp = tempfile::tempdir().unwrap();
    // A bench CSV instead of a calibration run: 2,000,000 positions/s/thread on level 20.
    let csv = tmp.path().join("bench.csv");
    fs::write(
        &csv,
        "level,positions,threads,seconds,forward_seconds,backward_seconds,positions_per_second_per_thread,peak_rss_bytes\n\
         20,80214915,1,40.1,10.0,30.0,2000000,1\n\
         total,216135140,1,100.0,,,2000000,1\n",
    )
    .unwrap();
    let run = |memory: &str| {
        ok(&[
            "plan",
            "--max-seeds",
            "48",
            "--nodes",
            "16",
            "--memory-per-node",
            memory,
            "--cores-per-node",
            "16",
            "--disk-per-node",
            "200",
            "--rates",
            csv.to_str().unwrap(),
        ])
    };
    let out = run("64");
    let row = |out: &str, n: usize| -> Vec<String> {
        out.lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .find(|w| w.first() == Some(&n.to_string().as_str()) && w.len() > 10)
            .unwrap_or_else(|| panic!("no row for level {n}:\n{out}"))
            .iter()
            .map(|s| s.to_string())
            .collect()
    };
    // Level 48: 203,648,015,935 positions over 16 nodes, each with the fast state of its
    // slice (2.125 bytes a position, 27.0 GB) and its slices of the lower levels read as
    // streams (16 MB of buffers).
    let r48 = row(&out, 48);
    assert_eq!(r48[1], "203,648,015,935", "{out}");
    assert_eq!(r48[2], "fast/stream", "{out}");
    assert_eq!(&r48[3..9], ["27.1", "GB", "27.0", "GB", "0", "B"], "{out}");
    assert_eq!(r48.last().unwrap(), "yes", "{out}");
    assert_eq!(row(&out, 16)[1], "12,685,179");
    assert!(out.contains("every level fits"), "{out}");
    assert!(out.contains("2000000 positions/s/thread"), "{out}");
    // 8 GB nodes: the fast state up to level 42, the compact one from level 43 (73.1
    // billion positions, 5.2 GB a node), the lean one from level 46 (9.6 GB a node even
    // compact; lean 2.4 GB): every level fits, level 48 in 3.6 GB a node.
    let out = run("8");
    assert_eq!(row(&out, 42)[2], "fast/stream", "{out}");
    assert_eq!(row(&out, 43)[2], "compact/stream", "{out}");
    assert_eq!(row(&out, 45)[2], "compact/stream", "{out}");
    assert_eq!(row(&out, 46)[2], "lean/stream", "{out}");
    assert_eq!(&row(&out, 48)[2..5], ["lean/stream", "3.6", "GB"], "{out}");
    assert!(out.contains("every level fits"), "{out}");
    // 2 GB nodes: compact from level 37, lean from 39; level 46 (2.4 GB a node even lean)
    // is the first too big.
    let out = run("2");
    assert_eq!(row(&out, 36)[2], "fast/stream", "{out}");
    assert_eq!(row(&out, 37)[2], "compact/stream", "{out}");
    assert_eq!(row(&out, 39)[2], "lean/stream", "{out}");
    assert_eq!(row(&out, 45).last().unwrap(), "yes", "{out}");
    assert_eq!(row(&out, 46).last().unwrap(), "memory", "{out}");
    assert!(
        out.contains("memory: level 46 is the first that does not fit")
            && out.contains("every level fits on 29 nodes of 2.0 GB"),
        "{out}"
    );
    // One node of 256 GB and 64 cores: every level fits, level 48 with the compact state
    // (229.1 GB) and its lower levels read as a stream.
    let out = ok(&[
        "plan",
        "--max-seeds",
        "48",
        "--memory-per-node",
        "256",
        "--cores-per-node",
        "64",
        "--disk-per-node",
        "2000",
        "--rates",
        csv.to_str().unwrap(),
    ]);
    let r48 = row(&out, 48);
    assert_eq!(r48[2], "compact/stream", "{out}");
    assert_eq!(
        &r48[3..9],
        ["229.2", "GB", "229.1", "GB", "0", "B"],
        "{out}"
    );
    assert!(out.contains("every level fits"), "{out}");
    // Built levels: their bytes on disk (level 4: 4096 + 1,365 bytes).
    let root = tmp.path().join("db");
    let r = root.to_str().unwrap();
    ok(&["build", "--max-seeds", "4", "--dir", r]);
    let csv = csv.to_str().unwrap();
    let out = ok(&["plan", "--max-seeds", "6", "--dir", r, "--rates", csv]);
    let line = |n: usize| {
        out.lines()
            .find(|l| l.split_whitespace().next() == Some(&n.to_string()))
            .unwrap()
            .to_string()
    };
    // With the time the build took, from the rates file it wrote.
    assert!(line(4).ends_with("yes (built: 5 kB raw in 0.0 s)"), "{out}");
    assert!(line(5).ends_with("yes"), "{out}");
    let recorded = fs::read_to_string(root.join("awari-6/rates.csv")).unwrap();
    assert_eq!(recorded.lines().count(), 6, "{recorded}");
    assert!(
        recorded.lines().nth(5).unwrap().starts_with("4,1365,"),
        "{recorded}"
    );
    // Checkpoints: a level's disk counts two of its solver state, the one being written
    // and the one before. Levels 0..=13 take 5.2 MB raw (1.9 MB packed at the default
    // ratio), level 13's checkpoints 10.5 MB (twice 5,236,680 bytes of fast state and a
    // 4,096-byte header). On 16 MB both fit raw; on 14 MB one of them (the build keeps one
    // at a time); on 10 MB one beside the packed levels. Levels 0..=14 take 9.6 MB raw, 3.5
    // MB packed, and a checkpoint of level 14 9.3 MB: on 11 MB none fits beside them.
    let empty = tmp.path().join("empty");
    fs::create_dir_all(&empty).unwrap();
    let plan_to = |top: &str, disk: Option<&str>, more: &[&str]| {
        let mut a = vec![
            "plan",
            "--max-seeds",
            top,
            "--memory-per-node",
            "24",
            "--cores-per-node",
            "2",
            "--dir",
            empty.to_str().unwrap(),
            "--rates",
            csv,
        ];
        if let Some(d) = disk {
            a.extend_from_slice(&["--disk-per-node", d]);
        }
        a.extend_from_slice(more);
        ok(&a)
    };
    let plan13 = |disk: Option<&str>, more: &[&str]| plan_to("13", disk, more);
    let line = |out: &str, n: usize| {
        out.lines()
            .find(|l| l.split_whitespace().next() == Some(&n.to_string()))
            .unwrap()
            .to_string()
    };
    let out = plan13(Some("0.016"), &[]);
    assert!(line(&out, 13).ends_with("yes"), "{out}");
    assert!(
        out.contains("every level fits") && !out.contains("raw, from"),
        "{out}"
    );
    let out = plan13(Some("0.014"), &[]);
    let r13 = line(&out, 13);
    assert!(r13.contains(" 5 MB ") && r13.contains(" 10 MB "), "{out}");
    assert!(r13.ends_with("yes, one checkpoint at a time"), "{out}");
    assert!(line(&out, 12).ends_with("yes"), "{out}");
    assert!(
        out.contains("and up to 10 MB of checkpoints")
            && out.contains("disk: raw levels and checkpoints run out of disk at level 13")
            && out.contains("needs 12 MB per node")
            && out.contains("raw, from level 13 on the build keeps one checkpoint at a time"),
        "{out}"
    );
    let out = plan13(Some("0.010"), &[]);
    assert!(
        line(&out, 13).ends_with("disk: packed, one checkpoint at a time"),
        "{out}"
    );
    let out = plan13(Some("0.010"), &["--checkpoint-every", "off"]);
    assert!(
        line(&out, 13).ends_with("yes") && !out.contains("of checkpoints"),
        "{out}"
    );
    assert!(out.contains("every level fits"), "{out}");
    let out = plan_to("14", Some("0.011"), &[]);
    assert!(
        line(&out, 14).ends_with("yes, no room for a checkpoint")
            && out.contains("raw, from level 14 on the build has no room for a checkpoint"),
        "{out}"
    );
    // Without --disk-per-node, the checkpoints of a level being built in the folder count
    // as the database's room, as the levels built do.
    let dir = empty.join("awari-6");
    fs::create_dir_all(&dir).unwrap();
    fs::write(dir.join("level-013.t05.awc"), vec![0u8; 3_000_000]).unwrap();
    let out = plan13(None, &[]);
    assert!(
        out.contains(" disk (free, and 3 MB of checkpoints)"),
        "{out}"
    );
}

/// `awari plan` in a folder whose builds recorded their rates: it plans with those of the
/// largest levels, says which and from which file, and runs no calibration.
#[test]
fn plan_takes_the_rates_a_build_recorded() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("db");
    let dir = root.join("awari-6");
    fs::create_dir_all(&dir).unwrap();
    // Levels 22..=25 of Awari on 2 threads, quiet (the CPU time near twice the wall
    // time); level 25 with the compact state and a stream. A level 24 line cut short
    // (a killed build) and a foreign line are left out.
    fs::write(
        dir.join("rates.csv"),
        "level,positions,threads,seconds,forward_seconds,backward_seconds,positions_per_second_per_thread,peak_rss_bytes,cpu_seconds,state,lower,finished_unix\n\
         22,180498825,2,22.562,7.0,15.0,4000063,,42.868,fast,random,1764734400\n\
         23,264623580,2,33.926,11.0,22.0,3900011,,64.459,fast,random,1764734400\n\
         not,a,line\n\
         24,382628610,2,50.346,17.0,33.0,3799990,,95.657,fast,random,1764734400\n\
         25,546177996,2,110.712,36.0,73.0,2466661,,210.353,compact,stream,1764734400\n\
         24,382628610,2,10.0,",
    )
    .unwrap();
    // Level 27 planned on 2 cores and 24 GB from the folder's rates.
    let plan = || {
        run(&[
            "plan",
            "--max-seeds",
            "27",
            "--dir",
            root.to_str().unwrap(),
            "--cores-per-node",
            "2",
            "--memory-per-node",
            "24",
        ])
    };
    let (done, stdout, stderr) = plan();
    assert!(done, "{stderr}");
    assert!(!stderr.contains("calibrating"), "{stderr}");
    assert!(
        stderr.contains("2 line(s) of") && stderr.contains("rates.csv not understood"),
        "{stderr}"
    );
    assert!(
        stdout.contains("measured by the build of level(s) 23, 24, 25 in ")
            && stdout.contains("rates.csv, 2 thread(s)"),
        "{stdout}"
    );
    // Each referred to level 25's size (as size^-0.04 below a billion positions) and to
    // the fast state reading at random: level 23's 3.9 million is 3.79, level 24's 3.8
    // million 3.75, and level 25's 2.47 million compact and streamed 3.79: the fast
    // levels' rate (the median of levels 22..=24 referred to level 24, 3.84 million)
    // referred to level 25, which also times the compact state streamed (1.54 times the
    // fast state). The median: level 25's.
    assert!(
        stdout.contains("rate: 3788590 positions/s/thread")
            && stdout.contains(
                "falling as size^-0.04 up to 1.0 billion positions and size^-0.15 beyond"
            ),
        "{stdout}"
    );
    // Level 26 (770,319,837 positions) at that rate lowered to its size, on 2 threads:
    // 1.7 minutes.
    let r26 = 3_788_590.0 * (770_319_837.0f64 / 546_177_996.0).powf(-0.04);
    let minutes = 770_319_837.0 / (r26 * 2.0) / 60.0;
    let row = stdout
        .lines()
        .find(|l| l.trim_start().starts_with("26 "))
        .unwrap();
    assert!(
        row.contains(&format!(" {minutes:.1} min ")),
        "{minutes} {row}"
    );
    assert!(!stdout.contains("beside"), "{stdout}");
    // Every level fast and reading at random: no other way's time to say.
    assert!(!stdout.contains("\nways:"), "{stdout}");
    // On nodes of 0.5 GB the large levels are compact or lean: the compact state's time
    // measured on level 25, the lean state's the constant.
    let (done, small, stderr) = run(&[
        "plan",
        "--max-seeds",
        "27",
        "--dir",
        root.to_str().unwrap(),
        "--cores-per-node",
        "2",
        "--memory-per-node",
        "0.5",
    ]);
    assert!(done, "{stderr}");
    let ways = small.lines().find(|l| l.starts_with("ways:")).unwrap();
    assert!(
        ways.contains("compact/stream 1.54 (measured on level(s) 25 built compact/stream here)")
            && ways.contains("lean/stream 2.30 (a constant, nothing measured here)"),
        "{ways}"
    );
    // The same levels built beside other work, their threads on a CPU half the time:
    // said, counted by their CPU time (twice the rate), and the total beside such work.
    let disturbed = |cpu: &str, half: &str| (cpu.to_string(), half.to_string());
    let mut text = fs::read_to_string(dir.join("rates.csv")).unwrap();
    for (cpu, half) in [
        disturbed(",42.868,", ",22.562,"),
        disturbed(",64.459,", ",33.926,"),
        disturbed(",95.657,", ",50.346,"),
        disturbed(",210.353,", ",110.712,"),
    ] {
        text = text.replace(&cpu, &half);
    }
    fs::write(dir.join("rates.csv"), text).unwrap();
    let (done, stdout, stderr) = plan();
    assert!(done, "{stderr}");
    assert!(
        stderr.contains(
            "the levels measured were all built beside other work (threads on a CPU: level 23 \
             50 %, level 24 50 %, level 25 50 %)"
        ),
        "{stderr}"
    );
    assert!(
        stdout.contains("rate: 7577181 positions/s/thread"),
        "{stdout}"
    );
    let total = stdout.lines().find(|l| l.starts_with("total:")).unwrap();
    assert!(
        total.contains(" beside work like that which disturbed the measurement"),
        "{total}"
    );
}

/// `--dtc`: per level the memory of making its distance table (4 bytes a position, its
/// values, every level below), the table (a byte a position and a 4096-byte header) and
/// three times the build's time; what does not fit said; refused with --nodes.
#[test]
fn plan_dtc_counts_the_tables() {
    let tmp = tempfile::tempdir().unwrap();
    let csv = tmp.path().join("bench.csv");
    fs::write(
        &csv,
        "level,positions,threads,seconds,forward_seconds,backward_seconds,positions_per_second_per_thread,peak_rss_bytes\n\
         20,80214915,1,40.1,10.0,30.0,2000000,1\n",
    )
    .unwrap();
    let dir = tmp.path().join("db");
    let plan = |memory: &str, more: &[&str]| {
        let mut args = vec![
            "plan",
            "--max-seeds",
            "30",
            "--memory-per-node",
            memory,
            "--cores-per-node",
            "2",
            "--disk-per-node",
            "100",
            "--dir",
            dir.to_str().unwrap(),
            "--rates",
            csv.to_str().unwrap(),
            "--dtc",
        ];
        args.extend(more);
        run(&args)
    };
    let (ok, text, err) = plan("24", &[]);
    assert!(ok, "{err}");
    let part = &text[text.find("distance tables (`awari dtc`)").expect(&text)..];
    let row = |n: &str| -> Vec<&str> {
        part.lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .find(|w| w.first() == Some(&n))
            .unwrap_or_else(|| panic!("no dtc row {n}:\n{part}"))
    };
    // Level 30: 2,742,236,068 positions, 5 bytes each (13.7 GB) and 7.1 GB of levels
    // below; a table of 2.7 GB, 1.1 GB packed (2.4 times smaller).
    let r30 = row("30");
    assert_eq!(r30[1], "2,742,236,068", "{part}");
    assert_eq!(
        &r30[2..8],
        ["20.8", "GB", "2.7", "GB", "1.1", "GB"],
        "{part}"
    );
    assert_eq!(r30.last().unwrap(), &"yes", "{part}");
    assert_eq!(&row("16")[4..8], ["13", "MB", "5", "MB"], "{part}");
    assert!(
        part.contains("tables total: at most 20.8 GB of memory, 9.8 GB of tables (4.1 GB packed"),
        "{part}"
    );
    // On 12 GB, levels 29 and 30 do not fit.
    let (_, text, _) = plan("12", &[]);
    let part = &text[text.find("distance tables").unwrap()..];
    let fits = |n: &str| {
        part.lines()
            .find(|l| l.split_whitespace().next() == Some(n))
            .unwrap()
            .ends_with("NO: memory")
    };
    assert!(!fits("28") && fits("29") && fits("30"), "{part}");
    let (ok, _, err) = plan("24", &["--nodes", "2"]);
    assert!(!ok);
    assert!(
        err.contains("--dtc plans the tables of one process"),
        "{err}"
    );
}

/// Where a level does not fit the disk even packed, the advice names the disk per node
/// that fits, raw and packed as built, on the nodes the memory advice names; a plan run
/// again with them says so (the advice is a fixed point, as the memory advice is).
#[test]
fn plan_advises_the_disk_that_fits() {
    let tmp = tempfile::tempdir().unwrap();
    let csv = tmp.path().join("bench.csv");
    fs::write(
        &csv,
        "level,positions,threads,seconds,forward_seconds,backward_seconds,positions_per_second_per_thread,peak_rss_bytes\n\
         20,80214915,1,40.1,10.0,30.0,2000000,1\n",
    )
    .unwrap();
    let plan = |extra: &[&str]| {
        let mut args = vec![
            "plan",
            "--max-seeds",
            "36",
            "--rates",
            csv.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        ok(&args)
    };
    // The word after `word` in `line`.
    let after = |line: &str, word: &str| -> String {
        let w: Vec<&str> = line.split_whitespace().collect();
        let i = w
            .iter()
            .position(|x| *x == word)
            .unwrap_or_else(|| panic!("{line}"));
        w[i + 1].trim_end_matches(',').to_string()
    };
    for (memory, nodes) in [("64", None), ("4", Some(()))] {
        let out = plan(&["--memory-per-node", memory, "--disk-per-node", "1"]);
        let disk = out
            .lines()
            .find(|l| l.starts_with("disk: level"))
            .unwrap_or_else(|| panic!("{out}"));
        let (raw, packed) = (after(disk, "--disk-per-node"), after(disk, "or"));
        let nodes = match nodes {
            None => "1".to_string(),
            Some(()) => {
                let m = out
                    .lines()
                    .find(|l| l.starts_with("memory:"))
                    .unwrap_or_else(|| panic!("{out}"));
                after(m, "on")
            }
        };
        let again = |disk: &str| {
            plan(&[
                "--memory-per-node",
                memory,
                "--nodes",
                &nodes,
                "--disk-per-node",
                disk,
            ])
        };
        let raw_plan = again(&raw);
        assert!(
            raw_plan.contains("\nevery level fits\n"),
            "--disk-per-node {raw}:\n{raw_plan}"
        );
        let packed_plan = again(&packed);
        assert!(
            !packed_plan.contains("NO") && packed_plan.contains("packing them as they are built"),
            "--disk-per-node {packed}:\n{packed_plan}"
        );
    }
}
