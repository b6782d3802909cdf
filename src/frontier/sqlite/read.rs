//! What commands and the frontend read from the SQLite store ([`Reader`]): counts and
//! statistics, one URL's details and backlinks, the archive, suggested seeds.

use rusqlite::{params, OptionalExtension};

use super::outlinks;
use super::rows::{count_at, maybe_count_at, status_at};
use super::stats::{by_count, by_name};
use super::{
    ArchiveStats, ArchivedResponse, Backlink, KnownHost, Result, SqliteFrontier, Stats,
    SuggestedSeed, UrlDetails, UrlState, REDIRECT_CHAIN,
};
use crate::frontier::archive::decompress;
use crate::frontier::stats::INTERVAL_BUCKETS;
use crate::frontier::Reader;
use crate::frontier::{Schedule, UrlResponse};

impl Reader for SqliteFrontier {
    /// Number of URLs known.
    fn url_count(&self) -> Result<u64> {
        Ok(self
            .conn
            .query_row("SELECT COUNT(*) FROM urls", [], |r| r.get::<_, i64>(0))? as u64)
    }

    fn meta(&self, key: &str) -> Result<Option<String>> {
        Ok(self
            .conn
            .query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0))
            .optional()?)
    }

    /// Every URL in `state`, sorted.
    fn urls_in_state(&self, state: UrlState) -> Result<Vec<String>> {
        self.strings(
            "SELECT url FROM urls WHERE state = ?1 ORDER BY url",
            [state.as_str()],
        )
    }

    /// Every URL the index holds a document under, sorted.
    fn indexed_urls(&self) -> Result<Vec<String>> {
        self.strings("SELECT url FROM urls WHERE in_index = 1 ORDER BY url", [])
    }

    /// Counts for `geode stats`; `now` decides which back-offs are still running and which
    /// URLs are due.
    ///
    /// Everything about URLs comes from one scan of `urls`, tallied here: at ten million URLs
    /// a scan takes seconds, and these counts were a dozen scans, one of them once per capsule
    /// (the capsules with a Gemini URL, which no index serves) and so never done at that size.
    fn stats(&self, now: i64) -> Result<Stats> {
        let tally = self.tally_urls(now)?;
        let hosts_in_backoff = self.conn.query_row(
            "SELECT COUNT(*) FROM hosts WHERE backoff_until > ?1",
            params![now],
            |r| r.get::<_, i64>(0),
        )? as u64;
        let (held_back, capsules_held_back) = self.held_back(now)?;
        let certificate_changes = self.conn.query_row(
            "SELECT COUNT(*) FROM hosts WHERE cert_changes > 0",
            [],
            |r| r.get::<_, i64>(0),
        )? as u64;
        Ok(Stats {
            urls_known: tally.urls,
            pages_indexed: tally.indexed,
            hosts: tally.gemini_hosts.len() as u64,
            by_state: by_name(tally.by_state),
            by_status: tally
                .by_status
                .into_iter()
                .map(|(status, n)| (status.clamp(0, 99) as u8, n))
                .collect(),
            errors: by_count(tally.errors),
            excluded: by_count(tally.excluded),
            duplicates: tally.duplicates,
            query_endpoints: tally.query_endpoints,
            awaiting_retry: tally.awaiting_retry,
            certificate_changes,
            certificates_changed: self.certificate_changes()?,
            hosts_in_backoff,
            held_back,
            capsules_held_back,
            last_crawl_started: self.meta("last_crawl_started")?,
            last_crawl_finished: self.meta("last_crawl_finished")?,
            schedule: Schedule {
                intervals: INTERVAL_BUCKETS
                    .iter()
                    .zip(tally.intervals)
                    .map(|(&(_, label), n)| (label.to_string(), n))
                    .collect(),
                ..tally.schedule
            },
            archive: self.archive_stats()?,
        })
    }

    /// The capsules with at least one indexed page, sorted by name, with their page counts.
    fn known_hosts(&self) -> Result<Vec<KnownHost>> {
        let mut stmt = self.conn.prepare(
            "SELECT h.name, SUM(u.in_index), COUNT(*) FROM hosts h
             JOIN urls u ON u.host_id = h.id
             WHERE u.url LIKE 'gemini://%'
             GROUP BY h.id HAVING SUM(u.in_index) > 0
             ORDER BY h.name",
        )?;
        let rows = stmt.query_map([], |r| {
            Ok(KnownHost {
                name: r.get(0)?,
                pages_indexed: count_at(r, 1)?,
                urls_known: count_at(r, 2)?,
            })
        })?;
        Ok(rows.collect::<std::result::Result<_, _>>()?)
    }

    fn url_id(&self, url: &str) -> Result<Option<i64>> {
        Ok(self
            .conn
            .prepare_cached("SELECT id FROM urls WHERE url = ?1")?
            .query_row([url], |r| r.get(0))
            .optional()?)
    }

    /// What the crawl database knows of `url` (normalised), if anything.
    fn url_details(&self, url: &str) -> Result<Option<UrlDetails>> {
        let Some(id) = self.url_id(url)? else {
            return Ok(None);
        };
        let details = self.conn.query_row(
            "SELECT u.id, u.url, h.name, u.state, u.in_index, u.status, u.meta, u.error, u.mime,
                    u.size, u.content_hash, u.content_meta, u.fetched_at, u.due_at,
                    u.revisit_secs, u.first_failed_at, u.changed_at, u.visits, u.changes, u.feed,
                    u.depth, r.url, a.url
             FROM urls u JOIN hosts h ON h.id = u.host_id
             LEFT JOIN urls r ON r.id = u.redirect_to
             LEFT JOIN urls a ON a.id = u.alias_of
             WHERE u.id = ?1",
            [id],
            |r| {
                Ok(UrlDetails {
                    id: r.get(0)?,
                    url: r.get(1)?,
                    capsule: r.get(2)?,
                    state: r.get(3)?,
                    in_index: r.get(4)?,
                    status: status_at(r, 5)?,
                    meta: r.get(6)?,
                    error: r.get(7)?,
                    mime: r.get(8)?,
                    size: maybe_count_at(r, 9)?,
                    content_hash: r.get(10)?,
                    content_meta: r.get(11)?,
                    fetched_at: r.get(12)?,
                    due_at: r.get(13)?,
                    revisit_secs: r.get(14)?,
                    first_failed_at: r.get(15)?,
                    changed_at: r.get(16)?,
                    visits: count_at(r, 17)?,
                    changes: count_at(r, 18)?,
                    feed: r.get(19)?,
                    depth: r.get(20)?,
                    redirect_to: r.get(21)?,
                    alias_of: r.get(22)?,
                    links_out: Vec::new(),
                })
            },
        )?;
        let mut url_of = self
            .conn
            .prepare_cached("SELECT url FROM urls WHERE id = ?1")?;
        let mut links_out = Vec::new();
        for (target, label) in outlinks::read(&self.conn, id)? {
            if let Some(url) = url_of.query_row([target], |r| r.get(0)).optional()? {
                links_out.push(Backlink { url, label });
            }
        }
        links_out.sort_by(|a, b| (&a.url, &a.label).cmp(&(&b.url, &b.label)));
        Ok(Some(UrlDetails {
            links_out,
            ..details
        }))
    }

    /// Whether the crawl database holds `url` (normalised): a URL geode has met, as a seed, a
    /// link or a redirect target.
    fn knows(&self, url: &str) -> Result<bool> {
        Ok(self.url_id(url)?.is_some())
    }

    /// The pages that link to `url` (normalised) or to a URL that redirected to it, with their
    /// labels, sorted by source URL.
    fn backlinks(&self, url: &str) -> Result<Vec<Backlink>> {
        let mut stmt = self.conn.prepare(&format!(
            "WITH RECURSIVE {REDIRECT_CHAIN} \
                 SELECT DISTINCT s.url, l.label FROM links l JOIN urls s ON s.id = l.source \
                 WHERE l.target IN chain AND s.id NOT IN chain \
                 ORDER BY s.url, l.label"
        ))?;
        let Some(id) = self.url_id(url)? else {
            return Ok(Vec::new());
        };
        let rows = stmt.query_map([id], |r| {
            Ok(Backlink {
                url: r.get(0)?,
                label: r.get(1)?,
            })
        })?;
        Ok(rows.collect::<std::result::Result<_, _>>()?)
    }

    /// The archived response of a URL, body included.
    fn archived(&self, url_id: i64) -> Result<Option<ArchivedResponse>> {
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
    fn archived_body(&self, hash: &str) -> Result<Option<Vec<u8>>> {
        let row: Option<(i64, Vec<u8>)> = self
            .conn
            .prepare_cached("SELECT size, zstd FROM bodies WHERE hash = ?1")?
            .query_row([hash], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?;
        row.map(|(size, zstd)| decompress(&zstd, size)).transpose()
    }

    /// How much the archive holds.
    fn archive_stats(&self) -> Result<ArchiveStats> {
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

    /// Up to `limit` archived responses after URL id `after` fetched at or after `since`, in id
    /// order, with their URLs and bodies: what `geode export` writes.
    fn archived_responses(&self, after: i64, since: i64, limit: usize) -> Result<Vec<UrlResponse>> {
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

    /// The seeds people suggested, newest first, with where each URL stands.
    fn suggested_seeds(&self) -> Result<Vec<SuggestedSeed>> {
        let mut stmt = self.conn.prepare(
            "SELECT s.url, s.added_at, s.source, u.state, u.in_index, u.fetched_at
             FROM seeds s LEFT JOIN urls u ON u.url = s.url
             ORDER BY s.added_at DESC, s.url",
        )?;
        let rows = stmt.query_map([], |r| {
            Ok(SuggestedSeed {
                url: r.get(0)?,
                added_at: r.get(1)?,
                source: r.get(2)?,
                state: r
                    .get::<_, Option<String>>(3)?
                    .unwrap_or_else(|| "new".into()),
                in_index: r.get::<_, Option<bool>>(4)?.unwrap_or(false),
                fetched_at: r.get(5)?,
            })
        })?;
        Ok(rows.collect::<std::result::Result<_, _>>()?)
    }
}
