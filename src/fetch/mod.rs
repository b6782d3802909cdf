//! The fetch layer: the only code in geode that resolves names and opens sockets.
//!
//! [`Fetcher`] takes a URL and the address to connect to (the crawl loop chooses it, because
//! politeness is per IP address) and returns a protocol-neutral [`Response`]: a status mapped to a
//! typed [`Outcome`]. Gemini is implemented in [`gemini`], HTTP and HTTPS in [`http`], which
//! maps HTTP statuses onto the same outcomes, so the crawl loop treats both alike. Both draw
//! their sockets from one [`sockets::SocketBudget`], and every fetch is bounded in time and bytes
//! ([`FetchLimits`]); the bodies of all fetches together draw on one [`memory::MemoryBudget`].

pub mod dns;
pub mod gemini;
pub mod http;
pub mod memory;
pub mod sockets;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use ::url::Url;

/// Bounds on one fetch. Every field is a hard limit.
#[derive(Debug, Clone)]
pub struct FetchLimits {
    /// Time to establish the TCP connection.
    pub connect_timeout: Duration,
    /// Time for the TLS handshake: a server that accepts connections and never answers is not
    /// waited for as long as a slow response.
    pub handshake_timeout: Duration,
    /// Time for everything after the TCP connection: handshake, request, header and body.
    pub response_timeout: Duration,
    /// Largest body kept; a longer body is an error ([`FetchError::BodyTooLarge`]).
    pub max_body_bytes: usize,
    /// Bytes the bodies of every fetch of a [`Fetcher`] (and its clones) hold together, besides
    /// the first [`memory::FREE_BYTES`] of each: a body waits for room before it grows past
    /// those. Never less than `max_body_bytes` (twice that over HTTP, where a compressed body
    /// and what it inflates to are held at once), so any body can be read.
    pub bodies_in_memory: usize,
    /// Bytes the document trees of large HTML bodies take together while they are read
    /// ([`memory::MemoryBudget::tree_room`]).
    pub trees_in_memory: usize,
    /// Close sockets with a reset (SO_LINGER of zero), which frees them at once and leaves no
    /// TIME_WAIT behind, instead of the OS's graceful close. A non-zero linger is not offered:
    /// it would make closing block a runtime thread.
    pub reset_on_close: bool,
}

impl Default for FetchLimits {
    fn default() -> Self {
        FetchLimits {
            connect_timeout: Duration::from_secs(10),
            handshake_timeout: Duration::from_secs(10),
            response_timeout: Duration::from_secs(30),
            max_body_bytes: 4 * 1024 * 1024,
            bodies_in_memory: 16 * 1024 * 1024,
            trees_in_memory: 24 * 1024 * 1024,
            reset_on_close: false,
        }
    }
}

/// What a server answered, independent of the protocol.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// 10/11: the resource wants input; geode never invents any.
    Input { prompt: String, sensitive: bool },
    /// 20: content. `body` is empty when the type is not text (only the header is read).
    Success { meta: String, body: Vec<u8> },
    /// 30/31: the target as written by the server (possibly relative).
    Redirect { target: String, permanent: bool },
    /// 40-49: try again later (44 is "slow down", meta holds seconds).
    TemporaryFailure { code: u8, message: String },
    /// 50-59: do not try again soon.
    PermanentFailure { code: u8, message: String },
    /// 60-69: a client certificate is wanted; geode never makes one up.
    CertificateRequired { code: u8, message: String },
    /// The resource has not changed since the validators sent with a conditional request
    /// (HTTP 304): the page is as it was.
    NotModified,
}

/// What a server said to recognise this version of a resource (HTTP `ETag` and
/// `Last-Modified`); Gemini has none.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Validators {
    pub etag: Option<String>,
    pub last_modified: Option<String>,
}

/// One request as the fetch layer makes it.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    /// Already normalised.
    pub url: &'a Url,
    /// Where to connect: the crawl chooses, since politeness is per address.
    pub addr: SocketAddr,
    pub cap: BodyCap,
    /// The validators of the version fetched last (conditional requests, where the protocol
    /// has them).
    pub known: &'a Validators,
    /// The latest the connection may be opened ([`FetchError::NotSent`] after it): the crawl's
    /// leases on the address may have run out by then.
    pub send_by: Option<Instant>,
}

