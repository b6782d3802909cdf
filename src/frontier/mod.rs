//! The crawl frontier and all crawl state, in SQLite: every known URL and its state, capsules
//! (robots.txt cache, certificate pins, back-off), and the link graph. This is the only module
//! that speaks SQL.
//!
//! Writes go through [`Batch`], one transaction for many results, because a crawl records
//! thousands of small facts a second. Write transactions begin IMMEDIATE: the crawl loop and the
//! indexing thread write through separate connections, and a deferred transaction that read
//! first could not be promoted to a writer after the other connection wrote (SQLITE_BUSY_SNAPSHOT,
//! which no busy timeout cures). The database runs in WAL mode, so `geode search`, `stats`
//! and `serve` can read while a crawl writes, and a killed crawl loses at most its open batch.
//!
//! Pages reach the `indexed` state in two steps: the crawl records them `pending` (or `removing`
//! for a removal from the index), the indexing thread tags them with the commit sequence number
//! before committing Tantivy ([`Frontier::assign_batch`]) and confirms after
//! ([`Frontier::mark_committed`]). After a crash, [`Frontier::recover`] compares the tags with the
//! sequence number stored in the index's last commit, so a page is `indexed` exactly when the
//! index holds it.

mod graph;
mod stats;

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use rusqlite::{params, Connection, OpenFlags, OptionalExtension, TransactionBehavior};

pub use stats::{Backlink, KnownHost, Stats};

/// A recursive CTE `chain(id)`: URL `?1` and the URLs that redirected to it, following
/// `discovered_from` back through redirect hops (`UNION` ends loops).
pub(crate) const REDIRECT_CHAIN: &str = "chain(id) AS ( \
     SELECT ?1 \
     UNION \
     SELECT u.discovered_from FROM urls u JOIN chain c ON u.id = c.id \
     WHERE u.hops > 0 AND u.discovered_from IS NOT NULL)";

/// Errors of the crawl database.
#[derive(Debug, thiserror::Error)]
pub enum FrontierError {
    #[error("crawl database: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("no crawl database at {0} (run `geode crawl` first)")]
    Missing(std::path::PathBuf),
}

type Result<T> = std::result::Result<T, FrontierError>;

/// Where a URL stands. See schema.sql for the meaning of each state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UrlState {
    New,
    Queued,
    Pending,
    Removing,
    Indexed,
    Fetched,
    Failed,
    Excluded,
}

impl UrlState {
    pub fn as_str(self) -> &'static str {
        match self {
            UrlState::New => "new",
            UrlState::Queued => "queued",
            UrlState::Pending => "pending",
            UrlState::Removing => "removing",
            UrlState::Indexed => "indexed",
            UrlState::Fetched => "fetched",
            UrlState::Failed => "failed",
            UrlState::Excluded => "excluded",
        }
    }
}

/// A URL handed to the crawl.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueuedUrl {
    pub id: i64,
    pub url: String,
    pub host_id: i64,
    /// Capsule key (host or host:port).
    pub host: String,
    pub depth: u32,
    pub hops: u32,
    /// Set when this URL was reached through a temporary redirect: its content is indexed under
    /// the URL that redirected.
    pub canonical: Option<Canonical>,
}

/// The URL under which a temporarily redirected page is indexed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Canonical {
    pub id: i64,
    pub url: String,
    /// Its capsule key.
    pub host: String,
}

/// The cached robots.txt answer of a capsule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CachedRobots {
    pub status: u8,
    pub text: Option<String>,
    pub fetched_at: i64,
}

/// What became of a fetched URL.
#[derive(Debug, Clone, Default)]
pub struct FetchResult {
    pub status: Option<u8>,
    /// Meta line or error message.
    pub meta: String,
    /// Short error kind for failed or excluded URLs.
    pub error: Option<String>,
    pub mime: Option<String>,
    pub size: Option<u64>,
    pub content_hash: Option<String>,
    pub fetched_at: i64,
}

/// A link to record: `url` normalised, `host` its capsule key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkOut {
    pub url: String,
    pub host: String,
    pub label: String,
    /// `None` when the crawl may fetch it; otherwise why not (stored as the `excluded` URL's
    /// error and kept for the link graph).
    pub excluded: Option<&'static str>,
}

