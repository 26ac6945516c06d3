//! The build over MPI ranks for real: `mpirun -np R awari build --distributed` with a
//! folder per rank (or one shared), then `awari gather`: byte for byte the levels of
//! `awari build`, whatever the ranks, their threads and the size of MPI's messages.
//! Needs the `mpi` feature and `mpirun` (`.ci/run` installs Open MPI and runs these).

#![cfg(feature = "mpi")]

use std::fs;
use std::path::Path;
use std::process::Command;

use crate::common::{ok, text, BIN};

/// `mpirun -np ranks awari args...`, allowed to run as root and with more ranks than
/// cores.
fn mpirun_command(ranks: usize, args: &[&str], env: &[(&str, &str)]) -> Command {
    let mut c = Command::new("mpirun");
    c.args(["--oversubscribe", "-np", &ranks.to_string()]);
    // Passed on to every rank (`-x`).
    for (k, v) in env {
        c.env(k, v).args(["-x", k]);
    }
    c.arg(BIN)
        .args(args)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    c
}

const NO_MPIRUN: &str = "mpirun (Open MPI's openmpi-bin) must be installed for the mpi tests";

/// Runs [`mpirun_command`]: whether it succeeded, its stdout and its stderr.
fn mpirun(ranks: usize, args: &[&str]) -> (bool, String, String) {
    mpirun_with(ranks, args, &[])
}

/// [`mpirun`] with environment variables `env` passed to the ranks.
fn mpirun_with(ranks: usize, args: &[&str], env: &[(&str, &str)]) -> (bool, String, String) {
    let out = mpirun_command(ranks, args, env).output().expect(NO_MPIRUN);
    (out.status.success(), text(&out.stdout), text(&out.stderr))
}

fn level_bytes(root: &Path, rules: &str, pits: usize, n: usize) -> Vec<u8> {
    fs::read(
        root.join(format!("{rules}-{pits}"))
            .join(format!("level-{n:03}.awl")),
    )
    .unwrap()
}

#[test]
fn ranks_build_the_single_process_levels() {
    for (rules, pits, top) in [("awari", 6, 16), ("oware", 6, 16), ("awari", 4, 20)] {
        let tmp = tempfile::tempdir().unwrap();
        let single = tmp.path().join("single");
        let (p, t) = (pits.to_string(), top.to_string());
        let common = ["--max-seeds", &t, "--pits", &p, "--rules", rules];
        let mut args = vec!["build", "--dir", single.to_str().unwrap()];
        args.extend(common);
        ok(&args);
        for ranks in [1, 2, 3] {
            let root = tmp.path().join(format!("r{ranks}"));
            let per_rank = format!("{}/rank{{rank}}", root.display());
            let mut args = vec!["build", "--distributed", "--dir", &per_rank];
            args.extend(common);
            // Two threads per rank and the compact state on two ranks; on three the lean
            // state, its messages cut into pieces of 4,000 bytes, many per exchange.
            if ranks == 2 {
                args.extend(["--threads", "2", "--state", "compact"]);
            }
            if ranks == 3 {
                args.extend(["--state", "lean"]);
            }
            let env: &[(&str, &str)] = if ranks == 3 {
                &[("AWARI_MPI_PIECE_BYTES", "4000")]
            } else {
                &[]
            };
            let (done, out, err) = mpirun_with(ranks, &args, env);
            assert!(done, "{out}{err}");
            assert!(
                out.contains(&format!("total: {} levels over {ranks} rank(s)", top + 1)),
                "{out}"
            );
            let state = ["fast", "compact", "lean"][ranks - 1];
            let built = out.lines().filter(|l| l.ends_with(&format!("  {state}")));
            assert_eq!(built.count(), top + 1, "{out}");
            // Each rank's folder holds its own slices and nothing else, but for the rates
            // file that rank 0 keeps.
            let mut from = Vec::new();
            for r in 0..ranks {
                let rank_root = root.join(format!("rank{r}"));
                let dir = rank_root.join(format!("{rules}-{pits}"));
                assert_eq!(dir.join("rates.csv").exists(), r == 0);
                let names: Vec<String> = fs::read_dir(&dir)
                    .unwrap()
                    .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                    .filter(|n| n != "rates.csv")
                    .collect();
                assert_eq!(names.len(), top + 1, "{names:?}");
                assert!(
                    names
                        .iter()
                        .all(|n| n.ends_with(&format!(".{r}of{ranks}.aws"))),
                    "{names:?}"
                );
                from.push(rank_root.to_str().unwrap().to_string());
            }
            let out_root = root.join("gathered");
            let mut args = vec![
                "gather",
                "--dir",
                out_root.to_str().unwrap(),
                "--pits",
                &p,
                "--rules",
                rules,
                "--from",
            ];
            args.extend(from.iter().map(String::as_str));
            ok(&args);
            for n in 0..=top {
                assert!(
                    level_bytes(&out_root, rules, pits, n) == level_bytes(&single, rules, pits, n),
                    "{rules} P={pits} level {n} over {ranks} ranks differs"
                );
            }
        }
    }
}

