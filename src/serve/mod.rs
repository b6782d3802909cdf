//! `geode serve`: the Gemini frontend. Answers Gemini clients over TLS with search results,
//! backlinks and statistics read live from a data directory a crawl may be writing.
//!
//! Layout: [`request`] turns the bytes a client sent into a route or a refusal (pure),
//! [`pages`] renders gemtext with escaping (pure), [`ratelimit`] holds the per-client limits,
//! [`cert`] the TLS identity, [`backend`] the index and crawl database readers. This file binds
//! the listeners and runs the connections, with their limits, and the shutdown.
//!
//! One connection, one request, as Gemini wants: TLS handshake (at most
//! [`Timeouts::handshake`]), the request read into a fixed 1026-byte buffer (at most
//! [`Timeouts::request`]), one response, close_notify. A connection never lives longer than
//! [`Timeouts::connection`].
//!
//! # Admission
//!
//! A connection lives in two phases, with a budget each, so that idle sockets (which cost
//! their opener nothing) can never keep a real client out:
//!
//! 1. *Pending*, from `accept` to the request's CRLF: at most
//!    [`ServeConfig::max_pending_connections`] (default 1024), with short time limits. The
//!    accept loops never wait for this budget: when it is full, a newcomer evicts the oldest
//!    pending connection of the client holding the most ([`ratelimit::PendingConnections`]),
//!    which is closed at once. A flood of idle connections thus displaces only itself, and a
//!    new client is accepted and handshaken at once whatever the flood.
//! 2. *Answering*, from the request to close_notify: at most
//!    [`ServeConfig::max_connections`] (default 256) at once. A connection with a request
//!    waits for a place here (still evictable while it waits), so request handling is never
//!    starved by connections that never send one.
//!
//! Besides, at most [`ServeConfig::max_connections_per_client`] connections of one client are
//! open at once, in either phase (extra ones are closed at once). Each request spends a token
//! of its client's bucket ([`ServeConfig::rate_limit`]); without one it is answered
//! `44 <seconds>`. Searches and database reads run on the blocking pool,
//! [`ServeConfig::blocking_slots`] at a time. Sockets open at once are thus bounded by the sum
//! of the two budgets; `geode serve` raises its descriptor limit and lowers the pending budget
//! to fit it.
//!
//! Not here: writing the index (only the crawl does), HTTP, client certificates.

pub mod backend;
pub mod cert;
pub mod pages;
pub mod ratelimit;
pub mod request;

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Semaphore};
use tokio_rustls::TlsAcceptor;

use backend::{Backend, SearchOutcome};
use cert::{CertError, CertSource};
use ratelimit::{ConnectionCounter, PendingConnections, PendingSlot, RateLimit, RateLimiter};
use request::{Authority, Framing, Route, MAX_REQUEST, PAGE_SIZE};

pub use cert::Identity;

/// Everything `geode serve` needs to know, decided once from the command line.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    /// The data directory holding `crawl.sqlite` and `tantivy/`.
    pub data_dir: PathBuf,
    /// Addresses to listen on (port 0 picks a free port).
    pub listen: Vec<SocketAddr>,
    /// The host name clients use; requests for other hosts are refused (53).
    pub hostname: String,
    pub cert: CertSource,
    /// Connections being answered (request read) at once, across all clients.
    pub max_connections: usize,
    /// Connections in their TLS handshake or request line at once, across all clients; when
    /// full, a new connection evicts an older one (module doc).
    pub max_pending_connections: usize,
    /// Connections open at once from one client (IPv4 address or IPv6 /64); 0 for no cap.
    pub max_connections_per_client: usize,
    /// Requests per client; `None` for no limit.
    pub rate_limit: Option<RateLimit>,
    /// Searches and database reads running at once.
    pub blocking_slots: usize,
    pub timeouts: Timeouts,
}

/// Time limits of one connection.
#[derive(Debug, Clone, Copy)]
pub struct Timeouts {
    pub handshake: Duration,
    /// From the end of the handshake to the request's CRLF.
    pub request: Duration,
    /// Writing the response to a client that reads slowly.
    pub write: Duration,
    /// The whole connection, from accept to close.
    pub connection: Duration,
    /// Waiting for a blocking slot before answering 40.
    pub busy: Duration,
    /// How long shutdown waits for open connections.
    pub shutdown_grace: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            handshake: Duration::from_secs(5),
            request: Duration::from_secs(5),
            write: Duration::from_secs(30),
            connection: Duration::from_secs(60),
            busy: Duration::from_secs(5),
            shutdown_grace: Duration::from_secs(5),
        }
    }
}

