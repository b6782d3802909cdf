//! What this crawl holds of the frontier: capsules leased with their due URLs (claims timed for
//! the summary), kept fed while they have more and let go once done, the address of each in a
//! shared store, and the leases another crawler took over. [`super::driver`] decides when.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use super::scheduler;
use super::state::Crawl;
use super::verdict::robots_of;
use super::{CrawlError, CAPSULES_PER_CLAIM, PER_CAPSULE};
use crate::clock::unix_now;
use crate::fetch::FetchError;
use crate::frontier::{ClaimRequest, Frontier, FrontierError, QueuedUrl};

/// How long a capsule waits when another crawler of a shared store holds its IP address.
const ADDRESS_BUSY_SECS: i64 = 2;

impl Crawl {
    /// Leases up to `room` more capsules with due work, a claim's worth at a time. Returns
    /// whether the frontier may have more.
    pub(super) fn claim_capsules(
        &mut self,
        frontier: &mut dyn Frontier,
        room: usize,
    ) -> Result<bool, CrawlError> {
        let want = room.min(CAPSULES_PER_CLAIM);
        let scope = self.config.scope.clone();
        let permits = |capsule: &str| scope.permits(capsule);
        let mut examined = 0;
        let claimed = self.timed_claim(
            |f, now| {
                let (urls, seen) = f.claim_capsules(
                    &ClaimRequest {
                        capsules: want,
                        per_capsule: PER_CAPSULE,
                        permits: &permits,
                    },
                    now,
                )?;
                examined = seen;
                Ok(urls)
            },
            frontier,
        )?;
        self.take_claimed(frontier, claimed, false)?;
        Ok(examined >= want)
    }

