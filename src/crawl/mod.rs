//! The crawl loop: leases capsules with due work from the frontier, schedules their URLs per IP
//! address under the politeness rules ([`scheduler`]), fetches them concurrently, records what each
//! visit found ([`verdict`] decides what an answer means, [`record`] does it) and when the URL is
//! due again ([`crate::revisit`]) and hands pages, removals and anchor refreshes to the indexing
//! thread ([`indexing`]), a capsule's pages once it is done with them ([`hold`]), so that they
//! carry the labels its other pages give them.
//!
//! One run visits what is due plus everything new it finds, each URL at most once (retries of
//! temporary failures aside): a crawl from cron keeps the index current. The loop is a single
//! task that owns the scheduler and the frontier connection; fetches and DNS lookups run as their
//! own tasks and report back. The run ends when nothing is in flight, nothing is queued and the
//! frontier has nothing due (checked after the last results were recorded, so it never ends
//! early), at `max_pages`, or when `shutdown` resolves. Then the pages whose inbound link labels
//! changed get their documents rewritten from what is stored, without a request.

pub mod budget;
mod driver;
mod hold;
pub mod indexing;
mod lease;
pub mod policy;
mod record;
pub mod scheduler;
mod state;
mod task;
mod verdict;

use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use ::url::Url;

use crate::datadir::lock;
use crate::fetch::sockets::{self};
use crate::fetch::{dns, FetchLimits};
use crate::frontier::{Frontier, FrontierError, Location, Schema};
use crate::index::{IndexError, Indexer};
use crate::revisit::RevisitPolicy;
use crate::urlnorm;
use indexing::CommitPolicy;
use policy::{Exclusions, UrlPolicy};
use state::Crawl;

/// Well-known capsules a crawl starts from when it has no seeds and knows no URL.
pub const DEFAULT_SEEDS: &[&str] = &[
    "gemini://geminiprotocol.net/",
    "gemini://gemini.circumlunar.space/",
    "gemini://bbs.geminispace.org/",
    "gemini://station.martinrue.com/",
    "gemini://warmedal.se/~antenna/",
    "gemini://tlgs.one/",
    "gemini://kennedy.gemi.dev/",
    "gemini://midnight.pub/",
    "gemini://rawtext.club/",
    "gemini://tilde.team/",
    "gemini://sdf.org/",
    "gemini://cosmic.voyage/",
];

/// How long the loop gathers results to record in the same transaction (requests keep starting
/// meanwhile), with a shared store, and how many results it records in one at most before moving
/// on. A shared store's was 3 ms while every write transaction took one lock in turn; with
/// sharded rows no crawler waits for another's transaction, and 50 ms makes rounds of more
/// pages (`bench-shared-crawl`: without delay 633 -> 737 pages/s, 4 crawlers 225 -> 277; 150 ms
/// gained nothing more).
const BATCH_GATHER: Duration = Duration::from_millis(250);
const BATCH_GATHER_SHARED: Duration = Duration::from_millis(50);
const BATCH_RESULTS: usize = 1024;

/// With a shared store, whose claim of capsules costs five to ten round trips (about 25 ms at
/// 2 ms a round trip), capsules are leased in steps of at least [`CLAIM_STEP_SHARED`], and
/// after a claim that found no more due the next one waits [`CLAIM_PAUSE_SHARED`]; a crawl with
/// nothing in flight and nothing queued claims at once. New URLs in a capsule the crawler does
/// not lease (a link from one of its pages) may make it due, and claiming after every round
/// that found one and for every capsule let go cost 174 claims of 30 ms on average, most of
/// them for one capsule or none, in a 48 s crawl (`bench-shared-crawl`, one crawler).
const CLAIM_STEP_SHARED: usize = 8;
const CLAIM_PAUSE_SHARED: Duration = Duration::from_millis(250);

/// With a shared store, how long a crawler waits after it started before it takes its share of
/// the shards and claims: crawlers started together (a cron starting several) then count each
/// other, and each takes its share. The first to take shards otherwise takes them all, leases
/// its fill of capsules (64) in the first second, and keeps every shard where it leases one,
/// with the other capsules on those addresses (`bench-shared-crawl`, four crawlers: the first
/// fetched 73% of the pages, the others were idle after a third of the crawl).
const SHARED_SETTLE: Duration = Duration::from_millis(500);

