//! The statements that hand due work to the crawlers sharing the database, as free functions
//! on a transaction, for the claims and leases of `crawl.rs`: capsules of the crawler's own
//! shards are leased whole (only a shard's owner claims there, so no lock is taken), and a
//! leased capsule's due URLs are claimed a few at a time in priority order (hubs, then new URLs
//! and revisits taking turns), as in the SQLite store.
//!
//! Marks are those of SQLite with a holder: `urls.claimed` 0 free, 1 claimed by `claimed_by`,
//! 2 visited by it in its run; `hosts.claimed` 1 leased by `leased_by` until `leased_until`
//! (the database's clock). A capsule whose holder stopped renewing is taken over with its
//! shard (`shard.rs`), with the URLs its dead holder had claimed or visited. Capsules out of a crawler's scope are
//! passed over in its memory only.

use std::sync::LazyLock;

use postgres::types::ToSql;
use postgres::{Client, GenericClient, Row};

use super::batch::Prepared;
use super::{Result, DB_NOW};
use crate::frontier::{Canonical, Prior, QueuedUrl, UrlState};
use crate::revisit::Priority;

/// The columns a claim reads, for [`queued_url`].
pub(super) const CLAIM_COLUMNS: &str = "u.id, u.url, u.host_id, h.name, u.depth, u.hops,
       a.id, a.url, ah.name, a.in_index,
       u.state, u.in_index, u.content_hash, u.mime, u.meta, u.status, u.revisit_secs,
       u.first_failed_at, u.attempts, u.fetched_at IS NOT NULL, u.feed, u.etag,
       u.last_modified";

/// A claimed URL, from a row of [`CLAIM_COLUMNS`].
pub(super) fn queued_url(r: &Row) -> QueuedUrl {
    QueuedUrl {
        id: r.get(0),
        url: r.get(1),
        host_id: r.get(2),
        host: r.get(3),
        depth: r.get::<_, i64>(4).clamp(0, u32::MAX as i64) as u32,
        hops: r.get::<_, i64>(5).clamp(0, u32::MAX as i64) as u32,
        canonical: match (r.get(6), r.get(7), r.get(8)) {
            (Some(id), Some(url), Some(host)) => Some(Canonical {
                id,
                url,
                host,
                in_index: r.get::<_, Option<bool>>(9).unwrap_or(false),
            }),
            _ => None,
        },
        prior: Prior {
            state: Some(UrlState::parse(r.get(10))),
            in_index: r.get(11),
            content_hash: r.get(12),
            mime: r.get(13),
            meta: r.get(14),
            status: super::status_of(r, 15),
            revisit_secs: r.get(16),
            first_failed_at: r.get(17),
            attempts: r.get::<_, i64>(18).clamp(0, u32::MAX as i64) as u32,
            visited: r.get(19),
            feed: r.get(20),
            etag: r.get(21),
            last_modified: r.get(22),
        },
    }
}

/// The earliest due time of the free URLs of the capsule whose id is `host` (an SQL
/// expression): one index seek per priority.
pub(super) fn host_next_due(host: &str) -> String {
    let one = |prio: u8| {
        format!(
            "SELECT MIN(due_at) AS d FROM urls
             WHERE host_id = {host} AND prio = {prio} AND claimed = 0 AND due_at IS NOT NULL"
        )
    };
    let each: Vec<String> = Priority::ALL.iter().map(|&p| one(p as u8)).collect();
    format!("SELECT MIN(d) FROM ({}) AS m", each.join(" UNION ALL "))
}

