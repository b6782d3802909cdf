//! Who may be fetched next: per-capsule queues grouped by IP address, with politeness enforced
//! per IP (many capsules share one address through virtual hosting). Pure bookkeeping, no I/O
//! and no clock of its own: the crawl loop passes `now` in, which keeps this testable.
//!
//! Rules kept here: at most one request in flight per IP; request starts to one IP at least
//! `min_delay` apart, stretched to twice the last response time for slow servers (up to
//! [`SLOW_GAP_CAP`]); after a 44 (slow down), nothing to that IP for the time asked, doubled on
//! every 44 in a row, and the IP's gap doubled for the rest of the crawl; a capsule's robots.txt
//! is fetched before any other URL of it, and again when what was read is a day old; the
//! capsules sharing an IP take turns.
//!
//! It also tracks which capsules the crawl leases from the frontier: how many of their URLs are
//! queued and in flight, and whether the frontier has more due for them now, so the crawl loop
//! knows which capsules to refill and which to let go.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet, VecDeque};
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use crate::robots::Robots;

/// What the scheduler needs to know of a queued URL; the crawl's URL type implements it, so the
/// scheduler depends on no store type.
pub trait Queued {
    /// The id of the URL's capsule.
    fn capsule_id(&self) -> i64;
    /// The capsule's key (`host` or `host:port`), carried by robots.txt jobs.
    fn capsule_key(&self) -> &str;
    /// The URL itself, whose path and query robots.txt rules judge.
    fn url_str(&self) -> &str;
}

/// The longest gap that a slow response stretches the delay to.
pub const SLOW_GAP_CAP: Duration = Duration::from_secs(10);
/// The longest an IP waits after a 44, and the largest gap 44s can grow its delay to.
pub const MAX_SLOW_DOWN: Duration = Duration::from_secs(3600);
const MAX_IP_GAP: Duration = Duration::from_secs(60);

/// How long robots.txt rules read in a run stay good before they are read again.
pub const ROBOTS_TTL: Duration = Duration::from_secs(24 * 3600);

/// Where a capsule's robots.txt stands.
#[derive(Debug, Clone)]
enum RobotsState {
    Unknown,
    Fetching,
    /// The rules, and when they were read.
    Known(Robots, Instant),
}

#[derive(Debug)]
struct Capsule<T> {
    name: String,
    addr: Option<SocketAddr>,
    robots: RobotsState,
    urls: VecDeque<T>,
    /// Whether the capsule is in its IP's rotation.
    in_rotation: bool,
    /// Requests handed out and not finished.
    in_flight: usize,
    /// The crawl leases the capsule from the frontier.
    leased: bool,
    /// The frontier had nothing more due for it when last asked.
    exhausted: bool,
    /// 44s answered to its robots.txt in a row.
    robots_retries: u32,
    /// The least gap its robots.txt asks for (`Crawl-delay`), applied to its IP.
    crawl_delay: Duration,
}

#[derive(Debug)]
struct IpSlot {
    busy: bool,
    /// Earliest start of the next request.
    next_start: Instant,
    /// The gap between request starts here: `min_delay`, doubled by every 44.
    gap: Duration,
    /// 44s in a row.
    slow_downs: u32,
    /// Capsules on this IP that have work, taking turns.
    rotation: VecDeque<i64>,
    /// The crawl holds the frontier's lease on this address (see [`Scheduler::set_address`]).
    leased: bool,
}

/// Something for the crawl loop to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Job<T> {
    /// Fetch the capsule's robots.txt.
    Robots {
        host_id: i64,
        host: String,
        addr: SocketAddr,
    },
    /// Fetch a page.
    Page { url: T, addr: SocketAddr },
    /// robots.txt forbids this URL; no request is made.
    Disallowed(T),
}

/// The in-memory part of the frontier: only URLs claimed for this crawl.
#[derive(Debug)]
pub struct Scheduler<T> {
    min_delay: Duration,
    capsules: HashMap<i64, Capsule<T>>,
    ips: HashMap<IpAddr, IpSlot>,
    /// IPs that may be ready at the given time; entries may be stale and are checked when popped.
    ready: BinaryHeap<Reverse<(Instant, IpAddr)>>,
    queued: usize,
    in_flight: usize,
}

impl<T: Queued> Scheduler<T> {
    pub fn new(min_delay: Duration) -> Self {
        Scheduler {
            min_delay,
            capsules: HashMap::new(),
            ips: HashMap::new(),
            ready: BinaryHeap::new(),
            queued: 0,
            in_flight: 0,
        }
    }

    /// URLs held in memory, not yet handed out.
    pub fn queued(&self) -> usize {
        self.queued
    }

    /// Requests handed out and not yet finished.
    pub fn in_flight(&self) -> usize {
        self.in_flight
    }

