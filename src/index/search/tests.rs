//! Tests of searching: fields, the query language end to end, ranking, diversity, snippets,
//! relaxed and misspelled queries, near-duplicates, readers.

use super::*;
use crate::index::{url_hash, Indexer, PageDoc};
use tantivy::collector::TopDocs;
use tantivy::query::{BooleanQuery, Occur};

/// A page of example.org in English.
fn page(url: &str, title: &str, body: &str) -> PageDoc {
    PageDoc {
        lang: Some("en".to_string()),
        ..crate::index::test_page(url, title, body)
    }
}

/// Builds an index from `pages`, committed, and opens it for searching.
fn index_of(pages: &[PageDoc]) -> (tempfile::TempDir, SearchIndex) {
    let tmp = tempfile::tempdir().expect("tempdir");
    {
        let mut ix = Indexer::open_or_create(tmp.path()).expect("open");
        for p in pages {
            ix.upsert(p).expect("upsert");
        }
        ix.commit(1).expect("commit");
    }
    let si = SearchIndex::open(tmp.path()).expect("search index");
    (tmp, si)
}

/// Every word required, as `geode search --strict`.
const STRICT: SearchOptions = SearchOptions {
    limit: 10,
    offset: 0,
    ranking: Ranking::Full,
    strict: true,
    all: false,
};

fn urls(res: &SearchResults) -> Vec<&str> {
    res.hits.iter().map(|h| h.url.as_str()).collect()
}

fn corpus() -> Vec<PageDoc> {
    vec![
        page(
            "gemini://a.example/",
            "Gardening notes",
            "Tomatoes need sun. My café sells them.",
        ),
        page("gemini://b.example/", "Tomatoes", "A page about red fruit."),
        page(
            "gemini://c.example/",
            "Русский сайт",
            "Привет мир, это капсула о погоде.",
        ),
        PageDoc {
            headings: "Compost heaps".to_string(),
            link_labels: "Worm farming guide".to_string(),
            ..page("gemini://d.example/", "Soil", "Dirt and more dirt.")
        },
    ]
}

#[test]
fn finds_pages_by_each_searchable_field() {
    let (_tmp, si) = index_of(&corpus());
    let cases: &[(&str, &[&str])] = &[
        // body word
        ("sun", &["gemini://a.example/"]),
        // title word
        ("gardening", &["gemini://a.example/"]),
        // heading word
        ("compost", &["gemini://d.example/"]),
        // link label word (not stored, still searchable)
        ("worm", &["gemini://d.example/"]),
        // case-insensitive
        ("SUN", &["gemini://a.example/"]),
        // accent folding both ways
        ("cafe", &["gemini://a.example/"]),
        ("café", &["gemini://a.example/"]),
        // Cyrillic, in body and title, any case
        ("погоде", &["gemini://c.example/"]),
        ("РУССКИЙ", &["gemini://c.example/"]),
        // all terms required
        ("tomatoes sun", &["gemini://a.example/"]),
        ("tomatoes zebra", &[]),
        // explicit OR and phrase
        (
            "compost OR gardening",
            &["gemini://a.example/", "gemini://d.example/"],
        ),
        ("\"red fruit\"", &["gemini://b.example/"]),
        ("\"fruit red\"", &[]),
        ("intitle:tomatoes", &["gemini://b.example/"]),
    ];
    for (query, want) in cases {
        let res = si.search_with(query, &STRICT).expect(query);
        let mut got = urls(&res);
        got.sort_unstable();
        assert_eq!(&got, want, "query {query:?}");
        assert_eq!(res.total, want.len(), "total for {query:?}");
    }
}

/// Pages exercising every part of the query language.
fn language_corpus() -> Vec<PageDoc> {
    let doc = |url: &str, title: &str, body: &str, mime: &str, size: u64| PageDoc {
        url: url.to_string(),
        host: url
            .trim_start_matches("gemini://")
            .split('/')
            .next()
            .unwrap_or_default()
            .to_string(),
        title: title.to_string(),
        body: body.to_string(),
        mime: mime.to_string(),
        lang: None,
        size,
        fetched_at: 1_700_000_000,
        ..PageDoc::default()
    };
    vec![
        doc(
            "gemini://example.org/",
            "Home",
            "Welcome to the example capsule. I write about running and cycling.",
            "text/gemini",
            500,
        ),
        doc(
            "gemini://blog.example.org/posts/runs.gmi",
            "Morning runs",
            "She runs every morning along the river before work.",
            "text/gemini",
            20_000,
        ),
        doc(
            "gemini://tilde.example/~alice/notes.txt",
            "Alice notes",
            "Plain text notes about the river and the mountains.",
            "text/plain",
            3_000,
        ),
        doc(
            "gemini://tilde.example/~bob/index.gmi",
            "Bob's page",
            "Bob writes about the river too, and about trains.",
            "text/gemini",
            2_000_000,
        ),
        doc(
            "gemini://de.example/haus.gmi",
            "Unser Haus",
            "Die Häuser in unserer Straße sind alt und schön. Wir wohnen seit vielen \
             Jahren in diesem Haus und lieben den Garten hinter dem Haus sehr.",
            "text/gemini",
            1_000,
        ),
        doc(
            "gemini://jp.example/",
            "日本語のページ",
            "これは日本語のテキストです。東京の天気について書きます。",
            "text/gemini",
            800,
        ),
        doc(
            "gemini://files.example/pics/fox.png",
            "fox.png",
            "pics fox png",
            "image/png",
            90_000,
        ),
    ]
}

