//! [`SqliteBatch`]: one write transaction of the crawl, holding many results. What a visit found, the
//! links of a page (new URLs join the frontier, links a page dropped leave the graph), redirects,
//! retries, capsule back-offs, robots.txt answers and certificate pins.

use std::collections::{BTreeSet, HashMap};
use std::sync::LazyLock;

use rusqlite::{params, OptionalExtension};

use super::outlinks;
use super::{FetchResult, IndexOp, LinkReport, NewUrl, Pin, Result, UrlState, VisitRecord};
use crate::frontier::backoff_end;
use crate::frontier::{ArchiveRecord, Batch, PageLinks, Stored};

/// Links inserted by one statement ([`SqliteBatch::insert_links`]).
const LINK_ROWS: usize = 16;

/// `INSERT INTO links` of [`LINK_ROWS`] rows, their parameters in order: source, target,
/// label.
static INSERT_LINK_ROWS: LazyLock<String> = LazyLock::new(|| {
    format!(
        "INSERT INTO links(source, target, label) VALUES {}",
        vec!["(?, ?, ?)"; LINK_ROWS].join(", ")
    )
});

/// Removes the link from `?1` to `?2` labelled `?3` (the whole primary key of `links`).
pub(super) const REMOVE_LINK: &str =
    "DELETE FROM links WHERE source = ?1 AND target = ?2 AND label = ?3";

/// [`SqliteBatch::mark_anchor_update_if`]: marks URL `?1` for an anchor update when `?3` links
/// (0 or 1) carry label `?2` to it, counted on a prefix of the primary key of `links`.
pub(super) const MARK_ANCHOR_UPDATE: &str = "INSERT OR IGNORE INTO anchor_updates(url_id)
     SELECT id FROM urls WHERE id = ?1 AND NOT (state = 'new' AND in_index = 0)
       AND (SELECT COUNT(*) FROM (SELECT 1 FROM links
                                  WHERE target = ?1 AND label = ?2 LIMIT 2)) = ?3";

/// Another page holding content `?1` in the index (or on its way there), other than `?2`
/// ([`SqliteBatch::same_content`]): looked up by the hash's first 16 digits
/// (`urls_by_hash_prefix`).
pub(super) const SAME_CONTENT: &str = "SELECT url FROM urls
     WHERE substr(content_hash, 1, 16) = substr(?1, 1, 16) AND content_hash = ?1 AND id != ?2
       AND ((in_index = 1 AND index_op IS NULL) OR index_op = 'upsert')
     ORDER BY id LIMIT 1";

/// The web URLs [`SqliteBatch::admit_web_urls`] admits; the partial index `urls_web_waiting` keeps
/// this from reading every URL.
pub(super) const WEB_WAITING: &str = "SELECT id, url, host_id FROM urls
     WHERE state = 'excluded' AND error IN ('web', 'not-fetchable')
       AND (url LIKE 'http://%' OR url LIKE 'https://%')";

/// One write transaction. Dropping it without [`SqliteBatch::commit`] rolls everything back.
pub struct SqliteBatch<'a> {
    pub(super) tx: rusqlite::Transaction<'a>,
    host_ids: &'a mut HashMap<String, i64>,
    /// Hosts this transaction created: cached only once it commits, since a rollback undoes them.
    new_hosts: Vec<(String, i64)>,
    url_ids: &'a mut HashMap<String, i64>,
    /// URLs this transaction created, cached once it commits.
    new_urls: HashMap<String, i64>,
    /// When URLs inserted by this transaction come due.
    now: i64,
}

impl<'a> SqliteBatch<'a> {
    pub(super) fn new(
        tx: rusqlite::Transaction<'a>,
        host_ids: &'a mut HashMap<String, i64>,
        url_ids: &'a mut HashMap<String, i64>,
        now: i64,
    ) -> Self {
        SqliteBatch {
            tx,
            host_ids,
            new_hosts: Vec::new(),
            url_ids,
            new_urls: HashMap::new(),
            now,
        }
    }

