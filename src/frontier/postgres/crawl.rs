//! [`Frontier`] on the PostgreSQL store: what a crawler does with the shared database beside
//! its batches. It starts write transactions ([`PgBatch`]), syncs its shards (`shard.rs`),
//! leases capsules of its own shards and claims their due URLs (the statements are in
//! `claim.rs`), leases IP addresses, renews and checks its shards and leases, lets everything
//! go at the end of a run or after a crash, and keeps capsules'
//! standing, robots.txt answers, facts of the crawl and suggested seeds. Each method runs its
//! database work through [`blocking`].

use std::time::Duration;

use super::claim::{
    claim_from, claim_held, free_host, give_back_claims, let_go, mark, queued_url, release,
    release_expired, settle_hosts, CLAIM_COLUMNS,
};
use super::shard::{self, fold_news};
use super::{blocking, earliest, write, write_own, PgBatch, PgFrontier, DB_NOW, DB_NOW_MS};
use crate::frontier::{
    Batch, CachedRobots, ClaimRequest, Frontier, QueuedUrl, Result, Standing, Suggested,
    MAX_WAITING_SEEDS,
};

/// How often a crawler without work looks again while other crawlers hold leases: the
/// crawlers that ran out of work first notice within this that the last one ended (it was 2 s:
/// four crawlers of `bench-shared-crawl` ended up to 2 s after their last request, in runs of
/// 25 s). Each look is a claim and this question: a crawler idle beside one working on a
/// single capsule ran 16 statements and 7 ms of the database's CPU a second.
const OTHERS_POLL: Duration = Duration::from_millis(500);

