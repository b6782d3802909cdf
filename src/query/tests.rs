//! Tests of the query language: what parses to what, and every error with its span.

use super::*;

/// A compact rendering without spans: `(and a b)`, `(or a b)`, `-x`, `"a phrase"`,
/// `site:example.org`, `size:>=1024`, `intitle:"a b"`.
fn render(query: &Query) -> String {
    let list = |name: &str, parts: &[Query]| {
        let parts: Vec<String> = parts.iter().map(render).collect();
        format!("({name} {})", parts.join(" "))
    };
    match query {
        Query::Term { text, .. } => text.clone(),
        Query::Phrase { text, .. } => format!("\"{text}\""),
        Query::Not(inner) => format!("-{}", render(inner)),
        Query::And(parts) => list("and", parts),
        Query::Or(parts) => list("or", parts),
        Query::Filter { filter, .. } => match filter {
            Filter::Site(v) => format!("site:{v}"),
            Filter::Scheme(v) => format!("scheme:{v}"),
            Filter::Lang(v) => format!("lang:{v}"),
            Filter::Mime(v) => format!("mime:{v}"),
            Filter::FileType(v) => format!("filetype:{v}"),
            Filter::Similar(v) => format!("similar:{v}"),
            Filter::InTitle(TextValue::Word(v)) => format!("intitle:{v}"),
            Filter::InTitle(TextValue::Phrase(v)) => format!("intitle:\"{v}\""),
            Filter::InUrl(TextValue::Word(v)) => format!("inurl:{v}"),
            Filter::InUrl(TextValue::Phrase(v)) => format!("inurl:\"{v}\""),
            Filter::Size(comparison, bytes) => {
                let op = match comparison {
                    Comparison::Less => "<",
                    Comparison::LessOrEqual => "<=",
                    Comparison::Equal => "=",
                    Comparison::GreaterOrEqual => ">=",
                    Comparison::Greater => ">",
                };
                format!("size:{op}{bytes}")
            }
        },
    }
}

fn check_ok(cases: &[(&str, &str)]) {
    for (input, expected) in cases {
        match parse(input) {
            Ok(query) => assert_eq!(render(&query), *expected, "query {input:?}"),
            Err(e) => panic!("query {input:?} failed: {e} at {:?}", e.span),
        }
    }
}

fn check_err(cases: &[(&str, &str, Range<usize>)]) {
    for (input, message, span) in cases {
        match parse(input) {
            Ok(query) => panic!("query {input:?} parsed as {}", render(&query)),
            Err(e) => {
                assert!(
                    e.message.contains(message),
                    "query {input:?}: message {:?} lacks {message:?}",
                    e.message
                );
                assert_eq!(e.span, *span, "query {input:?}: span of {:?}", e.message);
            }
        }
    }
}

#[test]
fn words_phrases_and_operators() {
    check_ok(&[
        ("foo", "foo"),
        ("  foo  ", "foo"),
        ("foo bar", "(and foo bar)"),
        ("foo AND bar", "(and foo bar)"),
        ("foo OR bar", "(or foo bar)"),
        ("foo | bar", "(or foo bar)"),
        ("foo|bar", "(or foo bar)"),
        ("foo || bar", "(or foo bar)"),
        ("a OR b OR c", "(or a b c)"),
        ("foo or bar", "(and foo or bar)"),
        ("foo Or and bar", "(and foo Or and bar)"),
        ("not foo", "(and not foo)"),
        ("a b OR c", "(or (and a b) c)"),
        ("a (b OR c)", "(and a (or b c))"),
        ("a AND (b OR c) d", "(and a (or b c) d)"),
        ("\"exact phrase\"", "\"exact phrase\""),
        ("\"  padded words \"", "\"padded words\""),
        ("\"OR\" \"-x\"", "(and \"OR\" \"-x\")"),
        ("foo\"bar baz\"qux", "(and foo \"bar baz\" qux)"),
        ("e-mail", "e-mail"),
        ("foo-", "foo-"),
        ("Artist - Title", "(and Artist Title)"),
        ("before -- after", "(and before after)"),
        ("- foo", "foo"),
        ("(a)b", "(and a b)"),
        ("日本語 検索", "(and 日本語 検索)"),
    ]);
}

