//! The authority file: one link-authority score per indexed URL ([`crate::rank`]), stored as
//! `authority.bin` in the index directory, beside Tantivy's files but not managed by Tantivy
//! (whose garbage collection only deletes files it created). The crawl rewrites it after each
//! run; searches read it whole and look scores up by [`url_hash`].
//!
//! It is not part of the index's commits: a crash between an index commit and the authority
//! write leaves the previous scores, which is harmless (a page missing from the file scores 0).
//!
//! # Format (version 1)
//!
//! All integers little-endian:
//!
//! ```text
//! "GEODEAUT"               8 bytes, magic
//! version  u32             1
//! count    u64             number of entries
//! entries  count x 12      (url_hash u64, score f32), sorted by url_hash, distinct
//! check    8 bytes         first 8 bytes of the SHA-256 of everything before
//! ```
//!
//! A 500,000-page index makes a 6 MB file. [`write`] replaces it atomically (temporary file in
//! the same directory, fsync, rename, fsync of the directory), so a reader sees the old file or
//! the new one, never a mix. The temporary file has one fixed name (`.authority.bin.tmp`), so
//! a write killed midway leaves nothing that the next write does not reuse.

use std::fs::{self, File};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use ring::digest::{digest, SHA256};

use super::IndexError;

/// The file's name inside the index directory.
pub const FILE_NAME: &str = "authority.bin";

const MAGIC: &[u8; 8] = b"GEODEAUT";
const VERSION: u32 = 1;
const HEADER_BYTES: usize = 8 + 4 + 8;
const ENTRY_BYTES: usize = 8 + 4;
const CHECK_BYTES: usize = 8;

/// The key of a URL in the authority file, as in the index's `url_hash` field.
pub use crate::digest::url_hash;

/// Where the authority file of the index in `dir` lives.
pub fn path(dir: &Path) -> PathBuf {
    dir.join(FILE_NAME)
}

/// The temporary file a write goes through. One fixed name, so that a write killed midway
/// leaves at most this one file, which the next write reuses. (Older versions named it after
/// the writer's pid, so every killed write left one more behind; [`write`] removes those.)
fn temp_path(dir: &Path) -> PathBuf {
    dir.join(format!(".{FILE_NAME}.tmp"))
}

/// Whether `name` is a temporary file of an older version's write: `.authority.bin.PID.tmp`.
fn is_stale_temp(name: &str) -> bool {
    name.strip_prefix(&format!(".{FILE_NAME}."))
        .and_then(|rest| rest.strip_suffix(".tmp"))
        .is_some_and(|pid| !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()))
}

/// Replaces the authority file in `dir` (which must exist) with `scores`, given in any order.
/// A non-finite score is stored as 0; of two entries with the same hash the higher score is
/// kept. On error the previous file is left as it was.
///
/// The temporary file is locked (`flock`, exclusive, not waiting) before it is truncated, so
/// two writers at once cannot mix their bytes: the second fails, and its crawl logs that the
/// authority was not updated.
pub fn write(dir: &Path, scores: &[(u64, f32)]) -> Result<(), IndexError> {
    let mut entries: Vec<(u64, f32)> = scores
        .iter()
        .map(|&(hash, score)| (hash, if score.is_finite() { score } else { 0.0 }))
        .collect();
    entries.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(b.1.total_cmp(&a.1)));
    entries.dedup_by_key(|e| e.0);
    let bytes = encode(&entries);

    let temp = temp_path(dir);
    // Not truncated on open: another writer may hold it; truncation waits for the lock.
    let mut file = fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(&temp)?;
    lock_exclusive(&file)?;
    let written = (|| {
        file.set_len(0)?;
        file.write_all(&bytes)?;
        file.sync_all()?;
        fs::rename(&temp, path(dir))
    })();
    if let Err(e) = written {
        let _ = fs::remove_file(&temp);
        return Err(e.into());
    }
    drop(file);
    // Make the rename itself durable. Directories cannot be opened as files everywhere; where
    // they can, a failing sync is a real error.
    if let Ok(d) = File::open(dir) {
        d.sync_all()?;
    }
    remove_stale_temps(dir);
    Ok(())
}