    pub(super) fn due_retry(&self, frontier: &dyn Frontier) -> Result<Option<Instant>, CrawlError> {
        let Some(wait) = frontier.next_wakeup(unix_now())? else {
            return Ok(None);
        };
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
        // What the store knows of the capsules new to this crawl, read at once.
        let mut new_capsules: Vec<i64> = claimed
            .iter()
            .map(|url| url.host_id)
            .filter(|&host_id| !self.scheduler.knows(host_id))
            .collect();
        new_capsules.sort_unstable();
        new_capsules.dedup();
        let mut known = frontier.capsules_known(&new_capsules)?;
        for url in claimed {
            let host_id = url.host_id;
            let host = url.host.clone();
            let new_capsule = !self.scheduler.knows(host_id);
            self.scheduler.push(url, first, now);
            if new_capsule {
                let (standing, robots) = known.remove(&host_id).unwrap_or_default();
                // What earlier runs learned of it sets its budget, read once a run.
                if let Some(run) = self.budgets.get(&host).filter(|r| !r.has_standing()) {
                    run.set_standing(standing);
                }
                // Rules read by an earlier run are read again: a capsule's robots.txt may have
                // changed since, and pages it now disallows must leave the index.
                if let Some(cached) = robots {
                    let age = unix_now() - cached.fetched_at;
                    let this_run = cached.fetched_at >= self.run_started;
                    if this_run
                        && age < scheduler::ROBOTS_TTL.as_secs() as i64
                        && cached.status / 10 != 4
                    {
                        let robots = cached
                            .text
                            .as_deref()
                            .map(|text| robots_of(&host, text))
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
    pub(super) fn follow_up(&mut self, frontier: &mut dyn Frontier) -> Result<bool, CrawlError> {
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
        // Every capsule whose queue ran dry gets more in one claim.
        let wanting = self.scheduler.wanting_more();
        if !wanting.is_empty() {
            let urls = self.timed_claim(
                |f, now| f.claim_more_of(&wanting, PER_CAPSULE, now),
                frontier,
            )?;
            let mut got: HashMap<i64, usize> = HashMap::new();
            for url in &urls {
                *got.entry(url.host_id).or_default() += 1;
            }
            for host_id in wanting {
                let got = got.get(&host_id).copied().unwrap_or(0);
                self.scheduler.set_exhausted(host_id, got < PER_CAPSULE);
            }
            self.take_claimed(frontier, urls, false)?;
        }
        let finished = self.scheduler.take_finished();
        if !finished.is_empty() {
            frontier.release_capsules(&finished)?;
            for &host_id in &finished {
                self.hold.capsule_done(host_id);
            }
            more = true;
        }
        if self.config.shared.is_some() {
            // An address held with nothing left to do there is let go at once: another
            // crawler may have capsules on it, and would otherwise put them back again and
            // again until this one's run ends. Its gap stays recorded with it.
            let idle: Vec<String> = self
                .scheduler
                .idle_addresses()
                .iter()
                .map(ToString::to_string)
                .collect();
            if !idle.is_empty() {
                frontier.release_addresses(&idle)?;
                more = true;
            }
        }
        Ok(more)
    }

    /// Takes the addresses lookups found, all at once (a shared store's statements are a
    /// round trip each: one records where the capsules are, one leases their addresses, one
    /// transaction puts back those that are not this crawler's to fetch). A capsule is put
    /// back when its address belongs to another crawler's shard, or another crawler fetches
    /// from the address now; one whose address asked for a wait longer than the run waits is
    /// left for a later run; a capsule whose name did not resolve is unreachable.
    pub(super) fn take_found_addresses(
        &mut self,
        frontier: &mut dyn Frontier,
        found: Vec<(i64, Result<SocketAddr, FetchError>)>,
    ) -> Result<(), CrawlError> {
        let mut resolved = Vec::new();
        let mut unreachable = false;
        for (host_id, result) in found {
            match result {
                Ok(addr) => resolved.push((host_id, addr)),
                Err(e) => {
                    // A capsule counts as tried once a request went to it or its name did not
                    // resolve; one put back because another crawler holds its address was not.
                    self.tried.insert(host_id);
                    tracing::debug!(host_id, error = %e, "no address");
                    self.effects
                        .unreachable
                        .push((host_id, e.kind().to_string(), e.to_string()));
                    unreachable = true;
                }
            }
        }
        if unreachable {
            self.follow_up(frontier)?;
        }
        if resolved.is_empty() {
            return Ok(());
        }
        let placed: Vec<(i64, String)> = resolved
            .iter()
            .map(|(host_id, addr)| (*host_id, addr.ip().to_string()))
            .collect();
        let ours = frontier.place_capsules(&placed)?;
        // Capsules that go back, and when they may be claimed again; capsules left for later.
        let mut back = Vec::new();
        let mut later = Vec::new();
        let mut kept = Vec::new();
        for ((host_id, addr), ours) in resolved.into_iter().zip(ours) {
            if ours {
                kept.push((host_id, addr));
            } else {
                // A shared store: the capsule is on an address whose capsules another crawler
                // has; it goes back for that crawler to claim.
                tracing::debug!(host_id, ip = %addr.ip(), "capsule moved to its address's shard");
                back.push((host_id, unix_now()));
            }
        }
        let ips: Vec<String> = kept.iter().map(|(_, addr)| addr.ip().to_string()).collect();
        let leases = frontier.lease_addresses(&ips)?;
        let now = Instant::now();
        for ((host_id, addr), held) in kept.into_iter().zip(leases) {
            let Some(held) = held else {
                // Another crawler of a shared store fetches from this address now: the capsule
                // goes back, to be claimed again (by whichever crawler) a little later.
                back.push((host_id, unix_now() + ADDRESS_BUSY_SECS));
                continue;
            };
            if !held.is_zero() {
                // The crawler that fetched from this address last asked for that gap.
                self.scheduler.hold_ip(addr.ip(), now + held);
            }
            let wait = self.scheduler.ip_wait(addr.ip(), now);
            if wait > self.config.retry_horizon {
                // Its address asked for a wait longer than this run waits (a 44 to another
                // capsule on it): the capsule joins the others there, in a later run.
                later.push((host_id, unix_now().saturating_add(wait.as_secs() as i64)));
            } else {
                self.scheduler.set_address(host_id, addr, now);
            }
        }
        if back.is_empty() && later.is_empty() {
            return Ok(());
        }
        let mut batch = frontier.batch(unix_now())?;
        for (host_id, until) in back {
            self.put_back_capsule(&mut *batch, host_id, until)?;
        }
        for (host_id, until) in later {
            self.defer_capsule(&mut *batch, host_id, until)?;
        }
        batch.commit()?;
        Ok(())
    }

    /// Lets go of the capsules and addresses whose leases another crawler of a shared store
    /// took over after this one let them run out (a stalled or overloaded machine): their
    /// queued URLs are the other crawler's now, or were (it may have fetched them and let the
    /// capsule go), and a request from here to an address it holds would be a second
    /// connection there. Requests in flight finish.
    pub(super) fn let_go_of_lost_leases(
        &mut self,
        frontier: &mut dyn Frontier,
    ) -> Result<(), CrawlError> {
        let (capsules, ips) = self.scheduler.held();
        let ips: Vec<String> = ips.iter().map(ToString::to_string).collect();
        let (lost, lost_ips) = frontier.lost_leases(&capsules, &ips)?;
        for host_id in lost {
            let dropped = self.scheduler.drop_capsule(host_id);
            tracing::warn!(
                host_id,
                urls = dropped.len(),
                "a capsule whose lease ran out here was taken over or let go: its queue here is dropped, and its URLs are claimed afresh"
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
}