#[test]
fn the_query_language_works_end_to_end() {
    let (_tmp, si) = index_of(&language_corpus());
    let cases: &[(&str, &[&str])] = &[
        // stemming: "running" finds "runs" in an English page
        (
            "running",
            &[
                "gemini://blog.example.org/posts/runs.gmi",
                "gemini://example.org/",
            ],
        ),
        // a quoted word is exact: no stems
        ("\"running\"", &["gemini://example.org/"]),
        // German stems, with or without the umlaut
        ("häuser", &["gemini://de.example/haus.gmi"]),
        ("hauser", &["gemini://de.example/haus.gmi"]),
        // CJK words inside unsegmented text
        ("東京", &["gemini://jp.example/"]),
        ("日本語", &["gemini://jp.example/"]),
        ("天気", &["gemini://jp.example/"]),
        // site: matches the host, its subdomains and ~user directories
        (
            "river site:example.org",
            &["gemini://blog.example.org/posts/runs.gmi"],
        ),
        (
            "site:example.org",
            &[
                "gemini://blog.example.org/posts/runs.gmi",
                "gemini://example.org/",
            ],
        ),
        (
            "river site:tilde.example/~alice",
            &["gemini://tilde.example/~alice/notes.txt"],
        ),
        (
            "river site:gemini://TILDE.example/",
            &[
                "gemini://tilde.example/~alice/notes.txt",
                "gemini://tilde.example/~bob/index.gmi",
            ],
        ),
        // lang: detected from the text (no server declared one)
        ("lang:de", &["gemini://de.example/haus.gmi"]),
        ("lang:ja", &["gemini://jp.example/"]),
        // mime: full type or top-level type; content_type: is an alias
        (
            "river mime:text/plain",
            &["gemini://tilde.example/~alice/notes.txt"],
        ),
        ("mime:image", &["gemini://files.example/pics/fox.png"]),
        (
            "content_type:image/png",
            &["gemini://files.example/pics/fox.png"],
        ),
        // filetype: the URL's extension
        (
            "river filetype:txt",
            &["gemini://tilde.example/~alice/notes.txt"],
        ),
        ("filetype:png", &["gemini://files.example/pics/fox.png"]),
        // size: with suffixes
        ("river size:>1M", &["gemini://tilde.example/~bob/index.gmi"]),
        (
            "river size:<10K",
            &["gemini://tilde.example/~alice/notes.txt"],
        ),
        // inurl: and intitle:
        ("inurl:pics", &["gemini://files.example/pics/fox.png"]),
        // the scheme is not a word of the URL: no page says "gemini"
        ("inurl:gemini", &[]),
        (
            "river intitle:notes",
            &["gemini://tilde.example/~alice/notes.txt"],
        ),
        (
            "intitle:\"morning runs\"",
            &["gemini://blog.example.org/posts/runs.gmi"],
        ),
        // NOT, -, OR and parentheses
        (
            "river -trains",
            &[
                "gemini://blog.example.org/posts/runs.gmi",
                "gemini://tilde.example/~alice/notes.txt",
            ],
        ),
        (
            "river NOT (trains OR mountains)",
            &["gemini://blog.example.org/posts/runs.gmi"],
        ),
        (
            "(trains OR mountains) river",
            &[
                "gemini://tilde.example/~alice/notes.txt",
                "gemini://tilde.example/~bob/index.gmi",
            ],
        ),
        (
            "cycling OR tokyo OR 東京",
            &["gemini://example.org/", "gemini://jp.example/"],
        ),
    ];
    for (query, want) in cases {
        let res = si.search(query, 10, 0).expect(query);
        let mut got = urls(&res);
        got.sort_unstable();
        let mut want = want.to_vec();
        want.sort_unstable();
        assert_eq!(got, want, "query {query:?}");
        assert_eq!(res.total, want.len(), "total for {query:?}");
    }
}

