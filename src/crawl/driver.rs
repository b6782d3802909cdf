//! The crawl loop itself: one task owns the scheduler and the frontier connection, leases
//! capsules with due work, hands jobs to fetch tasks ([`super::task`]), records their results in
//! batched transactions ([`super::record`]), keeps leased capsules fed and lets finished ones go,
//! and, at the end of a run, rewrites the documents whose inbound link labels changed.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use super::budget::Budgets;
use super::hold::{self, Held, Hold};
use super::indexing::IndexMsg;
use super::scheduler::{self, Job, Scheduler};
use super::task::{fetch, lookup, Done, DoneJob};
use super::{
    CrawlConfig, CrawlError, CrawlSummary, Progress, StopReason, ANCHOR_CHUNK, BATCH_GATHER,
    BATCH_GATHER_SHARED, BATCH_RESULTS, CAPSULES_PER_CLAIM, CAPSULES_PER_SLOT, PER_CAPSULE,
};
use crate::clock::unix_now;
use crate::fetch::sockets::SocketBudget;
use crate::fetch::{FetchError, Fetcher};
use crate::frontier::{Batch, Frontier, FrontierError, QueuedUrl};
use crate::urlnorm;

/// How often the crawl loop hands the memory freed by its threads back to the system. glibc
/// keeps freed memory in each thread's arena for reuse, and a crawl's threads free pages,
/// bodies and index buffers by the megabyte in every arena: on the full-size generated
/// geminispace, 130 of a crawl's 290 MB were freed memory kept so after ten minutes. A trim
/// walks the free lists (milliseconds) and returns the whole free pages in them.
const TRIM_EVERY: Duration = Duration::from_secs(1);

/// How long a capsule waits when another crawler of a shared store holds its IP address.
const ADDRESS_BUSY_SECS: i64 = 2;

pub(super) struct Crawl {
    pub(super) config: CrawlConfig,
    pub(super) fetcher: Fetcher,
    /// Extractions running at once: one per core, beside the I/O threads.
    pub(super) parsers: Arc<Semaphore>,
    pub(super) progress: Option<tokio::sync::watch::Sender<Progress>>,
    pub(super) scheduler: Scheduler<QueuedUrl>,
    pub(super) index_tx: Option<super::indexing::IndexSender>,
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
        index_tx: super::indexing::IndexSender,
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

