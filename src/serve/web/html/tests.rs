//! The web pages as a browser's tokenizer reads them: well formed, escaped, linked only where
//! they may be, and saying what the Gemini pages say.

use super::route::MAX_PAGE;
use super::*;
use crate::frontier::Backlink;
use crate::index::{Hit, SearchResults};
use crate::serve::pages::tests::{hit, two_hosts};
use crate::serve::pages::ResultsView;
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
        r.text
            .contains("score 1.5000 (text 2.0000, authority 0.2500, prior 1.0000, coverage 1.00)"),
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
        r.text
            .contains("“not a url” is not a URL geode can look up: relative URL without a base."),
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

    let hosts = two_hosts();
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
