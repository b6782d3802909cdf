//! The crawl loop itself: one task owns the scheduler and the frontier connection, leases
//! capsules with due work ([`super::lease`]), hands jobs to fetch tasks ([`super::task`]), records
//! their results in batched transactions ([`super::record`]), keeps leased capsules fed and lets
//! finished ones go, and, at the end of a run, rewrites the documents whose inbound link labels
//! changed.

use std::collections::HashSet;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::task::{JoinError, JoinSet};

use super::hold::{self, Held};
use super::indexing::IndexMsg;
use super::record::new_content;
use super::scheduler::Job;
use super::state::Crawl;
use super::task::{fetch, lookup, Done, DoneJob};
use super::{
    CrawlConfig, CrawlError, StopReason, ADDRESSES_PER_SLOT, ANCHOR_CHUNK, BATCH_GATHER,
    BATCH_GATHER_SHARED, BATCH_RESULTS, CAPSULES_PER_ADDRESS, CLAIM_PAUSE_SHARED,
    CLAIM_STEP_SHARED, SHARED_SETTLE,
};
use crate::clock::unix_now;
use crate::fetch::{dns, FetchError};
use crate::frontier::{Batch, Frontier};
use crate::urlnorm;

/// How often the crawl loop hands the memory freed by its threads back to the system. glibc
/// keeps freed memory in each thread's arena for reuse, and a crawl's threads free pages,
/// bodies and index buffers by the megabyte in every arena: on the full-size generated
/// geminispace, 130 of a crawl's 290 MB were freed memory kept so after ten minutes. A trim
/// walks the free lists (milliseconds) and returns the whole free pages in them.
const TRIM_EVERY: Duration = Duration::from_secs(1);

/// How often a progress snapshot is published, for displays that watch the crawl.
const SNAPSHOT_EVERY: Duration = Duration::from_millis(200);

/// A capsule's id and what the lookup of its address found.
type Looked = (i64, Result<SocketAddr, FetchError>);

/// The loop's own state: the tasks it runs, whether it may start more, and when it has
/// something to do besides recording their results.
struct LoopState {
    fetches: JoinSet<Done>,
    lookups: JoinSet<Looked>,
    /// Capsules whose address is being looked up.
    resolving: HashSet<i64>,
    /// A claim may find more capsules due.
    frontier_has_more: bool,
    /// When a claim may be made again after one found no more due, the pause after such a
    /// claim and the fewest capsules a claim is made for, unless the crawl is idle (see
    /// [`CLAIM_PAUSE_SHARED`]).
    next_claim: Instant,
    claim_pause: Duration,
    claim_step: usize,
    /// Before then, no shard is taken and no claim made (see [`SHARED_SETTLE`]).
    settled_at: Instant,
    /// New requests may start: not after `--max-pages`, `--max-duration` or a signal.
    dispatching: bool,
    /// A signal came: the next one is not waited for.
    interrupted: bool,
    pages_started: u64,
    /// Addresses the crawl leases capsules on at once, at most (one not resolved counts as one).
    max_addresses: usize,
    /// Capsules leased at once at most.
    max_capsules: usize,
    /// A year from now: never, for a run.
    far: Instant,
    /// The end of `--max-duration`.
    deadline: Instant,
    /// Once told to stop: requests in flight may finish until then.
    drain_until: Option<Instant>,
    /// A retry or back-off that the run waits for comes due then.
    retry_at: Option<Instant>,
    /// How often a shared store's leases are renewed, and when next.
    renew_every: Option<Duration>,
    next_renew: Instant,
    /// How long results are gathered to be recorded in one transaction.
    gather: Duration,
    next_progress: Instant,
    next_trim: Instant,
    next_snapshot: Instant,
}