/// Claims up to `$4` URLs of each capsule of `$1` (ids) due at `$3` for crawler `$2`, in one
/// statement, in the order of [`claim_order`](crate::frontier::claim_order): hubs first, then
/// new URLs and revisits in turn (each priority's first `$4` by due time and id, one index
/// seek each, ranked within their priority, then all of them by rank). When `held`, only
/// capsules the crawler leases, whose lease it renews for `$5` seconds. Returns the claimed
/// URLs as [`CLAIM_COLUMNS`], capsule by capsule in the order of `$1`, each in claim order.
fn claim_sql(held: bool) -> String {
    let capsules = if held {
        format!(
            "renewed AS (
                 UPDATE hosts SET leased_until = {DB_NOW} + $5
                 WHERE id = ANY($1) AND claimed = 1 AND leased_by = $2 RETURNING id),
             capsules AS (
                 SELECT DISTINCT ON (id) id, ord
                 FROM unnest($1::BIGINT[]) WITH ORDINALITY AS c(id, ord)
                 WHERE id IN (SELECT id FROM renewed)
                 ORDER BY id, ord)"
        )
    } else {
        "capsules AS (
             SELECT DISTINCT ON (id) id, ord
             FROM unnest($1::BIGINT[]) WITH ORDINALITY AS c(id, ord) ORDER BY id, ord)"
            .to_string()
    };
    format!(
        "WITH {capsules},
         firsts AS (
             SELECT c.id AS host_id, c.ord, p.prio, x.id, x.due_at
             FROM capsules c
             CROSS JOIN unnest(ARRAY[{hub}, {fresh}, {revisit}]::BIGINT[]) AS p(prio)
             CROSS JOIN LATERAL (
                 SELECT u.id, u.due_at FROM urls u
                 WHERE u.host_id = c.id AND u.prio = p.prio AND u.claimed = 0
                   AND u.due_at IS NOT NULL AND u.due_at <= $3
                 ORDER BY u.due_at, u.id LIMIT $4) x),
         ranked AS (
             SELECT ord, id, prio,
                    row_number() OVER (PARTITION BY ord, prio ORDER BY due_at, id) AS rank
             FROM firsts),
         ordered AS (
             SELECT ord, id,
                    row_number() OVER (PARTITION BY ord ORDER BY prio <> {hub}, rank, prio)
                        AS k
             FROM ranked),
         picked AS (SELECT ord, id, k FROM ordered WHERE k <= $4),
         marked AS (
             UPDATE urls SET claimed = 1, claimed_by = $2 FROM picked
             WHERE urls.id = picked.id RETURNING urls.id)
         SELECT {CLAIM_COLUMNS}
         FROM picked p JOIN urls u ON u.id = p.id JOIN hosts h ON h.id = u.host_id
         LEFT JOIN urls a ON a.id = u.alias_of
         LEFT JOIN hosts ah ON ah.id = a.host_id
         WHERE p.id IN (SELECT id FROM marked)
         ORDER BY p.ord, p.k",
        hub = Priority::Hub as i64,
        fresh = Priority::Fresh as i64,
        revisit = Priority::Revisit as i64,
    )
}

/// Claims up to `n` due URLs of each of these capsules (see [`claim_sql`]) in one statement,
/// for a claim that leases them in the same transaction. The URLs come capsule by capsule in
/// the order given, each capsule's in claim order.
pub(super) fn claim_from(
    tx: &mut impl GenericClient,
    crawler: &str,
    host_ids: &[i64],
    n: usize,
    now: i64,
) -> Result<Vec<QueuedUrl>> {
    let rows = tx.query(&claim_sql(false), &[&host_ids, &crawler, &now, &(n as i64)])?;
    Ok(rows.iter().map(queued_url).collect())
}

/// The statement of [`claim_held`].
static CLAIM_HELD: LazyLock<String> = LazyLock::new(|| claim_sql(true));

/// Claims up to `n` more due URLs of each of these capsules `crawler` leases, renewing their
/// leases for `lease_secs`, in one statement (nothing of a capsule another holds), prepared
/// once on the connection among its `statements`: the crawl runs it every few rounds, and
/// sent as text it was parsed and planned each time (2 ms of the database's time a call, a
/// third of it planning). The URLs come capsule by capsule in the order given, each
/// capsule's in claim order.
pub(super) fn claim_held(
    db: &mut Client,
    statements: &mut Prepared,
    crawler: &str,
    lease_secs: i64,
    host_ids: &[i64],
    n: usize,
    now: i64,
) -> Result<Vec<QueuedUrl>> {
    let statement = statements.get(db, &CLAIM_HELD)?;
    let rows = db.query(
        &statement,
        &[&host_ids, &crawler, &now, &(n as i64), &lease_secs],
    )?;
    Ok(rows.iter().map(queued_url).collect())
}

