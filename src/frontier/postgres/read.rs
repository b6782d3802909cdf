//! What is read from the shared database beside claims: anchors and their updates, the
//! archive, the link graph, seeds, and what `stats`, `show` and `backlinks` print. Each answer
//! means what the SQLite store's does (`sqlite/anchors.rs`, `archive.rs`, `graph.rs`,
//! `seeds.rs`, `stats.rs`).

use std::collections::BTreeSet;

use postgres::fallible_iterator::FallibleIterator;
use postgres::types::ToSql;
use postgres::Row;

use super::{count_of, lock, status_of, write_tx, PgFrontier, Result};
use crate::frontier::archive::decompress;
use crate::frontier::graph::GraphRows;
use crate::frontier::stats::INTERVAL_BUCKETS;
use crate::frontier::Frontier;
use crate::frontier::{
    AnchorUpdate, ArchiveStats, ArchivedResponse, Backlink, CertificateChange, HeldCapsule,
    IndexOp, IndexedContent, IndexedPage, KnownHost, PendingOp, Schedule, Stats, Suggested,
    SuggestedSeed, UrlDetails, MAX_CERTIFICATE_CHANGES, MAX_HELD_LISTED, MAX_REDIRECT_CHAIN,
    MAX_WAITING_SEEDS,
};
use crate::rank::LinkGraph;

/// No parameters, for `query_raw`.
const NO_PARAMS: [&(dyn ToSql + Sync); 0] = [];

