//! The memory bodies take: one budget of bytes for every response body a crawl holds at once,
//! from its first bytes until the page made of it has been recorded.
//!
//! A body up to [`FREE_BYTES`] draws nothing: most pages are a few kilobytes, and they come and
//! go faster than any accounting would pay for. A body that grows past it waits for a
//! reservation of all it may still grow to (the fetch's body limit) before it reads on, then
//! keeps only what it took once it is complete. Reserving the whole limit at once, and waiting
//! while holding nothing, means that no two fetches can each hold part of the budget while
//! waiting for the rest: a fetch that has its reservation always finishes, and gives back. So
//! however many fetches run and however large their pages, the bodies in memory stay within
//! the budget, plus [`FREE_BYTES`] per fetch.
//!
//! Waiting is the crawl's own queue, not the server's slowness: a lease's [`WaitMeter`] counts
//! the time waited, and the response's time limit leaves it out (up to four limits more).
//!
//! The reservation travels with the body as a [`BodyLease`]: the crawl keeps it beside the page
//! extracted from the body, and the bytes go back to the budget when that page is dropped.
//!
//! Reading HTML builds a document tree of about ten times the page ([`TREE_BYTES_PER_BYTE`]),
//! so large HTML bodies also take room in a second budget, for trees, while they are read
//! ([`MemoryBudget::tree_room`]). A body waits for it holding its own lease but nothing else
//! the tree budget's holders wait for (they wait only for a parser thread, which always
//! finishes), so the waits never close a circle.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::Semaphore;

/// Bytes of a body read before it draws on the budget.
pub const FREE_BYTES: usize = 64 * 1024;

/// Bytes of HTML from which reading a body takes room in the tree budget: smaller pages make
/// small trees, and most HTML pages are smaller.
pub const TREE_FREE_BYTES: usize = 256 * 1024;

/// What a document tree takes per byte of HTML, rounded up: 7 to 10 on pages of small elements
/// (with html5ever, in `content::dom`), about 1 on text.
pub const TREE_BYTES_PER_BYTE: usize = 10;

/// The bytes every fetch's body may hold together; cheap to clone (clones share the budget).
#[derive(Clone, Debug)]
pub struct MemoryBudget {
    semaphore: Arc<Semaphore>,
    bytes: usize,
    trees: Arc<Semaphore>,
    tree_bytes: usize,
}

impl MemoryBudget {
    /// A budget of `bytes` for bodies, and of `tree_bytes` for the trees of large HTML pages.
    pub fn new(bytes: usize, tree_bytes: usize) -> MemoryBudget {
        MemoryBudget {
            semaphore: Arc::new(Semaphore::new(bytes.min(Semaphore::MAX_PERMITS))),
            bytes,
            trees: Arc::new(Semaphore::new(tree_bytes.min(Semaphore::MAX_PERMITS))),
            tree_bytes,
        }
    }

    /// Waits for room to build the tree of an HTML body of `html_bytes` (at most the whole
    /// tree budget; nothing under [`TREE_FREE_BYTES`]); the room is given back when the lease
    /// is dropped.
    pub async fn tree_room(&self, html_bytes: usize) -> TreeLease {
        if html_bytes < TREE_FREE_BYTES {
            return TreeLease { _permit: None };
        }
        let want = html_bytes
            .saturating_mul(TREE_BYTES_PER_BYTE)
            .min(self.tree_bytes)
            .min(u32::MAX as usize);
        TreeLease {
            _permit: Arc::clone(&self.trees)
                .acquire_many_owned(want as u32)
                .await
                .ok(),
        }
    }

    /// The budget's size.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// The bytes no lease holds now.
    pub fn available(&self) -> usize {
        self.semaphore.available_permits()
    }

    /// A lease holding nothing yet, for one body.
    pub fn lease(&self) -> BodyLease {
        BodyLease {
            budget: Some(self.clone()),
            bytes: 0,
            meter: WaitMeter::default(),
        }
    }
}

/// Room for one document tree in a [`MemoryBudget`]; given back when dropped.
#[derive(Debug)]
pub struct TreeLease {
    _permit: Option<tokio::sync::OwnedSemaphorePermit>,
}

/// The part of a [`MemoryBudget`] one body holds; given back when dropped.
pub struct BodyLease {
    /// `None` for a lease outside any budget.
    budget: Option<MemoryBudget>,
    bytes: usize,
    meter: WaitMeter,
}

/// How long a body has waited for its reservation so far, the wait under way included; cheap
/// to clone, and readable while the fetch holding the lease runs. The fetch layer's response
/// time limit leaves this time out: it is the crawl's own queue, not the server's slowness.
#[derive(Clone, Debug, Default)]
pub struct WaitMeter(Arc<std::sync::Mutex<Waits>>);

#[derive(Debug, Default)]
struct Waits {
    done: Duration,
    since: Option<Instant>,
}

impl WaitMeter {
    /// The time waited, up to now.
    pub fn waited(&self) -> Duration {
        // A poisoned lock means a panic between two plain assignments: the values still hold.
        let waits = self.0.lock().unwrap_or_else(|p| p.into_inner());
        waits.done + waits.since.map_or(Duration::ZERO, |s| s.elapsed())
    }

    pub(super) fn start(&self) {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).since = Some(Instant::now());
    }

    pub(super) fn stop(&self) {
        let mut waits = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(since) = waits.since.take() {
            waits.done += since.elapsed();
        }
    }
}

impl BodyLease {
    /// A lease that holds nothing and never waits: for bodies read outside a crawl's budget.
    pub fn none() -> BodyLease {
        BodyLease {
            budget: None,
            bytes: 0,
            meter: WaitMeter::default(),
        }
    }

