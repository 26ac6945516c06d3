//! One writer per database folder: `awari build` (and the commands that write levels)
//! hold an exclusive lock on `<dir>/.lock` while they work, so that two builds started
//! into the same folder cannot write the same level at once. The lock is the operating
//! system's advisory file lock, which it releases when the process ends however it ends,
//! so a killed build never leaves a folder locked (a `.lock` file it leaves behind is
//! taken over by the next writer). The file holds who has the lock, so that a second
//! writer can say who holds the folder, and is removed when the lock is given back, so
//! that a finished folder holds only its levels. Each rank of a distributed build holds
//! a lock of its own, `<dir>/.lock-rank<r>`, since ranks may share a folder.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// The lock file of a database folder.
pub fn lock_path(dir: &Path) -> PathBuf {
    dir.join(".lock")
}

/// An exclusive hold on a database folder, released when dropped (or when the process
/// ends).
#[derive(Debug)]
pub struct DirLock {
    path: PathBuf,
    file: File,
}

impl DirLock {
    /// Takes the lock of the database folder `dir` (which must exist) for `what` (the
    /// command, for the message a second writer gets). Fails at once, naming the process
    /// that holds it, if another process holds it.
    pub fn acquire(dir: &Path, what: &str) -> Result<DirLock> {
        DirLock::acquire_file(dir, &lock_path(dir), what)
    }

    /// Takes the lock of rank `rank` of a distributed build on `dir`: ranks that share a
    /// folder hold one lock each, and a second job's same rank is refused.
    pub fn acquire_rank(dir: &Path, rank: usize, what: &str) -> Result<DirLock> {
        DirLock::acquire_file(dir, &dir.join(format!(".lock-rank{rank}")), what)
    }

    fn acquire_file(dir: &Path, path: &Path, what: &str) -> Result<DirLock> {
        let path = path.to_path_buf();
        // A holder that gives the lock back removes the file: a lock taken on a file
        // that is no longer the one at `path` is taken again on the new one.
        loop {
            let lock = DirLock::try_acquire(&path, dir, what)?;
            if lock.is_current() {
                return Ok(lock);
            }
        }
    }

    fn try_acquire(path: &Path, dir: &Path, what: &str) -> Result<DirLock> {
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|e| Error::io(path, e))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let mut holder = String::new();
                let _ = file.read_to_string(&mut holder);
                let holder = holder.trim();
                return Err(Error::Busy {
                    dir: dir.to_path_buf(),
                    holder: if holder.is_empty() {
                        "which has not said who it is yet".to_string()
                    } else {
                        holder.to_string()
                    },
                });
            }
            Err(TryLockError::Error(e)) => return Err(Error::io(path, e)),
        }
        // Who holds it, for the next one who asks.
        let who = format!("process {}: {what}", std::process::id());
        let written = file
            .set_len(0)
            .and_then(|()| file.seek(SeekFrom::Start(0)))
            .and_then(|_| file.write_all(who.as_bytes()));
        written.map_err(|e| Error::io(path, e))?;
        Ok(DirLock {
            path: path.to_path_buf(),
            file,
        })
    }

    /// Whether the locked file is still the one at the lock's path.
    fn is_current(&self) -> bool {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            match (self.file.metadata(), std::fs::metadata(&self.path)) {
                (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
                _ => false,
            }
        }
        #[cfg(not(unix))]
        true
    }
}

impl Drop for DirLock {
    fn drop(&mut self) {
        // Removed while still locked, so that no one locks the old file after it.
        let _ = std::fs::remove_file(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_is_refused_with_the_first_ones_name() {
        let dir = tempfile::tempdir().unwrap();
        let first = DirLock::acquire(dir.path(), "awari build --max-seeds 20").unwrap();
        // A second open file description conflicts even within one process.
        let e = DirLock::acquire(dir.path(), "awari build --max-seeds 9")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("is in use by another process")
                && e.contains(&format!(
                    "process {}: awari build --max-seeds 20",
                    std::process::id()
                )),
            "{e}"
        );
        drop(first);
        assert!(!lock_path(dir.path()).exists());
        let again = DirLock::acquire(dir.path(), "awari build --max-seeds 9").unwrap();
        let who = std::fs::read_to_string(lock_path(dir.path())).unwrap();
        assert!(who.ends_with("awari build --max-seeds 9"), "{who}");
        drop(again);
        // A file left by a killed holder is taken over.
        std::fs::write(lock_path(dir.path()), "process 1: gone").unwrap();
        let taken = DirLock::acquire(dir.path(), "awari pack").unwrap();
        drop(taken);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