    /// Makes a capsule claimable no later than `due`.
    fn lower_next_due(&mut self, host_id: i64, due: i64) -> Result<()> {
        self.tx
            .prepare_cached(
                "UPDATE hosts SET next_due = ?2
                 WHERE id = ?1 AND (next_due IS NULL OR next_due > ?2)",
            )?
            .execute(params![host_id, due])?;
        Ok(())
    }

    /// Inserts links of `source`: (target, label), none of them recorded yet. Rows go
    /// [`LINK_ROWS`] to a statement: each execution opens its cursor on the table anew, which
    /// with one row a statement every link paid for (on the bench farm, 15 links a page). The
    /// page's packed row in `outlinks` is the caller's to write.
    fn insert_links(&mut self, source: i64, links: &[(i64, &str)]) -> Result<()> {
        let mut chunks = links.chunks_exact(LINK_ROWS);
        if chunks.len() > 0 {
            let mut insert = self.tx.prepare_cached(&INSERT_LINK_ROWS)?;
            for chunk in chunks.by_ref() {
                for (i, (target, label)) in chunk.iter().enumerate() {
                    insert.raw_bind_parameter(3 * i + 1, source)?;
                    insert.raw_bind_parameter(3 * i + 2, target)?;
                    insert.raw_bind_parameter(3 * i + 3, label)?;
                }
                insert.raw_execute()?;
            }
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut insert = self
                .tx
                .prepare_cached("INSERT INTO links(source, target, label) VALUES (?1, ?2, ?3)")?;
            for (target, label) in rest {
                insert.execute(params![source, target, label])?;
            }
        }
        Ok(())
    }

    /// The links a page has recorded: (target, label).
    fn links_of(&mut self, source: i64) -> Result<Vec<(i64, String)>> {
        outlinks::read(&self.tx, source)
    }

    fn remove_link(&mut self, source: i64, target: i64, label: &str) -> Result<()> {
        self.tx
            .prepare_cached(REMOVE_LINK)?
            .execute(params![source, target, label])?;
        if !label.is_empty() {
            self.mark_anchor_update_if(target, label, 0)?;
        }
        Ok(())
    }

    /// Marks `target` for an anchor update when `count` links now carry `label` to it (1: the
    /// label is new to it, 0: it lost the label), unless it was never visited: a page with no
    /// document, nor a redirect handing labels on, gets its anchors read when it is indexed.
    /// One statement, the row's visit tested before the links are counted. (On the bench
    /// farm's first crawl, 70,476 of 129,159 checks marked a page.)
    fn mark_anchor_update_if(&mut self, target: i64, label: &str, count: i64) -> Result<()> {
        self.tx
            .prepare_cached(MARK_ANCHOR_UPDATE)?
            .execute(params![target, label, count])?;
        Ok(())
    }

    /// The content hash a URL had, when `new` replaces it by another.
    fn replaced_content(&mut self, id: i64, new: Option<&str>) -> Result<Option<String>> {
        let Some(new) = new else { return Ok(None) };
        let old: Option<String> = self
            .tx
            .prepare_cached("SELECT content_hash FROM urls WHERE id = ?1")?
            .query_row([id], |r| r.get(0))
            .optional()?
            .flatten();
        Ok(old.filter(|old| old != new))
    }

    fn lower_next_due_of_url(&mut self, id: i64, due: i64) -> Result<()> {
        self.tx
            .prepare_cached(
                "UPDATE hosts SET next_due = ?2
                 WHERE id = (SELECT host_id FROM urls WHERE id = ?1)
                   AND (next_due IS NULL OR next_due > ?2)",
            )?
            .execute(params![id, due])?;
        Ok(())
    }

