//! What a visit tells a capsule's crawl budget ([`crate::crawl::budget`]): the requests it made,
//! the novelty of its pages, the URLs of its own they add and the capsules they link to; and the
//! hold that ends its run once the budget says so.

use std::collections::HashSet;

use super::*;
use crate::crawl::budget::Content;
use crate::digest::url_hash;
use crate::frontier::LinkReport;
use crate::rank::site_of;

impl Crawl {
    /// Counts a request to a capsule: for one of its pages (not robots.txt), at `depth`.
    pub(in crate::crawl) fn count_request(&mut self, capsule: &str, depth: Option<u32>) {
        if let Some(run) = self.budgets.get(capsule) {
            match depth {
                Some(depth) => run.requested_page(depth),
                None => run.requested(),
            }
        }
    }

    /// Counts what one of a capsule's pages brought; whether that was new text of its own.
    pub(super) fn note_content(&mut self, capsule: &str, content: Content) -> bool {
        match self.budgets.get(capsule) {
            Some(run) => run.page(content),
            None => false,
        }
    }

    /// Counts what a page's links say: the new URLs of its own capsule they added (and whether
    /// the page brought new text, `new_text`), a feed, and each capsule of another site they
    /// point to (a vote from this page's site).
    pub(super) fn note_links(
        &mut self,
        url: &QueuedUrl,
        links: &[LinkOut],
        report: &LinkReport,
        feed: bool,
        new_text: bool,
    ) {
        if let Some(run) = self.budgets.get(&url.host) {
            let added = report
                .hosts_with_new
                .get(&url.host_id)
                .copied()
                .unwrap_or(0);
            run.discovered(added, new_text, url.depth);
            if feed {
                run.feed_found();
            }
        }
        let site = site_of(&url.host);
        let others: HashSet<&str> = links
            .iter()
            .filter(|l| l.excluded.is_none() && site_of(&l.host) != site)
            .map(|l| l.host.as_str())
            .collect();
        let voter = url_hash(site);
        for other in others {
            if let Some(run) = self.budgets.get(other) {
                run.linked_from(voter);
            }
        }
    }

    /// Holds a capsule back for a later run once its budget says so: its queued URLs go back to
    /// the frontier untouched, its lease is let go, and it is not claimed again before
    /// `--revisit-min` has passed. What it fetched is indexed.
    pub(super) fn enforce_budget(
        &mut self,
        batch: &mut dyn Batch,
        host_id: i64,
        capsule: &str,
    ) -> Result<(), CrawlError> {
        let Some(run) = self.budgets.get(capsule) else {
            return Ok(());
        };
        if run.held().is_some() {
            return Ok(());
        }
        let Some(reason) = run.verdict() else {
            return Ok(());
        };
        tracing::info!(
            capsule,
            reason = reason.as_str(),
            requests = run.requests(),
            allowance = run.allowance(),
            "capsule held back for a later run"
        );
        self.summary.capsules_held_back += 1;
        let until = unix_now().saturating_add(self.config.revisit.min.as_secs() as i64);
        batch.hold_capsule(host_id, until, reason.as_str())?;
        for url in self.scheduler.drop_capsule(host_id) {
            batch.requeue(url.id)?;
        }
        batch.release_capsule(host_id)?;
        self.hold.capsule_done(host_id);
        Ok(())
    }
}