/// Removes the temporary files older versions left behind when killed mid-write. Failing to
/// is not worth failing the write for: they only take space.
fn remove_stale_temps(dir: &Path) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        if entry.file_name().to_str().is_some_and(is_stale_temp) {
            if let Err(e) = fs::remove_file(entry.path()) {
                tracing::debug!("leaving {}: {e}", entry.path().display());
            }
        }
    }
}

#[cfg(unix)]
fn lock_exclusive(file: &File) -> Result<(), IndexError> {
    use std::os::fd::AsRawFd;
    // SAFETY: flock(2) on a descriptor we own; no memory is passed.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
        return Ok(());
    }
    let error = std::io::Error::last_os_error();
    if error.kind() == std::io::ErrorKind::WouldBlock {
        return Err(IndexError::Io(std::io::Error::other(
            "another process is writing the authority file",
        )));
    }
    Err(IndexError::Io(error))
}

#[cfg(not(unix))]
fn lock_exclusive(_file: &File) -> Result<(), IndexError> {
    Ok(())
}

fn encode(entries: &[(u64, f32)]) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(HEADER_BYTES + entries.len() * ENTRY_BYTES + CHECK_BYTES);
    bytes.extend_from_slice(MAGIC);
    bytes.extend_from_slice(&VERSION.to_le_bytes());
    bytes.extend_from_slice(&(entries.len() as u64).to_le_bytes());
    for (hash, score) in entries {
        bytes.extend_from_slice(&hash.to_le_bytes());
        bytes.extend_from_slice(&score.to_le_bytes());
    }
    let check = digest(&SHA256, &bytes);
    bytes.extend_from_slice(&check.as_ref()[..CHECK_BYTES]);
    bytes
}

/// What a reader remembers of the file it loaded, to notice a replacement cheaply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FileStamp {
    len: u64,
    modified: Option<SystemTime>,
    /// The inode: a rename always brings a new one, even within the clock's resolution.
    inode: u64,
}

impl FileStamp {
    fn of(meta: &fs::Metadata) -> Self {
        #[cfg(unix)]
        let inode = std::os::unix::fs::MetadataExt::ino(meta);
        #[cfg(not(unix))]
        let inode = 0;
        FileStamp {
            len: meta.len(),
            modified: meta.modified().ok(),
            inode,
        }
    }
}

/// The authority scores, loaded into memory: sorted hashes and their scores side by side, and a
/// table of where each range of hashes starts.
///
/// A lookup reads the range of its hash's top bits from the table, then binary-searches the few
/// entries in it (four on average), which stay within a cache line or two. The hashes are
/// SHA-256 prefixes, so ranges fill evenly; a range that was made to fill up (URLs crafted for
/// it) only slows its own lookups to a binary search. For 500,000 entries this loads in a few
/// milliseconds (the file is already sorted) where a `HashMap` takes about 100 ms to build, and
/// a random lookup costs about what a `HashMap` lookup costs and 3 to 8 times less than a binary
/// search over the whole table (see the `lookup_speed` test for the figures).
#[derive(Debug, Clone, Default)]
pub struct Authority {
    hashes: Vec<u64>,
    scores: Vec<f32>,
    /// `starts[b]..starts[b + 1]` are the entries whose hash's top `bits` bits are `b`.
    starts: Vec<u32>,
    bits: u32,
    /// The highest score, 0 when there is none: a bound on every page's authority.
    max: f32,
    /// `None` when no file existed at load time.
    stamp: Option<FileStamp>,
}

impl Authority {
    /// The highest score of the table; 0 when it is empty.
    pub fn max_score(&self) -> f32 {
        self.max
    }

