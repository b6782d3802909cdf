//! The HTTP(S) client: one request per connection, over hyper's client connections (HTTP/1.1, or
//! HTTP/2 when TLS negotiates it through ALPN), on sockets geode opens itself, so the socket
//! budget, the per-IP politeness of the crawl (it picks the address) and the time and byte
//! limits are the same as for Gemini. There is no pool and no automatic redirect: a redirect is
//! an [`Outcome`], and the crawl counts hops across protocols.
//!
//! HTTPS certificates are verified against the system's trust store (`SSL_CERT_FILE` and
//! `SSL_CERT_DIR` are honoured, as curl honours them), plus any roots the caller adds; a failed
//! verification is [`FetchError::Tls`] and the page is not indexed. The web renews certificates
//! all the time, so none is returned for pinning.
//!
//! Statuses map onto Gemini's, so the crawl treats both protocols alike:
//!
//! | HTTP                              | geode                                           |
//! |-----------------------------------|-------------------------------------------------|
//! | 2xx                               | 20 success, meta = `Content-Type`               |
//! | 304 (after a conditional request) | [`Outcome::NotModified`], status 20             |
//! | 301, 308                          | 31 permanent redirect to `Location`             |
//! | 302, 303, 307 (and other 3xx)     | 30 temporary redirect to `Location`             |
//! | 404                               | 51 not found                                    |
//! | 410                               | 52 gone                                         |
//! | 429, or 503 with `Retry-After`    | 44 slow down, meta = seconds (none: no number)  |
//! | 503 without `Retry-After`         | 41 server unavailable                           |
//! | 502, 504                          | 43 proxy error                                  |
//! | other 5xx                         | 40 temporary failure                            |
//! | 401                               | 60 (credentials wanted: not indexable)          |
//! | 403                               | 61 (not authorised: not indexable)              |
//! | other 4xx                         | 59 bad request                                  |
//!
//! Bodies: `Accept-Encoding: gzip, br`; a compressed body is inflated with the body limit
//! applied to what comes out, so a small bomb cannot fill memory. Validators (`ETag`,
//! `Last-Modified`) come back in [`Response::validators`] and go out as `If-None-Match` and
//! `If-Modified-Since` on a revisit.

use std::io::Read;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ::url::Url;
use http_body_util::{BodyExt, Empty};
use hyper::body::{Bytes, Incoming};
use hyper::header::{self, HeaderMap, HeaderValue};
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_rustls::TlsConnector;

use super::gemini::{connect_within, handshake, server_name, within_besides};
use super::memory::{BodyLease, MemoryBudget};
use super::sockets::{SocketBudget, SocketPermit};
use super::{wants_body, BodyCap, FetchError, FetchLimits, Outcome, Request, Response, Validators};

/// What geode says it is when the operator gave no contact: its product token (the name
/// robots.txt groups use) and what it does.
pub const USER_AGENT: &str = concat!(
    "geode/",
    env!("CARGO_PKG_VERSION"),
    " (a search engine for geminispace and the web)"
);

/// The `User-Agent` with the operator's contact (`--contact`: a URL or an address), so that a
/// web master who sees geode in a log knows whom to ask.
pub fn user_agent(contact: Option<&str>) -> String {
    match contact.map(str::trim).filter(|c| !c.is_empty()) {
        Some(contact) => format!(
            "geode/{} (+{contact}; a search engine for geminispace and the web)",
            env!("CARGO_PKG_VERSION")
        ),
        None => USER_AGENT.to_string(),
    }
}

/// The longest `Retry-After` taken as given; longer waits are cut to this (the crawl caps
/// slow-downs as well).
const MAX_RETRY_AFTER: Duration = Duration::from_secs(24 * 3600);

/// An HTTP and HTTPS client with fixed limits; cheap to clone.
#[derive(Clone)]
pub struct HttpFetcher {
    connector: TlsConnector,
    limits: FetchLimits,
    budget: SocketBudget,
    memory: MemoryBudget,
    user_agent: HeaderValue,
}