/// A word that is its own stem (`run`) is not in the `stem` field, yet a query word with that
/// stem (`running`) still finds it, and a query for the stem finds the other forms.
#[test]
fn words_that_are_their_own_stem_are_found_by_stem() {
    let (_tmp, si) = index_of(&[
        page(
            "gemini://a.example/x",
            "A",
            "I run every morning before work.",
        ),
        page(
            "gemini://b.example/x",
            "B",
            "The dogs were running all day.",
        ),
        page("gemini://c.example/x", "C", "She runs a small bakery."),
        page(
            "gemini://d.example/x",
            "D",
            "Nothing about that here at all.",
        ),
    ]);
    let all = [
        "gemini://a.example/x",
        "gemini://b.example/x",
        "gemini://c.example/x",
    ];
    for query in ["running", "run", "runs"] {
        let res = si.search_with(query, &STRICT).expect(query);
        let mut got = urls(&res);
        got.sort();
        assert_eq!(got, all, "{query}");
        // The exact form comes first.
        let first = match query {
            "running" => "gemini://b.example/x",
            "run" => "gemini://a.example/x",
            _ => "gemini://c.example/x",
        };
        assert_eq!(res.hits[0].url, first, "{query}");
    }
}

#[test]
fn an_exact_form_outranks_a_stem_only_match() {
    let (_tmp, si) = index_of(&[
        page(
            "gemini://a.example/x",
            "A",
            "The dogs were running all day long.",
        ),
        page(
            "gemini://b.example/x",
            "B",
            "The dog runs all day long, every day.",
        ),
    ]);
    let res = si.search("running", 10, 0).expect("search");
    assert_eq!(urls(&res), ["gemini://a.example/x", "gemini://b.example/x"]);
}

#[test]
fn title_match_ranks_above_body_only_match() {
    let (_tmp, si) = index_of(&corpus());
    let res = si.search("tomatoes", 10, 0).expect("search");
    assert_eq!(
        urls(&res),
        vec!["gemini://b.example/", "gemini://a.example/"]
    );
    assert!(res.hits[0].score > res.hits[1].score);
}

#[test]
fn authority_and_the_home_page_prior_break_text_ties() {
    let same = "a page about otters and rivers";
    let pages = [
        page("gemini://a.example/deep/down/otters.gmi", "Otters", same),
        page("gemini://b.example/deep/down/otters.gmi", "Otters", same),
        page("gemini://c.example/", "Otters", same),
    ];
    let (tmp, si) = index_of(&pages);
    // Without authority, the home page wins on the prior; the others tie.
    let res = si.search("otters", 10, 0).expect("search");
    assert_eq!(res.hits[0].url, "gemini://c.example/");
    assert!(res.hits[0].parts.prior > res.hits[1].parts.prior);
    // A strong authority for b lifts it to the top once the reader sees the new file.
    crate::index::authority::write(
        tmp.path(),
        &[(url_hash("gemini://b.example/deep/down/otters.gmi"), 1.0)],
    )
    .expect("write authority");
    let reopened = SearchIndex::open(tmp.path()).expect("reopen");
    let res = reopened.search("otters", 10, 0).expect("search");
    assert_eq!(res.hits[0].url, "gemini://b.example/deep/down/otters.gmi");
    assert_eq!(res.hits[0].parts.authority, 1.0);
    assert_eq!(res.hits[1].url, "gemini://c.example/");
    // Plain BM25 ignores both: the three pages score alike.
    let bm25 = reopened
        .search_with(
            "otters",
            &SearchOptions {
                ranking: Ranking::Bm25,
                ..SearchOptions::default()
            },
        )
        .expect("bm25");
    let score_of = |host: &str| {
        let hit = bm25.hits.iter().find(|h| h.url.contains(host)).expect(host);
        assert_eq!((hit.parts.authority, hit.parts.prior), (0.0, 1.0));
        hit.score
    };
    assert_eq!(score_of("a.example"), score_of("b.example"));
}

#[test]
fn one_capsule_takes_at_most_two_places_per_ten_while_others_wait() {
    // Capsule a has the 12 best pages (more matches), capsule b and c one each.
    let mut pages: Vec<PageDoc> = (0..12)
        .map(|i| PageDoc {
            host: "a.example".to_string(),
            ..page(
                &format!("gemini://a.example/{i}"),
                "Lynx",
                "lynx lynx lynx lynx lynx in the forest",
            )
        })
        .collect();
    for host in ["b.example", "c.example"] {
        pages.push(PageDoc {
            host: host.to_string(),
            ..page(
                &format!("gemini://{host}/p"),
                "Lynx",
                "a lynx in the forest, once",
            )
        });
    }
    let (_tmp, si) = index_of(&pages);
    let first = si.search("lynx", 10, 0).expect("first page");
    let hosts: Vec<&str> = first.hits.iter().map(|h| h.host.as_str()).collect();
    assert_eq!(
        &hosts[..4],
        ["a.example", "a.example", "b.example", "c.example"],
        "{hosts:?}"
    );
    // The rest of the first block is a's again (nobody else is left), and nothing is lost.
    let second = si.search("lynx", 10, 10).expect("second page");
    let mut all: Vec<&str> = urls(&first);
    all.extend(urls(&second));
    let mut sorted = all.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!((all.len(), sorted.len(), first.total), (14, 14, 14));
}

