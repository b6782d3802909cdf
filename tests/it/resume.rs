//! Stopping a crawl and starting it again: with --max-pages, and with kill -9 in the middle of
//! index commits. The resumed crawl must end with the same index as an uninterrupted one, and
//! must not fetch again what was already indexed and committed.

use std::collections::BTreeSet;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use geode::crawl::StopReason;
use geode::index::SearchIndex;

use crate::crawl::EXPECTED_INDEXED;
use crate::support::{self, Space};

fn expected() -> Vec<String> {
    EXPECTED_INDEXED.iter().map(|s| s.to_string()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crawl_stopped_by_max_pages_continues_where_it_was() {
    let space = Space::start().await;
    let data = tempfile::tempdir().unwrap();
    let mut config = support::config(&space, data.path(), Duration::from_millis(5));
    config.max_pages = Some(6);
    let first = support::crawl(config.clone()).await;
    assert_eq!(first.ended, StopReason::MaxPages);
    assert_eq!(first.fetched, 6);
    let after_first = support::indexed(data.path());
    assert!(!after_first.is_empty() && after_first.len() <= 6);
    let requests_before = space.requests().len();

    config.max_pages = None;
    let second = support::crawl(config).await;
    assert_eq!(second.ended, StopReason::Done);
    assert_eq!(support::indexed(data.path()), expected());
    let index = SearchIndex::open(&geode::datadir::index_path(data.path())).unwrap();
    assert_eq!(index.num_docs() as usize, expected().len());

    let refetched: Vec<String> = space.requests()[requests_before..]
        .iter()
        .map(|r| r.request.clone())
        .filter(|u| after_first.contains(u))
        .collect();
    assert!(
        refetched.is_empty(),
        "indexed pages fetched again: {refetched:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crawl_killed_with_sigkill_resumes_to_the_same_index() {
    let space = Space::start().await;
    let data = tempfile::tempdir().unwrap();
    let dir = data.path().to_path_buf();
    let mut args: Vec<String> = vec![
        "crawl".into(),
        "--data".into(),
        dir.display().to_string(),
        "--seed".into(),
        "gemini://alpha.test/".into(),
        "--min-delay-ms".into(),
        "60".into(),
        "--commit-docs".into(),
        "2".into(),
        "--commit-secs".into(),
        "1".into(),
    ];
    args.extend(space.resolve_args());

    // First run: kill -9 once a few commits have landed, with more pages still to come.
    let killed_args = args.clone();
    let at_kill = tokio::task::spawn_blocking(move || {
        let mut child = Command::new(support::geode_bin())
            .args(&killed_args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        let db = geode::datadir::database_path(&dir);
        loop {
            std::thread::sleep(Duration::from_millis(20));
            let indexed = if db.exists() {
                // Pages the index holds: committed.
                geode::frontier::Location::Sqlite(db.clone())
                    .open_read_only()
                    .and_then(|f| f.indexed_urls())
                    .unwrap_or_default()
            } else {
                Vec::new()
            };
            if indexed.len() >= 6 || Instant::now() > deadline {
                child.kill().unwrap();
                child.wait().unwrap();
                return indexed;
            }
            assert!(
                child.try_wait().unwrap().is_none(),
                "the crawl ended before it was killed"
            );
        }
    })
    .await
    .unwrap();
    assert!(
        at_kill.len() >= 6,
        "the crawl made progress before the kill"
    );
    assert!(
        at_kill.len() < expected().len(),
        "the kill came before the end"
    );
    let requests_before = space.requests().len();

    // Second run: to the end.
    let status = tokio::task::spawn_blocking(move || {
        Command::new(support::geode_bin())
            .args(&args)
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert!(
        status.status.success(),
        "the resumed crawl failed: {}",
        String::from_utf8_lossy(&status.stderr)
    );

    assert_eq!(support::indexed(data.path()), expected());
    let index = SearchIndex::open(&geode::datadir::index_path(data.path())).unwrap();
    assert_eq!(
        index.num_docs() as usize,
        expected().len(),
        "no duplicate documents"
    );
    let at_kill: BTreeSet<String> = at_kill.into_iter().collect();
    let refetched: Vec<String> = space.requests()[requests_before..]
        .iter()
        .map(|r| r.request.clone())
        .filter(|u| at_kill.contains(u))
        .collect();
    assert!(
        refetched.is_empty(),
        "committed pages fetched again: {refetched:?}"
    );
}
