//! Versions of the crawl database (`PRAGMA user_version`) and the steps between them. A new
//! database is created at the current version from `schema.sql`; an older one is migrated in one
//! transaction when a crawl opens it, so a crash mid-migration leaves the old version intact.
//! Read-only commands never migrate: they say what to run instead.
//!
//! Versions: 1 (no `user_version`, the first release: one-shot crawling), 2 (the revisit
//! schedule, index membership apart from the crawl state, leases, anchor updates, seeds people
//! suggested, the archive of responses) and 3 (links keyed by target, a page's own links packed
//! in `outlinks`) and 4 (capsules' crawl budgets: `held_reason`, `pages`, `linkers`). A
//! database from version 1 has an empty archive: its pages are archived as the
//! next crawls visit them.

use rusqlite::{params, Connection, TransactionBehavior};

use super::{FrontierError, Result};
use crate::revisit::Priority;

/// The version this geode reads and writes.
pub const CURRENT: i64 = 4;

/// The default interval given to pages fetched before version 2 (the default `--revisit`).
const V1_INTERVAL: i64 = 3 * 24 * 3600;

/// Creates the schema in an empty database, or migrates an older one, or refuses a newer one.
pub(super) fn prepare(conn: &mut Connection) -> Result<()> {
    let version = user_version(conn)?;
    if !has_tables(conn)? {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute_batch(include_str!("schema.sql"))?;
        tx.pragma_update(None, "user_version", CURRENT)?;
        return Ok(tx.commit()?);
    }
    match version {
        CURRENT => additions(conn),
        older @ 0..CURRENT => {
            let started = std::time::Instant::now();
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            if older < 2 {
                v1_to_v2(&tx)?;
            }
            if older < 3 {
                v2_to_v3(&tx)?;
            }
            v3_to_v4(&tx)?;
            tx.pragma_update(None, "user_version", CURRENT)?;
            tx.commit()?;
            tracing::info!(
                secs = started.elapsed().as_secs_f64(),
                "crawl database upgraded to schema {CURRENT}"
            );
            additions(conn)
        }
        newer => Err(FrontierError::Version {
            found: newer,
            supported: CURRENT,
        }),
    }
}

/// What a version gained after it was released without changing its meaning (indexes only): made
/// when missing, by writers. Readers of a file without them only run slower.
fn additions(conn: &Connection) -> Result<()> {
    conn.execute_batch(
        "CREATE INDEX IF NOT EXISTS urls_web_waiting ON urls(id)
             WHERE state = 'excluded' AND error IN ('web', 'not-fetchable');",
    )?;
    // The index of whole content hashes gave way to one of their first 16 digits (schema.sql).
    let whole: bool = conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = 'urls_by_hash')",
        [],
        |r| r.get(0),
    )?;
    if whole {
        let started = std::time::Instant::now();
        conn.execute_batch(
            "BEGIN IMMEDIATE;
             CREATE INDEX IF NOT EXISTS urls_by_hash_prefix ON urls(substr(content_hash, 1, 16))
                 WHERE content_hash IS NOT NULL;
             DROP INDEX urls_by_hash;
             COMMIT;",
        )?;
        tracing::info!(
            secs = started.elapsed().as_secs_f64(),
            "crawl database: content hashes indexed by their first 16 digits"
        );
    }
    Ok(())
}

/// Checks, without writing, that a database is at the current version (for read-only opens).
/// `Ok(false)` for a file without the crawl's tables (a crawl is creating it right now).
pub(super) fn check(conn: &Connection) -> Result<bool> {
    if !has_tables(conn)? {
        return Ok(false);
    }
    match user_version(conn)? {
        CURRENT => Ok(true),
        found if found > CURRENT => Err(FrontierError::Version {
            found,
            supported: CURRENT,
        }),
        found => Err(FrontierError::Outdated {
            found: found.max(1),
            supported: CURRENT,
        }),
    }
}

