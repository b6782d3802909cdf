//! The pages' vectors on disk, beside the index: in `DATA/vectors/`, per model fingerprint, a
//! file of fixed-size rows (`FP.rows`), a file of the URLs they belong to (`FP.urls.GEN`) and
//! one of their binary codes, row for row (`FP.bits.GEN`).
//!
//! ```text
//! FP.rows   header: "GEODEVEC", version u32, dimensions u32, generation u64, 8 zero bytes
//!           rows:   flags u8 (1: dead), 3 zero bytes, URL length u32, URL offset u64,
//!                   scale f32, key [u8; 12], the vector as `dimensions` signed bytes
//! FP.urls.N the URLs, end to end
//! FP.bits.N each row's signs, a bit a dimension, in 64-bit words
//! ```
//!
//! A search reads every row of a small store ([`EXACT_ROWS`] rows or fewer). In a larger one it
//! first scans the binary codes (48 bytes a row for 384 dimensions, an eighth of the rows'
//! bytes, read in order) for the [`RERANKED`] rows whose signs differ least from the query's,
//! then ranks those by their bytes: at 500,000 rows a scan of the rows alone took 15 ms, most of
//! it reading 208 MB from memory.
//!
//! Little-endian throughout. One writer at a time (`geode embed`, which holds an exclusive
//! `flock` on the rows file) appends: a URL first, then its row, then marks the URL's previous
//! row dead in place; readers map both files and see rows appear and die. A row cut short by a
//! crash is cut off by the next writer; a URL written without its row is never read. When dead
//! rows outnumber live ones the writer compacts: the live rows' URLs go to a new URL file of the
//! next generation, the rows to a new rows file renamed over the old one (one atomic step), and
//! the old URL file is removed. A reader that mapped the old files keeps reading them until it
//! sees the rows file change.
//!
//! A dead row's vector is still good for its key: a page that changes back to what it was, or
//! a page of the same text under another URL, reuses it without running the model.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use memmap2::Mmap;

use super::input::KEY_BYTES;
use super::quant::{dot, hamming, quantize, signs};
use super::{EmbedError, Neighbour};

const MAGIC: &[u8; 8] = b"GEODEVEC";
const VERSION: u32 = 2;
const HEADER: usize = 32;
const ROW_HEADER: usize = 32;
const DEAD: u8 = 1;

/// The longest URL a row records (longer ones are not given vectors).
const MAX_URL: usize = 4096;

/// Rows a writer reads at once when it loads the rows' headers.
const LOAD_CHUNK_ROWS: u64 = 4096;

/// Rows scanned per thread before a scan is split across threads.
const ROWS_PER_THREAD: usize = 50_000;

/// The most rows a search reads in full; past it, the binary codes choose which to read.
pub const EXACT_ROWS: usize = 50_000;

/// How many rows the binary codes pass on to be ranked by their bytes.
pub const RERANKED: usize = 2_000;

fn rows_path(data_dir: &Path, fingerprint: &str) -> PathBuf {
    crate::datadir::vectors_path(data_dir).join(format!("{fingerprint}.rows"))
}

fn urls_path(data_dir: &Path, fingerprint: &str, generation: u64) -> PathBuf {
    crate::datadir::vectors_path(data_dir).join(format!("{fingerprint}.urls.{generation}"))
}

fn bits_path(data_dir: &Path, fingerprint: &str, generation: u64) -> PathBuf {
    crate::datadir::vectors_path(data_dir).join(format!("{fingerprint}.bits.{generation}"))
}

/// The 64-bit words of a binary code of `dim` dimensions.
fn code_words(dim: usize) -> usize {
    dim.div_ceil(64)
}

/// A binary code as bytes.
fn code_bytes(code: &[u64]) -> Vec<u8> {
    code.iter().flat_map(|w| w.to_le_bytes()).collect()
}

fn store_error(path: &Path, what: impl std::fmt::Display) -> EmbedError {
    EmbedError::Store {
        path: path.to_path_buf(),
        what: what.to_string(),
    }
}

fn header_bytes(dim: usize, generation: u64) -> [u8; HEADER] {
    let mut h = [0u8; HEADER];
    h[..8].copy_from_slice(MAGIC);
    h[8..12].copy_from_slice(&VERSION.to_le_bytes());
    h[12..16].copy_from_slice(&(dim as u32).to_le_bytes());
    h[16..24].copy_from_slice(&generation.to_le_bytes());
    h
}

/// The URL file generation of a rows file's header, checked against the dimensions expected.
fn parse_header(path: &Path, bytes: &[u8], dim: usize) -> Result<u64, EmbedError> {
    if bytes.len() < HEADER || &bytes[..8] != MAGIC {
        return Err(store_error(path, "not a geode vectors file"));
    }
    let version = u32::from_le_bytes(bytes[8..12].try_into().unwrap_or_default());
    if version != VERSION {
        return Err(store_error(
            path,
            format!("version {version}, not {VERSION}"),
        ));
    }
    let found = u32::from_le_bytes(bytes[12..16].try_into().unwrap_or_default()) as usize;
    if found != dim {
        return Err(store_error(
            path,
            format!("{found} dimensions, the model has {dim}"),
        ));
    }
    Ok(u64::from_le_bytes(
        bytes[16..24].try_into().unwrap_or_default(),
    ))
}

