//! [`Batch`] on the PostgreSQL store: [`PgBatch`], one write transaction of a crawler, holding
//! many results, with the meaning of the SQLite store's batch (see `sqlite/batch.rs`): visits,
//! links, redirects, retries, back-offs, robots.txt answers, certificate pins and archived
//! responses. Each statement is a round trip to the database, so the batch writes what it can
//! a set at a time: its visits, its pages' links, the URLs it returns, the capsules it holds
//! back or lets go, its archived responses and bodies and what
//! it tells other crawlers are kept in memory and each written in one statement when it
//! commits (`batch/visits.rs`, `batch/links.rs`, `batch/shared.rs`, whose last statement
//! goes with the COMMIT in one message), or sooner, before a statement that could
//! read or change them (`PgBatch::flush`); the duplicate checks of a round of results read
//! their contents' holders at once ([`Batch::expect_contents`]), and the URLs their pages
//! link to are looked up and inserted at once ([`Batch::expect_links`]); returned URLs are
//! written together too. What stays a statement a page is the lookup and insert of the URLs a
//! page links to that the batch was not told of and has no id for. Each method
//! runs its database work through [`blocking`].
//!
//! **No crawler waits for another.** The transaction updates rows of this crawler's own: URLs
//! it claimed and capsules it leases, in shards it owns (`shard.rs`); a visit to a URL whose
//! shard it lost is refused (the fence). Rows any crawler may create (capsules, URLs, archived
//! bodies) are inserted on the frontier's second connection, each insert committed at once and
//! in key order, so that no open transaction holds a key another crawler waits for. What it
//! learns of capsules that may be another's (URLs added, due times) is appended to
//! `host_news` for their owner to fold in; anchor updates, which every crawler may mark, are
//! written in one statement when the batch commits.

use std::collections::{BTreeSet, HashMap};
use std::time::{Duration, Instant};

use postgres::types::ToSql;
use postgres::{Client, Row, Statement};

mod links;
mod shared;
mod visits;

use links::Wanted;
use visits::PendingVisit;

use super::claim::release;
use super::index_log::inbound_labels;
use super::link::{Conns, Link};
use super::{blocking, earliest, Result, DB_NOW};
use crate::frontier::backoff_end;
use crate::frontier::{
    ArchiveRecord, Batch, ExpectedLinks, FetchResult, LinkReport, NewUrl, PageLinks, Pin, Stored,
    VisitRecord,
};

/// Ids of capsules and URLs by name, as rows of the store have them.
#[derive(Debug, Default)]
pub(super) struct Ids {
    hosts: HashMap<String, i64>,
    urls: HashMap<String, i64>,
    /// Capsules' URL counts as last read, with the URLs this crawler inserted since, and when
    /// they were read (see [`PgBatch::capsule_full`]).
    counts: HashMap<i64, (i64, Instant)>,
}

/// How long a capsule's URL count read by [`PgBatch::capsule_full`] answers for it.
const COUNT_TTL: Duration = Duration::from_secs(10);

/// How many URL ids a [`super::PgFrontier`] keeps in memory at most; emptied when full.
const MAX_CACHED_URLS: usize = 200_000;

/// How long an archived body nothing refers to any more is kept since it was last stored: a
/// crawler that stored it for a response of its own has committed that response long before.
const BODY_GRACE_SECS: i64 = 3600;

/// What a batch learned of capsules, for their owners: the earliest due time of URLs it made
/// due there, and how many URLs it added (less those it moved away).
#[derive(Debug, Default, Clone, Copy)]
struct News {
    due: Option<i64>,
    added: i64,
}

/// One write transaction, begun with its first statement: a batch that writes nothing (the
/// crawl loop opens one each turn) costs no round trip. Dropping it without
/// [`Batch::commit`] rolls everything back.
pub struct PgBatch<'a> {
    /// Where the frontier keeps its connections (`link.rs`), taken from there by the batch's
    /// first statement (after the commit running behind, if any) and given back at its end.
    link: &'a Link,
    /// The connections, with their prepared statements (a statement prepared once is
    /// executed in one round trip instead of two), once taken.
    conns: Option<Conns>,
    /// Ids of capsules and URLs committed before (they never change), and those this
    /// transaction made, cached once it commits (a rollback undoes them).
    ids: &'a mut Ids,
    /// What it has to write, and what it knows of the round.
    kept: Kept,
}

