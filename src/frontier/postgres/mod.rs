//! The PostgreSQL store: one crawl database that several crawler processes share, on one
//! machine or many (`--frontier postgres://USER@HOST[:PORT]/DB`). [`PgFrontier`] and
//! [`PgBatch`] implement the frontier's traits with the same meaning as the SQLite store, and
//! the same tables (`schema.sql`, made and upgraded by `migrate.rs`). This file holds the store
//! types, connecting and the pool, [`blocking`], and the small helpers the others share.
//!
//! **Layout, by trait.** `crawl.rs`: [`Frontier`](crate::frontier::Frontier) (claims, leases,
//! the end of a run), with the claim statements in `claim.rs`; `index_log.rs`:
//! [`IndexLog`](crate::frontier::IndexLog); `read.rs`: [`Reader`](crate::frontier::Reader);
//! `batch.rs`: [`Batch`](crate::frontier::Batch), with the set-based links in `batch/links.rs`.
//!
//! **Sharing.** Capsules are split into 256 shards by a hash of their IP address, and each
//! shard has one owner at a time, under a lease on the database's clock and an epoch that grows
//! with each change of owner (`shard.rs`). A crawler (its id made when the store is opened)
//! takes a fair share of the shards of the live crawlers (by count, giving back only shards
//! without work; shards with work are handed from crawlers with more capsules waiting to those
//! with fewer), renews them about every second while it claims and whenever it renews its
//! leases, and adopts the shards of crawlers that stopped renewing (after `--lease`, 5 minutes
//! by default),
//! with the capsules and URLs they had claimed. Within its shards, work is handed out as in
//! SQLite (capsules leased whole, their due URLs claimed a few at a time), so claims read and
//! mark the crawler's own rows and take no lock another crawler waits for. Rows any crawler may
//! create (capsules, URLs, archived bodies) are inserted at once on a second, autocommitting
//! connection, in key order, so that no batch transaction holds keys another crawler's insert
//! waits for; the news of URLs added to another owner's capsule go to `host_news`, which the
//! owner folds into the capsule's count and due time. A visit is recorded only where the
//! crawler still owns the URL's shard at the epoch it knows (the fence of `shard.rs`). The writers
//! of rows every crawler shares (the index's bookkeeping, capsules' standings, suggested seeds)
//! take turns on [`WRITE_LOCK`]; anchor updates on [`SHARED_ROWS_LOCK`] for one statement.
//! Bulk changes of URLs lock their rows in id order, and a transaction the database ends to
//! break a deadlock anyway is run again ([`transact`]). A
//! crawler stopped inside a transaction (SIGSTOP, a machine that died, a cut network) holds
//! its row locks only until the database ends a session idle in a transaction for longer than
//! the lease (at most a minute, [`idle_in_transaction_bound`]); TCP keepalives
//! on both ends notice a dead peer within about a minute. The crawler whose session was ended
//! fails with an error saying so when it runs again; what it had not committed is rolled back.
//!
//! **Blocking.** The client is the synchronous `postgres` crate, whose calls drive a runtime of
//! their own; the crawl loop calls the frontier from inside tokio, so each trait method runs its
//! database work through [`blocking`], which leaves the runtime first. Connections come from an
//! r2d2 pool ([`PgStore`]), two per [`PgFrontier`], kept in its `link.rs`: lent to a batch for
//! its life, or to a crawler's commit running behind its loop on a thread of its own, which
//! the frontier's next statement waits for.

mod batch;
mod claim;
mod crawl;
mod index_log;
mod link;
mod migrate;
mod read;
mod shard;

use std::mem::ManuallyDrop;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use postgres::NoTls;
use r2d2_postgres::PostgresConnectionManager;

pub use batch::PgBatch;

use link::{ConnGuard, Conns, Link};

use super::{FrontierError, Result};

/// A pool of connections to one shared crawl database, and who this crawler is.
#[derive(Clone)]
pub struct PgStore {
    pool: Arc<Pool>,
    crawler: String,
    lease_secs: i64,
}

/// The pool, dropped through [`blocking`]: closing its connections is a call of the client.
struct Pool(Option<r2d2::Pool<PostgresConnectionManager<NoTls>>>);