fn has_tables(conn: &Connection) -> Result<bool> {
    Ok(conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'urls')",
        [],
        |r| r.get(0),
    )?)
}

fn user_version(conn: &Connection) -> Result<i64> {
    Ok(conn.query_row("PRAGMA user_version", [], |r| r.get(0))?)
}

/// Version 1 to 2: the schedule columns, `in_index`/`index_op` in place of the `pending`,
/// `removing` and `queued` states, redirect targets, leases and anchor updates. Pages already
/// fetched come due at the default interval after their fetch; URLs never fetched (and those
/// robots.txt excluded, judged again now) are due at once.
fn v1_to_v2(tx: &rusqlite::Transaction<'_>) -> Result<()> {
    tx.execute_batch(
        "ALTER TABLE hosts ADD COLUMN next_due INTEGER;
         ALTER TABLE hosts ADD COLUMN claimed INTEGER NOT NULL DEFAULT 0;
         ALTER TABLE urls ADD COLUMN redirect_to INTEGER REFERENCES urls(id);
         ALTER TABLE urls ADD COLUMN prio INTEGER NOT NULL DEFAULT 1;
         ALTER TABLE urls ADD COLUMN due_at INTEGER;
         ALTER TABLE urls ADD COLUMN revisit_secs INTEGER;
         ALTER TABLE urls ADD COLUMN first_failed_at INTEGER;
         ALTER TABLE urls ADD COLUMN changed_at INTEGER;
         ALTER TABLE urls ADD COLUMN visits INTEGER NOT NULL DEFAULT 0;
         ALTER TABLE urls ADD COLUMN changes INTEGER NOT NULL DEFAULT 0;
         ALTER TABLE urls ADD COLUMN feed INTEGER NOT NULL DEFAULT 0;
         ALTER TABLE urls ADD COLUMN claimed INTEGER NOT NULL DEFAULT 0;
         ALTER TABLE urls ADD COLUMN in_index INTEGER NOT NULL DEFAULT 0;
         ALTER TABLE urls ADD COLUMN index_op TEXT CHECK (index_op IN ('upsert', 'delete'));
         ALTER TABLE urls ADD COLUMN content_meta TEXT;
         ALTER TABLE urls ADD COLUMN etag TEXT;
         ALTER TABLE urls ADD COLUMN last_modified TEXT;

         -- A removal in flight may still be in the index: recovery will redo it.
         UPDATE urls SET in_index = 1 WHERE state IN ('indexed', 'removing');
         UPDATE urls SET index_op = 'upsert', state = 'indexed' WHERE state = 'pending';
         UPDATE urls SET index_op = 'delete', state = 'fetched' WHERE state = 'removing';
         UPDATE urls SET state = 'new' WHERE state = 'queued';

         UPDATE urls SET due_at = COALESCE(retry_after, 0) WHERE state = 'new';
         UPDATE urls SET due_at = 0 WHERE state = 'excluded' AND error = 'robots';",
    )?;
    tx.execute(
        "UPDATE urls SET revisit_secs = ?1, visits = 1, changed_at = fetched_at,
                changes = (state = 'indexed'),
                due_at = CASE WHEN status = 52 THEN NULL ELSE COALESCE(fetched_at, 0) + ?1 END
         WHERE state IN ('indexed', 'fetched', 'failed')",
        [V1_INTERVAL],
    )?;
    tx.execute_batch(
        "UPDATE urls SET redirect_to = r.id
         FROM (SELECT id, discovered_from FROM urls WHERE hops > 0) AS r
         WHERE r.discovered_from = urls.id AND urls.status BETWEEN 30 AND 39;

         DROP INDEX IF EXISTS urls_by_state;
         DROP INDEX IF EXISTS urls_by_batch;
         ALTER TABLE urls DROP COLUMN retry_after;
         DROP INDEX IF EXISTS links_by_target;

         CREATE INDEX urls_due ON urls(host_id, prio, due_at)
             WHERE claimed = 0 AND due_at IS NOT NULL;
         CREATE INDEX urls_claimed ON urls(host_id) WHERE claimed != 0;
         CREATE INDEX urls_by_op ON urls(batch) WHERE index_op IS NOT NULL;
         CREATE INDEX urls_redirected ON urls(redirect_to) WHERE redirect_to IS NOT NULL;
         CREATE INDEX links_by_target ON links(target, label);
         CREATE INDEX hosts_due ON hosts(next_due) WHERE claimed = 0 AND next_due IS NOT NULL;
         CREATE TABLE anchor_updates (url_id INTEGER PRIMARY KEY REFERENCES urls(id));
         CREATE TABLE seeds (url TEXT PRIMARY KEY, added_at INTEGER NOT NULL,
                             source TEXT NOT NULL) WITHOUT ROWID;
         CREATE TABLE bodies (id INTEGER PRIMARY KEY, hash TEXT NOT NULL UNIQUE,
                              size INTEGER NOT NULL, zstd BLOB NOT NULL);
         CREATE TABLE responses (url_id INTEGER PRIMARY KEY REFERENCES urls(id),
                                 status INTEGER NOT NULL, meta TEXT NOT NULL,
                                 fetched_at INTEGER NOT NULL, cert_sha256 TEXT, body_hash TEXT);
         CREATE INDEX responses_by_body ON responses(body_hash) WHERE body_hash IS NOT NULL;",
    )?;
    // Priorities need the URL parsed: one pass in Rust.
    let rows: Vec<(i64, String, bool)> = {
        let mut stmt = tx.prepare("SELECT id, url, fetched_at IS NOT NULL FROM urls")?;
        let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
        rows.collect::<std::result::Result<_, _>>()?
    };
    {
        let mut set = tx.prepare("UPDATE urls SET prio = ?2 WHERE id = ?1 AND prio != ?2")?;
        for (id, url, visited) in rows {
            let prio = url::Url::parse(&url)
                .map(|u| Priority::of(&u, visited, false))
                .unwrap_or(Priority::Fresh);
            set.execute(params![id, prio as i64])?;
        }
    }
    tx.execute(
        "UPDATE hosts SET next_due = (SELECT MIN(due_at) FROM urls WHERE host_id = hosts.id)",
        [],
    )?;
    Ok(())
}

