//! Tests of what only the SQLite store has (its query plans, its statement cache, the chunked
//! release of a run's claims, `stats` checked against one SQL count at a time), and helpers
//! shared with the store's other test modules. What the frontier's traits promise is tested
//! once for both stores, through the traits, by the conformance suite
//! (`tests/it/conformance.rs`).

use super::*;
use rusqlite::params;

use crate::frontier::{
    Batch as _, ClaimRequest, Frontier as _, IndexLog as _, LinkOut, Reader as _,
};
use crate::revisit::Priority;

pub(super) fn link(url: &str) -> LinkOut {
    let host = url
        .split("://")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .unwrap_or("")
        .to_string();
    LinkOut {
        url: url.to_string(),
        host,
        label: "label".into(),
        excluded: None,
        prio: Priority::Fresh,
    }
}

pub(super) fn labelled(url: &str, label: &str) -> LinkOut {
    LinkOut {
        label: label.into(),
        ..link(url)
    }
}

/// Gives page `from` one link, to `to` labelled `label` (its links until now are replaced).
pub(super) fn link_to(batch: &mut SqliteBatch<'_>, from: i64, to: &str, label: &str) {
    batch
        .set_links(from, 0, &[labelled(to, label)], u64::MAX)
        .unwrap();
}

/// New URLs, each visited and found indexable (a 20 sent to the index); their ids.
pub(super) fn indexed_pages<const N: usize>(
    batch: &mut SqliteBatch<'_>,
    urls: [&str; N],
) -> [i64; N] {
    urls.map(|url| {
        let id = id_of(batch, url);
        visit(batch, id, UrlState::Indexed, 20);
        id
    })
}

pub(super) fn id_of(batch: &mut SqliteBatch<'_>, url: &str) -> i64 {
    let l = link(url);
    let new = NewUrl {
        url: &l.url,
        host: &l.host,
        depth: 0,
        hops: 0,
        from: None,
        alias_of: None,
        prio: Priority::Fresh,
    };
    batch.ensure_url(&new, None, u64::MAX).unwrap().unwrap().0
}

/// Records a visit that found `status`, due in a day; an indexed page is sent to the index.
pub(super) fn visit(batch: &mut SqliteBatch<'_>, id: i64, state: UrlState, status: u8) {
    let result = FetchResult {
        status: Some(status),
        fetched_at: 1000,
        content_hash: Some(format!("hash-{id}")),
        ..FetchResult::default()
    };
    record(batch, id, state, &result, None);
}

/// Records a visit due in a day, found in `state` (an indexed page is sent to the index).
fn record(
    batch: &mut SqliteBatch<'_>,
    id: i64,
    state: UrlState,
    result: &FetchResult,
    redirect_to: Option<i64>,
) {
    let indexed = state == UrlState::Indexed;
    let visit = VisitRecord {
        state,
        result,
        due_at: Some(1000 + 86400),
        revisit_secs: 86400,
        first_failed_at: None,
        prio: Priority::Revisit,
        feed: false,
        changed: indexed,
        index_op: indexed.then_some(IndexOp::Upsert),
        redirect_to,
    };
    batch.record_visit(id, &visit).unwrap();
}

/// Records a redirect from `source` to `target` (temporary when `alias_of` is given).
pub(super) fn redirect(
    batch: &mut SqliteBatch<'_>,
    source: i64,
    target: &str,
    alias_of: Option<i64>,
) -> i64 {
    let (to, _) = batch
        .add_redirect(source, 1, 1, &link(target), alias_of, u64::MAX)
        .unwrap()
        .unwrap();
    let result = FetchResult {
        status: Some(if alias_of.is_some() { 30 } else { 31 }),
        meta: target.into(),
        fetched_at: 1000,
        ..FetchResult::default()
    };
    record(batch, source, UrlState::Fetched, &result, Some(to));
    to
}

/// Commits the index operations of `ids` as commit `seq`, as the indexing thread does.
pub(super) fn index(f: &mut SqliteFrontier, ids: &[i64], seq: u64) {
    f.assign_batch(ids, seq).unwrap();
    f.mark_committed(seq).unwrap();
}

fn open() -> (tempfile::TempDir, SqliteFrontier) {
    let dir = tempfile::tempdir().unwrap();
    let f = SqliteFrontier::open(&dir.path().join("crawl.sqlite")).unwrap();
    (dir, f)
}