/// What a certificate check against the pin found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pin {
    First,
    Same,
    Changed,
}

/// A connection to the crawl database.
pub struct Frontier {
    conn: Connection,
    host_ids: HashMap<String, i64>,
    /// Ids of URLs seen recently: a page's links mostly point to URLs already known, and this
    /// saves the lookup. Bounded by [`URL_CACHE_ENTRIES`]; emptied when full.
    url_ids: HashMap<String, i64>,
}

/// How many URL ids [`Frontier`] keeps in memory at most.
const URL_CACHE_ENTRIES: usize = 200_000;

impl Frontier {
    /// Opens (creating if needed) the database at `path` for a crawl.
    pub fn open(path: &Path) -> Result<Self> {
        let conn = Connection::open(path)?;
        conn.busy_timeout(Duration::from_secs(30))?;
        // WAL lets readers work beside the crawl; NORMAL sync is safe against process crashes
        // (kill -9) and loses at most the last transactions on power loss, never consistency.
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        // Fewer, larger checkpoints (each one syncs the database file) and a bigger page cache:
        // a crawl writes small rows at a high rate.
        conn.pragma_update(None, "wal_autocheckpoint", 8192)?;
        conn.pragma_update(None, "cache_size", -65536)?;
        conn.pragma_update(None, "temp_store", "MEMORY")?;
        conn.execute_batch(include_str!("schema.sql"))?;
        Ok(Frontier {
            conn,
            host_ids: HashMap::new(),
            url_ids: HashMap::new(),
        })
    }

    /// Opens an existing database for reading only (`stats`, `backlinks`, `serve`).
    pub fn open_read_only(path: &Path) -> Result<Self> {
        if !path.exists() {
            return Err(FrontierError::Missing(path.to_path_buf()));
        }
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        conn.busy_timeout(Duration::from_secs(30))?;
        Ok(Frontier {
            conn,
            host_ids: HashMap::new(),
            url_ids: HashMap::new(),
        })
    }

