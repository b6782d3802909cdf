//! From finished fetches to frontier records and index messages: what each Gemini answer means
//! for the URL, its capsule, its IP address and the index (see gemini.md's status table).

use std::net::IpAddr;
use std::time::{Duration, Instant};

use ::url::Url;

use super::{
    unix_now, Crawl, CrawlError, Done, DoneJob, ExtractedPage, Fetched, MAX_REDIRECT_HOPS,
};
use crate::content::Extracted;
use crate::fetch::{FetchError, Outcome};
use crate::frontier::{Batch, FetchResult, LinkOut, QueuedUrl, UrlState};
use crate::index::PageDoc;
use crate::robots::Robots;
use crate::urlnorm;

use super::indexing::IndexMsg;

/// The longest a capsule is backed off for.
const MAX_CAPSULE_BACKOFF: Duration = Duration::from_secs(24 * 3600);

impl Crawl {
    /// Records one finished fetch. Returns how many new URLs it added to the frontier.
    pub(super) fn record(
        &mut self,
        batch: &mut Batch<'_>,
        done: Done,
        docs: &mut Vec<IndexMsg>,
    ) -> Result<usize, CrawlError> {
        self.scheduler.finished(done.ip, done.began, done.took);
        match done.job {
            DoneJob::Robots { host_id } => {
                self.record_robots(batch, host_id, done.fetched_at, done.result)?;
                Ok(0)
            }
            DoneJob::Page(url) => {
                self.record_page(batch, url, done.ip, done.fetched_at, done.result, docs)
            }
        }
    }

    /// Leaves a capsule alone for a while (longer each time in a row): its queued URLs go back
    /// to the frontier untouched.
    pub(super) fn set_aside(
        &mut self,
        batch: &mut Batch<'_>,
        host_id: i64,
    ) -> Result<(), CrawlError> {
        self.summary.capsules_backed_off += 1;
        let base = self.config.capsule_backoff.as_secs().max(1) as i64;
        batch.back_off_capsule(
            host_id,
            unix_now(),
            base,
            MAX_CAPSULE_BACKOFF.as_secs() as i64,
        )?;
        for url in self.scheduler.drop_capsule(host_id) {
            batch.requeue(url.id)?;
        }
        Ok(())
    }

    fn record_robots(
        &mut self,
        batch: &mut Batch<'_>,
        host_id: i64,
        now: i64,
        result: Result<Fetched, FetchError>,
    ) -> Result<(), CrawlError> {
        self.summary.robots_fetched += 1;
        let response = match result {
            Ok(fetched) => fetched.response,
            Err(e) => {
                tracing::debug!(host_id, error = %e, "robots.txt unreachable: capsule set aside");
                return self.set_aside(batch, host_id);
            }
        };
        if let Some(fp) = &response.cert_fingerprint {
            batch.pin_certificate(host_id, fp, now)?;
        }
        // 20 text: the rules. 4x: ask again later and fetch nothing meanwhile. Anything else
        // (missing, permanent failure, redirect, not text) means no restrictions.
        let (robots, text) = match &response.outcome {
            Outcome::TemporaryFailure { .. } => return self.set_aside(batch, host_id),
            Outcome::Success { meta, body } if crate::fetch::wants_body(meta) => {
                let text = crate::gemtext::decode(body).into_owned();
                (Robots::parse(&text), Some(text))
            }
            _ => (Robots::allow_all(), None),
        };
        batch.capsule_answered(host_id)?;
        batch.set_robots(host_id, response.status, text.as_deref(), now)?;
        self.scheduler.set_robots(host_id, robots, Instant::now());
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
    ) -> Result<usize, CrawlError> {
        self.summary.pages_fetched += 1;
        let fetched = match result {
            Ok(fetched) => fetched,
            Err(e) => {
                self.summary.errors += 1;
                let result = FetchResult {
                    error: Some(e.kind().into()),
                    meta: e.to_string(),
                    fetched_at: now,
                    ..FetchResult::default()
                };
                batch.finish_url(url.id, UrlState::Failed, &result)?;
                return Ok(0);
            }
        };
        let response = fetched.response;
        if let Some(fp) = &response.cert_fingerprint {
            batch.pin_certificate(url.host_id, fp, now)?;
        }
        let mut result = FetchResult {
            status: Some(response.status),
            fetched_at: now,
            ..FetchResult::default()
        };
        if !matches!(response.outcome, Outcome::TemporaryFailure { code: 44, .. }) {
            self.scheduler.answered(ip);
        }
        let added = match response.outcome {
            Outcome::Success { meta, .. } => {
                result.meta = meta;
                let page = fetched.page.expect("success responses are extracted");
                return self.record_content(batch, url, result, page, docs);
            }
            Outcome::Redirect { target, permanent } => {
                result.meta = target.clone();
                self.record_redirect(batch, &url, result, &target, permanent, docs)?
            }
            Outcome::TemporaryFailure { code, message } => {
                result.meta = message;
                self.record_temporary_failure(batch, url, ip, code, result)?;
                0
            }
            Outcome::PermanentFailure { message, .. } => {
                // Not found, gone, refused, bad request: whatever the index held under this URL
                // goes (a no-op for a URL it never held).
                result.meta = message;
                batch.finish_url(url.id, UrlState::Removing, &result)?;
                docs.push(IndexMsg::Delete {
                    url_id: url.id,
                    url: url.url,
                });
                0
            }
            // An input prompt marks a query endpoint (status 10/11 is kept); geode never
            // invents input, nor client certificates.
            Outcome::Input {
                prompt: message, ..
            }
            | Outcome::CertificateRequired { message, .. } => {
                result.meta = message;
                batch.finish_url(url.id, UrlState::Fetched, &result)?;
                0
            }
        };
        self.summary.urls_discovered += added as u64;
        Ok(added)
    }

