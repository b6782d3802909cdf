//! One crawl of a good capsule among hostile ones: capsules that answer 44 forever (with waits
//! of `-5`, `abc` and 999999999 seconds), a link bomb, a page without a MIME type, a robots.txt
//! of 5 MiB, a server that sends garbage instead of TLS and one that never finishes a handshake.
//! The crawl must end by itself, keep the good capsule's pace, stay small, and record an error for
//! every URL it could not fetch (issue 12).

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::time::{Duration, Instant};

use geode_fixture::{FixtureConfig, FixtureServer, RequestRecord};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;

use crate::support;

fn write(root: &Path, rel: &str, body: &[u8]) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, body).unwrap();
}

/// The fixture capsules, and the loopback address each is served on.
fn hostile_space(root: &Path) -> Vec<(&'static str, &'static str)> {
    let mut good = String::from("# Good capsule\n\nA well-behaved walnut orchard.\n\n");
    for i in 1..=20 {
        good.push_str(&format!("=> p{i}.gmi Page {i}\n"));
        write(
            root,
            &format!("good.test/p{i}.gmi"),
            format!("# Page {i}\n\nWalnut tree number {i} stands here.\n").as_bytes(),
        );
    }
    write(root, "good.test/index.gmi", good.as_bytes());
    for (host, wait) in [
        ("slow-neg.test", "-5"),
        ("slow-abc.test", "abc"),
        ("slow-huge.test", "999999999"),
    ] {
        write(root, &format!("{host}/index.gmi"), b"# Never served\n");
        write(
            root,
            &format!("{host}/routes.conf"),
            format!("/* 44 {wait}\n").as_bytes(),
        );
    }
    // The root holds 260,000 links to new pages; those pages hold 20 more each.
    write(root, "bomb.test/index.gmi", b"# Unused\n");
    write(
        root,
        "bomb.test/routes.conf",
        b"/ linkbomb 260000\n/* linkbomb 20\n",
    );
    write(
        root,
        "nomime.test/index.gmi",
        b"# No type\n\nA headerless heron sighting.\n",
    );
    write(root, "nomime.test/routes.conf", b"/ nomime index.gmi\n");
    let mut robots = b"User-agent: *\nDisallow: /private/\n".to_vec();
    while robots.len() < 5 * 1024 * 1024 {
        robots.extend_from_slice(b"# a very long robots.txt full of comments, on and on\n");
    }
    write(root, "bigrobots.test/robots.txt", &robots);
    write(
        root,
        "bigrobots.test/index.gmi",
        b"# Big robots\n\n=> open.gmi Open\n=> private/secret.gmi Secret\n",
    );
    write(
        root,
        "bigrobots.test/open.gmi",
        b"# Open\n\nAn open meadow gate.\n",
    );
    write(
        root,
        "bigrobots.test/private/secret.gmi",
        b"# Secret\n\nA hidden radish cellar.\n",
    );
    vec![
        ("good.test", "127.0.6.1"),
        ("slow-neg.test", "127.0.6.2"),
        ("slow-abc.test", "127.0.6.3"),
        ("slow-huge.test", "127.0.6.4"),
        ("bomb.test", "127.0.6.5"),
        ("nomime.test", "127.0.6.6"),
        ("bigrobots.test", "127.0.6.6"),
    ]
}

/// A server that answers every connection with bytes that are not TLS.
async fn garbage_server() -> SocketAddr {
    let listener = TcpListener::bind("127.0.6.7:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut tcp, _)) = listener.accept().await {
            tokio::spawn(async move {
                let _ = tcp
                    .write_all(b"HTTP/1.1 400 Nope\r\n\r\n\x00\xff garbage")
                    .await;
            });
        }
    });
    addr
}

/// A server that accepts connections and never says anything.
async fn silent_server() -> SocketAddr {
    let listener = TcpListener::bind("127.0.6.8:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((tcp, _)) = listener.accept().await {
            held.push(tcp);
        }
    });
    addr
}

/// What one `geode crawl` left: its stdout and its own peak resident set, in bytes.
struct Crawled {
    stdout: String,
    peak_rss: u64,
}

/// Runs `geode crawl` to its end (at most three minutes), which must succeed.
async fn crawl(args: Vec<String>) -> Crawled {
    let run = support::run_geode(args, Duration::from_secs(180)).await;
    assert!(
        libc::WIFEXITED(run.status) && libc::WEXITSTATUS(run.status) == 0,
        "status {}: {}",
        run.status,
        run.stderr
    );
    Crawled {
        stdout: run.stdout,
        peak_rss: run.peak_rss,
    }
}

