//! The crawl loop: leases capsules with due work from the frontier, schedules their URLs per IP
//! address under the politeness rules ([`scheduler`]), fetches them concurrently, records what
//! each visit found and when the URL is due again ([`record`], [`crate::revisit`]) and hands
//! pages, removals and anchor refreshes to the indexing thread ([`indexing`]).
//!
//! One run visits what is due plus everything new it finds, each URL at most once (retries of
//! temporary failures aside): a crawl from cron keeps the index current. The loop is a single
//! task that owns the scheduler and the frontier connection; fetches and DNS lookups run as their
//! own tasks and report back. The run ends when nothing is in flight, nothing is queued and the
//! frontier has nothing due (checked after the last results were recorded, so it never ends
//! early), at `max_pages`, or when `shutdown` resolves. Then the pages whose inbound link labels
//! changed get their documents rewritten from what is stored, without a request.

pub mod indexing;
pub mod lock;
pub mod policy;
mod record;
pub mod scheduler;

use std::collections::{BTreeSet, HashSet};
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ::url::Url;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use crate::content::{self, Extracted};
use crate::fetch::sockets::{self, SocketBudget};
use crate::fetch::{dns, FetchError, FetchLimits, Fetcher, Outcome, Response};
use crate::frontier::{Frontier, FrontierError, QueuedUrl};
use crate::index::{IndexError, Indexer};
use crate::revisit::RevisitPolicy;
use crate::robots::Robots;
use crate::urlnorm;
use indexing::{CommitPolicy, IndexMsg};
use policy::{Exclusions, UrlPolicy};
use scheduler::{Job, Scheduler};

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

/// How long the loop waits for more results to record in the same transaction, and how many
/// it records in one at most before moving on.
const BATCH_GATHER: Duration = Duration::from_millis(3);
const BATCH_RESULTS: usize = 256;

/// Redirects followed from one URL before giving up.
pub const MAX_REDIRECT_HOPS: u32 = 5;

/// URLs of one capsule claimed at a time: enough to keep its IP busy between claims, few enough
/// that memory stays bounded by the capsules in play rather than the URLs known.
const PER_CAPSULE: usize = 32;

/// Capsules leased at once, per request the crawl may have in flight.
const CAPSULES_PER_SLOT: usize = 4;

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
}

impl CrawlConfig {
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
            },
            capsule_budget: 100_000,
            retry_base: Duration::from_secs(60),
            max_attempts: 4,
            capsule_backoff: Duration::from_secs(600),
            retry_horizon: Duration::from_secs(300),
            socket_budget: None,
            limits: FetchLimits::default(),
            commit: CommitPolicy {
                max_docs: 1000,
                max_age: Duration::from_secs(10),
            },
            progress_every: Duration::from_secs(5),
            revisit: RevisitPolicy::default(),
            max_duration: None,
            drain: Duration::from_secs(5),
            scope: policy::Scope::default(),
        }
    }
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
    /// Capsules that presented a certificate other than the one pinned.
    pub certificates_changed: u64,
    /// Capsules this run tried to reach, and those that gave any answer at all: a run where
    /// none answered (network or DNS down) is a failure for cron.
    pub capsules_tried: u64,
    pub capsules_answered: u64,
    /// The most crawler sockets open at once, and the budget they had.
    pub peak_sockets: usize,
    pub socket_budget: usize,
    pub urls_discovered: u64,
    /// Claims of due work from the frontier, and the slowest one.
    pub claims: u64,
    pub claim_max_ms: f64,
    pub claim_total_ms: f64,
    pub elapsed_secs: f64,
}

/// What a fetch task reports.
struct Done {
    ip: IpAddr,
    host_id: i64,
    /// When the request really began: the connection was made (the task starts a little after
    /// it is handed out, and may wait for a socket).
    began: Instant,
    /// How long it took.
    took: Duration,
    job: DoneJob,
    fetched_at: i64,
    result: Result<Fetched, FetchError>,
}

enum DoneJob {
    Robots { host_id: i64 },
    Page(Box<QueuedUrl>),
}

