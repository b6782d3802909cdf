//! What the frontier hands out and takes in, whatever the store: URL states and index
//! operations, claimed URLs with what was known of them, fetch results, visits, links,
//! certificate pins, anchor updates and seeds.

use std::collections::BTreeMap;

use crate::revisit::Priority;

/// What the last visit of a URL found. See schema.sql.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UrlState {
    New,
    Indexed,
    Fetched,
    Failed,
    Excluded,
}

impl UrlState {
    pub fn as_str(self) -> &'static str {
        match self {
            UrlState::New => "new",
            UrlState::Indexed => "indexed",
            UrlState::Fetched => "fetched",
            UrlState::Failed => "failed",
            UrlState::Excluded => "excluded",
        }
    }

    pub(crate) fn parse(s: &str) -> UrlState {
        match s {
            "indexed" => UrlState::Indexed,
            "fetched" => UrlState::Fetched,
            "failed" => UrlState::Failed,
            "excluded" => UrlState::Excluded,
            _ => UrlState::New,
        }
    }
}

/// An operation sent to the index and not yet committed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexOp {
    Upsert,
    Delete,
}

impl IndexOp {
    pub fn as_str(self) -> &'static str {
        match self {
            IndexOp::Upsert => "upsert",
            IndexOp::Delete => "delete",
        }
    }

    pub(crate) fn parse(s: &str) -> IndexOp {
        if s == "delete" {
            IndexOp::Delete
        } else {
            IndexOp::Upsert
        }
    }
}

/// A URL handed to the crawl, with what geode remembers of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueuedUrl {
    pub id: i64,
    pub url: String,
    pub host_id: i64,
    /// Capsule key (host or host:port).
    pub host: String,
    pub depth: u32,
    pub hops: u32,
    /// Set when this URL was reached through a temporary redirect: its content is indexed under
    /// the URL that redirected.
    pub canonical: Option<Canonical>,
    pub prior: Prior,
}

/// The URL under which a temporarily redirected page is indexed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Canonical {
    pub id: i64,
    pub url: String,
    /// Its capsule key.
    pub host: String,
    pub in_index: bool,
}

/// What the frontier knew of a URL when it was claimed: enough to tell a change, keep a failure
/// streak and count what a visit did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Prior {
    pub state: Option<UrlState>,
    pub in_index: bool,
    pub content_hash: Option<String>,
    pub mime: Option<String>,
    /// The last meta (a redirect's target, for 3x).
    pub meta: Option<String>,
    pub status: Option<u8>,
    /// The interval set at the last visit (seconds).
    pub revisit_secs: Option<i64>,
    pub first_failed_at: Option<i64>,
    /// Temporary failures in a row.
    pub attempts: u32,
    pub visited: bool,
    /// The page was a feed at its last visit.
    pub feed: bool,
    /// HTTP validators of the content fetched last (for a conditional revisit).
    pub etag: Option<String>,
    pub last_modified: Option<String>,
}

/// The cached robots.txt answer of a capsule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CachedRobots {
    pub status: u8,
    pub text: Option<String>,
    pub fetched_at: i64,
}

/// What a visit received.
#[derive(Debug, Clone, Default)]
pub struct FetchResult {
    pub status: Option<u8>,
    /// Meta line or error message.
    pub meta: String,
    /// Short error kind for failed or excluded URLs.
    pub error: Option<String>,
    pub mime: Option<String>,
    pub size: Option<u64>,
    pub content_hash: Option<String>,
    /// The whole meta line of a 20 (charset and language included), kept with the content.
    pub content_meta: Option<String>,
    /// HTTP validators of new content (`None`: keep those recorded).
    pub validators: Option<(Option<String>, Option<String>)>,
    pub fetched_at: i64,
}

/// A link to record: `url` normalised, `host` its capsule key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkOut {
    pub url: String,
    pub host: String,
    pub label: String,
    /// `None` when the crawl may fetch it; otherwise why not (stored as the `excluded` URL's
    /// error and kept for the link graph).
    pub excluded: Option<&'static str>,
    /// Its claim priority if it is new ([`crate::revisit::Priority`]).
    pub prio: crate::revisit::Priority,
}

impl LinkOut {
    /// The link's target as a URL new to the frontier, found on page `source` at `depth`.
    pub fn as_new(&self, source: i64, depth: u32) -> NewUrl<'_> {
        NewUrl {
            url: &self.url,
            host: &self.host,
            depth: depth + 1,
            hops: 0,
            from: Some(source),
            alias_of: None,
            prio: self.prio,
        }
    }
}

/// Where [`super::Batch::ensure_url`] left a URL: its id and whether it is new, or `None` when
/// its capsule is full and the URL was not stored.
pub type Stored = Option<(i64, bool)>;

/// What a certificate check against the pin found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pin {
    First,
    Same,
    /// The capsule presents another certificate than the one pinned, which was this one.
    Changed {
        previous: String,
    },
}

/// A page whose document must be rewritten because the labels of links to it changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnchorUpdate {
    /// The URL the change was recorded against.
    pub dirty_id: i64,
    /// The indexed page it stands for (itself, or where its redirects lead), if any.
    pub page: Option<IndexedPage>,
}

