//! What `geode serve` reads: the search index and the crawl database of a data directory, read
//! live while a crawl may be writing them, and a short-lived cache of the statistics.
//!
//! Every method blocks (Tantivy searches, SQLite queries): `serve/mod.rs` calls them on the
//! blocking pool, a bounded number at a time. Readers only: nothing here writes.
//!
//! The index reader follows new commits by itself (Tantivy reloads on commit). A data directory
//! whose index is deleted and made again by a fresh crawl is noticed by the identity (device and
//! inode, birth time) of its `tantivy/` directory, checked at most once per [`REOPEN_CHECK`], and an index
//! that appears after the server started is opened then; a search that fails for any reason
//! other than the query reopens the index once and tries again. The crawl database is opened per
//! call (a read-only SQLite open is cheap), so it has no stale state to follow.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::frontier::{Backlink, Frontier, FrontierError, KnownHost, Location, Stats, Suggested};
use crate::index::{IndexError, SearchIndex, SearchResults};

/// How often at most the index directory is checked for replacement (or first appearance).
pub const REOPEN_CHECK: Duration = Duration::from_secs(1);

/// How long statistics and the list of capsules are reused at least before being counted again:
/// counting scans the crawl database, and the home page shows them on every visit.
pub const STATS_TTL: Duration = Duration::from_secs(10);

/// A count is reused for this many times as long as it took, when that is longer than
/// [`STATS_TTL`]: counting then takes at most a twentieth of the frontend's time. At ten million
/// URLs a count takes seconds (bench-scale's database: 4.3 s for `geode stats`).
const STATS_REUSE_FACTOR: u32 = 20;

/// The longest a snapshot is reused, however slow its count.
const STATS_MAX_REUSE: Duration = Duration::from_secs(3600);

/// How long a snapshot that took `took` to count is reused.
fn reuse_for(took: Duration) -> Duration {
    STATS_TTL
        .max(took.saturating_mul(STATS_REUSE_FACTOR))
        .min(STATS_MAX_REUSE)
}

/// What a search came to.
#[derive(Debug)]
pub enum SearchOutcome {
    Found {
        results: SearchResults,
        elapsed: Duration,
    },
    /// No index in the data directory (yet).
    NoIndex,
    /// The query is malformed; the message says why.
    BadQuery(String),
    /// The index failed; logged, and answered as a temporary failure.
    Failed(String),
}

/// Counts read from the crawl database and the index at one moment.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// `None` when there is no crawl database yet.
    pub stats: Option<Stats>,
    pub hosts: Vec<KnownHost>,
    /// Documents in the index.
    pub documents: u64,
}

/// What the crawl database says about links to one URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Backlinks {
    /// Whether the URL is in the crawl database. Only then may a page show it as a link: a
    /// URL a visitor typed is the visitor's text, and geode's pages do not turn it into a link
    /// on their behalf.
    pub known: bool,
    pub links: Vec<Backlink>,
}

/// The readers of one data directory (and of a shared crawl's store, when given).
pub struct Backend {
    data_dir: PathBuf,
    /// The crawl state: the data directory's SQLite file, or the shared crawl on PostgreSQL
    /// whose index `data_dir` holds (statistics, backlinks and suggested seeds go there).
    store: Location,
    index: Mutex<IndexSlot>,
    /// The last snapshot and until when it is reused ([`reuse_for`]).
    snapshot: Mutex<Option<(Instant, Arc<Snapshot>)>>,
    /// Held by the one thread counting a new snapshot.
    refreshing: Mutex<()>,
    /// The model and vectors searches also rank by, if any.
    semantic: Option<crate::embed::Semantic>,
}

#[derive(Default)]
struct IndexSlot {
    index: Option<Arc<SearchIndex>>,
    /// Identity of the directory `index` was opened from.
    identity: Option<DirIdentity>,
    checked: Option<Instant>,
}

