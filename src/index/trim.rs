//! Keeps the index writer's view of the index files out of the process's resident memory.
//!
//! Tantivy reads segments through memory maps. Every page a merge reads (a merge reads whole
//! segments, and copies a segment's stored documents in one sweep) stays mapped into the
//! process until the segment is closed, and counts as resident: compacting a 300 MB index at
//! the end of a crawl made the crawl's resident set grow by 300 MB, and so on with the size of
//! the index. Those pages are the file's, cached by the kernel; the process needs them only
//! while it reads them. So while an [`Indexer`](super::Indexer) is open, a thread watches the
//! process's resident file pages (`/proc/self/statm`, a hundred times a second) and, once they
//! have grown by [`TRIM_ABOVE`], asks the kernel to page out the index's mapped files
//! (`madvise(MADV_PAGEOUT)`, Linux 5.4 and later). A mapping of the index is read-only and its
//! pages clean, so they are simply dropped; a page read again is read again from the file.
//! What stays resident of the index is thus [`TRIM_ABOVE`] plus what a merge reads in
//! [`EVERY`], whatever the size of the index. On other systems than Linux, or older kernels,
//! this does nothing.
//!
//! Why not `MADV_DONTNEED`, which only unmaps: the ranges come from `/proc/self/maps`, read
//! before the advice is given, and Tantivy may unmap a segment in between and the allocator map
//! private memory at the same address. `MADV_DONTNEED` would then zero that memory;
//! `MADV_PAGEOUT` keeps the contents of any mapping (private pages go to swap, or stay), so
//! that race can cost a page-in, never a byte.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// How often the resident file pages are looked at: reading `/proc/self/statm` costs a few
/// microseconds, and a merge copying stored documents reads a few gigabytes a second at most.
const EVERY: Duration = Duration::from_millis(10);

/// Growth of the resident file pages (the index's, or any other file's) past which the index's
/// are dropped.
const TRIM_ABOVE: usize = 16 << 20;

/// The trimming thread of one index directory; stopped when dropped.
pub(super) struct Trimmer {
    stop: Arc<(Mutex<bool>, Condvar)>,
    thread: Option<JoinHandle<()>>,
}

impl Trimmer {
    /// Starts trimming the mappings of files under `dir`.
    pub(super) fn start(dir: &Path) -> Trimmer {
        let stop = Arc::new((Mutex::new(false), Condvar::new()));
        let thread = if cfg!(target_os = "linux") {
            let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
            let stop = Arc::clone(&stop);
            std::thread::Builder::new()
                .name("geode-index-trim".into())
                .spawn(move || run(&dir, &stop))
                .map_err(|e| tracing::warn!(error = %e, "index pages will stay resident"))
                .ok()
        } else {
            None
        };
        Trimmer { stop, thread }
    }
}

impl Drop for Trimmer {
    fn drop(&mut self) {
        let (stopped, wake) = &*self.stop;
        *stopped.lock().unwrap_or_else(|e| e.into_inner()) = true;
        wake.notify_all();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn run(dir: &Path, stop: &(Mutex<bool>, Condvar)) {
    let (stopped, wake) = stop;
    // What stays resident after a trim is not the index's (the program's own code, other
    // files): the baseline the growth is measured from.
    let mut baseline = resident_file_bytes().unwrap_or(0);
    let mut guard = stopped.lock().unwrap_or_else(|e| e.into_inner());
    while !*guard {
        drop(guard);
        if let Some(now) = resident_file_bytes() {
            if now > baseline + TRIM_ABOVE {
                trim(dir);
                baseline = resident_file_bytes().unwrap_or(now);
            } else {
                baseline = baseline.min(now);
            }
        }
        guard = stopped.lock().unwrap_or_else(|e| e.into_inner());
        guard = wake
            .wait_timeout(guard, EVERY)
            .unwrap_or_else(|e| e.into_inner())
            .0;
    }
}

/// The process's resident pages that are shared, file-backed for the most part
/// (`/proc/self/statm`, third field), in bytes.
fn resident_file_bytes() -> Option<usize> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: usize = statm.split_ascii_whitespace().nth(2)?.parse().ok()?;
    #[cfg(target_os = "linux")]
    // SAFETY: sysconf reads a constant of the system; it takes no pointer.
    let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).ok()?;
    #[cfg(not(target_os = "linux"))]
    let page = 4096;
    Some(pages * page)
}

