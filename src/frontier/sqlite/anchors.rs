//! Anchor updates: pages whose inbound link labels changed, found through redirect chains, and
//! the labels of links to and from a page, for rewriting their documents after a crawl.

use rusqlite::{params, Connection, OptionalExtension};

use std::collections::BTreeSet;

use super::{IndexedPage, Result, SqliteFrontier, MAX_REDIRECT_CHAIN};
use crate::frontier::types::ChainStep;

impl SqliteFrontier {
    pub(super) fn indexed_page_for(&self, id: i64) -> Result<Option<IndexedPage>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT url, in_index = 1 AND index_op IS NULL, redirect_to, status, mime,
                    content_hash IS NULL
             FROM urls WHERE id = ?1",
        )?;
        IndexedPage::through_redirects(id, |id| {
            let step = stmt.query_row([id], |r| {
                Ok(ChainStep {
                    url: r.get(0)?,
                    indexed: r.get(1)?,
                    redirect_to: r.get(2)?,
                    status: r.get(3)?,
                    mime: r.get(4)?,
                    no_hash: r.get(5)?,
                })
            });
            Ok(step.optional()?)
        })
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
