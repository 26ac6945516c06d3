//! A build over ranks (threads standing for MPI ranks here) gathered by `awari gather`:
//! byte for byte the levels of `awari build`, for both rule sets and two board sizes.

use std::fs;
use std::path::Path;

use awari::expert::ranks::{build_slices, list_slices, Comm, LocalComm};
use awari::expert::{db_dir, level_path};
use awari::{BuildOptions, Rules, StateKind};

use crate::common::{ok, run};

/// Builds levels `0..=top` over `ranks` ranks with the solver state `state`, rank `r`
/// keeping its slices under `root/rank<r>`.
fn build_over(root: &Path, ranks: usize, rules: Rules, pits: usize, top: usize, state: StateKind) {
    let comms = LocalComm::group(ranks);
    std::thread::scope(|s| {
        let handles: Vec<_> = comms
            .iter()
            .map(|comm| {
                let rank_root = root.join(format!("rank{}", comm.rank()));
                let opts = BuildOptions::new(&rank_root, rules, pits, top)
                    .state(state)
                    .ranks_here(ranks)
                    .command("awari build (test)");
                s.spawn(move || {
                    let reports = build_slices(comm, &opts, |_| {}, |_| {}).unwrap();
                    assert!(reports
                        .iter()
                        .all(|r| r.way.map(|w| w.state) == Some(state)));
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
    });
}

/// Rank 0 adds a line per level built to the rates file of its folder: the whole level's
/// positions, by every rank's threads, the lower levels read as streams; the other
/// ranks none, and a rerun that keeps every level none either.
#[test]
fn rank_zero_keeps_the_rates_of_the_levels_built() {
    use awari::plan::rates;
    let tmp = tempfile::tempdir().unwrap();
    let top = 9;
    let sizes = awari::expert::Index::new(6, top).unwrap();
    build_over(tmp.path(), 2, Rules::Awari, 6, top, StateKind::Compact);
    // Again: every level kept, no line added.
    let comms = LocalComm::group(2);
    std::thread::scope(|s| {
        for comm in &comms {
            let root = tmp.path().join(format!("rank{}", comm.rank()));
            s.spawn(move || {
                let opts = BuildOptions::new(&root, Rules::Awari, 6, top);
                let reports = build_slices(comm, &opts, |_| {}, |_| {}).unwrap();
                assert!(reports.iter().all(|r| r.skipped));
            });
        }
    });
    let dir = |r: usize| db_dir(&tmp.path().join(format!("rank{r}")), Rules::Awari, 6);
    let lines = rates::read(&dir(0))
        .unwrap()
        .expect("rank 0's rates file")
        .levels;
    assert_eq!(lines.len(), top + 1, "{lines:?}");
    for (n, line) in lines.iter().enumerate() {
        assert_eq!(line.seeds, n);
        assert_eq!(line.positions, sizes.level_size(n));
        assert_eq!(line.threads, 2 * rayon::current_num_threads());
        assert_eq!(line.state, StateKind::Compact);
        assert_eq!(line.lower, awari::Lower::Stream);
        // Each time is written to the millisecond, rounded on its own, and read back as
        // a float: the parts may add up to a little more than the whole (0.003 + 0.01
        // is 0.013000000000000001, which failed against 0.013 once).
        assert!(
            line.forward + line.backward <= line.seconds + 0.001 + 1e-9,
            "{line:?}"
        );
    }
    assert!(rates::read(&dir(1)).unwrap().is_none());
}

/// `awari gather --pack` packs each level it gathers: the packed files of `awari build
/// --pack`, byte for byte, and no raw level left.
#[test]
fn gather_pack_gives_the_packed_levels_of_a_packed_build() {
    use awari::expert::packed_path;
    let tmp = tempfile::tempdir().unwrap();
    let (rules, pits, top) = (Rules::Oware, 4, 12);
    build_over(
        &tmp.path().join("ranks"),
        2,
        rules,
        pits,
        top,
        StateKind::Fast,
    );
    let (single, out) = (tmp.path().join("single"), tmp.path().join("out"));
    let dir = |root: &Path| root.to_str().unwrap().to_string();
    let common = ["--pits", "4", "--rules", "oware", "--dir"];
    let build = [
        &["build", "--pack", "--max-seeds", "12"][..],
        &common,
        &[&dir(&single)],
    ];
    ok(&build.concat());
    let (r0, r1) = (
        dir(&tmp.path().join("ranks/rank0")),
        dir(&tmp.path().join("ranks/rank1")),
    );
    let gather = [
        &["gather", "--pack", "--from", &r0, &r1][..],
        &common,
        &[&dir(&out)],
    ];
    let said = ok(&gather.concat());
    assert!(
        said.starts_with(&format!("gathered {} levels", top + 1)) && said.contains("packed:"),
        "{said}"
    );
    let (a, b) = (db_dir(&out, rules, pits), db_dir(&single, rules, pits));
    for n in 0..=top {
        assert!(!level_path(&a, n).exists(), "level {n} left raw");
        let (x, y) = (fs::read(packed_path(&a, n)), fs::read(packed_path(&b, n)));
        assert!(x.unwrap() == y.unwrap(), "level {n} packed differs");
    }
}

/// Minutes together: left out of the quick tier (`--skip slow::`, GUIDE.md "Testing").
mod slow {
    use super::*;

    #[test]
    fn gathered_slices_are_the_single_process_levels() {
        for (rules, pits, top) in [
            (Rules::Awari, 6, 12),
            (Rules::Oware, 6, 12),
            (Rules::Awari, 4, 16),
        ] {
            let tmp = tempfile::tempdir().unwrap();
            let root = tmp.path();
            let single = root.join("single");
            let args = |d: &Path| {
                vec![
                    "--pits".to_string(),
                    pits.to_string(),
                    "--rules".to_string(),
                    rules.to_string(),
                    "--dir".to_string(),
                    d.to_str().unwrap().to_string(),
                ]
            };
            let mut build = vec!["build".to_string(), "--max-seeds".into(), top.to_string()];
            build.extend(args(&single));
            ok(&build.iter().map(String::as_str).collect::<Vec<_>>());
            for ranks in [2, 3, 4] {
                let ranked = root.join(format!("ranks{ranks}"));
                // Two ranks with the fast state, three with the compact one, four with the
                // lean one.
                let state = match ranks {
                    2 => StateKind::Fast,
                    3 => StateKind::Compact,
                    _ => StateKind::Lean,
                };
                build_over(&ranked, ranks, rules, pits, top, state);
                for r in 0..ranks {
                    let dir = db_dir(&ranked.join(format!("rank{r}")), rules, pits);
                    let slices = list_slices(&dir).unwrap();
                    assert_eq!(slices.len(), top + 1);
                    assert!(slices.iter().all(|&(_, rank, rs)| rank == r && rs == ranks));
                    // Nothing but its slices, and on rank 0 the rates file.
                    let rates = (r == 0) as usize;
                    assert_eq!(fs::read_dir(&dir).unwrap().count(), top + 1 + rates);
                    assert_eq!(dir.join("rates.csv").exists(), r == 0);
                }
                let out = root.join(format!("gathered{ranks}"));
                let mut gather = vec!["gather".to_string(), "--from".into()];
                for r in 0..ranks {
                    gather.push(
                        ranked
                            .join(format!("rank{r}"))
                            .to_str()
                            .unwrap()
                            .to_string(),
                    );
                }
                gather.extend(args(&out));
                let said = ok(&gather.iter().map(String::as_str).collect::<Vec<_>>());
                assert!(
                    said.starts_with(&format!("gathered {} levels", top + 1)),
                    "{said}"
                );
                for n in 0..=top {
                    let a = fs::read(level_path(&db_dir(&out, rules, pits), n)).unwrap();
                    let b = fs::read(level_path(&db_dir(&single, rules, pits), n)).unwrap();
                    assert!(
                        a == b,
                        "{rules} P={pits} level {n} over {ranks} ranks differs"
                    );
                }
                // A rank's folder missing: named.
                gather.retain(|a| !a.ends_with("rank0"));
                let (done, _, e) = run(&gather.iter().map(String::as_str).collect::<Vec<_>>());
                assert!(!done && e.contains("the slices of rank(s) [0]"), "{e}");
                assert_eq!(e.lines().count(), 1, "{e}");
            }
        }
    }
}
