//! What a page's answer means for the page: content (new, changed, unchanged, duplicate, or
//! out of the index), redirects (followed, with the original kept canonical for 30), and
//! temporary failures (retried with back-off, given up after too many).

use std::net::IpAddr;
use std::time::Instant;

use ::url::Url;

use super::*;
use crate::crawl::budget::Content;
use crate::crawl::hold::Held;
use crate::index::neardup;

impl Crawl {
    /// A 20: unchanged (the same body as last time) only updates times; otherwise the page is
    /// indexed (under the URL that temporarily redirected to it, if any), unless an identical
    /// body is already indexed, and its links replace those it had.
    pub(super) fn record_content(
        &mut self,
        batch: &mut dyn Batch,
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
            return self.finish_unchanged(batch, &url, state, &result, feed, docs);
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
                let _ = self.note_content(&url.host, Content::Copy);
                let visit = Visit::Duplicate { change };
                return self.finish_fetched(batch, &url, &result, visit, docs);
            }
        }
        let doc = crate::document::page_doc(
            doc_url,
            doc_host,
            &extracted,
            hash.is_none(),
            String::new(),
            size,
            result.fetched_at,
        );
        // A file known by its header says nothing of the capsule's novelty.
        let new_text = hash.is_some() && {
            let content = Content::of(&doc.body, || {
                neardup::page_fingerprint(&doc.body, &doc.link_labels)
            });
            self.note_content(&url.host, content)
        };
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
            // A page whose document is held reads the labels of its links when it goes.
            let hold = &self.hold;
            batch.set_links_holding(
                url.id,
                url.depth,
                &links,
                self.config.capsule_budget,
                &|id| hold.holds(id),
            )?
        };
        self.note_links(&url, &links, &report, feed, new_text);
        self.summary.urls_discovered += report.added as u64;
        self.effects.new_urls |= report.added > 0;
        self.effects.wake.extend(report.hosts_with_new.keys());
        self.effects.hubs.extend(report.new_hubs);
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
        // The document goes to the index once its capsule is done, with what the pages
        // linking here call this page by then (later changes reach it through an anchor
        // update): see `crawl::hold`.
        let held = Held {
            url_id: doc_id,
            header_only: hash.is_none(),
            doc: Box::new(doc),
        };
        self.hold.add(url.host_id, held, Instant::now());
        Ok(())
    }

    /// A 30 or 31: the target joins the frontier (at most [`MAX_REDIRECT_HOPS`] in a chain; a
    /// known target is not fetched again, which ends loops). A temporary redirect keeps the
    /// original URL as the one the content is indexed under; a permanent one replaces it, so the
    /// old URL leaves the index.
    pub(super) fn record_redirect(
        &mut self,
        batch: &mut dyn Batch,
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
    pub(super) fn record_temporary_failure(
        &mut self,
        batch: &mut dyn Batch,
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
