//! Per-client limits of `geode serve`, and the budget of connections that have not yet sent
//! their request.
//!
//! - A token bucket per client (requests per second with a burst; a client out of tokens is
//!   answered `44 <seconds>`).
//! - A cap on one client's simultaneous connections ([`ConnectionCounter`]; extra ones are
//!   closed at once).
//! - [`PendingConnections`]: a bounded set of connections still in their TLS handshake or
//!   request line. It never makes a newcomer wait: when it is full, admitting a connection
//!   evicts one already in it, the oldest of the client that holds the most. An idle TCP
//!   connection costs its opener nothing, so a budget that made newcomers wait for idle ones to
//!   time out (as a plain semaphore before `accept` does) would let a few hundred idle sockets
//!   lock every client out. With eviction, a flood of idle connections only ever displaces
//!   itself: a client with one connection in its handshake is evicted only when no client holds
//!   two, that is when the budget is full of distinct clients each mid-handshake.
//!
//! A client is an IPv4 address, or an IPv6 /64: one host gets a whole /64, so counting single
//! IPv6 addresses would let it walk around the limit. IPv4-mapped IPv6 addresses count as IPv4.
//!
//! The bucket table is bounded: when full, buckets that have refilled (idle clients) are dropped;
//! if every bucket is still in use, a new client goes unlimited rather than locking everyone
//! out, since the connection cap bounds the harm. Time is passed in, so the rules are tested
//! without sleeping. Not here: the budget of connections being answered (a semaphore in
//! `serve/mod.rs`) and the time limits.

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio::sync::oneshot;

/// The rate limit: `per_second` tokens flow into a bucket that holds at most `burst`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateLimit {
    pub per_second: f64,
    pub burst: u32,
}

/// Who a connection is, for the limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ClientKey {
    V4(u32),
    /// The /64 prefix.
    V6(u64),
}

