//! The crawl frontier and all crawl state, behind two traits: [`Frontier`] (a connection to the
//! crawl's store) and [`Batch`] (one write transaction of many results). The crawl, the indexing
//! thread and the commands speak only these traits and the values in `types.rs`, `archive.rs`
//! and `stats.rs`; a store implements them. This is the only module that speaks SQL.
//!
//! Two stores: SQLite ([`sqlite`]), the default, embedded in the data directory
//! (`crawl.sqlite`), for one crawler; and PostgreSQL ([`postgres`]), one database that several
//! crawler processes share, leasing work from it.
//!
//! **What every store keeps.** Every known URL with what its last visit found and when it is
//! due again, capsules (robots.txt cache, certificate pins, back-off, leases), the link graph,
//! anchor updates, suggested seeds and the archive of responses.
//!
//! **The index.** `in_index` says whether the Tantivy index holds a document under a URL. A crawl
//! that sends the index an upsert or a delete records it as the URL's `index_op`; the indexing
//! thread tags those URLs with the commit sequence number before committing Tantivy
//! ([`Frontier::assign_batch`]) and applies them to `in_index` after ([`Frontier::mark_committed`]).
//! After a crash, [`Frontier::recover`] is given the sequence number stored in the index's last
//! commit: operations it holds are applied, the others are undone by visiting their URLs again.
//! So `in_index` is true exactly when the index holds the page.
//!
//! **The schedule.** Each URL has a due time (the revisit policy is [`crate::revisit`]'s) and a
//! claim priority. A crawl leases whole capsules ([`Frontier::claim_capsules`]): a leased
//! capsule's due URLs are claimed a few at a time, hubs first; a URL visited in a run is not
//! claimed again in that run; leases and claims are let go at the end of a run, and by
//! [`Frontier::recover`] after a crash.

pub mod archive;
mod graph;
pub mod postgres;
pub mod sqlite;
mod stats;
mod types;

use std::path::Path;

use crate::rank::LinkGraph;

pub use archive::{
    ArchiveRecord, ArchiveStats, ArchivedBody, ArchivedResponse, IndexedContent, PendingOp,
    UrlResponse,
};
pub use postgres::{PgBatch, PgFrontier, PgStore};
pub use sqlite::{SqliteBatch, SqliteFrontier};
pub use stats::{
    Backlink, CertificateChange, HeldCapsule, KnownHost, Schedule, Stats, UrlDetails,
    MAX_CERTIFICATE_CHANGES, MAX_HELD_LISTED,
};
pub use types::{
    AnchorUpdate, CachedRobots, Canonical, FetchResult, IndexOp, IndexedPage, LinkOut, LinkReport,
    NewUrl, Pin, Prior, QueuedUrl, Standing, Stored, Suggested, SuggestedSeed, UrlState,
    VisitRecord,
};

/// Errors of the crawl database. The store's error is shown in the message, so it is not also
/// a `source()` (which would print it twice in a `{:#}` chain).
#[derive(Debug, thiserror::Error)]
pub enum FrontierError {
    #[error("crawl database: {0}")]
    Sqlite(rusqlite::Error),
    #[error("crawl database on PostgreSQL: {0}")]
    Postgres(String),
    /// The database ended a transaction to break a deadlock with another session, or because
    /// it could not be serialized with one (SQLSTATE 40P01, 40001): run again, it may succeed.
    #[error(
        "crawl database on PostgreSQL: {0} (the database ended the transaction to let another \
         session's go on)"
    )]
    PostgresConflict(String),
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
    /// The directory that is to hold the database could not be made.
    #[error("cannot create the data directory {0}: {1}")]
    DataDir(std::path::PathBuf, std::io::Error),
    /// The database (or the directory holding it) exists but may not be read.
    #[error("cannot read the crawl database at {0}: {1}")]
    Unreadable(std::path::PathBuf, std::io::Error),
}

impl From<rusqlite::Error> for FrontierError {
    fn from(e: rusqlite::Error) -> Self {
        FrontierError::Sqlite(e)
    }
}

pub type Result<T> = std::result::Result<T, FrontierError>;

/// How many suggested seeds may wait for a crawl at once: the frontend lets strangers suggest.
pub const MAX_WAITING_SEEDS: usize = 10_000;

/// Redirects followed from a URL to the page it stands for (a crawl follows at most five).
const MAX_REDIRECT_CHAIN: usize = 8;

