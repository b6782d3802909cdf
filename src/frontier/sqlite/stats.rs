//! Read-only questions about the crawl: statistics and backlinks.

use std::collections::{BTreeMap, HashMap, HashSet};

use super::rows::{count_at, maybe_str_at, str_at};
use super::{Result, SqliteFrontier};
use crate::frontier::stats::INTERVAL_BUCKETS;
use crate::frontier::{
    CertificateChange, HeldCapsule, Schedule, MAX_CERTIFICATE_CHANGES, MAX_HELD_LISTED,
};

impl SqliteFrontier {
    /// The capsules a crawl held back that are still waiting at `now`, latest hold first (at
    /// most [`MAX_HELD_LISTED`]), and how many there are.
    pub(super) fn held_back(&self, now: i64) -> Result<(Vec<HeldCapsule>, u64)> {
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
    pub(super) fn tally_urls(&self, now: i64) -> Result<UrlTally> {
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

    pub(super) fn certificate_changes(&self) -> Result<Vec<CertificateChange>> {
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
pub(super) struct UrlTally {
    pub(super) urls: u64,
    pub(super) indexed: u64,
    pub(super) gemini_hosts: HashSet<i64>,
    pub(super) by_state: HashMap<String, u64>,
    pub(super) by_status: BTreeMap<i64, u64>,
    pub(super) errors: HashMap<String, u64>,
    pub(super) excluded: HashMap<String, u64>,
    pub(super) duplicates: u64,
    pub(super) query_endpoints: u64,
    pub(super) awaiting_retry: u64,
    pub(super) schedule: Schedule,
    pub(super) intervals: Vec<u64>,
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
pub(super) fn by_name(counts: HashMap<String, u64>) -> Vec<(String, u64)> {
    let mut v: Vec<(String, u64)> = counts.into_iter().collect();
    v.sort_unstable();
    v
}

/// Counts sorted as `ORDER BY count DESC, name`.
pub(super) fn by_count(counts: HashMap<String, u64>) -> Vec<(String, u64)> {
    let mut v: Vec<(String, u64)> = counts.into_iter().collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    v
}