fn count(f: &SqliteFrontier, sql: &str) -> i64 {
    f.conn.query_row(sql, [], |r| r.get(0)).unwrap()
}

/// A run's end lets go of every URL it claimed, more than one release statement takes.
#[test]
fn a_run_lets_go_of_all_its_claims_a_statement_at_a_time() {
    let (_d, mut f) = open();
    let n = super::claim::RELEASE_CHUNK as usize * 2 + 1;
    let mut b = f.batch(0).unwrap();
    for i in 0..n {
        id_of(&mut b, &format!("gemini://big.test/{i}"));
    }
    b.commit().unwrap();
    let all = ClaimRequest::everywhere(1, n);
    assert_eq!(f.claim_capsules(&all, 0).unwrap().0.len(), n);
    assert_eq!(
        count(&f, "SELECT COUNT(*) FROM urls WHERE claimed != 0"),
        n as i64
    );
    f.end_run().unwrap();
    assert_eq!(count(&f, "SELECT COUNT(*) FROM urls WHERE claimed != 0"), 0);
    assert_eq!(f.claim_capsules(&all, 0).unwrap().0.len(), n);
}

/// `stats` tallies every URL in one scan; here its counts are checked against the statements
/// it replaced, one query a count, on URLs of every kind (states, statuses, errors, schedules,
/// schemes).
#[test]
fn stats_in_one_scan_count_what_one_query_a_count_did() {
    let (_d, f) = open();
    let now = 1_000_000;
    let mut state: u64 = 7;
    let mut pick = move |n: usize| -> usize {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (state >> 33) as usize % n
    };
    let states = ["new", "indexed", "fetched", "failed", "excluded"];
    let statuses = [
        None,
        Some(10),
        Some(11),
        Some(20),
        Some(31),
        Some(51),
        Some(150),
    ];
    let errors = [
        None,
        Some("duplicate"),
        Some("timeout"),
        Some("web"),
        Some("other"),
    ];
    let dues = [
        None,
        Some(now - 10),
        Some(now),
        Some(now + 1000),
        Some(now + 100_000),
    ];
    let dues = [
        dues.as_slice(),
        &[Some(now + 700_000), Some(now + 5_000_000)],
    ]
    .concat();
    let intervals = [
        None,
        Some(3600),
        Some(200_000),
        Some(700_000),
        Some(5_000_000),
    ];
    let schemes = ["gemini://", "https://", "GEMINI://"];
    for h in 0..40 {
        f.conn
            .execute(
                "INSERT INTO hosts(id, name) VALUES (?1, ?2)",
                params![h, format!("h{h}.test")],
            )
            .unwrap();
    }
    for i in 0..3000 {
        let host = pick(40);
        // Some capsules have web URLs only.
        let scheme = if host < 5 {
            "https://"
        } else {
            schemes[pick(3)]
        };
        f.conn
            .execute(
                "INSERT INTO urls(url, host_id, state, depth, status, error, in_index, attempts,
                                  due_at, revisit_secs, feed, first_failed_at)
                 VALUES (?1, ?2, ?3, 0, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
                params![
                    format!("{scheme}h{host}.test/{i}"),
                    host as i64,
                    states[pick(5)],
                    statuses[pick(statuses.len())],
                    errors[pick(errors.len())],
                    pick(2) as i64,
                    [0, 2][pick(2)],
                    dues[pick(dues.len())],
                    intervals[pick(intervals.len())],
                    pick(2) as i64,
                    [None, Some(5)][pick(2)],
                ],
            )
            .unwrap();
    }
    let n = |sql: &str| count(&f, &sql.replace("?1", &now.to_string())) as u64;
    let grouped = |sql: &str| -> Vec<(String, u64)> {
        let mut stmt = f.conn.prepare(sql).unwrap();
        let rows = stmt
            .query_map([], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)? as u64))
            })
            .unwrap();
        rows.collect::<std::result::Result<_, _>>().unwrap()
    };
    let stats = f.stats(now).unwrap();
    assert_eq!(stats.urls_known, n("SELECT COUNT(*) FROM urls"));
    assert_eq!(
        stats.pages_indexed,
        n("SELECT COUNT(*) FROM urls WHERE in_index = 1")
    );
    let hosts = n("SELECT COUNT(*) FROM hosts h WHERE EXISTS
                   (SELECT 1 FROM urls u WHERE u.host_id = h.id AND u.url LIKE 'gemini://%')");
    assert_eq!(stats.hosts, hosts);
    assert!(
        hosts > 0 && hosts < 40,
        "{hosts}: some capsules have no Gemini URL"
    );
    assert_eq!(
        stats.by_state,
        grouped("SELECT state, COUNT(*) FROM urls GROUP BY state ORDER BY state")
    );
    let by_status: Vec<(String, u64)> = stats
        .by_status
        .iter()
        .map(|(s, n)| (s.to_string(), *n))
        .collect();
    assert_eq!(
        by_status,
        grouped(
            "SELECT CAST(MIN(MAX(status, 0), 99) AS TEXT), COUNT(*) FROM urls WHERE status IS NOT NULL
             GROUP BY status ORDER BY status"
        )
    );
    assert_eq!(
        stats.errors,
        grouped(
            "SELECT error, COUNT(*) FROM urls WHERE state = 'failed' AND error IS NOT NULL
             GROUP BY error ORDER BY 2 DESC, 1"
        )
    );
    assert_eq!(
        stats.excluded,
        grouped(
            "SELECT COALESCE(error, 'other'), COUNT(*) FROM urls WHERE state = 'excluded'
             GROUP BY 1 ORDER BY 2 DESC, 1"
        )
    );
    assert_eq!(
        stats.duplicates,
        n("SELECT COUNT(*) FROM urls WHERE error = 'duplicate'")
    );
    assert_eq!(
        stats.query_endpoints,
        n("SELECT COUNT(*) FROM urls WHERE status IN (10, 11)")
    );
    assert_eq!(
        stats.awaiting_retry,
        n("SELECT COUNT(*) FROM urls WHERE attempts > 0 AND due_at IS NOT NULL")
    );
    let s = &stats.schedule;
    assert_eq!(s.due_now, n("SELECT COUNT(*) FROM urls WHERE due_at <= ?1"));
    assert_eq!(
        s.due_within_day,
        n("SELECT COUNT(*) FROM urls WHERE due_at <= ?1 + 86400")
    );
    assert_eq!(
        s.due_within_week,
        n("SELECT COUNT(*) FROM urls WHERE due_at <= ?1 + 604800")
    );
    assert_eq!(
        s.never_again,
        n("SELECT COUNT(*) FROM urls WHERE due_at IS NULL AND state != 'new'")
    );
    assert_eq!(
        s.never_visited,
        n("SELECT COUNT(*) FROM urls WHERE state = 'new'")
    );
    assert_eq!(s.feeds, n("SELECT COUNT(*) FROM urls WHERE feed = 1"));
    assert_eq!(
        s.failing_but_searchable,
        n("SELECT COUNT(*) FROM urls WHERE in_index = 1 AND first_failed_at IS NOT NULL")
    );
    let bucket = |from: i64, below: i64| {
        n(&format!(
            "SELECT COUNT(*) FROM urls WHERE revisit_secs >= {from} AND revisit_secs < {below}
             AND due_at IS NOT NULL AND state != 'excluded'"
        ))
    };
    let want: Vec<u64> = [0, 86_400, 259_200, 604_800, 1_209_600, 2_592_000, i64::MAX]
        .windows(2)
        .map(|w| bucket(w[0], w[1]))
        .collect();
    let got: Vec<u64> = s.intervals.iter().map(|(_, n)| *n).collect();
    assert_eq!(got, want);
    assert!(got.iter().filter(|&&n| n > 0).count() >= 4, "{got:?}");
}