    /// Brings the database in line with the index after a previous crawl stopped, however it
    /// stopped: pages tagged with a commit the index holds become `indexed`; pages whose commit
    /// never happened, and URLs that were queued, become `new` again. Returns how many pages were
    /// confirmed and how many were returned to the queue.
    pub fn recover(&mut self, committed_seq: u64) -> Result<(usize, usize)> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let confirmed = confirm_commit(&tx, committed_seq)?;
        // A page or removal whose commit never happened is fetched again: that redoes it.
        let requeued = tx.execute(
            "UPDATE urls SET state = 'new', batch = NULL
             WHERE state IN ('pending', 'removing', 'queued')",
            [],
        )?;
        tx.commit()?;
        Ok((confirmed, requeued))
    }

    /// Returns the URLs a crawl had queued but not fetched to `new`.
    pub fn release_queued(&mut self) -> Result<usize> {
        Ok(self
            .conn
            .execute("UPDATE urls SET state = 'new' WHERE state = 'queued'", [])?)
    }

    /// Adds a seed URL at depth 0. Returns true when it was not known before.
    pub fn add_seed(&mut self, url: &str, host: &str) -> Result<bool> {
        let mut batch = self.batch()?;
        let seed = NewUrl {
            url,
            host,
            depth: 0,
            hops: 0,
            from: None,
            alias_of: None,
        };
        let added = batch.ensure_url(&seed, None, u64::MAX)?.1;
        batch.commit()?;
        Ok(added)
    }

    /// Number of URLs known.
    pub fn url_count(&self) -> Result<u64> {
        Ok(self
            .conn
            .query_row("SELECT COUNT(*) FROM urls", [], |r| r.get::<_, i64>(0))? as u64)
    }

    /// Hands up to `limit` new URLs to the crawl, at most `per_host` from one capsule, oldest
    /// first, skipping capsules in back-off and URLs waiting for a retry at `now`. The URLs
    /// become `queued`.
    pub fn claim(&mut self, limit: usize, per_host: usize, now: i64) -> Result<Vec<QueuedUrl>> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let claimed = {
            let mut select = tx.prepare_cached(
                "WITH ranked AS (
                     SELECT u.id, u.url, u.host_id, u.depth, u.hops, u.alias_of,
                            ROW_NUMBER() OVER (PARTITION BY u.host_id ORDER BY u.id) AS rank
                     FROM urls u JOIN hosts h ON h.id = u.host_id
                     WHERE u.state = 'new'
                       AND (u.retry_after IS NULL OR u.retry_after <= ?3)
                       AND (h.backoff_until IS NULL OR h.backoff_until <= ?3))
                 SELECT r.id, r.url, r.host_id, h.name, r.depth, r.hops, a.id, a.url, ah.name
                 FROM ranked r JOIN hosts h ON h.id = r.host_id
                 LEFT JOIN urls a ON a.id = r.alias_of
                 LEFT JOIN hosts ah ON ah.id = a.host_id
                 WHERE r.rank <= ?2
                 ORDER BY r.rank, r.id
                 LIMIT ?1",
            )?;
            let rows = select.query_map(params![limit as i64, per_host as i64, now], |r| {
                Ok(QueuedUrl {
                    id: r.get(0)?,
                    url: r.get(1)?,
                    host_id: r.get(2)?,
                    host: r.get(3)?,
                    depth: r.get(4)?,
                    hops: r.get(5)?,
                    canonical: match (r.get(6)?, r.get(7)?, r.get(8)?) {
                        (Some(id), Some(url), Some(host)) => Some(Canonical { id, url, host }),
                        _ => None,
                    },
                })
            })?;
            let claimed = rows.collect::<std::result::Result<Vec<_>, _>>()?;
            let mut mark = tx.prepare_cached("UPDATE urls SET state = 'queued' WHERE id = ?1")?;
            for q in &claimed {
                mark.execute([q.id])?;
            }
            claimed
        };
        tx.commit()?;
        Ok(claimed)
    }

    /// The cached robots.txt of a capsule, if it was ever fetched.
    pub fn robots(&self, host_id: i64) -> Result<Option<CachedRobots>> {
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

    /// Starts a write transaction.
    pub fn batch(&mut self) -> Result<Batch<'_>> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        if self.url_ids.len() > URL_CACHE_ENTRIES {
            self.url_ids.clear();
        }
        Ok(Batch {
            tx,
            host_ids: &mut self.host_ids,
            new_hosts: Vec::new(),
            url_ids: &mut self.url_ids,
            new_urls: HashMap::new(),
        })
    }

    /// The earliest time after `now` at which a URL waiting for a retry, or a capsule in
    /// back-off that has new URLs, may be fetched again.
    pub fn next_retry(&self, now: i64) -> Result<Option<i64>> {
        Ok(self.conn.query_row(
            "SELECT MIN(t) FROM (
                 SELECT MIN(retry_after) AS t FROM urls
                 WHERE state = 'new' AND retry_after > ?1
                 UNION ALL
                 SELECT MIN(h.backoff_until) FROM hosts h
                 WHERE h.backoff_until > ?1
                   AND EXISTS (SELECT 1 FROM urls u WHERE u.host_id = h.id AND u.state = 'new'))",
            [now],
            |r| r.get(0),
        )?)
    }

    /// Tags pending pages and removals with the index commit that is about to hold them.
    pub fn assign_batch(&mut self, url_ids: &[i64], seq: u64) -> Result<()> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        {
            let mut tag = tx.prepare_cached(
                "UPDATE urls SET batch = ?2 WHERE id = ?1 AND state IN ('pending', 'removing')",
            )?;
            for id in url_ids {
                tag.execute(params![id, seq as i64])?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// Confirms that the index commit `seq` (and every earlier one) has happened.
    pub fn mark_committed(&mut self, seq: u64) -> Result<usize> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let confirmed = confirm_commit(&tx, seq)?;
        tx.commit()?;
        Ok(confirmed)
    }

    /// Stores a free-form fact about the crawl (last crawl times and the like).
    pub fn set_meta(&self, key: &str, value: &str) -> Result<()> {
        self.conn.execute(
            "INSERT INTO meta(key, value) VALUES (?1, ?2)
             ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            params![key, value],
        )?;
        Ok(())
    }

    pub fn meta(&self, key: &str) -> Result<Option<String>> {
        Ok(self
            .conn
            .query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0))
            .optional()?)
    }
}