impl ClientKey {
    pub fn of(ip: IpAddr) -> ClientKey {
        match ip.to_canonical() {
            IpAddr::V4(v4) => ClientKey::V4(u32::from(v4)),
            IpAddr::V6(v6) => ClientKey::V6((u128::from(v6) >> 64) as u64),
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    updated: Instant,
}

/// Token buckets per client. Thread-safe; each check holds a lock for a hash lookup.
#[derive(Debug)]
pub struct RateLimiter {
    limit: Option<RateLimit>,
    max_clients: usize,
    buckets: Mutex<HashMap<ClientKey, Bucket>>,
}

/// How many clients the table tracks at most.
pub const MAX_TRACKED_CLIENTS: usize = 100_000;

impl RateLimiter {
    /// `None` (or a zero rate or burst) disables the limit.
    pub fn new(limit: Option<RateLimit>) -> RateLimiter {
        RateLimiter::with_capacity(limit, MAX_TRACKED_CLIENTS)
    }

    fn with_capacity(limit: Option<RateLimit>, max_clients: usize) -> RateLimiter {
        let limit = limit.filter(|l| l.per_second > 0.0 && l.burst > 0);
        RateLimiter {
            limit,
            max_clients,
            buckets: Mutex::new(HashMap::new()),
        }
    }

    /// Takes one token for `ip` at `now`: `Ok` to serve, `Err(seconds)` to answer 44 with.
    pub fn check(&self, ip: IpAddr, now: Instant) -> Result<(), u64> {
        let Some(limit) = self.limit else {
            return Ok(());
        };
        let key = ClientKey::of(ip);
        let burst = f64::from(limit.burst);
        // A poisoned lock means a panic mid-update of plain numbers: the table is still usable.
        let mut buckets = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        if !buckets.contains_key(&key) && buckets.len() >= self.max_clients {
            buckets.retain(|_, b| refilled(b, now, limit) < burst);
            if buckets.len() >= self.max_clients {
                return Ok(());
            }
        }
        let bucket = buckets.entry(key).or_insert(Bucket {
            tokens: burst,
            updated: now,
        });
        bucket.tokens = refilled(bucket, now, limit);
        bucket.updated = now.max(bucket.updated);
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            Ok(())
        } else {
            let wait = ((1.0 - bucket.tokens) / limit.per_second).ceil();
            // At least a second (44's meta is whole seconds), at most a day.
            Err((wait as u64).clamp(1, 86_400))
        }
    }

    /// Clients tracked now (for tests and logs).
    pub fn tracked(&self) -> usize {
        self.buckets.lock().unwrap_or_else(|p| p.into_inner()).len()
    }
}

fn refilled(bucket: &Bucket, now: Instant, limit: RateLimit) -> f64 {
    let elapsed = now.saturating_duration_since(bucket.updated).as_secs_f64();
    (bucket.tokens + elapsed * limit.per_second).min(f64::from(limit.burst))
}

/// Open connections per client, capped.
#[derive(Debug, Clone)]
pub struct ConnectionCounter {
    max_per_client: usize,
    open: Arc<Mutex<HashMap<ClientKey, usize>>>,
}

/// One counted connection; the count drops with it.
#[derive(Debug)]
pub struct ConnectionSlot {
    key: ClientKey,
    open: Arc<Mutex<HashMap<ClientKey, usize>>>,
}

impl ConnectionCounter {
    /// `max_per_client` 0 means no cap.
    pub fn new(max_per_client: usize) -> ConnectionCounter {
        ConnectionCounter {
            max_per_client,
            open: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    /// A slot for a new connection from `ip`, or `None` when that client has its fill.
    pub fn try_open(&self, ip: IpAddr) -> Option<ConnectionSlot> {
        let key = ClientKey::of(ip);
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        let count = open.entry(key).or_insert(0);
        if self.max_per_client > 0 && *count >= self.max_per_client {
            return None;
        }
        *count += 1;
        Some(ConnectionSlot {
            key,
            open: Arc::clone(&self.open),
        })
    }

    /// Open connections of `ip`'s client.
    pub fn open_for(&self, ip: IpAddr) -> usize {
        let open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        open.get(&ClientKey::of(ip)).copied().unwrap_or(0)
    }
}

impl Drop for ConnectionSlot {
    fn drop(&mut self) {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(count) = open.get_mut(&self.key) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                open.remove(&self.key);
            }
        }
    }
}

/// Connections that have not yet sent their request, at most `capacity`; see the module doc.
#[derive(Debug, Clone)]
pub struct PendingConnections {
    inner: Arc<Mutex<PendingTable>>,
}

#[derive(Debug)]
struct PendingTable {
    capacity: usize,
    /// Admission number of the next connection: smaller is older.
    next: u64,
    len: usize,
    /// Per client, its pending connections by admission number, each with the sender that
    /// tells it to close.
    by_client: HashMap<ClientKey, BTreeMap<u64, oneshot::Sender<()>>>,
}

/// One pending connection's place; dropping it (the request arrived, or the connection ended)
/// frees the place.
#[derive(Debug)]
pub struct PendingSlot {
    key: ClientKey,
    id: u64,
    evicted: oneshot::Receiver<()>,
    table: Arc<Mutex<PendingTable>>,
}

impl PendingConnections {
    /// A budget of `capacity` connections (at least 1).
    pub fn new(capacity: usize) -> PendingConnections {
        PendingConnections {
            inner: Arc::new(Mutex::new(PendingTable {
                capacity: capacity.max(1),
                next: 0,
                len: 0,
                by_client: HashMap::new(),
            })),
        }
    }

    /// Admits a new connection from `ip`, evicting another one first when the budget is full.
    /// Returns the new connection's slot and whether a connection was evicted.
    pub fn admit(&self, ip: IpAddr) -> (PendingSlot, bool) {
        let key = ClientKey::of(ip);
        // A poisoned lock means a panic mid-update of plain maps; they are still consistent
        // enough to admit and evict (a stale entry only costs one place).
        let mut table = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let evicted = table.len >= table.capacity && table.evict_one();
        let id = table.next;
        table.next += 1;
        let (tell, evicted_rx) = oneshot::channel();
        table.by_client.entry(key).or_default().insert(id, tell);
        table.len += 1;
        let slot = PendingSlot {
            key,
            id,
            evicted: evicted_rx,
            table: Arc::clone(&self.inner),
        };
        (slot, evicted)
    }