impl LoopState {
    fn new(config: &CrawlConfig) -> LoopState {
        let now = Instant::now();
        let far = now + Duration::from_secs(365 * 24 * 3600);
        // A shared store's leases are renewed at a third of their length, so that one slow
        // renewal never lets them run out while this crawler works.
        let renew_every = config.shared.as_ref().map(|s| s.lease / 3);
        LoopState {
            fetches: JoinSet::new(),
            lookups: JoinSet::new(),
            resolving: HashSet::new(),
            frontier_has_more: true,
            next_claim: now,
            settled_at: if config.shared.is_some() {
                now + SHARED_SETTLE
            } else {
                now
            },
            claim_pause: if config.shared.is_some() {
                CLAIM_PAUSE_SHARED
            } else {
                Duration::ZERO
            },
            claim_step: if config.shared.is_some() {
                CLAIM_STEP_SHARED
            } else {
                1
            },
            // `--max-pages 0` asks for no request at all: not even robots.txt or DNS.
            dispatching: config.max_pages != Some(0),
            interrupted: false,
            pages_started: 0,
            max_addresses: (config.concurrency * ADDRESSES_PER_SLOT).max(16),
            max_capsules: (config.concurrency * ADDRESSES_PER_SLOT).max(16) * CAPSULES_PER_ADDRESS,
            far,
            deadline: config.max_duration.map_or(far, |d| now + d),
            drain_until: None,
            retry_at: None,
            renew_every,
            next_renew: renew_every.map_or(far, |every| now + every),
            // Shorter with a shared store: a crawler's round waits on the database's round
            // trips, and what it records reaches the other crawlers and the index writer later.
            gather: if config.shared.is_some() {
                BATCH_GATHER_SHARED
            } else {
                BATCH_GATHER
            },
            next_progress: now + config.progress_every,
            next_trim: now + TRIM_EVERY,
            next_snapshot: now,
        }
    }

    /// No request and no lookup is running.
    fn idle(&self) -> bool {
        self.fetches.is_empty() && self.lookups.is_empty()
    }

    /// How many more capsules the crawl may lease, holding `capsules` on `addresses`.
    fn room(&self, capsules: usize, addresses: usize) -> usize {
        self.max_addresses
            .saturating_sub(addresses)
            .min(self.max_capsules.saturating_sub(capsules))
    }

    /// Whether to claim now: the frontier may have more and this crawl has `room` for more
    /// capsules; unless it is idle (nothing queued, nothing in flight), room for a step of
    /// them, and the pause after a dry claim is over.
    fn claim_due(&self, room: usize, queued: usize) -> bool {
        let idle = queued == 0 && self.fetches.is_empty();
        self.settled()
            && self.frontier_has_more
            && room > 0
            && (idle || (room >= self.claim_step && Instant::now() >= self.next_claim))
    }

    /// A claim was made; `more` says whether it found as many capsules as it asked for.
    fn claimed(&mut self, more: bool) {
        self.frontier_has_more = more;
        if !more {
            self.next_claim = Instant::now() + self.claim_pause;
        }
    }

    /// When the loop must wake to claim, if a claim waits for its pause to end.
    fn claim_wake(&self, room: usize) -> Option<Instant> {
        if !self.settled() {
            return Some(self.settled_at);
        }
        (self.frontier_has_more && room >= self.claim_step).then_some(self.next_claim)
    }

    /// Whether the wait after the start for the other crawlers of a shared store is over.
    fn settled(&self) -> bool {
        Instant::now() >= self.settled_at
    }

    fn renewal_due(&self) -> bool {
        self.renew_every.is_some() && Instant::now() >= self.next_renew
    }

    /// The latest a request handed out now may be sent (a shared store): a third of a lease
    /// after the next renewal was due, a third of a lease before the leases it was handed out
    /// under could run out. `None`: no leases (one crawler alone).
    fn send_by(&self) -> Option<Instant> {
        self.renew_every.map(|every| self.next_renew + every)
    }

    fn renewed(&mut self) {
        if let Some(every) = self.renew_every {
            self.next_renew = Instant::now() + every;
        }
    }

    /// Starts looking up the address of each capsule in `unresolved` not looked up yet.
    fn look_up<'a>(
        &mut self,
        unresolved: impl Iterator<Item = (i64, &'a str)>,
        overrides: &dns::Overrides,
    ) {
        for (host_id, host) in unresolved {
            if self.resolving.insert(host_id) {
                self.lookups
                    .spawn(lookup(host_id, host.to_string(), overrides.clone()));
            }
        }
    }