/// A completed fetch.
#[derive(Debug)]
pub struct Response {
    /// The two-digit status as received (HTTP statuses are mapped onto Gemini's).
    pub status: u8,
    pub outcome: Outcome,
    /// SHA-256 of the server's leaf certificate, lower-case hex (for trust on first use).
    pub cert_fingerprint: Option<String>,
    /// From the start of the connection to the end of the response.
    pub elapsed: Duration,
    /// When the TCP connection was established: when the server saw the request begin, which
    /// is what politeness gaps are measured from.
    pub connected: std::time::Instant,
    /// Validators for a conditional revisit (HTTP only).
    pub validators: Validators,
    /// The TLS handshake resumed an earlier session (no certificate was sent or checked).
    pub resumed: bool,
    /// The body's share of the fetcher's [`memory::MemoryBudget`], held until this is dropped
    /// (or the lease is moved on with the body, as the crawl does).
    pub memory: memory::BodyLease,
}

/// The crawl's TLS primitives: ring's, with the TLS 1.3 suites in the order AES-128-GCM with
/// SHA-256, AES-256-GCM with SHA-384, then ChaCha20, and the TLS 1.2 suites after them with
/// AES-128-GCM with SHA-256 first (ECDSA, then RSA), the others as ring lists them. A server
/// that follows the client's order (rustls servers do by default) then picks a suite whose key
/// schedule or PRF hashes with SHA-256, which ring runs with the processor's SHA instructions
/// where it has them (this machine's do); SHA-384 ran in ring's generic code and was about 1.7%
/// of a crawl's CPU on the bench farm with TLS 1.3, SHA-256 0.4% after, and with TLS 1.2 (asked
/// for first: `gemini.rs`) SHA-384 was back at 1.1%. Either suite is as safe as the other for a
/// crawler.
fn tls_provider() -> std::sync::Arc<rustls::crypto::CryptoProvider> {
    let mut provider = rustls::crypto::ring::default_provider();
    let rank = |suite: &rustls::SupportedCipherSuite| match suite.suite() {
        rustls::CipherSuite::TLS13_AES_128_GCM_SHA256 => 0,
        rustls::CipherSuite::TLS13_AES_256_GCM_SHA384 => 1,
        rustls::CipherSuite::TLS13_CHACHA20_POLY1305_SHA256 => 2,
        rustls::CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256 => 3,
        rustls::CipherSuite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 => 4,
        _ => 5,
    };
    // A stable sort: what ranks alike keeps ring's order.
    provider.cipher_suites.sort_by_key(rank);
    std::sync::Arc::new(provider)
}

/// Servers whose TLS sessions a client remembers for resumption: more than a crawl takes turns
/// among (capsules are leased a few hundred at a time).
const RESUMED_SERVERS: usize = 1024;

/// How the crawl's TLS clients resume sessions. A resumed handshake spares both sides the
/// certificate and its signature: less work for geode, and for a capsule on a small machine,
/// whose signature is the dearest part of a handshake. rustls' store counts its capacity in
/// tickets, eight a server, so its default of 256 remembers 32 servers: a crawl taking turns
/// among a hundred capsules had forgotten a capsule's tickets by its next connection and
/// resumed almost none (16 of 10,100 handshakes on the bench-crawl farm).
fn resumption() -> rustls::client::Resumption {
    rustls::client::Resumption::store(std::sync::Arc::new(
        rustls::client::ClientSessionMemoryCache::new(RESUMED_SERVERS * 8),
    ))
}

/// Why a fetch produced no response. These are errors of one URL: they never stop a crawl.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    #[error("unsupported scheme {0}")]
    UnsupportedScheme(String),
    #[error("request line over 1024 bytes")]
    RequestTooLong,
    #[error("connect: {0}")]
    Connect(std::io::Error),
    #[error("timed out during {0}")]
    Timeout(&'static str),
    #[error("TLS: {0}")]
    Tls(String),
    #[error("I/O: {0}")]
    Io(std::io::Error),
    #[error("malformed header: {0}")]
    MalformedHeader(String),
    #[error("body over {0} bytes")]
    BodyTooLarge(usize),
    #[error("no address for host {0}")]
    Unresolved(String),
    /// A bug in geode met while handling the response (reported, never fatal to the crawl).
    #[error("internal error: {0}")]
    Internal(String),
    /// Nothing was sent: the connection would have been opened after the request's
    /// [`Request::send_by`] (the process stalled, or waited that long for a socket).
    #[error("not sent: past the time it was handed out for")]
    NotSent,
}