/// Redirects followed from one URL before giving up.
pub const MAX_REDIRECT_HOPS: u32 = 5;

/// URLs of one capsule claimed at a time: enough to keep its IP busy between claims, few enough
/// that memory stays bounded by the capsules in play rather than the URLs known.
const PER_CAPSULE: usize = 32;

/// Addresses the crawl leases capsules on at once, per request it may have in flight (a
/// capsule not yet resolved counts as an address of its own). Counted in addresses, not
/// capsules: an address is served one request at a time, so a crawl that leased two capsules
/// of one address while another address waited would finish that address late, alone.
const ADDRESSES_PER_SLOT: usize = 4;

/// Capsules leased at once, per address [`ADDRESSES_PER_SLOT`] allows: a bound on what a
/// shared host's many capsules may hold of the crawl's memory.
const CAPSULES_PER_ADDRESS: usize = 4;

/// Capsules leased by one claim: a claim marks up to this many times [`PER_CAPSULE`] URLs in one
/// transaction, which holds up the loop; a crawl starting on a large frontier leases in steps.
const CAPSULES_PER_CLAIM: usize = 32;

/// URLs of an unreachable capsule recorded as failed visits per transaction.
const UNREACHABLE_CHUNK: usize = 512;

/// Anchor updates read from the frontier at a time.
const ANCHOR_CHUNK: usize = 500;

/// How long a run stopped by `--max-duration` still rewrites documents with new anchors; the
/// rest is done by the next run.
const REFRESH_AFTER_TIME: Duration = Duration::from_secs(60);

/// Everything a crawl needs, decided once from the command line.
#[derive(Debug, Clone)]
pub struct CrawlConfig {
    pub data_dir: PathBuf,
    /// The shared store on PostgreSQL, if any: the crawl then writes its results there for the
    /// one index writer (`geode index`) and keeps no index of its own; `None`: SQLite in
    /// `data_dir`, indexed by the crawl itself.
    pub shared: Option<SharedFrontier>,
    /// Normalised seed URLs; when empty and the frontier is empty, [`DEFAULT_SEEDS`] are used.
    pub seeds: Vec<Url>,
    /// Stop after fetching this many pages in this run.
    pub max_pages: Option<u64>,
    /// Smallest gap between the starts of two requests to one IP address.
    pub min_delay: Duration,
    /// Requests in flight at once, across all IP addresses.
    pub concurrency: usize,
    pub resolve: dns::Overrides,
    /// Which discovered URLs may be fetched (depth, traps, exclusions).
    pub policy: UrlPolicy,
    /// Most URLs one capsule may have in the frontier; later ones are recorded, not fetched.
    pub capsule_budget: u64,
    /// First retry of a temporary failure (40, 42, 43, ...) after this; doubled each time.
    pub retry_base: Duration,
    /// Temporary failures in a row after which a URL is given up.
    pub max_attempts: u32,
    /// How long a capsule is left alone after a 41, or when its robots.txt or address cannot be
    /// had; doubled each time in a row.
    pub capsule_backoff: Duration,
    /// At the end, a crawl waits for retries and back-offs that come due within this long.
    pub retry_horizon: Duration,
    /// Sockets open at once at most; `None` derives it from the descriptor limit.
    pub socket_budget: Option<usize>,
    pub limits: FetchLimits,
    pub commit: CommitPolicy,
    /// How often a progress line is logged.
    pub progress_every: Duration,
    /// When pages visited in this run are visited again.
    pub revisit: RevisitPolicy,
    /// End the run after this long (`--max-duration`): stop dispatching, let requests in
    /// flight finish within `drain`, commit, and report `ended: "time"`.
    pub max_duration: Option<Duration>,
    /// How long requests in flight may finish once a run is told to stop (time or signal);
    /// what is still unfinished then is dropped and fetched by a later run.
    pub drain: Duration,
    /// Which capsules this run may fetch (`--allow-host`, `--deny-host`); URLs of others are
    /// recorded but not fetched.
    pub scope: policy::Scope,
    /// The operator's contact (a URL or an address) for the `User-Agent` of HTTP requests.
    pub contact: Option<String>,
}

