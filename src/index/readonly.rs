//! A Tantivy [`Directory`] that never writes: what `search`, `stats`, `backlinks` and `serve`
//! open the index through, so that they work on a read-only mount or a directory owned by
//! another user, and leave no file behind.
//!
//! It wraps an [`MmapDirectory`] and passes reads through. Writes, deletes and the writer lock
//! are refused with a permission error (no reader asks for them; a refusal beats a silent
//! write). The one lock a reader does take is Tantivy's meta lock (`.tantivy-meta.lock`), held
//! while it opens the segment files so that a crawl's garbage collection cannot delete them in
//! between. `MmapDirectory` takes it by opening the file for writing (creating it if needed) and
//! `flock`ing it exclusively; here the existing file is opened read-only and locked *shared*,
//! which needs no write permission and still excludes the collector's exclusive lock. When the
//! file does not exist (no writer has ever collected garbage here) or cannot be opened, the
//! reader goes on without it: Tantivy's own readers on other platforms live with the same
//! window, and a search that fails on a vanished file reopens the index and tries again
//! (`serve/backend.rs`).
//!
//! Not here: deciding whether a directory holds an index (`index/mod.rs`).

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tantivy::directory::error::{
    DeleteError, LockError, OpenDirectoryError, OpenReadError, OpenWriteError,
};
use tantivy::directory::{
    Directory, DirectoryLock, FileHandle, Lock, MmapDirectory, WatchCallback, WatchHandle,
    WritePtr, META_LOCK,
};

/// A read-only view of an index directory.
#[derive(Clone, Debug)]
pub(crate) struct ReadOnlyDirectory {
    inner: MmapDirectory,
    root: PathBuf,
}

impl ReadOnlyDirectory {
    pub(crate) fn open(dir: &Path) -> Result<ReadOnlyDirectory, OpenDirectoryError> {
        Ok(ReadOnlyDirectory {
            inner: MmapDirectory::open(dir)?,
            root: dir.to_path_buf(),
        })
    }
}

fn refused(what: &str, path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::PermissionDenied,
        format!("{what} {}: the index is open read-only", path.display()),
    )
}

/// A shared `flock` on an open file, released when the file is closed (dropped).
struct SharedLock {
    _file: Option<File>,
}

#[cfg(unix)]
fn lock_shared(file: &File) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    loop {
        // SAFETY: flock(2) on a descriptor this function borrows; no memory is passed.
        let result = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_SH) };
        if result == 0 {
            return Ok(());
        }
        let error = io::Error::last_os_error();
        if error.kind() != io::ErrorKind::Interrupted {
            return Err(error);
        }
    }
}

#[cfg(not(unix))]
fn lock_shared(_file: &File) -> io::Result<()> {
    Ok(())
}

impl Directory for ReadOnlyDirectory {
    fn get_file_handle(&self, path: &Path) -> Result<Arc<dyn FileHandle>, OpenReadError> {
        self.inner.get_file_handle(path)
    }

    fn delete(&self, path: &Path) -> Result<(), DeleteError> {
        Err(DeleteError::IoError {
            io_error: Arc::new(refused("deleting", path)),
            filepath: path.to_path_buf(),
        })
    }

    fn exists(&self, path: &Path) -> Result<bool, OpenReadError> {
        self.inner.exists(path)
    }

    fn open_write(&self, path: &Path) -> Result<WritePtr, OpenWriteError> {
        Err(OpenWriteError::wrap_io_error(
            refused("writing", path),
            path.to_path_buf(),
        ))
    }

    fn atomic_read(&self, path: &Path) -> Result<Vec<u8>, OpenReadError> {
        self.inner.atomic_read(path)
    }

    fn atomic_write(&self, path: &Path, _data: &[u8]) -> io::Result<()> {
        Err(refused("writing", path))
    }

    fn sync_directory(&self) -> io::Result<()> {
        Ok(())
    }

    fn acquire_lock(&self, lock: &Lock) -> Result<DirectoryLock, LockError> {
        if lock.filepath != META_LOCK.filepath {
            return Err(LockError::wrap_io_error(refused("locking", &lock.filepath)));
        }
        let file = match File::open(self.root.join(&lock.filepath)) {
            Ok(file) => {
                lock_shared(&file).map_err(LockError::wrap_io_error)?;
                Some(file)
            }
            // No lock file to share, or none we may open: read without it (module doc).
            Err(e) => {
                tracing::debug!("reading the index without the meta lock: {e}");
                None
            }
        };
        Ok(DirectoryLock::from(Box::new(SharedLock { _file: file })))
    }

    fn watch(&self, watch_callback: WatchCallback) -> tantivy::Result<WatchHandle> {
        self.inner.watch(watch_callback)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_are_refused_and_the_meta_lock_creates_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("a"), b"hello").unwrap();
        let dir = ReadOnlyDirectory::open(tmp.path()).unwrap();
        assert_eq!(dir.atomic_read(Path::new("a")).unwrap(), b"hello");
        assert!(dir.open_write(Path::new("b")).is_err());
        assert!(dir.atomic_write(Path::new("a"), b"x").is_err());
        assert!(dir.delete(Path::new("a")).is_err());
        assert!(dir
            .acquire_lock(&Lock {
                filepath: PathBuf::from(".tantivy-writer.lock"),
                is_blocking: false,
            })
            .is_err());
        let held = dir.acquire_lock(&META_LOCK).expect("no lock file: go on");
        drop(held);
        let names: Vec<_> = std::fs::read_dir(tmp.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["a"]);
        assert_eq!(std::fs::read(tmp.path().join("a")).unwrap(), b"hello");
    }

    #[cfg(unix)]
    #[test]
    fn the_shared_meta_lock_keeps_an_exclusive_one_out() {
        use std::os::fd::AsRawFd;
        let tmp = tempfile::tempdir().unwrap();
        let lock_file = tmp.path().join(&META_LOCK.filepath);
        std::fs::write(&lock_file, b"").unwrap();
        let dir = ReadOnlyDirectory::open(tmp.path()).unwrap();
        let held = dir.acquire_lock(&META_LOCK).unwrap();
        // What a crawl's garbage collection does: an exclusive lock, here without waiting.
        let writer = std::fs::OpenOptions::new()
            .write(true)
            .open(&lock_file)
            .unwrap();
        let try_exclusive = || {
            // SAFETY: flock(2) on a descriptor we own; no memory is passed.
            unsafe { libc::flock(writer.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) }
        };
        assert_ne!(try_exclusive(), 0, "the exclusive lock waits for readers");
        drop(held);
        assert_eq!(try_exclusive(), 0, "and gets it once they are done");
    }
}
