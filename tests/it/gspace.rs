//! Geminispace in a box (issue 39): `geode crawl`, on its default flags but a short delay,
//! over the small generated world of `geode_fixture::gspace` (60 capsules on 25 loopback
//! addresses, 3,000 legitimate pages of which 2,000 in one capsule linked from only two or
//! three others, and one capsule of each trap kind). The crawl must end by itself, find
//! nearly every legitimate page, keep out of the traps, stay small and polite, and a second
//! crawl right after must have nothing to ask.
//!
//! Every check is made and reported before the test fails, so one run shows all the numbers.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::net::IpAddr;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use geode_fixture::gspace::{loopback_addresses, Kind, LegitPage, World, WorldSpec};
use geode_fixture::FixtureServer;

use crate::support;

const SEED: u64 = 39;
/// The gap between two requests to one address: short, to keep the test short.
const MIN_DELAY: Duration = Duration::from_millis(10);
/// Share of the reachable legitimate pages that must end up searchable.
const COVERAGE: f64 = 0.98;
/// Most requests any trap capsule may receive.
const TRAP_REQUESTS: u64 = 5_000;
const PEAK_RSS: u64 = 256 * 1024 * 1024;
/// A safety net, not a flag under test: a crawl that has not ended by then is stopped
/// (`--max-duration`, so its work is kept and measured) and the test fails on `ended`.
const FIRST_CRAWL_LIMIT: &str = "240s";
const SECOND_CRAWL_LIMIT: &str = "60s";
/// Unique words searched with `geode search`: some from the large capsule, some from others.
const SEARCHED_LARGE: usize = 10;
const SEARCHED_OTHERS: usize = 20;

fn crawl_args(world: &World, server: &FixtureServer, data: &Path, limit: &str) -> Vec<String> {
    let mut args: Vec<String> = ["crawl", "--data", &data.display().to_string()]
        .iter()
        .map(|s| s.to_string())
        .collect();
    args.extend(["--min-delay-ms".into(), MIN_DELAY.as_millis().to_string()]);
    args.extend(["--max-duration".into(), limit.into(), "--json".into()]);
    for seed in world.seeds() {
        args.extend(["--seed".into(), seed]);
    }
    for (host, addr) in server.resolve() {
        args.extend(["--resolve".into(), format!("{host}={addr}")]);
    }
    args
}

/// The crawl's JSON summary (its last stdout line), or Null.
fn summary(run: &support::Run) -> serde_json::Value {
    run.stdout
        .lines()
        .last()
        .and_then(|l| serde_json::from_str(l).ok())
        .unwrap_or(serde_json::Value::Null)
}

/// The URL of the same page on each mirror of its capsule: an exact copy that geode indexes
/// once, under whichever URL it fetched first, is searchable all the same.
fn copies(world: &World, page: &LegitPage) -> Vec<String> {
    let source = &world.capsules()[page.capsule].host;
    let path = &page.url["gemini://".len() + source.len()..];
    world
        .capsules()
        .iter()
        .filter(|c| c.mirror_of == Some(page.capsule))
        .map(|m| format!("gemini://{}{path}", m.host))
        .collect()
}

/// The URLs `geode search --json --strict --all WORD` finds.
fn search(data: &Path, word: &str) -> Vec<String> {
    search_hits(data, &["--strict", "--all", "--limit", "50", word], "url")
}

