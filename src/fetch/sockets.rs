//! The socket budget: how many crawler sockets may be open at once, derived from the process's
//! file-descriptor limit, so that a crawl of thousands of capsules never runs out of descriptors.
//!
//! A socket counts from before `connect` until its descriptor is really closed: the permit lives
//! beside the stream and is released only when the stream is dropped, which closes the descriptor
//! (a socket whose peer closed first, in CLOSE_WAIT, still counts until then). When the budget is
//! spent, new connections wait. Descriptors the OS refuses anyway (EMFILE/ENFILE, for instance
//! when other code holds more files than expected) are back-pressure too: the fetch waits and
//! tries again within its connect time limit.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Descriptors kept back from the budget for everything else: the index (segment files during
/// merges), the crawl database and its journal, logs, the runtime's own descriptors.
fn reserve_for(limit: u64) -> u64 {
    (limit / 8).clamp(32, 512)
}

/// The file-descriptor limit before and after [`raise_nofile_limit`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NofileLimit {
    pub soft_before: u64,
    pub soft: u64,
    pub hard: u64,
}

/// Reads RLIMIT_NOFILE.
fn nofile_rlimit() -> std::io::Result<libc::rlimit> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct we own and reads nothing else.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(lim)
}

/// Raises the soft RLIMIT_NOFILE to the hard limit, as far as the OS allows.
// `rlim_t` is not u64 on every platform, so the casts are kept.
#[allow(clippy::unnecessary_cast)]
pub fn raise_nofile_limit() -> std::io::Result<NofileLimit> {
    let mut lim = nofile_rlimit()?;
    let before = lim.rlim_cur as u64;
    if lim.rlim_cur < lim.rlim_max {
        let raised = libc::rlimit {
            rlim_cur: lim.rlim_max,
            rlim_max: lim.rlim_max,
        };
        // SAFETY: setrlimit reads the struct we own.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            lim.rlim_cur = lim.rlim_max;
        }
    }
    Ok(NofileLimit {
        soft_before: before,
        soft: lim.rlim_cur as u64,
        hard: lim.rlim_max as u64,
    })
}

/// The current soft RLIMIT_NOFILE.
#[allow(clippy::unnecessary_cast)]
pub fn nofile_limit() -> std::io::Result<u64> {
    Ok(nofile_rlimit()?.rlim_cur as u64)
}

/// The number of sockets a process with this descriptor limit may have open for crawling.
pub fn budget_for(limit: u64) -> usize {
    let budget = limit.saturating_sub(reserve_for(limit)).max(1);
    usize::try_from(budget)
        .unwrap_or(usize::MAX)
        .min(Semaphore::MAX_PERMITS)
}

#[derive(Debug)]
struct Counters {
    open: AtomicUsize,
    high_water: AtomicUsize,
}

/// Shared by every fetch of a crawl; cheap to clone.
#[derive(Debug, Clone)]
pub struct SocketBudget {
    permits: Arc<Semaphore>,
    size: usize,
    counters: Arc<Counters>,
}

/// One socket's place in the budget; dropping it gives the place back.
#[derive(Debug)]
pub struct SocketPermit {
    _permit: OwnedSemaphorePermit,
    counters: Arc<Counters>,
}

impl Drop for SocketPermit {
    fn drop(&mut self) {
        self.counters.open.fetch_sub(1, Ordering::Relaxed);
    }
}

impl SocketBudget {
    pub fn new(size: usize) -> Self {
        let size = size.max(1);
        SocketBudget {
            permits: Arc::new(Semaphore::new(size)),
            size,
            counters: Arc::new(Counters {
                open: AtomicUsize::new(0),
                high_water: AtomicUsize::new(0),
            }),
        }
    }

    /// Waits for a place in the budget.
    pub async fn acquire(&self) -> SocketPermit {
        let permit = Arc::clone(&self.permits)
            .acquire_owned()
            .await
            .expect("the budget's semaphore is never closed");
        let open = self.counters.open.fetch_add(1, Ordering::Relaxed) + 1;
        self.counters.high_water.fetch_max(open, Ordering::Relaxed);
        SocketPermit {
            _permit: permit,
            counters: Arc::clone(&self.counters),
        }
    }

    /// The most sockets a crawl may hold at once.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Sockets open now.
    pub fn open(&self) -> usize {
        self.counters.open.load(Ordering::Relaxed)
    }

    /// The most sockets that were open at once.
    pub fn high_water(&self) -> usize {
        self.counters.high_water.load(Ordering::Relaxed)
    }
}

/// Whether an I/O error means the process or the system is out of descriptors.
pub fn is_descriptor_exhaustion(e: &std::io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EMFILE) | Some(libc::ENFILE))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budgets_leave_room_for_everything_else() {
        assert_eq!(budget_for(64), 32);
        assert_eq!(budget_for(1024), 896);
        assert_eq!(budget_for(1_048_576), 1_048_576 - 512);
        assert_eq!(budget_for(10), 1, "never zero");
    }

    #[tokio::test]
    async fn permits_count_until_dropped_and_waiters_wait() {
        let budget = SocketBudget::new(2);
        let a = budget.acquire().await;
        let b = budget.acquire().await;
        assert_eq!(budget.open(), 2);
        let waiting =
            tokio::time::timeout(std::time::Duration::from_millis(50), budget.acquire()).await;
        assert!(waiting.is_err(), "a third socket waits while two are open");
        drop(a);
        let c = budget.acquire().await;
        assert_eq!(budget.open(), 2);
        drop((b, c));
        assert_eq!(budget.open(), 0);
        assert_eq!(budget.high_water(), 2);
    }

    #[test]
    fn the_limit_can_be_read_and_raised() {
        let lim = raise_nofile_limit().unwrap();
        assert!(lim.soft >= lim.soft_before);
        assert!(lim.soft <= lim.hard);
    }

    #[test]
    fn descriptor_exhaustion_is_recognised() {
        assert!(is_descriptor_exhaustion(
            &std::io::Error::from_raw_os_error(libc::EMFILE)
        ));
        assert!(!is_descriptor_exhaustion(
            &std::io::Error::from_raw_os_error(libc::ECONNREFUSED)
        ));
    }
}