    /// Connections pending now.
    pub fn len(&self) -> usize {
        self.inner.lock().unwrap_or_else(|p| p.into_inner()).len
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl PendingTable {
    /// Tells the oldest connection of the client with the most pending connections to close
    /// (of two clients with as many, the one whose oldest connection is older), and forgets
    /// it. `false` when there is nothing to evict.
    fn evict_one(&mut self) -> bool {
        let victim = self
            .by_client
            .iter()
            .filter_map(|(key, open)| open.keys().next().map(|&oldest| (*key, open.len(), oldest)))
            .max_by(|a, b| a.1.cmp(&b.1).then(b.2.cmp(&a.2)))
            .map(|(key, _, _)| key);
        let Some(key) = victim else {
            return false;
        };
        let Some(open) = self.by_client.get_mut(&key) else {
            return false;
        };
        let Some((_, tell)) = open.pop_first() else {
            return false;
        };
        if open.is_empty() {
            self.by_client.remove(&key);
        }
        self.len -= 1;
        // The connection may be closing on its own already; then nobody listens.
        let _ = tell.send(());
        true
    }
}

impl PendingSlot {
    /// Resolves when this connection has been evicted to make room; never otherwise.
    pub async fn evicted(&mut self) {
        if (&mut self.evicted).await.is_err() {
            // The budget is gone (the server is stopping): nobody will evict any more.
            std::future::pending::<()>().await;
        }
    }
}

impl Drop for PendingSlot {
    fn drop(&mut self) {
        let mut table = self.table.lock().unwrap_or_else(|p| p.into_inner());
        let Some(open) = table.by_client.get_mut(&self.key) else {
            return;
        };
        // Absent when this connection was evicted: its place is already free.
        if open.remove(&self.id).is_some() {
            if open.is_empty() {
                table.by_client.remove(&self.key);
            }
            table.len -= 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn clients_are_ipv4_addresses_and_ipv6_slash_64s() {
        let cases = [
            ("192.0.2.1", "192.0.2.1", true),
            ("192.0.2.1", "192.0.2.2", false),
            ("::ffff:192.0.2.1", "192.0.2.1", true),
            ("2001:db8:1:2::1", "2001:db8:1:2:ffff::9", true),
            ("2001:db8:1:2::1", "2001:db8:1:3::1", false),
            ("::1", "127.0.0.1", false),
        ];
        for (a, b, same) in cases {
            assert_eq!(
                ClientKey::of(ip(a)) == ClientKey::of(ip(b)),
                same,
                "{a} {b}"
            );
        }
    }

    #[test]
    fn a_burst_passes_then_44_with_the_wait_then_tokens_return() {
        let limiter = RateLimiter::new(Some(RateLimit {
            per_second: 2.0,
            burst: 5,
        }));
        let t0 = Instant::now();
        let a = ip("192.0.2.1");
        for i in 0..5 {
            assert_eq!(limiter.check(a, t0), Ok(()), "request {i} of the burst");
        }
        assert_eq!(limiter.check(a, t0), Err(1));
        // Another client is not affected.
        assert_eq!(limiter.check(ip("192.0.2.2"), t0), Ok(()));
        // Half a second brings one token at 2/s.
        assert_eq!(limiter.check(a, t0 + Duration::from_millis(500)), Ok(()));
        assert_eq!(limiter.check(a, t0 + Duration::from_millis(500)), Err(1));
        // A long pause refills to the burst, no more.
        let later = t0 + Duration::from_secs(3600);
        for _ in 0..5 {
            assert_eq!(limiter.check(a, later), Ok(()));
        }
        assert!(limiter.check(a, later).is_err());
    }

    #[test]
    fn the_wait_reflects_a_slow_rate() {
        let limiter = RateLimiter::new(Some(RateLimit {
            per_second: 0.1,
            burst: 1,
        }));
        let t0 = Instant::now();
        let a = ip("192.0.2.1");
        assert_eq!(limiter.check(a, t0), Ok(()));
        assert_eq!(limiter.check(a, t0), Err(10));
        assert_eq!(limiter.check(a, t0 + Duration::from_secs(4)), Err(6));
    }

    #[test]
    fn disabled_limits_let_everything_through() {
        for limit in [
            None,
            Some(RateLimit {
                per_second: 0.0,
                burst: 20,
            }),
            Some(RateLimit {
                per_second: 5.0,
                burst: 0,
            }),
        ] {
            let limiter = RateLimiter::new(limit);
            let t0 = Instant::now();
            for _ in 0..1000 {
                assert_eq!(limiter.check(ip("192.0.2.1"), t0), Ok(()));
            }
            assert_eq!(limiter.tracked(), 0);
        }
    }

    #[test]
    fn the_table_stays_bounded() {
        let limiter = RateLimiter::with_capacity(
            Some(RateLimit {
                per_second: 1.0,
                burst: 2,
            }),
            3,
        );
        let t0 = Instant::now();
        for last in 1..=3u8 {
            let a = IpAddr::from([192, 0, 2, last]);
            assert!(limiter.check(a, t0).is_ok());
        }
        // Full, nobody idle: a fourth client goes through untracked.
        assert!(limiter.check(ip("192.0.2.4"), t0).is_ok());
        assert_eq!(limiter.tracked(), 3);
        // Later the idle buckets (refilled) are dropped to make room.
        let later = t0 + Duration::from_secs(10);
        assert!(limiter.check(ip("192.0.2.5"), later).is_ok());
        assert_eq!(limiter.tracked(), 1);
    }

    /// Whether `slot` has been told to close, without waiting.
    fn was_evicted(slot: &mut PendingSlot) -> bool {
        slot.evicted.try_recv().is_ok()
    }

    #[test]
    fn a_full_pending_budget_evicts_the_oldest_of_the_busiest_client() {
        let pending = PendingConnections::new(4);
        let flood = ip("192.0.2.1");
        let other = ip("192.0.2.2");
        let (mut f1, e) = pending.admit(flood);
        assert!(!e);
        let (mut o1, _) = pending.admit(other);
        let (mut f2, _) = pending.admit(flood);
        let (mut f3, _) = pending.admit(flood);
        assert!(!was_evicted(&mut f3));
        assert_eq!(pending.len(), 4);
        // Full: a newcomer takes the place of the flood's oldest, not of the older lone one.
        let (mut fresh, evicted) = pending.admit(ip("192.0.2.3"));
        assert!(evicted);
        assert!(was_evicted(&mut f1));
        assert!(!was_evicted(&mut o1) && !was_evicted(&mut f2) && !was_evicted(&mut fresh));
        assert_eq!(pending.len(), 4);
        // An evicted slot dropped late frees nothing twice.
        drop(f1);
        assert_eq!(pending.len(), 4);
        // A finished handshake frees its place: no eviction for the next one.
        drop(f2);
        let (_g, evicted) = pending.admit(ip("192.0.2.4"));
        assert!(!evicted);
        // Ties go to the client whose oldest connection is oldest: o1 (admitted second)
        // before f3, fresh and _g, all one each.
        drop(f3);
        let (_h, _) = pending.admit(ip("192.0.2.5"));
        let (_i, evicted) = pending.admit(ip("192.0.2.6"));
        assert!(evicted);
        assert!(was_evicted(&mut o1));
        assert!(!was_evicted(&mut fresh));
    }

    #[test]
    fn connection_slots_are_capped_per_client_and_returned_on_drop() {
        let counter = ConnectionCounter::new(2);
        let a = ip("2001:db8::1");
        let same_64 = ip("2001:db8::2");
        let first = counter.try_open(a).expect("first");
        let second = counter.try_open(same_64).expect("second");
        assert!(counter.try_open(a).is_none(), "a third from the same /64");
        assert!(
            counter.try_open(ip("192.0.2.1")).is_some(),
            "another client"
        );
        drop(first);
        assert_eq!(counter.open_for(a), 1);
        assert!(counter.try_open(a).is_some());
        drop(second);
        let unlimited = ConnectionCounter::new(0);
        let slots: Vec<_> = (0..100).filter_map(|_| unlimited.try_open(a)).collect();
        assert_eq!(slots.len(), 100);
    }
}
