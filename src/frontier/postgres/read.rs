//! [`Reader`] on the PostgreSQL store: what the commands, the frontend and the reports read
//! from the shared database. Counts and facts of the crawl, URLs by state, what `stats`, `show`
//! and `backlinks` print, the archive and the suggested seeds. Each answer means what the
//! SQLite store's does (`sqlite/stats.rs`, `archive.rs`, `seeds.rs`); each method runs its
//! database work through [`blocking`].

use std::collections::HashMap;

use super::{blocking, count_of, status_of, PgFrontier};
use crate::frontier::archive::decompress;
use crate::frontier::stats::INTERVAL_BUCKETS;
use crate::frontier::{
    ArchiveStats, ArchivedResponse, Backlink, CertificateChange, HeldCapsule, KnownHost, Reader,
    Result, Schedule, Stats, SuggestedSeed, UrlDetails, UrlResponse, UrlState,
    MAX_CERTIFICATE_CHANGES, MAX_HELD_LISTED,
};

/// Counts by the first column of `sql`'s rows (a string), the second being the count.
fn grouped(db: &mut postgres::Client, sql: &str) -> Result<Vec<(String, u64)>> {
    Ok(db
        .query(sql, &[])?
        .iter()
        .map(|r| (r.get(0), count_of(r, 1)))
        .collect())
}

/// When URLs come due, and how often they are revisited, as `geode stats` shows it.
fn schedule(db: &mut postgres::Client, now: i64) -> Result<Schedule> {
    let row = db.query_one(
        "SELECT COUNT(*) FILTER (WHERE due_at <= $1),
                COUNT(*) FILTER (WHERE due_at <= $1 + 86400),
                COUNT(*) FILTER (WHERE due_at <= $1 + 604800),
                COUNT(*) FILTER (WHERE due_at IS NULL AND state != 'new'),
                COUNT(*) FILTER (WHERE state = 'new'),
                COUNT(*) FILTER (WHERE feed),
                COUNT(*) FILTER (WHERE in_index AND first_failed_at IS NOT NULL)
         FROM urls",
        &[&now],
    )?;
    let mut buckets = vec![0u64; INTERVAL_BUCKETS.len()];
    for r in db.query(
        "SELECT revisit_secs, COUNT(*) FROM urls
         WHERE revisit_secs IS NOT NULL AND due_at IS NOT NULL AND state != 'excluded'
         GROUP BY revisit_secs",
        &[],
    )? {
        let secs: i64 = r.get(0);
        let at = INTERVAL_BUCKETS
            .iter()
            .position(|&(below, _)| secs < below)
            .unwrap_or(INTERVAL_BUCKETS.len() - 1);
        buckets[at] += count_of(&r, 1);
    }
    Ok(Schedule {
        due_now: count_of(&row, 0),
        due_within_day: count_of(&row, 1),
        due_within_week: count_of(&row, 2),
        never_again: count_of(&row, 3),
        never_visited: count_of(&row, 4),
        feeds: count_of(&row, 5),
        failing_but_searchable: count_of(&row, 6),
        intervals: INTERVAL_BUCKETS
            .iter()
            .zip(buckets)
            .map(|(&(_, label), n)| (label.to_string(), n))
            .collect(),
    })
}

impl Reader for PgFrontier {
    fn url_count(&self) -> Result<u64> {
        let row = blocking(|| self.db().query_one("SELECT COUNT(*) FROM urls", &[]))?;
        Ok(count_of(&row, 0))
    }

    fn meta(&self, key: &str) -> Result<Option<String>> {
        blocking(|| self.first("SELECT value FROM meta WHERE key = $1", &[&key]))
    }

    fn urls_in_state(&self, state: UrlState) -> Result<Vec<String>> {
        blocking(|| {
            self.column(
                "SELECT url FROM urls WHERE state = $1 ORDER BY url COLLATE \"C\"",
                &[&state.as_str()],
            )
        })
    }

    fn indexed_urls(&self) -> Result<Vec<String>> {
        blocking(|| {
            self.column(
                "SELECT url FROM urls WHERE in_index ORDER BY url COLLATE \"C\"",
                &[],
            )
        })
    }