    pub(super) async fn run_loop(
        &mut self,
        frontier: &mut dyn Frontier,
        shutdown: impl Future<Output = ()>,
    ) -> Result<(), CrawlError> {
        let mut shutdown = std::pin::pin!(shutdown);
        let mut fetches: JoinSet<Done> = JoinSet::new();
        let mut lookups: JoinSet<(i64, Result<SocketAddr, FetchError>)> = JoinSet::new();
        let mut resolving: HashSet<i64> = HashSet::new();
        let mut frontier_has_more = true;
        // `--max-pages 0` asks for no request at all: not even robots.txt or DNS.
        let mut dispatching = self.config.max_pages != Some(0);
        if !dispatching {
            self.summary.ended = StopReason::MaxPages;
        }
        let mut interrupted = false;
        let mut pages_started: u64 = 0;
        let mut next_progress = Instant::now() + self.config.progress_every;
        let mut next_trim = Instant::now() + TRIM_EVERY;
        let mut next_snapshot = Instant::now();
        let mut retry_at: Option<Instant> = None;
        let max_capsules = (self.config.concurrency * CAPSULES_PER_SLOT).max(16);
        let far = Instant::now() + Duration::from_secs(365 * 24 * 3600);
        let deadline = self.config.max_duration.map_or(far, |d| Instant::now() + d);
        // Once told to stop: requests in flight may finish until then.
        let mut drain_until: Option<Instant> = None;
        // A shared store's leases are renewed at a third of their length, so that one slow
        // renewal never lets them run out while this crawler works.
        let renew_every = self.config.shared.as_ref().map(|s| s.lease / 3);
        let mut next_renew = renew_every.map_or(far, |every| Instant::now() + every);
        // A shared store's write transactions hold a lock every crawler takes turns on: short.
        let gather = if self.config.shared.is_some() {
            BATCH_GATHER_SHARED
        } else {
            BATCH_GATHER
        };

        loop {
            if let Some(every) = renew_every.filter(|_| Instant::now() >= next_renew) {
                frontier.renew_leases()?;
                self.let_go_of_lost_leases(frontier)?;
                next_renew = Instant::now() + every;
            }
            if dispatching {
                frontier_has_more |= self.follow_up(frontier)?;
                if frontier_has_more && self.scheduler.leased() < max_capsules {
                    let want = (max_capsules - self.scheduler.leased()).min(CAPSULES_PER_CLAIM);
                    let scope = self.config.scope.clone();
                    let permits = |capsule: &str| scope.permits(capsule);
                    let mut examined = 0;
                    let claimed = self.timed_claim(
                        |f, now| {
                            let (urls, seen) =
                                f.claim_capsules(want, PER_CAPSULE, now, &permits)?;
                            examined = seen;
                            Ok(urls)
                        },
                        frontier,
                    )?;
                    frontier_has_more = examined >= want;
                    self.take_claimed(frontier, claimed, false)?;
                }
                for (host_id, host) in self.scheduler.unresolved() {
                    if resolving.insert(host_id) {
                        lookups.spawn(lookup(
                            host_id,
                            host.to_string(),
                            self.config.resolve.clone(),
                        ));
                    }
                }
            }

            let mut batch = frontier.batch(unix_now())?;
            let mut docs = Vec::new();
            self.release_held(&mut *batch, &mut docs, false, usize::MAX)?;
            self.dispatch(
                &mut *batch,
                &mut fetches,
                &mut dispatching,
                &mut pages_started,
                &mut docs,
            )?;
            batch.commit()?;
            for msg in docs.drain(..) {
                self.send_to_index(msg)?;
            }

            let idle = fetches.is_empty() && lookups.is_empty();
            if idle && dispatching && self.scheduler.queued() == 0 && self.follow_up(frontier)? {
                // Capsules were let go or URLs added: claim again before deciding to end.
                frontier_has_more = true;
                continue;
            }
            if idle && (!dispatching || (self.scheduler.queued() == 0 && !frontier_has_more)) {
                // Retries and back-offs that come due soon are worth waiting for. A wait already
                // running is never pushed later: the loop also wakes for other reasons (lease
                // renewals every third of `--lease`, progress), and a wait started afresh at
                // each wake-up would never end when those come more often than it.
                let due = if dispatching {
                    self.due_retry(frontier)?
                } else {
                    None
                };
                retry_at = due.map(|due| retry_at.map_or(due, |running| running.min(due)));
                if retry_at.is_none() {
                    break;
                }
            }

            let now = Instant::now();
            if now >= next_progress {
                self.log_progress();
                next_progress = now + self.config.progress_every;
            }
            if now >= next_trim {
                crate::heap::give_back_freed_memory();
                next_trim = now + TRIM_EVERY;
            }
            if now >= next_snapshot {
                self.publish_progress();
                next_snapshot = now + Duration::from_millis(200);
            }
            let wake = self
                .scheduler
                .next_wakeup()
                .unwrap_or(now + Duration::from_secs(3600))
                .min(next_progress)
                .min(if self.progress.is_some() {
                    next_snapshot
                } else {
                    next_progress
                })
                .min(retry_at.unwrap_or(now + Duration::from_secs(3600)))
                .min(drain_until.unwrap_or(far))
                .max(now);
            tokio::select! {
                Some(joined) = fetches.join_next(), if !fetches.is_empty() => {
                    let mut batch = frontier.batch(unix_now())?;
                    let mut next = Some(joined);
                    let mut recorded = 0;
                    // Record every result that is ready, and those arriving for a while after
                    // it, in one transaction: fewer, larger transactions rewrite fewer database
                    // pages. Requests keep starting meanwhile, so the wait costs no throughput.
                    // Not past `--max-duration`, when no request may start any more.
                    let gather_until = (Instant::now() + gather).min(if drain_until.is_none() {
                        deadline
                    } else {
                        far
                    });
                    loop {
                        while let Some(joined) = next.take() {
                            if let Ok(done) = joined {
                                self.record(&mut *batch, done, &mut docs)?;
                                recorded += 1;
                            }
                            next = fetches.try_join_next();
                        }
                        self.dispatch(
                            &mut *batch,
                            &mut fetches,
                            &mut dispatching,
                            &mut pages_started,
                            &mut docs,
                        )?;
                        let now = Instant::now();
                        if recorded >= BATCH_RESULTS || fetches.is_empty() || now >= gather_until {
                            break;
                        }
                        // Wake for the next result, or when the scheduler allows the next
                        // request, whichever comes first.
                        let can_start =
                            dispatching && self.scheduler.in_flight() < self.config.concurrency;
                        let wake = match self.scheduler.next_wakeup() {
                            Some(at) if can_start => {
                                at.max(now + Duration::from_millis(1)).min(gather_until)
                            }
                            _ => gather_until,
                        };
                        tokio::select! {
                            joined = tokio::time::timeout_at(wake.into(), fetches.join_next()) => {
                                match joined {
                                    Ok(Some(joined)) => next = Some(joined),
                                    Ok(None) => break,
                                    Err(_) => {}
                                }
                            }
                            _ = &mut shutdown, if !interrupted => {
                                interrupted = true;
                                self.interrupt(&mut dispatching, &mut drain_until);
                                break;
                            }
                        }
                    }
                    self.release_held(&mut *batch, &mut docs, false, usize::MAX)?;
                    batch.commit()?;
                    for msg in docs.drain(..) {
                        self.send_to_index(msg)?;
                    }
                }
                Some(joined) = lookups.join_next(), if !lookups.is_empty() => {
                    if let Ok((host_id, result)) = joined {
                        resolving.remove(&host_id);
                        self.take_address(frontier, host_id, result)?;
                    }
                }
                _ = tokio::time::sleep_until(wake.into()) => {}
                _ = tokio::time::sleep_until(next_renew.into()) => {}
                _ = tokio::time::sleep_until(deadline.into()), if drain_until.is_none() => {
                    tracing::info!("--max-duration reached: stopping the crawl");
                    dispatching = false;
                    self.summary.ended = StopReason::Time;
                    drain_until = Some(Instant::now() + self.config.drain);
                }
                _ = &mut shutdown, if !interrupted => {
                    interrupted = true;
                    self.interrupt(&mut dispatching, &mut drain_until);
                }
            }
            if drain_until.is_some_and(|at| Instant::now() >= at) && !fetches.is_empty() {
                // What did not finish in time is dropped; its URLs stay claimed and return to
                // the frontier when the run ends, for a later run.
                tracing::info!(
                    unfinished = fetches.len(),
                    "requests still in flight dropped"
                );
                fetches.abort_all();
                lookups.abort_all();
            }
            if retry_at.is_some_and(|at| Instant::now() >= at) {
                retry_at = None;
                frontier_has_more = true;
            }
        }
        // What is still held goes now, before the run's last commit. A stop by signal must end
        // within systemd's 10 s, and indexing tens of megabytes of pages takes longer: then
        // only as many go as the indexing thread's queue holds anyway, and the others, recorded
        // with a pending upsert, come due at once in the next run.
        if self.hold.len() > 0 {
            let mut batch = frontier.batch(unix_now())?;
            let mut docs = Vec::new();
            let keep = match self.summary.ended {
                StopReason::Signal => hold::SENT_ON_SIGNAL,
                _ => usize::MAX,
            };
            self.release_held(&mut *batch, &mut docs, true, keep)?;
            batch.commit()?;
            for msg in docs {
                self.send_to_index(msg)?;
            }
        }
        self.log_progress();
        Ok(())
    }

