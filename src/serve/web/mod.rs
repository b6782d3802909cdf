//! The web frontend of `geode serve` (`--http ADDR:PORT`): the Gemini frontend's routes and
//! index, answered as HTML to web browsers and as JSON to scripts (`/api/search`), over
//! HTTP/1.1 with keep-alive, by hyper.
//!
//! Layout: [`route`] turns a request into a route and builds the links pages write (pure),
//! [`html`] the pages and the stylesheet (pure), `answer` what each route answers (reading the
//! index through the Gemini frontend's backend and blocking pool), `reply` the HTTP response
//! around a page: `ETag`s, gzip and the security headers. This file accepts connections and
//! serves each one.
//!
//! # Limits
//!
//! The web frontend shares the Gemini frontend's budgets, so that one `geode serve` has one set
//! of limits whichever protocol a client speaks:
//!
//! - a client (IPv4 address or IPv6 /64) has at most `--max-client-connections` connections
//!   open, Gemini and HTTP together; extra ones are closed at once;
//! - every HTTP connection holds a place in the pending budget (`--max-pending-connections`)
//!   for all its life, since an idle keep-alive connection costs its opener as little as an
//!   idle Gemini one: when the budget is full, a newcomer evicts the oldest connection of the
//!   client holding the most, which finishes the request it is answering (if any) and closes;
//! - each request of a page spends a token of its client's bucket (`--rate-limit`); without
//!   one it is answered 429 with `Retry-After`. The stylesheet, `robots.txt` and
//!   `/opensearch.xml` cost nothing;
//! - a request is answered under the `--max-connections` permit, and searches and database
//!   reads run on the blocking pool, as in the Gemini frontend; when no place frees up within
//!   [`super::Timeouts::busy`], 503 with `Retry-After`;
//! - headers: at most [`MAX_HEADER_BYTES`], read within [`HEADER_TIMEOUT`], which also closes a
//!   keep-alive connection idle for as long; request targets at most [`route::MAX_TARGET`]
//!   bytes (414); a form body at most [`MAX_FORM_BYTES`] (413), read within
//!   [`super::Timeouts::request`];
//! - behind a reverse proxy named by `--http-trusted-proxy`, the client is the address the proxy
//!   appended last to `X-Forwarded-For`, and the proxy's own connections are not capped;
//! - a connection lives at most [`super::Timeouts::connection`], then closes after its
//!   current request; at shutdown every connection does the same, within the grace period.

mod answer;
pub mod html;
mod reply;
pub mod route;

use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

use super::ratelimit::PendingSlot;
use super::{ServeConfig, Shared};

/// Longest request head (request line and headers), in bytes.
pub const MAX_HEADER_BYTES: usize = 16 * 1024;

/// Time to send a request's head; also how long a keep-alive connection may stay idle.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// Largest form body (`POST /add-seed`): a URL of at most 1024 bytes, percent-encoded.
pub const MAX_FORM_BYTES: usize = 4 * 1024;

/// What only the web frontend uses, decided once from the configuration.
#[derive(Debug, Clone)]
pub struct Settings {
    /// `--http-gemini-proxy`.
    pub gemini_proxy: Option<String>,
    /// `--http-trusted-proxy`.
    pub trusted_proxies: Vec<IpAddr>,
    /// Names this server's build of the pages in `ETag`s: an index version and a query say
    /// what a page holds only for one rendering of it.
    pub(super) build: u64,
}

impl Settings {
    pub(super) fn new(config: &ServeConfig) -> Settings {
        Settings {
            gemini_proxy: config.http_gemini_proxy.clone(),
            trusted_proxies: config.http_trusted_proxies.clone(),
            build: reply::build_tag(config.http_gemini_proxy.as_deref()),
        }
    }
}

/// Accepts HTTP connections until `stop` says so; each is served by its own task.
pub(super) async fn accept_loop(
    listener: TcpListener,
    shared: Arc<Shared>,
    mut stop: watch::Receiver<bool>,
) {
    while let Some((tcp, peer)) = super::accept_next(&listener, &mut stop).await {
        // A trusted proxy carries many clients' connections: the cap is theirs, not its.
        let client_slot = if shared.web.trusted_proxies.contains(&peer.ip()) {
            None
        } else {
            match shared.per_client.try_open(peer.ip()) {
                Some(slot) => Some(slot),
                None => {
                    tracing::debug!("{peer}: too many connections from this client; closed");
                    continue;
                }
            }
        };
        let (place, evicted) = shared.pending.admit(peer.ip());
        if evicted {
            tracing::debug!("connection budget full: closed one to admit {peer}");
        }
        let open = shared.open.enter();
        let shared = Arc::clone(&shared);
        let stop = stop.clone();
        tokio::spawn(async move {
            // The connection closes gently at its deadline; this bounds the goodbye too.
            let limit = shared.timeouts.connection + shared.timeouts.shutdown_grace;
            if tokio::time::timeout(limit, connection(&shared, tcp, peer, place, stop))
                .await
                .is_err()
            {
                tracing::debug!("{peer}: connection deadline reached");
            }
            drop(client_slot);
            drop(open);
        });
    }
}