impl Pool {
    fn get(&self) -> std::result::Result<Conn, r2d2::Error> {
        self.0.as_ref().expect("the pool lives until dropped").get()
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        if let Some(pool) = self.0.take() {
            blocking(move || drop(pool));
        }
    }
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore")
            .field("crawler", &self.crawler)
            .field("lease_secs", &self.lease_secs)
            .finish_non_exhaustive()
    }
}

impl PgStore {
    /// Connects to the database at `url` (`postgres://USER@HOST[:PORT]/DB`), creating or
    /// upgrading its schema when `migrate` (writers; readers refuse an old or missing schema).
    /// Leases this crawler takes last `lease` unless renewed.
    pub fn connect(url: &str, lease: Duration, migrate: bool) -> Result<Self> {
        let mut config: postgres::Config = url
            .parse()
            .map_err(|e: postgres::Error| FrontierError::Postgres(e.to_string()))?;
        bound_sessions(&mut config, lease);
        let manager = PostgresConnectionManager::new(config, NoTls);
        let pool = blocking(|| {
            r2d2::Pool::builder()
                .max_size(8)
                .connection_timeout(Duration::from_secs(30))
                .build(manager)
        })
        .map_err(|e| FrontierError::Postgres(format!("{url}: {e}")))?;
        let store = PgStore {
            pool: Arc::new(Pool(Some(pool))),
            crawler: format!(
                "{}-{}-{}",
                hostname(),
                std::process::id(),
                &uuid::Uuid::new_v4().simple().to_string()[..8]
            ),
            lease_secs: lease.as_secs().max(1) as i64,
        };
        let mut conn = store.connection()?;
        blocking(move || {
            let checked = if migrate {
                migrate::prepare(&mut conn)
            } else {
                migrate::check(&mut conn)
            };
            // Given back here: the pool closes a connection that failed, a call of the
            // client, which panics if made on the runtime's thread (seen when a database
            // ended the session during the migration).
            drop(conn);
            checked
        })?;
        Ok(store)
    }

    /// This crawler's id, as leases name it.
    pub fn crawler(&self) -> &str {
        &self.crawler
    }

    /// The same store under a crawler id of the caller's: a crawl names itself after its data
    /// directory, so that after a crash it takes its own claims back at once.
    pub fn with_crawler(mut self, id: &str) -> Self {
        self.crawler = format!("{}-{id}", hostname());
        self
    }

    /// A connection of its own, for one user (the crawl loop, the indexing thread, a reader).
    pub fn frontier(&self) -> Result<PgFrontier> {
        // No heartbeat here: a crawler registers when it first syncs its shards (its first
        // claim), so that processes that only seed or read never count as live crawlers whose
        // share of the shards the others leave free.
        let (conn, side) = blocking(|| {
            let conn = self.pool.get()?;
            // The first goes back to the pool here if the second cannot be had (see
            // `connect`).
            let side = self.pool.get()?;
            Ok::<_, r2d2::Error>((conn, side))
        })
        .map_err(|e| FrontierError::Postgres(e.to_string()))?;
        Ok(PgFrontier {
            link: ManuallyDrop::new(Link::new(Conns {
                conn,
                statements: batch::Prepared::default(),
                side,
                side_statements: batch::Prepared::default(),
            })),
            owned: shard::Owned::default(),
            crawler: self.crawler.clone(),
            lease_secs: self.lease_secs,
            passed_over: Vec::new(),
            ids: batch::Ids::default(),
            anchor_marks: Mutex::default(),
        })
    }

    fn connection(&self) -> Result<Conn> {
        blocking(|| self.pool.get()).map_err(|e| FrontierError::Postgres(e.to_string()))
    }
}

type Conn = r2d2::PooledConnection<PostgresConnectionManager<NoTls>>;

/// The longest a session may sit idle inside a transaction before the database ends it: the
/// lease, at most a minute. A write transaction holds row locks (and some hold [`WRITE_LOCK`]),
/// so a crawler stopped inside one (SIGSTOP, a machine that died, a cut network) would
/// otherwise keep the crawler adopting its shards, or every writer, waiting until TCP noticed,
/// hours later. A working crawler's transactions are never
/// idle for more than milliseconds (their statements follow one another, and the crawl loop
/// waits at most a few milliseconds for more results to record in one); one idle for its whole
/// lease is as dead as one that stopped renewing it, and the minute caps how long a crawl with
/// long leases stands still.
fn idle_in_transaction_bound(lease: Duration) -> Duration {
    lease.clamp(Duration::from_secs(1), Duration::from_secs(60))
}