    /// Sends the held documents that are due (all of them when `all`), each with the labels
    /// the frontier records for its page now, and forgets the page's anchor update: the
    /// document is written with them.
    fn release_held(
        &mut self,
        batch: &mut dyn Batch,
        docs: &mut Vec<IndexMsg>,
        all: bool,
        at_most: usize,
    ) -> Result<(), CrawlError> {
        let mut due = self.hold.take_due(Instant::now(), all);
        if due.len() > at_most {
            tracing::info!(
                pages = due.len() - at_most,
                "fetched pages left out of the index for now: the next run fetches them again"
            );
            due.truncate(at_most);
        }
        for Held {
            url_id,
            header_only,
            mut doc,
        } in due
        {
            let anchors = batch
                .inbound_labels(url_id, crate::document::MAX_ANCHORS)?
                .join("\n");
            batch.forget_anchor_update(url_id)?;
            crate::document::set_anchors(&mut doc, header_only, anchors);
            docs.push(IndexMsg::Upsert { url_id, doc });
        }
        Ok(())
    }

    /// Stops the crawl on a signal: no new requests, those in flight get `--drain` to finish.
    fn interrupt(&mut self, dispatching: &mut bool, drain_until: &mut Option<Instant>) {
        tracing::info!("interrupted: stopping the crawl");
        *dispatching = false;
        self.summary.ended = StopReason::Signal;
        let until = Instant::now() + self.config.drain;
        *drain_until = Some(drain_until.map_or(until, |d| d.min(until)));
    }

