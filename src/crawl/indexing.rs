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
//! committed them (when it ends), so a crash simply refreshes them again. A flush comes at the
//! end of a crawl, so from then on Tantivy starts no merges of its own: the run's end merges the
//! index once ([`Indexer::compact`], on the writer the thread hands back when it ends), and
//! merges started meanwhile would be redone there, beside it, at the run's memory peak.
//!
//! What waits for the thread is bounded in bytes, not only in messages: the crawl queues each
//! message in the thread's inbox ([`IndexSender`]) while the inbox holds less than
//! [`QUEUED_BYTES`] (and fewer messages than asked), and otherwise waits. Pages of a few
//! megabytes each thus never pile up by the thousand.

use std::collections::VecDeque;
use std::sync::mpsc::{RecvTimeoutError, SyncSender};
use std::sync::{Arc, Condvar, Mutex};
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

/// What the thread hands back when it ends: its totals, and the index writer, with the merges
/// Tantivy started still running (see [`Indexer::compact`]).
pub type Indexed = Result<(IndexingSummary, Option<Indexer>), CrawlError>;

/// Totals reported by the thread when it ends.
#[derive(Debug, Clone, Copy, Default)]
pub struct IndexingSummary {
    pub documents: u64,
    pub commits: u64,
    /// Documents rewritten with new anchors.
    pub refreshed: u64,
}

/// Bytes of messages (the text of their documents) queued for the indexing thread at most,
/// besides the one it works on and the one being handed over.
pub const QUEUED_BYTES: usize = 8 * 1024 * 1024;

/// The crawl's end of the indexing thread's inbox. Dropping it lets the thread commit what is
/// left and stop.
pub struct IndexSender(Arc<Inbox>);

impl IndexSender {
    /// Queues `msg` once there is room, waiting while the inbox is full; false when the thread
    /// has stopped.
    pub fn send(&self, msg: IndexMsg) -> bool {
        self.0.push(msg)
    }
}

impl Drop for IndexSender {
    fn drop(&mut self) {
        self.0.close();
    }
}

/// Starts the thread, with room for `capacity` messages (and [`QUEUED_BYTES`]) waiting for it.
/// Dropping the sender makes it commit what is left and stop.
pub fn spawn(
    indexer: Indexer,
    frontier: Box<dyn Frontier>,
    policy: CommitPolicy,
    capacity: usize,
) -> (IndexSender, JoinHandle<Indexed>) {
    map_large_buffers();
    let inbox = Arc::new(Inbox::new(QUEUED_BYTES, capacity.max(1)));
    let taken = Arc::clone(&inbox);
    let handle = std::thread::Builder::new()
        .name("geode-indexer".into())
        .spawn(move || {
            let ran = run(indexer, frontier, policy, &taken);
            taken.abandon();
            ran
        })
        .expect("spawning a thread only fails when the OS is out of resources");
    (IndexSender(inbox), handle)
}

/// Allocations from this size up are mapped on their own (and unmapped when freed).
const MMAP_THRESHOLD: usize = 256 * 1024;

/// Has glibc's malloc map every allocation of [`MMAP_THRESHOLD`] or more on its own, for the
/// rest of the process: a crawl's large buffers (bodies, documents, the index writer's arena)
/// come and go by the megabyte on a dozen threads, and freed memory should go back to the
/// system at once. By default glibc raises that threshold to the size of each mapped block
/// freed (up to 32 MiB), so after the first large page such buffers came from the threads'
/// heaps, where what was freed stayed: on a world of 4 MiB pages, 130-180 MB of a crawl's
/// resident memory was freed memory kept (the crawl starts its indexing thread before its
/// first request, so this is set before any body is read).
fn map_large_buffers() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets a parameter of glibc's allocator; it takes no pointer.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD as libc::c_int);
    }
}

/// The bytes a message holds while it waits.
fn msg_bytes(msg: &IndexMsg) -> usize {
    const BOOKKEEPING: usize = 256;
    BOOKKEEPING
        + match msg {
            IndexMsg::Upsert { doc, .. } => doc.text_bytes(),
            IndexMsg::Delete { url, .. } => url.len(),
            IndexMsg::Refresh {
                url,
                anchors,
                link_labels,
                body,
            } => {
                url.len() + anchors.len() + link_labels.len() + body.as_ref().map_or(0, String::len)
            }
            IndexMsg::Flush(_) => 0,
        }
}

/// The messages waiting for the indexing thread, bounded in bytes and in number.
struct Inbox {
    state: Mutex<Queue>,
    /// Signalled when a message arrives or the inbox closes.
    arrived: Condvar,
    /// Signalled when a message leaves or the inbox closes.
    left: Condvar,
    max_bytes: usize,
    max_msgs: usize,
}

