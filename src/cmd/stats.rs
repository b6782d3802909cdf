//! `geode stats`: what the data directory holds, the crawl schedule and the archive.

use anyhow::Context;

use super::when;
use crate::cli::StatsArgs;
use crate::Failure;
use geode::index::{IndexError, SearchIndex};

pub(crate) fn stats(args: StatsArgs) -> Result<(), Failure> {
    let data = &args.data.data;
    // The index first: when it cannot be opened, that is the problem to report, even if the
    // crawl database is missing as well (a crawl killed while it was starting).
    let documents = match SearchIndex::open(&geode::datadir::index_path(data)) {
        Ok(index) => index.num_docs(),
        Err(IndexError::Missing(_)) => 0,
        Err(e) => return Err(Failure::Runtime(e.into())),
    };
    let frontier = super::read_frontier(data, args.frontier.as_deref())?;
    let now = geode::clock::unix_now();
    let stats = frontier.stats(now).context("reading the crawl database")?;
    if args.json {
        let mut value = serde_json::to_value(&stats).context("encoding JSON")?;
        value["index_documents"] = documents.into();
        super::put_line(&value.to_string())?;
        return Ok(());
    }
    let mut out = String::new();
    let mut row = |name: &str, value: String| out.push_str(&format!("{name:<28}{value}\n"));
    row("pages indexed", stats.pages_indexed.to_string());
    row("documents in the index", documents.to_string());
    row("URLs known", stats.urls_known.to_string());
    row("capsules", stats.hosts.to_string());
    row("capsules in back-off", stats.hosts_in_backoff.to_string());
    row("capsules held back", stats.capsules_held_back.to_string());
    row(
        "certificate changes",
        format!("{} capsules", stats.certificate_changes),
    );
    row("duplicate pages", stats.duplicates.to_string());
    row("query endpoints (10/11)", stats.query_endpoints.to_string());
    row("URLs awaiting a retry", stats.awaiting_retry.to_string());
    row(
        "last crawl started",
        when(stats.last_crawl_started.as_deref()),
    );
    row(
        "last crawl finished",
        when(stats.last_crawl_finished.as_deref()),
    );
    out.push_str("\nURLs by state\n");
    for (state, n) in &stats.by_state {
        out.push_str(&format!("  {state:<26}{n}\n"));
    }
    out.push_str("\nresponses by status\n");
    for (status, n) in &stats.by_status {
        out.push_str(&format!("  {status:<26}{n}\n"));
    }
    if !stats.errors.is_empty() {
        out.push_str("\nerrors (no response)\n");
        for (kind, n) in &stats.errors {
            out.push_str(&format!("  {kind:<26}{n}\n"));
        }
    }
    if !stats.excluded.is_empty() {
        out.push_str("\nnot fetched\n");
        for (why, n) in &stats.excluded {
            out.push_str(&format!("  {why:<26}{n}\n"));
        }
    }
    let s = &stats.schedule;
    out.push_str("\nrevisit schedule\n");
    for (name, n) in [
        ("due now", s.due_now),
        ("due within a day", s.due_within_day),
        ("due within a week", s.due_within_week),
        ("never visited", s.never_visited),
        ("never again (52/excluded)", s.never_again),
        ("feeds", s.feeds),
        ("failing, still searchable", s.failing_but_searchable),
    ] {
        out.push_str(&format!("  {name:<26}{n}\n"));
    }
    let a = &stats.archive;
    out.push_str("\narchive\n");
    out.push_str(&format!("  {:<26}{}\n", "responses", a.responses));
    out.push_str(&format!(
        "  {:<26}{} ({} stored, {:.0}% of their size)\n",
        "distinct bodies",
        a.bodies,
        geode::human::size(a.stored_bytes),
        a.stored_bytes as f64 * 100.0 / a.raw_bytes.max(1) as f64
    ));
    out.push_str("\nrevisit intervals\n");
    for (bucket, n) in &s.intervals {
        out.push_str(&format!("  {bucket:<26}{n}\n"));
    }
    if !stats.held_back.is_empty() {
        out.push_str("\ncapsules held back for a later run (crawl budget)\n");
        for h in &stats.held_back {
            out.push_str(&format!(
                "  {:<26}{} until {}\n",
                h.host,
                h.reason,
                when(Some(&h.until.to_string())),
            ));
        }
        if stats.capsules_held_back > stats.held_back.len() as u64 {
            out.push_str(&format!(
                "  ... and {} more\n",
                stats.capsules_held_back - stats.held_back.len() as u64
            ));
        }
    }
    if !stats.certificates_changed.is_empty() {
        out.push_str("\ncertificates changed (accepted and pinned)\n");
        for c in &stats.certificates_changed {
            out.push_str(&format!(
                "  {:<26}{} change(s); current one first seen {}, last seen {}\n",
                c.host,
                c.changes,
                when(c.current_since.map(|t| t.to_string()).as_deref()),
                when(c.last_seen.map(|t| t.to_string()).as_deref()),
            ));
        }
    }
    super::put(&out)?;
    Ok(())
}