    /// With nothing left to do now: whether to wait for the retry or back-off `due` next.
    /// Retries and back-offs that come due soon are worth waiting for. A wait already running
    /// is never pushed later: the loop also wakes for other reasons (lease renewals every third
    /// of `--lease`, progress), and a wait started afresh at each wake-up would never end when
    /// those come more often than it.
    fn wait_for(&mut self, due: Option<Instant>) -> bool {
        self.retry_at = due.map(|due| self.retry_at.map_or(due, |running| running.min(due)));
        self.retry_at.is_some()
    }

    /// Until when results are gathered into the transaction opened now: not past
    /// `--max-duration`, when no request may start any more.
    fn gather_until(&self) -> Instant {
        (Instant::now() + self.gather).min(if self.drain_until.is_none() {
            self.deadline
        } else {
            self.far
        })
    }

    /// Once the drain is over, what did not finish in time is dropped; its URLs stay claimed
    /// and return to the frontier when the run ends, for a later run.
    fn drop_overdue(&mut self) {
        if self.drain_until.is_some_and(|at| Instant::now() >= at) && !self.fetches.is_empty() {
            tracing::info!(
                unfinished = self.fetches.len(),
                "requests still in flight dropped"
            );
            self.fetches.abort_all();
            self.lookups.abort_all();
        }
    }

    /// A retry waited for is due: the frontier has more.
    fn retry_if_due(&mut self) {
        if self.retry_at.is_some_and(|at| Instant::now() >= at) {
            self.retry_at = None;
            self.frontier_has_more = true;
        }
    }
}

impl Crawl {
    /// How many more capsules the crawl may lease now.
    fn room(&self, run: &LoopState) -> usize {
        let (capsules, addresses) = self.scheduler.leased();
        run.room(capsules, addresses)
    }

    /// Runs the crawl until nothing is left that is due, `--max-pages`, `--max-duration` or
    /// `shutdown`.
    pub(super) async fn run_loop(
        &mut self,
        frontier: &mut dyn Frontier,
        shutdown: impl Future<Output = ()>,
    ) -> Result<(), CrawlError> {
        let mut shutdown = std::pin::pin!(shutdown);
        let mut run = LoopState::new(&self.config);
        if !run.dispatching {
            self.summary.ended = StopReason::MaxPages;
        }
        loop {
            if run.renewal_due() {
                frontier.renew_leases()?;
                self.let_go_of_lost_leases(frontier)?;
                run.renewed();
            }
            if run.dispatching {
                if run.settled() {
                    frontier.keep_share()?;
                }
                // While the last round still commits behind the loop (a shared store),
                // claims, which would wait for it, wait for a later turn if the queue holds
                // a request for every slot: the loop goes on dispatching meanwhile.
                let fed = self.scheduler.queued() >= self.config.concurrency;
                if !(fed && frontier.committing()) {
                    run.frontier_has_more |= self.follow_up(frontier)?;
                    let room = self.room(&run);
                    if run.claim_due(room, self.scheduler.queued()) {
                        let more = self.claim_capsules(frontier, room)?;
                        run.claimed(more);
                    }
                }
                run.look_up(self.scheduler.unresolved(), &self.config.resolve);
            }
            self.take_addresses(frontier, &mut run, None)?;

            let mut batch = frontier.batch(unix_now())?;
            let mut docs = Vec::new();
            self.release_held(&mut *batch, &mut docs, false, usize::MAX)?;
            self.dispatch(&mut *batch, &mut run, &mut docs)?;
            self.commit(batch, &mut docs)?;

            let idle = run.idle();
            if idle
                && run.dispatching
                && self.scheduler.queued() == 0
                && self.follow_up(frontier)?
            {
                // Capsules were let go or URLs added: claim again before deciding to end.
                run.frontier_has_more = true;
                continue;
            }
            // Nothing to do now: the run waits for a retry coming due soon, or ends.
            let nothing_due = self.scheduler.queued() == 0 && !run.frontier_has_more;
            if idle && (!run.dispatching || nothing_due) {
                let due = if run.dispatching {
                    self.due_retry(frontier)?
                } else {
                    None
                };
                if !run.wait_for(due) {
                    break;
                }
            }

            let mut wake = self.chores(&mut run);
            if let Some(at) = run.claim_wake(self.room(&run)) {
                wake = wake.min(at.max(Instant::now()));
            }
            tokio::select! {
                Some(joined) = run.fetches.join_next(), if !run.fetches.is_empty() => {
                    self.record_results(frontier, &mut run, joined, shutdown.as_mut()).await?;
                }
                Some(joined) = run.lookups.join_next(), if !run.lookups.is_empty() => {
                    self.take_addresses(frontier, &mut run, Some(joined))?;
                }
                _ = tokio::time::sleep_until(wake.into()) => {}
                _ = tokio::time::sleep_until(run.next_renew.into()) => {}
                _ = tokio::time::sleep_until(run.deadline.into()), if run.drain_until.is_none() => {
                    self.stop(&mut run, StopReason::Time);
                }
                _ = shutdown.as_mut(), if !run.interrupted => {
                    self.stop(&mut run, StopReason::Signal);
                }
            }
            run.drop_overdue();
            run.retry_if_due();
        }
        self.release_all_held(frontier)?;
        self.log_progress();
        Ok(())
    }