/// The distinct labels of links to `id` or to URLs redirecting to it, walked a level at a time,
/// each statement run by `query` (a batch runs them prepared: one round trip each).
pub(super) fn inbound_labels(
    mut query: impl FnMut(&str, &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>>,
    id: i64,
    limit: usize,
) -> Result<Vec<String>> {
    let mut chain = BTreeSet::from([id]);
    let mut level = vec![id];
    for _ in 0..MAX_REDIRECT_CHAIN {
        // Prepared, `redirect_to = ANY($1)` took 0.08 ms a call on the shared-crawl bench
        // (pg_stat_statements) where `redirect_to = $1`, the usual walk of one URL, takes
        // 0.002 ms. `IS NOT NULL` says outright what the partial index `urls_redirected`
        // needs, which `= ANY($1)` alone does not prove.
        let rows = match level.as_slice() {
            [one] => query("SELECT id FROM urls WHERE redirect_to = $1", &[one])?,
            _ => query(
                "SELECT id FROM urls WHERE redirect_to = ANY($1) AND redirect_to IS NOT NULL",
                &[&level],
            )?,
        };
        let next: Vec<i64> = rows
            .iter()
            .map(|r| r.get::<_, i64>(0))
            .filter(|source| chain.insert(*source))
            .collect();
        if next.is_empty() {
            break;
        }
        level = next;
    }
    let targets: Vec<i64> = chain.into_iter().collect();
    let rows = query(
        "SELECT DISTINCT label COLLATE \"C\" FROM links
         WHERE target = ANY($1) AND label != '' ORDER BY 1 LIMIT $2",
        &[&targets, &i64::try_from(limit).unwrap_or(i64::MAX)],
    )?;
    Ok(rows.iter().map(|r| r.get(0)).collect())
}

impl PgFrontier {
    /// Up to `limit` pages whose anchors changed, after `after`, with the indexed page each
    /// stands for.
    pub fn anchor_updates(&self, after: i64, limit: usize) -> Result<Vec<AnchorUpdate>> {
        let ids: Vec<i64> = self
            .db()
            .query(
                "SELECT url_id FROM anchor_updates WHERE url_id > $1 ORDER BY url_id LIMIT $2",
                &[&after, &(limit as i64)],
            )?
            .iter()
            .map(|r| r.get(0))
            .collect();
        let mut updates = Vec::with_capacity(ids.len());
        for dirty_id in ids {
            updates.push(AnchorUpdate {
                dirty_id,
                page: self.indexed_page_for(dirty_id)?,
            });
        }
        Ok(updates)
    }

    fn indexed_page_for(&self, mut id: i64) -> Result<Option<IndexedPage>> {
        for _ in 0..=MAX_REDIRECT_CHAIN {
            let Some(row) = self.db().query_opt(
                "SELECT url, in_index AND index_op IS NULL, redirect_to, status, mime,
                        content_hash IS NULL
                 FROM urls WHERE id = $1",
                &[&id],
            )?
            else {
                return Ok(None);
            };
            let (url, indexed, redirect_to, status, mime, no_hash): (
                String,
                bool,
                Option<i64>,
                Option<i64>,
                Option<String>,
                bool,
            ) = (
                row.get(0),
                row.get(1),
                row.get(2),
                row.get(3),
                row.get(4),
                row.get(5),
            );
            if indexed {
                let header_only = no_hash
                    && !mime
                        .as_deref()
                        .is_some_and(|m| m.to_ascii_lowercase().starts_with("text/"));
                return Ok(Some(IndexedPage {
                    id,
                    url,
                    mime,
                    header_only,
                }));
            }
            match (status, redirect_to) {
                (Some(30..=39), Some(next)) => id = next,
                _ => return Ok(None),
            }
        }
        Ok(None)
    }

    /// Forgets anchor updates once the documents they asked for are committed.
    pub fn clear_anchor_updates(&mut self, ids: &[i64]) -> Result<()> {
        let mut conn = lock(&self.conn);
        let mut tx = write_tx(&mut conn)?;
        tx.execute("DELETE FROM anchor_updates WHERE url_id = ANY($1)", &[&ids])?;
        tx.commit()?;
        Ok(())
    }

    /// Forgets every anchor update.
    pub fn clear_all_anchor_updates(&mut self) -> Result<()> {
        let mut conn = lock(&self.conn);
        let mut tx = write_tx(&mut conn)?;
        tx.execute("DELETE FROM anchor_updates", &[])?;
        tx.commit()?;
        Ok(())
    }

    /// The labels of the links on a page, distinct.
    pub fn own_labels(&self, id: i64) -> Result<Vec<String>> {
        self.strings(
            "SELECT DISTINCT label COLLATE \"C\" FROM links WHERE source = $1 AND label != ''
             ORDER BY 1",
            &[&id],
        )
    }

    /// The distinct labels of the links that point to a URL or to URLs redirecting to it.
    pub fn inbound_labels(&self, id: i64, limit: usize) -> Result<Vec<String>> {
        let mut db = self.db();
        inbound_labels(|sql, params| Ok(db.query(sql, params)?), id, limit)
    }

    /// The archived response of a URL, body included.
    pub fn archived(&self, url_id: i64) -> Result<Option<ArchivedResponse>> {
        let Some(row) = self.db().query_opt(
            "SELECT r.status, r.meta, r.fetched_at, r.cert_sha256, r.body_hash, b.size, b.zstd
             FROM responses r LEFT JOIN bodies b ON b.hash = r.body_hash
             WHERE r.url_id = $1",
            &[&url_id],
        )?
        else {
            return Ok(None);
        };
        let body = match (
            row.get::<_, Option<i64>>(5),
            row.get::<_, Option<Vec<u8>>>(6),
        ) {
            (Some(size), Some(zstd)) => Some(decompress(&zstd, size)?),
            _ => None,
        };
        Ok(Some(ArchivedResponse {
            status: row.get::<_, i64>(0).clamp(0, 99) as u8,
            meta: row.get(1),
            fetched_at: row.get(2),
            cert_sha256: row.get(3),
            body_hash: row.get(4),
            body,
        }))
    }

    /// The body stored under a hash, decompressed.
    pub fn archived_body(&self, hash: &str) -> Result<Option<Vec<u8>>> {
        let row = self
            .db()
            .query_opt("SELECT size, zstd FROM bodies WHERE hash = $1", &[&hash])?;
        row.map(|r| decompress(&r.get::<_, Vec<u8>>(1), r.get(0)))
            .transpose()
    }

    /// How much the archive holds.
    pub fn archive_stats(&self) -> Result<ArchiveStats> {
        let row = self.db().query_one(
            "SELECT COUNT(*), COALESCE(SUM(size), 0)::BIGINT,
                    COALESCE(SUM(LENGTH(zstd)), 0)::BIGINT,
                    (SELECT COUNT(*) FROM responses)
             FROM bodies",
            &[],
        )?;
        Ok(ArchiveStats {
            bodies: count_of(&row, 0),
            raw_bytes: count_of(&row, 1),
            stored_bytes: count_of(&row, 2),
            responses: count_of(&row, 3),
        })
    }

    /// Up to `limit` URLs with an index operation not yet confirmed, after `after`, in id order.
    pub fn pending_index_ops(&self, after: i64, limit: usize) -> Result<Vec<PendingOp>> {
        let rows = self.db().query(
            "SELECT u.id, u.url, h.name, u.content_hash, COALESCE(u.content_meta, u.mime),
                    COALESCE(u.size, 0), COALESCE(u.fetched_at, 0), u.index_op
             FROM urls u JOIN hosts h ON h.id = u.host_id
             WHERE u.index_op IS NOT NULL AND u.id > $1 ORDER BY u.id LIMIT $2",
            &[&after, &(limit as i64)],
        )?;
        Ok(rows
            .iter()
            .map(|r| PendingOp {
                op: IndexOp::parse(r.get(7)),
                page: IndexedContent {
                    id: r.get(0),
                    url: r.get(1),
                    host: r.get(2),
                    content_hash: r.get(3),
                    content_meta: r.get(4),
                    size: count_of(r, 5),
                    fetched_at: r.get(6),
                },
            })
            .collect())
    }

    /// Up to `limit` pages the index holds, after URL id `after`, in id order.
    pub fn indexed_content(&self, after: i64, limit: usize) -> Result<Vec<IndexedContent>> {
        let rows = self.db().query(
            "SELECT u.id, u.url, h.name, u.content_hash, COALESCE(u.content_meta, u.mime),
                    COALESCE(u.size, 0), COALESCE(u.fetched_at, 0)
             FROM urls u JOIN hosts h ON h.id = u.host_id
             WHERE u.in_index AND u.id > $1 ORDER BY u.id LIMIT $2",
            &[&after, &(limit as i64)],
        )?;
        Ok(rows
            .iter()
            .map(|r| IndexedContent {
                id: r.get(0),
                url: r.get(1),
                host: r.get(2),
                content_hash: r.get(3),
                content_meta: r.get(4),
                size: count_of(r, 5),
                fetched_at: r.get(6),
            })
            .collect())
    }

    /// Takes pages out of the frontier's picture of the index (a rebuilt index lacks them).
    pub fn forget_indexed(&mut self, ids: &[i64], now: i64) -> Result<()> {
        let mut conn = lock(&self.conn);
        let mut tx = write_tx(&mut conn)?;
        tx.execute(
            "UPDATE urls SET in_index = FALSE, content_hash = NULL, due_at = $2,
                    state = CASE WHEN state = 'indexed' THEN 'new' ELSE state END
             WHERE id = ANY($1)",
            &[&ids, &now],
        )?;
        tx.execute(
            "UPDATE hosts SET next_due = $1 WHERE id IN
               (SELECT host_id FROM urls WHERE due_at = $1 AND NOT in_index)
               AND (next_due IS NULL OR next_due > $1)",
            &[&now],
        )?;
        tx.commit()?;
        Ok(())
    }

    /// Up to `limit` archived responses after `after` fetched at or after `since`.
    pub fn archived_responses(
        &self,
        after: i64,
        since: i64,
        limit: usize,
    ) -> Result<Vec<(i64, String, ArchivedResponse)>> {
        let rows: Vec<(i64, String)> = self
            .db()
            .query(
                "SELECT r.url_id, u.url FROM responses r JOIN urls u ON u.id = r.url_id
                 WHERE r.url_id > $1 AND r.fetched_at >= $2 ORDER BY r.url_id LIMIT $3",
                &[&after, &since, &(limit as i64)],
            )?
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect();
        let mut out = Vec::with_capacity(rows.len());
        for (id, url) in rows {
            if let Some(response) = self.archived(id)? {
                out.push((id, url, response));
            }
        }
        Ok(out)
    }

    /// The indexed pages and the links between them, resolved through redirects. Rows are
    /// streamed, not collected: at the end of a crawl the graph of the whole index is read.
    pub fn link_graph(&self) -> Result<LinkGraph> {
        let mut rows = GraphRows::default();
        let mut db = self.db();
        let mut urls = db.query_raw(
            "SELECT u.id, u.in_index, u.url, h.name, u.alias_of,
                    CASE WHEN u.status BETWEEN 30 AND 39 THEN u.redirect_to END
             FROM urls u JOIN hosts h ON h.id = u.host_id
             WHERE u.in_index OR u.alias_of IS NOT NULL OR u.redirect_to IS NOT NULL
             ORDER BY u.id",
            NO_PARAMS,
        )?;
        while let Some(row) = urls.next()? {
            let id: i64 = row.get(0);
            if row.get::<_, bool>(1) {
                rows.page(id, row.get(2), row.get(3));
            } else if let Some(canonical) = row.get::<_, Option<i64>>(4) {
                rows.stands_for(id, canonical);
            } else if let Some(target) = row.get::<_, Option<i64>>(5) {
                rows.stands_for(id, target);
            }
        }
        drop(urls);
        rows.links_follow();
        let mut links = db.query_raw(
            "SELECT DISTINCT source, target FROM links ORDER BY source, target",
            NO_PARAMS,
        )?;
        while let Some(row) = links.next()? {
            if let (Some(source), Some(target)) =
                (rows.page_of(row.get(0)), rows.page_of(row.get(1)))
            {
                rows.add_link(source, target);
            }
        }
        Ok(rows.build())
    }

    /// Records a seed someone suggested (at most [`MAX_WAITING_SEEDS`] wait at a time).
    pub fn suggest_seed(
        &mut self,
        url: &str,
        host: &str,
        source: &str,
        now: i64,
    ) -> Result<Suggested> {
        let row = self.db().query_one(
            "SELECT (SELECT COUNT(*) FROM seeds s JOIN urls u ON u.url = s.url
                     WHERE u.state = 'new'),
                    EXISTS (SELECT 1 FROM seeds WHERE url = $1)",
            &[&url],
        )?;
        let (waiting, known_seed): (i64, bool) = (row.get(0), row.get(1));
        if !known_seed && waiting as usize >= MAX_WAITING_SEEDS {
            return Ok(Suggested::QueueFull);
        }
        let added = self.add_seed(url, host, now)?;
        let mut conn = lock(&self.conn);
        let mut tx = write_tx(&mut conn)?;
        tx.execute(
            "INSERT INTO seeds(url, added_at, source) VALUES ($1, $2, $3)
             ON CONFLICT DO NOTHING",
            &[&url, &now, &source],
        )?;
        tx.execute(
            "UPDATE urls SET due_at = $2 WHERE url = $1 AND due_at > $2",
            &[&url, &now],
        )?;
        tx.execute(
            "UPDATE hosts SET next_due = $2
             WHERE id = (SELECT host_id FROM urls WHERE url = $1 AND due_at IS NOT NULL)
               AND (next_due IS NULL OR next_due > $2)",
            &[&url, &now],
        )?;
        tx.commit()?;
        Ok(if added {
            Suggested::New
        } else if known_seed {
            Suggested::AlreadySuggested
        } else {
            Suggested::Known
        })
    }

    /// The seeds people suggested, newest first.
    pub fn suggested_seeds(&self) -> Result<Vec<SuggestedSeed>> {
        let rows = self.db().query(
            "SELECT s.url, s.added_at, s.source, u.state, u.in_index, u.fetched_at
             FROM seeds s LEFT JOIN urls u ON u.url = s.url
             ORDER BY s.added_at DESC, s.url COLLATE \"C\"",
            &[],
        )?;
        Ok(rows
            .iter()
            .map(|r| SuggestedSeed {
                url: r.get(0),
                added_at: r.get(1),
                source: r.get(2),
                state: r
                    .get::<_, Option<String>>(3)
                    .unwrap_or_else(|| "new".into()),
                in_index: r.get::<_, Option<bool>>(4).unwrap_or(false),
                fetched_at: r.get(5),
            })
            .collect())
    }

    /// Counts for `geode stats`.
    pub fn stats(&self, now: i64) -> Result<Stats> {
        let count = |sql: &str| -> Result<u64> { Ok(count_of(&self.db().query_one(sql, &[])?, 0)) };
        let urls_known = count("SELECT COUNT(*) FROM urls")?;
        let pages_indexed = count("SELECT COUNT(*) FROM urls WHERE in_index")?;
        let hosts = count(
            "SELECT COUNT(*) FROM hosts h
             WHERE EXISTS (SELECT 1 FROM urls u WHERE u.host_id = h.id
                           AND u.url LIKE 'gemini://%')",
        )?;
        let duplicates = count("SELECT COUNT(*) FROM urls WHERE error = 'duplicate'")?;
        let query_endpoints = count("SELECT COUNT(*) FROM urls WHERE status IN (10, 11)")?;
        let awaiting_retry =
            count("SELECT COUNT(*) FROM urls WHERE attempts > 0 AND due_at IS NOT NULL")?;
        let certificate_changes = count("SELECT COUNT(*) FROM hosts WHERE cert_changes > 0")?;
        let by_state = self.grouped(
            "SELECT state, COUNT(*) FROM urls GROUP BY state ORDER BY state COLLATE \"C\"",
        )?;
        let errors = self.grouped(
            "SELECT error, COUNT(*) FROM urls WHERE state = 'failed' AND error IS NOT NULL
             GROUP BY error ORDER BY 2 DESC, error COLLATE \"C\"",
        )?;
        let excluded = self.grouped(
            "SELECT COALESCE(error, 'other'), COUNT(*) FROM urls WHERE state = 'excluded'
             GROUP BY 1 ORDER BY 2 DESC, COALESCE(error, 'other') COLLATE \"C\"",
        )?;
        let by_status = self
            .db()
            .query(
                "SELECT status, COUNT(*) FROM urls WHERE status IS NOT NULL
                 GROUP BY status ORDER BY status",
                &[],
            )?
            .iter()
            .map(|r| (status_of(r, 0).unwrap_or(0), count_of(r, 1)))
            .collect();
        let hosts_in_backoff = count_of(
            &self.db().query_one(
                "SELECT COUNT(*) FROM hosts WHERE backoff_until > $1",
                &[&now],
            )?,
            0,
        );
        let held: Vec<HeldCapsule> = self
            .db()
            .query(
                "SELECT name, held_reason, backoff_until FROM hosts
                 WHERE held_reason IS NOT NULL AND backoff_until > $1
                 ORDER BY backoff_until DESC, name COLLATE \"C\"",
                &[&now],
            )?
            .iter()
            .map(|r| HeldCapsule {
                host: r.get(0),
                reason: r.get(1),
                until: r.get(2),
            })
            .collect();
        let capsules_held_back = held.len() as u64;
        let held_back = held.into_iter().take(MAX_HELD_LISTED).collect();
        let certificates_changed = self
            .db()
            .query(
                "SELECT name, cert_changes, cert_first_seen, cert_last_seen FROM hosts
                 WHERE cert_changes > 0 ORDER BY cert_changes DESC, name COLLATE \"C\" LIMIT $1",
                &[&(MAX_CERTIFICATE_CHANGES as i64)],
            )?
            .iter()
            .map(|r| CertificateChange {
                host: r.get(0),
                changes: count_of(r, 1),
                current_since: r.get(2),
                last_seen: r.get(3),
            })
            .collect();
        Ok(Stats {
            urls_known,
            pages_indexed,
            hosts,
            by_state,
            by_status,
            errors,
            excluded,
            duplicates,
            query_endpoints,
            awaiting_retry,
            certificate_changes,
            certificates_changed,
            hosts_in_backoff,
            held_back,
            capsules_held_back,
            last_crawl_started: self.meta("last_crawl_started")?,
            last_crawl_finished: self.meta("last_crawl_finished")?,
            schedule: self.schedule(now)?,
            archive: self.archive_stats()?,
        })
    }

    fn grouped(&self, sql: &str) -> Result<Vec<(String, u64)>> {
        Ok(self
            .db()
            .query(sql, &[])?
            .iter()
            .map(|r| (r.get(0), count_of(r, 1)))
            .collect())
    }

    fn schedule(&self, now: i64) -> Result<Schedule> {
        let row = self.db().query_one(
            "SELECT COUNT(*) FILTER (WHERE due_at <= $1),
                    COUNT(*) FILTER (WHERE due_at <= $1 + 86400),
                    COUNT(*) FILTER (WHERE due_at <= $1 + 604800),
                    COUNT(*) FILTER (WHERE due_at IS NULL AND state != 'new'),
                    COUNT(*) FILTER (WHERE state = 'new'),
                    COUNT(*) FILTER (WHERE feed),
                    COUNT(*) FILTER (WHERE in_index AND first_failed_at IS NOT NULL)
             FROM urls",
            &[&now],
        )?;
        let mut buckets = vec![0u64; INTERVAL_BUCKETS.len()];
        for r in self.db().query(
            "SELECT revisit_secs, COUNT(*) FROM urls
             WHERE revisit_secs IS NOT NULL AND due_at IS NOT NULL AND state != 'excluded'
             GROUP BY revisit_secs",
            &[],
        )? {
            let secs: i64 = r.get(0);
            let at = INTERVAL_BUCKETS
                .iter()
                .position(|&(below, _)| secs < below)
                .unwrap_or(INTERVAL_BUCKETS.len() - 1);
            buckets[at] += count_of(&r, 1);
        }
        Ok(Schedule {
            due_now: count_of(&row, 0),
            due_within_day: count_of(&row, 1),
            due_within_week: count_of(&row, 2),
            never_again: count_of(&row, 3),
            never_visited: count_of(&row, 4),
            feeds: count_of(&row, 5),
            failing_but_searchable: count_of(&row, 6),
            intervals: INTERVAL_BUCKETS
                .iter()
                .zip(buckets)
                .map(|(&(_, label), n)| (label.to_string(), n))
                .collect(),
        })
    }

    /// The capsules with at least one indexed page, sorted by name.
    pub fn known_hosts(&self) -> Result<Vec<KnownHost>> {
        let rows = self.db().query(
            "SELECT h.name, COUNT(*) FILTER (WHERE u.in_index), COUNT(*) FROM hosts h
             JOIN urls u ON u.host_id = h.id
             WHERE u.url LIKE 'gemini://%'
             GROUP BY h.id HAVING COUNT(*) FILTER (WHERE u.in_index) > 0
             ORDER BY h.name COLLATE \"C\"",
            &[],
        )?;
        Ok(rows
            .iter()
            .map(|r| KnownHost {
                name: r.get(0),
                pages_indexed: count_of(r, 1),
                urls_known: count_of(r, 2),
            })
            .collect())
    }

    /// The id of a URL, if known.
    pub fn url_id(&self, url: &str) -> Result<Option<i64>> {
        Ok(self
            .db()
            .query_opt("SELECT id FROM urls WHERE url = $1", &[&url])?
            .map(|r| r.get(0)))
    }

    /// What the crawl database knows of `url`, if anything.
    pub fn url_details(&self, url: &str) -> Result<Option<UrlDetails>> {
        let Some(id) = self.url_id(url)? else {
            return Ok(None);
        };
        let r = self.db().query_one(
            "SELECT u.id, u.url, h.name, u.state, u.in_index, u.status, u.meta, u.error, u.mime,
                    u.size, u.content_hash, u.content_meta, u.fetched_at, u.due_at,
                    u.revisit_secs, u.first_failed_at, u.changed_at, u.visits, u.changes, u.feed,
                    u.depth, r.url, a.url
             FROM urls u JOIN hosts h ON h.id = u.host_id
             LEFT JOIN urls r ON r.id = u.redirect_to
             LEFT JOIN urls a ON a.id = u.alias_of
             WHERE u.id = $1",
            &[&id],
        )?;
        let links_out = self
            .db()
            .query(
                "SELECT t.url, l.label FROM links l JOIN urls t ON t.id = l.target
                 WHERE l.source = $1 ORDER BY t.url COLLATE \"C\", l.label COLLATE \"C\"",
                &[&id],
            )?
            .iter()
            .map(|r| Backlink {
                url: r.get(0),
                label: r.get(1),
            })
            .collect();
        Ok(Some(UrlDetails {
            id: r.get(0),
            url: r.get(1),
            capsule: r.get(2),
            state: r.get(3),
            in_index: r.get(4),
            status: status_of(&r, 5),
            meta: r.get(6),
            error: r.get(7),
            mime: r.get(8),
            size: r.get::<_, Option<i64>>(9).map(|n| n.max(0) as u64),
            content_hash: r.get(10),
            content_meta: r.get(11),
            fetched_at: r.get(12),
            due_at: r.get(13),
            revisit_secs: r.get(14),
            first_failed_at: r.get(15),
            changed_at: r.get(16),
            visits: count_of(&r, 17),
            changes: count_of(&r, 18),
            feed: r.get(19),
            depth: r.get::<_, i64>(20).clamp(0, u32::MAX as i64) as u32,
            redirect_to: r.get(21),
            alias_of: r.get(22),
            links_out,
        }))
    }

    /// Whether the crawl database holds `url`.
    pub fn knows(&self, url: &str) -> Result<bool> {
        Ok(self.url_id(url)?.is_some())
    }

    /// The pages that link to `url` or to a URL that redirected to it, with their labels.
    pub fn backlinks(&self, url: &str) -> Result<Vec<Backlink>> {
        let Some(id) = self.url_id(url)? else {
            return Ok(Vec::new());
        };
        let rows = self.db().query(
            "WITH RECURSIVE chain(id) AS (
                 SELECT $1::BIGINT
                 UNION
                 SELECT u.id FROM urls u JOIN chain c ON u.redirect_to = c.id)
             SELECT DISTINCT s.url COLLATE \"C\", l.label COLLATE \"C\"
             FROM links l JOIN urls s ON s.id = l.source
             WHERE l.target IN (SELECT id FROM chain) AND s.id NOT IN (SELECT id FROM chain)
             ORDER BY 1, 2",
            &[&id],
        )?;
        Ok(rows
            .iter()
            .map(|r| Backlink {
                url: r.get(0),
                label: r.get(1),
            })
            .collect())
    }
}