    /// Bytes held.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// How long the body waited for its reservation.
    pub fn waited(&self) -> Duration {
        self.meter.waited()
    }

    /// The meter of this body's waits, to read while the body is being read.
    pub fn meter(&self) -> WaitMeter {
        self.meter.clone()
    }

    /// Makes room for a body about to grow past `len` bytes that may reach `limit` in all:
    /// nothing while it is within [`FREE_BYTES`] or the reservation already made, else a wait
    /// for all of `limit` (at most the whole budget, which could never give more), holding
    /// nothing meanwhile.
    pub async fn room_for(&mut self, len: usize, limit: usize) {
        let Some(budget) = self.budget.clone() else {
            return;
        };
        let whole = budget.bytes.min(u32::MAX as usize);
        if len < FREE_BYTES || len < self.bytes || self.bytes >= limit.min(whole) {
            return;
        }
        let want = limit.max(len + 1).min(whole);
        self.give_back(self.bytes);
        self.meter.start();
        // The semaphore is never closed.
        if let Ok(permit) = budget.semaphore.acquire_many(want as u32).await {
            self.bytes = permit.num_permits();
            permit.forget();
        }
        self.meter.stop();
    }

    /// Keeps only what a body of `len` bytes takes (nothing under [`FREE_BYTES`]).
    pub fn shrink_to(&mut self, len: usize) {
        let keep = if len < FREE_BYTES {
            0
        } else {
            len.min(self.bytes)
        };
        self.give_back(self.bytes - keep);
    }

    fn give_back(&mut self, bytes: usize) {
        if let Some(budget) = &self.budget {
            if bytes > 0 {
                budget.semaphore.add_permits(bytes);
            }
        }
        self.bytes -= bytes;
    }
}

impl Drop for BodyLease {
    fn drop(&mut self) {
        self.give_back(self.bytes);
    }
}

impl std::fmt::Debug for BodyLease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BodyLease")
            .field("bytes", &self.bytes)
            .field("waited", &self.meter.waited())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_body_reserves_its_limit_past_the_free_bytes_and_keeps_what_it_took() {
        let budget = MemoryBudget::new(10 << 20, 0);
        let mut lease = budget.lease();
        lease.room_for(1000, 4 << 20).await;
        lease.room_for(FREE_BYTES - 1, 4 << 20).await;
        assert_eq!(lease.bytes(), 0, "small bodies draw nothing");
        lease.room_for(FREE_BYTES, 4 << 20).await;
        assert_eq!(lease.bytes(), 4 << 20, "the whole limit at once");
        lease.room_for(3 << 20, 4 << 20).await;
        assert_eq!(
            lease.bytes(),
            4 << 20,
            "within the reservation: nothing more"
        );
        lease.shrink_to(1 << 20);
        assert_eq!(lease.bytes(), 1 << 20);
        assert_eq!(budget.available(), 9 << 20);
        drop(lease);
        assert_eq!(budget.available(), 10 << 20);
        let mut small = budget.lease();
        small.room_for(FREE_BYTES, 4 << 20).await;
        small.shrink_to(FREE_BYTES - 1);
        assert_eq!(
            small.bytes(),
            0,
            "a body under the free bytes keeps nothing"
        );
    }

    #[tokio::test]
    async fn a_body_waits_holding_nothing_until_another_gives_back() {
        let budget = MemoryBudget::new(6 << 20, 0);
        let mut first = budget.lease();
        first.room_for(FREE_BYTES, 4 << 20).await;
        let mut second = budget.lease();
        second.room_for(FREE_BYTES, 1 << 20).await;
        assert_eq!(second.bytes(), 1 << 20, "1 MiB fits beside 4");
        let waiting = {
            let budget = budget.clone();
            tokio::spawn(async move {
                let mut third = budget.lease();
                third.room_for(FREE_BYTES, 4 << 20).await;
                (third.bytes(), third.waited())
            })
        };
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!waiting.is_finished(), "4 MiB do not fit beside 5");
        // The second body grows past its reservation: it gives back its 1 MiB and waits in
        // turn, behind the third.
        let grows = tokio::spawn(async move {
            second.room_for(1 << 20, 4 << 20).await;
            second.bytes()
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!grows.is_finished());
        drop(first);
        let (bytes, waited) = waiting.await.unwrap();
        assert_eq!(bytes, 4 << 20);
        assert!(waited >= Duration::from_millis(90), "{waited:?}");
        assert_eq!(grows.await.unwrap(), 4 << 20);
    }

    #[tokio::test]
    async fn a_limit_above_the_budget_is_cut_to_it_and_a_lease_outside_any_never_waits() {
        let budget = MemoryBudget::new(2 << 20, 0);
        let mut lease = budget.lease();
        lease.room_for(FREE_BYTES, 4 << 20).await;
        assert_eq!(lease.bytes(), 2 << 20);
        let mut none = BodyLease::none();
        none.room_for(3 << 20, 4 << 20).await;
        assert_eq!((none.bytes(), none.waited()), (0, Duration::ZERO));
    }

    #[tokio::test]
    async fn large_html_waits_for_room_for_its_tree() {
        let budget = MemoryBudget::new(8 << 20, 40 << 20);
        let _small = budget.tree_room(TREE_FREE_BYTES - 1).await;
        let first = budget.tree_room(3 << 20).await;
        let waiting = {
            let budget = budget.clone();
            tokio::spawn(async move { budget.tree_room(2 << 20).await })
        };
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(
            !waiting.is_finished(),
            "30 MiB taken of 40: 20 more do not fit"
        );
        drop(first);
        waiting.await.unwrap();
        // A page whose tree would pass the whole budget takes all of it, and waits no longer.
        let all = budget.tree_room(4 << 20).await;
        drop(all);
    }
}
