//! The pages of the web frontend, as HTML through maud's compiled templates, and the one
//! stylesheet. Pure: each function takes the data it shows and returns a whole document.
//!
//! The pages say what the Gemini pages say ([`crate::serve::pages`], whose shared texts they
//! reuse), in semantic HTML that needs no script, no inline style and nothing from another site
//! (the Content-Security-Policy forbids all three).
//!
//! # Escaping and links
//!
//! maud escapes every value placed in text or in an attribute, so text from a crawled page or a
//! query never becomes markup. Links are written three ways only:
//!
//! - links inside geode are built by [`route`] (`search_href`, `backlinks_href`), which
//!   percent-encodes what the visitor typed, so a query is never a link's target;
//! - links to results, backlinks and capsules come from the index or the crawl database, and are
//!   written only when their scheme is one geode crawls (`gemini://`, `https://`, `http://`),
//!   with blanks and control characters percent-encoded;
//! - the web proxy link is the operator's `--http-gemini-proxy` prefix and a `gemini://` result.
//!
//! A URL the visitor asked about (backlinks, a suggested capsule) is shown as text, never as a
//! link, unless the crawl database knows it. Titles and snippets are put on one line with
//! bidirectional controls removed ([`render::one_line`]); a snippet's `**word**` marks become
//! `<mark>`. Titles and snippets take their direction from their text (`dir="auto"`); a result
//! in another language than English carries `lang`, and its English labels `lang="en"`.

mod results;

pub use results::results;

use maud::{html, Markup, DOCTYPE};

use crate::frontier::{KnownHost, Stats, Suggested};
use crate::human::{when, when_stored};
use crate::serve::backend::Backlinks;
use crate::serve::pages::{
    self, plural, status_name, Help, Summary, ECHO_MAX_CHARS, MAX_BACKLINKS_SHOWN,
};
use crate::serve::render::{self, one_line, truncate};

use super::route::{self, backlinks_href, search_href};

/// The stylesheet served at `/style.css`.
pub const STYLESHEET: &str = include_str!("style.css");

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

/// A whole document: the head, the skip link, the header with the search box (holding
/// `query`), `body` as the main content, and the footer's links. `title` goes before
/// " · geode" in the window title.
fn page(title: &str, query: &str, body: Markup) -> String {
    let title = truncate(&one_line(title), ECHO_MAX_CHARS + 20);
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                meta name="color-scheme" content="light dark";
                title { (title) " · geode" }
                link rel="stylesheet" href="/style.css";
                link rel="search" type="application/opensearchdescription+xml" title="geode" href="/opensearch.xml";
            }
            body {
                a.skip href="#main" { "Skip to the content" }
                header {
                    a.site href="/" { "geode" }
                    form role="search" action="/search" method="get" {
                        label for="q" { "Search geminispace" }
                        div.field {
                            input id="q" name="q" type="search" value=(query);
                            button type="submit" { "Search" }
                        }
                    }
                }
                main id="main" { (body) }
                footer {
                    nav aria-label="Site" {
                        ul {
                            li { a href="/about" { "About and query syntax" } }
                            li { a href="/stats" { "Statistics" } }
                            li { a href="/known-hosts" { "Known capsules" } }
                            li { a href="/add-seed" { "Suggest a capsule" } }
                        }
                    }
                }
            }
        }
    }
    .into_string()
}

/// Whether a URL from the index or the crawl database may be a link: only the schemes geode
/// crawls, so that nothing stored can become a `javascript:` or `data:` link.
fn linkable(url: &str) -> bool {
    ["gemini://", "https://", "http://"].iter().any(|scheme| {
        url.as_bytes()
            .get(..scheme.len())
            .is_some_and(|start| start.eq_ignore_ascii_case(scheme.as_bytes()))
    })
}

/// A link to `url` labelled `label` when [`linkable`], else the label as text.
fn outside_link(url: &str, label: &str) -> Markup {
    html! {
        @if linkable(url) {
            a href=(render::safe_url(url)) { (label) }
        } @else {
            (label)
        }
    }
}

/// Text from outside for a heading or a paragraph: one line, at most `max` characters.
fn shown(text: &str, max: usize) -> String {
    truncate(&one_line(text), max)
}