    fn stats(&self, now: i64) -> Result<Stats> {
        blocking(|| {
            let count =
                |sql: &str| -> Result<u64> { Ok(count_of(&self.db().query_one(sql, &[])?, 0)) };
            let urls_known = count("SELECT COUNT(*) FROM urls")?;
            let pages_indexed = count("SELECT COUNT(*) FROM urls WHERE in_index")?;
            let hosts = count(
                "SELECT COUNT(*) FROM hosts h
                 WHERE EXISTS (SELECT 1 FROM urls u WHERE u.host_id = h.id
                               AND u.url LIKE 'gemini://%')",
            )?;
            let duplicates = count("SELECT COUNT(*) FROM urls WHERE error = 'duplicate'")?;
            let query_endpoints = count("SELECT COUNT(*) FROM urls WHERE status IN (10, 11)")?;
            let awaiting_retry =
                count("SELECT COUNT(*) FROM urls WHERE attempts > 0 AND due_at IS NOT NULL")?;
            let certificate_changes = count("SELECT COUNT(*) FROM hosts WHERE cert_changes > 0")?;
            let by_state = grouped(
                &mut self.db(),
                "SELECT state, COUNT(*) FROM urls GROUP BY state ORDER BY state COLLATE \"C\"",
            )?;
            let errors = grouped(
                &mut self.db(),
                "SELECT error, COUNT(*) FROM urls WHERE state = 'failed' AND error IS NOT NULL
                 GROUP BY error ORDER BY 2 DESC, error COLLATE \"C\"",
            )?;
            let excluded = grouped(
                &mut self.db(),
                "SELECT COALESCE(error, 'other'), COUNT(*) FROM urls WHERE state = 'excluded'
                 GROUP BY 1 ORDER BY 2 DESC, COALESCE(error, 'other') COLLATE \"C\"",
            )?;
            let by_status = self
                .db()
                .query(
                    "SELECT status, COUNT(*) FROM urls WHERE status IS NOT NULL
                     GROUP BY status ORDER BY status",
                    &[],
                )?
                .iter()
                .map(|r| (status_of(r, 0).unwrap_or(0), count_of(r, 1)))
                .collect();
            let hosts_in_backoff = count_of(
                &self.db().query_one(
                    "SELECT COUNT(*) FROM hosts WHERE backoff_until > $1",
                    &[&now],
                )?,
                0,
            );
            let held: Vec<HeldCapsule> = self
                .db()
                .query(
                    "SELECT name, held_reason, backoff_until FROM hosts
                     WHERE held_reason IS NOT NULL AND backoff_until > $1
                     ORDER BY backoff_until DESC, name COLLATE \"C\"",
                    &[&now],
                )?
                .iter()
                .map(|r| HeldCapsule {
                    host: r.get(0),
                    reason: r.get(1),
                    until: r.get(2),
                })
                .collect();
            let capsules_held_back = held.len() as u64;
            let held_back = held.into_iter().take(MAX_HELD_LISTED).collect();
            let certificates_changed = self
                .db()
                .query(
                    "SELECT name, cert_changes, cert_first_seen, cert_last_seen FROM hosts
                     WHERE cert_changes > 0 ORDER BY cert_changes DESC, name COLLATE \"C\"
                     LIMIT $1",
                    &[&(MAX_CERTIFICATE_CHANGES as i64)],
                )?
                .iter()
                .map(|r| CertificateChange {
                    host: r.get(0),
                    changes: count_of(r, 1),
                    current_since: r.get(2),
                    last_seen: r.get(3),
                })
                .collect();
            // Each statement locks the connection for itself: `meta` and `archive_stats` below
            // lock it again.
            let schedule = schedule(&mut self.db(), now)?;
            Ok(Stats {
                urls_known,
                pages_indexed,
                hosts,
                by_state,
                by_status,
                errors,
                excluded,
                duplicates,
                query_endpoints,
                awaiting_retry,
                certificate_changes,
                certificates_changed,
                hosts_in_backoff,
                held_back,
                capsules_held_back,
                last_crawl_started: self.meta("last_crawl_started")?,
                last_crawl_finished: self.meta("last_crawl_finished")?,
                schedule,
                archive: self.archive_stats()?,
            })
        })
    }

