//! The politeness geminispace (capsules-fixture/*.test beyond the four showcase capsules): every
//! robots.txt variant, redirects and loops, every status code, 44 slow-downs, traps, duplicate
//! spellings, charsets and files, on a few IPs. The properties are asserted from the server's own
//! request log, not from what the crawler believes it did.

use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use geode::crawl::{CrawlConfig, StopReason};
use geode::fetch::dns::{Overrides, Target};
use geode_fixture::{FixtureConfig, FixtureServer, RequestRecord};

use crate::support;

/// Capsule -> address. slow.test has an address of its own, so its 44 waits hold up no one else.
const SPACE: &[(&str, u8)] = &[
    ("robots-star.test", 1),
    ("robots-indexer.test", 1),
    ("robots-archiver.test", 1),
    ("robots-wild.test", 1),
    ("robots-geode.test", 2),
    ("robots-missing.test", 2),
    ("robots-gone.test", 2),
    ("robots-failing.test", 2),
    ("robots-busy.test", 2),
    ("redirects.test", 3),
    ("statuses.test", 3),
    ("unavailable.test", 3),
    ("traps.test", 3),
    ("dupes.test", 1),
    ("charsets.test", 2),
    ("files.test", 3),
    ("slow.test", 4),
];

/// URL prefixes (after the host) that robots.txt forbids to geode, per capsule; `*` is all.
const FORBIDDEN: &[(&str, &str)] = &[
    ("robots-star.test", "/hidden/"),
    ("robots-indexer.test", "/drafts/"),
    ("robots-indexer.test", "/search"),
    ("robots-wild.test", "/tmp"),
    ("robots-wild.test", "/notes.txt"),
    ("robots-geode.test", "/not-for-geode/"),
];

const DELAY: Duration = Duration::from_millis(60);

fn ip(n: u8) -> IpAddr {
    IpAddr::from([127, 0, 5, n])
}

