//! The crawl frontier and all crawl state, in SQLite: every known URL with what its last visit
//! found and when it is due again, capsules (robots.txt cache, certificate pins, back-off,
//! leases), and the link graph. This is the only module that speaks SQL.
//!
//! Writes go through [`Batch`], one transaction for many results, because a crawl records
//! thousands of small facts a second. Write transactions begin IMMEDIATE: the crawl loop and the
//! indexing thread write through separate connections, and a deferred transaction that read
//! first could not be promoted to a writer after the other connection wrote (SQLITE_BUSY_SNAPSHOT,
//! which no busy timeout cures). The database runs in WAL mode, so `geode search`, `stats`
//! and `serve` can read while a crawl writes, and a killed crawl loses at most its open batch.
//!
//! **The index.** `in_index` says whether the Tantivy index holds a document under a URL. A crawl
//! that sends the index an upsert or a delete records it as the URL's `index_op`; the indexing
//! thread tags those URLs with the commit sequence number before committing Tantivy
//! ([`Frontier::assign_batch`]) and applies them to `in_index` after ([`Frontier::mark_committed`]).
//! After a crash, [`Frontier::recover`] is given the sequence number stored in the index's last
//! commit: operations it holds are applied, the others are undone by visiting their URLs again.
//! So `in_index` is true exactly when the index holds the page.
//!
//! **The schedule.** Each URL has a `due_at` (the revisit policy is [`crate::revisit`]'s) and a
//! claim priority. A crawl leases whole capsules ([`claim`]): a leased capsule's due URLs are
//! claimed a few at a time, hubs first; a URL visited in a run is not claimed again in that run;
//! leases and claims are let go at the end of a run, and by [`Frontier::recover`] after a crash.
//! Every claim is an index range scan: the cost does not grow with the number of URLs known.

pub mod archive;
mod batch;
mod claim;
mod graph;
mod migrate;
mod stats;

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use rusqlite::{params, Connection, OpenFlags, OptionalExtension, TransactionBehavior};

pub use archive::{ArchiveRecord, ArchiveStats, ArchivedBody, ArchivedResponse, IndexedContent};
pub use batch::{Batch, LinkReport, NewUrl, VisitRecord};
pub use stats::{Backlink, CertificateChange, KnownHost, Schedule, Stats, UrlDetails};

/// A recursive CTE `chain(id)`: URL `?1` and the URLs whose redirects (30 or 31) lead to it,
/// directly or through other redirects (`UNION` ends loops).
pub(crate) const REDIRECT_CHAIN: &str = "chain(id) AS ( \
     SELECT ?1 \
     UNION \
     SELECT u.id FROM urls u JOIN chain c ON u.redirect_to = c.id)";

/// Errors of the crawl database. The SQLite error is shown in the message, so it is not also a
/// `source()` (which would print it twice in a `{:#}` chain).
#[derive(Debug, thiserror::Error)]
pub enum FrontierError {
    #[error("crawl database: {0}")]
    Sqlite(rusqlite::Error),
    #[error("no crawl database at {0} (run `geode crawl` first)")]
    Missing(std::path::PathBuf),
    #[error("crawl archive: {0}")]
    Archive(String),
    #[error(
        "the crawl database was written by a newer geode (schema {found}; this geode knows \
         {supported}): upgrade geode"
    )]
    Version { found: i64, supported: i64 },
    #[error(
        "the crawl database has schema {found}, older than this geode's ({supported}): run \
         `geode crawl` on this data directory once, which upgrades it in place"
    )]
    Outdated { found: i64, supported: i64 },
    /// The database (or the directory holding it) exists but may not be read.
    #[error("cannot read the crawl database at {0}: {1}")]
    Unreadable(std::path::PathBuf, std::io::Error),
}

impl From<rusqlite::Error> for FrontierError {
    fn from(e: rusqlite::Error) -> Self {
        FrontierError::Sqlite(e)
    }
}