    /// Whether the scheduler knows this capsule already.
    pub fn knows(&self, host_id: i64) -> bool {
        self.capsules.contains_key(&host_id)
    }

    /// Adds a claimed URL to the back of its capsule's queue (to the front when `first`), and
    /// marks the capsule leased. New capsules start with an unknown address and robots.txt.
    pub fn push(&mut self, url: T, first: bool, now: Instant) {
        let host_id = url.capsule_id();
        let capsule = self.capsules.entry(host_id).or_insert_with(|| Capsule {
            name: url.capsule_key().to_owned(),
            addr: None,
            robots: RobotsState::Unknown,
            urls: VecDeque::new(),
            in_rotation: false,
            in_flight: 0,
            leased: false,
            exhausted: false,
            robots_retries: 0,
            crawl_delay: Duration::ZERO,
        });
        capsule.leased = true;
        if first {
            capsule.urls.push_front(url);
        } else {
            capsule.urls.push_back(url);
        }
        self.queued += 1;
        self.enter_rotation(host_id, now);
    }

    /// Sets a capsule's robots rules (from the cache or a fetch), read at `read_at`. A
    /// `Crawl-delay` becomes the least gap between requests to the capsule's IP (capped by
    /// [`crate::robots::MAX_CRAWL_DELAY`]); the IP keeps the largest any of its capsules asks.
    pub fn set_robots(&mut self, host_id: i64, robots: Robots, read_at: Instant, now: Instant) {
        if let Some(c) = self.capsules.get_mut(&host_id) {
            c.crawl_delay = robots.crawl_delay().unwrap_or_default();
            c.robots = RobotsState::Known(robots, read_at);
            c.robots_retries = 0;
            if let Some(slot) = c.addr.and_then(|a| self.ips.get_mut(&a.ip())) {
                slot.gap = slot.gap.max(c.crawl_delay);
            }
        }
        self.enter_rotation(host_id, now);
    }

    /// A capsule's name (its [`crate::urlnorm::capsule_key`]).
    pub fn capsule_key(&self, host_id: i64) -> Option<&str> {
        self.capsules.get(&host_id).map(|c| c.name.as_str())
    }

    /// Leased capsules whose queue is empty and for which the frontier may have more now.
    pub fn wanting_more(&self) -> Vec<i64> {
        self.capsules
            .iter()
            .filter(|(_, c)| c.leased && !c.exhausted && c.urls.is_empty())
            .map(|(&id, _)| id)
            .collect()
    }

    /// Whether a leased capsule ran out of queued URLs and may have more due
    /// ([`Self::wanting_more`] is not empty).
    pub fn wants_more(&self) -> bool {
        self.capsules
            .values()
            .any(|c| c.leased && !c.exhausted && c.urls.is_empty())
    }

    /// Records that the frontier had nothing more due for a capsule (`true`), or may have again
    /// (`false`: new URLs or a finished request).
    pub fn set_exhausted(&mut self, host_id: i64, exhausted: bool) {
        if let Some(c) = self.capsules.get_mut(&host_id) {
            c.exhausted = exhausted;
        }
    }

    /// Leased capsules with nothing queued, nothing in flight and nothing more due: done for
    /// now. They are marked not leased (their robots rules stay, for the rest of the run).
    pub fn take_finished(&mut self) -> Vec<i64> {
        let mut done = Vec::new();
        for (&id, c) in &mut self.capsules {
            if c.leased && c.exhausted && c.urls.is_empty() && c.in_flight == 0 {
                c.leased = false;
                done.push(id);
            }
        }
        done
    }

    /// The capsules the crawl leases, and how many addresses they are on (each capsule whose
    /// address is not known yet counting as one), in one pass.
    pub fn leased(&self) -> (usize, usize) {
        let mut ips = HashSet::new();
        let (mut capsules, mut unknown) = (0, 0);
        for capsule in self.capsules.values().filter(|c| c.leased) {
            capsules += 1;
            match capsule.addr {
                Some(addr) => {
                    ips.insert(addr.ip());
                }
                None => unknown += 1,
            }
        }
        (capsules, ips.len() + unknown)
    }

    /// Whether the crawl leases this capsule.
    pub fn is_leased(&self, host_id: i64) -> bool {
        self.capsules.get(&host_id).is_some_and(|c| c.leased)
    }

    /// Sets the address a capsule is fetched from; the crawl holds that address's lease.
    pub fn set_address(&mut self, host_id: i64, addr: SocketAddr, now: Instant) {
        if let Some(c) = self.capsules.get_mut(&host_id) {
            c.addr = Some(addr);
        }
        self.slot(addr.ip(), now).leased = true;
        self.enter_rotation(host_id, now);
    }