    /// The capsules with at least one indexed page, sorted by name.
    fn known_hosts(&self) -> Result<Vec<KnownHost>> {
        let rows = blocking(|| {
            self.db().query(
                "SELECT h.name, COUNT(*) FILTER (WHERE u.in_index), COUNT(*) FROM hosts h
                 JOIN urls u ON u.host_id = h.id
                 WHERE u.url LIKE 'gemini://%'
                 GROUP BY h.id HAVING COUNT(*) FILTER (WHERE u.in_index) > 0
                 ORDER BY h.name COLLATE \"C\"",
                &[],
            )
        })?;
        Ok(rows
            .iter()
            .map(|r| KnownHost {
                name: r.get(0),
                pages_indexed: count_of(r, 1),
                urls_known: count_of(r, 2),
            })
            .collect())
    }

    fn url_id(&self, url: &str) -> Result<Option<i64>> {
        blocking(|| self.first("SELECT id FROM urls WHERE url = $1", &[&url]))
    }

    fn url_details(&self, url: &str) -> Result<Option<UrlDetails>> {
        let Some(id) = self.url_id(url)? else {
            return Ok(None);
        };
        let (r, links) = blocking(|| {
            let mut db = self.db();
            let r = db.query_one(
                "SELECT u.id, u.url, h.name, u.state, u.in_index, u.status, u.meta, u.error,
                        u.mime, u.size, u.content_hash, u.content_meta, u.fetched_at, u.due_at,
                        u.revisit_secs, u.first_failed_at, u.changed_at, u.visits, u.changes,
                        u.feed, u.depth, r.url, a.url
                 FROM urls u JOIN hosts h ON h.id = u.host_id
                 LEFT JOIN urls r ON r.id = u.redirect_to
                 LEFT JOIN urls a ON a.id = u.alias_of
                 WHERE u.id = $1",
                &[&id],
            )?;
            let links = db.query(
                "SELECT t.url, l.label FROM links l JOIN urls t ON t.id = l.target
                 WHERE l.source = $1 ORDER BY t.url COLLATE \"C\", l.label COLLATE \"C\"",
                &[&id],
            )?;
            Ok::<_, postgres::Error>((r, links))
        })?;
        let links_out = links
            .iter()
            .map(|r| Backlink {
                url: r.get(0),
                label: r.get(1),
            })
            .collect();
        Ok(Some(UrlDetails {
            id: r.get(0),
            url: r.get(1),
            capsule: r.get(2),
            state: r.get(3),
            in_index: r.get(4),
            status: status_of(&r, 5),
            meta: r.get(6),
            error: r.get(7),
            mime: r.get(8),
            size: r.get::<_, Option<i64>>(9).map(|n| n.max(0) as u64),
            content_hash: r.get(10),
            content_meta: r.get(11),
            fetched_at: r.get(12),
            due_at: r.get(13),
            revisit_secs: r.get(14),
            first_failed_at: r.get(15),
            changed_at: r.get(16),
            visits: count_of(&r, 17),
            changes: count_of(&r, 18),
            feed: r.get(19),
            depth: r.get::<_, i64>(20).clamp(0, u32::MAX as i64) as u32,
            redirect_to: r.get(21),
            alias_of: r.get(22),
            links_out,
        }))
    }

    fn knows(&self, url: &str) -> Result<bool> {
        Ok(self.url_id(url)?.is_some())
    }

