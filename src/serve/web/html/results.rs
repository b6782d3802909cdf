//! The results page of the web frontend: the summary, "did you mean", one item per hit (title,
//! address, snippet with its matches marked, facts, near-duplicates) and the page links.

use maud::{html, Markup};

use crate::human::{size as human_size, when};
use crate::index::Hit;
use crate::serve::pages::{plural, ResultsView, ECHO_MAX_CHARS, TITLE_MAX_CHARS};
use crate::serve::render::{self, one_line};

use super::route::{self, backlinks_href, search_href, MAX_PAGE, PAGE_SIZE};
use super::{linkable, page, shown, ResultLinks};

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