/// Moves the pages and removals of commits up to `seq` to their final states.
fn confirm_commit(tx: &rusqlite::Transaction<'_>, seq: u64) -> Result<usize> {
    let indexed = tx.execute(
        "UPDATE urls SET state = 'indexed' WHERE state = 'pending' AND batch <= ?1",
        [seq as i64],
    )?;
    let removed = tx.execute(
        "UPDATE urls SET state = 'fetched' WHERE state = 'removing' AND batch <= ?1",
        [seq as i64],
    )?;
    Ok(indexed + removed)
}

/// A URL to insert if unknown.
#[derive(Debug, Clone, Copy)]
pub struct NewUrl<'a> {
    pub url: &'a str,
    /// Its capsule key.
    pub host: &'a str,
    pub depth: u32,
    pub hops: u32,
    pub from: Option<i64>,
    /// The URL whose content this is, when reached through a temporary redirect.
    pub alias_of: Option<i64>,
}

/// One write transaction. Dropping it without [`Batch::commit`] rolls everything back.
pub struct Batch<'a> {
    tx: rusqlite::Transaction<'a>,
    host_ids: &'a mut HashMap<String, i64>,
    /// Hosts this transaction created: cached only once it commits, since a rollback undoes them.
    new_hosts: Vec<(String, i64)>,
    url_ids: &'a mut HashMap<String, i64>,
    /// URLs this transaction created, cached once it commits.
    new_urls: HashMap<String, i64>,
}