impl Frontier for PgFrontier {
    /// A batch; its visits are fenced by the shards this crawler owns.
    fn batch(&mut self, now: i64) -> Result<Box<dyn Batch + '_>> {
        let fence = self.owned.arrays();
        let batch = PgBatch::new(&self.link, &mut self.ids, self.crawler.clone(), fence, now);
        Ok(Box::new(batch))
    }

    /// Settles what a stopped crawl left in the shared store: this crawler's own claims and
    /// leases from before (a crawler keeps its id across runs on one data directory), and
    /// those of crawlers whose leases ran out. Index operations are not this crawler's to
    /// settle: the one index writer (`geode index`) applies and confirms them, and a crash of
    /// the writer loses none (they stay recorded until confirmed). Then the crawler says it
    /// is alive, before it takes any shard: crawlers started together count each other when
    /// they first take their shares (see `crawl::SHARED_SETTLE`). Returns (0, 0).
    fn recover(&mut self, _committed_seq: u64, _now: i64) -> Result<(usize, usize)> {
        self.end_run()?;
        let (crawler, lease_secs) = (&self.crawler, self.lease_secs);
        blocking(|| {
            self.db().execute(
                &format!(
                    "INSERT INTO crawlers(id, seen_at, lease_secs) VALUES ($1, {DB_NOW}, $2)
                     ON CONFLICT (id) DO UPDATE SET seen_at = excluded.seen_at,
                                                    lease_secs = excluded.lease_secs"
                ),
                &[crawler, &lease_secs],
            )
        })?;
        Ok((0, 0))
    }

    fn committing(&self) -> bool {
        self.link.committing()
    }

    /// Ends this crawler's run: its claims, visit marks, leases and shards are let go; those of
    /// other crawlers stay.
    fn end_run(&mut self) -> Result<()> {
        // The run's last commit, if it runs behind, and whether it failed.
        blocking(|| self.link.settle())?;
        let crawler = &self.crawler;
        write_own(&self.link, |tx| {
            // Shards first, then URLs in id order, then capsules: the order in which a crawler
            // adopting shards locks them (the other order deadlocked with it).
            shard::give_back_all(tx, crawler)?;
            let mut hosts = let_go(tx, "claimed != 0 AND claimed_by = $1", &[crawler])?;
            hosts.extend(
                tx.query(
                    "SELECT id FROM hosts WHERE claimed != 0 AND leased_by = $1",
                    &[crawler],
                )?
                .iter()
                .map(|r| r.get::<_, i64>(0)),
            );
            hosts.sort_unstable();
            hosts.dedup();
            // Capsules another crawler took over (this one stopped past its lease) stay its.
            settle_hosts(tx, crawler, &hosts)?;
            tx.execute("DELETE FROM crawlers WHERE id = $1", &[crawler])?;
            // Addresses are let go, not forgotten: the next crawler to lease one waits out the
            // gap after this crawler's last request there. Rows nobody holds and whose gap has
            // passed go.
            tx.execute(
                "UPDATE addresses SET leased_until = 0 WHERE leased_by = $1",
                &[crawler],
            )?;
            tx.execute(
                &format!(
                    "DELETE FROM addresses
                     WHERE leased_until < {DB_NOW} AND COALESCE(next_at_ms, 0) < {DB_NOW_MS}"
                ),
                &[],
            )?;
            release_expired(tx)
        })?;
        self.passed_over.clear();
        self.owned.clear();
        Ok(())
    }

    fn robots(&self, host_id: i64) -> Result<Option<CachedRobots>> {
        Ok(self
            .capsules_known(&[host_id])?
            .remove(&host_id)
            .and_then(|(_, robots)| robots))
    }

    /// Leases up to `capsules` capsules of this crawler's shards with work due at `now` and
    /// claims up to `per_capsule` URLs of each, after syncing its shards (at most every
    /// second) and folding what other writers learned of its capsules into their rows.
    /// Capsules on an address where it leases none come first: an address is served one
    /// request at a time, so the last address started sets when the crawl ends, and a crawler
    /// that may lease on fewer addresses than it holds starts each of them before a second
    /// capsule of one.
    fn claim_capsules(&mut self, ask: &ClaimRequest, now: i64) -> Result<(Vec<QueuedUrl>, usize)> {
        let (capsules, per_capsule, permits) = (ask.capsules, ask.per_capsule, ask.permits);
        let PgFrontier {
            link,
            crawler,
            lease_secs,
            passed_over,
            owned,
            ..
        } = self;
        write_own(link, |tx| {
            if owned.stale() {
                shard::sync(tx, crawler, *lease_secs, owned)?;
            }
            fold_news(tx, &owned.ids())?;
            let shards = owned.ids();
            let hosts = tx.query(
                "SELECT id, name FROM hosts
                 WHERE shard = ANY($4) AND next_due IS NOT NULL AND next_due <= $1
                   AND (backoff_until IS NULL OR backoff_until <= $1)
                   AND claimed = 0 AND id <> ALL($3)
                 ORDER BY ip IS NOT NULL AND ip = ANY(ARRAY(
                              SELECT ip FROM hosts
                              WHERE claimed != 0 AND leased_by = $5 AND ip IS NOT NULL)),
                          next_due, id
                 LIMIT $2",
                &[&now, &(capsules as i64), &*passed_over, &shards, &*crawler],
            )?;
            let examined = hosts.len();
            let mut permitted = Vec::new();
            for row in hosts {
                let (host_id, name): (i64, String) = (row.get(0), row.get(1));
                if permits(&name) {
                    permitted.push(host_id);
                } else {
                    passed_over.push(host_id);
                }
            }
            if permitted.is_empty() {
                return Ok((Vec::new(), examined));
            }
            let claimed = claim_from(tx, crawler, &permitted, per_capsule, now)?;
            let leased: Vec<i64> = permitted
                .iter()
                .copied()
                .filter(|&id| claimed.iter().any(|u| u.host_id == id))
                .collect();
            // Capsules with work lease; those without (their due URLs went meanwhile) come
            // free with their next due time.
            tx.execute(
                &format!(
                    "UPDATE hosts SET claimed = 1, leased_by = $2, leased_until = {DB_NOW} + $3
                     WHERE id = ANY($1)"
                ),
                &[&leased, &*crawler, &*lease_secs],
            )?;
            for &host_id in permitted.iter().filter(|id| !leased.contains(id)) {
                free_host(tx, host_id)?;
            }
            Ok((claimed, examined))
        })
    }

    /// Claims up to `n` more due URLs of a capsule this crawler leases, renewing the lease.
    /// Nothing comes back for a capsule whose lease this crawler lost.
    fn claim_more(&mut self, host_id: i64, n: usize, now: i64) -> Result<Vec<QueuedUrl>> {
        self.claim_more_of(&[host_id], n, now)
    }

    /// Claims more of each capsule in one statement ([`claim_held`]).
    fn claim_more_of(&mut self, host_ids: &[i64], n: usize, now: i64) -> Result<Vec<QueuedUrl>> {
        if host_ids.is_empty() {
            return Ok(Vec::new());
        }
        let (crawler, lease_secs) = (&self.crawler, self.lease_secs);
        blocking(|| {
            let mut db = self.db();
            let (conn, statements) = db.with_statements();
            claim_held(conn, statements, crawler, lease_secs, host_ids, n, now)
        })
    }

    /// Claims these URLs, if they are free and due and their capsule is leased by this
    /// crawler.
    fn claim_ids(&mut self, ids: &[i64], now: i64) -> Result<Vec<QueuedUrl>> {
        let crawler = &self.crawler;
        write_own(&self.link, |tx| {
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
                &[&ids, &now, crawler],
            )?;
            let urls: Vec<QueuedUrl> = rows.iter().map(queued_url).collect();
            let claimed: Vec<i64> = urls.iter().map(|u| u.id).collect();
            mark(tx, crawler, &claimed)?;
            Ok(urls)
        })
    }

    fn release_capsule(&mut self, host_id: i64) -> Result<()> {
        self.release_capsules(&[host_id])
    }

    /// One statement, no transaction around it.
    fn release_capsules(&mut self, host_ids: &[i64]) -> Result<()> {
        let crawler = &self.crawler;
        blocking(|| release(&mut **self.db(), crawler, host_ids))
    }

    /// How long after `now` this crawler may find work: a capsule of its shards coming due or
    /// out of back-off (zero for one that did since the last claim, or that other writers
    /// added URLs to), a shard nobody holds with due work (in a second: it adopts it), or,
    /// while other crawlers work or have work due, [`OTHERS_POLL`] (their
    /// work may add URLs here, or they may die and leave their shards to adopt), so that a
    /// crawler ends only when no work is due anywhere. Another crawler works while it leases a
    /// capsule, or holds the shard of a capsule it leased: a crawler stopped (SIGSTOP) may
    /// keep its shards a little longer than its leases on capsules, and its capsules are work
    /// left until they are adopted with the shard. Capsules of other shards count with the
    /// time they come due, as this crawler's own do: one put back for a few seconds (its
    /// address busy) is work left, one due tomorrow is not.
    fn next_wakeup(&self, now: i64) -> Result<Option<Duration>> {
        let shards = self.owned.ids();
        let row = blocking(|| {
            self.db().query_one(
                &format!(
                    "SELECT
                       (SELECT MIN(GREATEST(next_due, COALESCE(backoff_until, 0))) FROM hosts
                        WHERE shard = ANY($3) AND claimed = 0 AND next_due IS NOT NULL
                          AND id <> ALL($1)),
                       (SELECT MIN(n.due) FROM host_news n JOIN hosts h ON h.id = n.host_id
                        WHERE h.shard = ANY($3)),
                       EXISTS (SELECT 1 FROM hosts h JOIN shards s ON s.id = h.shard
                               WHERE (s.owner IS NULL OR s.leased_until < {DB_NOW})
                                 AND {orphan_work}),
                       EXISTS (SELECT 1 FROM hosts WHERE claimed != 0 AND leased_by <> $2
                               AND leased_until >= {DB_NOW})
                       OR EXISTS (SELECT 1 FROM hosts h JOIN shards s ON s.id = h.shard
                                  WHERE s.owner <> $2 AND s.leased_until >= {DB_NOW}
                                    AND h.claimed != 0)
                       OR EXISTS (SELECT 1 FROM host_news n JOIN hosts h ON h.id = n.host_id
                                  WHERE NOT (h.shard = ANY($3)) AND n.due IS NOT NULL),
                       (SELECT MIN(GREATEST(next_due, COALESCE(backoff_until, 0))) FROM hosts
                        WHERE NOT (shard = ANY($3)) AND claimed = 0 AND next_due IS NOT NULL)",
                    orphan_work = shard::has_work("h", "$4")
                ),
                &[&self.passed_over, &self.crawler, &shards, &now],
            )
        })?;
        let after = |at: i64| Duration::from_secs((at - now).max(0) as u64);
        let mine: Option<i64> = row.get(0);
        let news: Option<i64> = row.get(1);
        let orphaned: bool = row.get(2);
        let others_working: bool = row.get(3);
        // Capsules of other shards coming due (a back-off ending in a few seconds is work
        // left too): looked at again then, or in a moment if they are due already.
        let elsewhere: Option<Duration> = row
            .get::<_, Option<i64>>(4)
            .map(|at| after(at).max(OTHERS_POLL));
        let soon = if orphaned {
            Some(Duration::from_secs(1))
        } else {
            earliest(others_working.then_some(OTHERS_POLL), elsewhere)
        };
        let next = earliest(earliest(mine.map(after), news.map(after)), soon);
        if next.is_some() {
            return Ok(next);
        }
        // Nothing left, but URLs another crawler claimed: it fetches them, or failed or was
        // killed with them claimed; they are looked at again in a moment, and the next sync
        // lets go of those of a crawler no longer alive (their capsules then come due).
        let others_claim = blocking(|| {
            self.db().query_one(
                "SELECT EXISTS (SELECT 1 FROM urls WHERE claimed = 1
                                  AND claimed_by IS DISTINCT FROM $1)",
                &[&self.crawler],
            )
        })?
        .get::<_, bool>(0);
        if others_claim {
            self.owned.note_others_claims();
            return Ok(Some(OTHERS_POLL));
        }
        Ok(None)
    }

    /// Leases an IP address for this crawler unless another crawler's lease on it still runs;
    /// with the lease comes how long to wait before the first request to it (what the crawler
    /// that held it last asked for, on the database's clock).
    fn lease_address(&mut self, ip: &str) -> Result<Option<Duration>> {
        Ok(self.lease_addresses(&[ip.to_string()])?[0])
    }

    /// One statement for all of them, inserting and updating in address order, so that two
    /// crawlers leasing addresses at the same moment never wait for each other in a cycle.
    fn lease_addresses(&mut self, ips: &[String]) -> Result<Vec<Option<Duration>>> {
        if ips.is_empty() {
            return Ok(Vec::new());
        }
        let rows = blocking(|| {
            self.db().query(
                &format!(
                    "INSERT INTO addresses(ip, leased_by, leased_until)
                     SELECT DISTINCT ip, $2, {DB_NOW} + $3 FROM unnest($1::TEXT[]) AS w(ip)
                     ORDER BY ip
                     ON CONFLICT (ip) DO UPDATE
                       SET leased_by = excluded.leased_by, leased_until = excluded.leased_until
                       WHERE addresses.leased_by = excluded.leased_by
                          OR addresses.leased_until < {DB_NOW}
                     RETURNING ip, GREATEST(COALESCE(next_at_ms, 0) - {DB_NOW_MS}, 0)"
                ),
                &[&ips, &self.crawler, &self.lease_secs],
            )
        })?;
        let leased: std::collections::HashMap<String, i64> =
            rows.iter().map(|r| (r.get(0), r.get(1))).collect();
        Ok(ips
            .iter()
            .map(|ip| {
                leased
                    .get(ip)
                    .map(|&ms| Duration::from_millis(ms.max(0) as u64))
            })
            .collect())
    }

    /// Lets go of an address this crawler leased: whoever leases it next waits out the gap
    /// recorded with it (`next_at_ms`).
    fn release_address(&mut self, ip: &str) -> Result<()> {
        self.release_addresses(&[ip.to_string()])
    }

    fn release_addresses(&mut self, ips: &[String]) -> Result<()> {
        if ips.is_empty() {
            return Ok(());
        }
        blocking(|| {
            self.db().execute(
                "UPDATE addresses SET leased_until = 0 WHERE ip = ANY($1) AND leased_by = $2",
                &[&ips, &self.crawler],
            )
        })?;
        Ok(())
    }

    /// One statement for all of them.
    fn capsules_known(
        &self,
        host_ids: &[i64],
    ) -> Result<std::collections::HashMap<i64, (Standing, Option<CachedRobots>)>> {
        if host_ids.is_empty() {
            return Ok(std::collections::HashMap::new());
        }
        let rows = blocking(|| {
            self.db().query(
                "SELECT id, pages, linkers, robots_status, robots_txt, robots_fetched_at
                 FROM hosts WHERE id = ANY($1)",
                &[&host_ids],
            )
        })?;
        Ok(rows
            .iter()
            .map(|r| {
                let standing = Standing {
                    pages: r.get::<_, i64>(1).max(0) as u64,
                    linkers: r.get::<_, i64>(2).max(0) as u64,
                };
                let robots = r.get::<_, Option<i64>>(3).map(|status| CachedRobots {
                    status: status.clamp(0, 99) as u8,
                    text: r.get(4),
                    fetched_at: r.get::<_, Option<i64>>(5).unwrap_or(0),
                });
                (r.get(0), (standing, robots))
            })
            .collect())
    }

    fn capsule_standing(&self, host_id: i64) -> Result<Standing> {
        Ok(self
            .capsules_known(&[host_id])?
            .remove(&host_id)
            .map(|(standing, _)| standing)
            .unwrap_or_default())
    }

    /// Records capsules' standing after a run: the pages of every capsule (none for those not
    /// listed) and the linkers of those listed, in one transaction.
    fn set_standings(&mut self, standings: &[(String, Standing)]) -> Result<()> {
        let names: Vec<&str> = standings.iter().map(|(name, _)| name.as_str()).collect();
        let pages: Vec<i64> = standings
            .iter()
            .map(|(_, s)| s.pages.min(i64::MAX as u64) as i64)
            .collect();
        let linkers: Vec<i64> = standings
            .iter()
            .map(|(_, s)| s.linkers.min(i64::MAX as u64) as i64)
            .collect();
        write(&self.link, |tx| {
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
            Ok(())
        })
    }

    fn capsules_held_for(&self, reasons: &[&str]) -> Result<Vec<String>> {
        blocking(|| {
            self.column(
                "SELECT name FROM hosts WHERE held_reason = ANY($1)",
                &[&reasons],
            )
        })
    }

    /// Syncs the shards ([`shard::sync`]) when the last sync is a second old: claims sync too,
    /// but a crawler busy with the capsules it leases claims seldom.
    fn keep_share(&mut self) -> Result<()> {
        if !self.owned.stale() {
            return Ok(());
        }
        let (crawler, lease_secs, owned) = (&self.crawler, self.lease_secs, &mut self.owned);
        write_own(&self.link, |tx| {
            shard::sync(tx, crawler, lease_secs, owned).map(|_| ())
        })
    }

    /// Keeps this crawler's shards, leases and heartbeat from running out (called well within
    /// `--lease` while it works), adopting or giving back shards to hold its fair share.
    /// Returns how many capsules it holds.
    fn renew_leases(&mut self) -> Result<u64> {
        let PgFrontier {
            link,
            crawler,
            lease_secs,
            owned,
            ..
        } = self;
        write_own(link, |tx| {
            shard::sync(tx, crawler, *lease_secs, owned)?;
            let held = tx.execute(
                &format!(
                    "UPDATE hosts SET leased_until = {DB_NOW} + $2
                     WHERE claimed = 1 AND leased_by = $1"
                ),
                &[&*crawler, &*lease_secs],
            )?;
            // Only the addresses of capsules it leases: one it kept after losing its last
            // capsule there would otherwise stay its own as long as it runs, and the crawler
            // that took the capsule over would put it back every few seconds, never to fetch
            // it (seen in `scripts/check-shared-crawl`: a crawler stopped past its lease).
            tx.execute(
                &format!(
                    "UPDATE addresses a SET leased_until = {DB_NOW} + $2
                     WHERE a.leased_by = $1
                       AND EXISTS (SELECT 1 FROM hosts h
                                   WHERE h.ip = a.ip AND h.claimed = 1 AND h.leased_by = $1)"
                ),
                &[&*crawler, &*lease_secs],
            )?;
            Ok(held)
        })
    }

    /// Of these capsules and addresses, those this crawler lost: capsules in shards it no
    /// longer owns (another crawler adopted them while this one did not renew) or that it no
    /// longer leases (another crawler leases them, or took them over and let them go: what it
    /// had claimed there was fetched, and its queue of them is stale, even where it adopted
    /// the shard again), addresses leased by another.
    fn lost_leases(&mut self, capsules: &[i64], ips: &[String]) -> Result<(Vec<i64>, Vec<String>)> {
        let lost_shards = self.owned.take_lost();
        if !lost_shards.is_empty() {
            tracing::warn!(
                shards = lost_shards.len(),
                "another crawler adopted shards whose lease ran out here"
            );
        }
        let shards = self.owned.ids();
        blocking(|| {
            let hosts = self.column(
                "SELECT id FROM hosts WHERE id = ANY($1)
                   AND (NOT (shard = ANY($3)) OR claimed = 0 OR leased_by IS DISTINCT FROM $2)",
                &[&capsules, &self.crawler, &shards],
            )?;
            let addresses = self.column(
                "SELECT ip FROM addresses WHERE ip = ANY($1) AND leased_by <> $2",
                &[&ips, &self.crawler],
            )?;
            Ok((hosts, addresses))
        })
        .and_then(|(hosts, addresses)| {
            // Its queue of them is dropped: the crawler that holds them now claims them.
            if !hosts.is_empty() {
                let crawler = &self.crawler;
                write_own(&self.link, |tx| give_back_claims(tx, crawler, &hosts))?;
            }
            Ok((hosts, addresses))
        })
    }

    /// Records the address a capsule resolved to: a capsule on an address new to it moves to
    /// that address's shard, and is this crawler's no more when another owns that shard.
    fn place_capsule(&mut self, host_id: i64, ip: &str) -> Result<bool> {
        Ok(self.place_capsules(&[(host_id, ip.to_string())])?[0])
    }

    /// One statement for all of them: no transaction around it.
    fn place_capsules(&mut self, placed: &[(i64, String)]) -> Result<Vec<bool>> {
        if placed.is_empty() {
            return Ok(Vec::new());
        }
        let moved = blocking(|| shard::place(&mut **self.db(), placed))?;
        Ok(placed
            .iter()
            .map(|(host_id, _)| {
                moved
                    .get(host_id)
                    .map_or(true, |&shard| self.owned.contains(shard))
            })
            .collect())
    }

    fn set_meta(&self, key: &str, value: &str) -> Result<()> {
        blocking(|| {
            self.db().execute(
                "INSERT INTO meta(key, value) VALUES ($1, $2)
                 ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                &[&key, &value],
            )
        })?;
        Ok(())
    }

    /// Records a seed someone suggested (at most [`MAX_WAITING_SEEDS`] wait at a time).
    fn suggest_seed(&mut self, url: &str, host: &str, source: &str, now: i64) -> Result<Suggested> {
        let row = blocking(|| {
            self.db().query_one(
                "SELECT (SELECT COUNT(*) FROM seeds s JOIN urls u ON u.url = s.url
                         WHERE u.state = 'new'),
                        EXISTS (SELECT 1 FROM seeds WHERE url = $1)",
                &[&url],
            )
        })?;
        let (waiting, known_seed): (i64, bool) = (row.get(0), row.get(1));
        if !known_seed && waiting as usize >= MAX_WAITING_SEEDS {
            return Ok(Suggested::QueueFull);
        }
        let added = self.add_seed(url, host, now)?;
        write(&self.link, |tx| {
            tx.execute(
                "INSERT INTO seeds(url, added_at, source) VALUES ($1, $2, $3)
                 ON CONFLICT DO NOTHING",
                &[&url, &now, &source],
            )?;
            tx.execute(
                "UPDATE urls SET due_at = $2 WHERE url = $1 AND due_at > $2",
                &[&url, &now],
            )?;
            // The capsule's owner makes it due.
            tx.execute(
                "INSERT INTO host_news(host_id, due)
                 SELECT host_id, $2 FROM urls WHERE url = $1 AND due_at IS NOT NULL",
                &[&url, &now],
            )?;
            Ok(())
        })?;
        Ok(Suggested::recorded(added, known_seed))
    }
}
