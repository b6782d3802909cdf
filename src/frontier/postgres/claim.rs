//! Handing due work to the crawlers that share the database: capsules are leased whole, with
//! `FOR UPDATE SKIP LOCKED` so that crawlers claiming at once pass each other by, and a leased
//! capsule's due URLs are claimed a few at a time in priority order (hubs, then new URLs and
//! revisits taking turns), as in the SQLite store.
//!
//! Marks are those of SQLite with a holder: `urls.claimed` 0 free, 1 claimed by `claimed_by`,
//! 2 visited by it in its run; `hosts.claimed` 1 leased by `leased_by` until `leased_until`
//! (the database's clock). A lease that ran out is free for anyone: the capsule is taken over
//! with the URLs its dead holder had claimed or visited. Capsules out of a crawler's scope are
//! passed over in its memory only.

use std::time::Duration;

use postgres::{GenericClient, Row};

use super::{lock, write_tx, PgFrontier, Result, DB_NOW, DB_NOW_MS};
use crate::frontier::{Canonical, Prior, QueuedUrl, Standing, UrlState};
use crate::revisit::Priority;

/// The columns a claim reads, for [`queued_url`].
const CLAIM_COLUMNS: &str = "u.id, u.url, u.host_id, h.name, u.depth, u.hops,
       a.id, a.url, ah.name, a.in_index,
       u.state, u.in_index, u.content_hash, u.mime, u.meta, u.status, u.revisit_secs,
       u.first_failed_at, u.attempts, u.fetched_at IS NOT NULL, u.feed, u.etag,
       u.last_modified";

fn queued_url(r: &Row) -> QueuedUrl {
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

/// The earliest due time of a capsule's free URLs (one index seek per priority).
const HOST_NEXT_DUE: &str = "SELECT MIN(d) FROM (
       SELECT MIN(due_at) AS d FROM urls
       WHERE host_id = $1 AND prio = 0 AND claimed = 0 AND due_at IS NOT NULL
     UNION ALL
       SELECT MIN(due_at) FROM urls
       WHERE host_id = $1 AND prio = 1 AND claimed = 0 AND due_at IS NOT NULL
     UNION ALL
       SELECT MIN(due_at) FROM urls
       WHERE host_id = $1 AND prio = 2 AND claimed = 0 AND due_at IS NOT NULL) AS m";

impl PgFrontier {
    /// Leases up to `capsules` capsules with work due at `now` and claims up to `per_capsule`
    /// URLs of each (see [`crate::frontier::Frontier::claim_capsules`]). Capsules leased by
    /// others are skipped while their lease runs, and taken over once it has run out.
    pub fn claim_capsules(
        &mut self,
        capsules: usize,
        per_capsule: usize,
        now: i64,
        permits: &(dyn Fn(&str) -> bool + Sync),
    ) -> Result<(Vec<QueuedUrl>, usize)> {
        let mut conn = lock(&self.conn);
        let mut tx = write_tx(&mut conn)?;
        let hosts = tx.query(
            &format!(
                "SELECT id, name, claimed, leased_by = $4 FROM hosts
                 WHERE next_due IS NOT NULL AND next_due <= $1
                   AND (backoff_until IS NULL OR backoff_until <= $1)
                   AND (claimed = 0 OR leased_until < {DB_NOW})
                   AND id <> ALL($3)
                 ORDER BY next_due, id LIMIT $2
                 FOR UPDATE SKIP LOCKED"
            ),
            &[&now, &(capsules as i64), &self.passed_over, &self.crawler],
        )?;
        let examined = hosts.len();
        let mut claimed = Vec::new();
        for row in hosts {
            let (host_id, name, held): (i64, String, i64) = (row.get(0), row.get(1), row.get(2));
            // This crawler's own lease that ran out (it was slow to renew it) is simply taken
            // again: the URLs it claimed are still in its queue, and claiming them afresh
            // would fetch them twice.
            let own = row.get::<_, Option<bool>>(3).unwrap_or(false);
            if held != 0 && !own {
                // A lease that ran out: its holder stopped renewing it (it died). Its claims
                // and visit marks go with it.
                tracing::info!(capsule = %name, "taking over a capsule whose lease ran out");
                tx.execute(
                    "UPDATE urls SET claimed = 0, claimed_by = NULL
                     WHERE host_id = $1 AND claimed != 0",
                    &[&host_id],
                )?;
                tx.execute(
                    &format!("UPDATE hosts SET next_due = ({HOST_NEXT_DUE}) WHERE id = $1"),
                    &[&host_id],
                )?;
            }
            if !permits(&name) {
                self.passed_over.push(host_id);
                continue;
            }
            let urls = claim_from(&mut tx, &self.crawler, host_id, per_capsule, now)?;
            if urls.is_empty() {
                free_host(&mut tx, host_id)?;
            } else {
                tx.execute(
                    &format!(
                        "UPDATE hosts SET claimed = 1, leased_by = $2,
                                leased_until = {DB_NOW} + $3
                         WHERE id = $1"
                    ),
                    &[&host_id, &self.crawler, &self.lease_secs],
                )?;
                claimed.extend(urls);
            }
        }
        tx.commit()?;
        Ok((claimed, examined))
    }