/// A response, with the page already extracted when it was content.
struct Fetched {
    response: Response,
    page: Option<ExtractedPage>,
}

struct ExtractedPage {
    extracted: Extracted,
    size: u64,
    /// SHA-256 of the body; `None` when only the header was read.
    hash: Option<String>,
    /// The body compressed for the archive, when it was read.
    zstd: Option<Vec<u8>>,
}

pub use record::MAX_ANCHORS;

/// The index document of an archived page: its content extracted again from `meta` and `body`
/// (`None`: only the header was read), with `anchors`, the labels of links to it. How
/// `geode reindex` rebuilds what a crawl indexed.
#[allow(clippy::too_many_arguments)]
pub fn document(
    url: &Url,
    url_text: String,
    host: String,
    meta: &str,
    body: Option<&[u8]>,
    anchors: String,
    size: u64,
    fetched_at: i64,
) -> crate::index::PageDoc {
    let extracted = content::extract(url, meta, body.unwrap_or_default());
    record::page_doc(
        url_text,
        host,
        &extracted,
        body.is_none(),
        anchors,
        size,
        fetched_at,
    )
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
    let indexer = match Indexer::open_or_create(&crate::datadir::index_path(&config.data_dir)) {
        // An index from an older geode is rebuilt from the archive first.
        Err(IndexError::OtherVersion { found, .. }) if found < crate::index::SCHEMA_VERSION => {
            tracing::info!(
                found,
                current = crate::index::SCHEMA_VERSION,
                "the index was built by an older geode: rebuilding it from the archive"
            );
            let rebuilt = crate::reindex::reindex_locked(&config.data_dir, &mut |_| {})
                .map_err(|e| CrawlError::Reindex(e.to_string()))?;
            tracing::info!(
                pages = rebuilt.pages,
                to_fetch = rebuilt.missing,
                "index rebuilt"
            );
            Indexer::open_or_create(&crate::datadir::index_path(&config.data_dir))?
        }
        opened => opened?,
    };
    let db = crate::datadir::database_path(&config.data_dir);
    let mut frontier = Frontier::open(&db)?;
    let run_started = unix_now();
    let (confirmed, redone) = frontier.recover(indexer.committed_seq(), run_started)?;
    if confirmed + redone > 0 {
        tracing::info!(
            confirmed,
            redone,
            "settled the index operations of an interrupted crawl"
        );
    }
    add_seeds(&mut frontier, &config, run_started)?;
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
    let (index_tx, index_thread) =
        indexing::spawn(indexer, Frontier::open(&db)?, config.commit, 1024);
    let mut crawl = Crawl {
        fetcher: Fetcher::new(config.limits.clone(), SocketBudget::new(socket_budget)),
        progress,
        parsers: Arc::new(Semaphore::new(
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(2),
        )),
        scheduler: Scheduler::new(config.min_delay),
        index_tx: Some(index_tx),
        summary: CrawlSummary {
            socket_budget,
            ..CrawlSummary::default()
        },
        run_started,
        effects: Effects::default(),
        tried: HashSet::new(),
        answered: HashSet::new(),
        config,
    };
    let mut outcome = crawl.run_loop(&mut frontier, shutdown).await;
    // Pages whose inbound labels changed get their documents rewritten, unless the run was
    // interrupted (the next run does it then: the updates stay recorded until committed); a run
    // out of time gives it a minute at most.
    let mut refreshed = Vec::new();
    let refresh_until = match crawl.summary.ended {
        StopReason::Signal => None,
        StopReason::Time => Some(Some(Instant::now() + REFRESH_AFTER_TIME)),
        StopReason::Done | StopReason::MaxPages => Some(None),
    };
    if let (Ok(()), Some(deadline)) = (&outcome, refresh_until) {
        match crawl.refresh_anchors(&frontier, deadline).await {
            Ok(ids) => refreshed = ids,
            Err(e) => outcome = Err(e),
        }
    }
    // Whatever happened, let the indexing thread commit what it has, then settle the frontier.
    crawl.index_tx = None;
    let indexed = tokio::task::spawn_blocking(move || index_thread.join())
        .await
        .map_err(|e| CrawlError::IndexerStopped(e.to_string()))?
        .map_err(|_| CrawlError::IndexerStopped("it panicked".into()))?;
    let indexed = match (outcome, indexed) {
        // The loop only saw that the thread was gone; the thread says why.
        (Err(CrawlError::IndexerStopped(_)), Err(why)) => return Err(why),
        (Err(e), _) => return Err(e),
        (Ok(()), indexed) => indexed?,
    };
    frontier.clear_anchor_updates(&refreshed)?;
    frontier.end_run()?;
    frontier.set_meta("last_crawl_finished", &unix_now().to_string())?;
    // A stop by signal must end within systemd's 10 s: authority waits for the next run.
    if crawl.summary.ended != StopReason::Signal {
        update_authority(frontier, crate::datadir::index_path(&crawl.config.data_dir)).await;
    }
    crawl.summary.capsules_tried = crawl.tried.len() as u64;
    crawl.summary.capsules_answered = crawl.answered.len() as u64;
    crawl.summary.anchors_refreshed = indexed.refreshed;
    crawl.summary.peak_sockets = crawl.fetcher.sockets().high_water();
    crawl.summary.elapsed_secs = started.elapsed().as_secs_f64();
    Ok(crawl.summary)
}