    /// Takes the address of `first`'s capsule and of every other whose lookup is done: all at
    /// once, for the loop takes one branch at a time, and each of its turns waits a round of
    /// results (with a shared store, 60 of the 64 capsules a crawler leased waited for their
    /// address, one a turn), and in one go ([`Crawl::take_found_addresses`]: a few statements
    /// for all of them).
    fn take_addresses(
        &mut self,
        frontier: &mut dyn Frontier,
        run: &mut LoopState,
        first: Option<Result<Looked, JoinError>>,
    ) -> Result<(), CrawlError> {
        let mut found = Vec::new();
        let mut next = first.or_else(|| run.lookups.try_join_next());
        while let Some(joined) = next.take() {
            if let Ok((host_id, result)) = joined {
                run.resolving.remove(&host_id);
                found.push((host_id, result));
            }
            next = run.lookups.try_join_next();
        }
        if found.is_empty() {
            return Ok(());
        }
        self.take_found_addresses(frontier, found)
    }

    /// Records `first`, every other result that is ready and those arriving for a while after
    /// it, in one transaction: fewer, larger transactions rewrite fewer database pages.
    /// Requests keep starting meanwhile, so the wait costs no throughput.
    ///
    /// With a shared store, whose every statement is a round trip, the pages that answered
    /// with content or a plain failure are recorded together at the end ([`Crawl::record_answers`]):
    /// their requests' ends are taken at once ([`Crawl::request_ended`]: the slot, the address's
    /// gap), so the next requests start as before, but what they found waits for the
    /// transaction's end. What changes the schedule (robots.txt, a 44, an error, a 41) is
    /// recorded at once. A capsule's budget hears of the pages that wait only then: on default
    /// flags (a second between two requests to an address) that is at most one request more.
    async fn record_results(
        &mut self,
        frontier: &mut dyn Frontier,
        run: &mut LoopState,
        first: Result<Done, JoinError>,
        mut shutdown: Pin<&mut impl Future<Output = ()>>,
    ) -> Result<(), CrawlError> {
        let mut batch = frontier.batch(unix_now())?;
        let mut docs = Vec::new();
        let mut next = Some(first);
        let mut recorded = 0;
        let mut later = Vec::new();
        let defer = self.config.shared.is_some();
        let gather_until = run.gather_until();
        loop {
            // Every result ready now, recorded together: the store reads what their contents
            // are known as in one go.
            let mut ready = Vec::new();
            while let Some(joined) = next.take() {
                match joined {
                    Ok(done) if !done.sent() => self.not_sent(done),
                    Ok(done) => ready.push(done),
                    Err(_) => {}
                }
                next = run.fetches.try_join_next();
            }
            let (wait, at_once): (Vec<Done>, Vec<Done>) = ready
                .into_iter()
                .partition(|done| defer && self.can_wait(done));
            for done in &wait {
                self.request_ended(&mut *batch, done)?;
            }
            recorded += wait.len();
            later.extend(wait);
            let hashes: Vec<&str> = at_once.iter().filter_map(new_content).collect();
            if hashes.len() > 1 {
                batch.expect_contents(&hashes)?;
            }
            for done in at_once {
                self.record(&mut *batch, done, &mut docs)?;
                recorded += 1;
            }
            // Nothing starts while a renewal is due (see `dispatch`): the loop ends for it.
            self.dispatch(&mut *batch, run, &mut docs)?;
            let now = Instant::now();
            if recorded >= BATCH_RESULTS || run.renewal_due() || now >= gather_until {
                break;
            }
            // Wake for the next result, or when the scheduler allows the next request,
            // whichever comes first.
            let can_start = run.dispatching && self.scheduler.in_flight() < self.config.concurrency;
            let start_at = self.scheduler.next_wakeup().filter(|_| can_start);
            let wake = match start_at {
                Some(at) => at.max(now + Duration::from_millis(1)).min(gather_until),
                None => gather_until,
            };
            if run.fetches.is_empty() {
                // Nothing in flight. With a shared store, whose transaction costs round trips
                // however few results it holds, the round goes on while a request may start
                // before its end (an address's gap about to pass) and no capsule waits for a
                // claim (made once the round is committed); otherwise it ends here.
                let soon = start_at.is_some_and(|at| at < gather_until);
                if !defer || !soon || self.scheduler.wants_more() {
                    break;
                }
                tokio::select! {
                    _ = tokio::time::sleep_until(wake.into()) => {}
                    _ = shutdown.as_mut(), if !run.interrupted => {
                        self.stop(run, StopReason::Signal);
                        break;
                    }
                }
                continue;
            }
            tokio::select! {
                joined = tokio::time::timeout_at(wake.into(), run.fetches.join_next()) => {
                    match joined {
                        Ok(Some(joined)) => next = Some(joined),
                        Ok(None) => break,
                        Err(_) => {}
                    }
                }
                _ = shutdown.as_mut(), if !run.interrupted => {
                    self.stop(run, StopReason::Signal);
                    break;
                }
            }
        }
        self.record_answers(&mut *batch, later, &mut docs)?;
        self.release_held(&mut *batch, &mut docs, false, usize::MAX)?;
        self.commit(batch, &mut docs)
    }