pub fn home(summary: Option<&Summary>, now: i64) -> String {
    let body = html! {
        h1 { "geode" }
        p.lead { "A search engine for geminispace." }
        p {
            "geode crawls Gemini capsules politely, indexes their text, and answers searches "
            "here and over Gemini. Type words in the box above; results link to their "
            code { "gemini://" } " addresses, for a Gemini client to open."
        }
        @match summary {
            Some(s) => p.summary {
                "The index holds " (plural(s.documents, "page")) " from "
                (plural(s.capsules, "capsule")) "."
                @if let Some(t) = s.last_crawl {
                    " Last crawl: " (when(t, now)) "."
                }
            },
            None => p.summary { "The index is empty: no crawl has run yet." },
        }
        ul.links {
            li { a href="/about" { "How to search, and how geode crawls" } }
            li { a href="/stats" { "Statistics" } }
            li { a href="/known-hosts" { "Known capsules" } }
            li { a href="/add-seed" { "Suggest a capsule to crawl" } }
        }
    };
    page("Search geminispace", "", body)
}

/// `/search` without a query: the search box alone.
pub fn search_form() -> String {
    let body = html! {
        h1 { "Search geminispace" }
        p {
            "Type words in the search box above. Quotes, " code { "OR" } ", " code { "-word" }
            ", " code { "site:" } ", " code { "lang:" } " and more are explained on the "
            a href="/about" { "about page" } "."
        }
    };
    page("Search", "", body)
}

