//! The work of one fetch task, apart from the crawl loop: resolving a capsule's address, making
//! the request, and, for content, the CPU part (extraction, hash, compression for the archive)
//! on a blocking thread. A task reports a [`Done`] and touches no shared state but the fetcher's
//! memory budget: the page it reports holds its body's share until it is recorded, and a large
//! HTML page waits for room for its tree before it takes a parser.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ::url::Url;
use tokio::sync::Semaphore;

use super::scheduler::Queued;
use crate::clock::unix_now;
use crate::content::{self, Extracted};
use crate::fetch::memory::BodyLease;
use crate::fetch::{dns, FetchError, Fetcher, Outcome, Response};
use crate::frontier::QueuedUrl;
use crate::urlnorm;

/// The scheduler sees a claimed URL through [`Queued`] only.
impl Queued for QueuedUrl {
    fn capsule_id(&self) -> i64 {
        self.host_id
    }
    fn capsule_key(&self) -> &str {
        &self.host
    }
    fn url_str(&self) -> &str {
        &self.url
    }
}

/// What a fetch task reports.
pub(super) struct Done {
    pub(super) ip: IpAddr,
    pub(super) host_id: i64,
    /// When the request really began: the connection was made (the task starts a little after
    /// it is handed out, and may wait for a socket).
    pub(super) began: Instant,
    /// How long it took.
    pub(super) took: Duration,
    pub(super) job: DoneJob,
    pub(super) fetched_at: i64,
    pub(super) result: Result<Fetched, FetchError>,
}

impl Done {
    /// False when the connection would have been opened past the task's `not_after`
    /// ([`fetch`]): it sent nothing, and `result` is [`FetchError::NotSent`].
    pub(super) fn sent(&self) -> bool {
        !matches!(self.result, Err(FetchError::NotSent))
    }
}

pub(super) enum DoneJob {
    Robots { host_id: i64 },
    Page(Box<QueuedUrl>),
}

/// A response, with the page already extracted when it was content.
pub(super) struct Fetched {
    pub(super) response: Response,
    pub(super) page: Option<ExtractedPage>,
}

pub(super) struct ExtractedPage {
    pub(super) extracted: Extracted,
    pub(super) size: u64,
    /// SHA-256 of the body; `None` when only the header was read.
    pub(super) hash: Option<String>,
    /// The body compressed for the archive, when it was read.
    pub(super) zstd: Option<Vec<u8>>,
    /// The body's share of the fetcher's memory budget: what it took is held until the page is
    /// recorded and dropped, since the page extracted from it takes about as much.
    pub(super) memory: BodyLease,
    /// The page's links as the frontier records them, once worked out (see
    /// `Crawl::record_answers`).
    pub(super) links_out: Option<Vec<crate::frontier::LinkOut>>,
}

/// Resolves a capsule key ([`urlnorm::capsule_key`]) to the address it is fetched from.
pub(super) async fn lookup(
    host_id: i64,
    capsule: String,
    overrides: dns::Overrides,
) -> (i64, Result<SocketAddr, FetchError>) {
    let parts = urlnorm::Capsule::parse(&capsule);
    let result = if parts.host.is_empty() {
        Err(FetchError::Unresolved(capsule.clone()))
    } else {
        dns::resolve(parts.host, parts.port, &overrides)
            .await
            .map(|addrs| addrs[0])
    };
    (host_id, result)
}

/// Bodies up to this size are parsed on the I/O thread that fetched them: a few dozen
/// microseconds, less than handing the body to a blocking thread and back costs (two thread
/// wake-ups a page; on the bench farm, 4% of a crawl's CPU).
const INLINE_EXTRACT_BYTES: usize = 32 * 1024;

