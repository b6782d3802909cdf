//! The visits of a [`PgBatch`], written together: [`Batch::record_visit`](crate::frontier::Batch)
//! keeps each in memory and the batch writes them in one statement when it commits, or sooner,
//! before any statement whose answer or effect they could change. A page's visit was a round
//! trip of its own; a batch of visits is one. The statement does for each visit what the
//! SQLite store's `record_visit` does: the state, schedule, content and index operation
//! written, fenced by the URL's shard (a visit to a shard the crawler lost is refused and
//! logged), and the content hash the URL had before returned, so that its body is forgotten
//! at commit if nothing else needs it. The same statement locks, under the same fence, the
//! rows of pages whose links the batch writes next without a visit of theirs: a page's links
//! are written only where the transaction holds its row (see `batch/links.rs`).

use std::collections::BTreeMap;

use super::PgBatch;
use crate::frontier::postgres::shard::fence;
use crate::frontier::postgres::Result;
use crate::frontier::{IndexOp, VisitRecord};

/// A visit kept until the batch writes it: the columns of [`RECORD_VISITS`].
pub(super) struct PendingVisit {
    state: &'static str,
    status: Option<i64>,
    meta: String,
    error: Option<String>,
    mime: Option<String>,
    size: Option<i64>,
    content_hash: Option<String>,
    fetched_at: i64,
    due_at: Option<i64>,
    revisit_secs: i64,
    first_failed_at: Option<i64>,
    prio: i64,
    feed: bool,
    changed: bool,
    index_op: Option<&'static str>,
    redirect_to: Option<i64>,
    content_meta: Option<String>,
    has_validators: bool,
    etag: Option<String>,
    last_modified: Option<String>,
}

impl PendingVisit {
    pub(super) fn of(visit: &VisitRecord<'_>) -> PendingVisit {
        let r = visit.result;
        let (has_validators, etag, last_modified) = match &r.validators {
            Some((etag, modified)) => (true, etag.clone(), modified.clone()),
            None => (false, None, None),
        };
        PendingVisit {
            state: visit.state.as_str(),
            status: r.status.map(i64::from),
            meta: r.meta.clone(),
            error: r.error.clone(),
            mime: r.mime.clone(),
            size: r.size.map(|s| s.min(i64::MAX as u64) as i64),
            content_hash: r.content_hash.clone(),
            fetched_at: r.fetched_at,
            due_at: visit.due_at,
            revisit_secs: visit.revisit_secs,
            first_failed_at: visit.first_failed_at,
            prio: visit.prio as i64,
            feed: visit.feed,
            changed: visit.changed,
            index_op: visit.index_op.map(IndexOp::as_str),
            redirect_to: visit.redirect_to,
            content_meta: r.content_meta.clone(),
            has_validators,
            etag,
            last_modified,
        }
    }

    /// The content hash the visit records for its URL (`None`: the URL keeps its own).
    pub(super) fn content_hash(&self) -> Option<&str> {
        self.content_hash.as_deref()
    }

    /// The index operation the visit records (`None`: the URL keeps its own).
    pub(super) fn index_op(&self) -> Option<&'static str> {
        self.index_op
    }
}

/// Records visits (`$1`..`$21`, one array a column), each fenced by the crawler's shards
/// (`$22` the crawler, `$23`/`$24` its shards and epochs), and returns each URL recorded with
/// the content hash it had before (from the statement's snapshot, taken before the update)
/// and `true`. A URL comes once at most: the batch writes what it has before it takes a second
/// visit of the same URL.
///
/// It also locks the rows of the URLs `$25` (pages whose links the batch is about to write
/// without a visit of theirs in this statement), under the same fence, and returns each it
/// locked with `false`. A page's links are written only by a transaction holding its URL's
/// row, taken by a statement before the links statement (`batch/links.rs`): a second writer
/// of the same page (a crawler that lost its shard and has not noticed yet) waits for the
/// first to commit, and its links statement then sees the links the first wrote.
static RECORD_VISITS: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    format!(
        "WITH v AS (
             SELECT * FROM unnest($1::BIGINT[], $2::TEXT[], $3::BIGINT[], $4::TEXT[],
                                  $5::TEXT[], $6::TEXT[], $7::BIGINT[], $8::TEXT[],
                                  $9::BIGINT[], $10::BIGINT[], $11::BIGINT[], $12::BIGINT[],
                                  $13::BIGINT[], $14::BOOLEAN[], $15::BOOLEAN[], $16::TEXT[],
                                  $17::BIGINT[], $18::TEXT[], $19::BOOLEAN[], $20::TEXT[],
                                  $21::TEXT[])
                 AS v(id, state, status, meta, error, mime, size, content_hash, fetched_at,
                      due_at, revisit_secs, first_failed_at, prio, feed, changed, index_op,
                      redirect_to, content_meta, has_validators, etag, last_modified)),
         before AS (SELECT u.id, u.content_hash FROM urls u JOIN v ON v.id = u.id),
         visited AS (
         UPDATE urls SET state = v.state, status = v.status, meta = v.meta, error = v.error,
                mime = COALESCE(v.mime, urls.mime), size = COALESCE(v.size, urls.size),
                content_hash = COALESCE(v.content_hash, urls.content_hash),
                content_meta = COALESCE(v.content_meta, urls.content_meta),
                fetched_at = v.fetched_at,
                etag = CASE WHEN v.has_validators THEN v.etag ELSE urls.etag END,
                last_modified = CASE WHEN v.has_validators THEN v.last_modified
                                     ELSE urls.last_modified END,
                due_at = v.due_at, revisit_secs = v.revisit_secs,
                first_failed_at = v.first_failed_at, prio = v.prio, feed = v.feed,
                changes = urls.changes + CASE WHEN v.changed THEN 1 ELSE 0 END,
                changed_at = CASE WHEN v.changed THEN v.fetched_at ELSE urls.changed_at END,
                visits = urls.visits + 1, attempts = 0, claimed = 2, claimed_by = $22,
                index_op = COALESCE(v.index_op, urls.index_op), redirect_to = v.redirect_to,
                batch = CASE WHEN v.index_op IS NULL THEN urls.batch END
         FROM v
         WHERE urls.id = v.id AND {fence}
         RETURNING urls.id, (SELECT b.content_hash FROM before b WHERE b.id = urls.id) AS old),
         held AS (
             SELECT id FROM urls WHERE id = ANY($25::BIGINT[]) AND {fence}
             ORDER BY id FOR NO KEY UPDATE)
         SELECT id, old, TRUE FROM visited
         UNION ALL
         SELECT id, NULL, FALSE FROM held",
        fence = fence(22, 23, 24)
    )
});

