//! The crawl archive's values, whatever the store: a response as received and as read back,
//! the archive's size, and the zstd compression of bodies (done by the fetch task, before the
//! crawl loop). Where and how a store keeps them is the store's (`sqlite/archive.rs`).
//!
//! The archive keeps the latest response of every fetched URL (status, meta, fetch time,
//! certificate fingerprint, body), so that the index can be rebuilt, a URL shown and the crawl
//! exported without fetching anything again. Bodies are stored once per distinct content,
//! written in the same transaction as the visit that received them. The fetch limits bound what
//! is stored: a body is at most 4 MiB before compression.

use super::{FrontierError, Result};

/// A response as the crawl received it, ready to archive.
#[derive(Debug, Clone)]
pub struct ArchiveRecord<'a> {
    pub status: u8,
    pub meta: &'a str,
    pub fetched_at: i64,
    pub cert_sha256: Option<&'a str>,
    /// The body read, if any: its SHA-256 (hex), size and zstd-compressed bytes.
    pub body: Option<ArchivedBody<'a>>,
}

/// A body ready to store.
#[derive(Debug, Clone, Copy)]
pub struct ArchivedBody<'a> {
    pub hash: &'a str,
    pub size: u64,
    pub zstd: &'a [u8],
}

/// An archived response with the id and the URL it answered (what `geode export` reads).
pub type UrlResponse = (i64, String, ArchivedResponse);

/// An archived response, as read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArchivedResponse {
    pub status: u8,
    pub meta: String,
    pub fetched_at: i64,
    pub cert_sha256: Option<String>,
    pub body_hash: Option<String>,
    /// The body, decompressed; `None` when no body was read (not text, or not a 20).
    pub body: Option<Vec<u8>>,
}

/// The archive's size.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct ArchiveStats {
    pub responses: u64,
    pub bodies: u64,
    /// Bytes of the distinct bodies before and after compression.
    pub raw_bytes: u64,
    pub stored_bytes: u64,
}

/// A page the index holds, with what the archive has of its content: what `geode reindex`
/// needs to write its document again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexedContent {
    pub id: i64,
    pub url: String,
    /// Capsule key.
    pub host: String,
    pub content_hash: Option<String>,
    /// The meta line of its content; the MIME type alone for pages archived before it was kept.
    pub content_meta: Option<String>,
    pub size: u64,
    pub fetched_at: i64,
}

/// An index operation waiting for the index writer, with the page it is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingOp {
    pub op: super::IndexOp,
    pub page: IndexedContent,
}

/// Decompresses a stored body of `size` bytes. The size was recorded when it was stored, and
/// bounds the allocation whatever the stored bytes say.
/// Each thread keeps one decompression context: making one was 2% of `geode reindex`'s CPU.
pub(crate) fn decompress(zstd: &[u8], size: i64) -> Result<Vec<u8>> {
    thread_local! {
        static DECOMPRESSOR: std::cell::RefCell<Option<zstd::bulk::Decompressor<'static>>> =
            const { std::cell::RefCell::new(None) };
    }
    let size = usize::try_from(size).unwrap_or(0);
    DECOMPRESSOR
        .with(|cell| {
            let mut cell = cell.borrow_mut();
            if cell.is_none() {
                *cell = zstd::bulk::Decompressor::new().ok();
            }
            match cell.as_mut() {
                Some(decompressor) => decompressor.decompress(zstd, size),
                None => zstd::bulk::decompress(zstd, size),
            }
        })
        .map_err(|e| FrontierError::Archive(e.to_string()))
}

/// Compresses a body for the archive (zstd level 1: fast, and under half of gemtext's size).
/// Each thread keeps one compression context: making a context costs about as much as
/// compressing a small page with it.
pub fn compress(body: &[u8]) -> Vec<u8> {
    thread_local! {
        static COMPRESSOR: std::cell::RefCell<Option<zstd::bulk::Compressor<'static>>> =
            const { std::cell::RefCell::new(None) };
    }
    // Compressing from memory into memory cannot fail but for allocation.
    COMPRESSOR.with(|cell| {
        let mut cell = cell.borrow_mut();
        if cell.is_none() {
            *cell = zstd::bulk::Compressor::new(ARCHIVE_LEVEL).ok();
        }
        match cell.as_mut() {
            Some(compressor) => compressor.compress(body).unwrap_or_default(),
            None => zstd::bulk::compress(body, ARCHIVE_LEVEL).unwrap_or_default(),
        }
    })
}

/// The zstd level of archived bodies. Level 1 (zstd's fastest strategy) instead of the default
/// 3: on 1,500 pages of the corpus the bodies came out 1.7% larger (2,981,715 bytes against
/// 2,932,527, from 6.6 MB), and compression took 1.0% of a crawl's CPU on the bench farm
/// against 1.8% at level 3.
const ARCHIVE_LEVEL: i32 = 1;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_come_back_whole_after_a_damaged_one_on_the_same_thread() {
        let bodies: Vec<Vec<u8>> = (0..20)
            .map(|i| format!("# Page {i}\n{}\n", "gemini text ".repeat(i * 50)).into_bytes())
            .collect();
        for (i, body) in bodies.iter().enumerate() {
            let stored = compress(body);
            assert_eq!(decompress(&stored, body.len() as i64).unwrap(), *body);
            // A damaged body, or one larger than its recorded size, is an error...
            let mut damaged = stored.clone();
            damaged[stored.len() / 2] ^= 0xff;
            let damaged = decompress(&damaged, body.len() as i64);
            let short = decompress(&stored, body.len() as i64 / 2);
            assert!(damaged.map_or(true, |d| d != *body), "body {i}");
            assert!(body.len() < 2 || short.is_err(), "body {i}");
            // ...and leaves the thread's context fit for the next one.
            assert_eq!(decompress(&stored, body.len() as i64).unwrap(), *body);
        }
    }
}
