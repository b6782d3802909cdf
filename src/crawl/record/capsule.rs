//! What a visit means for a whole capsule or IP address: set aside after a 41 or when
//! unreachable, paused after a 44, deferred, its robots.txt read and its certificate pinned.

use std::net::IpAddr;
use std::time::{Duration, Instant};

use super::*;

impl Crawl {
    /// Leaves a capsule alone for a while (longer each time in a row): its queued URLs go back
    /// to the frontier untouched, and its lease is let go.
    pub(in crate::crawl) fn set_aside(
        &mut self,
        batch: &mut dyn Batch,
        host_id: i64,
    ) -> Result<(), CrawlError> {
        self.summary.capsules_backed_off += 1;
        self.back_off(batch, host_id)?;
        for url in self.scheduler.drop_capsule(host_id) {
            batch.requeue(url.id)?;
        }
        batch.release_capsule(host_id)?;
        Ok(())
    }

    /// Backs a capsule off: for the configured back-off, doubling while it keeps failing, up to
    /// a day and never past `--revisit-min`, so that the flags describe what happens at any time
    /// scale (a dead capsule's pages are visited again, and leave the index once
    /// `--remove-after` has passed, in the first run after that).
    pub(super) fn back_off(
        &mut self,
        batch: &mut dyn Batch,
        host_id: i64,
    ) -> Result<(), CrawlError> {
        let longest = longest_back_off(self.config.revisit.min);
        let base = self.config.capsule_backoff.min(longest);
        batch.back_off_capsule(
            host_id,
            unix_now(),
            base.as_secs().max(1) as i64,
            longest.as_secs().max(1) as i64,
        )?;
        Ok(())
    }

    /// A 44 from `ip`: nothing goes to it for the wait asked (doubled for 44s in a row). A wait
    /// longer than a run waits for retries defers every capsule on that IP to a later run (its
    /// queued URLs go back to the frontier, the capsules are backed off for that long), so that
    /// a capsule can neither hang a crawl nor be asked again too early. Returns whether that
    /// happened.
    pub(super) fn slow_down(
        &mut self,
        batch: &mut dyn Batch,
        ip: IpAddr,
        meta: &str,
    ) -> Result<bool, CrawlError> {
        self.summary.slow_downs += 1;
        let wait = self
            .scheduler
            .slow_down(ip, asked_wait(meta), Instant::now());
        batch.hold_address(&ip.to_string(), wait)?;
        if wait <= self.config.retry_horizon {
            return Ok(false);
        }
        let until = unix_now().saturating_add(wait.min(MAX_CAPSULE_BACKOFF).as_secs() as i64);
        for host_id in self.scheduler.capsules_on(ip) {
            self.defer_capsule(batch, host_id, until)?;
        }
        Ok(true)
    }

    /// Leaves a capsule alone until `until`: its queued URLs go back to the frontier untouched
    /// and its lease is let go.
    pub(in crate::crawl) fn defer_capsule(
        &mut self,
        batch: &mut dyn Batch,
        host_id: i64,
        until: i64,
    ) -> Result<(), CrawlError> {
        self.summary.capsules_backed_off += 1;
        self.put_back_capsule(batch, host_id, until)
    }

    /// Gives a capsule back to the frontier, not to be claimed before `until`: its queued URLs
    /// go back untouched and its lease is let go (not counted as a back-off: [`Self::defer_capsule`]
    /// counts those).
    pub(in crate::crawl) fn put_back_capsule(
        &mut self,
        batch: &mut dyn Batch,
        host_id: i64,
        until: i64,
    ) -> Result<(), CrawlError> {
        batch.set_backoff(host_id, until)?;
        for url in self.scheduler.drop_capsule(host_id) {
            batch.requeue(url.id)?;
        }
        batch.release_capsule(host_id)?;
        Ok(())
    }

    /// A capsule that gives no answer at all: backed off, and every page of it that is due now
    /// counts a failed visit (recorded after this transaction, see [`Crawl::record_unreachable`]).
    pub(super) fn unreachable(
        &mut self,
        batch: &mut dyn Batch,
        host_id: i64,
        error: &FetchError,
    ) -> Result<(), CrawlError> {
        self.back_off(batch, host_id)?;
        self.effects
            .unreachable
            .push((host_id, error.kind().to_string(), error.to_string()));
        Ok(())
    }