/// Default cap on connections being answered.
pub const DEFAULT_MAX_CONNECTIONS: usize = 256;
/// Default cap on connections that have not sent their request yet.
pub const DEFAULT_MAX_PENDING_CONNECTIONS: usize = 1024;
/// Default cap on one client's open connections.
pub const DEFAULT_MAX_CONNECTIONS_PER_CLIENT: usize = 32;
/// Default rate limit: 5 requests per second, bursts of 20.
pub const DEFAULT_RATE_LIMIT: RateLimit = RateLimit {
    per_second: 5.0,
    burst: 20,
};

impl ServeConfig {
    /// A configuration with the defaults and a self-signed certificate kept in
    /// `<data_dir>/serve/`.
    pub fn new(data_dir: &std::path::Path, listen: Vec<SocketAddr>, hostname: &str) -> Self {
        ServeConfig {
            data_dir: data_dir.to_path_buf(),
            listen,
            hostname: hostname.to_string(),
            cert: CertSource::SelfSigned {
                dir: crate::datadir::serve_path(data_dir),
            },
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_pending_connections: DEFAULT_MAX_PENDING_CONNECTIONS,
            max_connections_per_client: DEFAULT_MAX_CONNECTIONS_PER_CLIENT,
            rate_limit: Some(DEFAULT_RATE_LIMIT),
            blocking_slots: std::thread::available_parallelism()
                .map(|n| n.get() * 2)
                .unwrap_or(4),
            timeouts: Timeouts::default(),
        }
    }
}

/// Errors that stop the server from starting. Causes are part of the messages and never also
/// a `source()`, so a `{:#}` chain prints each once.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("certificate: {0}")]
    Cert(CertError),
    #[error("cannot listen on {addr}: {error}")]
    Bind {
        addr: SocketAddr,
        error: std::io::Error,
    },
    #[error("TLS configuration: {0}")]
    Tls(String),
    #[error("nothing to listen on")]
    NoListener,
    #[error("starting: {0}")]
    Start(String),
}

impl From<CertError> for ServeError {
    fn from(e: CertError) -> Self {
        ServeError::Cert(e)
    }
}

/// A bound server, not yet serving.
pub struct Server {
    addrs: Vec<SocketAddr>,
    listeners: Vec<TcpListener>,
    identity: Identity,
    shared: Arc<Shared>,
}

/// What every connection needs.
struct Shared {
    hostname: String,
    acceptor: TlsAcceptor,
    backend: Arc<Backend>,
    limiter: RateLimiter,
    per_client: ConnectionCounter,
    /// Connections before their request (module doc, "Admission").
    pending: PendingConnections,
    /// Places for connections being answered.
    answering: Arc<Semaphore>,
    /// Every connection task, for the drain at shutdown.
    open: Arc<OpenConnections>,
    blocking: Arc<Semaphore>,
    timeouts: Timeouts,
}

/// How many connection tasks are running, and a signal when none is.
#[derive(Default)]
struct OpenConnections {
    count: std::sync::atomic::AtomicUsize,
    none: tokio::sync::Notify,
}

/// A running connection task; counted while it lives.
struct OpenConnection(Arc<OpenConnections>);

impl OpenConnections {
    fn enter(self: &Arc<Self>) -> OpenConnection {
        self.count.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        OpenConnection(Arc::clone(self))
    }

    /// Resolves once no connection task is running.
    async fn drained(&self) {
        loop {
            // Created before the check: notify_waiters reaches it even before it is polled.
            let notified = self.none.notified();
            if self.count.load(std::sync::atomic::Ordering::Acquire) == 0 {
                return;
            }
            notified.await;
        }
    }
}

impl Drop for OpenConnection {
    fn drop(&mut self) {
        if self
            .0
            .count
            .fetch_sub(1, std::sync::atomic::Ordering::AcqRel)
            == 1
        {
            self.0.none.notify_waiters();
        }
    }
}

