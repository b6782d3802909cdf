//! The set-based half of [`PgBatch`], for its [`Batch`](crate::frontier::Batch) methods in
//! `batch.rs`: the ids of capsules and URLs pages link to, many at a time, and the statement
//! that replaces pages' links. One statement creates the capsules the batch never saw, one
//! looks up and inserts a page's URLs, or a round's pages' told ahead by `expect_links` (the
//! unknown ones within their capsules' budgets), and one, when the batch commits (or sooner:
//! see `batch.rs`), replaces the links of all the pages it recorded and finds the anchor
//! updates they cause. The meaning is the SQLite store's (`sqlite/batch.rs`), which records the
//! same things one link at a time; what each statement computes at once is what that sequence
//! of calls leaves behind (anchor updates: see [`REPLACE_LINKS`]).
//!
//! Capsules and URLs are created on the side connection, each statement committed at once and
//! inserting in key order: rows several crawlers may create at the same moment, whose keys no
//! open transaction may hold (see `batch.rs`).

use std::collections::{BTreeSet, HashMap};

use super::PgBatch;
use crate::frontier::postgres::Result;
use crate::frontier::{NewUrl, Stored, UrlState};

/// A URL to know the id of, inserted when unknown: as
/// [`Batch::ensure_url`](crate::frontier::Batch::ensure_url) takes it.
pub(in crate::frontier::postgres) struct Wanted<'u> {
    pub new: NewUrl<'u>,
    /// Why it may not be fetched, if it may not: it is then inserted `excluded`.
    pub excluded: Option<&'u str>,
}

/// The ids of URLs, inserting those not known before, each only if its capsule has room
/// (`url_count < budget`, counting the URLs writers told its owner of and it did not fold in
/// yet): one statement, where a lookup and then an insert took two round trips. A capsule's
/// URLs take its room in the order given (`n`), as one insert after the other would. The
/// capsule's row is only read (it is its owner's to write): what was really inserted is
/// appended to `host_news`, with the earliest due time, for the owner to fold in. A URL
/// another crawler inserted after the statement's snapshot conflicts, is not counted, and
/// comes back with `granted` but no id. Two crawlers filling one capsule at the same moment may
/// each take the room the other does not see yet: a budget holds to within one batch of each.
/// Rows are inserted in URL order, so that two such statements never wait for each other in a
/// cycle. (The room is NUMERIC so that an unlimited budget, `i64::MAX`, cannot overflow.)
/// Each row answered: `n`, granted, the id, and whether this statement made it. Known URLs,
/// and the capsules of new ones (each once), are looked up one by one by index (lateral
/// subqueries), whatever the plan's statistics: planned for the 10 rows an `unnest` is guessed
/// to hold, `hosts h WHERE h.id IN (... fresh)` ran as a nested loop over the new URLs for each
/// capsule (36,000 rows dropped for 279 new URLs, seen with `auto_explain`). The room left in
/// each capsule is computed once a capsule (`MATERIALIZED`), not once a new URL.
const INSERT_URLS: &str = "
WITH wanted AS (
    SELECT * FROM unnest($1::TEXT[], $2::BIGINT[], $3::TEXT[], $4::TEXT[], $5::BIGINT[],
                         $6::BIGINT[], $7::BIGINT[], $8::BIGINT[], $9::BIGINT[], $10::BIGINT[])
        WITH ORDINALITY AS w(url, host_id, state, error, prio, depth, hops, discovered_from,
                             alias_of, due_at, n)
),
known AS (
    SELECT w.n, u.id FROM wanted w
    CROSS JOIN LATERAL (SELECT id FROM urls WHERE url = w.url OFFSET 0) u
),
fresh AS (
    SELECT w.* FROM wanted w WHERE NOT EXISTS (SELECT 1 FROM known k WHERE k.n = w.n)
),
room AS MATERIALIZED (
    SELECT h.id, GREATEST($11::BIGINT::NUMERIC - h.url_count
                          - COALESCE((SELECT SUM(n.added) FROM host_news n WHERE n.host_id = h.id), 0),
                          0) AS room
    FROM (SELECT DISTINCT host_id FROM fresh) f
    CROSS JOIN LATERAL (SELECT id, url_count FROM hosts WHERE id = f.host_id OFFSET 0) h
),
ranked AS (
    SELECT w.*, row_number() OVER (PARTITION BY w.host_id ORDER BY w.n) <= r.room AS granted
    FROM fresh w JOIN room r ON r.id = w.host_id
),
inserted AS (
    INSERT INTO urls(url, host_id, state, depth, hops, discovered_from, alias_of, error, prio,
                     due_at)
    SELECT url, host_id, state, depth, hops, discovered_from, alias_of, error, prio, due_at
    FROM ranked WHERE granted ORDER BY url
    ON CONFLICT (url) DO NOTHING
    RETURNING id, url, host_id, due_at
),
news AS (
    INSERT INTO host_news(host_id, due, added)
    SELECT host_id, MIN(due_at), COUNT(*) FROM inserted GROUP BY host_id
)
SELECT r.n, r.granted, i.id, TRUE FROM ranked r LEFT JOIN inserted i ON i.url = r.url
UNION ALL
SELECT k.n, TRUE, k.id, FALSE FROM known k";