/// How long a connection may go without a sign of life from the other end before TCP
/// keepalives probe it, the gap between probes, and how many unanswered probes end it: a dead
/// database machine or a cut network is noticed within about a minute, by the client (which
/// would wait for an answer forever) and by the server (which holds the session until then).
const KEEPALIVE_IDLE: Duration = Duration::from_secs(30);
const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(10);
const KEEPALIVE_RETRIES: u32 = 3;

/// Sets what every connection of a crawler's pool is opened with: the bound on a session idle
/// in a transaction ([`idle_in_transaction_bound`]), TCP keepalives on both ends, no JIT
/// compilation, and an application name saying which process it is (`pg_stat_activity`,
/// `pg_locks`). Settings in the URL's own `options` come after these, so they win.
///
/// JIT is off because every statement geode runs reads or writes a few hundred rows by
/// index, and the database compiles a statement whose estimated cost passes `jit_above_cost`
/// (the shard sync's and the index writer's label walk, whose row estimates run into the
/// millions while they touch hundreds): 130 to 240 ms of compiling for a statement that then
/// runs in 2, measured in the shared-crawl benchmark.
fn bound_sessions(config: &mut postgres::Config, lease: Duration) {
    let idle_ms = idle_in_transaction_bound(lease).as_millis();
    let ours = format!(
        "-c idle_in_transaction_session_timeout={idle_ms} -c tcp_keepalives_idle={} \
         -c tcp_keepalives_interval={} -c tcp_keepalives_count={KEEPALIVE_RETRIES} -c jit=off",
        KEEPALIVE_IDLE.as_secs(),
        KEEPALIVE_INTERVAL.as_secs(),
    );
    let options = match config.get_options() {
        Some(theirs) if !theirs.trim().is_empty() => format!("{ours} {theirs}"),
        _ => ours,
    };
    config
        .options(&options)
        .keepalives(true)
        .keepalives_idle(KEEPALIVE_IDLE)
        .keepalives_interval(KEEPALIVE_INTERVAL)
        .keepalives_retries(KEEPALIVE_RETRIES);
    if config.get_application_name().is_none() {
        config.application_name(&format!("geode pid {}", std::process::id()));
    }
}

/// A connection to the shared crawl database, held by one user in one crawler.
pub struct PgFrontier {
    /// Its two connections and their prepared statements (`link.rs`): the main one, for its
    /// transactions and reads, and a side one, for the rows any crawler may create (capsules,
    /// URLs): each insert there is a transaction of its own, committed at once, so that no
    /// crawler's transaction ever waits on a key another crawler's open transaction inserted
    /// (two batches inserting the same new URLs in different orders would deadlock). A batch
    /// rolled back leaves the URLs it made known, which is what finding them means anyway.
    /// Dropped by hand, through [`blocking`] (a connection the pool closes is a call of the
    /// client, and a commit running behind is waited for).
    link: ManuallyDrop<Link>,
    /// The shards this crawler owns (see `shard.rs`).
    owned: shard::Owned,
    crawler: String,
    lease_secs: i64,
    /// Capsules out of this crawler's scope, passed over until its run ends (kept here, not in
    /// the database: another crawler's scope may hold them).
    passed_over: Vec<i64>,
    /// Ids of capsules and URLs met by batches (see [`PgBatch`]).
    ids: batch::Ids,
    /// The marks of the anchor updates last read (`anchor_updates.seq`), by URL id: clearing
    /// one forgets it only if nobody marked it again since.
    anchor_marks: Mutex<std::collections::HashMap<i64, i64>>,
}

impl Drop for PgFrontier {
    fn drop(&mut self) {
        // SAFETY: `link` is taken once, here, and never used again.
        let link = unsafe { ManuallyDrop::take(&mut self.link) };
        blocking(move || drop(link));
    }
}