impl Server {
    /// Loads or makes the certificate and binds every address.
    pub async fn bind(config: ServeConfig) -> Result<Server, ServeError> {
        if config.listen.is_empty() {
            return Err(ServeError::NoListener);
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let identity = {
            let (source, host, provider) = (
                config.cert.clone(),
                config.hostname.clone(),
                Arc::clone(&provider),
            );
            let ips: Vec<_> = config.listen.iter().map(SocketAddr::ip).collect();
            // Key generation and file reads block; keep them off the async workers.
            tokio::task::spawn_blocking(move || {
                cert::load_or_create(&source, &host, &ips, &provider)
            })
            .await
            .map_err(|e| ServeError::Start(e.to_string()))??
        };
        let tls = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| ServeError::Tls(e.to_string()))?
            .with_no_client_auth()
            .with_cert_resolver(Arc::new(rustls::sign::SingleCertAndKey::from(Arc::clone(
                &identity.key,
            ))));

        let mut listeners = Vec::with_capacity(config.listen.len());
        let mut addrs = Vec::with_capacity(config.listen.len());
        for addr in &config.listen {
            let listener =
                listen(*addr).map_err(|error| ServeError::Bind { addr: *addr, error })?;
            let local = listener
                .local_addr()
                .map_err(|error| ServeError::Bind { addr: *addr, error })?;
            addrs.push(local);
            listeners.push(listener);
        }
        let max_connections = config.max_connections.clamp(1, Semaphore::MAX_PERMITS);
        let shared = Arc::new(Shared {
            hostname: config.hostname.clone(),
            acceptor: TlsAcceptor::from(Arc::new(tls)),
            backend: Arc::new(Backend::new(&config.data_dir)),
            limiter: RateLimiter::new(config.rate_limit),
            per_client: ConnectionCounter::new(config.max_connections_per_client),
            pending: PendingConnections::new(config.max_pending_connections),
            answering: Arc::new(Semaphore::new(max_connections)),
            open: Arc::default(),
            blocking: Arc::new(Semaphore::new(config.blocking_slots.max(1))),
            timeouts: config.timeouts,
        });
        Ok(Server {
            addrs,
            listeners,
            identity,
            shared,
        })
    }

    /// The bound addresses, in the order of [`ServeConfig::listen`].
    pub fn local_addrs(&self) -> &[SocketAddr] {
        &self.addrs
    }

    /// The certificate served, its fingerprint and where it came from.
    pub fn identity(&self) -> &Identity {
        &self.identity
    }

    /// Serves until `shutdown` resolves, then stops accepting and gives open connections
    /// [`Timeouts::shutdown_grace`] to finish.
    pub async fn run(self, shutdown: impl Future<Output = ()>) {
        let Server {
            listeners, shared, ..
        } = self;
        let (stop, stop_rx) = watch::channel(false);
        let loops: Vec<_> = listeners
            .into_iter()
            .map(|listener| {
                tokio::spawn(accept_loop(listener, Arc::clone(&shared), stop_rx.clone()))
            })
            .collect();
        shutdown.await;
        tracing::info!("shutting down: no new connections");
        // An error only means every accept loop has already ended.
        let _ = stop.send(true);
        for handle in loops {
            let _ = handle.await;
        }
        let drained = tokio::time::timeout(shared.timeouts.shutdown_grace, shared.open.drained());
        if drained.await.is_err() {
            tracing::warn!(
                "connections still open after {:?}; leaving them",
                shared.timeouts.shutdown_grace
            );
        }
    }
}

/// A listening socket. IPv6 sockets are IPv6-only, so that `[::]:1965` and `0.0.0.0:1965` can be
/// listened on side by side (Linux would otherwise have the first take both).
fn listen(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let socket = if addr.is_ipv6() {
        let socket = tokio::net::TcpSocket::new_v6()?;
        only_v6(&socket)?;
        socket
    } else {
        tokio::net::TcpSocket::new_v4()?
    };
    // A restarted server can listen again at once, despite connections in TIME_WAIT.
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(1024)
}