/// Replaces the links of the pages `$1` by `$2`..`$5` (source, target, label, each triple
/// once, and whether the target was known, in one array each) and returns, for an anchor
/// update, every target whose labels the batch changed: a label it gained (when the target was
/// known) or lost, whichever pages carry it, unless the target was never visited (its anchors
/// are read when it is indexed). Whether a label was there before comes from the statement's
/// snapshot, which does not see its own changes; whether it is there after, from the links
/// of pages outside `$1` and the new links. A label that moves from one page of the batch to
/// another changes nothing (as when the page that gains it is recorded first, one page at a
/// time). Links are inserted in key order. The batch marks the updates when it commits.
///
/// The links inserted are those the pages did not have: the transaction holds each page's URL
/// row, taken before this statement began (`batch/visits.rs`), so its snapshot shows every
/// link of the page another writer committed, and none can be inserted meanwhile. Hence no
/// `ON CONFLICT` and its check before each insert (a scratch database, 400 links a statement:
/// 2.7-3.1 ms with it, 2.2-2.3 without, 0.5 of which made the rows; `bench-shared-crawl`, one
/// crawler 100 ms from its capsules: this statement 0.20 ms a page, then 0.18).
///
/// The pairs a page gained or lost are narrowed to labelled ones of visited targets, each
/// once, before the two lookups of who else carries the label, which ran for every link before
/// (`bench-shared-crawl`, one crawler: 0.26 ms of the database's time a page, then 0.22; a
/// third of all its statements' time).
///
/// Every row of `links` and `urls` it reads is looked up by index, row by row (lateral
/// subqueries, `OFFSET 0` so that none is turned into a hash of the whole table): the plan is
/// prepared once, when the tables may be small, and kept while they grow to millions of rows.
const REPLACE_LINKS: &str = "
WITH current AS (
    SELECT * FROM unnest($2::BIGINT[], $3::BIGINT[], $4::TEXT[], $5::BOOLEAN[])
        AS c(source, target, label, known)
),
old AS (
    SELECT o.* FROM unnest($1::BIGINT[]) AS p(source)
    CROSS JOIN LATERAL (SELECT ctid AS row, source, target, label FROM links
                        WHERE source = p.source OFFSET 0) o
),
gone AS (
    DELETE FROM links WHERE ctid = ANY(ARRAY(
        SELECT o.row FROM old o
        WHERE NOT EXISTS (SELECT 1 FROM current c WHERE c.source = o.source
                            AND c.target = o.target AND c.label = o.label)))
    RETURNING target, label
),
fresh AS (
    SELECT c.* FROM current c
    WHERE NOT EXISTS (SELECT 1 FROM old o WHERE o.source = c.source
                        AND o.target = c.target AND o.label = c.label)
),
added AS (
    INSERT INTO links(source, target, label)
    SELECT source, target, label FROM fresh ORDER BY source, target, label
),
changed AS (
    SELECT target, label FROM gone WHERE label != ''
    UNION
    SELECT target, label FROM fresh WHERE known AND label != ''
),
visited AS MATERIALIZED (
    SELECT ch.target, ch.label FROM changed ch
    CROSS JOIN LATERAL (SELECT state, in_index FROM urls WHERE id = ch.target OFFSET 0) u
    WHERE NOT (u.state = 'new' AND NOT u.in_index)
),
kept AS (
    SELECT DISTINCT target, label FROM current
)
SELECT DISTINCT v.target FROM visited v
LEFT JOIN kept k ON k.target = v.target AND k.label = v.label
WHERE EXISTS (SELECT 1 FROM links o WHERE o.target = v.target AND o.label = v.label
              OFFSET 0)
      IS DISTINCT FROM
      (k.target IS NOT NULL
       OR EXISTS (SELECT 1 FROM links o
                  WHERE o.target = v.target AND o.label = v.label AND o.source != ALL($1)
                  OFFSET 0))";