#[test]
fn diversify_caps_capsules_per_block_and_keeps_every_item() {
    // (capsules of the ranked items, cap, block, expected order as indexes)
    type Case = (&'static [u64], usize, usize, &'static [usize]);
    let cases: &[Case] = &[
        (&[], 2, 10, &[]),
        (&[1, 1, 1, 2], 2, 10, &[0, 1, 3, 2]),
        (&[1, 1, 1, 1], 2, 10, &[0, 1, 2, 3]),
        (&[1, 1, 1, 2, 2, 2], 2, 3, &[0, 1, 3, 2, 4, 5]),
        (&[1, 2, 1, 2, 1, 2, 3], 2, 4, &[0, 1, 2, 3, 4, 5, 6]),
        (&[1, 1, 1, 1, 2, 3], 1, 3, &[0, 4, 5, 1, 2, 3]),
    ];
    for (capsules, cap, block, want) in cases {
        let items: Vec<(usize, u64)> = capsules.iter().copied().enumerate().collect();
        let got: Vec<usize> = diversify(&items, |&(_, c)| c, |_| 1.0, *cap, *block)
            .into_iter()
            .map(|(i, _)| i)
            .collect();
        assert_eq!(&got, want, "capsules {capsules:?} cap {cap} block {block}");
    }
}

#[test]
fn the_head_of_a_list_settles_the_first_results_as_the_whole_list_would() {
    // Pseudo-random lists of (capsule, score), best first: few capsules, so that results wait,
    // and falling scores, so that faint ones are not promoted.
    let mut state = 0x9e37_79b9_u64;
    let mut next = |n: u64| {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1);
        (state >> 33) % n
    };
    let (mut settled, mut short) = (0, 0);
    for round in 0..300 {
        let len = 1 + next(120) as usize;
        let capsules = 1 + next(if round % 3 == 0 { 2 } else { 8 });
        let mut score = 100.0f32;
        let items: Vec<(u64, f32)> = (0..len)
            .map(|_| {
                score *= 1.0 - next(20) as f32 / 100.0;
                (next(capsules), score)
            })
            .collect();
        let whole = diversify(&items, |&(c, _)| c, |&(_, s)| s, 2, 10);
        for head in [1, 5, 10, 25, 60, len] {
            let head = head.min(len);
            for want in [1, 10, 20] {
                let want = want.min(len);
                let got = diversify_head(&items[..head], |&(c, _)| c, |&(_, s)| s, 2, 10, want);
                match got {
                    Some(got) => {
                        settled += 1;
                        assert_eq!(got[..want], whole[..want], "{items:?} head {head}");
                    }
                    // The head ran out (the caller then ranks the whole window).
                    None => short += 1,
                }
            }
        }
    }
    // Both outcomes were exercised.
    assert!(
        settled > 100 && short > 100,
        "settled {settled}, short {short}"
    );
}

#[test]
fn diversity_does_not_promote_faint_results() {
    // (capsule, score), best first: capsule 1 has three strong results, capsule 3 a good
    // one, capsule 2 a faint one.
    let items = [(1u64, 10.0f32), (1, 9.0), (1, 8.0), (3, 5.0), (2, 1.0)];
    let order = |items: &[(u64, f32)]| -> Vec<(u64, f32)> {
        diversify(items, |&(c, _)| c, |&(_, s)| s, 2, 10)
    };
    // Capsule 3 (5.0 >= 0.2 x 8.0) moves up; capsule 2 (1.0 < 1.6) does not.
    assert_eq!(
        order(&items),
        [(1, 10.0), (1, 9.0), (3, 5.0), (1, 8.0), (2, 1.0)]
    );
}

#[test]
fn hits_carry_the_stored_fields() {
    let (_tmp, si) = index_of(&corpus());
    let res = si.search("sun", 10, 0).expect("search");
    let hit = &res.hits[0];
    assert_eq!(hit.url, "gemini://a.example/");
    assert_eq!(hit.title, "Gardening notes");
    assert_eq!(hit.host, "example.org");
    assert_eq!(hit.mime, "text/gemini");
    assert_eq!(hit.lang.as_deref(), Some("en"));
    assert_eq!(
        hit.size,
        "Tomatoes need sun. My café sells them.".len() as u64
    );
    assert_eq!(hit.fetched_at, 1_700_000_000);
    assert!(hit.parts.text > 0.0 && hit.parts.prior >= 1.0);

    let json = serde_json::to_value(&res).expect("json");
    assert_eq!(json["total"], 1);
    assert_eq!(json["hits"][0]["url"], "gemini://a.example/");
    assert!(json["hits"][0]["parts"]["text"].as_f64().is_some());
}