/// The claim queries, the content-hash lookups and the link graph's statements stay index
/// searches: no table scan, whatever the number of URLs.
#[test]
fn claims_and_lookups_use_the_indexes() {
    let (_d, f) = open();
    let plan = |sql: &str| -> String {
        let mut stmt = f
            .conn
            .prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
            .unwrap();
        let rows = stmt
            .query_map([], |r| r.get::<_, String>(3))
            .unwrap()
            .collect::<std::result::Result<Vec<_>, _>>()
            .unwrap();
        rows.join("; ")
    };
    let due = plan(
        "SELECT id FROM urls WHERE host_id = 1 AND prio = 0 AND claimed = 0
         AND due_at IS NOT NULL AND due_at <= 5 ORDER BY due_at, id LIMIT 10",
    );
    assert!(due.contains("INDEX urls_due"), "{due}");
    // In claim order from the index (it ends with the rowid, the id): a claim of a few URLs
    // never reads and sorts all of a large capsule's due ones.
    assert!(!due.contains("TEMP B-TREE"), "{due}");
    let hosts = plan(
        "SELECT id FROM hosts WHERE claimed = 0 AND next_due IS NOT NULL AND next_due <= 5
         AND (backoff_until IS NULL OR backoff_until <= 5) ORDER BY next_due, id LIMIT 10",
    );
    assert!(hosts.contains("INDEX hosts_due"), "{hosts}");
    let next = plan(&format!(
        "SELECT ({}) ",
        claim_next_due_sql().replace("?1", "1")
    ));
    assert!(!next.contains("SCAN urls"), "{next}");
    let release = plan("SELECT DISTINCT host_id FROM urls WHERE claimed != 0");
    assert!(release.contains("urls_claimed"), "{release}");
    let release = plan(&super::claim::RELEASE_URLS.replace("?1", "10"));
    assert!(
        release.contains("SCAN urls USING INDEX urls_claimed"),
        "{release}"
    );
    let web = plan(super::batch::WEB_WAITING);
    assert!(web.contains("urls_web_waiting"), "{web}");
    // Content hashes are looked up by their first 16 digits, never by reading every URL.
    let hash = "'0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef'";
    let same = plan(
        &super::batch::SAME_CONTENT
            .replace("?1", hash)
            .replace("?2", "1"),
    );
    assert!(
        same.contains("SEARCH urls USING INDEX urls_by_hash_prefix"),
        "{same}"
    );
    let unused = plan(&super::archive::FORGET_UNUSED_BODY.replace("?1", hash));
    assert!(
        unused.contains("SEARCH urls USING INDEX urls_by_hash_prefix"),
        "{unused}"
    );
    // The link graph is read and written by target, on its primary key.
    let bind = |sql: &str| {
        sql.replace("?1", "1")
            .replace("?2", "'label'")
            .replace("?3", "1")
    };
    let inbound = plan(&bind(super::anchors::INBOUND_LABELS).replace("'label'", "5"));
    assert!(
        inbound.contains("SEARCH links USING PRIMARY KEY (target=?)"),
        "{inbound}"
    );
    let mark = plan(&bind(super::batch::MARK_ANCHOR_UPDATE));
    assert!(
        mark.contains("SEARCH links USING PRIMARY KEY (target=? AND label=?)"),
        "{mark}"
    );
    let remove = plan(&bind(super::batch::REMOVE_LINK));
    assert!(
        remove.contains("SEARCH links USING PRIMARY KEY (target=? AND label=? AND source=?)"),
        "{remove}"
    );
}

