//! The pages of `geode serve`, rendered as gemtext through [`super::render`], which keeps text
//! from pages and queries from ever becoming markup.
//!
//! Pure: every function takes the data it shows (search results, statistics, backlinks) and
//! returns the page body. Not here: routing and statuses (`request.rs`, `mod.rs`), reading the
//! index or the crawl database.
//!

use crate::human::{size as human_size, when};
use std::fmt::Write as _;
use std::time::Duration;

use crate::frontier::{KnownHost, Stats};
use crate::index::{Hit, SearchResults};

use super::backend::Backlinks;

use super::render::{one_line, strip_marks, truncate, Gemtext};
use super::request::{percent_encode, MAX_PAGE, PAGE_SIZE};

/// Longest stretch of a query echoed in a heading, in characters.
pub(crate) const ECHO_MAX_CHARS: usize = 120;

/// Longest title shown as a link label, in characters.
pub(crate) const TITLE_MAX_CHARS: usize = 160;

/// Most backlinks listed on one page.
pub const MAX_BACKLINKS_SHOWN: usize = 500;

/// What the home page says about the index.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    pub documents: u64,
    pub capsules: u64,
    /// Unix time the last crawl finished (or started, if none finished).
    pub last_crawl: Option<i64>,
}

/// A search to show: the query, which page, what the index answered and how fast.
#[derive(Debug, Clone, Copy)]
pub struct ResultsView<'a> {
    pub query: &'a str,
    pub page: usize,
    pub results: &'a SearchResults,
    pub elapsed: Duration,
    /// The `/v/search` page: scores, crawl times, match marks.
    pub verbose: bool,
}

/// The link to page `page` of `query`: `/search?Q` for the first, `/search/N?Q` after.
pub fn search_link(query: &str, page: usize, verbose: bool) -> String {
    let base = if verbose { "/v/search" } else { "/search" };
    let q = percent_encode(query);
    if page <= 1 {
        format!("{base}?{q}")
    } else {
        format!("{base}/{page}?{q}")
    }
}

pub fn home(summary: Option<&Summary>, now: i64) -> String {
    let mut g = Gemtext::new();
    g.heading(1, "geode")
        .blank()
        .text("A search engine for geminispace.")
        .blank()
        .link("/search", "Search")
        .link("/about", "How to search, and how geode crawls")
        .blank();
    match summary {
        Some(s) => {
            let mut line = format!(
                "The index holds {} from {}.",
                plural(s.documents, "page"),
                plural(s.capsules, "capsule")
            );
            if let Some(t) = s.last_crawl {
                let _ = write!(line, " Last crawl: {}.", when(t, now));
            }
            g.text(&line);
        }
        None => {
            g.text("The index is empty: no crawl has run yet.");
        }
    }
    g.link("/stats", "Statistics")
        .link("/known-hosts", "Known capsules")
        .link("/add-seed", "Suggest a capsule to crawl")
        .finish()
}

pub fn results(view: ResultsView<'_>, now: i64) -> String {
    let ResultsView {
        query,
        page,
        results,
        elapsed,
        verbose,
    } = view;
    let mut g = Gemtext::new();
    g.heading(
        1,
        &format!("Results for “{}”", truncate(query, ECHO_MAX_CHARS)),
    )
    .blank();
    let first = (page - 1) * PAGE_SIZE + 1;
    let last = first + results.hits.len().saturating_sub(1);
    let took = format!("{:.1} ms", elapsed.as_secs_f64() * 1000.0);
    if let Some(better) = &results.did_you_mean {
        g.link(
            &search_link(better, 1, verbose),
            &format!("Did you mean: {}?", truncate(better, ECHO_MAX_CHARS)),
        )
        .blank();
    }
    if results.total == 0 {
        g.text(&format!("No page matches ({took})."))
            .blank()
            .link("/about", "Query syntax and tips")
            .link("/search", "New search")
            .link("/", "geode home");
        return g.finish();
    }
    if results.hits.is_empty() {
        g.text(&format!(
            "{} in all; page {page} is past the end ({took}).",
            plural(results.total as u64, "result")
        ));
    } else {
        g.text(&format!(
            "{}, {first}-{last} shown ({took}).",
            plural(results.total as u64, "result")
        ));
    }
    g.blank();
    for hit in &results.hits {
        hit_lines(&mut g, hit, verbose, now);
        g.blank();
    }
    if page > 1 {
        g.link(
            &search_link(query, page - 1, verbose),
            &format!(
                "Previous page (results {}-{})",
                first - PAGE_SIZE,
                first - 1
            ),
        );
    }
    let shown_so_far = (page - 1) * PAGE_SIZE + results.hits.len();
    if results.total > shown_so_far && page < MAX_PAGE && !results.hits.is_empty() {
        let next_last = results.total.min(shown_so_far + PAGE_SIZE);
        g.link(
            &search_link(query, page + 1, verbose),
            &format!("Next page (results {}-{next_last})", shown_so_far + 1),
        );
    }
    if verbose {
        g.link(
            &search_link(query, page, false),
            "The same page without scores",
        );
    } else {
        g.link(
            &search_link(query, page, true),
            "The same page with scores and crawl times",
        );
    }
    g.link("/search", "New search").link("/", "geode home");
    g.finish()
}