    /// The pages that link to `url` or to a URL that redirected to it, with their labels.
    fn backlinks(&self, url: &str) -> Result<Vec<Backlink>> {
        let Some(id) = self.url_id(url)? else {
            return Ok(Vec::new());
        };
        let rows = blocking(|| {
            self.db().query(
                "WITH RECURSIVE chain(id) AS (
                     SELECT $1::BIGINT
                     UNION
                     SELECT u.id FROM urls u JOIN chain c ON u.redirect_to = c.id)
                 SELECT DISTINCT s.url COLLATE \"C\", l.label COLLATE \"C\"
                 FROM links l JOIN urls s ON s.id = l.source
                 WHERE l.target IN (SELECT id FROM chain) AND s.id NOT IN (SELECT id FROM chain)
                 ORDER BY 1, 2",
                &[&id],
            )
        })?;
        Ok(rows
            .iter()
            .map(|r| Backlink {
                url: r.get(0),
                label: r.get(1),
            })
            .collect())
    }

    fn archived(&self, url_id: i64) -> Result<Option<ArchivedResponse>> {
        let row = blocking(|| {
            self.db().query_opt(
                "SELECT r.status, r.meta, r.fetched_at, r.cert_sha256, r.body_hash, b.size,
                        b.zstd
                 FROM responses r LEFT JOIN bodies b ON b.hash = r.body_hash
                 WHERE r.url_id = $1",
                &[&url_id],
            )
        })?;
        let Some(row) = row else {
            return Ok(None);
        };
        let body = match (
            row.get::<_, Option<i64>>(5),
            row.get::<_, Option<Vec<u8>>>(6),
        ) {
            (Some(size), Some(zstd)) => Some(decompress(&zstd, size)?),
            _ => None,
        };
        Ok(Some(ArchivedResponse {
            status: row.get::<_, i64>(0).clamp(0, 99) as u8,
            meta: row.get(1),
            fetched_at: row.get(2),
            cert_sha256: row.get(3),
            body_hash: row.get(4),
            body,
        }))
    }

    fn archived_body(&self, hash: &str) -> Result<Option<Vec<u8>>> {
        let row = blocking(|| {
            self.db()
                .query_opt("SELECT size, zstd FROM bodies WHERE hash = $1", &[&hash])
        })?;
        row.map(|r| decompress(&r.get::<_, Vec<u8>>(1), r.get(0)))
            .transpose()
    }

    /// One statement for every body.
    fn archived_bodies(&self, hashes: &[&str]) -> Result<HashMap<String, Vec<u8>>> {
        let rows = blocking(|| {
            self.db().query(
                "SELECT hash, size, zstd FROM bodies WHERE hash = ANY($1)",
                &[&hashes],
            )
        })?;
        rows.iter()
            .map(|r| Ok((r.get(0), decompress(&r.get::<_, Vec<u8>>(2), r.get(1))?)))
            .collect()
    }

    fn archive_stats(&self) -> Result<ArchiveStats> {
        let row = blocking(|| {
            self.db().query_one(
                "SELECT COUNT(*), COALESCE(SUM(size), 0)::BIGINT,
                        COALESCE(SUM(LENGTH(zstd)), 0)::BIGINT,
                        (SELECT COUNT(*) FROM responses)
                 FROM bodies",
                &[],
            )
        })?;
        Ok(ArchiveStats {
            bodies: count_of(&row, 0),
            raw_bytes: count_of(&row, 1),
            stored_bytes: count_of(&row, 2),
            responses: count_of(&row, 3),
        })
    }

    fn archived_responses(&self, after: i64, since: i64, limit: usize) -> Result<Vec<UrlResponse>> {
        let rows = blocking(|| {
            self.db().query(
                "SELECT r.url_id, u.url FROM responses r JOIN urls u ON u.id = r.url_id
                 WHERE r.url_id > $1 AND r.fetched_at >= $2 ORDER BY r.url_id LIMIT $3",
                &[&after, &since, &(limit as i64)],
            )
        })?;
        let mut out = Vec::with_capacity(rows.len());
        for row in rows {
            let (id, url): (i64, String) = (row.get(0), row.get(1));
            if let Some(response) = self.archived(id)? {
                out.push((id, url, response));
            }
        }
        Ok(out)
    }

    /// The seeds people suggested, newest first.
    fn suggested_seeds(&self) -> Result<Vec<SuggestedSeed>> {
        let rows = blocking(|| {
            self.db().query(
                "SELECT s.url, s.added_at, s.source, u.state, u.in_index, u.fetched_at
                 FROM seeds s LEFT JOIN urls u ON u.url = s.url
                 ORDER BY s.added_at DESC, s.url COLLATE \"C\"",
                &[],
            )
        })?;
        Ok(rows
            .iter()
            .map(|r| SuggestedSeed {
                url: r.get(0),
                added_at: r.get(1),
                source: r.get(2),
                state: r
                    .get::<_, Option<String>>(3)
                    .unwrap_or_else(|| "new".into()),
                in_index: r.get::<_, Option<bool>>(4).unwrap_or(false),
                fetched_at: r.get(5),
            })
            .collect())
    }
}
