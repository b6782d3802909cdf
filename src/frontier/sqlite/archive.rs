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

use rusqlite::{params, OptionalExtension};

use super::super::archive::decompress;
use super::rows::count_at;
use super::{
    ArchiveRecord, ArchiveStats, ArchivedResponse, IndexOp, IndexedContent, PendingOp, Result,
    SqliteBatch, SqliteFrontier,
};

/// Deletes body `?1` when no response points at it and no URL holds it as its content; URLs are
/// looked up by the hash's first 16 digits (`urls_by_hash_prefix`).
pub(super) const FORGET_UNUSED_BODY: &str = "DELETE FROM bodies WHERE hash = ?1
     AND NOT EXISTS (SELECT 1 FROM responses WHERE body_hash = ?1)
     AND NOT EXISTS (SELECT 1 FROM urls
                     WHERE substr(content_hash, 1, 16) = substr(?1, 1, 16)
                       AND content_hash = ?1)";

impl SqliteBatch<'_> {
    /// Archives the latest response of a URL, replacing the one before.
    pub fn archive(&mut self, url_id: i64, record: &ArchiveRecord<'_>) -> Result<()> {
        if let Some(body) = &record.body {
            self.tx
                .prepare_cached(
                    "INSERT OR IGNORE INTO bodies(hash, size, zstd) VALUES (?1, ?2, ?3)",
                )?
                .execute(params![body.hash, body.size as i64, body.zstd])?;
        }
        let previous: Option<String> = self
            .tx
            .prepare_cached("SELECT body_hash FROM responses WHERE url_id = ?1")?
            .query_row([url_id], |r| r.get(0))
            .optional()?
            .flatten();
        let hash = record.body.map(|b| b.hash);
        self.tx
            .prepare_cached(
                "INSERT INTO responses(url_id, status, meta, fetched_at, cert_sha256, body_hash)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                 ON CONFLICT(url_id) DO UPDATE SET status = excluded.status,
                     meta = excluded.meta, fetched_at = excluded.fetched_at,
                     cert_sha256 = excluded.cert_sha256, body_hash = excluded.body_hash",
            )?
            .execute(params![
                url_id,
                record.status,
                record.meta,
                record.fetched_at,
                record.cert_sha256,
                hash
            ])?;
        if let Some(previous) = previous.filter(|p| Some(p.as_str()) != hash) {
            self.forget_body_if_unused(&previous)?;
        }
        Ok(())
    }

    /// Deletes a body nothing needs any more: no response points at it and no URL holds it as
    /// its content (a page that now fails, or answers 44, keeps what the index holds).
    pub(super) fn forget_body_if_unused(&mut self, hash: &str) -> Result<()> {
        self.tx
            .prepare_cached(FORGET_UNUSED_BODY)?
            .execute([hash])?;
        Ok(())
    }
}

impl SqliteFrontier {
    /// The archived response of a URL, body included.
    pub fn archived(&self, url_id: i64) -> Result<Option<ArchivedResponse>> {
        let row = self
            .conn
            .prepare_cached(
                "SELECT r.status, r.meta, r.fetched_at, r.cert_sha256, r.body_hash, b.size, b.zstd
                 FROM responses r LEFT JOIN bodies b ON b.hash = r.body_hash
                 WHERE r.url_id = ?1",
            )?
            .query_row([url_id], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, i64>(2)?,
                    r.get::<_, Option<String>>(3)?,
                    r.get::<_, Option<String>>(4)?,
                    r.get::<_, Option<i64>>(5)?,
                    r.get::<_, Option<Vec<u8>>>(6)?,
                ))
            })
            .optional()?;
        let Some((status, meta, fetched_at, cert_sha256, body_hash, size, zstd)) = row else {
            return Ok(None);
        };
        let body = match (size, zstd) {
            (Some(size), Some(zstd)) => Some(decompress(&zstd, size)?),
            _ => None,
        };
        Ok(Some(ArchivedResponse {
            status: status.clamp(0, 99) as u8,
            meta,
            fetched_at,
            cert_sha256,
            body_hash,
            body,
        }))
    }

    /// The body stored under a hash, decompressed.
    pub fn archived_body(&self, hash: &str) -> Result<Option<Vec<u8>>> {
        let row: Option<(i64, Vec<u8>)> = self
            .conn
            .prepare_cached("SELECT size, zstd FROM bodies WHERE hash = ?1")?
            .query_row([hash], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?;
        row.map(|(size, zstd)| decompress(&zstd, size)).transpose()
    }

    /// How much the archive holds.
    pub fn archive_stats(&self) -> Result<ArchiveStats> {
        let (bodies, raw, stored): (i64, i64, i64) = self.conn.query_row(
            "SELECT COUNT(*), COALESCE(SUM(size), 0), COALESCE(SUM(LENGTH(zstd)), 0) FROM bodies",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )?;
        let responses: i64 = self
            .conn
            .query_row("SELECT COUNT(*) FROM responses", [], |r| r.get(0))?;
        Ok(ArchiveStats {
            responses: responses.max(0) as u64,
            bodies: bodies.max(0) as u64,
            raw_bytes: raw.max(0) as u64,
            stored_bytes: stored.max(0) as u64,
        })
    }
}