/// One row's header.
#[derive(Debug, Clone, Copy)]
struct RowHead {
    dead: bool,
    url_len: u32,
    url_off: u64,
    scale: f32,
    key: [u8; KEY_BYTES],
}

impl RowHead {
    fn parse(b: &[u8]) -> RowHead {
        let mut key = [0; KEY_BYTES];
        key.copy_from_slice(&b[20..20 + KEY_BYTES]);
        RowHead {
            dead: b[0] & DEAD != 0,
            url_len: u32::from_le_bytes(b[4..8].try_into().unwrap_or_default()),
            url_off: u64::from_le_bytes(b[8..16].try_into().unwrap_or_default()),
            scale: f32::from_le_bytes(b[16..20].try_into().unwrap_or_default()),
            key,
        }
    }

    fn bytes(&self) -> [u8; ROW_HEADER] {
        let mut b = [0u8; ROW_HEADER];
        b[0] = if self.dead { DEAD } else { 0 };
        b[4..8].copy_from_slice(&self.url_len.to_le_bytes());
        b[8..16].copy_from_slice(&self.url_off.to_le_bytes());
        b[16..20].copy_from_slice(&self.scale.to_le_bytes());
        b[20..20 + KEY_BYTES].copy_from_slice(&self.key);
        b
    }
}

/// The files a reader has mapped.
struct Mapped {
    rows: Option<Mmap>,
    urls: Option<Mmap>,
    bits: Option<Mmap>,
    /// The rows file's inode and length when mapped: either changing means remapping.
    seen: (u64, u64),
}

/// A data directory's vectors of one model, for searching; empty when `geode embed` has not
/// run with that model.
pub struct Reader {
    data_dir: PathBuf,
    fingerprint: String,
    dim: usize,
    mapped: Mutex<std::sync::Arc<Mapped>>,
}

impl Reader {
    pub fn open(data_dir: &Path, fingerprint: &str, dim: usize) -> Result<Reader, EmbedError> {
        let reader = Reader {
            data_dir: data_dir.to_path_buf(),
            fingerprint: fingerprint.to_string(),
            dim,
            mapped: Mutex::new(std::sync::Arc::new(Mapped {
                rows: None,
                urls: None,
                bits: None,
                seen: (0, 0),
            })),
        };
        reader.current()?;
        Ok(reader)
    }

    fn row_size(&self) -> usize {
        ROW_HEADER + self.dim
    }

    /// The files as they are now: remapped when the writer appended or compacted since.
    fn current(&self) -> Result<std::sync::Arc<Mapped>, EmbedError> {
        let path = rows_path(&self.data_dir, &self.fingerprint);
        let now = match std::fs::metadata(&path) {
            Ok(m) => (m.ino(), m.len()),
            Err(_) => (0, 0),
        };
        let mut mapped = self.mapped.lock().unwrap_or_else(|p| p.into_inner());
        if mapped.seen == now {
            return Ok(std::sync::Arc::clone(&mapped));
        }
        if now == (0, 0) {
            *mapped = std::sync::Arc::new(Mapped {
                rows: None,
                urls: None,
                bits: None,
                seen: now,
            });
            return Ok(std::sync::Arc::clone(&mapped));
        }
        let file = File::open(&path).map_err(|e| store_error(&path, e))?;
        // SAFETY: read-only maps; the one writer only appends and flips a row's flag byte,
        // and replaces the files by renaming new ones over them, never by rewriting in place.
        let rows = unsafe { Mmap::map(&file) }.map_err(|e| store_error(&path, e))?;
        let generation = match parse_header(&path, &rows, self.dim) {
            Ok(generation) => generation,
            // Vectors of an older layout: searched as none until `geode embed` remakes them.
            Err(e) => {
                tracing::warn!("{e}: searching by words alone until `geode embed` runs");
                *mapped = std::sync::Arc::new(Mapped {
                    rows: None,
                    urls: None,
                    bits: None,
                    seen: now,
                });
                return Ok(std::sync::Arc::clone(&mapped));
            }
        };
        let map = |path: PathBuf| -> Result<Option<Mmap>, EmbedError> {
            let file = File::open(&path).map_err(|e| store_error(&path, e))?;
            match file.metadata().map(|m| m.len()).unwrap_or(0) {
                0 => Ok(None),
                // SAFETY: as above.
                _ => Ok(Some(
                    unsafe { Mmap::map(&file) }.map_err(|e| store_error(&path, e))?,
                )),
            }
        };
        let urls = map(urls_path(&self.data_dir, &self.fingerprint, generation))?;
        let bits = map(bits_path(&self.data_dir, &self.fingerprint, generation))?;
        *mapped = std::sync::Arc::new(Mapped {
            rows: Some(rows),
            urls,
            bits,
            seen: now,
        });
        Ok(std::sync::Arc::clone(&mapped))
    }