#[test]
fn language_is_declared_else_detected_else_none() {
    let english = "The weather was fine this morning, so we walked to the harbour and \
                   watched the boats come in with the tide before breakfast.";
    let (_tmp, si) = index_of(&[
        PageDoc {
            lang: None,
            ..page("gemini://x.example/", "T", "quokka")
        },
        PageDoc {
            lang: None,
            ..page("gemini://y.example/", "Harbour", english)
        },
        PageDoc {
            lang: Some("fr-CA".to_string()),
            ..page("gemini://z.example/", "Harbour", english)
        },
    ]);
    let lang_of = |q: &str| si.search(q, 10, 0).expect(q).hits[0].lang.clone();
    assert_eq!(lang_of("quokka"), None);
    assert_eq!(lang_of("harbour site:y.example").as_deref(), Some("en"));
    assert_eq!(lang_of("harbour site:z.example").as_deref(), Some("fr"));
}

#[test]
fn total_counts_all_matches_while_limit_and_offset_page() {
    let pages: Vec<PageDoc> = (0..7)
        .map(|i| page(&format!("gemini://p{i}.example/"), "T", "common word"))
        .collect();
    let (_tmp, si) = index_of(&pages);
    let all = si.search("common", 100, 0).expect("all");
    let all_urls = urls(&all);
    let cases: &[(usize, usize, std::ops::Range<usize>)] = &[
        (3, 0, 0..3),
        (3, 3, 3..6),
        (3, 6, 6..7),
        (3, 7, 7..7),
        (3, 1000, 7..7),
        (0, 0, 0..0),
        (usize::MAX, 0, 0..7),
        (usize::MAX, usize::MAX, 7..7),
    ];
    for (limit, offset, want) in cases {
        let res = si.search("common", *limit, *offset).expect("page");
        assert_eq!(res.total, 7, "limit {limit} offset {offset}");
        assert_eq!(
            urls(&res),
            all_urls[want.clone()].to_vec(),
            "limit {limit} offset {offset}"
        );
    }
}

#[test]
fn snippets_mark_matched_words_on_one_line() {
    let long_tail = " filler".repeat(100);
    let (_tmp, si) = index_of(&[
        page(
            "gemini://s.example/",
            "Snippets",
            &format!("Intro line.\n\nThe   Café opens\tat noon.{long_tail}"),
        ),
        page(
            "gemini://t.example/",
            "Ruby",
            "Про язык Ruby и его СИНТАКСИС.",
        ),
    ]);
    let cases: &[(&str, &str)] = &[
        ("cafe", "**Café**"),
        ("noon opens", "**opens** at **noon**"),
        ("синтаксис", "**СИНТАКСИС**"),
    ];
    for (query, want) in cases {
        let res = si.search(query, 10, 0).expect(query);
        let snippet = &res.hits[0].snippet;
        assert!(
            snippet.contains(want),
            "query {query:?}: snippet {snippet:?}"
        );
        assert!(
            !snippet.contains('\n') && !snippet.contains("  "),
            "{snippet:?}"
        );
        assert!(
            snippet.chars().count() <= SNIPPET_MAX_CHARS + 8,
            "{snippet:?}"
        );
    }
}

#[test]
fn malformed_and_empty_queries_are_query_errors() {
    let (_tmp, si) = index_of(&corpus());
    for query in [
        "",
        "   \t\n",
        "\"unbalanced",
        "(tomatoes",
        "tomatoes)",
        "tomatoes OR",
        "-tomatoes",
        "site:",
        "size:notanumber",
        "lang:english!",
        // no word the index could hold
        "---",
        "!!! ???",
    ] {
        match si.search(query, 10, 0) {
            Err(IndexError::Query(msg)) => assert!(!msg.is_empty(), "{query:?}"),
            other => panic!("query {query:?}: expected Query error, got {other:?}"),
        }
    }
    // Words that merely contain a colon are words, not unknown fields.
    for query in ["gemini://a.example/", "nosuchfield:word", "12:30"] {
        assert!(si.search(query, 10, 0).is_ok(), "{query:?}");
    }
}