/// The time between the first and the last request for `host`.
fn span(log: &[RequestRecord], host: &str) -> Duration {
    let times: Vec<Duration> = log
        .iter()
        .filter(|r| support::host_and_path(&r.request).is_some_and(|(h, _)| h == host))
        .map(|r| r.accepted)
        .collect();
    let first = times.iter().min().copied().unwrap_or_default();
    let last = times.iter().max().copied().unwrap_or_default();
    last - first
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_good_capsule_among_hostile_ones_is_crawled_at_its_pace_and_the_crawl_ends() {
    let root = tempfile::tempdir().unwrap();
    let hosts = hostile_space(root.path());
    let mut ips: Vec<IpAddr> = hosts.iter().map(|(_, ip)| ip.parse().unwrap()).collect();
    ips.dedup();
    let server = FixtureServer::start(FixtureConfig {
        root: root.path().to_path_buf(),
        listen: ips.iter().map(|ip| SocketAddr::new(*ip, 0)).collect(),
    })
    .await
    .unwrap();
    let by_ip: BTreeMap<IpAddr, SocketAddr> = server.addrs.iter().map(|a| (a.ip(), *a)).collect();
    let mut resolve: Vec<(String, SocketAddr)> = hosts
        .iter()
        .map(|(h, ip)| (h.to_string(), by_ip[&ip.parse::<IpAddr>().unwrap()]))
        .collect();
    resolve.push(("garbage.test".into(), garbage_server().await));
    resolve.push(("silent.test".into(), silent_server().await));

    let args = |data: &Path, seeds: &[&str]| -> Vec<String> {
        let mut args: Vec<String> = [
            "crawl",
            "--data",
            &data.display().to_string(),
            "--min-delay-ms",
            "50",
            // The budget is what bounds a link bomb: 300 URLs, not 260,000 per page.
            "--capsule-budget",
            "300",
            "--json",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        for seed in seeds {
            args.extend(["--seed".to_string(), format!("gemini://{seed}/")]);
        }
        for (h, a) in &resolve {
            args.extend(["--resolve".to_string(), format!("{h}={a}")]);
        }
        args
    };

    // The good capsule alone, for its clean pace.
    let clean = tempfile::tempdir().unwrap();
    let alone = crawl(args(clean.path(), &["good.test"])).await;
    let clean_span = span(&server.requests(), "good.test");
    let before = server.requests().len();

    // Everyone together.
    let data = tempfile::tempdir().unwrap();
    let seeds: Vec<&str> = resolve.iter().map(|(h, _)| h.as_str()).collect();
    let started = Instant::now();
    let together = crawl(args(data.path(), &seeds)).await;
    let took = started.elapsed();
    let summary: serde_json::Value = serde_json::from_str(together.stdout.trim()).unwrap();
    assert_eq!(summary["ended"], "done", "{summary}");
    let log = server.requests()[before..].to_vec();

    // The good capsule kept its pace.
    let hostile_span = span(&log, "good.test");
    assert!(
        hostile_span <= clean_span + Duration::from_secs(3),
        "good.test took {hostile_span:?} among hostile capsules, {clean_span:?} alone; the \
         crawl took {took:?}"
    );
    let indexed = support::indexed(data.path());
    let good: Vec<&String> = indexed
        .iter()
        .filter(|u| u.starts_with("gemini://good.test/"))
        .collect();
    assert_eq!(good.len(), 21, "{indexed:#?}");

    // Small: memory and disk.
    let rss = alone.peak_rss.max(together.peak_rss);
    assert!(
        rss < 250 * 1024 * 1024,
        "peak RSS {} MB",
        rss / (1024 * 1024)
    );
    let db: u64 = ["crawl.sqlite", "crawl.sqlite-wal"]
        .iter()
        .filter_map(|f| std::fs::metadata(data.path().join(f)).ok())
        .map(|m| m.len())
        .sum();
    assert!(db < 200 * 1024 * 1024, "database {db} bytes");

    // The link bomb stopped at its budget.
    let frontier = geode::frontier::Location::data_dir(data.path())
        .open_read_only()
        .unwrap();
    let bomb = frontier
        .known_hosts()
        .unwrap()
        .into_iter()
        .find(|h| h.name == "bomb.test")
        .expect("the bomb's root is indexed");
    assert!(bomb.urls_known <= 300, "{bomb:?}");

    // 44 forever: a few attempts, then later runs; the huge wait is honoured at once.
    let requests_to = |host: &str| {
        log.iter()
            .filter(|r| support::host_and_path(&r.request).is_some_and(|(h, _)| h == host))
            .count()
    };
    assert_eq!(
        requests_to("slow-huge.test"),
        1,
        "one robots.txt, then a later run"
    );
    for host in ["slow-neg.test", "slow-abc.test"] {
        let n = requests_to(host);
        assert!((1..=4).contains(&n), "{host}: {n} requests");
    }

    // No MIME type means text/gemini; a robots.txt over 4 MiB is read in its first 512 KiB.
    // Strict matching: which pages hold the words, not how partial matches rank.
    let search = |q: &str| -> Vec<String> {
        let options = geode::index::SearchOptions {
            strict: true,
            ..geode::index::SearchOptions::default()
        };
        geode::index::SearchIndex::open(&geode::datadir::index_path(data.path()))
            .unwrap()
            .search_with(q, &options)
            .unwrap()
            .hits
            .into_iter()
            .map(|h| h.url)
            .collect()
    };
    assert_eq!(search("headerless heron"), ["gemini://nomime.test/"]);
    assert_eq!(
        search("open meadow gate"),
        ["gemini://bigrobots.test/open.gmi"]
    );
    assert!(!log
        .iter()
        .any(|r| r.request == "gemini://bigrobots.test/private/secret.gmi"));

    // Garbage and silence are errors on the URLs, not silence in the statistics.
    let stats = frontier.stats(geode::crawl::unix_now()).unwrap();
    let errors: BTreeMap<String, u64> = stats.errors.into_iter().collect();
    assert!(errors.get("tls").is_some_and(|&n| n >= 1), "{errors:?}");
    assert!(errors.get("timeout").is_some_and(|&n| n >= 1), "{errors:?}");
    assert!(
        !frontier
            .urls_in_state(geode::frontier::UrlState::New)
            .unwrap()
            .iter()
            .any(|u| u.contains("garbage.test") || u.contains("silent.test")),
        "every URL of the unreachable capsules has its failure recorded"
    );
    server.shutdown().await;
}
