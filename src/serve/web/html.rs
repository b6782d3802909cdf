//! The pages of the web frontend, as HTML through maud's compiled templates (every value
//! escaped), and the one stylesheet. Pure: each function takes the data it shows and returns a
//! whole document.
//!
//! STUB: the page designs are being written; the signatures are the contract with `answer.rs`.

use maud::{html, Markup, DOCTYPE};

use crate::frontier::{KnownHost, Stats, Suggested};
use crate::serve::backend::Backlinks;
use crate::serve::pages::{ResultsView, Summary};

/// The stylesheet served at `/style.css`.
pub const STYLESHEET: &str = "body { font-family: sans-serif; }\n";

/// How result links are written.
#[derive(Debug, Clone, Copy, Default)]
pub struct ResultLinks<'a> {
    /// `--http-gemini-proxy`: a second link opening a gemini:// result through a web proxy.
    pub gemini_proxy: Option<&'a str>,
}

/// The state of the add-a-seed form.
#[derive(Debug, Clone, Copy)]
pub enum SeedForm<'a> {
    /// `GET /add-seed`: the empty form.
    Empty,
    /// The input was refused: the reason, and the form again with the input in it.
    Refused { input: &'a str, reason: &'a str },
    /// A gemini URL was recorded (normalised).
    Done { url: &'a str, outcome: Suggested },
}

fn page(title: &str, query: &str, body: Markup) -> String {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                title { (title) " · geode" }
            }
            body {
                form role="search" action="/search" method="get" {
                    label for="q" { "Search geminispace" }
                    input id="q" name="q" type="search" value=(query);
                    button type="submit" { "Search" }
                }
                main { (body) }
            }
        }
    }
    .into_string()
}

pub fn home(_summary: Option<&Summary>, _now: i64) -> String {
    page("Home", "", html! { h1 { "geode" } })
}

/// `/search` without a query: the search box alone.
pub fn search_form() -> String {
    page("Search", "", html! { h1 { "Search" } })
}

pub fn results(view: ResultsView<'_>, _links: ResultLinks<'_>, _now: i64) -> String {
    page(
        "Results",
        view.query,
        html! { h1 { "Results for " (view.query) } },
    )
}

/// A query that could not be run: what is wrong, and the query with carets under the problem.
pub fn query_error(query: &str, message: &str, _caret: &str) -> String {
    page("Query error", query, html! { p { (message) } })
}

pub fn no_index() -> String {
    page("No index yet", "", html! { h1 { "No index yet" } })
}

/// `/backlinks` without a URL: a form asking for one.
pub fn backlinks_form() -> String {
    page("Backlinks", "", html! { h1 { "Backlinks" } })
}

pub fn backlinks(url: &str, _found: &Backlinks) -> String {
    page("Backlinks", "", html! { h1 { "Backlinks of " (url) } })
}

pub fn backlinks_bad_url(input: &str, reason: &str) -> String {
    page("Backlinks", "", html! { p { (input) ": " (reason) } })
}

pub fn known_hosts(_hosts: &[KnownHost], _total_known: u64) -> String {
    page("Known capsules", "", html! { h1 { "Known capsules" } })
}

pub fn stats(_stats: &Stats, _documents: u64, _capsules: u64, _now: i64) -> String {
    page("Statistics", "", html! { h1 { "Statistics" } })
}

pub fn about() -> String {
    page("About", "", html! { h1 { "About geode" } })
}

pub fn add_seed(_form: SeedForm<'_>) -> String {
    page(
        "Suggest a capsule",
        "",
        html! { h1 { "Suggest a capsule" } },
    )
}

/// An error page (404, 405, 413, 414, 429, 503...): a title and what to do.
pub fn error(_status: u16, title: &str, message: &str) -> String {
    page(title, "", html! { h1 { (title) } p { (message) } })
}

/// The OpenSearch description; `base` is the site's origin, e.g. `https://search.example`.
pub fn opensearch(base: &str) -> String {
    format!("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<OpenSearchDescription xmlns=\"http://a9.com/-/spec/opensearch/1.1/\"><ShortName>geode</ShortName><Url type=\"text/html\" template=\"{base}/search?q={{searchTerms}}\"/></OpenSearchDescription>\n")
}
