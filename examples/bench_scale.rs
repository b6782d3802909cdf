//! Builds and probes a large crawl database for `scripts/bench-scale`.
//!
//! ```text
//! bench_scale build DIR URLS CAPSULES DUE [LINKS INDEXED]
//!                                            write DIR/crawl.sqlite: URLS URLs on CAPSULES
//!                                            capsules (gemini://cNNNN.test/p/I.gmi), DUE of
//!                                            them due now (half never fetched, half revisits),
//!                                            the others visited and due within 30 days; about
//!                                            INDEXED of the visited pages are indexed, each
//!                                            linking to LINKS others (default 0: none): the
//!                                            next indexed ones of its capsule, and its
//!                                            namesake in the next capsule
//! bench_scale claims DIR ROUNDS              time ROUNDS rounds of leasing 256 capsules and
//!                                            claiming their due URLs, then the end of a run
//! ```
//!
//! Both print `key=value` lines for the script to read.

use std::path::{Path, PathBuf};
use std::time::Instant;

use geode::frontier::{
    Batch as _, ClaimRequest, FetchResult, Frontier as _, IndexLog as _, IndexOp, LinkOut, NewUrl,
    SqliteFrontier, UrlState, VisitRecord,
};
use geode::revisit::Priority;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let number = |i: usize| -> u64 {
        args.get(i)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| usage())
    };
    match args.first().map(String::as_str) {
        Some("build") if args.len() == 5 || args.len() == 7 => {
            let (links, indexed) = if args.len() == 7 {
                (number(5), number(6))
            } else {
                (0, 0)
            };
            let dir = PathBuf::from(&args[1]);
            build(&dir, number(2), number(3), number(4), links, indexed)
        }
        Some("claims") if args.len() == 3 => claims(&PathBuf::from(&args[1]), number(2)),
        _ => usage(),
    }
}