impl CrawlConfig {
    /// Follows http and https links too (`--protocols gemini,http`), or gemini links only.
    pub fn follow_web(&mut self, yes: bool) {
        self.scope.follow_web(yes);
        self.policy.web = yes;
    }

    /// Defaults for everything but the data directory.
    pub fn new(data_dir: impl Into<PathBuf>) -> Self {
        CrawlConfig {
            data_dir: data_dir.into(),
            seeds: Vec::new(),
            max_pages: None,
            min_delay: Duration::from_millis(1000),
            concurrency: 64,
            resolve: dns::Overrides::default(),
            policy: UrlPolicy {
                max_depth: 30,
                exclusions: Exclusions::default(),
                web: false,
            },
            capsule_budget: 100_000,
            retry_base: Duration::from_secs(60),
            max_attempts: 4,
            capsule_backoff: Duration::from_secs(600),
            retry_horizon: Duration::from_secs(300),
            socket_budget: None,
            limits: FetchLimits::default(),
            // Time decides below 2,000 pages/s: a crash costs at most the last 10 s of work
            // either way. Each commit is a segment to merge at the end; on the bench farms
            // 20,000 documents a commit took 6-8% less CPU than 5,000 (9% less from 1,000 to
            // 5,000), at 15-30 MB more peak RSS.
            commit: CommitPolicy {
                max_docs: 20_000,
                max_age: Duration::from_secs(10),
            },
            progress_every: Duration::from_secs(5),
            revisit: RevisitPolicy::default(),
            max_duration: None,
            drain: Duration::from_secs(5),
            scope: policy::Scope::default(),
            contact: None,
            shared: None,
        }
    }
}

/// A crawl state shared with other crawlers on PostgreSQL (`--frontier`).
#[derive(Debug, Clone)]
pub struct SharedFrontier {
    /// `postgres://USER@HOST[:PORT]/DB`.
    pub url: String,
    /// How long a lease lasts unless renewed (`--lease`): a crawler that dies loses its work to
    /// the others this long after its last renewal.
    pub lease: Duration,
}

/// Errors that stop a whole crawl. Errors of single URLs never do.
#[derive(Debug, thiserror::Error)]
pub enum CrawlError {
    #[error(transparent)]
    Frontier(#[from] FrontierError),
    #[error(transparent)]
    Index(#[from] IndexError),
    #[error("data directory {0}: {1}")]
    DataDir(PathBuf, std::io::Error),
    #[error("the indexing thread stopped: {0}")]
    IndexerStopped(String),
    #[error(transparent)]
    Lock(#[from] lock::LockError),
    #[error("rebuilding the outdated index: {0}")]
    Reindex(String),
}

/// Why a crawl ended (`ended` in the JSON summary).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum StopReason {
    /// Nothing was left that is due.
    #[default]
    Done,
    MaxPages,
    /// `--max-duration` was reached.
    Time,
    /// Ctrl-C, SIGTERM or the caller's shutdown future.
    Signal,
}

impl StopReason {
    pub fn describe(self) -> &'static str {
        match self {
            StopReason::Done => "nothing left that is due",
            StopReason::MaxPages => "--max-pages reached",
            StopReason::Time => "--max-duration reached",
            StopReason::Signal => "interrupted",
        }
    }
}

/// What a crawl did. `geode crawl --json` prints it as one object; the first seven keys are a
/// contract scripts rely on.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct CrawlSummary {
    /// Pages requested (robots.txt files not counted), whatever came back.
    pub fetched: u64,
    /// Pages indexed for the first time (or again after they had left the index).
    pub new: u64,
    /// Pages whose content changed, indexed again.
    pub changed: u64,
    /// Pages found as they were: no index write.
    pub unchanged: u64,
    /// Pages taken out of the index (51, 52, 31, robots.txt, failing past `--remove-after`,
    /// duplicates, input prompts).
    pub removed: u64,
    /// Visits without a usable answer: network, TLS, DNS and protocol errors, other 5x,
    /// temporary failures that never ended, pages of unreachable capsules.
    pub failed: u64,
    pub ended: StopReason,
    /// Documents rewritten because the labels of links to them changed.
    pub anchors_refreshed: u64,
    pub robots_fetched: u64,
    pub robots_excluded: u64,
    /// Pages whose body was already indexed under another URL.
    pub duplicates: u64,
    /// 44 answers received.
    pub slow_downs: u64,
    /// Capsules set aside for a while (41, robots.txt or address unavailable).
    pub capsules_backed_off: u64,
    /// Capsules that could not be reached at all (DNS, connection, TLS): their due pages count
    /// as failed visits.
    pub capsules_unreachable: u64,
    /// Capsules held back for a later run: their crawl budget was spent, or they looked like a
    /// trap ([`budget`]).
    pub capsules_held_back: u64,
    /// Capsules that presented a certificate other than the one pinned.
    pub certificates_changed: u64,
    /// Capsules this run tried to reach, and those that gave any answer at all: a run where
    /// none answered (network or DNS down) is a failure for cron.
    pub capsules_tried: u64,
    pub capsules_answered: u64,
    /// The most crawler sockets open at once, and the budget they had.
    pub peak_sockets: usize,
    pub socket_budget: usize,
    /// Pages fetched over a TLS session resumed from an earlier connection (no certificate
    /// sent or checked: less work for the server too).
    pub tls_resumed: u64,
    pub urls_discovered: u64,
    /// Claims of due work from the frontier, and the slowest one.
    pub claims: u64,
    pub claim_max_ms: f64,
    pub claim_total_ms: f64,
    pub elapsed_secs: f64,
}

