//! The crawl loop: claims URLs from the frontier, schedules them per IP address under the
//! politeness rules ([`scheduler`]), fetches them concurrently, records what happened in the
//! frontier and hands pages to the indexing thread ([`indexing`]).
//!
//! The loop is a single task that owns the scheduler and the frontier connection; fetches and DNS
//! lookups run as their own tasks and report back. The crawl ends when nothing is in flight,
//! nothing is queued and the frontier has nothing new (checked after the last results were
//! recorded, so it never ends early), at `max_pages`, or when `shutdown` resolves.

pub mod indexing;
pub mod policy;
mod record;
pub mod scheduler;

use std::collections::HashSet;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use ::url::Url;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use crate::content::{self, Extracted};
use crate::fetch::sockets::{self, SocketBudget};
use crate::fetch::{dns, FetchError, FetchLimits, Fetcher, Outcome, Response};
use crate::frontier::{FetchResult, Frontier, FrontierError, QueuedUrl, UrlState};
use crate::index::{IndexError, Indexer};
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

/// How long a cached robots.txt stays valid.
const ROBOTS_TTL: Duration = Duration::from_secs(24 * 3600);

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
        }
    }
}

/// The crawl database inside a data directory.
pub fn database_path(data_dir: &Path) -> PathBuf {
    data_dir.join("crawl.sqlite")
}

/// The Tantivy index inside a data directory.
pub fn index_path(data_dir: &Path) -> PathBuf {
    data_dir.join("tantivy")
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
}

/// Why a crawl ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum StopReason {
    /// Nothing was left to fetch.
    Exhausted,
    MaxPages,
    Interrupted,
}

/// What a crawl did.
#[derive(Debug, Clone, serde::Serialize)]
pub struct CrawlSummary {
    pub pages_fetched: u64,
    pub documents_indexed: u64,
    pub robots_fetched: u64,
    pub robots_excluded: u64,
    pub errors: u64,
    /// Pages whose body was already indexed under another URL.
    pub duplicates: u64,
    /// 44 answers received.
    pub slow_downs: u64,
    /// Capsules set aside for a while (41, robots.txt or address unavailable).
    pub capsules_backed_off: u64,
    /// The most crawler sockets open at once, and the budget they had.
    pub peak_sockets: usize,
    pub socket_budget: usize,
    pub urls_discovered: u64,
    pub elapsed_secs: f64,
    pub stop: StopReason,
}

/// What a fetch task reports.
struct Done {
    ip: IpAddr,
    /// When the request really began (the task starts a little after it is handed out).
    began: Instant,
    /// How long it took.
    took: Duration,
    job: DoneJob,
    fetched_at: i64,
    result: Result<Fetched, FetchError>,
}

enum DoneJob {
    Robots { host_id: i64 },
    Page(QueuedUrl),
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
}

fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

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
    // The writer lock comes first: it is what keeps two crawls off one data directory.
    let indexer = Indexer::open_or_create(&index_path(&config.data_dir))?;
    let db = database_path(&config.data_dir);
    let mut frontier = Frontier::open(&db)?;
    let (confirmed, requeued) = frontier.recover(indexer.committed_seq())?;
    if confirmed + requeued > 0 {
        tracing::info!(confirmed, requeued, "resumed an interrupted crawl");
    }
    add_seeds(&mut frontier, &config)?;
    frontier.set_meta("last_crawl_started", &unix_now().to_string())?;

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
            pages_fetched: 0,
            documents_indexed: 0,
            robots_fetched: 0,
            robots_excluded: 0,
            errors: 0,
            duplicates: 0,
            slow_downs: 0,
            capsules_backed_off: 0,
            peak_sockets: 0,
            socket_budget,
            urls_discovered: 0,
            elapsed_secs: 0.0,
            stop: StopReason::Exhausted,
        },
        config,
    };
    let outcome = crawl.run_loop(&mut frontier, shutdown).await;
    // Whatever happened, let the indexing thread commit what it has, then settle the frontier.
    crawl.index_tx = None;
    let indexed = tokio::task::spawn_blocking(move || index_thread.join())
        .await
        .map_err(|e| CrawlError::IndexerStopped(e.to_string()))?
        .map_err(|_| CrawlError::IndexerStopped("it panicked".into()))?;
    outcome?;
    let indexed = indexed?;
    frontier.release_queued()?;
    frontier.set_meta("last_crawl_finished", &unix_now().to_string())?;
    update_authority(frontier, index_path(&crawl.config.data_dir)).await;
    crawl.summary.documents_indexed = indexed.documents;
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