/// What a batch keeps besides its connections: everything it has to write, moved to the
/// thread that commits it behind the crawl loop ([`Batch::commit_soon`]).
#[derive(Default)]
struct Kept {
    /// Whether the transaction was begun, and not yet committed or rolled back.
    begun: bool,
    crawler: String,
    /// The shards this crawler owns and their epochs, for the fence on visits.
    fence: (Vec<i32>, Vec<i64>),
    /// When URLs inserted by this transaction come due.
    now: i64,
    /// Addresses and how long from now no request may reach them (milliseconds), written
    /// at commit in one statement.
    holds: HashMap<String, i64>,
    /// News of capsules, by id, appended to `host_news` at commit.
    news: HashMap<i64, News>,
    /// Anchor updates to mark (true) or forget (false), by URL id, written at commit.
    anchors: std::collections::BTreeMap<i64, bool>,
    /// Anchor updates forgotten since the links the batch keeps were told: forgotten after
    /// those links are written and mark theirs (`batch/links.rs`).
    forgets: BTreeSet<i64>,
    /// Bodies this batch stopped needing, deleted at commit if nothing else needs them.
    forget: BTreeSet<String>,
    /// Responses archived, by URL id (the last of each), written at commit in one statement.
    responses: std::collections::BTreeMap<i64, PendingResponse>,
    /// Bodies archived, by hash, inserted in one statement on the side connection at commit,
    /// or sooner once they hold [`PENDING_BODY_BYTES`].
    bodies: std::collections::BTreeMap<String, (i64, Vec<u8>)>,
    /// The compressed bytes in `bodies`.
    body_bytes: usize,
    /// Visits kept until they are written together (`batch/visits.rs`), by URL id.
    visits: std::collections::BTreeMap<i64, PendingVisit>,
    /// Pages' links kept until they are written together (`batch/links.rs`), by page: the
    /// target, its label and whether the target was known.
    links: std::collections::BTreeMap<i64, Vec<(i64, String, bool)>>,
    /// URLs whose rows the transaction holds (visited in it, or locked for their links), each
    /// past the fence: only their pages' links are written (`batch/visits.rs`).
    held_urls: BTreeSet<i64>,
    /// The URLs holding contents the crawl said it would ask about
    /// ([`Batch::expect_contents`]), as the database had them: the first few of each, and
    /// whether there were more. Forgotten once the batch writes to `urls`.
    contents: HashMap<String, (Vec<Holder>, bool)>,
    /// URLs [`Batch::expect_links`] inserted and no page's links reported as new yet: the
    /// first page to link to one reports it, as if its own statement had inserted it.
    made: std::collections::HashSet<String>,
    /// Claimed URLs returned to the frontier ([`Batch::requeue`]), written together before the
    /// next statement that reads or changes `urls` (a capsule put back returns up to a claim's
    /// worth at once).
    requeued: Vec<i64>,
    /// Capsules held back ([`Batch::set_backoff`], [`Batch::hold_capsule`]): until when, and
    /// why. Written with the URLs returned, in one statement.
    held: std::collections::BTreeMap<i64, (i64, Option<String>)>,
    /// Capsules let go ([`Batch::release_capsule`]), in one statement after the URLs returned
    /// (their next due time counts those).
    released: Vec<i64>,
}

/// A URL holding a content, as [`Kept::contents`] keeps it.
struct Holder {
    id: i64,
    url: String,
    in_index: bool,
    index_op: Option<String>,
}

/// How many URLs holding one content [`Batch::expect_contents`] reads.
const HOLDERS_READ: i64 = 8;

/// A response archived by the batch and not yet written.
struct PendingResponse {
    status: i64,
    meta: String,
    fetched_at: i64,
    cert_sha256: Option<String>,
    body_hash: Option<String>,
}

/// What begins a batch's transaction. Its statements keep the plan the database made for
/// them without their values (a generic plan): left to choose, it planned the links
/// statement anew at every call, each time the same plan (its laterals fix the plan's shape,
/// see `batch/links.rs`), for 0.34 ms, an eighth of the statement's own time
/// (`pg_stat_statements.track_planning` on `scripts/bench-shared-crawl`).
const BEGIN: &str = "BEGIN; SET LOCAL plan_cache_mode = force_generic_plan";

/// How many compressed bytes of bodies a batch holds before it writes them.
const PENDING_BODY_BYTES: usize = 8 << 20;

/// The statements prepared on one connection, by their SQL: a statement prepared once runs in
/// one round trip instead of two. They are prepared again after a while, at doubling
/// intervals from [`REPLAN_FIRST`] to [`REPLAN_MAX`]: the database keeps a statement's plan
/// once it has run a few times, and a plan made while a new crawl's tables held a few hundred
/// rows (a scan of the whole table is the cheapest way then) would still scan them whole at a
/// million. A plan made again sees the tables as large as they are then.
#[derive(Debug)]
pub(super) struct Prepared {
    statements: HashMap<String, Statement>,
    since: Instant,
    every: Duration,
    /// Those prepared with SQL's `PREPARE`, for a message of several statements.
    named: Named,
}

/// Statements prepared by name with SQL's `PREPARE` and run with `EXECUTE`, for a message of
/// several statements (the batch's last: `batch/shared.rs`), where the protocol's prepared
/// statements cannot go: written out in the message, such a statement was parsed, analysed
/// and planned each time (that work, for it and the statements still sent as text, was an
/// eighth of a crawler's database backend under `perf`). A name is unique to
/// its generation in this process, so that it never meets a statement an earlier user of
/// the pooled connection prepared, or one a failed message may have left.
#[derive(Debug)]
struct Named {
    generation: u64,
    /// The keys prepared in this generation.
    made: std::collections::HashSet<String>,
    /// Names of an earlier generation, known to exist, deallocated by the next message.
    stale: Vec<String>,
}

impl Named {
    fn new() -> Self {
        static GENERATIONS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        Named {
            generation: GENERATIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            made: std::collections::HashSet::new(),
            stale: Vec::new(),
        }
    }

    fn name(&self, key: &str) -> String {
        format!("geode_{}_{key}", self.generation)
    }

    /// A new generation, after the statements were planned long enough: those made are
    /// deallocated by the next message.
    fn renew(&mut self) {
        let stale: Vec<String> = self.made.iter().map(|key| self.name(key)).collect();
        let kept = std::mem::take(&mut self.stale);
        *self = Named::new();
        self.stale = kept;
        self.stale.extend(stale);
    }
}

/// A statement run by name inside a message ([`Prepared::named`]): the text to send, and what
/// to note once the message succeeded or failed.
pub(super) struct NamedRun {
    /// `DEALLOCATE`s, `PREPARE` when needed, then the `EXECUTE`, each ending with `;`.
    pub text: String,
    key: String,
    generation: u64,
}

/// When the statements of a connection are first prepared again.
const REPLAN_FIRST: Duration = Duration::from_secs(2);
/// The longest they are kept.
const REPLAN_MAX: Duration = Duration::from_secs(600);

impl Default for Prepared {
    fn default() -> Self {
        Prepared {
            statements: HashMap::new(),
            since: Instant::now(),
            every: REPLAN_FIRST,
            named: Named::new(),
        }
    }
}

impl Prepared {
    /// The statement of `sql` prepared on `conn`: the one prepared before, or prepared now.
    /// Dropping a statement closes it on the server.
    pub(super) fn get(&mut self, conn: &mut Client, sql: &str) -> Result<Statement> {
        self.replan_when_due();
        if let Some(statement) = self.statements.get(sql) {
            return Ok(statement.clone());
        }
        let statement = conn.prepare(sql)?;
        self.statements.insert(sql.to_string(), statement.clone());
        Ok(statement)
    }

