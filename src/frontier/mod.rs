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
//! Pages reach the `indexed` state in two steps: the crawl records them `pending`, the indexing
//! thread tags them with the commit sequence number before committing Tantivy
//! ([`Frontier::assign_batch`]) and confirms after ([`Frontier::mark_committed`]). After a crash,
//! [`Frontier::recover`] compares the tags with the sequence number stored in the index's last
//! commit, so a page is `indexed` exactly when the index holds it.

mod stats;

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use rusqlite::{params, Connection, OpenFlags, OptionalExtension, TransactionBehavior};

pub use stats::{Backlink, Stats};

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
    /// Whether the crawl may ever fetch it; others are stored `excluded` for the link graph only.
    pub fetchable: bool,
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
}

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
        conn.execute_batch(include_str!("schema.sql"))?;
        Ok(Frontier {
            conn,
            host_ids: HashMap::new(),
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
        let confirmed = tx.execute(
            "UPDATE urls SET state = 'indexed' WHERE state = 'pending' AND batch <= ?1",
            params![committed_seq as i64],
        )?;
        let requeued = tx.execute(
            "UPDATE urls SET state = 'new', batch = NULL WHERE state IN ('pending', 'queued')",
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
        let added = batch.ensure_url(url, host, 0, 0, None, UrlState::New)?.1;
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
    /// first, skipping capsules in back-off at `now`. The URLs become `queued`.
    pub fn claim(&mut self, limit: usize, per_host: usize, now: i64) -> Result<Vec<QueuedUrl>> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let claimed = {
            let mut select = tx.prepare_cached(
                "WITH ranked AS (
                     SELECT u.id, u.url, u.host_id, u.depth, u.hops,
                            ROW_NUMBER() OVER (PARTITION BY u.host_id ORDER BY u.id) AS rank
                     FROM urls u JOIN hosts h ON h.id = u.host_id
                     WHERE u.state = 'new'
                       AND (h.backoff_until IS NULL OR h.backoff_until <= ?3))
                 SELECT r.id, r.url, r.host_id, h.name, r.depth, r.hops
                 FROM ranked r JOIN hosts h ON h.id = r.host_id
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
        Ok(Batch {
            tx,
            host_ids: &mut self.host_ids,
            new_hosts: Vec::new(),
        })
    }

    /// Tags pending pages with the index commit that is about to hold them.
    pub fn assign_batch(&mut self, url_ids: &[i64], seq: u64) -> Result<()> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        {
            let mut tag = tx
                .prepare_cached("UPDATE urls SET batch = ?2 WHERE id = ?1 AND state = 'pending'")?;
            for id in url_ids {
                tag.execute(params![id, seq as i64])?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// Confirms that the index commit `seq` (and every earlier one) has happened.
    pub fn mark_committed(&mut self, seq: u64) -> Result<usize> {
        Ok(self.conn.execute(
            "UPDATE urls SET state = 'indexed' WHERE state = 'pending' AND batch <= ?1",
            [seq as i64],
        )?)
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

/// One write transaction. Dropping it without [`Batch::commit`] rolls everything back.
pub struct Batch<'a> {
    tx: rusqlite::Transaction<'a>,
    host_ids: &'a mut HashMap<String, i64>,
    /// Hosts this transaction created: cached only once it commits, since a rollback undoes them.
    new_hosts: Vec<(String, i64)>,
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

    /// The id of a URL, inserting it in `state` when unknown. Returns (id, newly added).
    pub fn ensure_url(
        &mut self,
        url: &str,
        host: &str,
        depth: u32,
        hops: u32,
        discovered_from: Option<i64>,
        state: UrlState,
    ) -> Result<(i64, bool)> {
        let existing: Option<i64> = self
            .tx
            .prepare_cached("SELECT id FROM urls WHERE url = ?1")?
            .query_row([url], |r| r.get(0))
            .optional()?;
        if let Some(id) = existing {
            return Ok((id, false));
        }
        let host_id = self.host_id(host)?;
        let error = (state == UrlState::Excluded).then_some("not-fetchable");
        self.tx
            .prepare_cached(
                "INSERT INTO urls(url, host_id, state, depth, hops, discovered_from, error)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )?
            .execute(params![
                url,
                host_id,
                state.as_str(),
                depth,
                hops,
                discovered_from,
                error
            ])?;
        Ok((self.tx.last_insert_rowid(), true))
    }

    /// Records the links of a page at `depth`; their targets get `depth + 1`. Targets deeper
    /// than `max_depth` are stored `excluded` (kept for the link graph). Returns how many URLs
    /// were new.
    pub fn add_links(
        &mut self,
        source: i64,
        depth: u32,
        max_depth: u32,
        links: &[LinkOut],
    ) -> Result<usize> {
        let mut added = 0;
        for link in links {
            let state = if link.fetchable && depth < max_depth {
                UrlState::New
            } else {
                UrlState::Excluded
            };
            let (target, new) =
                self.ensure_url(&link.url, &link.host, depth + 1, 0, Some(source), state)?;
            if new && state == UrlState::Excluded && link.fetchable {
                self.tx
                    .prepare_cached("UPDATE urls SET error = 'too-deep' WHERE id = ?1")?
                    .execute([target])?;
            }
            added += usize::from(new);
            self.tx
                .prepare_cached(
                    "INSERT OR IGNORE INTO links(source, target, label) VALUES (?1, ?2, ?3)",
                )?
                .execute(params![source, target, link.label])?;
        }
        Ok(added)
    }

    /// Records a redirect target reached from `source` after `hops` redirects (the caller
    /// enforces the hop limit). Returns whether the target was new.
    pub fn add_redirect(
        &mut self,
        source: i64,
        depth: u32,
        hops: u32,
        target: &LinkOut,
    ) -> Result<bool> {
        let state = if target.fetchable {
            UrlState::New
        } else {
            UrlState::Excluded
        };
        let (_, new) =
            self.ensure_url(&target.url, &target.host, depth, hops, Some(source), state)?;
        Ok(new)
    }

    /// Records what happened to a URL and moves it to `state`.
    pub fn finish_url(&mut self, id: i64, state: UrlState, result: &FetchResult) -> Result<()> {
        self.tx
            .prepare_cached(
                "UPDATE urls SET state = ?2, status = ?3, meta = ?4, error = ?5, mime = ?6,
                        size = ?7, content_hash = ?8, fetched_at = ?9, batch = NULL
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
        Ok(())
    }
}