    /// What the loop does besides its work when it is due: a progress line, a memory trim, a
    /// progress snapshot. Returns when the loop wakes next if nothing happens.
    fn chores(&mut self, run: &mut LoopState) -> Instant {
        let now = Instant::now();
        if now >= run.next_progress {
            self.log_progress();
            run.next_progress = now + self.config.progress_every;
        }
        if now >= run.next_trim {
            crate::heap::give_back_freed_memory();
            run.next_trim = now + TRIM_EVERY;
        }
        if now >= run.next_snapshot {
            self.publish_progress();
            run.next_snapshot = now + SNAPSHOT_EVERY;
        }
        let hour = now + Duration::from_secs(3600);
        self.scheduler
            .next_wakeup()
            .unwrap_or(hour)
            .min(run.next_progress)
            .min(if self.progress.is_some() {
                run.next_snapshot
            } else {
                run.next_progress
            })
            .min(run.retry_at.unwrap_or(hour))
            .min(run.drain_until.unwrap_or(run.far))
            .max(now)
    }

    /// Stops the crawl at `--max-duration` or on a signal: no new requests, those in flight
    /// get `--drain` to finish.
    fn stop(&mut self, run: &mut LoopState, reason: StopReason) {
        if reason == StopReason::Signal {
            tracing::info!("interrupted: stopping the crawl");
            run.interrupted = true;
        } else {
            tracing::info!("--max-duration reached: stopping the crawl");
        }
        run.dispatching = false;
        self.summary.ended = reason;
        let until = Instant::now() + self.config.drain;
        run.drain_until = Some(run.drain_until.map_or(until, |d| d.min(until)));
    }

    /// What is still held goes at the end, before the run's last commit. A stop by signal must
    /// end within systemd's 10 s, and indexing tens of megabytes of pages takes longer: then
    /// only as many go as the indexing thread's queue holds anyway, and the others, recorded
    /// with a pending upsert, come due at once in the next run.
    fn release_all_held(&mut self, frontier: &mut dyn Frontier) -> Result<(), CrawlError> {
        if self.hold.len() == 0 {
            return Ok(());
        }
        let mut batch = frontier.batch(unix_now())?;
        let mut docs = Vec::new();
        let keep = match self.summary.ended {
            StopReason::Signal => hold::SENT_ON_SIGNAL,
            _ => usize::MAX,
        };
        self.release_held(&mut *batch, &mut docs, true, keep)?;
        self.commit(batch, &mut docs)
    }

