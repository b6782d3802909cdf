//! From finished fetches to frontier records and index messages. What each answer means for the
//! URL is [`super::verdict`]'s decision (gemini.md's status table; the schedule is
//! [`crate::revisit`]'s); here it is done: the certificate pinned, the response archived, the
//! visit recorded with its schedule, the page indexed or taken out of the index, its links and
//! redirect targets added to the frontier, the capsule set aside or its IP address paused, and
//! the run's counts kept. A capsule that cannot be reached at all (no address, no TLS, no answer
//! to robots.txt) fails every due page at once.

use std::net::IpAddr;
use std::time::{Duration, Instant};

use ::url::Url;

mod budget;
mod capsule;
mod page;

use super::state::Crawl;
use super::task::{Done, DoneJob, ExtractedPage, Fetched};
use super::verdict::{robots_verdict, verdict, Body, Heard, Retries, RobotsVerdict, Then, Verdict};
use super::{unix_now, CrawlError, UNREACHABLE_CHUNK};
use crate::fetch::{FetchError, Outcome};
use crate::frontier::{
    ArchiveRecord, ArchivedBody, Batch, ExpectedLinks, FetchResult, Frontier, IndexOp, LinkOut,
    Pin, QueuedUrl, UrlState, VisitRecord,
};
use crate::revisit::{Change, Memory, Priority, Visit};
use crate::urlnorm;

use super::indexing::IndexMsg;

/// The longest a capsule is backed off for.
const MAX_CAPSULE_BACKOFF: Duration = Duration::from_secs(24 * 3600);

/// A capsule's certificate, when it is the one already pinned this run, is dated in the store
/// at most this often (seconds).
const PIN_REFRESH_SECS: i64 = 60;

/// What a visit found besides its state and schedule.
#[derive(Debug, Clone, Copy, Default)]
struct Found {
    feed: bool,
    /// The visit found new or changed content, which is sent to the index under this URL.
    upsert: bool,
    redirect_to: Option<i64>,
}

/// What came back for one request: the address it went to, when, and the response or error.
pub(super) struct Answer {
    pub(super) ip: IpAddr,
    pub(super) at: i64,
    pub(super) result: Result<Fetched, FetchError>,
}

impl Crawl {
    /// Records one finished fetch.
    pub(in crate::crawl) fn record(
        &mut self,
        batch: &mut dyn Batch,
        done: Done,
        docs: &mut Vec<IndexMsg>,
    ) -> Result<(), CrawlError> {
        self.request_ended(batch, &done)?;
        self.record_answer(batch, done, docs)
    }

    /// The half of [`Self::record`] that the next requests depend on, done as soon as a
    /// request ends: its slot is free again and its address's gap runs from its start (the
    /// other crawlers of a shared store keep the gap too).
    pub(in crate::crawl) fn request_ended(
        &mut self,
        batch: &mut dyn Batch,
        done: &Done,
    ) -> Result<(), CrawlError> {
        self.scheduler
            .finished(done.ip, done.host_id, done.began, done.took);
        // A slow answer stretched the gap: the other crawlers of a shared store keep it too.
        let wait = self.scheduler.ip_wait(done.ip, Instant::now());
        batch.hold_address(&done.ip.to_string(), wait)?;
        if done.result.is_ok() {
            self.answered.insert(done.host_id);
        }
        Ok(())
    }

    /// Records together results whose requests ended earlier ([`Self::request_ended`]). The
    /// store is told first what it will be asked: the contents the pages hold, and the links of
    /// the pages that will record theirs, so that a store paying a round trip a statement
    /// reads and writes them a set at a time instead of a page at a time.
    pub(in crate::crawl) fn record_answers(
        &mut self,
        batch: &mut dyn Batch,
        mut dones: Vec<Done>,
        docs: &mut Vec<IndexMsg>,
    ) -> Result<(), CrawlError> {
        let hashes: Vec<&str> = dones.iter().filter_map(new_content).collect();
        if hashes.len() > 1 {
            batch.expect_contents(&hashes)?;
        }
        let budget = self.config.capsule_budget;
        for done in &mut dones {
            let (DoneJob::Page(url), Ok(fetched)) = (&done.job, &mut done.result) else {
                continue;
            };
            let indexed = matches!(self.verdict_of(url, Ok(fetched)).then, Then::Index { .. });
            if !indexed || batch.capsule_full(url.host_id, budget)? {
                continue;
            }
            if let Some(page) = &mut fetched.page {
                page.links_out = Some(self.links_out(&page.extracted, url.depth));
            }
        }
        let expected: Vec<ExpectedLinks<'_>> = dones
            .iter()
            .filter_map(|done| {
                let (DoneJob::Page(url), Ok(fetched)) = (&done.job, &done.result) else {
                    return None;
                };
                let page = fetched.page.as_ref()?;
                Some(ExpectedLinks {
                    source: url.id,
                    depth: url.depth,
                    links: page.links_out.as_deref()?,
                    content: page.hash.as_deref(),
                    doc_id: url.canonical.as_ref().map_or(url.id, |c| c.id),
                })
            })
            .collect();
        if !expected.is_empty() {
            batch.expect_links(&expected, budget)?;
        }
        for done in dones {
            self.record_answer(batch, done, docs)?;
        }
        Ok(())
    }

