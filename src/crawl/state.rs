//! What one crawl holds while it runs: the [`Crawl`] that the loop ([`super::driver`]), the
//! recording of results ([`super::record`]) and the leases ([`super::lease`]) all work on, the
//! follow-ups recorded results leave for the loop, and the way out to the indexing thread and to
//! progress displays.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use tokio::sync::Semaphore;

use super::budget::Budgets;
use super::hold::{self, Hold};
use super::indexing::{IndexMsg, IndexSender};
use super::scheduler::Scheduler;
use super::{CrawlConfig, CrawlError, CrawlSummary, Progress};
use crate::fetch::sockets::SocketBudget;
use crate::fetch::Fetcher;
use crate::frontier::{Batch, QueuedUrl};

/// One crawl run, owned by the loop's task.
pub(super) struct Crawl {
    pub(super) config: CrawlConfig,
    pub(super) fetcher: Fetcher,
    /// Extractions running at once: one per core, beside the I/O threads.
    pub(super) parsers: Arc<Semaphore>,
    pub(super) progress: Option<tokio::sync::watch::Sender<Progress>>,
    pub(super) scheduler: Scheduler<QueuedUrl>,
    pub(super) index_tx: Option<IndexSender>,
    pub(super) summary: CrawlSummary,
    /// When this run began (unix seconds): robots.txt read before it is read again.
    pub(super) run_started: i64,
    /// What recorded results ask the loop to do once their transaction is committed.
    pub(super) effects: Effects,
    /// Capsules this run tried to reach, and those that answered anything.
    pub(super) tried: HashSet<i64>,
    pub(super) answered: HashSet<i64>,
    /// The certificate each capsule answered with, and when the store last heard of it: a
    /// capsule showing the same one again within a minute is not written again.
    pub(super) pinned: HashMap<i64, (String, i64)>,
    /// New and changed documents waiting for their capsule to be done, to be written once
    /// with the anchors its other pages give them.
    pub(super) hold: Hold,
    /// What each capsule touched in this run may still request, and its trap shapes.
    pub(super) budgets: Budgets,
}

/// Follow-ups of recorded results, done after their transaction commits.
#[derive(Debug, Default)]
pub(super) struct Effects {
    /// New URLs were added: the frontier may have more due.
    pub(super) new_urls: bool,
    /// Capsules that got new URLs: a leased one may be refilled.
    pub(super) wake: BTreeSet<i64>,
    /// Entries new in a feed (URL id, capsule id), claimed ahead of their capsule's queue.
    pub(super) hubs: Vec<(i64, i64)>,
    /// Capsules that could not be reached, with the error kind and message.
    pub(super) unreachable: Vec<(i64, String, String)>,
}

impl Crawl {
    pub(super) fn new(
        config: CrawlConfig,
        socket_budget: usize,
        index_tx: IndexSender,
        progress: Option<tokio::sync::watch::Sender<Progress>>,
        run_started: i64,
    ) -> Crawl {
        Crawl {
            summary: CrawlSummary {
                socket_budget,
                ..CrawlSummary::default()
            },
            fetcher: {
                let mut fetcher =
                    Fetcher::new(config.limits.clone(), SocketBudget::new(socket_budget));
                if let Some(contact) = &config.contact {
                    if let Err(e) = fetcher.set_contact(contact) {
                        tracing::warn!("--contact left out: {e}");
                    }
                }
                fetcher
            },
            progress,
            parsers: Arc::new(Semaphore::new(
                std::thread::available_parallelism()
                    .map(|n| n.get())
                    .unwrap_or(2),
            )),
            scheduler: Scheduler::new(config.min_delay),
            index_tx: Some(index_tx),
            run_started,
            effects: Effects::default(),
            tried: HashSet::new(),
            answered: HashSet::new(),
            pinned: HashMap::new(),
            // A crawler of a shared store indexes nothing itself: nothing to hold.
            hold: Hold::new(config.shared.is_none(), hold::MAX_BYTES, hold::MAX_AGE),
            budgets: Budgets::default(),
            config,
        }
    }

    /// Commits a transaction, then sends the index messages of what it recorded: the index
    /// never gets ahead of the frontier.
    pub(super) fn commit(
        &mut self,
        batch: Box<dyn Batch + '_>,
        docs: &mut Vec<IndexMsg>,
    ) -> Result<(), CrawlError> {
        // A shared store's crawler indexes nothing itself (its index messages are discarded;
        // the index writer reads only what is committed): its loop goes on while the
        // database commits.
        if self.config.shared.is_some() {
            batch.commit_soon()?;
        } else {
            batch.commit()?;
        }
        for msg in docs.drain(..) {
            self.send_to_index(msg)?;
        }
        Ok(())
    }

    pub(super) fn send_to_index(&mut self, msg: IndexMsg) -> Result<(), CrawlError> {
        let sent = self
            .index_tx
            .as_ref()
            .map(|tx| tx.send(msg))
            .unwrap_or(false);
        if sent {
            Ok(())
        } else {
            // The thread ended early; its own error is reported when it is joined.
            Err(CrawlError::IndexerStopped(
                "it ended during the crawl".into(),
            ))
        }
    }

    pub(super) fn publish_progress(&self) {
        if let Some(tx) = &self.progress {
            tx.send_replace(Progress {
                pages_fetched: self.summary.fetched,
                errors: self.summary.failed,
                new: self.summary.new,
                changed: self.summary.changed,
                unchanged: self.summary.unchanged,
                removed: self.summary.removed,
                queued: self.scheduler.queued(),
                in_flight: self.scheduler.in_flight(),
                open_sockets: self.fetcher.sockets().open(),
                capsules_backed_off: self.summary.capsules_backed_off,
                slow_downs: self.summary.slow_downs,
            });
        }
    }

    pub(super) fn log_progress(&self) {
        tracing::info!(
            fetched = self.summary.fetched,
            new = self.summary.new,
            changed = self.summary.changed,
            unchanged = self.summary.unchanged,
            removed = self.summary.removed,
            failed = self.summary.failed,
            queued = self.scheduler.queued(),
            in_flight = self.scheduler.in_flight(),
            robots_excluded = self.summary.robots_excluded,
            capsules_backed_off = self.summary.capsules_backed_off,
            open_sockets = self.fetcher.sockets().open(),
            "crawl progress"
        );
    }
}