    /// Records a failed visit for every due page of an unreachable capsule, a chunk per
    /// transaction, and lets the capsule go.
    pub(in crate::crawl) fn record_unreachable(
        &mut self,
        frontier: &mut dyn Frontier,
        host_id: i64,
        kind: &str,
        message: &str,
    ) -> Result<(), CrawlError> {
        self.summary.capsules_unreachable += 1;
        let now = unix_now();
        let mut failed = 0;
        // Those it had queued first, then all the others that are due.
        let mut urls = self.scheduler.drop_capsule(host_id);
        loop {
            if urls.is_empty() {
                urls = frontier.claim_more(host_id, UNREACHABLE_CHUNK, now)?;
            }
            if urls.is_empty() {
                break;
            }
            let mut batch = frontier.batch(now)?;
            let mut docs = Vec::new();
            for url in urls.drain(..) {
                let result = FetchResult {
                    error: Some(kind.to_string()),
                    meta: format!("capsule unreachable: {message}"),
                    fetched_at: now,
                    ..FetchResult::default()
                };
                failed += 1;
                self.failed_visit(&mut *batch, &url, result, UrlState::Failed, &mut docs)?;
            }
            self.commit(batch, &mut docs)?;
        }
        frontier.release_capsule(host_id)?;
        tracing::info!(host_id, failed, error = message, "capsule unreachable");
        Ok(())
    }

    pub(super) fn record_robots(
        &mut self,
        batch: &mut dyn Batch,
        host_id: i64,
        answer: Answer,
    ) -> Result<(), CrawlError> {
        let (ip, now) = (answer.ip, answer.at);
        let result = answer.result;
        self.summary.robots_fetched += 1;
        let response = match result {
            Ok(fetched) => fetched.response,
            Err(e) => {
                tracing::debug!(host_id, error = %e, "robots.txt unreachable: capsule set aside");
                return self.unreachable(batch, host_id, &e);
            }
        };
        if let Some(fp) = &response.cert_fingerprint {
            self.pin(batch, host_id, fp, now)?;
        }
        let key = self.scheduler.capsule_key(host_id).unwrap_or_default();
        let (robots, text) = match robots_verdict(&response.outcome, key) {
            RobotsVerdict::SlowDown => {
                let message = outcome_meta(&response.outcome);
                if !self.slow_down(batch, ip, message)?
                    && self.scheduler.retry_robots(host_id, Instant::now())
                        >= self.config.max_attempts
                {
                    return self.set_aside(batch, host_id);
                }
                return Ok(());
            }
            RobotsVerdict::SetAside => return self.set_aside(batch, host_id),
            RobotsVerdict::Rules { robots, text } => (robots, text),
        };
        batch.capsule_answered(host_id)?;
        batch.set_robots(host_id, response.status, text.as_deref(), now)?;
        let at = Instant::now();
        self.scheduler.set_robots(host_id, robots, at, at);
        Ok(())
    }

    /// Pins a capsule's certificate; a change is accepted, logged and counted.
    pub(super) fn pin(
        &mut self,
        batch: &mut dyn Batch,
        host_id: i64,
        fingerprint: &str,
        now: i64,
    ) -> Result<(), CrawlError> {
        // Every page of a capsule shows its certificate: checking and dating it in the store
        // once a minute is enough (a change seen by another crawler of a shared store meanwhile
        // is that crawler's to report).
        if let Some((pinned, at)) = self.pinned.get(&host_id) {
            if pinned == fingerprint && now.saturating_sub(*at) < PIN_REFRESH_SECS {
                return Ok(());
            }
        }
        let pin = batch.pin_certificate(host_id, fingerprint, now)?;
        self.pinned.insert(host_id, (fingerprint.to_string(), now));
        if let Pin::Changed { previous } = pin {
            self.summary.certificates_changed += 1;
            tracing::warn!(
                host_id,
                previous = %previous,
                current = %fingerprint,
                "a capsule's certificate changed; the new one is now pinned"
            );
        }
        Ok(())
    }
}

/// The longest back-off of a capsule that does not answer: a day, or `--revisit-min` when that
/// is shorter. (A 44's wait is the server's own request, honoured up to a day whatever the
/// flags.)
fn longest_back_off(revisit_min: Duration) -> Duration {
    MAX_CAPSULE_BACKOFF.min(revisit_min)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_back_off_never_outlasts_revisit_min() {
        let day = Duration::from_secs(24 * 3600);
        assert_eq!(
            longest_back_off(Duration::from_secs(2)),
            Duration::from_secs(2)
        );
        assert_eq!(
            longest_back_off(Duration::from_secs(3600)),
            Duration::from_secs(3600)
        );
        assert_eq!(longest_back_off(day), day);
        assert_eq!(longest_back_off(7 * day), day);
    }
}
