//! Language detection on the corpus (`scripts/eval-lang`): geode's `detect_lang` (CJK scripts,
//! then function words, then whatlang) against whatlang alone, on every gemtext page of the
//! corpus extracted as a crawl extracts it and sampled as the indexer samples it
//! (`index::page_language`).
//!
//! Prints the microseconds per page of each, how many pages each gives which language, and every
//! page where the two differ (`--show` prints the start of each such page). The corpus has no
//! language labels, so whatlang is the reference: a difference is not necessarily an error, and
//! the printed pages are there to be read.
//!
//! This measures the detector; it is not part of the library.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Parser;
use geode::index::page_language;
use geode::lang::{detect_lang, detect_lang_whatlang};

#[path = "common/corpus.rs"]
mod corpus;

#[derive(Parser)]
#[command(about = "language detection on the corpus, against whatlang alone")]
struct Cli {
    /// The corpus' capsule directory: `<host>/<path>` files.
    #[arg(long)]
    corpus: PathBuf,
    /// Print the start of every page the two detectors disagree on.
    #[arg(long)]
    show: bool,
    /// Timed passes over the corpus per detector (the fastest is reported).
    #[arg(long, default_value_t = 3)]
    rounds: u32,
}

/// A page's title and body, as the crawl extracts them.
struct Page {
    path: PathBuf,
    title: String,
    body: String,
}

fn main() -> ExitCode {
    match run(&Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("eval-lang: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: &Cli) -> Result<()> {
    let files = corpus::files(&cli.corpus, |p| corpus::is_gemtext(p, false))
        .with_context(|| format!("reading {}", cli.corpus.display()))?;
    let mut pages = Vec::with_capacity(files.len());
    for path in files {
        let body = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
        let rel = path.strip_prefix(&cli.corpus).unwrap_or(&path);
        let url = url::Url::parse(&format!("gemini://{}", rel.display()))
            .with_context(|| format!("no URL for {}", rel.display()))?;
        let page = geode::content::extract(&url, "text/gemini", &body);
        pages.push(Page {
            path: rel.to_path_buf(),
            title: page.title,
            body: page.body,
        });
    }
    anyhow::ensure!(
        !pages.is_empty(),
        "no .gmi page under {}",
        cli.corpus.display()
    );

    let (geode, geode_us) = timed(&pages, cli.rounds, detect_lang);
    let (whatlang, whatlang_us) = timed(&pages, cli.rounds, detect_lang_whatlang);
    println!("{} pages", pages.len());
    println!("detect_lang (function words first): {geode_us:6.1} us/page");
    println!("whatlang alone:                     {whatlang_us:6.1} us/page");

    let mut counts: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    let mut differ: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    for (i, (g, w)) in geode.iter().zip(&whatlang).enumerate() {
        let (g, w) = (g.unwrap_or("none"), w.unwrap_or("none"));
        counts.entry(g).or_default().0 += 1;
        counts.entry(w).or_default().1 += 1;
        if g != w {
            *differ.entry((w, g)).or_default() += 1;
            if cli.show {
                let page = &pages[i];
                let start: String = page.body.chars().take(300).collect();
                println!(
                    "--- {}: whatlang {w}, geode {g}\n{}\n{start}",
                    page.path.display(),
                    page.title
                );
            }
        }
    }
    println!("\n{:<6} {:>7} {:>9}", "lang", "geode", "whatlang");
    for (lang, (g, w)) in &counts {
        println!("{lang:<6} {g:>7} {w:>9}");
    }
    let same = pages.len() - differ.values().sum::<usize>();
    println!("\nsame answer: {same} of {} pages", pages.len());
    for ((w, g), n) in &differ {
        println!("  whatlang {w:<5} geode {g:<5} {n} pages");
    }
    Ok(())
}

/// Detects every page's language `rounds` times; the answers and the fastest round's
/// microseconds per page.
fn timed(
    pages: &[Page],
    rounds: u32,
    detect: fn(&str) -> Option<&'static str>,
) -> (Vec<Option<&'static str>>, f64) {
    let mut best = f64::INFINITY;
    let mut answers = Vec::new();
    for _ in 0..rounds.max(1) {
        let started = Instant::now();
        answers = pages
            .iter()
            .map(|p| page_language(&p.title, &p.body, detect))
            .collect();
        best = best.min(started.elapsed().as_secs_f64() * 1e6 / pages.len() as f64);
    }
    (answers, best)
}
