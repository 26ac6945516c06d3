//! Checkpoints inside a level (DESIGN.md section 5.5): `awari build` killed with SIGKILL
//! at moments inside a level (in its forward pass, while a checkpoint is being written,
//! between thresholds, late in its backward pass) and run again resumes from its last
//! checkpoint and writes the bytes a build without checkpoints writes, in the three states
//! and under both rule sets; a truncated, changed or foreign checkpoint, or a lean one
//! whose files were changed, is refused in one line and the level built afresh.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::common::{text, BIN};

/// The board and the level killed: 5 pits, level 17 (2.8 million positions, about 2 s
/// with a checkpoint at every threshold on 2 cores).
const PITS: usize = 5;
const LEVEL: usize = 17;

/// When the build is killed.
#[derive(Clone, Copy, Debug)]
enum Moment {
    /// Before any checkpoint of the level: its forward pass (with the state spilled, whose
    /// open file shows the pass has begun).
    Forward,
    /// While a checkpoint's temporary file is there, once one before it is whole.
    Writing,
    /// Once a checkpoint at threshold `t` or lower is whole.
    After(u8),
}

fn db(root: &Path, rules: &str) -> PathBuf {
    root.join(format!("{rules}-{PITS}"))
}

fn build_args<'a>(root: &'a str, rules: &'a str, state: &'a str, every: &'a str) -> Vec<String> {
    [
        "build",
        "--dir",
        root,
        "--rules",
        rules,
        "--pits",
        "5",
        "--max-seeds",
        "17",
        "--state",
        state,
        "--checkpoint-every",
        every,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

/// The level file a build without checkpoints writes, and a folder holding the levels
/// below it.
fn reference(root: &Path, rules: &str, state: &str) -> (Vec<u8>, PathBuf) {
    let args = build_args(root.to_str().unwrap(), rules, state, "off");
    let out = Command::new(BIN).args(&args).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let dir = db(root, rules);
    let level = std::fs::read(dir.join(format!("level-{LEVEL:03}.awl"))).unwrap();
    (level, dir)
}

/// A fresh folder under `under` holding levels `0..LEVEL` from `from`.
fn below(under: &Path, name: &str, rules: &str, from: &Path) -> PathBuf {
    let root = under.join(name);
    let dir = db(&root, rules);
    std::fs::create_dir_all(&dir).unwrap();
    for n in 0..LEVEL {
        let f = format!("level-{n:03}.awl");
        std::fs::copy(from.join(&f), dir.join(&f)).unwrap();
    }
    root
}

/// The level's checkpoints in `dir`: (threshold, file name), and temporary files.
fn checkpoints(dir: &Path) -> (Vec<(u8, String)>, Vec<String>) {
    let (mut whole, mut tmp) = (Vec::new(), Vec::new());
    let Ok(entries) = std::fs::read_dir(dir) else {
        return (whole, tmp);
    };
    let prefix = format!("level-{LEVEL:03}.t");
    for e in entries.flatten() {
        let name = e.file_name().into_string().unwrap();
        if name.ends_with(".awc.tmp") {
            tmp.push(name);
        } else if let Some(t) = name
            .strip_prefix(&prefix)
            .and_then(|r| r.strip_suffix(".awc"))
        {
            // Over ranks the threshold is followed by the rank's part.
            whole.push((t[..2].parse().unwrap(), name));
        }
    }
    whole.sort();
    (whole, tmp)
}

/// Runs the build of level `LEVEL` in `root` and kills it (SIGKILL) at `moment`: the
/// checkpoints it left, or `None` if the level finished first.
fn kill_at(root: &Path, rules: &str, state: &str, moment: Moment) -> Option<Vec<u8>> {
    let mut args = build_args(root.to_str().unwrap(), rules, state, "0s");
    let lean = state == "lean";
    if let (Moment::Forward, false) = (moment, lean) {
        // A spilled state's file is open (and nameless) from the start of the forward
        // pass, which lasts tens of milliseconds here: seen in /proc, it says the pass
        // has begun whatever the machine's speed.
        args.extend(["--lower", "random", "--spill-from", "0"].map(String::from));
    }
    let mut child = Command::new(BIN)
        .args(&args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let dir = db(root, rules);
    let level = dir.join(format!("level-{LEVEL:03}.awl"));
    loop {
        if level.exists() || child.try_wait().unwrap().is_some() {
            child.wait().unwrap();
            return None;
        }
        let (whole, tmp) = checkpoints(&dir);
        let now = match moment {
            Moment::Forward => {
                assert!(
                    whole.is_empty(),
                    "{rules} {state}: a checkpoint before the kill"
                );
                if lean {
                    // The lean state's named files are made at the forward pass's start,
                    // and its first checkpoint at its end.
                    lean_files(&dir).iter().all(|f| f.exists())
                } else {
                    spilling(child.id(), LEVEL)
                }
            }
            Moment::Writing => !tmp.is_empty() && !whole.is_empty(),
            Moment::After(t) => whole.first().is_some_and(|&(k, _)| k <= t),
        };
        if now {
            break;
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    Some(checkpoints(&dir).0.iter().map(|&(t, _)| t).collect())
}

/// The lean state's named files of level `LEVEL` in `dir` (DESIGN.md section 4.5).
fn lean_files(dir: &Path) -> [PathBuf; 2] {
    ["exits", "values"].map(|f| dir.join(format!("level-{LEVEL:03}.{f}")))
}

/// Whether process `pid` holds level `n`'s spill file open: it is in that level's forward
/// pass (or later, in the backward pass of a spilled state).
fn spilling(pid: u32, n: usize) -> bool {
    let name = format!("level-{n:03}.spill");
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    fds.flatten()
        .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|l| l.to_string_lossy().contains(&name)))
}

/// Runs the build again (with a checkpoint at every chance): its report line of the level
/// and its warnings.
fn resume(root: &Path, rules: &str, state: &str) -> (String, Vec<String>) {
    let args = build_args(root.to_str().unwrap(), rules, state, "0s");
    let out = Command::new(BIN).args(&args).output().unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stderr}");
    let line = stdout
        .lines()
        .find(|l| l.split_whitespace().next() == Some(&LEVEL.to_string()))
        .unwrap_or_else(|| panic!("no line of level {LEVEL} in {stdout}"))
        .to_string();
    let warnings = stderr
        .lines()
        .filter(|l| l.starts_with("warning:"))
        .map(str::to_string)
        .collect();
    (line, warnings)
}

/// Kills at `moments`, resumes, and checks each time: the same level as `want`, resumed
/// from the furthest checkpoint left (the report says at which threshold), no checkpoint
/// left behind. Returns how many kills left a checkpoint.
fn kill_and_resume(
    tmp: &Path,
    rules: &str,
    state: &str,
    want: &[u8],
    from: &Path,
    moments: &[Moment],
) -> usize {
    let mut resumed = 0;
    for (k, &moment) in moments.iter().enumerate() {
        let root = below(tmp, &format!("{rules}-{state}-{k}"), rules, from);
        let Some(left) = kill_at(&root, rules, state, moment) else {
            panic!("{rules} {state} {moment:?}: the level finished before the kill");
        };
        let (line, warnings) = resume(&root, rules, state);
        assert!(warnings.is_empty(), "{moment:?}: {warnings:?}");
        match left.first() {
            Some(t) => {
                resumed += 1;
                assert!(
                    line.contains(&format!("{state}, resumed at threshold {t}")),
                    "{rules} {state} {moment:?}: {line}"
                );
            }
            None => assert!(!line.contains("resumed"), "{moment:?}: {line}"),
        }
        let dir = db(&root, rules);
        let got = std::fs::read(dir.join(format!("level-{LEVEL:03}.awl"))).unwrap();
        assert!(
            got == want,
            "{rules} {state} {moment:?}: level {LEVEL} differs"
        );
        assert_eq!(checkpoints(&dir), (vec![], vec![]), "{moment:?}");
        assert!(lean_files(&dir).iter().all(|f| !f.exists()), "{moment:?}");
        if let Moment::After(t) = moment {
            assert!(
                left.first().is_some_and(|&f| f <= t),
                "{moment:?}: {left:?}"
            );
        }
    }
    resumed
}

/// A tmpfs mounted for a test, unmounted when dropped: a disk of a chosen size.
struct Tmpfs(PathBuf);

impl Tmpfs {
    /// Mounts a tmpfs of `size` (as `mount -o size=` takes it) at `at`; `None`, with a
    /// notice, where this user cannot mount one.
    fn mount(at: &Path, size: &str) -> Option<Tmpfs> {
        std::fs::create_dir_all(at).unwrap();
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(at)
            .output();
        match out {
            Ok(o) if o.status.success() => Some(Tmpfs(at.to_path_buf())),
            Ok(o) => {
                eprintln!(
                    "NOTICE: no tmpfs of {size} to test on: cannot mount ({})",
                    text(&o.stderr).trim()
                );
                None
            }
            Err(e) => {
                eprintln!("NOTICE: no tmpfs of {size} to test on: no mount command ({e})");
                None
            }
        }
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

mod slow {
    use super::*;

    /// Sixteen kills over both rule sets and the three states (the lean state's header is
    /// written too fast to be caught while it is).
    #[test]
    fn killed_builds_resume_to_the_same_bytes() {
        let tmp = tempfile::tempdir().unwrap();
        let all = [
            Moment::Forward,
            Moment::Writing,
            Moment::After(12),
            Moment::After(3),
        ];
        let some = [Moment::Forward, Moment::After(3)];
        let lean = [Moment::Forward, Moment::After(12), Moment::After(3)];
        for (rules, state, moments) in [
            ("awari", "fast", &all[..]),
            ("oware", "compact", &all[..]),
            ("awari", "compact", &some[..]),
            ("oware", "fast", &some[..]),
            ("awari", "lean", &lean[..]),
            ("oware", "lean", &some[..]),
        ] {
            let (want, from) =
                reference(&tmp.path().join(format!("{rules}-{state}")), rules, state);
            let resumed = kill_and_resume(tmp.path(), rules, state, &want, &from, moments);
            // Every kill but the one in the forward pass left a checkpoint.
            assert_eq!(resumed, moments.len() - 1, "{rules} {state}");
        }
    }

    /// A disk with room for the level and one checkpoint only: each checkpoint is removed
    /// before the next is written, said in one warning, and a build killed meanwhile
    /// resumes from the one there (or, killed between the two, starts the level afresh).
    #[test]
    fn one_checkpoint_at_a_time_where_the_disk_holds_one() {
        let tmp = tempfile::tempdir().unwrap();
        let (want, from) = reference(&tmp.path().join("ref"), "awari", "fast");
        // 16 MiB: levels 0..=16 (5.0 MB), level 17 (2.8 MB) and one checkpoint of its fast
        // state (6.0 MB) fit; a second checkpoint does not.
        let mnt = tmp.path().join("mnt");
        let Some(_mounted) = Tmpfs::mount(&mnt, "16m") else {
            return;
        };
        let root = below(&mnt, "whole", "awari", &from);
        let (line, warnings) = resume(&root, "awari", "fast");
        assert!(
            warnings.len() == 1
                && warnings[0].contains("room for one checkpoint only")
                && warnings[0].contains(
                    "needed for a second and the level): each is removed before the next is written"
                ),
            "{warnings:?}"
        );
        let saved: usize = line
            .split(", ")
            .find_map(|w| w.strip_suffix(" checkpoint(s)"))
            .and_then(|k| k.parse().ok())
            .unwrap_or_else(|| panic!("{line}"));
        assert!(saved > 2, "{line}");
        let dir = db(&root, "awari");
        assert!(std::fs::read(dir.join(format!("level-{LEVEL:03}.awl"))).unwrap() == want);
        assert_eq!(checkpoints(&dir), (vec![], vec![]));
        std::fs::remove_dir_all(&root).unwrap();
        let root = below(&mnt, "killed", "awari", &from);
        let left = kill_at(&root, "awari", "fast", Moment::After(10)).expect("killed");
        assert!(left.len() <= 1, "{left:?}");
        let (line, _) = resume(&root, "awari", "fast");
        match left.first() {
            Some(t) => assert!(
                line.contains(&format!("resumed at threshold {t}")),
                "{line}"
            ),
            None => assert!(!line.contains("resumed"), "{line}"),
        }
        let dir = db(&root, "awari");
        assert!(std::fs::read(dir.join(format!("level-{LEVEL:03}.awl"))).unwrap() == want);
        assert_eq!(checkpoints(&dir), (vec![], vec![]));
    }

    /// A truncated, a changed and a foreign checkpoint: each refused in one warning, the
    /// level built from its start to the same bytes.
    #[test]
    fn bad_checkpoints_are_refused_and_the_level_rebuilt() {
        let tmp = tempfile::tempdir().unwrap();
        let (want, from) = reference(&tmp.path().join("ref"), "awari", "fast");
        let (_, oware) = reference(&tmp.path().join("oware"), "oware", "fast");
        let left = |name: &str, rules: &str, from: &Path| -> (PathBuf, PathBuf) {
            let root = below(tmp.path(), name, rules, from);
            let left = kill_at(&root, rules, "fast", Moment::After(10)).unwrap();
            let dir = db(&root, rules);
            // The one before it, if the kill came before it was removed, would be used.
            for t in &left[1..] {
                std::fs::remove_file(dir.join(format!("level-{LEVEL:03}.t{t:02}.awc"))).unwrap();
            }
            let file = dir.join(format!("level-{LEVEL:03}.t{:02}.awc", left[0]));
            (root, file)
        };
        let (_, foreign) = left("oware-killed", "oware", &oware);
        for (case, said) in [
            ("truncated", "truncated"),
            ("changed", "damaged payload"),
            ("foreign", "a checkpoint of oware-5 level 17"),
        ] {
            let (root, file) = left(case, "awari", &from);
            let mut bytes = std::fs::read(&file).unwrap();
            match case {
                "truncated" => bytes.truncate(bytes.len() - 4096),
                "changed" => *bytes.last_mut().unwrap() ^= 0x10,
                _ => bytes = std::fs::read(&foreign).unwrap(),
            }
            std::fs::write(&file, &bytes).unwrap();
            let (line, warnings) = resume(&root, "awari", "fast");
            assert_eq!(warnings.len(), 1, "{case}: {warnings:?}");
            assert!(
                warnings[0].contains("refused") && warnings[0].contains(said),
                "{case}: {warnings:?}"
            );
            assert!(!line.contains("resumed"), "{case}: {line}");
            let dir = db(&root, "awari");
            let got = std::fs::read(dir.join(format!("level-{LEVEL:03}.awl"))).unwrap();
            assert!(got == want, "{case}: level {LEVEL} differs");
            assert_eq!(checkpoints(&dir), (vec![], vec![]), "{case}");
        }
        // A lean checkpoint whose values file was changed, or whose exits file is gone.
        for case in ["values changed", "exits gone"] {
            let root = below(tmp.path(), &format!("lean {case}"), "awari", &from);
            let left = kill_at(&root, "awari", "lean", Moment::After(10)).unwrap();
            assert!(!left.is_empty(), "{case}");
            let dir = db(&root, "awari");
            let [exits, values] = lean_files(&dir);
            if case == "exits gone" {
                std::fs::remove_file(&exits).unwrap();
            } else {
                let mut bytes = std::fs::read(&values).unwrap();
                let k = bytes.len() / 3;
                bytes[k] ^= 0x40;
                std::fs::write(&values, &bytes).unwrap();
            }
            let (line, warnings) = resume(&root, "awari", "lean");
            assert_eq!(warnings.len(), 1, "{case}: {warnings:?}");
            let said = if case == "exits gone" {
                "level-017.exits"
            } else {
                "the lean state's files are damaged"
            };
            assert!(
                warnings[0].contains("refused") && warnings[0].contains(said),
                "{case}: {warnings:?}"
            );
            assert!(!line.contains("resumed"), "{case}: {line}");
            let got = std::fs::read(dir.join(format!("level-{LEVEL:03}.awl"))).unwrap();
            assert!(got == want, "{case}: level {LEVEL} differs");
            assert_eq!(checkpoints(&dir), (vec![], vec![]), "{case}");
            assert!(lean_files(&dir).iter().all(|f| !f.exists()), "{case}");
        }
    }

    /// Ranks (threads standing for them) whose folders differ in room: rank 0's on the
    /// disk, rank 1's on a tmpfs that holds its slices and one checkpoint of its slice of
    /// level 17 (8 MiB: each needs 4.4 MB with the slice's file, 2.6 MB of lower slices
    /// are there), or none (6 MiB). With one, rank 1 removes its older checkpoint before
    /// each (one warning) and every rank goes on saving; with none, no rank saves, rank 1
    /// says why at each boundary. Either way the slices are the single process's level.
    #[test]
    fn a_rank_short_of_disk_saves_one_checkpoint_at_a_time_or_none() {
        use awari::expert::ranks::{build_slices, Comm, LocalComm};
        use awari::{BuildOptions, Rules, StateKind};
        let tmp = tempfile::tempdir().unwrap();
        let (want, _) = reference(&tmp.path().join("ref"), "awari", "fast");
        for (size, one) in [("8m", true), ("6m", false)] {
            let mnt = tmp.path().join(format!("mnt-{size}"));
            let Some(_mounted) = Tmpfs::mount(&mnt, size) else {
                return;
            };
            let roots = [tmp.path().join(format!("rank0-{size}")), mnt.clone()];
            let comms = LocalComm::group(2);
            let runs: Vec<(awari::LevelReport, Vec<String>)> = std::thread::scope(|s| {
                let handles: Vec<_> = comms
                    .iter()
                    .map(|comm| {
                        let root = &roots[comm.rank()];
                        s.spawn(move || {
                            let opts = |top: usize| {
                                BuildOptions::new(root, Rules::Awari, PITS, top)
                                    .state(StateKind::Fast)
                                    .ranks_here(2)
                                    .command("awari build (test)")
                            };
                            let mut said = Vec::new();
                            let below = opts(LEVEL - 1).checkpoint_every(None);
                            build_slices(comm, &below, |_| {}, |w| said.push(w.to_string()))
                                .unwrap();
                            let every = opts(LEVEL).checkpoint_every(Duration::ZERO);
                            let reports =
                                build_slices(comm, &every, |_| {}, |w| said.push(w.to_string()))
                                    .unwrap();
                            (reports[LEVEL], said)
                        })
                    })
                    .collect();
                handles.into_iter().map(|h| h.join().unwrap()).collect()
            });
            let (rank0, rank1) = (&runs[0], &runs[1]);
            assert!(rank0.1.is_empty(), "{size}: rank 0 warned: {:?}", rank0.1);
            let said = &rank1.1;
            if one {
                assert!(
                    said.len() == 1 && said[0].contains("room for one checkpoint only"),
                    "{size}: {said:?}"
                );
                assert!(rank0.0.checkpoints > 2, "{size}: {:?}", rank0.0);
            } else {
                assert!(
                    !said.is_empty()
                        && said.iter().all(|w| w.starts_with(&format!(
                            "level {LEVEL}: checkpoint skipped: it and the level need"
                        ))),
                    "{size}: {said:?}"
                );
                assert_eq!(rank0.0.checkpoints, 0, "{size}");
            }
            assert_eq!(rank0.0.checkpoints, rank1.0.checkpoints, "{size}");
            let mut got = Vec::new();
            for (r, root) in roots.iter().enumerate() {
                let dir = db(root, "awari");
                let slice =
                    std::fs::read(dir.join(format!("level-{LEVEL:03}.{r}of2.aws"))).unwrap();
                got.extend_from_slice(&slice[4096..]);
                assert_eq!(checkpoints(&dir), (vec![], vec![]), "{size}: rank {r}");
            }
            assert!(
                got == want[4096..],
                "{size}: the slices differ from the level"
            );
        }
    }
}