/// The certificate authorities HTTPS servers are checked against: the system's store (with
/// `SSL_CERT_FILE` / `SSL_CERT_DIR`), plus `extra` (a private CA, in tests). Certificates the
/// store holds but rustls cannot read are skipped and counted in the log.
pub fn trust_roots(extra: &[rustls::pki_types::CertificateDer<'static>]) -> rustls::RootCertStore {
    let mut roots = rustls::RootCertStore::empty();
    let found = rustls_native_certs::load_native_certs();
    for error in &found.errors {
        tracing::debug!(%error, "reading the system's certificate store");
    }
    let (added, ignored) = roots.add_parsable_certificates(found.certs);
    tracing::debug!(added, ignored, "system certificate authorities");
    roots.add_parsable_certificates(extra.iter().cloned());
    roots
}

impl HttpFetcher {
    /// A client that trusts `roots` (see [`trust_roots`]), drawing its sockets from `budget`
    /// and the memory of its bodies from `memory`.
    pub fn new(
        limits: FetchLimits,
        budget: SocketBudget,
        roots: rustls::RootCertStore,
        memory: MemoryBudget,
    ) -> Self {
        let provider = super::tls_provider();
        let mut config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("the ring provider supports the default TLS versions")
            .with_root_certificates(roots)
            .with_no_client_auth();
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        config.resumption = super::resumption();
        HttpFetcher {
            connector: TlsConnector::from(Arc::new(config)),
            limits,
            budget,
            memory,
            user_agent: HeaderValue::from_static(USER_AGENT),
        }
    }

    /// Names the operator's contact in the `User-Agent` (see [`user_agent`]). A contact that
    /// cannot be a header value is an error.
    pub fn set_contact(&mut self, contact: &str) -> Result<(), String> {
        self.user_agent = HeaderValue::from_str(&user_agent(Some(contact)))
            .map_err(|_| format!("{contact:?} cannot go in a User-Agent header"))?;
        Ok(())
    }

    /// Fetches one URL from one address; `known` makes the request conditional.
    pub async fn fetch(&self, asked: Request<'_>) -> Result<Response, FetchError> {
        let Request { url, addr, .. } = asked;
        if url.as_str().len() > crate::urlnorm::MAX_URL_BYTES {
            return Err(FetchError::RequestTooLong);
        }
        let https = match url.scheme() {
            "https" => true,
            "http" => false,
            other => return Err(FetchError::UnsupportedScheme(other.to_string())),
        };
        let started = Instant::now();
        let permit = self.budget.acquire().await;
        let tcp = connect_within(addr, &self.limits, asked.send_by).await?;
        let connected = Instant::now();
        let memory = self.memory.lease();
        let waits = memory.meter();
        let exchange = async {
            if https {
                let tls = handshake(&self.connector, server_name(url)?, tcp, &self.limits).await?;
                let h2 = tls.get_ref().1.alpn_protocol() == Some(b"h2");
                let resumed =
                    tls.get_ref().1.handshake_kind() == Some(rustls::HandshakeKind::Resumed);
                let answer = self.exchange(tls, h2, permit, asked, memory).await?;
                Ok((answer, resumed))
            } else {
                Ok((
                    self.exchange(tcp, false, permit, asked, memory).await?,
                    false,
                ))
            }
        };
        let ((status, outcome, validators, memory), resumed) =
            within_besides(self.limits.response_timeout, "response", &waits, exchange).await?;
        Ok(Response {
            status,
            outcome,
            cert_fingerprint: None,
            elapsed: started.elapsed(),
            connected,
            validators,
            resumed,
            memory,
        })
    }

    async fn exchange<S>(
        &self,
        stream: S,
        h2: bool,
        permit: SocketPermit,
        asked: Request<'_>,
        mut memory: BodyLease,
    ) -> Result<(u8, Outcome, Validators, BodyLease), FetchError>
    where
        S: AsyncRead + AsyncWrite + Send + Unpin + 'static,
    {
        let io = TokioIo::new(stream);
        let Request {
            url, cap, known, ..
        } = asked;
        let request = request(url, h2, known, &self.user_agent)?;
        let protocol = |e: hyper::Error| FetchError::MalformedHeader(format!("HTTP: {e}"));
        // The connection runs on a task of its own, which holds the socket and its permit; the
        // guard ends it (closing the socket) whatever way this function returns.
        let (response, _connection) = if h2 {
            let (mut sender, connection) =
                hyper::client::conn::http2::handshake(TokioExecutor::new(), io)
                    .await
                    .map_err(protocol)?;
            let task = Connection::spawn(connection, permit);
            (sender.send_request(request).await.map_err(protocol)?, task)
        } else {
            let (mut sender, connection) = hyper::client::conn::http1::handshake(io)
                .await
                .map_err(protocol)?;
            let task = Connection::spawn(connection, permit);
            (sender.send_request(request).await.map_err(protocol)?, task)
        };
        let (head, body) = response.into_parts();
        let validators = validators_of(&head.headers);
        let mut outcome = outcome_of(head.status.as_u16(), &head.headers)?;
        let status = gemini_status(&outcome);
        if let Outcome::Success { meta, body: kept } = &mut outcome {
            if wants_body(meta) {
                let max = self.limits.max_body_bytes;
                let keep = match cap {
                    BodyCap::Fail => max,
                    BodyCap::Truncate(keep) => keep.min(max),
                };
                let encoding = head
                    .headers
                    .get(header::CONTENT_ENCODING)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("")
                    .trim()
                    .to_ascii_lowercase();
                // A compressed body is held beside what it inflates to: room for both at once.
                let room = if matches!(encoding.as_str(), "" | "identity") {
                    max
                } else {
                    max + keep
                };
                let raw = read_body(body, max, cap, room, &mut memory).await?;
                *kept = decode_body(&encoding, raw, keep, cap, room, &mut memory).await?;
            }
        }
        Ok((status, outcome, validators, memory))
    }
}

/// The task driving one connection; aborted (closing the socket) when dropped.
struct Connection(tokio::task::JoinHandle<()>);

impl Connection {
    fn spawn<F, E>(connection: F, permit: SocketPermit) -> Connection
    where
        F: std::future::Future<Output = Result<(), E>> + Send + 'static,
    {
        Connection(tokio::spawn(async move {
            // The permit lives as long as the socket the connection owns.
            let _permit = permit;
            let _ = connection.await;
        }))
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The GET request for `url`: origin-form with a `Host` header over HTTP/1.1, absolute form
/// (which becomes `:authority`) over HTTP/2.
fn request(
    url: &Url,
    h2: bool,
    known: &Validators,
    user_agent: &HeaderValue,
) -> Result<hyper::Request<Empty<Bytes>>, FetchError> {
    let host = match (url.host_str(), url.port()) {
        (Some(host), Some(port)) => format!("{host}:{port}"),
        (Some(host), None) => host.to_string(),
        (None, _) => return Err(FetchError::Unresolved(url.to_string())),
    };
    let target = if h2 {
        url.as_str().to_string()
    } else {
        let mut path = url.path().to_string();
        if let Some(query) = url.query() {
            path.push('?');
            path.push_str(query);
        }
        path
    };
    let bad = |e: hyper::http::Error| FetchError::Internal(format!("building the request: {e}"));
    let mut builder = hyper::Request::get(target)
        .header(header::USER_AGENT, user_agent.clone())
        .header(
            header::ACCEPT,
            "text/html, text/gemini, text/plain;q=0.9, application/xhtml+xml, \
             application/atom+xml, application/rss+xml, */*;q=0.1",
        )
        .header(header::ACCEPT_ENCODING, "gzip, br");
    if !h2 {
        builder = builder
            .header(header::HOST, host)
            .header(header::CONNECTION, "close");
    }
    if let Some(etag) = known.etag.as_deref().and_then(header_value) {
        builder = builder.header(header::IF_NONE_MATCH, etag);
    }
    if let Some(date) = known.last_modified.as_deref().and_then(header_value) {
        builder = builder.header(header::IF_MODIFIED_SINCE, date);
    }
    builder.body(Empty::new()).map_err(bad)
}

/// A stored validator as a header value; one that cannot be sent is left out.
fn header_value(text: &str) -> Option<HeaderValue> {
    HeaderValue::from_str(text).ok()
}

fn header_text(headers: &HeaderMap, name: header::HeaderName) -> Option<String> {
    let value = headers.get(name)?.to_str().ok()?.trim();
    (!value.is_empty() && value.len() <= 1024).then(|| value.to_string())
}

fn validators_of(headers: &HeaderMap) -> Validators {
    Validators {
        etag: header_text(headers, header::ETAG),
        last_modified: header_text(headers, header::LAST_MODIFIED),
    }
}

/// Maps an HTTP status and its headers onto an [`Outcome`] (the table in the module doc).
pub fn outcome_of(status: u16, headers: &HeaderMap) -> Result<Outcome, FetchError> {
    let location = || {
        header_text(headers, header::LOCATION)
            .ok_or_else(|| FetchError::MalformedHeader(format!("HTTP {status} without a Location")))
    };
    let reason = || {
        let reason = hyper::StatusCode::from_u16(status)
            .ok()
            .and_then(|s| s.canonical_reason())
            .unwrap_or("");
        format!("HTTP {status} {reason}").trim_end().to_string()
    };
    Ok(match status {
        200..=299 => Outcome::Success {
            meta: header_text(headers, header::CONTENT_TYPE)
                .unwrap_or_else(|| "application/octet-stream".to_string()),
            body: Vec::new(),
        },
        304 => Outcome::NotModified,
        301 | 308 => Outcome::Redirect {
            target: location()?,
            permanent: true,
        },
        300..=399 => Outcome::Redirect {
            target: location()?,
            permanent: false,
        },
        404 => Outcome::PermanentFailure {
            code: 51,
            message: reason(),
        },
        410 => Outcome::PermanentFailure {
            code: 52,
            message: reason(),
        },
        401 => Outcome::CertificateRequired {
            code: 60,
            message: reason(),
        },
        403 => Outcome::CertificateRequired {
            code: 61,
            message: reason(),
        },
        429 | 503 if status == 429 || headers.contains_key(header::RETRY_AFTER) => {
            Outcome::TemporaryFailure {
                code: 44,
                message: retry_after(headers)
                    .map(|wait| wait.as_secs().to_string())
                    .unwrap_or_default(),
            }
        }
        503 => Outcome::TemporaryFailure {
            code: 41,
            message: reason(),
        },
        502 | 504 => Outcome::TemporaryFailure {
            code: 43,
            message: reason(),
        },
        500..=599 => Outcome::TemporaryFailure {
            code: 40,
            message: reason(),
        },
        400..=499 => Outcome::PermanentFailure {
            code: 59,
            message: reason(),
        },
        other => {
            return Err(FetchError::MalformedHeader(format!(
                "HTTP status {other} is not a final answer"
            )))
        }
    })
}

/// The two-digit status an outcome stands for.
fn gemini_status(outcome: &Outcome) -> u8 {
    match outcome {
        Outcome::Input { sensitive, .. } => 10 + u8::from(*sensitive),
        Outcome::Success { .. } | Outcome::NotModified => 20,
        Outcome::Redirect { permanent, .. } => 30 + u8::from(*permanent),
        Outcome::TemporaryFailure { code, .. }
        | Outcome::PermanentFailure { code, .. }
        | Outcome::CertificateRequired { code, .. } => *code,
    }
}

/// `Retry-After` as a wait: delta-seconds, or an HTTP date (a date in the past is no wait).
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let value = header_text(headers, header::RETRY_AFTER)?;
    let wait = match value.parse::<u64>() {
        Ok(secs) => Duration::from_secs(secs),
        Err(_) => {
            let at = httpdate::parse_http_date(&value).ok()?;
            at.duration_since(std::time::SystemTime::now())
                .unwrap_or(Duration::ZERO)
        }
    };
    Some(wait.min(MAX_RETRY_AFTER))
}

/// Reads the (possibly compressed) body: over `max` bytes it is an error, or, with
/// [`BodyCap::Truncate`], the end of reading. Before each frame the body makes room in `memory`
/// for up to `room` bytes ([`BodyLease::room_for`]).
async fn read_body(
    mut body: Incoming,
    max: usize,
    cap: BodyCap,
    room: usize,
    memory: &mut BodyLease,
) -> Result<Vec<u8>, FetchError> {
    let mut out = Vec::new();
    loop {
        memory.room_for(out.len(), room).await;
        let Some(frame) = body.frame().await else {
            break;
        };
        let frame = frame.map_err(|e| FetchError::Io(std::io::Error::other(e)))?;
        let Ok(data) = frame.into_data() else {
            continue;
        };
        if out.len() + data.len() > max {
            match cap {
                BodyCap::Fail => return Err(FetchError::BodyTooLarge(max)),
                BodyCap::Truncate(_) => {
                    out.extend_from_slice(&data[..max - out.len()]);
                    break;
                }
            }
        }
        out.extend_from_slice(&data);
    }
    Ok(out)
}

/// Undoes a `Content-Encoding` (gzip, x-gzip, br; identity or none as is), keeping at most
/// `keep` bytes of the result: more is [`FetchError::BodyTooLarge`] under [`BodyCap::Fail`],
/// and cut there under [`BodyCap::Truncate`]. A body cut short (a truncated robots.txt) inflates
/// as far as it goes. What it inflates to makes room in `memory` (for up to `room` bytes, the
/// compressed body counted) as it grows, and the lease keeps what the result takes.
pub async fn decode_body(
    encoding: &str,
    raw: Vec<u8>,
    keep: usize,
    cap: BodyCap,
    room: usize,
    memory: &mut BodyLease,
) -> Result<Vec<u8>, FetchError> {
    let raw_len = raw.len();
    let reader: Box<dyn Read + Send> = match encoding {
        "" | "identity" => {
            let body = if raw.len() > keep {
                match cap {
                    BodyCap::Fail => return Err(FetchError::BodyTooLarge(keep)),
                    BodyCap::Truncate(_) => raw[..keep].to_vec(),
                }
            } else {
                raw
            };
            memory.shrink_to(body.len());
            return Ok(body);
        }
        "gzip" | "x-gzip" => Box::new(flate2::read::MultiGzDecoder::new(std::io::Cursor::new(raw))),
        "br" => Box::new(brotli_decompressor::Decompressor::new(
            std::io::Cursor::new(raw),
            16 * 1024,
        )),
        other => {
            return Err(FetchError::MalformedHeader(format!(
                "unsupported Content-Encoding {other:?}"
            )))
        }
    };
    // One byte more than allowed tells a body at the limit from one over it.
    let mut out = Vec::new();
    let mut reader = reader.take(keep as u64 + 1);
    let read = loop {
        memory.room_for(raw_len + out.len(), room).await;
        match (&mut reader).take(INFLATE_STEP).read_to_end(&mut out) {
            Ok(0) => break Ok(()),
            Ok(_) => {}
            Err(e) => break Err(e),
        }
    };
    if let Err(e) = read {
        // What inflated before a cut is kept for a truncated read; otherwise the body is bad.
        if !matches!(cap, BodyCap::Truncate(_)) || out.is_empty() {
            return Err(FetchError::MalformedHeader(format!(
                "{encoding} body does not decode: {e}"
            )));
        }
    }
    if out.len() > keep {
        match cap {
            BodyCap::Fail => return Err(FetchError::BodyTooLarge(keep)),
            BodyCap::Truncate(_) => out.truncate(keep),
        }
    }
    memory.shrink_to(out.len());
    Ok(out)
}

/// Bytes inflated between two looks at the memory budget.
const INFLATE_STEP: u64 = 64 * 1024;

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(
                header::HeaderName::from_bytes(name.as_bytes()).unwrap(),
                HeaderValue::from_str(value).unwrap(),
            );
        }
        map
    }

    #[test]
    fn statuses_map_onto_geminis() {
        let located = headers(&[("location", "/there"), ("content-type", "text/html")]);
        let cases: &[(u16, u8)] = &[
            (200, 20),
            (203, 20),
            (304, 20),
            (301, 31),
            (308, 31),
            (302, 30),
            (303, 30),
            (307, 30),
            (404, 51),
            (410, 52),
            (401, 60),
            (403, 61),
            (400, 59),
            (418, 59),
            (429, 44),
            (503, 41),
            (502, 43),
            (504, 43),
            (500, 40),
        ];
        for &(http, want) in cases {
            let outcome = outcome_of(http, &located).unwrap();
            assert_eq!(gemini_status(&outcome), want, "HTTP {http}: {outcome:?}");
        }
        assert!(matches!(
            outcome_of(200, &located).unwrap(),
            Outcome::Success { meta, .. } if meta == "text/html"
        ));
        assert!(matches!(
            outcome_of(200, &HeaderMap::new()).unwrap(),
            Outcome::Success { meta, .. } if meta == "application/octet-stream"
        ));
        assert!(matches!(
            outcome_of(301, &located).unwrap(),
            Outcome::Redirect { target, permanent: true } if target == "/there"
        ));
        assert!(outcome_of(302, &HeaderMap::new()).is_err());
        assert!(outcome_of(101, &HeaderMap::new()).is_err());
        assert!(matches!(
            outcome_of(404, &HeaderMap::new()).unwrap(),
            Outcome::PermanentFailure { message, .. } if message == "HTTP 404 Not Found"
        ));
    }

    #[test]
    fn retry_after_in_seconds_or_as_a_date() {
        let wait =
            |value: &str, status| match outcome_of(status, &headers(&[("retry-after", value)]))
                .unwrap()
            {
                Outcome::TemporaryFailure { code: 44, message } => message,
                other => panic!("{other:?}"),
            };
        assert_eq!(wait("7", 429), "7");
        assert_eq!(wait("7", 503), "7");
        assert_eq!(wait("999999999", 429), "86400");
        assert_eq!(wait("Wed, 21 Oct 2015 07:28:00 GMT", 429), "0");
        let later =
            httpdate::fmt_http_date(std::time::SystemTime::now() + Duration::from_secs(120));
        let secs: u64 = wait(&later, 503).parse().unwrap();
        assert!((110..=120).contains(&secs), "{secs}");
        // No usable number: the crawl doubles its gap instead.
        assert_eq!(wait("soon", 429), "");
        assert!(matches!(
            outcome_of(429, &HeaderMap::new()).unwrap(),
            Outcome::TemporaryFailure { code: 44, message } if message.is_empty()
        ));
    }

    /// [`decode_body`] outside any memory budget, on a runtime of its own.
    fn decode(
        encoding: &str,
        raw: Vec<u8>,
        keep: usize,
        cap: BodyCap,
    ) -> Result<Vec<u8>, FetchError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        runtime.block_on(decode_body(
            encoding,
            raw,
            keep,
            cap,
            keep,
            &mut BodyLease::none(),
        ))
    }

    #[tokio::test]
    async fn an_inflated_body_keeps_its_size_of_the_memory_budget() {
        use std::io::Write;
        let text = b"<p>hello, web</p>".repeat(100_000);
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(&text).unwrap();
        let gz = gz.finish().unwrap();
        assert!(gz.len() < crate::fetch::memory::FREE_BYTES);
        let budget = MemoryBudget::new(8 << 20, 0);
        let mut lease = budget.lease();
        let room = 2 * (4 << 20);
        let out = decode_body("gzip", gz, 4 << 20, BodyCap::Fail, room, &mut lease)
            .await
            .unwrap();
        assert_eq!(out, text);
        assert_eq!(
            lease.bytes(),
            text.len(),
            "the lease keeps what the body takes"
        );
        assert_eq!(budget.available(), (8 << 20) - text.len());
        drop(lease);
        assert_eq!(budget.available(), 8 << 20);
    }

    #[test]
    fn compressed_bodies_inflate_within_the_limit() {
        use std::io::Write;
        let text = b"<p>hello, web</p>".repeat(100);
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(&text).unwrap();
        let gz = gz.finish().unwrap();
        let mut br = Vec::new();
        brotli::BrotliCompress(
            &mut std::io::Cursor::new(&text),
            &mut br,
            &brotli::enc::BrotliEncoderParams::default(),
        )
        .unwrap();
        for (encoding, raw) in [("gzip", &gz), ("br", &br), ("", &text), ("identity", &text)] {
            let out = decode(encoding, raw.clone(), 1 << 20, BodyCap::Fail).unwrap();
            assert_eq!(out, text, "{encoding}");
            assert!(matches!(
                decode(encoding, raw.clone(), 100, BodyCap::Fail),
                Err(FetchError::BodyTooLarge(100))
            ));
            assert_eq!(
                decode(encoding, raw.clone(), 100, BodyCap::Truncate(100)).unwrap(),
                text[..100]
            );
        }
        assert!(decode("gzip", b"not gzip".to_vec(), 100, BodyCap::Fail).is_err());
        assert!(decode("compress", text.clone(), 1 << 20, BodyCap::Fail).is_err());
    }

    #[test]
    fn a_decompression_bomb_stops_at_the_limit() {
        use std::io::Write;
        let started = Instant::now();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        let zeros = vec![0u8; 1 << 20];
        for _ in 0..100 {
            gz.write_all(&zeros).unwrap();
        }
        let bomb = gz.finish().unwrap();
        assert!(bomb.len() < 200_000, "{}", bomb.len());
        let limit = 4 << 20;
        assert!(matches!(
            decode("gzip", bomb, limit, BodyCap::Fail),
            Err(FetchError::BodyTooLarge(l)) if l == limit
        ));
        assert!(started.elapsed() < Duration::from_secs(20));
    }

    #[test]
    fn requests_carry_the_agent_the_host_and_the_validators() {
        let url = Url::parse("http://example.org:8080/a/b?q=1").unwrap();
        let known = Validators {
            etag: Some("\"v1\"".into()),
            last_modified: Some("Wed, 21 Oct 2015 07:28:00 GMT".into()),
        };
        let agent = HeaderValue::from_str(&user_agent(Some("mailto:ops@example.org"))).unwrap();
        let req = request(&url, false, &known, &agent).unwrap();
        assert_eq!(req.uri(), "/a/b?q=1");
        let h = req.headers();
        assert_eq!(h[header::HOST], "example.org:8080");
        assert_eq!(
            h[header::USER_AGENT],
            concat!(
                "geode/",
                env!("CARGO_PKG_VERSION"),
                " (+mailto:ops@example.org; a search engine for geminispace and the web)"
            )
        );
        assert_eq!(h[header::IF_NONE_MATCH], "\"v1\"");
        assert_eq!(
            h[header::IF_MODIFIED_SINCE],
            "Wed, 21 Oct 2015 07:28:00 GMT"
        );
        assert_eq!(h[header::ACCEPT_ENCODING], "gzip, br");
        let req = request(&url, true, &Validators::default(), &agent).unwrap();
        assert_eq!(req.uri(), "http://example.org:8080/a/b?q=1");
        assert!(req.headers().get(header::HOST).is_none());
        assert!(req.headers().get(header::IF_NONE_MATCH).is_none());
    }
}
