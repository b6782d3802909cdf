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

use super::{
    unix_now, Crawl, CrawlError, Done, DoneJob, ExtractedPage, Fetched, MAX_REDIRECT_HOPS,
    UNREACHABLE_CHUNK,
};
use crate::content::Extracted;
use crate::fetch::{FetchError, Outcome};
use crate::frontier::{
    ArchiveRecord, ArchivedBody, Batch, FetchResult, Frontier, IndexOp, LinkOut, Pin, QueuedUrl,
    UrlState, VisitRecord,
};
use crate::index::PageDoc;
use crate::revisit::{Change, Memory, Priority, Visit};
use crate::robots::Robots;
use crate::urlnorm;

use super::indexing::IndexMsg;

/// The longest a capsule is backed off for.
const MAX_CAPSULE_BACKOFF: Duration = Duration::from_secs(24 * 3600);

/// Most distinct inbound link labels indexed with a page: enough to say what others call it,
/// bounded for pages every capsule links to.
pub const MAX_ANCHORS: usize = 200;

/// What a visit found besides its state and schedule.
#[derive(Debug, Clone, Copy, Default)]
struct Found {
    feed: bool,
    /// The visit found new or changed content, which is sent to the index under this URL.
    upsert: bool,
    redirect_to: Option<i64>,
}

impl Crawl {
    /// Records one finished fetch.
    pub(super) fn record(
        &mut self,
        batch: &mut Batch<'_>,
        done: Done,
        docs: &mut Vec<IndexMsg>,
    ) -> Result<(), CrawlError> {
        self.scheduler
            .finished(done.ip, done.host_id, done.began, done.took);
        if done.result.is_ok() {
            self.answered.insert(done.host_id);
        }
        match done.job {
            DoneJob::Robots { host_id } => {
                self.record_robots(batch, host_id, done.ip, done.fetched_at, done.result)
            }
            DoneJob::Page(url) => {
                self.record_page(batch, *url, done.ip, done.fetched_at, done.result, docs)
            }
        }
    }