    /// Claims up to `n` more due URLs of a capsule this crawler leases, renewing the lease.
    /// Nothing comes back for a capsule whose lease this crawler lost.
    pub fn claim_more(&mut self, host_id: i64, n: usize, now: i64) -> Result<Vec<QueuedUrl>> {
        let mut conn = lock(&self.conn);
        let mut tx = write_tx(&mut conn)?;
        let held = tx.execute(
            &format!(
                "UPDATE hosts SET leased_until = {DB_NOW} + $3
                 WHERE id = $1 AND claimed = 1 AND leased_by = $2"
            ),
            &[&host_id, &self.crawler, &self.lease_secs],
        )?;
        let urls = if held == 1 {
            claim_from(&mut tx, &self.crawler, host_id, n, now)?
        } else {
            Vec::new()
        };
        tx.commit()?;
        Ok(urls)
    }

    /// Claims these URLs, if they are free and due and their capsule is leased by this
    /// crawler.
    pub fn claim_ids(&mut self, ids: &[i64], now: i64) -> Result<Vec<QueuedUrl>> {
        let mut conn = lock(&self.conn);
        let mut tx = write_tx(&mut conn)?;
        let rows = tx.query(
            &format!(
                "SELECT {CLAIM_COLUMNS}
                 FROM urls u JOIN hosts h ON h.id = u.host_id
                 LEFT JOIN urls a ON a.id = u.alias_of
                 LEFT JOIN hosts ah ON ah.id = a.host_id
                 WHERE u.id = ANY($1) AND u.claimed = 0 AND u.due_at IS NOT NULL
                   AND u.due_at <= $2 AND h.claimed = 1 AND h.leased_by = $3
                 ORDER BY u.id
                 FOR UPDATE OF u SKIP LOCKED"
            ),
            &[&ids, &now, &self.crawler],
        )?;
        let urls: Vec<QueuedUrl> = rows.iter().map(queued_url).collect();
        let claimed: Vec<i64> = urls.iter().map(|u| u.id).collect();
        mark(&mut tx, &self.crawler, &claimed)?;
        tx.commit()?;
        Ok(urls)
    }

    /// Lets go of a capsule this crawler leased.
    pub fn release_capsule(&mut self, host_id: i64) -> Result<()> {
        let mut conn = lock(&self.conn);
        let mut tx = write_tx(&mut conn)?;
        release(&mut tx, &self.crawler, host_id)?;
        tx.commit()?;
        Ok(())
    }

    /// Leases an IP address for this crawler unless another crawler's lease on it still runs;
    /// with the lease comes how long to wait before the first request to it (what the crawler
    /// that held it last asked for, on the database's clock).
    pub fn lease_address(&mut self, ip: &str) -> Result<Option<Duration>> {
        let got = self.db().query_opt(
            &format!(
                "INSERT INTO addresses(ip, leased_by, leased_until) VALUES ($1, $2, {DB_NOW} + $3)
                 ON CONFLICT (ip) DO UPDATE
                   SET leased_by = excluded.leased_by, leased_until = excluded.leased_until
                   WHERE addresses.leased_by = excluded.leased_by
                      OR addresses.leased_until < {DB_NOW}
                 RETURNING GREATEST(COALESCE(next_at_ms, 0) - {DB_NOW_MS}, 0)"
            ),
            &[&ip, &self.crawler, &self.lease_secs],
        )?;
        Ok(got.map(|row| Duration::from_millis(row.get::<_, i64>(0).max(0) as u64)))
    }

