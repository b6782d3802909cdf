//! The `geode` binary as people and scripts use it: crawl, search, stats, backlinks, exit codes.

use std::path::Path;
use std::process::{Command, Output};

use crate::crawl::EXPECTED_INDEXED;
use crate::support::{self, Space};

fn geode(args: &[&str]) -> Output {
    Command::new(support::geode_bin())
        .args(args)
        .output()
        .expect("geode runs")
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn search_json(data: &Path, query: &str) -> Vec<serde_json::Value> {
    let out = geode(&["search", "--data", data.to_str().unwrap(), "--json", query]);
    assert!(
        out.status.success(),
        "search {query:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("one JSON object");
    assert!(doc["total"].as_u64().is_some(), "{doc}");
    assert!(doc["took_ms"].as_f64().is_some(), "{doc}");
    doc["hits"].as_array().expect("hits").clone()
}

fn first_url(hits: &[serde_json::Value]) -> Option<&str> {
    hits.first().and_then(|h| h["url"].as_str())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crawl_then_search_stats_and_backlinks_from_the_command_line() {
    let space = Space::start().await;
    let data = tempfile::tempdir().unwrap();
    let dir = data.path().to_str().unwrap();
    let mut args = vec![
        "crawl",
        "--data",
        dir,
        "--seed",
        "gemini://alpha.test/",
        "--min-delay-ms",
        "0",
    ];
    let resolve = space.resolve_args();
    args.extend(resolve.iter().map(String::as_str));
    let out = geode(&args);
    assert!(
        out.status.success(),
        "crawl: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout(&out).contains("nothing left that is due"),
        "{}",
        stdout(&out)
    );

    // Distinctive phrases find their page first; accents fold.
    let cases = [
        ("\"quietly stubborn kettle\"", "gemini://alpha.test/"),
        (
            "borrow checker origami",
            "gemini://beta.test/notes/borrow-checker.gmi",
        ),
        ("écureuil mélancolique", "gemini://gamma.test/fr/carnet.gmi"),
        ("ecureuil melancolique", "gemini://gamma.test/fr/carnet.gmi"),
    ];
    for (query, want) in cases {
        let hits = search_json(data.path(), query);
        assert_eq!(first_url(&hits), Some(want), "query {query}: {hits:?}");
    }
    let hits = search_json(data.path(), "\"quietly stubborn kettle\"");
    for field in ["url", "title", "snippet", "score", "host", "mime"] {
        assert!(
            !hits[0][field].is_null(),
            "JSON hit lacks {field}: {}",
            hits[0]
        );
    }
    assert_eq!(hits[0]["host"], "alpha.test");
    assert_eq!(hits[0]["mime"], "text/gemini");
    assert!(hits[0]["snippet"].as_str().unwrap().contains("**kettle**"));
    let hits = search_json(data.path(), "desk lamp png");
    let png = hits
        .iter()
        .find(|h| h["url"] == "gemini://alpha.test/images/desk-lamp.png")
        .expect("the image is found by the words of its path");
    assert_eq!(png["mime"], "image/png");

    // ASCII art is left out of the index and the snippets; code stays searchable.
    assert!(
        search_json(data.path(), "\"fourth floor\"").is_empty(),
        "the banner's caption art"
    );
    let home = &search_json(data.path(), "\"quietly stubborn kettle\"")[0];
    let snippet = home["snippet"].as_str().unwrap();
    assert!(
        !snippet.contains("|_") && !snippet.contains("__"),
        "art in the snippet: {snippet}"
    );
    assert_eq!(
        first_url(&search_json(data.path(), "next_unseen")),
        Some("gemini://beta.test/notes/borrow-checker.gmi"),
        "an identifier from a code block"
    );

    // robots.txt kept the private diary out of the index.
    assert!(search_json(data.path(), "walrus itinerary").is_empty());

    // Every part of the query language, through the command line and --json.
    let urls_of = |query: &str| -> Vec<String> {
        let mut urls: Vec<String> = search_json(data.path(), query)
            .iter()
            .map(|h| h["url"].as_str().unwrap().to_string())
            .collect();
        urls.sort();
        urls
    };
    let cases: &[(&str, &[&str])] = &[
        (
            "\"slow radio\" intitle:slow",
            &["gemini://alpha.test/gemlog/2024-08-11-slow-radio.gmi"],
        ),
        (
            "intitle:\"winter bread\"",
            &["gemini://alpha.test/gemlog/2024-01-14-winter-bread.gmi"],
        ),
        (
            "(bread OR bicycle) site:alpha.test inurl:gemlog",
            &[
                "gemini://alpha.test/gemlog/",
                "gemini://alpha.test/gemlog/2024-01-14-winter-bread.gmi",
                "gemini://alpha.test/gemlog/2024-03-02-bicycle-repair.gmi",
            ],
        ),
        (
            "(bread OR bicycle) inurl:gemlog -winter",
            &["gemini://alpha.test/gemlog/2024-03-02-bicycle-repair.gmi"],
        ),
        ("lang:ja", &["gemini://gamma.test/ja/haiku.gmi"]),
        (
            "lang:de site:gamma.test",
            &["gemini://gamma.test/de/wanderung.gmi"],
        ),
        // German stems: the page says "Wanderung"
        ("wanderungen", &["gemini://gamma.test/de/wanderung.gmi"]),
        // Japanese words inside unsegmented text
        ("郵便", &["gemini://gamma.test/ja/haiku.gmi"]),
        ("mime:image", &["gemini://alpha.test/images/desk-lamp.png"]),
        (
            "content_type:text/plain",
            &["gemini://alpha.test/gemlog/reading-list.txt"],
        ),
        (
            "filetype:txt",
            &["gemini://alpha.test/gemlog/reading-list.txt"],
        ),
        (
            "filetype:png",
            &["gemini://alpha.test/images/desk-lamp.png"],
        ),
        (
            "size:>1K site:beta.test",
            &[
                "gemini://beta.test/notes/borrow-checker.gmi",
                "gemini://beta.test/notes/sqlite-wal.gmi",
                "gemini://beta.test/notes/tls-by-hand.gmi",
            ],
        ),
    ];
    for (query, want) in cases {
        assert_eq!(urls_of(query), *want, "query {query}");
    }
    // AND binds tighter than OR: without parentheses, bread anywhere matches.
    assert!(urls_of("bread OR bicycle site:alpha.test inurl:gemlog")
        .contains(&"gemini://gamma.test/".to_string()));
    // Size filters agree with the sizes reported.
    for hit in search_json(data.path(), "size:<600") {
        assert!(hit["size"].as_u64().unwrap() < 600, "{hit}");
    }
    // A malformed query names the problem and points at it.
    let out = geode(&["search", "--data", dir, "lang:english site:x"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("lang:english site:x\n") && err.contains("^"),
        "{err}"
    );

    // Plain output: title, URL, snippet, and a count line.
    let out = geode(&["search", "--data", dir, "stubborn", "kettle"]);
    let text = stdout(&out);
    assert!(text.contains("1. Juniper's Lantern Room"), "{text}");
    assert!(text.contains("   gemini://alpha.test/\n"), "{text}");
    assert!(text.contains("1 result (1-1 shown)"), "{text}");

    // Pages lacking a word follow, saying which; --strict wants every word; a misspelled
    // word finds its neighbour and offers the corrected query.
    let json = |args: &[&str]| -> serde_json::Value {
        let mut all = vec!["search", "--data", dir, "--json"];
        all.extend_from_slice(args);
        let out = geode(&all);
        assert!(out.status.success(), "{args:?}");
        serde_json::from_str(&stdout(&out)).expect("one JSON object")
    };
    let doc = json(&["stubborn kettle zebra"]);
    assert_eq!(doc["hits"][0]["url"], "gemini://alpha.test/", "{doc}");
    assert_eq!(
        doc["hits"][0]["missing"],
        serde_json::json!(["zebra"]),
        "{doc}"
    );
    assert_eq!(doc["with_all_words"], 0, "{doc}");
    assert!(
        doc["hits"][0]["parts"]["coverage"].as_f64() < Some(1.0),
        "{doc}"
    );
    assert_eq!(doc["hits"][0]["similar"], 0, "{doc}");
    assert_eq!(json(&["--strict", "stubborn kettle zebra"])["total"], 0);
    let doc = json(&["stubborn kettel"]);
    assert_eq!(doc["did_you_mean"], "stubborn kettle", "{doc}");
    assert_eq!(doc["hits"][0]["url"], "gemini://alpha.test/", "{doc}");
    assert!(json(&["--strict", "stubborn kettel"])["did_you_mean"].is_null());
    let out = geode(&["search", "--data", dir, "stubborn zebra"]);
    assert!(
        stdout(&out).contains(" · missing: zebra"),
        "{}",
        stdout(&out)
    );

    // No hits is success; a malformed query is a usage error with a message.
    let out = geode(&["search", "--data", dir, "zzyzx"]);
    assert_eq!(out.status.code(), Some(0));
    let out = geode(&["search", "--data", dir, "\"unbalanced"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("malformed query"));

    // Paging: offset skips, limit caps.
    let all = search_json(data.path(), "the");
    assert!(all.len() == 10, "ten results by default");
    let out = geode(&[
        "search", "--data", dir, "--json", "--limit", "3", "--offset", "2", "the",
    ]);
    let doc: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let page = doc["hits"].as_array().unwrap();
    assert_eq!(
        (doc["offset"].as_u64(), doc["limit"].as_u64()),
        (Some(2), Some(3))
    );
    assert_eq!(page.len(), 3);
    assert_eq!(page[0]["url"], all[2]["url"]);

    // stats: what was indexed, per-status counts (the fixture links to missing pages).
    let out = geode(&["stats", "--data", dir, "--json"]);
    assert!(out.status.success());
    let stats: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(stats["pages_indexed"], EXPECTED_INDEXED.len());
    assert_eq!(stats["index_documents"], EXPECTED_INDEXED.len());
    assert_eq!(stats["hosts"].as_u64(), Some(4), "four capsules");
    let statuses = stats["by_status"].as_array().unwrap();
    assert!(
        statuses
            .iter()
            .any(|p| p[0] == 51 && p[1].as_u64() > Some(0)),
        "{statuses:?}"
    );
    assert!(
        statuses.iter().any(|p| p[0] == 31),
        "the /docs/tools redirect: {statuses:?}"
    );
    let out = geode(&["stats", "--data", dir]);
    assert!(stdout(&out).contains("pages indexed"));

    // backlinks, with labels.
    let out = geode(&[
        "backlinks",
        "--data",
        dir,
        "--json",
        "gemini://BETA.test:1965/",
    ]);
    assert!(out.status.success());
    let links: Vec<serde_json::Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(
        links
            .iter()
            .any(|l| l["url"] == "gemini://alpha.test/" && l["label"] == "Ferrous Field Notes"),
        "{links:?}"
    );
    let out = geode(&["backlinks", "--data", dir, "gemini://beta.test/"]);
    assert!(stdout(&out).contains("gemini://alpha.test/  Ferrous Field Notes"));
}

#[test]
fn usage_errors_exit_2_and_runtime_errors_exit_1() {
    let missing = tempfile::tempdir().unwrap();
    let dir = missing.path().join("nothing-here");
    let dir = dir.to_str().unwrap();
    let cases: &[(&[&str], i32)] = &[
        (&["search", "--data", dir, "anything"], 1),
        (&["stats", "--data", dir], 1),
        (&["backlinks", "--data", dir, "gemini://a.test/"], 1),
        (&["backlinks", "--data", dir, "not a url"], 2),
        (
            &["crawl", "--data", dir, "--seed", "https://example.org/"],
            2,
        ),
        (
            &["crawl", "--data", dir, "--seed", "gemini://user@a.test/"],
            2,
        ),
        (&["crawl", "--data", dir, "--resolve", "a.test=nowhere"], 2),
        (&["crawl", "--data", dir, "--concurrency", "0"], 2),
        (&["crawl", "--data", dir, "--revisit", "3x"], 2),
        (&["crawl", "--data", dir, "--revisit", "0s"], 2),
        (&["crawl", "--data", dir, "--revisit-min", "5d"], 2),
        (&["crawl", "--data", dir, "--remove-after", "soon"], 2),
        (&["search"], 2),
        (&["frobnicate"], 2),
    ];
    for (args, code) in cases {
        let out = geode(args);
        assert_eq!(out.status.code(), Some(*code), "geode {args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.trim().is_empty(), "geode {args:?} says why");
        assert!(!err.contains("panicked"), "geode {args:?} panicked: {err}");
    }
    assert!(
        !missing.path().join("nothing-here").exists(),
        "failed commands create nothing"
    );
}

#[test]
fn help_explains_every_command() {
    let out = geode(&["--help"]);
    let text = stdout(&out);
    for cmd in ["crawl", "search", "stats", "backlinks", "seed", "serve"] {
        assert!(text.contains(cmd), "{text}");
    }
    let out = geode(&["crawl", "--help"]);
    let text = stdout(&out);
    for flag in [
        "--seed",
        "--seeds-file",
        "--max-pages",
        "--min-delay-ms",
        "--concurrency",
        "--resolve",
        "--data",
    ] {
        assert!(text.contains(flag), "crawl --help lacks {flag}");
    }
}

/// A data directory whose index holds `pages` (URL, body), committed, and no crawl database.
fn index_of(pages: &[(&str, &str)]) -> tempfile::TempDir {
    let data = tempfile::tempdir().unwrap();
    let mut indexer =
        geode::index::Indexer::open_or_create(&geode::datadir::index_path(data.path())).unwrap();
    for (url, body) in pages {
        indexer
            .upsert(&geode::index::PageDoc {
                url: url.to_string(),
                host: "a.test".into(),
                title: url.to_string(),
                body: body.to_string(),
                mime: "text/gemini".into(),
                size: body.len() as u64,
                ..Default::default()
            })
            .unwrap();
    }
    indexer.commit(1).unwrap();
    data
}

/// Issue 12, item 15: `--offset` near the top of the range printed "0-18446744073709551615
/// shown"; a page past the end shows nothing, and says so.
#[test]
fn search_offsets_near_the_maximum_print_a_true_range() {
    let data = index_of(&[
        ("gemini://a.test/1", "kettle one"),
        ("gemini://a.test/2", "kettle two"),
        ("gemini://a.test/3", "kettle three"),
    ]);
    let dir = data.path().to_str().unwrap();
    let cases: &[(&str, &str)] = &[
        ("0", "3 results (1-3 shown)"),
        ("1", "3 results (2-3 shown)"),
        ("3", "3 results (none shown)"),
        ("18446744073709551614", "3 results (none shown)"),
        ("18446744073709551615", "3 results (none shown)"),
    ];
    for (offset, want) in cases {
        let out = geode(&["search", "--data", dir, "--offset", offset, "kettle"]);
        assert_eq!(out.status.code(), Some(0), "--offset {offset}");
        let text = stdout(&out);
        assert!(text.contains(want), "--offset {offset}: {text}");
        let out = geode(&[
            "search",
            "--data",
            dir,
            "--json",
            "--offset",
            offset,
            "--limit",
            "18446744073709551615",
            "kettle",
        ]);
        assert_eq!(out.status.code(), Some(0), "--json --offset {offset}");
    }
}

/// Issue 12, item 15: an index error used to print its text twice on one line ("tantivy: X: X").
#[test]
fn index_errors_print_their_text_once() {
    let data = tempfile::tempdir().unwrap();
    let index = geode::datadir::index_path(data.path());
    std::fs::create_dir_all(&index).unwrap();
    std::fs::write(index.join("meta.json"), "garbage\n").unwrap();
    std::fs::write(index.join("geode-schema"), "3\n").unwrap();
    let dir = data.path().to_str().unwrap();
    for args in [
        &["search", "--data", dir, "kettle"][..],
        &["stats", "--data", dir],
    ] {
        let out = geode(args);
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(1), "geode {args:?}: {err}");
        let line = err.lines().find(|l| l.starts_with("geode: ")).unwrap_or("");
        assert!(!line.is_empty(), "geode {args:?}: {err}");
        assert_eq!(
            line.matches("meta.json").count(),
            1,
            "geode {args:?} repeats itself: {line}"
        );
    }
}

/// Issue 12, item 13: a seeds file holding only comments used to fall back silently to the
/// built-in list of public capsules (a crawl of the real geminispace nobody asked for).
#[test]
fn a_seeds_file_with_only_comments_is_a_usage_error() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    for (name, text) in [
        ("comments.txt", "# my seeds\n\n   # none yet\n"),
        ("empty.txt", ""),
        ("blank.txt", "\n \n\t\n"),
    ] {
        let file = tmp.path().join(name);
        std::fs::write(&file, text).unwrap();
        let out = geode(&[
            "crawl",
            "--data",
            data.to_str().unwrap(),
            "--seeds-file",
            file.to_str().unwrap(),
        ]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{name}: {err}");
        assert!(err.contains("holds no seed URL"), "{name}: {err}");
        assert!(
            err.contains(name),
            "{name}: the message names the file: {err}"
        );
    }
    assert!(!data.exists(), "a usage error creates nothing");
}

/// Issue 12, item 14: inputs that were accepted and then connected to port 0, kept a control
/// character in a host name, or made the crawl sleep for 584 million years.
#[test]
fn resolve_and_min_delay_inputs_are_refused_with_a_reason() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let dir = data.to_str().unwrap();
    let long_host = format!("{}=127.0.0.1", "a".repeat(5000));
    let cases: &[(&[&str], &str)] = &[
        (&["--resolve", "a.test=127.0.0.1:0"], "port 0"),
        (&["--resolve", "a.test=[::1"], "unbalanced ["),
        (&["--resolve", "a.test=::1]:1965"], "unbalanced ]"),
        (&["--resolve", &long_host], "at most 253"),
        (&["--resolve", "a\u{1b}[31m.test=127.0.0.1"], "control"),
        (&["--resolve", "a\tb=127.0.0.1"], "control"),
        (&["--min-delay-ms", "18446744073709551615"], "min-delay-ms"),
        (&["--min-delay-ms", "3600001"], "min-delay-ms"),
    ];
    for (extra, why) in cases {
        let mut args = vec!["crawl", "--data", dir, "--seed", "gemini://a.test/"];
        args.extend_from_slice(extra);
        let out = geode(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        // clap echoes the whole argument; show only the end of the message.
        let tail: String = err
            .chars()
            .rev()
            .take(300)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        assert_eq!(out.status.code(), Some(2), "{why}: {tail}");
        assert!(err.contains(why), "{why}: {tail}");
    }
    assert!(!data.exists(), "a usage error creates nothing");
}