    /// Starts the jobs the scheduler allows now, up to the concurrency: robots.txt and page
    /// requests become fetch tasks, URLs robots.txt disallows are recorded in `batch`.
    fn dispatch(
        &mut self,
        batch: &mut dyn Batch,
        fetches: &mut JoinSet<Done>,
        dispatching: &mut bool,
        pages_started: &mut u64,
        docs: &mut Vec<IndexMsg>,
    ) -> Result<(), CrawlError> {
        let now_unix = unix_now();
        while *dispatching && self.scheduler.in_flight() < self.config.concurrency {
            let Some(job) = self.scheduler.next_job(Instant::now()) else {
                break;
            };
            if let Job::Robots { addr, .. } | Job::Page { addr, .. } = &job {
                // The other crawlers of a shared store keep this request's gap too.
                let wait = self.scheduler.ip_wait(addr.ip(), Instant::now());
                batch.hold_address(&addr.ip().to_string(), wait)?;
            }
            match job {
                Job::Disallowed(url) => {
                    self.record_disallowed(batch, url, now_unix, docs)?;
                }
                Job::Robots {
                    host_id,
                    host,
                    addr,
                } => {
                    self.tried.insert(host_id);
                    self.count_request(&host, None);
                    let url = urlnorm::Capsule::parse(&host).robots_url();
                    fetches.spawn(fetch(
                        self.fetcher.clone(),
                        Arc::clone(&self.parsers),
                        url,
                        addr,
                        host_id,
                        DoneJob::Robots { host_id },
                    ));
                }
                Job::Page { url, addr } => {
                    *pages_started += 1;
                    self.count_request(&url.host, Some(url.depth));
                    let target = url.url.clone();
                    let host_id = url.host_id;
                    fetches.spawn(fetch(
                        self.fetcher.clone(),
                        Arc::clone(&self.parsers),
                        target,
                        addr,
                        host_id,
                        DoneJob::Page(Box::new(url)),
                    ));
                    self.tried.insert(host_id);
                    if self
                        .config
                        .max_pages
                        .is_some_and(|max| *pages_started >= max)
                    {
                        *dispatching = false;
                        self.summary.ended = StopReason::MaxPages;
                    }
                }
            }
        }
        Ok(())
    }

    /// When the next retry or capsule back-off comes due, if that is within the horizon.
    fn due_retry(&self, frontier: &dyn Frontier) -> Result<Option<Instant>, CrawlError> {
        let now = unix_now();
        let Some(at) = frontier.next_wakeup(now)? else {
            return Ok(None);
        };
        let wait = Duration::from_secs((at - now).max(0) as u64);
        Ok((wait <= self.config.retry_horizon).then(|| Instant::now() + wait))
    }

    /// Puts claimed URLs into the scheduler (at the front of their capsule's queue when
    /// `first`), with robots.txt rules read earlier in this run for capsules it does not know.
    fn take_claimed(
        &mut self,
        frontier: &dyn Frontier,
        claimed: Vec<QueuedUrl>,
        first: bool,
    ) -> Result<(), CrawlError> {
        let now = Instant::now();
        for url in claimed {
            let host_id = url.host_id;
            let host = url.host.clone();
            let new_capsule = !self.scheduler.knows(host_id);
            self.scheduler.push(url, first, now);
            if new_capsule {
                // What earlier runs learned of it sets its budget, read once a run.
                if let Some(run) = self.budgets.get(&host).filter(|r| !r.has_standing()) {
                    run.set_standing(frontier.capsule_standing(host_id)?);
                }
                // Rules read by an earlier run are read again: a capsule's robots.txt may have
                // changed since, and pages it now disallows must leave the index.
                if let Some(cached) = frontier.robots(host_id)? {
                    let age = unix_now() - cached.fetched_at;
                    let this_run = cached.fetched_at >= self.run_started;
                    if this_run
                        && age < scheduler::ROBOTS_TTL.as_secs() as i64
                        && cached.status / 10 != 4
                    {
                        let robots = cached
                            .text
                            .as_deref()
                            .map(|text| super::record::robots_of(&host, text))
                            .unwrap_or_default();
                        let read_at = now
                            .checked_sub(Duration::from_secs(age.max(0) as u64))
                            .unwrap_or(now);
                        self.scheduler.set_robots(host_id, robots, read_at, now);
                    }
                }
            }
        }
        Ok(())
    }

