//! Read-only questions about the crawl: statistics and backlinks.

use rusqlite::params;

use rusqlite::OptionalExtension;

use super::outlinks;
use super::rows::{count_at, maybe_count_at, status_at};
use super::{Backlink, KnownHost, Result, SqliteFrontier, Stats, UrlDetails, REDIRECT_CHAIN};
use crate::frontier::stats::INTERVAL_BUCKETS;
use crate::frontier::{CertificateChange, Schedule, MAX_CERTIFICATE_CHANGES};

impl SqliteFrontier {
    /// Counts for `geode stats`; `now` decides which back-offs are still running.
    pub fn stats(&self, now: i64) -> Result<Stats> {
        let count = |sql: &str| -> Result<u64> {
            Ok(self.conn.query_row(sql, [], |r| r.get::<_, i64>(0))? as u64)
        };
        let grouped = |sql: &str| -> Result<Vec<(String, u64)>> {
            let mut stmt = self.conn.prepare(sql)?;
            let rows = stmt.query_map([], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)? as u64))
            })?;
            Ok(rows.collect::<std::result::Result<_, _>>()?)
        };
        let by_status = {
            let mut stmt = self.conn.prepare(
                "SELECT status, COUNT(*) FROM urls WHERE status IS NOT NULL
                 GROUP BY status ORDER BY status",
            )?;
            let rows = stmt.query_map([], |r| {
                Ok((
                    r.get::<_, i64>(0)?.clamp(0, 99) as u8,
                    r.get::<_, i64>(1)? as u64,
                ))
            })?;
            rows.collect::<std::result::Result<_, _>>()?
        };
        let hosts_in_backoff = self.conn.query_row(
            "SELECT COUNT(*) FROM hosts WHERE backoff_until > ?1",
            params![now],
            |r| r.get::<_, i64>(0),
        )? as u64;
        Ok(Stats {
            urls_known: count("SELECT COUNT(*) FROM urls")?,
            pages_indexed: count("SELECT COUNT(*) FROM urls WHERE in_index = 1")?,
            hosts: count(
                "SELECT COUNT(*) FROM hosts h
                 WHERE EXISTS (SELECT 1 FROM urls u WHERE u.host_id = h.id AND u.url LIKE 'gemini://%')",
            )?,
            by_state: grouped("SELECT state, COUNT(*) FROM urls GROUP BY state ORDER BY state")?,
            by_status,
            errors: grouped(
                "SELECT error, COUNT(*) FROM urls WHERE state = 'failed' AND error IS NOT NULL
                 GROUP BY error ORDER BY 2 DESC, 1",
            )?,
            excluded: grouped(
                "SELECT COALESCE(error, 'other'), COUNT(*) FROM urls WHERE state = 'excluded'
                 GROUP BY 1 ORDER BY 2 DESC, 1",
            )?,
            duplicates: count("SELECT COUNT(*) FROM urls WHERE error = 'duplicate'")?,
            query_endpoints: count("SELECT COUNT(*) FROM urls WHERE status IN (10, 11)")?,
            awaiting_retry: count(
                "SELECT COUNT(*) FROM urls WHERE attempts > 0 AND due_at IS NOT NULL",
            )?,
            certificate_changes: count("SELECT COUNT(*) FROM hosts WHERE cert_changes > 0")?,
            certificates_changed: self.certificate_changes()?,
            hosts_in_backoff,
            last_crawl_started: self.meta("last_crawl_started")?,
            last_crawl_finished: self.meta("last_crawl_finished")?,
            schedule: self.schedule(now)?,
            archive: self.archive_stats()?,
        })
    }

    fn schedule(&self, now: i64) -> Result<Schedule> {
        let count = |sql: &str| -> Result<u64> {
            Ok(self
                .conn
                .query_row(sql, [now], |r| r.get::<_, i64>(0))?
                .max(0) as u64)
        };
        let (due_now, due_within_day, due_within_week, never_again): (i64, i64, i64, i64) =
            self.conn.query_row(
                "SELECT TOTAL(due_at <= ?1), TOTAL(due_at <= ?1 + 86400),
                        TOTAL(due_at <= ?1 + 604800),
                        TOTAL(due_at IS NULL AND state != 'new')
                 FROM urls",
                [now],
                |r| {
                    Ok((
                        r.get::<_, f64>(0)? as i64,
                        r.get::<_, f64>(1)? as i64,
                        r.get::<_, f64>(2)? as i64,
                        r.get::<_, f64>(3)? as i64,
                    ))
                },
            )?;
        let mut buckets = vec![0u64; INTERVAL_BUCKETS.len()];
        {
            let mut stmt = self.conn.prepare(
                "SELECT revisit_secs, COUNT(*) FROM urls
                 WHERE revisit_secs IS NOT NULL AND due_at IS NOT NULL AND state != 'excluded'
                 GROUP BY revisit_secs",
            )?;
            let mut rows = stmt.query([])?;
            while let Some(row) = rows.next()? {
                let secs: i64 = row.get(0)?;
                let n: i64 = row.get(1)?;
                let at = INTERVAL_BUCKETS
                    .iter()
                    .position(|&(below, _)| secs < below)
                    .unwrap_or(INTERVAL_BUCKETS.len() - 1);
                buckets[at] += n.max(0) as u64;
            }
        }
        Ok(Schedule {
            due_now: due_now.max(0) as u64,
            due_within_day: due_within_day.max(0) as u64,
            due_within_week: due_within_week.max(0) as u64,
            never_visited: count("SELECT COUNT(*) FROM urls WHERE state = 'new' AND ?1 = ?1")?,
            never_again: never_again.max(0) as u64,
            feeds: count("SELECT COUNT(*) FROM urls WHERE feed = 1 AND ?1 = ?1")?,
            failing_but_searchable: count(
                "SELECT COUNT(*) FROM urls
                 WHERE in_index = 1 AND first_failed_at IS NOT NULL AND ?1 = ?1",
            )?,
            intervals: INTERVAL_BUCKETS
                .iter()
                .zip(buckets)
                .map(|(&(_, label), n)| (label.to_string(), n))
                .collect(),
        })
    }

    fn certificate_changes(&self) -> Result<Vec<CertificateChange>> {
        let mut stmt = self.conn.prepare(
            "SELECT name, cert_changes, cert_first_seen, cert_last_seen FROM hosts
             WHERE cert_changes > 0 ORDER BY cert_changes DESC, name LIMIT ?1",
        )?;
        let rows = stmt.query_map([MAX_CERTIFICATE_CHANGES as i64], |r| {
            Ok(CertificateChange {
                host: r.get(0)?,
                changes: count_at(r, 1)?,
                current_since: r.get(2)?,
                last_seen: r.get(3)?,
            })
        })?;
        Ok(rows.collect::<std::result::Result<_, _>>()?)
    }

    /// The capsules with at least one indexed page, sorted by name, with their page counts.
    pub fn known_hosts(&self) -> Result<Vec<KnownHost>> {
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

    pub(crate) fn url_id(&self, url: &str) -> Result<Option<i64>> {
        Ok(self
            .conn
            .prepare_cached("SELECT id FROM urls WHERE url = ?1")?
            .query_row([url], |r| r.get(0))
            .optional()?)
    }

    /// What the crawl database knows of `url` (normalised), if anything.
    pub fn url_details(&self, url: &str) -> Result<Option<UrlDetails>> {
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
    pub fn knows(&self, url: &str) -> Result<bool> {
        Ok(self.url_id(url)?.is_some())
    }

    /// The pages that link to `url` (normalised) or to a URL that redirected to it, with their
    /// labels, sorted by source URL.
    pub fn backlinks(&self, url: &str) -> Result<Vec<Backlink>> {
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
}