/// Field `field` of each hit of `geode search --json ARGS`.
fn search_hits(data: &Path, args: &[&str], field: &str) -> Vec<String> {
    let out = Command::new(support::geode_bin())
        .args(["search", "--data", &data.display().to_string(), "--json"])
        .args(args)
        .output()
        .expect("geode search runs");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    doc["hits"]
        .as_array()
        .map(|hits| {
            hits.iter()
                .filter_map(|h| h[field].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// The first two words of four letters or more of a page's indexed title, as a query.
fn title_words(data: &Path, url: &str) -> Option<String> {
    let out = Command::new(support::geode_bin())
        .args(["show", "--data", &data.display().to_string(), "--json", url])
        .output()
        .expect("geode show runs");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
    let title = doc["title"].as_str()?;
    let words: Vec<&str> = title
        .split_whitespace()
        .filter(|w| w.len() >= 4 && w.chars().all(char::is_alphabetic))
        .take(2)
        .collect();
    (words.len() == 2).then(|| words.join(" "))
}

/// The capsules of the first ten results of a ranked search.
fn top_hosts(data: &Path, query: &str) -> Vec<String> {
    search_hits(data, &["--limit", "10", query], "host")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn geode_crawls_a_geminispace_in_a_box_and_keeps_out_of_its_traps() {
    // Politeness is judged on timestamps: keep bursts of other tests away.
    let _timing = support::TIMING.lock().await;
    let world = Arc::new(World::generate(&WorldSpec::small(SEED)));
    let ips: Vec<IpAddr> = loopback_addresses("127.1.0.1".parse().unwrap(), world.addresses())
        .expect("loopback addresses");
    let server = FixtureServer::start_world(Arc::clone(&world), &ips)
        .await
        .expect("the world is served");
    let data = tempfile::tempdir().unwrap();
    let mut failures: Vec<String> = Vec::new();
    let mut report: Vec<String> = Vec::new();

    // The first crawl.
    let limit = Duration::from_secs(400);
    let first = support::run_geode(
        crawl_args(&world, &server, data.path(), FIRST_CRAWL_LIMIT),
        limit,
    )
    .await;
    let first_summary = summary(&first);
    report.push(format!(
        "first crawl: {:.1} s, exit {}, peak RSS {} MB, summary {first_summary}",
        first.wall.as_secs_f64(),
        first.status,
        first.peak_rss / (1024 * 1024)
    ));
    if first.status != 0 {
        let tail: Vec<&str> = first.stderr.lines().rev().take(15).collect();
        failures.push(format!(
            "geode crawl exited with {}: {tail:?}",
            first.status
        ));
    }
    if first_summary["ended"] != "done" {
        failures.push(format!(
            "the crawl did not end by itself: ended {}",
            first_summary["ended"]
        ));
    }
    if first.peak_rss > PEAK_RSS {
        failures.push(format!(
            "peak RSS {} MB, more than {} MB",
            first.peak_rss / (1024 * 1024),
            PEAK_RSS / (1024 * 1024)
        ));
    }

    // Coverage, through the index's own list of URLs.
    let indexed: HashSet<String> = support::indexed(data.path()).into_iter().collect();
    let pages: Vec<LegitPage> = world.legit_pages().collect();
    let large = world
        .capsules()
        .iter()
        .position(|c| Some(c.pages) == world.spec().large_capsule)
        .expect("the small world has a large capsule");
    let found = |p: &LegitPage| {
        indexed.contains(&p.url) || copies(&world, p).iter().any(|u| indexed.contains(u))
    };
    let covered = pages.iter().filter(|p| found(p)).count();
    let in_large: Vec<&LegitPage> = pages.iter().filter(|p| p.capsule == large).collect();
    let large_covered = in_large.iter().filter(|p| found(p)).count();
    let share = covered as f64 / pages.len() as f64;
    let large_share = large_covered as f64 / in_large.len() as f64;
    report.push(format!(
        "coverage: {covered} of {} legitimate pages ({:.1}%), large capsule {large_covered} of {} \
         ({:.1}%); {} URLs in the index",
        pages.len(),
        share * 100.0,
        in_large.len(),
        large_share * 100.0,
        indexed.len()
    ));
    if share < COVERAGE || large_share < COVERAGE {
        let missing: Vec<&str> = pages
            .iter()
            .filter(|p| !found(p))
            .take(5)
            .map(|p| p.url.as_str())
            .collect();
        failures.push(format!(
            "coverage {:.1}% (large capsule {:.1}%), less than {:.0}%; missing e.g. {missing:?}",
            share * 100.0,
            large_share * 100.0,
            COVERAGE * 100.0
        ));
    }

    // Searching unique words finds their pages.
    let mut sample: Vec<&LegitPage> = in_large
        .iter()
        .step_by((in_large.len() / SEARCHED_LARGE).max(1))
        .copied()
        .collect();
    let others: Vec<&LegitPage> = pages.iter().filter(|p| p.capsule != large).collect();
    sample.extend(
        others
            .iter()
            .step_by((others.len() / SEARCHED_OTHERS).max(1)),
    );
    let mut unsearchable = Vec::new();
    for page in &sample {
        let hits = search(data.path(), &page.word);
        let mut wanted = copies(&world, page);
        wanted.push(page.url.clone());
        if !hits.iter().any(|h| wanted.contains(h)) {
            unsearchable.push(format!("{} ({})", page.word, page.url));
        }
    }
    report.push(format!(
        "search: {} of {} sampled unique words find their page",
        sample.len() - unsearchable.len(),
        sample.len()
    ));
    if (sample.len() - unsearchable.len()) as f64 / (sample.len() as f64) < COVERAGE {
        failures.push(format!("unique words not found: {unsearchable:?}"));
    }

    // Junk does not rank: for the first words of each sampled page's title, no page of a
    // capsule whose content is junk (proxy, git browser, calendar, query space, link bomb,
    // mirror) stands above a legitimate page in the first ten. The slow capsule and the one
    // whose text changes on every request serve ordinary text, and are left out.
    let junk: HashSet<&str> = world
        .hosts_by_kind()
        .into_iter()
        .filter(|(kind, _)| {
            kind.is_trap() && !matches!(kind, Kind::Slow | Kind::PerRequest | Kind::Dead)
        })
        .flat_map(|(_, hosts)| hosts)
        .collect();
    let (mut asked, mut inverted) = (0, Vec::new());
    for page in &sample {
        let Some(query) = title_words(data.path(), &page.url) else {
            continue;
        };
        asked += 1;
        let hosts = top_hosts(data.path(), &query);
        let first_junk = hosts.iter().position(|h| junk.contains(h.as_str()));
        let last_real = hosts.iter().rposition(|h| !junk.contains(h.as_str()));
        if let (Some(j), Some(r)) = (first_junk, last_real) {
            if j < r {
                inverted.push(format!("{query:?}: {hosts:?}"));
            }
        }
    }
    report.push(format!(
        "ranking: {asked} title queries, {} with a junk page above a legitimate one",
        inverted.len()
    ));
    if asked < sample.len() / 2 || !inverted.is_empty() {
        failures.push(format!(
            "junk ranks: {} of {asked} title queries: {inverted:#?}",
            inverted.len()
        ));
    }

    // Traps: requests per trap capsule, from the server's log.
    let per_host = server.requests_per_host();
    let mut traps: BTreeMap<String, u64> = BTreeMap::new();
    for (kind, hosts) in world.hosts_by_kind() {
        for host in hosts.iter().filter(|_| kind.is_trap()) {
            let n = per_host.get(*host).copied().unwrap_or(0);
            traps.insert(format!("{} {host}", kind.name()), n);
            if n > TRAP_REQUESTS {
                failures.push(format!(
                    "{} trap {host} got {n} requests, more than {TRAP_REQUESTS}",
                    kind.name()
                ));
            }
        }
    }
    let legit_requests: u64 = world
        .hosts_of(Kind::Legit)
        .iter()
        .map(|h| per_host.get(*h).copied().unwrap_or(0))
        .sum();
    report.push(format!(
        "requests: {} in all, {legit_requests} to legitimate capsules; per trap {traps:?}",
        server.request_count()
    ));

    // Politeness toward every address, judged from the server's log.
    let log = server.requests();
    let breaches =
        geode_fixture::audit::politeness_breaches(&log, MIN_DELAY, Duration::from_millis(8));
    let mut by_ip: HashMap<IpAddr, u64> = HashMap::new();
    for record in &log {
        *by_ip.entry(record.local.ip()).or_default() += 1;
    }
    let busiest = by_ip.values().max().copied().unwrap_or(0);
    report.push(format!(
        "politeness: {} breaches; busiest address {busiest} requests (at least {:.1} s at \
         {MIN_DELAY:?})",
        breaches.len(),
        busiest as f64 * MIN_DELAY.as_secs_f64()
    ));
    if !breaches.is_empty() {
        let listed: Vec<String> = breaches.iter().take(10).map(|b| b.to_string()).collect();
        failures.push(format!(
            "{} politeness breaches: {listed:#?}",
            breaches.len()
        ));
    }

    // A second crawl right after the first has nothing due: not one request.
    let before = server.request_count();
    let second = support::run_geode(
        crawl_args(&world, &server, data.path(), SECOND_CRAWL_LIMIT),
        Duration::from_secs(180),
    )
    .await;
    // Connections still closing are logged a moment later.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let again = server.request_count() - before;
    report.push(format!(
        "second crawl: {:.1} s, exit {}, {again} requests, summary {}",
        second.wall.as_secs_f64(),
        second.status,
        summary(&second)
    ));
    if again > 0 {
        let asked: Vec<String> = server
            .requests_since(before)
            .into_iter()
            .take(5)
            .map(|r| r.request)
            .collect();
        failures.push(format!(
            "the second crawl made {again} requests, e.g. {asked:?}"
        ));
    }
    server.shutdown().await;

    let report = report.join("\n");
    println!("{report}");
    assert!(
        failures.is_empty(),
        "{report}\n\nfailed:\n- {}",
        failures.join("\n- ")
    );
}