    /// Reads the authority file of the index in `dir`. A missing file gives an empty table (every
    /// page scores 0); a file that is truncated, from another version or otherwise damaged is
    /// [`IndexError::Corrupt`].
    pub fn load(dir: &Path) -> Result<Self, IndexError> {
        let path = path(dir);
        let mut file = match File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Self::default()),
            Err(e) => return Err(e.into()),
        };
        // The stamp of the file actually opened, even if it is replaced while being read.
        let stamp = FileStamp::of(&file.metadata()?);
        let mut bytes = Vec::with_capacity(usize::try_from(stamp.len).unwrap_or(0));
        file.read_to_end(&mut bytes)?;
        let (hashes, scores) = decode(&bytes)
            .map_err(|why| IndexError::Corrupt(format!("{}: {why}", path.display())))?;
        let mut table = Self::from_sorted(hashes, scores);
        table.stamp = Some(stamp);
        Ok(table)
    }

    /// Builds the range table over sorted, distinct hashes.
    fn from_sorted(hashes: Vec<u64>, scores: Vec<f32>) -> Self {
        // About four entries per range; at most 2^20 ranges (4 MiB of table).
        let bits = (usize::BITS - (hashes.len() / 4).leading_zeros()).min(20);
        let ranges = 1usize << bits;
        let mut starts = Vec::with_capacity(ranges + 1);
        let mut i = 0;
        for range in 0..ranges {
            while i < hashes.len() && range_of(hashes[i], bits) < range {
                i += 1;
            }
            starts.push(i as u32);
        }
        starts.push(hashes.len() as u32);
        let max = scores.iter().copied().fold(0.0, f32::max);
        Authority {
            hashes,
            scores,
            starts,
            bits,
            max,
            stamp: None,
        }
    }

    /// The score of a URL hash ([`url_hash`]), 0 when the file does not know it.
    pub fn get(&self, url_hash: u64) -> f32 {
        let range = range_of(url_hash, self.bits);
        let (Some(&start), Some(&end)) = (self.starts.get(range), self.starts.get(range + 1))
        else {
            return 0.0;
        };
        let (start, end) = (start as usize, end as usize);
        match self
            .hashes
            .get(start..end)
            .map(|h| h.binary_search(&url_hash))
        {
            Some(Ok(i)) => self.scores.get(start + i).copied().unwrap_or(0.0),
            _ => 0.0,
        }
    }

    /// Number of scored URLs.
    pub fn len(&self) -> usize {
        self.hashes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.hashes.is_empty()
    }

    /// Whether the file in `dir` was replaced, created or removed since this table was loaded
    /// (one `stat`; an unreadable directory counts as a change).
    pub fn is_stale(&self, dir: &Path) -> bool {
        match fs::metadata(path(dir)) {
            Ok(meta) => self.stamp != Some(FileStamp::of(&meta)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => self.stamp.is_some(),
            Err(_) => true,
        }
    }
}

/// The range of the lookup table a hash falls in: its top `bits` bits.
fn range_of(hash: u64, bits: u32) -> usize {
    if bits == 0 {
        0
    } else {
        (hash >> (64 - bits)) as usize
    }
}