pub use crate::clock::unix_now;

/// Runs a crawl until it ends or `shutdown` resolves.
pub async fn run(
    config: CrawlConfig,
    shutdown: impl Future<Output = ()>,
) -> Result<CrawlSummary, CrawlError> {
    run_observed(config, shutdown, None).await
}

/// A snapshot of a running crawl, for progress displays.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Progress {
    pub pages_fetched: u64,
    pub errors: u64,
    pub new: u64,
    pub changed: u64,
    pub unchanged: u64,
    pub removed: u64,
    /// URLs claimed from the frontier and waiting for their IP address.
    pub queued: usize,
    pub in_flight: usize,
    pub open_sockets: usize,
    /// Capsules set aside (41, robots.txt or address unavailable) in this crawl.
    pub capsules_backed_off: u64,
    pub slow_downs: u64,
}

/// Like [`run`], publishing a [`Progress`] snapshot a few times a second to `progress`.
pub async fn run_observed(
    config: CrawlConfig,
    shutdown: impl Future<Output = ()>,
    progress: Option<tokio::sync::watch::Sender<Progress>>,
) -> Result<CrawlSummary, CrawlError> {
    let started = Instant::now();
    std::fs::create_dir_all(&config.data_dir)
        .map_err(|e| CrawlError::DataDir(config.data_dir.clone(), e))?;
    // The lock comes first: it keeps two crawls off one data directory, and says who holds it.
    let _lock = lock::DataDirLock::acquire(&config.data_dir)?;
    // A crawler of a shared store keeps no index: the one index writer applies what it records.
    let location = match &config.shared {
        Some(shared) => Location::postgres(&shared.url, shared.lease, Schema::Prepare)?
            .with_crawler(&crawler_id(&config.data_dir)?),
        None => Location::data_dir(&config.data_dir),
    };
    let indexer = if location.is_shared() {
        None
    } else {
        Some(open_index(&config.data_dir)?)
    };
    let mut frontier = location.open()?;
    let run_started = unix_now();
    let committed = indexer.as_ref().map_or(0, Indexer::committed_seq);
    let (confirmed, redone) = frontier.recover(committed, run_started)?;
    if confirmed + redone > 0 {
        tracing::info!(
            confirmed,
            redone,
            "settled the index operations of an interrupted crawl"
        );
    }
    admit_web_urls(&mut *frontier, &config, run_started)?;
    add_seeds(&mut *frontier, &config, run_started)?;
    frontier.set_meta("last_crawl_started", &run_started.to_string())?;
    tracing::info!(
        ready_secs = started.elapsed().as_secs_f64(),
        "crawl database and index ready"
    );

    let socket_budget = match config.socket_budget {
        Some(n) => n,
        None => sockets::budget_for(sockets::nofile_limit().unwrap_or(1024)),
    };
    tracing::info!(socket_budget, "sockets the crawl may hold open at once");
    let (index_tx, index_thread) = match indexer {
        Some(indexer) => indexing::spawn(indexer, location.open()?, config.commit, 1024),
        None => indexing::spawn_discarding(1024),
    };
    let mut crawl = Crawl::new(config, socket_budget, index_tx, progress, run_started);
    let mut outcome = crawl.run_loop(&mut *frontier, shutdown).await;
    // Pages whose inbound labels changed get their documents rewritten, unless the run was
    // interrupted (the next run does it then: the updates stay recorded until committed); a run
    // out of time gives it a minute at most.
    let mut refreshed = Vec::new();
    // In a shared store the index writer does it (`geode index`).
    let refresh_until = match crawl.summary.ended {
        _ if location.is_shared() => None,
        StopReason::Signal => None,
        StopReason::Time => Some(Some(Instant::now() + REFRESH_AFTER_TIME)),
        StopReason::Done | StopReason::MaxPages => Some(None),
    };
    if let (Ok(()), Some(deadline)) = (&outcome, refresh_until) {
        match crawl.refresh_anchors(&*frontier, deadline).await {
            Ok(ids) => refreshed = ids,
            Err(e) => outcome = Err(e),
        }
    }
    // Whatever happened, let the indexing thread commit what it has, then settle the frontier.
    crawl.index_tx = None;
    // A thread that panicked fails the run like one that stopped: what it claimed is given
    // back below either way.
    let indexed = match tokio::task::spawn_blocking(move || index_thread.join()).await {
        Ok(Ok(indexed)) => indexed,
        Ok(Err(_)) => Err(CrawlError::IndexerStopped("it panicked".into())),
        Err(e) => Err(CrawlError::IndexerStopped(e.to_string())),
    };
    let run = match (outcome, indexed) {
        // The loop only saw that the thread was gone; the thread says why.
        (Err(CrawlError::IndexerStopped(_)), Err(why)) => Err(why),
        (Err(e), _) => Err(e),
        (Ok(()), indexed) => indexed,
    };
    let (indexed, indexer) = match run {
        Ok(done) => done,
        Err(e) => return Err(give_back(frontier, e)),
    };
    if let Err(e) = frontier.clear_anchor_updates(&refreshed) {
        return Err(give_back(frontier, e.into()));
    }
    frontier.end_run()?;
    frontier.set_meta("last_crawl_finished", &unix_now().to_string())?;
    // What the rest needs of the crawl; the rest of it (connections, TLS sessions, per-capsule
    // counts and trap shapes) goes before the index is merged.
    crawl.summary.capsules_tried = crawl.tried.len() as u64;
    crawl.summary.capsules_answered = crawl.answered.len() as u64;
    crawl.summary.anchors_refreshed = indexed.refreshed;
    crawl.summary.peak_sockets = crawl.fetcher.sockets().high_water();
    let seen: Vec<(String, u64)> = crawl
        .budgets
        .linkers_seen()
        .map(|(capsule, n)| (capsule.to_string(), n))
        .collect();
    let Crawl {
        config,
        mut summary,
        ..
    } = crawl;
    // A run that did its work leaves the index in one or two segments (`Indexer::compact`),
    // which searches until the next run read faster; a stop by signal or time does not wait for
    // the merge. In a shared store the index writer does it. The indexing thread's own writer
    // merges: it waits for the merges Tantivy had started, where a second writer would not see
    // them and merge the same segments beside them.
    match indexer {
        Some(mut indexer) if matches!(summary.ended, StopReason::Done | StopReason::MaxPages) => {
            // What the crawl's threads freed goes back before a merge of the whole index.
            crate::heap::give_back_freed_memory();
            let compacted =
                tokio::task::spawn_blocking(move || crate::index::compact_or_warn(&mut indexer))
                    .await;
            if let Err(e) = compacted {
                tracing::warn!(error = %e, "index not compacted");
            }
        }
        indexer => drop(indexer),
    }
    // A stop by signal must end within systemd's 10 s: authority waits for the next run. In a
    // shared store the index writer computes it.
    if summary.ended != StopReason::Signal && !location.is_shared() {
        update_authority(frontier, crate::datadir::index_path(&config.data_dir), seen).await;
    }
    summary.elapsed_secs = started.elapsed().as_secs_f64();
    Ok(summary)
}