fn usage() -> ! {
    eprintln!(
        "usage: bench_scale build DIR URLS CAPSULES DUE [LINKS INDEXED] | \
         bench_scale claims DIR ROUNDS"
    );
    std::process::exit(2)
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn build(dir: &Path, urls: u64, capsules: u64, due: u64, links: u64, indexed: u64) {
    std::fs::create_dir_all(dir).expect("data directory");
    let db = dir.join("crawl.sqlite");
    let mut frontier = SqliteFrontier::open(&db).expect("open");
    let now = geode::crawl::unix_now();
    let per_capsule = (urls / capsules).max(1);
    let due_per_capsule = (due / capsules).min(per_capsule);
    // Every `every`-th URL of a capsule is an indexed page (when it was visited), the same
    // ones in every capsule, so that links between them are links of the graph.
    let every = if links > 0 && indexed > 0 {
        (urls / indexed).max(1)
    } else {
        0
    };
    let url_of = |c: u64, i: u64| {
        if i == 0 {
            format!("gemini://c{c:04}.test/")
        } else {
            format!("gemini://c{c:04}.test/p/{i}.gmi")
        }
    };
    let started = Instant::now();
    let mut batch = frontier.batch(now).expect("batch");
    let mut in_batch = 0;
    let mut written = 0u64;
    let mut link_rows = 0u64;
    let mut pages = 0u64;
    // Pages recorded as indexed since the last commit; committed as one index commit each,
    // as the indexing thread does.
    let mut in_index: Vec<i64> = Vec::new();
    let mut seq = 0u64;
    for c in 0..capsules {
        let host = format!("c{c:04}.test");
        let mut ids = Vec::with_capacity(per_capsule as usize);
        for i in 0..per_capsule {
            let url = url_of(c, i);
            let prio = if i == 0 {
                Priority::Hub
            } else {
                Priority::Fresh
            };
            let new = NewUrl {
                url: &url,
                host: &host,
                depth: 1,
                hops: 0,
                from: None,
                alias_of: None,
                prio,
            };
            let (id, _) = batch
                .ensure_url(&new, None, u64::MAX)
                .expect("insert")
                .expect("no budget");
            ids.push(id);
        }
        for (i, &id) in (0..per_capsule).zip(&ids) {
            // The first due_per_capsule URLs of a capsule are due: the even ones were never
            // fetched, the odd ones are revisits whose time has come. The rest were visited and
            // come due over the next 30 days.
            let never_fetched = i < due_per_capsule && i % 2 == 0;
            if !never_fetched {
                let due_at = if i < due_per_capsule {
                    now - 3600
                } else {
                    now + 86_400 + ((id * 7919) % (29 * 86_400))
                };
                let result = FetchResult {
                    status: Some(20),
                    meta: "text/gemini".into(),
                    mime: Some("text/gemini".into()),
                    size: Some(512),
                    content_hash: Some(format!("{id:064x}")),
                    fetched_at: now - 86_400,
                    ..FetchResult::default()
                };
                let index = every > 0 && i % every == every - 1;
                batch
                    .record_visit(
                        id,
                        &VisitRecord {
                            state: if index {
                                UrlState::Indexed
                            } else {
                                UrlState::Fetched
                            },
                            result: &result,
                            due_at: Some(due_at),
                            revisit_secs: 3 * 86_400,
                            first_failed_at: None,
                            prio: if i == 0 {
                                Priority::Hub
                            } else {
                                Priority::Revisit
                            },
                            feed: false,
                            changed: true,
                            index_op: index.then_some(IndexOp::Upsert),
                            redirect_to: None,
                        },
                    )
                    .expect("visit");
                if index {
                    // Unlabelled links: a label would mark its target's anchors for a rewrite
                    // at the end of the bench's crawl, of pages its index does not hold.
                    let out: Vec<LinkOut> = (1..links)
                        .map(|k| (c, (i + k * every) % per_capsule))
                        .chain([((c + 1) % capsules, i)])
                        .map(|(c, i)| LinkOut {
                            url: url_of(c, i),
                            host: format!("c{c:04}.test"),
                            label: String::new(),
                            excluded: None,
                            prio: Priority::Fresh,
                        })
                        .collect();
                    batch.set_links(id, 1, &out, u64::MAX).expect("links");
                    link_rows += out.len() as u64;
                    pages += 1;
                    in_index.push(id);
                }
            }
            written += 1;
            in_batch += 1;
            if in_batch == 20_000 {
                batch.commit().expect("commit");
                confirm_indexed(&mut frontier, &mut in_index, &mut seq);
                batch = frontier.batch(now).expect("batch");
                in_batch = 0;
            }
        }
    }
    batch.commit().expect("commit");
    confirm_indexed(&mut frontier, &mut in_index, &mut seq);
    let inserted = started.elapsed().as_secs_f64();
    // Visits mark URLs as visited in the running crawl; a run's end lets them go. Here every
    // visited URL of the database is marked, the worst case for that step.
    let started = Instant::now();
    frontier.end_run().expect("end of run");
    let released = started.elapsed().as_secs_f64();
    drop(frontier);
    let bytes = std::fs::metadata(&db).map(|m| m.len()).unwrap_or(0)
        + std::fs::metadata(dir.join("crawl.sqlite-wal"))
            .map(|m| m.len())
            .unwrap_or(0);
    println!("urls={written}");
    println!("indexed={pages}");
    println!("links={link_rows}");
    println!("capsules={capsules}");
    println!("due={}", due_per_capsule * capsules);
    println!("build_secs={inserted:.1}");
    println!("end_run_all_marked_secs={released:.2}");
    println!("db_bytes={bytes}");
    println!(
        "db_bytes_per_url={:.0}",
        bytes as f64 / written.max(1) as f64
    );
}

/// Records the pages in `in_index` as held by index commit `seq + 1`, as the indexing thread
/// does after a commit, and empties the list.
fn confirm_indexed(frontier: &mut SqliteFrontier, in_index: &mut Vec<i64>, seq: &mut u64) {
    if in_index.is_empty() {
        return;
    }
    *seq += 1;
    frontier.assign_batch(in_index, *seq).expect("assign");
    frontier.mark_committed(*seq).expect("confirm");
    in_index.clear();
}

fn claims(dir: &Path, rounds: u64) {
    let started = Instant::now();
    let mut frontier = SqliteFrontier::open(&dir.join("crawl.sqlite")).expect("open");
    let opened = started.elapsed().as_secs_f64();
    let now = geode::crawl::unix_now();
    let mut lease_ms = Vec::new();
    let mut more_ms = Vec::new();
    let mut claimed = 0usize;
    for _ in 0..rounds {
        let t = Instant::now();
        let (urls, _) = frontier
            .claim_capsules(&ClaimRequest::everywhere(256, 32), now)
            .expect("claim");
        lease_ms.push(t.elapsed().as_secs_f64() * 1000.0);
        claimed += urls.len();
        let mut hosts: Vec<i64> = urls.iter().map(|u| u.host_id).collect();
        hosts.dedup();
        for host in hosts {
            let t = Instant::now();
            let more = frontier.claim_more(host, 32, now).expect("claim more");
            more_ms.push(t.elapsed().as_secs_f64() * 1000.0);
            claimed += more.len();
            frontier.release_capsule(host).expect("release");
        }
    }
    let t = Instant::now();
    frontier.end_run().expect("end of run");
    let end_ms = t.elapsed().as_secs_f64() * 1000.0;
    lease_ms.sort_by(f64::total_cmp);
    more_ms.sort_by(f64::total_cmp);
    println!("open_secs={opened:.2}");
    println!("claimed={claimed}");
    for (name, v) in [("lease", &lease_ms), ("claim_more", &more_ms)] {
        println!(
            "{name}_ms_p50={:.2} {name}_ms_p99={:.2} {name}_ms_max={:.2} {name}_calls={}",
            percentile(v, 0.5),
            percentile(v, 0.99),
            v.last().copied().unwrap_or(0.0),
            v.len()
        );
    }
    println!("end_run_ms={end_ms:.1}");
}