    fn replan_when_due(&mut self) {
        if self.since.elapsed() >= self.every {
            self.statements.clear();
            self.named.renew();
            self.since = Instant::now();
            self.every = (self.every * 2).min(REPLAN_MAX);
        }
    }

    /// The text that runs statement `sql` (its parameters `$1`.. of the SQL types `types`) with
    /// `args` (SQL expressions) inside a message: `EXECUTE` of the statement prepared under
    /// `key` (letters, digits and `_`), preceded by its `PREPARE` the first time. The caller
    /// reports how the message went ([`Prepared::ran`]).
    pub(super) fn named(
        &mut self,
        key: &str,
        types: &[&str],
        sql: &str,
        args: &[&str],
    ) -> NamedRun {
        self.replan_when_due();
        let name = self.named.name(key);
        let mut text = String::new();
        for stale in &self.named.stale {
            text.push_str(&format!("DEALLOCATE {stale};\n"));
        }
        if !self.named.made.contains(key) {
            text.push_str(&format!("PREPARE {name}({}) AS {sql};\n", types.join(", ")));
        }
        text.push_str(&format!("EXECUTE {name}({});\n", args.join(", ")));
        NamedRun {
            text,
            key: key.to_string(),
            generation: self.named.generation,
        }
    }

    /// Notes how the message of `run` went. After a success its statement exists and the
    /// stale ones are gone; after a failure the database may have run part of it, so the
    /// names it used are left behind (a new generation), the stale ones too.
    pub(super) fn ran(&mut self, run: NamedRun, ok: bool) {
        if run.generation != self.named.generation {
            return;
        }
        if ok {
            self.named.stale.clear();
            self.named.made.insert(run.key);
        } else {
            self.named = Named::new();
        }
    }
}

impl<'a> PgBatch<'a> {
    pub(super) fn new(
        link: &'a Link,
        ids: &'a mut Ids,
        crawler: String,
        fence: (Vec<i32>, Vec<i64>),
        now: i64,
    ) -> Self {
        if ids.urls.len() > MAX_CACHED_URLS {
            ids.urls.clear();
            ids.counts.clear();
        }
        PgBatch {
            link,
            conns: None,
            ids,
            kept: Kept {
                crawler,
                fence,
                now,
                ..Kept::default()
            },
        }
    }

    /// Moves out what the batch keeps (see [`Kept`]), leaving it empty: nothing to roll back.
    fn take_kept(&mut self) -> Kept {
        std::mem::take(&mut self.kept)
    }

    /// A batch holding `conns` and what another kept, to commit it.
    fn resume(link: &'a Link, ids: &'a mut Ids, conns: Conns, kept: Kept) -> Self {
        PgBatch {
            link,
            conns: Some(conns),
            ids,
            kept,
        }
    }

    /// Whether committing would write nothing: no transaction begun, nothing kept to write.
    fn writes_nothing(&self) -> bool {
        !self.kept.begun
            && self.kept.holds.is_empty()
            && self.kept.news.is_empty()
            && self.kept.anchors.is_empty()
            && self.kept.forgets.is_empty()
            && self.kept.forget.is_empty()
            && self.kept.responses.is_empty()
            && self.kept.bodies.is_empty()
            && self.kept.visits.is_empty()
            && self.kept.links.is_empty()
            && self.kept.requeued.is_empty()
            && self.kept.held.is_empty()
            && self.kept.released.is_empty()
    }

    /// Writes the links and visits the batch keeps, before a statement that may read or
    /// change what they write: statements run in the order the batch was told them, except
    /// that those kept wait for the next statement that could tell.
    /// The visits go first: a target visited in the batch reads as visited to the links, as
    /// it does when they come after it (and they then only mark an update more, never one
    /// less, when they came first).
    fn flush(&mut self) -> Result<()> {
        self.kept.contents.clear();
        self.write_visits()?;
        self.write_requeued()?;
        self.write_held()?;
        self.write_released()?;
        self.write_links()
    }

