//! The archive's commands: `geode reindex` (the index rebuilt from stored bodies), `geode show`
//! (one URL's stored response) and `geode export --warc`.

use std::io::Write;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context};

use super::when;
use crate::cli::{ExportArgs, ReindexArgs, ShowArgs};
use crate::Failure;
use geode::urlnorm;

pub(crate) fn reindex(args: ReindexArgs) -> Result<(), Failure> {
    let dir = &args.data.data;
    if !geode::datadir::database_path(dir).exists() {
        return Err(Failure::Runtime(anyhow!(
            "no crawl database in {} (run geode crawl first)",
            dir.display()
        )));
    }
    let started = Instant::now();
    let mut last = Instant::now();
    let summary = geode::reindex::reindex(dir, args.commit_docs as usize, &mut |pages| {
        if last.elapsed() >= Duration::from_secs(5) {
            tracing::info!(pages, "reindexing");
            last = Instant::now();
        }
    })
    .context("reindex failed")?;
    if args.json {
        super::put_line(&serde_json::to_string(&summary).context("encoding JSON")?)?;
    } else {
        super::put_line(&format!(
            "reindexed {} pages in {:.1} s ({:.0} pages/s); {} pages had no archived content \
             and are due for the next crawl",
            summary.pages,
            started.elapsed().as_secs_f64(),
            summary.pages as f64 / started.elapsed().as_secs_f64().max(0.001),
            summary.missing
        ))?;
    }
    Ok(())
}