impl From<postgres::Error> for FrontierError {
    fn from(e: postgres::Error) -> Self {
        // A session ended under a crawler (see [`idle_in_transaction_bound`]) is seen as the
        // database's message, or, once the socket is gone, as a closed connection.
        use postgres::error::SqlState;
        if e.code() == Some(&SqlState::IDLE_IN_TRANSACTION_SESSION_TIMEOUT) {
            return FrontierError::Postgres(format!(
                "the database ended this crawler's session: it sat idle in a transaction \
                 longer than its lease (--lease, at most a minute) allows: was the process \
                 stopped? {ENDED}"
            ));
        }
        if e.is_closed() {
            return FrontierError::Postgres(format!(
                "the connection to the database is closed: the database stopped, or it ended \
                 this crawler's session, as it does to one idle in a transaction longer than \
                 its lease (--lease, at most a minute) allows (was the process stopped?). \
                 {ENDED}"
            ));
        }
        // The database's own message (with its detail) says more than the client's summary.
        let text = match e.as_db_error() {
            Some(db) => match db.detail() {
                Some(detail) => format!("{}: {detail}", db.message()),
                None => db.message().to_string(),
            },
            None => e.to_string(),
        };
        if e.code() == Some(&SqlState::T_R_DEADLOCK_DETECTED)
            || e.code() == Some(&SqlState::T_R_SERIALIZATION_FAILURE)
        {
            return FrontierError::PostgresConflict(text);
        }
        FrontierError::Postgres(text)
    }
}

/// What a crawler whose session was ended leaves behind.
const ENDED: &str = "Nothing it had not committed was kept; its leases run out and the other \
                     crawlers take its work over";

/// Runs a call of the synchronous client, whose calls drive a runtime of their own and so may
/// not run where tokio's runtime is entered (the crawl loop's thread). In a multi-threaded
/// runtime (the crawl's) it runs in place after leaving the runtime (`block_in_place`, which
/// also serves the thread of `Runtime::block_on`); in a current-thread runtime, on a short-lived
/// thread of its own, which the caller waits for; elsewhere (the index writer, tests) as is.
pub(crate) fn blocking<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    use tokio::runtime::{Handle, RuntimeFlavor};
    match Handle::try_current().map(|h| h.runtime_flavor()) {
        Err(_) => f(),
        Ok(RuntimeFlavor::MultiThread) => tokio::task::block_in_place(f),
        Ok(_) => std::thread::scope(|s| {
            s.spawn(f)
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        }),
    }
}

/// The machine's name, for crawler ids (an operator reading the leases sees who holds what).
fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "crawler".into())
}

/// The database's clock, in unix seconds: the one clock every crawler's leases are read by.
const DB_NOW: &str = "EXTRACT(EPOCH FROM clock_timestamp())::BIGINT";
/// The database's clock in unix milliseconds, for the gaps between requests to an address.
const DB_NOW_MS: &str = "(EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::BIGINT";

impl PgFrontier {
    /// This crawler's id, as leases name it.
    pub fn crawler(&self) -> &str {
        &self.crawler
    }

    /// The connection, for one statement or a few in a row (callers run inside [`blocking`]).
    fn db(&self) -> ConnGuard<'_> {
        self.link.conn()
    }

    /// The first column of every row `sql` returns.
    fn column<T: postgres::types::FromSqlOwned>(
        &self,
        sql: &str,
        params: &[&(dyn postgres::types::ToSql + Sync)],
    ) -> Result<Vec<T>> {
        Ok(self
            .db()
            .query(sql, params)?
            .iter()
            .map(|r| r.get(0))
            .collect())
    }

    /// The first column of the row `sql` returns, if it returns one.
    fn first<T: postgres::types::FromSqlOwned>(
        &self,
        sql: &str,
        params: &[&(dyn postgres::types::ToSql + Sync)],
    ) -> Result<Option<T>> {
        Ok(self.db().query_opt(sql, params)?.map(|r| r.get(0)))
    }
}

/// The key of the advisory lock the index's bookkeeping (`index_log.rs`), capsules' standings
/// and suggested seeds take first, so that those writers take turns; crawlers' claims and
/// batches write rows of their own shards and never take it.
const WRITE_LOCK: i64 = 0x6765_6f64_6531; // "geode1"

/// The key of the advisory lock a batch takes for its last statement, which writes the rows
/// every crawler shares (archived bodies, anchor updates): a body one crawler stops needing is
/// deleted only while no other is inserting it for a response of its own. The index writer
/// takes it to forget anchor updates, so that no two writers of those rows wait for each other
/// in a cycle.
pub(super) const SHARED_ROWS_LOCK: i64 = 0x6765_6f64_6532; // "geode2"