impl SqliteFrontier {
    /// Up to `limit` URLs with an index operation not yet confirmed, after `after`, in id order.
    pub fn pending_index_ops(&self, after: i64, limit: usize) -> Result<Vec<PendingOp>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT u.id, u.url, h.name, u.content_hash, COALESCE(u.content_meta, u.mime),
                    COALESCE(u.size, 0), COALESCE(u.fetched_at, 0), u.index_op
             FROM urls u JOIN hosts h ON h.id = u.host_id
             WHERE u.index_op IS NOT NULL AND u.id > ?1 ORDER BY u.id LIMIT ?2",
        )?;
        let rows = stmt.query_map(params![after, limit as i64], |r| {
            Ok(PendingOp {
                op: IndexOp::parse(&r.get::<_, String>(7)?),
                page: IndexedContent {
                    id: r.get(0)?,
                    url: r.get(1)?,
                    host: r.get(2)?,
                    content_hash: r.get(3)?,
                    content_meta: r.get(4)?,
                    size: count_at(r, 5)?,
                    fetched_at: r.get(6)?,
                },
            })
        })?;
        Ok(rows.collect::<std::result::Result<_, _>>()?)
    }

    /// Up to `limit` pages the index holds, after URL id `after`, in id order.
    pub fn indexed_content(&self, after: i64, limit: usize) -> Result<Vec<IndexedContent>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT u.id, u.url, h.name, u.content_hash, COALESCE(u.content_meta, u.mime),
                    COALESCE(u.size, 0), COALESCE(u.fetched_at, 0)
             FROM urls u JOIN hosts h ON h.id = u.host_id
             WHERE u.in_index = 1 AND u.id > ?1 ORDER BY u.id LIMIT ?2",
        )?;
        let rows = stmt.query_map(params![after, limit as i64], |r| {
            Ok(IndexedContent {
                id: r.get(0)?,
                url: r.get(1)?,
                host: r.get(2)?,
                content_hash: r.get(3)?,
                content_meta: r.get(4)?,
                size: count_at(r, 5)?,
                fetched_at: r.get(6)?,
            })
        })?;
        Ok(rows.collect::<std::result::Result<_, _>>()?)
    }

    /// Takes pages out of the frontier's picture of the index, because a rebuilt index will not
    /// hold them (their content was never archived): they come due at once and are indexed by
    /// the next crawl whatever they hold.
    pub fn forget_indexed(&mut self, ids: &[i64], now: i64) -> Result<()> {
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        {
            let mut stmt = tx.prepare_cached(
                "UPDATE urls SET in_index = 0, content_hash = NULL, due_at = ?2,
                        state = CASE WHEN state = 'indexed' THEN 'new' ELSE state END
                 WHERE id = ?1",
            )?;
            for id in ids {
                stmt.execute(params![id, now])?;
            }
            tx.execute(
                "UPDATE hosts SET next_due = ?1 WHERE id IN
                   (SELECT host_id FROM urls WHERE due_at = ?1 AND in_index = 0)
                   AND (next_due IS NULL OR next_due > ?1)",
                [now],
            )?;
        }
        tx.commit()?;
        Ok(())
    }
}

impl SqliteFrontier {
    /// Up to `limit` archived responses after URL id `after` fetched at or after `since`, in id
    /// order, with their URLs and bodies: what `geode export` writes.
    pub fn archived_responses(
        &self,
        after: i64,
        since: i64,
        limit: usize,
    ) -> Result<Vec<(i64, String, ArchivedResponse)>> {
        let rows: Vec<(i64, String)> = {
            let mut stmt = self.conn.prepare_cached(
                "SELECT r.url_id, u.url FROM responses r JOIN urls u ON u.id = r.url_id
                 WHERE r.url_id > ?1 AND r.fetched_at >= ?2 ORDER BY r.url_id LIMIT ?3",
            )?;
            let rows = stmt.query_map(params![after, since, limit as i64], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })?;
            rows.collect::<std::result::Result<_, _>>()?
        };
        let mut out = Vec::with_capacity(rows.len());
        for (id, url) in rows {
            if let Some(response) = self.archived(id)? {
                out.push((id, url, response));
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::id_of;
    use super::*;
    use crate::frontier::archive::{compress, ArchivedBody};

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