/// One fetch task: the request, then, for content, the extraction: of a small body at once, of
/// a larger one on a blocking thread (at most `parsers` at once), so the loop only records and
/// a long parse never holds up the I/O threads. The socket is closed before the extraction
/// starts. A parser that panics fails its URL only, as on a blocking thread.
///
/// A task that would open its connection after `not_after` sends nothing: the crawl stalled
/// between handing it out and its connection (a stopped process, a suspended host, a long wait
/// for a socket), long enough for the leases it was handed out under to run out, and the loop
/// puts the job back until it has renewed them. The fetcher checks at the last moment, before
/// each attempt to connect.
pub(super) async fn fetch(
    fetcher: Fetcher,
    parsers: Arc<Semaphore>,
    url: String,
    addr: SocketAddr,
    host_id: i64,
    job: DoneJob,
    not_after: Option<Instant>,
) -> Done {
    let mut began = Instant::now();
    let fetched_at = unix_now();
    let mut took = None;
    let result = async {
        let parsed = Url::parse(&url)
            .map_err(|e| FetchError::Internal(format!("stored URL does not parse: {e}")))?;
        let mut response = match &job {
            DoneJob::Robots { .. } => fetcher.fetch_robots(&parsed, addr, not_after).await?,
            DoneJob::Page(url) => {
                // Revisits ask whether the version fetched last changed (HTTP validators).
                let known = crate::fetch::Validators {
                    etag: url.prior.etag.clone(),
                    last_modified: url.prior.last_modified.clone(),
                };
                fetcher
                    .fetch_revisit(&parsed, addr, &known, not_after)
                    .await?
            }
        };
        // The request began, for the server and for politeness, when the connection was made
        // (a wait for a socket or a slow connect comes before). A wait for room in the memory
        // budget in between is no slowness of the server's.
        began = response.connected;
        took = Some(began.elapsed().saturating_sub(response.memory.waited()));
        let page = match (&job, &mut response.outcome) {
            (DoneJob::Page(_), Outcome::Success { meta, body }) => {
                let (meta, body) = (meta.clone(), std::mem::take(body));
                let memory = std::mem::replace(&mut response.memory, BodyLease::none());
                if body.len() <= INLINE_EXTRACT_BYTES {
                    let page = std::panic::catch_unwind(|| extract(&parsed, &meta, &body))
                        .map_err(|_| {
                            FetchError::Internal("extraction failed: it panicked".into())
                        })?;
                    Some(page.holding(memory))
                } else {
                    // Room for an HTML page's tree first, then a parser: the other way round, a
                    // page holding a parser could wait for room held by pages waiting for one.
                    let _tree = if content::is_html_meta(&meta) {
                        Some(fetcher.memory().tree_room(body.len()).await)
                    } else {
                        None
                    };
                    let _slot = parsers.acquire().await.expect("never closed");
                    let page = tokio::task::spawn_blocking(move || extract(&parsed, &meta, &body))
                        .await
                        .map_err(|e| FetchError::Internal(format!("extraction failed: {e}")))?;
                    Some(page.holding(memory))
                }
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
pub(super) fn extract(url: &Url, meta: &str, body: &[u8]) -> ExtractedPage {
    let read = crate::fetch::wants_body(meta);
    ExtractedPage {
        extracted: content::extract(url, meta, body),
        size: body.len() as u64,
        hash: read.then(|| crate::digest::sha256_hex(body)),
        zstd: read.then(|| crate::frontier::archive::compress(body)),
        memory: BodyLease::none(),
        links_out: None,
    }
}

impl ExtractedPage {
    /// The page, holding its body's share of the memory budget.
    fn holding(mut self, memory: BodyLease) -> ExtractedPage {
        self.memory = memory;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fetch::sockets::SocketBudget;
    use crate::fetch::FetchLimits;

    /// A task that would connect past its `not_after` (the crawl stalled after handing it
    /// out) opens no connection and reports that it sent nothing; one within it connects.
    #[tokio::test]
    async fn a_request_due_too_late_is_not_sent() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.set_nonblocking(true).expect("non-blocking");
        let addr = listener.local_addr().expect("address");
        let fetcher = Fetcher::new(FetchLimits::default(), SocketBudget::new(4));
        let parsers = Arc::new(Semaphore::new(1));
        let task = |not_after| {
            fetch(
                fetcher.clone(),
                Arc::clone(&parsers),
                "gemini://a.test/robots.txt".into(),
                addr,
                1,
                DoneJob::Robots { host_id: 1 },
                not_after,
            )
        };
        let late = task(Some(Instant::now() - Duration::from_secs(1))).await;
        assert!(!late.sent());
        assert!(matches!(late.result, Err(FetchError::NotSent)));
        assert_eq!(
            listener.accept().map(|_| ()).map_err(|e| e.kind()),
            Err(std::io::ErrorKind::WouldBlock),
            "no connection was made"
        );
        // In time: the request is sent (the listener never answers; the connection is what
        // counts, so the task is not waited for).
        let in_time = tokio::spawn(task(Some(Instant::now() + Duration::from_secs(60))));
        let started = Instant::now();
        let accepted = loop {
            match listener.accept() {
                Ok(_) => break true,
                Err(_) if started.elapsed() < Duration::from_secs(10) => {
                    tokio::time::sleep(Duration::from_millis(10)).await
                }
                Err(_) => break false,
            }
        };
        in_time.abort();
        assert!(accepted, "a task within its time connects");
    }
}
