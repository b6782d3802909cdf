//! Read-only questions about the crawl: statistics and backlinks.

use rusqlite::params;
use serde::Serialize;

use rusqlite::OptionalExtension;

use super::{Frontier, Result, UrlState, REDIRECT_CHAIN};

/// The state of the crawl, for `geode stats`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Stats {
    pub urls_known: u64,
    pub pages_indexed: u64,
    /// Capsules: hosts with at least one gemini:// URL.
    pub hosts: u64,
    /// URLs per frontier state.
    pub by_state: Vec<(String, u64)>,
    /// Fetched URLs per status code received.
    pub by_status: Vec<(u8, u64)>,
    /// Failed URLs per error kind.
    pub errors: Vec<(String, u64)>,
    /// URLs never fetched, per reason (robots, not-fetchable, too-deep).
    pub excluded: Vec<(String, u64)>,
    /// Pages not indexed because an identical body is indexed under another URL.
    pub duplicates: u64,
    /// URLs that asked for input (status 10 or 11): search boxes and the like.
    pub query_endpoints: u64,
    /// URLs waiting to be retried after a temporary failure.
    pub awaiting_retry: u64,
    /// Capsules whose certificate changed since first seen.
    pub certificate_changes: u64,
    /// Capsules in back-off now.
    pub hosts_in_backoff: u64,
    pub last_crawl_started: Option<String>,
    pub last_crawl_finished: Option<String>,
}

/// A capsule with indexed pages, for the list of known capsules.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KnownHost {
    /// Capsule key: host, or host:port for a non-default port.
    pub name: String,
    pub pages_indexed: u64,
    pub urls_known: u64,
}

/// A page linking to another.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Backlink {
    pub url: String,
    pub label: String,
}

impl Frontier {
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
            pages_indexed: count("SELECT COUNT(*) FROM urls WHERE state = 'indexed'")?,
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
                "SELECT COUNT(*) FROM urls WHERE state = 'new' AND retry_after IS NOT NULL",
            )?,
            certificate_changes: count("SELECT COUNT(*) FROM hosts WHERE cert_changes > 0")?,
            hosts_in_backoff,
            last_crawl_started: self.meta("last_crawl_started")?,
            last_crawl_finished: self.meta("last_crawl_finished")?,
        })
    }

    /// The capsules with at least one indexed page, sorted by name, with their page counts.
    pub fn known_hosts(&self) -> Result<Vec<KnownHost>> {
        let mut stmt = self.conn.prepare(
            "SELECT h.name, SUM(u.state = 'indexed'), COUNT(*) FROM hosts h
             JOIN urls u ON u.host_id = h.id
             WHERE u.url LIKE 'gemini://%'
             GROUP BY h.id HAVING SUM(u.state = 'indexed') > 0
             ORDER BY h.name",
        )?;
        let rows = stmt.query_map([], |r| {
            Ok(KnownHost {
                name: r.get(0)?,
                pages_indexed: r.get::<_, i64>(1)?.max(0) as u64,
                urls_known: r.get::<_, i64>(2)?.max(0) as u64,
            })
        })?;
        Ok(rows.collect::<std::result::Result<_, _>>()?)
    }

    /// Every URL in `state`, sorted.
    pub fn urls_in_state(&self, state: UrlState) -> Result<Vec<String>> {
        let mut stmt = self
            .conn
            .prepare("SELECT url FROM urls WHERE state = ?1 ORDER BY url")?;
        let rows = stmt.query_map([state.as_str()], |r| r.get(0))?;
        Ok(rows.collect::<std::result::Result<_, _>>()?)
    }

    fn url_id(&self, url: &str) -> Result<Option<i64>> {
        Ok(self
            .conn
            .prepare_cached("SELECT id FROM urls WHERE url = ?1")?
            .query_row([url], |r| r.get(0))
            .optional()?)
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
