//! The SQLite store: the crawl database in the data directory (`crawl.sqlite`, schema in
//! `schema.sql`), embedded, for one crawl at a time (the data directory's lock keeps a second
//! one off). [`SqliteFrontier`] and [`SqliteBatch`] implement the frontier's traits.
//!
//! Writes go through [`SqliteBatch`], one transaction for many results, because a crawl records
//! thousands of small facts a second. Write transactions begin IMMEDIATE: the crawl loop and the
//! indexing thread write through separate connections, and a deferred transaction that read
//! first could not be promoted to a writer after the other connection wrote (SQLITE_BUSY_SNAPSHOT,
//! which no busy timeout cures). The database runs in WAL mode, so `geode search`, `stats`
//! and `serve` can read while a crawl writes, and a killed crawl loses at most its open batch.
//!
//! Claims ([`claim`]) mark URLs and capsules in the database; every claim is an index range
//! scan, so its cost does not grow with the number of URLs known.
//!
//! Laid out by trait, as the PostgreSQL store is: [`crawl`] implements `Frontier`, [`index_log`]
//! `IndexLog`, [`read`] `Reader` and [`batch`] `Batch`; the other files hold what those share
//! (claims, anchors, the archive, the link graph, statistics, outlinks, migrations).

mod anchors;
mod archive;
mod batch;
mod claim;
mod crawl;
mod graph;
mod index_log;
mod migrate;
mod outlinks;
mod read;
mod rows;
mod stats;

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use rusqlite::config::DbConfig;
use rusqlite::{Connection, OpenFlags, TransactionBehavior};

pub use batch::SqliteBatch;

use super::{
    AnchorUpdate, ArchiveStats, ArchivedResponse, Backlink, CachedRobots, Canonical, FetchResult,
    FrontierError, IndexOp, IndexedContent, IndexedPage, KnownHost, LinkReport, NewUrl, PendingOp,
    Pin, Prior, QueuedUrl, Result, Stats, Suggested, SuggestedSeed, UrlDetails, UrlState,
    VisitRecord, MAX_REDIRECT_CHAIN, MAX_WAITING_SEEDS,
};

/// A recursive CTE `chain(id)`: URL `?1` and the URLs whose redirects (30 or 31) lead to it,
/// directly or through other redirects (`UNION` ends loops).
pub(crate) const REDIRECT_CHAIN: &str = "chain(id) AS ( \
     SELECT ?1 \
     UNION \
     SELECT u.id FROM urls u JOIN chain c ON u.redirect_to = c.id)";

/// A connection to the crawl database.
pub struct SqliteFrontier {
    conn: Connection,
    host_ids: HashMap<String, i64>,
    /// Ids of URLs seen recently: a page's links mostly point to URLs already known, and this
    /// saves the lookup. Bounded by [`URL_CACHE_ENTRIES`]; emptied when full.
    url_ids: HashMap<String, i64>,
}

/// How many URL ids [`SqliteFrontier`] keeps in memory at most: about 100 bytes each. (200,000
/// took 27 MB of a crawl's 256.)
const URL_CACHE_ENTRIES: usize = 50_000;

/// The page cache of a connection, in KiB. What it misses, the system's file cache (which is not
/// the process's memory) has: a miss costs a read call, not a disk read. 64 MiB took a quarter
/// of a crawl's 256 MB on the full-size generated geminispace (1.2 GB of database).
const CACHE_KIB: i64 = 16 * 1024;

/// Prepared statements a connection keeps (`prepare_cached`). Recording a batch of results
/// runs a few dozen distinct statements; with rusqlite's default of 16 they pushed each other
/// out of the cache and were compiled again and again.
const STATEMENT_CACHE: usize = 256;

impl SqliteFrontier {
    /// Opens (creating or upgrading if needed) the database at `path` for a crawl.
    pub fn open(path: &Path) -> Result<Self> {
        let mut conn = Connection::open(path)?;
        conn.busy_timeout(Duration::from_secs(30))?;
        // WAL lets readers work beside the crawl; NORMAL sync is safe against process crashes
        // (kill -9) and loses at most the last transactions on power loss, never consistency.
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        // Foreign keys are checked in debug builds, which every test runs: they catch a store
        // that would point at a row it never wrote. A release build leaves the checks out:
        // they were two row lookups for each link recorded, 2-3% of a crawl's CPU, to guard
        // ids this store hands out itself and never deletes. (With them, bench-scale's database
        // of 500,000 URLs came out at 377 bytes a URL instead of 324; why, I did not find out.)
        conn.pragma_update(None, "foreign_keys", cfg!(debug_assertions))?;
        // Fewer, larger checkpoints (each one syncs the database file) and a bigger page cache:
        // a crawl writes small rows at a high rate.
        conn.pragma_update(None, "wal_autocheckpoint", 8192)?;
        conn.pragma_update(None, "cache_size", -CACHE_KIB)?;
        conn.pragma_update(None, "temp_store", "MEMORY")?;
        settle_plans(&conn)?;
        migrate::prepare(&mut conn)?;
        Ok(SqliteFrontier {
            conn,
            host_ids: HashMap::new(),
            url_ids: HashMap::new(),
        })
    }

