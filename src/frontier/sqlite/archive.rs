//! The crawl archive: the latest response of every fetched URL (status, meta, fetch time,
//! certificate fingerprint, body), kept in the crawl database so that the index can be rebuilt,
//! a URL shown and the crawl exported without fetching anything again.
//!
//! Bodies are stored once per distinct content (`bodies`, keyed by their SHA-256), compressed
//! with zstd by the fetch task before they reach the crawl loop; `responses` points each URL at
//! its latest one. A response is written in the same transaction as the visit that received it,
//! so the archive is exactly as durable as the rest of the crawl state: `kill -9` loses nothing
//! committed. A body is deleted when the last response and the last URL content pointing to it
//! move on; the content of an indexed page stays while its latest response is an error.
//! Failures without a response (network, TLS) keep the last real response. The fetch limits
//! bound what is stored: a body is at most 4 MiB before compression.

use super::{Result, SqliteBatch};

/// Deletes body `?1` when no response points at it and no URL holds it as its content; URLs are
/// looked up by the hash's first 16 digits (`urls_by_hash_prefix`).
pub(super) const FORGET_UNUSED_BODY: &str = "DELETE FROM bodies WHERE hash = ?1
     AND NOT EXISTS (SELECT 1 FROM responses WHERE body_hash = ?1)
     AND NOT EXISTS (SELECT 1 FROM urls
                     WHERE substr(content_hash, 1, 16) = substr(?1, 1, 16)
                       AND content_hash = ?1)";

impl SqliteBatch<'_> {
    /// Deletes a body nothing needs any more: no response points at it and no URL holds it as
    /// its content (a page that now fails, or answers 44, keeps what the index holds).
    pub(super) fn forget_body_if_unused(&mut self, hash: &str) -> Result<()> {
        self.tx
            .prepare_cached(FORGET_UNUSED_BODY)?
            .execute([hash])?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::id_of;
    use super::*;
    use crate::frontier::archive::{compress, ArchivedBody};
    use crate::frontier::{ArchiveRecord, Batch as _, Reader as _, SqliteFrontier};

    fn body(text: &[u8]) -> (String, Vec<u8>) {
        (crate::digest::sha256_hex(text), compress(text))
    }

    #[test]
    fn responses_are_kept_with_bodies_stored_once_and_collected_when_unused() {
        let dir = tempfile::tempdir().unwrap();
        let mut f = SqliteFrontier::open(&dir.path().join("crawl.sqlite")).unwrap();
        let page = b"# Same\n\nThe same words on two pages.\n".repeat(20);
        let (hash, zstd) = body(&page);
        assert!(zstd.len() < page.len() / 2, "compressed");
        let mut b = f.batch(0).unwrap();
        let a = id_of(&mut b, "gemini://a.test/");
        let c = id_of(&mut b, "gemini://c.test/");
        for (id, at) in [(a, 10), (c, 11)] {
            let record = ArchiveRecord {
                status: 20,
                meta: "text/gemini; lang=en",
                fetched_at: at,
                cert_sha256: Some("ab12"),
                body: Some(ArchivedBody {
                    hash: &hash,
                    size: page.len() as u64,
                    zstd: &zstd,
                }),
            };
            b.archive(id, &record).unwrap();
        }
        b.commit().unwrap();
        let stats = f.archive_stats().unwrap();
        assert_eq!(
            (stats.responses, stats.bodies),
            (2, 1),
            "one body for two URLs"
        );
        assert_eq!(stats.raw_bytes, page.len() as u64);
        let back = f.archived(a).unwrap().unwrap();
        assert_eq!(back.body.as_deref(), Some(page.as_slice()));
        assert_eq!(back.meta, "text/gemini; lang=en");
        assert_eq!(back.cert_sha256.as_deref(), Some("ab12"));

        // a turns into a 51, c into new content: the shared body goes once nobody points at it.
        let (hash2, zstd2) = body(b"# New\n");
        let mut b = f.batch(0).unwrap();
        let gone = ArchiveRecord {
            status: 51,
            meta: "not found",
            fetched_at: 20,
            cert_sha256: None,
            body: None,
        };
        b.archive(a, &gone).unwrap();
        assert_eq!(f_count(&b), 1, "c still points at it");
        let new = ArchiveRecord {
            body: Some(ArchivedBody {
                hash: &hash2,
                size: 6,
                zstd: &zstd2,
            }),
            ..gone.clone()
        };
        b.archive(c, &ArchiveRecord { status: 20, ..new }).unwrap();
        b.commit().unwrap();
        let stats = f.archive_stats().unwrap();
        assert_eq!((stats.responses, stats.bodies), (2, 1));
        assert_eq!(f.archived(a).unwrap().unwrap().body, None);
        assert_eq!(f.archived_body(&hash).unwrap(), None);
        assert_eq!(
            f.archived_body(&hash2).unwrap().as_deref(),
            Some(&b"# New\n"[..])
        );
    }

    fn f_count(b: &SqliteBatch<'_>) -> i64 {
        b.tx.query_row("SELECT COUNT(*) FROM bodies", [], |r| r.get(0))
            .unwrap()
    }
}