#[derive(Default)]
struct Queue {
    msgs: VecDeque<(IndexMsg, usize)>,
    bytes: usize,
    /// No message comes in any more: the crawl or the indexing thread ended.
    closed: bool,
}

impl Inbox {
    fn new(max_bytes: usize, max_msgs: usize) -> Inbox {
        Inbox {
            state: Mutex::new(Queue::default()),
            arrived: Condvar::new(),
            left: Condvar::new(),
            max_bytes,
            max_msgs,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues `msg` once there is room (at once into an empty queue, whatever its size).
    /// False when the inbox is closed.
    fn push(&self, msg: IndexMsg) -> bool {
        let bytes = msg_bytes(&msg);
        let mut queue = self.lock();
        while !queue.closed
            && !queue.msgs.is_empty()
            && (queue.bytes.saturating_add(bytes) > self.max_bytes
                || queue.msgs.len() >= self.max_msgs)
        {
            queue = self.left.wait(queue).unwrap_or_else(|e| e.into_inner());
        }
        if queue.closed {
            return false;
        }
        queue.bytes += bytes;
        queue.msgs.push_back((msg, bytes));
        self.arrived.notify_one();
        true
    }

    /// The next message, waiting at most `wait` for one; disconnected once the inbox is
    /// closed and empty.
    fn pop(&self, wait: Duration) -> Result<IndexMsg, RecvTimeoutError> {
        let deadline = Instant::now() + wait;
        let mut queue = self.lock();
        loop {
            if let Some((msg, bytes)) = queue.msgs.pop_front() {
                queue.bytes -= bytes;
                self.left.notify_one();
                return Ok(msg);
            }
            if queue.closed {
                return Err(RecvTimeoutError::Disconnected);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(RecvTimeoutError::Timeout);
            }
            queue = self
                .arrived
                .wait_timeout(queue, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// Lets nothing more in (the crawl dropped its sender); what is queued can still be taken.
    fn close(&self) {
        self.lock().closed = true;
        self.arrived.notify_all();
        self.left.notify_all();
    }

    /// Lets nothing more in and drops what is queued (the indexing thread ended): a flush
    /// waiting there tells its sender so, by dropping its acknowledgement.
    fn abandon(&self) {
        let dropped = {
            let mut queue = self.lock();
            queue.closed = true;
            queue.bytes = 0;
            std::mem::take(&mut queue.msgs)
        };
        drop(dropped);
        self.arrived.notify_all();
        self.left.notify_all();
    }
}

/// Starts a thread that takes the crawl's index messages and keeps none: a crawler of a shared
/// store indexes nothing itself. Its visits record their index operations in the store, where
/// the one index writer (`geode index`) finds them; a flush is answered at once.
pub fn spawn_discarding(capacity: usize) -> (IndexSender, JoinHandle<Indexed>) {
    map_large_buffers();
    let inbox = Arc::new(Inbox::new(QUEUED_BYTES, capacity.max(1)));
    let taken = Arc::clone(&inbox);
    let handle = std::thread::Builder::new()
        .name("geode-no-index".into())
        .spawn(move || {
            loop {
                match taken.pop(Duration::from_secs(3600)) {
                    Ok(IndexMsg::Flush(ack)) => {
                        let _ = ack.send(());
                    }
                    Ok(_) | Err(RecvTimeoutError::Timeout) => {}
                    Err(RecvTimeoutError::Disconnected) => break,
                }
            }
            Ok((IndexingSummary::default(), None))
        })
        .expect("spawning a thread only fails when the OS is out of resources");
    (IndexSender(inbox), handle)
}

struct Pending {
    ids: Vec<i64>,
    /// Refreshed documents since the last commit (no frontier operation to confirm).
    refreshes: usize,
    since: Option<Instant>,
}

impl Pending {
    /// Whether what waits for a commit is due for one: [`CommitPolicy::max_docs`] documents,
    /// or the first of them waiting [`CommitPolicy::max_age`]. The age counts while documents
    /// keep arriving too: until a commit the writer holds every replaced URL and every new
    /// page's near-duplicate bands, so a fast crawl must not wait for the count alone.
    fn due(&self, policy: &CommitPolicy) -> bool {
        self.ids.len() + self.refreshes >= policy.max_docs
            || self
                .since
                .is_some_and(|since| since.elapsed() >= policy.max_age)
    }
}

fn run(
    mut indexer: Indexer,
    mut frontier: Box<dyn Frontier>,
    policy: CommitPolicy,
    inbox: &Inbox,
) -> Indexed {
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
        let url_id = match inbox.pop(wait) {
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
                    if pending.due(&policy) {
                        commit(&mut indexer, &mut *frontier, &mut pending, &mut summary)?;
                    }
                }
                continue;
            }
            Ok(IndexMsg::Flush(ack)) => {
                indexer.stop_merging();
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
                indexer.stop_merging();
                commit(&mut indexer, &mut *frontier, &mut pending, &mut summary)?;
                return Ok((summary, Some(indexer)));
            }
        };
        pending.ids.push(url_id);
        pending.since.get_or_insert_with(Instant::now);
        if pending.due(&policy) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};

    fn delete(url_id: i64, url_bytes: usize) -> IndexMsg {
        IndexMsg::Delete {
            url_id,
            url: "x".repeat(url_bytes),
        }
    }

    fn id(msg: IndexMsg) -> i64 {
        match msg {
            IndexMsg::Delete { url_id, .. } => url_id,
            _ => -1,
        }
    }

    #[test]
    fn a_commit_is_due_on_count_or_on_the_age_of_the_first_waiting_document() {
        let policy = CommitPolicy {
            max_docs: 3,
            max_age: Duration::from_secs(10),
        };
        let mut pending = Pending {
            ids: vec![1, 2],
            refreshes: 0,
            since: Some(Instant::now()),
        };
        assert!(!pending.due(&policy), "two young documents wait");
        pending.refreshes = 1;
        assert!(pending.due(&policy), "refreshes count with documents");
        pending.refreshes = 0;
        // Documents still arriving do not hold back a commit that is due by age.
        pending.since = Instant::now().checked_sub(Duration::from_secs(11));
        assert!(pending.since.is_some());
        assert!(pending.due(&policy), "the first document waited too long");
        let empty = Pending {
            ids: Vec::new(),
            refreshes: 0,
            since: None,
        };
        assert!(!empty.due(&policy));
    }

    #[test]
    fn the_inbox_holds_messages_up_to_its_bytes_then_the_sender_waits() {
        let inbox = Arc::new(Inbox::new(10_000, 100));
        assert!(inbox.push(delete(1, 4_000)));
        assert!(inbox.push(delete(2, 4_000)));
        let pushed = Arc::new(AtomicBool::new(false));
        let sender = {
            let (inbox, pushed) = (Arc::clone(&inbox), Arc::clone(&pushed));
            std::thread::spawn(move || {
                assert!(inbox.push(delete(3, 4_000)));
                pushed.store(true, Ordering::SeqCst);
            })
        };
        std::thread::sleep(Duration::from_millis(100));
        assert!(
            !pushed.load(Ordering::SeqCst),
            "over 10,000 bytes: it waits"
        );
        assert_eq!(id(inbox.pop(Duration::ZERO).unwrap()), 1);
        sender.join().unwrap();
        assert!(pushed.load(Ordering::SeqCst));
        assert_eq!(id(inbox.pop(Duration::ZERO).unwrap()), 2);
        assert_eq!(id(inbox.pop(Duration::ZERO).unwrap()), 3);
        assert!(matches!(
            inbox.pop(Duration::from_millis(10)),
            Err(RecvTimeoutError::Timeout)
        ));
        // A message larger than the whole inbox still gets into an empty one.
        assert!(inbox.push(delete(4, 50_000)));
        inbox.close();
        assert!(!inbox.push(delete(5, 1)), "closed: nothing more comes in");
        assert_eq!(
            id(inbox.pop(Duration::ZERO).unwrap()),
            4,
            "what was queued is taken"
        );
        assert!(matches!(
            inbox.pop(Duration::ZERO),
            Err(RecvTimeoutError::Disconnected)
        ));
    }

    #[test]
    fn the_inbox_holds_at_most_its_number_of_messages() {
        let inbox = Arc::new(Inbox::new(usize::MAX, 2));
        assert!(inbox.push(delete(1, 1)));
        assert!(inbox.push(delete(2, 1)));
        let sender = {
            let inbox = Arc::clone(&inbox);
            std::thread::spawn(move || inbox.push(delete(3, 1)))
        };
        std::thread::sleep(Duration::from_millis(50));
        assert!(!sender.is_finished());
        assert_eq!(id(inbox.pop(Duration::ZERO).unwrap()), 1);
        assert!(sender.join().unwrap());
    }

    #[test]
    fn an_abandoned_inbox_drops_what_waits_and_lets_its_sender_go() {
        let inbox = Arc::new(Inbox::new(2_000, 100));
        let (ack, acked) = std::sync::mpsc::sync_channel(1);
        assert!(inbox.push(IndexMsg::Flush(ack)));
        assert!(inbox.push(delete(1, 900)));
        let sender = {
            let inbox = Arc::clone(&inbox);
            std::thread::spawn(move || inbox.push(delete(2, 900)))
        };
        std::thread::sleep(Duration::from_millis(50));
        inbox.abandon();
        assert!(
            !sender.join().unwrap(),
            "the waiting sender hears it is closed"
        );
        assert!(
            acked.recv().is_err(),
            "the flush will never be acknowledged"
        );
    }
}