    /// Addresses whose lease the crawl holds with nothing left to do there: no leased capsule,
    /// nothing queued and no request in flight. They are marked not held, and the capsules
    /// known on them forget the address, so that a capsule claimed again later leases it
    /// afresh. The gap each IP keeps stays.
    pub fn idle_addresses(&mut self) -> Vec<IpAddr> {
        let mut idle: Vec<IpAddr> = self
            .ips
            .iter()
            .filter(|(_, slot)| slot.leased && !slot.busy && slot.rotation.is_empty())
            .map(|(&ip, _)| ip)
            .collect();
        if idle.is_empty() {
            return idle;
        }
        let in_use: HashSet<IpAddr> = self
            .capsules
            .values()
            .filter(|c| c.leased || !c.urls.is_empty() || c.in_flight > 0)
            .filter_map(|c| c.addr.map(|a| a.ip()))
            .collect();
        idle.retain(|ip| !in_use.contains(ip));
        for ip in &idle {
            self.forget_address(*ip);
        }
        idle
    }

    /// Marks an address not held (its lease was let go, or another crawler took it over):
    /// capsules known on it forget it and leave its rotation.
    pub fn forget_address(&mut self, ip: IpAddr) {
        if let Some(slot) = self.ips.get_mut(&ip) {
            slot.leased = false;
            slot.rotation.clear();
        }
        for c in self.capsules.values_mut() {
            if c.addr.is_some_and(|a| a.ip() == ip) {
                c.addr = None;
                c.in_rotation = false;
            }
        }
    }

    /// Drops a capsule that cannot be crawled now (no address, robots.txt unavailable) and
    /// returns its URLs so the caller can hand them back to the frontier.
    pub fn drop_capsule(&mut self, host_id: i64) -> Vec<T> {
        let Some(mut capsule) = self.capsules.remove(&host_id) else {
            return Vec::new();
        };
        if let Some(ip) = capsule.addr.map(|a| a.ip()) {
            if let Some(slot) = self.ips.get_mut(&ip) {
                slot.rotation.retain(|&h| h != host_id);
            }
        }
        let urls: Vec<T> = capsule.urls.drain(..).collect();
        self.queued -= urls.len();
        urls
    }

    /// Capsules that have URLs but no address yet, with their names.
    pub fn unresolved(&self) -> impl Iterator<Item = (i64, &str)> {
        self.capsules
            .iter()
            .filter(|(_, c)| c.addr.is_none() && !c.urls.is_empty())
            .map(|(&id, c)| (id, c.name.as_str()))
    }

    /// Hands out the next job whose IP is free and past its delay, if any.
    pub fn next_job(&mut self, now: Instant) -> Option<Job<T>> {
        while let Some(&Reverse((at, ip))) = self.ready.peek() {
            if at > now {
                return None;
            }
            self.ready.pop();
            let Some(slot) = self.ips.get(&ip) else {
                continue;
            };
            if slot.busy {
                // `finished` puts the IP back when its request ends.
                continue;
            }
            if slot.next_start > now {
                self.ready.push(Reverse((slot.next_start, ip)));
                continue;
            }
            if let Some(job) = self.job_for_ip(ip, now) {
                let started = match &job {
                    Job::Robots { host_id, .. } => Some(*host_id),
                    Job::Page { url, .. } => Some(url.capsule_id()),
                    Job::Disallowed(_) => None,
                };
                if let Some(host_id) = started {
                    if let Some(c) = self.capsules.get_mut(&host_id) {
                        c.in_flight += 1;
                    }
                }
                if !matches!(job, Job::Disallowed(_)) {
                    let slot = self.ips.get_mut(&ip).expect("slot exists");
                    slot.busy = true;
                    slot.next_start = now + slot.gap;
                    self.in_flight += 1;
                } else {
                    // Judging a URL costs the IP nothing: it stays ready.
                    self.ready.push(Reverse((now, ip)));
                }
                return Some(job);
            }
        }
        None
    }

    /// Records that the request to `ip`, which really began at `began` (its task may have started
    /// a little after it was handed out) and took `took`, finished. The next one may start once
    /// the IP's gap, or twice the response time if that is longer (capped), has passed since the
    /// later of the two starts.
    pub fn finished(&mut self, ip: IpAddr, host_id: i64, began: Instant, took: Duration) {
        self.in_flight = self.in_flight.saturating_sub(1);
        if let Some(c) = self.capsules.get_mut(&host_id) {
            c.in_flight = c.in_flight.saturating_sub(1);
            // What the request found may have given the capsule more work.
            c.exhausted = false;
        }
        if let Some(slot) = self.ips.get_mut(&ip) {
            slot.busy = false;
            let gap = slot.gap.max((took * 2).min(SLOW_GAP_CAP));
            slot.next_start = slot.next_start.max(began + gap);
            if !slot.rotation.is_empty() {
                self.ready.push(Reverse((slot.next_start, ip)));
            }
        }
    }

