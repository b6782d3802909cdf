//! Keeping the index true: a geminispace crawled, changed (`tests/recrawl/v1` becomes
//! `tests/recrawl/v2`, see its README) and crawled again with revisit intervals of seconds; and a
//! run right after a run, with the default intervals, that requests nothing.

use std::collections::BTreeSet;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::Duration;

use geode::crawl::{CrawlConfig, CrawlSummary};
use geode::fetch::dns::{Overrides, Target};
use geode::index::{SearchIndex, SearchOptions};
use geode::revisit::RevisitPolicy;
use geode_fixture::{FixtureConfig, FixtureServer, RequestRecord};

use crate::support::{self, Space};

const DELAY: Duration = Duration::from_millis(20);

pub(crate) fn version(v: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/recrawl")
        .join(v)
}

/// The capsules and their addresses: news.test, shop.test (with cert.test beside it) and
/// dead.test, each on its own loopback address.
const HOSTS: &[(&str, &str)] = &[
    ("news.test", "127.0.1.11"),
    ("shop.test", "127.0.1.12"),
    ("cert.test", "127.0.1.12"),
    ("dead.test", "127.0.1.13"),
];

fn config(data: &Path, resolve: &[(String, SocketAddr)]) -> CrawlConfig {
    let mut config = CrawlConfig::new(data);
    config.seeds = ["news.test", "shop.test", "cert.test", "dead.test"]
        .iter()
        .map(|h| geode::urlnorm::normalize(&format!("gemini://{h}/")).unwrap())
        .collect();
    config.resolve = Overrides::new(resolve.iter().map(|(h, a)| {
        (
            h.clone(),
            Target {
                ip: a.ip(),
                port: Some(a.port()),
            },
        )
    }));
    config.min_delay = DELAY;
    config.concurrency = 8;
    // An unreachable capsule is left alone for the default back-off, but never longer than
    // --revisit-min: seconds here, like the intervals, so that run 3 tries dead.test again.
    config.progress_every = Duration::from_secs(60);
    config.revisit = RevisitPolicy {
        initial: Duration::from_secs(2),
        min: Duration::from_secs(1),
        max: Duration::from_secs(3600),
        remove_after: Duration::from_secs(4),
    };
    config
}

/// The pages holding every word of `query` (strict matching: this test checks what the index
/// holds, not how partial matches rank).
pub(crate) fn search(data: &Path, query: &str) -> Vec<String> {
    let index = SearchIndex::open(&geode::datadir::index_path(data)).unwrap();
    let options = SearchOptions {
        limit: 20,
        strict: true,
        ..SearchOptions::default()
    };
    index
        .search_with(query, &options)
        .unwrap()
        .hits
        .into_iter()
        .map(|h| h.url)
        .collect()
}

pub(crate) fn set(urls: &[&str]) -> BTreeSet<String> {
    urls.iter().map(|u| u.to_string()).collect()
}

fn indexed(data: &Path) -> BTreeSet<String> {
    support::indexed(data).into_iter().collect()
}

fn requested(log: &[RequestRecord]) -> Vec<String> {
    log.iter().map(|r| r.request.clone()).collect()
}

pub(crate) const V1_INDEX: &[&str] = &[
    "gemini://cert.test/",
    "gemini://dead.test/",
    "gemini://dead.test/page.gmi",
    "gemini://news.test/",
    "gemini://news.test/about.gmi",
    "gemini://news.test/log/",
    "gemini://news.test/log/2024-01-01-first.gmi",
    "gemini://news.test/log/2024-02-01-second.gmi",
    "gemini://news.test/log/atom.xml",
    "gemini://shop.test/",
    "gemini://shop.test/gone.gmi",
    "gemini://shop.test/missing.gmi",
    "gemini://shop.test/old.gmi",
    "gemini://shop.test/private/plans.gmi",
    "gemini://shop.test/stable.gmi",
    "gemini://shop.test/temp",
];