    /// What an answer to a page's request means ([`verdict`]), with this crawl's retries.
    fn verdict_of(&self, url: &QueuedUrl, answer: Result<&Fetched, &FetchError>) -> Verdict {
        let retries = Retries {
            base: self.config.retry_base,
            max_attempts: self.config.max_attempts,
        };
        verdict(answer.map(heard), url, retries)
    }

    /// Whether what a request found may be recorded at the end of its round
    /// ([`Self::record_answers`]): a page's answer whose verdict changes no schedule. Errors
    /// and robots.txt answers may back a capsule off or unblock its queue, a slow-down (44)
    /// pauses its address and a capsule set aside (41) leaves the queue: those are recorded at
    /// once.
    pub(in crate::crawl) fn can_wait(&self, done: &Done) -> bool {
        match (&done.job, &done.result) {
            (DoneJob::Page(url), Ok(fetched)) => !matches!(
                self.verdict_of(url, Ok(fetched)).then,
                Then::SlowDown { .. } | Then::SetAside
            ),
            _ => false,
        }
    }

    /// The other half of [`Self::record`], once [`Self::request_ended`] was done: what the
    /// answer means for the URL, its capsule and the index.
    pub(in crate::crawl) fn record_answer(
        &mut self,
        batch: &mut dyn Batch,
        done: Done,
        docs: &mut Vec<IndexMsg>,
    ) -> Result<(), CrawlError> {
        let answer = Answer {
            ip: done.ip,
            at: done.fetched_at,
            result: done.result,
        };
        match done.job {
            DoneJob::Robots { host_id } => self.record_robots(batch, host_id, answer),
            DoneJob::Page(url) => {
                let capsule = (url.host_id, url.host.clone());
                self.record_page(batch, *url, answer, docs)?;
                self.enforce_budget(batch, capsule.0, &capsule.1)
            }
        }
    }

    /// Records a page's answer: the [`verdict`] says what it means, [`Self::apply`] does it.
    fn record_page(
        &mut self,
        batch: &mut dyn Batch,
        url: QueuedUrl,
        answer: Answer,
        docs: &mut Vec<IndexMsg>,
    ) -> Result<(), CrawlError> {
        self.summary.fetched += 1;
        let verdict = self.verdict_of(&url, answer.result.as_ref());
        let mut result = FetchResult {
            fetched_at: answer.at,
            ..FetchResult::default()
        };
        let page = match answer.result {
            Err(e) => {
                result.meta = e.to_string();
                None
            }
            Ok(fetched) => {
                self.take_response(batch, &url, answer.ip, fetched, &verdict, &mut result)?
            }
        };
        self.apply(batch, url, answer.ip, verdict.then, result, page, docs)
    }

    /// What an answer leaves whatever it means: the capsule's certificate pinned, the response
    /// archived and the IP address's slow-downs ended where the verdict says so, and the
    /// visit's record filled in. Returns the page extracted from a 20.
    fn take_response(
        &mut self,
        batch: &mut dyn Batch,
        url: &QueuedUrl,
        ip: IpAddr,
        fetched: Fetched,
        verdict: &Verdict,
        result: &mut FetchResult,
    ) -> Result<Option<ExtractedPage>, CrawlError> {
        let Fetched { response, page } = fetched;
        let now = result.fetched_at;
        self.summary.tls_resumed += u64::from(response.resumed);
        if let Some(fp) = &response.cert_fingerprint {
            self.pin(batch, url.host_id, fp, now)?;
        }
        result.status = Some(response.status);
        result.meta = match &response.outcome {
            Outcome::NotModified => "not modified".into(),
            outcome => outcome_meta(outcome).to_string(),
        };
        if let Outcome::Success { .. } = response.outcome {
            result.validators = Some((
                response.validators.etag.clone(),
                response.validators.last_modified.clone(),
            ));
        }
        if let Some(page) = &page {
            result.mime = Some(page.extracted.mime.clone());
            result.size = Some(page.size);
            result.content_hash = page.hash.clone();
            result.content_meta = Some(result.meta.clone());
        }
        if verdict.archive {
            let body = page.as_ref().and_then(|p| {
                Some(ArchivedBody {
                    hash: p.hash.as_deref()?,
                    size: p.size,
                    zstd: p.zstd.as_deref()?,
                })
            });
            batch.archive(
                url.id,
                &ArchiveRecord {
                    status: response.status,
                    meta: outcome_meta(&response.outcome),
                    fetched_at: now,
                    cert_sha256: response.cert_fingerprint.as_deref(),
                    body,
                },
            )?;
        }
        if verdict.answered {
            self.scheduler.answered(ip);
        }
        Ok(page)
    }