/// The columns of [`RECORD_VISITS`], one array each.
#[derive(Default)]
struct Columns<'v> {
    id: Vec<i64>,
    state: Vec<&'static str>,
    status: Vec<Option<i64>>,
    meta: Vec<&'v str>,
    error: Vec<Option<&'v str>>,
    mime: Vec<Option<&'v str>>,
    size: Vec<Option<i64>>,
    content_hash: Vec<Option<&'v str>>,
    fetched_at: Vec<i64>,
    due_at: Vec<Option<i64>>,
    revisit_secs: Vec<i64>,
    first_failed_at: Vec<Option<i64>>,
    prio: Vec<i64>,
    feed: Vec<bool>,
    changed: Vec<bool>,
    index_op: Vec<Option<&'static str>>,
    redirect_to: Vec<Option<i64>>,
    content_meta: Vec<Option<&'v str>>,
    has_validators: Vec<bool>,
    etag: Vec<Option<&'v str>>,
    last_modified: Vec<Option<&'v str>>,
}

impl<'v> Columns<'v> {
    fn push(&mut self, id: i64, v: &'v PendingVisit) {
        self.id.push(id);
        self.state.push(v.state);
        self.status.push(v.status);
        self.meta.push(&v.meta);
        self.error.push(v.error.as_deref());
        self.mime.push(v.mime.as_deref());
        self.size.push(v.size);
        self.content_hash.push(v.content_hash.as_deref());
        self.fetched_at.push(v.fetched_at);
        self.due_at.push(v.due_at);
        self.revisit_secs.push(v.revisit_secs);
        self.first_failed_at.push(v.first_failed_at);
        self.prio.push(v.prio);
        self.feed.push(v.feed);
        self.changed.push(v.changed);
        self.index_op.push(v.index_op);
        self.redirect_to.push(v.redirect_to);
        self.content_meta.push(v.content_meta.as_deref());
        self.has_validators.push(v.has_validators);
        self.etag.push(v.etag.as_deref());
        self.last_modified.push(v.last_modified.as_deref());
    }
}

impl PgBatch<'_> {
    /// Writes the visits kept so far, in one statement ([`RECORD_VISITS`]), which also locks
    /// the rows of the pages whose links are kept and that the transaction does not hold yet;
    /// the bodies of the content the visits replaced are forgotten at commit if nothing else
    /// needs them.
    pub(super) fn write_visits(&mut self) -> Result<()> {
        let unheld: Vec<i64> = self
            .kept
            .links
            .keys()
            .filter(|id| !self.kept.visits.contains_key(id) && !self.kept.held_urls.contains(id))
            .copied()
            .collect();
        if self.kept.visits.is_empty() && unheld.is_empty() {
            return Ok(());
        }
        let mut visits: BTreeMap<i64, PendingVisit> = std::mem::take(&mut self.kept.visits);
        let mut c = Columns::default();
        for (&id, visit) in &visits {
            c.push(id, visit);
        }
        let crawler = self.kept.crawler.clone();
        let (shards, epochs) = self.kept.fence.clone();
        let rows = self.rows_now(
            &RECORD_VISITS,
            &[
                &c.id,
                &c.state,
                &c.status,
                &c.meta,
                &c.error,
                &c.mime,
                &c.size,
                &c.content_hash,
                &c.fetched_at,
                &c.due_at,
                &c.revisit_secs,
                &c.first_failed_at,
                &c.prio,
                &c.feed,
                &c.changed,
                &c.index_op,
                &c.redirect_to,
                &c.content_meta,
                &c.has_validators,
                &c.etag,
                &c.last_modified,
                &crawler,
                &shards,
                &epochs,
                &unheld,
            ],
        )?;
        for row in rows {
            let id: i64 = row.get(0);
            self.kept.held_urls.insert(id);
            if !row.get::<_, bool>(2) {
                continue;
            }
            if let Some(visit) = visits.remove(&id) {
                self.forget_replaced_content(row.get(1), visit.content_hash());
            }
        }
        // What is left was not recorded.
        for id in visits.keys() {
            // Its shard is another crawler's now (or the URL is gone): the visit is refused.
            tracing::warn!(url_id = id, "visit not recorded: its shard was lost");
        }
        Ok(())
    }
}
