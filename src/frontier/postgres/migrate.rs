//! Versions of the shared crawl database (`meta.schema_version`) and the steps between them.
//! The first crawler to connect to an empty database creates the schema from `schema.sql`;
//! crawlers starting at once take turns on a transaction-level advisory lock, so the schema is
//! made once. Readers never migrate: they say what to run instead.
//!
//! Versions: 1 (the first, the SQLite store's schema 2 with leases held by named crawlers);
//! 2 (`addresses.next_at_ms`: the earliest next request to an address, across crawlers);
//! 3 (capsules' crawl budgets: `hosts.held_reason`, `pages`, `linkers`); 4 (shards: `shards`,
//! `hosts.shard` and `hosts.ip`, `host_news`, the function `geode_shard`, `bodies.stored_at`,
//! `anchor_updates.seq`); 5 (`links` without foreign keys: a shared store never deletes a
//! URL, and the two checks cost each link written two lookups, a fifth of the database's
//! work on `scripts/bench-shared-crawl`); 6 (no foreign keys left: those of `urls`,
//! `responses` and `anchor_updates` ran a query of their own for each row written, an eighth
//! of a crawler's database backend under `perf`); 7 (`urls_due` ends with the id, the claim's
//! order, so that a claim reads a capsule's first due URLs and not all of them); 8 (`links`
//! without its key on all three columns, read by page through `links_by_source`: the key held
//! every label a second time, for a uniqueness the writers already keep; every text column in
//! an index compares bytes, `COLLATE "C"`, whatever the cluster's locale).

use postgres::Client;

use super::{FrontierError, Result};

/// The version this geode reads and writes.
pub const CURRENT: i64 = 8;

/// The advisory lock that migrations take in turn.
const MIGRATE_LOCK: i64 = 0x6765_6f64_6530; // "geode0"

/// Version 3 to 4: every capsule in the shard of its name, then `shards.sql`.
const TO_SHARDS: &str = "
ALTER TABLE hosts ADD COLUMN shard INT;
ALTER TABLE hosts ADD COLUMN ip TEXT;
ALTER TABLE bodies ADD COLUMN stored_at BIGINT NOT NULL DEFAULT 0;
ALTER TABLE anchor_updates ADD COLUMN seq BIGINT NOT NULL DEFAULT 0;";

/// Version 4 to 5: the foreign keys of `links` go (their names as PostgreSQL made them).
const TO_LINKS_WITHOUT_KEYS: &str = "
ALTER TABLE links DROP CONSTRAINT IF EXISTS links_source_fkey;
ALTER TABLE links DROP CONSTRAINT IF EXISTS links_target_fkey;";

/// Version 5 to 6: the other foreign keys go (their names as PostgreSQL made them).
const TO_NO_FOREIGN_KEYS: &str = "
ALTER TABLE urls DROP CONSTRAINT IF EXISTS urls_host_id_fkey;
ALTER TABLE urls DROP CONSTRAINT IF EXISTS urls_discovered_from_fkey;
ALTER TABLE urls DROP CONSTRAINT IF EXISTS urls_alias_of_fkey;
ALTER TABLE urls DROP CONSTRAINT IF EXISTS urls_redirect_to_fkey;
ALTER TABLE responses DROP CONSTRAINT IF EXISTS responses_url_id_fkey;
ALTER TABLE anchor_updates DROP CONSTRAINT IF EXISTS anchor_updates_url_id_fkey;";

/// Version 6 to 7: the index of free URLs in claim order (rebuilt: on a large crawl this
/// takes a while, once, with the crawlers waiting for the migration).
const TO_CLAIM_ORDER: &str = "
DROP INDEX IF EXISTS urls_due;
CREATE INDEX urls_due ON urls(host_id, prio, due_at, id) WHERE claimed = 0 AND due_at IS NOT NULL;";

/// Version 7 to 8: `links` without its key, read by page through an index of the page alone,
/// and the text columns in indexes in the bytes' order. The tables are not rewritten; their
/// indexes on those columns are built again (on a large crawl this takes a while, once, with
/// the crawlers waiting for the migration). The key goes first, so that it is not rebuilt.
const TO_SCHEMA_8: &str = r#"
ALTER TABLE links DROP CONSTRAINT IF EXISTS links_pkey;
ALTER TABLE meta ALTER COLUMN key TYPE TEXT COLLATE "C";
ALTER TABLE hosts ALTER COLUMN name TYPE TEXT COLLATE "C",
                  ALTER COLUMN leased_by TYPE TEXT COLLATE "C";