fn hit_lines(g: &mut Gemtext, hit: &Hit, verbose: bool, now: i64) {
    let title = truncate(&one_line(&hit.title), TITLE_MAX_CHARS);
    g.link(&hit.url, if title.is_empty() { &hit.url } else { &title });
    let snippet = if verbose {
        hit.snippet.clone()
    } else {
        strip_marks(&hit.snippet)
    };
    if !one_line(&snippet).is_empty() {
        g.quote(&snippet);
    }
    let mut facts = vec![hit.host.clone()];
    if !hit.mime.is_empty() {
        facts.push(hit.mime.clone());
    }
    facts.push(human_size(hit.size));
    if let Some(lang) = &hit.lang {
        facts.push(lang.clone());
    }
    if verbose {
        facts.push(format!("crawled {}", when(hit.fetched_at, now)));
    }
    if !hit.missing.is_empty() {
        facts.push(format!("missing: {}", hit.missing.join(", ")));
    }
    g.text(&facts.join(" · "));
    if hit.similar > 0 {
        g.link(
            &search_link(&format!("similar:{}", hit.url), 1, verbose),
            &plural(hit.similar as u64, "similar page"),
        );
    }
    if verbose {
        let p = &hit.parts;
        g.text(&format!(
            "score {:.4} (text {:.4}, authority {:.4}, prior {:.4}, coverage {:.2})",
            hit.score, p.text, p.authority, p.prior, p.coverage
        ));
        g.link(
            &format!("/backlinks?{}", percent_encode(&hit.url)),
            "Pages linking here",
        );
    }
}

/// A query that could not be run: what is wrong, and the query shown with carets under the
/// problem when its place is known (`shown`, several lines), else just the query.
pub fn query_error(message: &str, shown: &str) -> String {
    let mut g = Gemtext::new();
    g.heading(1, "That query could not be read")
        .blank()
        .text(&format!(
            "geode did not understand this query: {}.",
            message.trim_end_matches('.')
        ))
        .preformatted("the query, marked where the problem is", shown)
        .blank()
        .link("/search", "Search again")
        .link("/about", "Query syntax")
        .link("/", "geode home");
    g.finish()
}

/// A search while no index exists yet.
pub fn no_index() -> String {
    let mut g = Gemtext::new();
    g.heading(1, "No index yet")
        .blank()
        .text("This geode has not finished a crawl yet, so there is nothing to search. Try again later.")
        .blank()
        .link("/", "geode home");
    g.finish()
}

