//! From a page to an HTTP response: the validator (`ETag`) and the 304 of a page the client
//! holds already, gzip for clients that take it, caching and security headers.
//!
//! # Validators
//!
//! Every 200 answer that may be cached carries a weak `ETag`. A result page's tag is computed
//! before searching, from the index's version ([`crate::index::SearchIndex::version`]), the
//! request and [`Settings::build`](super::Settings): a refresh of a result page the browser
//! holds is answered 304 without running the search. Other pages' tags are a hash of their
//! body. Tags are weak: the gzip and identity forms of a page share one, and a result page's
//! timings may differ between two renderings of the same answer.
//!
//! # Headers
//!
//! Every answer has a strict `Content-Security-Policy` (nothing but this site's stylesheet; no
//! script, no frame, forms posting here only), `X-Content-Type-Options: nosniff` and
//! `Referrer-Policy: same-origin`: a result link must not tell the capsule or proxy what was
//! searched, while a form posted here keeps its real `Origin` (with `no-referrer`, browsers
//! send `Origin: null`, which the add-a-seed form could not tell from another site's post).

use std::hash::{Hash, Hasher};

use http_body_util::Full;
use hyper::body::Bytes;
use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::StatusCode;

/// The policy of every answer: the stylesheet from here, forms to here, nothing else.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; style-src 'self'; img-src 'self'; \
     form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

/// Bodies shorter than this are sent as they are: gzip would save less than a packet.
const GZIP_MIN_BYTES: usize = 1024;

/// What a page is, for its `Content-Type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Html,
    Json,
    Css,
    OpenSearch,
    Text,
}

impl Kind {
    fn content_type(self) -> &'static str {
        match self {
            Kind::Html => "text/html; charset=utf-8",
            Kind::Json => "application/json",
            Kind::Css => "text/css; charset=utf-8",
            Kind::OpenSearch => "application/opensearchdescription+xml; charset=utf-8",
            Kind::Text => "text/plain; charset=utf-8",
        }
    }
}

/// How long a client may keep a page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cache {
    /// Kept, but checked again on every use (`no-cache` and an `ETag`).
    Revalidate,
    /// A fixed document: kept for a day, then checked.
    Day,
    /// Never kept: errors, and answers to a form.
    Never,
}

/// A page to send: status, body and how to send it.
#[derive(Debug, Clone)]
pub struct Page {
    pub status: StatusCode,
    pub kind: Kind,
    pub body: String,
    pub cache: Cache,
    /// Seconds, for 429 and 503.
    pub retry_after: Option<u64>,
    /// For 405.
    pub allow: Option<&'static str>,
    /// The validator, when known before the body ([`tag`]); else the body's hash is used.
    pub etag: Option<u64>,
}

impl Page {
    /// A 200 page kept and revalidated.
    pub fn ok(kind: Kind, body: String) -> Page {
        Page::with_status(StatusCode::OK, kind, body)
    }

    /// A page with another status, never kept.
    pub fn with_status(status: StatusCode, kind: Kind, body: String) -> Page {
        Page {
            status,
            kind,
            body,
            cache: if status == StatusCode::OK {
                Cache::Revalidate
            } else {
                Cache::Never
            },
            retry_after: None,
            allow: None,
            etag: None,
        }
    }

    /// The answer to a client that holds the page tagged `etag` already.
    pub fn not_modified(etag: u64) -> Page {
        Page {
            etag: Some(etag),
            cache: Cache::Revalidate,
            ..Page::with_status(StatusCode::NOT_MODIFIED, Kind::Html, String::new())
        }
    }

    pub fn cache(mut self, cache: Cache) -> Page {
        self.cache = cache;
        self
    }

    pub fn retry_after(mut self, seconds: u64) -> Page {
        self.retry_after = Some(seconds);
        self
    }

    pub fn tagged(mut self, etag: Option<u64>) -> Page {
        self.etag = etag;
        self
    }
}

/// What the request says about how it wants its answer.
#[derive(Debug, Clone, Default)]
pub struct Asked {
    /// Whether the client takes gzip (`Accept-Encoding`).
    pub gzip: bool,
    /// The tags of `If-None-Match`, without `W/` and quotes; `*` as itself.
    pub holds: Vec<String>,
    /// The `Host` header, when it looks like a host (and optional port).
    pub host: Option<String>,
    /// `X-Forwarded-Proto: https`: a proxy in front speaks TLS to the client.
    pub https: bool,
    /// The `Origin` header, as sent.
    pub origin: Option<String>,
    /// The `Sec-Fetch-Site` header, lower case: where the browser says the request came from.
    pub fetch_site: Option<String>,
    /// Whether the path is under `/api/`: errors are then JSON.
    pub api: bool,
}

