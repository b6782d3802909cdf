//! Extraction speed on real pages: decodes and extracts (`gemtext::extract`: parsing, the
//! ASCII-art classifier, title, links) every page of the corpus's capsules, several rounds, and
//! prints microseconds per page. A measuring tool, not part of the library.
//!
//! ```text
//! cargo run --release --example bench_extract [CAPSULES_DIR] [ROUNDS]
//! ```
//!
//! `CAPSULES_DIR` defaults to `../shared/corpus/capsules` (`<host>/<path>` files), `ROUNDS` to 5.
//! The last number of a line sums the extracted text's length and link count: it must not move
//! when only speed changes.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

#[path = "common/corpus.rs"]
mod corpus;

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let root = PathBuf::from(
        args.next()
            .unwrap_or_else(|| "../shared/corpus/capsules".to_string()),
    );
    let rounds: usize = match args.next().map(|r| r.parse()) {
        None => 5,
        Some(Ok(n)) if n > 0 => n,
        Some(_) => {
            eprintln!("bench_extract: ROUNDS must be a positive number");
            return ExitCode::from(2);
        }
    };
    let pages = match read_pages(&root) {
        Ok(pages) if !pages.is_empty() => pages,
        Ok(_) => {
            eprintln!("bench_extract: no pages under {}", root.display());
            return ExitCode::FAILURE;
        }
        Err(e) => {
            eprintln!("bench_extract: reading {}: {e}", root.display());
            return ExitCode::FAILURE;
        }
    };
    let bytes: usize = pages.iter().map(|(_, body)| body.len()).sum();
    for round in 1..=rounds {
        let started = Instant::now();
        let mut check = 0usize;
        for (url, body) in &pages {
            let text = geode::gemtext::decode(body);
            let page = geode::gemtext::extract(url, &text);
            check += page.body.len() + page.links.len();
        }
        let secs = started.elapsed().as_secs_f64();
        println!(
            "round {round}: {} pages ({:.1} MB) in {:.3} s = {:.1} us a page (check {check})",
            pages.len(),
            bytes as f64 / 1e6,
            secs,
            secs * 1e6 / pages.len() as f64
        );
    }
    ExitCode::SUCCESS
}

/// Every file under `root/<host>/`, with the URL it has on that host.
fn read_pages(root: &Path) -> std::io::Result<Vec<(url::Url, Vec<u8>)>> {
    let mut pages = Vec::new();
    for path in corpus::files(root, |_| true)? {
        let Ok(rel) = path.strip_prefix(root) else {
            continue;
        };
        let mut parts = rel.components();
        let Some(host) = parts.next() else {
            continue;
        };
        let on_host = parts.as_path();
        if on_host.as_os_str().is_empty() {
            continue; // a file beside the hosts' directories, not in one
        }
        let address = format!(
            "gemini://{}/{}",
            host.as_os_str().to_string_lossy(),
            on_host.to_string_lossy()
        );
        if let Ok(url) = url::Url::parse(&address) {
            pages.push((url, std::fs::read(&path)?));
        }
    }
    pages.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(pages)
}