/// The pages linking to `url`. `url` is what the visitor asked about: it becomes a link only
/// when the crawl database knows it ([`Backlinks::known`]); otherwise it is shown as text, so
/// that `/backlinks?ANYTHING` cannot make geode's own page carry a link of the visitor's
/// choosing (a phishing page, a `javascript:` URL). The linking pages come from the database.
pub fn backlinks(url: &str, found: &Backlinks) -> String {
    let links = &found.links;
    let mut g = Gemtext::new();
    g.heading(1, "Backlinks").blank();
    g.text("Pages linking to:");
    if found.known {
        g.link(url, url);
    } else {
        g.quote(&truncate(url, ECHO_MAX_CHARS))
            .text("geode has never met this URL.");
    }
    g.blank();
    if links.is_empty() {
        g.text("No page known to geode links there.");
    } else {
        g.text(&format!("{} known:", plural(links.len() as u64, "link")));
        for link in links.iter().take(MAX_BACKLINKS_SHOWN) {
            let label = one_line(&link.label);
            if label.is_empty() {
                g.link(&link.url, &link.url);
            } else {
                g.link(&link.url, &format!("{} (as “{label}”)", link.url));
            }
        }
        if links.len() > MAX_BACKLINKS_SHOWN {
            g.text(&format!(
                "… and {} more.",
                links.len() - MAX_BACKLINKS_SHOWN
            ));
        }
    }
    g.blank()
        .link(&format!("/backlinks?{}", percent_encode(url)), "Refresh")
        .link("/backlinks", "Backlinks of another URL")
        .link("/", "geode home");
    g.finish()
}

/// The answer to `/add-seed?URL`. The URL is shown as text, not as a link: a visitor chose it.
pub fn seed_added(url: &str, outcome: crate::frontier::Suggested) -> String {
    let mut g = Gemtext::new();
    g.heading(1, "Suggest a capsule").blank();
    g.text(&format!("“{}”", truncate(url, ECHO_MAX_CHARS)))
        .text(seed_outcome(outcome))
        .blank()
        .link("/add-seed", "Suggest another")
        .link("/", "geode home");
    g.finish()
}

/// What became of a suggested capsule, for both frontends.
pub fn seed_outcome(outcome: crate::frontier::Suggested) -> &'static str {
    use crate::frontier::Suggested;
    match outcome {
        Suggested::New => "Thank you: the next crawl will fetch it, politely, and index what it finds (its robots.txt permitting).",
        Suggested::Known => "geode knows it already: the next crawl will visit it again.",
        Suggested::AlreadySuggested => "It was suggested before: the next crawl will visit it.",
        Suggested::QueueFull => "Too many suggestions are waiting for the next crawl; please try again after it.",
    }
}

/// `/backlinks?X` where X is no URL geode could look up.
pub fn backlinks_bad_url(input: &str, reason: &str) -> String {
    let mut g = Gemtext::new();
    g.heading(1, "Backlinks")
        .blank()
        .text(&format!(
            "“{}” is not a URL geode can look up: {reason}.",
            truncate(input, ECHO_MAX_CHARS)
        ))
        .blank()
        .link("/backlinks", "Try another URL")
        .link("/", "geode home");
    g.finish()
}

pub fn known_hosts(hosts: &[KnownHost], total_known: u64) -> String {
    let mut g = Gemtext::new();
    g.heading(1, "Known capsules").blank();
    g.text(&format!(
        "{} with indexed pages ({} known in all). Pages indexed in brackets.",
        plural(hosts.len() as u64, "capsule"),
        total_known
    ))
    .blank();
    for host in hosts {
        // A capsule key names a Gemini host or a web origin (`https://host`).
        g.link(
            &crate::urlnorm::Capsule::parse(&host.name).root(),
            &format!("{} ({})", host.name, host.pages_indexed),
        );
    }
    g.blank()
        .link("/stats", "Statistics")
        .link("/", "geode home");
    g.finish()
}