/// Checks and splits a file's bytes; the error says what is wrong.
fn decode(bytes: &[u8]) -> Result<(Vec<u64>, Vec<f32>), String> {
    if bytes.len() < HEADER_BYTES + CHECK_BYTES {
        return Err(format!("{} bytes, shorter than a header", bytes.len()));
    }
    if &bytes[..8] != MAGIC {
        return Err("not an authority file (bad magic)".into());
    }
    let version = u32::from_le_bytes(bytes[8..12].try_into().map_err(|_| "header")?);
    if version != VERSION {
        return Err(format!("version {version}, expected {VERSION}"));
    }
    let count = u64::from_le_bytes(bytes[12..20].try_into().map_err(|_| "header")?);
    let expected = usize::try_from(count)
        .ok()
        .and_then(|c| c.checked_mul(ENTRY_BYTES))
        .and_then(|e| e.checked_add(HEADER_BYTES + CHECK_BYTES));
    if expected != Some(bytes.len()) {
        return Err(format!(
            "{} bytes, but the header announces {count} entries (truncated?)",
            bytes.len()
        ));
    }
    let (body, check) = bytes.split_at(bytes.len() - CHECK_BYTES);
    if &digest(&SHA256, body).as_ref()[..CHECK_BYTES] != check {
        return Err("checksum mismatch".into());
    }
    let n = count as usize;
    let mut hashes = Vec::with_capacity(n);
    let mut scores = Vec::with_capacity(n);
    for entry in body[HEADER_BYTES..].chunks_exact(ENTRY_BYTES) {
        let (h, s) = entry.split_at(8);
        let hash = u64::from_le_bytes(h.try_into().map_err(|_| "entry")?);
        let score = f32::from_le_bytes(s.try_into().map_err(|_| "entry")?);
        if hashes.last().is_some_and(|&last| last >= hash) {
            return Err("entries out of order".into());
        }
        if !score.is_finite() {
            return Err("a score is not a finite number".into());
        }
        hashes.push(hash);
        scores.push(score);
    }
    Ok((hashes, scores))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_hash_is_the_big_endian_sha256_prefix() {
        // SHA-256("abc") = ba7816bf8f01cfea 414140de5dae2223...
        assert_eq!(url_hash("abc"), 0xba78_16bf_8f01_cfea);
        assert_ne!(url_hash("gemini://a.test/"), url_hash("gemini://a.test"));
    }

    #[test]
    fn round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let scores = vec![
            (url_hash("gemini://b.test/"), 0.25),
            (url_hash("gemini://a.test/"), 1.0),
            (7, 0.5),
            (7, 0.75),
            (u64::MAX, f32::NAN),
            (0, 0.0),
        ];
        write(dir.path(), &scores).unwrap();
        let a = Authority::load(dir.path()).unwrap();
        assert_eq!(a.len(), 5, "the duplicate hash is stored once");
        assert_eq!(a.get(url_hash("gemini://a.test/")), 1.0);
        assert_eq!(a.get(url_hash("gemini://b.test/")), 0.25);
        assert_eq!(a.get(7), 0.75, "the higher of two scores for one hash");
        assert_eq!(a.get(u64::MAX), 0.0, "NaN is stored as 0");
        assert_eq!(a.get(12345), 0.0, "unknown hash");
        let size = fs::metadata(path(dir.path())).unwrap().len() as usize;
        assert_eq!(size, HEADER_BYTES + 5 * ENTRY_BYTES + CHECK_BYTES);
        // No temporary file is left behind.
        let names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, [FILE_NAME]);

        // An empty table round-trips too.
        write(dir.path(), &[]).unwrap();
        let a = Authority::load(dir.path()).unwrap();
        assert!(a.is_empty());
        assert_eq!(a.get(7), 0.0);
    }

    #[test]
    fn lookups_find_every_entry_whatever_the_table_size() {
        for n in [0u64, 1, 3, 4, 7, 100, 5_000] {
            // Spread hashes, the extremes, and a cluster sharing their top bits.
            let mut entries: Vec<(u64, f32)> = (0..n)
                .map(|i| (url_hash(&i.to_string()), (i % 97) as f32 / 96.0))
                .collect();
            if n > 0 {
                entries.extend([(0, 0.1), (u64::MAX, 0.2)]);
                entries.extend((0..n.min(50)).map(|i| (0x8000_0000_0000_0000 + i, 0.3)));
            }
            entries.sort_by_key(|e| e.0);
            entries.dedup_by_key(|e| e.0);
            let (hashes, scores) = entries.iter().copied().unzip();
            let table = Authority::from_sorted(hashes, scores);
            assert_eq!(table.len(), entries.len());
            for &(hash, score) in &entries {
                assert_eq!(table.get(hash), score, "n = {n}, hash {hash:#x}");
                for absent in [hash.wrapping_add(1), hash.wrapping_sub(1)] {
                    if entries.binary_search_by_key(&absent, |e| e.0).is_err() {
                        assert_eq!(table.get(absent), 0.0, "n = {n}, hash {absent:#x}");
                    }
                }
            }
        }
    }

    /// Issue 12, item 8: a crawl killed during the authority step left a
    /// `.authority.bin.<pid>.tmp` file that no later run removed.
    #[test]
    fn a_killed_authority_write_leaves_no_temp_file_behind() {
        let dir = tempfile::tempdir().unwrap();
        let junk = [
            ".authority.bin.4242.tmp",
            ".authority.bin.1.tmp",
            // What a write killed by this version leaves: reused, not added to.
            ".authority.bin.tmp",
        ];
        for name in junk {
            fs::write(dir.path().join(name), b"half a file").unwrap();
        }
        // Not ours: left alone.
        let keep = ["authority.bin.bak", ".authority.bin.x.tmp", "notes.tmp"];
        for name in keep {
            fs::write(dir.path().join(name), b"mine").unwrap();
        }
        write(dir.path(), &[(1, 0.5), (2, 1.0)]).unwrap();
        write(dir.path(), &[(3, 0.25)]).unwrap();
        let mut names: Vec<String> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        let mut want: Vec<String> = keep.iter().map(|s| s.to_string()).collect();
        want.push(FILE_NAME.to_string());
        want.sort();
        assert_eq!(names, want);
        let loaded = Authority::load(dir.path()).unwrap();
        assert_eq!((loaded.len(), loaded.get(3)), (1, 0.25));
    }

    #[cfg(unix)]
    #[test]
    fn a_second_writer_at_once_fails_instead_of_mixing_bytes() {
        use std::os::fd::AsRawFd;
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), &[(1, 1.0)]).unwrap();
        let held = File::create(temp_path(dir.path())).unwrap();
        // SAFETY: flock(2) on a descriptor we own; no memory is passed.
        assert_eq!(unsafe { libc::flock(held.as_raw_fd(), libc::LOCK_EX) }, 0);
        let e = write(dir.path(), &[(2, 1.0)]).unwrap_err();
        assert!(e.to_string().contains("another process"), "{e}");
        assert_eq!(Authority::load(dir.path()).unwrap().get(1), 1.0);
    }

    #[test]
    fn missing_file_is_empty_and_missing_directory_fails_to_write() {
        let dir = tempfile::tempdir().unwrap();
        let a = Authority::load(dir.path()).unwrap();
        assert!(a.is_empty());
        assert!(!a.is_stale(dir.path()));
        let absent = dir.path().join("absent");
        assert!(Authority::load(&absent).unwrap().is_empty());
        assert!(matches!(
            write(&absent, &[(1, 1.0)]),
            Err(IndexError::Io(_))
        ));
    }

    #[test]
    fn damaged_files_are_errors_that_say_so() {
        let good = encode(&[(1, 0.5), (2, 1.0)]);
        let mut flipped = good.clone();
        flipped[HEADER_BYTES + 9] ^= 0x40;
        // `encode` takes entries as given: these are well-formed but unsorted.
        let unsorted = encode(&[(2, 0.5), (1, 1.0)]);
        let repeated = encode(&[(1, 0.5), (1, 1.0)]);
        let infinite = encode(&[(1, f32::INFINITY)]);
        let mut version = good.clone();
        version[8] = 9;
        let mut huge_count = good.clone();
        huge_count[12..20].copy_from_slice(&u64::MAX.to_le_bytes());

        let cases: Vec<(&str, Vec<u8>, &str)> = vec![
            ("empty", Vec::new(), "shorter than a header"),
            ("truncated", good[..good.len() - 3].to_vec(), "truncated"),
            ("extra bytes", [good.clone(), vec![0]].concat(), "truncated"),
            ("bad magic", [b"NOTGEODE", &good[8..]].concat(), "bad magic"),
            ("other version", version, "version 9"),
            ("huge count", huge_count, "announces"),
            ("bit flip", flipped, "checksum"),
            ("unsorted", unsorted, "out of order"),
            ("repeated hash", repeated, "out of order"),
            ("infinite score", infinite, "finite"),
        ];
        for (name, bytes, why) in cases {
            let dir = tempfile::tempdir().unwrap();
            fs::write(path(dir.path()), &bytes).unwrap();
            match Authority::load(dir.path()) {
                Err(IndexError::Corrupt(msg)) => {
                    assert!(msg.contains(why), "{name}: {msg}");
                    assert!(msg.contains(FILE_NAME), "{name}: names the file: {msg}");
                }
                other => panic!("{name}: expected Corrupt, got {other:?}"),
            }
        }
        // And the good bytes load.
        let dir = tempfile::tempdir().unwrap();
        fs::write(path(dir.path()), &good).unwrap();
        assert_eq!(Authority::load(dir.path()).unwrap().get(2), 1.0);
    }

    #[test]
    fn a_failed_write_leaves_the_old_file() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), &[(1, 0.5)]).unwrap();
        // A directory where the temporary file should go makes the write fail before rename.
        fs::create_dir(temp_path(dir.path())).unwrap();
        assert!(write(dir.path(), &[(1, 1.0), (2, 1.0)]).is_err());
        let a = Authority::load(dir.path()).unwrap();
        assert_eq!((a.len(), a.get(1)), (1, 0.5));
        assert!(temp_path(dir.path()).is_dir(), "not ours to remove");
    }

    #[test]
    fn staleness() {
        let dir = tempfile::tempdir().unwrap();
        let empty = Authority::load(dir.path()).unwrap();
        write(dir.path(), &[(1, 0.5)]).unwrap();
        assert!(empty.is_stale(dir.path()), "a file appeared");
        let first = Authority::load(dir.path()).unwrap();
        assert!(!first.is_stale(dir.path()));
        // Same size, written right away: the inode still tells.
        write(dir.path(), &[(1, 0.75)]).unwrap();
        assert!(first.is_stale(dir.path()), "the file was replaced");
        let second = Authority::load(dir.path()).unwrap();
        assert!(!second.is_stale(dir.path()));
        fs::remove_file(path(dir.path())).unwrap();
        assert!(second.is_stale(dir.path()), "the file was removed");
    }

    /// Sorted-vector binary search against a hash map, 500,000 entries:
    /// `cargo test --lib index::authority::tests::lookup_speed -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn lookup_speed() {
        use std::collections::HashMap;
        use std::time::Instant;
        let n = 500_000u64;
        let entries: Vec<(u64, f32)> = (0..n)
            .map(|i| (url_hash(&format!("gemini://c{}.test/{i}", i / 50)), 0.5))
            .collect();
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), &entries).unwrap();

        let started = Instant::now();
        let table = Authority::load(dir.path()).unwrap();
        let load_vec = started.elapsed();
        let started = Instant::now();
        let map: HashMap<u64, f32> = table
            .hashes
            .iter()
            .copied()
            .zip(table.scores.iter().copied())
            .collect();
        let build_map = started.elapsed();

        // Random probes, half of them hits.
        let probes: Vec<u64> = (0..1_000_000u64)
            .map(|i| {
                if i % 2 == 0 {
                    entries[(i.wrapping_mul(2_654_435_761) % n) as usize].0
                } else {
                    url_hash(&i.to_string())
                }
            })
            .collect();
        let started = Instant::now();
        let mut sum = 0.0f64;
        for p in &probes {
            sum += f64::from(table.get(*p));
        }
        let vec_time = started.elapsed();
        let started = Instant::now();
        let mut sum_plain = 0.0f64;
        for p in &probes {
            sum_plain += match table.hashes.binary_search(p) {
                Ok(i) => f64::from(table.scores[i]),
                Err(_) => 0.0,
            };
        }
        let plain_time = started.elapsed();
        let started = Instant::now();
        let mut sum_map = 0.0f64;
        for p in &probes {
            sum_map += f64::from(map.get(p).copied().unwrap_or(0.0));
        }
        let map_time = started.elapsed();
        println!(
            "500k entries: load {load_vec:?}, building a HashMap from it {build_map:?}; 1M \
             lookups: ranges + binary search {vec_time:?}, plain binary search {plain_time:?}, \
             HashMap {map_time:?}"
        );
        assert_eq!(sum, sum_map);
        assert_eq!(sum, sum_plain);
        assert_eq!(sum, 250_000.0);
    }
}