/// Serves one connection's requests until the client closes it, it idles too long, it is
/// evicted, it reaches its deadline or the server stops.
async fn connection(
    shared: &Arc<Shared>,
    tcp: TcpStream,
    peer: SocketAddr,
    mut place: PendingSlot,
    mut stop: watch::Receiver<bool>,
) {
    let _ = tcp.set_nodelay(true);
    let service_shared = Arc::clone(shared);
    let service = hyper::service::service_fn(move |request| {
        let shared = Arc::clone(&service_shared);
        async move { Ok::<_, Infallible>(handle(&shared, peer, request).await) }
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_TIMEOUT)
        .max_buf_size(MAX_HEADER_BYTES)
        .keep_alive(true);
    let served = builder.serve_connection(TokioIo::new(tcp), service);
    tokio::pin!(served);
    let deadline = tokio::time::sleep(shared.timeouts.connection);
    tokio::pin!(deadline);
    let mut closing = false;
    loop {
        let why = tokio::select! {
            result = served.as_mut() => {
                if let Err(e) = result {
                    tracing::debug!("{peer}: {e}");
                }
                return;
            }
            _ = place.evicted(), if !closing => "evicted to admit another connection",
            _ = stop.changed(), if !closing => "the server is stopping",
            _ = &mut deadline, if !closing => "connection deadline",
        };
        tracing::debug!("{peer}: closing after the current request: {why}");
        served.as_mut().graceful_shutdown();
        closing = true;
    }
}

/// One request: routed, limited, answered.
async fn handle(
    shared: &Shared,
    peer: SocketAddr,
    request: hyper::Request<Incoming>,
) -> hyper::Response<Full<Bytes>> {
    let (head, body) = request.into_parts();
    let asked = reply::Asked::of(&head);
    let route = match route::parse(head.method.as_str(), head.uri.path(), head.uri.query()) {
        Ok(route) => route,
        Err(refusal) => return reply::finish(answer::refused(refusal, &asked), &asked),
    };
    if !route.is_static() {
        let client = client_of(peer.ip(), &head.headers, &shared.web.trusted_proxies);
        if let Err(wait) = shared.limiter.check(client, std::time::Instant::now()) {
            return reply::finish(answer::too_many(wait, &asked), &asked);
        }
    }
    // Answered under the same budget as Gemini requests (module doc).
    let acquire = Arc::clone(&shared.answering).acquire_owned();
    let Ok(Ok(_permit)) = tokio::time::timeout(shared.timeouts.busy, acquire).await else {
        return reply::finish(answer::busy(&asked), &asked);
    };
    let form = match route {
        route::WebRoute::AddSeed => match read_form(shared, body, &asked).await {
            Ok(form) => Some(form),
            Err(page) => return reply::finish(page, &asked),
        },
        _ => None,
    };
    let page = answer::answer(shared, route, form, &asked).await;
    reply::finish(page, &asked)
}

/// The body of a form, within its size and time limits.
async fn read_form(
    shared: &Shared,
    body: Incoming,
    asked: &reply::Asked,
) -> Result<Vec<u8>, reply::Page> {
    let limited = Limited::new(body, MAX_FORM_BYTES);
    match tokio::time::timeout(shared.timeouts.request, limited.collect()).await {
        Ok(Ok(collected)) => Ok(collected.to_bytes().to_vec()),
        Ok(Err(e))
            if e.downcast_ref::<http_body_util::LengthLimitError>()
                .is_some() =>
        {
            Err(answer::form_too_large(asked))
        }
        Ok(Err(_)) | Err(_) => Err(answer::form_unread(asked)),
    }
}

/// Who a request is from, for the rate limit: the peer, or for a trusted proxy the address it
/// appended last to `X-Forwarded-For` (the ones before it are the client's own to write). A
/// proxy that names no usable address is limited as itself.
fn client_of(peer: IpAddr, headers: &hyper::HeaderMap, trusted: &[IpAddr]) -> IpAddr {
    if !trusted.contains(&peer) {
        return peer;
    }
    headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|a| a.trim().parse::<IpAddr>().ok())
        .next_back()
        .unwrap_or(peer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_trusted_proxy_names_the_client() {
        let proxy: IpAddr = "127.0.0.1".parse().unwrap();
        let mut headers = hyper::HeaderMap::new();
        headers.append("x-forwarded-for", "10.9.9.9, 192.0.2.7".parse().unwrap());
        headers.append("x-forwarded-for", "198.51.100.4".parse().unwrap());
        let named = client_of(proxy, &headers, &[proxy]);
        assert_eq!(named, "198.51.100.4".parse::<IpAddr>().unwrap());
        assert_eq!(client_of(proxy, &headers, &[]), proxy);
        let other: IpAddr = "127.0.0.2".parse().unwrap();
        assert_eq!(client_of(other, &headers, &[proxy]), other);
        assert_eq!(client_of(proxy, &hyper::HeaderMap::new(), &[proxy]), proxy);
    }
}