/// Marks URLs claimed by `crawler`.
pub(super) fn mark(tx: &mut impl GenericClient, crawler: &str, ids: &[i64]) -> Result<()> {
    if !ids.is_empty() {
        tx.execute(
            "UPDATE urls SET claimed = 1, claimed_by = $2 WHERE id = ANY($1)",
            &[&ids, &crawler],
        )?;
    }
    Ok(())
}

/// Lets go of the capsules of `host_ids` that `crawler` holds, in one statement: each is
/// claimable again when its next URL is due.
pub(super) fn release(tx: &mut impl GenericClient, crawler: &str, host_ids: &[i64]) -> Result<()> {
    if host_ids.is_empty() {
        return Ok(());
    }
    tx.execute(
        &format!(
            "UPDATE hosts SET {} WHERE id = ANY($1) AND claimed != 0 AND leased_by = $2",
            freed("hosts.id")
        ),
        &[&host_ids, &crawler],
    )?;
    Ok(())
}

/// Frees a capsule and sets its next due time right.
pub(super) fn free_host(tx: &mut impl GenericClient, host_id: i64) -> Result<()> {
    tx.execute(
        &format!("UPDATE hosts SET {} WHERE id = $1", freed("$1")),
        &[&host_id],
    )?;
    Ok(())
}

/// The condition that the crawler named by `crawler` (an SQL expression) is alive: its
/// heartbeat has not run out.
pub(super) fn crawler_alive(crawler: &str) -> String {
    format!(
        "EXISTS (SELECT 1 FROM crawlers c WHERE c.id = {crawler}
                   AND c.seen_at + c.lease_secs >= {DB_NOW})"
    )
}

/// The `SET` list that frees the capsule whose id is `host` (an SQL expression): no lease, and
/// its next due time from its free URLs.
pub(super) fn freed(host: &str) -> String {
    format!(
        "claimed = 0, leased_by = NULL, leased_until = NULL, next_due = ({})",
        host_next_due(host)
    )
}

/// Lets go of what nobody holds any more: the claims, visit marks and leases of crawlers that
/// stopped renewing (dead, or ended without `end_run`), and leases that ran out. Set-based:
/// URLs are locked in id order, then capsules, the order of every release and adoption.
pub(super) fn release_expired(tx: &mut impl GenericClient) -> Result<()> {
    let dead: Vec<String> = tx
        .query(
            &format!("DELETE FROM crawlers WHERE seen_at + lease_secs < {DB_NOW} RETURNING id"),
            &[],
        )?
        .iter()
        .map(|r| r.get(0))
        .collect();
    // Capsules nobody alive leases, each with the crawler that held it: their claims by that
    // crawler, or by one no longer alive, go; elsewhere, only the dead's.
    let (lapsed, holders): (Vec<i64>, Vec<Option<String>>) = tx
        .query(
            &format!(
                "SELECT id, leased_by FROM hosts
                 WHERE claimed != 0 AND (leased_until < {DB_NOW} OR leased_by = ANY($1))"
            ),
            &[&dead],
        )?
        .iter()
        .map(|r| (r.get::<_, i64>(0), r.get::<_, Option<String>>(1)))
        .unzip();
    if dead.is_empty() && lapsed.is_empty() {
        return Ok(());
    }
    // The condition is checked again on a URL's latest row once it is locked: a crawler that
    // took the capsule over and claimed the URL after this transaction read the capsule (its
    // claim committed meanwhile) keeps its claim. Read from the capsule's row alone, the old
    // lease had every claim let go, that crawler's too, which then claimed the URL again and
    // fetched it twice (`scripts/check-shared-crawl`, one run of 50).
    let touched = let_go(
        tx,
        &format!(
            "claimed != 0 AND (claimed_by = ANY($1)
                OR (host_id = ANY($2)
                    AND (EXISTS (SELECT 1 FROM unnest($2::BIGINT[], $3::TEXT[]) AS l(host, holder)
                                 WHERE l.host = urls.host_id
                                   AND (l.holder IS NULL OR l.holder = urls.claimed_by))
                         OR NOT {alive})))",
            alive = crawler_alive("urls.claimed_by")
        ),
        &[&dead, &lapsed, &holders],
    )?;
    if !lapsed.is_empty() {
        tracing::info!(
            capsules = lapsed.len(),
            crawlers_gone = dead.len(),
            "taking over capsules whose lease ran out"
        );
    }
    let mut hosts = lapsed;
    hosts.extend(touched);
    hosts.sort_unstable();
    hosts.dedup();
    // No crawler of its own: only capsules nobody alive leases are freed.
    settle_hosts(tx, "", &hosts)
}

