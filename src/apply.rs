//! `geode index`: the one index writer of a shared crawl. Crawlers of a shared store
//! (`geode crawl --frontier postgres://...`) index nothing: each visit records its index
//! operation (upsert or delete) and archives the response in the store. This applies them to
//! the Tantivy index of one data directory, and exits, or keeps going (`--follow`).
//!
//! Each round follows the crawl's three steps of a commit, so a crash anywhere loses nothing:
//! tag the pending operations with the next sequence number, write their documents (built from
//! the archive by the crawl's own document builder, as `reindex` does) and commit Tantivy with
//! that number, then confirm the tagged operations in the store. A visit that records a new
//! operation on a URL clears its tag, so an operation that changed while it was being applied
//! is not confirmed, and is applied again in the next round. Operations tagged but not
//! confirmed when the writer died are applied again (documents are upserted by URL). A page
//! of a capsule a live crawler leases waits until the crawler lets it go (the store leaves it
//! out, up to `frontier::HOLD_MAX_AGE`), so that its capsule's links to it are known when its
//! document is written, and its pending anchor updates are forgotten with that commit. When no
//! operation is left, anchor updates are applied, a commit for each thousand, with the
//! operations that came meanwhile applied between them (a crawl marks nearly every page's
//! anchors, and the pages fetched since would otherwise wait for all of them). Once caught
//! up, `--follow` commits at most every [`COMMIT_GAP`]. At the end,
//! link authority is computed from the store's link graph, as at the end of a crawl.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::datadir::lock;
use crate::document;
use crate::from_archive::{self, WriteError};
use crate::frontier::{Frontier, IndexOp, Location, PendingOp};
use crate::index::Indexer;

/// What a run of the index writer did.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct ApplySummary {
    /// Documents written or rewritten.
    pub upserted: u64,
    pub deleted: u64,
    /// Pages whose content the archive lacks (left pending; a crawl fetches them again).
    pub missing: u64,
    /// Documents rewritten for new anchors.
    pub refreshed: u64,
    /// Pages left for now when the writer ended: their capsule's crawler still leases it (see
    /// `IndexLog::pending_index_ops`); a later run, or `--follow`, writes them.
    pub held: u64,
    pub commits: u64,
    /// The longest a page applied waited between its fetch and the index commit holding it
    /// (seconds, by the clock of the crawler that fetched it): how far the writer lagged.
    pub max_lag_secs: i64,
    pub elapsed_secs: f64,
}

/// Operations applied per commit.
const CHUNK: usize = 1000;

/// How long `--follow` waits when nothing is pending, or nothing it may apply yet: the pages of
/// a capsule a crawler leases become applicable when it lets the capsule go, and a shorter
/// wait is a shorter lag (a poll is two indexed reads).
const IDLE: Duration = Duration::from_millis(500);

/// The least time between two commits of `--follow` while a crawl goes on, unless a round
/// fills a chunk. Each commit writes a segment, and Tantivy merges what commits write: a
/// commit every half second while crawlers fetch 700-950 pages a second made the writer the
/// machine's largest user of CPU on the shared-crawl bench. A page waits at most this much
/// longer for its document.
const COMMIT_GAP: Duration = Duration::from_secs(2);

/// Applies the pending index operations of the store at `location` to the index in
/// `data_dir`, until none is left, or, with `follow`, until `stop` says so. An error stops the
/// writer; what is committed stays.
pub fn apply(
    location: &Location,
    data_dir: &Path,
    follow: bool,
    stop: &dyn Fn() -> bool,
) -> Result<ApplySummary, WriteError> {
    let started = Instant::now();
    std::fs::create_dir_all(data_dir)
        .map_err(|e| WriteError::Io(format!("data directory {}", data_dir.display()), e))?;
    let _lock = lock::DataDirLock::acquire(data_dir)?;
    let index_dir = crate::datadir::index_path(data_dir);
    let mut indexer = Indexer::open_or_create(&index_dir)?;
    let mut frontier = location.open()?;
    let mut seq = indexer.committed_seq();
    // Operations the last commit holds, if the writer died before confirming them.
    frontier.mark_committed(seq)?;
    let mut summary = ApplySummary::default();
    // Where a pass over the anchor updates is, while one is under way: it goes a chunk at a
    // time, and operations that came meanwhile are applied between chunks, so that a crawl's
    // worth of anchor updates does not hold back the pages fetched since.
    let mut anchors_after = None;
    // When the last round that left nothing pending committed: what comes after it waits for
    // the gap, so that it goes in one commit.
    let mut caught_up_at: Option<Instant> = None;
    loop {
        if let (true, Some(at)) = (follow, caught_up_at) {
            pause_until(at + COMMIT_GAP, stop);
        }
        let applied = apply_round(&mut *frontier, &mut indexer, &mut seq, &mut summary)?;
        if applied > 0 {
            caught_up_at = (applied < CHUNK).then(Instant::now);
            continue;
        }
        let after = anchors_after.unwrap_or(0);
        anchors_after = refresh_anchors(&mut *frontier, &mut indexer, seq, after, &mut summary)?;
        if anchors_after.is_some() && !(follow && stop()) {
            continue;
        }
        if !follow || stop() {
            break;
        }
        std::thread::sleep(IDLE);
        if stop() {
            break;
        }
    }
    summary.held = frontier.held_index_ops()?;
    // Everything applied (not a stop): searches until the next run read one or two segments.
    if !follow {
        crate::index::compact_or_warn(&mut indexer);
    }
    drop(indexer);
    crate::authority::update(&mut *frontier, &index_dir, &[]);
    summary.elapsed_secs = started.elapsed().as_secs_f64();
    Ok(summary)
}