/// Device, inode and creation time of a directory: a directory deleted and made again differs
/// in at least one of them (inodes are reused, birth times are not).
type DirIdentity = (u64, u64, Option<std::time::SystemTime>);

impl Backend {
    pub fn new(data_dir: &Path, shared: Option<Location>) -> Backend {
        Backend {
            data_dir: data_dir.to_path_buf(),
            store: shared.unwrap_or_else(|| Location::data_dir(data_dir)),
            index: Mutex::new(IndexSlot::default()),
            snapshot: Mutex::new(None),
            refreshing: Mutex::new(()),
            semantic: None,
        }
    }

    /// Searches also rank by meaning, with this model and its vectors.
    pub fn with_semantic(mut self, semantic: Option<crate::embed::Semantic>) -> Backend {
        self.semantic = semantic;
        self
    }

    /// A reader of the crawl state.
    fn reader(&self) -> Result<Box<dyn Frontier>, FrontierError> {
        self.store.open_read_only()
    }

    /// The current index, opened or reopened as the module doc says; `Ok(None)` when absent.
    fn index(&self, force_reopen: bool) -> Result<Option<Arc<SearchIndex>>, IndexError> {
        let dir = crate::datadir::index_path(&self.data_dir);
        // A poisoned lock only means a panic while swapping an Arc; the slot is still coherent.
        let mut slot = self.index.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        let due = slot
            .checked
            .map_or(true, |at| now.saturating_duration_since(at) >= REOPEN_CHECK);
        if !force_reopen && !due {
            return Ok(slot.index.clone());
        }
        slot.checked = Some(now);
        let identity = dir_identity(&dir);
        let replaced = slot.index.is_some() && identity != slot.identity;
        if slot.index.is_some() && !replaced && !force_reopen {
            return Ok(slot.index.clone());
        }
        if replaced {
            tracing::info!("the index in {} was replaced; reopening it", dir.display());
        }
        match SearchIndex::open(&dir) {
            Ok(index) => {
                slot.index = Some(Arc::new(index));
                slot.identity = identity;
                Ok(slot.index.clone())
            }
            Err(IndexError::Missing(_)) => {
                slot.index = None;
                slot.identity = None;
                Ok(None)
            }
            Err(e) => {
                slot.index = None;
                slot.identity = None;
                Err(e)
            }
        }
    }

    /// Runs a search, timing it.
    pub fn search(&self, query: &str, limit: usize, offset: usize) -> SearchOutcome {
        let mut last_error = String::new();
        for attempt in 0..2 {
            let index = match self.index(attempt > 0) {
                Ok(Some(index)) => index,
                Ok(None) => return SearchOutcome::NoIndex,
                Err(e) => {
                    last_error = e.to_string();
                    continue;
                }
            };
            let started = Instant::now();
            match self.search_in(&index, query, limit, offset) {
                Ok(results) => {
                    return SearchOutcome::Found {
                        results,
                        elapsed: started.elapsed(),
                    }
                }
                Err(IndexError::Query(message)) => return SearchOutcome::BadQuery(message),
                Err(e) => {
                    tracing::warn!("search for {query:?} failed: {e}; reopening the index");
                    last_error = e.to_string();
                }
            }
        }
        SearchOutcome::Failed(last_error)
    }

    /// A search in `index`, by meaning too when a model is at hand and the query is one that
    /// meaning may answer. A model that fails on a query leaves it to words alone.
    fn search_in(
        &self,
        index: &SearchIndex,
        query: &str,
        limit: usize,
        offset: usize,
    ) -> Result<crate::index::SearchResults, IndexError> {
        let parsed = crate::query::parse(query).map_err(|e| IndexError::Query(e.to_string()))?;
        let options = crate::index::SearchOptions {
            limit,
            offset,
            ..crate::index::SearchOptions::default()
        };
        let near = match &self.semantic {
            Some(semantic) => match semantic.neighbours(index, query, &parsed, &options) {
                Ok(near) => near,
                Err(e) => {
                    tracing::warn!("searching {query:?} by words alone: {e}");
                    None
                }
            },
            None => None,
        };
        index.search_hybrid(query, &parsed, &options, near.as_deref())
    }

