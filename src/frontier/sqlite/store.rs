//! The frontier's traits on the SQLite store: each method is the inherent method of the same
//! name on [`SqliteFrontier`] or [`SqliteBatch`], which hold the SQL (and which the store's own
//! tests call directly).

use super::{
    AnchorUpdate, ArchiveRecord, ArchiveStats, ArchivedResponse, Backlink, CachedRobots,
    FetchResult, IndexedContent, KnownHost, LinkOut, LinkReport, NewUrl, PendingOp, Pin, QueuedUrl,
    Result, SqliteBatch, SqliteFrontier, Stats, Suggested, SuggestedSeed, UrlDetails, UrlState,
    VisitRecord,
};
use crate::frontier::{Batch, Frontier, IndexLog, Reader, Standing};
use crate::rank::LinkGraph;

/// Runs a call as is: SQLite's calls block briefly and need nothing around them.
fn here<T>(f: impl FnOnce() -> T) -> T {
    f()
}

impl Frontier for SqliteFrontier {
    fn batch(&mut self, now: i64) -> Result<Box<dyn Batch + '_>> {
        Ok(Box::new(SqliteFrontier::batch(self, now)?))
    }

    delegate! { here;
        fn recover(&mut self, committed_seq: u64, now: i64) -> Result<(usize, usize)>;
        fn end_run(&mut self) -> Result<()>;
        fn robots(&self, host_id: i64) -> Result<Option<CachedRobots>>;
        fn claim_capsules(
            &mut self,
            capsules: usize,
            per_capsule: usize,
            now: i64,
            permits: &(dyn Fn(&str) -> bool + Sync)
        ) -> Result<(Vec<QueuedUrl>, usize)>;
        fn claim_more(&mut self, host_id: i64, n: usize, now: i64) -> Result<Vec<QueuedUrl>>;
        fn claim_ids(&mut self, ids: &[i64], now: i64) -> Result<Vec<QueuedUrl>>;
        fn release_capsule(&mut self, host_id: i64) -> Result<()>;
        fn next_wakeup(&self, now: i64) -> Result<Option<i64>>;
        fn lease_address(&mut self, ip: &str) -> Result<Option<std::time::Duration>>;
        fn capsule_standing(&self, host_id: i64) -> Result<Standing>;
        fn set_standings(&mut self, standings: &[(String, Standing)]) -> Result<()>;
        fn capsules_held_for(&self, reasons: &[&str]) -> Result<Vec<String>>;
        fn renew_leases(&mut self) -> Result<u64>;
        fn set_meta(&self, key: &str, value: &str) -> Result<()>;
        fn suggest_seed(&mut self, url: &str, host: &str, source: &str, now: i64)
            -> Result<Suggested>;
    }
}

impl IndexLog for SqliteFrontier {
    delegate! { here;
        fn assign_batch(&mut self, url_ids: &[i64], seq: u64) -> Result<()>;
        fn mark_committed(&mut self, seq: u64) -> Result<usize>;
        fn pending_index_ops(&self, after: i64, limit: usize) -> Result<Vec<PendingOp>>;
        fn anchor_updates(&self, after: i64, limit: usize) -> Result<Vec<AnchorUpdate>>;
        fn clear_anchor_updates(&mut self, ids: &[i64]) -> Result<()>;
        fn clear_all_anchor_updates(&mut self) -> Result<()>;
        fn own_labels(&self, id: i64) -> Result<Vec<String>>;
        fn inbound_labels(&self, id: i64, limit: usize) -> Result<Vec<String>>;
        fn indexed_content(&self, after: i64, limit: usize) -> Result<Vec<IndexedContent>>;
        fn forget_indexed(&mut self, ids: &[i64], now: i64) -> Result<()>;
        fn link_graph(&self) -> Result<LinkGraph>;
    }
}

