//! What a page's content and redirects do ([`super::super::verdict`] decided which): new or
//! changed content is indexed, unless an identical body is already, and its links replace the
//! page's old ones; a redirect's target joins the frontier, with the original kept canonical
//! for a 30.

use std::time::Instant;

use super::*;
use crate::content::Extracted;
use crate::crawl::budget::Content;
use crate::crawl::hold::Held;
use crate::crawl::verdict::Follow;
use crate::frontier::PageLinks;
use crate::index::neardup;

impl Crawl {
    /// New or changed content of a 20: indexed (under the URL that temporarily redirected to
    /// it, if any), unless an identical body is already, and its links replace those it had.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn record_content(
        &mut self,
        batch: &mut dyn Batch,
        url: QueuedUrl,
        mut result: FetchResult,
        page: ExtractedPage,
        change: Change,
        state: UrlState,
        docs: &mut Vec<IndexMsg>,
    ) -> Result<(), CrawlError> {
        let ExtractedPage {
            extracted,
            size,
            hash,
            links_out,
            ..
        } = page;
        let feed = extracted.feed;
        let (doc_id, doc_url, doc_host) = match &url.canonical {
            Some(c) => (c.id, c.url.clone(), c.host.clone()),
            None => (url.id, url.url.clone(), url.host.clone()),
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
        let links = links_out.unwrap_or_else(|| self.links_out(&extracted, url.depth));
        // A capsule holding its full budget of URLs is no longer expanded: its pages are
        // indexed, their links are not recorded (a link bomb stops at the budget).
        let report = if batch.capsule_full(url.host_id, self.config.capsule_budget)? {
            Default::default()
        } else {
            // A page whose document is held reads the labels of its links when it goes.
            let hold = &self.hold;
            let page = PageLinks {
                source: url.id,
                depth: url.depth,
                links: &links,
                held: &|id| hold.holds(id),
            };
            batch.set_links_holding(&page, self.config.capsule_budget)?
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

    /// The links of a page at `depth` as the frontier records them: each with its capsule, its
    /// priority, and why it may not be fetched, if it may not.
    pub(super) fn links_out(&self, extracted: &Extracted, depth: u32) -> Vec<LinkOut> {
        extracted
            .links
            .iter()
            .map(|l| {
                let hub = extracted.feed && l.entry;
                LinkOut {
                    url: l.url.to_string(),
                    host: urlnorm::capsule_key(&l.url),
                    label: l.label.clone(),
                    excluded: self.config.policy.verdict(&l.url, depth + 1),
                    prio: Priority::of(&l.url, false, hub),
                }
            })
            .collect()
    }

    /// A 30 or 31: the target joins the frontier (a known target is not fetched again, which
    /// ends loops). A temporary redirect keeps the original URL as the one the content is
    /// indexed under; a permanent one replaces it, so the old URL leaves the index.
    pub(super) fn record_redirect(
        &mut self,
        batch: &mut dyn Batch,
        url: &QueuedUrl,
        mut result: FetchResult,
        follow: Follow,
        docs: &mut Vec<IndexMsg>,
    ) -> Result<(), CrawlError> {
        let Follow {
            to,
            permanent,
            change,
            state,
        } = follow;
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
}