    /// Lets go of an address this crawler leased: whoever leases it next waits out the gap
    /// recorded with it (`next_at_ms`).
    pub fn release_address(&mut self, ip: &str) -> Result<()> {
        self.db().execute(
            "UPDATE addresses SET leased_until = 0 WHERE ip = $1 AND leased_by = $2",
            &[&ip, &self.crawler],
        )?;
        Ok(())
    }

    /// What earlier runs learned of a capsule's value (see `crawl::budget`).
    pub fn capsule_standing(&self, host_id: i64) -> Result<Standing> {
        let row = lock(&self.conn).query_opt(
            "SELECT pages, linkers FROM hosts WHERE id = $1",
            &[&host_id],
        )?;
        Ok(row.map_or_else(Standing::default, |r| Standing {
            pages: r.get::<_, i64>(0).max(0) as u64,
            linkers: r.get::<_, i64>(1).max(0) as u64,
        }))
    }

    /// The capsules held back, the last time one was, for one of `reasons`.
    pub fn capsules_held_for(&self, reasons: &[&str]) -> Result<Vec<String>> {
        let rows = lock(&self.conn).query(
            "SELECT name FROM hosts WHERE held_reason = ANY($1)",
            &[&reasons],
        )?;
        Ok(rows.iter().map(|r| r.get(0)).collect())
    }

    /// Records capsules' standing after a run: the pages of every capsule (none for those not
    /// listed) and the linkers of those listed, in one transaction of three statements.
    pub fn set_standings(&mut self, standings: &[(String, Standing)]) -> Result<()> {
        let names: Vec<&str> = standings.iter().map(|(name, _)| name.as_str()).collect();
        let pages: Vec<i64> = standings
            .iter()
            .map(|(_, s)| s.pages.min(i64::MAX as u64) as i64)
            .collect();
        let linkers: Vec<i64> = standings
            .iter()
            .map(|(_, s)| s.linkers.min(i64::MAX as u64) as i64)
            .collect();
        let mut conn = lock(&self.conn);
        let mut tx = write_tx(&mut conn)?;
        tx.execute(
            "UPDATE hosts SET pages = 0 WHERE pages != 0 AND NOT (name = ANY($1))",
            &[&names],
        )?;
        tx.execute(
            "UPDATE hosts SET pages = s.pages, linkers = s.linkers
             FROM unnest($1::text[], $2::bigint[], $3::bigint[]) AS s(name, pages, linkers)
             WHERE hosts.name = s.name",
            &[&names, &pages, &linkers],
        )?;
        tx.commit()?;
        Ok(())
    }

    /// Keeps this crawler's leases from running out: called well within `--lease` while it
    /// works. Returns how many capsules it holds.
    pub fn renew_leases(&mut self) -> Result<u64> {
        let mut conn = lock(&self.conn);
        let mut tx = write_tx(&mut conn)?;
        heartbeat(&mut tx, &self.crawler, self.lease_secs)?;
        let held = tx.execute(
            &format!(
                "UPDATE hosts SET leased_until = {DB_NOW} + $2
                 WHERE claimed = 1 AND leased_by = $1"
            ),
            &[&self.crawler, &self.lease_secs],
        )?;
        tx.execute(
            &format!("UPDATE addresses SET leased_until = {DB_NOW} + $2 WHERE leased_by = $1"),
            &[&self.crawler, &self.lease_secs],
        )?;
        tx.commit()?;
        Ok(held)
    }

    /// Of `capsules` and `ips`, those another crawler leases now (see
    /// [`crate::frontier::Frontier::lost_leases`]).
    pub fn lost_leases(
        &mut self,
        capsules: &[i64],
        ips: &[String],
    ) -> Result<(Vec<i64>, Vec<String>)> {
        let mut db = self.db();
        let hosts = db
            .query(
                "SELECT id FROM hosts WHERE id = ANY($1) AND claimed = 1 AND leased_by <> $2",
                &[&capsules, &self.crawler],
            )?
            .iter()
            .map(|r| r.get(0))
            .collect();
        let addresses = db
            .query(
                "SELECT ip FROM addresses WHERE ip = ANY($1) AND leased_by <> $2",
                &[&ips, &self.crawler],
            )?
            .iter()
            .map(|r| r.get(0))
            .collect();
        Ok((hosts, addresses))
    }

