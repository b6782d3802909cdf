//! [`PgBatch`]: one write transaction of a crawler, holding many results, with the meaning of
//! the SQLite store's batch (see `sqlite/batch.rs`): visits, links, redirects, retries,
//! back-offs, robots.txt answers, certificate pins and archived responses. Rows two crawlers
//! may both create (capsules, URLs, bodies) are inserted with `ON CONFLICT`, so a crawler never
//! fails on another's insert. Each statement is a round trip to the database, so what SQLite
//! does in a few statements a visit is one statement here where it can be, and the links of a
//! page are recorded a page at a time (`links.rs`).

use std::collections::HashMap;
use std::time::Duration;

use postgres::types::ToSql;
use postgres::{Row, Statement, Transaction};

mod links;

use links::Wanted;

use super::{Result, DB_NOW_MS};
use crate::frontier::{ArchiveRecord, FetchResult, IndexOp, LinkOut, NewUrl, Pin, VisitRecord};

/// Ids of capsules and URLs by name, as rows of the store have them.
#[derive(Debug, Default)]
pub(super) struct Ids {
    hosts: HashMap<String, i64>,
    urls: HashMap<String, i64>,
}

/// How many URL ids a [`super::PgFrontier`] keeps in memory at most; emptied when full.
const MAX_CACHED_URLS: usize = 200_000;

/// One write transaction. Dropping it without [`PgBatch::commit`] rolls everything back.
pub struct PgBatch<'a> {
    /// `None` only once committed or dropped.
    tx: Option<Transaction<'a>>,
    /// The connection's prepared statements, by their SQL: a statement prepared once is
    /// executed in one round trip instead of two.
    statements: &'a mut HashMap<String, Statement>,
    /// Ids of capsules and URLs committed before (they never change), and those this
    /// transaction made, cached once it commits (a rollback undoes them).
    ids: &'a mut Ids,
    new_ids: Ids,
    crawler: String,
    /// When URLs inserted by this transaction come due.
    now: i64,
    /// Addresses and how long from now no request may reach them (milliseconds), written
    /// at commit in one statement.
    holds: HashMap<String, i64>,
}

impl<'a> PgBatch<'a> {
    pub(super) fn new(
        tx: Transaction<'a>,
        statements: &'a mut HashMap<String, Statement>,
        ids: &'a mut Ids,
        crawler: String,
        now: i64,
    ) -> Self {
        if ids.urls.len() > MAX_CACHED_URLS {
            ids.urls.clear();
        }
        PgBatch {
            tx: Some(tx),
            statements,
            ids,
            new_ids: Ids::default(),
            crawler,
            now,
            holds: HashMap::new(),
        }
    }