fn add_seeds(frontier: &mut Frontier, config: &CrawlConfig) -> Result<(), CrawlError> {
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
        frontier.add_seed(seed.as_str(), &urlnorm::capsule_key(seed))?;
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
        let mut dispatching = true;
        let mut interrupted = false;
        let mut pages_started: u64 = 0;
        let mut next_progress = Instant::now() + self.config.progress_every;
        let mut next_snapshot = Instant::now();
        let mut retry_at: Option<Instant> = None;
        let low_water = self.config.concurrency.max(16) * 4;

        loop {
            if dispatching && frontier_has_more && self.scheduler.queued() < low_water {
                let claimed = frontier.claim(low_water * 2, low_water, unix_now())?;
                frontier_has_more = !claimed.is_empty();
                self.take_claimed(frontier, claimed)?;
                for (host_id, host) in self.scheduler.unresolved() {
                    if resolving.insert(host_id) {
                        lookups.spawn(lookup(
                            host_id,
                            host.to_string(),
                            self.config.resolve.clone(),
                        ));
                    }
                }
            }

            let mut batch = frontier.batch()?;
            let mut docs = Vec::new();
            while dispatching && self.scheduler.in_flight() < self.config.concurrency {
                let Some(job) = self.scheduler.next_job(Instant::now()) else {
                    break;
                };
                match job {
                    Job::Disallowed(url) => {
                        let result = FetchResult {
                            error: Some("robots".into()),
                            meta: "disallowed by robots.txt".into(),
                            ..FetchResult::default()
                        };
                        batch.finish_url(url.id, UrlState::Excluded, &result)?;
                        self.summary.robots_excluded += 1;
                    }
                    Job::Robots {
                        host_id,
                        host,
                        addr,
                    } => {
                        let url = format!("gemini://{host}/robots.txt");
                        fetches.spawn(fetch(
                            self.fetcher.clone(),
                            Arc::clone(&self.parsers),
                            url,
                            addr,
                            DoneJob::Robots { host_id },
                        ));
                    }
                    Job::Page { url, addr } => {
                        pages_started += 1;
                        let target = url.url.clone();
                        fetches.spawn(fetch(
                            self.fetcher.clone(),
                            Arc::clone(&self.parsers),
                            target,
                            addr,
                            DoneJob::Page(url),
                        ));
                        if self
                            .config
                            .max_pages
                            .is_some_and(|max| pages_started >= max)
                        {
                            dispatching = false;
                            self.summary.stop = StopReason::MaxPages;
                        }
                    }
                }
            }
            batch.commit()?;

            let idle = fetches.is_empty() && lookups.is_empty();
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
                .max(now);
            tokio::select! {
                Some(joined) = fetches.join_next(), if !fetches.is_empty() => {
                    let mut batch = frontier.batch()?;
                    let mut new_urls = 0;
                    let mut next = Some(joined);
                    let mut recorded = 0;
                    // Record every result that is ready, and those arriving within a few
                    // milliseconds, in one transaction: fewer, larger transactions rewrite
                    // fewer database pages.
                    let gather_until = Instant::now() + BATCH_GATHER;
                    loop {
                        while let Some(joined) = next.take() {
                            if let Ok(done) = joined {
                                new_urls += self.record(&mut batch, done, &mut docs)?;
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
                    if new_urls > 0 {
                        frontier_has_more = true;
                    }
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
                _ = &mut shutdown, if !interrupted => {
                    tracing::info!("interrupted: stopping the crawl");
                    interrupted = true;
                    dispatching = false;
                    self.summary.stop = StopReason::Interrupted;
                    // Unfinished requests are dropped; their URLs stay queued and return to the
                    // frontier as new when the crawl ends.
                    fetches.abort_all();
                    lookups.abort_all();
                }
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
        let Some(at) = frontier.next_retry(now)? else {
            return Ok(None);
        };
        let wait = Duration::from_secs((at - now).max(0) as u64);
        Ok((wait <= self.config.retry_horizon).then(|| Instant::now() + wait))
    }

    /// Puts claimed URLs into the scheduler, with any cached robots.txt for new capsules.
    fn take_claimed(
        &mut self,
        frontier: &Frontier,
        claimed: Vec<QueuedUrl>,
    ) -> Result<(), CrawlError> {
        let now = Instant::now();
        for url in claimed {
            let host_id = url.host_id;
            let new_capsule = !self.scheduler.knows(host_id);
            self.scheduler.push(url, now);
            if new_capsule {
                if let Some(cached) = frontier.robots(host_id)? {
                    let fresh = unix_now() - cached.fetched_at < ROBOTS_TTL.as_secs() as i64;
                    if fresh && cached.status / 10 != 4 {
                        let robots = cached
                            .text
                            .as_deref()
                            .map(Robots::parse)
                            .unwrap_or_default();
                        self.scheduler.set_robots(host_id, robots, now);
                    }
                }
            }
        }
        Ok(())
    }

    fn take_address(
        &mut self,
        frontier: &mut Frontier,
        host_id: i64,
        result: Result<SocketAddr, FetchError>,
    ) -> Result<(), CrawlError> {
        match result {
            Ok(addr) => self.scheduler.set_address(host_id, addr, Instant::now()),
            Err(e) => {
                tracing::debug!(host_id, error = %e, "no address");
                let mut batch = frontier.batch()?;
                self.set_aside(&mut batch, host_id)?;
                batch.commit()?;
            }
        }
        Ok(())
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
                pages_fetched: self.summary.pages_fetched,
                errors: self.summary.errors,
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
            fetched = self.summary.pages_fetched,
            queued = self.scheduler.queued(),
            in_flight = self.scheduler.in_flight(),
            errors = self.summary.errors,
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
    job: DoneJob,
) -> Done {
    let began = Instant::now();
    let fetched_at = unix_now();
    let mut took = None;
    let result = async {
        let parsed = Url::parse(&url)
            .map_err(|e| FetchError::Internal(format!("stored URL does not parse: {e}")))?;
        let mut response = fetcher.fetch(&parsed, addr).await?;
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
        began,
        took,
        job,
        fetched_at,
        result,
    }
}

/// The CPU part of a fetch: text, links and title, and the body's hash for duplicate detection.
fn extract(url: &Url, meta: &str, body: &[u8]) -> ExtractedPage {
    ExtractedPage {
        extracted: content::extract(url, meta, body),
        size: body.len() as u64,
        hash: crate::fetch::wants_body(meta).then(|| crate::fetch::gemini::fingerprint_hex(body)),
    }
}
