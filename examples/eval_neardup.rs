//! Near-duplicate detection against labelled page pairs (`scripts/eval-neardup`, issue 14).
//!
//! Reads `scripts/eval/neardup-pairs.tsv` (label, file A, file B), extracts both files with
//! geode's own `content::extract` as a crawl would, fingerprints them as the indexer does
//! (`index::neardup::page_fingerprint`: body and link labels) and calls a pair near-duplicate when `neardup::near` says so.
//! Prints every pair whose verdict disagrees with its label, the confusion counts, precision and
//! recall, and how many bit distances each label has (to see how the threshold separates them).
//!
//! This measures the fingerprint rule on pairs; it is not part of the library.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::Parser;
use geode::index::neardup;

#[derive(Parser)]
#[command(about = "near-duplicate detection against labelled pairs")]
struct Cli {
    /// The corpus' capsule directory: `<host>/<path>` files.
    #[arg(long)]
    corpus: PathBuf,
    /// `label<TAB>file A<TAB>file B[<TAB>note]` lines, label `dup` or `distinct`.
    #[arg(long)]
    pairs: PathBuf,
}

fn main() -> ExitCode {
    match run(&Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("eval_neardup: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// The fingerprint of a corpus file's extracted body, `None` when too short to have one.
fn fingerprint(corpus: &Path, rel: &str) -> Result<Option<u64>> {
    let file = corpus.join(rel);
    let bytes = std::fs::read(&file).with_context(|| format!("reading {}", file.display()))?;
    let url = url::Url::parse(&format!("gemini://{rel}")).with_context(|| rel.to_string())?;
    let meta = if rel.ends_with(".gmi") || rel.ends_with(".gemini") {
        "text/gemini"
    } else {
        "text/plain"
    };
    let page = geode::content::extract(&url, meta, &bytes);
    let labels: Vec<&str> = page
        .links
        .iter()
        .map(|l| l.label.as_str())
        .filter(|l| !l.is_empty())
        .collect();
    Ok(neardup::page_fingerprint(&page.body, &labels.join("\n")))
}

fn run(cli: &Cli) -> Result<()> {
    let text = std::fs::read_to_string(&cli.pairs)
        .with_context(|| format!("reading {}", cli.pairs.display()))?;
    let (mut tp, mut fp, mut tn, mut fn_) = (0u32, 0u32, 0u32, 0u32);
    // label -> distance (None: no fingerprint) -> pairs
    let mut distances: BTreeMap<&str, BTreeMap<Option<u32>, u32>> = BTreeMap::new();
    for (n, line) in text.lines().enumerate() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let cols: Vec<&str> = line.split('\t').collect();
        let [label, a, b, ..] = cols.as_slice() else {
            bail!(
                "{}:{}: expected label, file, file",
                cli.pairs.display(),
                n + 1
            );
        };
        let want = match *label {
            "dup" => true,
            "distinct" => false,
            other => bail!("{}:{}: unknown label {other:?}", cli.pairs.display(), n + 1),
        };
        let (ha, hb) = (fingerprint(&cli.corpus, a)?, fingerprint(&cli.corpus, b)?);
        let distance = ha.zip(hb).map(|(x, y)| neardup::distance(x, y));
        *distances
            .entry(label)
            .or_default()
            .entry(distance)
            .or_default() += 1;
        let got = ha.zip(hb).is_some_and(|(x, y)| neardup::near(x, y));
        match (want, got) {
            (true, true) => tp += 1,
            (false, true) => fp += 1,
            (false, false) => tn += 1,
            (true, false) => fn_ += 1,
        }
        if want != got {
            let d = distance.map_or("no fingerprint".to_string(), |d| format!("{d} bits"));
            println!(
                "{label:<8} judged {:<8} ({d}): {a}  {b}",
                if got { "dup" } else { "distinct" }
            );
        }
    }
    println!();
    println!("pairs: {} dup, {} distinct", tp + fn_, fp + tn);
    println!(
        "true positives {tp}, false positives {fp}, true negatives {tn}, false negatives {fn_}"
    );
    let precision = f64::from(tp) / f64::from((tp + fp).max(1));
    let recall = f64::from(tp) / f64::from((tp + fn_).max(1));
    println!(
        "precision {precision:.3}, recall {recall:.3} (threshold: at most {} bits of 64)",
        neardup::MAX_DISTANCE
    );
    for (label, by_distance) in &distances {
        let shown: Vec<String> = by_distance
            .iter()
            .map(|(d, n)| match d {
                Some(d) => format!("{d}:{n}"),
                None => format!("none:{n}"),
            })
            .collect();
        println!("{label:<8} bits:pairs  {}", shown.join(" "));
    }
    Ok(())
}