    /// Claims from the frontier, timing the claim for the summary.
    fn timed_claim(
        &mut self,
        claim: impl FnOnce(&mut dyn Frontier, i64) -> Result<Vec<QueuedUrl>, FrontierError>,
        frontier: &mut dyn Frontier,
    ) -> Result<Vec<QueuedUrl>, CrawlError> {
        let started = Instant::now();
        let claimed = claim(frontier, unix_now())?;
        let ms = started.elapsed().as_secs_f64() * 1000.0;
        self.summary.claims += 1;
        self.summary.claim_total_ms += ms;
        self.summary.claim_max_ms = self.summary.claim_max_ms.max(ms);
        Ok(claimed)
    }

    /// Does what recorded results asked for, then keeps the leased capsules fed: capsules whose
    /// queue ran dry get more of their due URLs, and those with nothing left are let go.
    /// Returns whether the frontier may have more capsules due.
    fn follow_up(&mut self, frontier: &mut dyn Frontier) -> Result<bool, CrawlError> {
        let effects = std::mem::take(&mut self.effects);
        let mut more = effects.new_urls;
        for host_id in effects.wake {
            self.scheduler.set_exhausted(host_id, false);
        }
        for (host_id, kind, message) in effects.unreachable {
            self.record_unreachable(frontier, host_id, &kind, &message)?;
            more = true;
        }
        // Entries of capsules not leased now come first when theirs is (they are hubs).
        let hubs: Vec<i64> = effects
            .hubs
            .iter()
            .filter(|(_, host_id)| self.scheduler.is_leased(*host_id))
            .map(|&(id, _)| id)
            .collect();
        if !hubs.is_empty() {
            let claimed = self.timed_claim(|f, now| f.claim_ids(&hubs, now), frontier)?;
            self.take_claimed(frontier, claimed, true)?;
        }
        for host_id in self.scheduler.wanting_more() {
            let urls =
                self.timed_claim(|f, now| f.claim_more(host_id, PER_CAPSULE, now), frontier)?;
            self.scheduler
                .set_exhausted(host_id, urls.len() < PER_CAPSULE);
            self.take_claimed(frontier, urls, false)?;
        }
        for host_id in self.scheduler.take_finished() {
            frontier.release_capsule(host_id)?;
            self.hold.capsule_done(host_id);
            more = true;
        }
        if self.config.shared.is_some() {
            // An address held with nothing left to do there is let go at once: another
            // crawler may have capsules on it, and would otherwise put them back again and
            // again until this one's run ends. Its gap stays recorded with it.
            for ip in self.scheduler.idle_addresses() {
                frontier.release_address(&ip.to_string())?;
                more = true;
            }
        }
        Ok(more)
    }

    fn take_address(
        &mut self,
        frontier: &mut dyn Frontier,
        host_id: i64,
        result: Result<SocketAddr, FetchError>,
    ) -> Result<(), CrawlError> {
        match result {
            Ok(addr) => {
                let Some(held) = frontier.lease_address(&addr.ip().to_string())? else {
                    // Another crawler of a shared store fetches from this address now: the
                    // capsule goes back, to be claimed again (by whichever crawler) a little
                    // later.
                    let mut batch = frontier.batch(unix_now())?;
                    self.put_back_capsule(&mut *batch, host_id, unix_now() + ADDRESS_BUSY_SECS)?;
                    batch.commit()?;
                    return Ok(());
                };
                let now = Instant::now();
                if !held.is_zero() {
                    // The crawler that fetched from this address last asked for that gap.
                    self.scheduler.hold_ip(addr.ip(), now + held);
                }
                let wait = self.scheduler.ip_wait(addr.ip(), now);
                if wait > self.config.retry_horizon {
                    // Its address asked for a wait longer than this run waits (a 44 to another
                    // capsule on it): the capsule joins the others there, in a later run.
                    let until = unix_now().saturating_add(wait.as_secs() as i64);
                    let mut batch = frontier.batch(unix_now())?;
                    self.defer_capsule(&mut *batch, host_id, until)?;
                    batch.commit()?;
                } else {
                    self.scheduler.set_address(host_id, addr, now);
                }
            }
            Err(e) => {
                // A capsule counts as tried once a request went to it or its name did not
                // resolve; one put back because another crawler holds its address was not.
                self.tried.insert(host_id);
                tracing::debug!(host_id, error = %e, "no address");
                self.effects
                    .unreachable
                    .push((host_id, e.kind().to_string(), e.to_string()));
                self.follow_up(frontier)?;
            }
        }
        Ok(())
    }

