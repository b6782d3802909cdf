//! What each web route answers: the page, with the status an HTTP client expects. Reads go
//! through the Gemini frontend's reads (`serve::answer`: the snapshot, backlinks, suggestions,
//! the blocking pool) and the rule of suggestions, so both frontends share one index reader,
//! one statistics cache, one budget of reads and one way of failing.

use hyper::StatusCode;

use super::html::{self, ResultLinks, SeedForm};
use super::reply::{self, Asked, Cache, Kind, Page};
use super::route::{self, Refusal, WebRoute, PAGE_SIZE};
use crate::clock::unix_now;
use crate::serve::answer::{
    backlinks_of, blocking, seed_url, snapshot, suggest, summary, SeedRefusal, Unavailable,
};
use crate::serve::backend::SearchOutcome;
use crate::serve::pages::ResultsView;
use crate::serve::Shared;

/// Seconds a client is asked to wait when the server is busy or has no index yet.
const RETRY_BUSY: u64 = 2;
const RETRY_NO_INDEX: u64 = 60;

pub(super) async fn answer(
    shared: &Shared,
    route: WebRoute,
    form: Option<Vec<u8>>,
    asked: &Asked,
) -> Page {
    match route {
        WebRoute::Home | WebRoute::Stats | WebRoute::KnownHosts => {
            let now = unix_now();
            let snapshot = match snapshot(shared, now).await {
                Ok(snapshot) => snapshot,
                Err(failed) => return unanswered(failed),
            };
            let body = match route {
                WebRoute::Home => html::home(summary(&snapshot).as_ref(), now),
                WebRoute::Stats => match &snapshot.stats {
                    Some(stats) => {
                        html::stats(stats, snapshot.documents, snapshot.hosts.len() as u64, now)
                    }
                    None => html::no_index(),
                },
                _ => html::known_hosts(
                    &snapshot.hosts,
                    snapshot.stats.as_ref().map_or(0, |s| s.hosts),
                ),
            };
            Page::ok(Kind::Html, body)
        }
        WebRoute::Search { query: None, .. } => Page::ok(Kind::Html, html::search_form()),
        WebRoute::Search {
            query: Some(query),
            page,
            verbose,
        } => search(shared, query, page, verbose, asked).await,
        WebRoute::Api {
            query,
            offset,
            limit,
        } => api(shared, query, offset, limit, asked).await,
        WebRoute::Backlinks { url: None } => Page::ok(Kind::Html, html::backlinks_form()),
        WebRoute::Backlinks { url: Some(input) } => backlinks(shared, input).await,
        WebRoute::About => Page::ok(Kind::Html, html::about()),
        WebRoute::AddSeedForm => Page::ok(Kind::Html, html::add_seed(SeedForm::Empty)),
        WebRoute::AddSeed => add_seed(shared, form.unwrap_or_default(), asked).await,
        WebRoute::OpenSearch => Page::ok(
            Kind::OpenSearch,
            html::opensearch(&asked.site(&shared.hostname)),
        )
        .cache(Cache::Day),
        WebRoute::Style => Page::ok(Kind::Css, html::STYLESHEET.to_string()).cache(Cache::Day),
        WebRoute::Robots => Page::ok(Kind::Text, robots()).cache(Cache::Day),
    }
}

/// Keeps crawlers out of the endless pages, as the Gemini frontend's robots.txt does, and out
/// of the API.
fn robots() -> String {
    format!("{}Disallow: /api/\n", crate::serve::pages::robots())
}

/// A request that has no route.
pub(super) fn refused(refusal: Refusal, asked: &Asked) -> Page {
    let (status, title, message) = match &refusal {
        Refusal::NotFound => (
            StatusCode::NOT_FOUND,
            "Not found",
            "geode has no page at this address.".to_string(),
        ),
        Refusal::Method { .. } => (
            StatusCode::METHOD_NOT_ALLOWED,
            "Method not allowed",
            "This page only answers GET (and the suggestion form, POST).".to_string(),
        ),
        Refusal::TooLong => (
            StatusCode::URI_TOO_LONG,
            "Address too long",
            format!(
                "Requests are at most {} bytes long; shorten the query.",
                route::MAX_TARGET
            ),
        ),
        Refusal::Bad(why) => (StatusCode::BAD_REQUEST, "Bad request", format!("{why}.")),
    };
    let mut page = error(status, title, &message, asked);
    if let Refusal::Method { allow } = refusal {
        page.allow = Some(allow);
    }
    page
}

