//! One crawl per data directory: an advisory lock (`flock`) on `DIR/crawl.lock`, taken before
//! anything else in the directory is opened, with the holder's PID written inside so that a
//! second crawl can say who holds it.
//!
//! The kernel releases an `flock` when its process ends, however it ends, so a lock file left
//! behind by `kill -9` never blocks the next run: the file stays, the lock does not. Tantivy's
//! own writer lock still guards the index; this one also covers the crawl database and says
//! plainly what is going on.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

/// Why the lock could not be had.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error(
        "another crawl{} holds the data directory {}; wait for it to end or stop it",
        .pid.map(|p| format!(" (pid {p})")).unwrap_or_default(),
        .dir.display()
    )]
    Held { dir: PathBuf, pid: Option<u32> },
    #[error("lock file {}: {error}", .path.display())]
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
}

/// The held lock; dropping it (or the process ending) releases it.
#[derive(Debug)]
pub struct DataDirLock {
    _file: File,
}

impl DataDirLock {
    /// Takes the lock of `data_dir` (which must exist) without waiting.
    pub fn acquire(data_dir: &Path) -> Result<DataDirLock, LockError> {
        let path = crate::datadir::lock_path(data_dir);
        let io = |error| LockError::Io {
            path: path.clone(),
            error,
        };
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(io)?;
        // SAFETY: flock on a descriptor this function owns; no memory is passed.
        let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if rc != 0 {
            let err = std::io::Error::last_os_error();
            if err.raw_os_error() == Some(libc::EWOULDBLOCK) {
                let mut text = String::new();
                let _ = file.read_to_string(&mut text);
                return Err(LockError::Held {
                    dir: data_dir.to_path_buf(),
                    pid: text.trim().parse().ok(),
                });
            }
            return Err(io(err));
        }
        file.set_len(0).map_err(io)?;
        file.seek(SeekFrom::Start(0)).map_err(io)?;
        writeln!(file, "{}", std::process::id()).map_err(io)?;
        file.flush().map_err(io)?;
        Ok(DataDirLock { _file: file })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_is_refused_with_the_first_ones_pid() {
        let dir = tempfile::tempdir().unwrap();
        let first = DataDirLock::acquire(dir.path()).expect("first");
        // flock locks belong to open file descriptions: a second open in this process conflicts
        // just as another process would.
        let err = DataDirLock::acquire(dir.path()).expect_err("second");
        match &err {
            LockError::Held { pid, .. } => assert_eq!(*pid, Some(std::process::id())),
            other => panic!("{other:?}"),
        }
        assert!(err
            .to_string()
            .contains(&format!("pid {}", std::process::id())));
        drop(first);
        DataDirLock::acquire(dir.path()).expect("free again");
    }

    #[test]
    fn a_lock_file_left_behind_does_not_block() {
        let dir = tempfile::tempdir().unwrap();
        // What kill -9 leaves: the file, with a dead process's PID, and no lock.
        std::fs::write(crate::datadir::lock_path(dir.path()), "4194304\n").unwrap();
        let _lock = DataDirLock::acquire(dir.path()).expect("stale file, free lock");
        let pid = std::fs::read_to_string(crate::datadir::lock_path(dir.path())).unwrap();
        assert_eq!(pid.trim(), std::process::id().to_string());
    }
}