/// Text shown in a `<pre>`: its lines kept, control characters and bidirectional controls
/// made spaces (they could make the carets point elsewhere than they seem to).
fn pre_text(text: &str) -> String {
    text.lines()
        .map(|line| {
            line.chars()
                .map(|c| {
                    if c.is_control() || render::is_bidi_control(c) {
                        ' '
                    } else {
                        c
                    }
                })
                .collect::<String>()
                .trim_end()
                .to_string()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A query that could not be run: what is wrong, and the query with carets under the problem.
pub fn query_error(query: &str, message: &str, caret: &str) -> String {
    let body = html! {
        h1 { "That query could not be read" }
        p.error role="alert" {
            "geode did not understand this query: "
            (one_line(message).trim_end_matches('.')) "."
        }
        p { "The query, marked where the problem is:" }
        pre tabindex="0" { (pre_text(caret)) }
        p {
            "Change it in the search box above, or read the "
            a href="/about" { "query syntax" } "."
        }
    };
    page("Query error", query, body)
}

pub fn no_index() -> String {
    let body = html! {
        h1 { "No index yet" }
        p {
            "This geode has not finished a crawl yet, so there is nothing to search. "
            "Try again later."
        }
        p { a href="/" { "geode home" } }
    };
    page("No index yet", "", body)
}

/// The form asking for a URL whose backlinks to list, holding `value`.
fn backlinks_box(value: &str) -> Markup {
    html! {
        form.backlinks method="get" action="/backlinks" {
            label for="url" { "URL of a page (e.g. gemini://example.org/)" }
            div.field {
                input id="url" name="url" type="text" inputmode="url" autocomplete="off"
                    spellcheck="false" value=(value);
                button type="submit" { "Find backlinks" }
            }
        }
    }
}

/// `/backlinks` without a URL: a form asking for one.
pub fn backlinks_form() -> String {
    let body = html! {
        h1 { "Backlinks" }
        p { "Which pages known to geode link to a page?" }
        (backlinks_box(""))
    };
    page("Backlinks", "", body)
}

/// The pages linking to `url`. `url` is what the visitor asked about: a link only when the
/// crawl database knows it (see [`pages::backlinks`] for why).
pub fn backlinks(url: &str, found: &Backlinks) -> String {
    let links = &found.links;
    let asked = shown(url, ECHO_MAX_CHARS);
    let body = html! {
        h1 { "Backlinks" }
        p {
            "Pages linking to "
            @if found.known && linkable(url) {
                a href=(render::safe_url(url)) { (one_line(url)) }
            } @else {
                "“" (asked) "”"
            }
            ":"
        }
        @if !found.known {
            p { "geode has never met this URL." }
        }
        @if links.is_empty() {
            p.summary { "No page known to geode links there." }
        } @else {
            p.summary { (plural(links.len() as u64, "link")) " known:" }
            ul.links {
                @for link in links.iter().take(MAX_BACKLINKS_SHOWN) {
                    @let label = one_line(&link.label);
                    li {
                        (outside_link(&link.url, &one_line(&link.url)))
                        @if !label.is_empty() {
                            " (as “" (label) "”)"
                        }
                    }
                }
            }
            @if links.len() > MAX_BACKLINKS_SHOWN {
                p { "… and " (links.len() - MAX_BACKLINKS_SHOWN) " more." }
            }
        }
        ul.links {
            li { a href=(backlinks_href(url)) { "Refresh" } }
            li { a href="/backlinks" { "Backlinks of another URL" } }
        }
    };
    page("Backlinks", "", body)
}

/// `/backlinks?url=X` where X is no URL geode could look up: why, and the form again.
pub fn backlinks_bad_url(input: &str, reason: &str) -> String {
    let body = html! {
        h1 { "Backlinks" }
        p.error role="alert" {
            "“" (shown(input, ECHO_MAX_CHARS)) "” is not a URL geode can look up: "
            (one_line(reason)) "."
        }
        (backlinks_box(input))
    };
    page("Backlinks", "", body)
}

pub fn known_hosts(hosts: &[KnownHost], total_known: u64) -> String {
    let body = html! {
        h1 { "Known capsules" }
        p.summary {
            (plural(hosts.len() as u64, "capsule")) " with indexed pages (" (total_known)
            " known in all)."
        }
        @if !hosts.is_empty() {
            table {
                thead {
                    tr {
                        th scope="col" { "Capsule" }
                        th.n scope="col" { "Pages indexed" }
                        th.n scope="col" { "URLs known" }
                    }
                }
                tbody {
                    @for host in hosts {
                        tr {
                            // A capsule key names a Gemini host or a web origin.
                            td {
                                (outside_link(
                                    &crate::urlnorm::Capsule::parse(&host.name).root(),
                                    &one_line(&host.name),
                                ))
                            }
                            td.n { (host.pages_indexed) }
                            td.n { (host.urls_known) }
                        }
                    }
                }
            }
        }
    };
    page("Known capsules", "", body)
}

/// The statistics page, with the Gemini page's sections; `capsules` is how many capsules have
/// indexed pages.
pub fn stats(stats: &Stats, documents: u64, capsules: u64, now: i64) -> String {
    let schedule = &stats.schedule;
    let body = html! {
        h1 { "Index statistics" }
        ul {
            li { (plural(documents, "page")) " in the index" }
            li { (plural(capsules, "capsule")) " with indexed pages" }
            li { (plural(stats.hosts, "capsule")) " known" }
            li { (plural(stats.urls_known, "URL")) " known" }
            li { (plural(stats.duplicates, "page")) " skipped as duplicates of another URL" }
            li { (plural(stats.query_endpoints, "URL")) " asking for input (status 10 or 11)" }
            li {
                "last crawl started: "
                (when_stored(stats.last_crawl_started.as_deref(), now))
            }
            li {
                "last crawl finished: "
                (when_stored(stats.last_crawl_finished.as_deref(), now))
            }
        }
        @if !stats.by_status.is_empty() {
            h2 { "Answers by status" }
            ul {
                @for (status, n) in &stats.by_status {
                    li { (status) " " (status_name(*status)) ": " (n) }
                }
            }
        }
        @if !stats.errors.is_empty() {
            h2 { "No answer (network, TLS, protocol)" }
            ul { @for (kind, n) in &stats.errors { li { (kind) ": " (n) } } }
        }
        @if !stats.excluded.is_empty() {
            h2 { "Not fetched" }
            ul { @for (why, n) in &stats.excluded { li { (why) ": " (n) } } }
        }
        h2 { "URLs by crawl state" }
        ul { @for (state, n) in &stats.by_state { li { (state) ": " (n) } } }
        h2 { "Revisits" }
        ul {
            li { "due now: " (schedule.due_now) }
            li { "due within a day: " (schedule.due_within_day) }
            li { "due within a week: " (schedule.due_within_week) }
            li { "feeds: " (schedule.feeds) }
            li { "failing but still searchable: " (schedule.failing_but_searchable) }
            @for (bucket, n) in &schedule.intervals {
                li { "revisited every " (bucket) ": " (n) }
            }
            @if stats.certificate_changes > 0 {
                li {
                    (plural(stats.certificate_changes, "capsule"))
                    " changed certificate since first seen"
                }
            }
        }
    };
    page("Statistics", "", body)
}

pub fn about() -> String {
    let body = html! {
        h1 { "About geode" }
        p { (pages::ABOUT_INTRO) }
        h2 { "Searching" }
        ul.syntax {
            @for item in pages::QUERY_SYNTAX {
                li {
                    @for part in *item {
                        @match part {
                            Help::Say(text) => (text),
                            Help::Type(example) => a href=(search_href(example, 1, false)) {
                                code { (example) }
                            },
                        }
                    }
                }
            }
        }
        @for paragraph in pages::SEARCH_NOTES { p { (paragraph) } }
        p {
            "On the web, a result's title links to its " code { "gemini://" }
            " address, for a Gemini client to open; this geode may also offer to open it "
            "through a web proxy."
        }
        h2 { "Crawler policy" }
        @for paragraph in pages::CRAWLER_POLICY { p { (paragraph) } }
        pre tabindex="0" { (pages::ROBOTS_EXAMPLE) }
        @for paragraph in pages::CRAWLER_POLICY_AFTER { p { (paragraph) } }
    };
    page("About", "", body)
}

pub fn add_seed(form: SeedForm<'_>) -> String {
    let (value, refused) = match form {
        SeedForm::Refused { input, reason } => (input, Some(reason)),
        _ => ("", None),
    };
    let body = html! {
        h1 { "Suggest a capsule" }
        @if let SeedForm::Done { url, outcome } = form {
            p.message role="status" {
                "“" (shown(url, ECHO_MAX_CHARS)) "” " (pages::seed_outcome(outcome))
            }
            h2 { "Suggest another" }
        } @else {
            p {
                "Know a capsule geode has not found yet? Give one of its addresses, "
                code { "gemini://…" } ", and the next crawl will fetch it."
            }
        }
        @if let Some(reason) = refused {
            p.error id="url-error" role="alert" { (one_line(reason)) }
        }
        form.add-seed method="post" action="/add-seed" {
            label for="url" { "A gemini:// URL" }
            div.field {
                input id="url" name="url" type="text" inputmode="url" autocomplete="off"
                    spellcheck="false" placeholder="gemini://example.org/" value=(value)
                    aria-invalid=[refused.map(|_| "true")]
                    aria-describedby=[refused.map(|_| "url-error")];
                button type="submit" { "Suggest" }
            }
        }
    };
    page("Suggest a capsule", "", body)
}

/// An error page (404, 405, 413, 414, 429, 503...): a title and what to do.
pub fn error(status: u16, title: &str, message: &str) -> String {
    let body = html! {
        h1 { (shown(title, ECHO_MAX_CHARS)) }
        p { (one_line(message)) }
        p.muted { "HTTP status " (status) ". " a href="/" { "geode home" } }
    };
    page(title, "", body)
}

/// Escapes text for XML character data and attribute values.
fn xml_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

/// The OpenSearch description; `base` is the site's origin, e.g. `https://search.example`.
pub fn opensearch(base: &str) -> String {
    let base = xml_escape(base.trim().trim_end_matches('/'));
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<OpenSearchDescription xmlns="http://a9.com/-/spec/opensearch/1.1/">
  <ShortName>geode</ShortName>
  <Description>Search geminispace with geode</Description>
  <InputEncoding>UTF-8</InputEncoding>
  <OutputEncoding>UTF-8</OutputEncoding>
  <Url type="text/html" method="get" template="{base}/search?q={{searchTerms}}"/>
  <Url type="application/json" method="get" template="{base}/api/search?q={{searchTerms}}"/>
  <Url type="application/opensearchdescription+xml" rel="self" template="{base}/opensearch.xml"/>
</OpenSearchDescription>
"#
    )
}

#[cfg(test)]
mod tests;