impl Batch<'_> {
    /// The id of a capsule, created when new.
    pub fn host_id(&mut self, name: &str) -> Result<i64> {
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

    /// The id of a URL, inserting it when unknown: `new`, or `excluded` with the reason given,
    /// or `excluded` as `capsule-budget` when its capsule already has `budget` URLs. Returns
    /// (id, newly added).
    pub fn ensure_url(
        &mut self,
        new: &NewUrl<'_>,
        excluded: Option<&str>,
        budget: u64,
    ) -> Result<(i64, bool)> {
        if let Some(&id) = self
            .url_ids
            .get(new.url)
            .or_else(|| self.new_urls.get(new.url))
        {
            return Ok((id, false));
        }
        let existing: Option<i64> = self
            .tx
            .prepare_cached("SELECT id FROM urls WHERE url = ?1")?
            .query_row([new.url], |r| r.get(0))
            .optional()?;
        if let Some(id) = existing {
            // Not created by this transaction (those are in `new_urls`), so committed: cacheable.
            self.url_ids.insert(new.url.to_string(), id);
            return Ok((id, false));
        }
        let host_id = self.host_id(new.host)?;
        let known: i64 = self
            .tx
            .prepare_cached(
                "UPDATE hosts SET url_count = url_count + 1 WHERE id = ?1 RETURNING url_count",
            )?
            .query_row([host_id], |r| r.get(0))?;
        let excluded = match excluded {
            Some(why) => Some(why),
            None if known as u64 > budget => Some("capsule-budget"),
            None => None,
        };
        let state = if excluded.is_some() {
            UrlState::Excluded
        } else {
            UrlState::New
        };
        self.tx
            .prepare_cached(
                "INSERT INTO urls(url, host_id, state, depth, hops, discovered_from, alias_of, error)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            )?
            .execute(params![
                new.url,
                host_id,
                state.as_str(),
                new.depth,
                new.hops,
                new.from,
                new.alias_of,
                excluded
            ])?;
        let id = self.tx.last_insert_rowid();
        self.new_urls.insert(new.url.to_string(), id);
        Ok((id, true))
    }

    /// Records the links of a page at `depth`; their targets get `depth + 1`. Each link's
    /// `excluded` verdict (and the capsule `budget`) decides whether its target may be fetched;
    /// excluded targets are kept for the link graph. Returns how many URLs were new.
    pub fn add_links(
        &mut self,
        source: i64,
        depth: u32,
        links: &[LinkOut],
        budget: u64,
    ) -> Result<usize> {
        let mut added = 0;
        for link in links {
            let new = NewUrl {
                url: &link.url,
                host: &link.host,
                depth: depth + 1,
                hops: 0,
                from: Some(source),
                alias_of: None,
            };
            let (target, is_new) = self.ensure_url(&new, link.excluded, budget)?;
            added += usize::from(is_new);
            self.tx
                .prepare_cached(
                    "INSERT OR IGNORE INTO links(source, target, label) VALUES (?1, ?2, ?3)",
                )?
                .execute(params![source, target, link.label])?;
        }
        Ok(added)
    }

    /// Records a redirect target reached from `source` (at link depth `depth`) after `hops`
    /// redirects; the caller enforces the hop limit. `alias_of` names the URL whose content the
    /// target is, for temporary redirects. Returns whether the target was new.
    pub fn add_redirect(
        &mut self,
        source: i64,
        depth: u32,
        hops: u32,
        target: &LinkOut,
        alias_of: Option<i64>,
        budget: u64,
    ) -> Result<bool> {
        let new = NewUrl {
            url: &target.url,
            host: &target.host,
            depth,
            hops,
            from: Some(source),
            alias_of,
        };
        Ok(self.ensure_url(&new, target.excluded, budget)?.1)
    }

    /// Another page already holding this content (`pending` or `indexed`), if any.
    pub fn same_content(&mut self, hash: &str, except: i64) -> Result<Option<String>> {
        Ok(self
            .tx
            .prepare_cached(
                "SELECT url FROM urls WHERE content_hash = ?1 AND id != ?2
                   AND state IN ('pending', 'indexed')
                 ORDER BY id LIMIT 1",
            )?
            .query_row(params![hash, except], |r| r.get(0))
            .optional()?)
    }

    /// The distinct labels of the links that point to a URL, or to a URL that redirected to
    /// it (`=> /book The Book` names `/book/`), at most `limit` of them.
    pub fn inbound_labels(&mut self, id: i64, limit: usize) -> Result<Vec<String>> {
        let mut stmt = self.tx.prepare_cached(&format!(
            "WITH RECURSIVE {REDIRECT_CHAIN} \
             SELECT DISTINCT label FROM links WHERE target IN chain AND label != '' \
             ORDER BY label LIMIT ?2"
        ))?;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = stmt.query_map(rusqlite::params![id, limit], |r| r.get(0))?;
        Ok(rows.collect::<std::result::Result<_, _>>()?)
    }

    /// Schedules a URL that failed temporarily for another try, `base` seconds after the fetch
    /// and doubled for every failure in a row, unless it has failed `max_attempts` times in a
    /// row: then it is finished in `state`. Returns whether a retry was scheduled.
    pub fn retry_later(
        &mut self,
        id: i64,
        result: &FetchResult,
        base: i64,
        max_attempts: u32,
        state: UrlState,
    ) -> Result<bool> {
        let attempts: u32 = self
            .tx
            .prepare_cached(
                "UPDATE urls SET attempts = attempts + 1 WHERE id = ?1 RETURNING attempts",
            )?
            .query_row([id], |r| r.get(0))?;
        if attempts >= max_attempts {
            self.finish_url(id, state, result)?;
            return Ok(false);
        }
        let retry_after = result.fetched_at + base.saturating_mul(1 << (attempts - 1).min(20));
        self.tx
            .prepare_cached(
                "UPDATE urls SET state = 'new', status = ?2, meta = ?3, fetched_at = ?4,
                        retry_after = ?5
                 WHERE id = ?1",
            )?
            .execute(params![
                id,
                result.status,
                result.meta,
                result.fetched_at,
                retry_after
            ])?;
        Ok(true)
    }

    /// Backs a capsule off for `base` seconds, doubled for every back-off in a row (capped at
    /// `max`). Returns the time it ends.
    pub fn back_off_capsule(&mut self, host_id: i64, now: i64, base: i64, max: i64) -> Result<i64> {
        let level: u32 = self
            .tx
            .prepare_cached(
                "UPDATE hosts SET backoff_level = backoff_level + 1 WHERE id = ?1
                 RETURNING backoff_level",
            )?
            .query_row([host_id], |r| r.get(0))?;
        let wait = base
            .saturating_mul(1i64 << (level.saturating_sub(1)).min(20))
            .min(max);
        self.set_backoff(host_id, now + wait)?;
        Ok(now + wait)
    }

    /// Ends a capsule's run of back-offs after a good answer.
    pub fn capsule_answered(&mut self, host_id: i64) -> Result<()> {
        self.tx
            .prepare_cached(
                "UPDATE hosts SET backoff_level = 0 WHERE id = ?1 AND backoff_level != 0",
            )?
            .execute([host_id])?;
        Ok(())
    }

    /// Records what happened to a URL and moves it to `state`.
    pub fn finish_url(&mut self, id: i64, state: UrlState, result: &FetchResult) -> Result<()> {
        self.tx
            .prepare_cached(
                "UPDATE urls SET state = ?2, status = ?3, meta = ?4, error = ?5, mime = ?6,
                        size = ?7, content_hash = ?8, fetched_at = ?9, batch = NULL,
                        attempts = 0, retry_after = NULL
                 WHERE id = ?1",
            )?
            .execute(params![
                id,
                state.as_str(),
                result.status,
                result.meta,
                result.error,
                result.mime,
                result.size.map(|s| s as i64),
                result.content_hash,
                result.fetched_at,
            ])?;
        Ok(())
    }

    /// Records the status and meta of an answer without changing the URL's state.
    pub fn note_answer(&mut self, id: i64, result: &FetchResult) -> Result<()> {
        self.tx
            .prepare_cached(
                "UPDATE urls SET status = ?2, meta = ?3, fetched_at = ?4 WHERE id = ?1",
            )?
            .execute(params![id, result.status, result.meta, result.fetched_at])?;
        Ok(())
    }

    /// Returns a queued URL to `new`, for a later crawl or after a back-off.
    pub fn requeue(&mut self, id: i64) -> Result<()> {
        self.tx
            .prepare_cached("UPDATE urls SET state = 'new' WHERE id = ?1 AND state = 'queued'")?
            .execute([id])?;
        Ok(())
    }

    /// Caches a capsule's robots.txt answer.
    pub fn set_robots(
        &mut self,
        host_id: i64,
        status: u8,
        text: Option<&str>,
        now: i64,
    ) -> Result<()> {
        self.tx
            .prepare_cached(
                "UPDATE hosts SET robots_status = ?2, robots_txt = ?3, robots_fetched_at = ?4
                 WHERE id = ?1",
            )?
            .execute(params![host_id, status, text, now])?;
        Ok(())
    }

    /// Keeps a capsule from being fetched before `until` (unix seconds).
    pub fn set_backoff(&mut self, host_id: i64, until: i64) -> Result<()> {
        self.tx
            .prepare_cached("UPDATE hosts SET backoff_until = ?2 WHERE id = ?1")?
            .execute(params![host_id, until])?;
        Ok(())
    }

    /// Compares a capsule's certificate with its pin. A crawler cannot refuse a changed
    /// certificate (capsules renew self-signed ones all the time), so a change is recorded and
    /// the new certificate pinned.
    pub fn pin_certificate(&mut self, host_id: i64, sha256: &str, now: i64) -> Result<Pin> {
        let pinned: Option<String> = self
            .tx
            .prepare_cached("SELECT cert_sha256 FROM hosts WHERE id = ?1")?
            .query_row([host_id], |r| r.get(0))
            .optional()?
            .flatten();
        let pin = match pinned.as_deref() {
            None => Pin::First,
            Some(p) if p == sha256 => Pin::Same,
            Some(_) => Pin::Changed,
        };
        let sql = match pin {
            Pin::First => {
                "UPDATE hosts SET cert_sha256 = ?2, cert_first_seen = ?3, cert_last_seen = ?3
                 WHERE id = ?1"
            }
            Pin::Same => "UPDATE hosts SET cert_last_seen = ?3 WHERE id = ?1 AND ?2 IS NOT NULL",
            Pin::Changed => {
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

    /// Makes the transaction durable.
    pub fn commit(self) -> Result<()> {
        self.tx.commit()?;
        self.host_ids.extend(self.new_hosts);
        self.url_ids.extend(self.new_urls);
        Ok(())
    }
}