#[test]
fn a_rerun_resumes_and_another_partition_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let per_rank = format!("{}/rank{{rank}}", tmp.path().display());
    let args = [
        "build",
        "--distributed",
        "--max-seeds",
        "10",
        "--pits",
        "4",
        "--dir",
        &per_rank,
    ];
    let (done, out, err) = mpirun(2, &args);
    assert!(done, "{out}{err}");
    // A lost slice: the rerun rebuilds its level on every rank and keeps the rest.
    fs::remove_file(tmp.path().join("rank1/awari-4/level-007.1of2.aws")).unwrap();
    let (done, out, err) = mpirun(2, &args);
    assert!(done, "{out}{err}");
    let kept = out.lines().filter(|l| l.contains(" kept ")).count();
    assert_eq!(kept, 10, "{out}");
    // Three ranks over the slices of two: refused, one line per rank, nothing written.
    let (done, _, err) = mpirun(3, &args);
    assert!(!done);
    assert!(
        err.contains("holds slices of a build over 2 ranks") && err.contains("this build has 3"),
        "{err}"
    );
    assert!(
        !tmp.path().join("rank2/awari-4").exists()
            || fs::read_dir(tmp.path().join("rank2/awari-4"))
                .unwrap()
                .count()
                == 0
    );
    // Other rules build into their own folder; a slice of theirs moved into this one is
    // refused, not overwritten.
    let oware = format!("{}/oware{{rank}}", tmp.path().display());
    let (done, out, err) = mpirun(
        2,
        &[
            "build",
            "--max-seeds",
            "6",
            "--pits",
            "4",
            "--rules",
            "oware",
            "--dir",
            &oware,
        ],
    );
    assert!(done, "{out}{err}");
    let theirs = tmp.path().join("oware1/oware-4/level-005.1of2.aws");
    let ours = tmp.path().join("rank1/awari-4/level-005.1of2.aws");
    fs::copy(&theirs, &ours).unwrap();
    let (done, _, err) = mpirun(2, &args);
    assert!(!done);
    assert!(
        err.contains("is a slice of the oware-4 database, and this build is awari-4"),
        "{err}"
    );
    assert!(fs::read(&ours).unwrap() == fs::read(&theirs).unwrap());
}

#[test]
fn ranks_sharing_a_folder_and_a_folder_held_by_another_job() {
    let tmp = tempfile::tempdir().unwrap();
    let shared = tmp.path().join("shared");
    let args = [
        "build",
        "--distributed",
        "--max-seeds",
        "12",
        "--pits",
        "4",
        "--dir",
        shared.to_str().unwrap(),
    ];
    let (done, out, err) = mpirun(2, &args);
    assert!(done, "{out}{err}");
    // Both ranks' slices in the one folder, and no lock left behind.
    let dir = shared.join("awari-4");
    let mut names: Vec<String> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let mut want: Vec<String> = (0..=12)
        .flat_map(|n| (0..2).map(move |r| format!("level-{n:03}.{r}of2.aws")))
        .collect();
    // And rank 0's rates file.
    want.push("rates.csv".to_string());
    assert_eq!(names, want);
    let single = tmp.path().join("single");
    ok(&[
        "build",
        "--max-seeds",
        "12",
        "--pits",
        "4",
        "--dir",
        single.to_str().unwrap(),
    ]);
    let gathered = tmp.path().join("gathered");
    ok(&[
        "gather",
        "--pits",
        "4",
        "--dir",
        gathered.to_str().unwrap(),
        "--from",
        shared.to_str().unwrap(),
    ]);
    for n in 0..=12 {
        assert!(level_bytes(&gathered, "awari", 4, n) == level_bytes(&single, "awari", 4, n));
    }
    // Another job holds rank 1's lock (flock(1) takes the same lock as the build): the
    // build stops at once, rank 1 naming the holder, rank 0 saying why it stops too.
    let lock = dir.join(".lock-rank1");
    fs::write(&lock, "process 4242: the other job").unwrap();
    let mut holder = Command::new("flock")
        .args(["-n", lock.to_str().unwrap(), "-c", "echo held; sleep 60"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("flock (util-linux) runs");
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(holder.stdout.as_mut().unwrap()),
        &mut line,
    )
    .unwrap();
    assert_eq!(line.trim(), "held");
    let (done, out, err) = mpirun(2, &args);
    holder.kill().unwrap();
    holder.wait().unwrap();
    assert!(!done, "{out}");
    assert!(
        err.contains("error: rank 1 of 2:")
            && err.contains("in use by another process")
            && err.contains("process 4242: the other job"),
        "{err}"
    );
    assert!(
        err.contains(
            "error: rank 0 of 2: 1 other rank(s) found their folder held by another build"
        ),
        "{err}"
    );
}

/// The pids of the children of `parent` (the ranks `mpirun` started on this machine).
fn children(parent: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for entry in fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // pid (comm) state ppid ...: the name may hold spaces, so read after the ')'.
        let after = &stat[stat.rfind(')').unwrap() + 1..];
        if after.split_whitespace().nth(1) == Some(&parent.to_string()) {
            out.push(pid);
        }
    }
    out
}