/// 429: the client's bucket is empty for `wait` seconds.
pub(super) fn too_many(wait: u64, asked: &Asked) -> Page {
    error(
        StatusCode::TOO_MANY_REQUESTS,
        "Too many requests",
        &format!("Please wait {wait} s before the next request."),
        asked,
    )
    .retry_after(wait)
}

/// 503: no place to answer in time.
pub(super) fn busy(asked: &Asked) -> Page {
    error(
        StatusCode::SERVICE_UNAVAILABLE,
        "Busy",
        "geode is busy; please try again in a moment.",
        asked,
    )
    .retry_after(RETRY_BUSY)
}

pub(super) fn form_too_large(asked: &Asked) -> Page {
    error(
        StatusCode::PAYLOAD_TOO_LARGE,
        "Form too large",
        &format!("A suggestion is at most {} bytes.", super::MAX_FORM_BYTES),
        asked,
    )
}

pub(super) fn form_unread(asked: &Asked) -> Page {
    error(
        StatusCode::BAD_REQUEST,
        "Form not received",
        "The form did not arrive in time; please send it again.",
        asked,
    )
}

/// An error as HTML, or as JSON `{"error": ...}` under `/api/`.
fn error(status: StatusCode, title: &str, message: &str, asked: &Asked) -> Page {
    if asked.api {
        let body = serde_json::json!({ "error": message }).to_string();
        Page::with_status(status, Kind::Json, body)
    } else {
        Page::with_status(
            status,
            Kind::Html,
            html::error(status.as_u16(), title, message),
        )
    }
}

/// A read that could not be answered, as the page that says so.
fn unanswered(failed: Unavailable) -> Page {
    match failed {
        Unavailable::Busy => busy(&Asked::default()),
        Unavailable::Failed(said) => unavailable(&format!("{said}.")),
    }
}

fn unavailable(message: &str) -> Page {
    Page::with_status(
        StatusCode::SERVICE_UNAVAILABLE,
        Kind::Html,
        html::error(503, "Temporarily unavailable", message),
    )
    .retry_after(RETRY_BUSY)
}

/// What a search came to, or the tag of an answer the client holds already.
enum Searched {
    Held(u64),
    Ran(Option<u64>, SearchOutcome),
}

/// Searches, unless the client holds the answer for the index as it is ([`reply::tag`]).
async fn run_search(
    shared: &Shared,
    query: &str,
    limit: usize,
    offset: usize,
    key: impl std::hash::Hash + Send + 'static,
    asked: &Asked,
) -> Option<Searched> {
    let build = shared.web.build;
    let holds = asked.holds.clone();
    let q = query.to_string();
    blocking(shared, move |b| {
        let etag = b.version().map(|v| reply::tag(build, v, &key));
        if let Some(etag) = etag.filter(|&tag| reply::held(&holds, tag)) {
            return Searched::Held(etag);
        }
        Searched::Ran(etag, b.search(&q, limit, offset))
    })
    .await
}

async fn search(shared: &Shared, query: String, page: usize, verbose: bool, asked: &Asked) -> Page {
    // The query language's own parser places the problem in a malformed query.
    if let Err(e) = crate::query::parse(&query) {
        let body = html::query_error(&query, &e.to_string(), &e.caret_line(&query));
        return Page::with_status(StatusCode::BAD_REQUEST, Kind::Html, body);
    }
    let offset = (page - 1) * PAGE_SIZE;
    let key = ("html", query.clone(), page, verbose);
    let (etag, outcome) = match run_search(shared, &query, PAGE_SIZE, offset, key, asked).await {
        None => return busy(asked),
        Some(Searched::Held(etag)) => return Page::not_modified(etag),
        Some(Searched::Ran(etag, outcome)) => (etag, outcome),
    };
    match outcome {
        SearchOutcome::Found { results, elapsed } => {
            let links = ResultLinks {
                gemini_proxy: shared.web.gemini_proxy.as_deref(),
            };
            let view = ResultsView {
                query: &query,
                page,
                results: &results,
                elapsed,
                verbose,
            };
            Page::ok(Kind::Html, html::results(view, links, unix_now())).tagged(etag)
        }
        SearchOutcome::BadQuery(message) => Page::with_status(
            StatusCode::BAD_REQUEST,
            Kind::Html,
            html::query_error(&query, &message, &query),
        ),
        SearchOutcome::NoIndex => Page::with_status(
            StatusCode::SERVICE_UNAVAILABLE,
            Kind::Html,
            html::no_index(),
        )
        .retry_after(RETRY_NO_INDEX),
        SearchOutcome::Failed(e) => {
            tracing::warn!("search failed: {e}");
            unavailable("The index cannot be searched right now.")
        }
    }
}