    /// The rows file's identity, length and modification time, hashed: appends and
    /// compactions change the first two, a row marked dead the last.
    pub fn version(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        if let Ok(m) = std::fs::metadata(rows_path(&self.data_dir, &self.fingerprint)) {
            (m.ino(), m.len(), m.mtime(), m.mtime_nsec()).hash(&mut hasher);
        }
        hasher.finish()
    }

    /// How many rows the file holds, dead ones included.
    pub fn len(&self) -> usize {
        self.current()
            .ok()
            .and_then(|m| m.rows.as_ref().map(|r| r.len().saturating_sub(HEADER)))
            .unwrap_or(0)
            / self.row_size()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The `k` live rows nearest to `vector` (a unit vector), nearest first, one per URL.
    pub fn nearest(&self, vector: &[f32], k: usize) -> Result<Vec<Neighbour>, EmbedError> {
        self.search(vector, k, false)
    }

    /// [`Reader::nearest`] reading every row, however many: the answer the binary codes'
    /// shortlist is measured against.
    pub fn nearest_exact(&self, vector: &[f32], k: usize) -> Result<Vec<Neighbour>, EmbedError> {
        self.search(vector, k, true)
    }

    fn search(&self, vector: &[f32], k: usize, exact: bool) -> Result<Vec<Neighbour>, EmbedError> {
        let mapped = self.current()?;
        let (Some(rows), Some(urls)) = (&mapped.rows, &mapped.urls) else {
            return Ok(Vec::new());
        };
        let (qscale, q) = quantize(vector);
        let size = self.row_size();
        let body = &rows[HEADER..];
        let words = code_words(self.dim);
        let count = match &mapped.bits {
            Some(bits) => (body.len() / size).min(bits.len() / (words * 8)),
            None => 0,
        };
        // A few more than asked for: a URL whose row was replaced may show twice while the
        // writer is between the append and the mark.
        let want = k + 8;
        let threads = count.div_ceil(ROWS_PER_THREAD).clamp(
            1,
            std::thread::available_parallelism()
                .map_or(1, |n| n.get())
                .min(4),
        );
        let per = count.div_ceil(threads).max(1);
        let mut best: Vec<(f32, usize)> = if exact || count <= EXACT_ROWS {
            in_parallel(threads, |t| {
                let (from, to) = (t * per, ((t + 1) * per).min(count));
                scan(body, size, from..to, &q, want)
            })
        } else {
            let bits = mapped.bits.as_deref().unwrap_or_default();
            let code = signs(vector);
            let mut shortlist = in_parallel(threads, |t| {
                let (from, to) = (t * per, ((t + 1) * per).min(count));
                closest_codes(bits, words, from, to, &code, RERANKED)
            });
            shortlist.sort_unstable();
            shortlist.truncate(RERANKED);
            let mut rows: Vec<usize> = shortlist.into_iter().map(|(_, row)| row).collect();
            rows.sort_unstable();
            scan(body, size, rows.into_iter(), &q, want)
        };
        best.sort_by(|a, b| b.0.total_cmp(&a.0));
        let mut out = Vec::with_capacity(k);
        let mut seen = std::collections::HashSet::new();
        for (score, row) in best {
            if out.len() == k {
                break;
            }
            let head = RowHead::parse(&body[row * size..row * size + ROW_HEADER]);
            let (from, len) = (head.url_off as usize, head.url_len as usize);
            let Some(url) = urls
                .get(from..from + len)
                .and_then(|b| std::str::from_utf8(b).ok())
            else {
                continue;
            };
            if seen.insert(url.to_string()) {
                out.push(Neighbour {
                    url: url.to_string(),
                    similarity: score * qscale,
                });
            }
        }
        Ok(out)
    }
}

/// `work(t)` for each of `threads` parts, on scoped threads (on this one when there is one
/// part), their results together.
fn in_parallel<T: Send>(threads: usize, work: impl Fn(usize) -> Vec<T> + Sync) -> Vec<T> {
    if threads <= 1 {
        return work(0);
    }
    std::thread::scope(|scope| {
        let work = &work;
        let parts: Vec<_> = (0..threads).map(|t| scope.spawn(move || work(t))).collect();
        parts
            .into_iter()
            .flat_map(|p| p.join().unwrap_or_default())
            .collect()
    })
}

/// The `keep` rows of `from..to` whose binary codes differ least from `code`, as (differing
/// bits, row).
fn closest_codes(
    bits: &[u8],
    words: usize,
    from: usize,
    to: usize,
    code: &[u64],
    keep: usize,
) -> Vec<(u32, usize)> {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("popcnt") {
            // SAFETY: the CPU has the instruction the function is compiled to use.
            return unsafe { closest_codes_popcnt(bits, words, from, to, code, keep) };
        }
    }
    closest_codes_portable(bits, words, from, to, code, keep)
}