impl PgBatch<'_> {
    /// The ids of capsules, creating those that are new, in one statement for all the names
    /// not cached (capsules are created in the order named).
    pub(in crate::frontier::postgres) fn host_ids(&mut self, names: &[&str]) -> Result<Vec<i64>> {
        let mut missing: Vec<&str> = Vec::new();
        for &name in names {
            if self.cached_host(name).is_none() && !missing.contains(&name) {
                missing.push(name);
            }
        }
        if !missing.is_empty() {
            // Only names no row has are inserted, so that no id is drawn for nothing.
            // In name order: see the module's doc.
            let rows = self.side_rows(
                "WITH wanted AS (SELECT * FROM unnest($1::TEXT[]) AS w(name)),
                 inserted AS (
                     INSERT INTO hosts(name, shard)
                     SELECT name, geode_shard(name) FROM wanted w
                     WHERE NOT EXISTS (SELECT 1 FROM hosts h WHERE h.name = w.name)
                     ORDER BY name
                     ON CONFLICT (name) DO NOTHING RETURNING id, name)
                 SELECT id, name FROM inserted
                 UNION ALL
                 SELECT h.id, h.name FROM hosts h JOIN wanted w ON w.name = h.name",
                &[&missing],
            )?;
            for row in rows {
                self.ids.hosts.insert(row.get(1), row.get(0));
            }
            // A capsule another crawler created after this statement began is in neither
            // half of its answer; it is committed now (the insert waited for it).
            let late: Vec<&str> = missing
                .into_iter()
                .filter(|name| self.cached_host(name).is_none())
                .collect();
            if !late.is_empty() {
                for row in
                    self.side_rows("SELECT id, name FROM hosts WHERE name = ANY($1)", &[&late])?
                {
                    self.ids.hosts.insert(row.get(1), row.get(0));
                }
            }
        }
        names
            .iter()
            .map(|name| {
                self.cached_host(name).ok_or_else(|| {
                    crate::frontier::FrontierError::Postgres(format!("capsule {name} not created"))
                })
            })
            .collect()
    }

    fn cached_host(&self, name: &str) -> Option<i64> {
        self.ids.hosts.get(name).copied()
    }

    fn cached_url(&self, url: &str) -> Option<i64> {
        self.ids.urls.get(url).copied()
    }

    /// The ids of many URLs, inserting the unknown ones: for each, what
    /// [`Batch::ensure_url`](crate::frontier::Batch::ensure_url) called on each in turn
    /// returns. A URL is new (`true`) only where it first comes; a capsule's room goes to its
    /// URLs in the order given; `None` where the capsule was full.
    pub(in crate::frontier::postgres) fn ensure_urls(
        &mut self,
        wanted: &[Wanted<'_>],
        budget: u64,
    ) -> Result<Vec<Stored>> {
        let mut found: HashMap<&str, Stored> = HashMap::new();
        // The URLs without a cached id, each once, in order.
        let mut unknown: Vec<&Wanted<'_>> = Vec::new();
        for w in wanted {
            if found.contains_key(w.new.url) {
                continue;
            }
            match self.cached_url(w.new.url) {
                Some(id) => {
                    // Inserted by `expect_links` for this page, or an earlier one of the batch.
                    let made = self.kept.made.remove(w.new.url);
                    found.insert(w.new.url, Some((id, made)));
                }
                None => {
                    found.insert(w.new.url, None);
                    unknown.push(w);
                }
            }
        }
        if !unknown.is_empty() {
            let hosts: Vec<&str> = unknown.iter().map(|w| w.new.host).collect();
            let host_ids = self.host_ids(&hosts)?;
            let mut candidates: Vec<(&Wanted<'_>, i64)> =
                unknown.into_iter().zip(host_ids).collect();
            // Rounds: a URL another crawler inserted meanwhile leaves room to the capsule's
            // next URLs, which the first round refused.
            while !candidates.is_empty() {
                let round = self.insert_urls(&candidates, budget)?;
                for (url, id) in round.known {
                    self.ids.urls.insert(url.to_string(), id);
                    found.insert(url, Some((id, false)));
                }
                for (url, id) in round.made {
                    self.ids.urls.insert(url.to_string(), id);
                    found.insert(url, Some((id, true)));
                }
                if round.conflicted.is_empty() {
                    break;
                }
                let urls: Vec<&str> = round.conflicted.iter().map(|(w, _)| w.new.url).collect();
                for row in
                    self.side_rows("SELECT id, url FROM urls WHERE url = ANY($1)", &[&urls])?
                {
                    let (id, url): (i64, String) = (row.get(0), row.get(1));
                    if let Some(slot) = found.get_mut(url.as_str()) {
                        *slot = Some((id, false));
                    }
                }
                candidates = round.refused;
            }
        }
        // A URL is new where it first comes only: after that, the batch knows it.
        let mut seen: BTreeSet<&str> = BTreeSet::new();
        Ok(wanted
            .iter()
            .map(|w| {
                let first = seen.insert(w.new.url);
                found[w.new.url].map(|(id, new)| (id, new && first))
            })
            .collect())
    }

    /// One round of [`INSERT_URLS`].
    fn insert_urls<'w, 'u>(
        &mut self,
        candidates: &[(&'w Wanted<'u>, i64)],
        budget: u64,
    ) -> Result<Round<'w, 'u>> {
        let mut columns = UrlColumns::default();
        for (w, host_id) in candidates {
            columns.push(w, *host_id, self.kept.now);
        }
        let budget = budget.min(i64::MAX as u64) as i64;
        let rows = self.side_rows(
            INSERT_URLS,
            &[
                &columns.url,
                &columns.host_id,
                &columns.state,
                &columns.error,
                &columns.prio,
                &columns.depth,
                &columns.hops,
                &columns.discovered_from,
                &columns.alias_of,
                &columns.due_at,
                &budget,
            ],
        )?;
        let mut round = Round {
            known: Vec::new(),
            made: Vec::new(),
            conflicted: Vec::new(),
            refused: Vec::new(),
        };
        let mut rows: Vec<(i64, bool, Option<i64>, bool)> = rows
            .iter()
            .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3)))
            .collect();
        rows.sort_unstable_by_key(|r| r.0);
        for (n, granted, id, made) in rows {
            let candidate = candidates[(n - 1) as usize];
            match (granted, id) {
                (true, Some(id)) if !made => round.known.push((candidate.0.new.url, id)),
                (true, Some(id)) => {
                    round.made.push((candidate.0.new.url, id));
                    if let Some((count, _)) = self.ids.counts.get_mut(&candidate.1) {
                        *count += 1;
                    }
                }
                (true, None) => round.conflicted.push(candidate),
                (false, _) => round.refused.push(candidate),
            }
        }
        Ok(round)
    }

    /// Replaces the links of page `source` by these (targets, labels, and whether each target
    /// was known): kept until the batch writes the links of all its pages in one statement
    /// ([`PgBatch::write_links`]). A page recorded again in the batch keeps its last links.
    pub(super) fn replace_links(
        &mut self,
        source: i64,
        targets: &[i64],
        labels: &[&str],
        known: &[bool],
    ) {
        let links = targets
            .iter()
            .zip(labels)
            .zip(known)
            .map(|((&target, &label), &known)| (target, label.to_string(), known))
            .collect();
        self.kept.links.insert(source, links);
    }

    /// Writes the links kept by [`PgBatch::replace_links`] ([`REPLACE_LINKS`]), and notes the
    /// anchor updates they cause, to be marked at commit.
    pub(super) fn write_links(&mut self) -> Result<()> {
        if self.kept.links.is_empty() {
            return Ok(());
        }
        let mut pages = std::mem::take(&mut self.kept.links);
        // A page whose row the transaction does not hold is in a shard another crawler owns
        // now (its visit was refused too): its links are its owner's to write.
        pages.retain(|source, _| {
            let held = self.kept.held_urls.contains(source);
            if !held {
                tracing::warn!(
                    url_id = source,
                    "links not recorded: the page's shard was lost"
                );
            }
            held
        });
        if pages.is_empty() {
            return Ok(());
        }
        let sources: Vec<i64> = pages.keys().copied().collect();
        let (mut from, mut targets, mut labels, mut known) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for (source, links) in &pages {
            for (target, label, is_known) in links {
                from.push(*source);
                targets.push(*target);
                labels.push(label.as_str());
                known.push(*is_known);
            }
        }
        for row in self.rows_now(REPLACE_LINKS, &[&sources, &from, &targets, &labels, &known])? {
            self.kept.anchors.insert(row.get(0), true);
        }
        // Forgotten after these links were told: after what they marked.
        for id in std::mem::take(&mut self.kept.forgets) {
            self.kept.anchors.insert(id, false);
        }
        Ok(())
    }

    /// Before a page's links are kept: the links kept before an anchor update was forgotten
    /// are written first, so that the forget comes after what they mark and before what the
    /// new ones do.
    pub(super) fn links_after_forgets(&mut self) -> Result<()> {
        if self.kept.forgets.is_empty() {
            return Ok(());
        }
        self.flush()
    }
}