fn parse(r: &RequestRecord) -> url::Url {
    url::Url::parse(&r.request).expect("the crawler sends valid requests")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_politeness_geminispace_is_crawled_exactly_and_politely() {
    let _timing = support::TIMING.lock().await;
    let ips: BTreeSet<u8> = SPACE.iter().map(|(_, n)| *n).collect();
    let listen: Vec<SocketAddr> = ips.iter().map(|n| SocketAddr::new(ip(*n), 0)).collect();
    let server = FixtureServer::start(FixtureConfig {
        root: support::fixture_root(),
        listen,
    })
    .await
    .expect("the fixture (with its routes.conf files) is valid");
    let port_of: BTreeMap<IpAddr, u16> = server.addrs.iter().map(|a| (a.ip(), a.port())).collect();
    let data = tempfile::tempdir().unwrap();
    let mut config = CrawlConfig::new(data.path());
    // unavailable.test is reached only through statuses.test's link to its /busy page.
    config.seeds = SPACE
        .iter()
        .filter(|(h, _)| *h != "unavailable.test")
        .map(|(h, _)| geode::urlnorm::normalize(&format!("gemini://{h}/")).unwrap())
        .collect();
    config.resolve = Overrides::new(SPACE.iter().map(|(h, n)| {
        (
            h.to_string(),
            Target {
                ip: ip(*n),
                port: Some(port_of[&ip(*n)]),
            },
        )
    }));
    config.min_delay = DELAY;
    config.concurrency = 16;
    config.retry_base = Duration::from_secs(1);
    config.max_attempts = 3;
    // A capsule that is down (41, or robots.txt answering 41) stays alone for this crawl.
    config.capsule_backoff = Duration::from_secs(3600);
    config.retry_horizon = Duration::from_secs(10);
    config.progress_every = Duration::from_secs(60);

    let started = Instant::now();
    let summary = tokio::time::timeout(Duration::from_secs(90), support::crawl(config))
        .await
        .expect("the crawl ends on its own, traps and all");
    assert_eq!(summary.ended, StopReason::Done);
    let took = started.elapsed();
    let log = server.finish().await;
    assert!(!log.is_empty());

    // 1. Nothing robots.txt forbids was requested.
    for r in &log {
        let url = parse(r);
        let (host, path) = (url.host_str().unwrap().to_string(), url.path().to_string());
        // robots-wild.test allows /tmp/public/ inside its forbidden /tmp*.
        let allowed = host == "robots-wild.test" && path.starts_with("/tmp/public/");
        for (h, prefix) in FORBIDDEN {
            assert!(
                allowed || !(host == *h && path.starts_with(prefix)),
                "forbidden request {}",
                r.request
            );
        }
        if host == "robots-busy.test" {
            assert_eq!(
                path, "/robots.txt",
                "robots.txt answered 41: nothing else may be asked"
            );
        }
        if host == "unavailable.test" {
            assert!(
                path == "/robots.txt" || path == "/busy",
                "41: the capsule is left alone, yet {} was asked",
                r.request
            );
        }
    }
    // The long chain stops after five redirects; loops end.
    let paths: BTreeSet<String> = log.iter().map(|r| parse(r).to_string()).collect();
    assert!(
        paths.contains("gemini://redirects.test/five/end.gmi"),
        "five redirects are followed"
    );
    assert!(
        !paths.contains("gemini://redirects.test/long/7"),
        "a sixth redirect is not"
    );
    assert!(!paths.contains("gemini://redirects.test/long/end.gmi"));

    // 2. Per IP: one connection at a time, starts at least DELAY apart, nothing during a 44 wait.
    // The server stamps times a little after the crawler acts: 8 ms of slack.
    support::assert_polite(&log, DELAY);
    let slow_downs = log.iter().filter(|r| r.status == Some(44)).count();
    assert!(slow_downs >= 3, "slow.test answered 44 three times");

    // 3. Every URL was fetched once, but for retries after temporary failures.
    let mut answers: BTreeMap<String, Vec<Option<u8>>> = BTreeMap::new();
    let mut sorted = log.clone();
    sorted.sort_by_key(|r| r.accepted);
    for r in &sorted {
        let key = geode::urlnorm::normalize(&r.request).unwrap().to_string();
        answers.entry(key).or_default().push(r.status);
    }
    for (url, statuses) in &answers {
        for earlier in &statuses[..statuses.len() - 1] {
            assert!(
                matches!(earlier, Some(40..=49)),
                "{url} fetched again after {earlier:?}: {statuses:?}"
            );
        }
    }
    assert_eq!(
        answers["gemini://statuses.test/flaky"],
        vec![Some(40), Some(40), Some(20)]
    );
    assert_eq!(
        answers["gemini://statuses.test/temporary"].len(),
        3,
        "given up after 3 attempts"
    );

    // 4. What was indexed.
    let indexed: BTreeSet<String> = support::indexed(data.path()).into_iter().collect();
    for url in [
        "gemini://robots-archiver.test/records.gmi",
        "gemini://robots-gone.test/still-here.gmi",
        "gemini://robots-failing.test/open-house.gmi",
        "gemini://robots-wild.test/tmp/public/",
        "gemini://redirects.test/chain/end.gmi",
        "gemini://redirects.test/five/end.gmi",
        "gemini://statuses.test/flaky",
        "gemini://slow.test/one.gmi",
        "gemini://slow.test/two.gmi",
        "gemini://dupes.test/a/b.gmi",
        "gemini://dupes.test/~user/",
        "gemini://charsets.test/latin1.gmi",
        "gemini://files.test/teal-square.png",
        "gemini://traps.test/about.gmi",
    ] {
        assert!(
            indexed.contains(url),
            "{url} not indexed; indexed: {indexed:#?}"
        );
    }
    // A page reached through three 31s keeps the label of the link to the first hop, for
    // backlinks and as anchor text.
    let frontier = geode::frontier::Location::data_dir(data.path())
        .open_read_only()
        .expect("crawl database");
    let backlinks = frontier
        .backlinks("gemini://redirects.test/chain/end.gmi")
        .expect("backlinks");
    assert!(
        backlinks
            .iter()
            .any(|b| b.url == "gemini://redirects.test/" && b.label == "Three hops to a page"),
        "{backlinks:?}"
    );
    let index =
        geode::index::SearchIndex::open(&geode::datadir::index_path(data.path())).expect("index");
    // Only the anchor says "hops to a page"; the page itself says "three-hop chain".
    let hits = index.search("\"hops to a page\"", 10, 0).expect("search");
    assert!(
        hits.hits
            .iter()
            .any(|h| h.url == "gemini://redirects.test/chain/end.gmi"),
        "{:?}",
        hits.hits
    );
    // A temporary redirect keeps its own URL as the page's name.
    assert!(
        indexed.contains("gemini://redirects.test/temporary"),
        "{indexed:#?}"
    );
    // Identical bodies: indexed once.
    let copies = [
        "gemini://dupes.test/copy-one.gmi",
        "gemini://dupes.test/copy-two.gmi",
    ];
    assert_eq!(copies.iter().filter(|u| indexed.contains(**u)).count(), 1);
    // Nothing failed, gone or forbidden is in the index.
    for url in &indexed {
        assert!(
            !url.contains("/gone") && !url.contains("/hidden/") && !url.contains("/huge"),
            "{url}"
        );
    }
    // Traps are bounded: the endless calendar and loop stop.
    let trap_requests = log
        .iter()
        .filter(|r| r.request.contains("traps.test/"))
        .count();
    assert!(
        trap_requests < 80,
        "{trap_requests} requests into the traps"
    );
    assert!(
        !log.iter().any(|r| r.request.contains("again/again/again")),
        "repeated segments"
    );
    assert!(took < Duration::from_secs(60), "took {took:?}");
}