impl Reader for SqliteFrontier {
    delegate! { here;
        fn url_count(&self) -> Result<u64>;
        fn meta(&self, key: &str) -> Result<Option<String>>;
        fn urls_in_state(&self, state: UrlState) -> Result<Vec<String>>;
        fn indexed_urls(&self) -> Result<Vec<String>>;
        fn stats(&self, now: i64) -> Result<Stats>;
        fn known_hosts(&self) -> Result<Vec<KnownHost>>;
        fn url_id(&self, url: &str) -> Result<Option<i64>>;
        fn url_details(&self, url: &str) -> Result<Option<UrlDetails>>;
        fn knows(&self, url: &str) -> Result<bool>;
        fn backlinks(&self, url: &str) -> Result<Vec<Backlink>>;
        fn archived(&self, url_id: i64) -> Result<Option<ArchivedResponse>>;
        fn archived_body(&self, hash: &str) -> Result<Option<Vec<u8>>>;
        fn archive_stats(&self) -> Result<ArchiveStats>;
        fn archived_responses(
            &self,
            after: i64,
            since: i64,
            limit: usize
        ) -> Result<Vec<(i64, String, ArchivedResponse)>>;
        fn suggested_seeds(&self) -> Result<Vec<SuggestedSeed>>;
    }
}

impl Batch for SqliteBatch<'_> {
    fn commit(self: Box<Self>) -> Result<()> {
        SqliteBatch::commit(*self)
    }

    delegate! { here;
        fn host_id(&mut self, name: &str) -> Result<i64>;
        fn ensure_url(
            &mut self,
            new: &NewUrl<'_>,
            excluded: Option<&str>,
            budget: u64
        ) -> Result<Option<(i64, bool)>>;
        fn admit_web_urls(&mut self) -> Result<u64>;
        fn capsule_full(&mut self, host_id: i64, budget: u64) -> Result<bool>;
        fn set_links_holding(
            &mut self,
            source: i64,
            depth: u32,
            links: &[LinkOut],
            budget: u64,
            held: &(dyn Fn(i64) -> bool + Sync)
        ) -> Result<LinkReport>;
        fn drop_links(&mut self, source: i64) -> Result<()>;
        fn forget_anchor_update(&mut self, url_id: i64) -> Result<()>;
        fn add_redirect(
            &mut self,
            source: i64,
            depth: u32,
            hops: u32,
            target: &LinkOut,
            alias_of: Option<i64>,
            budget: u64
        ) -> Result<Option<(i64, bool)>>;
        fn same_content(&mut self, hash: &str, except: i64) -> Result<Option<String>>;
        fn inbound_labels(&mut self, id: i64, limit: usize) -> Result<Vec<String>>;
        fn record_visit(&mut self, id: i64, visit: &VisitRecord<'_>) -> Result<()>;
        fn record_alias_content(&mut self, id: i64, result: &FetchResult) -> Result<()>;
        fn retry_later(&mut self, id: i64, result: &FetchResult, due_at: i64) -> Result<()>;
        fn back_off_capsule(&mut self, host_id: i64, now: i64, base: i64, max: i64)
            -> Result<i64>;
        fn capsule_answered(&mut self, host_id: i64) -> Result<()>;
        fn note_answer(&mut self, id: i64, result: &FetchResult) -> Result<()>;
        fn defer(&mut self, id: i64, result: &FetchResult) -> Result<()>;
        fn requeue(&mut self, id: i64) -> Result<()>;
        fn release_capsule(&mut self, host_id: i64) -> Result<()>;
        fn set_robots(&mut self, host_id: i64, status: u8, text: Option<&str>, now: i64)
            -> Result<()>;
        fn set_backoff(&mut self, host_id: i64, until: i64) -> Result<()>;
        fn hold_capsule(&mut self, host_id: i64, until: i64, reason: &str) -> Result<()>;
        fn pin_certificate(&mut self, host_id: i64, sha256: &str, now: i64) -> Result<Pin>;
        fn archive(&mut self, url_id: i64, record: &ArchiveRecord<'_>) -> Result<()>;
    }
}