    /// The earliest time, not before `now`, at which this crawler may find work: a capsule
    /// coming due or out of back-off (`now` for one that did since the last claim), a lease
    /// of another crawler that ran out (in a second), or, while other crawlers hold leases, a
    /// moment from now (their work may add URLs, or they may die), so that a crawler ends
    /// only when no work is left anywhere.
    pub fn next_wakeup(&self, now: i64) -> Result<Option<i64>> {
        let row = self.db().query_one(
            &format!(
                "SELECT
                   (SELECT MIN(GREATEST(next_due, COALESCE(backoff_until, 0))) FROM hosts
                    WHERE (claimed = 0 OR leased_until < {DB_NOW}) AND next_due IS NOT NULL
                      AND id <> ALL($1)),
                   EXISTS (SELECT 1 FROM hosts WHERE claimed != 0 AND leased_until < {DB_NOW}
                           AND next_due IS NOT NULL AND id <> ALL($1)),
                   EXISTS (SELECT 1 FROM hosts WHERE claimed != 0 AND leased_by <> $2
                           AND leased_until >= {DB_NOW})"
            ),
            &[&self.passed_over, &self.crawler],
        )?;
        let due: Option<i64> = row.get::<_, Option<i64>>(0).map(|at| at.max(now));
        let orphaned: bool = row.get(1);
        let others_working: bool = row.get(2);
        let soon = if orphaned {
            Some(now + 1)
        } else {
            others_working.then_some(now + OTHERS_POLL_SECS)
        };
        Ok(match (due, soon) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        })
    }

    /// Ends this crawler's run: its claims, visit marks and leases are let go; those of other
    /// crawlers stay.
    pub fn end_run(&mut self) -> Result<()> {
        let mut conn = lock(&self.conn);
        let mut tx = write_tx(&mut conn)?;
        let hosts: Vec<i64> = tx
            .query(
                "SELECT DISTINCT host_id FROM urls WHERE claimed != 0 AND claimed_by = $1
                 UNION SELECT id FROM hosts WHERE claimed != 0 AND leased_by = $1",
                &[&self.crawler],
            )?
            .iter()
            .map(|r| r.get(0))
            .collect();
        tx.execute(
            "UPDATE urls SET claimed = 0, claimed_by = NULL WHERE claimed != 0 AND claimed_by = $1",
            &[&self.crawler],
        )?;
        for host_id in hosts {
            free_host(&mut tx, host_id)?;
        }
        tx.execute("DELETE FROM crawlers WHERE id = $1", &[&self.crawler])?;
        // Addresses are let go, not forgotten: the next crawler to lease one waits out the
        // gap after this crawler's last request there. Rows nobody holds and whose gap has
        // passed go.
        tx.execute(
            "UPDATE addresses SET leased_until = 0 WHERE leased_by = $1",
            &[&self.crawler],
        )?;
        tx.execute(
            &format!(
                "DELETE FROM addresses
                 WHERE leased_until < {DB_NOW} AND COALESCE(next_at_ms, 0) < {DB_NOW_MS}"
            ),
            &[],
        )?;
        release_expired(&mut tx)?;
        tx.commit()?;
        self.passed_over.clear();
        Ok(())
    }
}

/// How often a crawler without work looks again while other crawlers hold leases (seconds).
const OTHERS_POLL_SECS: i64 = 2;

/// Claims up to `n` due URLs of one capsule: hubs first, then new URLs and revisits in turn.
fn claim_from(
    tx: &mut impl GenericClient,
    crawler: &str,
    host_id: i64,
    n: usize,
    now: i64,
) -> Result<Vec<QueuedUrl>> {
    let select = format!(
        "SELECT {CLAIM_COLUMNS}
         FROM urls u JOIN hosts h ON h.id = u.host_id
         LEFT JOIN urls a ON a.id = u.alias_of
         LEFT JOIN hosts ah ON ah.id = a.host_id
         WHERE u.host_id = $1 AND u.prio = $2 AND u.claimed = 0
           AND u.due_at IS NOT NULL AND u.due_at <= $3
         ORDER BY u.due_at, u.id LIMIT $4"
    );
    let mut take = |prio: Priority, limit: usize| -> Result<Vec<QueuedUrl>> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let rows = tx.query(&select, &[&host_id, &(prio as i64), &now, &(limit as i64)])?;
        Ok(rows.iter().map(queued_url).collect())
    };
    let mut urls = take(Priority::Hub, n)?;
    let left = n - urls.len();
    let fresh = take(Priority::Fresh, left)?;
    let revisits = take(Priority::Revisit, left)?;
    let (mut fresh, mut revisits) = (fresh.into_iter(), revisits.into_iter());
    while urls.len() < n {
        let a = fresh.next();
        let b = revisits.next();
        if a.is_none() && b.is_none() {
            break;
        }
        urls.extend(a);
        if urls.len() < n {
            urls.extend(b);
        }
    }
    let ids: Vec<i64> = urls.iter().map(|u| u.id).collect();
    mark(tx, crawler, &ids)?;
    Ok(urls)
}