#[test]
fn negation() {
    check_ok(&[
        ("foo -bar", "(and foo -bar)"),
        ("foo NOT bar", "(and foo -bar)"),
        ("-bar foo", "(and -bar foo)"),
        ("foo --bar", "(and foo bar)"),
        ("foo NOT -bar", "(and foo bar)"),
        ("foo ---bar", "(and foo -bar)"),
        ("foo -(-bar)", "(and foo bar)"),
        ("foo -\"bar baz\"", "(and foo -\"bar baz\")"),
        ("foo -(a OR b)", "(and foo -(or a b))"),
        ("NOT (a OR b) c", "(and -(or a b) c)"),
        ("-(a -b) c", "(and -(and a -b) c)"),
        ("-site:example.org foo", "(and -site:example.org foo)"),
        ("foo -e-mail", "(and foo -e-mail)"),
        ("a OR b -c", "(or a (and b -c))"),
    ]);
}

#[test]
fn simplification() {
    check_ok(&[
        ("((a))", "a"),
        ("(a b) c", "(and a b c)"),
        ("a (b (c d))", "(and a b c d)"),
        ("(a OR b) OR c", "(or a b c)"),
        ("(a OR b) c", "(and (or a b) c)"),
        ("(a b) OR (c d)", "(or (and a b) (and c d))"),
    ]);
}

#[test]
fn words_with_colons_that_are_not_filters() {
    check_ok(&[
        ("gemini://example.org/", "gemini://example.org/"),
        ("c:", "c:"),
        ("12:30", "12:30"),
        (":", ":"),
        ("foo:bar baz", "(and foo:bar baz)"),
        ("https://example.org/a?b=c", "https://example.org/a?b=c"),
    ]);
}

#[test]
fn scheme_filter() {
    check_ok(&[
        ("scheme:https", "scheme:https"),
        ("SCHEME:Gemini", "scheme:gemini"),
        ("scheme:http://", "scheme:http"),
        ("scheme:https: web", "(and scheme:https web)"),
    ]);
    check_err(&[("scheme:ftp", "scheme: expects gemini, http or https", 7..10)]);
}

#[test]
fn site_filter() {
    check_ok(&[
        ("site:example.org", "site:example.org"),
        ("SITE:Example.ORG", "site:example.org"),
        ("site:gemini://Example.org/", "site:example.org"),
        ("site:https://example.org", "site:example.org"),
        ("site:example.org/", "site:example.org"),
        ("site:example.org.", "site:example.org"),
        ("site:example.org/~Alice/", "site:example.org/~Alice"),
        ("site:gemini://example.org/~bob", "site:example.org/~bob"),
        ("site:example.org:1965", "site:example.org"),
        ("site:*.example.org", "site:example.org"),
        ("site:café.example", "site:xn--caf-dma.example"),
        ("site:[::1]:1965", "site:[::1]"),
        ("site:127.0.0.1", "site:127.0.0.1"),
        ("site:\"example.org\"", "site:example.org"),
        ("site:org", "site:org"),
        (
            "cats site:a.org OR site:b.org",
            "(or (and cats site:a.org) site:b.org)",
        ),
        (
            "cats (site:a.org OR site:b.org)",
            "(and cats (or site:a.org site:b.org))",
        ),
    ]);
}

