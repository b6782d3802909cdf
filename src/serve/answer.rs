//! From a routed request to a response: the prompts, the search, backlinks and seed pages, each
//! reading the index or the crawl database on the blocking pool (a few at a time) and rendering
//! through [`super::pages`].

use super::*;
use crate::clock::unix_now;

const SEARCH_PROMPT: &str = "Search geminispace (words, \"phrases\", site:, lang:; see /about)";
const BACKLINKS_PROMPT: &str = "Which URL's backlinks? (e.g. gemini://example.org/)";
const SEED_PROMPT: &str = "Suggest a capsule for the next crawl (a gemini:// URL)";

pub(super) async fn respond(shared: &Shared, route: Route) -> Response {
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
            let snapshot = match snapshot(shared, now).await {
                Ok(snapshot) => snapshot,
                Err(failed) => return failed.into(),
            };
            Response::gemtext(match route {
                Route::Home => pages::home(summary(&snapshot).as_ref(), now),
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

/// What the home pages say about the index; `None` before any crawl.
pub(super) fn summary(snapshot: &backend::Snapshot) -> Option<pages::Summary> {
    snapshot.stats.as_ref().map(|s| pages::Summary {
        documents: snapshot.documents,
        capsules: snapshot.hosts.len() as u64,
        last_crawl: s
            .last_crawl_finished
            .as_deref()
            .or(s.last_crawl_started.as_deref())
            .and_then(|t| t.trim().parse().ok()),
    })
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
    match backlinks_of(shared, url.clone()).await {
        Ok(Some(found)) => Response::gemtext(pages::backlinks(&url, &found)),
        Ok(None) => Response::gemtext(pages::no_index()),
        Err(failed) => failed.into(),
    }
}

/// A visitor's suggestion: a gemini:// URL is normalised and queued for the next crawl;
/// anything else gets the prompt again, saying why.
async fn add_seed(shared: &Shared, input: String) -> Response {
    let url = match seed_url(&input) {
        Ok(url) => url,
        Err(SeedRefusal::NotGemini) => {
            return Response::header(10, "Only gemini:// URLs can be suggested; try again")
        }
        Err(SeedRefusal::NotUrl) => {
            return Response::header(10, "That is not a URL; try again (gemini://...)")
        }
    };
    match suggest(shared, url.clone()).await {
        Ok(outcome) => Response::gemtext(pages::seed_added(url.as_str(), outcome)),
        Err(failed) => failed.into(),
    }
}

// The reads both frontends make, each on the blocking pool, with the failure logged here and
// said to the visitor in the same words by each frontend.

/// Why a read could not be answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Unavailable {
    /// No blocking slot freed up in time.
    Busy,
    /// The store failed (logged); what to tell the visitor.
    Failed(&'static str),
}

impl From<Unavailable> for Response {
    fn from(failed: Unavailable) -> Response {
        match failed {
            Unavailable::Busy => Response::busy(),
            Unavailable::Failed(said) => Response::header(40, said),
        }
    }
}

const DATABASE_UNREADABLE: &str = "The crawl database cannot be read right now";

/// Statistics and capsules ([`Backend::snapshot`]).
pub(super) async fn snapshot(
    shared: &Shared,
    now: i64,
) -> Result<Arc<backend::Snapshot>, Unavailable> {
    match blocking(shared, move |b| b.snapshot(now)).await {
        Some(Ok(snapshot)) => Ok(snapshot),
        Some(Err(e)) => {
            tracing::warn!("reading the crawl database: {e}");
            Err(Unavailable::Failed(DATABASE_UNREADABLE))
        }
        None => Err(Unavailable::Busy),
    }
}

/// The pages linking to `url` (normalised); `None` without a crawl database.
pub(super) async fn backlinks_of(
    shared: &Shared,
    url: String,
) -> Result<Option<backend::Backlinks>, Unavailable> {
    match blocking(shared, move |b| b.backlinks(&url)).await {
        Some(Ok(found)) => Ok(found),
        Some(Err(e)) => {
            tracing::warn!("reading backlinks: {e}");
            Err(Unavailable::Failed(DATABASE_UNREADABLE))
        }
        None => Err(Unavailable::Busy),
    }
}

/// Why a visitor's suggestion is not taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum SeedRefusal {
    /// A URL, of another scheme.
    NotGemini,
    NotUrl,
}

/// The rule of suggestions: a URL, normalised, of the gemini scheme.
pub(super) fn seed_url(input: &str) -> Result<url::Url, SeedRefusal> {
    match crate::urlnorm::normalize(input.trim()) {
        Ok(url) if url.scheme() == "gemini" => Ok(url),
        Ok(_) => Err(SeedRefusal::NotGemini),
        Err(_) => Err(SeedRefusal::NotUrl),
    }
}

/// Records a suggestion for the next crawl ([`Backend::suggest_seed`]).
pub(super) async fn suggest(
    shared: &Shared,
    url: url::Url,
) -> Result<crate::frontier::Suggested, Unavailable> {
    match blocking(shared, move |b| b.suggest_seed(&url)).await {
        Some(Ok(outcome)) => Ok(outcome),
        Some(Err(e)) => {
            tracing::warn!("recording a suggested seed: {e}");
            Err(Unavailable::Failed(
                "The suggestion cannot be recorded right now",
            ))
        }
        None => Err(Unavailable::Busy),
    }
}

/// Runs `work` on the blocking pool once a slot is free; `None` when none frees up in time.
pub(super) async fn blocking<T: Send + 'static>(
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