#[test]
fn pages_lacking_words_follow_and_say_which() {
    let (_tmp, si) = index_of(&corpus());
    let res = si.search("tomatoes sun zebra", 10, 0).expect("search");
    // a.example holds two of the three words, b.example one; nobody holds zebra.
    assert_eq!(urls(&res), ["gemini://a.example/", "gemini://b.example/"]);
    assert_eq!(res.hits[0].missing, ["zebra"]);
    assert_eq!(res.hits[1].missing, ["sun", "zebra"]);
    assert!(res.hits[0].parts.coverage > res.hits[1].parts.coverage);
    assert_eq!((res.total, res.with_all_words), (2, 0));
    // All the words: first, with nothing missing.
    let res = si.search("tomatoes sun", 10, 0).expect("search");
    assert_eq!(urls(&res), ["gemini://a.example/", "gemini://b.example/"]);
    assert!(res.hits[0].missing.is_empty());
    assert_eq!(res.with_all_words, 1);
    // --strict: today's AND; phrases, exclusions and AND keep their strict meaning.
    let strict = si
        .search_with("tomatoes sun zebra", &STRICT)
        .expect("strict");
    assert_eq!(strict.total, 0);
    for query in ["tomatoes AND zebra", "\"red fruit\" sun", "tomatoes -sun"] {
        let got = si.search(query, 10, 0).expect(query);
        let want = si.search_with(query, &STRICT).expect(query);
        assert_eq!(urls(&got), urls(&want), "{query}");
    }
    let res = si
        .search("\"red fruit\" tomatoes sun", 10, 0)
        .expect("phrase");
    assert_eq!(urls(&res), ["gemini://b.example/"]);
    assert_eq!(res.hits[0].missing, ["sun"]);
}

/// A word no page holds has no form left to search (forms no page holds are dropped when the
/// query is compiled), yet it still counts: when it is the only rare word, pages holding only
/// the common words are no results, as when its forms were searched and matched nothing.
#[test]
fn a_rare_word_no_page_holds_still_restricts_the_common_ones() {
    let pages: Vec<PageDoc> = (0..120)
        .map(|i| {
            page(
                &format!("gemini://p{i}.example/"),
                "Notes",
                "the gemini protocol and the web",
            )
        })
        .collect();
    let (_tmp, si) = index_of(&pages);
    // "qwzxvj" has no neighbour either: nothing is one or two edits from it.
    let res = si.search("qwzxvj the gemini", 10, 0).expect("search");
    assert_eq!((res.total, res.with_all_words), (0, 0), "{:?}", urls(&res));
    assert!(res.hits.is_empty());
    // The common words alone do find the pages.
    assert_eq!(si.search("the gemini", 10, 0).expect("search").total, 120);
}

#[test]
fn misspelled_words_match_their_neighbours_below_exact_matches() {
    let mut pages: Vec<PageDoc> = (0..4)
        .map(|i| {
            page(
                &format!("gemini://r.example/{i}"),
                "R",
                "A review of a phone.",
            )
        })
        .collect();
    pages.push(page(
        "gemini://t.example/",
        "Typo",
        "My reveiw of the phone.",
    ));
    pages.push(page(
        "gemini://s.example/",
        "Sauce",
        "Bearnaise sauce, slowly.",
    ));
    let (_tmp, si) = index_of(&pages);
    // "sause" is in no page: its neighbour "sauce" is searched, and offered.
    let res = si.search("bearnaise sause", 10, 0).expect("search");
    assert_eq!(urls(&res), ["gemini://s.example/"]);
    assert!(res.hits[0].missing.is_empty(), "{:?}", res.hits[0].missing);
    assert_eq!(res.did_you_mean.as_deref(), Some("bearnaise sauce"));
    // A rare word (one page) also finds its frequent neighbour, ranked below itself.
    let res = si.search("reveiw", 10, 0).expect("search");
    assert_eq!(res.hits[0].url, "gemini://t.example/");
    assert_eq!(res.total, 5);
    // A known word is left alone.
    let res = si.search("review", 10, 0).expect("search");
    assert_eq!((res.total, res.did_you_mean), (4, None));
    // --strict has no spelling help.
    assert_eq!(si.search_with("sause", &STRICT).expect("strict").total, 0);
}

#[test]
fn near_duplicates_fold_into_their_best_member() {
    let story = "The lighthouse keeper climbed the stairs every evening at dusk, \
        trimmed the wick, polished the great lens and watched the ships pass the reef \
        until dawn, writing each one down in a leather log that nobody ever read.";
    let pages = [
        PageDoc {
            host: "a.example".to_string(),
            ..page("gemini://a.example/keeper.gmi", "The keeper", story)
        },
        PageDoc {
            host: "b.example".to_string(),
            ..page(
                "gemini://b.example/2021-01-01-keeper.gmi",
                "Keeper (repost)",
                &format!("2021-01-01\n{story}"),
            )
        },
        PageDoc {
            host: "c.example".to_string(),
            ..page(
                "gemini://c.example/other.gmi",
                "Other",
                "A different page that mentions a lighthouse once.",
            )
        },
    ];
    let (_tmp, si) = index_of(&pages);
    let res = si.search("lighthouse keeper", 10, 0).expect("search");
    let shown = urls(&res);
    assert_eq!(shown.len(), 2, "{shown:?}");
    let dup = &res.hits[0];
    assert!(dup.url.contains("keeper"), "{shown:?}");
    assert_eq!(dup.similar, 1);
    assert_eq!(res.hits[1].similar, 0);
    // --all lists both copies; similar:URL lists the cluster.
    let all = si
        .search_with(
            "lighthouse keeper",
            &SearchOptions {
                all: true,
                ..SearchOptions::default()
            },
        )
        .expect("all");
    assert_eq!(all.hits.len(), 3);
    let cluster = si
        .search("similar:gemini://a.example/keeper.gmi", 10, 0)
        .expect("similar");
    let mut members = urls(&cluster);
    members.sort_unstable();
    assert_eq!(
        members,
        [
            "gemini://a.example/keeper.gmi",
            "gemini://b.example/2021-01-01-keeper.gmi"
        ]
    );
    let unknown = si.search("similar:gemini://nowhere.example/", 10, 0);
    assert_eq!(unknown.expect("unknown page").total, 0);
}

