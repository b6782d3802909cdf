//! [`IndexLog`] on the PostgreSQL store: the index's bookkeeping in the shared database. Index
//! operations tagged with a commit and confirmed (`geode index`, the one index writer of a
//! shared store, applies them), anchors and their updates, the pages a rebuilt index reads and
//! the link graph it ranks by. Each answer means what the SQLite store's does
//! (`sqlite/anchors.rs`, `archive.rs`, `graph.rs`); each method runs its database work through
//! [`blocking`].

use std::collections::HashMap;

use postgres::fallible_iterator::FallibleIterator;
use postgres::types::ToSql;
use postgres::Row;

use super::claim::locked_in_id_order;
use super::{blocking, count_of, write, PgFrontier, DB_NOW, SHARED_ROWS_LOCK};
use crate::frontier::graph::GraphRows;
use crate::frontier::types::ChainStep;
use crate::frontier::{
    AnchorUpdate, IndexLog, IndexOp, IndexedContent, IndexedPage, PendingOp, Result, HOLD_MAX_AGE,
    MAX_REDIRECT_CHAIN,
};
use crate::rank::LinkGraph;

/// Whether the pending operation of `u` (a URL of capsule `h`) waits for its crawler: see
/// [`IndexLog::pending_index_ops`]; `max_age` is the parameter holding [`HOLD_MAX_AGE`] in
/// seconds.
fn held_op(max_age: &str) -> String {
    format!(
        "u.index_op = 'upsert' AND u.batch IS NULL AND h.claimed = 1
         AND h.leased_until >= {DB_NOW} AND COALESCE(u.fetched_at, 0) > {DB_NOW} - {max_age}"
    )
}

/// No parameters, for `query_raw`.
const NO_PARAMS: [&(dyn ToSql + Sync); 0] = [];

/// The distinct labels of links to each page of `ids` or to URLs redirecting to it (up to
/// [`MAX_REDIRECT_CHAIN`] redirects away), each page's first `limit` in order, in one
/// statement run by `query` (a batch runs it prepared: one round trip, where a walk of the
/// chain a level at a time took two for a page nothing redirects to). `IS NOT NULL` says
/// outright what the partial index `urls_redirected` needs; `OFFSET 0` keeps each lateral step
/// an index lookup (joined freely, the planner hashed whole tables: 1.5 ms a call on the
/// shared-crawl bench).
pub(super) fn inbound_labels_of(
    mut query: impl FnMut(&str, &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>>,
    ids: &[i64],
    limit: usize,
) -> Result<HashMap<i64, Vec<String>>> {
    let rows = query(
        "WITH RECURSIVE chain(root, id, level) AS (
             SELECT r, r, 0 FROM unnest($1::BIGINT[]) AS r
             UNION
             SELECT c.root, u.id, c.level + 1 FROM chain c
             CROSS JOIN LATERAL (SELECT id FROM urls
                                 WHERE redirect_to = c.id AND redirect_to IS NOT NULL
                                 OFFSET 0) u
             WHERE c.level < $3),
         labels AS (
             SELECT DISTINCT c.root, l.label COLLATE \"C\" AS label
             FROM chain c
             CROSS JOIN LATERAL (SELECT label FROM links
                                 WHERE target = c.id AND label != '' OFFSET 0) l)
         SELECT root, label FROM (
             SELECT root, label, row_number() OVER (PARTITION BY root ORDER BY label) AS n
             FROM labels) ranked
         WHERE n <= $2 ORDER BY root, label",
        &[
            &ids,
            &i64::try_from(limit).unwrap_or(i64::MAX),
            &(MAX_REDIRECT_CHAIN as i32),
        ],
    )?;
    Ok(labels_by_id(ids, &rows))
}