/// The statistics page; `capsules` is how many capsules have indexed pages.
pub fn stats(stats: &Stats, documents: u64, capsules: u64, now: i64) -> String {
    let mut g = Gemtext::new();
    g.heading(1, "Index statistics").blank();
    g.item(&format!("{} in the index", plural(documents, "page")))
        .item(&format!(
            "{} with indexed pages",
            plural(capsules, "capsule")
        ))
        .item(&format!("{} known", plural(stats.hosts, "capsule")))
        .item(&format!("{} known", plural(stats.urls_known, "URL")))
        .item(&format!(
            "{} skipped as duplicates of another URL",
            plural(stats.duplicates, "page")
        ))
        .item(&format!(
            "{} asking for input (status 10 or 11)",
            plural(stats.query_endpoints, "URL")
        ))
        .item(&format!(
            "last crawl started: {}",
            unix_text(stats.last_crawl_started.as_deref(), now)
        ))
        .item(&format!(
            "last crawl finished: {}",
            unix_text(stats.last_crawl_finished.as_deref(), now)
        ));
    if !stats.by_status.is_empty() {
        g.blank().heading(2, "Answers by status");
        for (status, n) in &stats.by_status {
            g.item(&format!("{status} {}: {n}", status_name(*status)));
        }
    }
    if !stats.errors.is_empty() {
        g.blank().heading(2, "No answer (network, TLS, protocol)");
        for (kind, n) in &stats.errors {
            g.item(&format!("{kind}: {n}"));
        }
    }
    if !stats.excluded.is_empty() {
        g.blank().heading(2, "Not fetched");
        for (why, n) in &stats.excluded {
            g.item(&format!("{why}: {n}"));
        }
    }
    g.blank().heading(2, "URLs by crawl state");
    for (state, n) in &stats.by_state {
        g.item(&format!("{state}: {n}"));
    }
    let schedule = &stats.schedule;
    g.blank()
        .heading(2, "Revisits")
        .item(&format!("due now: {}", schedule.due_now))
        .item(&format!("due within a day: {}", schedule.due_within_day))
        .item(&format!("due within a week: {}", schedule.due_within_week))
        .item(&format!("feeds: {}", schedule.feeds))
        .item(&format!(
            "failing but still searchable: {}",
            schedule.failing_but_searchable
        ));
    for (bucket, n) in &schedule.intervals {
        g.item(&format!("revisited every {bucket}: {n}"));
    }
    if stats.certificate_changes > 0 {
        g.item(&format!(
            "{} changed certificate since first seen",
            plural(stats.certificate_changes, "capsule")
        ));
    }
    g.blank()
        .link("/known-hosts", "Known capsules")
        .link("/", "geode home");
    g.finish()
}

pub fn about() -> String {
    let mut g = Gemtext::new();
    g.heading(1, "About geode")
        .blank()
        .text(ABOUT_INTRO)
        .blank()
        .heading(2, "Searching");
    for item in QUERY_SYNTAX {
        let line: String = item.iter().map(|part| part.text()).collect();
        g.item(&line);
    }
    for note in SEARCH_NOTES {
        g.blank().text(note);
    }
    g.blank().heading(2, "Crawler policy");
    for (i, paragraph) in CRAWLER_POLICY.iter().enumerate() {
        if i > 0 {
            g.blank();
        }
        g.text(paragraph);
    }
    g.preformatted("robots.txt", ROBOTS_EXAMPLE);
    for (i, paragraph) in CRAWLER_POLICY_AFTER.iter().enumerate() {
        if i > 0 {
            g.blank();
        }
        g.text(paragraph);
    }
    g.blank().link("/search", "Search").link("/", "geode home");
    g.finish()
}

/// A piece of help text: words to read, or an example to type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Help {
    Say(&'static str),
    Type(&'static str),
}

impl Help {
    pub fn text(self) -> &'static str {
        match self {
            Help::Say(text) | Help::Type(text) => text,
        }
    }
}

/// The about pages' first words.
pub const ABOUT_INTRO: &str = "geode is a search engine for geminispace. It crawls capsules politely, indexes their text, and answers here.";

/// The query language, one item each, for the about pages of both frontends.
// TODO(lead): keep this in step with src/query.rs when the query language changes.
pub const QUERY_SYNTAX: &[&[Help]] = {
    use Help::{Say, Type};
    &[
        &[
            Say("Words (accents and case do not matter): "),
            Type("bicycle repair"),
            Say(". Pages with every word come first, then pages with some, marked \"missing:\""),
        ],
        &[Say("Every word required: "), Type("bicycle AND repair")],
        &[Say("Phrases in double quotes: "), Type("\"slow radio\"")],
        &[Say("Either of two: "), Type("tea OR coffee")],
        &[
            Say("Leave out: "),
            Type("bread -sourdough"),
            Say(" (or "),
            Type("NOT sourdough"),
            Say(")"),
        ],
        &[
            Say("Group with parentheses: "),
            Type("(tea OR coffee) recipe"),
        ],
        &[Say("One capsule: "), Type("site:example.org")],
        &[Say("Language: "), Type("lang:fr")],
        &[
            Say("Media type: "),
            Type("mime:text/plain"),
            Say(", file type: "),
            Type("filetype:txt"),
        ],
        &[
            Say("In the title or URL: "),
            Type("intitle:gemlog"),
            Say(", "),
            Type("inurl:recipes"),
        ],
        &[
            Say("Size: "),
            Type("size:>10K"),
            Say(", "),
            Type("size:<2M"),
        ],
        &[
            Say("A page and its near-duplicates: "),
            Type("similar:gemini://example.org/page.gmi"),
        ],
        &[
            Say("Geminispace or the web only: "),
            Type("scheme:gemini"),
            Say(", "),
            Type("scheme:https"),
        ],
    ]
};

