//! `geode stats`: what the data directory holds, the crawl schedule and the archive.

use std::fmt::Display;

use anyhow::Context;

use super::when;
use crate::cli::StatsArgs;
use crate::Failure;
use geode::index::{IndexError, SearchIndex};

pub(crate) fn stats(args: StatsArgs) -> Result<(), Failure> {
    let data = &args.store.data.data;
    // The index first: when it cannot be opened, that is the problem to report, even if the
    // crawl database is missing as well (a crawl killed while it was starting).
    let documents = match SearchIndex::open(&geode::datadir::index_path(data)) {
        Ok(index) => index.num_docs(),
        Err(IndexError::Missing(_)) => 0,
        Err(e) => return Err(Failure::Runtime(e.into())),
    };
    let frontier = args.store.open()?;
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
    section(&mut out, "URLs by state", pairs(&stats.by_state));
    section(&mut out, "responses by status", pairs(&stats.by_status));
    if !stats.errors.is_empty() {
        section(&mut out, "errors (no response)", pairs(&stats.errors));
    }
    if !stats.excluded.is_empty() {
        section(&mut out, "not fetched", pairs(&stats.excluded));
    }
    let s = &stats.schedule;
    let schedule = [
        ("due now", s.due_now),
        ("due within a day", s.due_within_day),
        ("due within a week", s.due_within_week),
        ("never visited", s.never_visited),
        ("never again (52/excluded)", s.never_again),
        ("feeds", s.feeds),
        ("failing, still searchable", s.failing_but_searchable),
    ];
    section(&mut out, "revisit schedule", schedule);
    let a = &stats.archive;
    let bodies = format!(
        "{} ({} stored, {:.0}% of their size)",
        a.bodies,
        geode::human::size(a.stored_bytes),
        a.stored_bytes as f64 * 100.0 / a.raw_bytes.max(1) as f64
    );
    let archive = [
        ("responses", a.responses.to_string()),
        ("distinct bodies", bodies),
    ];
    section(&mut out, "archive", archive);
    section(&mut out, "revisit intervals", pairs(&s.intervals));
    if !stats.held_back.is_empty() {
        let held = stats.held_back.iter().map(|h| {
            let until = when(Some(&h.until.to_string()));
            (&h.host, format!("{} until {until}", h.reason))
        });
        section(
            &mut out,
            "capsules held back for a later run (crawl budget)",
            held,
        );
        if stats.capsules_held_back > stats.held_back.len() as u64 {
            out.push_str(&format!(
                "  ... and {} more\n",
                stats.capsules_held_back - stats.held_back.len() as u64
            ));
        }
    }
    if !stats.certificates_changed.is_empty() {
        let changed = stats.certificates_changed.iter().map(|c| {
            let first = when(c.current_since.map(|t| t.to_string()).as_deref());
            let last = when(c.last_seen.map(|t| t.to_string()).as_deref());
            let changes = c.changes;
            let value =
                format!("{changes} change(s); current one first seen {first}, last seen {last}");
            (&c.host, value)
        });
        section(
            &mut out,
            "certificates changed (accepted and pinned)",
            changed,
        );
    }
    super::put(&out)?;
    Ok(())
}

/// One listing of the text: a blank line, its title, then a row a line, each name in a column
/// of 26 characters.
fn section<N: Display, V: Display>(
    out: &mut String,
    title: &str,
    rows: impl IntoIterator<Item = (N, V)>,
) {
    out.push_str(&format!("\n{title}\n"));
    for (name, value) in rows {
        out.push_str(&format!("  {name:<26}{value}\n"));
    }
}

/// The rows of a list of counts, for [`section`].
fn pairs<N, V>(list: &[(N, V)]) -> impl Iterator<Item = (&N, &V)> {
    list.iter().map(|(name, value)| (name, value))
}