    /// A 20: the page is indexed (under the URL that temporarily redirected to it, if any),
    /// unless an identical body is already indexed; its links join the frontier.
    fn record_content(
        &mut self,
        batch: &mut Batch<'_>,
        url: QueuedUrl,
        mut result: FetchResult,
        page: ExtractedPage,
        docs: &mut Vec<IndexMsg>,
    ) -> Result<usize, CrawlError> {
        let ExtractedPage {
            mut extracted,
            size,
            hash,
        } = page;
        result.mime = Some(extracted.mime.clone());
        result.size = Some(size);
        result.content_hash = hash.clone();
        let (doc_id, doc_url, doc_host) = match &url.canonical {
            Some(c) => (c.id, c.url.clone(), c.host.clone()),
            None => (url.id, url.url.clone(), url.host.clone()),
        };
        if let Some(hash) = &hash {
            if let Some(first) = batch.same_content(hash, doc_id)? {
                // Indexed once, under the first URL; its links were expanded there.
                result.error = Some("duplicate".into());
                result.meta = format!("same content as {first}");
                batch.finish_url(url.id, UrlState::Fetched, &result)?;
                self.summary.duplicates += 1;
                return Ok(0);
            }
        }
        let links: Vec<LinkOut> = extracted
            .links
            .iter()
            .map(|l| LinkOut {
                url: l.url.to_string(),
                host: urlnorm::capsule_key(&l.url),
                label: l.label.clone(),
                excluded: self.config.policy.verdict(&l.url, url.depth + 1),
            })
            .collect();
        let added = batch.add_links(url.id, url.depth, &links, self.config.capsule_budget)?;
        // What the pages linking here call this page (those the crawl knows so far).
        let anchors = batch.inbound_labels(doc_id, MAX_ANCHORS)?.join("\n");
        if hash.is_none() && !anchors.is_empty() {
            // A file known only by its header: the labels of links to it are its only text.
            extracted.body = format!("{}\n{anchors}", extracted.body);
        }
        if url.canonical.is_some() {
            batch.finish_url(url.id, UrlState::Fetched, &result)?;
        }
        batch.finish_url(doc_id, UrlState::Pending, &result)?;
        let mut doc = page_doc(doc_url, doc_host, &extracted, size, result.fetched_at);
        doc.anchors = anchors;
        docs.push(IndexMsg::Upsert {
            url_id: doc_id,
            doc: Box::new(doc),
        });
        self.summary.urls_discovered += added as u64;
        Ok(added)
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
    ) -> Result<usize, CrawlError> {
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
            self.summary.errors += 1;
            result.error = Some(error.into());
            batch.finish_url(url.id, UrlState::Failed, &result)?;
            return Ok(0);
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
            url: to.into(),
            label: String::new(),
        };
        let added = batch.add_redirect(
            url.id,
            url.depth,
            url.hops + 1,
            &link,
            alias_of,
            self.config.capsule_budget,
        )?;
        let state = if permanent {
            UrlState::Removing
        } else {
            UrlState::Fetched
        };
        batch.finish_url(url.id, state, &result)?;
        if permanent {
            docs.push(IndexMsg::Delete {
                url_id: url.id,
                url: url.url.clone(),
            });
        }
        Ok(usize::from(added))
    }

    /// 40-49. 44: the IP is left alone as long as asked and the URL waits its turn again.
    /// 41: the whole capsule is backed off. Others: the URL is retried later, with back-off.
    fn record_temporary_failure(
        &mut self,
        batch: &mut Batch<'_>,
        url: QueuedUrl,
        ip: IpAddr,
        code: u8,
        result: FetchResult,
    ) -> Result<(), CrawlError> {
        match code {
            44 => {
                self.summary.slow_downs += 1;
                let asked = result
                    .meta
                    .trim()
                    .parse::<u64>()
                    .ok()
                    .map(Duration::from_secs);
                self.scheduler.slow_down(ip, asked, Instant::now());
                self.scheduler.retry(url, Instant::now());
            }
            41 => {
                let host_id = url.host_id;
                batch.note_answer(url.id, &result)?;
                batch.requeue(url.id)?;
                self.set_aside(batch, host_id)?;
            }
            _ => {
                let base = self.config.retry_base.as_secs().max(1) as i64;
                let max = self.config.max_attempts;
                if !batch.retry_later(url.id, &result, base, max, UrlState::Fetched)? {
                    self.summary.errors += 1;
                }
            }
        }
        Ok(())
    }
}

/// Most distinct inbound link labels indexed with a page: enough to say what others call it,
/// bounded for pages every capsule links to.
const MAX_ANCHORS: usize = 200;

/// The index document for a page.
fn page_doc(url: String, host: String, page: &Extracted, size: u64, now: i64) -> PageDoc {
    PageDoc {
        url,
        host,
        title: page.title.clone(),
        body: page.body.clone(),
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
        fetched_at: now,
        anchors: String::new(),
    }
}