/// What one round of [`INSERT_URLS`] did with its candidates (URL and capsule id).
struct Round<'w, 'u> {
    /// Known before, with their ids.
    known: Vec<(&'u str, i64)>,
    /// Inserted, with their ids.
    made: Vec<(&'u str, i64)>,
    /// Inserted first by another crawler.
    conflicted: Vec<(&'w Wanted<'u>, i64)>,
    /// Their capsule had no room left.
    refused: Vec<(&'w Wanted<'u>, i64)>,
}

/// The columns of [`INSERT_URLS`], one array each.
#[derive(Default)]
struct UrlColumns<'u> {
    url: Vec<&'u str>,
    host_id: Vec<i64>,
    state: Vec<&'static str>,
    error: Vec<Option<&'u str>>,
    prio: Vec<i64>,
    depth: Vec<i64>,
    hops: Vec<i64>,
    discovered_from: Vec<Option<i64>>,
    alias_of: Vec<Option<i64>>,
    due_at: Vec<Option<i64>>,
}

impl<'u> UrlColumns<'u> {
    /// A URL to insert: due at `now`, or `excluded` (never due) with its reason.
    fn push(&mut self, w: &Wanted<'u>, host_id: i64, now: i64) {
        let (state, due_at) = match w.excluded {
            Some(_) => (UrlState::Excluded, None),
            None => (UrlState::New, Some(now)),
        };
        self.url.push(w.new.url);
        self.host_id.push(host_id);
        self.state.push(state.as_str());
        self.error.push(w.excluded);
        self.prio.push(w.new.prio as i64);
        self.depth.push(i64::from(w.new.depth));
        self.hops.push(i64::from(w.new.hops));
        self.discovered_from.push(w.new.from);
        self.alias_of.push(w.new.alias_of);
        self.due_at.push(due_at);
    }
}
