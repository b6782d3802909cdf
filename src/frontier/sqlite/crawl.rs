//! The crawl's side of the SQLite store ([`Frontier`]): leasing capsules and claiming their due
//! URLs (hubs first, each claim an index range scan), letting them go at the end of a run or
//! after a crash, capsules' standing and holds, and seeds.

use rusqlite::{params, OptionalExtension, TransactionBehavior};

use super::claim::{self, claim_from, queued_url, refresh_next_due, release, CLAIM_COLUMNS};
use super::confirm_commit;
use super::{CachedRobots, QueuedUrl, Result, SqliteFrontier, Suggested, MAX_WAITING_SEEDS};
use crate::frontier::{Batch, ClaimRequest, Frontier, Standing};

impl Frontier for SqliteFrontier {
    fn batch(&mut self, now: i64) -> Result<Box<dyn Batch + '_>> {
        Ok(Box::new(SqliteFrontier::batch(self, now)?))
    }

    /// Brings the database in line with the index after a previous crawl stopped, however it
    /// stopped. Index operations held by commit `committed_seq` (the payload of the index's last
    /// commit) are applied. The others never reached the index: their URLs come due at `now`
    /// and lose their content hash, so the next visit redoes the operation (an unchanged body
    /// would otherwise skip it). Claims and leases of the dead crawl are let go. Returns how
    /// many operations were confirmed and how many will be redone.
    fn recover(&mut self, committed_seq: u64, now: i64) -> Result<(usize, usize)> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let confirmed = confirm_commit(&tx, committed_seq)?;
        // A page reached through a temporary redirect is indexed under the URL that redirected:
        // the redirect's target is the one whose visit redoes the upsert. (No index on
        // `alias_of`: the scan only happens after a crash that lost an upsert.)
        let lost_upserts: bool = tx.query_row(
            "SELECT EXISTS (SELECT 1 FROM urls WHERE index_op = 'upsert')",
            [],
            |r| r.get(0),
        )?;
        if lost_upserts {
            tx.execute(
                "UPDATE urls SET content_hash = NULL, due_at = ?1, claimed = 1
                 WHERE alias_of IN (SELECT id FROM urls WHERE index_op = 'upsert')",
                [now],
            )?;
        }
        // `claimed = 1` marks them for `release_all` below, which makes their capsules due.
        let redone = tx.execute(
            "UPDATE urls SET
                 state = CASE WHEN index_op = 'upsert' AND in_index = 0 THEN 'new' ELSE state END,
                 content_hash = CASE WHEN index_op = 'upsert' THEN NULL ELSE content_hash END,
                 index_op = NULL, batch = NULL, due_at = ?1, claimed = 1
             WHERE index_op IS NOT NULL",
            [now],
        )?;
        claim::release_all(&tx)?;
        tx.commit()?;
        Ok((confirmed, redone))
    }

    /// Ends a run: URLs claimed or visited in it become claimable again (when due) and every
    /// capsule lease is let go.
    fn end_run(&mut self) -> Result<()> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        claim::release_all(&tx)?;
        tx.commit()?;
        Ok(())
    }

    /// The cached robots.txt of a capsule, if it was ever fetched.
    fn robots(&self, host_id: i64) -> Result<Option<CachedRobots>> {
        let row = self
            .conn
            .query_row(
                "SELECT robots_status, robots_txt, robots_fetched_at FROM hosts
                 WHERE id = ?1 AND robots_status IS NOT NULL",
                [host_id],
                |r| {
                    Ok(CachedRobots {
                        status: r.get::<_, i64>(0)?.clamp(0, 99) as u8,
                        text: r.get(1)?,
                        fetched_at: r.get(2)?,
                    })
                },
            )
            .optional()?;
        Ok(row)
    }

    /// Leases up to `capsules` capsules that have work due at `now` (earliest due first,
    /// skipping those in back-off) and claims up to `per_capsule` URLs of each. A capsule that
    /// turns out to have nothing claimable is let go at once; one that `permits` refuses (out of
    /// this run's scope) is passed over until the run ends. The URLs come grouped by capsule,
    /// with the number of capsules looked at: fewer than asked means no more are due.
    fn claim_capsules(&mut self, ask: &ClaimRequest, now: i64) -> Result<(Vec<QueuedUrl>, usize)> {
        let (capsules, per_capsule, permits) = (ask.capsules, ask.per_capsule, ask.permits);
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let hosts: Vec<(i64, String)> = {
            let mut stmt = tx.prepare_cached(
                "SELECT id, name FROM hosts
                 WHERE claimed = 0 AND next_due IS NOT NULL AND next_due <= ?1
                   AND (backoff_until IS NULL OR backoff_until <= ?1)
                 ORDER BY next_due, id LIMIT ?2",
            )?;
            let rows = stmt.query_map(params![now, capsules as i64], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })?;
            rows.collect::<std::result::Result<_, _>>()?
        };
        let examined = hosts.len();
        let mut claimed = Vec::new();
        for (host_id, name) in hosts {
            if !permits(&name) {
                tx.prepare_cached("UPDATE hosts SET claimed = 2 WHERE id = ?1")?
                    .execute([host_id])?;
                continue;
            }
            let urls = claim_from(&tx, host_id, per_capsule, now)?;
            if urls.is_empty() {
                // `next_due` was early: set it right and move on.
                refresh_next_due(&tx, host_id)?;
            } else {
                tx.prepare_cached("UPDATE hosts SET claimed = 1 WHERE id = ?1")?
                    .execute([host_id])?;
                claimed.extend(urls);
            }
        }
        tx.commit()?;
        Ok((claimed, examined))
    }

    /// Claims up to `n` more due URLs of a capsule this crawl leases.
    fn claim_more(&mut self, host_id: i64, n: usize, now: i64) -> Result<Vec<QueuedUrl>> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let urls = claim_from(&tx, host_id, n, now)?;
        tx.commit()?;
        Ok(urls)
    }

    /// Claims these URLs, if they are free and due: entries new in a feed, taken ahead of the
    /// rest of a leased capsule's queue.
    fn claim_ids(&mut self, ids: &[i64], now: i64) -> Result<Vec<QueuedUrl>> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let mut urls = Vec::new();
        {
            let mut select = tx.prepare_cached(&format!(
                "SELECT {CLAIM_COLUMNS}
                 FROM urls u JOIN hosts h ON h.id = u.host_id
                 LEFT JOIN urls a ON a.id = u.alias_of
                 LEFT JOIN hosts ah ON ah.id = a.host_id
                 WHERE u.id = ?1 AND u.claimed = 0 AND u.due_at IS NOT NULL AND u.due_at <= ?2"
            ))?;
            let mut mark = tx.prepare_cached("UPDATE urls SET claimed = 1 WHERE id = ?1")?;
            for &id in ids {
                if let Some(url) = select.query_row(params![id, now], queued_url).optional()? {
                    mark.execute([id])?;
                    urls.push(url);
                }
            }
        }
        tx.commit()?;
        Ok(urls)
    }

    /// Lets go of a capsule this crawl leased: its next due time is recomputed from its free
    /// URLs, so it is claimable again when that comes.
    fn release_capsule(&mut self, host_id: i64) -> Result<()> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        release(&tx, host_id)?;
        tx.commit()?;
        Ok(())
    }

    /// How long after `now` a capsule that is not leased has work it may do: a retry or a
    /// revisit coming due, or a back-off ending (zero for one that did since the last claim).
    /// Capsules passed over for this run are leased (`claimed = 2`).
    fn next_wakeup(&self, now: i64) -> Result<Option<std::time::Duration>> {
        let at: Option<i64> = self.conn.query_row(
            "SELECT MIN(MAX(next_due, COALESCE(backoff_until, 0))) FROM hosts
             WHERE claimed = 0 AND next_due IS NOT NULL",
            [],
            |r| r.get(0),
        )?;
        Ok(at.map(|at| std::time::Duration::from_secs((at - now).max(0) as u64)))
    }

    /// Every address is this crawl's: one crawl at a time holds a SQLite store.
    fn lease_address(&mut self, _ip: &str) -> Result<Option<std::time::Duration>> {
        Ok(Some(std::time::Duration::ZERO))
    }

    /// What earlier runs learned of a capsule's value (see `crawl::budget`).
    fn capsule_standing(&self, host_id: i64) -> Result<Standing> {
        Ok(self
            .conn
            .prepare_cached("SELECT pages, linkers FROM hosts WHERE id = ?1")?
            .query_row([host_id], |r| {
                Ok(Standing {
                    pages: r.get::<_, i64>(0)?.max(0) as u64,
                    linkers: r.get::<_, i64>(1)?.max(0) as u64,
                })
            })
            .optional()?
            .unwrap_or_default())
    }

    /// Records capsules' standing after a run: the pages of every capsule (none for those not
    /// listed) and the linkers of those listed, in one transaction.
    fn set_standings(&mut self, standings: &[(String, Standing)]) -> Result<()> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute("UPDATE hosts SET pages = 0 WHERE pages != 0", [])?;
        {
            let mut stmt =
                tx.prepare_cached("UPDATE hosts SET pages = ?2, linkers = ?3 WHERE name = ?1")?;
            for (capsule, standing) in standings {
                stmt.execute(params![
                    capsule,
                    standing.pages.min(i64::MAX as u64) as i64,
                    standing.linkers.min(i64::MAX as u64) as i64
                ])?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// The capsules held back, the last time one was, for one of `reasons`.
    fn capsules_held_for(&self, reasons: &[&str]) -> Result<Vec<String>> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT name FROM hosts WHERE held_reason = ?1")?;
        let mut names = Vec::new();
        for reason in reasons {
            let rows = stmt.query_map([reason], |r| r.get(0))?;
            for name in rows {
                names.push(name?);
            }
        }
        Ok(names)
    }

    /// Renews nothing: one crawl at a time holds a SQLite store (the data directory's lock), so
    /// its leases last until it lets them go or `recover` does.
    fn renew_leases(&mut self) -> Result<u64> {
        Ok(0)
    }

    /// Stores a free-form fact about the crawl (last crawl times and the like).
    fn set_meta(&self, key: &str, value: &str) -> Result<()> {
        self.conn.execute(
            "INSERT INTO meta(key, value) VALUES (?1, ?2)
             ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            params![key, value],
        )?;
        Ok(())
    }

    /// Records a seed someone suggested (`source`: `cli` or `serve`): the URL joins the frontier
    /// if unknown, and is due at once unless it is excluded or gone for good. At most
    /// [`MAX_WAITING_SEEDS`] suggestions wait for a crawl at a time.
    fn suggest_seed(&mut self, url: &str, host: &str, source: &str, now: i64) -> Result<Suggested> {
        let waiting: i64 = self.conn.query_row(
            "SELECT COUNT(*) FROM seeds s JOIN urls u ON u.url = s.url WHERE u.state = 'new'",
            [],
            |r| r.get(0),
        )?;
        let known_seed: bool = self.conn.query_row(
            "SELECT EXISTS (SELECT 1 FROM seeds WHERE url = ?1)",
            [url],
            |r| r.get(0),
        )?;
        if !known_seed && waiting as usize >= MAX_WAITING_SEEDS {
            return Ok(Suggested::QueueFull);
        }
        let added = self.add_seed(url, host, now)?;
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute(
            "INSERT OR IGNORE INTO seeds(url, added_at, source) VALUES (?1, ?2, ?3)",
            params![url, now, source],
        )?;
        tx.execute(
            "UPDATE urls SET due_at = ?2 WHERE url = ?1 AND due_at > ?2",
            params![url, now],
        )?;
        tx.execute(
            "UPDATE hosts SET next_due = ?2
             WHERE id = (SELECT host_id FROM urls WHERE url = ?1 AND due_at IS NOT NULL)
               AND (next_due IS NULL OR next_due > ?2)",
            params![url, now],
        )?;
        tx.commit()?;
        Ok(Suggested::recorded(added, known_seed))
    }
}
