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

use maud::{html, Markup, DOCTYPE};

use crate::frontier::{KnownHost, Stats, Suggested};
use crate::human::{size as human_size, when, when_stored};
use crate::index::Hit;
use crate::serve::backend::Backlinks;
use crate::serve::pages::{
    self, plural, status_name, Help, ResultsView, Summary, ECHO_MAX_CHARS, MAX_BACKLINKS_SHOWN,
    TITLE_MAX_CHARS,
};
use crate::serve::render::{self, one_line, truncate};

use super::route::{self, backlinks_href, search_href, MAX_PAGE, PAGE_SIZE};

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

pub fn results(view: ResultsView<'_>, links: ResultLinks<'_>, now: i64) -> String {
    let ResultsView {
        query,
        page: number,
        results,
        elapsed,
        verbose,
    } = view;
    let number = number.max(1);
    let echo = shown(query, ECHO_MAX_CHARS);
    let title = format!("Results for “{echo}”");
    let took = format!("{:.1} ms", elapsed.as_secs_f64() * 1000.0);
    let first = (number - 1) * PAGE_SIZE + 1;
    let last = first + results.hits.len().saturating_sub(1);
    let shown_so_far = (number - 1) * PAGE_SIZE + results.hits.len();
    let previous = (number > 1 && !results.hits.is_empty()).then(|| {
        (
            search_href(query, number - 1, verbose),
            format!(
                "Previous page (results {}-{})",
                first - PAGE_SIZE,
                first - 1
            ),
        )
    });
    let next = (results.total > shown_so_far && number < MAX_PAGE && !results.hits.is_empty())
        .then(|| {
            (
                search_href(query, number + 1, verbose),
                format!(
                    "Next page (results {}-{})",
                    shown_so_far + 1,
                    results.total.min(shown_so_far + PAGE_SIZE)
                ),
            )
        });
    // Past the end: the last page that has results.
    let last_page = results.total.div_ceil(PAGE_SIZE).clamp(1, MAX_PAGE);
    let body = html! {
        h1 { (title) }
        @if let Some(better) = &results.did_you_mean {
            p.did-you-mean {
                "Did you mean "
                a href=(search_href(better, 1, verbose)) { (shown(better, ECHO_MAX_CHARS)) }
                "?"
            }
        }
        @if results.total == 0 {
            p.summary { "No page matches (" (took) ")." }
            h2 { "Tips" }
            ul.links {
                li { "Check the spelling, or try other words, or fewer." }
                li { "Leave out filters such as " code { "site:" } " or " code { "lang:" } "." }
                li { a href="/about" { "Query syntax and tips" } }
            }
        } @else if results.hits.is_empty() {
            p.summary {
                (plural(results.total as u64, "result")) " in all; page " (number)
                " is past the end (" (took) ")."
            }
            p { a href=(search_href(query, last_page, verbose)) { "Go to the last page" } }
        } @else {
            p.summary {
                (plural(results.total as u64, "result")) ", " (first) "-" (last) " shown ("
                (took) ")."
            }
            ol.results start=(first) {
                @for hit in &results.hits {
                    (hit_item(hit, links, verbose, now))
                }
            }
            @if previous.is_some() || next.is_some() {
                nav.pages aria-label="Result pages" {
                    @if let Some((href, label)) = &previous {
                        a rel="prev" href=(href) { (label) }
                    }
                    @if let Some((href, label)) = &next {
                        a rel="next" href=(href) { (label) }
                    }
                }
            }
        }
        @if results.total > 0 {
            p.muted {
                @if verbose {
                    a href=(search_href(query, number, false)) { "The same page without scores" }
                } @else {
                    a href=(search_href(query, number, true)) {
                        "The same page with scores and crawl times"
                    }
                }
            }
        }
    };
    page(&title, query, body)
}