pub(crate) fn show(args: ShowArgs) -> Result<(), Failure> {
    let url =
        urlnorm::normalize(&args.url).map_err(|e| Failure::Usage(anyhow!("{}: {e}", args.url)))?;
    let frontier = args.store.open()?;
    let Some(details) = frontier
        .url_details(url.as_str())
        .context("reading the crawl database")?
    else {
        return Err(Failure::Runtime(anyhow!("geode knows nothing of {url}")));
    };
    let archived = frontier
        .archived(details.id)
        .context("reading the archive")?;
    if args.raw {
        let body = archived.and_then(|a| a.body).ok_or_else(|| {
            Failure::Runtime(anyhow!(
                "no body is archived for {url} (its latest response had none)"
            ))
        })?;
        let mut out = std::io::stdout().lock();
        out.write_all(&body).context("writing the body")?;
        out.flush().context("writing the body")?;
        return Ok(());
    }
    let links_in = frontier.backlinks(url.as_str()).context("reading links")?;
    // The text as indexed: the last content extracted again, art left out as the index does.
    let content = match &details.content_hash {
        Some(hash) => frontier
            .archived_body(hash)
            .context("reading the archive")?,
        None => None,
    };
    let meta = details
        .content_meta
        .clone()
        .or(details.mime.clone())
        .unwrap_or_default();
    let extracted = (content.is_some() || details.in_index)
        .then(|| geode::content::extract(&url, &meta, content.as_deref().unwrap_or_default()));
    let lang = extracted.as_ref().and_then(|e| {
        e.lang
            .as_deref()
            .and_then(geode::index::analysis::normalize_lang)
            .map(|l| (l, "declared"))
            .or_else(|| {
                let sample: String = format!("{}\n{}", e.title, e.body)
                    .chars()
                    .take(2048)
                    .collect();
                geode::index::analysis::detect_lang(&sample).map(|l| (l.to_string(), "detected"))
            })
    });
    if args.json {
        let doc = serde_json::json!({
            "url": details.url,
            "details": details,
            "response": archived.as_ref().map(|a| serde_json::json!({
                "status": a.status,
                "meta": a.meta,
                "fetched_at": a.fetched_at,
                "cert_sha256": a.cert_sha256,
                "body_hash": a.body_hash,
                "body_bytes": a.body.as_ref().map(Vec::len),
            })),
            "links_in": links_in,
            "title": extracted.as_ref().map(|e| e.title.clone()),
            "lang": lang.as_ref().map(|(l, _)| l.clone()),
            "text": extracted.as_ref().map(|e| e.body.clone()),
        });
        super::put_line(&doc.to_string())?;
        return Ok(());
    }
    let mut out = String::new();
    let mut row = |name: &str, value: String| out.push_str(&format!("{name:<14}{value}\n"));
    row("URL", details.url.clone());
    row("capsule", details.capsule.clone());
    row(
        "state",
        format!(
            "{}{}",
            details.state,
            if details.in_index {
                ", in the index"
            } else {
                ", not in the index"
            }
        ),
    );
    if let Some(status) = details.status {
        row(
            "status",
            format!("{status} {}", details.meta.clone().unwrap_or_default()),
        );
    }
    if let Some(error) = &details.error {
        row("error", error.clone());
    }
    row(
        "fetched",
        when(details.fetched_at.map(|t| t.to_string()).as_deref()),
    );
    row(
        "next visit",
        match details.due_at {
            Some(t) => when(Some(&t.to_string())),
            None if details.state == "new" => "when first claimed".into(),
            None => "never".into(),
        },
    );
    if let Some(secs) = details.revisit_secs {
        row(
            "interval",
            format!(
                "{} (visits {}, changes {})",
                geode::human::duration(secs),
                details.visits,
                details.changes
            ),
        );
    }
    if let Some(since) = details.first_failed_at {
        row("failing since", when(Some(&since.to_string())));
    }
    if let Some(size) = details.size {
        row("size", geode::human::size(size));
    }
    if let Some(hash) = &details.content_hash {
        row("body SHA-256", hash.clone());
    }
    if let Some(mime) = &details.mime {
        row("type", mime.clone());
    }
    if let Some((lang, how)) = &lang {
        row("language", format!("{lang} ({how})"));
    }
    if let Some(e) = &extracted {
        row("title", e.title.clone());
    }
    if details.feed {
        row("feed", "yes: revisited at --revisit-min".into());
    }
    if let Some(to) = &details.redirect_to {
        row("redirects to", to.clone());
    }
    if let Some(of) = &details.alias_of {
        row("indexed as", of.clone());
    }
    out.push_str(&format!("\nlinks out ({})\n", details.links_out.len()));
    for l in &details.links_out {
        out.push_str(&format!("  {} {}\n", l.url, l.label));
    }
    out.push_str(&format!("\nlinks in ({})\n", links_in.len()));
    for l in &links_in {
        out.push_str(&format!("  {} {}\n", l.url, l.label));
    }
    if let Some(e) = &extracted {
        out.push_str("\nindexed text\n");
        out.push_str(&e.body);
        out.push('\n');
    }
    super::put(&out)?;
    Ok(())
}

pub(crate) fn export(args: ExportArgs) -> Result<(), Failure> {
    let frontier = args.store.open()?;
    let out: Box<dyn Write> = if args.warc.as_os_str() == "-" {
        Box::new(std::io::stdout().lock())
    } else {
        Box::new(
            std::fs::File::create(&args.warc)
                .with_context(|| format!("creating {}", args.warc.display()))?,
        )
    };
    let mut warc =
        geode::warc::WarcWriter::new(std::io::BufWriter::new(out), geode::clock::unix_now())
            .context("writing the WARC")?;
    let mut after = 0;
    loop {
        let chunk = frontier
            .archived_responses(after, args.since.unwrap_or(0), 500)
            .context("reading the archive")?;
        let Some((last, _, _)) = chunk.last() else {
            break;
        };
        after = *last;
        for (_, url, response) in chunk {
            let header = format!("{:02} {}", response.status, response.meta);
            warc.response(
                &url,
                response.fetched_at,
                header.trim_end(),
                response.body.as_deref().unwrap_or_default(),
            )
            .context("writing the WARC")?;
        }
    }
    let records = warc.records();
    warc.finish().context("writing the WARC")?;
    eprintln!(
        "geode: wrote {} response records to {}",
        records - 1,
        args.warc.display()
    );
    Ok(())
}