    fn tx(&mut self) -> &mut Transaction<'a> {
        self.tx
            .as_mut()
            .expect("a batch's transaction lives until commit or drop")
    }

    /// The prepared statement of `sql`, prepared now if it never was on this connection.
    fn statement(&mut self, sql: &str) -> Result<Statement> {
        if let Some(statement) = self.statements.get(sql) {
            return Ok(statement.clone());
        }
        let statement = self.tx().prepare(sql)?;
        self.statements.insert(sql.to_string(), statement.clone());
        Ok(statement)
    }

    fn exec(&mut self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<u64> {
        let statement = self.statement(sql)?;
        Ok(self.tx().execute(&statement, params)?)
    }

    fn rows(&mut self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>> {
        let statement = self.statement(sql)?;
        Ok(self.tx().query(&statement, params)?)
    }

    fn row(&mut self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<Row> {
        let statement = self.statement(sql)?;
        Ok(self.tx().query_one(&statement, params)?)
    }

    fn opt_row(&mut self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<Option<Row>> {
        let statement = self.statement(sql)?;
        Ok(self.tx().query_opt(&statement, params)?)
    }

    /// The id of a capsule, created when new.
    pub fn host_id(&mut self, name: &str) -> Result<i64> {
        Ok(self.host_ids(&[name])?[0])
    }

    /// The id of a URL, inserting it when unknown (see the SQLite store's `ensure_url`).
    pub fn ensure_url(
        &mut self,
        new: &NewUrl<'_>,
        excluded: Option<&str>,
        budget: u64,
    ) -> Result<Option<(i64, bool)>> {
        let wanted = Wanted {
            new: *new,
            excluded,
        };
        Ok(self.ensure_urls(&[wanted], budget)?[0])
    }

    /// Makes fetchable the web URLs recorded as `excluded` by runs that did not follow the web.
    pub fn admit_web_urls(&mut self) -> Result<u64> {
        let rows = self.rows(
            "SELECT id, url, host_id FROM urls
             WHERE state = 'excluded' AND error IN ('web', 'not-fetchable')
               AND (url LIKE 'http://%' OR url LIKE 'https://%')",
            &[],
        )?;
        let mut admitted = 0;
        for row in rows {
            let (id, url, old_host): (i64, String, i64) = (row.get(0), row.get(1), row.get(2));
            let Ok(parsed) = crate::urlnorm::normalize(&url) else {
                continue;
            };
            if !crate::urlnorm::is_fetchable(&parsed) {
                continue;
            }
            let host = self.host_id(&crate::urlnorm::capsule_key(&parsed))?;
            let now = self.now;
            self.exec(
                "UPDATE urls SET state = 'new', error = NULL, host_id = $2, due_at = $3
                 WHERE id = $1",
                &[&id, &host, &now],
            )?;
            self.exec(
                "UPDATE hosts SET url_count = url_count + (id = $2)::int - (id = $1)::int
                 WHERE id IN ($1, $2)",
                &[&old_host, &host],
            )?;
            self.lower_next_due(host, self.now)?;
            admitted += 1;
        }
        Ok(admitted)
    }

    /// Whether a capsule holds its full budget of URLs.
    pub fn capsule_full(&mut self, host_id: i64, budget: u64) -> Result<bool> {
        let known: i64 = self
            .row("SELECT url_count FROM hosts WHERE id = $1", &[&host_id])?
            .get(0);
        Ok(known.max(0) as u64 >= budget)
    }

    fn lower_next_due(&mut self, host_id: i64, due: i64) -> Result<()> {
        self.exec(
            "UPDATE hosts SET next_due = $2 WHERE id = $1 AND (next_due IS NULL OR next_due > $2)",
            &[&host_id, &due],
        )?;
        Ok(())
    }

    /// Forgets a page's pending anchor update: its document is being written now.
    pub fn forget_anchor_update(&mut self, url_id: i64) -> Result<()> {
        self.exec("DELETE FROM anchor_updates WHERE url_id = $1", &[&url_id])?;
        Ok(())
    }

    /// Records a redirect target reached from `source`.
    pub fn add_redirect(
        &mut self,
        source: i64,
        depth: u32,
        hops: u32,
        target: &LinkOut,
        alias_of: Option<i64>,
        budget: u64,
    ) -> Result<Option<(i64, bool)>> {
        let new = NewUrl {
            url: &target.url,
            host: &target.host,
            depth,
            hops,
            from: Some(source),
            alias_of,
            prio: target.prio,
        };
        self.ensure_url(&new, target.excluded, budget)
    }

    /// Another page holding this content in the index (or on its way there), if any.
    pub fn same_content(&mut self, hash: &str, except: i64) -> Result<Option<String>> {
        Ok(self
            .opt_row(
                "SELECT url FROM urls WHERE content_hash = $1 AND id != $2
                   AND ((in_index AND index_op IS NULL) OR index_op = 'upsert')
                 ORDER BY id LIMIT 1",
                &[&hash, &except],
            )?
            .map(|r| r.get(0)))
    }

    /// The distinct labels of the links that point to a URL, as this transaction sees them.
    pub fn inbound_labels(&mut self, id: i64, limit: usize) -> Result<Vec<String>> {
        super::read::inbound_labels(|sql, params| self.rows(sql, params), id, limit)
    }

    /// Records a visit (see the SQLite store's `record_visit`).
    pub fn record_visit(&mut self, id: i64, visit: &VisitRecord<'_>) -> Result<()> {
        let r = visit.result;
        let (has_validators, etag, last_modified) = match &r.validators {
            Some((etag, modified)) => (true, etag.clone(), modified.clone()),
            None => (false, None, None),
        };
        let crawler = self.crawler.clone();
        // The hash it had comes back from the statement's snapshot, taken before the update.
        let before = self.opt_row(
            "WITH before AS (SELECT content_hash FROM urls WHERE id = $1)
             UPDATE urls SET state = $2, status = $3, meta = $4, error = $5,
                    mime = COALESCE($6, mime), size = COALESCE($7, size),
                    content_hash = COALESCE($8, content_hash),
                    content_meta = COALESCE($18, content_meta), fetched_at = $9,
                    etag = CASE WHEN $19 THEN $20 ELSE etag END,
                    last_modified = CASE WHEN $19 THEN $21 ELSE last_modified END,
                    due_at = $10, revisit_secs = $11, first_failed_at = $12, prio = $13,
                    feed = $14, changes = changes + CASE WHEN $15::BOOLEAN THEN 1 ELSE 0 END,
                    changed_at = CASE WHEN $15::BOOLEAN THEN $9 ELSE changed_at END,
                    visits = visits + 1, attempts = 0, claimed = 2, claimed_by = $22,
                    index_op = COALESCE($16, index_op), redirect_to = $17,
                    batch = CASE WHEN $16::TEXT IS NULL THEN batch END
             WHERE id = $1
             RETURNING (SELECT content_hash FROM before)",
            &[
                &id,
                &visit.state.as_str(),
                &r.status.map(i64::from),
                &r.meta,
                &r.error,
                &r.mime,
                &r.size.map(|s| s as i64),
                &r.content_hash,
                &r.fetched_at,
                &visit.due_at,
                &visit.revisit_secs,
                &visit.first_failed_at,
                &(visit.prio as i64),
                &visit.feed,
                &visit.changed,
                &visit.index_op.map(IndexOp::as_str),
                &visit.redirect_to,
                &r.content_meta,
                &has_validators,
                &etag,
                &last_modified,
                &crawler,
            ],
        )?;
        self.forget_replaced_content(before, r.content_hash.as_deref())
    }

    /// Forgets the body of the content a URL had before (`before`, a row holding its hash),
    /// when `new` content replaced it and nothing else needs it.
    fn forget_replaced_content(&mut self, before: Option<Row>, new: Option<&str>) -> Result<()> {
        let Some(new) = new else { return Ok(()) };
        let old: Option<String> = before.and_then(|r| r.get(0));
        match old {
            Some(old) if old != new => self.forget_body_if_unused(&old),
            _ => Ok(()),
        }
    }

    /// Sends content to the index under `id`, the URL a temporary redirect keeps canonical.
    pub fn record_alias_content(&mut self, id: i64, result: &FetchResult) -> Result<()> {
        let before = self.opt_row(
            "WITH before AS (SELECT content_hash FROM urls WHERE id = $1)
             UPDATE urls SET state = 'indexed', mime = $2, size = $3, content_hash = $4,
                    content_meta = $5, index_op = 'upsert', first_failed_at = NULL, batch = NULL
             WHERE id = $1
             RETURNING (SELECT content_hash FROM before)",
            &[
                &id,
                &result.mime,
                &result.size.map(|s| s as i64),
                &result.content_hash,
                &result.content_meta,
            ],
        )?;
        self.forget_replaced_content(before, result.content_hash.as_deref())
    }

    /// Schedules a URL that failed temporarily for another try at `due_at`.
    pub fn retry_later(&mut self, id: i64, result: &FetchResult, due_at: i64) -> Result<()> {
        self.exec(
            "UPDATE urls SET attempts = attempts + 1, status = $2, meta = $3,
                    due_at = $4, claimed = 0, claimed_by = NULL
             WHERE id = $1",
            &[&id, &result.status.map(i64::from), &result.meta, &due_at],
        )?;
        self.exec(
            "UPDATE hosts SET next_due = $2
             WHERE id = (SELECT host_id FROM urls WHERE id = $1)
               AND (next_due IS NULL OR next_due > $2)",
            &[&id, &due_at],
        )?;
        Ok(())
    }

    /// Backs a capsule off for `base` seconds, doubled for every back-off in a row.
    pub fn back_off_capsule(&mut self, host_id: i64, now: i64, base: i64, max: i64) -> Result<i64> {
        let level: i64 = self
            .row(
                "UPDATE hosts SET backoff_level = backoff_level + 1 WHERE id = $1
                 RETURNING backoff_level",
                &[&host_id],
            )?
            .get(0);
        let level = level.clamp(0, u32::MAX as i64) as u32;
        let wait = base
            .saturating_mul(1i64 << (level.saturating_sub(1)).min(20))
            .min(max);
        self.set_backoff(host_id, now + wait)?;
        Ok(now + wait)
    }

    /// Ends a capsule's run of back-offs after a good answer.
    pub fn capsule_answered(&mut self, host_id: i64) -> Result<()> {
        self.exec(
            "UPDATE hosts SET backoff_level = 0 WHERE id = $1 AND backoff_level != 0",
            &[&host_id],
        )?;
        Ok(())
    }

    /// Records the status and meta of an answer without changing the URL's state.
    pub fn note_answer(&mut self, id: i64, result: &FetchResult) -> Result<()> {
        self.exec(
            "UPDATE urls SET status = $2, meta = $3, fetched_at = $4 WHERE id = $1",
            &[
                &id,
                &result.status.map(i64::from),
                &result.meta,
                &result.fetched_at,
            ],
        )?;
        Ok(())
    }

    /// Puts a claimed URL off to the next run.
    pub fn defer(&mut self, id: i64, result: &FetchResult) -> Result<()> {
        let crawler = self.crawler.clone();
        self.exec(
            "UPDATE urls SET status = $2, meta = $3, claimed = 2, claimed_by = $4 WHERE id = $1",
            &[&id, &result.status.map(i64::from), &result.meta, &crawler],
        )?;
        Ok(())
    }

    /// Returns a claimed URL to the frontier untouched.
    pub fn requeue(&mut self, id: i64) -> Result<()> {
        self.exec(
            "UPDATE urls SET claimed = 0, claimed_by = NULL WHERE id = $1 AND claimed = 1",
            &[&id],
        )?;
        Ok(())
    }

    /// Lets go of a capsule this crawler leased.
    pub fn release_capsule(&mut self, host_id: i64) -> Result<()> {
        let crawler = self.crawler.clone();
        super::claim::release(self.tx(), &crawler, host_id)
    }

    /// Caches a capsule's robots.txt answer.
    pub fn set_robots(
        &mut self,
        host_id: i64,
        status: u8,
        text: Option<&str>,
        now: i64,
    ) -> Result<()> {
        self.exec(
            "UPDATE hosts SET robots_status = $2, robots_txt = $3, robots_fetched_at = $4
             WHERE id = $1",
            &[&host_id, &i64::from(status), &text, &now],
        )?;
        Ok(())
    }

    /// Keeps a capsule from being fetched before `until`.
    pub fn set_backoff(&mut self, host_id: i64, until: i64) -> Result<()> {
        self.hold_capsule(host_id, until, None)
    }

    /// Keeps a capsule from being fetched before `until`, held back for `reason` (a crawl
    /// budget's, shown by `geode stats`) or backed off (`None`).
    pub fn hold_capsule<'r>(
        &mut self,
        host_id: i64,
        until: i64,
        reason: impl Into<Option<&'r str>>,
    ) -> Result<()> {
        self.exec(
            "UPDATE hosts SET backoff_until = $2, held_reason = $3 WHERE id = $1",
            &[&host_id, &until, &reason.into()],
        )?;
        Ok(())
    }

    /// Compares a capsule's certificate with its pin, pinning a changed one.
    pub fn pin_certificate(&mut self, host_id: i64, sha256: &str, now: i64) -> Result<Pin> {
        // One statement: the pin before comes from the row locked first, and the update
        // writes what the comparison decides (first pin, same, or a change counted).
        let pinned: Option<String> = self
            .opt_row(
                "UPDATE hosts h SET cert_sha256 = $2, cert_last_seen = $3,
                        cert_first_seen = CASE WHEN p.pin IS DISTINCT FROM $2 THEN $3
                                               ELSE h.cert_first_seen END,
                        cert_changes = h.cert_changes
                                       + CASE WHEN p.pin != $2 THEN 1 ELSE 0 END
                 FROM (SELECT cert_sha256 AS pin FROM hosts WHERE id = $1 FOR UPDATE) p
                 WHERE h.id = $1
                 RETURNING p.pin",
                &[&host_id, &sha256, &now],
            )?
            .and_then(|r| r.get(0));
        Ok(match pinned {
            None => Pin::First,
            Some(p) if p == sha256 => Pin::Same,
            Some(previous) => Pin::Changed { previous },
        })
    }

    /// Archives the latest response of a URL, replacing the one before.
    pub fn archive(&mut self, url_id: i64, record: &ArchiveRecord<'_>) -> Result<()> {
        let hash = record.body.map(|b| b.hash);
        let size = record.body.map(|b| b.size as i64);
        let zstd = record.body.map(|b| b.zstd);
        // The body hash archived before comes from the statement's snapshot, taken before
        // the response is replaced.
        let previous: Option<String> = self
            .row(
                "WITH previous AS (SELECT body_hash FROM responses WHERE url_id = $1),
                 body AS (
                     INSERT INTO bodies(hash, size, zstd)
                     SELECT $6::TEXT, $7::BIGINT, $8::BYTEA WHERE $6::TEXT IS NOT NULL
                     ON CONFLICT (hash) DO NOTHING),
                 response AS (
                     INSERT INTO responses(url_id, status, meta, fetched_at, cert_sha256,
                                           body_hash)
                     VALUES ($1, $2, $3, $4, $5, $6)
                     ON CONFLICT (url_id) DO UPDATE SET status = excluded.status,
                         meta = excluded.meta, fetched_at = excluded.fetched_at,
                         cert_sha256 = excluded.cert_sha256, body_hash = excluded.body_hash)
                 SELECT (SELECT body_hash FROM previous)",
                &[
                    &url_id,
                    &i64::from(record.status),
                    &record.meta,
                    &record.fetched_at,
                    &record.cert_sha256,
                    &hash,
                    &size,
                    &zstd,
                ],
            )?
            .get(0);
        if let Some(previous) = previous.filter(|p| Some(p.as_str()) != hash) {
            self.forget_body_if_unused(&previous)?;
        }
        Ok(())
    }

    /// Deletes a body nothing needs any more.
    fn forget_body_if_unused(&mut self, hash: &str) -> Result<()> {
        self.exec(
            "DELETE FROM bodies WHERE hash = $1
               AND NOT EXISTS (SELECT 1 FROM responses WHERE body_hash = $1)
               AND NOT EXISTS (SELECT 1 FROM urls WHERE content_hash = $1)",
            &[&hash],
        )?;
        Ok(())
    }

    /// Keeps every crawler from sending a request to `ip` before `wait` from now (see
    /// [`crate::frontier::Batch::hold_address`]); written when the batch commits.
    pub fn hold_address(&mut self, ip: &str, wait: Duration) -> Result<()> {
        let ms = wait.as_millis().min(i64::MAX as u128) as i64;
        let held = self.holds.entry(ip.to_string()).or_insert(ms);
        *held = (*held).max(ms);
        Ok(())
    }

    /// Writes the holds on addresses gathered by [`PgBatch::hold_address`]: an address's next
    /// request time only moves later, on the database's clock.
    fn write_holds(&mut self) -> Result<()> {
        if self.holds.is_empty() {
            return Ok(());
        }
        let (ips, waits): (Vec<String>, Vec<i64>) =
            std::mem::take(&mut self.holds).into_iter().unzip();
        self.exec(
            &format!(
                "UPDATE addresses a
                 SET next_at_ms = GREATEST(COALESCE(a.next_at_ms, 0), {DB_NOW_MS} + w.ms)
                 FROM unnest($1::TEXT[], $2::BIGINT[]) AS w(ip, ms) WHERE a.ip = w.ip"
            ),
            &[&ips, &waits],
        )?;
        Ok(())
    }

    /// Makes the transaction durable.
    pub fn commit(mut self) -> Result<()> {
        self.write_holds()?;
        if let Some(tx) = self.tx.take() {
            tx.commit()?;
        }
        let made = std::mem::take(&mut self.new_ids);
        self.ids.hosts.extend(made.hosts);
        self.ids.urls.extend(made.urls);
        Ok(())
    }
}

impl Drop for PgBatch<'_> {
    /// Rolls back a batch dropped without a commit, through [`super::blocking`]: the rollback
    /// is a call of the synchronous client too.
    fn drop(&mut self) {
        if let Some(tx) = self.tx.take() {
            super::blocking(|| drop(tx));
        }
    }
}