    /// The index's version ([`SearchIndex::version`]); `None` without a readable index.
    /// With a model, the vectors' state counts too: `geode embed` changes what a search finds.
    pub fn version(&self) -> Option<u64> {
        match self.index(false) {
            Ok(Some(index)) => Some(match &self.semantic {
                Some(semantic) => index.version() ^ semantic.version().rotate_left(17),
                None => index.version(),
            }),
            _ => None,
        }
    }

    /// Documents in the index now (0 without one).
    pub fn documents(&self) -> u64 {
        match self.index(false) {
            Ok(Some(index)) => index.num_docs(),
            _ => 0,
        }
    }

    /// Statistics and capsules, at most [`STATS_TTL`] old, or older when counting is slow
    /// ([`reuse_for`]). One thread counts at a time; while it does, the others get the
    /// previous snapshot (or wait for the first one), so a burst of visits to the home page
    /// neither counts many times nor holds many blocking slots.
    pub fn snapshot(&self, now_unix: i64) -> Result<Arc<Snapshot>, FrontierError> {
        let cached = || {
            self.snapshot
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone()
        };
        let stale = match cached() {
            Some((until, snapshot)) if Instant::now() < until => return Ok(snapshot),
            other => other.map(|(_, snapshot)| snapshot),
        };
        let _counting = match (self.refreshing.try_lock(), stale) {
            (Ok(guard), _) => guard,
            (Err(std::sync::TryLockError::Poisoned(p)), _) => p.into_inner(),
            (Err(std::sync::TryLockError::WouldBlock), Some(stale)) => return Ok(stale),
            (Err(std::sync::TryLockError::WouldBlock), None) => {
                let guard = self.refreshing.lock().unwrap_or_else(|p| p.into_inner());
                if let Some((_, snapshot)) = cached() {
                    return Ok(snapshot);
                }
                guard
            }
        };
        let started = Instant::now();
        let documents = self.documents();
        let snapshot = match self.reader() {
            Ok(frontier) => Snapshot {
                stats: Some(frontier.stats(now_unix)?),
                hosts: frontier.known_hosts()?,
                documents,
            },
            Err(FrontierError::Missing(_)) => Snapshot {
                documents,
                ..Snapshot::default()
            },
            Err(e) => return Err(e),
        };
        let snapshot = Arc::new(snapshot);
        let now = Instant::now();
        let until = now.checked_add(reuse_for(started.elapsed())).unwrap_or(now);
        *self.snapshot.lock().unwrap_or_else(|p| p.into_inner()) =
            Some((until, Arc::clone(&snapshot)));
        Ok(snapshot)
    }

    /// The pages linking to `url` (normalised), and whether the crawl database knows `url` at
    /// all; `Ok(None)` without a crawl database.
    /// Records a seed a visitor suggested, in the crawl database (created if there is none
    /// yet): the one write `geode serve` makes to it.
    pub fn suggest_seed(&self, url: &url::Url) -> Result<Suggested, FrontierError> {
        let mut frontier = self.store.open()?;
        frontier.suggest_seed(
            url.as_str(),
            &crate::urlnorm::capsule_key(url),
            "serve",
            crate::clock::unix_now(),
        )
    }

    pub fn backlinks(&self, url: &str) -> Result<Option<Backlinks>, FrontierError> {
        match self.reader() {
            Ok(frontier) => Ok(Some(Backlinks {
                known: frontier.knows(url)?,
                links: frontier.backlinks(url)?,
            })),
            Err(FrontierError::Missing(_)) => Ok(None),
            Err(e) => Err(e),
        }
    }
}