/// One result: its title linking to the page, the web proxy link, the URL, the snippet with
/// the matched words marked, the facts, and the links to its near-duplicates and (verbose) to
/// the pages linking to it.
fn hit_item(hit: &Hit, links: ResultLinks<'_>, verbose: bool, now: i64) -> Markup {
    let lang = hit
        .lang
        .as_deref()
        .and_then(crate::lang::normalize_lang)
        .filter(|l| l != "en");
    // Labels geode writes are English, whatever the page's language.
    let en = lang.as_ref().map(|_| "en");
    let title = shown(&hit.title, TITLE_MAX_CHARS);
    let url = one_line(&hit.url);
    let proxy = links
        .gemini_proxy
        .and_then(|prefix| route::proxied(prefix, &hit.url));
    let snippet = one_line(&hit.snippet);
    let mut facts = vec![hit.host.clone()];
    if !hit.mime.is_empty() {
        facts.push(hit.mime.clone());
    }
    facts.push(human_size(hit.size));
    if let Some(l) = &hit.lang {
        facts.push(l.clone());
    }
    if verbose {
        facts.push(format!("crawled {}", when(hit.fetched_at, now)));
    }
    if !hit.missing.is_empty() {
        facts.push(format!("missing: {}", hit.missing.join(", ")));
    }
    let facts = one_line(&facts.join(" · "));
    html! {
        li.result lang=[lang.as_deref()] {
            h2 dir="auto" {
                @if linkable(&hit.url) {
                    a.title href=(render::safe_url(&hit.url)) {
                        @if title.is_empty() { (url) } @else { (title) }
                    }
                } @else {
                    @if title.is_empty() { (url) } @else { (title) }
                }
            }
            p.url {
                (url)
                @if let Some(proxy) = &proxy {
                    " "
                    a.proxy href=(render::safe_url(proxy)) lang=[en] { "via web proxy" }
                }
            }
            @if !snippet.is_empty() {
                p.snippet dir="auto" {
                    @for (marked, text) in render::marked(&snippet) {
                        @if marked { mark { (text) } } @else { (text) }
                    }
                }
            }
            p.facts lang=[en] { (facts) }
            @if hit.similar > 0 {
                p.similar lang=[en] {
                    a href=(search_href(&format!("similar:{}", hit.url), 1, verbose)) {
                        (plural(hit.similar as u64, "similar page"))
                    }
                }
            }
            @if verbose {
                p.score lang=[en] {
                    (format!(
                        "score {:.4} (text {:.4}, authority {:.4}, prior {:.4}, coverage {:.2})",
                        hit.score, hit.parts.text, hit.parts.authority, hit.parts.prior,
                        hit.parts.coverage
                    ))
                    " · "
                    a href=(backlinks_href(&hit.url)) { "Pages linking here" }
                }
            }
        }
    }
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
mod tests {
    use super::*;
    use crate::frontier::Backlink;
    use crate::index::{ScoreParts, SearchResults};
    use std::cell::RefCell;
    use std::time::Duration;

    use html5ever::tokenizer::{
        BufferQueue, TagKind, Token, TokenSink, TokenSinkResult, Tokenizer, TokenizerOpts,
    };

    /// A tag as a browser's tokenizer reads it.
    #[derive(Debug, Clone)]
    struct Tag {
        start: bool,
        name: String,
        attrs: Vec<(String, String)>,
    }

    impl Tag {
        fn attr(&self, name: &str) -> Option<&str> {
            self.attrs
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.as_str())
        }

        fn class(&self, class: &str) -> bool {
            self.attr("class")
                .is_some_and(|c| c.split_whitespace().any(|c| c == class))
        }
    }

    /// A document read by html5ever's tokenizer: its tags, its text (character references
    /// decoded) and the parse errors it found.
    #[derive(Default)]
    struct Read {
        tags: Vec<Tag>,
        text: String,
        errors: Vec<String>,
    }

    #[derive(Default)]
    struct Sink(RefCell<Read>);

    impl TokenSink for Sink {
        type Handle = ();

        fn process_token(&self, token: Token, _line: u64) -> TokenSinkResult<()> {
            let mut read = self.0.borrow_mut();
            match token {
                Token::TagToken(tag) => read.tags.push(Tag {
                    start: tag.kind == TagKind::StartTag,
                    name: tag.name.to_string(),
                    attrs: tag
                        .attrs
                        .iter()
                        .map(|a| (a.name.local.to_string(), a.value.to_string()))
                        .collect(),
                }),
                Token::CharacterTokens(text) => read.text.push_str(&text),
                Token::ParseError(e) => read.errors.push(e.to_string()),
                _ => {}
            }
            TokenSinkResult::Continue
        }
    }

    fn read(doc: &str) -> Read {
        let input = BufferQueue::default();
        input.push_back(doc.into());
        let tokenizer = Tokenizer::new(Sink::default(), TokenizerOpts::default());
        let _ = tokenizer.feed(&input);
        tokenizer.end();
        tokenizer.sink.0.take()
    }

    impl Read {
        fn starts<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Tag> + 'a {
            self.tags.iter().filter(move |t| t.start && t.name == name)
        }

        fn hrefs(&self) -> Vec<&str> {
            self.tags
                .iter()
                .filter(|t| t.start)
                .filter_map(|t| t.attr("href"))
                .collect()
        }

        fn with_class<'a>(&'a self, class: &'a str) -> impl Iterator<Item = &'a Tag> + 'a {
            self.tags.iter().filter(move |t| t.start && t.class(class))
        }
    }

    const VOID: &[&str] = &["meta", "link", "input", "br", "hr", "img"];

    /// What every page must be: parsed without error, elements closed in order, the landmarks,
    /// head and search box the markup rules ask for, no script, no style, no event handler,
    /// and only links inside geode or to the schemes geode crawls.
    fn check_page(doc: &str) -> Read {
        assert!(doc.starts_with("<!DOCTYPE html>"), "{doc}");
        let r = read(doc);
        assert!(r.errors.is_empty(), "{:?}\n{doc}", r.errors);
        let mut open: Vec<&str> = Vec::new();
        for tag in &r.tags {
            if VOID.contains(&tag.name.as_str()) {
                assert!(tag.start, "</{}>\n{doc}", tag.name);
            } else if tag.start {
                open.push(&tag.name);
            } else {
                assert_eq!(open.pop(), Some(tag.name.as_str()), "{doc}");
            }
        }
        assert!(open.is_empty(), "left open: {open:?}\n{doc}");
        let count = |name: &str| r.starts(name).count();
        for (name, n) in [
            ("html", 1),
            ("head", 1),
            ("title", 1),
            ("body", 1),
            ("header", 1),
            ("main", 1),
            ("footer", 1),
            ("h1", 1),
            ("script", 0),
            ("style", 0),
            ("img", 0),
            ("iframe", 0),
        ] {
            assert_eq!(count(name), n, "<{name}> in\n{doc}");
        }
        assert_eq!(r.starts("html").next().unwrap().attr("lang"), Some("en"));
        assert_eq!(r.starts("main").next().unwrap().attr("id"), Some("main"));
        assert!(r.hrefs().contains(&"#main"), "skip link\n{doc}");
        assert!(r.starts("meta").any(|m| m.attr("name") == Some("viewport")
            && m.attr("content") == Some("width=device-width, initial-scale=1")));
        assert!(r
            .starts("link")
            .any(|l| l.attr("rel") == Some("stylesheet") && l.attr("href") == Some("/style.css")));
        assert!(r.starts("link").any(|l| l.attr("rel") == Some("search")
            && l.attr("type") == Some("application/opensearchdescription+xml")
            && l.attr("href") == Some("/opensearch.xml")));
        let search = r
            .starts("form")
            .find(|f| f.attr("role") == Some("search"))
            .expect("a search form");
        assert_eq!(search.attr("action"), Some("/search"));
        assert_eq!(search.attr("method"), Some("get"));
        let q = r
            .starts("input")
            .find(|i| i.attr("id") == Some("q"))
            .unwrap();
        assert_eq!(
            (q.attr("name"), q.attr("type")),
            (Some("q"), Some("search"))
        );
        assert!(r.starts("button").any(|b| b.attr("type") == Some("submit")));
        // Every id once; every label names one.
        let ids: Vec<&str> = r.tags.iter().filter_map(|t| t.attr("id")).collect();
        for id in &ids {
            assert_eq!(ids.iter().filter(|i| i == &id).count(), 1, "id {id}\n{doc}");
        }
        for label in r.starts("label") {
            assert!(ids.contains(&label.attr("for").unwrap()), "{doc}");
        }
        for tag in &r.tags {
            for (name, value) in &tag.attrs {
                assert!(!name.starts_with("on"), "{name}={value}\n{doc}");
                assert_ne!(name, "style", "{doc}");
                assert_ne!(name, "src", "{doc}");
            }
        }
        for href in r.hrefs() {
            let inside = href.starts_with('/') && !href.starts_with("//") || href == "#main";
            assert!(inside || linkable(href), "{href}\n{doc}");
        }
        r
    }

    fn hit(url: &str, title: &str, snippet: &str) -> Hit {
        Hit {
            url: url.to_string(),
            title: title.to_string(),
            snippet: snippet.to_string(),
            score: 1.5,
            parts: ScoreParts {
                text: 2.0,
                authority: 0.25,
                prior: 1.0,
                coverage: 1.0,
            },
            host: "a.test".to_string(),
            mime: "text/gemini".to_string(),
            lang: Some("en".to_string()),
            size: 2150,
            fetched_at: 1_700_000_000,
            missing: Vec::new(),
            similar: 0,
        }
    }

    fn some(total: usize, hits: Vec<Hit>) -> SearchResults {
        SearchResults {
            total,
            hits,
            ..SearchResults::default()
        }
    }

    fn render(results: &SearchResults, query: &str, page: usize, verbose: bool) -> String {
        results_page(results, query, page, verbose, ResultLinks::default())
    }

    fn results_page(
        results: &SearchResults,
        query: &str,
        page: usize,
        verbose: bool,
        links: ResultLinks<'_>,
    ) -> String {
        super::results(
            ResultsView {
                query,
                page,
                results,
                elapsed: Duration::from_micros(1500),
                verbose,
            },
            links,
            1_700_000_100,
        )
    }

    fn ten(from: usize) -> Vec<Hit> {
        (from..from + 10)
            .map(|i| {
                hit(
                    &format!("gemini://a.test/{i}"),
                    &format!("Page {i}"),
                    "the **kettle** sings",
                )
            })
            .collect()
    }

    /// The query of a `/search?...` link, form-decoded.
    fn query_of(href: &str) -> (String, Option<String>) {
        let (_, query) = href.split_once('?').unwrap();
        let mut q = None;
        let mut page = None;
        for (k, v) in url::form_urlencoded::parse(query.as_bytes()) {
            match &*k {
                "q" => q = Some(v.into_owned()),
                "page" => page = Some(v.into_owned()),
                _ => panic!("{href}"),
            }
        }
        (q.unwrap(), page)
    }

    const HOSTILE: &[&str] = &[
        "<script>alert(1)</script>",
        "\"><img src=x onerror=alert(1)>",
        "' onmouseover='alert(1)",
        "a & b < c \" d > e",
        "</title><script>alert(1)</script>",
        "<!-- x --> <style>*{}</style>",
        "javascript:alert(1)",
        " JavaScript:alert(1)",
    ];

    #[test]
    fn hostile_text_stays_text() {
        for bad in HOSTILE {
            let mut h = hit(
                &format!("gemini://a.test/{bad}"),
                bad,
                &format!("x **{bad}** y"),
            );
            h.host = bad.to_string();
            h.mime = bad.to_string();
            h.lang = Some(bad.to_string());
            h.missing = vec![bad.to_string()];
            h.similar = 2;
            let results = SearchResults {
                total: 1,
                did_you_mean: Some(bad.to_string()),
                ..some(1, vec![h])
            };
            let links = ResultLinks {
                gemini_proxy: Some("https://portal.example/gemini/"),
            };
            let seed_refused = add_seed(SeedForm::Refused {
                input: bad,
                reason: bad,
            });
            let seed_done = add_seed(SeedForm::Done {
                url: bad,
                outcome: Suggested::New,
            });
            let unknown = Backlinks {
                known: false,
                links: vec![Backlink {
                    url: format!("gemini://b.test/{bad}"),
                    label: bad.to_string(),
                }],
            };
            let hosts = [KnownHost {
                name: bad.to_string(),
                pages_indexed: 1,
                urls_known: 1,
            }];
            let stats = Stats {
                errors: vec![(bad.to_string(), 1)],
                by_state: vec![(bad.to_string(), 1)],
                ..Stats::default()
            };
            for doc in [
                results_page(&results, bad, 1, false, links),
                results_page(&results, bad, 1, true, links),
                query_error(bad, bad, bad),
                backlinks(bad, &unknown),
                backlinks_bad_url(bad, bad),
                seed_refused,
                seed_done,
                known_hosts(&hosts, 1),
                super::stats(&stats, 1, 1, 0),
                error(404, bad, bad),
            ] {
                let r = check_page(&doc);
                assert!(!doc.contains("<script"), "{doc}");
                assert!(!doc.contains("<img"), "{doc}");
                assert!(!doc.contains("<style"), "{doc}");
                assert!(!doc.contains("<!--"), "{doc}");
                for href in r.hrefs() {
                    assert!(
                        !href.trim().to_ascii_lowercase().starts_with("javascript:"),
                        "{href}\n{doc}"
                    );
                }
                // The text is shown, as text.
                let shown = one_line(bad);
                assert!(r.text.contains(shown.trim()), "{bad:?} not shown\n{doc}");
            }
        }
    }

    #[test]
    fn javascript_urls_never_become_links() {
        let js = "javascript:alert(1)";
        let results = SearchResults {
            did_you_mean: Some(js.to_string()),
            ..some(1, vec![hit(js, "Title", "snippet")])
        };
        let doc = render(&results, js, 1, true);
        let r = check_page(&doc);
        assert!(
            r.hrefs().iter().all(|h| !h.contains("javascript:")),
            "{doc}"
        );
        // The query is in the links, encoded, and reads back whole.
        let dym = r.with_class("did-you-mean").next().unwrap();
        assert_eq!(dym.name, "p");
        let back = r
            .hrefs()
            .into_iter()
            .find(|h| h.starts_with("/search?"))
            .unwrap();
        assert_eq!(query_of(back).0, js);
        // Even a known URL is only a link with a crawled scheme.
        for known in [false, true] {
            let found = Backlinks {
                known,
                links: vec![Backlink {
                    url: "JAVASCRIPT:alert(2)".into(),
                    label: "x".into(),
                }],
            };
            let doc = backlinks(js, &found);
            let r = check_page(&doc);
            for href in r.hrefs() {
                assert!(!href.to_ascii_lowercase().contains("javascript:"), "{doc}");
            }
            assert!(r.text.contains("“javascript:alert(1)”"), "{doc}");
        }
    }

    #[test]
    fn results_show_hits_marks_and_facts() {
        let mut first = hit("gemini://a.test/x y", "", "the **kettle** sings **loud**");
        first.missing = vec!["whistle".into(), "spout".into()];
        first.similar = 3;
        let results = some(2, vec![first, hit("gemini://b.test/", "B & co", "")]);
        let doc = render(&results, "kettle whistle", 1, false);
        let r = check_page(&doc);
        assert!(
            doc.contains("<h1>Results for “kettle whistle”</h1>"),
            "{doc}"
        );
        assert!(doc.contains("<title>Results for “kettle whistle” · geode</title>"));
        let summary = r.with_class("summary").count();
        assert_eq!(summary, 1, "{doc}");
        assert!(r.text.contains("2 results, 1-2 shown (1.5 ms)."), "{doc}");
        assert_eq!(r.with_class("result").count(), 2);
        let ol = r.starts("ol").next().unwrap();
        assert!(ol.class("results"));
        assert_eq!(ol.attr("start"), Some("1"));
        let titles: Vec<&Tag> = r.with_class("title").collect();
        assert_eq!(titles[0].attr("href"), Some("gemini://a.test/x%20y"));
        // Without a title, the URL is the label.
        assert!(doc.contains(">gemini://a.test/x y</a>"), "{doc}");
        assert!(doc.contains(">B &amp; co</a>"), "{doc}");
        assert!(
            doc.contains(
                r#"<p class="snippet" dir="auto">the <mark>kettle</mark> sings <mark>loud</mark></p>"#
            ),
            "{doc}"
        );
        assert!(!doc.contains("**"), "{doc}");
        assert!(
            r.text
                .contains("a.test · text/gemini · 2.1 KiB · en · missing: whistle, spout"),
            "{doc}"
        );
        let similar = r
            .hrefs()
            .into_iter()
            .find(|h| h.contains("similar"))
            .unwrap();
        assert_eq!(query_of(similar).0, "similar:gemini://a.test/x y");
        assert!(r.text.contains("3 similar pages"), "{doc}");
        assert_eq!(r.with_class("proxy").count(), 0, "{doc}");
        assert!(!r.text.contains("score 1.5"), "{doc}");
        assert!(
            !r.hrefs().iter().any(|h| h.starts_with("/backlinks")),
            "{doc}"
        );
        // The verbose page adds scores, crawl times and backlinks.
        let doc = render(&results, "kettle whistle", 1, true);
        let r = check_page(&doc);
        assert!(
            r.text.contains(
                "score 1.5000 (text 2.0000, authority 0.2500, prior 1.0000, coverage 1.00)"
            ),
            "{doc}"
        );
        assert!(
            r.text.contains("crawled 2023-11-14 22:13 UTC (100 s ago)"),
            "{doc}"
        );
        assert!(
            r.hrefs()
                .contains(&"/backlinks?url=gemini%3A%2F%2Fa.test%2Fx%20y"),
            "{doc}"
        );
        assert!(r.hrefs().contains(&"/search?q=kettle%20whistle"), "{doc}");
    }

    #[test]
    fn did_you_mean_links_to_its_search() {
        for verbose in [false, true] {
            let results = SearchResults {
                did_you_mean: Some("kettle “whistle” & +more".to_string()),
                ..some(1, vec![hit("gemini://a.test/", "T", "")])
            };
            let doc = render(&results, "kettel", 1, verbose);
            let r = check_page(&doc);
            let p = doc.split(r#"<p class="did-you-mean">"#).nth(1).expect(&doc);
            assert!(p.starts_with("Did you mean <a href="), "{doc}");
            let href = r
                .hrefs()
                .into_iter()
                .find(|h| query_of_opt(h).is_some_and(|q| q.contains("whistle")))
                .unwrap();
            let base = if verbose { "/v/search?" } else { "/search?" };
            assert!(href.starts_with(base), "{href}");
            assert_eq!(
                query_of(href),
                ("kettle “whistle” & +more".to_string(), None)
            );
        }
        // Nothing found still offers the correction, and tips.
        let none = SearchResults {
            did_you_mean: Some("kettle".to_string()),
            ..SearchResults::default()
        };
        let doc = render(&none, "kettel", 1, false);
        let r = check_page(&doc);
        assert!(r.hrefs().contains(&"/search?q=kettle"), "{doc}");
        assert!(r.text.contains("No page matches"), "{doc}");
        assert!(r.hrefs().contains(&"/about"), "{doc}");
        assert_eq!(r.starts("ol").count(), 0);
    }

    fn query_of_opt(href: &str) -> Option<String> {
        (href.starts_with("/search?") || href.starts_with("/v/search?")).then(|| query_of(href).0)
    }

    #[test]
    fn pages_link_to_each_other() {
        let results = some(25, ten(10));
        let doc = render(&results, "kettle pot", 2, false);
        let r = check_page(&doc);
        let nav = r.starts("nav").find(|n| n.class("pages")).unwrap();
        assert_eq!(nav.attr("aria-label"), Some("Result pages"));
        let rel = |rel: &str| {
            r.starts("a")
                .find(|a| a.attr("rel") == Some(rel))
                .and_then(|a| a.attr("href"))
        };
        assert_eq!(rel("prev"), Some("/search?q=kettle%20pot"));
        assert_eq!(rel("next"), Some("/search?q=kettle%20pot&page=3"));
        assert!(
            doc.contains(r#"href="/search?q=kettle%20pot&amp;page=3""#),
            "{doc}"
        );
        assert!(r.text.contains("Previous page (results 1-10)"), "{doc}");
        assert!(r.text.contains("Next page (results 21-25)"), "{doc}");
        assert!(r.text.contains("25 results, 11-20 shown"), "{doc}");
        assert_eq!(r.starts("ol").next().unwrap().attr("start"), Some("11"));

        // The last page: no next. The first: no previous.
        let doc = render(&some(25, ten(20)[..5].to_vec()), "kettle pot", 3, true);
        let r = check_page(&doc);
        assert!(
            r.starts("a").all(|a| a.attr("rel") != Some("next")),
            "{doc}"
        );
        assert!(
            r.hrefs().contains(&"/v/search?q=kettle%20pot&page=2"),
            "{doc}"
        );
        let doc = render(&some(25, ten(0)), "k", 1, false);
        let r = check_page(&doc);
        assert!(
            r.starts("a").all(|a| a.attr("rel") != Some("prev")),
            "{doc}"
        );
        assert!(r.hrefs().contains(&"/search?q=k&page=2"), "{doc}");
        // No page after the last one allowed.
        let doc = render(&some(100_000, ten(0)), "k", MAX_PAGE, false);
        let r = check_page(&doc);
        assert!(
            r.starts("a").all(|a| a.attr("rel") != Some("next")),
            "{doc}"
        );
        // A single page: no pagination at all.
        let doc = render(&some(3, ten(0)[..3].to_vec()), "k", 1, false);
        assert_eq!(
            check_page(&doc).starts("nav").count(),
            1,
            "only the footer's\n{doc}"
        );
        // Past the end: said, with the way back.
        let doc = render(&some(25, vec![]), "k", 7, false);
        let r = check_page(&doc);
        assert!(
            r.text.contains("25 results in all; page 7 is past the end"),
            "{doc}"
        );
        assert!(r.hrefs().contains(&"/search?q=k&page=3"), "{doc}");
        assert!(r.starts("a").all(|a| a.attr("rel").is_none()), "{doc}");
    }

    #[test]
    fn foreign_hits_carry_their_language() {
        let mut fr = hit("gemini://a.test/fr", "Bonjour", "le **chat**");
        fr.lang = Some("fr".into());
        let mut en_gb = hit("gemini://a.test/gb", "Hello", "");
        en_gb.lang = Some("en-GB".into());
        let mut none = hit("gemini://a.test/none", "?", "");
        none.lang = None;
        let mut junk = hit("gemini://a.test/junk", "?", "");
        junk.lang = Some("x\"y".into());
        let doc = render(&some(4, vec![fr, en_gb, none, junk]), "x", 1, false);
        let r = check_page(&doc);
        let langs: Vec<Option<&str>> = r.with_class("result").map(|li| li.attr("lang")).collect();
        assert_eq!(langs, [Some("fr"), None, None, None], "{doc}");
        assert!(doc.contains(r#"<li class="result" lang="fr">"#), "{doc}");
        assert!(
            doc.contains(r#"<p class="facts" lang="en">a.test · text/gemini · 2.1 KiB · fr</p>"#),
            "{doc}"
        );
    }

    #[test]
    fn proxy_links_only_for_gemini_results_and_with_a_prefix() {
        let results = some(
            2,
            vec![
                hit("gemini://a.test/x?y", "G", ""),
                hit("https://web.test/", "W", ""),
            ],
        );
        let links = ResultLinks {
            gemini_proxy: Some("https://portal.example/gemini/"),
        };
        let doc = results_page(&results, "x", 1, false, links);
        let r = check_page(&doc);
        let proxies: Vec<&str> = r
            .with_class("proxy")
            .filter_map(|a| a.attr("href"))
            .collect();
        assert_eq!(
            proxies,
            ["https://portal.example/gemini/a.test/x?y"],
            "{doc}"
        );
        assert!(r.text.contains("via web proxy"));
        let titles: Vec<&str> = r
            .with_class("title")
            .filter_map(|a| a.attr("href"))
            .collect();
        assert_eq!(titles, ["gemini://a.test/x?y", "https://web.test/"]);
        let doc = render(&results, "x", 1, false);
        assert_eq!(check_page(&doc).with_class("proxy").count(), 0, "{doc}");
    }

    #[test]
    fn backlinks_link_only_known_urls() {
        let links = vec![
            Backlink {
                url: "gemini://a.test/".into(),
                label: "Home <b>".into(),
            },
            Backlink {
                url: "gemini://b.test/x".into(),
                label: String::new(),
            },
        ];
        let doc = backlinks(
            "gemini://c.test/",
            &Backlinks {
                known: true,
                links: links.clone(),
            },
        );
        let r = check_page(&doc);
        let hrefs = r.hrefs();
        for want in [
            "gemini://c.test/",
            "gemini://a.test/",
            "gemini://b.test/x",
            "/backlinks?url=gemini%3A%2F%2Fc.test%2F",
        ] {
            assert!(hrefs.contains(&want), "{want}\n{doc}");
        }
        assert!(r.text.contains("2 links known:"), "{doc}");
        assert!(r.text.contains("(as “Home <b>”)"), "{doc}");
        for url in ["https://evil.example/login", "gemini://never.seen/"] {
            let doc = backlinks(
                url,
                &Backlinks {
                    known: false,
                    links: Vec::new(),
                },
            );
            let r = check_page(&doc);
            assert!(!r.hrefs().contains(&url), "{doc}");
            assert!(r.text.contains("geode has never met this URL."), "{doc}");
            assert!(
                r.text.contains("No page known to geode links there."),
                "{doc}"
            );
            assert!(r.text.contains(url), "{doc}");
        }
        let doc = backlinks_form();
        let r = check_page(&doc);
        let form = r
            .starts("form")
            .find(|f| f.attr("action") == Some("/backlinks"))
            .unwrap();
        assert_eq!(form.attr("method"), Some("get"));
        let doc = backlinks_bad_url("not a url", "relative URL without a base");
        let r = check_page(&doc);
        assert!(
            r.text.contains(
                "“not a url” is not a URL geode can look up: relative URL without a base."
            ),
            "{doc}"
        );
        assert!(
            r.starts("input")
                .any(|i| i.attr("value") == Some("not a url")),
            "{doc}"
        );
    }

    #[test]
    fn the_seed_form_refuses_and_thanks() {
        let form_of = |r: &Read| {
            let form = r
                .starts("form")
                .find(|f| f.class("add-seed"))
                .cloned()
                .unwrap();
            assert_eq!(form.attr("method"), Some("post"));
            assert_eq!(form.attr("action"), Some("/add-seed"));
            let input = r
                .starts("input")
                .find(|i| i.attr("id") == Some("url"))
                .cloned()
                .unwrap();
            assert_eq!(input.attr("name"), Some("url"));
            assert_eq!(input.attr("type"), Some("text"));
            assert_eq!(input.attr("inputmode"), Some("url"));
            assert!(r.starts("label").any(|l| l.attr("for") == Some("url")));
            input
        };
        let doc = add_seed(SeedForm::Empty);
        let r = check_page(&doc);
        assert_eq!(form_of(&r).attr("value"), Some(""));
        assert_eq!(r.with_class("error").count(), 0);

        let doc = add_seed(SeedForm::Refused {
            input: "https://web.test/",
            reason: "Only gemini:// URLs can be suggested",
        });
        let r = check_page(&doc);
        assert_eq!(form_of(&r).attr("value"), Some("https://web.test/"));
        let error = r.with_class("error").next().unwrap();
        assert_eq!(
            (error.name.as_str(), error.attr("role")),
            ("p", Some("alert"))
        );
        assert!(
            r.text.contains("Only gemini:// URLs can be suggested"),
            "{doc}"
        );

        for outcome in [
            Suggested::New,
            Suggested::Known,
            Suggested::AlreadySuggested,
            Suggested::QueueFull,
        ] {
            let doc = add_seed(SeedForm::Done {
                url: "gemini://new.test/",
                outcome,
            });
            let r = check_page(&doc);
            let message = r.with_class("message").next().unwrap();
            assert_eq!(message.attr("role"), Some("status"));
            assert!(r.text.contains(pages::seed_outcome(outcome)), "{doc}");
            assert!(r.text.contains("“gemini://new.test/”"), "{doc}");
            // The suggested URL is the visitor's: shown, never linked.
            assert!(!r.hrefs().contains(&"gemini://new.test/"), "{doc}");
            form_of(&r);
        }
    }

    #[test]
    fn every_other_page_is_whole() {
        let summary = Summary {
            documents: 1200,
            capsules: 1,
            last_crawl: Some(1_700_000_000),
        };
        let doc = home(Some(&summary), 1_700_000_100);
        let r = check_page(&doc);
        assert!(r.text.contains("The index holds 1200 pages from 1 capsule. Last crawl: 2023-11-14 22:13 UTC (100 s ago)."), "{doc}");
        for href in ["/stats", "/known-hosts", "/add-seed", "/about"] {
            assert!(r.hrefs().contains(&href), "{href}");
        }
        let r = check_page(&home(None, 0));
        assert!(r.text.contains("no crawl has run yet"));
        check_page(&search_form());
        check_page(&no_index());
        let doc = query_error("a \"b", "unbalanced quote.", "a \"b\n  ^");
        let r = check_page(&doc);
        assert!(
            r.text
                .contains("geode did not understand this query: unbalanced quote."),
            "{doc}"
        );
        assert!(
            doc.contains("<pre tabindex=\"0\">a &quot;b\n  ^</pre>"),
            "{doc}"
        );
        assert_eq!(
            r.starts("input")
                .find(|i| i.attr("id") == Some("q"))
                .unwrap()
                .attr("value"),
            Some("a \"b")
        );

        let hosts = vec![
            KnownHost {
                name: "a.test:1966".into(),
                pages_indexed: 3,
                urls_known: 9,
            },
            KnownHost {
                name: "https://web.test".into(),
                pages_indexed: 2,
                urls_known: 2,
            },
        ];
        let doc = known_hosts(&hosts, 4);
        let r = check_page(&doc);
        assert!(r.hrefs().contains(&"gemini://a.test:1966/"), "{doc}");
        assert!(r.hrefs().contains(&"https://web.test/"), "{doc}");
        assert!(
            r.text
                .contains("2 capsules with indexed pages (4 known in all)."),
            "{doc}"
        );

        let stats = Stats {
            by_status: vec![(20, 3), (51, 1)],
            errors: vec![("tls".into(), 2)],
            excluded: vec![("robots".into(), 5)],
            by_state: vec![("indexed".into(), 3)],
            last_crawl_finished: Some("1700000000".into()),
            certificate_changes: 1,
            ..Stats::default()
        };
        let doc = super::stats(&stats, 3, 1, 1_700_000_100);
        let r = check_page(&doc);
        for want in [
            "3 pages in the index",
            "20 success: 3",
            "51 not found: 1",
            "tls: 2",
            "robots: 5",
            "indexed: 3",
            "due now: 0",
            "last crawl started: never",
            "last crawl finished: 2023-11-14 22:13 UTC",
            "1 capsule changed certificate since first seen",
        ] {
            assert!(r.text.contains(want), "{want}\n{doc}");
        }
        assert_eq!(r.starts("h2").count(), 5, "{doc}");

        let doc = about();
        let r = check_page(&doc);
        assert!(r.text.contains(pages::ABOUT_INTRO));
        assert!(r.text.contains("User-agent: indexer\nDisallow: /"), "{doc}");
        assert!(
            r.text.contains("Phrases in double quotes: \"slow radio\""),
            "{doc}"
        );
        assert!(r.hrefs().contains(&"/search?q=site%3Aexample.org"), "{doc}");
        let examples = pages::QUERY_SYNTAX
            .iter()
            .flat_map(|item| item.iter())
            .filter(|part| matches!(part, Help::Type(_)))
            .count();
        let searches = r
            .hrefs()
            .iter()
            .filter(|h| h.starts_with("/search?q="))
            .count();
        assert_eq!(searches, examples, "{doc}");

        let doc = error(404, "Not found", "No page here.");
        let r = check_page(&doc);
        assert!(doc.contains("<h1>Not found</h1>"), "{doc}");
        assert!(r.text.contains("No page here."));
    }

    #[test]
    fn opensearch_is_escaped_xml() {
        let doc = opensearch("https://search.example/a?b=1&c=\"<x>\"/");
        assert!(doc.contains("<ShortName>geode</ShortName>"), "{doc}");
        assert!(
            doc.contains("<InputEncoding>UTF-8</InputEncoding>"),
            "{doc}"
        );
        assert!(doc.contains(r#"template="https://search.example/a?b=1&amp;c=&quot;&lt;x&gt;&quot;/search?q={searchTerms}""#), "{doc}");
        let mut reader = quick_xml::Reader::from_str(&doc);
        let mut templates = Vec::new();
        loop {
            match reader.read_event().expect(&doc) {
                quick_xml::events::Event::Eof => break,
                quick_xml::events::Event::Empty(e) => {
                    for a in e.attributes() {
                        let a = a.unwrap();
                        if a.key.as_ref() == b"template" {
                            templates.push(
                                a.normalized_value(quick_xml::XmlVersion::Implicit1_0)
                                    .unwrap()
                                    .into_owned(),
                            );
                        }
                    }
                }
                _ => {}
            }
        }
        assert_eq!(
            templates[0],
            "https://search.example/a?b=1&c=\"<x>\"/search?q={searchTerms}"
        );
        assert!(opensearch("https://s.example/")
            .contains(r#"template="https://s.example/search?q={searchTerms}""#));
    }

    #[test]
    fn the_stylesheet_is_small_and_self_contained() {
        assert!(STYLESHEET.len() < 8 * 1024, "{}", STYLESHEET.len());
        assert!(STYLESHEET.contains("@media (prefers-color-scheme: dark)"));
        assert!(STYLESHEET.contains(":focus-visible"));
        assert!(STYLESHEET.contains("max-width: 45rem"));
        for remote in ["url(", "@import", "http:", "https:"] {
            assert!(!STYLESHEET.contains(remote), "{remote}");
        }
        assert_eq!(
            STYLESHEET.matches('{').count(),
            STYLESHEET.matches('}').count()
        );
    }
}