/// The about pages' paragraphs after the query language.
pub const SEARCH_NOTES: &[&str] = &[
    "A word the index does not know is also matched by its likely spellings, and the results offer the corrected query. Copies of one page (the same text under another address) show as one result with a link to the others.",
    "Result pages show ten results each. The verbose pages (/v/search) add scores and crawl times, and link to the pages linking to each result.",
];

/// The crawler policy, up to the robots.txt example.
pub const CRAWLER_POLICY: &[&str] = &[
    "geode's crawler identifies as an indexer, in the sense of the robots.txt companion specification. It fetches a capsule's /robots.txt before anything else and obeys the rules for the user agents indexer, geode and * together.",
    "To keep geode out of all or part of a capsule, serve a /robots.txt such as:",
];

/// A robots.txt keeping geode out of a whole capsule.
pub const ROBOTS_EXAMPLE: &str = "User-agent: indexer\nDisallow: /";

/// The crawler policy after the robots.txt example.
pub const CRAWLER_POLICY_AFTER: &[&str] = &[
    "Pages already indexed leave the index when the crawler next sees they are disallowed or gone.",
    "The crawler keeps at most one connection per IP address, waits between requests, slows down when asked (44), never answers input prompts and never sends client certificates.",
    "Each capsule gets a budget of requests per crawl: 1,000, plus 1,000 for each other site linking to it, plus its pages already indexed. A capsule whose pages stop bringing new text, or keep adding endless new addresses, is left for the next crawl. Nothing is dropped: the next crawl goes on where this one stopped.",
];

/// Keeps other crawlers out of the result pages (they are endless and cost the index).
pub fn robots() -> &'static str {
    "User-agent: *\nDisallow: /search\nDisallow: /v/\nDisallow: /backlinks\n"
}

pub(crate) fn plural(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

pub(crate) fn status_name(status: u8) -> &'static str {
    match status {
        10 => "input",
        11 => "sensitive input",
        20 => "success",
        30 => "temporary redirect",
        31 => "permanent redirect",
        40 => "temporary failure",
        41 => "server unavailable",
        42 => "CGI error",
        43 => "proxy error",
        44 => "slow down",
        50 => "permanent failure",
        51 => "not found",
        52 => "gone",
        53 => "proxy request refused",
        59 => "bad request",
        60 => "client certificate required",
        61 => "certificate not authorised",
        62 => "certificate not valid",
        _ => "other",
    }
}