#[test]
fn other_filters() {
    check_ok(&[
        ("lang:en", "lang:en"),
        ("lang:en-US", "lang:en"),
        ("LANG:DE", "lang:de"),
        ("lang:pt_BR", "lang:pt"),
        ("lang:fil", "lang:fil"),
        ("mime:text/gemini", "mime:text/gemini"),
        ("MIME:Text/Gemini", "mime:text/gemini"),
        ("content_type:text", "mime:text"),
        ("Content_Type:text/plain", "mime:text/plain"),
        ("mime:text/*", "mime:text"),
        (
            "mime:application/vnd.api+json",
            "mime:application/vnd.api+json",
        ),
        ("filetype:gmi", "filetype:gmi"),
        ("filetype:.GMI", "filetype:gmi"),
        ("filetype:mp3", "filetype:mp3"),
        ("intitle:gemini", "intitle:gemini"),
        ("InTitle:\"space probe\"", "intitle:\"space probe\""),
        ("inurl:gemlog", "inurl:gemlog"),
        ("inurl:\"2024 notes\"", "inurl:\"2024 notes\""),
        ("intitle:a:b", "intitle:a:b"),
        ("intitle:OR", "intitle:OR"),
    ]);
}

#[test]
fn size_filter() {
    check_ok(&[
        ("size:>10K", "size:>10240"),
        ("size:<2M", "size:<2097152"),
        ("size:>=1.5K", "size:>=1536"),
        ("size:<=1G", "size:<=1073741824"),
        ("size:=5", "size:=5"),
        ("size:100", "size:=100"),
        ("size:0", "size:=0"),
        ("size:10KB", "size:=10240"),
        ("size:10kb", "size:=10240"),
        ("size:2MiB", "size:=2097152"),
        ("size:<3gib", "size:<3221225472"),
        ("size:512B", "size:=512"),
        ("size:1.5", "size:=2"),
        ("size:1.0004K", "size:=1024"),
        ("size:0.5M", "size:=524288"),
        ("size:18446744073709551615", "size:=18446744073709551615"),
        ("size:>00010", "size:>10"),
    ]);
}

#[test]
fn spans_of_parts() {
    let query = parse("foo \"a b\" site:x.org intitle:\"t w\"").expect("valid query");
    assert_eq!(
        query,
        Query::And(vec![
            Query::Term {
                text: "foo".into(),
                span: 0..3
            },
            Query::Phrase {
                text: "a b".into(),
                span: 4..9
            },
            Query::Filter {
                filter: Filter::Site("x.org".into()),
                span: 10..20
            },
            Query::Filter {
                filter: Filter::InTitle(TextValue::Phrase("t w".into())),
                span: 21..34
            },
        ])
    );
}

#[test]
fn syntax_errors() {
    check_err(&[
        ("", "empty query", 0..0),
        ("   ", "empty query", 0..3),
        ("foo \"bar", "unbalanced quote", 4..5),
        ("\"a\" \"b", "unbalanced quote", 4..5),
        ("\"\"", "empty phrase", 0..2),
        ("foo \"  \"", "empty phrase", 4..8),
        ("intitle:\"\"", "empty phrase", 8..10),
        ("intitle:\"abc", "unbalanced quote", 8..9),
        ("(foo", "unmatched '('", 0..1),
        ("a (b (c)", "unmatched '('", 2..3),
        ("foo)", "unmatched ')'", 3..4),
        (")", "unmatched ')'", 0..1),
        (") foo", "unmatched ')'", 0..1),
        ("(a) b)", "unmatched ')'", 5..6),
        ("()", "empty parentheses", 0..2),
        ("a ( ) b", "empty parentheses", 2..5),
        ("foo OR", "OR needs something after it", 4..6),
        ("OR foo", "OR needs something before it", 0..2),
        ("foo OR OR bar", "OR needs something after it", 4..6),
        ("(a OR)", "OR needs something after it", 3..5),
        ("(OR a)", "OR needs something before it", 1..3),
        ("| foo", "'|' needs something before it", 0..1),
        ("foo ||", "'||' needs something after it", 4..6),
        ("foo AND", "AND needs something after it", 4..7),
        ("AND foo", "AND needs something before it", 0..3),
        ("(AND foo)", "AND needs something before it", 1..4),
        ("a AND OR b", "AND needs something after it", 2..5),
        ("a AND AND b", "AND needs something after it", 2..5),
        ("foo NOT", "NOT needs something after it", 4..7),
        ("foo NOT OR bar", "NOT needs something after it", 4..7),
        ("NOT", "NOT needs something after it", 0..3),
        ("foo -", "'-' needs something after it", 4..5),
        ("-", "'-' needs something after it", 0..1),
        ("(foo -)", "'-' needs something after it", 5..6),
        ("foo --", "'-' needs something after it", 5..6),
        ("foo - ", "'-' needs something after it", 4..5),
    ]);
}