/// Drops the resident pages of every shared, read-only mapping of a file under `dir`.
fn trim(dir: &Path) {
    let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else {
        return;
    };
    for (start, end) in maps.lines().filter_map(|line| index_mapping(line, dir)) {
        #[cfg(target_os = "linux")]
        // SAFETY: MADV_PAGEOUT never changes what any mapping reads, whatever is mapped at
        // that range by now (see the module's documentation); an unmapped range only makes
        // madvise fail, which is ignored.
        unsafe {
            libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_PAGEOUT);
        }
        #[cfg(not(target_os = "linux"))]
        let _ = (start, end);
    }
}

/// The address range of a line of `/proc/self/maps` when it maps a file under `dir` shared and
/// read-only (`r--s`), as Tantivy's memory maps are.
fn index_mapping(line: &str, dir: &Path) -> Option<(usize, usize)> {
    let mut fields = line.split_ascii_whitespace();
    let range = fields.next()?;
    let perms = fields.next()?;
    // Offset, device and inode, then the path (which may hold spaces).
    let path = line.splitn(6, |c: char| c.is_ascii_whitespace()).nth(5)?;
    let path = PathBuf::from(path.trim_start().trim_end_matches(" (deleted)"));
    if perms != "r--s" || !path.starts_with(dir) {
        return None;
    }
    let (start, end) = range.split_once('-')?;
    let start = usize::from_str_radix(start, 16).ok()?;
    let end = usize::from_str_radix(end, 16).ok()?;
    (end > start).then_some((start, end))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_shared_read_only_maps_of_the_index_s_files_are_trimmed() {
        let dir = Path::new("/data/index/tantivy");
        let cases = [
            (
                "7f01a000-7f01c000 r--s 00000000 08:01 1234    /data/index/tantivy/ab12.idx",
                Some((0x7f01a000, 0x7f01c000)),
            ),
            (
                "7f01a000-7f01c000 r--s 00000000 08:01 1234    /data/index/tantivy/a b.pos (deleted)",
                Some((0x7f01a000, 0x7f01c000)),
            ),
            // Written, private, or another directory's file: left alone.
            (
                "7f01a000-7f01c000 rw-s 00000000 08:01 1234    /data/index/tantivy/ab12.idx",
                None,
            ),
            (
                "7f01a000-7f01c000 r--p 00000000 08:01 1234    /data/index/tantivy/ab12.idx",
                None,
            ),
            (
                "7f01a000-7f01c000 r--s 00000000 08:01 1234    /data/index/tantivy-old/x.idx",
                None,
            ),
            ("7f01a000-7f01c000 rw-p 00000000 00:00 0 ", None),
            ("7f01a000-7f01c000 r--s 00000000 08:01 1234", None),
        ];
        for (line, want) in cases {
            assert_eq!(index_mapping(line, dir), want, "{line}");
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_mapped_file_read_through_leaves_no_resident_pages() {
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("segment.idx");
        let mut file = std::fs::File::create(&path).unwrap();
        file.write_all(&vec![7u8; 8 << 20]).unwrap();
        drop(file);
        let file = std::fs::File::open(&path).unwrap();
        let len = 8 << 20;
        // SAFETY: a fresh read-only shared mapping of a file this test owns.
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_SHARED,
                std::os::fd::AsRawFd::as_raw_fd(&file),
                0,
            )
        };
        assert_ne!(map, libc::MAP_FAILED);
        // SAFETY: the mapping is `len` bytes long and stays mapped until the end of the test.
        let bytes = unsafe { std::slice::from_raw_parts(map as *const u8, len) };
        let sum = |b: &[u8]| b.iter().step_by(4096).map(|&x| x as usize).sum::<usize>();
        // The resident kilobytes of this mapping, from the kernel's account of it.
        let resident_kb = || {
            let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
            let start = format!("{:x}-", map as usize);
            let mut lines = smaps.lines().skip_while(|l| !l.starts_with(&start));
            lines.next().expect("the mapping is listed");
            lines
                .find_map(|l| l.strip_prefix("Rss:"))
                .and_then(|kb| {
                    kb.trim()
                        .trim_end_matches("kB")
                        .trim()
                        .parse::<usize>()
                        .ok()
                })
                .unwrap()
        };
        assert_eq!(sum(bytes), 7 * (len / 4096));
        assert!(
            resident_kb() >= 8 << 10,
            "read through: {} kB",
            resident_kb()
        );
        trim(&dir.path().canonicalize().unwrap());
        assert_eq!(resident_kb(), 0);
        // The bytes are still there, and read the same.
        assert_eq!(sum(bytes), 7 * (len / 4096));
        // SAFETY: unmapping the mapping made above.
        unsafe { libc::munmap(map, len) };
    }
}
