//! Shared test helpers: a fixture geminispace on loopback and ways to crawl and inspect it.

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::Duration;

use geode::crawl::{self, CrawlConfig, CrawlSummary};
use geode::fetch::dns::{Overrides, Target};
use geode::frontier::UrlState;
use geode_fixture::{FixtureConfig, FixtureServer, RequestRecord};

/// The fixture capsules and the loopback address each is served on. gamma and delta share an
/// address, as virtual hosts on one machine do.
pub const HOSTS: &[(&str, &str)] = &[
    ("alpha.test", "127.0.1.1"),
    ("beta.test", "127.0.1.2"),
    ("gamma.test", "127.0.1.3"),
    ("delta.test", "127.0.1.3"),
];

pub fn fixture_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("capsules-fixture")
}

/// A fixture server listening on every address of [`HOSTS`] (port 0) and the overrides that
/// send each host to its address.
pub struct Space {
    pub server: FixtureServer,
    pub resolve: Vec<(String, SocketAddr)>,
}

impl Space {
    pub async fn start() -> Space {
        let mut ips: Vec<IpAddr> = HOSTS.iter().map(|(_, ip)| ip.parse().unwrap()).collect();
        ips.dedup();
        let listen = ips.iter().map(|ip| SocketAddr::new(*ip, 0)).collect();
        let server = FixtureServer::start(FixtureConfig {
            root: fixture_root(),
            listen,
        })
        .await
        .expect("fixture server starts");
        let by_ip: BTreeMap<IpAddr, SocketAddr> =
            server.addrs.iter().map(|a| (a.ip(), *a)).collect();
        let resolve = HOSTS
            .iter()
            .map(|(host, ip)| (host.to_string(), by_ip[&ip.parse::<IpAddr>().unwrap()]))
            .collect();
        Space { server, resolve }
    }

    pub fn overrides(&self) -> Overrides {
        Overrides::new(self.resolve.iter().map(|(h, a)| {
            (
                h.clone(),
                Target {
                    ip: a.ip(),
                    port: Some(a.port()),
                },
            )
        }))
    }

    /// `--resolve` arguments for the binary.
    pub fn resolve_args(&self) -> Vec<String> {
        self.resolve
            .iter()
            .flat_map(|(h, a)| ["--resolve".to_string(), format!("{h}={a}")])
            .collect()
    }

    pub fn requests(&self) -> Vec<RequestRecord> {
        self.server.requests()
    }

    /// The server's clock now, as the log's `accepted` and `closed` count it.
    pub fn elapsed(&self) -> Duration {
        self.server.elapsed()
    }
}

/// A crawl config over the space, seeded at alpha's home page.
pub fn config(space: &Space, data: &Path, min_delay: Duration) -> CrawlConfig {
    let mut config = CrawlConfig::new(data);
    config.seeds = vec![geode::urlnorm::normalize("gemini://alpha.test/").unwrap()];
    config.resolve = space.overrides();
    config.min_delay = min_delay;
    config.concurrency = 16;
    config.progress_every = Duration::from_secs(60);
    config
}

pub async fn crawl(config: CrawlConfig) -> CrawlSummary {
    crawl::run(config, std::future::pending())
        .await
        .expect("crawl succeeds")
}

pub fn urls_in(data: &Path, state: UrlState) -> Vec<String> {
    geode::frontier::Location::data_dir(data)
        .open_read_only()
        .unwrap()
        .urls_in_state(state)
        .unwrap()
}

/// The URLs the index holds a document under, sorted.
pub fn indexed(data: &Path) -> Vec<String> {
    geode::frontier::Location::data_dir(data)
        .open_read_only()
        .unwrap()
        .indexed_urls()
        .unwrap()
}

/// The request path (`/x/y`) and host of a logged request line.
pub fn host_and_path(request: &str) -> Option<(String, String)> {
    let url = url::Url::parse(request).ok()?;
    Some((url.host_str()?.to_string(), url.path().to_string()))
}

/// Path of the `geode` binary built for these tests.
pub fn geode_bin() -> &'static str {
    env!("CARGO_BIN_EXE_geode")
}

/// Fails with every breach of politeness in a server log: two connections to one IP at once,
/// starts closer than `delay`, requests during a 44 wait. The server stamps times a little after
/// the crawler acts, so 8 ms of each gap are forgiven.
pub fn assert_polite(log: &[RequestRecord], delay: Duration) {
    let breaches = geode_fixture::audit::politeness_breaches(log, delay, Duration::from_millis(8));
    let listed: String = breaches.iter().map(|b| format!("{b}\n")).collect();
    assert!(breaches.is_empty(), "{listed}");
}

/// Held by tests whose assertions are about timing (politeness gaps of a few tens of
/// milliseconds) and by tests that load the machine in bursts (thousands of connections at
/// once), so that the two kinds never run side by side: on a small machine the burst delays
/// the fixture's timestamps enough to read as a breach. Other tests run beside either.
pub static TIMING: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// What one `geode` run left: exit status, output, its own peak resident set, its wall time.
pub struct Run {
    /// The wait status (0: exited with 0).
    pub status: i32,
    pub stdout: String,
    pub stderr: String,
    pub peak_rss: u64,
    pub wall: Duration,
}