#[test]
fn filter_value_errors() {
    check_err(&[
        ("site:", "site: needs a value", 0..5),
        ("foo SITE: bar", "site: needs a value", 4..9),
        ("(lang:)", "lang: needs a value", 1..6),
        ("content_type:", "content_type: needs a value", 0..13),
        ("site:gemini://", "site: expects a host name", 5..14),
        ("site:/~alice", "site: expects a host name", 5..12),
        ("site:\"example org\"", "site: expects a host name", 5..18),
        ("site:example.org/docs/", "not the path '/docs'", 5..22),
        ("site:example.org/~a/b", "not the path '/~a/b'", 5..21),
        ("site:exa<mple.org", "is not a valid host name", 5..17),
        (
            "lang:english",
            "lang: expects a two- or three-letter language code",
            5..12,
        ),
        ("lang:e", "got 'e'", 5..6),
        ("lang:e1", "language code", 5..7),
        ("lang:-en", "language code", 5..8),
        ("mime:text/gemini/x", "mime: expects a media type", 5..18),
        ("mime:\"text gemini\"", "mime: expects a media type", 5..18),
        ("mime:/gemini", "media type", 5..12),
        ("mime:text/", "media type", 5..10),
        ("mime:text/gemini;charset=utf-8", "media type", 5..30),
        (
            "filetype:foo!bar",
            "filetype: expects a file extension",
            9..16,
        ),
        ("filetype:abcdefghijk", "file extension", 9..20),
        ("filetype:.", "file extension", 9..10),
        ("size:big", "size: expects a number of bytes", 5..8),
        ("size:>", "number of bytes", 5..6),
        ("size:10X", "number of bytes", 5..8),
        ("size:10KK", "number of bytes", 5..9),
        ("size:1.2.3", "number of bytes", 5..10),
        ("size:1.", "number of bytes", 5..7),
        ("size:.5", "number of bytes", 5..7),
        ("size:>-5", "number of bytes", 5..8),
        ("size:><5", "number of bytes", 5..8),
        ("size:18446744073709551616", "is too large", 5..25),
        ("size:16777216T", "number of bytes", 5..14),
        ("size:17179869184G", "is too large", 5..17),
        (
            "size:999999999999999999999999999999999999999999K",
            "too large",
            5..48,
        ),
    ]);
}

#[test]
fn queries_that_cannot_match_alone() {
    let needs = "a query needs at least one word, phrase or filter that is not negated";
    check_err(&[
        ("-foo", needs, 0..4),
        (" -foo ", needs, 1..5),
        ("NOT a NOT b", needs, 0..11),
        ("-site:example.org", needs, 0..17),
        ("-(a b)", needs, 0..6),
        ("(-a -b)", needs, 0..7),
        ("-(-a -b)", needs, 0..8),
        ("-a OR -b", needs, 0..8),
        ("a OR -b", "each alternative of OR needs", 5..7),
        ("(-a -b) OR c", "each alternative of OR needs", 0..7),
        ("x (a OR NOT b)", "each alternative of OR needs", 8..13),
        ("x -(-a -b)", "a negated group needs at least one", 2..10),
    ]);
    // A syntax error anywhere is reported before a query that cannot match.
    check_err(&[("a OR -b (c", "unmatched '('", 8..9)]);
    // Filters alone are a positive query.
    check_ok(&[
        ("site:example.org", "site:example.org"),
        (
            "lang:en -site:example.org",
            "(and lang:en -site:example.org)",
        ),
    ]);
}