/// How long a PostgreSQL crawler's leases last unless renewed, where no `--lease` says
/// otherwise (readers and one-off writers take none that matter).
pub const DEFAULT_LEASE: std::time::Duration = std::time::Duration::from_secs(300);

/// How long a page's new document may wait for the rest of its capsule before it is indexed:
/// a document written at once is written again when the pages fetched after it, which link to
/// it, bring its anchors. A crawler of its own index holds documents until it lets their
/// capsule go (`crawl/hold.rs`); the index writer of a shared store leaves alone the pages of
/// a capsule a live crawler leases (`IndexLog::pending_index_ops`); neither waits longer.
pub const HOLD_MAX_AGE: std::time::Duration = std::time::Duration::from_secs(600);

/// What a connection to a PostgreSQL store does to its schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Schema {
    /// Creates or upgrades it: crawlers and the commands that add seeds.
    Prepare,
    /// Refuses a missing or older one: readers, which never change a shared schema.
    Expect,
}

/// Where the crawl state is kept: the one way the rest of geode opens a store.
#[derive(Debug, Clone)]
pub enum Location {
    /// The SQLite file of a data directory (`crawl.sqlite`).
    Sqlite(std::path::PathBuf),
    /// A PostgreSQL database shared by several crawlers, through this crawler's pool.
    Postgres(PgStore),
}

impl Location {
    /// The SQLite store of the data directory `dir`.
    pub fn data_dir(dir: &Path) -> Location {
        Location::Sqlite(crate::datadir::database_path(dir))
    }

    /// Connects to the PostgreSQL store at `url` (`postgres://USER@HOST[:PORT]/DB`); this
    /// crawler's leases last `lease` unless renewed.
    pub fn postgres(url: &str, lease: std::time::Duration, schema: Schema) -> Result<Location> {
        Ok(Location::Postgres(PgStore::connect(
            url,
            lease,
            schema == Schema::Prepare,
        )?))
    }

    /// The store a command names: the PostgreSQL database at `shared` (`--frontier`) with the
    /// default lease, else the data directory's SQLite file.
    pub fn chosen(data_dir: &Path, shared: Option<&str>, schema: Schema) -> Result<Location> {
        match shared {
            Some(url) => Location::postgres(url, DEFAULT_LEASE, schema),
            None => Ok(Location::data_dir(data_dir)),
        }
    }

    /// The same store, its leases named after `id` (a crawl names itself after its data
    /// directory, so that after a crash it takes its own claims back at once). SQLite: the
    /// same (one crawler, no leases to name).
    pub fn with_crawler(self, id: &str) -> Location {
        match self {
            Location::Postgres(store) => Location::Postgres(store.with_crawler(id)),
            sqlite => sqlite,
        }
    }

    /// Opens a connection for a writer: a SQLite file (and its directory) is created or
    /// upgraded if needed; a PostgreSQL store was prepared when it connected.
    pub fn open(&self) -> Result<Box<dyn Frontier>> {
        match self {
            Location::Sqlite(path) => {
                if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                    std::fs::create_dir_all(dir)
                        .map_err(|e| FrontierError::DataDir(dir.to_path_buf(), e))?;
                }
                Ok(Box::new(SqliteFrontier::open(path)?))
            }
            Location::Postgres(store) => Ok(Box::new(store.frontier()?)),
        }
    }

    /// Opens a connection for a reader: an existing SQLite file, read-only (see
    /// [`SqliteFrontier::open_read_only`]; [`FrontierError::Missing`] when there is none); on
    /// PostgreSQL a connection like any other, whose schema was checked when it connected.
    pub fn open_read_only(&self) -> Result<Box<dyn Frontier>> {
        match self {
            Location::Sqlite(path) => Ok(Box::new(SqliteFrontier::open_read_only(path)?)),
            Location::Postgres(store) => Ok(Box::new(store.frontier()?)),
        }
    }

    /// Whether several crawlers share this store (and one index writer applies its index
    /// operations: `geode index`).
    pub fn is_shared(&self) -> bool {
        matches!(self, Location::Postgres(_))
    }
}