    /// Handles a 44 from `ip` (call after [`Scheduler::finished`]): no request to it for
    /// `asked` (doubled for every 44 in a row), or for twice its gap when the server named no
    /// usable number; its gap doubles for the rest of the crawl. Returns the wait imposed, which
    /// the caller compares with how long a run is willing to wait.
    pub fn slow_down(&mut self, ip: IpAddr, asked: Option<Duration>, now: Instant) -> Duration {
        let Some(slot) = self.ips.get_mut(&ip) else {
            return Duration::ZERO;
        };
        slot.slow_downs += 1;
        slot.gap = (slot.gap.max(Duration::from_millis(500)) * 2).min(MAX_IP_GAP);
        let wait = match asked {
            Some(asked) => asked
                .saturating_mul(1 << (slot.slow_downs - 1).min(16))
                .min(MAX_SLOW_DOWN),
            None => slot.gap,
        };
        slot.next_start = slot.next_start.max(now + wait);
        if !slot.busy && !slot.rotation.is_empty() {
            self.ready.push(Reverse((slot.next_start, ip)));
        }
        wait
    }

    /// Sends nothing to `ip` before `until`: another crawler of a shared store fetched from
    /// it last and asked for that gap. The gap this crawler keeps there is unchanged.
    pub fn hold_ip(&mut self, ip: IpAddr, until: Instant) {
        let slot = self.slot(ip, until);
        slot.next_start = slot.next_start.max(until);
        let (waiting, at) = (!slot.busy && !slot.rotation.is_empty(), slot.next_start);
        if waiting {
            self.ready.push(Reverse((at, ip)));
        }
    }

    /// How long until `ip` may be sent a request (zero when it may now or is unknown).
    pub fn ip_wait(&self, ip: IpAddr, now: Instant) -> Duration {
        self.ips.get(&ip).map_or(Duration::ZERO, |slot| {
            slot.next_start.saturating_duration_since(now)
        })
    }

    /// The capsules this crawl holds, and the addresses whose leases it holds.
    pub fn held(&self) -> (Vec<i64>, Vec<IpAddr>) {
        (
            self.capsules.keys().copied().collect(),
            self.ips
                .iter()
                .filter(|(_, slot)| slot.leased)
                .map(|(&ip, _)| ip)
                .collect(),
        )
    }

    /// The capsules known to be on `ip`.
    pub fn capsules_on(&self, ip: IpAddr) -> Vec<i64> {
        self.capsules
            .iter()
            .filter(|(_, c)| c.addr.is_some_and(|a| a.ip() == ip))
            .map(|(&id, _)| id)
            .collect()
    }

    /// After a 44 on robots.txt: the capsule's robots.txt is asked for again when its IP is
    /// ready. Returns how many times in a row that has happened.
    pub fn retry_robots(&mut self, host_id: i64, now: Instant) -> u32 {
        let Some(c) = self.capsules.get_mut(&host_id) else {
            return 0;
        };
        c.robots_retries += 1;
        let retries = c.robots_retries;
        self.put_back_robots(host_id, now);
        retries
    }

    /// The capsule's robots.txt is asked for again when its IP is ready: a request for it was
    /// handed out and never sent (no retry is counted).
    pub fn put_back_robots(&mut self, host_id: i64, now: Instant) {
        let Some(c) = self.capsules.get_mut(&host_id) else {
            return;
        };
        c.robots = RobotsState::Unknown;
        self.enter_rotation(host_id, now);
    }

    /// Records a good answer from `ip`, ending a run of 44s (the doubled gap stays).
    pub fn answered(&mut self, ip: IpAddr) {
        if let Some(slot) = self.ips.get_mut(&ip) {
            slot.slow_downs = 0;
        }
    }

    /// Puts a URL back at the head of its capsule's queue, to be fetched again when its IP is
    /// ready (after a 44).
    pub fn retry(&mut self, url: T, now: Instant) {
        let host_id = url.capsule_id();
        let Some(capsule) = self.capsules.get_mut(&host_id) else {
            return;
        };
        capsule.urls.push_front(url);
        self.queued += 1;
        self.enter_rotation(host_id, now);
    }

    /// When the next IP becomes ready (possibly a stale guess, never too late).
    pub fn next_wakeup(&self) -> Option<Instant> {
        self.ready.peek().map(|Reverse((at, _))| *at)
    }

