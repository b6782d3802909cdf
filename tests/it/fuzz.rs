//! Property tests of every parser that reads outside input (issue 12, item 16): the gemtext
//! parser, robots.txt, URL normalisation, the query language and the frontend's request
//! parser (with the escaping of the text it echoes). Each target feeds generated input, half
//! shaped like the format (its keywords and punctuation, mixed with arbitrary characters) and
//! half arbitrary, and checks that the parser is total (no panic, whatever the input) and keeps
//! its documented limits, plus the round trips and idempotences that exist:
//! `normalize(normalize(u)) == normalize(u)`, `percent_decode(percent_encode(s)) == s`, robots
//! verdicts that do not depend on how a path is percent-encoded, and so on.
//!
//! These run with `cargo test` (a few hundred cases per target, a few seconds in all). For
//! long runs, `scripts/fuzz` sets `GEODE_FUZZ_CASES`. proptest picks fresh random inputs on every run; a failure prints the smallest
//! input it shrank to, which becomes a named regression test beside the parser.

use proptest::prelude::*;
use proptest::test_runner::Config as ProptestConfig;

use geode::gemtext::{self, Line};
use geode::query::{self, Query};
use geode::robots::Robots;
use geode::serve::request::{self, Authority, Framing, Reject, Route, MAX_PAGE, MAX_REQUEST};
use geode::urlnorm::{self, MAX_URL_BYTES};

/// The environment variable that sets the cases per target for long runs (`scripts/fuzz`).
/// proptest's own `PROPTEST_CASES` works too, but sets every target alike.
const CASES_VAR: &str = "GEODE_FUZZ_CASES";

/// proptest's configuration with `default_cases` cases, or [`CASES_VAR`] of them divided by
/// `cost` (for a target whose cases cost that many usual ones). Failures are not written to
/// regression files in the source tree: each one found becomes a named test instead.
fn config(default_cases: u32, cost: u32) -> ProptestConfig {
    let cases = std::env::var(CASES_VAR)
        .ok()
        .and_then(|v| v.trim().parse::<u32>().ok())
        .map_or(default_cases, |n| (n / cost.max(1)).max(1));
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// Characters that trip parsers: line ends of every kind, blanks that are not spaces, a BOM,
/// bidi controls, combining marks, wide characters, escapes good and bad.
const TRICKY: &[&str] = &[
    "\n",
    "\r\n",
    "\r",
    "\t",
    " ",
    "  ",
    "\u{feff}",
    "\u{200b}",
    "\u{202e}",
    "\u{85}",
    "\u{2028}",
    "\u{301}",
    "é",
    "日本語",
    "🦀",
    "\0",
    "%",
    "%2F",
    "%2f",
    "%7E",
    "%zz",
    "%C3%A9",
    "%FF",
    "%%",
    "\\",
];

/// Text made of `tokens` of a format, tricky characters, printable ASCII and any character.
fn text_of(tokens: &'static [&'static str], max_pieces: usize) -> BoxedStrategy<String> {
    let piece = prop_oneof![
        4 => proptest::sample::select(tokens).prop_map(str::to_string),
        2 => proptest::sample::select(TRICKY).prop_map(str::to_string),
        3 => proptest::char::range(' ', '~').prop_map(String::from),
        1 => any::<char>().prop_map(String::from),
    ];
    proptest::collection::vec(piece, 0..max_pieces)
        .prop_map(|pieces| pieces.concat())
        .boxed()
}

/// Deep or long input: a format's token repeated up to `max_repeat` times, between two
/// pieces of [`text_of`] (nesting, chains of operators, long runs of one character).
fn repeated(tokens: &'static [&'static str], max_repeat: usize) -> BoxedStrategy<String> {
    (
        text_of(tokens, 6),
        proptest::sample::select(tokens),
        0..max_repeat,
        text_of(tokens, 6),
    )
        .prop_map(|(before, token, n, after)| format!("{before}{}{after}", token.repeat(n)))
        .boxed()
}

/// Any bytes, read as UTF-8 with replacement characters.
fn lossy_text(max: usize) -> BoxedStrategy<String> {
    proptest::collection::vec(any::<u8>(), 0..max)
        .prop_map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
        .boxed()
}

// ---------------------------------------------------------------------------------------------
// Gemtext