/// [`inbound_labels_of`] one page.
pub(super) fn inbound_labels(
    query: impl FnMut(&str, &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>>,
    id: i64,
    limit: usize,
) -> Result<Vec<String>> {
    Ok(inbound_labels_of(query, &[id], limit)?
        .remove(&id)
        .unwrap_or_default())
}

/// Rows of (page id, label), in order, as each page's labels: every id of `ids` has an entry.
fn labels_by_id(ids: &[i64], rows: &[Row]) -> HashMap<i64, Vec<String>> {
    let mut labels: HashMap<i64, Vec<String>> = ids.iter().map(|&id| (id, Vec::new())).collect();
    for row in rows {
        labels.entry(row.get(0)).or_default().push(row.get(1));
    }
    labels
}

/// The indexed page each URL of `ids` stands for: itself, or the page its redirects lead to
/// ([`IndexedPage::through_redirects`]), `None` when none.
fn indexed_pages_for(
    db: &mut postgres::Client,
    ids: &[i64],
) -> Result<HashMap<i64, Option<IndexedPage>>> {
    // The steps of every chain, read a level at a time for all of them: as many statements
    // as the longest chain has steps, not one a step.
    let mut steps: HashMap<i64, Option<ChainStep>> = HashMap::new();
    let mut wanted: Vec<i64> = ids.to_vec();
    for _ in 0..=MAX_REDIRECT_CHAIN {
        wanted.sort_unstable();
        wanted.dedup();
        wanted.retain(|id| !steps.contains_key(id));
        if wanted.is_empty() {
            break;
        }
        for row in db.query(
            "SELECT id, url, in_index AND index_op IS NULL, redirect_to, status, mime,
                    content_hash IS NULL
             FROM urls WHERE id = ANY($1)",
            &[&wanted],
        )? {
            let step = ChainStep {
                url: row.get(1),
                indexed: row.get(2),
                redirect_to: row.get(3),
                status: row.get(4),
                mime: row.get(5),
                no_hash: row.get(6),
            };
            steps.insert(row.get(0), Some(step));
        }
        let read = std::mem::take(&mut wanted);
        for id in read {
            match steps.entry(id).or_insert(None) {
                Some(step) if !step.indexed && matches!(step.status, Some(30..=39)) => {
                    wanted.extend(step.redirect_to);
                }
                _ => {}
            }
        }
    }
    ids.iter()
        .map(|&id| {
            let page =
                IndexedPage::through_redirects(id, |id| Ok(steps.get(&id).cloned().flatten()))?;
            Ok((id, page))
        })
        .collect()
}

/// A page as the index holds it, from the columns `u.id, u.url, h.name, u.content_hash,
/// COALESCE(u.content_meta, u.mime), COALESCE(u.size, 0), COALESCE(u.fetched_at, 0)`.
fn indexed_content(r: &Row) -> IndexedContent {
    IndexedContent {
        id: r.get(0),
        url: r.get(1),
        host: r.get(2),
        content_hash: r.get(3),
        content_meta: r.get(4),
        size: count_of(r, 5),
        fetched_at: r.get(6),
    }
}

/// Takes [`SHARED_ROWS_LOCK`] for the rest of `tx`, in turn with the crawlers' marks and
/// forgets of anchor updates (the last statement of their batches): two deletes of overlapping
/// rows in different orders deadlock, and the database then ends one of them (seen in
/// `scripts/check-shared-crawl`).
fn in_turn_with_crawlers(tx: &mut postgres::Transaction<'_>) -> Result<()> {
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&SHARED_ROWS_LOCK])?;
    Ok(())
}

impl IndexLog for PgFrontier {
    /// Rows are locked in id order, as a crawler's release of its claims locks them (a
    /// deadlock between the two was seen in `scripts/check-shared-crawl`).
    fn assign_batch(&mut self, url_ids: &[i64], seq: u64) -> Result<()> {
        write(&self.link, |tx| {
            tx.execute(
                &format!(
                    "UPDATE urls SET batch = $2 WHERE {}",
                    locked_in_id_order("id = ANY($1) AND index_op IS NOT NULL")
                ),
                &[&url_ids, &(seq as i64)],
            )?;
            Ok(())
        })
    }

    /// Applies the index operations of commits up to `seq` (rows locked in id order).
    fn mark_committed(&mut self, seq: u64) -> Result<usize> {
        let confirmed = write(&self.link, |tx| {
            Ok(tx.execute(
                &format!(
                    "UPDATE urls SET in_index = (index_op = 'upsert'), index_op = NULL, batch = NULL
                     WHERE {}",
                    locked_in_id_order("index_op IS NOT NULL AND batch <= $1")
                ),
                &[&(seq as i64)],
            )?)
        })?;
        Ok(confirmed as usize)
    }

