//! Handing due work to a crawl: capsules are leased whole, and a leased capsule's due URLs are
//! claimed a few at a time in priority order (hubs, then new URLs and revisits taking turns).
//!
//! Three claim marks (`urls.claimed`): 0 free, 1 claimed (in the crawl's memory), 2 visited in
//! this run. Capsules are marked too (`hosts.claimed`): 1 leased, 2 passed over in this run
//! (out of its `--allow-host` scope). Only free URLs are in the `urls_due` index, so a URL visited in a run is never
//! claimed again in it, and every query here is a range scan of that index or of `hosts_due`:
//! the cost of a claim does not depend on how many URLs are known. `hosts.next_due` is kept
//! early, never late: it is lowered whenever a free URL of the capsule comes due sooner, and
//! recomputed when the capsule is let go. At the end of a run (or in recovery after a crash)
//! every mark and lease is let go.

use rusqlite::{params, Row};

use super::rows::status_at;
use super::{Canonical, Prior, QueuedUrl, Result, UrlState};
use crate::frontier::claim_order;
use crate::revisit::Priority;

/// The columns a claim reads, for [`queued_url`].
pub(super) const CLAIM_COLUMNS: &str = "u.id, u.url, u.host_id, h.name, u.depth, u.hops,
       a.id, a.url, ah.name, a.in_index,
       u.state, u.in_index, u.content_hash, u.mime, u.meta, u.status, u.revisit_secs,
       u.first_failed_at, u.attempts, u.fetched_at IS NOT NULL, u.feed, u.etag,
       u.last_modified";

pub(super) fn queued_url(r: &Row<'_>) -> rusqlite::Result<QueuedUrl> {
    Ok(QueuedUrl {
        id: r.get(0)?,
        url: r.get(1)?,
        host_id: r.get(2)?,
        host: r.get(3)?,
        depth: r.get(4)?,
        hops: r.get(5)?,
        canonical: match (r.get(6)?, r.get(7)?, r.get(8)?) {
            (Some(id), Some(url), Some(host)) => Some(Canonical {
                id,
                url,
                host,
                in_index: r.get::<_, Option<bool>>(9)?.unwrap_or(false),
            }),
            _ => None,
        },
        prior: Prior {
            state: Some(UrlState::parse(&r.get::<_, String>(10)?)),
            in_index: r.get(11)?,
            content_hash: r.get(12)?,
            mime: r.get(13)?,
            meta: r.get(14)?,
            status: status_at(r, 15)?,
            revisit_secs: r.get(16)?,
            first_failed_at: r.get(17)?,
            attempts: r.get::<_, i64>(18)?.clamp(0, u32::MAX as i64) as u32,
            visited: r.get(19)?,
            feed: r.get(20)?,
            etag: r.get(21)?,
            last_modified: r.get(22)?,
        },
    })
}

/// The earliest due time of a capsule's free URLs (one index seek per priority).
pub(super) const HOST_NEXT_DUE: &str = "SELECT MIN(d) FROM (
       SELECT MIN(due_at) AS d FROM urls
       WHERE host_id = ?1 AND prio = 0 AND claimed = 0 AND due_at IS NOT NULL
     UNION ALL
       SELECT MIN(due_at) FROM urls
       WHERE host_id = ?1 AND prio = 1 AND claimed = 0 AND due_at IS NOT NULL
     UNION ALL
       SELECT MIN(due_at) FROM urls
       WHERE host_id = ?1 AND prio = 2 AND claimed = 0 AND due_at IS NOT NULL)";

/// Claims up to `n` due URLs of one capsule: hubs first, then new URLs and revisits in turn.
pub(super) fn claim_from(
    tx: &rusqlite::Transaction<'_>,
    host_id: i64,
    n: usize,
    now: i64,
) -> Result<Vec<QueuedUrl>> {
    let mut select = tx.prepare_cached(&format!(
        "SELECT {CLAIM_COLUMNS}
         FROM urls u JOIN hosts h ON h.id = u.host_id
         LEFT JOIN urls a ON a.id = u.alias_of
         LEFT JOIN hosts ah ON ah.id = a.host_id
         WHERE u.host_id = ?1 AND u.prio = ?2 AND u.claimed = 0
           AND u.due_at IS NOT NULL AND u.due_at <= ?3
         ORDER BY u.due_at, u.id LIMIT ?4"
    ))?;
    let take = |prio: Priority, limit: usize| -> Result<Vec<QueuedUrl>> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let rows =
            select.query_map(params![host_id, prio as i64, now, limit as i64], queued_url)?;
        Ok(rows.collect::<std::result::Result<_, _>>()?)
    };
    let urls = claim_order(n, take)?;
    let mut mark = tx.prepare_cached("UPDATE urls SET claimed = 1 WHERE id = ?1")?;
    for url in &urls {
        mark.execute([url.id])?;
    }
    Ok(urls)
}

pub(super) fn release(tx: &rusqlite::Transaction<'_>, host_id: i64) -> Result<()> {
    tx.prepare_cached("UPDATE hosts SET claimed = 0 WHERE id = ?1")?
        .execute([host_id])?;
    refresh_next_due(tx, host_id)
}

pub(super) fn refresh_next_due(tx: &rusqlite::Transaction<'_>, host_id: i64) -> Result<()> {
    tx.prepare_cached(&format!(
        "UPDATE hosts SET next_due = ({HOST_NEXT_DUE}) WHERE id = ?1"
    ))?
    .execute([host_id])?;
    Ok(())
}

/// URLs [`release_all`] lets go of in one statement.
pub(super) const RELEASE_CHUNK: i64 = 2_000;

/// Lets go of `?1` claimed or visited URLs, found on the `urls_claimed` index.
pub(super) const RELEASE_URLS: &str = "UPDATE urls SET claimed = 0
     WHERE id IN (SELECT id FROM urls WHERE claimed != 0 LIMIT ?1)";

/// Lets go of every claim, visit mark and lease, and recomputes the next due time of the
/// capsules concerned.
pub(super) fn release_all(tx: &rusqlite::Transaction<'_>) -> Result<()> {
    let hosts: Vec<i64> = {
        let mut stmt = tx.prepare(
            "SELECT DISTINCT host_id FROM urls WHERE claimed != 0
             UNION SELECT id FROM hosts WHERE claimed != 0",
        )?;
        let rows = stmt.query_map([], |r| r.get(0))?;
        rows.collect::<std::result::Result<_, _>>()?
    };
    // A few thousand URLs a statement: SQLite keeps, for each statement, the prior image of
    // every page it changes (its statement journal, in memory here: `temp_store`), and one
    // statement over all the URLs a run visited held 230 MB for 830,000 of them.
    let mut release = tx.prepare_cached(RELEASE_URLS)?;
    while release.execute([RELEASE_CHUNK])? > 0 {}
    tx.execute("UPDATE hosts SET claimed = 0 WHERE claimed != 0", [])?;
    for host_id in hosts {
        refresh_next_due(tx, host_id)?;
    }
    Ok(())
}