    /// Leaves a capsule alone for a while (longer each time in a row): its queued URLs go back
    /// to the frontier untouched, and its lease is let go.
    pub(super) fn set_aside(
        &mut self,
        batch: &mut Batch<'_>,
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

    fn back_off(&mut self, batch: &mut Batch<'_>, host_id: i64) -> Result<(), CrawlError> {
        let base = self.config.capsule_backoff.as_secs().max(1) as i64;
        batch.back_off_capsule(
            host_id,
            unix_now(),
            base,
            MAX_CAPSULE_BACKOFF.as_secs() as i64,
        )?;
        Ok(())
    }

    /// A 44 from `ip`: nothing goes to it for the wait asked (doubled for 44s in a row). A wait
    /// longer than a run waits for retries defers every capsule on that IP to a later run (its
    /// queued URLs go back to the frontier, the capsules are backed off for that long), so that
    /// a capsule can neither hang a crawl nor be asked again too early. Returns whether that
    /// happened.
    fn slow_down(
        &mut self,
        batch: &mut Batch<'_>,
        ip: IpAddr,
        meta: &str,
    ) -> Result<bool, CrawlError> {
        self.summary.slow_downs += 1;
        let wait = self
            .scheduler
            .slow_down(ip, asked_wait(meta), Instant::now());
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
    pub(super) fn defer_capsule(
        &mut self,
        batch: &mut Batch<'_>,
        host_id: i64,
        until: i64,
    ) -> Result<(), CrawlError> {
        self.summary.capsules_backed_off += 1;
        batch.set_backoff(host_id, until)?;
        for url in self.scheduler.drop_capsule(host_id) {
            batch.requeue(url.id)?;
        }
        batch.release_capsule(host_id)?;
        Ok(())
    }

    /// A capsule that gives no answer at all: backed off, and every page of it that is due now
    /// counts a failed visit (recorded after this transaction, see [`Crawl::record_unreachable`]).
    fn unreachable(
        &mut self,
        batch: &mut Batch<'_>,
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
    pub(super) fn record_unreachable(
        &mut self,
        frontier: &mut Frontier,
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
                self.failed_visit(&mut batch, &url, result, UrlState::Failed, &mut docs)?;
            }
            batch.commit()?;
            for msg in docs {
                self.send_to_index(msg)?;
            }
        }
        frontier.release_capsule(host_id)?;
        tracing::info!(host_id, failed, error = message, "capsule unreachable");
        Ok(())
    }

    fn record_robots(
        &mut self,
        batch: &mut Batch<'_>,
        host_id: i64,
        ip: IpAddr,
        now: i64,
        result: Result<Fetched, FetchError>,
    ) -> Result<(), CrawlError> {
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
        // 20 text: the rules. 44: ask again once the wait is over. Other 4x: ask again later
        // and fetch nothing meanwhile. Anything else (missing, permanent failure, redirect, not
        // text) means no restrictions.
        let (robots, text) = match &response.outcome {
            Outcome::TemporaryFailure { code: 44, message } => {
                if !self.slow_down(batch, ip, message)?
                    && self.scheduler.retry_robots(host_id, Instant::now())
                        >= self.config.max_attempts
                {
                    return self.set_aside(batch, host_id);
                }
                return Ok(());
            }
            Outcome::TemporaryFailure { .. } => return self.set_aside(batch, host_id),
            Outcome::Success { meta, body } if crate::fetch::wants_body(meta) => {
                let text = crate::gemtext::decode(body).into_owned();
                (Robots::parse(&text), Some(text))
            }
            _ => (Robots::allow_all(), None),
        };
        batch.capsule_answered(host_id)?;
        batch.set_robots(host_id, response.status, text.as_deref(), now)?;
        let at = Instant::now();
        self.scheduler.set_robots(host_id, robots, at, at);
        Ok(())
    }

    /// Pins a capsule's certificate; a change is accepted, logged and counted.
    fn pin(
        &mut self,
        batch: &mut Batch<'_>,
        host_id: i64,
        fingerprint: &str,
        now: i64,
    ) -> Result<(), CrawlError> {
        if let Pin::Changed { previous } = batch.pin_certificate(host_id, fingerprint, now)? {
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

    fn record_page(
        &mut self,
        batch: &mut Batch<'_>,
        url: QueuedUrl,
        ip: IpAddr,
        now: i64,
        result: Result<Fetched, FetchError>,
        docs: &mut Vec<IndexMsg>,
    ) -> Result<(), CrawlError> {
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
                let visit = Visit::Content {
                    change: Change::Unchanged,
                    feed,
                };
                let found = Found {
                    feed,
                    ..Found::default()
                };
                self.finish(batch, &url, state, &result, visit, found, docs)
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
                self.finish(
                    batch,
                    &url,
                    UrlState::Fetched,
                    &result,
                    visit,
                    Found::default(),
                    docs,
                )
            }
            // An input prompt marks a query endpoint (status 10/11 is kept); geode never
            // invents input, nor client certificates.
            Outcome::Input {
                prompt: message, ..
            }
            | Outcome::CertificateRequired { message, .. } => {
                result.meta = message;
                self.finish(
                    batch,
                    &url,
                    UrlState::Fetched,
                    &result,
                    Visit::NoContent,
                    Found::default(),
                    docs,
                )
            }
        }
    }

    /// A visit that got no usable answer: the page's failure streak grows, and it leaves the
    /// index once that streak is as long as `--remove-after`.
    fn failed_visit(
        &mut self,
        batch: &mut Batch<'_>,
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
    pub(super) fn record_disallowed(
        &mut self,
        batch: &mut Batch<'_>,
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
    #[allow(clippy::too_many_arguments)]
    fn finish(
        &mut self,
        batch: &mut Batch<'_>,
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

    /// A 20: unchanged (the same body as last time) only updates times; otherwise the page is
    /// indexed (under the URL that temporarily redirected to it, if any), unless an identical
    /// body is already indexed, and its links replace those it had.
    fn record_content(
        &mut self,
        batch: &mut Batch<'_>,
        url: QueuedUrl,
        mut result: FetchResult,
        page: ExtractedPage,
        docs: &mut Vec<IndexMsg>,
    ) -> Result<(), CrawlError> {
        let ExtractedPage {
            extracted,
            size,
            hash,
            ..
        } = page;
        result.mime = Some(extracted.mime.clone());
        result.size = Some(size);
        result.content_hash = hash.clone();
        result.content_meta = Some(result.meta.clone());
        let feed = extracted.feed;
        let (doc_id, doc_url, doc_host, doc_in_index) = match &url.canonical {
            Some(c) => (c.id, c.url.clone(), c.host.clone(), c.in_index),
            None => (
                url.id,
                url.url.clone(),
                url.host.clone(),
                url.prior.in_index,
            ),
        };
        // What this URL served last time, compared with now. A file read by its header only
        // has no hash: the same type counts as the same file.
        let same = match (&hash, &url.prior.content_hash) {
            (Some(h), Some(before)) => h == before,
            (None, None) => {
                url.prior.status == Some(20) && url.prior.mime.as_deref() == Some(&extracted.mime)
            }
            _ => false,
        };
        let state = if url.canonical.is_some() {
            UrlState::Fetched
        } else {
            UrlState::Indexed
        };
        if same && doc_in_index {
            self.summary.unchanged += 1;
            let visit = Visit::Content {
                change: Change::Unchanged,
                feed,
            };
            let outcome = Found {
                feed,
                ..Found::default()
            };
            return self.finish(batch, &url, state, &result, visit, outcome, docs);
        }
        let change = if doc_in_index {
            Change::Changed
        } else {
            Change::New
        };
        if let Some(hash) = &hash {
            if let Some(first) = batch.same_content(hash, doc_id)? {
                // Indexed once, under the first URL; its links were expanded there.
                result.error = Some("duplicate".into());
                result.meta = format!("same content as {first}");
                self.summary.duplicates += 1;
                let visit = Visit::Duplicate { change };
                return self.finish(
                    batch,
                    &url,
                    UrlState::Fetched,
                    &result,
                    visit,
                    Found::default(),
                    docs,
                );
            }
        }
        let links: Vec<LinkOut> = extracted
            .links
            .iter()
            .map(|l| {
                let hub = feed && l.entry;
                LinkOut {
                    url: l.url.to_string(),
                    host: urlnorm::capsule_key(&l.url),
                    label: l.label.clone(),
                    excluded: self.config.policy.verdict(&l.url, url.depth + 1),
                    prio: Priority::of(&l.url, false, hub),
                }
            })
            .collect();
        // A capsule holding its full budget of URLs is no longer expanded: its pages are
        // indexed, their links are not recorded (a link bomb stops at the budget).
        let report = if batch.capsule_full(url.host_id, self.config.capsule_budget)? {
            Default::default()
        } else {
            batch.set_links(url.id, url.depth, &links, self.config.capsule_budget)?
        };
        self.summary.urls_discovered += report.added as u64;
        self.effects.new_urls |= report.added > 0;
        self.effects.wake.extend(report.hosts_with_new);
        self.effects.hubs.extend(report.new_hubs);
        // What the pages linking here call this page (those the crawl knows so far; later
        // changes reach the document through an anchor update).
        let anchors = batch.inbound_labels(doc_id, MAX_ANCHORS)?.join("\n");
        match change {
            Change::New => self.summary.new += 1,
            _ => self.summary.changed += 1,
        }
        let visit = Visit::Content { change, feed };
        if url.canonical.is_some() {
            batch.record_alias_content(doc_id, &result)?;
            let outcome = Found {
                feed,
                ..Found::default()
            };
            self.finish(batch, &url, state, &result, visit, outcome, docs)?;
        } else {
            let outcome = Found {
                feed,
                upsert: true,
                redirect_to: None,
            };
            self.finish(batch, &url, state, &result, visit, outcome, docs)?;
        }
        let doc = page_doc(
            doc_url,
            doc_host,
            &extracted,
            hash.is_none(),
            anchors,
            size,
            result.fetched_at,
        );
        docs.push(IndexMsg::Upsert {
            url_id: doc_id,
            doc: Box::new(doc),
        });
        Ok(())
    }

    /// A 30 or 31: the target joins the frontier (at most [`MAX_REDIRECT_HOPS`] in a chain; a
    /// known target is not fetched again, which ends loops). A temporary redirect keeps the
    /// original URL as the one the content is indexed under; a permanent one replaces it, so the
    /// old URL leaves the index.
    fn record_redirect(
        &mut self,
        batch: &mut Batch<'_>,
        url: &QueuedUrl,
        mut result: FetchResult,
        target: &str,
        permanent: bool,
        docs: &mut Vec<IndexMsg>,
    ) -> Result<(), CrawlError> {
        let resolved = Url::parse(&url.url)
            .map_err(|e| urlnorm::UrlError::Parse(e.to_string()))
            .and_then(|base| urlnorm::resolve(&base, target));
        let error = match resolved {
            Err(_) => Some("bad-redirect"),
            Ok(_) if url.hops >= MAX_REDIRECT_HOPS => Some("too-many-redirects"),
            Ok(ref to) if to.as_str() == url.url => Some("redirect-loop"),
            Ok(_) => None,
        };
        if let Some(error) = error {
            result.error = Some(error.into());
            return self.failed_visit(batch, url, result, UrlState::Failed, docs);
        }
        let to = resolved.expect("checked above");
        let canonical = url.canonical.as_ref().map(|c| c.id);
        let alias_of = if permanent {
            canonical
        } else {
            Some(canonical.unwrap_or(url.id))
        };
        let link = LinkOut {
            host: urlnorm::capsule_key(&to),
            excluded: self.config.policy.verdict(&to, url.depth),
            prio: Priority::of(&to, false, false),
            url: to.into(),
            label: String::new(),
        };
        let Some((target_id, added)) = batch.add_redirect(
            url.id,
            url.depth,
            url.hops + 1,
            &link,
            alias_of,
            self.config.capsule_budget,
        )?
        else {
            result.error = Some("capsule-budget".into());
            return self.failed_visit(batch, url, result, UrlState::Fetched, docs);
        };
        if added {
            self.summary.urls_discovered += 1;
            if link.excluded.is_none() {
                self.effects.new_urls = true;
                self.effects.wake.insert(batch.host_id(&link.host)?);
            }
        }
        let same_target = url.prior.status == result.status
            && url.prior.meta.as_deref() == Some(result.meta.as_str());
        let change = if same_target {
            Change::Unchanged
        } else {
            Change::Changed
        };
        // A temporary redirect's content stays indexed under this URL, through its target.
        let state = if !permanent && url.prior.in_index {
            UrlState::Indexed
        } else {
            UrlState::Fetched
        };
        let outcome = Found {
            redirect_to: Some(target_id),
            ..Found::default()
        };
        self.finish(
            batch,
            url,
            state,
            &result,
            Visit::Redirect { permanent, change },
            outcome,
            docs,
        )
    }

    /// 40-49. 44: the IP is left alone as long as asked and the URL waits its turn again.
    /// 41: the whole capsule is backed off. Others: the URL is retried later, with back-off,
    /// and counts a failed visit once the attempts are used up.
    fn record_temporary_failure(
        &mut self,
        batch: &mut Batch<'_>,
        url: QueuedUrl,
        ip: IpAddr,
        code: u8,
        mut result: FetchResult,
        docs: &mut Vec<IndexMsg>,
    ) -> Result<(), CrawlError> {
        match code {
            44 => {
                let mut url = url;
                url.prior.attempts += 1;
                if self.slow_down(batch, ip, &result.meta)? {
                    // Its capsule was deferred with the others on this IP.
                    batch.note_answer(url.id, &result)?;
                    batch.requeue(url.id)?;
                } else if url.prior.attempts >= self.config.max_attempts {
                    // Slowed down again and again: it waits for the next run.
                    batch.defer(url.id, &result)?;
                } else {
                    self.scheduler.retry(url, Instant::now());
                }
                Ok(())
            }
            41 => {
                let host_id = url.host_id;
                batch.note_answer(url.id, &result)?;
                batch.requeue(url.id)?;
                self.set_aside(batch, host_id)
            }
            _ => {
                let attempts = url.prior.attempts + 1;
                if attempts >= self.config.max_attempts {
                    result.error = Some("temporary-failure".into());
                    return self.failed_visit(batch, &url, result, UrlState::Fetched, docs);
                }
                let base = self.config.retry_base.as_secs().max(1) as i64;
                let wait = base.saturating_mul(1 << (attempts - 1).min(20));
                batch.retry_later(url.id, &result, result.fetched_at.saturating_add(wait))?;
                Ok(())
            }
        }
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

/// The index document for a page and the labels of the links to it. A file known only by its
/// header (`header_only`) has those labels in its body too: they are its only text.
pub(super) fn page_doc(
    url: String,
    host: String,
    page: &Extracted,
    header_only: bool,
    anchors: String,
    size: u64,
    fetched_at: i64,
) -> PageDoc {
    let body = if header_only && !anchors.is_empty() {
        format!("{}\n{anchors}", page.body)
    } else {
        page.body.clone()
    };
    PageDoc {
        url,
        host,
        title: page.title.clone(),
        body,
        headings: page.headings.join("\n"),
        link_labels: page
            .links
            .iter()
            .map(|l| l.label.as_str())
            .filter(|l| !l.is_empty())
            .collect::<Vec<_>>()
            .join("\n"),
        mime: page.mime.clone(),
        lang: page.lang.clone(),
        size,
        fetched_at,
        anchors,
    }
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