#[test]
fn opening_a_missing_index_is_missing() {
    let tmp = tempfile::tempdir().expect("tempdir");
    for dir in [tmp.path().to_path_buf(), tmp.path().join("absent")] {
        match SearchIndex::open(&dir) {
            Err(IndexError::Missing(p)) => assert_eq!(p, dir),
            Err(e) => panic!("{}: expected Missing, got {e:?}", dir.display()),
            Ok(_) => panic!("{}: expected Missing, got an index", dir.display()),
        }
    }
}

#[test]
fn reader_sees_later_commits() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut ix = Indexer::open_or_create(tmp.path()).expect("open");
    ix.upsert(&page("gemini://a.example/", "A", "one"))
        .expect("upsert");
    ix.commit(1).expect("commit");
    let si = SearchIndex::open(tmp.path()).expect("open reader while writer lives");
    assert_eq!(si.num_docs(), 1);
    ix.upsert(&page("gemini://b.example/", "B", "two"))
        .expect("upsert");
    ix.commit(2).expect("commit");
    // OnCommitWithDelay reloads asynchronously; give it a bounded time.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while si.num_docs() < 2 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(si.num_docs(), 2);
}

#[test]
fn pages_with_the_words_near_each_other_rank_first() {
    // The same words, as often, in bodies of the same length: only their distance differs.
    let (_tmp, si) = index_of(&[
        page(
            "gemini://far.example/notes",
            "Notes",
            "solar alpha beta gamma delta weather",
        ),
        page(
            "gemini://near.example/notes",
            "Notes",
            "solar weather alpha beta gamma delta",
        ),
    ]);
    let res = si.search("solar weather", 10, 0).expect("search");
    assert_eq!(
        urls(&res),
        ["gemini://near.example/notes", "gemini://far.example/notes"]
    );
    assert!(
        res.hits[0].parts.text > res.hits[1].parts.text,
        "{:?}",
        res.hits
    );
}

#[test]
fn one_union_of_every_form_scores_as_the_union_of_the_words() {
    // 120 pages: `gemini` on every page (not essential), `garden` and `tomato` on a few, in
    // several fields, some on both: both tiers and the optional word are exercised.
    let pages: Vec<PageDoc> = (0..120)
        .map(|i| {
            let title = if i % 15 == 0 { "Garden log" } else { "Notes" };
            let body = match (i % 12 == 0, i % 20 == 0) {
                (true, true) => "tomato seedlings in the garden, on gemini",
                (false, true) => "tomatoes ripen slowly; gemini capsule",
                (true, false) => "gardening with friends over gemini",
                _ => "nothing here but gemini",
            };
            PageDoc {
                headings: if i % 25 == 0 { "Tomato" } else { "" }.to_string(),
                ..page(&format!("gemini://g{i}.example/p"), title, body)
            }
        })
        .collect();
    let (_tmp, si) = index_of(&pages);
    let searcher = si.searcher();
    let lexicon = IndexLexicon {
        searcher: &searcher,
        fields: si.fields(),
        cache: &si.cache,
    };
    let parsed = query::parse("garden tomato gemini").expect("parse");
    let relaxed = relax(&parsed, si.fields(), &lexicon, false).expect("relaxed");
    assert_eq!(
        relaxed
            .words
            .iter()
            .map(|w| w.essential)
            .collect::<Vec<_>>(),
        [true, true, false]
    );
    // The same queries built as before: each word its own union.
    let per_word = |tier: Occur| -> Box<dyn tantivy::query::Query> {
        let essential = |w: &&crate::index::compile::Word| w.essential;
        let mut clauses: Vec<(Occur, Box<dyn tantivy::query::Query>)> = Vec::new();
        match tier {
            Occur::Must => {
                for w in relaxed.words.iter().filter(essential) {
                    clauses.push((Occur::Must, w.query()));
                }
            }
            _ => {
                let union = relaxed
                    .words
                    .iter()
                    .filter(essential)
                    .map(|w| (Occur::Should, w.query()))
                    .collect();
                clauses.push((Occur::Must, Box::new(BooleanQuery::new(union))));
            }
        }
        for w in relaxed.words.iter().filter(|w| !w.essential) {
            clauses.push((Occur::Should, w.query()));
        }
        Box::new(BooleanQuery::new(clauses))
    };
    let scored = |q: &dyn tantivy::query::Query| -> Vec<(DocAddress, f32)> {
        let mut hits: Vec<(DocAddress, f32)> = searcher
            .search(q, &TopDocs::with_limit(1_000))
            .expect("search")
            .into_iter()
            .map(|(score, address)| (address, score))
            .collect();
        hits.sort_by_key(|&(address, _)| address);
        hits
    };
    for (ours, theirs) in [
        (relaxed.all_words(), per_word(Occur::Must)),
        (relaxed.any_word(), per_word(Occur::Should)),
    ] {
        let (got, want) = (scored(&*ours), scored(&*theirs));
        assert!(!want.is_empty());
        assert_eq!(got.len(), want.len());
        for ((a, x), (b, y)) in got.iter().zip(&want) {
            assert_eq!(a, b);
            assert!((x - y).abs() <= 1e-5 * y.abs(), "{x} vs {y}");
        }
        assert_eq!(searcher.search(&*ours, &Count).expect("count"), want.len());
    }
}