ALTER TABLE urls ALTER COLUMN url TYPE TEXT COLLATE "C",
                 ALTER COLUMN content_hash TYPE TEXT COLLATE "C";
ALTER TABLE links ALTER COLUMN label TYPE TEXT COLLATE "C";
ALTER TABLE bodies ALTER COLUMN hash TYPE TEXT COLLATE "C";
ALTER TABLE responses ALTER COLUMN body_hash TYPE TEXT COLLATE "C";
ALTER TABLE seeds ALTER COLUMN url TYPE TEXT COLLATE "C";
ALTER TABLE crawlers ALTER COLUMN id TYPE TEXT COLLATE "C";
ALTER TABLE addresses ALTER COLUMN ip TYPE TEXT COLLATE "C";
CREATE INDEX IF NOT EXISTS links_by_source ON links(source);"#;

/// Creates the schema in an empty database, upgrades an older one, or refuses a newer one.
pub(super) fn prepare(conn: &mut Client) -> Result<()> {
    let mut tx = conn.transaction()?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATE_LOCK])?;
    match version(&mut tx)? {
        None => {
            tx.batch_execute(include_str!("schema.sql"))?;
            tx.batch_execute(include_str!("shards.sql"))?;
            tx.execute(
                "INSERT INTO meta(key, value) VALUES ('schema_version', $1)",
                &[&CURRENT.to_string()],
            )?;
            tracing::info!("crawl database created on PostgreSQL (schema {CURRENT})");
        }
        Some(CURRENT) => {}
        Some(found) if found > CURRENT => {
            return Err(FrontierError::Version {
                found,
                supported: CURRENT,
            })
        }
        Some(found @ 1..=7) => {
            if found < 2 {
                tx.batch_execute("ALTER TABLE addresses ADD COLUMN next_at_ms BIGINT")?;
            }
            if found < 3 {
                tx.batch_execute(
                    "ALTER TABLE hosts ADD COLUMN held_reason TEXT;
                     ALTER TABLE hosts ADD COLUMN pages BIGINT NOT NULL DEFAULT 0;
                     ALTER TABLE hosts ADD COLUMN linkers BIGINT NOT NULL DEFAULT 0;",
                )?;
            }
            if found < 4 {
                tx.batch_execute(TO_SHARDS)?;
                tx.batch_execute(include_str!("shards.sql"))?;
                tx.batch_execute(
                    "UPDATE hosts SET shard = geode_shard(name);
                     ALTER TABLE hosts ALTER COLUMN shard SET NOT NULL;",
                )?;
            }
            if found < 5 {
                tx.batch_execute(TO_LINKS_WITHOUT_KEYS)?;
            }
            if found < 6 {
                tx.batch_execute(TO_NO_FOREIGN_KEYS)?;
            }
            if found < 7 {
                tx.batch_execute(TO_CLAIM_ORDER)?;
            }
            tx.batch_execute(TO_SCHEMA_8)?;
            tx.execute(
                "UPDATE meta SET value = $1 WHERE key = 'schema_version'",
                &[&CURRENT.to_string()],
            )?;
            tracing::info!("crawl database upgraded from schema {found} to {CURRENT}");
        }
        Some(found) => {
            return Err(FrontierError::Outdated {
                found,
                supported: CURRENT,
            })
        }
    }
    tx.commit()?;
    Ok(())
}

/// Checks, without writing, that the database holds a crawl at the current version.
pub(super) fn check(conn: &mut Client) -> Result<()> {
    match version(conn)? {
        Some(CURRENT) => Ok(()),
        None => Err(FrontierError::Postgres(
            "no crawl in this database (run `geode crawl --frontier` on it first)".into(),
        )),
        Some(found) if found > CURRENT => Err(FrontierError::Version {
            found,
            supported: CURRENT,
        }),
        Some(found) => Err(FrontierError::Outdated {
            found,
            supported: CURRENT,
        }),
    }
}

/// The schema version, `None` for a database without geode's tables.
fn version(conn: &mut impl postgres::GenericClient) -> Result<Option<i64>> {
    let has_meta: bool = conn
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM information_schema.tables
                            WHERE table_schema = current_schema() AND table_name = 'meta')",
            &[],
        )?
        .get(0);
    if !has_meta {
        return Ok(None);
    }
    let value: Option<String> = conn
        .query_opt("SELECT value FROM meta WHERE key = 'schema_version'", &[])?
        .map(|r| r.get(0));
    Ok(value.map(|v| v.parse().unwrap_or(0)))
}
