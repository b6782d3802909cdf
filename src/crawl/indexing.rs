//! The indexing thread: the one place that holds the Tantivy writer during a crawl.
//!
//! It adds the documents the crawl loop sends and commits on size or time. Each commit follows
//! the same three steps, so that a crash between any two of them leaves the frontier and the
//! index in agreement after `Frontier::recover`:
//! 1. tag the batch's URLs with the next sequence number in the frontier,
//! 2. commit Tantivy with that sequence number as the commit payload,
//! 3. apply the tagged URLs' operations to `in_index` in the frontier.
//!
//! Anchor refreshes ([`IndexMsg::Refresh`]) rewrite committed documents; the crawl asks for them
//! only after a [`IndexMsg::Flush`], and forgets the anchor updates only once the thread has
//! committed them (when it ends), so a crash simply refreshes them again.

use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::frontier::Frontier;
use crate::index::{Indexer, PageDoc};

use super::CrawlError;

/// A message to the indexing thread.
pub enum IndexMsg {
    /// Add (or replace) a page; `url_id` is its frontier id, already recorded `pending`.
    Upsert { url_id: i64, doc: Box<PageDoc> },
    /// Remove a page; `url_id` is already recorded with its `delete` operation.
    Delete { url_id: i64, url: String },
    /// Rewrite a committed page with its current anchors (and own link labels, and a new body
    /// for files known by their header).
    Refresh {
        url: String,
        anchors: String,
        link_labels: String,
        body: Option<String>,
    },
    /// Commit now and say so: the crawl waits for this before reading what is committed.
    Flush(SyncSender<()>),
}

/// When to commit.
#[derive(Debug, Clone, Copy)]
pub struct CommitPolicy {
    pub max_docs: usize,
    pub max_age: Duration,
}

/// Totals reported by the thread when it ends.
#[derive(Debug, Clone, Copy, Default)]
pub struct IndexingSummary {
    pub documents: u64,
    pub commits: u64,
    /// Documents rewritten with new anchors.
    pub refreshed: u64,
}

/// Starts the thread. Dropping every sender makes it commit what is left and stop.
pub fn spawn(
    indexer: Indexer,
    frontier: Box<dyn Frontier>,
    policy: CommitPolicy,
    capacity: usize,
) -> (
    SyncSender<IndexMsg>,
    JoinHandle<Result<IndexingSummary, CrawlError>>,
) {
    let (tx, rx) = std::sync::mpsc::sync_channel(capacity);
    let handle = std::thread::Builder::new()
        .name("geode-indexer".into())
        .spawn(move || run(indexer, frontier, policy, rx))
        .expect("spawning a thread only fails when the OS is out of resources");
    (tx, handle)
}

/// Starts a thread that takes the crawl's index messages and keeps none: a crawler of a shared
/// store indexes nothing itself. Its visits record their index operations in the store, where
/// the one index writer (`geode index`) finds them; a flush is answered at once.
pub fn spawn_discarding(
    capacity: usize,
) -> (
    SyncSender<IndexMsg>,
    JoinHandle<Result<IndexingSummary, CrawlError>>,
) {
    let (tx, rx) = std::sync::mpsc::sync_channel::<IndexMsg>(capacity);
    let handle = std::thread::Builder::new()
        .name("geode-no-index".into())
        .spawn(move || {
            for msg in rx {
                if let IndexMsg::Flush(ack) = msg {
                    let _ = ack.send(());
                }
            }
            Ok(IndexingSummary::default())
        })
        .expect("spawning a thread only fails when the OS is out of resources");
    (tx, handle)
}

struct Pending {
    ids: Vec<i64>,
    /// Refreshed documents since the last commit (no frontier operation to confirm).
    refreshes: usize,
    since: Option<Instant>,
}

fn run(
    mut indexer: Indexer,
    mut frontier: Box<dyn Frontier>,
    policy: CommitPolicy,
    rx: Receiver<IndexMsg>,
) -> Result<IndexingSummary, CrawlError> {
    let mut summary = IndexingSummary::default();
    let mut pending = Pending {
        ids: Vec::new(),
        refreshes: 0,
        since: None,
    };
    loop {
        let wait = match pending.since {
            Some(since) => policy.max_age.saturating_sub(since.elapsed()),
            None => Duration::from_secs(3600),
        };
        let url_id = match rx.recv_timeout(wait) {
            Ok(IndexMsg::Upsert { url_id, doc }) => {
                indexer.upsert(&doc)?;
                summary.documents += 1;
                url_id
            }
            Ok(IndexMsg::Delete { url_id, url }) => {
                indexer.delete(&url)?;
                url_id
            }
            Ok(IndexMsg::Refresh {
                url,
                anchors,
                link_labels,
                body,
            }) => {
                if indexer.refresh(&url, &anchors, &link_labels, body.as_deref())? {
                    summary.refreshed += 1;
                    pending.since.get_or_insert_with(Instant::now);
                    pending.refreshes += 1;
                    if pending.ids.len() + pending.refreshes >= policy.max_docs {
                        commit(&mut indexer, &mut *frontier, &mut pending, &mut summary)?;
                    }
                }
                continue;
            }
            Ok(IndexMsg::Flush(ack)) => {
                commit(&mut indexer, &mut *frontier, &mut pending, &mut summary)?;
                // The crawl may have given up waiting; nothing to tell then.
                let _ = ack.send(());
                continue;
            }
            Err(RecvTimeoutError::Timeout) => {
                commit(&mut indexer, &mut *frontier, &mut pending, &mut summary)?;
                continue;
            }
            Err(RecvTimeoutError::Disconnected) => {
                commit(&mut indexer, &mut *frontier, &mut pending, &mut summary)?;
                return Ok(summary);
            }
        };
        pending.ids.push(url_id);
        pending.since.get_or_insert_with(Instant::now);
        if pending.ids.len() + pending.refreshes >= policy.max_docs {
            commit(&mut indexer, &mut *frontier, &mut pending, &mut summary)?;
        }
    }
}

fn commit(
    indexer: &mut Indexer,
    frontier: &mut dyn Frontier,
    pending: &mut Pending,
    summary: &mut IndexingSummary,
) -> Result<(), CrawlError> {
    if pending.ids.is_empty() && pending.refreshes == 0 {
        return Ok(());
    }
    let seq = indexer.committed_seq() + 1;
    frontier.assign_batch(&pending.ids, seq)?;
    indexer.commit(seq)?;
    frontier.mark_committed(seq)?;
    tracing::debug!(
        seq,
        documents = pending.ids.len(),
        refreshed = pending.refreshes,
        "index commit"
    );
    summary.commits += 1;
    pending.ids.clear();
    pending.refreshes = 0;
    pending.since = None;
    Ok(())
}
