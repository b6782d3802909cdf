//! Read-only questions about the crawl: statistics and backlinks.

use std::collections::{BTreeMap, HashMap, HashSet};

use rusqlite::params;

use rusqlite::OptionalExtension;

use super::outlinks;
use super::rows::{count_at, maybe_count_at, maybe_str_at, status_at, str_at};
use super::{Backlink, KnownHost, Result, SqliteFrontier, Stats, UrlDetails, REDIRECT_CHAIN};
use crate::frontier::stats::INTERVAL_BUCKETS;
use crate::frontier::{
    CertificateChange, HeldCapsule, Schedule, MAX_CERTIFICATE_CHANGES, MAX_HELD_LISTED,
};

impl SqliteFrontier {
    /// Counts for `geode stats`; `now` decides which back-offs are still running and which
    /// URLs are due.
    ///
    /// Everything about URLs comes from one scan of `urls`, tallied here: at ten million URLs
    /// a scan takes seconds, and these counts were a dozen scans, one of them once per capsule
    /// (the capsules with a Gemini URL, which no index serves) and so never done at that size.
    pub fn stats(&self, now: i64) -> Result<Stats> {
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

    /// The capsules a crawl held back that are still waiting at `now`, latest hold first (at
    /// most [`MAX_HELD_LISTED`]), and how many there are.
    fn held_back(&self, now: i64) -> Result<(Vec<HeldCapsule>, u64)> {
        let mut stmt = self.conn.prepare(
            "SELECT name, held_reason, backoff_until FROM hosts
             WHERE held_reason IS NOT NULL AND backoff_until > ?1
             ORDER BY backoff_until DESC, name",
        )?;
        let mut rows = stmt.query([now])?;
        let (mut listed, mut all) = (Vec::new(), 0);
        while let Some(row) = rows.next()? {
            all += 1;
            if listed.len() < MAX_HELD_LISTED {
                listed.push(HeldCapsule {
                    host: row.get(0)?,
                    reason: row.get(1)?,
                    until: row.get(2)?,
                });
            }
        }
        Ok((listed, all))
    }

    /// One pass over `urls` for [`SqliteFrontier::stats`].
    fn tally_urls(&self, now: i64) -> Result<UrlTally> {
        let mut tally = UrlTally {
            intervals: vec![0; INTERVAL_BUCKETS.len()],
            ..UrlTally::default()
        };
        let mut stmt = self.conn.prepare(
            "SELECT host_id, substr(url, 1, 9), state, status, error, in_index, attempts, due_at,
                    revisit_secs, feed, first_failed_at
             FROM urls",
        )?;
        let mut rows = stmt.query([])?;
        while let Some(row) = rows.next()? {
            let scheme = maybe_str_at(row, 1)?;
            tally.add(
                &UrlRow {
                    host_id: row.get(0)?,
                    gemini: scheme.is_some_and(|s| s.eq_ignore_ascii_case("gemini://")),
                    state: str_at(row, 2)?,
                    status: row.get(3)?,
                    error: maybe_str_at(row, 4)?,
                    in_index: row.get::<_, i64>(5)? == 1,
                    attempts: row.get(6)?,
                    due_at: row.get(7)?,
                    revisit_secs: row.get(8)?,
                    feed: row.get::<_, i64>(9)? == 1,
                    failing: row.get_ref(10)?.data_type() != rusqlite::types::Type::Null,
                },
                now,
            );
        }
        Ok(tally)
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

/// What [`SqliteFrontier::stats`] needs of one URL.
struct UrlRow<'a> {
    host_id: i64,
    /// Its scheme is gemini (as `url LIKE 'gemini://%'`, case aside).
    gemini: bool,
    state: &'a str,
    status: Option<i64>,
    error: Option<&'a str>,
    in_index: bool,
    attempts: i64,
    due_at: Option<i64>,
    revisit_secs: Option<i64>,
    feed: bool,
    /// `first_failed_at` is set.
    failing: bool,
}

/// The counts of [`SqliteFrontier::stats`] over every URL, as the rows go by.
#[derive(Default)]
struct UrlTally {
    urls: u64,
    indexed: u64,
    gemini_hosts: HashSet<i64>,
    by_state: HashMap<String, u64>,
    by_status: BTreeMap<i64, u64>,
    errors: HashMap<String, u64>,
    excluded: HashMap<String, u64>,
    duplicates: u64,
    query_endpoints: u64,
    awaiting_retry: u64,
    schedule: Schedule,
    intervals: Vec<u64>,
}

impl UrlTally {
    /// Counts URL `u`; `now` says what is due.
    fn add(&mut self, u: &UrlRow<'_>, now: i64) {
        /// One more under `key`, copied only the first time it is seen.
        fn bump(map: &mut HashMap<String, u64>, key: &str) {
            match map.get_mut(key) {
                Some(n) => *n += 1,
                None => {
                    map.insert(key.to_string(), 1);
                }
            }
        }
        self.urls += 1;
        self.indexed += u64::from(u.in_index);
        if u.gemini {
            self.gemini_hosts.insert(u.host_id);
        }
        bump(&mut self.by_state, u.state);
        if let Some(status) = u.status {
            *self.by_status.entry(status).or_default() += 1;
        }
        match (u.state, u.error) {
            ("failed", Some(error)) => bump(&mut self.errors, error),
            ("excluded", error) => bump(&mut self.excluded, error.unwrap_or("other")),
            _ => {}
        }
        self.duplicates += u64::from(u.error == Some("duplicate"));
        self.query_endpoints += u64::from(matches!(u.status, Some(10 | 11)));
        self.awaiting_retry += u64::from(u.attempts > 0 && u.due_at.is_some());
        let s = &mut self.schedule;
        if let Some(due) = u.due_at {
            s.due_now += u64::from(due <= now);
            s.due_within_day += u64::from(due <= now + 86_400);
            s.due_within_week += u64::from(due <= now + 604_800);
        }
        s.never_again += u64::from(u.due_at.is_none() && u.state != "new");
        s.never_visited += u64::from(u.state == "new");
        s.feeds += u64::from(u.feed);
        s.failing_but_searchable += u64::from(u.in_index && u.failing);
        if let (Some(secs), Some(_)) = (u.revisit_secs, u.due_at) {
            if u.state != "excluded" {
                let at = INTERVAL_BUCKETS
                    .iter()
                    .position(|&(below, _)| secs < below)
                    .unwrap_or(INTERVAL_BUCKETS.len() - 1);
                self.intervals[at] += 1;
            }
        }
    }
}

/// Counts sorted as `ORDER BY name`.
fn by_name(counts: HashMap<String, u64>) -> Vec<(String, u64)> {
    let mut v: Vec<(String, u64)> = counts.into_iter().collect();
    v.sort_unstable();
    v
}

/// Counts sorted as `ORDER BY count DESC, name`.
fn by_count(counts: HashMap<String, u64>) -> Vec<(String, u64)> {
    let mut v: Vec<(String, u64)> = counts.into_iter().collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    v
}
