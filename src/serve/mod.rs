//! `geode serve`: the Gemini frontend, and with `--http` the web one ([`web`]). Answers Gemini
//! clients over TLS, and web browsers and scripts over HTTP, with search results, backlinks and
//! statistics read live from a data directory a crawl may be writing.
//!
//! Layout: [`request`] turns the bytes a client sent into a route or a refusal (pure),
//! [`render`] is the safe gemtext builder and its escaping (pure), [`pages`] the pages built
//! with it (pure), [`ratelimit`] holds the per-client limits, [`cert`] the TLS identity,
//! [`backend`] the index and crawl database readers, `connection` one connection from accept to
//! close, `answer` what each route answers, [`web`] the HTTP side. This file holds the
//! configuration, binds both kinds of listener, runs the Gemini accept loops with the budgets
//! both frontends share, and the shutdown.
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
//! Not here: writing the index (only the crawl does), client certificates.

mod answer;
pub mod backend;
pub mod cert;
mod connection;
pub mod pages;
pub mod ratelimit;
pub mod render;
pub mod request;
pub mod web;

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

use answer::respond;
pub use cert::Identity;
use connection::connection;
pub use connection::Response;

/// Everything `geode serve` needs to know, decided once from the command line.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    /// The data directory holding `crawl.sqlite` and `tantivy/`.
    pub data_dir: PathBuf,
    /// A shared crawl on PostgreSQL whose index `data_dir` holds (`--frontier`): statistics,
    /// backlinks and suggested seeds go there.
    pub shared: Option<crate::frontier::Location>,
    /// Addresses to listen on for Gemini (port 0 picks a free port).
    pub listen: Vec<SocketAddr>,
    /// Addresses to listen on for HTTP, the web frontend ([`web`]).
    pub http: Vec<SocketAddr>,
    /// A web proxy of Gemini pages that the web frontend's results also link through
    /// ([`web::route::proxied`]), e.g. `https://portal.example/gemini/`.
    pub http_gemini_proxy: Option<String>,
    /// Reverse proxies in front of the HTTP listeners: their requests are limited by the
    /// client they name in `X-Forwarded-For`, and their connections are not capped per client.
    pub http_trusted_proxies: Vec<std::net::IpAddr>,
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
    /// The sentence-embedding model searches also rank by (`--model`); by default the data
    /// directory's `model/` when it holds one.
    pub model: crate::embed::ModelChoice,
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
            shared: None,
            listen,
            http: Vec::new(),
            http_gemini_proxy: None,
            http_trusted_proxies: Vec::new(),
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
            model: crate::embed::ModelChoice::default(),
        }
    }
}

/// The model and vectors searches use besides words, as `config.model` says.
fn semantic(config: &ServeConfig) -> Result<Option<crate::embed::Semantic>, ServeError> {
    let semantic = crate::embed::Semantic::load(&config.model, &config.data_dir)
        .map_err(|e| ServeError::Model(e.to_string()))?;
    if let Some(semantic) = &semantic {
        tracing::info!(model = %semantic.model_dir().display(), "searching by meaning too");
    }
    Ok(semantic)
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
    #[error("{0}")]
    Model(String),
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
    http_addrs: Vec<SocketAddr>,
    http_listeners: Vec<TcpListener>,
    /// The certificate, when there is a Gemini listener.
    identity: Option<Identity>,
    shared: Arc<Shared>,
}

