//! From finished fetches to frontier records and index messages: what each Gemini answer means
//! for the URL, its capsule, its IP address, the index and the URL's next visit (gemini.md's
//! status table; the schedule is [`crate::revisit`]'s).
//!
//! A 20 whose body hash is the one recorded last time is *unchanged*: only its times move. A
//! changed or new body is indexed, and its links replace the page's old ones. 30 keeps the
//! original URL canonical; 31, 51, 52, input prompts and certificate requests take the page out
//! of the index; other 5x and network failures leave it searchable until it has failed for
//! `--remove-after`. 40/42/43 are retried with back-off, 41 backs the capsule off, 44 pauses the
//! IP. A capsule that cannot be reached at all (no address, no TLS, no answer to robots.txt)
//! fails every due page at once.

use std::net::IpAddr;
use std::time::{Duration, Instant};

use ::url::Url;

mod budget;
mod capsule;
mod page;
pub(super) use capsule::robots_of;

use super::driver::Crawl;
use super::task::{Done, DoneJob, ExtractedPage, Fetched};
use super::{unix_now, CrawlError, MAX_REDIRECT_HOPS, UNREACHABLE_CHUNK};
use crate::fetch::{FetchError, Outcome};
use crate::frontier::{
    ArchiveRecord, ArchivedBody, Batch, FetchResult, Frontier, IndexOp, LinkOut, Pin, QueuedUrl,
    UrlState, VisitRecord,
};
use crate::revisit::{Change, Memory, Priority, Visit};
use crate::robots::Robots;
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
        self.scheduler
            .finished(done.ip, done.host_id, done.began, done.took);
        // A slow answer stretched the gap: the other crawlers of a shared store keep it too.
        let wait = self.scheduler.ip_wait(done.ip, Instant::now());
        batch.hold_address(&done.ip.to_string(), wait)?;
        if done.result.is_ok() {
            self.answered.insert(done.host_id);
        }
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

    fn record_page(
        &mut self,
        batch: &mut dyn Batch,
        url: QueuedUrl,
        answer: Answer,
        docs: &mut Vec<IndexMsg>,
    ) -> Result<(), CrawlError> {
        let (ip, now) = (answer.ip, answer.at);
        let result = answer.result;
        self.summary.fetched += 1;
        let fetched = match result {
            Ok(fetched) => fetched,
            Err(e) => {
                let result = FetchResult {
                    error: Some(e.kind().into()),
                    meta: e.to_string(),
                    fetched_at: now,
                    ..FetchResult::default()
                };
                return self.failed_visit(batch, &url, result, UrlState::Failed, docs);
            }
        };
        let response = fetched.response;
        self.summary.tls_resumed += u64::from(response.resumed);
        if let Some(fp) = &response.cert_fingerprint {
            self.pin(batch, url.host_id, fp, now)?;
        }
        let mut result = FetchResult {
            status: Some(response.status),
            fetched_at: now,
            ..FetchResult::default()
        };
        // The archive keeps the latest response, whatever it says; slow-downs say nothing
        // about the page and are not kept.
        let archived = match &response.outcome {
            // A 304 has no body: the archived response stays the one it confirms.
            Outcome::TemporaryFailure { code: 44, .. } | Outcome::NotModified => None,
            outcome => Some((response.status, outcome_meta(outcome).to_string())),
        };
        let body = fetched.page.as_ref().and_then(|p| {
            Some(ArchivedBody {
                hash: p.hash.as_deref()?,
                size: p.size,
                zstd: p.zstd.as_deref()?,
            })
        });
        if let Some((status, meta)) = &archived {
            batch.archive(
                url.id,
                &ArchiveRecord {
                    status: *status,
                    meta,
                    fetched_at: now,
                    cert_sha256: response.cert_fingerprint.as_deref(),
                    body,
                },
            )?;
        }
        if !matches!(response.outcome, Outcome::TemporaryFailure { code: 44, .. }) {
            self.scheduler.answered(ip);
        }
        match response.outcome {
            Outcome::Success { meta, .. } => {
                result.meta = meta;
                result.validators = Some((
                    response.validators.etag.clone(),
                    response.validators.last_modified.clone(),
                ));
                let page = fetched.page.expect("success responses are extracted");
                self.record_content(batch, url, result, page, docs)
            }
            Outcome::NotModified => {
                // The server says it is the version fetched last: unchanged, no body read.
                self.summary.unchanged += 1;
                let feed = url.prior.feed;
                let state = if url.prior.in_index || url.canonical.is_some() {
                    url.prior.state.unwrap_or(UrlState::Indexed)
                } else {
                    UrlState::Fetched
                };
                result.meta = "not modified".into();
                self.finish_unchanged(batch, &url, state, &result, feed, docs)
            }
            Outcome::Redirect { target, permanent } => {
                result.meta = target.clone();
                self.record_redirect(batch, &url, result, &target, permanent, docs)
            }
            Outcome::TemporaryFailure { code, message } => {
                result.meta = message;
                self.record_temporary_failure(batch, url, ip, code, result, docs)
            }
            Outcome::PermanentFailure { code, message } => {
                result.meta = message;
                let visit = match code {
                    51 => Visit::NotFound,
                    52 => Visit::Gone,
                    // Refused, bad request, permanent failure, unknown 5x: the page may be
                    // fine and the server not; it stays until --remove-after.
                    _ => {
                        result.error = Some(format!("status-{code}"));
                        return self.failed_visit(batch, &url, result, UrlState::Fetched, docs);
                    }
                };
                self.finish_fetched(batch, &url, &result, visit, docs)
            }
            // An input prompt marks a query endpoint (status 10/11 is kept); geode never
            // invents input, nor client certificates.
            Outcome::Input {
                prompt: message, ..
            }
            | Outcome::CertificateRequired { message, .. } => {
                result.meta = message;
                self.finish_fetched(batch, &url, &result, Visit::NoContent, docs)
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