/// [`closest_codes_portable`] compiled with the `popcnt` instruction, which counts a word's
/// bits in one step where the portable build needs a dozen.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "popcnt")]
unsafe fn closest_codes_popcnt(
    bits: &[u8],
    words: usize,
    from: usize,
    to: usize,
    code: &[u64],
    keep: usize,
) -> Vec<(u32, usize)> {
    closest_codes_portable(bits, words, from, to, code, keep)
}

#[inline(always)]
fn closest_codes_portable(
    bits: &[u8],
    words: usize,
    from: usize,
    to: usize,
    code: &[u64],
    keep: usize,
) -> Vec<(u32, usize)> {
    let mut out: Vec<(u32, usize)> = Vec::with_capacity(keep * 4);
    let mut limit = u32::MAX;
    let mut row_code = vec![0u64; words];
    for row in from..to {
        let at = row * words * 8;
        for (w, chunk) in row_code
            .iter_mut()
            .zip(bits[at..at + words * 8].chunks_exact(8))
        {
            *w = u64::from_le_bytes(chunk.try_into().unwrap_or_default());
        }
        let d = hamming(&row_code, code);
        if d <= limit {
            out.push((d, row));
            if out.len() >= keep * 4 {
                out.select_nth_unstable(keep - 1);
                out.truncate(keep);
                limit = out.iter().map(|(d, _)| *d).max().unwrap_or(u32::MAX);
            }
        }
    }
    if out.len() > keep {
        out.select_nth_unstable(keep - 1);
        out.truncate(keep);
    }
    out
}

/// The best `want` live rows of `rows`, by their dot product with `q` times their scale.
fn scan(
    body: &[u8],
    size: usize,
    rows: impl Iterator<Item = usize>,
    q: &[i8],
    want: usize,
) -> Vec<(f32, usize)> {
    let mut best: Vec<(f32, usize)> = Vec::with_capacity(want + 1);
    let mut floor = f32::NEG_INFINITY;
    for row in rows {
        let at = row * size;
        if body[at] & DEAD != 0 {
            continue;
        }
        let scale = f32::from_le_bytes(body[at + 16..at + 20].try_into().unwrap_or_default());
        // SAFETY-free reinterpretation: i8 and u8 have the same size and alignment.
        let v: &[i8] = bytemuck_i8(&body[at + ROW_HEADER..at + size]);
        let score = scale * dot(q, v) as f32;
        if best.len() < want || score > floor {
            best.push((score, row));
            if best.len() > want {
                best.sort_unstable_by(|a, b| b.0.total_cmp(&a.0));
                best.truncate(want);
                floor = best[want - 1].0;
            }
        }
    }
    best
}

/// Bytes as signed bytes.
fn bytemuck_i8(bytes: &[u8]) -> &[i8] {
    // SAFETY: u8 and i8 have the same size, alignment and validity (every bit pattern).
    unsafe { std::slice::from_raw_parts(bytes.as_ptr().cast::<i8>(), bytes.len()) }
}

/// A live or dead row as the writer knows it.
#[derive(Debug, Clone, Copy)]
struct Known {
    row: u64,
    key: [u8; KEY_BYTES],
}

/// The one writer of a data directory's vectors of one model (`geode embed`).
pub struct Writer {
    dir: PathBuf,
    fingerprint: String,
    dim: usize,
    rows: File,
    urls: File,
    bits: File,
    generation: u64,
    count: u64,
    urls_len: u64,
    /// Each URL's live row.
    live: HashMap<String, Known>,
    /// A row holding each key's vector, live or dead.
    by_key: HashMap<[u8; KEY_BYTES], u64>,
}

