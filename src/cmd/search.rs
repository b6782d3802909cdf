//! `geode search` (results as text or JSON lines) and `geode backlinks` (who links to a page).

use std::io::Write;
use std::time::Instant;

use anyhow::{anyhow, Context};

use crate::cli::{BacklinksArgs, SearchArgs};
use crate::Failure;
use geode::index::{IndexError, Ranking, SearchIndex, SearchOptions};
use geode::urlnorm;

pub(crate) fn search(args: SearchArgs) -> Result<(), Failure> {
    let query = args.query.join(" ");
    // Check the query before opening the index: a typo is reported the same with or without one.
    let parsed = geode::query::parse(&query)
        .map_err(|e| Failure::Usage(anyhow!("malformed query: {e}\n{}", e.caret_line(&query))))?;
    let index =
        SearchIndex::open(&geode::datadir::index_path(&args.data.data)).map_err(index_failure)?;
    let options = SearchOptions {
        limit: args.limit,
        offset: args.offset,
        ranking: if args.ranking == "bm25" {
            Ranking::Bm25
        } else {
            Ranking::Full
        },
        strict: args.strict,
        all: args.all,
    };
    let semantic = geode::embed::Semantic::load(&args.model.choice(), &args.data.data)
        .map_err(|e| Failure::Runtime(e.into()))?;
    let started = Instant::now();
    let near = match &semantic {
        Some(semantic) => semantic
            .neighbours(&index, &query, &parsed, &options)
            .map_err(|e| Failure::Runtime(e.into()))?,
        None => None,
    };
    let results = index
        .search_hybrid(&query, &parsed, &options, near.as_deref())
        .map_err(index_failure)?;
    let took = started.elapsed();
    let mut out = std::io::stdout().lock();
    if args.json {
        let doc = results.to_json(&query, args.offset, args.limit, took);
        let line = serde_json::to_string(&doc).context("encoding JSON")?;
        writeln!(out, "{line}").context("writing results")?;
        return Ok(());
    }
    if let Some(better) = &results.did_you_mean {
        writeln!(out, "Did you mean: {better}\n").context("writing results")?;
    }
    for (i, hit) in results.hits.iter().enumerate() {
        let title = if hit.title.is_empty() {
            hit.url.as_str()
        } else {
            hit.title.as_str()
        };
        // Saturating: an offset near usize::MAX has no hits, but the sum must not wrap.
        let rank = args.offset.saturating_add(i).saturating_add(1);
        writeln!(out, "{rank}. {title}").context("writing results")?;
        writeln!(out, "   {}", hit.url).context("writing results")?;
        if !hit.snippet.is_empty() {
            writeln!(out, "   {}", hit.snippet).context("writing results")?;
        }
        let mut facts = format!(
            "   {} · {} · {}",
            hit.host,
            hit.mime,
            geode::human::size(hit.size)
        );
        if !hit.missing.is_empty() {
            facts.push_str(&format!(" · missing: {}", hit.missing.join(", ")));
        }
        if hit.similar > 0 && !args.all {
            facts.push_str(&format!(
                " · {} similar page{} (--all, or similar:{})",
                hit.similar,
                if hit.similar == 1 { "" } else { "s" },
                hit.url
            ));
        }
        writeln!(out, "{facts}").context("writing results")?;
        writeln!(out).context("writing results")?;
    }
    writeln!(
        out,
        "{} result{} ({}) in {:.1} ms",
        results.total,
        if results.total == 1 { "" } else { "s" },
        shown_range(args.offset, results.hits.len()),
        took.as_secs_f64() * 1000.0
    )
    .context("writing results")?;
    Ok(())
}

/// Which results a page showed, counted from 1: "3-12 shown", or "none shown" for a page past
/// the end (where "0-N" would name results that were not shown).
pub(crate) fn shown_range(offset: usize, shown: usize) -> String {
    if shown == 0 {
        return "none shown".to_string();
    }
    let first = offset.saturating_add(1);
    let last = offset.saturating_add(shown);
    format!("{first}-{last} shown")
}

pub(crate) fn index_failure(e: IndexError) -> Failure {
    match e {
        IndexError::Query(_) => Failure::Usage(e.into()),
        other => Failure::Runtime(other.into()),
    }
}

pub(crate) fn backlinks(args: BacklinksArgs) -> Result<(), Failure> {
    let url =
        urlnorm::normalize(&args.url).map_err(|e| Failure::Usage(anyhow!("{}: {e}", args.url)))?;
    let frontier = args.store.open()?;
    let links = frontier
        .backlinks(url.as_str())
        .context("reading the crawl database")?;
    let mut out = std::io::stdout().lock();
    for link in &links {
        if args.json {
            let line = serde_json::to_string(link).context("encoding JSON")?;
            writeln!(out, "{line}").context("writing backlinks")?;
        } else if link.label.is_empty() {
            writeln!(out, "{}", link.url).context("writing backlinks")?;
        } else {
            writeln!(out, "{}  {}", link.url, link.label).context("writing backlinks")?;
        }
    }
    if !args.json {
        writeln!(
            out,
            "{} page{} link to {url}",
            links.len(),
            if links.len() == 1 { "" } else { "s" }
        )
        .context("writing backlinks")?;
    }
    Ok(())
}