    /// Takes the next job from the capsules on `ip`, in turn.
    fn job_for_ip(&mut self, ip: IpAddr, now: Instant) -> Option<Job<T>> {
        let slot = self.ips.get_mut(&ip)?;
        while let Some(host_id) = slot.rotation.pop_front() {
            let Some(capsule) = self.capsules.get_mut(&host_id) else {
                continue;
            };
            let addr = capsule.addr?;
            if matches!(capsule.robots, RobotsState::Known(_, at) if now.saturating_duration_since(at) >= ROBOTS_TTL)
            {
                capsule.robots = RobotsState::Unknown;
            }
            let job = match &capsule.robots {
                RobotsState::Fetching => None,
                RobotsState::Unknown => {
                    capsule.robots = RobotsState::Fetching;
                    Some(Job::Robots {
                        host_id,
                        host: capsule.name.clone(),
                        addr,
                    })
                }
                RobotsState::Known(robots, _) => capsule.urls.pop_front().map(|url| {
                    self.queued -= 1;
                    if robots.is_allowed(path_and_query(url.url_str())) {
                        Job::Page { url, addr }
                    } else {
                        Job::Disallowed(url)
                    }
                }),
            };
            // A drained queue gives its room back: a queue keeps the room of its largest claim
            // and its capsule stays known all run. Thousands of capsules keeping that room held
            // up to 25 MB in a 120,000-page crawl of the full-size generated geminispace.
            if capsule.urls.is_empty() && capsule.urls.capacity() > 0 {
                capsule.urls = VecDeque::new();
            }
            // The capsule goes to the back of the line if it still has work it can do.
            let more = matches!(capsule.robots, RobotsState::Known(..)) && !capsule.urls.is_empty();
            if more {
                slot.rotation.push_back(host_id);
            } else {
                capsule.in_rotation = false;
            }
            if job.is_some() {
                return job;
            }
        }
        None
    }

    /// The slot of `ip`, made free from `now` on when it is new.
    fn slot(&mut self, ip: IpAddr, now: Instant) -> &mut IpSlot {
        let min_delay = self.min_delay;
        self.ips.entry(ip).or_insert_with(|| IpSlot {
            busy: false,
            next_start: now,
            gap: min_delay,
            slow_downs: 0,
            rotation: VecDeque::new(),
            leased: false,
        })
    }

    /// Puts a capsule in its IP's rotation when it has an address and work it can do now.
    fn enter_rotation(&mut self, host_id: i64, now: Instant) {
        let Some(capsule) = self.capsules.get_mut(&host_id) else {
            return;
        };
        let Some(addr) = capsule.addr else { return };
        let has_work = match capsule.robots {
            RobotsState::Unknown => true,
            RobotsState::Fetching => false,
            RobotsState::Known(..) => !capsule.urls.is_empty(),
        };
        if capsule.in_rotation || !has_work {
            return;
        }
        capsule.in_rotation = true;
        let crawl_delay = capsule.crawl_delay;
        let slot = self.slot(addr.ip(), now);
        slot.gap = slot.gap.max(crawl_delay);
        slot.rotation.push_back(host_id);
        let (busy, at) = (slot.busy, slot.next_start.max(now));
        if !busy {
            self.ready.push(Reverse((at, addr.ip())));
        }
    }
}