impl Asked {
    pub fn of(head: &hyper::http::request::Parts) -> Asked {
        let headers = &head.headers;
        let text = |name: header::HeaderName| -> Option<&str> {
            headers.get(name).and_then(|v| v.to_str().ok())
        };
        Asked {
            gzip: headers
                .get_all(header::ACCEPT_ENCODING)
                .iter()
                .filter_map(|v| v.to_str().ok())
                .any(takes_gzip),
            holds: headers
                .get_all(header::IF_NONE_MATCH)
                .iter()
                .filter_map(|v| v.to_str().ok())
                .flat_map(|v| v.split(','))
                .map(|t| {
                    t.trim()
                        .trim_start_matches("W/")
                        .trim_matches('"')
                        .to_string()
                })
                .filter(|t| !t.is_empty())
                .collect(),
            host: text(header::HOST)
                .filter(|h| {
                    !h.is_empty()
                        && h.len() <= 260
                        && h.bytes()
                            .all(|b| b.is_ascii_alphanumeric() || b".-:[]".contains(&b))
                })
                .map(str::to_ascii_lowercase),
            https: headers
                .get("x-forwarded-proto")
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| v.trim().eq_ignore_ascii_case("https")),
            origin: text(header::ORIGIN).map(str::to_string),
            fetch_site: text(header::HeaderName::from_static("sec-fetch-site"))
                .map(|v| v.trim().to_ascii_lowercase()),
            api: head.uri.path().starts_with("/api/"),
        }
    }

    /// Whether the client holds the page tagged `etag`.
    pub fn holds(&self, etag: u64) -> bool {
        held(&self.holds, etag)
    }

    /// Whether the request comes from another site's page: by `Sec-Fetch-Site` when the
    /// browser sends it (only `same-origin` and `none`, a typed address, are this site), else
    /// by an `Origin` that is not this site. A request with neither (a script, an old browser)
    /// is taken as it is.
    pub fn posted_from_elsewhere(&self, fallback_host: &str) -> bool {
        match self.fetch_site.as_deref() {
            Some(site) => !matches!(site, "same-origin" | "none"),
            None => self
                .origin
                .as_deref()
                .is_some_and(|o| o != self.site(fallback_host)),
        }
    }

    /// This site's origin as the client reached it, e.g. `http://search.example:8080`.
    pub fn site(&self, fallback_host: &str) -> String {
        let scheme = if self.https { "https" } else { "http" };
        format!(
            "{scheme}://{}",
            self.host.as_deref().unwrap_or(fallback_host)
        )
    }
}

/// Whether `tags` (an `If-None-Match`, as [`Asked::holds`] keeps it) names the page tagged
/// `etag`.
pub fn held(tags: &[String], etag: u64) -> bool {
    let tag = format!("{etag:016x}");
    tags.iter().any(|t| *t == tag || t == "*")
}

/// Whether an `Accept-Encoding` value accepts gzip (`gzip` or `x-gzip`, without `q=0`).
fn takes_gzip(value: &str) -> bool {
    value.split(',').any(|coding| {
        let mut parts = coding.split(';').map(str::trim);
        let name = parts.next().unwrap_or("");
        let refused = parts.any(|p| {
            p.strip_prefix("q=")
                .and_then(|q| q.parse::<f32>().ok())
                .is_some_and(|q| q <= 0.0)
        });
        (name.eq_ignore_ascii_case("gzip") || name.eq_ignore_ascii_case("x-gzip")) && !refused
    })
}

/// The validator of an answer known before rendering it: this build of the pages, the index
/// version and the request.
pub fn tag(build: u64, version: u64, request: &impl Hash) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    (build, version).hash(&mut hasher);
    request.hash(&mut hasher);
    hasher.finish()
}

/// What makes this server's pages differ from another's for the same index and request: the
/// version of geode, the proxy links, and the moment the server started (a restarted server
/// may run other code under the same version during development; one revalidation is cheap).
pub fn build_tag(gemini_proxy: Option<&str>) -> u64 {
    let started = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    (env!("CARGO_PKG_VERSION"), gemini_proxy, started).hash(&mut hasher);
    hasher.finish()
}

fn body_tag(body: &str) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    body.hash(&mut hasher);
    hasher.finish()
}

/// The response for `page` as `asked`.
pub fn finish(page: Page, asked: &Asked) -> hyper::Response<Full<Bytes>> {
    let mut headers = HeaderMap::new();
    let fixed = [
        (header::CONTENT_SECURITY_POLICY, CONTENT_SECURITY_POLICY),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::REFERRER_POLICY, "same-origin"),
    ];
    for (name, value) in fixed {
        headers.insert(name, HeaderValue::from_static(value));
    }
    let cache = match page.cache {
        Cache::Revalidate => "no-cache",
        Cache::Day => "public, max-age=86400",
        Cache::Never => "no-store",
    };
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    if let Some(seconds) = page.retry_after {
        headers.insert(header::RETRY_AFTER, HeaderValue::from(seconds));
    }
    if let Some(allow) = page.allow {
        headers.insert(header::ALLOW, HeaderValue::from_static(allow));
    }
    let compressible = page.kind != Kind::Text;
    if compressible {
        headers.insert(header::VARY, HeaderValue::from_static("Accept-Encoding"));
    }
    let cacheable = page.cache != Cache::Never
        && (page.status == StatusCode::OK || page.status == StatusCode::NOT_MODIFIED);
    let etag = cacheable.then(|| page.etag.unwrap_or_else(|| body_tag(&page.body)));
    if let Some(etag) = etag {
        if let Ok(value) = HeaderValue::from_str(&format!("W/\"{etag:016x}\"")) {
            headers.insert(header::ETAG, value);
        }
    }
    let mut status = page.status;
    let mut body = page.body.into_bytes();
    if status == StatusCode::NOT_MODIFIED || etag.is_some_and(|t| asked.holds(t)) {
        status = StatusCode::NOT_MODIFIED;
        body = Vec::new();
    } else {
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static(page.kind.content_type()),
        );
        if compressible && asked.gzip && body.len() >= GZIP_MIN_BYTES {
            if let Some(zipped) = gzip(&body) {
                body = zipped;
                headers.insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
            }
        }
    }
    let mut response = hyper::Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    *response.headers_mut() = headers;
    response
}