/// A connection to the crawl's store, as the crawl uses it: claims and leases of capsules,
/// seeds, and write transactions of results ([`Frontier::batch`]). Every method is one
/// transaction of the store or a read. The store's other callers see it through the
/// traits it builds on: [`IndexLog`] (the index's bookkeeping) and [`Reader`] (what commands
/// and the frontend read), so a `dyn Frontier` is a whole store.
pub trait Frontier: IndexLog + Reader + Send {
    /// Starts a write transaction; `now` is the time new URLs come due.
    fn batch(&mut self, now: i64) -> Result<Box<dyn Batch + '_>>;
    /// Brings the store in line with the index after a previous crawl stopped, however it
    /// stopped. Index operations held by commit `committed_seq` (the payload of the index's last
    /// commit) are applied. The others never reached the index: their URLs come due at `now`
    /// and lose their content hash, so the next visit redoes the operation. Claims and leases of
    /// the dead crawl are let go. Returns how many operations were confirmed and how many will
    /// be redone. A store shared by several crawlers (PostgreSQL) keeps no index of its own: its
    /// crawlers' recovery only lets go of their claims and leases and returns (0, 0), and the
    /// one index writer (`geode index`) settles index operations with [`IndexLog::mark_committed`].
    fn recover(&mut self, committed_seq: u64, now: i64) -> Result<(usize, usize)>;
    /// Ends a run: URLs claimed or visited in it become claimable again (when due) and every
    /// capsule lease is let go.
    fn end_run(&mut self) -> Result<()>;
    /// Whether a batch committed with [`Batch::commit_soon`] is still being committed: the
    /// frontier's next statement would wait for it. SQLite: never.
    fn committing(&self) -> bool {
        false
    }
    /// The cached robots.txt of a capsule, if it was ever fetched.
    fn robots(&self, host_id: i64) -> Result<Option<CachedRobots>>;
    /// Leases up to `capsules` capsules that have work due at `now` (earliest due first,
    /// skipping those in back-off) and claims up to `per_capsule` URLs of each. A capsule that
    /// turns out to have nothing claimable is let go at once; one that `permits` refuses (out of
    /// this run's scope) is passed over until the run ends. The URLs come grouped by capsule,
    /// with the number of capsules looked at: fewer than asked means no more are due.
    fn claim_capsules(&mut self, ask: &ClaimRequest, now: i64) -> Result<(Vec<QueuedUrl>, usize)>;
    /// Claims up to `n` more due URLs of a capsule this crawl leases.
    fn claim_more(&mut self, host_id: i64, n: usize, now: i64) -> Result<Vec<QueuedUrl>>;
    /// [`Frontier::claim_more`] for each of these capsules, their URLs capsule by capsule in
    /// the order given: in one statement, for a store that pays a round trip for each.
    fn claim_more_of(&mut self, host_ids: &[i64], n: usize, now: i64) -> Result<Vec<QueuedUrl>> {
        let mut urls = Vec::new();
        for &host_id in host_ids {
            urls.extend(self.claim_more(host_id, n, now)?);
        }
        Ok(urls)
    }
    /// Claims these URLs, if they are free and due: entries new in a feed, taken ahead of the
    /// rest of a leased capsule's queue.
    fn claim_ids(&mut self, ids: &[i64], now: i64) -> Result<Vec<QueuedUrl>>;
    /// Lets go of a capsule this crawl leased: it is claimable again when its next URL is due.
    fn release_capsule(&mut self, host_id: i64) -> Result<()>;
    /// [`Frontier::release_capsule`] of many: a store that pays a round trip a statement lets
    /// them go in one.
    fn release_capsules(&mut self, host_ids: &[i64]) -> Result<()> {
        host_ids
            .iter()
            .try_for_each(|&host_id| self.release_capsule(host_id))
    }
    /// How long after `now` a capsule that is not leased may have work to do (a retry or a
    /// revisit coming due, or a back-off ending); `None` when none ever will. A capsule that
    /// came due since the last claim gives zero, so that the crawl claims again instead of
    /// ending with work left. A shared store may answer less than a second: the time after
    /// which to look again while other crawlers work.
    fn next_wakeup(&self, now: i64) -> Result<Option<std::time::Duration>>;
    /// Leases the IP address a capsule this crawler holds resolved to, so that no two crawlers
    /// fetch from one address at once. `None`: another crawler holds it now (the capsule is
    /// then put back for a little while). `Some(wait)`: leased, and the first request to it
    /// may start only once `wait` has passed, since the crawler that held it before asked
    /// for that much (see [`Batch::hold_address`]). SQLite: always `Some(0)` (one crawler).
    fn lease_address(&mut self, ip: &str) -> Result<Option<std::time::Duration>>;
    /// [`Frontier::lease_address`] of many addresses, answered in the order given (an address
    /// named twice is answered twice).
    fn lease_addresses(&mut self, ips: &[String]) -> Result<Vec<Option<std::time::Duration>>> {
        ips.iter().map(|ip| self.lease_address(ip)).collect()
    }
    /// Lets go of an address this crawler leased and has nothing left to do at, so that
    /// another crawler with capsules there may lease it; the gap asked for there stays with
    /// the address. SQLite: nothing to do (one crawler).
    fn release_address(&mut self, ip: &str) -> Result<()> {
        let _ = ip;
        Ok(())
    }
    /// [`Frontier::release_address`] of many addresses.
    fn release_addresses(&mut self, ips: &[String]) -> Result<()> {
        ips.iter().try_for_each(|ip| self.release_address(ip))
    }
    /// What earlier runs learned of a capsule's value, for its crawl budget
    /// (`crawl::budget`).
    fn capsule_standing(&self, host_id: i64) -> Result<Standing>;
    /// What a crawl reads of the capsules it leases anew, for each of `host_ids`: its
    /// standing ([`Frontier::capsule_standing`]) and its robots.txt as cached
    /// ([`Frontier::robots`]), in one statement where that saves round trips.
    fn capsules_known(
        &self,
        host_ids: &[i64],
    ) -> Result<std::collections::HashMap<i64, (Standing, Option<CachedRobots>)>> {
        host_ids
            .iter()
            .map(|&id| Ok((id, (self.capsule_standing(id)?, self.robots(id)?))))
            .collect()
    }
    /// Records capsules' standing after a run, by capsule key: every capsule's indexed pages
    /// (capsules not listed have none), and the linkers of those listed.
    fn set_standings(&mut self, standings: &[(String, Standing)]) -> Result<()>;
    /// The capsules held back, the last time one was, for one of `reasons`.
    fn capsules_held_for(&self, reasons: &[&str]) -> Result<Vec<String>>;
    /// Keeps this crawler's leases from running out; called well within the lease while it
    /// works. Returns how many capsules it holds (SQLite: 0, its leases never run out).
    fn renew_leases(&mut self) -> Result<u64>;
    /// For a store shared by several crawlers: about once a second, renews this crawler's
    /// share of the work and adopts or gives back what keeps the shares fair (a crawler that
    /// joins gets its share while this one is busy and claims nothing). Nothing for a store of
    /// one crawler.
    fn keep_share(&mut self) -> Result<()> {
        Ok(())
    }
    /// Of the capsules and IP addresses this crawler works on, those whose lease another
    /// crawler took over: this one let its lease run out (a stalled or overloaded machine),
    /// and its queued URLs there are the other's now. SQLite: none (one crawler).
    fn lost_leases(&mut self, capsules: &[i64], ips: &[String]) -> Result<(Vec<i64>, Vec<String>)> {
        let _ = (capsules, ips);
        Ok((Vec::new(), Vec::new()))
    }
    /// Records the IP address a capsule this crawler leases resolved to. Returns whether the
    /// capsule is still this crawler's: in a store shared by several crawlers, a capsule on an
    /// address new to it belongs to whoever has that address's capsules (politeness is per
    /// address), and the crawl then puts it back for them. SQLite: always true.
    fn place_capsule(&mut self, host_id: i64, ip: &str) -> Result<bool> {
        let _ = (host_id, ip);
        Ok(true)
    }
    /// [`Frontier::place_capsule`] of many capsules (capsule id, address), answered in the
    /// order given.
    fn place_capsules(&mut self, placed: &[(i64, String)]) -> Result<Vec<bool>> {
        placed
            .iter()
            .map(|(host_id, ip)| self.place_capsule(*host_id, ip))
            .collect()
    }
    /// Stores a free-form fact about the crawl (last crawl times and the like).
    fn set_meta(&self, key: &str, value: &str) -> Result<()>;
    /// Adds a seed URL at depth 0, due now. Returns true when it was not known before.
    fn add_seed(&mut self, url: &str, host: &str, now: i64) -> Result<bool> {
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
    /// Records a seed someone suggested (bounded by [`MAX_WAITING_SEEDS`]).
    fn suggest_seed(&mut self, url: &str, host: &str, source: &str, now: i64) -> Result<Suggested>;
}

/// The index's side of the store: which index operations are on their way, confirmed or
/// undone (the commit sequence of the module doc), the anchor updates the index owes, and
/// what rebuilding or re-ranking the index reads.
pub trait IndexLog {
    /// Tags URLs whose index operation is about to be committed with the commit's number.
    fn assign_batch(&mut self, url_ids: &[i64], seq: u64) -> Result<()>;
    /// Confirms that the index commit `seq` (and every earlier one) has happened.
    fn mark_committed(&mut self, seq: u64) -> Result<usize>;
    /// Up to `limit` URLs after id `after`, in id order, whose index operation (upsert or
    /// delete) is recorded and not yet confirmed, with what the archive has of their content:
    /// the work of the one index writer of a shared store (`geode index`). A shared store
    /// leaves out the upserts of pages whose capsule a live crawler leases, fetched less than
    /// [`HOLD_MAX_AGE`] ago: their capsule's later pages bring their anchors.
    fn pending_index_ops(&self, after: i64, limit: usize) -> Result<Vec<PendingOp>>;
    /// How many pending upserts [`IndexLog::pending_index_ops`] leaves out for now (pages of
    /// capsules a live crawler leases); none in a store that holds none back.
    fn held_index_ops(&self) -> Result<u64> {
        Ok(0)
    }
    /// Up to `limit` pending anchor updates after URL id `after`, in id order.
    fn anchor_updates(&self, after: i64, limit: usize) -> Result<Vec<AnchorUpdate>>;
    /// Which of these pages have an anchor update pending: a document about to be written
    /// anew with the labels read after this owes none of them. Like
    /// [`IndexLog::anchor_updates`], a store that others write meanwhile remembers the marks
    /// read, and [`IndexLog::clear_anchor_updates`] keeps a mark made again since.
    fn anchor_marks_of(&self, ids: &[i64]) -> Result<Vec<i64>>;
    /// Forgets these anchor updates (their documents were rewritten and committed).
    fn clear_anchor_updates(&mut self, ids: &[i64]) -> Result<()>;
    /// Forgets every anchor update (the index was rebuilt from scratch).
    fn clear_all_anchor_updates(&mut self) -> Result<()>;
    /// The distinct labels of a page's own links, sorted.
    fn own_labels(&self, id: i64) -> Result<Vec<String>>;
    /// The distinct labels of the links that point to a URL or to URLs redirecting to it.
    fn inbound_labels(&self, id: i64, limit: usize) -> Result<Vec<String>>;
    /// [`IndexLog::inbound_labels`] of many URLs (each id once in the answer): a store that
    /// pays a round trip a statement answers in one.
    fn inbound_labels_of(
        &self,
        ids: &[i64],
        limit: usize,
    ) -> Result<std::collections::HashMap<i64, Vec<String>>> {
        ids.iter()
            .map(|&id| Ok((id, self.inbound_labels(id, limit)?)))
            .collect()
    }
    /// [`IndexLog::own_labels`] of many pages (each id once in the answer).
    fn own_labels_of(&self, ids: &[i64]) -> Result<std::collections::HashMap<i64, Vec<String>>> {
        ids.iter()
            .map(|&id| Ok((id, self.own_labels(id)?)))
            .collect()
    }
    /// Up to `limit` pages the index holds, after URL id `after`, in id order.
    fn indexed_content(&self, after: i64, limit: usize) -> Result<Vec<IndexedContent>>;
    /// Takes pages out of the frontier's picture of the index, because a rebuilt index will not
    /// hold them: they come due at once and are indexed by the next crawl.
    fn forget_indexed(&mut self, ids: &[i64], now: i64) -> Result<()>;
    /// The link graph of indexed pages, for the authority computation.
    fn link_graph(&self) -> Result<LinkGraph>;
}

/// What the commands, the frontend and the reports read: counts, URLs, the archive, seeds
/// suggested. A read-only store (see [`Location::open_read_only`]) answers all of these.
pub trait Reader {
    /// Number of URLs known.
    fn url_count(&self) -> Result<u64>;
    /// A fact stored with [`Frontier::set_meta`].
    fn meta(&self, key: &str) -> Result<Option<String>>;
    /// Every URL in `state`, sorted.
    fn urls_in_state(&self, state: UrlState) -> Result<Vec<String>>;
    /// Every URL the index holds a document under, sorted.
    fn indexed_urls(&self) -> Result<Vec<String>>;
    /// Counts for `geode stats`; `now` decides which back-offs are still running.
    fn stats(&self, now: i64) -> Result<Stats>;
    /// Capsules with indexed pages.
    fn known_hosts(&self) -> Result<Vec<KnownHost>>;
    /// The id of a URL, if known.
    fn url_id(&self, url: &str) -> Result<Option<i64>>;
    /// Everything the store says about one URL, for `geode show`.
    fn url_details(&self, url: &str) -> Result<Option<UrlDetails>>;
    /// Whether a URL is known.
    fn knows(&self, url: &str) -> Result<bool>;
    /// The pages linking to a URL (or to URLs redirecting to it).
    fn backlinks(&self, url: &str) -> Result<Vec<Backlink>>;
    /// The archived response of a URL, body included.
    fn archived(&self, url_id: i64) -> Result<Option<ArchivedResponse>>;
    /// An archived body by its hash, decompressed.
    fn archived_body(&self, hash: &str) -> Result<Option<Vec<u8>>>;
    /// The archived bodies of these hashes that the archive holds, decompressed: a store that
    /// pays a round trip a statement reads them in one.
    fn archived_bodies(
        &self,
        hashes: &[&str],
    ) -> Result<std::collections::HashMap<String, Vec<u8>>> {
        let mut found = std::collections::HashMap::new();
        for &hash in hashes {
            if let Some(body) = self.archived_body(hash)? {
                found.insert(hash.to_string(), body);
            }
        }
        Ok(found)
    }
    /// How much the archive holds.
    fn archive_stats(&self) -> Result<ArchiveStats>;
    /// Up to `limit` archived responses after URL id `after` fetched at or after `since`, in id
    /// order, with their URLs and bodies: what `geode export` writes.
    fn archived_responses(&self, after: i64, since: i64, limit: usize) -> Result<Vec<UrlResponse>>;
    /// The suggested seeds and where they stand.
    fn suggested_seeds(&self) -> Result<Vec<SuggestedSeed>>;
}

/// When the `level`th back-off in a row of a capsule ends: `base` seconds from `now`, doubled
/// for every back-off before it, at most `max` ([`Batch::back_off_capsule`]).
fn backoff_end(now: i64, level: u32, base: i64, max: i64) -> i64 {
    now + base
        .saturating_mul(1i64 << level.saturating_sub(1).min(20))
        .min(max)
}

/// The order in which a capsule's due URLs are claimed, up to `n` of them: hubs first, then new
/// URLs and revisits taking turns, so that neither starves the other. `take(priority, limit)`
/// reads up to `limit` due URLs of one priority from the store.
fn claim_order(
    n: usize,
    mut take: impl FnMut(crate::revisit::Priority, usize) -> Result<Vec<QueuedUrl>>,
) -> Result<Vec<QueuedUrl>> {
    use crate::revisit::Priority;
    let mut urls = take(Priority::Hub, n)?;
    let left = n - urls.len();
    let fresh = take(Priority::Fresh, left)?;
    let revisits = take(Priority::Revisit, left)?;
    let (mut fresh, mut revisits) = (fresh.into_iter(), revisits.into_iter());
    while urls.len() < n {
        let (a, b) = (fresh.next(), revisits.next());
        if a.is_none() && b.is_none() {
            break;
        }
        urls.extend(a);
        if urls.len() < n {
            urls.extend(b);
        }
    }
    Ok(urls)
}

/// What a crawl asks of [`Frontier::claim_capsules`].
#[derive(Clone, Copy)]
pub struct ClaimRequest<'a> {
    /// How many capsules to lease at most.
    pub capsules: usize,
    /// How many due URLs to claim of each.
    pub per_capsule: usize,
    /// Whether a capsule (by key) is in this run's scope.
    pub permits: &'a (dyn Fn(&str) -> bool + Sync),
}