/// Runs `geode ARGS` to its end, killing it after `limit`. Its peak resident set is read from
/// the kernel's high-water mark of its own memory (`VmHWM` in `/proc/PID/status`), every 10 ms
/// while it runs: the rusage of `wait4` or `RUSAGE_CHILDREN` starts from the resident set of the
/// test process that spawned it (Linux carries it over the exec), so a child started while
/// another test's fixture held 500 MB was reported at 500 MB.
pub async fn run_geode(args: Vec<String>, limit: Duration) -> Run {
    tokio::task::spawn_blocking(move || {
        let started = std::time::Instant::now();
        // Reaped by `waitpid` below, so that its status can be polled beside its memory.
        #[allow(clippy::zombie_processes)]
        let mut child = std::process::Command::new(geode_bin())
            .args(&args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("geode starts");
        let drain = |mut pipe: Box<dyn std::io::Read + Send>| {
            std::thread::spawn(move || {
                let mut bytes = Vec::new();
                let _ = pipe.read_to_end(&mut bytes);
                String::from_utf8_lossy(&bytes).into_owned()
            })
        };
        let stdout = drain(Box::new(child.stdout.take().expect("stdout")));
        let stderr = drain(Box::new(child.stderr.take().expect("stderr")));
        let pid = child.id() as libc::pid_t;
        let mut peak_rss = 0;
        let status = loop {
            peak_rss = peak_rss.max(high_water_mark(pid).unwrap_or(0));
            let mut status = 0;
            // SAFETY: waitpid writes a status into the place it is given.
            let reaped = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
            assert!(reaped >= 0, "waitpid: {}", std::io::Error::last_os_error());
            if reaped == pid {
                break status;
            }
            if started.elapsed() > limit {
                let _ = child.kill();
                let _ = child.wait();
                panic!("geode {args:?} still ran after {limit:?}");
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        Run {
            status,
            stdout: stdout.join().expect("stdout thread"),
            stderr: stderr.join().expect("stderr thread"),
            peak_rss,
            wall: started.elapsed(),
        }
    })
    .await
    .expect("runner thread")
}

/// The peak resident set of process `pid` so far, in bytes (`VmHWM`); `None` once it has exited.
fn high_water_mark(pid: libc::pid_t) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kb = status.lines().find_map(|l| l.strip_prefix("VmHWM:"))?;
    Some(
        kb.trim()
            .trim_end_matches("kB")
            .trim()
            .parse::<u64>()
            .ok()?
            * 1024,
    )
}

/// A document as an index holds it, for comparing two indexes: its stored text, the words of
/// the labels of links to it (the `anchors` field is indexed, not stored) and its link authority.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredDoc {
    pub title: String,
    pub body: String,
    pub headings: String,
    pub mime: Vec<String>,
    pub anchor_terms: std::collections::BTreeSet<String>,
    pub authority: f32,
}

/// Every document of the index in `index_dir`, by URL.
pub fn documents(index_dir: &Path) -> std::collections::BTreeMap<String, StoredDoc> {
    use tantivy::schema::Value;
    let index = tantivy::Index::open_in_dir(index_dir).unwrap();
    let schema = index.schema();
    let field = |name: &str| schema.get_field(name).unwrap();
    let text = |doc: &tantivy::TantivyDocument, name: &str| -> Vec<String> {
        doc.get_all(field(name))
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect()
    };
    let authority = geode::index::authority::Authority::load(index_dir).unwrap();
    let searcher = index.reader().unwrap().searcher();
    let mut docs = std::collections::BTreeMap::new();
    for segment in searcher.segment_readers() {
        let store = segment.get_store_reader(1).unwrap();
        let mut urls = Vec::new();
        for id in 0..segment.max_doc() {
            if segment.is_deleted(id) {
                urls.push(None);
                continue;
            }
            let doc: tantivy::TantivyDocument = store.get(id).unwrap();
            let url = text(&doc, "url").remove(0);
            docs.insert(
                url.clone(),
                StoredDoc {
                    title: text(&doc, "title").concat(),
                    body: text(&doc, "body").concat(),
                    headings: text(&doc, "headings").concat(),
                    mime: text(&doc, "mime"),
                    anchor_terms: Default::default(),
                    authority: authority.get(geode::index::authority::url_hash(&url)),
                },
            );
            urls.push(Some(url));
        }
        let anchors = segment.inverted_index(field("anchors")).unwrap();
        let mut terms = anchors.terms().stream().unwrap();
        while terms.advance() {
            let term = String::from_utf8_lossy(terms.key()).into_owned();
            let info = terms.value().clone();
            let mut postings = anchors
                .read_postings_from_terminfo(&info, tantivy::schema::IndexRecordOption::Basic)
                .unwrap();
            let mut id = tantivy::DocSet::doc(&postings);
            while id != tantivy::TERMINATED {
                if let Some(Some(url)) = urls.get(id as usize) {
                    docs.get_mut(url).unwrap().anchor_terms.insert(term.clone());
                }
                id = tantivy::DocSet::advance(&mut postings);
            }
        }
    }
    docs
}
