//! Anchor updates: pages whose inbound link labels changed, found through redirect chains, and
//! the labels of links to and from a page, for rewriting their documents after a crawl.

use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};

use std::collections::BTreeSet;

use super::outlinks;
use super::{AnchorUpdate, IndexedPage, Result, SqliteFrontier, MAX_REDIRECT_CHAIN};

impl SqliteFrontier {
    /// Up to `limit` pages whose anchors changed, after the URL id `after`, each with the
    /// indexed page it stands for (if any): the URL itself when it is in the index, else the
    /// page its redirects lead to.
    pub fn anchor_updates(&self, after: i64, limit: usize) -> Result<Vec<AnchorUpdate>> {
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

    fn indexed_page_for(&self, mut id: i64) -> Result<Option<IndexedPage>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT url, in_index = 1 AND index_op IS NULL, redirect_to, status, mime,
                    content_hash IS NULL
             FROM urls WHERE id = ?1",
        )?;
        for _ in 0..=MAX_REDIRECT_CHAIN {
            let row = stmt
                .query_row([id], |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, bool>(1)?,
                        r.get::<_, Option<i64>>(2)?,
                        r.get::<_, Option<i64>>(3)?,
                        r.get::<_, Option<String>>(4)?,
                        r.get::<_, bool>(5)?,
                    ))
                })
                .optional()?;
            let Some((url, indexed, redirect_to, status, mime, no_hash)) = row else {
                return Ok(None);
            };
            if indexed {
                let header_only = no_hash
                    && !mime
                        .as_deref()
                        .is_some_and(|m| m.to_ascii_lowercase().starts_with("text/"));
                return Ok(Some(IndexedPage {
                    id,
                    url,
                    mime,
                    header_only,
                }));
            }
            // Only a permanent redirect hands its inbound labels on (see REDIRECT_CHAIN).
            match (status, redirect_to) {
                (Some(30..=39), Some(next)) => id = next,
                _ => return Ok(None),
            }
        }
        Ok(None)
    }

    /// Forgets anchor updates once the documents they asked for are committed.
    pub fn clear_anchor_updates(&mut self, ids: &[i64]) -> Result<()> {
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
    pub fn clear_all_anchor_updates(&mut self) -> Result<()> {
        self.conn.execute("DELETE FROM anchor_updates", [])?;
        Ok(())
    }

    /// The labels of the links on a page (its own, not those pointing to it), distinct.
    pub fn own_labels(&self, id: i64) -> Result<Vec<String>> {
        let labels: BTreeSet<String> = outlinks::read(&self.conn, id)?
            .into_iter()
            .filter_map(|(_, label)| (!label.is_empty()).then_some(label))
            .collect();
        Ok(labels.into_iter().collect())
    }

    /// The distinct labels of the links that point to a URL, or to a URL that redirects to it
    /// (`=> /book The Book` names `/book/`), at most `limit` of them, from pages that are not
    /// being removed.
    pub fn inbound_labels(&self, id: i64, limit: usize) -> Result<Vec<String>> {
        inbound_labels(&self.conn, id, limit)
    }
}

/// The distinct labels of the links to URL `?1`, at most `?2`, read on a prefix of the primary
/// key of `links`.
pub(super) const INBOUND_LABELS: &str =
    "SELECT DISTINCT label FROM links WHERE target = ?1 AND label != '' ORDER BY label LIMIT ?2";

pub(super) fn inbound_labels(conn: &Connection, id: i64, limit: usize) -> Result<Vec<String>> {
    // The chain is walked here, a level at a time, rather than in a recursive CTE: SQLite
    // prepared that statement again at every step, which cost more than the query itself
    // (a sixth of the crawl loop's time, by perf). Almost every page is a chain of one.
    let mut chain = BTreeSet::from([id]);
    let mut level = vec![id];
    let mut sources = conn.prepare_cached("SELECT id FROM urls WHERE redirect_to = ?1")?;
    for _ in 0..MAX_REDIRECT_CHAIN {
        let mut next = Vec::new();
        for target in &level {
            for source in sources.query_map([target], |r| r.get::<_, i64>(0))? {
                let source = source?;
                if chain.insert(source) {
                    next.push(source);
                }
            }
        }
        if next.is_empty() {
            break;
        }
        level = next;
    }
    let mut labels = conn.prepare_cached(INBOUND_LABELS)?;
    let sql_limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let mut found = BTreeSet::new();
    for target in chain {
        for label in labels.query_map(params![target, sql_limit], |r| r.get::<_, String>(0))? {
            found.insert(label?);
        }
    }
    Ok(found.into_iter().take(limit).collect())
}