    /// Sends the held documents that are due (all of them when `all`), each with the labels
    /// the frontier records for its page now, and forgets the page's anchor update: the
    /// document is written with them (in a shared store, by the index writer).
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
        // A crawler of a shared store indexes nothing: the index writer reads a page's labels
        // when it applies the page, after this batch commits, so none are read here (a round
        // trip a page). The anchor update is forgotten all the same: the page's document is
        // written after this commit, with every label committed by then.
        let shared = self.config.shared.is_some();
        for Held {
            url_id,
            header_only,
            mut doc,
        } in due
        {
            let anchors = if shared {
                String::new()
            } else {
                batch
                    .inbound_labels(url_id, crate::document::MAX_ANCHORS)?
                    .join("\n")
            };
            batch.forget_anchor_update(url_id)?;
            crate::document::set_anchors(&mut doc, header_only, anchors);
            docs.push(IndexMsg::Upsert { url_id, doc });
        }
        Ok(())
    }

    /// Starts the jobs the scheduler allows now, up to the concurrency: robots.txt and page
    /// requests become fetch tasks, URLs robots.txt disallows are recorded in `batch`.
    ///
    /// Nothing starts while a renewal of the leases is due. After a stall past one (a stopped
    /// process, a loaded machine, a suspended host), some leases may have run out and passed to
    /// another crawler, whose capsules this one's queue must not fetch: the loop renews first
    /// and lets go of what it lost. Asked here, at each job, rather than by the callers: a stop
    /// that landed after the loop's own check (during a claim's round trips, say) had the
    /// resumed crawler send requests to addresses another crawler had taken over, within a
    /// few milliseconds of that crawler's (seen once in `scripts/check-shared-crawl`).
    fn dispatch(
        &mut self,
        batch: &mut dyn Batch,
        run: &mut LoopState,
        docs: &mut Vec<IndexMsg>,
    ) -> Result<(), CrawlError> {
        let now_unix = unix_now();
        while run.dispatching
            && !run.renewal_due()
            && self.scheduler.in_flight() < self.config.concurrency
        {
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
                    self.count_request(&host, None);
                    let url = urlnorm::Capsule::parse(&host).robots_url();
                    self.start(run, url, addr, host_id, DoneJob::Robots { host_id });
                }
                Job::Page { url, addr } => {
                    run.pages_started += 1;
                    self.count_request(&url.host, Some(url.depth));
                    let (target, host_id) = (url.url.clone(), url.host_id);
                    self.start(run, target, addr, host_id, DoneJob::Page(Box::new(url)));
                    if self
                        .config
                        .max_pages
                        .is_some_and(|max| run.pages_started >= max)
                    {
                        run.dispatching = false;
                        self.summary.ended = StopReason::MaxPages;
                    }
                }
            }
        }
        Ok(())
    }

    /// Hands a request to a fetch task; its capsule counts as tried.
    fn start(
        &mut self,
        run: &mut LoopState,
        url: String,
        addr: SocketAddr,
        host_id: i64,
        job: DoneJob,
    ) {
        self.tried.insert(host_id);
        run.fetches.spawn(fetch(
            self.fetcher.clone(),
            Arc::clone(&self.parsers),
            url,
            addr,
            host_id,
            job,
            run.send_by(),
        ));
    }

    /// A job whose request was not sent, its connection due past [`fetch`]'s `not_after`: its
    /// slot is free again and the job waits in its capsule's queue as if never handed out,
    /// until the loop has renewed the leases (and dropped the queues of capsules it lost). The
    /// address's gap runs from the task's start, as if it had been sent. A capsule's request
    /// budget keeps the request counted.
    fn not_sent(&mut self, done: Done) {
        let now = Instant::now();
        self.scheduler
            .finished(done.ip, done.host_id, done.began, Duration::ZERO);
        match done.job {
            DoneJob::Page(url) => self.scheduler.retry(*url, now),
            DoneJob::Robots { host_id } => self.scheduler.put_back_robots(host_id, now),
        }
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
}