    /// A page of a capsule a live crawler leases waits (see [`HOLD_MAX_AGE`]): on a first
    /// crawl most links to it are on its capsule's pages fetched after it, and its document
    /// written at once was written again for them (13,109 anchor refreshes for 10,000 pages
    /// on the shared-crawl bench). A crawler that dies holds its capsules until its leases
    /// run out. `fetched_at` is by the crawler's clock, the lease by the database's. An
    /// operation already tagged with a commit (by a writer that died before committing it) is
    /// never held: the next commit of that number confirms every operation tagged with it, so
    /// it must be written again in that commit.
    fn pending_index_ops(&self, after: i64, limit: usize) -> Result<Vec<PendingOp>> {
        let rows = blocking(|| {
            self.db().query(
                &format!(
                    "SELECT u.id, u.url, h.name, u.content_hash, COALESCE(u.content_meta, u.mime),
                            COALESCE(u.size, 0), COALESCE(u.fetched_at, 0), u.index_op
                     FROM urls u JOIN hosts h ON h.id = u.host_id
                     WHERE u.index_op IS NOT NULL AND u.id > $1 AND NOT ({})
                     ORDER BY u.id LIMIT $2",
                    held_op("$3")
                ),
                &[&after, &(limit as i64), &(HOLD_MAX_AGE.as_secs() as i64)],
            )
        })?;
        Ok(rows
            .iter()
            .map(|r| PendingOp {
                op: IndexOp::parse(r.get(7)),
                page: indexed_content(r),
            })
            .collect())
    }

    fn held_index_ops(&self) -> Result<u64> {
        let row = blocking(|| {
            self.db().query_one(
                &format!(
                    "SELECT COUNT(*) FROM urls u JOIN hosts h ON h.id = u.host_id
                     WHERE u.index_op IS NOT NULL AND {}",
                    held_op("$1")
                ),
                &[&(HOLD_MAX_AGE.as_secs() as i64)],
            )
        })?;
        Ok(count_of(&row, 0))
    }

    /// Up to `limit` pages whose anchors changed, after `after`, with the indexed page each
    /// stands for. Each mark read is remembered for [`IndexLog::clear_anchor_updates`].
    fn anchor_updates(&self, after: i64, limit: usize) -> Result<Vec<AnchorUpdate>> {
        blocking(|| {
            let mut db = self.db();
            let ids = self.remember_marks(&db.query(
                "SELECT url_id, seq FROM anchor_updates WHERE url_id > $1
                 ORDER BY url_id LIMIT $2",
                &[&after, &(limit as i64)],
            )?);
            let mut pages = indexed_pages_for(&mut db, &ids)?;
            Ok(ids
                .into_iter()
                .map(|dirty_id| AnchorUpdate {
                    dirty_id,
                    page: pages.remove(&dirty_id).flatten(),
                })
                .collect())
        })
    }

