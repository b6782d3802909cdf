//! Keeps the index writer's view of the index files out of the process's resident memory.
//!
//! Tantivy reads segments through memory maps. Every page a merge reads (a merge reads whole
//! segments, and copies a segment's stored documents in one sweep) stays mapped into the
//! process until the segment is closed, and counts as resident: compacting a 300 MB index at
//! the end of a crawl made the crawl's resident set grow by 300 MB, and so on with the size of
//! the index. Those pages are the file's, cached by the kernel; the process needs them only
//! while it reads them.
//!
//! So the writer opens its index through a [`TrimmedDirectory`]: Tantivy's `MmapDirectory`,
//! which also keeps a handle on every file it maps (until Tantivy deletes the file). A thread
//! watches the process's resident file pages (`/proc/self/statm`, a hundred times a second)
//! and, once they have grown by [`TRIM_ABOVE`], drops the pages of those mappings from the
//! process's page tables (`madvise(MADV_DONTNEED)`). The file cache keeps them: a page read
//! again is mapped again at the cost of a minor fault, and a mapping of a file that is never
//! written loses nothing. What stays resident of the index is thus [`TRIM_ABOVE`] plus what a
//! merge reads in [`EVERY`], whatever the size of the index.
//!
//! The advice is given only to mappings the directory holds a handle on, while it holds it:
//! none can be unmapped meanwhile, and its address cannot be reused by other memory, which
//! `MADV_DONTNEED` would zero. (`MADV_PAGEOUT`, safe on any memory, was tried first: it leaves
//! pages that it judges in use, and a recrawl's merges still reached 700 MB.) The thread ends
//! when the directory's last clone is dropped. On other systems than Linux nothing is trimmed.

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use tantivy::directory::error::{DeleteError, LockError, OpenDirectoryError, OpenReadError};
use tantivy::directory::{
    Directory, DirectoryLock, FileHandle, Lock, MmapDirectory, OwnedBytes, WatchCallback,
    WatchHandle, WritePtr,
};

/// How often the resident file pages are looked at: reading `/proc/self/statm` costs a few
/// microseconds, and a merge copying stored documents reads a few gigabytes a second at most.
const EVERY: Duration = Duration::from_millis(10);

/// Growth of the resident file pages (the index's, or any other file's) past which the index's
/// are dropped.
const TRIM_ABOVE: usize = 16 << 20;

/// The files a [`TrimmedDirectory`] has mapped, by path, each with a handle that keeps its
/// mapping alive.
type Maps = Mutex<HashMap<PathBuf, OwnedBytes>>;

/// Tantivy's `MmapDirectory`, with the pages of the files it maps trimmed from resident memory
/// (see the module's documentation). Clones share the mappings and the trimming thread.
#[derive(Clone, Debug)]
pub(crate) struct TrimmedDirectory {
    inner: MmapDirectory,
    maps: Arc<Maps>,
}

impl TrimmedDirectory {
    /// Opens `dir` and starts its trimming thread.
    pub(crate) fn open(dir: &Path) -> Result<TrimmedDirectory, OpenDirectoryError> {
        let maps: Arc<Maps> = Arc::default();
        if cfg!(target_os = "linux") {
            let watched = Arc::downgrade(&maps);
            if let Err(e) = std::thread::Builder::new()
                .name("geode-index-trim".into())
                .spawn(move || run(&watched))
            {
                tracing::warn!(error = %e, "index pages will stay resident");
            }
        }
        Ok(TrimmedDirectory {
            inner: MmapDirectory::open(dir)?,
            maps,
        })
    }

    fn maps(&self) -> std::sync::MutexGuard<'_, HashMap<PathBuf, OwnedBytes>> {
        self.maps.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Directory for TrimmedDirectory {
    fn get_file_handle(&self, path: &Path) -> Result<Arc<dyn FileHandle>, OpenReadError> {
        let handle = self.inner.get_file_handle(path)?;
        // The whole file as mapped: a view of the mapping, not a copy.
        if let Ok(bytes) = handle.read_bytes(0..handle.len()) {
            if !bytes.is_empty() {
                self.maps().insert(path.to_path_buf(), bytes);
            }
        }
        Ok(handle)
    }

    fn delete(&self, path: &Path) -> Result<(), DeleteError> {
        self.maps().remove(path);
        self.inner.delete(path)
    }

    fn exists(&self, path: &Path) -> Result<bool, OpenReadError> {
        self.inner.exists(path)
    }

    fn open_write(
        &self,
        path: &Path,
    ) -> Result<WritePtr, tantivy::directory::error::OpenWriteError> {
        self.inner.open_write(path)
    }

    fn atomic_read(&self, path: &Path) -> Result<Vec<u8>, OpenReadError> {
        self.inner.atomic_read(path)
    }

    fn atomic_write(&self, path: &Path, data: &[u8]) -> io::Result<()> {
        self.inner.atomic_write(path, data)
    }

    fn sync_directory(&self) -> io::Result<()> {
        self.inner.sync_directory()
    }

    fn acquire_lock(&self, lock: &Lock) -> Result<DirectoryLock, LockError> {
        self.inner.acquire_lock(lock)
    }

    fn watch(&self, watch_callback: WatchCallback) -> tantivy::Result<WatchHandle> {
        self.inner.watch(watch_callback)
    }
}

/// The trimming thread: runs while the directory's mappings are alive.
fn run(maps: &Weak<Maps>) {
    // What stays resident after a trim is not the index's (the program's own code, other
    // files): the baseline the growth is measured from.
    let mut baseline = resident_file_bytes().unwrap_or(0);
    while maps.strong_count() > 0 {
        std::thread::sleep(EVERY);
        let Some(now) = resident_file_bytes() else {
            continue;
        };
        if now <= baseline + TRIM_ABOVE {
            baseline = baseline.min(now);
            continue;
        }
        let Some(maps) = maps.upgrade() else {
            return;
        };
        {
            let held = maps.lock().unwrap_or_else(|e| e.into_inner());
            for bytes in held.values() {
                trim(bytes.as_slice());
            }
        }
        baseline = resident_file_bytes().unwrap_or(now);
    }
}

/// The process's resident pages that are shared, file-backed for the most part
/// (`/proc/self/statm`, third field), in bytes.
fn resident_file_bytes() -> Option<usize> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: usize = statm.split_ascii_whitespace().nth(2)?.parse().ok()?;
    Some(pages * page_size())
}