/// An indexed page, as the anchor refresh needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexedPage {
    pub id: i64,
    pub url: String,
    pub mime: Option<String>,
    /// Only the header was read (a file indexed by its URL and the links to it).
    pub header_only: bool,
}

/// What the store has of one URL on the way from a page to the indexed page it stands for
/// ([`IndexedPage::through_redirects`]).
#[derive(Debug, Clone)]
pub(crate) struct ChainStep {
    pub url: String,
    /// The index holds a document under it, and no operation on it is pending.
    pub indexed: bool,
    pub redirect_to: Option<i64>,
    pub status: Option<i64>,
    pub mime: Option<String>,
    /// No body was read (no content hash).
    pub no_hash: bool,
}

impl IndexedPage {
    /// The indexed page URL `id` stands for: itself, or the page its redirects (30 to 39) lead
    /// to, at most [`super::MAX_REDIRECT_CHAIN`] of them; `read` gives what the store has of
    /// one URL (`None`: unknown). A file whose body was not read, and not text, is indexed by
    /// its header only.
    pub(crate) fn through_redirects(
        mut id: i64,
        mut read: impl FnMut(i64) -> super::Result<Option<ChainStep>>,
    ) -> super::Result<Option<IndexedPage>> {
        for _ in 0..=super::MAX_REDIRECT_CHAIN {
            let Some(step) = read(id)? else {
                return Ok(None);
            };
            if step.indexed {
                let text = step
                    .mime
                    .as_deref()
                    .is_some_and(|m| m.to_ascii_lowercase().starts_with("text/"));
                return Ok(Some(IndexedPage {
                    id,
                    url: step.url,
                    mime: step.mime,
                    header_only: step.no_hash && !text,
                }));
            }
            match (step.status, step.redirect_to) {
                (Some(30..=39), Some(next)) => id = next,
                _ => return Ok(None),
            }
        }
        Ok(None)
    }
}

/// What earlier runs learned of a capsule's value, for its crawl budget (`crawl::budget`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Standing {
    /// Its pages the index held at the end of the last run.
    pub pages: u64,
    /// Other capsules with indexed pages linking to it then.
    pub linkers: u64,
}

/// What became of a suggested seed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Suggested {
    /// A URL geode did not know: the next crawl fetches it.
    New,
    /// A URL geode knew: it is due at once.
    Known,
    /// Suggested before.
    AlreadySuggested,
    /// Too many suggestions wait for a crawl already; nothing was recorded.
    QueueFull,
}

impl Suggested {
    /// What a recorded suggestion was: of a URL just `added`, of a `known_seed`, or of a URL
    /// already known otherwise.
    pub fn recorded(added: bool, known_seed: bool) -> Suggested {
        if added {
            Suggested::New
        } else if known_seed {
            Suggested::AlreadySuggested
        } else {
            Suggested::Known
        }
    }
}

/// A seed someone suggested, and where it stands.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SuggestedSeed {
    pub url: String,
    pub added_at: i64,
    pub source: String,
    /// What its last visit found (`new`: not visited yet).
    pub state: String,
    pub in_index: bool,
    pub fetched_at: Option<i64>,
}

/// A URL to insert if unknown.
#[derive(Debug, Clone, Copy)]
pub struct NewUrl<'a> {
    pub url: &'a str,
    /// Its capsule key.
    pub host: &'a str,
    pub depth: u32,
    pub hops: u32,
    pub from: Option<i64>,
    /// The URL whose content this is, when reached through a temporary redirect.
    pub alias_of: Option<i64>,
    pub prio: Priority,
}

/// Everything a visit sets on its URL. A visited URL is not claimed again in this run.
#[derive(Debug, Clone)]
pub struct VisitRecord<'a> {
    pub state: UrlState,
    pub result: &'a FetchResult,
    /// The next visit; `None`: never.
    pub due_at: Option<i64>,
    pub revisit_secs: i64,
    pub first_failed_at: Option<i64>,
    pub prio: Priority,
    pub feed: bool,
    /// The visit found new or changed content.
    pub changed: bool,
    /// What was sent to the index for this URL, if anything.
    pub index_op: Option<IndexOp>,
    /// Where a redirect pointed.
    pub redirect_to: Option<i64>,
}

/// What recording a page's links did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LinkReport {
    /// URLs the frontier did not know.
    pub added: usize,
    /// New URLs with the hub priority (entries new in a feed), to be fetched first: (URL id,
    /// capsule id).
    pub new_hubs: Vec<(i64, i64)>,
    /// Capsules that got new URLs to fetch, with how many.
    pub hosts_with_new: BTreeMap<i64, u64>,
}

impl LinkReport {
    /// Counts `target`, a URL a page's `link` has just added to the frontier. `host_id` gives
    /// the id of its capsule, and is asked only when the URL is fetchable (not excluded).
    pub fn count_new<E>(
        &mut self,
        link: &LinkOut,
        target: i64,
        host_id: impl FnOnce() -> Result<i64, E>,
    ) -> Result<(), E> {
        self.added += 1;
        if link.excluded.is_none() {
            let host_id = host_id()?;
            *self.hosts_with_new.entry(host_id).or_default() += 1;
            if link.prio == Priority::Hub {
                self.new_hubs.push((target, host_id));
            }
        }
        Ok(())
    }
}