    /// Writes the URLs [`Batch::requeue`] returned, in one statement.
    fn write_requeued(&mut self) -> Result<()> {
        if self.kept.requeued.is_empty() {
            return Ok(());
        }
        let ids = std::mem::take(&mut self.kept.requeued);
        let crawler = self.kept.crawler.clone();
        // Only this crawler's claims. A capsule it no longer leases (another crawler adopted
        // the shard it moved to when its address was resolved, and let go of it) has its next
        // due time set without these URLs: its owner hears of them, as of URLs other writers
        // add, or nobody would claim them again.
        self.exec_now(
            "WITH r AS (
                 UPDATE urls SET claimed = 0, claimed_by = NULL
                 WHERE id = ANY($1) AND claimed = 1 AND claimed_by = $2
                 RETURNING host_id, due_at)
             INSERT INTO host_news(host_id, due)
             SELECT r.host_id, MIN(r.due_at) FROM r JOIN hosts h ON h.id = r.host_id
             WHERE h.leased_by IS DISTINCT FROM $2 AND r.due_at IS NOT NULL
             GROUP BY r.host_id",
            &[&ids, &crawler],
        )?;
        Ok(())
    }

    /// Writes the capsules held back, in one statement.
    fn write_held(&mut self) -> Result<()> {
        if self.kept.held.is_empty() {
            return Ok(());
        }
        let (ids, (untils, reasons)): (Vec<_>, (Vec<_>, Vec<_>)) =
            std::mem::take(&mut self.kept.held).into_iter().unzip();
        self.exec_now(
            "UPDATE hosts h SET backoff_until = c.until, held_reason = c.reason
             FROM unnest($1::BIGINT[], $2::BIGINT[], $3::TEXT[]) AS c(id, until, reason)
             WHERE h.id = c.id",
            &[&ids, &untils, &reasons],
        )?;
        Ok(())
    }

    /// Lets go of the capsules released, in one statement.
    fn write_released(&mut self) -> Result<()> {
        if self.kept.released.is_empty() {
            return Ok(());
        }
        let ids = std::mem::take(&mut self.kept.released);
        let crawler = self.kept.crawler.clone();
        release(self.tx()?, &crawler, &ids)
    }

    /// What [`Batch::same_content`] answers from the contents read by
    /// [`Batch::expect_contents`] and the visits kept: `None` when it cannot tell (a content
    /// not read, a visit kept that gives the content to a URL read as not holding it, or
    /// more holders than were read and none of those read still holding it).
    fn known_content(&self, hash: &str, except: i64) -> Option<Option<String>> {
        let (holders, more) = self.kept.contents.get(hash)?;
        let holds = |h: &Holder| {
            let visit = self.kept.visits.get(&h.id);
            let hash_after = visit.and_then(|v| v.content_hash()).unwrap_or(hash);
            let op_after = visit.and_then(|v| v.index_op()).or(h.index_op.as_deref());
            hash_after == hash && ((h.in_index && op_after.is_none()) || op_after == Some("upsert"))
        };
        let first = holders
            .iter()
            .filter(|h| h.id != except && holds(h))
            .min_by_key(|h| h.id);
        let gained = self.kept.visits.iter().any(|(&id, v)| {
            id != except
                && v.content_hash() == Some(hash)
                && !holders.iter().any(|h| h.id == id)
                && first.map_or(true, |f| id < f.id)
        });
        if gained || (first.is_none() && *more) {
            return None;
        }
        Some(first.map(|h| h.url.clone()))
    }

    /// Inserts the bodies archived so far, in one statement on the side connection, in hash
    /// order (committed at once: another crawler may be storing the same body), or refreshes
    /// when they were stored, so that no crawler's collection takes them meanwhile.
    fn write_bodies(&mut self) -> Result<()> {
        if self.kept.bodies.is_empty() {
            return Ok(());
        }
        let (hashes, (sizes, zstds)): (Vec<_>, (Vec<_>, Vec<_>)) =
            std::mem::take(&mut self.kept.bodies).into_iter().unzip();
        self.kept.body_bytes = 0;
        self.side_rows(
            &format!(
                "INSERT INTO bodies(hash, size, zstd, stored_at)
                 SELECT h, s, z, {DB_NOW}
                 FROM unnest($1::TEXT[], $2::BIGINT[], $3::BYTEA[]) AS b(h, s, z) ORDER BY h
                 ON CONFLICT (hash) DO UPDATE SET stored_at = excluded.stored_at"
            ),
            &[&hashes, &sizes, &zstds],
        )?;
        Ok(())
    }

    /// Writes the responses archived, in one statement: each replaces its URL's, and the body
    /// hash a response had before, when another now, is forgotten at commit if nothing else
    /// needs it (the statement's snapshot holds the responses before it).
    fn write_responses(&mut self) -> Result<()> {
        if self.kept.responses.is_empty() {
            return Ok(());
        }
        let mut ids = Vec::new();
        let mut statuses = Vec::new();
        let mut metas = Vec::new();
        let mut fetched = Vec::new();
        let mut certs = Vec::new();
        let mut hashes = Vec::new();
        for (id, r) in std::mem::take(&mut self.kept.responses) {
            ids.push(id);
            statuses.push(r.status);
            metas.push(r.meta);
            fetched.push(r.fetched_at);
            certs.push(r.cert_sha256);
            hashes.push(r.body_hash);
        }
        let replaced = self.rows_now(
            "WITH v AS (
                 SELECT * FROM unnest($1::BIGINT[], $2::BIGINT[], $3::TEXT[], $4::BIGINT[],
                                      $5::TEXT[], $6::TEXT[])
                     AS v(url_id, status, meta, fetched_at, cert_sha256, body_hash)),
             previous AS (SELECT r.url_id, r.body_hash FROM responses r JOIN v USING (url_id)),
             written AS (
                 INSERT INTO responses(url_id, status, meta, fetched_at, cert_sha256, body_hash)
                 SELECT * FROM v ORDER BY url_id
                 ON CONFLICT (url_id) DO UPDATE SET status = excluded.status,
                     meta = excluded.meta, fetched_at = excluded.fetched_at,
                     cert_sha256 = excluded.cert_sha256, body_hash = excluded.body_hash)
             SELECT p.body_hash FROM previous p JOIN v USING (url_id)
             WHERE p.body_hash IS NOT NULL AND p.body_hash IS DISTINCT FROM v.body_hash",
            &[&ids, &statuses, &metas, &fetched, &certs, &hashes],
        )?;
        for row in replaced {
            self.kept.forget.insert(row.get(0));
        }
        Ok(())
    }

    /// Rows of `sql` run on the side connection, in a transaction of its own.
    fn side_rows(&mut self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>> {
        let Conns {
            side,
            side_statements,
            ..
        } = self.conns()?;
        let statement = side_statements.get(side, sql)?;
        Ok(side.query(&statement, params)?)
    }

    /// Notes news of a capsule: URLs made due there at `due`, and `added` URLs more.
    fn tell(&mut self, host_id: i64, due: Option<i64>, added: i64) {
        let news = self.kept.news.entry(host_id).or_default();
        news.due = earliest(news.due, due);
        news.added += added;
    }

    /// The connection, inside the batch's transaction (begun now if it was not).
    fn tx(&mut self) -> Result<&mut Client> {
        if !self.kept.begun {
            self.conns()?.conn.batch_execute(BEGIN)?;
            self.kept.begun = true;
        }
        Ok(&mut self.conns()?.conn)
    }

    /// The connections, taken from the frontier's link by the first statement.
    fn conns(&mut self) -> Result<&mut Conns> {
        let conns = self.take_conns()?;
        Ok(self.conns.insert(conns))
    }

    /// The connections out of the batch: those it holds, or the link's.
    fn take_conns(&mut self) -> Result<Conns> {
        match self.conns.take() {
            Some(conns) => Ok(conns),
            None => self.link.take(),
        }
    }

    /// The prepared statement of `sql` on the batch's connection.
    fn statement(&mut self, sql: &str) -> Result<Statement> {
        let Conns {
            conn, statements, ..
        } = self.conns()?;
        statements.get(conn, sql)
    }

    /// Runs `sql` in the transaction after the visits and links kept ([`PgBatch::flush`]).
    /// (Statements that may change `urls` go this way: they forget the contents read.)
    fn exec(&mut self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<u64> {
        self.flush()?;
        self.exec_now(sql, params)
    }

    /// Rows of `sql` in the transaction, after the visits and links kept.
    fn rows(&mut self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>> {
        self.flush()?;
        self.rows_now(sql, params)
    }

    fn opt_row(&mut self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<Option<Row>> {
        self.flush()?;
        self.opt_row_now(sql, params)
    }

    /// Runs `sql` in the transaction at once, before the visits and links kept: for
    /// statements that neither read nor change what those write (capsules' rows).
    fn exec_now(&mut self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<u64> {
        let statement = self.statement(sql)?;
        Ok(self.tx()?.execute(&statement, params)?)
    }

    fn rows_now(&mut self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>> {
        let statement = self.statement(sql)?;
        Ok(self.tx()?.query(&statement, params)?)
    }

    fn row_now(&mut self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<Row> {
        let statement = self.statement(sql)?;
        Ok(self.tx()?.query_one(&statement, params)?)
    }

    fn opt_row_now(&mut self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<Option<Row>> {
        let statement = self.statement(sql)?;
        Ok(self.tx()?.query_opt(&statement, params)?)
    }

    /// Forgets the body of the content a URL had before (`old`, its hash), when `new` content
    /// replaced it and nothing else needs it (at commit).
    fn forget_replaced_content(&mut self, old: Option<String>, new: Option<&str>) {
        let Some(new) = new else { return };
        if let Some(old) = old.filter(|old| old != new) {
            self.kept.forget.insert(old);
        }
    }

    /// Keeps a capsule from being fetched before `until`, held back for `reason` (a crawl
    /// budget's, shown by `geode stats`) or backed off (`None`).
    /// Noted in memory, written by the next flush ([`PgBatch::write_held`]).
    fn hold(&mut self, host_id: i64, until: i64, reason: Option<&str>) {
        self.kept
            .held
            .insert(host_id, (until, reason.map(str::to_string)));
    }
}

impl Batch for PgBatch<'_> {
    fn host_id(&mut self, name: &str) -> Result<i64> {
        blocking(|| Ok(self.host_ids(&[name])?[0]))
    }

    fn ensure_url(&mut self, new: &NewUrl, excluded: Option<&str>, budget: u64) -> Result<Stored> {
        let wanted = Wanted {
            new: *new,
            excluded,
        };
        blocking(|| Ok(self.ensure_urls(&[wanted], budget)?[0]))
    }

    fn admit_web_urls(&mut self) -> Result<u64> {
        blocking(|| {
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
                let host = self.host_ids(&[crate::urlnorm::capsule_key(&parsed).as_str()])?[0];
                let now = self.kept.now;
                self.exec(
                    "UPDATE urls SET state = 'new', error = NULL, host_id = $2, due_at = $3
                     WHERE id = $1",
                    &[&id, &host, &now],
                )?;
                if old_host != host {
                    self.tell(old_host, None, -1);
                    self.tell(host, Some(now), 1);
                } else {
                    self.tell(host, Some(now), 0);
                }
                admitted += 1;
            }
            Ok(admitted)
        })
    }

    /// Whether a capsule has `budget` URLs: those its row counts, those other writers told
    /// its owner of (not folded in yet), and those this batch added. A count read less than
    /// [`COUNT_TTL`] ago (with the URLs this crawler inserted since) that is under half the
    /// budget answers without a round trip: other crawlers would have to add half a budget of
    /// the capsule's URLs within seconds to make it wrong, and then only the links of one page
    /// more would be recorded, since the insert of URLs holds the budget itself.
    fn capsule_full(&mut self, host_id: i64, budget: u64) -> Result<bool> {
        let budget = budget.min(i64::MAX as u64) as i64;
        let here = self.kept.news.get(&host_id).map_or(0, |n| n.added);
        if let Some(&(count, at)) = self.ids.counts.get(&host_id) {
            if at.elapsed() < COUNT_TTL && count.saturating_add(here) < budget / 2 {
                return Ok(false);
            }
        }
        let known: i64 = blocking(|| {
            self.row_now(
                "SELECT url_count + COALESCE((SELECT SUM(added)::BIGINT FROM host_news
                                              WHERE host_id = $1), 0)
                 FROM hosts WHERE id = $1",
                &[&host_id],
            )
        })?
        .get(0);
        self.ids.counts.insert(host_id, (known, Instant::now()));
        Ok(known.saturating_add(here).max(0) >= budget)
    }

    /// Records the links of a page, replacing the links it had, a label gained by a page whose
    /// document is `held` marking nothing (see the SQLite store's `set_links_holding`, whose
    /// report this is, link for link): the URLs in a few statements for the page
    /// ([`PgBatch::ensure_urls`]), the links in one ([`PgBatch::replace_links`]).
    fn set_links_holding(&mut self, page: &PageLinks<'_>, budget: u64) -> Result<LinkReport> {
        let (source, depth, links, held) = (page.source, page.depth, page.links, page.held);
        let wanted: Vec<Wanted<'_>> = links
            .iter()
            .map(|link| Wanted {
                new: link.as_new(source, depth),
                excluded: link.excluded,
            })
            .collect();
        blocking(|| {
            let resolved = self.ensure_urls(&wanted, budget)?;
            let mut report = LinkReport::default();
            let mut current: BTreeSet<(i64, &str)> = BTreeSet::new();
            let (mut targets, mut labels, mut known) = (Vec::new(), Vec::new(), Vec::new());
            for (link, resolved) in links.iter().zip(resolved) {
                // Its capsule is full: the link is not kept either.
                let Some((target, is_new)) = resolved else {
                    continue;
                };
                if is_new {
                    report.count_new(link, target, || {
                        self.host_ids(&[link.host.as_str()]).map(|ids| ids[0])
                    })?;
                }
                // Repeated on the page: its first time decides.
                if !current.insert((target, &link.label)) {
                    continue;
                }
                targets.push(target);
                labels.push(link.label.as_str());
                // A URL just added has no document yet, and a held one is not written yet:
                // their anchors are read when they are indexed.
                known.push(!is_new && !held(target));
            }
            self.links_after_forgets()?;
            self.replace_links(source, &targets, &labels, &known);
            Ok(report)
        })
    }

    fn drop_links(&mut self, source: i64) -> Result<()> {
        blocking(|| self.links_after_forgets())?;
        self.replace_links(source, &[], &[], &[]);
        Ok(())
    }

    /// Forgets a page's anchor update, when the batch commits. An update the links the batch
    /// keeps cause was caused before, and is forgotten too: the forget waits for them to be
    /// written (with the commit, or before a page's links are told after it), not they for it.
    fn forget_anchor_update(&mut self, url_id: i64) -> Result<()> {
        if self.kept.links.is_empty() {
            self.kept.anchors.insert(url_id, false);
        } else {
            self.kept.forgets.insert(url_id);
        }
        Ok(())
    }

    /// Looks up and inserts the URLs the pages will link to, in one statement (two when
    /// capsules are new), for [`Batch::set_links_holding`] to find them known: a page whose
    /// content is another URL's, as far as the contents read by [`Batch::expect_contents`]
    /// tell (or an earlier page's here), records no links, and is left out, as is one whose
    /// content was not read. Capsules' room goes to the URLs in the order of the pages.
    fn expect_links(&mut self, pages: &[ExpectedLinks<'_>], budget: u64) -> Result<()> {
        let mut contents: BTreeSet<&str> = BTreeSet::new();
        let mut wanted: Vec<Wanted<'_>> = Vec::new();
        for page in pages {
            if let Some(hash) = page.content {
                let first = contents.insert(hash);
                if !first || self.known_content(hash, page.doc_id) != Some(None) {
                    continue;
                }
            }
            wanted.extend(page.links.iter().map(|link| Wanted {
                new: link.as_new(page.source, page.depth),
                excluded: link.excluded,
            }));
        }
        if wanted.is_empty() {
            return Ok(());
        }
        blocking(|| {
            let resolved = self.ensure_urls(&wanted, budget)?;
            for (w, resolved) in wanted.iter().zip(resolved) {
                if let Some((_, true)) = resolved {
                    self.kept.made.insert(w.new.url.to_string());
                }
            }
            Ok(())
        })
    }

    /// Reads the first URLs holding each content in one statement, for
    /// [`Batch::same_content`] to answer from.
    fn expect_contents(&mut self, hashes: &[&str]) -> Result<()> {
        let wanted: Vec<&str> = hashes
            .iter()
            .copied()
            .filter(|h| !self.kept.contents.contains_key(*h))
            .collect::<BTreeSet<&str>>()
            .into_iter()
            .collect();
        if wanted.is_empty() {
            return Ok(());
        }
        let rows = blocking(|| {
            self.rows_now(
                "SELECT h, u.id, u.url, u.in_index, u.index_op FROM unnest($1::TEXT[]) AS h
                 CROSS JOIN LATERAL (SELECT id, url, in_index, index_op FROM urls
                                     WHERE content_hash = h ORDER BY id LIMIT $2) u",
                &[&wanted, &HOLDERS_READ],
            )
        })?;
        for hash in wanted {
            self.kept
                .contents
                .insert(hash.to_string(), (Vec::new(), false));
        }
        for row in rows {
            let hash: String = row.get(0);
            if let Some((holders, more)) = self.kept.contents.get_mut(&hash) {
                holders.push(Holder {
                    id: row.get(1),
                    url: row.get(2),
                    in_index: row.get(3),
                    index_op: row.get(4),
                });
                *more = holders.len() as i64 >= HOLDERS_READ;
            }
        }
        Ok(())
    }

    /// The first other URL indexed with content `hash`, as it is once the visits the batch
    /// keeps are written: their content hashes and index operations stand in for their rows',
    /// so that the visits need not be written first (a round trip). Answered without a round
    /// trip when the content was read before ([`Batch::expect_contents`]).
    fn same_content(&mut self, hash: &str, except: i64) -> Result<Option<String>> {
        if let Some(known) = self.known_content(hash, except) {
            return Ok(known);
        }
        let (mut ids, mut hashes, mut ops) = (Vec::new(), Vec::new(), Vec::new());
        for (&id, visit) in &self.kept.visits {
            ids.push(id);
            hashes.push(visit.content_hash().map(str::to_string));
            ops.push(visit.index_op());
        }
        let row = blocking(|| {
            self.opt_row_now(
                "SELECT u.url FROM urls u
                 LEFT JOIN unnest($3::BIGINT[], $4::TEXT[], $5::TEXT[]) AS p(id, hash, op)
                     ON p.id = u.id
                 WHERE (u.content_hash = $1 OR u.id = ANY($3)) AND u.id != $2
                   AND COALESCE(p.hash, u.content_hash) = $1
                   AND ((u.in_index AND COALESCE(p.op, u.index_op) IS NULL)
                        OR COALESCE(p.op, u.index_op) = 'upsert')
                 ORDER BY u.id LIMIT 1",
                &[&hash, &except, &ids, &hashes, &ops],
            )
        })?;
        Ok(row.map(|r| r.get(0)))
    }

    fn inbound_labels(&mut self, id: i64, limit: usize) -> Result<Vec<String>> {
        blocking(|| inbound_labels(|sql, params| self.rows(sql, params), id, limit))
    }

    /// Records a visit (see the SQLite store's `record_visit`): kept, and written with the
    /// batch's other visits in one statement (`batch/visits.rs`). A second visit of a URL
    /// the batch keeps one of writes what it keeps first.
    fn record_visit(&mut self, id: i64, visit: &VisitRecord<'_>) -> Result<()> {
        if self.kept.visits.contains_key(&id) {
            blocking(|| self.flush())?;
        }
        self.kept.visits.insert(id, PendingVisit::of(visit));
        Ok(())
    }

    fn record_alias_content(&mut self, id: i64, result: &FetchResult) -> Result<()> {
        blocking(|| {
            let before = self.opt_row(
                "WITH before AS (SELECT content_hash FROM urls WHERE id = $1)
                 UPDATE urls SET state = 'indexed', mime = $2, size = $3, content_hash = $4,
                        content_meta = $5, index_op = 'upsert', first_failed_at = NULL,
                        batch = NULL
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
            let old = before.and_then(|r| r.get(0));
            self.forget_replaced_content(old, result.content_hash.as_deref());
            Ok(())
        })
    }

    fn retry_later(&mut self, id: i64, result: &FetchResult, due_at: i64) -> Result<()> {
        blocking(|| {
            let host = self.opt_row(
                "UPDATE urls SET attempts = attempts + 1, status = $2, meta = $3,
                        due_at = $4, claimed = 0, claimed_by = NULL
                 WHERE id = $1
                 RETURNING host_id",
                &[&id, &result.status.map(i64::from), &result.meta, &due_at],
            )?;
            if let Some(host) = host {
                self.tell(host.get(0), Some(due_at), 0);
            }
            Ok(())
        })
    }

    fn back_off_capsule(&mut self, host_id: i64, now: i64, base: i64, max: i64) -> Result<i64> {
        let level: i64 = blocking(|| {
            self.row_now(
                "UPDATE hosts SET backoff_level = backoff_level + 1 WHERE id = $1
                 RETURNING backoff_level",
                &[&host_id],
            )
        })?
        .get(0);
        let level = level.clamp(0, u32::MAX as i64) as u32;
        let until = backoff_end(now, level, base, max);
        self.set_backoff(host_id, until)?;
        Ok(until)
    }

    fn capsule_answered(&mut self, host_id: i64) -> Result<()> {
        blocking(|| {
            self.exec_now(
                "UPDATE hosts SET backoff_level = 0 WHERE id = $1 AND backoff_level != 0",
                &[&host_id],
            )
        })?;
        Ok(())
    }

    fn note_answer(&mut self, id: i64, result: &FetchResult) -> Result<()> {
        blocking(|| {
            self.exec(
                "UPDATE urls SET status = $2, meta = $3, fetched_at = $4 WHERE id = $1",
                &[
                    &id,
                    &result.status.map(i64::from),
                    &result.meta,
                    &result.fetched_at,
                ],
            )
        })?;
        Ok(())
    }

    fn defer(&mut self, id: i64, result: &FetchResult) -> Result<()> {
        let crawler = self.kept.crawler.clone();
        blocking(|| {
            self.exec(
                "UPDATE urls SET status = $2, meta = $3, claimed = 2, claimed_by = $4
                 WHERE id = $1",
                &[&id, &result.status.map(i64::from), &result.meta, &crawler],
            )
        })?;
        Ok(())
    }

    /// Kept, and written with the others returned before the next statement that could tell
    /// ([`PgBatch::flush`]).
    fn requeue(&mut self, id: i64) -> Result<()> {
        self.kept.requeued.push(id);
        Ok(())
    }

    /// Lets go of a capsule this crawler leased: noted in memory, and written with the others
    /// by the next flush.
    fn release_capsule(&mut self, host_id: i64) -> Result<()> {
        self.kept.released.push(host_id);
        Ok(())
    }

    fn set_robots(&mut self, host_id: i64, status: u8, text: Option<&str>, now: i64) -> Result<()> {
        blocking(|| {
            self.exec_now(
                "UPDATE hosts SET robots_status = $2, robots_txt = $3, robots_fetched_at = $4
                 WHERE id = $1",
                &[&host_id, &i64::from(status), &text, &now],
            )
        })?;
        Ok(())
    }

    fn set_backoff(&mut self, host_id: i64, until: i64) -> Result<()> {
        self.hold(host_id, until, None);
        Ok(())
    }

    fn hold_capsule(&mut self, host_id: i64, until: i64, reason: &str) -> Result<()> {
        self.hold(host_id, until, Some(reason));
        Ok(())
    }

    /// Keeps every crawler from sending a request to `ip` before `wait` from now; noted in
    /// memory only (no call of the client), and written when the batch commits.
    fn hold_address(&mut self, ip: &str, wait: Duration) -> Result<()> {
        let ms = wait.as_millis().min(i64::MAX as u128) as i64;
        let held = self.kept.holds.entry(ip.to_string()).or_insert(ms);
        *held = (*held).max(ms);
        Ok(())
    }

    fn pin_certificate(&mut self, host_id: i64, sha256: &str, now: i64) -> Result<Pin> {
        // One statement: the pin before comes from the row locked first, and the update
        // writes what the comparison decides (first pin, same, or a change counted). The lock
        // is `FOR NO KEY UPDATE`, not `FOR UPDATE`: the latter would keep the side connection
        // from inserting URLs of this capsule (their key check) until this batch commits, and
        // the batch waits for those inserts.
        let row = blocking(|| {
            self.opt_row_now(
                "UPDATE hosts h SET cert_sha256 = $2, cert_last_seen = $3,
                        cert_first_seen = CASE WHEN p.pin IS DISTINCT FROM $2 THEN $3
                                               ELSE h.cert_first_seen END,
                        cert_changes = h.cert_changes
                                       + CASE WHEN p.pin != $2 THEN 1 ELSE 0 END
                 FROM (SELECT cert_sha256 AS pin FROM hosts WHERE id = $1 FOR NO KEY UPDATE) p
                 WHERE h.id = $1
                 RETURNING p.pin",
                &[&host_id, &sha256, &now],
            )
        })?;
        let pinned: Option<String> = row.and_then(|r| r.get(0));
        Ok(match pinned {
            None => Pin::First,
            Some(p) if p == sha256 => Pin::Same,
            Some(previous) => Pin::Changed { previous },
        })
    }

    /// Archives a response: its body on the side connection (committed at once, marked as
    /// stored now, so that no crawler deletes it before this batch's response refers to it),
    /// the response in the batch; the body it had before is forgotten at commit if unused.
    /// Archives a response: kept until the batch commits, then written with the others in a
    /// few statements ([`PgBatch::write_bodies`], [`PgBatch::write_responses`]); nothing the
    /// batch reads meanwhile looks at the archive.
    fn archive(&mut self, url_id: i64, record: &ArchiveRecord<'_>) -> Result<()> {
        let hash = record.body.map(|b| b.hash.to_string());
        if let Some(body) = record.body {
            if !self.kept.bodies.contains_key(body.hash) {
                self.kept.body_bytes += body.zstd.len();
                self.kept.bodies.insert(
                    body.hash.to_string(),
                    (body.size.min(i64::MAX as u64) as i64, body.zstd.to_vec()),
                );
            }
        }
        let replaced = self.kept.responses.insert(
            url_id,
            PendingResponse {
                status: i64::from(record.status),
                meta: record.meta.to_string(),
                fetched_at: record.fetched_at,
                cert_sha256: record.cert_sha256.map(str::to_string),
                body_hash: hash.clone(),
            },
        );
        // A response archived earlier in this batch for the same URL is replaced: its body
        // goes unless the new response has it too.
        if let Some(old) = replaced.and_then(|r| r.body_hash) {
            if Some(&old) != hash.as_ref() {
                let used = self
                    .kept
                    .responses
                    .values()
                    .any(|r| r.body_hash.as_ref() == Some(&old));
                // Not stored yet and needed by nothing of this batch: never stored at all.
                if !used {
                    if let Some((_, zstd)) = self.kept.bodies.remove(&old) {
                        self.kept.body_bytes -= zstd.len();
                    }
                }
                self.kept.forget.insert(old);
            }
        }
        if self.kept.body_bytes >= PENDING_BODY_BYTES {
            blocking(|| self.write_bodies())?;
        }
        Ok(())
    }

    fn commit(mut self: Box<Self>) -> Result<()> {
        blocking(move || {
            self.flush()?;
            self.write_bodies()?;
            self.write_responses()?;
            self.write_shared_and_commit()
        })
    }

    /// Commits on a thread of its own (`link.rs`): the crawl loop goes on meanwhile, and the
    /// frontier's next statement waits for it. A batch that writes nothing costs nothing.
    fn commit_soon(mut self: Box<Self>) -> Result<()> {
        if self.writes_nothing() {
            return Ok(());
        }
        blocking(move || {
            let conns = self.take_conns()?;
            let kept = self.take_kept();
            self.link.commit_behind(move || {
                let home = Link::detached();
                // The commit reads no ids: those are for the statements before it.
                let mut ids = Ids::default();
                let result = Box::new(PgBatch::resume(&home, &mut ids, conns, kept)).commit();
                (home.into_conns(), result)
            })
        })
    }
}

impl Drop for PgBatch<'_> {
    /// Rolls back a batch dropped without a commit, through [`blocking`]: the rollback is a
    /// call of the synchronous client too.
    fn drop(&mut self) {
        let Some(mut conns) = self.conns.take() else {
            return;
        };
        if self.kept.begun {
            // A connection that fails here is broken: the pool drops it, and the database
            // rolls back what it had begun.
            blocking(|| {
                let _ = conns.conn.batch_execute("ROLLBACK");
            });
        }
        self.link.put(conns);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(prepared: &mut Prepared) -> NamedRun {
        prepared.named("k", &["BIGINT"], "SELECT $1", &["1"])
    }

    /// The name a run's text prepares its statement under.
    fn prepared_name(run: &NamedRun) -> String {
        run.text["PREPARE ".len()..]
            .split('(')
            .next()
            .unwrap()
            .to_string()
    }

    #[test]
    fn a_named_statement_is_prepared_once_and_again_after_a_failed_message() {
        let mut prepared = Prepared::default();
        let first = run(&mut prepared);
        assert!(first.text.starts_with("PREPARE geode_"), "{}", first.text);
        assert!(first
            .text
            .contains("(BIGINT) AS SELECT $1;\nEXECUTE geode_"));
        let name = prepared_name(&first);
        assert!(first.text.ends_with(&format!("EXECUTE {name}(1);\n")));
        prepared.ran(first, true);
        let second = run(&mut prepared);
        assert_eq!(second.text, format!("EXECUTE {name}(1);\n"));
        // The database may have run the PREPARE of a message that failed: the next one
        // prepares under another name.
        prepared.ran(second, false);
        let third = run(&mut prepared);
        assert!(third.text.starts_with("PREPARE geode_"), "{}", third.text);
        assert!(!third.text.contains(&format!("{name}(")), "{}", third.text);
    }

    #[test]
    fn named_statements_planned_long_enough_are_deallocated_and_prepared_anew() {
        let mut prepared = Prepared::default();
        let first = run(&mut prepared);
        let name = prepared_name(&first);
        prepared.ran(first, true);
        prepared.since -= prepared.every;
        let again = run(&mut prepared);
        assert!(
            again
                .text
                .starts_with(&format!("DEALLOCATE {name};\nPREPARE geode_")),
            "{}",
            again.text
        );
        prepared.ran(again, true);
        let after = run(&mut prepared);
        assert!(after.text.starts_with("EXECUTE geode_"), "{}", after.text);
        assert!(!after.text.contains("DEALLOCATE"));
    }
}