/// Version 2 to 3: the link graph keyed by target alone, each page's own links packed in
/// `outlinks` (see `outlinks.rs`). Rows are copied in the order of the new keys, so that both
/// tables are written front to back.
fn v2_to_v3(tx: &rusqlite::Transaction<'_>) -> Result<()> {
    tx.execute_batch(
        "CREATE TABLE links_by_target_v3 (
             target INTEGER NOT NULL REFERENCES urls(id),
             label  TEXT NOT NULL DEFAULT '',
             source INTEGER NOT NULL REFERENCES urls(id),
             PRIMARY KEY (target, label, source)
         ) WITHOUT ROWID;
         INSERT INTO links_by_target_v3(target, label, source)
             SELECT target, label, source FROM links ORDER BY target, label, source;
         CREATE TABLE outlinks (
             source INTEGER PRIMARY KEY REFERENCES urls(id),
             links  BLOB NOT NULL
         );",
    )?;
    {
        // Version 2's primary key gives the rows by source, then (target, label): each page's
        // links arrive together and sorted, as `outlinks::encode` wants them.
        let mut stmt =
            tx.prepare("SELECT source, target, label FROM links ORDER BY source, target, label")?;
        let mut rows = stmt.query([])?;
        let mut page: Option<i64> = None;
        let mut links: Vec<(i64, String)> = Vec::new();
        let flush = |source: i64, links: &mut Vec<(i64, String)>| -> Result<()> {
            super::outlinks::write(tx, source, links.iter().map(|(t, l)| (*t, l.as_str())))?;
            links.clear();
            Ok(())
        };
        while let Some(row) = rows.next()? {
            let source: i64 = row.get(0)?;
            if let Some(previous) = page.filter(|&p| p != source) {
                flush(previous, &mut links)?;
            }
            page = Some(source);
            links.push((row.get(1)?, row.get(2)?));
        }
        if let Some(source) = page {
            flush(source, &mut links)?;
        }
    }
    tx.execute_batch(
        "DROP TABLE links;
         ALTER TABLE links_by_target_v3 RENAME TO links;",
    )?;
    Ok(())
}