pub(crate) const V2_INDEX: &[&str] = &[
    "gemini://cert.test/",
    // Unreachable since, but not for --remove-after yet: still searchable.
    "gemini://dead.test/",
    "gemini://dead.test/page.gmi",
    "gemini://news.test/",
    "gemini://news.test/about.gmi",
    "gemini://news.test/log/",
    "gemini://news.test/log/2024-01-01-first.gmi",
    "gemini://news.test/log/2024-02-01-second.gmi",
    "gemini://news.test/log/2024-03-01-third.gmi",
    "gemini://news.test/log/2024-03-05-fourth.gmi",
    "gemini://news.test/log/atom.xml",
    "gemini://shop.test/",
    "gemini://shop.test/new.gmi",
    "gemini://shop.test/stable.gmi",
    "gemini://shop.test/temp",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_geminispace_is_crawled_again_and_the_index_matches_it() {
    let (server, mut resolve) = start_v1().await;
    let data = tempfile::tempdir().unwrap();

    // Run 1: the first version.
    let first = support::crawl(config(data.path(), &resolve)).await;
    assert_eq!(indexed(data.path()), set(V1_INDEX));
    assert_eq!(first.new as usize, V1_INDEX.len());
    assert_eq!(
        search(data.path(), "lantern festival"),
        ["gemini://news.test/log/2024-02-01-second.gmi"]
    );
    assert_eq!(
        search(data.path(), "first landing strip"),
        ["gemini://shop.test/temp"]
    );
    // The link's label is the page's anchor (and a label on the linking page).
    assert_eq!(
        search(data.path(), "wobbly periscope"),
        [
            "gemini://dead.test/page.gmi",
            "gemini://news.test/about.gmi"
        ]
    );
    let after_first = server.requests().len();

    // The geminispace changes: see tests/recrawl/README.md. dead.test stops answering (its
    // name now leads to a port nobody listens on), and cert.test renews its certificate.
    server.replace_root(version("v2")).await.unwrap();
    server.renew_certificate("cert.test").await.unwrap();
    let closed = {
        let l = std::net::TcpListener::bind("127.0.1.14:0").unwrap();
        l.local_addr().unwrap()
    };
    resolve.retain(|(h, _)| h != "dead.test");
    resolve.push(("dead.test".into(), closed));
    // Everything visited in run 1 is due within 2 s (no jitter at that scale).
    tokio::time::sleep(Duration::from_millis(2300)).await;

    // Run 2: the second version.
    let second: CrawlSummary = support::crawl(config(data.path(), &resolve)).await;
    let log = server.requests();
    let run2 = requested(&log[after_first..]);
    assert_eq!(indexed(data.path()), set(V2_INDEX), "{second:#?}");
    let index = SearchIndex::open(&geode::datadir::index_path(data.path())).unwrap();
    assert_eq!(index.num_docs() as usize, V2_INDEX.len());

    // Edited pages: the new text only.
    assert_eq!(
        search(data.path(), "moonlit regatta"),
        ["gemini://news.test/log/2024-02-01-second.gmi"]
    );
    assert!(search(data.path(), "lantern festival").is_empty());
    // A temporary redirect keeps its URL; the content behind it changed.
    assert_eq!(
        search(data.path(), "second landing strip"),
        ["gemini://shop.test/temp"]
    );
    assert!(search(data.path(), "first landing strip").is_empty());
    // New pages, one found through a permanent redirect.
    assert_eq!(
        search(data.path(), "freshly inked"),
        ["gemini://news.test/log/2024-03-01-third.gmi"]
    );
    assert_eq!(
        search(data.path(), "atom-fed fourth"),
        ["gemini://news.test/log/2024-03-05-fourth.gmi"]
    );
    assert_eq!(
        search(data.path(), "relocated brass"),
        ["gemini://shop.test/new.gmi"]
    );
    // 51, 52, 31 and the page robots.txt now disallows are out.
    for gone in [
        "disappearing ink",
        "evaporating puddles",
        "antique brass",
        "marzipan",
    ] {
        assert!(search(data.path(), gone).is_empty(), "{gone}");
    }
    assert!(
        !run2.contains(&"gemini://shop.test/private/plans.gmi".to_string()),
        "a page robots.txt disallows is not requested"
    );
    let robots_first = run2
        .iter()
        .position(|r| r == "gemini://shop.test/robots.txt")
        .expect("robots.txt is read again in a new run");
    assert!(run2
        .iter()
        .position(|r| r.starts_with("gemini://shop.test/") && !r.ends_with("robots.txt"))
        .is_some_and(|p| p > robots_first));
    // The changed link label reached the unreachable page's document, without a request.
    assert_eq!(
        search(data.path(), "gilded telescope"),
        [
            "gemini://dead.test/page.gmi",
            "gemini://news.test/about.gmi"
        ]
    );
    assert!(search(data.path(), "wobbly periscope").is_empty());
    assert_eq!(
        search(data.path(), "rusty foghorn"),
        ["gemini://dead.test/page.gmi"]
    );
    // Entries new in a feed come first: before the capsule's other revisits.
    let pos = |url: &str| run2.iter().position(|r| r == url);
    let third = pos("gemini://news.test/log/2024-03-01-third.gmi").expect("third fetched");
    let fourth = pos("gemini://news.test/log/2024-03-05-fourth.gmi").expect("fourth fetched");
    for leaf in [
        "gemini://news.test/about.gmi",
        "gemini://news.test/log/2024-01-01-first.gmi",
        "gemini://news.test/log/2024-02-01-second.gmi",
    ] {
        let leaf_at = pos(leaf).expect("revisited");
        assert!(third < leaf_at && fourth < leaf_at, "{run2:#?}");
    }

    assert_eq!(second.new, 3, "third, fourth, new.gmi: {second:#?}");
    assert_eq!(
        second.changed, 5,
        "log, atom, about, second, temp: {second:#?}"
    );
    assert_eq!(
        second.unchanged, 5,
        "news /, first, shop /, stable, cert /: {second:#?}"
    );
    assert_eq!(second.removed, 4, "51, 52, 31, robots: {second:#?}");
    assert_eq!(second.failed, 2, "dead.test: {second:#?}");
    assert_eq!(second.fetched, 17, "{second:#?}");
    assert_eq!(second.certificates_changed, 1);
    assert_eq!(second.capsules_unreachable, 1);
    assert_eq!(second.anchors_refreshed, 1, "{second:#?}");
    let stats = geode::frontier::Location::data_dir(data.path())
        .open_read_only()
        .unwrap()
        .stats(geode::crawl::unix_now())
        .unwrap();
    let changed: Vec<&str> = stats
        .certificates_changed
        .iter()
        .map(|c| c.host.as_str())
        .collect();
    assert_eq!(changed, ["cert.test"]);
    assert_eq!(stats.schedule.failing_but_searchable, 2);
    assert!(stats.schedule.feeds >= 2, "the gemfeed and the Atom feed");
    let after_second = log.len();

    // Run 3, once dead.test has failed for --remove-after: its pages leave the index. The 52
    // is never requested again; the 51, the 31 and the disallowed page wait for the max.
    tokio::time::sleep(Duration::from_millis(4300)).await;
    let third_run = support::crawl(config(data.path(), &resolve)).await;
    let log = server.requests();
    let run3 = requested(&log[after_second..]);
    let mut v3: Vec<&str> = V2_INDEX.to_vec();
    v3.retain(|u| !u.starts_with("gemini://dead.test/"));
    assert_eq!(indexed(data.path()), set(&v3), "{third_run:#?}");
    assert_eq!(third_run.removed, 2, "{third_run:#?}");
    assert!(search(data.path(), "rusty foghorn").is_empty());
    for never in [
        "gemini://shop.test/gone.gmi",
        "gemini://shop.test/missing.gmi",
        "gemini://shop.test/old.gmi",
        "gemini://shop.test/private/plans.gmi",
    ] {
        assert!(
            !run3.contains(&never.to_string()),
            "{never} requested: {run3:#?}"
        );
    }
    assert!(
        run3.contains(&"gemini://news.test/log/".to_string()),
        "the feed is revisited: {run3:#?}"
    );

    support::assert_polite(&server.finish().await, DELAY);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_right_after_a_run_requests_nothing() {
    let space = Space::start().await;
    let data = tempfile::tempdir().unwrap();
    let config = support::config(&space, data.path(), Duration::from_millis(5));
    let first = support::crawl(config.clone()).await;
    assert!(first.new > 20);
    let before = space.requests().len();
    let second = support::crawl(config).await;
    let after = space.requests();
    assert_eq!(
        after.len(),
        before,
        "requests: {:#?}",
        requested(&after[before..])
    );
    assert_eq!(
        (second.fetched, second.new, second.removed, second.failed),
        (0, 0, 0, 0)
    );
    // With nothing due it ends at once, rather than waiting for a timer.
    assert!(second.elapsed_secs < 10.0, "{second:#?}");
    assert_eq!(support::indexed(data.path()).len(), first.new as usize);
}

/// The schedule of [`config`] as `geode crawl` arguments, but pages unreachable for an hour
/// (not 4 s) leave the index, with `--resolve` for each capsule.
pub(crate) fn crawl_args(resolve: &[(String, SocketAddr)]) -> Vec<String> {
    let mut args: Vec<String> = [
        "--min-delay-ms",
        "20",
        "--revisit",
        "2s",
        "--revisit-min",
        "1s",
        "--revisit-max",
        "1h",
        "--remove-after",
        "1h",
    ]
    .map(String::from)
    .to_vec();
    for (h, a) in resolve {
        args.extend(["--resolve".to_string(), format!("{h}={a}")]);
    }
    args
}

/// Starts a fixture server with the first version on the capsules' addresses, and returns it
/// with the name-to-address map a crawl uses.
pub(crate) async fn start_v1() -> (FixtureServer, Vec<(String, SocketAddr)>) {
    let mut ips: Vec<IpAddr> = HOSTS.iter().map(|(_, ip)| ip.parse().unwrap()).collect();
    ips.dedup();
    let server = FixtureServer::start(FixtureConfig {
        root: version("v1"),
        listen: ips.iter().map(|ip| SocketAddr::new(*ip, 0)).collect(),
    })
    .await
    .unwrap();
    let resolve = HOSTS
        .iter()
        .map(|(h, ip)| {
            let ip: IpAddr = ip.parse().unwrap();
            let addr = *server.addrs.iter().find(|a| a.ip() == ip).unwrap();
            (h.to_string(), addr)
        })
        .collect();
    (server, resolve)
}

/// A second run killed with SIGKILL at three different moments, then run again to its end,
/// leaves the same index as a run that was never interrupted: updates, removals and anchor
/// rewrites in flight at the kill are redone, none is lost or doubled.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recrawl_killed_with_sigkill_ends_with_the_same_index() {
    for kill_after in [3, 7, 11] {
        let (server, mut resolve) = start_v1().await;
        let data = tempfile::tempdir().unwrap();
        support::crawl(config(data.path(), &resolve)).await;
        server.replace_root(version("v2")).await.unwrap();
        let closed = std::net::TcpListener::bind("127.0.1.14:0")
            .unwrap()
            .local_addr()
            .unwrap();
        resolve.retain(|(h, _)| h != "dead.test");
        resolve.push(("dead.test".into(), closed));
        tokio::time::sleep(Duration::from_millis(2300)).await;

        let mut args: Vec<String> = ["crawl", "--data", &data.path().display().to_string()]
            .iter()
            .map(|s| s.to_string())
            .collect();
        args.extend(crawl_args(&resolve));
        args.extend(["--commit-docs", "1", "--commit-secs", "1"].map(String::from));
        let before = server.requests().len();
        let mut child = std::process::Command::new(support::geode_bin())
            .args(&args)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while server.requests().len() < before + kill_after {
            assert!(std::time::Instant::now() < deadline, "no progress");
            assert!(child.try_wait().unwrap().is_none(), "ended before the kill");
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        child.kill().unwrap();
        child.wait().unwrap();

        let out = tokio::task::spawn_blocking(move || {
            std::process::Command::new(support::geode_bin())
                .args(&args)
                .output()
                .unwrap()
        })
        .await
        .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            indexed(data.path()),
            set(V2_INDEX),
            "killed after {kill_after} requests"
        );
        let index = SearchIndex::open(&geode::datadir::index_path(data.path())).unwrap();
        assert_eq!(index.num_docs() as usize, V2_INDEX.len(), "no duplicates");
        assert_eq!(
            search(data.path(), "moonlit regatta"),
            ["gemini://news.test/log/2024-02-01-second.gmi"]
        );
        assert!(search(data.path(), "lantern festival").is_empty());
        assert_eq!(
            search(data.path(), "second landing strip"),
            ["gemini://shop.test/temp"]
        );
        assert!(search(data.path(), "marzipan").is_empty());
        assert!(search(data.path(), "wobbly periscope").is_empty());
        assert!(search(data.path(), "gilded telescope")
            .contains(&"gemini://dead.test/page.gmi".to_string()));
        server.shutdown().await;
    }
}

/// `geode crawl --json` prints one object with the keys scripts rely on, progress going to
/// stderr; `stats --json` carries the schedule.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crawl_json_summaries_for_scripts() {
    let space = Space::start().await;
    let data = tempfile::tempdir().unwrap();
    let dir = data.path().display().to_string();
    let mut args: Vec<String> = ["crawl", "--data", &dir, "--seed", "gemini://alpha.test/"]
        .iter()
        .map(|s| s.to_string())
        .chain(["--min-delay-ms", "5", "--json"].map(String::from))
        .collect();
    args.extend(space.resolve_args());
    let run = |args: Vec<String>| async move {
        tokio::task::spawn_blocking(move || {
            std::process::Command::new(support::geode_bin())
                .args(&args)
                .output()
                .unwrap()
        })
        .await
        .unwrap()
    };
    for (round, fetched_some) in [(1, true), (2, false)] {
        let out = run(args.clone()).await;
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let stdout = String::from_utf8(out.stdout).unwrap();
        assert_eq!(stdout.lines().count(), 1, "one line on stdout: {stdout}");
        let summary: serde_json::Value = serde_json::from_str(&stdout).unwrap();
        for key in [
            "fetched",
            "new",
            "changed",
            "unchanged",
            "removed",
            "failed",
        ] {
            assert!(summary[key].is_u64(), "run {round}: {key} in {summary}");
        }
        assert_eq!(summary["ended"], "done");
        assert_eq!(
            summary["fetched"].as_u64().unwrap() > 0,
            fetched_some,
            "{summary}"
        );
        if round == 2 {
            assert_eq!(summary["new"], 0);
        }
    }
    let out = std::process::Command::new(support::geode_bin())
        .args(["stats", "--data", &dir, "--json"])
        .output()
        .unwrap();
    let stats: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let schedule = &stats["schedule"];
    assert_eq!(schedule["due_now"], 0, "{stats}");
    assert!(
        schedule["due_within_week"].as_u64().unwrap() > 20,
        "{stats}"
    );
    // A first crawl's pages wait the default three days.
    assert_eq!(schedule["intervals"][2][0], "3-7 days", "{stats}");
    assert!(
        schedule["intervals"][2][1].as_u64().unwrap() > 20,
        "{stats}"
    );
}

/// `--max-pages 0` sends no request at all (issue 12, item 12).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_pages_zero_requests_nothing() {
    let space = Space::start().await;
    let data = tempfile::tempdir().unwrap();
    let mut config = support::config(&space, data.path(), Duration::from_millis(5));
    config.max_pages = Some(0);
    let summary = support::crawl(config).await;
    assert_eq!(summary.fetched, 0);
    assert_eq!(summary.robots_fetched, 0);
    assert_eq!(summary.ended, geode::crawl::StopReason::MaxPages);
    assert!(space.requests().is_empty(), "{:#?}", space.requests());
}