/// A run that failed gives back what it claimed and leased where it can, so that crawlers
/// sharing its store do not wait for its leases to run out, nor end with its claims
/// unvisited; the failure is returned as it was, and one of the giving back only logged.
fn give_back(mut frontier: Box<dyn Frontier>, failure: CrawlError) -> CrawlError {
    if let Err(e) = frontier.end_run() {
        tracing::warn!(error = %e, "could not give back this run's claims and leases");
    }
    failure
}

/// Opens the index of a data directory, rebuilding an index from an older geode from the
/// archive first.
fn open_index(data_dir: &Path) -> Result<Indexer, CrawlError> {
    match Indexer::open_or_create(&crate::datadir::index_path(data_dir)) {
        Err(IndexError::OtherVersion { found, .. }) if found < crate::index::SCHEMA_VERSION => {
            tracing::info!(
                found,
                current = crate::index::SCHEMA_VERSION,
                "the index was built by an older geode: rebuilding it from the archive"
            );
            let rebuilt =
                crate::reindex::reindex_locked(data_dir, crate::reindex::COMMIT_DOCS, &mut |_| {})
                    .map_err(|e| CrawlError::Reindex(e.to_string()))?;
            tracing::info!(
                pages = rebuilt.pages,
                to_fetch = rebuilt.missing,
                "index rebuilt"
            );
            Ok(Indexer::open_or_create(&crate::datadir::index_path(
                data_dir,
            ))?)
        }
        opened => Ok(opened?),
    }
}