/// What every connection needs.
struct Shared {
    hostname: String,
    /// TLS for the Gemini listeners (`None` when there are none).
    acceptor: Option<TlsAcceptor>,
    /// What only the web frontend uses.
    web: web::Settings,
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
        if config.listen.is_empty() && config.http.is_empty() {
            return Err(ServeError::NoListener);
        }
        let (identity, acceptor) = if config.listen.is_empty() {
            (None, None)
        } else {
            let (identity, acceptor) = tls(&config).await?;
            (Some(identity), Some(acceptor))
        };
        let (listeners, addrs) = bind_all(&config.listen)?;
        let (http_listeners, http_addrs) = bind_all(&config.http)?;
        let max_connections = config.max_connections.clamp(1, Semaphore::MAX_PERMITS);
        let shared = Arc::new(Shared {
            hostname: config.hostname.clone(),
            acceptor,
            web: web::Settings::new(&config),
            backend: Arc::new(
                Backend::new(&config.data_dir, config.shared.clone())
                    .with_semantic(semantic(&config)?),
            ),
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
            http_addrs,
            http_listeners,
            identity,
            shared,
        })
    }

    /// The bound addresses, in the order of [`ServeConfig::listen`].
    pub fn local_addrs(&self) -> &[SocketAddr] {
        &self.addrs
    }

    /// The bound HTTP addresses, in the order of [`ServeConfig::http`].
    pub fn http_addrs(&self) -> &[SocketAddr] {
        &self.http_addrs
    }

    /// The certificate served, its fingerprint and where it came from; `None` without a
    /// Gemini listener.
    pub fn identity(&self) -> Option<&Identity> {
        self.identity.as_ref()
    }

    /// Serves until `shutdown` resolves, then stops accepting and gives open connections
    /// [`Timeouts::shutdown_grace`] to finish.
    pub async fn run(self, shutdown: impl Future<Output = ()>) {
        let Server {
            listeners,
            http_listeners,
            shared,
            ..
        } = self;
        let (stop, stop_rx) = watch::channel(false);
        let mut loops: Vec<_> = listeners
            .into_iter()
            .map(|listener| {
                tokio::spawn(accept_loop(listener, Arc::clone(&shared), stop_rx.clone()))
            })
            .collect();
        loops.extend(http_listeners.into_iter().map(|listener| {
            tokio::spawn(web::accept_loop(
                listener,
                Arc::clone(&shared),
                stop_rx.clone(),
            ))
        }));
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

/// The certificate (loaded or made) and the TLS configuration of the Gemini listeners.
async fn tls(config: &ServeConfig) -> Result<(Identity, TlsAcceptor), ServeError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let identity = {
        let (source, host, provider) = (
            config.cert.clone(),
            config.hostname.clone(),
            Arc::clone(&provider),
        );
        let ips: Vec<_> = config.listen.iter().map(SocketAddr::ip).collect();
        // Key generation and file reads block; keep them off the async workers.
        tokio::task::spawn_blocking(move || cert::load_or_create(&source, &host, &ips, &provider))
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
    Ok((identity, TlsAcceptor::from(Arc::new(tls))))
}

/// Binds every address, returning the listeners and the addresses they got (port 0 resolved).
fn bind_all(addrs: &[SocketAddr]) -> Result<(Vec<TcpListener>, Vec<SocketAddr>), ServeError> {
    let mut listeners = Vec::with_capacity(addrs.len());
    let mut bound = Vec::with_capacity(addrs.len());
    for addr in addrs {
        let listener = listen(*addr).map_err(|error| ServeError::Bind { addr: *addr, error })?;
        let local = listener
            .local_addr()
            .map_err(|error| ServeError::Bind { addr: *addr, error })?;
        bound.push(local);
        listeners.push(listener);
    }
    Ok((listeners, bound))
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

/// The next connection, or `None` once `stop` says so (or the server is gone). A failed
/// accept (usually EMFILE) is logged and retried after a pause, rather than spun on.
async fn accept_next(
    listener: &TcpListener,
    stop: &mut watch::Receiver<bool>,
) -> Option<(TcpStream, SocketAddr)> {
    loop {
        tokio::select! {
            // Err means the server was dropped: stop as well.
            _ = stop.changed() => return None,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => return Some(accepted),
                Err(e) => {
                    tracing::warn!("accept: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
        }
    }
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>, mut stop: watch::Receiver<bool>) {
    let local_port = listener.local_addr().map(|a| a.port()).unwrap_or(1965);
    let authority = Arc::new(Authority::new(&shared.hostname, local_port));
    // Never waits for a budget before accepting: a full pending budget evicts instead (module
    // doc, "Admission"), so a new client never queues behind idle sockets.
    while let Some((tcp, peer)) = accept_next(&listener, &mut stop).await {
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
}