impl FetchError {
    /// A short stable name for statistics.
    pub fn kind(&self) -> &'static str {
        match self {
            FetchError::UnsupportedScheme(_) => "unsupported-scheme",
            FetchError::RequestTooLong => "request-too-long",
            FetchError::Connect(_) => "connect",
            FetchError::Timeout(_) => "timeout",
            FetchError::Tls(_) => "tls",
            FetchError::Io(_) => "io",
            FetchError::MalformedHeader(_) => "malformed-header",
            FetchError::BodyTooLarge(_) => "body-too-large",
            FetchError::Unresolved(_) => "dns",
            FetchError::Internal(_) => "internal",
            FetchError::NotSent => "not-sent",
        }
    }
}

/// Whether a MIME type's body is worth downloading ([`crate::content::wants_body`]): text and
/// feeds are indexed; anything else is indexed by its URL, type and the labels of links to it,
/// so only its header is read. An empty meta (`20` or `20 `) is `text/gemini; charset=utf-8`,
/// as the specification says.
pub fn wants_body(meta: &str) -> bool {
    crate::content::wants_body(meta)
}

/// Fetches URLs of every scheme geode speaks.
#[derive(Clone)]
pub struct Fetcher {
    gemini: gemini::GeminiFetcher,
    http: http::HttpFetcher,
    budget: sockets::SocketBudget,
    memory: memory::MemoryBudget,
}

impl Fetcher {
    /// A fetcher whose sockets all count against `budget`; HTTPS servers are checked against
    /// the system's certificate authorities.
    pub fn new(limits: FetchLimits, budget: sockets::SocketBudget) -> Self {
        Fetcher::with_roots(limits, budget, http::trust_roots(&[]))
    }

    /// [`Fetcher::new`] with the HTTPS trust store given.
    pub fn with_roots(
        limits: FetchLimits,
        budget: sockets::SocketBudget,
        roots: rustls::RootCertStore,
    ) -> Self {
        let memory = memory::MemoryBudget::new(
            limits
                .bodies_in_memory
                .max(2 * limits.max_body_bytes + memory::FREE_BYTES),
            limits.trees_in_memory,
        );
        Fetcher {
            gemini: gemini::GeminiFetcher::new(limits.clone(), budget.clone(), memory.clone()),
            http: http::HttpFetcher::new(limits, budget.clone(), roots, memory.clone()),
            budget,
            memory,
        }
    }

    /// Names the operator's contact in HTTP requests' `User-Agent` (`--contact`).
    pub fn set_contact(&mut self, contact: &str) -> Result<(), String> {
        self.http.set_contact(contact)
    }

    /// The socket budget this fetcher draws from.
    pub fn sockets(&self) -> &sockets::SocketBudget {
        &self.budget
    }

    /// The memory budget its bodies draw from.
    pub fn memory(&self) -> &memory::MemoryBudget {
        &self.memory
    }

    /// Fetches `url` from `addr`. The URL must already be normalised. A body over the limit is
    /// an error.
    pub async fn fetch(&self, url: &Url, addr: SocketAddr) -> Result<Response, FetchError> {
        self.fetch_with(Request {
            url,
            addr,
            cap: BodyCap::Fail,
            known: &Validators::default(),
            send_by: None,
        })
        .await
    }

    /// [`Fetcher::fetch`] for a revisit: the validators of the version fetched last time go
    /// with the request (where the protocol has them), so that an unchanged resource comes back
    /// as [`Outcome::NotModified`] without its body. Nothing is sent after `send_by`
    /// ([`Request::send_by`]).
    pub async fn fetch_revisit(
        &self,
        url: &Url,
        addr: SocketAddr,
        known: &Validators,
        send_by: Option<Instant>,
    ) -> Result<Response, FetchError> {
        self.fetch_with(Request {
            url,
            addr,
            cap: BodyCap::Fail,
            known,
            send_by,
        })
        .await
    }