/// This crawler's name in a shared store, kept in the data directory (`crawler-id`) so that a
/// crawl started again on it after a crash takes its own claims back at once.
fn crawler_id(data_dir: &Path) -> Result<String, CrawlError> {
    let path = data_dir.join("crawler-id");
    let io = |e| CrawlError::DataDir(path.clone(), e);
    match std::fs::read_to_string(&path) {
        Ok(id) if !id.trim().is_empty() => Ok(id.trim().to_string()),
        Ok(_) => Err(io(std::io::Error::other("empty crawler-id file"))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let id = uuid::Uuid::new_v4().simple().to_string()[..12].to_string();
            std::fs::write(&path, format!("{id}\n")).map_err(io)?;
            Ok(id)
        }
        Err(e) => Err(io(e)),
    }
}

/// [`crate::authority::update`] on a blocking thread, with the linkers `seen` in this run.
async fn update_authority(
    mut frontier: Box<dyn Frontier>,
    index_dir: PathBuf,
    seen: Vec<(String, u64)>,
) {
    let done = tokio::task::spawn_blocking(move || {
        crate::authority::update(&mut *frontier, &index_dir, &seen)
    })
    .await;
    if let Err(e) = done {
        tracing::warn!(error = %e, "link authority not updated");
    }
}

/// In a run that follows the web: the web links that runs which did not follow it recorded
/// (excluded as `web`, or as `not-fetchable` by a geode without HTTP) become fetchable, so
/// nothing known needs finding again.
fn admit_web_urls(
    frontier: &mut dyn Frontier,
    config: &CrawlConfig,
    now: i64,
) -> Result<(), CrawlError> {
    if !config.scope.follows_web() {
        return Ok(());
    }
    let mut batch = frontier.batch(now)?;
    let admitted = batch.admit_web_urls()?;
    batch.commit()?;
    if admitted > 0 {
        tracing::info!(
            admitted,
            "web URLs recorded by earlier runs are now fetchable"
        );
    }
    Ok(())
}

fn add_seeds(
    frontier: &mut dyn Frontier,
    config: &CrawlConfig,
    now: i64,
) -> Result<(), CrawlError> {
    let defaults: Vec<Url>;
    let seeds = if config.seeds.is_empty() && frontier.url_count()? == 0 {
        defaults = DEFAULT_SEEDS
            .iter()
            .filter_map(|s| urlnorm::normalize(s).ok())
            .collect();
        &defaults
    } else {
        &config.seeds
    };
    for seed in seeds {
        frontier.add_seed(seed.as_str(), &urlnorm::capsule_key(seed), now)?;
    }
    Ok(())
}
