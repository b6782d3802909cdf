//! The PostgreSQL store against a real PostgreSQL: a throwaway cluster per test, made with
//! Debian's binaries as the `postgres` user (it refuses to run as root), listening on 127.0.0.1
//! only. Where the binaries are not installed, the tests say SKIPPED and pass (CI installs
//! Debian's `postgresql`: .ci/run).

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use geode::frontier::{Batch, FetchResult, Frontier, PgStore, UrlState, VisitRecord};
use geode::revisit::Priority;

/// A PostgreSQL cluster in a scratch directory, stopped when dropped.
pub struct Cluster {
    bin: PathBuf,
    dir: tempfile::TempDir,
    pub port: u16,
}

/// Where Debian puts the server's binaries (the newest version installed).
fn binaries() -> Option<PathBuf> {
    let mut versions: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
        .filter(|bin| bin.join("initdb").exists() && bin.join("pg_ctl").exists())
        .collect();
    versions.sort();
    versions.pop()
}

impl Cluster {
    /// Starts a cluster, or `None` (after saying SKIPPED) where PostgreSQL is not installed.
    pub fn start(test: &str) -> Option<Cluster> {
        let Some(bin) = binaries() else {
            eprintln!(
                "SKIPPED {test}: PostgreSQL is not installed (Debian package postgresql, \
                 binaries in /usr/lib/postgresql/*/bin)"
            );
            return None;
        };
        let dir = tempfile::Builder::new()
            .prefix("geode-pg")
            .tempdir()
            .expect("scratch dir");
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("free port")
            .port();
        let cluster = Cluster { bin, dir, port };
        let root = unsafe { libc::geteuid() } == 0;
        if root {
            let status = Command::new("chown")
                .args(["-R", "postgres:"])
                .arg(cluster.dir.path())
                .status()
                .expect("chown");
            assert!(status.success(), "chown the cluster directory to postgres");
        }
        let data = cluster.data();
        cluster.run(
            root,
            cluster.bin.join("initdb"),
            &[
                "-D",
                data.to_str().unwrap(),
                "-U",
                "postgres",
                "--auth=trust",
                "-E",
                "UTF8",
                "--locale=C.UTF-8",
            ],
        );
        let options = format!(
            "-c listen_addresses=127.0.0.1 -c port={port} -c unix_socket_directories={} \
             -c fsync=off -c max_connections=100",
            cluster.dir.path().display()
        );
        let log = cluster.dir.path().join("log");
        cluster.run(
            root,
            cluster.bin.join("pg_ctl"),
            &[
                "-D",
                data.to_str().unwrap(),
                "-l",
                log.to_str().unwrap(),
                "-w",
                "-o",
                &options,
                "start",
            ],
        );
        Some(cluster)
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    fn run(&self, root: bool, program: PathBuf, args: &[&str]) {
        let mut command = if root {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(&program);
            c
        } else {
            Command::new(&program)
        };
        let out = command
            .args(args)
            .current_dir(self.dir.path())
            .output()
            .expect("run a PostgreSQL binary");
        assert!(
            out.status.success(),
            "{} failed: {}{}",
            program.display(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// The URL of a new, empty database in this cluster.
    /// (On a thread of its own: the client may not run inside an async test's runtime.)
    pub fn database(&self, name: &str) -> String {
        let admin = format!("postgres://postgres@127.0.0.1:{}/postgres", self.port);
        std::thread::scope(|s| {
            s.spawn(|| {
                let mut client =
                    postgres::Client::connect(&admin, postgres::NoTls).expect("connect");
                client
                    .batch_execute(&format!("CREATE DATABASE {name}"))
                    .expect("create database");
            })
            .join()
            .expect("database created")
        });
        format!("postgres://postgres@127.0.0.1:{}/{name}", self.port)
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let root = unsafe { libc::geteuid() } == 0;
        let data = self.data();
        let mut command = if root {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"])
                .arg(self.bin.join("pg_ctl"));
            c
        } else {
            Command::new(self.bin.join("pg_ctl"))
        };
        let _ = command
            .args(["-D", data.to_str().unwrap(), "-m", "immediate", "stop"])
            .output();
    }
}

fn seed(frontier: &mut dyn Frontier, url: &str) {
    let host = url
        .trim_start_matches("gemini://")
        .split('/')
        .next()
        .unwrap()
        .to_string();
    assert!(frontier.add_seed(url, &host, 0).unwrap(), "{url} is new");
}

fn visit(batch: &mut dyn Batch, id: i64, at: i64) {
    let result = FetchResult {
        status: Some(20),
        meta: "text/gemini".into(),
        fetched_at: at,
        ..FetchResult::default()
    };
    let record = VisitRecord {
        state: UrlState::Fetched,
        result: &result,
        due_at: Some(at + 86_400),
        revisit_secs: 86_400,
        first_failed_at: None,
        prio: Priority::Revisit,
        feed: false,
        changed: false,
        index_op: None,
        redirect_to: None,
    };
    batch.record_visit(id, &record).unwrap();
}

/// Three crawlers (three stores: three crawler ids) claim from one database at once: each
/// capsule goes to exactly one of them, and every due URL is claimed once.
#[test]
fn crawlers_sharing_a_database_never_get_the_same_capsule() {
    let Some(cluster) = Cluster::start("crawlers_sharing_a_database_never_get_the_same_capsule")
    else {
        return;
    };
    let url = cluster.database("shared");
    let lease = Duration::from_secs(300);
    let first = PgStore::connect(&url, lease, true).expect("connect and migrate");
    let mut setup = first.frontier().unwrap();
    for capsule in 0..30 {
        for page in 0..3 {
            seed(&mut setup, &format!("gemini://c{capsule}.test/p{page}.gmi"));
        }
    }
    assert_eq!(Frontier::url_count(&setup).unwrap(), 90);
    let handles: Vec<_> = (0..3)
        .map(|_| {
            let url = url.clone();
            std::thread::spawn(move || {
                let store = PgStore::connect(&url, lease, true).expect("connect");
                let mut frontier = store.frontier().unwrap();
                let mut mine = Vec::new();
                loop {
                    let (urls, _) = frontier.claim_capsules(2, 8, 1, &|_| true).unwrap();
                    if urls.is_empty() {
                        break;
                    }
                    mine.extend(urls.into_iter().map(|u| (u.host.clone(), u.url)));
                }
                (store.crawler().to_string(), mine)
            })
        })
        .collect();
    let mut by_capsule: std::collections::HashMap<String, String> = Default::default();
    let mut urls = Vec::new();
    let mut busy = 0;
    for handle in handles {
        let (crawler, mine) = handle.join().unwrap();
        busy += usize::from(!mine.is_empty());
        for (capsule, url) in mine {
            let holder = by_capsule.entry(capsule.clone()).or_insert(crawler.clone());
            assert_eq!(holder, &crawler, "{capsule} leased by two crawlers");
            urls.push(url);
        }
    }
    urls.sort();
    let claimed = urls.len();
    urls.dedup();
    assert_eq!(urls.len(), claimed, "a URL was claimed twice");
    assert_eq!(claimed, 90, "every due URL was claimed");
    assert_eq!(by_capsule.len(), 30);
    eprintln!("{busy} of 3 crawlers got work");
}

/// A crawler that dies keeps its capsules until its lease runs out; then another crawler takes
/// them over, with the URLs it had claimed, and nothing it had visited is claimed again.
#[test]
fn a_dead_crawlers_capsules_are_taken_over_when_its_lease_runs_out() {
    let Some(cluster) = Cluster::start("a_dead_crawlers_capsules_are_taken_over") else {
        return;
    };
    let url = cluster.database("takeover");
    let short = Duration::from_secs(2);
    let dead = PgStore::connect(&url, short, true).unwrap();
    let mut dying = dead.frontier().unwrap();
    for page in 0..4 {
        seed(&mut dying, &format!("gemini://a.test/{page}"));
    }
    let (claimed, _) = dying.claim_capsules(4, 2, 1, &|_| true).unwrap();
    assert_eq!(claimed.len(), 2, "two of a.test's four URLs");
    // It visits one of them, then dies without letting anything go.
    {
        let mut batch = Frontier::batch(&mut dying, 1).unwrap();
        visit(&mut *batch, claimed[0].id, 1);
        batch.commit().unwrap();
    }
    std::mem::forget(dying);

    let other = PgStore::connect(&url, Duration::from_secs(300), true).unwrap();
    let mut heir = other.frontier().unwrap();
    // Addresses too: the dead crawler's lease on one holds until it runs out.
    let mut dying_again = dead.frontier().unwrap();
    assert!(dying_again.lease_address("127.0.1.3").unwrap());
    assert!(
        dying_again.lease_address("127.0.1.3").unwrap(),
        "renewed by its holder"
    );
    assert!(
        !heir.lease_address("127.0.1.3").unwrap(),
        "held by another crawler"
    );
    std::mem::forget(dying_again);
    let (none, _) = heir.claim_capsules(4, 8, 1, &|_| true).unwrap();
    assert!(
        none.is_empty(),
        "a.test is leased by a crawler whose lease still runs"
    );
    assert!(
        heir.next_wakeup(1).unwrap().is_some(),
        "work leased by another crawler keeps this one waiting, not ending"
    );
    std::thread::sleep(Duration::from_secs(4));
    assert!(
        heir.lease_address("127.0.1.3").unwrap(),
        "its lease ran out"
    );
    let (taken, _) = heir.claim_capsules(4, 8, 1, &|_| true).unwrap();
    let mut got: Vec<String> = taken.iter().map(|u| u.url.clone()).collect();
    got.sort();
    let expected: Vec<String> = (0..4)
        .map(|page| format!("gemini://a.test/{page}"))
        .filter(|u| *u != claimed[0].url)
        .collect();
    assert_eq!(
        got, expected,
        "the three URLs not visited, the dead crawler's other claim included"
    );
    let mut batch = Frontier::batch(&mut heir, 2).unwrap();
    for url in &taken {
        visit(&mut *batch, url.id, 1);
    }
    batch.commit().unwrap();
    heir.end_run().unwrap();
    assert_eq!(
        heir.next_wakeup(1).unwrap(),
        Some(86_401),
        "all four visited, the dead crawler's visit mark let go: only the revisits are left"
    );
}

/// What a crawl writes reads back the same through the trait: visits, links and anchors,
/// robots.txt, certificate pins, the archive, stats, backlinks and the link graph.
#[test]
fn the_postgres_store_keeps_what_a_crawl_records() {
    let Some(cluster) = Cluster::start("the_postgres_store_keeps_what_a_crawl_records") else {
        return;
    };
    let url = cluster.database("records");
    let store = PgStore::connect(&url, Duration::from_secs(300), true).unwrap();
    let mut f: Box<dyn Frontier> = Box::new(store.frontier().unwrap());
    seed(&mut *f, "gemini://a.test/");
    let (claimed, _) = f.claim_capsules(1, 8, 1, &|_| true).unwrap();
    assert_eq!(claimed.len(), 1);
    let root = &claimed[0];
    let mut b = f.batch(1).unwrap();
    let host = b.host_id("a.test").unwrap();
    assert_eq!(host, root.host_id);
    b.set_robots(host, 20, Some("User-agent: *\nDisallow: /private/\n"), 1)
        .unwrap();
    assert_eq!(
        b.pin_certificate(host, "aa", 1).unwrap(),
        geode::frontier::Pin::First
    );
    assert_eq!(
        b.pin_certificate(host, "bb", 2).unwrap(),
        geode::frontier::Pin::Changed {
            previous: "aa".into()
        }
    );
    let links = [geode::frontier::LinkOut {
        url: "gemini://b.test/".into(),
        host: "b.test".into(),
        label: "Bee".into(),
        excluded: None,
        prio: Priority::Fresh,
    }];
    let report = b.set_links(root.id, 0, &links, 100).unwrap();
    assert_eq!(report.added, 1);
    visit(&mut *b, root.id, 1);
    let zstd = geode::frontier::archive::compress(b"# Hello\n");
    b.archive(
        root.id,
        &geode::frontier::ArchiveRecord {
            status: 20,
            meta: "text/gemini",
            fetched_at: 1,
            cert_sha256: Some("bb"),
            body: Some(geode::frontier::ArchivedBody {
                hash: "h1",
                size: 8,
                zstd: &zstd,
            }),
        },
    )
    .unwrap();
    b.commit().unwrap();
    let robots = f.robots(host).unwrap().expect("robots cached");
    assert_eq!(robots.status, 20);
    assert!(robots.text.unwrap().contains("/private/"));
    assert_eq!(
        f.archived(root.id).unwrap().unwrap().body.as_deref(),
        Some(&b"# Hello\n"[..])
    );
    let stats = f.stats(1).unwrap();
    assert_eq!(stats.urls_known, 2);
    assert_eq!(stats.certificate_changes, 1);
    assert_eq!(stats.archive.bodies, 1);
    let backlinks = f.backlinks("gemini://b.test/").unwrap();
    assert_eq!(backlinks.len(), 1);
    assert_eq!(backlinks[0].url, "gemini://a.test/");
    assert_eq!(backlinks[0].label, "Bee");
    let b_id = f.url_id("gemini://b.test/").unwrap().unwrap();
    assert_eq!(f.inbound_labels(b_id, 10).unwrap(), ["Bee"]);
    assert_eq!(
        f.suggest_seed("gemini://c.test/", "c.test", "cli", 2)
            .unwrap(),
        geode::frontier::Suggested::New
    );
    f.end_run().unwrap();
}

/// A read-only open of a database without a crawl says so.
#[test]
fn reading_an_empty_database_says_to_crawl_first() {
    let Some(cluster) = Cluster::start("reading_an_empty_database_says_to_crawl_first") else {
        return;
    };
    let url = cluster.database("empty");
    let err = PgStore::connect(&url, Duration::from_secs(300), false).unwrap_err();
    assert!(err.to_string().contains("no crawl"), "{err}");
}

/// Issue 18: three `geode crawl --frontier` processes share the crawl of the fixture
/// geminispace, and one is killed (SIGKILL) midway. The two left finish its work once its
/// leases run out, and `geode index` writes one index from what they recorded. That index
/// holds every page a single SQLite crawl indexes, each once; no URL was fetched twice except
/// by the killed crawler's unrecorded work; and no IP address ever had two connections at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_crawlers_share_a_crawl_and_survive_one_killed() {
    use crate::support::{self, Space};
    use std::collections::BTreeMap;
    use std::process::Stdio;

    let Some(cluster) = Cluster::start("three_crawlers_share_a_crawl_and_survive_one_killed")
    else {
        return;
    };
    let url = cluster.database("crawl3");
    let space = Space::start().await;
    let dirs = tempfile::tempdir().unwrap();
    let crawler = |n: usize| {
        std::process::Command::new(support::geode_bin())
            .arg("crawl")
            .arg("--data")
            .arg(dirs.path().join(format!("crawler{n}")))
            .args(["--frontier", &url, "--lease", "3s", "--min-delay-ms", "250"])
            .args(["--seed", "gemini://alpha.test/", "--json"])
            .args(space.resolve_args())
            .env("GEODE_LOG", "geode=info")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("geode crawl starts")
    };
    // Crawler 1 starts first and leases the capsules; the two others join it while it works,
    // and it is killed while it holds them.
    let victim = crawler(1);
    let started = std::time::Instant::now();
    while space.requests().len() < 6 {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the crawl started"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut crawlers = vec![crawler(0), victim, crawler(2)];
    tokio::time::sleep(Duration::from_millis(500)).await;
    let before_kill = space.requests();
    crawlers[1].kill().expect("SIGKILL");
    let _ = crawlers[1].wait();
    let killed_at = before_kill
        .iter()
        .map(|r| r.accepted)
        .max()
        .expect("requests before the kill");
    eprintln!("killed crawler 1 after {} requests", before_kill.len());
    let mut survivors_fetched = 0;
    for (n, child) in crawlers.into_iter().enumerate() {
        if n == 1 {
            continue;
        }
        let out = tokio::task::spawn_blocking(move || child.wait_with_output())
            .await
            .unwrap()
            .unwrap();
        assert!(
            out.status.success(),
            "crawler {n}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        survivors_fetched += summary["fetched"].as_u64().unwrap();
        eprintln!("crawler {n}: {}", String::from_utf8_lossy(&out.stdout));
    }
    let log = space.requests();
    let pages_left = log.len() - before_kill.len();
    assert!(
        survivors_fetched > 0 && pages_left > 0,
        "the killed crawler's capsules were finished by the others"
    );

    let index_dir = dirs.path().join("index");
    let out = std::process::Command::new(support::geode_bin())
        .args(["index", "--frontier", &url, "--data"])
        .arg(&index_dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "geode index: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("{}", String::from_utf8_lossy(&out.stdout));

    // What one crawler alone indexes, on SQLite.
    let reference = dirs.path().join("reference");
    support::crawl(support::config(&space, &reference, Duration::ZERO)).await;
    let expected = support::indexed(&reference);
    assert!(expected.len() > 20, "the fixture has pages to index");

    let store = PgStore::connect(&url, Duration::from_secs(300), false).unwrap();
    let shared = store.frontier().unwrap();
    assert_eq!(
        Frontier::indexed_urls(&shared).unwrap(),
        expected,
        "the shared crawl indexed what one crawler indexes"
    );
    assert!(Frontier::pending_index_ops(&shared, 0, 10)
        .unwrap()
        .is_empty());
    let index = geode::index::SearchIndex::open(&geode::datadir::index_path(&index_dir)).unwrap();
    assert_eq!(
        index.num_docs(),
        expected.len() as u64,
        "every page is in the index once"
    );

    // The index writer computed link authority from the shared link graph, as a crawl does.
    let authority =
        geode::index::authority::Authority::load(&geode::datadir::index_path(&index_dir)).unwrap();
    assert_eq!(
        authority.len(),
        expected.len(),
        "a score for every indexed page"
    );

    // The read-only commands read the shared store, and search reads the written index.
    let stats = std::process::Command::new(support::geode_bin())
        .args(["stats", "--json", "--frontier", &url, "--data"])
        .arg(&index_dir)
        .output()
        .unwrap();
    assert!(
        stats.status.success(),
        "{}",
        String::from_utf8_lossy(&stats.stderr)
    );
    let stats: serde_json::Value = serde_json::from_slice(&stats.stdout).unwrap();
    assert_eq!(stats["pages_indexed"], expected.len());
    assert_eq!(stats["index_documents"], expected.len());
    let backlinks = std::process::Command::new(support::geode_bin())
        .args([
            "backlinks",
            "--frontier",
            &url,
            "gemini://alpha.test/gemlog/",
        ])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&backlinks.stdout).contains("gemini://alpha.test/"),
        "{}",
        String::from_utf8_lossy(&backlinks.stderr)
    );
    let show = std::process::Command::new(support::geode_bin())
        .args(["show", "--json", "--frontier", &url, "gemini://alpha.test/"])
        .output()
        .unwrap();
    let show: serde_json::Value = serde_json::from_slice(&show.stdout).unwrap();
    assert_eq!(show["details"]["in_index"], true, "{show}");
    let warc = std::process::Command::new(support::geode_bin())
        .args(["export", "--warc", "-", "--frontier", &url])
        .output()
        .unwrap();
    assert!(
        warc.status.success(),
        "{}",
        String::from_utf8_lossy(&warc.stderr)
    );
    let mut text = String::new();
    std::io::Read::read_to_string(
        &mut flate2::read::MultiGzDecoder::new(&warc.stdout[..]),
        &mut text,
    )
    .unwrap();
    assert!(
        text.contains("WARC-Target-URI: gemini://alpha.test/gemlog/"),
        "the export holds the shared crawl's archive"
    );

    // `geode serve --frontier`'s readers: statistics and backlinks from the shared store, the
    // index from the data directory.
    let backend = geode::serve::backend::Backend::new(&index_dir, Some(store.clone()));
    let snapshot = backend.snapshot(geode::clock::unix_now()).unwrap();
    assert_eq!(
        snapshot.stats.as_ref().unwrap().pages_indexed,
        expected.len() as u64
    );
    assert_eq!(snapshot.documents, expected.len() as u64);
    let links = backend
        .backlinks("gemini://alpha.test/gemlog/")
        .unwrap()
        .unwrap();
    assert!(links.known && links.links.iter().any(|l| l.url == "gemini://alpha.test/"));
    let search = std::process::Command::new(support::geode_bin())
        .args(["search", "--data"])
        .arg(&index_dir)
        .arg("gemlog")
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&search.stdout).contains("gemini://alpha.test/gemlog/"));

    // No URL fetched twice, but what the killed crawler had fetched and not yet recorded:
    // such a URL's first fetch started before the kill. Each crawler reads a capsule's
    // robots.txt itself before its first request to it.
    let mut fetches: BTreeMap<&str, Vec<Duration>> = BTreeMap::new();
    for r in &log {
        fetches
            .entry(r.request.as_str())
            .or_default()
            .push(r.accepted);
    }
    let mut refetched = 0;
    for (request, times) in &fetches {
        if request.ends_with("/robots.txt") || times.len() < 2 {
            continue;
        }
        refetched += 1;
        assert_eq!(times.len(), 2, "{request} fetched {} times", times.len());
        assert!(
            times.iter().min().unwrap() <= &killed_at,
            "{request} fetched twice, first after the kill"
        );
    }
    eprintln!("{refetched} URLs fetched again after the kill");
    support::assert_polite(&log, Duration::ZERO);

    // Seeds go to the shared crawl too.
    let seed = |args: &[&str]| {
        let out = std::process::Command::new(support::geode_bin())
            .arg("seed")
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let added = seed(&["add", "--frontier", &url, "gemini://epsilon.test/"]);
    assert!(added.contains("added"), "{added}");
    let listed = seed(&["list", "--frontier", &url]);
    assert!(
        listed.contains("gemini://epsilon.test/  waiting for a crawl"),
        "{listed}"
    );
}
