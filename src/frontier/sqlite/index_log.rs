//! The index's bookkeeping in the SQLite store ([`IndexLog`]): index operations tagged with
//! the commit that carries them and confirmed after it, anchor updates and link labels, what a
//! rebuilt index reads, and the link graph for the authority step.

use std::collections::BTreeSet;

use rusqlite::{params, TransactionBehavior};

use super::anchors::inbound_labels;
use super::graph::SCAN_CACHE_KIB;
use super::rows::count_at;
use super::{confirm_commit, outlinks};
use super::{AnchorUpdate, IndexOp, IndexedContent, PendingOp, Result, SqliteFrontier};
use crate::frontier::IndexLog;
use crate::rank::LinkGraph;

impl IndexLog for SqliteFrontier {
    /// Tags URLs whose index operation is about to be committed with the commit's number.
    fn assign_batch(&mut self, url_ids: &[i64], seq: u64) -> Result<()> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        {
            let mut tag = tx.prepare_cached(
                "UPDATE urls SET batch = ?2 WHERE id = ?1 AND index_op IS NOT NULL",
            )?;
            for id in url_ids {
                tag.execute(params![id, seq as i64])?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// Confirms that the index commit `seq` (and every earlier one) has happened.
    fn mark_committed(&mut self, seq: u64) -> Result<usize> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let confirmed = confirm_commit(&tx, seq)?;
        tx.commit()?;
        Ok(confirmed)
    }

    /// Up to `limit` URLs with an index operation not yet confirmed, after `after`, in id order.
    fn pending_index_ops(&self, after: i64, limit: usize) -> Result<Vec<PendingOp>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT u.id, u.url, h.name, u.content_hash, COALESCE(u.content_meta, u.mime),
                    COALESCE(u.size, 0), COALESCE(u.fetched_at, 0), u.index_op
             FROM urls u JOIN hosts h ON h.id = u.host_id
             WHERE u.index_op IS NOT NULL AND u.id > ?1 ORDER BY u.id LIMIT ?2",
        )?;
        let rows = stmt.query_map(params![after, limit as i64], |r| {
            Ok(PendingOp {
                op: IndexOp::parse(&r.get::<_, String>(7)?),
                page: indexed_content(r)?,
            })
        })?;
        Ok(rows.collect::<std::result::Result<_, _>>()?)
    }

    /// Up to `limit` pages whose anchors changed, after the URL id `after`, each with the
    /// indexed page it stands for (if any): the URL itself when it is in the index, else the
    /// page its redirects lead to.
    fn anchor_updates(&self, after: i64, limit: usize) -> Result<Vec<AnchorUpdate>> {
        let ids: Vec<i64> = {
            let mut stmt = self.conn.prepare_cached(
                "SELECT url_id FROM anchor_updates WHERE url_id > ?1 ORDER BY url_id LIMIT ?2",
            )?;
            let rows = stmt.query_map(params![after, limit as i64], |r| r.get(0))?;
            rows.collect::<std::result::Result<_, _>>()?
        };
        let mut updates = Vec::with_capacity(ids.len());
        for dirty_id in ids {
            updates.push(AnchorUpdate {
                dirty_id,
                page: self.indexed_page_for(dirty_id)?,
            });
        }
        Ok(updates)
    }

    /// The pages of `ids` with an anchor update pending (one process writes this store: no
    /// mark can change before they are cleared).
    fn anchor_marks_of(&self, ids: &[i64]) -> Result<Vec<i64>> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT 1 FROM anchor_updates WHERE url_id = ?1")?;
        let mut marked = Vec::new();
        for &id in ids {
            if stmt.exists([id])? {
                marked.push(id);
            }
        }
        Ok(marked)
    }

    /// Forgets anchor updates once the documents they asked for are committed.
    fn clear_anchor_updates(&mut self, ids: &[i64]) -> Result<()> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        {
            let mut del = tx.prepare_cached("DELETE FROM anchor_updates WHERE url_id = ?1")?;
            for id in ids {
                del.execute([id])?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// Forgets every anchor update: a rebuilt index wrote every document with its anchors.
    fn clear_all_anchor_updates(&mut self) -> Result<()> {
        self.conn.execute("DELETE FROM anchor_updates", [])?;
        Ok(())
    }

    /// The labels of the links on a page (its own, not those pointing to it), distinct.
    fn own_labels(&self, id: i64) -> Result<Vec<String>> {
        let labels: BTreeSet<String> = outlinks::read(&self.conn, id)?
            .into_iter()
            .filter_map(|(_, label)| (!label.is_empty()).then_some(label))
            .collect();
        Ok(labels.into_iter().collect())
    }

    /// The distinct labels of the links that point to a URL, or to a URL that redirects to it
    /// (`=> /book The Book` names `/book/`), at most `limit` of them, from pages that are not
    /// being removed.
    fn inbound_labels(&self, id: i64, limit: usize) -> Result<Vec<String>> {
        inbound_labels(&self.conn, id, limit)
    }

    /// Up to `limit` pages the index holds, after URL id `after`, in id order.
    fn indexed_content(&self, after: i64, limit: usize) -> Result<Vec<IndexedContent>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT u.id, u.url, h.name, u.content_hash, COALESCE(u.content_meta, u.mime),
                    COALESCE(u.size, 0), COALESCE(u.fetched_at, 0)
             FROM urls u JOIN hosts h ON h.id = u.host_id
             WHERE u.in_index = 1 AND u.id > ?1 ORDER BY u.id LIMIT ?2",
        )?;
        let rows = stmt.query_map(params![after, limit as i64], indexed_content)?;
        Ok(rows.collect::<std::result::Result<_, _>>()?)
    }

    /// Takes pages out of the frontier's picture of the index, because a rebuilt index will not
    /// hold them (their content was never archived): they come due at once and are indexed by
    /// the next crawl whatever they hold.
    fn forget_indexed(&mut self, ids: &[i64], now: i64) -> Result<()> {
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        {
            let mut stmt = tx.prepare_cached(
                "UPDATE urls SET in_index = 0, content_hash = NULL, due_at = ?2,
                        state = CASE WHEN state = 'indexed' THEN 'new' ELSE state END
                 WHERE id = ?1",
            )?;
            for id in ids {
                stmt.execute(params![id, now])?;
            }
            tx.execute(
                "UPDATE hosts SET next_due = ?1 WHERE id IN
                   (SELECT host_id FROM urls WHERE due_at = ?1 AND in_index = 0)
                   AND (next_due IS NULL OR next_due > ?1)",
                [now],
            )?;
        }
        tx.commit()?;
        Ok(())
    }

    /// The indexed pages and the links between them, resolved through redirects. Pages are
    /// keyed by their URL's index key ([`crate::digest::url_hash`]).
    ///
    /// The two scans read every page of `urls` and `outlinks` once, which a page cache does
    /// not speed up: the connection's cache is cut to [`SCAN_CACHE_KIB`] for them and set back
    /// after. Otherwise they filled the crawl's cache (64 MiB then): 55 MiB more peak RSS on
    /// bench-scale's database of a million URLs.
    fn link_graph(&self) -> Result<LinkGraph> {
        let cache: i64 = self.conn.query_row("PRAGMA cache_size", [], |r| r.get(0))?;
        self.conn
            .pragma_update(None, "cache_size", -SCAN_CACHE_KIB)?;
        let graph = self.read_link_graph();
        self.conn.pragma_update(None, "cache_size", cache)?;
        graph
    }
}

/// A page the index holds (or is to hold) from the columns `u.id, u.url, h.name,
/// u.content_hash, content meta, size, fetched at`, in that order.
fn indexed_content(r: &rusqlite::Row<'_>) -> rusqlite::Result<IndexedContent> {
    Ok(IndexedContent {
        id: r.get(0)?,
        url: r.get(1)?,
        host: r.get(2)?,
        content_hash: r.get(3)?,
        content_meta: r.get(4)?,
        size: count_at(r, 5)?,
        fetched_at: r.get(6)?,
    })
}