#[test]
fn words_found_together_more_than_guessed_are_ranked_as_ever() {
    // 12,000 pages; `alder` and `birch` are on the same 1,050 pages (one in 11.4 each, so
    // independent words would share about 92): the search first guesses few pages hold both,
    // counts them, finds a full window's worth and ranks them.
    let pages: Vec<PageDoc> = (0..12_000)
        .map(|i| {
            let body = if i % 11 == 0 && i / 11 < 1_050 {
                format!("alder and birch, note {i}")
            } else {
                format!("maple only, note {i}")
            };
            page(
                &format!("gemini://t{}.example/{i}", i % 300),
                "Trees",
                &body,
            )
        })
        .collect();
    let (_tmp, si) = index_of(&pages);
    let res = si.search("alder birch", 10, 0).expect("search");
    assert_eq!((res.total, res.with_all_words), (1_050, 1_050));
    assert_eq!(res.hits.len(), 10);
    assert!(res.hits.iter().all(|h| h.missing.is_empty()));
    assert!(res.hits.iter().all(|h| h.snippet.contains("**alder**")));
}

#[test]
fn counting_any_word_by_postings_counts_what_the_query_matches() {
    // Two segments, the first with deleted documents (pages rewritten in the second), so that
    // both the deletes and the sum over segments are exercised.
    let tmp = tempfile::tempdir().expect("tempdir");
    let body = |i: usize| match i % 4 {
        0 => "garden tomato and an e-mail",
        1 => "garden only",
        2 => "tomato only, on gemini",
        _ => "nothing to see",
    };
    {
        let mut ix = Indexer::open_or_create(tmp.path()).expect("open");
        for i in 0..80 {
            let url = format!("gemini://g{}.example/{i}", i % 7);
            ix.upsert(&page(&url, "Notes", body(i))).expect("upsert");
        }
        ix.commit(1).expect("commit");
        // Every third page rewritten: its old document is deleted from the first segment.
        for i in (0..80).step_by(3) {
            let url = format!("gemini://g{}.example/{i}", i % 7);
            ix.upsert(&page(&url, "Notes", body(i + 1)))
                .expect("upsert");
        }
        ix.commit(2).expect("commit");
    }
    let si = SearchIndex::open(tmp.path()).expect("search index");
    let searcher = si.searcher();
    assert!(searcher.segment_readers().len() >= 2);
    assert!(searcher
        .segment_readers()
        .iter()
        .any(|s| s.num_deleted_docs() > 0));
    let lexicon = IndexLexicon {
        searcher: &searcher,
        fields: si.fields(),
        cache: &si.cache,
    };
    // (query, whether the count can go by postings)
    let mut counted_by_postings = 0;
    for (text, by_postings) in [
        ("garden tomato", true),
        ("garden tomato gemini", true),
        ("tomato", true),
        ("garden e-mail", false),
        ("garden tomato site:g1.example", false),
        ("garden tomato -gemini", false),
    ] {
        let parsed = query::parse(text).expect("parse");
        let relaxed = relax(&parsed, si.fields(), &lexicon, false).expect("relaxed");
        assert_eq!(relaxed.any_word_terms().is_some(), by_postings, "{text}");
        let want = searcher
            .search(&*relaxed.any_word(), &Count)
            .expect("count");
        assert!(want > 0, "{text}");
        let all = searcher
            .search(&*relaxed.all_words(), &Count)
            .expect("count");
        assert_eq!(
            count_any_word(&searcher, &relaxed, all).expect("count"),
            want,
            "{text}"
        );
        if relaxed.any_word_is_all_words() {
            assert_eq!(all, want, "{text}");
        } else if by_postings {
            counted_by_postings += 1;
        }
    }
    assert!(
        counted_by_postings >= 2,
        "{counted_by_postings} counts went by postings"
    );
}