const GEMTEXT: &[&str] = &[
    "\n",
    "\n",
    "\r\n",
    "=>",
    "=> ",
    "=>\t",
    "```",
    "``",
    "#",
    "##",
    "###",
    "* ",
    "*",
    ">",
    " ",
    "gemini://a.test/",
    "https://b.test/x?y#z",
    "../",
    "./",
    "/abs",
    "//other.test/p",
    "?q",
    "#frag",
    "mailto:x@y",
    "gemini://",
    "gemini://[::1]:1965/",
    "gemini://xn--caf-dma/",
    "=====",
    "-----",
    "|_|",
    "/\\",
    "Title",
    "word",
    "a label",
];

fn gemtext_input() -> BoxedStrategy<String> {
    prop_oneof![3 => text_of(GEMTEXT, 80), 1 => lossy_text(600), 1 => repeated(GEMTEXT, 500)]
        .boxed()
}

proptest! {
    #![proptest_config(config(500, 1))]

    #[test]
    fn fuzz_gemtext(src in gemtext_input(), bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        let base = url::Url::parse("gemini://fuzz.test/dir/page.gmi").unwrap();
        let lines = gemtext::parse(&src);
        for line in &lines {
            match line {
                Line::Text(t) | Line::ListItem(t) | Line::Quote(t) => {
                    prop_assert!(!t.contains('\n'), "{line:?}");
                }
                Line::Heading { level, text } => {
                    prop_assert!((1..=3).contains(level), "{line:?}");
                    prop_assert!(!text.contains('\n'), "{line:?}");
                }
                Line::Link { target, label } => {
                    prop_assert!(!target.is_empty(), "{line:?}");
                    prop_assert!(!target.contains([' ', '\t', '\n']), "{line:?}");
                    prop_assert!(label.as_ref().map_or(true, |l| !l.is_empty() && !l.contains('\n')));
                }
                Line::Preformatted { alt, .. } => prop_assert!(!alt.contains('\n'), "{line:?}"),
            }
        }
        // At most one block is left open, and only as the last line.
        let open = lines.iter().position(|l| matches!(l, Line::Preformatted { closed: false, .. }));
        prop_assert!(open.map_or(true, |i| i + 1 == lines.len()), "{lines:?}");

        for text in [src.clone(), gemtext::decode(&bytes).into_owned()] {
            let page = gemtext::extract(&base, &text);
            prop_assert!(page.title.chars().count() <= gemtext::MAX_TITLE_CHARS, "{:?}", page.title);
            prop_assert!(!page.title.contains(['\n', '\r', '\t']), "{:?}", page.title);
            prop_assert!(!page.title.is_empty(), "the base URL has a host");
            for link in &page.links {
                prop_assert!(link.url.as_str().len() <= MAX_URL_BYTES);
                prop_assert!(link.url.fragment().is_none(), "{}", link.url);
                let again = urlnorm::normalize(link.url.as_str());
                prop_assert_eq!(again.as_ref().ok(), Some(&link.url), "links are normalised");
            }
            // Blank runs collapse into one blank line; the body neither starts nor ends with one.
            let body_lines: Vec<&str> = page.body.split('\n').collect();
            if !page.body.is_empty() {
                prop_assert!(!body_lines[0].is_empty(), "{:?}", page.body);
                prop_assert!(!body_lines[body_lines.len() - 1].is_empty(), "{:?}", page.body);
            }
            for pair in body_lines.windows(2) {
                prop_assert!(!(pair[0].is_empty() && pair[1].is_empty()), "{:?}", page.body);
            }
            for l in &body_lines {
                prop_assert!(l.is_empty() || !l.trim().is_empty(), "a blank line kept: {:?}", page.body);
            }
            prop_assert_eq!(gemtext::extract(&base, &text), page, "extraction is deterministic");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// robots.txt

const ROBOTS: &[&str] = &[
    "\n",
    "\n",
    "\r\n",
    "User-agent:",
    "user-agent: ",
    "User-Agent: *",
    "User-agent: indexer",
    "User-agent: geode",
    "User-agent: archiver",
    "Disallow:",
    "Disallow: ",
    "disallow: /",
    "Allow:",
    "Allow: /",
    "*",
    "$",
    "/",
    "/a",
    "/a/",
    "/b*c",
    "/~user",
    "?",
    "?x=1",
    "#",
    ":",
    "Crawl-delay: 5",
    "Sitemap: x",
];

const PATHS: &[&str] = &[
    "/", "/a", "/a/", "/b", "c", "*", "$", "?", "~", "%7E", "%7e", "%2F", "%2f", "é", "%C3%A9",
    "%c3%a9", "x", "user",
];

fn robots_input() -> BoxedStrategy<String> {
    prop_oneof![3 => text_of(ROBOTS, 60), 1 => lossy_text(400), 1 => repeated(ROBOTS, 300)].boxed()
}

fn path_input() -> BoxedStrategy<String> {
    prop_oneof![3 => text_of(PATHS, 12), 1 => lossy_text(40), 1 => repeated(PATHS, 300)].boxed()
}

/// `path` written with other percent-encodings of the same characters: `~` as `%7E`, and the
/// hex digits of every escape in the other case. Robots verdicts must not change.
fn reencoded(path: &str) -> String {
    let mut out = String::new();
    let bytes = path.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let escape = bytes[i] == b'%'
            && bytes.get(i + 1).is_some_and(u8::is_ascii_hexdigit)
            && bytes.get(i + 2).is_some_and(u8::is_ascii_hexdigit);
        if escape {
            let hex = &path[i + 1..i + 3];
            let flipped: String = hex
                .chars()
                .map(|c| {
                    if c.is_ascii_uppercase() {
                        c.to_ascii_lowercase()
                    } else {
                        c.to_ascii_uppercase()
                    }
                })
                .collect();
            out.push('%');
            out.push_str(&flipped);
            i += 3;
        } else if bytes[i] == b'~' {
            out.push_str("%7E");
            i += 1;
        } else {
            let c = path[i..].chars().next().unwrap_or('\u{fffd}');
            out.push(c);
            i += c.len_utf8().max(1);
        }
    }
    out
}

proptest! {
    #![proptest_config(config(500, 1))]

    #[test]
    fn fuzz_robots(text in robots_input(), paths in proptest::collection::vec(path_input(), 1..6)) {
        let robots = Robots::parse(&text);
        prop_assert_eq!(&Robots::parse(&text), &robots, "parsing is deterministic");
        for path in &paths {
            let verdict = robots.is_allowed(path);
            prop_assert_eq!(robots.is_allowed(&reencoded(path)), verdict, "{:?} vs {:?}", path, reencoded(path));
            prop_assert!(Robots::allow_all().is_allowed(path));
        }
        prop_assert_eq!(robots.is_allowed(""), robots.is_allowed("/"));
        // One more rule only ever narrows (Disallow) or widens (Allow) what geode may fetch.
        for path in &paths {
            let rule = path.split(['\n', '\r', '#']).next().unwrap_or("");
            let narrower = Robots::parse(&format!("{text}\nUser-agent: *\nDisallow: {rule}\n"));
            let wider = Robots::parse(&format!("{text}\nUser-agent: *\nAllow: {rule}\n"));
            for probe in &paths {
                let now = robots.is_allowed(probe);
                prop_assert!(!narrower.is_allowed(probe) || now, "Disallow {rule:?} allowed {probe:?}");
                prop_assert!(wider.is_allowed(probe) || !now, "Allow {rule:?} refused {probe:?}");
            }
        }
        // Rules for other agents change nothing for geode. (In front: after the text, the
        // group could join a `User-agent` line the text ends with, as it should.)
        let with_others = format!("User-agent: archiver\nDisallow: /\n{text}");
        let other = Robots::parse(&with_others);
        for path in &paths {
            prop_assert_eq!(other.is_allowed(path), robots.is_allowed(path), "{:?}", with_others);
        }
    }
}

proptest! {
    // Each case parses more than MAX_ROBOTS_BYTES (512 KiB) twice: far fewer of them.
    #![proptest_config(config(6, 400))]

    #[test]
    fn fuzz_robots_reads_only_its_first_bytes(
        head in robots_input(),
        tail_a in robots_input(),
        tail_b in robots_input(),
    ) {
        // A file over the cap is decided by its first MAX_ROBOTS_BYTES alone.
        let mut long = String::new();
        while long.len() <= geode::robots::MAX_ROBOTS_BYTES {
            long.push_str(&head);
            long.push_str("\nUser-agent: *\nDisallow: /private\n");
        }
        let a = Robots::parse(&format!("{long}{tail_a}"));
        let b = Robots::parse(&format!("{long}{tail_b}"));
        prop_assert_eq!(a, b);
    }
}

// ---------------------------------------------------------------------------------------------
// URL normalisation

const URLS: &[&str] = &[
    "gemini://",
    "gemini:",
    "GEMINI://",
    "http://",
    "https://",
    "mailto:",
    "data:",
    "file:///",
    "gemini:///",
    "a.test",
    "A.TEST",
    "xn--caf-dma.test",
    "café.test",
    "a.test.",
    "[::1]",
    "[::FFFF:127.0.0.1]",
    "127.0.0.1",
    "0x7f.1",
    ":1965",
    ":80",
    ":443",
    ":0",
    ":99999",
    ":",
    "/",
    "/a",
    "/./",
    "/../",
    "/..",
    "/.",
    "//",
    "%2e%2E",
    "?",
    "?q",
    "?a=b&c",
    "#",
    "#frag",
    "user@",
    "user:pw@",
    "@",
    "~",
    "%41",
    "%7e",
    "%2F",
    "%00",
    "%",
    " ",
    "\t",
    "\\",
];

fn url_input() -> BoxedStrategy<String> {
    prop_oneof![4 => text_of(URLS, 24), 1 => lossy_text(120), 1 => repeated(URLS, 400)].boxed()
}

/// What every URL `normalize` returns satisfies.
fn check_normalised(url: &url::Url) -> Result<(), TestCaseError> {
    prop_assert!(url.as_str().len() <= MAX_URL_BYTES, "{}", url);
    prop_assert!(url.fragment().is_none(), "{}", url);
    prop_assert!(
        url.username().is_empty() && url.password().is_none(),
        "{}",
        url
    );
    let again = urlnorm::normalize(url.as_str());
    prop_assert_eq!(again.as_ref(), Ok(url), "normalize is idempotent");
    if url.scheme() == "gemini" {
        let host = url.host_str().unwrap_or("");
        prop_assert!(!host.is_empty(), "{}", url);
        prop_assert!(!host.ends_with('.'), "{}", url);
        prop_assert_eq!(host.to_lowercase(), host, "lower-case host");
        prop_assert!(url.port() != Some(1965), "{}", url);
        prop_assert!(url.path().starts_with('/'), "{}", url);
        prop_assert!(url.query() != Some(""), "{}", url);
        prop_assert!(urlnorm::is_fetchable(url));
    }
    let _ = urlnorm::capsule_key(url);
    Ok(())
}

proptest! {
    #![proptest_config(config(1000, 1))]

    #[test]
    fn fuzz_url_normalisation(input in url_input(), reference in url_input()) {
        let absolute = urlnorm::normalize(&input);
        if let Ok(url) = &absolute {
            check_normalised(url)?;
        }
        for base in ["gemini://base.test/a/b/c.gmi?q", "gemini://base.test"] {
            let base = urlnorm::normalize(base).unwrap();
            if let Ok(url) = urlnorm::resolve(&base, &reference) {
                check_normalised(&url)?;
            }
            // An absolute URL found in a page is the URL itself, whatever page it is on.
            if let Ok(url) = &absolute {
                let resolved = urlnorm::resolve(&base, &input);
                prop_assert_eq!(resolved.as_ref(), Ok(url), "{:?}", input);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The query language

const QUERIES: &[&str] = &[
    " ",
    " ",
    "word",
    "NOT ",
    "-(",
    "NOT (",
    "OR ",
    "((",
    "))",
    "Kettle",
    "OR",
    "or",
    "AND",
    "NOT",
    "|",
    "-",
    "- ",
    "(",
    ")",
    "\"",
    "\"a b\"",
    "site:",
    "site:a.test",
    "site:a.test/~bob",
    "site:gemini://a.test/",
    "lang:",
    "lang:de",
    "lang:english",
    "mime:",
    "mime:image",
    "content_type:text/plain",
    "intitle:",
    "intitle:\"x y\"",
    "inurl:",
    "inurl:gemlog",
    "filetype:",
    "filetype:.txt",
    "size:",
    "size:>10K",
    "size:<2M",
    "size:>=",
    "size:99999999999999999999G",
    ":",
    "12:30",
    "e-mail",
    "日本",
    "Café",
];

fn query_input() -> BoxedStrategy<String> {
    prop_oneof![
        4 => text_of(QUERIES, 40),
        1 => lossy_text(200),
        1 => text_of(QUERIES, 400),
        1 => repeated(QUERIES, 600),
    ]
    .boxed()
}

/// Words, phrases and filters in a query tree, and its depth.
fn leaves_and_depth(q: &Query) -> (usize, usize) {
    match q {
        Query::Term { .. } | Query::Phrase { .. } | Query::Filter { .. } => (1, 1),
        Query::Not(inner) => {
            let (leaves, depth) = leaves_and_depth(inner);
            (leaves, depth + 1)
        }
        Query::And(parts) | Query::Or(parts) => parts.iter().fold((0, 1), |(l, d), p| {
            let (leaves, depth) = leaves_and_depth(p);
            (l + leaves, d.max(depth + 1))
        }),
    }
}

/// The parser's promise: every accepted query can run on its own, and so can each alternative
/// of an `OR`; every negated group holds something that is not negated.
fn runnable(q: &Query) -> bool {
    fn positive(q: &Query) -> bool {
        match q {
            Query::Term { .. } | Query::Phrase { .. } | Query::Filter { .. } => true,
            Query::Not(_) => false,
            Query::And(parts) => parts.iter().any(positive),
            Query::Or(parts) => parts.iter().all(positive),
        }
    }
    fn plain(q: &Query) -> bool {
        match q {
            Query::Term { .. } | Query::Phrase { .. } | Query::Filter { .. } => true,
            Query::Not(_) => false,
            Query::And(parts) | Query::Or(parts) => parts.iter().any(plain),
        }
    }
    fn groups_ok(q: &Query) -> bool {
        match q {
            Query::Not(inner) => plain(inner) && groups_ok(inner),
            Query::Or(parts) => parts.iter().all(|p| positive(p) && groups_ok(p)),
            Query::And(parts) => parts.iter().all(groups_ok),
            _ => true,
        }
    }
    positive(q) && groups_ok(q)
}

/// Spans of the leaves: inside the text, on character boundaries.
fn spans_in(q: &Query, text: &str) -> bool {
    match q {
        Query::Term { span, .. } | Query::Phrase { span, .. } | Query::Filter { span, .. } => {
            span.start <= span.end && text.get(span.clone()).is_some()
        }
        Query::Not(inner) => spans_in(inner, text),
        Query::And(parts) | Query::Or(parts) => parts.iter().all(|p| spans_in(p, text)),
    }
}

proptest! {
    #![proptest_config(config(1000, 1))]

    #[test]
    fn fuzz_query_language(text in query_input()) {
        match query::parse(&text) {
            Ok(q) => {
                prop_assert!(text.len() <= query::MAX_QUERY_BYTES);
                let (leaves, _) = leaves_and_depth(&q);
                prop_assert!((1..=query::MAX_TERMS).contains(&leaves), "{leaves} terms: {q:?}");
                prop_assert!(runnable(&q), "{q:?}");
                prop_assert!(spans_in(&q, &text), "{q:?}");
                let _ = q.highlight_words();
            }
            Err(e) => {
                prop_assert!(!e.message.is_empty());
                prop_assert!(e.span.start <= e.span.end && e.span.end <= text.len(), "{e:?}");
                let caret = e.caret_line(&text);
                prop_assert_eq!(caret.lines().count(), 2, "{:?}", caret);
            }
        }
    }
}

/// Queries all the way through: parsed, compiled to Tantivy and run on a small index, with any
/// page size and offset. Either results or a query error, never another failure.
#[test]
fn fuzz_search() {
    use geode::index::{IndexError, Indexer, PageDoc, SearchIndex};
    let tmp = tempfile::tempdir().unwrap();
    let mut indexer = Indexer::open_or_create(tmp.path()).unwrap();
    let pages = [
        (
            "gemini://a.test/",
            "Kettle",
            "the quiet kettle sings",
            "text/gemini",
            Some("en"),
        ),
        (
            "gemini://a.test/~bob/log.gmi",
            "Log",
            "bread and bicycle repair",
            "text/gemini",
            None,
        ),
        (
            "gemini://b.test/x.txt",
            "Notes",
            "Wanderung über die Berge",
            "text/plain",
            Some("de"),
        ),
        (
            "gemini://c.test/日本.gmi",
            "日本",
            "郵便局の前で",
            "text/gemini",
            Some("ja"),
        ),
        (
            "gemini://c.test/lamp.png",
            "lamp.png",
            "lamp png",
            "image/png",
            None,
        ),
    ];
    for (url, title, body, mime, lang) in pages {
        indexer
            .upsert(&PageDoc {
                url: url.into(),
                host: url::Url::parse(url).unwrap().host_str().unwrap().into(),
                title: title.into(),
                body: body.into(),
                mime: mime.into(),
                lang: lang.map(str::to_string),
                size: body.len() as u64,
                ..PageDoc::default()
            })
            .unwrap();
    }
    indexer.commit(1).unwrap();
    drop(indexer);
    let index = SearchIndex::open(tmp.path()).unwrap();
    let sizes = prop_oneof![Just(0usize), 0..20usize, Just(usize::MAX)];
    let input = (query_input(), sizes.clone(), sizes);
    let mut runner = proptest::test_runner::TestRunner::new(config(300, 3));
    let outcome = runner.run(&input, |(text, limit, offset)| {
        match index.search(&text, limit, offset) {
            Ok(results) => {
                prop_assert!(results.hits.len() <= limit, "{} hits", results.hits.len());
                prop_assert!(results.total >= results.hits.len());
                prop_assert!(results.total <= pages.len());
            }
            Err(IndexError::Query(message)) => prop_assert!(!message.is_empty()),
            Err(other) => prop_assert!(false, "{text:?}: {other}"),
        }
        Ok(())
    });
    if let Err(e) = outcome {
        panic!("{e}");
    }
}

// ---------------------------------------------------------------------------------------------
// The frontend's request parser, and the escaping of what it echoes

const REQUESTS: &[&str] = &[
    "gemini://",
    "geode.example",
    "GEODE.EXAMPLE.",
    ":1965",
    ":40000",
    ":1966",
    "/",
    "/search",
    "/search/",
    "/search/2",
    "/search/101",
    "/v/search",
    "/backlinks",
    "/stats",
    "/about",
    "/known-hosts",
    "/robots.txt",
    "?",
    "?kettle",
    "%20",
    "%0A",
    "%0D%0A",
    "%FF",
    "%",
    "#",
    "user@",
    "https://",
    "127.0.0.1",
    "[::1]",
    "=>",
    "```",
];

fn request_input() -> BoxedStrategy<Vec<u8>> {
    prop_oneof![
        4 => text_of(REQUESTS, 30).prop_map(String::into_bytes),
        1 => repeated(REQUESTS, 300).prop_map(String::into_bytes),
        1 => proptest::collection::vec(any::<u8>(), 0..MAX_REQUEST + 40),
        1 => text_of(REQUESTS, 200).prop_map(String::into_bytes),
    ]
    .boxed()
}

proptest! {
    #![proptest_config(config(1000, 1))]

    #[test]
    fn fuzz_request_parser(line in request_input(), text in any::<String>()) {
        let authority = Authority::new("geode.example", 40000);
        match request::parse(Framing::Line(&line), &authority) {
            Ok(req) => {
                prop_assert!(line.len() <= MAX_REQUEST);
                let text = std::str::from_utf8(&line).expect("accepted requests are UTF-8");
                prop_assert!(!text.chars().any(char::is_control), "{:?}", text);
                match req.route {
                    Route::Search { page, .. } | Route::VerboseSearch { page, .. } => {
                        prop_assert!((1..=MAX_PAGE).contains(&page));
                    }
                    _ => {}
                }
            }
            Err(reject) => {
                prop_assert!(matches!(reject.status(), 51 | 53 | 59), "{reject:?}");
                prop_assert!(!reject.message().is_empty());
                if line.len() > MAX_REQUEST {
                    prop_assert_eq!(reject, Reject::TooLong);
                }
            }
        }
        // The links pages make for a query (next page, backlinks) lead back to that query.
        let encoded = request::percent_encode(&text);
        for (path, route) in [
            ("/search/2", Route::Search { query: Some(text.clone()), page: 2 }),
            ("/backlinks", Route::Backlinks { url: Some(text.clone()) }),
        ] {
            let link = format!("gemini://geode.example{path}?{encoded}");
            if text.is_empty() || link.len() > MAX_REQUEST {
                continue;
            }
            let parsed = request::parse(Framing::Line(link.as_bytes()), &authority);
            prop_assert_eq!(parsed.map(|r| r.route), Ok(route), "{}", link);
        }
        // What the pages echo: percent-encoding round-trips and stays one token; escaped text
        // stays on one line and never starts like markup.
        prop_assert_eq!(request::percent_decode(encoded.as_bytes()), text.as_bytes());
        prop_assert!(encoded.bytes().all(|b| b.is_ascii_graphic() && b != b'#'), "{:?}", encoded);
        let neutral = geode::serve::render::neutral(&text);
        prop_assert!(!neutral.contains(['\n', '\r']), "{:?}", neutral);
        prop_assert!(!neutral.starts_with(['=', '#', '*', '>', '`', ' ']), "{:?}", neutral);
        let url = geode::serve::render::safe_url(&text);
        prop_assert!(!url.chars().any(|c| c.is_whitespace() || c.is_control()), "{:?}", url);
    }
}