    /// The pages of `ids` with an anchor update pending, their marks remembered for
    /// [`IndexLog::clear_anchor_updates`] as [`IndexLog::anchor_updates`] does.
    fn anchor_marks_of(&self, ids: &[i64]) -> Result<Vec<i64>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let rows = blocking(|| {
            self.db().query(
                "SELECT url_id, seq FROM anchor_updates WHERE url_id = ANY($1)",
                &[&ids],
            )
        })?;
        Ok(self.remember_marks(&rows))
    }

    /// Forgets these anchor updates as they were read: one a crawler marked again since (its
    /// labels changed after the writer read them) stays for the next round. An id never read
    /// is forgotten whatever its mark.
    fn clear_anchor_updates(&mut self, ids: &[i64]) -> Result<()> {
        let marks = self
            .anchor_marks
            .get_mut()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let seqs: Vec<Option<i64>> = ids.iter().map(|id| marks.remove(id)).collect();
        write(&self.link, |tx| {
            in_turn_with_crawlers(tx)?;
            tx.execute(
                "DELETE FROM anchor_updates a
                 USING unnest($1::BIGINT[], $2::BIGINT[]) AS c(url_id, seq)
                 WHERE a.url_id = c.url_id AND (c.seq IS NULL OR a.seq = c.seq)",
                &[&ids, &seqs],
            )?;
            Ok(())
        })
    }

    fn clear_all_anchor_updates(&mut self) -> Result<()> {
        self.anchor_marks
            .get_mut()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clear();
        write(&self.link, |tx| {
            in_turn_with_crawlers(tx)?;
            tx.execute("DELETE FROM anchor_updates", &[])?;
            Ok(())
        })
    }

    fn own_labels(&self, id: i64) -> Result<Vec<String>> {
        blocking(|| {
            self.column(
                "SELECT DISTINCT label COLLATE \"C\" FROM links WHERE source = $1 AND label != ''
                 ORDER BY 1",
                &[&id],
            )
        })
    }

    /// One statement for every page (the free [`inbound_labels_of`]).
    fn inbound_labels_of(&self, ids: &[i64], limit: usize) -> Result<HashMap<i64, Vec<String>>> {
        blocking(|| {
            let mut db = self.db();
            inbound_labels_of(|sql, params| Ok(db.query(sql, params)?), ids, limit)
        })
    }

    /// One statement for every page.
    fn own_labels_of(&self, ids: &[i64]) -> Result<HashMap<i64, Vec<String>>> {
        let rows = blocking(|| {
            self.db().query(
                "SELECT DISTINCT source, label COLLATE \"C\" FROM links
                 WHERE source = ANY($1) AND label != '' ORDER BY 1, 2",
                &[&ids],
            )
        })?;
        Ok(labels_by_id(ids, &rows))
    }

    fn inbound_labels(&self, id: i64, limit: usize) -> Result<Vec<String>> {
        blocking(|| {
            let mut db = self.db();
            inbound_labels(|sql, params| Ok(db.query(sql, params)?), id, limit)
        })
    }

    fn indexed_content(&self, after: i64, limit: usize) -> Result<Vec<IndexedContent>> {
        let rows = blocking(|| {
            self.db().query(
                "SELECT u.id, u.url, h.name, u.content_hash, COALESCE(u.content_meta, u.mime),
                        COALESCE(u.size, 0), COALESCE(u.fetched_at, 0)
                 FROM urls u JOIN hosts h ON h.id = u.host_id
                 WHERE u.in_index AND u.id > $1 ORDER BY u.id LIMIT $2",
                &[&after, &(limit as i64)],
            )
        })?;
        Ok(rows.iter().map(indexed_content).collect())
    }

    /// Takes pages out of the frontier's picture of the index (a rebuilt index lacks them).
    fn forget_indexed(&mut self, ids: &[i64], now: i64) -> Result<()> {
        write(&self.link, |tx| {
            tx.execute(
                "UPDATE urls SET in_index = FALSE, content_hash = NULL, due_at = $2,
                        state = CASE WHEN state = 'indexed' THEN 'new' ELSE state END
                 WHERE id = ANY($1)",
                &[&ids, &now],
            )?;
            tx.execute(
                "UPDATE hosts SET next_due = $1 WHERE id IN
                   (SELECT host_id FROM urls WHERE due_at = $1 AND NOT in_index)
                   AND (next_due IS NULL OR next_due > $1)",
                &[&now],
            )?;
            Ok(())
        })
    }

    /// The indexed pages and the links between them, resolved through redirects. Rows are
    /// streamed, not collected: at the end of a crawl the graph of the whole index is read.
    fn link_graph(&self) -> Result<LinkGraph> {
        blocking(|| {
            let mut rows = GraphRows::default();
            let mut db = self.db();
            let mut urls = db.query_raw(
                "SELECT u.id, u.in_index, u.url, h.name, u.alias_of,
                        CASE WHEN u.status BETWEEN 30 AND 39 THEN u.redirect_to END
                 FROM urls u JOIN hosts h ON h.id = u.host_id
                 WHERE u.in_index OR u.alias_of IS NOT NULL OR u.redirect_to IS NOT NULL
                 ORDER BY u.id",
                NO_PARAMS,
            )?;
            while let Some(row) = urls.next()? {
                let id: i64 = row.get(0);
                if row.get::<_, bool>(1) {
                    rows.page(id, row.get(2), row.get(3));
                } else if let Some(canonical) = row.get::<_, Option<i64>>(4) {
                    rows.stands_for(id, canonical);
                } else if let Some(target) = row.get::<_, Option<i64>>(5) {
                    rows.stands_for(id, target);
                }
            }
            drop(urls);
            rows.links_follow();
            let mut links = db.query_raw(
                "SELECT DISTINCT source, target FROM links ORDER BY source, target",
                NO_PARAMS,
            )?;
            while let Some(row) = links.next()? {
                if let (Some(source), Some(target)) =
                    (rows.page_of(row.get(0)), rows.page_of(row.get(1)))
                {
                    rows.add_link(source, target);
                }
            }
            Ok(rows.build())
        })
    }
}

impl PgFrontier {
    /// Remembers the anchor update marks of `rows` (URL id, mark) for
    /// [`IndexLog::clear_anchor_updates`], and returns their URL ids in order.
    fn remember_marks(&self, rows: &[Row]) -> Vec<i64> {
        let marks: Vec<(i64, i64)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
        self.anchor_marks
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .extend(marks.iter().copied());
        marks.into_iter().map(|(id, _)| id).collect()
    }
}