/// Sleeps until `at`, a little at a time, or until `stop` says so.
fn pause_until(at: Instant, stop: &dyn Fn() -> bool) {
    loop {
        let left = at.saturating_duration_since(Instant::now());
        if left.is_zero() || stop() {
            return;
        }
        std::thread::sleep(left.min(IDLE));
    }
}

/// One commit's worth of pending operations. Returns how many it applied (0: none was
/// ready).
fn apply_round(
    frontier: &mut dyn Frontier,
    indexer: &mut Indexer,
    seq: &mut u64,
    summary: &mut ApplySummary,
) -> Result<usize, WriteError> {
    let mut ops = Vec::new();
    let mut after = 0;
    while ops.len() < CHUNK {
        let more = frontier.pending_index_ops(after, CHUNK - ops.len())?;
        let Some(last) = more.last() else { break };
        after = last.page.id;
        ops.extend(more);
    }
    // The bodies and anchors of the whole round are read at once (a shared store answers
    // each in one statement). Pages whose content is not archived stay pending: nothing can
    // be written for them.
    let hashes: Vec<&str> = ops
        .iter()
        .filter(|op| op.op == IndexOp::Upsert)
        .filter_map(|op| op.page.content_hash.as_deref())
        .collect();
    let bodies = frontier.archived_bodies(&hashes)?;
    let body_of = |op: &PendingOp| match (&op.op, &op.page.content_hash) {
        (IndexOp::Upsert, Some(hash)) => bodies.get(hash).map(Vec::as_slice),
        _ => None,
    };
    let mut ready = Vec::new();
    for op in ops {
        if op.op == IndexOp::Upsert && from_archive::missing(&op.page, body_of(&op)) {
            summary.missing += 1;
            continue;
        }
        ready.push(op);
    }
    if ready.is_empty() {
        return Ok(0);
    }
    let upserts: Vec<i64> = ready
        .iter()
        .filter(|op| op.op == IndexOp::Upsert)
        .map(|op| op.page.id)
        .collect();
    // Their pending anchor updates are read before their labels: a document written with
    // labels read after a mark owes that mark nothing, and a mark made again meanwhile stays.
    let marked = frontier.anchor_marks_of(&upserts)?;
    let mut anchors = frontier.inbound_labels_of(&upserts, document::MAX_ANCHORS)?;
    let next = *seq + 1;
    let ids: Vec<i64> = ready.iter().map(|op| op.page.id).collect();
    frontier.assign_batch(&ids, next)?;
    for op in &ready {
        let page = &op.page;
        match op.op {
            IndexOp::Delete => {
                indexer.delete(&page.url)?;
                summary.deleted += 1;
            }
            IndexOp::Upsert => {
                let labels = anchors.remove(&page.id).unwrap_or_default().join("\n");
                if from_archive::upsert_with_anchors(indexer, page, body_of(op), labels)? {
                    summary.upserted += 1;
                }
            }
        }
    }
    indexer.commit(next)?;
    frontier.mark_committed(next)?;
    if !marked.is_empty() {
        frontier.clear_anchor_updates(&marked)?;
    }
    *seq = next;
    summary.commits += 1;
    // The lag: how long the oldest page of the round waited since its fetch.
    let lag_secs = ready
        .iter()
        .filter(|op| op.op == IndexOp::Upsert && op.page.fetched_at > 0)
        .map(|op| op.page.fetched_at)
        .min()
        .map_or(0, |oldest| (crate::clock::unix_now() - oldest).max(0));
    summary.max_lag_secs = summary.max_lag_secs.max(lag_secs);
    tracing::info!(
        operations = ready.len(),
        seq = next,
        lag_secs,
        "applied index operations"
    );
    Ok(ready.len())
}

/// Rewrites the committed documents of the next chunk of anchor updates after URL id
/// `after`, whose inbound link labels changed, then forgets those updates once that is
/// committed. Returns where the next chunk starts, `None` when there was none.
fn refresh_anchors(
    frontier: &mut dyn Frontier,
    indexer: &mut Indexer,
    seq: u64,
    after: i64,
    summary: &mut ApplySummary,
) -> Result<Option<i64>, WriteError> {
    let updates = frontier.anchor_updates(after, CHUNK)?;
    let Some(last) = updates.last().map(|u| u.dirty_id) else {
        return Ok(None);
    };
    let mut ids: Vec<i64> = updates
        .iter()
        .filter_map(|u| u.page.as_ref().map(|p| p.id))
        .collect();
    ids.sort_unstable();
    ids.dedup();
    let mut inbound = frontier.inbound_labels_of(&ids, document::MAX_ANCHORS)?;
    let mut own = frontier.own_labels_of(&ids)?;
    let mut handled = Vec::with_capacity(updates.len());
    for update in updates {
        handled.push(update.dirty_id);
        let Some(page) = update.page else { continue };
        // Several dirty URLs may stand for one page: its labels serve the first.
        let Some(anchors) = inbound.remove(&page.id) else {
            continue;
        };
        let anchors = anchors.join("\n");
        let labels = own.remove(&page.id).unwrap_or_default().join("\n");
        let body = document::refreshed_body(&page, &anchors);
        if indexer.refresh(&page.url, &anchors, &labels, body.as_deref())? {
            summary.refreshed += 1;
        }
    }
    // The same sequence number again: no operation is tagged with it.
    indexer.commit(seq)?;
    frontier.clear_anchor_updates(&handled)?;
    Ok(Some(last))
}