/// Version 3 to 4: what a capsule's crawl budget needs. Every capsule starts with no standing:
/// the next run's end counts its pages and linkers from the link graph.
fn v3_to_v4(tx: &rusqlite::Transaction<'_>) -> Result<()> {
    tx.execute_batch(
        "ALTER TABLE hosts ADD COLUMN held_reason TEXT;
         ALTER TABLE hosts ADD COLUMN pages INTEGER NOT NULL DEFAULT 0;
         ALTER TABLE hosts ADD COLUMN linkers INTEGER NOT NULL DEFAULT 0;",
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frontier::{Frontier as _, IndexLog as _, Reader as _, SqliteFrontier, UrlState};

    /// The first release's schema, as it created databases.
    const V1_SCHEMA: &str = "
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
        CREATE TABLE hosts (
            id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, robots_status INTEGER,
            robots_txt TEXT, robots_fetched_at INTEGER, cert_sha256 TEXT, cert_first_seen INTEGER,
            cert_last_seen INTEGER, cert_changes INTEGER NOT NULL DEFAULT 0,
            backoff_until INTEGER, backoff_level INTEGER NOT NULL DEFAULT 0,
            url_count INTEGER NOT NULL DEFAULT 0);
        CREATE TABLE urls (
            id INTEGER PRIMARY KEY, url TEXT NOT NULL UNIQUE,
            host_id INTEGER NOT NULL REFERENCES hosts(id),
            state TEXT NOT NULL DEFAULT 'new'
                CHECK (state IN ('new','queued','pending','removing','indexed','fetched',
                                 'failed','excluded')),
            depth INTEGER NOT NULL, hops INTEGER NOT NULL DEFAULT 0,
            discovered_from INTEGER REFERENCES urls(id), alias_of INTEGER REFERENCES urls(id),
            attempts INTEGER NOT NULL DEFAULT 0, retry_after INTEGER, status INTEGER, meta TEXT,
            error TEXT, mime TEXT, size INTEGER, content_hash TEXT, fetched_at INTEGER,
            batch INTEGER);
        CREATE INDEX urls_by_state ON urls(state, host_id, id);
        CREATE INDEX urls_by_batch ON urls(batch) WHERE state IN ('pending', 'removing');
        CREATE INDEX urls_by_hash ON urls(content_hash) WHERE content_hash IS NOT NULL;
        CREATE TABLE links (
            source INTEGER NOT NULL REFERENCES urls(id), target INTEGER NOT NULL REFERENCES urls(id),
            label TEXT NOT NULL DEFAULT '', PRIMARY KEY (source, target, label)) WITHOUT ROWID;
        CREATE INDEX links_by_target ON links(target);";

    #[test]
    fn a_first_release_database_is_migrated_in_place() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("crawl.sqlite");
        {
            let conn = Connection::open(&path).unwrap();
            conn.execute_batch(V1_SCHEMA).unwrap();
            conn.execute_batch(
                "INSERT INTO hosts(id, name) VALUES (1, 'a.test');
                 INSERT INTO urls(id, url, host_id, state, depth, status, fetched_at, content_hash)
                 VALUES (1, 'gemini://a.test/', 1, 'indexed', 0, 20, 1000, 'h1'),
                        (2, 'gemini://a.test/post.gmi', 1, 'pending', 1, 20, 1000, 'h2'),
                        (3, 'gemini://a.test/gone.gmi', 1, 'removing', 1, 52, 1000, NULL),
                        (4, 'gemini://a.test/queued.gmi', 1, 'queued', 1, NULL, NULL, NULL),
                        (5, 'gemini://a.test/private/x', 1, 'excluded', 1, NULL, NULL, NULL),
                        (6, 'gemini://a.test/old', 1, 'fetched', 1, 31, 1000, NULL);
                 UPDATE urls SET error = 'robots' WHERE id = 5;
                 INSERT INTO urls(id, url, host_id, state, depth, hops, discovered_from)
                 VALUES (7, 'gemini://a.test/new', 1, 'new', 1, 1, 6);
                 INSERT INTO links VALUES (1, 2, 'a post');",
            )
            .unwrap();
        }
        let f = SqliteFrontier::open(&path).unwrap();
        let row =
            |f: &SqliteFrontier, id: i64| -> (String, i64, Option<String>, Option<i64>, i64) {
                f.conn
                    .query_row(
                        "SELECT state, in_index, index_op, due_at, prio FROM urls WHERE id = ?1",
                        [id],
                        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)),
                    )
                    .unwrap()
            };
        let day3 = 3 * 24 * 3600;
        assert_eq!(
            row(&f, 1),
            ("indexed".into(), 1, None, Some(1000 + day3), 0)
        );
        assert_eq!(
            row(&f, 2),
            (
                "indexed".into(),
                0,
                Some("upsert".into()),
                Some(1000 + day3),
                2
            )
        );
        assert_eq!(
            row(&f, 3),
            ("fetched".into(), 1, Some("delete".into()), None, 2)
        );
        assert_eq!(row(&f, 4), ("new".into(), 0, None, Some(0), 1));
        assert_eq!(row(&f, 5), ("excluded".into(), 0, None, Some(0), 1));
        let redirect: Option<i64> = f
            .conn
            .query_row("SELECT redirect_to FROM urls WHERE id = 6", [], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(redirect, Some(7));
        let next_due: Option<i64> = f
            .conn
            .query_row("SELECT next_due FROM hosts WHERE id = 1", [], |r| r.get(0))
            .unwrap();
        assert_eq!(next_due, Some(0));
        assert_eq!(f.own_labels(1).unwrap(), ["a post"]);
        assert_eq!(f.inbound_labels(2, 10).unwrap(), ["a post"]);
        assert_eq!(user_version(&f.conn).unwrap(), CURRENT);
        drop(f);
        // Opening again changes nothing, and read-only opens accept it.
        let mut f = SqliteFrontier::open(&path).unwrap();
        SqliteFrontier::open_read_only(&path).unwrap();
        // Recovery settles the operations that were in flight at the old version: the pending
        // page never reached the index and is visited again; the removal is redone too.
        f.recover(0, 5000).unwrap();
        assert_eq!(
            f.urls_in_state(UrlState::Indexed).unwrap(),
            ["gemini://a.test/"]
        );
        assert_eq!(row(&f, 2), ("new".into(), 0, None, Some(5000), 2));
        assert_eq!(row(&f, 3), ("fetched".into(), 1, None, Some(5000), 2));
        assert_eq!(row_op(&f, 2), None);
    }

    fn row_op(f: &SqliteFrontier, id: i64) -> Option<String> {
        f.conn
            .query_row("SELECT index_op FROM urls WHERE id = ?1", [id], |r| {
                r.get(0)
            })
            .unwrap()
    }

    /// Version 2's link graph: keyed by source, with an index by target; and its capsules,
    /// without version 4's budget columns.
    const V2_LINKS: &str = "
        DROP TABLE links;
        DROP TABLE outlinks;
        CREATE TABLE links (
            source INTEGER NOT NULL REFERENCES urls(id), target INTEGER NOT NULL REFERENCES urls(id),
            label TEXT NOT NULL DEFAULT '', PRIMARY KEY (source, target, label)) WITHOUT ROWID;
        CREATE INDEX links_by_target ON links(target, label);
        ALTER TABLE hosts DROP COLUMN held_reason;
        ALTER TABLE hosts DROP COLUMN pages;
        ALTER TABLE hosts DROP COLUMN linkers;
        PRAGMA user_version = 2;";

    #[test]
    fn version_2_links_are_keyed_by_target_and_packed_by_source() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("crawl.sqlite");
        drop(SqliteFrontier::open(&path).unwrap());
        {
            let conn = Connection::open(&path).unwrap();
            conn.execute_batch(V2_LINKS).unwrap();
            conn.execute_batch(
                "INSERT INTO hosts(id, name) VALUES (1, 'a.test');
                 INSERT INTO urls(id, url, host_id, state, depth)
                 VALUES (1, 'gemini://a.test/', 1, 'indexed', 0),
                        (2, 'gemini://a.test/b', 1, 'indexed', 1),
                        (3, 'gemini://a.test/c', 1, 'indexed', 1);
                 INSERT INTO links(source, target, label)
                 VALUES (1, 3, 'see c'), (1, 2, 'see b'), (1, 2, ''), (2, 3, 'also c'),
                        (3, 1, 'home');",
            )
            .unwrap();
        }
        let f = SqliteFrontier::open(&path).unwrap();
        assert_eq!(user_version(&f.conn).unwrap(), CURRENT);
        let packed: Vec<(i64, Vec<u8>)> = {
            let mut stmt = f
                .conn
                .prepare("SELECT source, links FROM outlinks ORDER BY source")
                .unwrap();
            let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).unwrap();
            rows.map(|r| r.unwrap()).collect()
        };
        let unpacked: Vec<(i64, Vec<(i64, &str)>)> = packed
            .iter()
            .map(|(source, bytes)| (*source, super::super::outlinks::decode(bytes).unwrap()))
            .collect();
        let link = |t: i64, l: &'static str| (t, l);
        assert_eq!(
            unpacked,
            [
                (1, vec![link(2, ""), link(2, "see b"), link(3, "see c")]),
                (2, vec![link(3, "also c")]),
                (3, vec![link(1, "home")]),
            ]
        );
        assert_eq!(f.inbound_labels(3, 10).unwrap(), ["also c", "see c"]);
        assert_eq!(f.own_labels(1).unwrap(), ["see b", "see c"]);
        let backlinks: Vec<String> = f
            .backlinks("gemini://a.test/c")
            .unwrap()
            .into_iter()
            .map(|b| format!("{} {}", b.url, b.label))
            .collect();
        assert_eq!(
            backlinks,
            ["gemini://a.test/ see c", "gemini://a.test/b also c"]
        );
        let tables: i64 = f
            .conn
            .query_row(
                "SELECT COUNT(*) FROM sqlite_master WHERE name IN ('links_by_target', 'links_by_target_v3')",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(tables, 0, "the old index and the copy's name are gone");
    }

    #[test]
    fn read_only_opens_refuse_an_old_database_with_a_remedy() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("crawl.sqlite");
        Connection::open(&path)
            .unwrap()
            .execute_batch(V1_SCHEMA)
            .unwrap();
        let err = match SqliteFrontier::open_read_only(&path) {
            Ok(_) => panic!("an old database must be refused"),
            Err(e) => e.to_string(),
        };
        assert!(err.contains("geode crawl"), "{err}");
    }

    #[test]
    fn a_newer_database_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("crawl.sqlite");
        drop(SqliteFrontier::open(&path).unwrap());
        Connection::open(&path)
            .unwrap()
            .pragma_update(None, "user_version", CURRENT + 1)
            .unwrap();
        let err = SqliteFrontier::open(&path)
            .err()
            .expect("refused")
            .to_string();
        assert!(err.contains("newer"), "{err}");
    }
}