#[cfg(unix)]
fn dir_identity(dir: &Path) -> Option<DirIdentity> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(dir)
        .ok()
        .map(|m| (m.dev(), m.ino(), m.created().ok()))
}

#[cfg(not(unix))]
fn dir_identity(dir: &Path) -> Option<DirIdentity> {
    // Without inodes, only appearance and disappearance are noticed.
    std::fs::metadata(dir)
        .ok()
        .map(|m| (0, 0, m.created().ok()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::{Indexer, PageDoc};

    fn page(url: &str, body: &str) -> PageDoc {
        PageDoc {
            url: url.to_string(),
            host: "a.test".to_string(),
            title: "T".to_string(),
            body: body.to_string(),
            mime: "text/gemini".to_string(),
            size: body.len() as u64,
            ..PageDoc::default()
        }
    }

    fn write_index(data: &Path, pages: &[PageDoc]) {
        let mut ix = Indexer::open_or_create(&crate::datadir::index_path(data)).expect("index");
        for p in pages {
            ix.upsert(p).expect("upsert");
        }
        ix.commit(1).expect("commit");
    }

    fn found(outcome: SearchOutcome) -> Vec<String> {
        match outcome {
            SearchOutcome::Found { results, .. } => {
                results.hits.into_iter().map(|h| h.url).collect()
            }
            other => panic!("expected results, got {other:?}"),
        }
    }

    #[test]
    fn an_index_that_appears_or_is_replaced_is_picked_up() {
        let tmp = tempfile::tempdir().unwrap();
        let backend = Backend::new(tmp.path(), None);
        assert!(matches!(
            backend.search("kettle", 10, 0),
            SearchOutcome::NoIndex
        ));
        assert_eq!(backend.documents(), 0);

        write_index(tmp.path(), &[page("gemini://a.test/", "kettle")]);
        std::thread::sleep(REOPEN_CHECK);
        assert_eq!(found(backend.search("kettle", 10, 0)), ["gemini://a.test/"]);

        // A fresh crawl deletes and rebuilds the index under the running server.
        std::fs::remove_dir_all(crate::datadir::index_path(tmp.path())).unwrap();
        write_index(tmp.path(), &[page("gemini://b.test/", "teapot")]);
        std::thread::sleep(REOPEN_CHECK);
        assert_eq!(found(backend.search("teapot", 10, 0)), ["gemini://b.test/"]);
        assert!(found(backend.search("kettle", 10, 0)).is_empty());
    }

    #[test]
    fn malformed_queries_are_reported_not_failed() {
        let tmp = tempfile::tempdir().unwrap();
        write_index(tmp.path(), &[page("gemini://a.test/", "kettle")]);
        let backend = Backend::new(tmp.path(), None);
        assert!(matches!(
            backend.search("\"unbalanced", 10, 0),
            SearchOutcome::BadQuery(m) if !m.is_empty()
        ));
    }

    #[test]
    fn a_data_directory_without_a_crawl_database_has_empty_statistics() {
        let tmp = tempfile::tempdir().unwrap();
        let backend = Backend::new(tmp.path(), None);
        let snapshot = backend.snapshot(0).unwrap();
        assert!(snapshot.stats.is_none());
        assert!(snapshot.hosts.is_empty());
        // Counted once per STATS_TTL: the next visit gets the same snapshot.
        assert!(Arc::ptr_eq(&snapshot, &backend.snapshot(0).unwrap()));
        assert_eq!(backend.backlinks("gemini://a.test/").unwrap(), None);
    }

    #[test]
    fn a_slow_count_is_reused_longer() {
        assert_eq!(reuse_for(Duration::from_millis(20)), STATS_TTL);
        assert_eq!(reuse_for(Duration::from_secs(4)), Duration::from_secs(80));
        assert_eq!(reuse_for(Duration::MAX), STATS_MAX_REUSE);
    }
}