#[test]
fn limits() {
    let long = "a ".repeat(600);
    check_err(&[(
        &long,
        "query is too long: 1200 bytes, at most 1024",
        1024..1200,
    )]);
    // The span starts on a character boundary even when byte 1024 falls inside one.
    let accented = format!("a{}", "é".repeat(600));
    let error = parse(&accented).expect_err("too long");
    assert_eq!(error.span, 1023..accented.len());
    assert!(parse(&"a".repeat(MAX_QUERY_BYTES)).is_ok());

    let words = |n: usize| {
        (0..n)
            .map(|i| format!("w{i}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    assert!(parse(&words(MAX_TERMS)).is_ok());
    let too_many = words(MAX_TERMS + 1);
    let last = too_many.rfind(' ').expect("has spaces") + 1;
    check_err(&[(
        &too_many,
        "too many words, phrases and filters: at most 64",
        last..too_many.len(),
    )]);
    // Filters and phrases count too.
    let mixed = format!("{} \"x y\" site:a.org", words(MAX_TERMS - 1));
    let start = mixed.rfind(' ').expect("has spaces") + 1;
    check_err(&[(&mixed, "too many", start..mixed.len())]);

    let nested = |n: usize| format!("{}a{}", "(".repeat(n), ")".repeat(n));
    assert_eq!(
        parse(&nested(MAX_DEPTH)).map(|q| render(&q)),
        Ok("a".to_string())
    );
    check_err(&[(
        &nested(MAX_DEPTH + 1),
        "parentheses nested too deeply: at most 16",
        16..17,
    )]);
    // Siblings do not add up: depth is nesting, not the number of groups.
    let siblings = format!("{} x", "(a) ".repeat(30));
    assert!(parse(&siblings).is_ok());
    // Long chains of negation are a loop, not recursion.
    let negations = format!("x {}y", "-".repeat(1000));
    assert_eq!(
        parse(&negations).map(|q| render(&q)),
        Ok("(and x y)".to_string())
    );
}

#[test]
fn messages_name_the_column_in_characters() {
    let error = parse("foo \"bar").expect_err("unbalanced");
    assert_eq!(error.to_string(), "unbalanced quote at column 5");
    let error = parse("café \"bar").expect_err("unbalanced");
    assert_eq!(error.message, "unbalanced quote at column 6");
    // Whole-query problems have no column.
    assert_eq!(parse("").expect_err("empty").message, "empty query");
}

#[test]
fn caret_line_points_at_the_span() {
    let cases: &[(&str, Range<usize>, &str)] = &[
        ("foo \"bar", 4..5, "foo \"bar\n    ^"),
        ("a ( ) b", 2..5, "a ( ) b\n  ^^^"),
        ("café \"x", 6..7, "café \"x\n     ^"),
        ("日本 (", 7..8, "日本 (\n   ^"),
        ("a\tb)", 3..4, "a b)\n   ^"),
        ("", 0..0, "\n^"),
        ("abc", 3..3, "abc\n   ^"),
        ("abc", 100..200, "abc\n   ^"),
        ("é", 1..2, "é\n^"),
    ];
    for (query, span, expected) in cases {
        let error = QueryError {
            message: "x".into(),
            span: span.clone(),
        };
        assert_eq!(
            error.caret_line(query),
            *expected,
            "query {query:?} span {span:?}"
        );
    }
    let query = "café (tea";
    let error = parse(query).expect_err("unmatched");
    assert_eq!(error.caret_line(query), "café (tea\n     ^");
}

#[test]
fn highlight_words_skip_negated_parts() {
    let query = parse(
        "foo \"bar baz\" -qux intitle:\"t w\" inurl:u site:x.org size:>1K (a OR c) -(d e) NOT f",
    )
    .expect("valid query");
    assert_eq!(
        query.highlight_words(),
        vec!["foo", "bar baz", "t w", "u", "a", "c"]
    );
    assert_eq!(
        parse("x --y").expect("valid").highlight_words(),
        vec!["x", "y"]
    );
    assert!(parse("site:x.org")
        .expect("valid")
        .highlight_words()
        .is_empty());
}

/// xorshift64*: deterministic, good enough to shuffle fragments.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Checks what every accepted query promises: no single-child or directly nested groups,
/// no double negation, nothing empty, and something positive in every alternative.
fn check_shape(query: &Query, input: &str) {
    match query {
        Query::Term { text, span } | Query::Phrase { text, span } => {
            assert!(!text.is_empty(), "{input:?}");
            assert!(input.get(span.clone()).is_some(), "{input:?} span {span:?}");
        }
        Query::Filter { span, .. } => {
            assert!(input.get(span.clone()).is_some(), "{input:?} span {span:?}")
        }
        Query::Not(inner) => {
            assert!(!matches!(**inner, Query::Not(_)), "{input:?}");
            assert!(inner.is_positive(), "{input:?}");
            check_shape(inner, input);
        }
        Query::And(parts) | Query::Or(parts) => {
            assert!(parts.len() >= 2, "{input:?}");
            assert!(query.is_positive(), "{input:?}");
            for part in parts {
                assert!(
                    std::mem::discriminant(part) != std::mem::discriminant(query),
                    "{input:?} nests a group in its own kind"
                );
                check_shape(part, input);
            }
        }
    }
}

#[test]
fn random_queries_never_panic() {
    const PIECES: &[&str] = &[
        "(",
        ")",
        ":",
        "-",
        "|",
        " ",
        " ",
        " ",
        "a",
        "b",
        "O",
        "R",
        "N",
        "T",
        "\"",
        "OR",
        "NOT",
        "AND",
        "site:",
        "size:",
        "lang:",
        "intitle:",
        "inurl:",
        "mime:",
        "filetype:",
        ">",
        "<",
        "=",
        "1",
        ".",
        "K",
        "/",
        "~",
        "é",
        "日",
        "\t",
        "en",
        "x.org",
    ];
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let (mut accepted, mut rejected) = (0, 0);
    for _ in 0..5000 {
        let pieces = rng.below(24);
        let input: String = (0..pieces)
            .map(|_| PIECES[rng.below(PIECES.len())])
            .collect();
        match parse(&input) {
            Ok(query) => {
                accepted += 1;
                assert!(query.is_positive(), "{input:?}");
                check_shape(&query, &input);
                let _ = query.highlight_words();
            }
            Err(error) => {
                rejected += 1;
                assert!(error.span.start <= error.span.end, "{input:?}");
                assert!(
                    input.get(error.span.clone()).is_some(),
                    "{input:?} {error:?}"
                );
                // The parser's fallbacks for impossible token orders are never reached.
                assert!(
                    !error.message.starts_with("unexpected end")
                        && !error.message.starts_with("expected a word"),
                    "{input:?}: {}",
                    error.message
                );
                let caret = error.caret_line(&input);
                let (shown, marks) = caret.split_once('\n').expect("two lines");
                assert!(!shown.contains('\n') && !marks.contains('\n'), "{input:?}");
                assert!(marks.trim_start_matches(' ').chars().all(|c| c == '^'));
                assert!(marks.ends_with('^'), "{input:?}");
            }
        }
    }
    // The alphabet must exercise both outcomes, or the test proves little.
    assert!(
        accepted > 500 && rejected > 500,
        "{accepted} accepted, {rejected} rejected"
    );
}