/// `body` gzipped at the fastest level: pages are small and repetitive, so it already saves
/// most of their bytes, and keeps a busy server's CPU for searching (bench-serve: level 5 took
/// a third more time on a 5 KiB page).
fn gzip(body: &[u8]) -> Option<Vec<u8>> {
    use std::io::Write;
    let mut encoder = flate2::write::GzEncoder::new(
        Vec::with_capacity(body.len() / 3),
        flate2::Compression::fast(),
    );
    encoder.write_all(body).ok()?;
    encoder.finish().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn asked(headers: &[(&str, &str)]) -> Asked {
        let mut request = hyper::Request::builder().uri("/search?q=x");
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let (head, ()) = request.body(()).unwrap().into_parts();
        Asked::of(&head)
    }

    #[test]
    fn gzip_is_taken_when_offered() {
        assert!(takes_gzip("gzip, deflate, br"));
        assert!(takes_gzip("br;q=1.0, gzip;q=0.8"));
        assert!(!takes_gzip("gzip;q=0"));
        assert!(!takes_gzip("identity"));
        assert!(!takes_gzip("gzipped"));
    }

    #[test]
    fn a_held_page_is_answered_304_without_a_body() {
        let page = Page::ok(Kind::Html, "<p>hello</p>".repeat(200));
        let first = finish(page.clone(), &asked(&[("accept-encoding", "gzip")]));
        assert_eq!(first.status(), StatusCode::OK);
        assert_eq!(first.headers()[header::CONTENT_ENCODING], "gzip");
        let etag = first.headers()[header::ETAG].to_str().unwrap().to_string();
        assert!(etag.starts_with("W/\""), "{etag}");
        let again = finish(page.clone(), &asked(&[("if-none-match", &etag)]));
        assert_eq!(again.status(), StatusCode::NOT_MODIFIED);
        assert_eq!(again.headers()[header::ETAG], etag.as_str());
        // Strong or weak, in a list: the comparison is weak (RFC 9110, 13.1.2).
        let strong = etag.trim_start_matches("W/");
        let listed = format!("\"other\", {strong}");
        let third = finish(page.clone(), &asked(&[("if-none-match", &listed)]));
        assert_eq!(third.status(), StatusCode::NOT_MODIFIED);
        let changed = finish(
            Page::ok(Kind::Html, "<p>changed</p>".into()),
            &asked(&[("if-none-match", &etag)]),
        );
        assert_eq!(changed.status(), StatusCode::OK);
    }

    #[test]
    fn errors_are_never_kept_and_every_answer_has_the_policy() {
        let page =
            Page::with_status(StatusCode::TOO_MANY_REQUESTS, Kind::Html, "x".into()).retry_after(3);
        let response = finish(page, &asked(&[("if-none-match", "*")]));
        assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(response.headers()[header::RETRY_AFTER], "3");
        assert_eq!(response.headers()[header::CACHE_CONTROL], "no-store");
        assert!(response.headers().get(header::ETAG).is_none());
        assert_eq!(
            response.headers()[header::CONTENT_SECURITY_POLICY],
            CONTENT_SECURITY_POLICY
        );
    }

    #[test]
    fn a_post_from_another_site_is_told_apart() {
        let here = |h: &[(&str, &str)]| asked(h).posted_from_elsewhere("localhost");
        assert!(!here(&[]));
        assert!(!here(&[
            ("sec-fetch-site", "same-origin"),
            ("origin", "null")
        ]));
        assert!(!here(&[("sec-fetch-site", "none")]));
        assert!(here(&[("sec-fetch-site", "cross-site")]));
        assert!(here(&[("sec-fetch-site", "same-site")]));
        assert!(!here(&[
            ("host", "localhost"),
            ("origin", "http://localhost")
        ]));
        assert!(here(&[
            ("host", "localhost"),
            ("origin", "https://evil.example")
        ]));
        assert!(here(&[("origin", "null")]));
    }

    #[test]
    fn the_site_is_the_host_asked_for_when_it_looks_like_one() {
        let a = asked(&[
            ("host", "Search.Example:8080"),
            ("x-forwarded-proto", "https"),
        ]);
        assert_eq!(a.site("fallback"), "https://search.example:8080");
        let hostile = asked(&[("host", "evil\"><x")]);
        assert_eq!(hostile.site("geode.test"), "http://geode.test");
    }
}
