//! `geode embed`: vectors of a sentence-embedding model for every indexed page.

use anyhow::{anyhow, Context};

use crate::cli::EmbedArgs;
use crate::cmd::put_line;
use crate::Failure;
use geode::embed::{EmbedConfig, Embedder};

pub(crate) fn embed(args: EmbedArgs) -> Result<(), Failure> {
    // `geode embed` runs a batch a core (`embed/run.rs`), each batch's matrix products on its
    // own thread: candle splits a product over RAYON_NUM_THREADS threads (all cores by
    // default), and two batches each split over both cores ran slower (24.4 pages/s on the
    // corpus) than two batches on one core each (28.7). Set here, before any thread starts,
    // and only when the operator did not choose.
    if std::env::var_os("RAYON_NUM_THREADS").is_none() {
        std::env::set_var("RAYON_NUM_THREADS", "1");
    }
    let data_dir = args.data.data;
    if !geode::datadir::index_path(&data_dir).is_dir() {
        return Err(Failure::Usage(anyhow!(
            "no index in {} (run `geode crawl --data {}` first)",
            data_dir.display(),
            data_dir.display()
        )));
    }
    let embedder = match Embedder::find(args.model.as_deref(), &data_dir) {
        Ok(Some(embedder)) => embedder,
        Ok(None) => {
            return Err(Failure::Usage(anyhow!(
                "no model: give one with --model DIR (a folder with config.json, tokenizer.json \
                 and model.safetensors; scripts/fetch-model gets all-MiniLM-L6-v2) or put it in {}",
                geode::datadir::model_path(&data_dir).display()
            )))
        }
        Err(e) => return Err(Failure::Runtime(e.into())),
    };
    tracing::info!(
        model = %embedder.dir().display(),
        fingerprint = embedder.fingerprint(),
        "embedding the pages of {}",
        data_dir.display()
    );
    let config = EmbedConfig {
        data_dir,
        max_pages: args.max_pages,
        max_duration: args.max_duration,
    };
    let summary = geode::embed::run(&config, &embedder).map_err(|e| Failure::Runtime(e.into()))?;
    if args.json {
        put_line(&serde_json::to_string(&summary).context("encoding JSON")?)?;
    } else {
        put_line(&format!(
            "{} pages: {} embedded ({:.1} pages/s), {} reused, {} up to date, {} left for the next run; \
             {} vectors of pages gone removed{}; {} vectors, {} ({:.0} bytes a page); peak memory {}",
            summary.pages,
            summary.embedded,
            summary.pages_per_second,
            summary.reused,
            summary.up_to_date,
            summary.left,
            summary.removed,
            if summary.compacted { ", files compacted" } else { "" },
            summary.vectors,
            geode::human::size(summary.bytes),
            summary.bytes_per_page,
            geode::human::size(summary.peak_rss_bytes),
        ))?;
    }
    Ok(())
}