/// `/api/search`: the object `geode search --json` prints, or `{"error": ...}`.
async fn api(
    shared: &Shared,
    query: Option<String>,
    offset: usize,
    limit: usize,
    asked: &Asked,
) -> Page {
    let json_error = |status: StatusCode, value: serde_json::Value| {
        Page::with_status(status, Kind::Json, value.to_string())
    };
    let Some(query) = query else {
        return json_error(
            StatusCode::BAD_REQUEST,
            serde_json::json!({ "error": "q is missing: /api/search?q=WORDS[&offset=N][&limit=N]" }),
        );
    };
    if let Err(e) = crate::query::parse(&query) {
        return json_error(
            StatusCode::BAD_REQUEST,
            serde_json::json!({
                "error": format!("malformed query: {e}"),
                "where": e.caret_line(&query),
            }),
        );
    }
    let key = ("api", query.clone(), offset, limit);
    let (etag, outcome) = match run_search(shared, &query, limit, offset, key, asked).await {
        None => return busy(asked),
        Some(Searched::Held(etag)) => return Page::not_modified(etag),
        Some(Searched::Ran(etag, outcome)) => (etag, outcome),
    };
    match outcome {
        SearchOutcome::Found { results, elapsed } => Page::ok(
            Kind::Json,
            results.to_json(&query, offset, limit, elapsed).to_string(),
        )
        .tagged(etag),
        SearchOutcome::BadQuery(message) => json_error(
            StatusCode::BAD_REQUEST,
            serde_json::json!({ "error": format!("malformed query: {message}") }),
        ),
        SearchOutcome::NoIndex => json_error(
            StatusCode::SERVICE_UNAVAILABLE,
            serde_json::json!({ "error": "no index yet: no crawl has finished" }),
        )
        .retry_after(RETRY_NO_INDEX),
        SearchOutcome::Failed(e) => {
            tracing::warn!("search failed: {e}");
            json_error(
                StatusCode::SERVICE_UNAVAILABLE,
                serde_json::json!({ "error": "the index cannot be searched right now" }),
            )
            .retry_after(RETRY_BUSY)
        }
    }
}

async fn backlinks(shared: &Shared, input: String) -> Page {
    let url = match crate::urlnorm::normalize(input.trim()) {
        Ok(url) => url.to_string(),
        Err(e) => {
            let body = html::backlinks_bad_url(&input, &e.to_string());
            return Page::with_status(StatusCode::BAD_REQUEST, Kind::Html, body);
        }
    };
    match backlinks_of(shared, url.clone()).await {
        Ok(Some(found)) => Page::ok(Kind::Html, html::backlinks(&url, &found)),
        Ok(None) => Page::ok(Kind::Html, html::no_index()),
        Err(failed) => unanswered(failed),
    }
}

/// The suggestion form's answer: a gemini:// URL is normalised and queued for the next crawl;
/// anything else gets the form again, saying why (400). A form posted from another site is
/// refused (403): suggestions come from people on this site's page.
async fn add_seed(shared: &Shared, body: Vec<u8>, asked: &Asked) -> Page {
    if asked.posted_from_elsewhere(&shared.hostname) {
        return error(
            StatusCode::FORBIDDEN,
            "Forbidden",
            "Suggestions are taken from this site's own form only.",
            asked,
        );
    }
    let refuse = |input: &str, reason: &str| {
        let body = html::add_seed(SeedForm::Refused { input, reason });
        Page::with_status(StatusCode::BAD_REQUEST, Kind::Html, body)
    };
    let input = match route::seed_form(&body) {
        Ok(Some(input)) => input,
        Ok(None) => return refuse("", "Please type a gemini:// URL."),
        Err(Refusal::Bad(why)) => return refuse("", &format!("{why}.")),
        Err(_) => return refuse("", "The form could not be read."),
    };
    if input.len() > crate::serve::request::MAX_REQUEST {
        return refuse(&input, "That URL is too long.");
    }
    let url = match seed_url(&input) {
        Ok(url) => url,
        Err(SeedRefusal::NotGemini) => {
            return refuse(&input, "Only gemini:// URLs can be suggested.")
        }
        Err(SeedRefusal::NotUrl) => {
            return refuse(&input, "That is not a URL; it should start with gemini://.")
        }
    };
    match suggest(shared, url.clone()).await {
        Err(Unavailable::Busy) => busy(asked),
        Ok(outcome) => Page::ok(
            Kind::Html,
            html::add_seed(SeedForm::Done {
                url: url.as_str(),
                outcome,
            }),
        )
        .cache(Cache::Never),
        Err(failed) => unanswered(failed),
    }
}