type Result<T> = std::result::Result<T, FrontierError>;

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

    fn parse(s: &str) -> UrlState {
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
    fn as_str(self) -> &'static str {
        match self {
            IndexOp::Upsert => "upsert",
            IndexOp::Delete => "delete",
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

/// How many suggested seeds may wait for a crawl at once: the frontend lets strangers suggest.
pub const MAX_WAITING_SEEDS: usize = 10_000;

/// A connection to the crawl database.
pub struct Frontier {
    conn: Connection,
    host_ids: HashMap<String, i64>,
    /// Ids of URLs seen recently: a page's links mostly point to URLs already known, and this
    /// saves the lookup. Bounded by [`URL_CACHE_ENTRIES`]; emptied when full.
    url_ids: HashMap<String, i64>,
}

/// How many URL ids [`Frontier`] keeps in memory at most.
const URL_CACHE_ENTRIES: usize = 200_000;

/// Redirects followed from a URL to the page it stands for (a crawl follows at most five).
const MAX_REDIRECT_CHAIN: usize = 8;

impl Frontier {
    /// Opens (creating or upgrading if needed) the database at `path` for a crawl.
    pub fn open(path: &Path) -> Result<Self> {
        let mut conn = Connection::open(path)?;
        conn.busy_timeout(Duration::from_secs(30))?;
        // WAL lets readers work beside the crawl; NORMAL sync is safe against process crashes
        // (kill -9) and loses at most the last transactions on power loss, never consistency.
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        // Fewer, larger checkpoints (each one syncs the database file) and a bigger page cache:
        // a crawl writes small rows at a high rate.
        conn.pragma_update(None, "wal_autocheckpoint", 8192)?;
        conn.pragma_update(None, "cache_size", -65536)?;
        conn.pragma_update(None, "temp_store", "MEMORY")?;
        migrate::prepare(&mut conn)?;
        Ok(Frontier {
            conn,
            host_ids: HashMap::new(),
            url_ids: HashMap::new(),
        })
    }

    /// Opens an existing database for reading only (`stats`, `backlinks`, `serve`), writing
    /// nothing at all, so that it works on a read-only mount or as a user who may only read.
    ///
    /// SQLite's `mode=ro` alone is not enough: a reader of a WAL database creates the `-wal`
    /// and `-shm` files when they are missing (and leaves them behind), and cannot open the
    /// database where it may not create them. So: while a `-wal` file exists, a crawl is
    /// writing (or was, until it was killed), and the reader joins it through the shared-memory
    /// file (`mode=ro`; SQLite opens that file read-only where it may not write it). Without
    /// one, every change is in the database file itself, and it is opened `immutable`: no
    /// locks, no side files. A crawl starting meanwhile writes to a new `-wal` file, not to
    /// the database file, until its first checkpoint thousands of pages later: far beyond one
    /// read. A database that exists but cannot be read is [`FrontierError::Unreadable`] (with
    /// the reason, e.g. permission denied), never [`FrontierError::Missing`].
    pub fn open_read_only(path: &Path) -> Result<Self> {
        let unreadable = |e| FrontierError::Unreadable(path.to_path_buf(), e);
        // `Path::exists` says false for a directory the user may not enter; the error itself
        // tells "missing" from "not allowed".
        match std::fs::metadata(path) {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(FrontierError::Missing(path.to_path_buf()))
            }
            Err(e) => return Err(unreadable(e)),
        }
        // A file the user may not read: say so (SQLite would only say it cannot open it).
        // access(2) rather than opening the file: closing any descriptor of a file drops every
        // POSIX lock this process holds on it, including those of SQLite's other connections.
        #[cfg(unix)]
        {
            use std::os::unix::ffi::OsStrExt;
            let c_path = std::ffi::CString::new(path.as_os_str().as_bytes()).map_err(|e| {
                unreadable(std::io::Error::new(std::io::ErrorKind::InvalidInput, e))
            })?;
            // SAFETY: access(2) reads the NUL-terminated path we own; nothing else.
            if unsafe { libc::access(c_path.as_ptr(), libc::R_OK) } != 0 {
                return Err(unreadable(std::io::Error::last_os_error()));
            }
        }
        let mut wal = path.as_os_str().to_owned();
        wal.push("-wal");
        let writing = match std::fs::metadata(&wal) {
            Ok(_) => true,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
            Err(e) => return Err(unreadable(e)),
        };
        // A URI names the file: its bytes outside the unreserved set are percent-encoded.
        let mut uri = String::from("file:");
        for &b in path.as_os_str().as_encoded_bytes() {
            if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
                uri.push(char::from(b));
            } else {
                uri.push_str(&format!("%{b:02X}"));
            }
        }
        uri.push_str(if writing {
            "?mode=ro"
        } else {
            "?mode=ro&immutable=1"
        });
        let conn = Connection::open_with_flags(
            &uri,
            OpenFlags::SQLITE_OPEN_READ_ONLY
                | OpenFlags::SQLITE_OPEN_URI
                | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        conn.busy_timeout(Duration::from_secs(30))?;
        conn.pragma_update(None, "query_only", true)?;
        if !migrate::check(&conn)? {
            return Err(FrontierError::Missing(path.to_path_buf()));
        }
        Ok(Frontier {
            conn,
            host_ids: HashMap::new(),
            url_ids: HashMap::new(),
        })
    }

    /// Brings the database in line with the index after a previous crawl stopped, however it
    /// stopped. Index operations held by commit `committed_seq` (the payload of the index's last
    /// commit) are applied. The others never reached the index: their URLs come due at `now`
    /// and lose their content hash, so the next visit redoes the operation (an unchanged body
    /// would otherwise skip it). Claims and leases of the dead crawl are let go. Returns how
    /// many operations were confirmed and how many will be redone.
    pub fn recover(&mut self, committed_seq: u64, now: i64) -> Result<(usize, usize)> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let confirmed = confirm_commit(&tx, committed_seq)?;
        // A page reached through a temporary redirect is indexed under the URL that redirected:
        // the redirect's target is the one whose visit redoes the upsert. (No index on
        // `alias_of`: the scan only happens after a crash that lost an upsert.)
        let lost_upserts: bool = tx.query_row(
            "SELECT EXISTS (SELECT 1 FROM urls WHERE index_op = 'upsert')",
            [],
            |r| r.get(0),
        )?;
        if lost_upserts {
            tx.execute(
                "UPDATE urls SET content_hash = NULL, due_at = ?1, claimed = 1
                 WHERE alias_of IN (SELECT id FROM urls WHERE index_op = 'upsert')",
                [now],
            )?;
        }
        // `claimed = 1` marks them for `release_all` below, which makes their capsules due.
        let redone = tx.execute(
            "UPDATE urls SET
                 state = CASE WHEN index_op = 'upsert' AND in_index = 0 THEN 'new' ELSE state END,
                 content_hash = CASE WHEN index_op = 'upsert' THEN NULL ELSE content_hash END,
                 index_op = NULL, batch = NULL, due_at = ?1, claimed = 1
             WHERE index_op IS NOT NULL",
            [now],
        )?;
        claim::release_all(&tx)?;
        tx.commit()?;
        Ok((confirmed, redone))
    }

    /// Ends a run: URLs claimed or visited in it become claimable again (when due) and every
    /// capsule lease is let go.
    pub fn end_run(&mut self) -> Result<()> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        claim::release_all(&tx)?;
        tx.commit()?;
        Ok(())
    }

    /// Adds a seed URL at depth 0, due now. Returns true when it was not known before.
    pub fn add_seed(&mut self, url: &str, host: &str, now: i64) -> Result<bool> {
        let mut batch = self.batch(now)?;
        let prio = url::Url::parse(url)
            .map(|u| crate::revisit::Priority::of(&u, false, false))
            .unwrap_or(crate::revisit::Priority::Fresh);
        let seed = NewUrl {
            url,
            host,
            depth: 0,
            hops: 0,
            from: None,
            alias_of: None,
            prio,
        };
        let added = batch
            .ensure_url(&seed, None, u64::MAX)?
            .is_some_and(|(_, new)| new);
        batch.commit()?;
        Ok(added)
    }

    /// Records a seed someone suggested (`source`: `cli` or `serve`): the URL joins the frontier
    /// if unknown, and is due at once unless it is excluded or gone for good. At most
    /// [`MAX_WAITING_SEEDS`] suggestions wait for a crawl at a time.
    pub fn suggest_seed(
        &mut self,
        url: &str,
        host: &str,
        source: &str,
        now: i64,
    ) -> Result<Suggested> {
        let waiting: i64 = self.conn.query_row(
            "SELECT COUNT(*) FROM seeds s JOIN urls u ON u.url = s.url WHERE u.state = 'new'",
            [],
            |r| r.get(0),
        )?;
        let known_seed: bool = self.conn.query_row(
            "SELECT EXISTS (SELECT 1 FROM seeds WHERE url = ?1)",
            [url],
            |r| r.get(0),
        )?;
        if !known_seed && waiting as usize >= MAX_WAITING_SEEDS {
            return Ok(Suggested::QueueFull);
        }
        let added = self.add_seed(url, host, now)?;
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute(
            "INSERT OR IGNORE INTO seeds(url, added_at, source) VALUES (?1, ?2, ?3)",
            params![url, now, source],
        )?;
        tx.execute(
            "UPDATE urls SET due_at = ?2 WHERE url = ?1 AND due_at > ?2",
            params![url, now],
        )?;
        tx.execute(
            "UPDATE hosts SET next_due = ?2
             WHERE id = (SELECT host_id FROM urls WHERE url = ?1 AND due_at IS NOT NULL)
               AND (next_due IS NULL OR next_due > ?2)",
            params![url, now],
        )?;
        tx.commit()?;
        Ok(if added {
            Suggested::New
        } else if known_seed {
            Suggested::AlreadySuggested
        } else {
            Suggested::Known
        })
    }

    /// The seeds people suggested, newest first, with where each URL stands.
    pub fn suggested_seeds(&self) -> Result<Vec<SuggestedSeed>> {
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

    /// Number of URLs known.
    pub fn url_count(&self) -> Result<u64> {
        Ok(self
            .conn
            .query_row("SELECT COUNT(*) FROM urls", [], |r| r.get::<_, i64>(0))? as u64)
    }

    /// The cached robots.txt of a capsule, if it was ever fetched.
    pub fn robots(&self, host_id: i64) -> Result<Option<CachedRobots>> {
        let row = self
            .conn
            .query_row(
                "SELECT robots_status, robots_txt, robots_fetched_at FROM hosts
                 WHERE id = ?1 AND robots_status IS NOT NULL",
                [host_id],
                |r| {
                    Ok(CachedRobots {
                        status: r.get::<_, i64>(0)?.clamp(0, 99) as u8,
                        text: r.get(1)?,
                        fetched_at: r.get(2)?,
                    })
                },
            )
            .optional()?;
        Ok(row)
    }

    /// Starts a write transaction; `now` is the time new URLs come due.
    pub fn batch(&mut self, now: i64) -> Result<Batch<'_>> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        if self.url_ids.len() > URL_CACHE_ENTRIES {
            self.url_ids.clear();
        }
        Ok(Batch::new(tx, &mut self.host_ids, &mut self.url_ids, now))
    }

    /// Tags URLs whose index operation is about to be committed with the commit's number.
    pub fn assign_batch(&mut self, url_ids: &[i64], seq: u64) -> Result<()> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        {
            let mut tag = tx.prepare_cached(
                "UPDATE urls SET batch = ?2 WHERE id = ?1 AND index_op IS NOT NULL",
            )?;
            for id in url_ids {
                tag.execute(params![id, seq as i64])?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// Confirms that the index commit `seq` (and every earlier one) has happened.
    pub fn mark_committed(&mut self, seq: u64) -> Result<usize> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let confirmed = confirm_commit(&tx, seq)?;
        tx.commit()?;
        Ok(confirmed)
    }

    /// Stores a free-form fact about the crawl (last crawl times and the like).
    pub fn set_meta(&self, key: &str, value: &str) -> Result<()> {
        self.conn.execute(
            "INSERT INTO meta(key, value) VALUES (?1, ?2)
             ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            params![key, value],
        )?;
        Ok(())
    }

    pub fn meta(&self, key: &str) -> Result<Option<String>> {
        Ok(self
            .conn
            .query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0))
            .optional()?)
    }

    /// Every URL in `state`, sorted.
    pub fn urls_in_state(&self, state: UrlState) -> Result<Vec<String>> {
        self.strings(
            "SELECT url FROM urls WHERE state = ?1 ORDER BY url",
            [state.as_str()],
        )
    }

    /// Every URL the index holds a document under, sorted.
    pub fn indexed_urls(&self) -> Result<Vec<String>> {
        self.strings("SELECT url FROM urls WHERE in_index = 1 ORDER BY url", [])
    }

    fn strings<P: rusqlite::Params>(&self, sql: &str, params: P) -> Result<Vec<String>> {
        let mut stmt = self.conn.prepare(sql)?;
        let rows = stmt.query_map(params, |r| r.get(0))?;
        Ok(rows.collect::<std::result::Result<_, _>>()?)
    }

    /// Up to `limit` pages whose anchors changed, after the URL id `after`, each with the
    /// indexed page it stands for (if any): the URL itself when it is in the index, else the
    /// page its redirects lead to.
    pub fn anchor_updates(&self, after: i64, limit: usize) -> Result<Vec<AnchorUpdate>> {
        let ids: Vec<i64> = {
            let mut stmt = self.conn.prepare_cached(
                "SELECT url_id FROM anchor_updates WHERE url_id > ?1 ORDER BY url_id LIMIT ?2",
            )?;
            let rows = stmt.query_map(params![after, limit as i64], |r| r.get(0))?;
            rows.collect::<std::result::Result<_, _>>()?
        };
        let mut updates = Vec::with_capacity(ids.len());
        for dirty_id in ids {
            updates.push(AnchorUpdate {
                dirty_id,
                page: self.indexed_page_for(dirty_id)?,
            });
        }
        Ok(updates)
    }

    fn indexed_page_for(&self, mut id: i64) -> Result<Option<IndexedPage>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT url, in_index = 1 AND index_op IS NULL, redirect_to, status, mime,
                    content_hash IS NULL
             FROM urls WHERE id = ?1",
        )?;
        for _ in 0..=MAX_REDIRECT_CHAIN {
            let row = stmt
                .query_row([id], |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, bool>(1)?,
                        r.get::<_, Option<i64>>(2)?,
                        r.get::<_, Option<i64>>(3)?,
                        r.get::<_, Option<String>>(4)?,
                        r.get::<_, bool>(5)?,
                    ))
                })
                .optional()?;
            let Some((url, indexed, redirect_to, status, mime, no_hash)) = row else {
                return Ok(None);
            };
            if indexed {
                let header_only = no_hash
                    && !mime
                        .as_deref()
                        .is_some_and(|m| m.to_ascii_lowercase().starts_with("text/"));
                return Ok(Some(IndexedPage {
                    id,
                    url,
                    mime,
                    header_only,
                }));
            }
            // Only a permanent redirect hands its inbound labels on (see REDIRECT_CHAIN).
            match (status, redirect_to) {
                (Some(30..=39), Some(next)) => id = next,
                _ => return Ok(None),
            }
        }
        Ok(None)
    }

    /// Forgets anchor updates once the documents they asked for are committed.
    pub fn clear_anchor_updates(&mut self, ids: &[i64]) -> Result<()> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        {
            let mut del = tx.prepare_cached("DELETE FROM anchor_updates WHERE url_id = ?1")?;
            for id in ids {
                del.execute([id])?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// Forgets every anchor update: a rebuilt index wrote every document with its anchors.
    pub fn clear_all_anchor_updates(&mut self) -> Result<()> {
        self.conn.execute("DELETE FROM anchor_updates", [])?;
        Ok(())
    }

    /// The labels of the links on a page (its own, not those pointing to it), distinct.
    pub fn own_labels(&self, id: i64) -> Result<Vec<String>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT DISTINCT label FROM links WHERE source = ?1 AND label != '' ORDER BY label",
        )?;
        let rows = stmt.query_map([id], |r| r.get(0))?;
        Ok(rows.collect::<std::result::Result<_, _>>()?)
    }

    /// The distinct labels of the links that point to a URL, or to a URL that redirects to it
    /// (`=> /book The Book` names `/book/`), at most `limit` of them, from pages that are not
    /// being removed.
    pub fn inbound_labels(&self, id: i64, limit: usize) -> Result<Vec<String>> {
        inbound_labels(&self.conn, id, limit)
    }
}

fn inbound_labels(conn: &Connection, id: i64, limit: usize) -> Result<Vec<String>> {
    let mut stmt = conn.prepare_cached(&format!(
        "WITH RECURSIVE {REDIRECT_CHAIN} \
         SELECT DISTINCT label FROM links WHERE target IN chain AND label != '' \
         ORDER BY label LIMIT ?2"
    ))?;
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let rows = stmt.query_map(params![id, limit], |r| r.get(0))?;
    Ok(rows.collect::<std::result::Result<_, _>>()?)
}

/// Applies the index operations of commits up to `seq`.
fn confirm_commit(tx: &rusqlite::Transaction<'_>, seq: u64) -> Result<usize> {
    Ok(tx.execute(
        "UPDATE urls SET in_index = (index_op = 'upsert'), index_op = NULL, batch = NULL
         WHERE index_op IS NOT NULL AND batch <= ?1",
        [seq as i64],
    )?)
}

#[cfg(test)]
mod tests;