    /// Opens an existing database for reading only (`stats`, `backlinks`, `serve`), writing
    /// nothing at all, so that it works on a read-only mount or as a user who may only read.
    ///
    /// SQLite's `mode=ro` alone is not enough: a reader of a WAL database creates the `-wal`
    /// and `-shm` files when they are missing (and leaves them behind), and cannot open the
    /// database where it may not create them. So: while a `-wal` file exists, a crawl is
    /// writing (or was, until it was killed), and the reader joins it through the shared-memory
    /// file (`mode=ro`; SQLite opens that file read-only where it may not write it). Without
    /// one, every change is in the database file itself, and it is opened `immutable`: no
    /// locks, no side files. A crawl starting meanwhile writes to a new `-wal` file, not to
    /// the database file, until its first checkpoint thousands of pages later: far beyond one
    /// read. A database that exists but cannot be read is [`FrontierError::Unreadable`] (with
    /// the reason, e.g. permission denied), never [`FrontierError::Missing`].
    pub fn open_read_only(path: &Path) -> Result<Self> {
        let unreadable = |e| FrontierError::Unreadable(path.to_path_buf(), e);
        // `Path::exists` says false for a directory the user may not enter; the error itself
        // tells "missing" from "not allowed".
        match std::fs::metadata(path) {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(FrontierError::Missing(path.to_path_buf()))
            }
            Err(e) => return Err(unreadable(e)),
        }
        // A file the user may not read: say so (SQLite would only say it cannot open it).
        // access(2) rather than opening the file: closing any descriptor of a file drops every
        // POSIX lock this process holds on it, including those of SQLite's other connections.
        #[cfg(unix)]
        {
            use std::os::unix::ffi::OsStrExt;
            let c_path = std::ffi::CString::new(path.as_os_str().as_bytes()).map_err(|e| {
                unreadable(std::io::Error::new(std::io::ErrorKind::InvalidInput, e))
            })?;
            // SAFETY: access(2) reads the NUL-terminated path we own; nothing else.
            if unsafe { libc::access(c_path.as_ptr(), libc::R_OK) } != 0 {
                return Err(unreadable(std::io::Error::last_os_error()));
            }
        }
        let mut wal = path.as_os_str().to_owned();
        wal.push("-wal");
        let writing = match std::fs::metadata(&wal) {
            Ok(_) => true,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
            Err(e) => return Err(unreadable(e)),
        };
        // A URI names the file: its bytes outside the unreserved set are percent-encoded.
        let mut uri = String::from("file:");
        for &b in path.as_os_str().as_encoded_bytes() {
            if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
                uri.push(char::from(b));
            } else {
                uri.push_str(&format!("%{b:02X}"));
            }
        }
        uri.push_str(if writing {
            "?mode=ro"
        } else {
            "?mode=ro&immutable=1"
        });
        let conn = Connection::open_with_flags(
            &uri,
            OpenFlags::SQLITE_OPEN_READ_ONLY
                | OpenFlags::SQLITE_OPEN_URI
                | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        conn.busy_timeout(Duration::from_secs(30))?;
        conn.pragma_update(None, "query_only", true)?;
        settle_plans(&conn)?;
        if !migrate::check(&conn)? {
            return Err(FrontierError::Missing(path.to_path_buf()));
        }
        Ok(SqliteFrontier {
            conn,
            host_ids: HashMap::new(),
            url_ids: HashMap::new(),
        })
    }

    /// Starts a write transaction; `now` is the time new URLs come due.
    pub fn batch(&mut self, now: i64) -> Result<SqliteBatch<'_>> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        if self.url_ids.len() > URL_CACHE_ENTRIES {
            self.url_ids.clear();
        }
        Ok(SqliteBatch::new(
            tx,
            &mut self.host_ids,
            &mut self.url_ids,
            now,
        ))
    }

    pub(super) fn strings<P: rusqlite::Params>(&self, sql: &str, params: P) -> Result<Vec<String>> {
        let mut stmt = self.conn.prepare(sql)?;
        let rows = stmt.query_map(params, |r| r.get(0))?;
        Ok(rows.collect::<std::result::Result<_, _>>()?)
    }
}

/// Makes a connection's prepared statements last: a cache large enough for every statement a
/// crawl runs, and plans that do not depend on the values bound. Without the latter (SQLite's
/// query planner stability guarantee), a statement whose plan looked at a bound value (any
/// `LIMIT ?` does, in the SQLite rusqlite bundles) is compiled again each time that value is
/// bound, even to the same value: the claims and the anchor labels of every page indexed were.
/// The plans of geode's statements are the same either way (no statistics are gathered, and no
/// partial index or `LIKE` depends on a bound value).
fn settle_plans(conn: &Connection) -> Result<()> {
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)?;
    Ok(())
}

/// Applies the index operations of commits up to `seq`.
pub(super) fn confirm_commit(tx: &rusqlite::Transaction<'_>, seq: u64) -> Result<usize> {
    Ok(tx.execute(
        "UPDATE urls SET in_index = (index_op = 'upsert'), index_op = NULL, batch = NULL
         WHERE index_op IS NOT NULL AND batch <= ?1",
        [seq as i64],
    )?)
}

#[cfg(test)]
mod tests;
