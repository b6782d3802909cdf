//! What `geode stats`, `show` and `backlinks` are told about the crawl, whatever the store.

use serde::Serialize;

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
    /// Those capsules, most changes first (at most [`MAX_CERTIFICATE_CHANGES`]).
    pub certificates_changed: Vec<CertificateChange>,
    /// Capsules in back-off now.
    pub hosts_in_backoff: u64,
    /// Capsules a crawl held back for a later run (their budget used, or a trap shape), most
    /// recently held first (at most [`MAX_HELD_LISTED`]), and how many there are in all.
    pub held_back: Vec<HeldCapsule>,
    pub capsules_held_back: u64,
    pub last_crawl_started: Option<String>,
    pub last_crawl_finished: Option<String>,
    /// When URLs come due.
    pub schedule: Schedule,
    /// What the archive holds.
    pub archive: super::ArchiveStats,
}

/// The revisit schedule, for `geode stats`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Schedule {
    /// URLs due now (new ones included), within a day and within a week of now.
    pub due_now: u64,
    pub due_within_day: u64,
    pub due_within_week: u64,
    /// URLs never visited yet.
    pub never_visited: u64,
    /// URLs that will not be requested again (52, exclusions).
    pub never_again: u64,
    /// Pages recognised as feeds (revisited at the shortest interval).
    pub feeds: u64,
    /// Pages still searchable although their last visits failed (until `--remove-after`).
    pub failing_but_searchable: u64,
    /// Visited URLs that will be visited again, by their current revisit interval.
    pub intervals: Vec<(String, u64)>,
}

/// A capsule whose certificate changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CertificateChange {
    pub host: String,
    /// How many times it changed.
    pub changes: u64,
    /// When the current certificate was first and last seen (unix seconds).
    pub current_since: Option<i64>,
    pub last_seen: Option<i64>,
}

/// A capsule held back for a later run, and why (`budget`, `near-duplicates`, `fan-out`: see
/// `crawl::budget`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HeldCapsule {
    pub host: String,
    pub reason: String,
    /// Not claimed again before this time (unix seconds).
    pub until: i64,
}

/// How many held-back capsules `stats` lists.
pub const MAX_HELD_LISTED: usize = 100;

/// The buckets of revisit intervals for `stats`: upper bound (seconds, exclusive) and label.
pub(crate) const INTERVAL_BUCKETS: &[(i64, &str)] = &[
    (24 * 3600, "under 1 day"),
    (3 * 24 * 3600, "1-3 days"),
    (7 * 24 * 3600, "3-7 days"),
    (14 * 24 * 3600, "7-14 days"),
    (30 * 24 * 3600, "14-30 days"),
    (i64::MAX, "30 days or more"),
];

/// How many capsules with changed certificates `stats` lists.
pub const MAX_CERTIFICATE_CHANGES: usize = 50;

/// A capsule with indexed pages, for the list of known capsules.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KnownHost {
    /// Capsule key: host, host:port for a non-default port, or a web origin (https://host).
    pub name: String,
    pub pages_indexed: u64,
    pub urls_known: u64,
}

/// Everything the crawl database says about one URL, for `geode show`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UrlDetails {
    pub id: i64,
    pub url: String,
    pub capsule: String,
    /// What the last visit found (`new`: never visited).
    pub state: String,
    pub in_index: bool,
    pub status: Option<u8>,
    pub meta: Option<String>,
    pub error: Option<String>,
    pub mime: Option<String>,
    pub size: Option<u64>,
    pub content_hash: Option<String>,
    pub content_meta: Option<String>,
    pub fetched_at: Option<i64>,
    /// The next visit; `None`: never again.
    pub due_at: Option<i64>,
    pub revisit_secs: Option<i64>,
    pub first_failed_at: Option<i64>,
    pub changed_at: Option<i64>,
    pub visits: u64,
    pub changes: u64,
    pub feed: bool,
    pub depth: u32,
    /// Where its last redirect pointed.
    pub redirect_to: Option<String>,
    /// The URL its content is indexed under, when reached through a temporary redirect.
    pub alias_of: Option<String>,
    /// The links on the page: (target, label).
    pub links_out: Vec<Backlink>,
}

/// A page linking to another.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Backlink {
    pub url: String,
    pub label: String,
}
