//! HTTP requests of the web frontend: from a method, a path and a query string to a typed
//! [`WebRoute`], or the status that refuses it; and the links the pages write, built here so
//! that every link a page writes is one this module parses back.
//!
//! Pure: no I/O, no clock, no index.
//!
//! # Routes
//!
//! | method | path | what |
//! |---|---|---|
//! | GET | `/` | home: what this is, statistics, a search box |
//! | GET | `/search?q=Q&page=N` | results, ten a page (`page` 1 when absent, at most [`MAX_PAGE`]) |
//! | GET | `/v/search?q=Q&page=N` | the same with scores and crawl times |
//! | GET | `/backlinks?url=U` | pages linking to U |
//! | GET | `/known-hosts`, `/stats`, `/about` | as in the Gemini frontend |
//! | GET | `/add-seed` | the suggestion form |
//! | POST | `/add-seed` | the form's answer (`url=U`, form-encoded) |
//! | GET | `/api/search?q=Q&offset=O&limit=L` | the JSON of `geode search --json` |
//! | GET | `/opensearch.xml`, `/style.css`, `/robots.txt` | fixed documents |
//!
//! HEAD is answered as GET without the body. A query value is form-decoded (`+` is a space)
//! and must be UTF-8.

pub use crate::serve::request::{MAX_PAGE, PAGE_SIZE};

/// `/search?q=Q` for the first page, `/search?q=Q&page=N` after; `/v/search` when verbose.
pub fn search_href(query: &str, page: usize, verbose: bool) -> String {
    let base = if verbose { "/v/search" } else { "/search" };
    let q = form_encode(query);
    if page <= 1 {
        format!("{base}?q={q}")
    } else {
        format!("{base}?q={q}&page={page}")
    }
}

/// `/backlinks?url=U`.
pub fn backlinks_href(url: &str) -> String {
    format!("/backlinks?url={}", form_encode(url))
}

/// The link to `url` through the operator's web proxy of Gemini pages (`--http-gemini-proxy`):
/// the prefix followed by the URL without its `gemini://`. `None` for other schemes (a web
/// page is linked directly).
pub fn proxied(prefix: &str, url: &str) -> Option<String> {
    let rest = url.strip_prefix("gemini://")?;
    Some(format!("{prefix}{rest}"))
}

/// Percent-encodes everything but unreserved characters, as forms do (a space as `%20`, which
/// form decoding reads back like `+`).
pub fn form_encode(text: &str) -> String {
    percent_encoding::utf8_percent_encode(text, FORM).to_string()
}

/// Every byte but ASCII letters, digits and `-._~` is encoded.
const FORM: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');
