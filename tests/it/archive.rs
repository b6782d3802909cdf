//! The crawl archive (issue 15): `geode reindex` rebuilds the same index without the network,
//! `geode show --raw` gives back the bytes the server sent, `geode export --warc` writes a file
//! a WARC reader reads, and kill -9 during a crawl or a reindex leaves both usable.

use std::net::SocketAddr;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use geode_fixture::{FixtureConfig, FixtureServer};

use crate::support::{self, Space};

fn geode(args: &[&str]) -> Output {
    Command::new(support::geode_bin())
        .args(args)
        .output()
        .unwrap()
}

/// URLs and total of a search, as `geode search --json` prints them.
pub(crate) fn results(dir: &str, query: &str) -> (u64, Vec<String>) {
    let out = geode(&["search", "--data", dir, "--json", "--limit", "50", query]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let urls = doc["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["url"].as_str().unwrap().to_string())
        .collect();
    (doc["total"].as_u64().unwrap(), urls)
}

const QUERIES: &[&str] = &[
    "barnacle choir",
    "kettle",
    "\"borrow checker\"",
    "lighthouse",
    "site:beta.test",
    "mime:image",
    "the",
];

async fn crawl_space(space: &Space, dir: &str) {
    let mut args: Vec<String> = ["crawl", "--data", dir, "--seed", "gemini://alpha.test/"]
        .iter()
        .map(|s| s.to_string())
        .chain(["--min-delay-ms".to_string(), "5".to_string()])
        .collect();
    args.extend(space.resolve_args());
    let out = tokio::task::spawn_blocking(move || {
        Command::new(support::geode_bin())
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
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reindex_rebuilds_the_same_index_show_and_export_read_the_archive() {
    let space = Space::start().await;
    let data = tempfile::tempdir().unwrap();
    let dir = data.path().display().to_string();
    crawl_space(&space, &dir).await;
    let before: Vec<(u64, Vec<String>)> = QUERIES.iter().map(|q| results(&dir, q)).collect();
    assert!(before.iter().all(|(total, _)| *total > 0), "{before:?}");
    let requests = space.requests().len();

    // Rebuild from nothing but the archive and the crawl database.
    std::fs::remove_dir_all(data.path().join("tantivy")).unwrap();
    let out = geode(&["reindex", "--data", &dir, "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["pages"], 31, "{summary}");
    assert_eq!(summary["missing"], 0, "{summary}");
    let after: Vec<(u64, Vec<String>)> = QUERIES.iter().map(|q| results(&dir, q)).collect();
    // The same results. Their order may differ a little: the crawl's index still counts, in its
    // BM25 statistics, the documents that anchor updates replaced, until segments merge; a
    // rebuilt index starts clean.
    let sorted = |r: &[(u64, Vec<String>)]| -> Vec<(u64, Vec<String>)> {
        r.iter()
            .map(|(t, urls)| {
                let mut urls = urls.clone();
                urls.sort();
                (*t, urls)
            })
            .collect()
    };
    assert_eq!(sorted(&before), sorted(&after));
    assert_eq!(space.requests().len(), requests, "no network");
    assert_eq!(summary["commits"], 1, "{summary}");
    // A second rebuild over a live index swaps it in place, and ranks exactly as the first,
    // committing every ten documents (near-duplicates then found among committed ones).
    let out = geode(&["reindex", "--data", &dir, "--commit-docs", "10", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["pages"], 31, "{summary}");
    assert_eq!(summary["commits"], 4, "{summary}");
    assert_eq!(
        QUERIES.iter().map(|q| results(&dir, q)).collect::<Vec<_>>(),
        after
    );
    assert!(!data.path().join("tantivy.reindex").exists());

    // show --raw: exactly the bytes the server sent.
    for (url, file) in [
        ("gemini://alpha.test/about.gmi", "alpha.test/about.gmi"),
        ("gemini://gamma.test/", "gamma.test/index.gmi"),
    ] {
        let out = geode(&["show", "--data", &dir, "--raw", url]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let sent = std::fs::read(support::fixture_root().join(file)).unwrap();
        assert_eq!(out.stdout, sent, "{url}");
    }
    // show: the indexed text, art left out; links both ways; the schedule.
    let out = geode(&["show", "--data", &dir, "--json", "gemini://alpha.test/"]);
    let shown: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let text = shown["text"].as_str().unwrap();
    assert!(text.contains("quietly stubborn kettle"), "{text}");
    assert!(!text.contains("|__"), "the banner is art: {text}");
    assert_eq!(shown["details"]["state"], "indexed");
    assert!(
        shown["details"]["due_at"].as_i64().unwrap()
            > shown["details"]["fetched_at"].as_i64().unwrap()
    );
    assert!(shown["details"]["links_out"].as_array().unwrap().len() > 3);
    assert_eq!(shown["response"]["status"], 20);
    let out = geode(&["show", "--data", &dir, "gemini://alpha.test/about.gmi"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("links in") && text.contains("gemini://alpha.test/"),
        "{text}"
    );
    assert!(text.contains("cartographer of drainpipes"), "{text}");
    let missing = geode(&["show", "--data", &dir, "gemini://nowhere.test/"]);
    assert_eq!(missing.status.code(), Some(1));

    // export: a WARC reader reads one response record per archived URL.
    let warc = data.path().join("crawl.warc.gz");
    let out = geode(&[
        "export",
        "--data",
        &dir,
        "--warc",
        &warc.display().to_string(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let archived = geode::frontier::Location::data_dir(data.path())
        .open_read_only()
        .unwrap()
        .archive_stats()
        .unwrap()
        .responses;
    assert!(
        archived > 31,
        "{archived} responses (pages, redirects, 51s)"
    );
    let script = r#"
import sys
from warcio.archiveiterator import ArchiveIterator
n, about = 0, None
with open(sys.argv[1], 'rb') as f:
    for record in ArchiveIterator(f):
        if record.rec_type == 'response':
            n += 1
            uri = record.rec_headers.get_header('WARC-Target-URI')
            assert record.rec_headers.get_header('WARC-Date')
            assert record.rec_headers.get_header('WARC-Payload-Digest').startswith('sha1:')
            if uri == 'gemini://alpha.test/about.gmi':
                about = record.content_stream().read()
print(n)
sys.stdout.buffer.write(about)
"#;
    let python = Command::new("python3")
        .args(["-c", "import warcio"])
        .output();
    if !python.is_ok_and(|o| o.status.success()) {
        eprintln!("SKIPPED: the WARC read-back needs warcio (pip install warcio)");
        return;
    }
    let read = Command::new("python3")
        .args(["-c", script, &warc.display().to_string()])
        .output()
        .unwrap();
    assert!(
        read.status.success(),
        "{}",
        String::from_utf8_lossy(&read.stderr)
    );
    let (count, about) = read
        .stdout
        .split_at(read.stdout.iter().position(|&b| b == b'\n').unwrap() + 1);
    assert_eq!(String::from_utf8_lossy(count).trim(), archived.to_string());
    let mut expected = b"20 text/gemini\r\n".to_vec();
    expected.extend(std::fs::read(support::fixture_root().join("alpha.test/about.gmi")).unwrap());
    assert_eq!(about, expected.as_slice());
}

/// Writes `capsules` capsules of `pages` generated pages each, linked from their home pages.
fn many_pages(root: &Path, capsules: usize, pages: usize) {
    for c in 0..capsules {
        let dir = root.join(format!("c{c}.test"));
        std::fs::create_dir_all(&dir).unwrap();
        let mut home = format!("# Capsule {c}\n\n");
        for p in 0..pages {
            home.push_str(&format!("=> /p/{p} Page {p}\n"));
        }
        std::fs::write(dir.join("index.gmi"), home).unwrap();
        std::fs::write(
            dir.join("page.gmi"),
            format!(
                "# Page {{path}} of capsule {c}\n\nWords of page {{path}} in capsule number {c}.\n"
            ),
        )
        .unwrap();
        std::fs::write(dir.join("routes.conf"), "/p/* template page.gmi\n").unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_during_a_crawl_and_during_a_reindex_leaves_archive_and_index_usable() {
    let root = tempfile::tempdir().unwrap();
    many_pages(root.path(), 6, 250);
    let listen: Vec<SocketAddr> = (1..=6)
        .map(|i| format!("127.0.7.{i}:0").parse().unwrap())
        .collect();
    let server = FixtureServer::start(FixtureConfig {
        root: root.path().to_path_buf(),
        listen,
    })
    .await
    .unwrap();
    let data = tempfile::tempdir().unwrap();
    let dir = data.path().display().to_string();
    let mut args: Vec<String> = [
        "crawl",
        "--data",
        &dir,
        "--min-delay-ms",
        "0",
        "--commit-docs",
        "50",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for (c, addr) in server.addrs.iter().enumerate() {
        args.extend([
            "--seed".to_string(),
            format!("gemini://c{c}.test/"),
            "--resolve".to_string(),
            format!("c{c}.test={addr}"),
        ]);
    }
    // kill -9 in the middle of the crawl, then the crawl to its end.
    let mut child = Command::new(support::geode_bin())
        .args(&args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while server.requests().len() < 400 {
        assert!(Instant::now() < deadline && child.try_wait().unwrap().is_none());
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let out = tokio::task::spawn_blocking({
        let args = args.clone();
        move || {
            Command::new(support::geode_bin())
                .args(&args)
                .output()
                .unwrap()
        }
    })
    .await
    .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let pages = 6 * 251;
    let count = |q: &str| results(&dir, q).0;
    assert_eq!(count("words"), pages as u64 - 6, "every generated page");
    assert_eq!(support::indexed(data.path()).len(), pages);

    // kill -9 in the middle of a reindex: the live index is untouched and answers.
    let mut child = Command::new(support::geode_bin())
        .args(["reindex", "--data", &dir])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let building = data.path().join("tantivy.reindex");
    let deadline = Instant::now() + Duration::from_secs(30);
    while !building.exists() {
        assert!(Instant::now() < deadline, "the reindex never started");
        if child.try_wait().unwrap().is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    tokio::time::sleep(Duration::from_millis(30)).await;
    assert!(
        child.try_wait().unwrap().is_none(),
        "the kill comes before the reindex ends"
    );
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(
        count("words"),
        pages as u64 - 6,
        "the live index after a killed reindex"
    );
    // And a reindex run to its end gives the same index.
    let out = geode(&["reindex", "--data", &dir, "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["pages"], pages, "{summary}");
    assert_eq!(count("words"), pages as u64 - 6);
    assert_eq!(
        results(&dir, "\"page /p/7 of capsule 3\"").1,
        ["gemini://c3.test/p/7"]
    );
    server.shutdown().await;
}

/// An index from an older geode is refused by searches with the remedy, and rebuilt from the
/// archive by the next crawl, without fetching anything.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outdated_index_is_rebuilt_by_the_next_crawl() {
    let space = Space::start().await;
    let data = tempfile::tempdir().unwrap();
    let dir = data.path().display().to_string();
    crawl_space(&space, &dir).await;
    let before = results(&dir, "kettle");
    // What an older geode left: its schema marker.
    let marker = data.path().join("tantivy/geode-schema");
    let current: u32 = std::fs::read_to_string(&marker)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    std::fs::write(&marker, format!("{}\n", current - 1)).unwrap();
    let refused = geode(&["search", "--data", &dir, "kettle"]);
    assert_eq!(refused.status.code(), Some(1));
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(
        err.contains("older geode") && err.contains("geode reindex --data"),
        "{err}"
    );
    let requests = space.requests().len();
    crawl_space(&space, &dir).await;
    assert_eq!(
        space.requests().len(),
        requests,
        "nothing was due, nothing fetched"
    );
    assert_eq!(results(&dir, "kettle"), before);
    assert_eq!(
        std::fs::read_to_string(&marker).unwrap().trim(),
        current.to_string()
    );
}

/// Runs `geode ARGS` with its standard output a pipe whose reader has already gone (as in
/// `geode stats | head` once head has its lines).
fn geode_into_closed_pipe(args: &[&str]) -> Output {
    let mut fds = [0; 2];
    // SAFETY: pipe writes two new descriptors into the array it is given.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    // SAFETY: both descriptors were just made by pipe and are owned here alone.
    let (reader, writer) = unsafe {
        use std::os::fd::FromRawFd;
        (
            std::os::fd::OwnedFd::from_raw_fd(fds[0]),
            std::os::fd::OwnedFd::from_raw_fd(fds[1]),
        )
    };
    drop(reader);
    Command::new(support::geode_bin())
        .args(args)
        .stdout(Stdio::from(writer))
        .stderr(Stdio::piped())
        .output()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_command_ends_quietly_when_its_reader_goes_away() {
    let space = Space::start().await;
    let data = tempfile::tempdir().unwrap();
    let dir = data.path().display().to_string();
    crawl_space(&space, &dir).await;
    let commands: &[&[&str]] = &[
        &["search", "--data", &dir, "the"],
        &["search", "--data", &dir, "--json", "the"],
        &["stats", "--data", &dir],
        &["stats", "--data", &dir, "--json"],
        &["show", "--data", &dir, "gemini://alpha.test/"],
        &["show", "--data", &dir, "--json", "gemini://alpha.test/"],
        &["show", "--data", &dir, "--raw", "gemini://alpha.test/"],
        &["export", "--data", &dir, "--warc", "-"],
        &["backlinks", "--data", &dir, "gemini://alpha.test/"],
    ];
    for args in commands {
        // The same command into a reader that stays has something to say.
        let full = geode(args);
        assert!(full.status.success(), "{args:?}: {full:?}");
        assert!(!full.stdout.is_empty(), "{args:?} printed nothing");
        let out = geode_into_closed_pipe(args);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            out.stderr.is_empty(),
            "{args:?} said: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// The first ten hits of a search: URL and score.
fn top_ten(dir: &str, query: &str) -> Vec<(String, f64)> {
    let out = geode(&["search", "--data", dir, "--json", "--limit", "10", query]);
    assert!(out.status.success(), "{out:?}");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    doc["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            (
                h["url"].as_str().unwrap().to_string(),
                h["score"].as_f64().unwrap(),
            )
        })
        .collect()
}

/// Issue 40: a data directory whose index was lost, rebuilt by `geode reindex`, ranks as the
/// crawl's index did: every page's link authority the same, every query's first ten the same
/// pages in the same order (pages of equal score in either order), with the same scores.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reindex_of_a_lost_index_ranks_as_the_crawl_did() {
    let space = Space::start().await;
    let data = tempfile::tempdir().unwrap();
    let dir = data.path().display().to_string();
    crawl_space(&space, &dir).await;
    let index_dir = geode::datadir::index_path(data.path());
    let pages = support::indexed(data.path());
    let authority_of = || {
        let table = geode::index::authority::Authority::load(&index_dir).unwrap();
        pages
            .iter()
            .map(|u| table.get(geode::index::authority::url_hash(u)))
            .collect::<Vec<f32>>()
    };
    let crawled_authority = authority_of();
    assert!(
        crawled_authority.iter().any(|&a| a > 0.0),
        "the crawl computed authority: {crawled_authority:?}"
    );
    let queries: Vec<&str> = QUERIES
        .iter()
        .copied()
        .chain(["capsule", "gemini", "notes", "about", "lighthouse keeper"])
        .collect();
    let crawled: Vec<_> = queries.iter().map(|q| top_ten(&dir, q)).collect();

    std::fs::remove_dir_all(&index_dir).unwrap();
    let out = geode(&["reindex", "--data", &dir]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(authority_of(), crawled_authority, "authority per page");
    for (query, crawled) in queries.iter().zip(&crawled) {
        let rebuilt = top_ten(&dir, query);
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-4 * a.abs().max(b.abs()).max(1.0);
        assert_eq!(
            rebuilt.len(),
            crawled.len(),
            "{query}: {rebuilt:?} {crawled:?}"
        );
        for (i, ((url, score), (was_url, was_score))) in rebuilt.iter().zip(crawled).enumerate() {
            assert!(
                close(*score, *was_score),
                "{query} #{i}: {rebuilt:?}\n{crawled:?}"
            );
            // Equal ranks: the same page, or one of the same score (ties fall either way).
            let tied = crawled
                .iter()
                .any(|(u, s)| u == url && close(*s, *was_score));
            assert!(
                url == was_url || tied,
                "{query} #{i}: {rebuilt:?}\n{crawled:?}"
            );
        }
    }
}