/// The part of a URL that robots.txt rules match: path plus `?query`.
fn path_and_query(url: &str) -> &str {
    // Skip `scheme://authority`; what remains starts at the path.
    let after_scheme = url.find("://").map(|i| i + 3).unwrap_or(0);
    match url[after_scheme..].find('/') {
        Some(i) => {
            let rest = &url[after_scheme + i..];
            rest.split('#').next().unwrap_or(rest)
        }
        None => "/",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frontier::{Prior, QueuedUrl};

    /// A claimed URL, as the crawl hands it over.
    fn url(id: i64, host_id: i64, host: &str, path: &str) -> QueuedUrl {
        QueuedUrl {
            id,
            url: format!("gemini://{host}{path}"),
            host_id,
            host: host.to_string(),
            depth: 0,
            hops: 0,
            canonical: None,
            prior: Prior::default(),
        }
    }

    fn addr(last: u8) -> SocketAddr {
        SocketAddr::from(([127, 0, 1, last], 1965))
    }

    #[test]
    fn robots_first_then_pages_one_at_a_time_per_ip() {
        let t0 = Instant::now();
        let delay = Duration::from_millis(100);
        let mut s = Scheduler::new(delay);
        s.push(url(1, 1, "a.test", "/"), false, t0);
        s.push(url(2, 1, "a.test", "/x"), false, t0);
        assert_eq!(s.next_job(t0), None, "no job before the address is known");
        s.set_address(1, addr(1), t0);
        let Some(Job::Robots { host_id: 1, .. }) = s.next_job(t0) else {
            panic!("robots first")
        };
        assert_eq!(s.next_job(t0), None, "one request per IP");
        s.finished(addr(1).ip(), 1, t0, Duration::ZERO);
        s.set_robots(1, Robots::allow_all(), t0, t0);
        assert_eq!(s.next_job(t0), None, "the delay between starts holds");
        assert!(s.next_wakeup().unwrap() >= t0 + delay);
        let Some(Job::Page { url: u, .. }) = s.next_job(t0 + delay) else {
            panic!()
        };
        assert_eq!(u.id, 1);
        s.finished(addr(1).ip(), 1, t0, Duration::ZERO);
        assert_eq!(s.next_job(t0 + delay), None);
        let Some(Job::Page { url: u, .. }) = s.next_job(t0 + delay * 2) else {
            panic!()
        };
        assert_eq!(u.id, 2);
        assert_eq!(s.queued(), 0);
    }

    #[test]
    fn capsules_on_one_ip_take_turns_and_different_ips_run_together() {
        let t0 = Instant::now();
        let mut s = Scheduler::new(Duration::ZERO);
        for (host_id, host, ip) in [(1, "a.test", 1), (2, "b.test", 1), (3, "c.test", 2)] {
            for i in 0..3 {
                s.push(
                    url(host_id * 10 + i, host_id, host, &format!("/{i}")),
                    false,
                    t0,
                );
            }
            s.set_address(host_id, addr(ip), t0);
            s.set_robots(host_id, Robots::allow_all(), t0, t0);
        }
        let mut order = Vec::new();
        for _ in 0..9 {
            let mut busy = Vec::new();
            while let Some(job) = s.next_job(t0) {
                let Job::Page { url, addr } = job else {
                    panic!()
                };
                order.push(url.host_id);
                busy.push(addr.ip());
            }
            assert!(busy.len() <= 2, "at most one job per IP at once: {busy:?}");
            for ip in busy {
                s.finished(ip, 1, t0, Duration::ZERO);
            }
        }
        let on_ip1: Vec<i64> = order.iter().copied().filter(|&h| h != 3).collect();
        assert_eq!(on_ip1, vec![1, 2, 1, 2, 1, 2]);
        assert_eq!(order.iter().filter(|&&h| h == 3).count(), 3);
    }

    #[test]
    fn leased_capsules_count_their_addresses_once_each() {
        let t0 = Instant::now();
        let mut s = Scheduler::new(Duration::ZERO);
        for (host_id, host) in [(1, "a.test"), (2, "b.test"), (3, "c.test"), (4, "d.test")] {
            s.push(url(host_id * 10, host_id, host, "/"), false, t0);
        }
        assert_eq!(s.leased(), (4, 4), "none resolved yet");
        // a and b share an address, c has its own, d is not resolved.
        s.set_address(1, addr(1), t0);
        s.set_address(2, addr(1), t0);
        s.set_address(3, addr(2), t0);
        assert_eq!(s.leased(), (4, 3));
    }

    #[test]
    fn disallowed_urls_are_judged_without_a_request() {
        let t0 = Instant::now();
        let mut s = Scheduler::new(Duration::from_secs(1));
        s.push(url(1, 1, "a.test", "/private/x"), false, t0);
        s.push(url(2, 1, "a.test", "/ok"), false, t0);
        s.set_address(1, addr(1), t0);
        s.set_robots(
            1,
            Robots::parse("User-agent: *\nDisallow: /private/\n"),
            t0,
            t0,
        );
        assert!(matches!(s.next_job(t0), Some(Job::Disallowed(u)) if u.id == 1));
        assert!(matches!(s.next_job(t0), Some(Job::Page { url, .. }) if url.id == 2));
    }

    #[test]
    fn a_drained_capsule_queue_gives_its_room_back() {
        let t0 = Instant::now();
        let mut s = Scheduler::new(Duration::ZERO);
        for id in 0..100 {
            s.push(url(id, 1, "a.test", &format!("/{id}")), false, t0);
        }
        s.set_address(1, addr(1), t0);
        s.set_robots(1, Robots::allow_all(), t0, t0);
        assert!(s.capsules[&1].urls.capacity() >= 100);
        for id in 0..100 {
            let Some(Job::Page { url: u, .. }) = s.next_job(t0) else {
                panic!("page {id}")
            };
            assert_eq!(u.id, id);
            s.finished(addr(1).ip(), 1, t0, Duration::ZERO);
        }
        assert_eq!(s.queued(), 0);
        assert_eq!(
            s.capsules[&1].urls.capacity(),
            0,
            "room kept by an empty queue"
        );
        // The capsule is still known, and takes URLs again.
        s.push(url(100, 1, "a.test", "/again"), false, t0);
        assert!(matches!(s.next_job(t0), Some(Job::Page { .. })));
    }

    #[test]
    fn dropping_a_capsule_returns_its_urls() {
        let t0 = Instant::now();
        let mut s = Scheduler::new(Duration::ZERO);
        s.push(url(1, 1, "a.test", "/"), false, t0);
        s.push(url(2, 1, "a.test", "/b"), false, t0);
        let back = s.drop_capsule(1);
        assert_eq!(back.len(), 2);
        assert_eq!(s.queued(), 0);
    }

    #[test]
    fn an_address_with_nothing_left_to_do_is_let_go_and_leased_again_when_needed() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        let mut s = Scheduler::new(ms(100));
        s.push(url(1, 1, "a.test", "/"), false, t0);
        s.push(url(2, 2, "b.test", "/"), false, t0);
        s.set_address(1, addr(1), t0);
        s.set_address(2, addr(1), t0);
        s.set_robots(1, Robots::allow_all(), t0, t0);
        s.set_robots(2, Robots::allow_all(), t0, t0);
        let ip = addr(1).ip();
        assert_eq!(s.held().1, vec![ip]);
        assert!(s.idle_addresses().is_empty(), "work queued there");
        let Some(Job::Page { url: first, .. }) = s.next_job(t0) else {
            panic!("a page of one of the two capsules");
        };
        s.finished(ip, first.host_id, t0, Duration::ZERO);
        s.set_exhausted(first.host_id, true);
        assert_eq!(s.take_finished(), vec![first.host_id]);
        assert!(
            s.idle_addresses().is_empty(),
            "the other capsule there still has a page queued"
        );
        let Some(Job::Page { url: second, .. }) = s.next_job(t0 + ms(100)) else {
            panic!("the other capsule's page");
        };
        assert!(s.idle_addresses().is_empty(), "a request in flight there");
        s.finished(ip, second.host_id, t0 + ms(100), Duration::ZERO);
        s.set_exhausted(second.host_id, true);
        s.take_finished();
        assert_eq!(s.idle_addresses(), vec![ip]);
        assert!(s.held().1.is_empty());
        assert!(s.idle_addresses().is_empty(), "let go once");
        // A capsule claimed again must lease its address again before any request.
        s.push(url(3, 1, "a.test", "/again"), false, t0 + ms(100));
        assert_eq!(s.unresolved().map(|(id, _)| id).collect::<Vec<_>>(), [1]);
        assert_eq!(s.next_job(t0 + ms(500)), None);
        s.set_address(1, addr(1), t0 + ms(500));
        assert!(
            s.next_job(t0 + ms(150)).is_none(),
            "the address keeps its gap after the last request"
        );
        assert!(matches!(s.next_job(t0 + ms(500)), Some(Job::Page { url, .. }) if url.id == 3));
    }

    #[test]
    fn slow_servers_and_slow_downs_stretch_the_gap() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        let mut s = Scheduler::new(ms(100));
        for i in 0..6 {
            s.push(url(i, 1, "a.test", &format!("/{i}")), false, t0);
        }
        s.set_address(1, addr(1), t0);
        s.set_robots(1, Robots::allow_all(), t0, t0);
        let ip = addr(1).ip();
        // A response that took 300 ms: the next start waits 600 ms.
        assert!(s.next_job(t0).is_some());
        s.finished(ip, 1, t0, ms(300));
        assert!(s.next_job(t0 + ms(599)).is_none());
        assert!(s.next_job(t0 + ms(600)).is_some());
        // A response that took a minute: the gap is capped.
        s.finished(ip, 1, t0 + ms(600), Duration::from_secs(60));
        assert!(s.next_job(t0 + ms(600) + SLOW_GAP_CAP).is_some());
        // 44 asking for 2 s: nothing before then; a second 44 in a row waits twice as long.
        let t1 = t0 + ms(600) + SLOW_GAP_CAP;
        s.finished(ip, 1, t1, ms(1));
        s.slow_down(ip, Some(Duration::from_secs(2)), t1);
        assert!(s.next_job(t1 + ms(1999)).is_none());
        let t2 = t1 + Duration::from_secs(2);
        let Some(Job::Page { url: u, .. }) = s.next_job(t2) else {
            panic!()
        };
        s.finished(ip, 1, t2, ms(1));
        s.slow_down(ip, Some(Duration::from_secs(2)), t2);
        s.retry(u, t2);
        assert!(s.next_job(t2 + ms(3999)).is_none());
        let t3 = t2 + Duration::from_secs(4);
        assert!(s.next_job(t3).is_some());
        // The gap stays doubled (twice, from a floor of 500 ms) after the 44s.
        s.answered(ip);
        s.finished(ip, 1, t3, ms(1));
        assert!(s.next_job(t3 + ms(1999)).is_none());
        assert!(s.next_job(t3 + ms(2000)).is_some());
    }

    /// A scheduler (a gap of 100 ms) holding one capsule with one page, its address known at
    /// `t0` and its robots.txt not yet read; and that address.
    fn one_page_on_its_address(t0: Instant) -> (Scheduler<QueuedUrl>, IpAddr) {
        let mut s = Scheduler::new(Duration::from_millis(100));
        s.push(url(1, 1, "a.test", "/"), false, t0);
        s.set_address(1, addr(1), t0);
        (s, addr(1).ip())
    }

    #[test]
    fn a_44_reports_its_wait_and_robots_can_be_asked_again() {
        let t0 = Instant::now();
        let (mut s, ip) = one_page_on_its_address(t0);
        assert!(matches!(s.next_job(t0), Some(Job::Robots { .. })));
        s.finished(ip, 1, t0, Duration::ZERO);
        // A wait that names no number doubles the gap; a named one is taken as asked.
        assert_eq!(s.slow_down(ip, None, t0), Duration::from_secs(1));
        assert_eq!(s.ip_wait(ip, t0), Duration::from_secs(1));
        assert_eq!(s.retry_robots(1, t0), 1);
        assert_eq!(s.next_job(t0), None, "nothing before the wait");
        assert!(matches!(
            s.next_job(t0 + Duration::from_secs(1)),
            Some(Job::Robots { .. })
        ));
        s.finished(ip, 1, t0, Duration::ZERO);
        // A huge wait is capped; the caller defers the capsules on that IP.
        let huge = s.slow_down(ip, Some(Duration::from_secs(999_999_999)), t0);
        assert_eq!(huge, MAX_SLOW_DOWN);
        assert_eq!(s.capsules_on(ip), vec![1]);
        assert_eq!(s.retry_robots(1, t0), 2);
        s.set_robots(1, Robots::allow_all(), t0, t0);
        assert_eq!(
            s.retry_robots(1, t0),
            1,
            "rules read end the run of retries"
        );
    }

    #[test]
    fn a_request_never_sent_is_handed_out_again_without_a_retry_counted() {
        let ms = Duration::from_millis;
        let t0 = Instant::now();
        let (mut s, ip) = one_page_on_its_address(t0);
        // robots.txt handed out, not sent, put back: asked for again once the gap has passed.
        assert!(matches!(s.next_job(t0), Some(Job::Robots { .. })));
        s.finished(ip, 1, t0, Duration::ZERO);
        s.put_back_robots(1, t0);
        assert_eq!(s.in_flight(), 0);
        assert_eq!(s.next_job(t0), None, "the gap holds");
        assert!(matches!(s.next_job(t0 + ms(100)), Some(Job::Robots { .. })));
        s.finished(ip, 1, t0 + ms(100), Duration::ZERO);
        assert_eq!(s.retry_robots(1, t0), 1, "the one not sent was not counted");
        s.set_robots(1, Robots::allow_all(), t0, t0);
        // A page handed out, not sent, put back: the same page comes again.
        let t1 = t0 + ms(200);
        let Some(Job::Page { url: first, .. }) = s.next_job(t1) else {
            panic!("the page is handed out");
        };
        s.finished(ip, 1, t1, Duration::ZERO);
        s.retry(first, t1);
        assert_eq!(s.queued(), 1);
        let Some(Job::Page { url: again, .. }) = s.next_job(t1 + ms(100)) else {
            panic!("the page is handed out again");
        };
        assert_eq!(again.url_str(), "gemini://a.test/");
    }

    #[test]
    fn robots_paths() {
        assert_eq!(path_and_query("gemini://a.test/x/y?q=1"), "/x/y?q=1");
        assert_eq!(path_and_query("gemini://a.test"), "/");
        assert_eq!(path_and_query("gemini://a.test:1966/p#f"), "/p");
    }

    #[test]
    fn a_crawl_delay_widens_the_gap_of_the_capsules_ip() {
        let t0 = Instant::now();
        let delay = Duration::from_millis(100);
        let mut s = Scheduler::new(delay);
        for i in 0..3 {
            s.push(url(i, 1, "slow.test", &format!("/{i}")), false, t0);
        }
        // A capsule on another IP is not slowed down.
        s.push(url(10, 2, "quick.test", "/a"), false, t0);
        s.push(url(11, 2, "quick.test", "/b"), false, t0);
        s.set_address(1, addr(1), t0);
        s.set_address(2, addr(2), t0);
        for _ in 0..2 {
            let Some(Job::Robots { host_id, addr, .. }) = s.next_job(t0) else {
                panic!("robots first")
            };
            s.finished(addr.ip(), host_id, t0, Duration::ZERO);
        }
        s.set_robots(1, Robots::parse("User-agent: *\nCrawl-delay: 3\n"), t0, t0);
        s.set_robots(2, Robots::allow_all(), t0, t0);
        let mut starts: HashMap<i64, Vec<Duration>> = HashMap::new();
        let mut now = t0;
        loop {
            while let Some(job) = s.next_job(now) {
                let Job::Page { url, addr } = job else {
                    panic!()
                };
                starts.entry(url.host_id).or_default().push(now - t0);
                s.finished(addr.ip(), url.host_id, now, Duration::ZERO);
            }
            if s.queued() == 0 {
                break;
            }
            now = s.next_wakeup().expect("work is waiting");
        }
        let slow = &starts[&1];
        assert_eq!(slow.len(), 3);
        for pair in slow.windows(2) {
            assert!(pair[1] - pair[0] >= Duration::from_secs(3), "{slow:?}");
        }
        let quick = &starts[&2];
        assert!(quick[1] - quick[0] < Duration::from_secs(1), "{quick:?}");
    }
}