/// A stored unix time (text) for people, or "never".
fn unix_text(stored: Option<&str>, now: i64) -> String {
    match stored.and_then(|s| s.trim().parse::<i64>().ok()) {
        Some(t) => when(t, now),
        None => "never".to_string(),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::frontier::Backlink;
    use crate::index::ScoreParts;
    use crate::serve::render::tests::kind;

    /// Two known capsules: a Gemini one on another port, and a web origin (also the web pages'
    /// tests').
    pub(crate) fn two_hosts() -> Vec<KnownHost> {
        vec![
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
        ]
    }

    /// A hit of `a.test` with the given address, title and snippet (also the web pages' tests').
    pub(crate) fn hit(url: &str, title: &str, snippet: &str) -> Hit {
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
                semantic: None,
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

    fn view(results: &SearchResults, query: &'static str, page: usize) -> String {
        super::results(
            ResultsView {
                query,
                page,
                results,
                elapsed: Duration::from_micros(1500),
                verbose: false,
            },
            1_700_000_100,
        )
    }

    #[test]
    fn results_page_lists_hits_and_pages() {
        let hits: Vec<Hit> = (0..10)
            .map(|i| {
                hit(
                    &format!("gemini://a.test/{i}"),
                    &format!("Page {i}"),
                    "the **kettle** sings",
                )
            })
            .collect();
        let results = SearchResults {
            total: 25,
            hits,
            ..SearchResults::default()
        };
        let page = view(&results, "kettle", 2);
        assert!(page.starts_with("# Results for “kettle”\n"), "{page}");
        assert!(page.contains("25 results, 11-20 shown (1.5 ms)."), "{page}");
        assert!(page.contains("=> gemini://a.test/3 Page 3\n> the kettle sings\na.test · text/gemini · 2.1 KiB · en\n"), "{page}");
        assert!(
            page.contains("=> /search?kettle Previous page (results 1-10)\n"),
            "{page}"
        );
        assert!(
            page.contains("=> /search/3?kettle Next page (results 21-25)\n"),
            "{page}"
        );
        assert!(page.contains("=> /v/search/2?kettle "), "{page}");

        let last = SearchResults {
            total: 25,
            hits: results.hits[..5].to_vec(),
            ..SearchResults::default()
        };
        let page = view(&last, "kettle", 3);
        assert!(!page.contains("Next page"), "{page}");
        assert!(
            page.contains("=> /search/2?kettle Previous page (results 11-20)"),
            "{page}"
        );
    }

    #[test]
    fn hostile_queries_and_titles_stay_text() {
        let results = SearchResults {
            total: 1,
            hits: vec![hit(
                "gemini://a.test/",
                "Title\n=> gemini://evil/ got you",
                "```\n# heading\n=> gemini://evil/",
            )],
            ..SearchResults::default()
        };
        let page = view(&results, "\n=> gemini://evil/ x", 1);
        for line in page.lines() {
            if kind(line) == "link" {
                let target = line.trim_start_matches("=>").split_whitespace().next();
                assert_ne!(target, Some("gemini://evil/"), "{page}");
            }
            assert_ne!(kind(line), "fence", "{page}");
        }
        assert_eq!(
            page.lines().filter(|l| kind(l) == "heading").count(),
            1,
            "{page}"
        );
        assert!(
            page.contains("=> /v/search?%0A=%3E%20gemini://evil/%20x "),
            "{page}"
        );
    }

    #[test]
    fn missing_words_similar_pages_and_did_you_mean_are_shown() {
        let mut lacking = hit("gemini://a.test/p", "P", "a kettle");
        lacking.missing = vec!["whistle".to_string()];
        lacking.similar = 3;
        let results = SearchResults {
            total: 1,
            did_you_mean: Some("kettle whistle".to_string()),
            hits: vec![lacking],
            ..SearchResults::default()
        };
        let page = view(&results, "kettel whistle", 1);
        assert!(
            page.contains("=> /search?kettle%20whistle Did you mean: kettle whistle?\n"),
            "{page}"
        );
        assert!(
            page.contains("a.test · text/gemini · 2.1 KiB · en · missing: whistle\n"),
            "{page}"
        );
        assert!(
            page.contains("=> /search?similar:gemini://a.test/p 3 similar pages\n"),
            "{page}"
        );
        // Nothing found at all still offers the correction.
        let none = SearchResults {
            did_you_mean: Some("kettle".to_string()),
            ..SearchResults::default()
        };
        assert!(view(&none, "kettel", 1).contains("Did you mean: kettle?"));
    }

    #[test]
    fn no_results_and_past_the_end() {
        let none = SearchResults {
            total: 0,
            hits: vec![],
            ..SearchResults::default()
        };
        assert!(view(&none, "zzyzx", 1).contains("No page matches"));
        let past = SearchResults {
            total: 3,
            hits: vec![],
            ..SearchResults::default()
        };
        let page = view(&past, "x", 5);
        assert!(
            page.contains("3 results in all; page 5 is past the end"),
            "{page}"
        );
        assert!(!page.contains("Next page"), "{page}");
    }

    #[test]
    fn verbose_keeps_marks_and_shows_scores() {
        let results = SearchResults {
            total: 1,
            hits: vec![hit("gemini://a.test/x y", "T", "a **b** c")],
            ..SearchResults::default()
        };
        let page = super::results(
            ResultsView {
                query: "b",
                page: 1,
                results: &results,
                elapsed: Duration::ZERO,
                verbose: true,
            },
            1_700_000_100,
        );
        assert!(page.contains("> a **b** c\n"), "{page}");
        assert!(
            page.contains(
                "\nscore 1.5000 (text 2.0000, authority 0.2500, prior 1.0000, coverage 1.00)\n"
            ),
            "{page}"
        );
        assert!(
            page.contains("crawled 2023-11-14 22:13 UTC (100 s ago)"),
            "{page}"
        );
        assert!(page.contains("=> gemini://a.test/x%20y T\n"), "{page}");
        assert!(
            page.contains("=> /backlinks?gemini://a.test/x%20y Pages linking here"),
            "{page}"
        );
    }

    #[test]
    fn backlinks_and_hosts_render_links() {
        let links = vec![
            Backlink {
                url: "gemini://a.test/".into(),
                label: "Home\n=> gemini://evil/".into(),
            },
            Backlink {
                url: "gemini://b.test/x".into(),
                label: String::new(),
            },
        ];
        let page = backlinks("gemini://c.test/", &Backlinks { known: true, links });
        assert!(
            page.contains("Pages linking to:\n=> gemini://c.test/ gemini://c.test/\n"),
            "{page}"
        );
        assert!(
            page.contains("=> gemini://a.test/ gemini://a.test/ (as “Home => gemini://evil/”)\n"),
            "{page}"
        );
        assert!(
            page.contains("=> gemini://b.test/x gemini://b.test/x\n"),
            "{page}"
        );
        assert!(page.contains("2 links known"), "{page}");
        let hosts = two_hosts();
        let page = known_hosts(&hosts, 4);
        assert!(
            page.contains("=> gemini://a.test:1966/ a.test:1966 (3)\n"),
            "{page}"
        );
        assert!(
            page.contains("=> https://web.test/ https://web.test (2)\n"),
            "{page}"
        );
    }

    /// Issue 12, item 1: `/backlinks?javascript:alert(1)` answered `=> javascript:alert(1)`, and
    /// any URL a visitor typed became a link on geode's own page.
    #[test]
    fn backlinks_never_link_unknown_urls() {
        for url in [
            "https://evil.example/login",
            "javascript:alert(1)",
            "gemini://never.seen/",
            "=> gemini://evil/ \n# x",
        ] {
            let page = backlinks(
                url,
                &Backlinks {
                    known: false,
                    links: Vec::new(),
                },
            );
            for line in page.lines() {
                if let Some(target) = line.strip_prefix("=>") {
                    let target = target.split_whitespace().next().unwrap_or("");
                    assert!(target.starts_with('/'), "{url}: {line:?}\n{page}");
                }
                assert!(!line.starts_with("# x"), "{url}: {line:?}");
            }
            assert!(page.contains("never met this URL"), "{page}");
            let shown = one_line(url);
            assert!(page.contains(&shown), "{url} is shown as text: {page}");
        }
    }

    #[test]
    fn every_page_is_safe_gemtext() {
        let stats = Stats {
            by_status: vec![(20, 3), (51, 1)],
            last_crawl_finished: Some("1700000000".into()),
            ..Stats::default()
        };
        for page in [
            home(None, 0),
            home(
                Some(&Summary {
                    documents: 1,
                    capsules: 1,
                    last_crawl: Some(0),
                }),
                60,
            ),
            stats_page(&stats),
            about(),
            no_index(),
            query_error("unbalanced quote\n=> x", "```oops\n^"),
            backlinks_bad_url("not a url\n=> x", "relative URL without a base"),
        ] {
            let mut fenced = false;
            for line in page.lines() {
                if line.starts_with("```") {
                    fenced = !fenced;
                }
            }
            assert!(!fenced, "unclosed fence: {page}");
            assert!(!page.contains('\r'), "{page}");
        }
        let s = stats_page(&stats);
        assert!(s.contains("* 20 success: 3\n"), "{s}");
        assert!(s.contains("## Revisits\n* due now: 0\n"), "{s}");
        assert!(
            s.contains("last crawl finished: 2023-11-14 22:13 UTC"),
            "{s}"
        );
    }

    fn stats_page(s: &Stats) -> String {
        stats(s, 3, 1, 1_700_000_100)
    }
}