fn mark(tx: &mut impl GenericClient, crawler: &str, ids: &[i64]) -> Result<()> {
    if !ids.is_empty() {
        tx.execute(
            "UPDATE urls SET claimed = 1, claimed_by = $2 WHERE id = ANY($1)",
            &[&ids, &crawler],
        )?;
    }
    Ok(())
}

/// Lets go of a capsule `crawler` holds: it is claimable again when its next URL is due.
pub(super) fn release(tx: &mut impl GenericClient, crawler: &str, host_id: i64) -> Result<()> {
    let held = tx.query_opt(
        "SELECT 1 FROM hosts WHERE id = $1 AND claimed != 0 AND leased_by = $2",
        &[&host_id, &crawler],
    )?;
    if held.is_some() {
        free_host(tx, host_id)?;
    }
    Ok(())
}

/// Frees a capsule and sets its next due time right.
fn free_host(tx: &mut impl GenericClient, host_id: i64) -> Result<()> {
    tx.execute(
        &format!(
            "UPDATE hosts SET claimed = 0, leased_by = NULL, leased_until = NULL,
                    next_due = ({HOST_NEXT_DUE})
             WHERE id = $1"
        ),
        &[&host_id],
    )?;
    Ok(())
}

/// Lets go of what nobody holds any more: the claims, visit marks and leases of crawlers that
/// stopped renewing (dead, or ended without `end_run`), and leases that ran out.
pub(super) fn release_expired(tx: &mut impl GenericClient) -> Result<()> {
    let dead: Vec<String> = tx
        .query(
            &format!("DELETE FROM crawlers WHERE seen_at + lease_secs < {DB_NOW} RETURNING id"),
            &[],
        )?
        .iter()
        .map(|r| r.get(0))
        .collect();
    let hosts: Vec<i64> = tx
        .query(
            &format!(
                "SELECT id FROM hosts
                 WHERE claimed != 0 AND (leased_until < {DB_NOW} OR leased_by = ANY($1))
                 UNION
                 SELECT DISTINCT host_id FROM urls WHERE claimed != 0 AND claimed_by = ANY($1)"
            ),
            &[&dead],
        )?
        .iter()
        .map(|r| r.get(0))
        .collect();
    for host_id in hosts {
        let held_by_live = tx.query_opt(
            &format!(
                "SELECT 1 FROM hosts WHERE id = $1 AND claimed != 0 AND leased_until >= {DB_NOW}
                   AND NOT (leased_by = ANY($2))"
            ),
            &[&host_id, &dead],
        )?;
        if held_by_live.is_some() {
            // Another crawler took it over: only the dead one's marks go.
            tx.execute(
                "UPDATE urls SET claimed = 0, claimed_by = NULL
                 WHERE host_id = $1 AND claimed != 0 AND claimed_by = ANY($2)",
                &[&host_id, &dead],
            )?;
        } else {
            tx.execute(
                "UPDATE urls SET claimed = 0, claimed_by = NULL WHERE host_id = $1 AND claimed != 0",
                &[&host_id],
            )?;
            free_host(tx, host_id)?;
        }
    }
    Ok(())
}

/// Records that this crawler is alive until `lease_secs` from now (the database's clock).
pub(super) fn heartbeat(tx: &mut impl GenericClient, crawler: &str, lease_secs: i64) -> Result<()> {
    tx.execute(
        &format!(
            "INSERT INTO crawlers(id, seen_at, lease_secs) VALUES ($1, {DB_NOW}, $2)
             ON CONFLICT (id) DO UPDATE SET seen_at = excluded.seen_at"
        ),
        &[&crawler, &lease_secs],
    )?;
    Ok(())
}
