//! Running out of file descriptors is back-pressure, never failure: under `ulimit -n 64` and a
//! concurrency far above what 64 descriptors allow, a crawl of thousands of pages still indexes
//! every page.

use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::process::Command;

use geode_fixture::{FixtureConfig, FixtureServer};

use crate::support;

const CAPSULES: usize = 50;
const PAGES: usize = 40;

/// Writes a synthetic geminispace: every capsule's pages chained from its index, with links
/// across capsules.
fn write_space(root: &Path) -> Vec<String> {
    let mut urls = Vec::new();
    let filler = "The quick survey of small capsules continues with notes on gardens, radios \
                  and old computers, written slowly and read slowly. "
        .repeat(12);
    for c in 0..CAPSULES {
        let host = format!("cap{c:02}.test");
        let dir = root.join(&host);
        std::fs::create_dir_all(&dir).unwrap();
        let mut index = format!("# Capsule {c}\n\n{filler}\n");
        for p in 0..PAGES {
            index.push_str(&format!("=> /p{p}.gmi Page {p}\n"));
            let next = (p + 1) % PAGES;
            let other = (c + 1) % CAPSULES;
            let page = format!(
                "# Page {p} of capsule {c}\n\n{filler}\n=> p{next}.gmi next\n\
                 => gemini://cap{other:02}.test/p{p}.gmi elsewhere\n=> / home\n"
            );
            std::fs::write(dir.join(format!("p{p}.gmi")), page).unwrap();
            urls.push(format!("gemini://{host}/p{p}.gmi"));
        }
        std::fs::write(dir.join("index.gmi"), index).unwrap();
        urls.push(format!("gemini://{host}/"));
    }
    urls
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crawl_under_ulimit_64_with_concurrency_256_indexes_every_page() {
    let space = tempfile::tempdir().unwrap();
    let urls = write_space(space.path());
    // One address per capsule: more IPs than 64 descriptors can serve at once.
    let listen: Vec<SocketAddr> = (1..=CAPSULES)
        .map(|i| SocketAddr::new(IpAddr::from([127, 0, 4, i as u8]), 0))
        .collect();
    let server = FixtureServer::start(FixtureConfig {
        root: space.path().to_path_buf(),
        listen,
    })
    .await
    .unwrap();
    let data = tempfile::tempdir().unwrap();
    let mut crawl = format!(
        "ulimit -n 64 && exec {} crawl --data {} --min-delay-ms 0 --concurrency 256",
        support::geode_bin(),
        data.path().display()
    );
    for (c, addr) in server.addrs.iter().enumerate() {
        crawl.push_str(&format!(
            " --seed gemini://cap{c:02}.test/ --resolve cap{c:02}.test={addr}"
        ));
    }
    let out = tokio::task::spawn_blocking(move || {
        Command::new("sh").arg("-c").arg(&crawl).output().unwrap()
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "crawl failed:\n{stdout}\n{stderr}");
    assert!(stdout.contains(" 0 failed;"), "{stdout}");
    assert!(
        stdout.contains("(budget 32)"),
        "the budget follows the limit: {stdout}"
    );
    let peak: usize = stdout
        .split("peak open sockets: ")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .expect("the summary names the peak");
    assert!(peak <= 32, "peak {peak} over the budget");

    let out = Command::new(support::geode_bin())
        .args(["stats", "--json", "--data", data.path().to_str().unwrap()])
        .output()
        .unwrap();
    let stats: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        stats["pages_indexed"].as_u64(),
        Some(urls.len() as u64),
        "{stats}"
    );
    assert_eq!(stats["errors"], serde_json::json!([]), "{stats}");
    let requests = server.requests();
    assert!(requests.len() >= urls.len());
}