    /// Lets go of the capsules and addresses whose leases another crawler of a shared store
    /// took over after this one let them run out (a stalled or overloaded machine): their
    /// queued URLs are the other crawler's now, and a request from here to an address it
    /// holds would be a second connection there. Requests in flight finish.
    fn let_go_of_lost_leases(&mut self, frontier: &mut dyn Frontier) -> Result<(), CrawlError> {
        let (capsules, ips) = self.scheduler.held();
        let ips: Vec<String> = ips.iter().map(ToString::to_string).collect();
        let (lost, lost_ips) = frontier.lost_leases(&capsules, &ips)?;
        for host_id in lost {
            let dropped = self.scheduler.drop_capsule(host_id);
            tracing::warn!(
                host_id,
                urls = dropped.len(),
                "another crawler took over a capsule whose lease ran out here; its URLs are left to it"
            );
        }
        if lost_ips.is_empty() {
            return Ok(());
        }
        let mut batch = frontier.batch(unix_now())?;
        for ip in lost_ips {
            let Ok(addr) = ip.parse::<std::net::IpAddr>() else {
                continue;
            };
            tracing::warn!(%ip, "another crawler took over an address whose lease ran out here");
            for host_id in self.scheduler.capsules_on(addr) {
                if self.scheduler.is_leased(host_id) {
                    self.put_back_capsule(&mut *batch, host_id, unix_now() + ADDRESS_BUSY_SECS)?;
                }
            }
            self.scheduler.forget_address(addr);
        }
        batch.commit()?;
        Ok(())
    }

    /// Rewrites the documents of the pages whose inbound link labels changed, from what the
    /// index and the frontier store: no request. Waits for the indexing thread to commit first,
    /// so every page visited in this run is settled in the frontier and readable in the index.
    /// Returns the anchor updates handled, to forget once the thread has committed them.
    pub(super) async fn refresh_anchors(
        &mut self,
        frontier: &dyn Frontier,
        deadline: Option<Instant>,
    ) -> Result<Vec<i64>, CrawlError> {
        let (ack_tx, ack_rx) = std::sync::mpsc::sync_channel(1);
        self.send_to_index(IndexMsg::Flush(ack_tx))?;
        tokio::task::spawn_blocking(move || ack_rx.recv())
            .await
            .map_err(|e| CrawlError::IndexerStopped(e.to_string()))?
            .map_err(|_| CrawlError::IndexerStopped("it ended before committing".into()))?;
        let mut handled = Vec::new();
        let mut pages = HashSet::new();
        let mut after = 0;
        while !deadline.is_some_and(|d| Instant::now() >= d) {
            let updates = frontier.anchor_updates(after, ANCHOR_CHUNK)?;
            let Some(last) = updates.last() else { break };
            after = last.dirty_id;
            for update in updates {
                handled.push(update.dirty_id);
                let Some(page) = update.page else { continue };
                if !pages.insert(page.id) {
                    continue;
                }
                let anchors = frontier
                    .inbound_labels(page.id, crate::document::MAX_ANCHORS)?
                    .join("\n");
                let link_labels = frontier.own_labels(page.id)?.join("\n");
                let body = crate::document::refreshed_body(&page, &anchors);
                self.send_to_index(IndexMsg::Refresh {
                    url: page.url,
                    anchors,
                    link_labels,
                    body,
                })?;
            }
        }
        if !pages.is_empty() {
            tracing::info!(pages = pages.len(), "documents rewritten with new anchors");
        }
        Ok(handled)
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

    fn publish_progress(&self) {
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

    fn log_progress(&self) {
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