impl Writer {
    /// Opens (or creates) the vectors of `fingerprint` in `data_dir` for writing; fails when
    /// another writer holds them.
    pub fn open(data_dir: &Path, fingerprint: &str, dim: usize) -> Result<Writer, EmbedError> {
        let dir = crate::datadir::vectors_path(data_dir);
        std::fs::create_dir_all(&dir).map_err(|e| store_error(&dir, e))?;
        let path = rows_path(data_dir, fingerprint);
        let mut rows = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| store_error(&path, e))?;
        // SAFETY: flock on a descriptor this function owns.
        if unsafe { libc::flock(rows.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            return Err(store_error(
                &path,
                "another `geode embed` is writing these vectors",
            ));
        }
        let mut head = vec![0u8; HEADER];
        let len = rows.metadata().map_err(|e| store_error(&path, e))?.len();
        let found = if len < HEADER as u64 {
            None
        } else {
            rows.read_exact(&mut head)
                .map_err(|e| store_error(&path, e))?;
            match parse_header(&path, &head, dim) {
                Ok(generation) => Some(generation),
                // Vectors are made from the index: ones of an older layout are made again.
                Err(e) => {
                    tracing::warn!("{e}: embedding every page again");
                    None
                }
            }
        };
        let generation = match found {
            Some(generation) => generation,
            None => {
                let generation = 0;
                for stale in [
                    urls_path(data_dir, fingerprint, generation),
                    bits_path(data_dir, fingerprint, generation),
                ] {
                    let _ = std::fs::remove_file(stale);
                }
                rows.set_len(0).map_err(|e| store_error(&path, e))?;
                rows.write_all_at(&header_bytes(dim, generation), 0)
                    .map_err(|e| store_error(&path, e))?;
                generation
            }
        };
        let upath = urls_path(data_dir, fingerprint, generation);
        let mut urls = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&upath)
            .map_err(|e| store_error(&upath, e))?;
        let bpath = bits_path(data_dir, fingerprint, generation);
        let bits = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&bpath)
            .map_err(|e| store_error(&bpath, e))?;
        let size = (ROW_HEADER + dim) as u64;
        let code_size = (code_words(dim) * 8) as u64;
        let len = rows.metadata().map_err(|e| store_error(&path, e))?.len();
        let coded = bits.metadata().map_err(|e| store_error(&bpath, e))?.len() / code_size;
        // A row cut short by a crash goes, and so does a row whose code was not written, or
        // a code whose row was not.
        let count = ((len - HEADER as u64) / size).min(coded);
        rows.set_len(HEADER as u64 + count * size)
            .map_err(|e| store_error(&path, e))?;
        bits.set_len(count * code_size)
            .map_err(|e| store_error(&bpath, e))?;
        let mut url_bytes = Vec::new();
        urls.read_to_end(&mut url_bytes)
            .map_err(|e| store_error(&upath, e))?;
        let mut writer = Writer {
            dir: data_dir.to_path_buf(),
            fingerprint: fingerprint.to_string(),
            dim,
            rows,
            urls,
            bits,
            generation,
            count,
            urls_len: url_bytes.len() as u64,
            live: HashMap::new(),
            by_key: HashMap::new(),
        };
        writer.load(&url_bytes)?;
        Ok(writer)
    }

    fn row_size(&self) -> u64 {
        (ROW_HEADER + self.dim) as u64
    }

    fn rows_path(&self) -> PathBuf {
        rows_path(&self.dir, &self.fingerprint)
    }

    fn code_size(&self) -> u64 {
        (code_words(self.dim) * 8) as u64
    }

    /// Reads every row's header: the live row of each URL (an older live row of the same URL,
    /// left by a crash between an append and its mark, dies now) and a row for each key.
    fn load(&mut self, url_bytes: &[u8]) -> Result<(), EmbedError> {
        let path = self.rows_path();
        let size = self.row_size() as usize;
        // Rows are read a chunk at a time: only their headers are wanted, and the whole file
        // is the size of every vector (208 MB at 500,000 rows).
        let mut chunk = Vec::new();
        let mut first = 0u64;
        for row in 0..self.count {
            if row == first + (chunk.len() / size) as u64 {
                first = row;
                let rows = (self.count - row).min(LOAD_CHUNK_ROWS);
                chunk.resize(rows as usize * size, 0);
                self.rows
                    .read_exact_at(&mut chunk, HEADER as u64 + row * size as u64)
                    .map_err(|e| store_error(&path, e))?;
            }
            let head = RowHead::parse(&chunk[(row - first) as usize * size..]);
            self.by_key.insert(head.key, row);
            if head.dead {
                continue;
            }
            let (from, len) = (head.url_off as usize, head.url_len as usize);
            let Some(url) = url_bytes
                .get(from..from + len)
                .and_then(|b| std::str::from_utf8(b).ok())
            else {
                self.mark_dead(row)?;
                continue;
            };
            let known = Known { row, key: head.key };
            if let Some(older) = self.live.insert(url.to_string(), known) {
                self.mark_dead(older.row)?;
            }
        }
        Ok(())
    }

    fn mark_dead(&self, row: u64) -> Result<(), EmbedError> {
        let at = HEADER as u64 + row * self.row_size();
        self.rows
            .write_all_at(&[DEAD], at)
            .map_err(|e| store_error(&self.rows_path(), e))
    }

    /// Whether `url`'s live vector was made from the input of `key`.
    pub fn is_current(&self, url: &str, key: &[u8; KEY_BYTES]) -> bool {
        self.live.get(url).is_some_and(|k| &k.key == key)
    }

    /// Gives `url` the vector some row already holds for `key`, without the model; false when
    /// no row has it.
    pub fn reuse(&mut self, url: &str, key: &[u8; KEY_BYTES]) -> Result<bool, EmbedError> {
        let Some(&row) = self.by_key.get(key) else {
            return Ok(false);
        };
        let size = self.row_size();
        let mut bytes = vec![0u8; size as usize];
        self.rows
            .read_exact_at(&mut bytes, HEADER as u64 + row * size)
            .map_err(|e| store_error(&self.rows_path(), e))?;
        let head = RowHead::parse(&bytes);
        let vector = bytemuck_i8(&bytes[ROW_HEADER..]).to_vec();
        let mut code = vec![0u8; self.code_size() as usize];
        self.bits
            .read_exact_at(&mut code, row * self.code_size())
            .map_err(|e| store_error(&self.rows_path(), e))?;
        self.append(url, key, head.scale, &vector, &code)?;
        Ok(true)
    }

    /// Stores `vector` (a unit vector of the model) for `url`, made from the input of `key`.
    pub fn put(
        &mut self,
        url: &str,
        key: &[u8; KEY_BYTES],
        vector: &[f32],
    ) -> Result<(), EmbedError> {
        if vector.len() != self.dim {
            return Err(EmbedError::Run(format!(
                "a vector of {} dimensions, not {}",
                vector.len(),
                self.dim
            )));
        }
        let (scale, bytes) = quantize(vector);
        self.append(url, key, scale, &bytes, &code_bytes(&signs(vector)))
    }

    fn append(
        &mut self,
        url: &str,
        key: &[u8; KEY_BYTES],
        scale: f32,
        vector: &[i8],
        code: &[u8],
    ) -> Result<(), EmbedError> {
        if url.len() > MAX_URL {
            return Ok(());
        }
        // The URL, the code, then the row: a row is whole only once all three are.
        self.bits
            .write_all_at(code, self.count * self.code_size())
            .map_err(|e| store_error(&self.rows_path(), e))?;
        let upath = urls_path(&self.dir, &self.fingerprint, self.generation);
        self.urls
            .write_all_at(url.as_bytes(), self.urls_len)
            .map_err(|e| store_error(&upath, e))?;
        let head = RowHead {
            dead: false,
            url_len: url.len() as u32,
            url_off: self.urls_len,
            scale,
            key: *key,
        };
        self.urls_len += url.len() as u64;
        let mut row = head.bytes().to_vec();
        row.extend(vector.iter().map(|&b| b as u8));
        let at = HEADER as u64 + self.count * self.row_size();
        self.rows
            .write_all_at(&row, at)
            .map_err(|e| store_error(&self.rows_path(), e))?;
        let known = Known {
            row: self.count,
            key: *key,
        };
        self.by_key.insert(*key, self.count);
        self.count += 1;
        if let Some(older) = self.live.insert(url.to_string(), known) {
            self.mark_dead(older.row)?;
        }
        Ok(())
    }

    /// Marks dead the rows of every URL not in `keep` (pages gone from the index); returns how
    /// many.
    pub fn retain(
        &mut self,
        keep: &std::collections::HashSet<String>,
    ) -> Result<usize, EmbedError> {
        let gone: Vec<(String, u64)> = self
            .live
            .iter()
            .filter(|(url, _)| !keep.contains(*url))
            .map(|(url, k)| (url.clone(), k.row))
            .collect();
        for (url, row) in &gone {
            self.mark_dead(*row)?;
            self.live.remove(url);
        }
        Ok(gone.len())
    }

    /// Rows in the file, live and dead.
    pub fn rows(&self) -> u64 {
        self.count
    }

    /// Live rows: URLs with a vector.
    pub fn live(&self) -> usize {
        self.live.len()
    }

    /// The bytes of the three files.
    pub fn bytes(&self) -> u64 {
        HEADER as u64 + self.count * (self.row_size() + self.code_size()) + self.urls_len
    }

    /// Makes what was written durable.
    pub fn sync(&self) -> Result<(), EmbedError> {
        self.urls
            .sync_data()
            .map_err(|e| store_error(&self.rows_path(), e))?;
        self.bits
            .sync_data()
            .map_err(|e| store_error(&self.rows_path(), e))?;
        self.rows
            .sync_data()
            .map_err(|e| store_error(&self.rows_path(), e))
    }

    /// Rewrites the files with the live rows alone when the dead ones are more; returns whether
    /// it did. Dead rows' vectors are lost for reuse then.
    pub fn compact_if_worth_it(&mut self) -> Result<bool, EmbedError> {
        let dead = self.count - self.live.len() as u64;
        if dead < 1_000 || dead <= self.live.len() as u64 {
            return Ok(false);
        }
        self.sync()?;
        let generation = self.generation + 1;
        let upath = urls_path(&self.dir, &self.fingerprint, generation);
        let tmp = self.rows_path().with_extension("rows.new");
        let size = self.row_size();
        let mut live: Vec<(String, Known)> = self.live.drain().collect();
        live.sort_by_key(|(_, k)| k.row);
        // The new files are written through buffers as the live rows are read: at 500,000
        // rows the rows file alone is 208 MB, which need not be held whole.
        let create = |path: &Path| -> Result<std::io::BufWriter<File>, EmbedError> {
            let file = OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(true)
                .open(path)
                .map_err(|e| store_error(path, e))?;
            Ok(std::io::BufWriter::with_capacity(1 << 20, file))
        };
        let finish = |path: &Path, out: std::io::BufWriter<File>| -> Result<File, EmbedError> {
            let file = out.into_inner().map_err(|e| store_error(path, e.error()))?;
            file.sync_all().map_err(|e| store_error(path, e))?;
            Ok(file)
        };
        let bpath = bits_path(&self.dir, &self.fingerprint, generation);
        let (mut urls, mut codes, mut rows) = (create(&upath)?, create(&bpath)?, create(&tmp)?);
        rows.write_all(&header_bytes(self.dim, generation))
            .map_err(|e| store_error(&tmp, e))?;
        let mut urls_len = 0u64;
        let mut row = vec![0u8; size as usize];
        let mut code = vec![0u8; self.code_size() as usize];
        for (url, known) in &live {
            self.rows
                .read_exact_at(&mut row, HEADER as u64 + known.row * size)
                .map_err(|e| store_error(&self.rows_path(), e))?;
            self.bits
                .read_exact_at(&mut code, known.row * self.code_size())
                .map_err(|e| store_error(&self.rows_path(), e))?;
            let mut head = RowHead::parse(&row);
            head.url_off = urls_len;
            head.url_len = url.len() as u32;
            urls_len += url.len() as u64;
            codes.write_all(&code).map_err(|e| store_error(&bpath, e))?;
            urls.write_all(url.as_bytes())
                .map_err(|e| store_error(&upath, e))?;
            rows.write_all(&head.bytes())
                .and_then(|()| rows.write_all(&row[ROW_HEADER..]))
                .map_err(|e| store_error(&tmp, e))?;
        }
        let new_urls = finish(&upath, urls)?;
        let new_bits = finish(&bpath, codes)?;
        let mut new_rows = finish(&tmp, rows)?;
        // SAFETY: flock on a descriptor this function owns; taken before the new file
        // replaces the old, so that no second writer slips in between.
        if unsafe { libc::flock(new_rows.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            return Err(store_error(&tmp, "cannot lock the compacted vectors"));
        }
        std::fs::rename(&tmp, self.rows_path()).map_err(|e| store_error(&tmp, e))?;
        if let Ok(d) = File::open(crate::datadir::vectors_path(&self.dir)) {
            let _ = d.sync_all();
        }
        let _ = std::fs::remove_file(urls_path(&self.dir, &self.fingerprint, self.generation));
        let _ = std::fs::remove_file(bits_path(&self.dir, &self.fingerprint, self.generation));
        new_rows
            .seek(SeekFrom::End(0))
            .map_err(|e| store_error(&tmp, e))?;
        self.rows = new_rows;
        self.urls = new_urls;
        self.bits = new_bits;
        self.generation = generation;
        self.urls_len = urls_len;
        self.count = live.len() as u64;
        self.by_key.clear();
        for (i, (url, known)) in live.into_iter().enumerate() {
            let known = Known {
                row: i as u64,
                key: known.key,
            };
            self.by_key.insert(known.key, known.row);
            self.live.insert(url, known);
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(seed: u32, dim: usize) -> Vec<f32> {
        let v: Vec<f32> = (0..dim)
            .map(|i| {
                // splitmix64's finaliser over (seed, dimension).
                let mut h = (u64::from(seed) << 32 | i as u64).wrapping_add(0x9E37_79B9_7F4A_7C15);
                h = (h ^ (h >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
                h = (h ^ (h >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
                ((h ^ (h >> 31)) % 1000) as f32 - 500.0
            })
            .collect();
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.into_iter().map(|x| x / n).collect()
    }

    #[test]
    fn rows_written_are_found_nearest_first_and_a_replaced_row_is_not_found() {
        let dir = tempfile::tempdir().unwrap();
        let dim = 24;
        let mut w = Writer::open(dir.path(), "fp", dim).unwrap();
        for i in 0..50 {
            w.put(
                &format!("gemini://a/{i}"),
                &[i as u8; KEY_BYTES],
                &unit(i, dim),
            )
            .unwrap();
        }
        // Page 7 changes: its new vector is page 3's.
        w.put("gemini://a/7", &[200; KEY_BYTES], &unit(3, dim))
            .unwrap();
        w.sync().unwrap();
        let r = Reader::open(dir.path(), "fp", dim).unwrap();
        assert_eq!(r.len(), 51);
        let near = r.nearest(&unit(3, dim), 2).unwrap();
        let urls: Vec<&str> = near.iter().map(|n| n.url.as_str()).collect();
        assert!(
            urls.contains(&"gemini://a/3") && urls.contains(&"gemini://a/7"),
            "{urls:?}"
        );
        assert!(near[0].similarity > 0.98);
        let near = r.nearest(&unit(7, dim), 1).unwrap();
        assert_ne!(
            near[0].url, "gemini://a/7",
            "the old vector of page 7 is dead"
        );
    }

    #[test]
    fn a_key_seen_before_is_reused_and_a_torn_row_is_cut_off() {
        let dir = tempfile::tempdir().unwrap();
        let dim = 8;
        {
            let mut w = Writer::open(dir.path(), "fp", dim).unwrap();
            w.put("gemini://a/1", &[1; KEY_BYTES], &unit(1, dim))
                .unwrap();
            assert!(w.is_current("gemini://a/1", &[1; KEY_BYTES]));
            assert!(!w.is_current("gemini://a/1", &[2; KEY_BYTES]));
            assert!(w.reuse("gemini://b/1", &[1; KEY_BYTES]).unwrap());
            assert!(!w.reuse("gemini://b/2", &[9; KEY_BYTES]).unwrap());
            w.sync().unwrap();
        }
        // A crash in the middle of a row.
        let path = rows_path(dir.path(), "fp");
        let f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all_at(&[0u8; 5], f.metadata().unwrap().len())
            .unwrap();
        drop(f);
        let w = Writer::open(dir.path(), "fp", dim).unwrap();
        assert_eq!((w.rows(), w.live()), (2, 2));
        assert!(w.is_current("gemini://b/1", &[1; KEY_BYTES]));
    }

    #[test]
    fn past_the_exact_limit_the_codes_shortlist_finds_the_nearest_rows() {
        let dir = tempfile::tempdir().unwrap();
        let dim = 64;
        let mut w = Writer::open(dir.path(), "fp", dim).unwrap();
        let rows = EXACT_ROWS + 5_000;
        for i in 0..rows as u32 {
            w.put(&format!("gemini://a/{i}"), &[0; KEY_BYTES], &unit(i, dim))
                .unwrap();
        }
        w.sync().unwrap();
        let r = Reader::open(dir.path(), "fp", dim).unwrap();
        let mut same = 0;
        for probe in [7u32, 1_234, 40_000, 54_321] {
            let query = unit(probe, dim);
            let fast = r.nearest(&query, 10).unwrap();
            let exact = r.nearest_exact(&query, 10).unwrap();
            assert_eq!(fast[0].url, format!("gemini://a/{probe}"));
            assert_eq!(fast[0], exact[0]);
            same += fast.iter().filter(|n| exact.contains(n)).count();
        }
        assert!(same >= 36, "{same} of the exact 40 found");
        // A writer reopening the store reads every row's header, a chunk at a time.
        drop(w);
        let w = Writer::open(dir.path(), "fp", dim).unwrap();
        assert_eq!((w.rows(), w.live()), (rows as u64, rows));
        assert!(w.is_current("gemini://a/54999", &[0; KEY_BYTES]));
    }

    #[test]
    fn a_second_writer_is_refused_and_a_file_of_another_layout_is_made_again() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = Writer::open(dir.path(), "fp", 8).unwrap();
        w.put("gemini://a/1", &[1; KEY_BYTES], &unit(1, 8)).unwrap();
        assert!(Writer::open(dir.path(), "fp", 8).is_err());
        drop(w);
        // Read with other dimensions (another layout), the rows are none...
        assert!(Reader::open(dir.path(), "fp", 16).unwrap().is_empty());
        // ...and a writer starts them afresh: vectors are made from the index again.
        let w = Writer::open(dir.path(), "fp", 16).unwrap();
        assert_eq!((w.rows(), w.live()), (0, 0));
        drop(w);
        assert!(Reader::open(dir.path(), "fp", 16).unwrap().is_empty());
        assert!(Reader::open(dir.path(), "fp", 8).unwrap().is_empty());
    }

    #[test]
    fn compaction_keeps_the_live_rows_and_readers_follow() {
        let dir = tempfile::tempdir().unwrap();
        let dim = 32;
        let mut w = Writer::open(dir.path(), "fp", dim).unwrap();
        for round in 0..3u32 {
            for i in 0..600u32 {
                let key = [
                    (round * 7 + i % 251) as u8,
                    (i / 251) as u8,
                    round as u8,
                    0,
                    0,
                    0,
                    0,
                    0,
                    0,
                    0,
                    0,
                    0,
                ];
                w.put(
                    &format!("gemini://a/{i}"),
                    &key,
                    &unit(i + round * 1000, dim),
                )
                .unwrap();
            }
        }
        let r = Reader::open(dir.path(), "fp", dim).unwrap();
        assert_eq!(r.len(), 1800);
        assert!(w.compact_if_worth_it().unwrap());
        assert_eq!((w.rows(), w.live()), (600, 600));
        assert_eq!(r.len(), 600, "the reader maps the compacted file");
        let near = r.nearest(&unit(5 + 2000, dim), 1).unwrap();
        assert_eq!(near[0].url, "gemini://a/5");
        w.put("gemini://a/new", &[77; KEY_BYTES], &unit(4242, dim))
            .unwrap();
        drop(w);
        let w = Writer::open(dir.path(), "fp", dim).unwrap();
        assert_eq!(w.live(), 601);
    }
}