    /// Does what a verdict says becomes of a page.
    #[allow(clippy::too_many_arguments)]
    fn apply(
        &mut self,
        batch: &mut dyn Batch,
        url: QueuedUrl,
        ip: IpAddr,
        then: Then,
        mut result: FetchResult,
        page: Option<ExtractedPage>,
        docs: &mut Vec<IndexMsg>,
    ) -> Result<(), CrawlError> {
        match then {
            Then::Unchanged { state, feed } => {
                self.summary.unchanged += 1;
                self.finish_unchanged(batch, &url, state, &result, feed, docs)
            }
            Then::Index { change, state } => {
                let page = page.expect("success responses are extracted");
                self.record_content(batch, url, result, page, change, state, docs)
            }
            Then::Follow(follow) => self.record_redirect(batch, &url, result, follow, docs),
            Then::Answered { visit } => self.finish_fetched(batch, &url, &result, visit, docs),
            Then::Failed { state, error } => {
                result.error = Some(error);
                self.failed_visit(batch, &url, result, state, docs)
            }
            Then::SlowDown { attempts, last } => {
                let mut url = url;
                url.prior.attempts = attempts;
                if self.slow_down(batch, ip, &result.meta)? {
                    // Its capsule was deferred with the others on this IP.
                    batch.note_answer(url.id, &result)?;
                    batch.requeue(url.id)?;
                } else if last {
                    // Slowed down again and again: it waits for the next run.
                    batch.defer(url.id, &result)?;
                } else {
                    self.scheduler.retry(url, Instant::now());
                }
                Ok(())
            }
            Then::SetAside => {
                batch.note_answer(url.id, &result)?;
                batch.requeue(url.id)?;
                self.set_aside(batch, url.host_id)
            }
            Then::Retry { wait } => {
                let at = result.fetched_at.saturating_add(wait);
                batch.retry_later(url.id, &result, at)?;
                Ok(())
            }
        }
    }

    /// A visit that got no usable answer: the page's failure streak grows, and it leaves the
    /// index once that streak is as long as `--remove-after`.
    fn failed_visit(
        &mut self,
        batch: &mut dyn Batch,
        url: &QueuedUrl,
        result: FetchResult,
        state: UrlState,
        docs: &mut Vec<IndexMsg>,
    ) -> Result<(), CrawlError> {
        self.summary.failed += 1;
        self.finish(
            batch,
            url,
            state,
            &result,
            Visit::Failed,
            Found::default(),
            docs,
        )
    }

    /// robots.txt disallows a claimed URL: no request; out of the index if it was in.
    pub(in crate::crawl) fn record_disallowed(
        &mut self,
        batch: &mut dyn Batch,
        url: QueuedUrl,
        now: i64,
        docs: &mut Vec<IndexMsg>,
    ) -> Result<(), CrawlError> {
        self.summary.robots_excluded += 1;
        let result = FetchResult {
            error: Some("robots".into()),
            meta: "disallowed by robots.txt".into(),
            fetched_at: now,
            ..FetchResult::default()
        };
        self.finish(
            batch,
            &url,
            UrlState::Excluded,
            &result,
            Visit::Disallowed,
            Found::default(),
            docs,
        )
    }

    /// Records a visit: the schedule from the revisit policy, and the removal from the index
    /// when the policy says the page must leave it.
    /// [`Self::finish`] for an answer with nothing to index (state `fetched`, nothing found).
    fn finish_fetched(
        &mut self,
        batch: &mut dyn Batch,
        url: &QueuedUrl,
        result: &FetchResult,
        visit: Visit,
        docs: &mut Vec<IndexMsg>,
    ) -> Result<(), CrawlError> {
        self.finish(
            batch,
            url,
            UrlState::Fetched,
            result,
            visit,
            Found::default(),
            docs,
        )
    }