    /// Keeps a capsule from being fetched before `until`, held back for `reason` (a crawl
    /// budget's, shown by `geode stats`) or backed off (`None`).
    fn hold_until(&mut self, host_id: i64, until: i64, reason: Option<&str>) -> Result<()> {
        self.tx
            .prepare_cached("UPDATE hosts SET backoff_until = ?2, held_reason = ?3 WHERE id = ?1")?
            .execute(params![host_id, until, reason])?;
        Ok(())
    }

    /// Makes the transaction durable.
    pub fn commit(self) -> Result<()> {
        self.tx.commit()?;
        self.host_ids.extend(self.new_hosts);
        self.url_ids.extend(self.new_urls);
        Ok(())
    }
}

impl Batch for SqliteBatch<'_> {
    fn commit(self: Box<Self>) -> Result<()> {
        SqliteBatch::commit(*self)
    }

    /// The id of a capsule, created when new.
    fn host_id(&mut self, name: &str) -> Result<i64> {
        if let Some(&id) = self.host_ids.get(name) {
            return Ok(id);
        }
        if let Some((_, id)) = self.new_hosts.iter().find(|(n, _)| n == name) {
            return Ok(*id);
        }
        let existing: Option<i64> = self
            .tx
            .prepare_cached("SELECT id FROM hosts WHERE name = ?1")?
            .query_row([name], |r| r.get(0))
            .optional()?;
        let id = match existing {
            Some(id) => id,
            None => {
                self.tx
                    .prepare_cached("INSERT INTO hosts(name) VALUES (?1)")?
                    .execute([name])?;
                let id = self.tx.last_insert_rowid();
                self.new_hosts.push((name.to_string(), id));
                return Ok(id);
            }
        };
        self.host_ids.insert(name.to_string(), id);
        Ok(id)
    }

    /// The id of a URL, inserting it when unknown: due now, or `excluded` with the reason given.
    /// A capsule stores at most `budget` URLs: beyond that a new URL is not stored at all and
    /// `None` comes back, so a capsule that makes up links without end cannot fill the disk.
    /// Returns (id, newly added).
    fn ensure_url(&mut self, new: &NewUrl, excluded: Option<&str>, budget: u64) -> Result<Stored> {
        if let Some(&id) = self
            .url_ids
            .get(new.url)
            .or_else(|| self.new_urls.get(new.url))
        {
            return Ok(Some((id, false)));
        }
        let existing: Option<i64> = self
            .tx
            .prepare_cached("SELECT id FROM urls WHERE url = ?1")?
            .query_row([new.url], |r| r.get(0))
            .optional()?;
        if let Some(id) = existing {
            // Not created by this transaction (those are in `new_urls`), so committed: cacheable.
            self.url_ids.insert(new.url.to_string(), id);
            return Ok(Some((id, false)));
        }
        let host_id = self.host_id(new.host)?;
        let known: i64 = self
            .tx
            .prepare_cached(
                "UPDATE hosts SET url_count = url_count + 1 WHERE id = ?1 AND url_count < ?2
                 RETURNING url_count",
            )?
            .query_row(params![host_id, budget.min(i64::MAX as u64) as i64], |r| {
                r.get(0)
            })
            .optional()?
            .unwrap_or(-1);
        if known < 0 {
            return Ok(None);
        }
        let (state, due_at) = match excluded {
            Some(_) => (UrlState::Excluded, None),
            None => (UrlState::New, Some(self.now)),
        };
        self.tx
            .prepare_cached(
                "INSERT INTO urls(url, host_id, state, depth, hops, discovered_from, alias_of,
                                  error, prio, due_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            )?
            .execute(params![
                new.url,
                host_id,
                state.as_str(),
                new.depth,
                new.hops,
                new.from,
                new.alias_of,
                excluded,
                new.prio as i64,
                due_at,
            ])?;
        let id = self.tx.last_insert_rowid();
        self.new_urls.insert(new.url.to_string(), id);
        if let Some(due) = due_at {
            self.lower_next_due(host_id, due)?;
        }
        Ok(Some((id, true)))
    }

    /// Makes fetchable the web URLs recorded as `excluded` by runs that did not follow the web
    /// (reason `web`), or by a geode that could not fetch it (`not-fetchable`, filed under the
    /// bare host, which is the Gemini capsule's key): each goes to its web capsule
    /// (`https://host`), due now. Returns how many.
    fn admit_web_urls(&mut self) -> Result<u64> {
        let rows: Vec<(i64, String, i64)> = self
            .tx
            .prepare(WEB_WAITING)?
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
            .collect::<rusqlite::Result<_>>()?;
        let mut admitted = 0;
        for (id, url, old_host) in rows {
            let Ok(parsed) = crate::urlnorm::normalize(&url) else {
                continue;
            };
            if !crate::urlnorm::is_fetchable(&parsed) {
                continue;
            }
            let host = self.host_id(&crate::urlnorm::capsule_key(&parsed))?;
            self.tx
                .prepare_cached(
                    "UPDATE urls SET state = 'new', error = NULL, host_id = ?2, due_at = ?3
                     WHERE id = ?1",
                )?
                .execute(params![id, host, self.now])?;
            self.tx
                .prepare_cached(
                    "UPDATE hosts SET url_count = url_count + (id = ?2) - (id = ?1)
                     WHERE id IN (?1, ?2)",
                )?
                .execute(params![old_host, host])?;
            self.lower_next_due(host, self.now)?;
            admitted += 1;
        }
        Ok(admitted)
    }

    /// Whether a capsule holds its full budget of URLs: its pages are then no longer expanded.
    fn capsule_full(&mut self, host_id: i64, budget: u64) -> Result<bool> {
        let known: i64 = self
            .tx
            .prepare_cached("SELECT url_count FROM hosts WHERE id = ?1")?
            .query_row([host_id], |r| r.get(0))?;
        Ok(known as u64 >= budget)
    }

    /// Records the links of a page at `depth` (their targets get `depth + 1`), replacing the
    /// links it had: links the page no longer has leave the graph. Each link's `excluded`
    /// verdict (and the capsule `budget`) decides whether its target may be fetched; excluded
    /// targets are kept for the link graph. When the labels pointing to a page already visited
    /// change, that page is marked for an anchor update, unless its document is `held` and the
    /// label is new to it (see `Batch::set_links_holding`: such a mark would only be forgotten
    /// when the document goes). `Batch::set_links` is this with nothing held.
    fn set_links_holding(&mut self, page: &PageLinks<'_>, budget: u64) -> Result<LinkReport> {
        let (source, depth, links, held) = (page.source, page.depth, page.links, page.held);
        let recorded = self.links_of(source)?;
        let old: BTreeSet<(i64, &str)> = recorded.iter().map(|(t, l)| (*t, l.as_str())).collect();
        let mut report = LinkReport::default();
        // The targets first (new URLs join the frontier), then the links, through statements
        // held for the whole page rather than looked up again for each link.
        let mut targets = Vec::with_capacity(links.len());
        for link in links {
            let new = link.as_new(source, depth);
            let Some((target, is_new)) = self.ensure_url(&new, link.excluded, budget)? else {
                // Its capsule is full: the link is not kept either.
                continue;
            };
            if is_new {
                report.count_new(link, target, || self.host_id(&link.host))?;
            }
            targets.push((link, target, is_new));
        }
        let mut current: BTreeSet<(i64, &str)> = BTreeSet::new();
        let mut labelled = Vec::new();
        let mut added = Vec::with_capacity(targets.len());
        for (link, target, is_new) in targets {
            // Repeated on the page, or recorded at an earlier visit.
            let key = (target, link.label.as_str());
            if !current.insert(key) || old.contains(&key) {
                continue;
            }
            added.push(key);
            // A URL just added has no document yet, and a held one is not written yet: their
            // anchors are read when they are indexed.
            if !is_new && !link.label.is_empty() && !held(target) {
                labelled.push(key);
            }
        }
        self.insert_links(source, &added)?;
        // Each (target, label) comes once from this page, so counting after all of its
        // inserts is counting right after each one: 1 means the label is new to the target.
        for (target, label) in labelled {
            self.mark_anchor_update_if(target, label, 1)?;
        }
        for &(target, label) in old.difference(&current) {
            self.remove_link(source, target, label)?;
        }
        if current != old {
            outlinks::write(&self.tx, source, current.iter().copied())?;
        }
        Ok(report)
    }

    /// Removes every link of a page (it left the index), marking the pages whose anchors lose
    /// a label.
    fn drop_links(&mut self, source: i64) -> Result<()> {
        for (target, label) in self.links_of(source)? {
            self.remove_link(source, target, &label)?;
        }
        outlinks::write(&self.tx, source, std::iter::empty())
    }

    /// Forgets a page's pending anchor update: its document is being written now with the
    /// labels read in this transaction, so rewriting it after the crawl would repeat the same
    /// work. (A crash before the index commit makes the page due again, and that visit reads
    /// the labels anew.)
    fn forget_anchor_update(&mut self, url_id: i64) -> Result<()> {
        self.tx
            .prepare_cached("DELETE FROM anchor_updates WHERE url_id = ?1")?
            .execute([url_id])?;
        Ok(())
    }

    /// Another page holding this content in the index (or on its way there), if any.
    fn same_content(&mut self, hash: &str, except: i64) -> Result<Option<String>> {
        Ok(self
            .tx
            .prepare_cached(SAME_CONTENT)?
            .query_row(params![hash, except], |r| r.get(0))
            .optional()?)
    }

    /// The distinct labels of the links that point to a URL (see [`super::SqliteFrontier::inbound_labels`]).
    fn inbound_labels(&mut self, id: i64, limit: usize) -> Result<Vec<String>> {
        super::anchors::inbound_labels(&self.tx, id, limit)
    }

    /// Records a visit: what was received, the state, the schedule and the index operation. A
    /// visit without content (an error, a redirect) keeps the type, size and hash of the last
    /// content seen: a page that fails stays searchable with what it had.
    fn record_visit(&mut self, id: i64, visit: &VisitRecord<'_>) -> Result<()> {
        let r = visit.result;
        let replaced = self.replaced_content(id, r.content_hash.as_deref())?;
        self.tx
            .prepare_cached(
                "UPDATE urls SET state = ?2, status = ?3, meta = ?4, error = ?5,
                        mime = COALESCE(?6, mime), size = COALESCE(?7, size),
                        content_hash = COALESCE(?8, content_hash),
                        content_meta = COALESCE(?18, content_meta), fetched_at = ?9,
                        etag = CASE WHEN ?19 THEN ?20 ELSE etag END,
                        last_modified = CASE WHEN ?19 THEN ?21 ELSE last_modified END,
                        due_at = ?10, revisit_secs = ?11, first_failed_at = ?12, prio = ?13,
                        feed = ?14, changes = changes + ?15,
                        changed_at = CASE WHEN ?15 THEN ?9 ELSE changed_at END,
                        visits = visits + 1, attempts = 0, claimed = 2,
                        index_op = COALESCE(?16, index_op), redirect_to = ?17
                 WHERE id = ?1",
            )?
            .execute(params![
                id,
                visit.state.as_str(),
                r.status,
                r.meta,
                r.error,
                r.mime,
                r.size.map(|s| s as i64),
                r.content_hash,
                r.fetched_at,
                visit.due_at,
                visit.revisit_secs,
                visit.first_failed_at,
                visit.prio as i64,
                visit.feed,
                visit.changed,
                visit.index_op.map(IndexOp::as_str),
                visit.redirect_to,
                r.content_meta,
                r.validators.is_some(),
                r.validators.as_ref().and_then(|v| v.0.clone()),
                r.validators.as_ref().and_then(|v| v.1.clone()),
            ])?;
        if let Some(old) = replaced {
            self.forget_body_if_unused(&old)?;
        }
        Ok(())
    }

    /// Sends content to the index under `id`, the URL a temporary redirect keeps canonical: its
    /// state and content follow, its schedule stays its own.
    fn record_alias_content(&mut self, id: i64, result: &FetchResult) -> Result<()> {
        let replaced = self.replaced_content(id, result.content_hash.as_deref())?;
        self.tx
            .prepare_cached(
                "UPDATE urls SET state = 'indexed', mime = ?2, size = ?3, content_hash = ?4,
                        content_meta = ?5, index_op = 'upsert', first_failed_at = NULL
                 WHERE id = ?1",
            )?
            .execute(params![
                id,
                result.mime,
                result.size.map(|s| s as i64),
                result.content_hash,
                result.content_meta
            ])?;
        if let Some(old) = replaced {
            self.forget_body_if_unused(&old)?;
        }
        Ok(())
    }

    /// Schedules a URL that failed temporarily for another try at `due_at` in this run or a
    /// later one, counting the attempt. Its state stays what its last completed visit found.
    fn retry_later(&mut self, id: i64, result: &FetchResult, due_at: i64) -> Result<()> {
        self.tx
            .prepare_cached(
                "UPDATE urls SET attempts = attempts + 1, status = ?2, meta = ?3,
                        due_at = ?4, claimed = 0
                 WHERE id = ?1",
            )?
            .execute(params![id, result.status, result.meta, due_at])?;
        self.lower_next_due_of_url(id, due_at)
    }

    /// Backs a capsule off for `base` seconds, doubled for every back-off in a row (capped at
    /// `max`). Returns the time it ends.
    fn back_off_capsule(&mut self, host_id: i64, now: i64, base: i64, max: i64) -> Result<i64> {
        let level: u32 = self
            .tx
            .prepare_cached(
                "UPDATE hosts SET backoff_level = backoff_level + 1 WHERE id = ?1
                 RETURNING backoff_level",
            )?
            .query_row([host_id], |r| r.get(0))?;
        let until = backoff_end(now, level, base, max);
        self.set_backoff(host_id, until)?;
        Ok(until)
    }

    /// Ends a capsule's run of back-offs after a good answer.
    fn capsule_answered(&mut self, host_id: i64) -> Result<()> {
        self.tx
            .prepare_cached(
                "UPDATE hosts SET backoff_level = 0 WHERE id = ?1 AND backoff_level != 0",
            )?
            .execute([host_id])?;
        Ok(())
    }

    /// Records the status and meta of an answer without changing the URL's state.
    fn note_answer(&mut self, id: i64, result: &FetchResult) -> Result<()> {
        self.tx
            .prepare_cached(
                "UPDATE urls SET status = ?2, meta = ?3, fetched_at = ?4 WHERE id = ?1",
            )?
            .execute(params![id, result.status, result.meta, result.fetched_at])?;
        Ok(())
    }

    /// Puts a claimed URL off to the next run: its answer is noted, it stays due, and this run
    /// does not claim it again (a server that keeps saying "slow down").
    fn defer(&mut self, id: i64, result: &FetchResult) -> Result<()> {
        self.tx
            .prepare_cached("UPDATE urls SET status = ?2, meta = ?3, claimed = 2 WHERE id = ?1")?
            .execute(params![id, result.status, result.meta])?;
        Ok(())
    }

    /// Returns a claimed URL to the frontier untouched, for later in this run or a later run.
    fn requeue(&mut self, id: i64) -> Result<()> {
        self.tx
            .prepare_cached("UPDATE urls SET claimed = 0 WHERE id = ?1 AND claimed = 1")?
            .execute([id])?;
        Ok(())
    }

    /// Lets go of a capsule the crawl leased (see [`super::SqliteFrontier::release_capsule`]).
    fn release_capsule(&mut self, host_id: i64) -> Result<()> {
        super::claim::release(&self.tx, host_id)
    }

    /// Caches a capsule's robots.txt answer.
    fn set_robots(&mut self, host_id: i64, status: u8, text: Option<&str>, now: i64) -> Result<()> {
        self.tx
            .prepare_cached(
                "UPDATE hosts SET robots_status = ?2, robots_txt = ?3, robots_fetched_at = ?4
                 WHERE id = ?1",
            )?
            .execute(params![host_id, status, text, now])?;
        Ok(())
    }

    /// Keeps a capsule from being fetched before `until` (unix seconds).
    fn set_backoff(&mut self, host_id: i64, until: i64) -> Result<()> {
        self.hold_until(host_id, until, None)
    }

    fn hold_capsule(&mut self, host_id: i64, until: i64, reason: &str) -> Result<()> {
        self.hold_until(host_id, until, Some(reason))
    }

    /// Compares a capsule's certificate with its pin. A crawler cannot refuse a changed
    /// certificate (capsules renew self-signed ones all the time), so a change is recorded
    /// (first and last seen of the new one, a count of changes) and the new certificate pinned.
    fn pin_certificate(&mut self, host_id: i64, sha256: &str, now: i64) -> Result<Pin> {
        let pinned: Option<String> = self
            .tx
            .prepare_cached("SELECT cert_sha256 FROM hosts WHERE id = ?1")?
            .query_row([host_id], |r| r.get(0))
            .optional()?
            .flatten();
        let pin = match pinned {
            None => Pin::First,
            Some(p) if p == sha256 => Pin::Same,
            Some(previous) => Pin::Changed { previous },
        };
        let sql = match pin {
            Pin::First => {
                "UPDATE hosts SET cert_sha256 = ?2, cert_first_seen = ?3, cert_last_seen = ?3
                 WHERE id = ?1"
            }
            Pin::Same => "UPDATE hosts SET cert_last_seen = ?3 WHERE id = ?1 AND ?2 IS NOT NULL",
            Pin::Changed { .. } => {
                "UPDATE hosts SET cert_sha256 = ?2, cert_first_seen = ?3, cert_last_seen = ?3,
                        cert_changes = cert_changes + 1
                 WHERE id = ?1"
            }
        };
        self.tx
            .prepare_cached(sql)?
            .execute(params![host_id, sha256, now])?;
        Ok(pin)
    }

    /// Archives the latest response of a URL, replacing the one before.
    fn archive(&mut self, url_id: i64, record: &ArchiveRecord<'_>) -> Result<()> {
        if let Some(body) = &record.body {
            self.tx
                .prepare_cached(
                    "INSERT OR IGNORE INTO bodies(hash, size, zstd) VALUES (?1, ?2, ?3)",
                )?
                .execute(params![body.hash, body.size as i64, body.zstd])?;
        }
        let previous: Option<String> = self
            .tx
            .prepare_cached("SELECT body_hash FROM responses WHERE url_id = ?1")?
            .query_row([url_id], |r| r.get(0))
            .optional()?
            .flatten();
        let hash = record.body.map(|b| b.hash);
        self.tx
            .prepare_cached(
                "INSERT INTO responses(url_id, status, meta, fetched_at, cert_sha256, body_hash)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                 ON CONFLICT(url_id) DO UPDATE SET status = excluded.status,
                     meta = excluded.meta, fetched_at = excluded.fetched_at,
                     cert_sha256 = excluded.cert_sha256, body_hash = excluded.body_hash",
            )?
            .execute(params![
                url_id,
                record.status,
                record.meta,
                record.fetched_at,
                record.cert_sha256,
                hash
            ])?;
        if let Some(previous) = previous.filter(|p| Some(p.as_str()) != hash) {
            self.forget_body_if_unused(&previous)?;
        }
        Ok(())
    }
}