/// Begins a write transaction in turn with the other writers of [`WRITE_LOCK`].
fn write_tx(conn: &mut postgres::Client) -> Result<postgres::Transaction<'_>> {
    let mut tx = conn.transaction()?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&WRITE_LOCK])?;
    Ok(tx)
}

/// How many times a transaction the database ended to break a deadlock (or could not
/// serialize) is run, in all.
const CONFLICT_TRIES: u32 = 5;

/// Runs `work` in one write transaction on a frontier's main connection (in `link`), taking
/// [`WRITE_LOCK`] first when `turns`, committed when it succeeds, through [`blocking`]. A
/// transaction the database ended to break a deadlock with another session (the index writer's
/// updates of URLs against a crawler's release of its claims, two crawlers' syncs) is run
/// again from the start after a short, random pause, up to [`CONFLICT_TRIES`] times: `work`
/// must be safe to run again (what it did to memory must be done again by it, not added to).
fn transact<T: Send>(
    link: &Link,
    turns: bool,
    mut work: impl FnMut(&mut postgres::Transaction<'_>) -> Result<T> + Send,
) -> Result<T> {
    blocking(|| {
        let mut conn = link.conn();
        let mut tries = 1;
        loop {
            let attempt = (|| {
                let mut tx = if turns {
                    write_tx(&mut conn)?
                } else {
                    conn.transaction()?
                };
                let done = work(&mut tx)?;
                tx.commit()?;
                Ok(done)
            })();
            match attempt {
                Err(FrontierError::PostgresConflict(why)) if tries < CONFLICT_TRIES => {
                    tracing::debug!(tries, %why, "running a transaction again after a conflict");
                    std::thread::sleep(conflict_pause(tries));
                    tries += 1;
                }
                done => return done,
            }
        }
    })
}

/// A pause of 10-40 ms times the tries so far, drawn from the clock's nanoseconds (two
/// sessions that deadlocked do not run again in step).
fn conflict_pause(tries: u32) -> Duration {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    Duration::from_millis(u64::from(tries) * (10 + u64::from(nanos % 31)))
}

/// [`transact`] in turn with the other writers of [`WRITE_LOCK`].
fn write<T: Send>(
    link: &Link,
    work: impl FnMut(&mut postgres::Transaction<'_>) -> Result<T> + Send,
) -> Result<T> {
    transact(link, true, work)
}

/// [`transact`] on rows of this crawler's own (its shards' capsules and URLs), taking no lock.
fn write_own<T: Send>(
    link: &Link,
    work: impl FnMut(&mut postgres::Transaction<'_>) -> Result<T> + Send,
) -> Result<T> {
    transact(link, false, work)
}

/// The earlier of two times, either of which may be missing.
fn earliest<T: Ord>(a: Option<T>, b: Option<T>) -> Option<T> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Column `i` as a status code, clamped to 0..=99.
fn status_of(row: &postgres::Row, i: usize) -> Option<u8> {
    row.get::<_, Option<i64>>(i).map(|s| s.clamp(0, 99) as u8)
}

/// Column `i` as a count; a negative number is 0.
fn count_of(row: &postgres::Row, i: usize) -> u64 {
    row.get::<_, i64>(i).max(0) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_are_bounded_and_the_urls_own_options_come_last() {
        let mut config: postgres::Config = "postgres://geode@127.0.0.1/crawl?options=-c%20idle_in_transaction_session_timeout%3D5000"
            .parse()
            .unwrap();
        bound_sessions(&mut config, Duration::from_secs(300));
        let options = config.get_options().unwrap();
        assert!(options.starts_with("-c idle_in_transaction_session_timeout=60000 "));
        assert!(options.ends_with("-c idle_in_transaction_session_timeout=5000"));
        assert!(options.contains("-c tcp_keepalives_idle=30"));
        assert!(options.contains("-c jit=off"));
        assert_eq!(config.get_keepalives_idle(), KEEPALIVE_IDLE);
        assert!(config
            .get_application_name()
            .unwrap()
            .starts_with("geode pid "));

        let mut config: postgres::Config = "postgres://geode@127.0.0.1/crawl".parse().unwrap();
        bound_sessions(&mut config, Duration::from_secs(2));
        assert!(config
            .get_options()
            .unwrap()
            .starts_with("-c idle_in_transaction_session_timeout=2000 "));
        assert_eq!(
            idle_in_transaction_bound(Duration::from_millis(10)),
            Duration::from_secs(1)
        );
    }
}