fn claim_next_due_sql() -> &'static str {
    super::claim::HOST_NEXT_DUE
}

/// A statement is compiled once, however often its parameters are bound again: the crawl runs
/// the same few dozen statements for every page.
#[test]
fn statements_are_not_compiled_again_when_bound_again() {
    use rusqlite::StatementStatus;
    let (_d, mut f) = open();
    let mut b = f.batch(0).unwrap();
    let [page] = indexed_pages(&mut b, ["gemini://a.test/"]);
    link_to(&mut b, page, "gemini://a.test/b", "bee");
    let target = id_of(&mut b, "gemini://a.test/b");
    b.commit().unwrap();
    let sql = "SELECT DISTINCT label FROM links WHERE target = ?1 ORDER BY label LIMIT ?2";
    for limit in [1, 2, 2, 3] {
        let mut stmt = f.conn.prepare_cached(sql).unwrap();
        let labels: Vec<String> = stmt
            .query_map(params![target, limit], |r| r.get(0))
            .unwrap()
            .collect::<std::result::Result<_, _>>()
            .unwrap();
        assert_eq!(labels, ["bee"]);
    }
    let stmt = f.conn.prepare_cached(sql).unwrap();
    assert_eq!(stmt.get_status(StatementStatus::RePrepare), 0);
}
