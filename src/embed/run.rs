//! `geode embed`: gives every page of the index a vector of the model, resumably.
//!
//! One pass over the index's pages (a snapshot): a page whose vector was made from its input
//! as it is now is left alone; one whose input some row already holds (a page changed back, the
//! same text under another URL, the whole index after `geode reindex`) reuses that vector; the
//! others are embedded, [`super::BATCH`] at a time, and written at once. Pages gone from the
//! index lose their vectors. A budget (`--max-pages`, `--max-duration`) stops the embedding,
//! not the pass, so that the summary says how many pages are left; the next run goes on from
//! there, since everything written is kept (a `kill -9` loses at most the batch in hand).

use std::collections::HashSet;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::input::{key, page_text, KEY_BYTES};
use super::store::Writer;
use super::{EmbedError, Embedder, BATCH};
use crate::index::SearchIndex;

/// How often a long run says how far it got.
const PROGRESS_EVERY: Duration = Duration::from_secs(10);

/// What `geode embed` is asked to do.
#[derive(Debug, Clone)]
pub struct EmbedConfig {
    pub data_dir: PathBuf,
    /// Pages embedded at most (those whose vector is reused do not count).
    pub max_pages: Option<u64>,
    /// Time spent embedding at most.
    pub max_duration: Option<Duration>,
}

/// What a run did, as `geode embed --json` prints it.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct EmbedSummary {
    /// Pages in the index.
    pub pages: u64,
    /// Pages whose vector was current already.
    pub up_to_date: u64,
    /// Pages given a vector stored for the same input before, without the model.
    pub reused: u64,
    /// Pages run through the model.
    pub embedded: u64,
    /// Pages still without a current vector when the budget ran out.
    pub left: u64,
    /// Vectors of pages no longer in the index, dropped.
    pub removed: u64,
    pub seconds: f64,
    /// Pages embedded per second of the run.
    pub pages_per_second: f64,
    /// Pages with a vector after the run.
    pub vectors: u64,
    /// The vectors' files, in bytes, and per page with a vector.
    pub bytes: u64,
    pub bytes_per_page: f64,
    /// Whether dead rows were compacted away.
    pub compacted: bool,
    /// The process's peak resident memory, in bytes (Linux; 0 elsewhere).
    pub peak_rss_bytes: u64,
    pub model: String,
    pub fingerprint: String,
}

/// A page waiting for the model.
struct Pending {
    url: String,
    key: [u8; KEY_BYTES],
    text: String,
}

/// Runs `geode embed` on `config.data_dir` with `embedder`.
pub fn run(config: &EmbedConfig, embedder: &Embedder) -> Result<EmbedSummary, EmbedError> {
    let started = Instant::now();
    let index = SearchIndex::open(&crate::datadir::index_path(&config.data_dir))?;
    let mut writer = Writer::open(&config.data_dir, embedder.fingerprint(), embedder.dim())?;
    let deadline = config.max_duration.map(|d| started + d);
    let mut summary = EmbedSummary {
        model: embedder.dir().display().to_string(),
        fingerprint: embedder.fingerprint().to_string(),
        ..EmbedSummary::default()
    };
    let mut urls = HashSet::new();
    // A batch a core: the model's matrix products use both cores, but the rest of a pass
    // (normalisations, activations, the tokenizer) runs on one; two passes at once keep both busy.
    let lanes = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, 4);
    let mut batch: Vec<Pending> = Vec::with_capacity(BATCH * lanes);
    let mut failure = None;
    let mut next_progress = started + PROGRESS_EVERY;
    let total = index.num_docs();
    index.each_page(|url, title, headings, body| {
        summary.pages += 1;
        urls.insert(url.to_string());
        let text = page_text(title, headings, body);
        let k = key(&text);
        if writer.is_current(url, &k) {
            summary.up_to_date += 1;
            return true;
        }
        match writer.reuse(url, &k) {
            Ok(true) => {
                summary.reused += 1;
                return true;
            }
            Ok(false) => {}
            Err(e) => {
                failure = Some(e);
                return false;
            }
        }
        let over_budget = deadline.is_some_and(|d| Instant::now() >= d)
            || config
                .max_pages
                .is_some_and(|max| summary.embedded + batch.len() as u64 >= max);
        if over_budget {
            summary.left += 1;
            return true;
        }
        batch.push(Pending {
            url: url.to_string(),
            key: k,
            text,
        });
        if batch.len() == BATCH * lanes {
            if let Err(e) = embed_batch(embedder, &mut writer, &mut batch, &mut summary) {
                failure = Some(e);
                return false;
            }
            if Instant::now() >= next_progress {
                next_progress = Instant::now() + PROGRESS_EVERY;
                let rate = summary.embedded as f64 / started.elapsed().as_secs_f64();
                tracing::info!(
                    "embedding: {} of {} pages read, {} embedded ({:.1} pages/s), {} reused, {} up to date",
                    summary.pages,
                    total,
                    summary.embedded,
                    rate,
                    summary.reused,
                    summary.up_to_date
                );
            }
        }
        true
    })?;
    if let Some(e) = failure {
        writer.sync()?;
        return Err(e);
    }
    embed_batch(embedder, &mut writer, &mut batch, &mut summary)?;
    summary.removed = writer.retain(&urls)? as u64;
    writer.sync()?;
    summary.compacted = writer.compact_if_worth_it()?;
    summary.seconds = started.elapsed().as_secs_f64();
    summary.pages_per_second = match summary.seconds {
        s if s > 0.0 => summary.embedded as f64 / s,
        _ => 0.0,
    };
    summary.vectors = writer.live() as u64;
    summary.bytes = writer.bytes();
    summary.bytes_per_page = match summary.vectors {
        0 => 0.0,
        n => summary.bytes as f64 / n as f64,
    };
    summary.peak_rss_bytes = peak_rss();
    Ok(summary)
}

/// Runs the model over the pages in `batch` and stores their vectors.
fn embed_batch(
    embedder: &Embedder,
    writer: &mut Writer,
    batch: &mut Vec<Pending>,
    summary: &mut EmbedSummary,
) -> Result<(), EmbedError> {
    if batch.is_empty() {
        return Ok(());
    }
    let texts: Vec<&str> = batch.iter().map(|p| p.text.as_str()).collect();
    let vectors: Vec<Vec<f32>> = std::thread::scope(|scope| {
        let parts: Vec<_> = texts
            .chunks(BATCH)
            .map(|chunk| scope.spawn(move || embedder.embed(chunk)))
            .collect();
        let mut all = Vec::with_capacity(texts.len());
        for part in parts {
            let part = part
                .join()
                .map_err(|_| EmbedError::Run("an embedding thread panicked".to_string()))??;
            all.extend(part);
        }
        Ok::<_, EmbedError>(all)
    })?;
    for (page, vector) in batch.drain(..).zip(vectors) {
        writer.put(&page.url, &page.key, &vector)?;
        summary.embedded += 1;
    }
    Ok(())
}

/// The process's peak resident set (`VmHWM`), in bytes; 0 where it cannot be read.
pub fn peak_rss() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}
