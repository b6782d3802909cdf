//! Crawling the fixture geminispace with the library: what gets indexed, what is never asked
//! for, and how politely.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use geode::crawl::StopReason;
use geode::frontier::UrlState;
use geode::index::SearchIndex;

use crate::support::{self, host_and_path, Space};

/// Every page and file reachable by links from gemini://alpha.test/, minus what robots.txt forbids,
/// sorted. See capsules-fixture/README.md.
pub const EXPECTED_INDEXED: &[&str] = &[
    "gemini://alpha.test/",
    "gemini://alpha.test/about.gmi",
    "gemini://alpha.test/gemlog/",
    "gemini://alpha.test/gemlog/2024-01-14-winter-bread.gmi",
    "gemini://alpha.test/gemlog/2024-03-02-bicycle-repair.gmi",
    "gemini://alpha.test/gemlog/2024-05-19-moth-census.gmi",
    "gemini://alpha.test/gemlog/2024-08-11-slow-radio.gmi",
    "gemini://alpha.test/gemlog/2024-11-23-lighthouse-walk.gmi",
    "gemini://alpha.test/gemlog/reading-list.txt",
    "gemini://alpha.test/images/desk-lamp.png",
    "gemini://alpha.test/photos.gmi",
    "gemini://beta.test/",
    "gemini://beta.test/changelog.gmi",
    "gemini://beta.test/docs/",
    "gemini://beta.test/docs/install.gmi",
    "gemini://beta.test/docs/tools/",
    "gemini://beta.test/docs/tools/rg-cheatsheet.gmi",
    "gemini://beta.test/notes/borrow-checker.gmi",
    "gemini://beta.test/notes/sqlite-wal.gmi",
    "gemini://beta.test/notes/tls-by-hand.gmi",
    "gemini://delta.test/",
    "gemini://delta.test/antenna.gmi",
    "gemini://delta.test/links.gmi",
    "gemini://delta.test/logbook.gmi",
    "gemini://gamma.test/",
    "gemini://gamma.test/de/wanderung.gmi",
    "gemini://gamma.test/fr/carnet.gmi",
    "gemini://gamma.test/fr/recettes.gmi",
    "gemini://gamma.test/glossary.gmi",
    "gemini://gamma.test/ja/haiku.gmi",
    "gemini://gamma.test/ru/zametki.gmi",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crawl_indexes_exactly_the_reachable_pages_and_nothing_forbidden() {
    let space = Space::start().await;
    let data = tempfile::tempdir().unwrap();
    let delay = Duration::from_millis(40);
    let summary = support::crawl(support::config(&space, data.path(), delay)).await;
    assert_eq!(summary.ended, StopReason::Done);
    // Documents wait for their capsule to be done, so the labels of links found after a page
    // (here, the winter bread post's "Who bakes this" for about.gmi, one level deeper) are in
    // its document from the start: no document is written twice.
    assert_eq!(summary.anchors_refreshed, 0, "{summary:#?}");
    assert_eq!(
        crate::recrawl::search(data.path(), "bakes"),
        [
            "gemini://alpha.test/about.gmi",
            "gemini://alpha.test/gemlog/2024-01-14-winter-bread.gmi"
        ]
    );

    let indexed = support::indexed(data.path());
    let expected: Vec<String> = EXPECTED_INDEXED.iter().map(|s| s.to_string()).collect();
    assert_eq!(
        indexed, expected,
        "the crawl indexes exactly the reachable pages"
    );
    let index = SearchIndex::open(&geode::datadir::index_path(data.path())).unwrap();
    assert_eq!(
        index.num_docs() as usize,
        expected.len(),
        "one document per URL"
    );
    // A first run that did its work leaves the index in one segment (several commits made
    // several, all of them new: see `Indexer::compact`).
    let segments = tantivy::Index::open_in_dir(geode::datadir::index_path(data.path()))
        .unwrap()
        .searchable_segment_ids()
        .unwrap();
    assert_eq!(segments.len(), 1, "segments after the run: {segments:?}");
    // Link authority is computed when the crawl ends: one score per indexed page, the most
    // linked-to page scoring 1.
    let authority =
        geode::index::authority::Authority::load(&geode::datadir::index_path(data.path())).unwrap();
    assert_eq!(
        authority.len(),
        expected.len(),
        "one authority score per page"
    );
    let best = expected
        .iter()
        .map(|u| authority.get(geode::index::authority::url_hash(u)))
        .fold(0.0f32, f32::max);
    assert_eq!(best, 1.0, "the scores are keyed by url_hash");

    let requests = space.requests();
    // robots.txt: delta forbids /private/ to indexers; geode never asks for it.
    for r in &requests {
        let (host, path) = host_and_path(&r.request).expect("the crawler sends valid requests");
        assert!(
            !(host == "delta.test" && path.starts_with("/private/")),
            "requested a robots-disallowed URL: {}",
            r.request
        );
    }
    // robots.txt comes first on every capsule, once.
    let mut seen: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut by_accept = requests.clone();
    by_accept.sort_by_key(|r| r.accepted);
    for r in &by_accept {
        let (host, path) = host_and_path(&r.request).unwrap();
        seen.entry(host).or_default().push(path);
    }
    for (host, paths) in &seen {
        assert_eq!(
            paths[0], "/robots.txt",
            "{host}: robots.txt is asked for first"
        );
        assert_eq!(
            paths.iter().filter(|p| *p == "/robots.txt").count(),
            1,
            "{host}"
        );
    }
    // Nothing is fetched twice in one crawl.
    let all: Vec<&String> = by_accept.iter().map(|r| &r.request).collect();
    let distinct: BTreeSet<&String> = all.iter().copied().collect();
    assert_eq!(all.len(), distinct.len(), "a URL was fetched twice");
    // Mail and web links are recorded for the link graph but never fetched.
    assert!(support::urls_in(data.path(), UrlState::Excluded)
        .iter()
        .any(|u| u.starts_with("mailto:")));
    assert!(requests.iter().all(|r| r.request.starts_with("gemini://")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_connection_per_ip_and_the_delay_between_starts_holds() {
    let space = Space::start().await;
    let data = tempfile::tempdir().unwrap();
    let delay = Duration::from_millis(120);
    support::crawl(support::config(&space, data.path(), delay)).await;

    let requests = space.requests();
    let ips: BTreeSet<_> = requests.iter().map(|r| r.local.ip()).collect();
    assert_eq!(ips.len(), 3, "all three addresses were crawled");
    // The server stamps the accept time; the crawler stamps its own start a little earlier, so
    // allow a few milliseconds of scheduling noise on a delay of 120.
    support::assert_polite(&requests, delay);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn different_ips_are_crawled_at_the_same_time() {
    let space = Space::start().await;
    let data = tempfile::tempdir().unwrap();
    let delay = Duration::from_millis(150);
    support::crawl(support::config(&space, data.path(), delay)).await;
    let requests = space.requests();
    // With three addresses, the crawl must take well under the serial time.
    let first = requests.iter().map(|r| r.accepted).min().unwrap();
    let last = requests.iter().map(|r| r.accepted).max().unwrap();
    let serial = delay * (requests.len() as u32 - 1);
    assert!(
        last - first < serial * 3 / 4,
        "{} requests took {:?}, serial would be {:?}",
        requests.len(),
        last - first,
        serial
    );
}