impl ClaimRequest<'static> {
    /// Up to `capsules` capsules, `per_capsule` URLs of each, every capsule in scope.
    pub fn everywhere(capsules: usize, per_capsule: usize) -> Self {
        ClaimRequest {
            capsules,
            per_capsule,
            permits: &|_| true,
        }
    }
}

/// A page's links as [`Batch::set_links_holding`] records them.
#[derive(Clone, Copy)]
pub struct PageLinks<'a> {
    /// The page (its URL id) the links are on.
    pub source: i64,
    /// The page's link depth: its links are one deeper.
    pub depth: u32,
    /// Every link of the page, replacing those recorded before.
    pub links: &'a [LinkOut],
    /// Whether the document of a page (by URL id) waits in the crawl's hold.
    pub held: &'a (dyn Fn(i64) -> bool + Sync),
}

/// A page whose links [`Batch::expect_links`] is told of.
#[derive(Clone, Copy)]
pub struct ExpectedLinks<'a> {
    /// The page (its URL id) the links are on.
    pub source: i64,
    /// The page's link depth: its links are one deeper.
    pub depth: u32,
    /// Every link of the page.
    pub links: &'a [LinkOut],
    /// The page's content hash, when its body was read: a page whose content another URL
    /// holds records no links.
    pub content: Option<&'a str>,
    /// The URL the page's content is indexed under (the page's own, or the one a temporary
    /// redirect keeps canonical).
    pub doc_id: i64,
}