    /// Fetches a robots.txt: RFC 9309 asks crawlers to use at least the first 500 KiB of a
    /// longer file, so the body is cut at [`crate::robots::MAX_ROBOTS_BYTES`] instead of failing.
    /// Nothing is sent after `send_by` ([`Request::send_by`]).
    pub async fn fetch_robots(
        &self,
        url: &Url,
        addr: SocketAddr,
        send_by: Option<Instant>,
    ) -> Result<Response, FetchError> {
        self.fetch_with(Request {
            url,
            addr,
            cap: BodyCap::Truncate(crate::robots::MAX_ROBOTS_BYTES),
            known: &Validators::default(),
            send_by,
        })
        .await
    }

    async fn fetch_with(&self, request: Request<'_>) -> Result<Response, FetchError> {
        match request.url.scheme() {
            "gemini" => {
                self.gemini
                    .fetch(request.url, request.addr, request.cap, request.send_by)
                    .await
            }
            "http" | "https" => self.http.fetch(request).await,
            other => Err(FetchError::UnsupportedScheme(other.to_string())),
        }
    }
}

/// What to do with a body longer than allowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyCap {
    /// Over [`FetchLimits::max_body_bytes`]: [`FetchError::BodyTooLarge`].
    Fail,
    /// Keep the first this many bytes (never more than `max_body_bytes`) and stop reading.
    Truncate(usize),
}

/// Maps a two-digit status and its meta onto an [`Outcome`]. Codes outside 10..=69 are malformed;
/// an unknown code inside the range is handled by its first digit, as the specification asks.
pub fn outcome_of(status: u8, meta: &str) -> Result<Outcome, FetchError> {
    let meta = meta.to_string();
    Ok(match status / 10 {
        1 => Outcome::Input {
            prompt: meta,
            sensitive: status == 11,
        },
        2 => Outcome::Success {
            meta,
            body: Vec::new(),
        },
        3 => Outcome::Redirect {
            target: meta,
            permanent: status == 31,
        },
        4 => Outcome::TemporaryFailure {
            code: status,
            message: meta,
        },
        5 => Outcome::PermanentFailure {
            code: status,
            message: meta,
        },
        6 => Outcome::CertificateRequired {
            code: status,
            message: meta,
        },
        _ => {
            return Err(FetchError::MalformedHeader(format!(
                "status {status:02} outside 10-69"
            )))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tls_suites_are_ring_s_with_sha_256_first() {
        let ours: Vec<_> = tls_provider()
            .cipher_suites
            .iter()
            .map(|s| s.suite())
            .collect();
        assert_eq!(ours[0], rustls::CipherSuite::TLS13_AES_128_GCM_SHA256);
        assert_eq!(ours[1], rustls::CipherSuite::TLS13_AES_256_GCM_SHA384);
        assert_eq!(
            ours[3..5],
            [
                rustls::CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
                rustls::CipherSuite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256
            ]
        );
        let mut ring: Vec<_> = rustls::crypto::ring::default_provider()
            .cipher_suites
            .iter()
            .map(|s| s.suite())
            .collect();
        let mut sorted = ours.clone();
        ring.sort_by_key(|s| u16::from(*s));
        sorted.sort_by_key(|s| u16::from(*s));
        assert_eq!(sorted, ring, "the same suites, only reordered");
    }

    #[test]
    fn only_text_bodies_are_wanted_and_an_empty_meta_is_gemtext() {
        let cases = [
            ("text/gemini", true),
            ("text/gemini; charset=utf-8; lang=en", true),
            ("TEXT/Plain", true),
            (" text/markdown ", true),
            // Issue 12, item 9: `20` and `20 ` carry no type; the specification's default is
            // text/gemini, and the body was thrown away.
            ("", true),
            ("   ", true),
            ("; charset=utf-8", true),
            ("image/png", false),
            ("application/octet-stream", false),
            ("text", false),
            ("texts/plain", false),
        ];
        for (meta, want) in cases {
            assert_eq!(wants_body(meta), want, "{meta:?}");
        }
    }
}