#[test]
fn a_killed_rank_ends_the_job_and_a_rerun_resumes_inside_the_level() {
    let tmp = tempfile::tempdir().unwrap();
    let per_rank = format!("{}/rank{{rank}}", tmp.path().display());
    let args = [
        "build",
        "--distributed",
        "--max-seeds",
        "17",
        "--dir",
        &per_rank,
        "--checkpoint-every",
        "0s",
    ];
    let mut job = mpirun_command(3, &args, &[])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect(NO_MPIRUN);
    // Wait until every rank has saved a checkpoint of level 15 after some threshold,
    // then kill rank 2's process mid-level.
    let started = std::time::Instant::now();
    let saved = |r: usize| {
        let suffix = format!(".{r}of3.awc");
        fs::read_dir(tmp.path().join(format!("rank{r}/awari-6")))
            .into_iter()
            .flatten()
            .flatten()
            .any(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                name.starts_with("level-015.t")
                    && name.ends_with(&suffix)
                    && !name.contains(".t15.")
            })
    };
    while !(0..3).all(saved) {
        // Three ranks saving at every threshold on two busy cores took over two minutes
        // once; a job given up on is ended, not left running.
        if started.elapsed().as_secs() > 300 {
            let _ = job.kill();
            panic!("the job never saved level 15 inside its backward pass");
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let ranks = children(job.id());
    assert_eq!(ranks.len(), 3, "{ranks:?}");
    let killed = Command::new("kill")
        .args(["-9", &ranks[2].to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let killed_at = std::time::Instant::now();
    let out = job.wait_with_output().unwrap();
    assert!(killed_at.elapsed().as_secs() < 30, "the job did not end");
    assert!(!out.status.success());
    let err = text(&out.stderr);
    let said = err
        .lines()
        .filter(|l| l.starts_with("error: rank ") && l.contains("stopped: the job was ended"))
        .count();
    assert!(said >= 1, "{err}");
    // The rerun keeps what was finished everywhere, takes level 15 up from the ranks'
    // checkpoints, and ends like a build never stopped.
    let (done_again, out, err) = mpirun(3, &args);
    assert!(done_again, "{out}{err}");
    assert!(
        out.lines().filter(|l| l.contains(" kept ")).count() >= 15,
        "{out}"
    );
    let level15 = out
        .lines()
        .find(|l| l.split_whitespace().next() == Some("15"))
        .unwrap();
    assert!(level15.contains("resumed at threshold"), "{out}");
    for r in 0..3 {
        let left = fs::read_dir(tmp.path().join(format!("rank{r}/awari-6")))
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().contains(".awc"))
            .count();
        assert_eq!(left, 0, "rank {r} kept checkpoints");
    }
    let single = tmp.path().join("single");
    ok(&[
        "build",
        "--max-seeds",
        "17",
        "--dir",
        single.to_str().unwrap(),
    ]);
    let gathered = tmp.path().join("gathered");
    let from: Vec<String> = (0..3)
        .map(|r| {
            tmp.path()
                .join(format!("rank{r}"))
                .to_str()
                .unwrap()
                .to_string()
        })
        .collect();
    let mut args = vec!["gather", "--dir", gathered.to_str().unwrap(), "--from"];
    args.extend(from.iter().map(String::as_str));
    ok(&args);
    for n in 0..=17 {
        assert!(
            level_bytes(&gathered, "awari", 6, n) == level_bytes(&single, "awari", 6, n),
            "level {n} differs after the resumed build"
        );
    }
}