/// One write transaction of the crawl, holding many results. Dropping it without
/// [`Batch::commit`] rolls everything back.
pub trait Batch {
    /// The id of a capsule, created when new.
    fn host_id(&mut self, name: &str) -> Result<i64>;
    /// The id of a URL, inserting it when unknown: due now, or `excluded` with the reason given.
    /// A capsule stores at most `budget` URLs: beyond that a new URL is not stored at all and
    /// `None` comes back. Returns (id, newly added).
    fn ensure_url(&mut self, new: &NewUrl, excluded: Option<&str>, budget: u64) -> Result<Stored>;
    /// Makes fetchable the web URLs recorded as `excluded` by runs that did not follow the web.
    /// Returns how many.
    fn admit_web_urls(&mut self) -> Result<u64>;
    /// Whether a capsule holds its full budget of URLs.
    fn capsule_full(&mut self, host_id: i64, budget: u64) -> Result<bool>;
    /// Records the links of a page at `depth`, replacing the links it had; pages whose inbound
    /// labels change are marked for an anchor update.
    fn set_links(
        &mut self,
        source: i64,
        depth: u32,
        links: &[LinkOut],
        budget: u64,
    ) -> Result<LinkReport> {
        let page = PageLinks {
            source,
            depth,
            links,
            held: &|_| false,
        };
        self.set_links_holding(&page, budget)
    }
    /// [`Batch::set_links`], where `held(id)` says that the document of page `id` waits in the
    /// crawl's hold: it reads the labels of the links to it when it goes to the index, so a
    /// label it gains now marks nothing (one it loses still does, as in [`Batch::set_links`]).
    fn set_links_holding(&mut self, page: &PageLinks<'_>, budget: u64) -> Result<LinkReport>;
    /// Removes every link of a page, marking the pages whose anchors lose a label.
    fn drop_links(&mut self, source: i64) -> Result<()>;
    /// Forgets a page's pending anchor update: its document is being written now.
    fn forget_anchor_update(&mut self, url_id: i64) -> Result<()>;
    /// Records a redirect target reached from `source` (at link depth `depth`) after `hops`
    /// redirects; the caller enforces the hop limit. `alias_of` names the URL whose content the
    /// target is, for temporary redirects. Returns the target's id and whether it was new;
    /// `None` when the target's capsule is full (see [`Batch::ensure_url`]).
    fn add_redirect(
        &mut self,
        source: i64,
        depth: u32,
        hops: u32,
        target: &LinkOut,
        alias_of: Option<i64>,
        budget: u64,
    ) -> Result<Stored> {
        let new = NewUrl {
            url: &target.url,
            host: &target.host,
            depth,
            hops,
            from: Some(source),
            alias_of,
            prio: target.prio,
        };
        self.ensure_url(&new, target.excluded, budget)
    }
    /// Another page holding this content in the index (or on its way there), if any.
    fn same_content(&mut self, hash: &str, except: i64) -> Result<Option<String>>;
    /// Says which contents [`Batch::same_content`] will be asked about next, so that a store
    /// that pays a round trip a statement reads them at once. Only a hint: the answers stay
    /// those of `same_content` asked at its time.
    fn expect_contents(&mut self, _hashes: &[&str]) -> Result<()> {
        Ok(())
    }
    /// Says which pages' links [`Batch::set_links_holding`] will be given next, in that
    /// order, so that a store that pays a round trip a statement looks up and inserts their
    /// URLs at once, after [`Batch::expect_contents`] for the pages' contents. Only a hint:
    /// the reports stay those of `set_links_holding` called at its time. A page it was told
    /// of whose links are then not recorded (its capsule filled up, its content turned out to
    /// be another URL's) may leave the URLs it links to in the frontier, uncounted.
    fn expect_links(&mut self, _pages: &[ExpectedLinks<'_>], _budget: u64) -> Result<()> {
        Ok(())
    }
    /// The distinct labels of the links that point to a URL, as this transaction sees them.
    fn inbound_labels(&mut self, id: i64, limit: usize) -> Result<Vec<String>>;
    /// Records a visit: what was received, the state, the schedule and the index operation.
    fn record_visit(&mut self, id: i64, visit: &VisitRecord<'_>) -> Result<()>;
    /// Sends content to the index under `id`, the URL a temporary redirect keeps canonical.
    fn record_alias_content(&mut self, id: i64, result: &FetchResult) -> Result<()>;
    /// Schedules a URL that failed temporarily for another try at `due_at`.
    fn retry_later(&mut self, id: i64, result: &FetchResult, due_at: i64) -> Result<()>;
    /// Backs a capsule off for `base` seconds, doubled for every back-off in a row (capped at
    /// `max`). Returns the time it ends.
    fn back_off_capsule(&mut self, host_id: i64, now: i64, base: i64, max: i64) -> Result<i64>;
    /// Ends a capsule's run of back-offs after a good answer.
    fn capsule_answered(&mut self, host_id: i64) -> Result<()>;
    /// Records the status and meta of an answer without changing the URL's state.
    fn note_answer(&mut self, id: i64, result: &FetchResult) -> Result<()>;
    /// Puts a claimed URL off to the next run.
    fn defer(&mut self, id: i64, result: &FetchResult) -> Result<()>;
    /// Returns a claimed URL to the frontier untouched.
    fn requeue(&mut self, id: i64) -> Result<()>;
    /// Lets go of a capsule the crawl leased (see [`Frontier::release_capsule`]).
    fn release_capsule(&mut self, host_id: i64) -> Result<()>;
    /// Caches a capsule's robots.txt answer.
    fn set_robots(&mut self, host_id: i64, status: u8, text: Option<&str>, now: i64) -> Result<()>;
    /// Keeps a capsule from being fetched before `until` (unix seconds).
    fn set_backoff(&mut self, host_id: i64, until: i64) -> Result<()>;
    /// Holds a capsule back until `until` for `reason` (its crawl budget is spent, or it looks
    /// like a trap), which `geode stats` shows while the hold lasts. A back-off set later
    /// replaces it.
    fn hold_capsule(&mut self, host_id: i64, until: i64, reason: &str) -> Result<()>;
    /// Records that no request may reach the IP address `ip` (which this crawler leases)
    /// before `wait` from now, whichever crawler holds the address then: a request just
    /// started there, or it asked to slow down. A crawler that leases the address later
    /// waits that long before its first request (see [`Frontier::lease_address`]), so the
    /// gap between requests holds across crawlers. SQLite: nothing (one crawler, whose
    /// scheduler keeps the gap).
    fn hold_address(&mut self, ip: &str, wait: std::time::Duration) -> Result<()> {
        let _ = (ip, wait);
        Ok(())
    }
    /// Compares a capsule's certificate with its pin, pinning a changed one.
    fn pin_certificate(&mut self, host_id: i64, sha256: &str, now: i64) -> Result<Pin>;
    /// Archives the latest response of a URL, replacing the one before.
    fn archive(&mut self, url_id: i64, record: &ArchiveRecord<'_>) -> Result<()>;
    /// Makes the transaction durable.
    fn commit(self: Box<Self>) -> Result<()>;
    /// Makes the transaction durable soon: the caller may go on before it is, and the
    /// frontier's next statement, whatever it is, comes after it; a failure is reported by
    /// a later call (at the latest [`Frontier::end_run`]). For a caller that sends nothing
    /// elsewhere on the strength of the commit (the SQLite crawl's index messages wait for
    /// theirs). SQLite: [`Batch::commit`].
    fn commit_soon(self: Box<Self>) -> Result<()> {
        self.commit()
    }
}

#[cfg(test)]
mod tests {
    use super::backoff_end;

    #[test]
    fn back_offs_in_a_row_double_up_to_the_cap() {
        // level, base, max -> seconds from now
        let table = [
            (1, 60, 3600, 60),
            (2, 60, 3600, 120),
            (3, 60, 3600, 240),
            (7, 60, 3600, 3600),
            (0, 60, 3600, 60),
            (u32::MAX, 60, 86_400, 86_400),
            (64, i64::MAX / 2, i64::MAX / 2, i64::MAX / 2),
        ];
        for (level, base, max, wait) in table {
            assert_eq!(
                backoff_end(1_000, level, base, max),
                1_000 + wait,
                "level {level}"
            );
        }
    }
}