fn page_size() -> usize {
    #[cfg(target_os = "linux")]
    // SAFETY: sysconf reads a constant of the system; it takes no pointer.
    let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096);
    #[cfg(not(target_os = "linux"))]
    let page = 4096;
    page
}

/// Drops the resident pages of the mapping `bytes` is a view of, the whole pages inside it.
fn trim(bytes: &[u8]) {
    let page = page_size();
    let start = (bytes.as_ptr() as usize).next_multiple_of(page);
    let end = (bytes.as_ptr() as usize + bytes.len()) / page * page;
    if end <= start {
        return;
    }
    #[cfg(target_os = "linux")]
    // SAFETY: the range lies inside a read-only mapping of a file that the caller keeps alive
    // (it holds `bytes`) for the whole call: MADV_DONTNEED only drops its pages from the page
    // tables, and the next read maps them again from the file, with the same bytes.
    unsafe {
        libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_DONTNEED);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// The resident kilobytes of the mapping that holds `ptr`, from the kernel's account.
    #[cfg(target_os = "linux")]
    fn resident_kb(ptr: *const u8) -> usize {
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let at = ptr as usize;
        let mut lines = smaps.lines();
        while let Some(line) = lines.next() {
            let Some((range, _)) = line.split_once(' ') else {
                continue;
            };
            let Some((start, end)) = range.split_once('-') else {
                continue;
            };
            let (Ok(start), Ok(end)) = (
                usize::from_str_radix(start, 16),
                usize::from_str_radix(end, 16),
            ) else {
                continue;
            };
            if (start..end).contains(&at) {
                return lines
                    .find_map(|l| l.strip_prefix("Rss:"))
                    .and_then(|kb| kb.trim().trim_end_matches("kB").trim().parse().ok())
                    .unwrap();
            }
        }
        panic!("no mapping holds {at:x}");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_mapped_file_read_through_leaves_no_resident_pages_and_reads_the_same() {
        let tmp = tempfile::tempdir().unwrap();
        let len = 8 << 20;
        let mut file = std::fs::File::create(tmp.path().join("segment.idx")).unwrap();
        file.write_all(&vec![7u8; len]).unwrap();
        drop(file);
        let dir = TrimmedDirectory::open(tmp.path()).unwrap();
        let handle = dir.get_file_handle(Path::new("segment.idx")).unwrap();
        let bytes = handle.read_bytes(0..len).unwrap();
        let sum = |b: &[u8]| b.iter().step_by(4096).map(|&x| x as usize).sum::<usize>();
        assert_eq!(sum(bytes.as_slice()), 7 * (len / 4096));
        assert!(resident_kb(bytes.as_slice().as_ptr()) >= 8 << 10);
        for held in dir.maps().values() {
            trim(held.as_slice());
        }
        assert_eq!(resident_kb(bytes.as_slice().as_ptr()), 0);
        assert_eq!(sum(bytes.as_slice()), 7 * (len / 4096), "the same bytes");
    }

    #[test]
    fn a_deleted_file_is_let_go_and_the_thread_ends_with_the_directory() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("a"), b"hello").unwrap();
        let dir = TrimmedDirectory::open(tmp.path()).unwrap();
        let clone = dir.clone();
        assert_eq!(
            dir.get_file_handle(Path::new("a"))
                .unwrap()
                .read_bytes(0..5)
                .unwrap()
                .as_slice(),
            b"hello"
        );
        assert_eq!(dir.maps().len(), 1);
        clone.delete(Path::new("a")).unwrap();
        assert!(dir.maps().is_empty(), "clones share the mappings");
        let watched = Arc::downgrade(&dir.maps);
        drop((dir, clone));
        assert_eq!(watched.strong_count(), 0, "nothing keeps the mappings");
    }
}