/// Recomputes link authority over the whole link graph ([`crate::rank`]) and writes it beside
/// the index, on a blocking thread. A failure is logged, never returned: the crawl's work is
/// done and the next crawl tries again.
async fn update_authority(frontier: Frontier, index_dir: PathBuf) {
    let started = Instant::now();
    let computed = tokio::task::spawn_blocking(move || -> Result<(usize, usize), CrawlError> {
        let graph = frontier.link_graph()?;
        let scores = crate::rank::authority(&graph);
        let pairs: Vec<(u64, f32)> = graph
            .urls()
            .map(crate::index::authority::url_hash)
            .zip(scores)
            .collect();
        crate::index::authority::write(&index_dir, &pairs)?;
        frontier.set_meta("authority_pages", &graph.len().to_string())?;
        frontier.set_meta("authority_computed_at", &unix_now().to_string())?;
        Ok((graph.len(), graph.links().len()))
    })
    .await;
    let secs = started.elapsed().as_secs_f64();
    match computed {
        Ok(Ok((pages, links))) => tracing::info!(pages, links, secs, "link authority updated"),
        Ok(Err(e)) => tracing::warn!(error = %e, "link authority not updated"),
        Err(e) => tracing::warn!(error = %e, "link authority not updated"),
    }
}

fn add_seeds(frontier: &mut Frontier, config: &CrawlConfig, now: i64) -> Result<(), CrawlError> {
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

struct Crawl {
    config: CrawlConfig,
    fetcher: Fetcher,
    /// Extractions running at once: one per core, beside the I/O threads.
    parsers: Arc<Semaphore>,
    progress: Option<tokio::sync::watch::Sender<Progress>>,
    scheduler: Scheduler,
    index_tx: Option<std::sync::mpsc::SyncSender<IndexMsg>>,
    summary: CrawlSummary,
    /// When this run began (unix seconds): robots.txt read before it is read again.
    run_started: i64,
    /// What recorded results ask the loop to do once their transaction is committed.
    effects: Effects,
    /// Capsules this run tried to reach, and those that answered anything.
    tried: HashSet<i64>,
    answered: HashSet<i64>,
}

/// Follow-ups of recorded results, done after their transaction commits.
#[derive(Debug, Default)]
struct Effects {
    /// New URLs were added: the frontier may have more due.
    new_urls: bool,
    /// Capsules that got new URLs: a leased one may be refilled.
    wake: BTreeSet<i64>,
    /// Entries new in a feed (URL id, capsule id), claimed ahead of their capsule's queue.
    hubs: Vec<(i64, i64)>,
    /// Capsules that could not be reached, with the error kind and message.
    unreachable: Vec<(i64, String, String)>,
}

impl Crawl {
    async fn run_loop(
        &mut self,
        frontier: &mut Frontier,
        shutdown: impl Future<Output = ()>,
    ) -> Result<(), CrawlError> {
        let mut shutdown = std::pin::pin!(shutdown);
        let mut fetches: JoinSet<Done> = JoinSet::new();
        let mut lookups: JoinSet<(i64, Result<SocketAddr, FetchError>)> = JoinSet::new();
        let mut resolving: HashSet<i64> = HashSet::new();
        let mut frontier_has_more = true;
        // `--max-pages 0` asks for no request at all: not even robots.txt or DNS.
        let mut dispatching = self.config.max_pages != Some(0);
        if !dispatching {
            self.summary.ended = StopReason::MaxPages;
        }
        let mut interrupted = false;
        let mut pages_started: u64 = 0;
        let mut next_progress = Instant::now() + self.config.progress_every;
        let mut next_snapshot = Instant::now();
        let mut retry_at: Option<Instant> = None;
        let max_capsules = (self.config.concurrency * CAPSULES_PER_SLOT).max(16);
        let far = Instant::now() + Duration::from_secs(365 * 24 * 3600);
        let deadline = self.config.max_duration.map_or(far, |d| Instant::now() + d);
        // Once told to stop: requests in flight may finish until then.
        let mut drain_until: Option<Instant> = None;

        loop {
            if dispatching {
                frontier_has_more |= self.follow_up(frontier)?;
                if frontier_has_more && self.scheduler.leased() < max_capsules {
                    let want = (max_capsules - self.scheduler.leased()).min(CAPSULES_PER_CLAIM);
                    let scope = self.config.scope.clone();
                    let permits = |capsule: &str| scope.permits(capsule);
                    let mut examined = 0;
                    let claimed = self.timed_claim(
                        |f, now| {
                            let (urls, seen) =
                                f.claim_capsules(want, PER_CAPSULE, now, &permits)?;
                            examined = seen;
                            Ok(urls)
                        },
                        frontier,
                    )?;
                    frontier_has_more = examined >= want;
                    self.take_claimed(frontier, claimed, false)?;
                }
                for (host_id, host) in self.scheduler.unresolved() {
                    if resolving.insert(host_id) {
                        self.tried.insert(host_id);
                        lookups.spawn(lookup(
                            host_id,
                            host.to_string(),
                            self.config.resolve.clone(),
                        ));
                    }
                }
            }

            let now_unix = unix_now();
            let mut batch = frontier.batch(now_unix)?;
            let mut docs = Vec::new();
            while dispatching && self.scheduler.in_flight() < self.config.concurrency {
                let Some(job) = self.scheduler.next_job(Instant::now()) else {
                    break;
                };
                match job {
                    Job::Disallowed(url) => {
                        self.record_disallowed(&mut batch, url, now_unix, &mut docs)?;
                    }
                    Job::Robots {
                        host_id,
                        host,
                        addr,
                    } => {
                        self.tried.insert(host_id);
                        let url = format!("gemini://{host}/robots.txt");
                        fetches.spawn(fetch(
                            self.fetcher.clone(),
                            Arc::clone(&self.parsers),
                            url,
                            addr,
                            host_id,
                            DoneJob::Robots { host_id },
                        ));
                    }
                    Job::Page { url, addr } => {
                        pages_started += 1;
                        let target = url.url.clone();
                        let host_id = url.host_id;
                        fetches.spawn(fetch(
                            self.fetcher.clone(),
                            Arc::clone(&self.parsers),
                            target,
                            addr,
                            host_id,
                            DoneJob::Page(Box::new(url)),
                        ));
                        self.tried.insert(host_id);
                        if self
                            .config
                            .max_pages
                            .is_some_and(|max| pages_started >= max)
                        {
                            dispatching = false;
                            self.summary.ended = StopReason::MaxPages;
                        }
                    }
                }
            }
            batch.commit()?;
            for msg in docs.drain(..) {
                self.send_to_index(msg)?;
            }

            let idle = fetches.is_empty() && lookups.is_empty();
            if idle && dispatching && self.scheduler.queued() == 0 && self.follow_up(frontier)? {
                // Capsules were let go or URLs added: claim again before deciding to end.
                frontier_has_more = true;
                continue;
            }
            if idle && (!dispatching || (self.scheduler.queued() == 0 && !frontier_has_more)) {
                // Retries and back-offs that come due soon are worth waiting for.
                retry_at = if dispatching {
                    self.due_retry(frontier)?
                } else {
                    None
                };
                if retry_at.is_none() {
                    break;
                }
            }

            let now = Instant::now();
            if now >= next_progress {
                self.log_progress();
                next_progress = now + self.config.progress_every;
            }
            if now >= next_snapshot {
                self.publish_progress();
                next_snapshot = now + Duration::from_millis(200);
            }
            let wake = self
                .scheduler
                .next_wakeup()
                .unwrap_or(now + Duration::from_secs(3600))
                .min(next_progress)
                .min(if self.progress.is_some() {
                    next_snapshot
                } else {
                    next_progress
                })
                .min(retry_at.unwrap_or(now + Duration::from_secs(3600)))
                .min(drain_until.unwrap_or(far))
                .max(now);
            tokio::select! {
                Some(joined) = fetches.join_next(), if !fetches.is_empty() => {
                    let mut batch = frontier.batch(unix_now())?;
                    let mut next = Some(joined);
                    let mut recorded = 0;
                    // Record every result that is ready, and those arriving within a few
                    // milliseconds, in one transaction: fewer, larger transactions rewrite
                    // fewer database pages.
                    let gather_until = Instant::now() + BATCH_GATHER;
                    loop {
                        while let Some(joined) = next.take() {
                            if let Ok(done) = joined {
                                self.record(&mut batch, done, &mut docs)?;
                                recorded += 1;
                            }
                            next = fetches.try_join_next();
                        }
                        if recorded >= BATCH_RESULTS || fetches.is_empty() {
                            break;
                        }
                        match tokio::time::timeout_at(gather_until.into(), fetches.join_next()).await {
                            Ok(Some(joined)) => next = Some(joined),
                            _ => break,
                        }
                    }
                    batch.commit()?;
                    for msg in docs.drain(..) {
                        self.send_to_index(msg)?;
                    }
                }
                Some(joined) = lookups.join_next(), if !lookups.is_empty() => {
                    if let Ok((host_id, result)) = joined {
                        resolving.remove(&host_id);
                        self.take_address(frontier, host_id, result)?;
                    }
                }
                _ = tokio::time::sleep_until(wake.into()) => {}
                _ = tokio::time::sleep_until(deadline.into()), if drain_until.is_none() => {
                    tracing::info!("--max-duration reached: stopping the crawl");
                    dispatching = false;
                    self.summary.ended = StopReason::Time;
                    drain_until = Some(Instant::now() + self.config.drain);
                }
                _ = &mut shutdown, if !interrupted => {
                    tracing::info!("interrupted: stopping the crawl");
                    interrupted = true;
                    dispatching = false;
                    self.summary.ended = StopReason::Signal;
                    let until = Instant::now() + self.config.drain;
                    drain_until = Some(drain_until.map_or(until, |d| d.min(until)));
                }
            }
            if drain_until.is_some_and(|at| Instant::now() >= at) && !fetches.is_empty() {
                // What did not finish in time is dropped; its URLs stay claimed and return to
                // the frontier when the run ends, for a later run.
                tracing::info!(
                    unfinished = fetches.len(),
                    "requests still in flight dropped"
                );
                fetches.abort_all();
                lookups.abort_all();
            }
            if retry_at.is_some_and(|at| Instant::now() >= at) {
                retry_at = None;
                frontier_has_more = true;
            }
        }
        self.log_progress();
        Ok(())
    }

    /// When the next retry or capsule back-off comes due, if that is within the horizon.
    fn due_retry(&self, frontier: &Frontier) -> Result<Option<Instant>, CrawlError> {
        let now = unix_now();
        let Some(at) = frontier.next_wakeup(now)? else {
            return Ok(None);
        };
        let wait = Duration::from_secs((at - now).max(0) as u64);
        Ok((wait <= self.config.retry_horizon).then(|| Instant::now() + wait))
    }

    /// Puts claimed URLs into the scheduler (at the front of their capsule's queue when
    /// `first`), with robots.txt rules read earlier in this run for capsules it does not know.
    fn take_claimed(
        &mut self,
        frontier: &Frontier,
        claimed: Vec<QueuedUrl>,
        first: bool,
    ) -> Result<(), CrawlError> {
        let now = Instant::now();
        for url in claimed {
            let host_id = url.host_id;
            let new_capsule = !self.scheduler.knows(host_id);
            self.scheduler.push(url, first, now);
            if new_capsule {
                // Rules read by an earlier run are read again: a capsule's robots.txt may have
                // changed since, and pages it now disallows must leave the index.
                if let Some(cached) = frontier.robots(host_id)? {
                    let age = unix_now() - cached.fetched_at;
                    let this_run = cached.fetched_at >= self.run_started;
                    if this_run
                        && age < scheduler::ROBOTS_TTL.as_secs() as i64
                        && cached.status / 10 != 4
                    {
                        let robots = cached
                            .text
                            .as_deref()
                            .map(Robots::parse)
                            .unwrap_or_default();
                        let read_at = now
                            .checked_sub(Duration::from_secs(age.max(0) as u64))
                            .unwrap_or(now);
                        self.scheduler.set_robots(host_id, robots, read_at, now);
                    }
                }
            }
        }
        Ok(())
    }

    /// Claims from the frontier, timing the claim for the summary.
    fn timed_claim(
        &mut self,
        claim: impl FnOnce(&mut Frontier, i64) -> Result<Vec<QueuedUrl>, FrontierError>,
        frontier: &mut Frontier,
    ) -> Result<Vec<QueuedUrl>, CrawlError> {
        let started = Instant::now();
        let claimed = claim(frontier, unix_now())?;
        let ms = started.elapsed().as_secs_f64() * 1000.0;
        self.summary.claims += 1;
        self.summary.claim_total_ms += ms;
        self.summary.claim_max_ms = self.summary.claim_max_ms.max(ms);
        Ok(claimed)
    }

    /// Does what recorded results asked for, then keeps the leased capsules fed: capsules whose
    /// queue ran dry get more of their due URLs, and those with nothing left are let go.
    /// Returns whether the frontier may have more capsules due.
    fn follow_up(&mut self, frontier: &mut Frontier) -> Result<bool, CrawlError> {
        let effects = std::mem::take(&mut self.effects);
        let mut more = effects.new_urls;
        for host_id in effects.wake {
            self.scheduler.set_exhausted(host_id, false);
        }
        for (host_id, kind, message) in effects.unreachable {
            self.record_unreachable(frontier, host_id, &kind, &message)?;
            more = true;
        }
        // Entries of capsules not leased now come first when theirs is (they are hubs).
        let hubs: Vec<i64> = effects
            .hubs
            .iter()
            .filter(|(_, host_id)| self.scheduler.is_leased(*host_id))
            .map(|&(id, _)| id)
            .collect();
        if !hubs.is_empty() {
            let claimed = self.timed_claim(|f, now| f.claim_ids(&hubs, now), frontier)?;
            self.take_claimed(frontier, claimed, true)?;
        }
        for host_id in self.scheduler.wanting_more() {
            let urls =
                self.timed_claim(|f, now| f.claim_more(host_id, PER_CAPSULE, now), frontier)?;
            self.scheduler
                .set_exhausted(host_id, urls.len() < PER_CAPSULE);
            self.take_claimed(frontier, urls, false)?;
        }
        for host_id in self.scheduler.take_finished() {
            frontier.release_capsule(host_id)?;
            more = true;
        }
        Ok(more)
    }

    fn take_address(
        &mut self,
        frontier: &mut Frontier,
        host_id: i64,
        result: Result<SocketAddr, FetchError>,
    ) -> Result<(), CrawlError> {
        match result {
            Ok(addr) => {
                let now = Instant::now();
                let wait = self.scheduler.ip_wait(addr.ip(), now);
                if wait > self.config.retry_horizon {
                    // Its address asked for a wait longer than this run waits (a 44 to another
                    // capsule on it): the capsule joins the others there, in a later run.
                    let until = unix_now().saturating_add(wait.as_secs() as i64);
                    let mut batch = frontier.batch(unix_now())?;
                    self.defer_capsule(&mut batch, host_id, until)?;
                    batch.commit()?;
                } else {
                    self.scheduler.set_address(host_id, addr, now);
                }
            }
            Err(e) => {
                tracing::debug!(host_id, error = %e, "no address");
                self.effects
                    .unreachable
                    .push((host_id, e.kind().to_string(), e.to_string()));
                self.follow_up(frontier)?;
            }
        }
        Ok(())
    }

    /// Rewrites the documents of the pages whose inbound link labels changed, from what the
    /// index and the frontier store: no request. Waits for the indexing thread to commit first,
    /// so every page visited in this run is settled in the frontier and readable in the index.
    /// Returns the anchor updates handled, to forget once the thread has committed them.
    async fn refresh_anchors(
        &mut self,
        frontier: &Frontier,
        deadline: Option<Instant>,
    ) -> Result<Vec<i64>, CrawlError> {
        let (ack_tx, ack_rx) = std::sync::mpsc::sync_channel(1);
        self.send_to_index(IndexMsg::Flush(ack_tx))?;
        tokio::task::spawn_blocking(move || ack_rx.recv())
            .await
            .map_err(|e| CrawlError::IndexerStopped(e.to_string()))?
            .map_err(|_| CrawlError::IndexerStopped("it ended before committing".into()))?;
        let mut handled = Vec::new();
        let mut pages = HashSet::new();
        let mut after = 0;
        while !deadline.is_some_and(|d| Instant::now() >= d) {
            let updates = frontier.anchor_updates(after, ANCHOR_CHUNK)?;
            let Some(last) = updates.last() else { break };
            after = last.dirty_id;
            for update in updates {
                handled.push(update.dirty_id);
                let Some(page) = update.page else { continue };
                if !pages.insert(page.id) {
                    continue;
                }
                let anchors = frontier
                    .inbound_labels(page.id, record::MAX_ANCHORS)?
                    .join("\n");
                let link_labels = frontier.own_labels(page.id)?.join("\n");
                // A file known by its header carries the labels of links to it in its body.
                let body = match (page.header_only, Url::parse(&page.url)) {
                    (true, Ok(url)) => {
                        let described =
                            content::extract(&url, page.mime.as_deref().unwrap_or(""), &[]).body;
                        Some(format!("{described}\n{anchors}"))
                    }
                    _ => None,
                };
                self.send_to_index(IndexMsg::Refresh {
                    url: page.url,
                    anchors,
                    link_labels,
                    body,
                })?;
            }
        }
        if !pages.is_empty() {
            tracing::info!(pages = pages.len(), "documents rewritten with new anchors");
        }
        Ok(handled)
    }

    fn send_to_index(&mut self, msg: IndexMsg) -> Result<(), CrawlError> {
        let sent = self
            .index_tx
            .as_ref()
            .map(|tx| tx.send(msg).is_ok())
            .unwrap_or(false);
        if sent {
            Ok(())
        } else {
            // The thread ended early; its own error is reported when it is joined.
            Err(CrawlError::IndexerStopped(
                "it ended during the crawl".into(),
            ))
        }
    }

    fn publish_progress(&self) {
        if let Some(tx) = &self.progress {
            tx.send_replace(Progress {
                pages_fetched: self.summary.fetched,
                errors: self.summary.failed,
                new: self.summary.new,
                changed: self.summary.changed,
                unchanged: self.summary.unchanged,
                removed: self.summary.removed,
                queued: self.scheduler.queued(),
                in_flight: self.scheduler.in_flight(),
                open_sockets: self.fetcher.sockets().open(),
                capsules_backed_off: self.summary.capsules_backed_off,
                slow_downs: self.summary.slow_downs,
            });
        }
    }

    fn log_progress(&self) {
        tracing::info!(
            fetched = self.summary.fetched,
            new = self.summary.new,
            changed = self.summary.changed,
            unchanged = self.summary.unchanged,
            removed = self.summary.removed,
            failed = self.summary.failed,
            queued = self.scheduler.queued(),
            in_flight = self.scheduler.in_flight(),
            robots_excluded = self.summary.robots_excluded,
            capsules_backed_off = self.summary.capsules_backed_off,
            open_sockets = self.fetcher.sockets().open(),
            "crawl progress"
        );
    }
}

/// Resolves a capsule key (`host` or `host:port`) to the address it is fetched from.
async fn lookup(
    host_id: i64,
    capsule: String,
    overrides: dns::Overrides,
) -> (i64, Result<SocketAddr, FetchError>) {
    let parsed = Url::parse(&format!("gemini://{capsule}/"));
    let result = match &parsed {
        Ok(u) => match u.host_str() {
            Some(host) => dns::resolve(host, u.port().unwrap_or(1965), &overrides)
                .await
                .map(|addrs| addrs[0]),
            None => Err(FetchError::Unresolved(capsule.clone())),
        },
        Err(_) => Err(FetchError::Unresolved(capsule.clone())),
    };
    (host_id, result)
}

/// One fetch task: the request, then, for content, the extraction on a blocking thread (at most
/// `parsers` at once), so the loop only records and parsing never holds up the I/O threads. The
/// socket is closed before the extraction starts.
async fn fetch(
    fetcher: Fetcher,
    parsers: Arc<Semaphore>,
    url: String,
    addr: SocketAddr,
    host_id: i64,
    job: DoneJob,
) -> Done {
    let mut began = Instant::now();
    let fetched_at = unix_now();
    let mut took = None;
    let result = async {
        let parsed = Url::parse(&url)
            .map_err(|e| FetchError::Internal(format!("stored URL does not parse: {e}")))?;
        let mut response = match &job {
            DoneJob::Robots { .. } => fetcher.fetch_robots(&parsed, addr).await?,
            DoneJob::Page(url) => {
                // Revisits ask whether the version fetched last changed (HTTP validators).
                let known = crate::fetch::Validators {
                    etag: url.prior.etag.clone(),
                    last_modified: url.prior.last_modified.clone(),
                };
                fetcher.fetch_revisit(&parsed, addr, &known).await?
            }
        };
        // The request began, for the server and for politeness, when the connection was made
        // (a wait for a socket or a slow connect comes before).
        began = response.connected;
        took = Some(began.elapsed());
        let page = match (&job, &mut response.outcome) {
            (DoneJob::Page(_), Outcome::Success { meta, body }) => {
                let (meta, body) = (meta.clone(), std::mem::take(body));
                let _slot = parsers.acquire().await.expect("never closed");
                let page = tokio::task::spawn_blocking(move || extract(&parsed, &meta, &body))
                    .await
                    .map_err(|e| FetchError::Internal(format!("extraction failed: {e}")))?;
                Some(page)
            }
            _ => None,
        };
        Ok(Fetched { response, page })
    }
    .await;
    let took = took.unwrap_or_else(|| began.elapsed());
    Done {
        ip: addr.ip(),
        host_id,
        began,
        took,
        job,
        fetched_at,
        result,
    }
}

/// The CPU part of a fetch: text, links and title, the body's hash for duplicate detection, and
/// the body compressed for the archive.
fn extract(url: &Url, meta: &str, body: &[u8]) -> ExtractedPage {
    let read = crate::fetch::wants_body(meta);
    ExtractedPage {
        extracted: content::extract(url, meta, body),
        size: body.len() as u64,
        hash: read.then(|| crate::fetch::gemini::fingerprint_hex(body)),
        zstd: read.then(|| crate::frontier::archive::compress(body)),
    }
}