    /// [`Self::finish`] for content found as it was last time (same hash, or a 304).
    fn finish_unchanged(
        &mut self,
        batch: &mut dyn Batch,
        url: &QueuedUrl,
        state: UrlState,
        result: &FetchResult,
        feed: bool,
        docs: &mut Vec<IndexMsg>,
    ) -> Result<(), CrawlError> {
        let visit = Visit::Content {
            change: Change::Unchanged,
            feed,
        };
        let found = Found {
            feed,
            ..Found::default()
        };
        self.finish(batch, url, state, result, visit, found, docs)
    }

    #[allow(clippy::too_many_arguments)]
    fn finish(
        &mut self,
        batch: &mut dyn Batch,
        url: &QueuedUrl,
        state: UrlState,
        result: &FetchResult,
        visit: Visit,
        outcome: Found,
        docs: &mut Vec<IndexMsg>,
    ) -> Result<(), CrawlError> {
        let memory = Memory {
            interval: url.prior.revisit_secs,
            first_failed_at: url.prior.first_failed_at,
        };
        let plan = self
            .config
            .revisit
            .plan(&memory, visit, result.fetched_at, url.id as u64);
        let remove = plan.leave_index && url.prior.in_index;
        let index_op = if outcome.upsert {
            Some(IndexOp::Upsert)
        } else if remove {
            Some(IndexOp::Delete)
        } else {
            None
        };
        if remove {
            self.summary.removed += 1;
            // What a page that left the index links to no longer counts for its targets.
            batch.drop_links(url.id)?;
            // A document held for its anchors would otherwise bring the page back.
            self.hold.forget(url.id);
            docs.push(IndexMsg::Delete {
                url_id: url.id,
                url: url.url.clone(),
            });
        }
        let prio = Url::parse(&url.url)
            .map(|u| Priority::of(&u, true, outcome.feed))
            .unwrap_or(Priority::Revisit);
        batch.record_visit(
            url.id,
            &VisitRecord {
                state,
                result,
                due_at: plan.due_at,
                revisit_secs: plan.interval,
                first_failed_at: plan.first_failed_at,
                prio,
                feed: outcome.feed,
                changed: outcome.upsert,
                index_op,
                redirect_to: outcome.redirect_to,
            },
        )?;
        Ok(())
    }
}

/// The content hash of a page fetched whole, which the duplicate check may ask about.
pub(in crate::crawl) fn new_content(done: &Done) -> Option<&str> {
    let page = done.result.as_ref().ok()?.page.as_ref()?;
    let hash = page.hash.as_deref()?;
    match &done.job {
        // Content found as it was needs no check.
        DoneJob::Page(url) if url.prior.content_hash.as_deref() != Some(hash) => Some(hash),
        _ => None,
    }
}

/// An answer as the verdict reads it.
fn heard(fetched: &Fetched) -> Heard<'_> {
    Heard {
        status: fetched.response.status,
        outcome: &fetched.response.outcome,
        body: fetched.page.as_ref().map(|p| Body {
            hash: p.hash.as_deref(),
            mime: &p.extracted.mime,
            feed: p.extracted.feed,
        }),
    }
}

/// The meta line of an answer, as the server sent it.
fn outcome_meta(outcome: &Outcome) -> &str {
    match outcome {
        Outcome::Input { prompt, .. } => prompt,
        Outcome::Success { meta, .. } => meta,
        Outcome::Redirect { target, .. } => target,
        Outcome::TemporaryFailure { message, .. }
        | Outcome::PermanentFailure { message, .. }
        | Outcome::CertificateRequired { message, .. } => message,
        Outcome::NotModified => "",
    }
}

/// The wait a 44 asks for: its meta in whole seconds. Anything else (`-5`, `abc`, nothing)
/// names no usable wait and leaves it to the scheduler.
fn asked_wait(meta: &str) -> Option<Duration> {
    meta.trim().parse::<u64>().ok().map(Duration::from_secs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_44_names_its_wait_in_whole_seconds_or_not_at_all() {
        let cases = [
            ("5", Some(5)),
            (" 7 ", Some(7)),
            ("999999999", Some(999_999_999)),
            ("-5", None),
            ("abc", None),
            ("", None),
            ("1.5", None),
        ];
        for (meta, secs) in cases {
            assert_eq!(asked_wait(meta), secs.map(Duration::from_secs), "{meta:?}");
        }
    }
}