#[cfg(unix)]
fn only_v6(socket: &tokio::net::TcpSocket) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let on: libc::c_int = 1;
    // SAFETY: setsockopt reads `size_of::<c_int>()` bytes from `on`, an int we own, for a
    // socket we own.
    let result = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::IPPROTO_IPV6,
            libc::IPV6_V6ONLY,
            (&on as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if result == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

#[cfg(not(unix))]
fn only_v6(_socket: &tokio::net::TcpSocket) -> std::io::Result<()> {
    Ok(())
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>, mut stop: watch::Receiver<bool>) {
    let local_port = listener.local_addr().map(|a| a.port()).unwrap_or(1965);
    let authority = Arc::new(Authority::new(&shared.hostname, local_port));
    loop {
        // Never waits for a budget before accepting: a full pending budget evicts instead
        // (module doc, "Admission"), so a new client never queues behind idle sockets.
        let accepted = tokio::select! {
            // Err means the server was dropped: stop as well.
            _ = stop.changed() => break,
            accepted = listener.accept() => accepted,
        };
        let (tcp, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(e) => {
                // Usually EMFILE: back off instead of spinning on the error.
                tracing::warn!("accept: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let Some(client_slot) = shared.per_client.try_open(peer.ip()) else {
            tracing::debug!("{peer}: too many connections from this client; closed");
            continue;
        };
        let (pending, evicted) = shared.pending.admit(peer.ip());
        if evicted {
            tracing::debug!("pending connections full: closed one to admit {peer}");
        }
        let open = shared.open.enter();
        let shared = Arc::clone(&shared);
        let authority = Arc::clone(&authority);
        tokio::spawn(async move {
            let deadline = shared.timeouts.connection;
            let served = connection(&shared, &authority, tcp, peer, pending);
            if tokio::time::timeout(deadline, served).await.is_err() {
                tracing::debug!("{peer}: connection deadline reached");
            }
            drop(client_slot);
            drop(open);
        });
    }
}

/// A response: header and body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    pub status: u8,
    pub meta: String,
    pub body: Vec<u8>,
}

impl Response {
    fn header(status: u8, meta: impl Into<String>) -> Response {
        Response {
            status,
            meta: meta.into(),
            body: Vec::new(),
        }
    }

    fn gemtext(body: String) -> Response {
        Response {
            status: 20,
            meta: "text/gemini; charset=utf-8; lang=en".to_string(),
            body: body.into_bytes(),
        }
    }

    fn busy() -> Response {
        Response::header(40, "Server busy, try again in a moment")
    }
}

/// What the pending phase of a connection came to: the TLS stream and the bytes of the request
/// (or `None` when the client never finished its handshake or failed while sending).
type Received = Option<(
    tokio_rustls::server::TlsStream<TcpStream>,
    Box<[u8; MAX_REQUEST + 2]>,
    Option<Read>,
)>;

/// The pending phase: TLS handshake, then the request line, each within its time limit. The
/// request is `None` when its time ran out (answered 59).
async fn receive(shared: &Shared, tcp: TcpStream, peer: SocketAddr) -> Received {
    let mut stream =
        match tokio::time::timeout(shared.timeouts.handshake, shared.acceptor.accept(tcp)).await {
            Ok(Ok(stream)) => stream,
            Ok(Err(e)) => {
                tracing::debug!("{peer}: handshake failed: {e}");
                return None;
            }
            Err(_) => {
                tracing::debug!("{peer}: handshake timeout");
                return None;
            }
        };
    let mut buf = Box::new([0u8; MAX_REQUEST + 2]);
    let read = tokio::time::timeout(
        shared.timeouts.request,
        read_request(&mut stream, &mut buf[..]),
    );
    match read.await {
        Err(_) => Some((stream, buf, None)),
        Ok(Err(e)) => {
            tracing::debug!("{peer}: reading the request: {e}");
            None
        }
        Ok(Ok(read)) => Some((stream, buf, Some(read))),
    }
}

async fn connection(
    shared: &Shared,
    authority: &Authority,
    tcp: TcpStream,
    peer: SocketAddr,
    mut pending: PendingSlot,
) {
    let started = Instant::now();
    // Responses are small; do not let Nagle hold back the last segment.
    let _ = tcp.set_nodelay(true);
    let received = tokio::select! {
        () = pending.evicted() => {
            tracing::debug!("{peer}: closed before its request to make room for another client");
            return;
        }
        received = receive(shared, tcp, peer) => received,
    };
    let Some((mut stream, buf, read)) = received else {
        return;
    };
    // A place among the connections being answered; still evictable while waiting for it.
    let _answering = tokio::select! {
        () = pending.evicted() => {
            tracing::debug!("{peer}: closed while waiting to be answered, to make room");
            return;
        }
        place = Arc::clone(&shared.answering).acquire_owned() => match place {
            Ok(place) => place,
            Err(_) => return,
        },
    };
    drop(pending);
    let (framing, unread) = match read {
        None => (Framing::TimedOut, false),
        Some(read) => read.framing(&buf[..]),
    };
    let request_text = match framing {
        Framing::Line(line) => String::from_utf8_lossy(line).into_owned(),
        _ => String::new(),
    };

    let response = match shared.limiter.check(peer.ip(), Instant::now()) {
        Err(wait) => Response::header(44, wait.to_string()),
        Ok(()) => match request::parse(framing, authority) {
            Err(reject) => Response::header(reject.status(), reject.message()),
            Ok(request) => respond(shared, request.route).await,
        },
    };

    let write = async {
        let mut head = format!("{} {}\r\n", response.status, response.meta).into_bytes();
        head.extend_from_slice(&response.body);
        stream.write_all(&head).await?;
        // close_notify, then FIN: the client can tell a complete body from a cut one.
        stream.shutdown().await
    };
    match tokio::time::timeout(shared.timeouts.write, write).await {
        Ok(Ok(())) if unread => drain(&mut stream).await,
        Ok(Ok(())) => {}
        Ok(Err(e)) => tracing::debug!("{peer}: writing the response: {e}"),
        Err(_) => tracing::debug!("{peer}: too slow to read the response"),
    }
    tracing::debug!(
        "{peer} {request_text:?} -> {} {} ({} bytes, {:.1} ms)",
        response.status,
        response.meta,
        response.body.len(),
        started.elapsed().as_secs_f64() * 1000.0
    );
}

/// How the request arrived, as positions in the read buffer.
enum Read {
    /// A line ending in CRLF at `end` (exclusive of CRLF); `trailing` when bytes followed.
    Line {
        end: usize,
        trailing: bool,
    },
    TooLong,
    /// The client closed, or sent a bare LF, before CRLF.
    Unterminated,
}

impl Read {
    fn framing(self, buf: &[u8]) -> (Framing<'_>, bool) {
        match self {
            Read::Line { end, trailing } => (Framing::Line(&buf[..end]), trailing),
            Read::TooLong => (Framing::TooLong, true),
            Read::Unterminated => (Framing::Unterminated, false),
        }
    }
}

/// Reads into the caller's fixed buffer (the longest legal request plus CRLF), so a client
/// cannot make the server hold more than that.
async fn read_request<S: AsyncRead + Unpin>(
    stream: &mut S,
    buf: &mut [u8],
) -> std::io::Result<Read> {
    let mut filled = 0;
    loop {
        if let Some(lf) = buf[..filled].iter().position(|&b| b == b'\n') {
            if lf == 0 || buf[lf - 1] != b'\r' {
                return Ok(Read::Unterminated);
            }
            return Ok(Read::Line {
                end: lf - 1,
                trailing: lf + 1 < filled,
            });
        }
        if filled == buf.len() {
            return Ok(Read::TooLong);
        }
        match stream.read(&mut buf[filled..]).await? {
            0 => return Ok(Read::Unterminated),
            n => filled += n,
        }
    }
}

/// Closing a socket with unread bytes makes the kernel send RST, and the client may lose the
/// answer it has not read yet (typically the 59 for an over-long request). Reading the rest for
/// a moment lets the client see the answer and close first.
async fn drain<S: AsyncRead + Unpin>(stream: &mut S) {
    let mut sink = [0u8; 4096];
    let swallow = async {
        let mut total = 0usize;
        while total < 1 << 20 {
            match stream.read(&mut sink).await {
                Ok(0) | Err(_) => break,
                Ok(n) => total += n,
            }
        }
    };
    let _ = tokio::time::timeout(Duration::from_secs(1), swallow).await;
}

use crate::clock::unix_now;

const SEARCH_PROMPT: &str = "Search geminispace (words, \"phrases\", site:, lang:; see /about)";
const BACKLINKS_PROMPT: &str = "Which URL's backlinks? (e.g. gemini://example.org/)";
const SEED_PROMPT: &str = "Suggest a capsule for the next crawl (a gemini:// URL)";

async fn respond(shared: &Shared, route: Route) -> Response {
    match route {
        Route::About => Response::gemtext(pages::about()),
        Route::Robots => Response {
            status: 20,
            meta: "text/plain; charset=utf-8".to_string(),
            body: pages::robots().as_bytes().to_vec(),
        },
        Route::Search { query, page } => search(shared, query, page, false).await,
        Route::VerboseSearch { query, page } => search(shared, query, page, true).await,
        Route::Backlinks { url: None } => Response::header(10, BACKLINKS_PROMPT),
        Route::Backlinks { url: Some(input) } => backlinks(shared, input).await,
        Route::AddSeed { url: None } => Response::header(10, SEED_PROMPT),
        Route::AddSeed { url: Some(input) } => add_seed(shared, input).await,
        Route::Home | Route::Stats | Route::KnownHosts => {
            let now = unix_now();
            let snapshot = blocking(shared, move |b| b.snapshot(now)).await;
            let snapshot = match snapshot {
                Some(Ok(snapshot)) => snapshot,
                Some(Err(e)) => {
                    tracing::warn!("reading the crawl database: {e}");
                    return Response::header(40, "The crawl database cannot be read right now");
                }
                None => return Response::busy(),
            };
            Response::gemtext(match route {
                Route::Home => pages::home(
                    snapshot
                        .stats
                        .as_ref()
                        .map(|s| pages::Summary {
                            documents: snapshot.documents,
                            capsules: snapshot.hosts.len() as u64,
                            last_crawl: s
                                .last_crawl_finished
                                .as_deref()
                                .or(s.last_crawl_started.as_deref())
                                .and_then(|t| t.trim().parse().ok()),
                        })
                        .as_ref(),
                    now,
                ),
                Route::Stats => match &snapshot.stats {
                    Some(stats) => {
                        pages::stats(stats, snapshot.documents, snapshot.hosts.len() as u64, now)
                    }
                    None => pages::no_index(),
                },
                _ => pages::known_hosts(
                    &snapshot.hosts,
                    snapshot.stats.as_ref().map_or(0, |s| s.hosts),
                ),
            })
        }
    }
}

async fn search(shared: &Shared, query: Option<String>, page: usize, verbose: bool) -> Response {
    let Some(query) = query.filter(|q| !q.trim().is_empty()) else {
        return Response::header(10, SEARCH_PROMPT);
    };
    // The query language's own parser places the problem in a malformed query; the index would
    // only say that it is malformed.
    if let Err(e) = crate::query::parse(&query) {
        return Response::gemtext(pages::query_error(&e.to_string(), &e.caret_line(&query)));
    }
    let offset = (page - 1) * PAGE_SIZE;
    let q = query.clone();
    let outcome = blocking(shared, move |b| b.search(&q, PAGE_SIZE, offset)).await;
    match outcome {
        None => Response::busy(),
        Some(SearchOutcome::Found { results, elapsed }) => Response::gemtext(pages::results(
            pages::ResultsView {
                query: &query,
                page,
                results: &results,
                elapsed,
                verbose,
            },
            unix_now(),
        )),
        // A page rather than a new prompt: the explanation needs more than a prompt line, and
        // the page links back to the prompt.
        Some(SearchOutcome::BadQuery(message)) => {
            Response::gemtext(pages::query_error(&message, &query))
        }
        Some(SearchOutcome::NoIndex) => Response::gemtext(pages::no_index()),
        Some(SearchOutcome::Failed(e)) => {
            tracing::warn!("search failed: {e}");
            Response::header(40, "The index cannot be searched right now")
        }
    }
}

async fn backlinks(shared: &Shared, input: String) -> Response {
    let url = match crate::urlnorm::normalize(input.trim()) {
        Ok(url) => url.to_string(),
        Err(e) => {
            return Response::gemtext(pages::backlinks_bad_url(&input, &e.to_string()));
        }
    };
    let target = url.clone();
    match blocking(shared, move |b| b.backlinks(&target)).await {
        None => Response::busy(),
        Some(Ok(Some(found))) => Response::gemtext(pages::backlinks(&url, &found)),
        Some(Ok(None)) => Response::gemtext(pages::no_index()),
        Some(Err(e)) => {
            tracing::warn!("reading backlinks: {e}");
            Response::header(40, "The crawl database cannot be read right now")
        }
    }
}

/// A visitor's suggestion: a gemini:// URL is normalised and queued for the next crawl;
/// anything else gets the prompt again, saying why.
async fn add_seed(shared: &Shared, input: String) -> Response {
    let url = match crate::urlnorm::normalize(input.trim()) {
        Ok(url) if url.scheme() == "gemini" => url,
        Ok(_) => return Response::header(10, "Only gemini:// URLs can be suggested; try again"),
        Err(_) => return Response::header(10, "That is not a URL; try again (gemini://...)"),
    };
    let queued = url.clone();
    match blocking(shared, move |b| b.suggest_seed(&queued)).await {
        None => Response::busy(),
        Some(Ok(outcome)) => Response::gemtext(pages::seed_added(url.as_str(), outcome)),
        Some(Err(e)) => {
            tracing::warn!("recording a suggested seed: {e}");
            Response::header(40, "The suggestion cannot be recorded right now")
        }
    }
}

/// Runs `work` on the blocking pool once a slot is free; `None` when none frees up in time.
async fn blocking<T: Send + 'static>(
    shared: &Shared,
    work: impl FnOnce(&Backend) -> T + Send + 'static,
) -> Option<T> {
    let acquire = Arc::clone(&shared.blocking).acquire_owned();
    let permit = tokio::time::timeout(shared.timeouts.busy, acquire)
        .await
        .ok()?
        .ok()?;
    let backend = Arc::clone(&shared.backend);
    // The permit moves into the task: the slot stays taken until the work is done, even if
    // this connection gives up waiting for it.
    let task = tokio::task::spawn_blocking(move || {
        let result = work(&backend);
        drop(permit);
        result
    });
    match task.await {
        Ok(result) => Some(result),
        Err(e) => {
            tracing::warn!("a blocking read panicked or was cancelled: {e}");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[tokio::test]
    async fn ipv6_listeners_leave_ipv4_alone() {
        use std::os::fd::AsRawFd;
        let Ok(listener) = listen("[::1]:0".parse().unwrap()) else {
            println!("SKIPPED: no IPv6 loopback here");
            return;
        };
        let mut value: libc::c_int = 0;
        let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: getsockopt writes at most `len` bytes into `value`, which we own.
        let result = unsafe {
            libc::getsockopt(
                listener.as_raw_fd(),
                libc::IPPROTO_IPV6,
                libc::IPV6_V6ONLY,
                (&mut value as *mut libc::c_int).cast(),
                &mut len,
            )
        };
        assert_eq!(result, 0);
        assert_eq!(value, 1, "IPV6_V6ONLY");
        let v4 = listen("127.0.0.1:0".parse().unwrap()).expect("IPv4");
        assert!(v4.local_addr().unwrap().is_ipv4());
    }

    #[tokio::test]
    async fn requests_are_framed_by_crlf_within_the_fixed_buffer() {
        let long = vec![b'a'; 2000];
        let cases: Vec<(Vec<u8>, &str)> = vec![
            (b"gemini://h/\r\n".to_vec(), "line gemini://h/"),
            (b"gemini://h/\r\nextra".to_vec(), "line+ gemini://h/"),
            (b"gemini://h/\n".to_vec(), "unterminated"),
            (b"gemini://h/".to_vec(), "unterminated"),
            (b"\r\n".to_vec(), "line "),
            (long, "too long"),
        ];
        for (input, want) in cases {
            let mut reader = &input[..];
            let mut buf = [0u8; MAX_REQUEST + 2];
            let read = read_request(&mut reader, &mut buf).await.unwrap();
            let got = match read.framing(&buf) {
                (Framing::Line(l), false) => format!("line {}", String::from_utf8_lossy(l)),
                (Framing::Line(l), true) => format!("line+ {}", String::from_utf8_lossy(l)),
                (Framing::TooLong, _) => "too long".to_string(),
                (Framing::Unterminated, _) => "unterminated".to_string(),
                (Framing::TimedOut, _) => "timeout".to_string(),
            };
            assert_eq!(got, want, "{:?}", String::from_utf8_lossy(&input));
        }
        // Exactly 1024 bytes plus CRLF fits; one more byte does not.
        for (len, ok) in [(MAX_REQUEST, true), (MAX_REQUEST + 1, false)] {
            let mut input = vec![b'a'; len];
            input.extend_from_slice(b"\r\n");
            let mut reader = &input[..];
            let mut buf = [0u8; MAX_REQUEST + 2];
            let read = read_request(&mut reader, &mut buf).await.unwrap();
            assert_eq!(matches!(read, Read::Line { .. }), ok, "{len}");
        }
    }
}