/// Lets go of `crawler`'s claims on the capsules of `host_ids`, which it lost (its queue of
/// them is dropped): the crawler that holds them now claims them, and a crawler about to end
/// does not wait for this one's end to see them free. Visit marks stay (no second fetch in
/// this run).
pub(super) fn give_back_claims(
    tx: &mut impl GenericClient,
    crawler: &str,
    host_ids: &[i64],
) -> Result<()> {
    let hosts = let_go(
        tx,
        "host_id = ANY($1) AND claimed = 1 AND claimed_by = $2",
        &[&host_ids, &crawler],
    )?;
    settle_hosts(tx, crawler, &hosts)
}

/// The condition, for an `UPDATE urls`, that a URL is one of those matching `condition` (on
/// `urls`), their rows locked in id order first, as every bulk change of URLs locks them (two
/// that lock in different orders deadlock). The update then looks the locked rows up by id:
/// joined to them instead, it was planned as a hash of the whole table while the table was
/// small (`scripts/bench-shared-crawl`, 10,000 pages: 9,865 rows read for 250 written; a
/// million rows are joined by index either way).
pub(super) fn locked_in_id_order(condition: &str) -> String {
    format!("id = ANY(ARRAY(SELECT id FROM urls WHERE {condition} ORDER BY id FOR UPDATE))")
}

/// Lets go of the claims and visit marks of the URLs matching `condition` (on `urls`, with its
/// parameters `params`), locked in id order ([`locked_in_id_order`]). Returns their capsules,
/// in order, each once.
pub(super) fn let_go(
    tx: &mut impl GenericClient,
    condition: &str,
    params: &[&(dyn ToSql + Sync)],
) -> Result<Vec<i64>> {
    let mut hosts: Vec<i64> = tx
        .query(
            &format!(
                "UPDATE urls SET claimed = 0, claimed_by = NULL WHERE {}
                 RETURNING host_id",
                locked_in_id_order(condition)
            ),
            params,
        )?
        .iter()
        .map(|r| r.get(0))
        .collect();
    hosts.sort_unstable();
    hosts.dedup();
    Ok(hosts)
}

/// Sets right the capsules of `host_ids` after claims on them were let go: one this crawler
/// leases, or nobody alive does (no lease, or one that ran out), is freed with its next due
/// time from its free URLs; one another crawler leases stays its (it claims the URLs let go).
pub(super) fn settle_hosts(
    tx: &mut impl GenericClient,
    crawler: &str,
    host_ids: &[i64],
) -> Result<()> {
    if host_ids.is_empty() {
        return Ok(());
    }
    tx.execute(
        &format!(
            "UPDATE hosts SET {} WHERE id = ANY($1)
               AND (claimed = 0 OR leased_by = $2 OR leased_by IS NULL
                    OR leased_until < {DB_NOW}
                    OR NOT {alive})",
            freed("hosts.id"),
            alive = crawler_alive("hosts.leased_by")
        ),
        &[&host_ids, &crawler],
    )?;
    Ok(())
}
