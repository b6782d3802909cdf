//! The bare fetch loop of `scripts/bench-crawl` (its run C): geode's own fetch layer (tokio-rustls,
//! the socket budget, the same limits) over a list of URLs, one connection per IP address at a
//! time as a polite crawl makes, and nothing else: no discovery, parsing, index or crawl
//! database. The physical limit of a crawl on this machine, to compare the whole pipeline with.
//!
//! ```text
//! bench_fetch URLS HOSTS CONCURRENCY
//!   URLS         one gemini:// URL a line
//!   HOSTS        `host address:port` lines: where each host is served
//!   CONCURRENCY  fetches in flight at most (and at most one per address)
//! ```
//!
//! Prints one line, `fetched=N other=N errors=N bytes=N wall_s=S peak_sockets=N`, as
//! `scripts/bench_fetch_baseline.py` does.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use geode::fetch::sockets::SocketBudget;
use geode::fetch::{FetchLimits, Fetcher, Outcome};
use tokio::sync::Semaphore;
use url::Url;

#[derive(Default)]
struct Counts {
    fetched: AtomicU64,
    other: AtomicU64,
    errors: AtomicU64,
    bytes: AtomicU64,
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [urls, hosts, concurrency] = args.as_slice() else {
        eprintln!("usage: bench_fetch URLS HOSTS CONCURRENCY");
        std::process::exit(2);
    };
    let concurrency: usize = concurrency.parse().unwrap_or_else(|_| {
        eprintln!("bench_fetch: CONCURRENCY must be a number");
        std::process::exit(2)
    });
    let read = |path: &str| {
        std::fs::read_to_string(path).unwrap_or_else(|e| {
            eprintln!("bench_fetch: {path}: {e}");
            std::process::exit(1)
        })
    };
    let addresses: HashMap<String, SocketAddr> = read(hosts)
        .lines()
        .filter_map(|line| {
            let (host, addr) = line.split_once(' ')?;
            Some((host.to_string(), addr.trim().parse().ok()?))
        })
        .collect();
    // The URLs of each address, in list order: one task per address fetches them in turn.
    let mut by_address: HashMap<SocketAddr, Vec<Url>> = HashMap::new();
    for line in read(urls).lines().filter(|l| !l.trim().is_empty()) {
        let Ok(url) = Url::parse(line.trim()) else {
            eprintln!("bench_fetch: not a URL: {line}");
            std::process::exit(1)
        };
        let Some(addr) = url.host_str().and_then(|h| addresses.get(h)) else {
            eprintln!("bench_fetch: no address for {url}");
            std::process::exit(1)
        };
        by_address.entry(*addr).or_default().push(url);
    }

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let counts = Arc::new(Counts::default());
    let budget = SocketBudget::new(concurrency.max(1));
    let fetcher = Fetcher::new(FetchLimits::default(), budget.clone());
    let slots = Arc::new(Semaphore::new(concurrency.max(1)));
    let started = Instant::now();
    runtime.block_on(async {
        let mut tasks = Vec::new();
        for (addr, urls) in by_address {
            let (fetcher, slots, counts) = (fetcher.clone(), slots.clone(), counts.clone());
            tasks.push(tokio::spawn(async move {
                for url in urls {
                    let Ok(_slot) = slots.acquire().await else {
                        return;
                    };
                    match fetcher.fetch(&url, addr).await {
                        Ok(response) => match response.outcome {
                            Outcome::Success { body, .. } => {
                                counts.fetched.fetch_add(1, Ordering::Relaxed);
                                counts.bytes.fetch_add(body.len() as u64, Ordering::Relaxed);
                            }
                            _ => {
                                counts.other.fetch_add(1, Ordering::Relaxed);
                            }
                        },
                        Err(e) => {
                            if counts.errors.fetch_add(1, Ordering::Relaxed) == 0 {
                                eprintln!("bench_fetch: first error: {url}: {e}");
                            }
                        }
                    }
                }
            }));
        }
        for task in tasks {
            let _ = task.await;
        }
    });
    let wall = started.elapsed().as_secs_f64();
    println!(
        "fetched={} other={} errors={} bytes={} wall_s={wall:.3} peak_sockets={}",
        counts.fetched.load(Ordering::Relaxed),
        counts.other.load(Ordering::Relaxed),
        counts.errors.load(Ordering::Relaxed),
        counts.bytes.load(Ordering::Relaxed),
        budget.high_water(),
    );
}
