//! The frontier's conformance suite: what the `Frontier` and `Batch` traits promise, written once
//! as functions over `&mut dyn Frontier` and run on both stores. Each behaviour is two tests,
//! `conformance::on_sqlite::<behaviour>` (a SQLite file in a scratch directory) and
//! `conformance::on_postgres::<behaviour>` (a database of its own in one throwaway PostgreSQL
//! cluster that the whole suite shares: see [`shared_cluster`]). Where PostgreSQL is not
//! installed the PostgreSQL variants say SKIPPED and pass, as the other PostgreSQL tests do.
//!
//! The suite observes the stores through the traits only (`stats`, `url_details`,
//! `anchor_updates`, claims...). What only one store has (SQLite's query plans and statement
//! cache, PostgreSQL's leases among several crawlers) is tested next to that store:
//! `src/frontier/sqlite/tests.rs` and `postgres.rs`.
//!
//! Times are unix seconds of a made-up clock starting at 0. Where the traits promise no order
//! (new URLs and revisits of one capsule due at once) a behaviour sorts what it reads.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

use geode::frontier::{
    Batch, CertificateChange, ClaimRequest, ExpectedLinks, FetchResult, Frontier, HeldCapsule,
    IndexOp, LinkOut, Location, NewUrl, PageLinks, PgStore, Pin, QueuedUrl, Standing, Suggested,
    UrlState, VisitRecord,
};
use geode::revisit::Priority;

use crate::postgres::Cluster;

/// Writes the two tests of each behaviour: `on_sqlite::<behaviour>` and
/// `on_postgres::<behaviour>`. `#[postgres(ATTRIBUTE)]` before a behaviour puts an attribute on
/// its PostgreSQL test only.
macro_rules! conformance {
    ($($(#[postgres($pg:meta)])* $behaviour:ident),* $(,)?) => {
        /// Each behaviour on a SQLite file of its own.
        mod on_sqlite {
            $(
                #[test]
                fn $behaviour() {
                    super::on_sqlite(super::$behaviour);
                }
            )*
        }

        /// Each behaviour on a PostgreSQL database of its own.
        mod on_postgres {
            $(
                $(#[$pg])*
                #[test]
                fn $behaviour() {
                    super::on_postgres(stringify!($behaviour), super::$behaviour);
                }
            )*
        }
    };
}

conformance! {
    capsules_are_leased_whole_and_urls_claimed_hubs_first,
    new_urls_and_revisits_take_turns,
    a_url_visited_in_a_run_is_not_claimed_again_in_it,
    retries_come_back_in_the_same_run_and_wake_the_crawl,
    capsules_in_back_off_wait,
    a_capsule_held_back_waits_and_stats_say_why_until_the_hold_ends,
    standings_are_stored_per_capsule_and_pages_reset_for_those_not_listed,
    links_are_replaced_and_anchor_changes_marked,
    many_links_of_a_page_are_all_recorded_and_replaced,
    links_told_ahead_are_reported_as_if_recorded_page_by_page,
    a_held_page_gains_labels_unmarked_and_loses_them_marked,
    anchor_updates_resolve_through_redirects_to_indexed_pages,
    inbound_labels_gather_a_redirect_chain_in_label_order_within_the_limit,
    a_page_written_with_its_labels_forgets_its_anchor_update,
    index_operations_apply_only_when_committed,
    duplicates_are_found_among_pages_in_or_on_their_way_to_the_index,
    duplicates_are_judged_by_the_visits_recorded_earlier_in_the_batch,
    certificate_changes_are_recorded,
    stats_show_the_schedule,
    capsules_out_of_scope_are_passed_over_until_the_run_ends,
    seeds_people_suggest_are_due_at_once_and_listed,
    web_urls_recorded_as_not_fetchable_are_admitted_under_their_origin,
    what_a_crawl_records_reads_back,
}

/// What `Frontier::recover` promises a store that keeps its own index: a store shared by several
/// crawlers leaves index operations to its one index writer, and its recovery is tested with
/// the leases it lets go (`postgres::a_crawlers_recovery_leaves_index_operations_to_the_index_writer`).
mod on_sqlite_only {
    #[test]
    fn an_upsert_no_commit_holds_is_redone_after_a_crash() {
        super::on_sqlite(super::an_upsert_no_commit_holds_is_redone_after_a_crash);
    }

    #[test]
    fn recovery_confirms_what_the_index_holds_and_redoes_removals() {
        super::on_sqlite(super::recovery_confirms_what_the_index_holds_and_redoes_removals);
    }
}

/// Runs a behaviour on a new SQLite store.
fn on_sqlite(behaviour: fn(&mut dyn Frontier)) {
    let dir = tempfile::tempdir().unwrap();
    let mut frontier = Location::Sqlite(dir.path().join("crawl.sqlite"))
        .open()
        .unwrap();
    behaviour(&mut *frontier);
}

/// Runs a behaviour on a new database of the shared PostgreSQL cluster, as one crawler.
fn on_postgres(test: &str, behaviour: fn(&mut dyn Frontier)) {
    static DATABASES: AtomicUsize = AtomicUsize::new(0);
    let Some(cluster) = shared_cluster(test) else {
        return;
    };
    let name = format!("conformance{}", DATABASES.fetch_add(1, Ordering::Relaxed));
    let url = cluster.database(&name);
    let store = PgStore::connect(&url, Duration::from_secs(300), true).unwrap();
    let mut frontier = store.frontier().unwrap();
    behaviour(&mut frontier);
}

/// The cluster of the suite's PostgreSQL tests: started by the first of them (a cluster takes
/// seconds to make, a database a fraction of one) and stopped when the test process exits.
/// `None` (after saying SKIPPED) where PostgreSQL is not installed.
fn shared_cluster(test: &str) -> Option<&'static Cluster> {
    static CLUSTER: OnceLock<Option<Cluster>> = OnceLock::new();
    extern "C" fn stop() {
        if let Some(Some(cluster)) = CLUSTER.get() {
            cluster.stop_and_remove();
        }
    }
    let cluster = CLUSTER.get_or_init(|| {
        let cluster = Cluster::start("the conformance suite on PostgreSQL")?;
        // A static is never dropped: the cluster is stopped on the way out of the process.
        assert_eq!(unsafe { libc::atexit(stop) }, 0, "atexit");
        Some(cluster)
    });
    if cluster.is_none() {
        eprintln!("SKIPPED {test}: PostgreSQL is not installed");
    }
    cluster.as_ref()
}

// Helpers: URLs, links and visits as a crawl records them.

/// A link to `url` labelled "label" (its capsule is the URL's host).
fn link(url: &str) -> LinkOut {
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

fn labelled(url: &str, label: &str) -> LinkOut {
    LinkOut {
        label: label.into(),
        ..link(url)
    }
}

/// Gives page `from` one link, to `to` labelled `label` (its links until now are replaced).
fn link_to(batch: &mut dyn Batch, from: i64, to: &str, label: &str) {
    batch
        .set_links(from, 0, &[labelled(to, label)], u64::MAX)
        .unwrap();
}

/// The id of a URL, added at depth 0 (due at the batch's time) when unknown.
fn id_of(batch: &mut dyn Batch, url: &str) -> i64 {
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

/// New URLs, each visited and found indexable (a 20 sent to the index); their ids.
fn indexed_pages<const N: usize>(batch: &mut dyn Batch, urls: [&str; N]) -> [i64; N] {
    urls.map(|url| {
        let id = id_of(batch, url);
        visit(batch, id, UrlState::Indexed, 20);
        id
    })
}

/// Records a visit at 1000 that found `status`, due in a day; an indexed page is sent to the
/// index, with the content hash `hash-<id>`.
fn visit(batch: &mut dyn Batch, id: i64, state: UrlState, status: u8) {
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
    batch: &mut dyn Batch,
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
fn redirect(batch: &mut dyn Batch, source: i64, target: &str, alias_of: Option<i64>) -> i64 {
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
fn index(f: &mut dyn Frontier, ids: &[i64], seq: u64) {
    f.assign_batch(ids, seq).unwrap();
    f.mark_committed(seq).unwrap();
}

fn urls(queued: &[QueuedUrl]) -> Vec<&str> {
    queued.iter().map(|q| q.url.as_str()).collect()
}

/// The URLs claimed, sorted (the traits promise no order among capsules due at once).
fn sorted_urls(queued: &[QueuedUrl]) -> Vec<&str> {
    let mut urls = urls(queued);
    urls.sort_unstable();
    urls
}

/// The pages marked for an anchor update, in id order.
fn marked(f: &dyn Frontier) -> Vec<i64> {
    let updates = f.anchor_updates(0, 100).unwrap();
    updates.into_iter().map(|u| u.dirty_id).collect()
}

fn url_id(f: &dyn Frontier, url: &str) -> i64 {
    f.url_id(url)
        .unwrap()
        .unwrap_or_else(|| panic!("{url} known"))
}

/// Claims up to `capsules` capsules due at `now`, of any scope, `per_capsule` URLs of each.
fn claim(f: &mut dyn Frontier, capsules: usize, per_capsule: usize, now: i64) -> Vec<QueuedUrl> {
    f.claim_capsules(&ClaimRequest::everywhere(capsules, per_capsule), now)
        .unwrap()
        .0
}

/// Claims all the capsules due at `now`, of any scope.
fn claim_all(f: &mut dyn Frontier, per_capsule: usize, now: i64) -> Vec<QueuedUrl> {
    claim(f, 10, per_capsule, now)
}

// Claims: leases, turns, runs, retries, back-off and holds.

fn capsules_are_leased_whole_and_urls_claimed_hubs_first(f: &mut dyn Frontier) {
    let mut b = f.batch(100).unwrap();
    for u in [
        "gemini://a.test/one.gmi",
        "gemini://a.test/two.gmi",
        "gemini://b.test/x.gmi",
    ] {
        id_of(&mut *b, u);
    }
    // A hub discovered last is claimed first.
    let hub = NewUrl {
        url: "gemini://a.test/",
        host: "a.test",
        depth: 0,
        hops: 0,
        from: None,
        alias_of: None,
        prio: Priority::Hub,
    };
    b.ensure_url(&hub, None, u64::MAX).unwrap();
    b.commit().unwrap();

    // Not due before `now` = 100.
    assert!(claim_all(f, 2, 99).is_empty());
    let claimed = claim_all(f, 2, 100);
    assert_eq!(
        urls(&claimed),
        [
            "gemini://a.test/",
            "gemini://a.test/one.gmi",
            "gemini://b.test/x.gmi"
        ]
    );
    // Leased capsules are not handed out again, but their remaining URLs can be claimed.
    assert!(claim_all(f, 2, 100).is_empty());
    let a = claimed[0].host_id;
    assert_eq!(
        urls(&f.claim_more(a, 5, 100).unwrap()),
        ["gemini://a.test/two.gmi"]
    );
    assert!(f.claim_more(a, 5, 100).unwrap().is_empty());
    // Let go with nothing visited: claimed URLs stay claimed until the run ends.
    f.release_capsule(a).unwrap();
    assert!(claim_all(f, 5, 100).is_empty());
    f.end_run().unwrap();
    assert_eq!(claim_all(f, 5, 100).len(), 4);
}

fn new_urls_and_revisits_take_turns(f: &mut dyn Frontier) {
    let mut b = f.batch(0).unwrap();
    let mut old = Vec::new();
    for i in 0..4 {
        let id = id_of(&mut *b, &format!("gemini://a.test/old{i}"));
        old.push(id);
    }
    b.commit().unwrap();
    // Visit the old ones once; they come due again at 1000 + a day.
    let claimed = claim(f, 1, 10, 0);
    assert_eq!(claimed.len(), 4);
    let mut b = f.batch(0).unwrap();
    for &id in &old {
        visit(&mut *b, id, UrlState::Fetched, 51);
    }
    b.commit().unwrap();
    f.end_run().unwrap();
    let mut b = f.batch(5000).unwrap();
    for i in 0..4 {
        id_of(&mut *b, &format!("gemini://a.test/new{i}"));
    }
    b.commit().unwrap();
    let later = 1000 + 86400;
    let claimed = claim(f, 1, 6, later);
    assert_eq!(
        urls(&claimed),
        [
            "gemini://a.test/new0",
            "gemini://a.test/old0",
            "gemini://a.test/new1",
            "gemini://a.test/old1",
            "gemini://a.test/new2",
            "gemini://a.test/old2",
        ]
    );
}

fn a_url_visited_in_a_run_is_not_claimed_again_in_it(f: &mut dyn Frontier) {
    let mut b = f.batch(0).unwrap();
    let id = id_of(&mut *b, "gemini://a.test/page");
    b.commit().unwrap();
    let claimed = claim(f, 1, 5, 0);
    assert_eq!(claimed.len(), 1);
    assert!(!claimed[0].prior.visited);
    // Visited, due again at once: not in this run.
    let result = FetchResult {
        status: Some(20),
        fetched_at: 0,
        ..FetchResult::default()
    };
    let mut b = f.batch(0).unwrap();
    b.record_visit(
        id,
        &VisitRecord {
            state: UrlState::Fetched,
            result: &result,
            due_at: Some(0),
            revisit_secs: 1,
            first_failed_at: None,
            prio: Priority::Revisit,
            feed: false,
            changed: false,
            index_op: None,
            redirect_to: None,
        },
    )
    .unwrap();
    b.commit().unwrap();
    let host = claimed[0].host_id;
    assert!(f.claim_more(host, 5, 10).unwrap().is_empty());
    f.release_capsule(host).unwrap();
    assert_eq!(
        f.next_wakeup(10).unwrap(),
        None,
        "nothing to wait for in this run"
    );
    assert!(claim(f, 1, 5, 10).is_empty());
    // The next run takes it.
    f.end_run().unwrap();
    let again = claim(f, 1, 5, 10);
    assert_eq!(urls(&again), ["gemini://a.test/page"]);
    assert!(again[0].prior.visited);
    assert_eq!(again[0].prior.revisit_secs, Some(1));
}

fn retries_come_back_in_the_same_run_and_wake_the_crawl(f: &mut dyn Frontier) {
    let mut b = f.batch(0).unwrap();
    let id = id_of(&mut *b, "gemini://a.test/flaky");
    b.commit().unwrap();
    let host = claim(f, 1, 5, 0)[0].host_id;
    let mut b = f.batch(0).unwrap();
    let result = FetchResult {
        status: Some(40),
        fetched_at: 0,
        ..FetchResult::default()
    };
    b.retry_later(id, &result, 60).unwrap();
    b.commit().unwrap();
    f.release_capsule(host).unwrap();
    assert_eq!(f.next_wakeup(0).unwrap(), Some(Duration::from_secs(60)));
    assert!(claim(f, 1, 5, 59).is_empty());
    let again = claim(f, 1, 5, 60);
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].prior.attempts, 1);
    assert_eq!(again[0].prior.state, Some(UrlState::New));
}

/// A capsule in back-off is not claimed until the back-off ends, and one whose back-off ends
/// between two claims is work still: the crawler asking when to look again is told "now", not
/// that nothing is left (crawlers used to end with such a capsule never fetched).
fn capsules_in_back_off_wait(f: &mut dyn Frontier) {
    let mut b = f.batch(0).unwrap();
    id_of(&mut *b, "gemini://a.test/");
    let host = b.host_id("a.test").unwrap();
    b.set_backoff(host, 500).unwrap();
    b.commit().unwrap();
    assert!(claim(f, 1, 5, 0).is_empty());
    assert_eq!(f.next_wakeup(0).unwrap(), Some(Duration::from_secs(500)));
    // The last claim came a second too early: the crawl, asking at or after the end of the
    // back-off, is told to claim now rather than that nothing is left.
    assert!(claim(f, 1, 5, 499).is_empty());
    assert_eq!(f.next_wakeup(499).unwrap(), Some(Duration::from_secs(1)));
    assert_eq!(f.next_wakeup(500).unwrap(), Some(Duration::from_secs(0)));
    assert_eq!(f.next_wakeup(501).unwrap(), Some(Duration::from_secs(0)));
    assert_eq!(claim(f, 1, 5, 501).len(), 1);
    assert_eq!(f.next_wakeup(501).unwrap(), None, "leased now");
}

fn a_capsule_held_back_waits_and_stats_say_why_until_the_hold_ends(f: &mut dyn Frontier) {
    let mut b = f.batch(0).unwrap();
    id_of(&mut *b, "gemini://trap.test/");
    id_of(&mut *b, "gemini://good.test/");
    let trap = b.host_id("trap.test").unwrap();
    let good = b.host_id("good.test").unwrap();
    b.hold_capsule(trap, 1_000, "fan-out").unwrap();
    b.commit().unwrap();
    let claimed = claim(f, 5, 5, 10);
    assert_eq!(claimed.len(), 1);
    assert_eq!(claimed[0].host_id, good);
    let stats = f.stats(10).unwrap();
    assert_eq!(stats.capsules_held_back, 1);
    assert_eq!(
        stats.held_back,
        vec![HeldCapsule {
            host: "trap.test".into(),
            reason: "fan-out".into(),
            until: 1_000,
        }]
    );
    // Once the hold is over it is not listed, and the capsule is claimed again.
    assert_eq!(f.stats(1_000).unwrap().capsules_held_back, 0);
    assert_eq!(claim(f, 5, 5, 1_000).len(), 1);
    // A back-off set later is no hold of the budget's.
    f.release_capsule(trap).unwrap();
    let mut b = f.batch(0).unwrap();
    b.set_backoff(trap, 2_000).unwrap();
    b.commit().unwrap();
    assert_eq!(f.stats(1_500).unwrap().capsules_held_back, 0);
    assert_eq!(f.stats(1_500).unwrap().hosts_in_backoff, 1);
}

fn standings_are_stored_per_capsule_and_pages_reset_for_those_not_listed(f: &mut dyn Frontier) {
    let mut b = f.batch(0).unwrap();
    id_of(&mut *b, "gemini://a.test/");
    id_of(&mut *b, "gemini://b.test/");
    let a = b.host_id("a.test").unwrap();
    let bb = b.host_id("b.test").unwrap();
    b.commit().unwrap();
    assert_eq!(f.capsule_standing(a).unwrap(), Standing::default());
    let standing = |pages, linkers| Standing { pages, linkers };
    f.set_standings(&[
        ("a.test".into(), standing(40, 3)),
        ("b.test".into(), standing(7, 2)),
        ("unknown.test".into(), standing(1, 1)),
    ])
    .unwrap();
    assert_eq!(f.capsule_standing(a).unwrap(), standing(40, 3));
    assert_eq!(f.capsule_standing(bb).unwrap(), standing(7, 2));
    // b.test has no indexed page any more; its linkers stay as last counted.
    f.set_standings(&[("a.test".into(), standing(41, 5))])
        .unwrap();
    assert_eq!(f.capsule_standing(a).unwrap(), standing(41, 5));
    assert_eq!(f.capsule_standing(bb).unwrap(), standing(0, 2));
    assert_eq!(f.capsule_standing(9_999).unwrap(), Standing::default());
}

fn capsules_out_of_scope_are_passed_over_until_the_run_ends(f: &mut dyn Frontier) {
    let mut b = f.batch(0).unwrap();
    id_of(&mut *b, "gemini://in.test/");
    id_of(&mut *b, "gemini://out.test/");
    b.commit().unwrap();
    let only_in = |capsule: &str| capsule == "in.test";
    let (claimed, examined) = f
        .claim_capsules(
            &ClaimRequest {
                capsules: 10,
                per_capsule: 5,
                permits: &only_in,
            },
            0,
        )
        .unwrap();
    assert_eq!(urls(&claimed), ["gemini://in.test/"]);
    assert_eq!(examined, 2);
    // Not examined again in this run, and not lost for the next one.
    assert_eq!(
        f.claim_capsules(
            &ClaimRequest {
                capsules: 10,
                per_capsule: 5,
                permits: &only_in
            },
            0
        )
        .unwrap()
        .1,
        0
    );
    f.end_run().unwrap();
    let claimed = claim(f, 10, 5, 0);
    assert_eq!(claimed.len(), 2);
}

// Links and anchors.

fn links_are_replaced_and_anchor_changes_marked(f: &mut dyn Frontier) {
    let mut b = f.batch(0).unwrap();
    let page = id_of(&mut *b, "gemini://a.test/");
    let [target, other] = indexed_pages(&mut *b, ["gemini://b.test/", "gemini://c.test/"]);
    // Known, never visited: its anchors are read when it is first indexed.
    let unvisited = id_of(&mut *b, "gemini://u.test/");
    b.commit().unwrap();

    let mut b = f.batch(0).unwrap();
    let report = b
        .set_links(
            page,
            0,
            &[
                labelled("gemini://b.test/", "lantern"),
                labelled("gemini://c.test/", "owl"),
                labelled("gemini://c.test/", "owl"),
                labelled("gemini://d.test/", "new one"),
                labelled("gemini://u.test/", "not yet"),
            ],
            u64::MAX,
        )
        .unwrap();
    b.commit().unwrap();
    assert_eq!(report.added, 1);
    assert_eq!(report.hosts_with_new.len(), 1);
    // Visited targets got a label: their documents need new anchors. The new URL and the
    // unvisited one have no document yet.
    assert_eq!(marked(f), [target, other]);
    assert_eq!(f.inbound_labels(unvisited, 10).unwrap(), ["not yet"]);
    assert_eq!(f.inbound_labels(target, 10).unwrap(), ["lantern"]);
    f.clear_anchor_updates(&[target, other]).unwrap();

    // The page changes: the lantern becomes a beacon, the owl stays, d.test and u.test go.
    // d.test was visited meanwhile, u.test was not.
    let mut b = f.batch(0).unwrap();
    let d = id_of(&mut *b, "gemini://d.test/");
    visit(&mut *b, d, UrlState::Fetched, 51);
    b.set_links(
        page,
        0,
        &[
            labelled("gemini://b.test/", "beacon"),
            labelled("gemini://c.test/", "owl"),
        ],
        u64::MAX,
    )
    .unwrap();
    b.commit().unwrap();
    assert_eq!(f.inbound_labels(target, 10).unwrap(), ["beacon"]);
    assert_eq!(f.inbound_labels(other, 10).unwrap(), ["owl"]);
    assert!(f.inbound_labels(d, 10).unwrap().is_empty());
    assert!(f.inbound_labels(unvisited, 10).unwrap().is_empty());
    assert_eq!(
        marked(f),
        [target, d],
        "owl did not change, u.test has no document"
    );
    assert_eq!(f.own_labels(page).unwrap(), ["beacon", "owl"]);

    // A second page with the same label: removing the first one's keeps the anchor, no mark.
    f.clear_anchor_updates(&[target, d]).unwrap();
    let mut b = f.batch(0).unwrap();
    let second = id_of(&mut *b, "gemini://e.test/");
    link_to(&mut *b, second, "gemini://b.test/", "beacon");
    b.drop_links(page).unwrap();
    b.commit().unwrap();
    assert_eq!(f.inbound_labels(target, 10).unwrap(), ["beacon"]);
    assert_eq!(marked(f), [other], "only the owl's target lost a label");
}

fn many_links_of_a_page_are_all_recorded_and_replaced(f: &mut dyn Frontier) {
    let mut b = f.batch(0).unwrap();
    let page = id_of(&mut *b, "gemini://a.test/");
    // 40 distinct links (two statements' worth and 8 more), each also repeated once.
    let links: Vec<LinkOut> = (0..80)
        .map(|i| {
            labelled(
                &format!("gemini://b.test/{}", i % 40),
                &format!("to {}", i % 40),
            )
        })
        .collect();
    b.set_links(page, 0, &links, u64::MAX).unwrap();
    b.commit().unwrap();
    // The numbers of the links the page has, as `geode show` lists them.
    let recorded = |f: &dyn Frontier| -> Vec<u32> {
        let details = f.url_details("gemini://a.test/").unwrap().unwrap();
        let mut numbers: Vec<u32> = details
            .links_out
            .iter()
            .map(|l| {
                let n = l.label.strip_prefix("to ").unwrap();
                assert_eq!(l.url, format!("gemini://b.test/{n}"));
                n.parse().unwrap()
            })
            .collect();
        numbers.sort_unstable();
        numbers
    };
    assert_eq!(recorded(f), (0..40).collect::<Vec<_>>());
    assert_eq!(f.own_labels(page).unwrap().len(), 40);
    for i in [0, 15, 16, 31, 32, 39] {
        let target = url_id(f, &format!("gemini://b.test/{i}"));
        assert_eq!(f.inbound_labels(target, 10).unwrap(), [format!("to {i}")]);
    }
    // Seen again with 20 of them and 17 new ones: 37 links, the other 20 gone.
    let again: Vec<LinkOut> = (20..57)
        .map(|i| labelled(&format!("gemini://b.test/{i}"), &format!("to {i}")))
        .collect();
    let mut b = f.batch(0).unwrap();
    b.set_links(page, 0, &again, u64::MAX).unwrap();
    b.commit().unwrap();
    assert_eq!(recorded(f), (20..57).collect::<Vec<_>>());
    assert_eq!(f.own_labels(page).unwrap().len(), 37);
    let gone = url_id(f, "gemini://b.test/0");
    assert!(f.inbound_labels(gone, 10).unwrap().is_empty());
}

/// A store may look up and insert the URLs of a round's pages at once when told of them ahead
/// (`Batch::expect_links`; PostgreSQL does): each page's report says what it would have said
/// recorded alone, capsules' room goes to the pages in their order, and a page whose content
/// another URL holds (which the crawl records as a duplicate, without its links) adds nothing.
fn links_told_ahead_are_reported_as_if_recorded_page_by_page(f: &mut dyn Frontier) {
    let mut b = f.batch(0).unwrap();
    let [original] = indexed_pages(&mut *b, ["gemini://a.test/original"]);
    let copy = id_of(&mut *b, "gemini://a.test/copy");
    let [one, two] = [
        id_of(&mut *b, "gemini://a.test/1"),
        id_of(&mut *b, "gemini://a.test/2"),
    ];
    b.commit().unwrap();
    index(f, &[original], 1);
    let copied = format!("hash-{original}");
    let first = [
        link("gemini://c.test/x"),
        link("gemini://c.test/y"),
        link("gemini://b.test/1"),
    ];
    let second = [
        link("gemini://c.test/y"),
        link("gemini://c.test/z"),
        link("gemini://b.test/2"),
    ];
    let of_copy = [link("gemini://d.test/copy")];
    let page = |source, links, content| ExpectedLinks {
        source,
        depth: 0,
        links,
        content,
        doc_id: source,
    };
    // Each capsule stores two URLs at most.
    let budget = 2;
    let mut b = f.batch(0).unwrap();
    b.expect_contents(&[&copied, "content 1", "content 2"])
        .unwrap();
    b.expect_links(
        &[
            page(one, &first[..], Some("content 1")),
            page(two, &second[..], Some("content 2")),
            page(copy, &of_copy[..], Some(copied.as_str())),
        ],
        budget,
    )
    .unwrap();
    assert!(b.same_content(&copied, copy).unwrap().is_some());
    let report = b.set_links(one, 0, &first, budget).unwrap();
    assert_eq!(report.added, 3, "c.test/x, c.test/y, b.test/1");
    let mut counts: Vec<u64> = report.hosts_with_new.values().copied().collect();
    counts.sort_unstable();
    assert_eq!(counts, [1, 2]);
    let report = b.set_links(two, 0, &second, budget).unwrap();
    assert_eq!(
        report.added, 1,
        "b.test/2: c.test/y is known, c.test/z finds no room"
    );
    assert_eq!(
        report.hosts_with_new.values().copied().collect::<Vec<_>>(),
        [1]
    );
    b.commit().unwrap();
    for (url, known) in [
        ("gemini://c.test/x", true),
        ("gemini://c.test/y", true),
        ("gemini://c.test/z", false),
        ("gemini://b.test/2", true),
        ("gemini://d.test/copy", false),
    ] {
        assert_eq!(f.knows(url).unwrap(), known, "{url}");
    }
    let links_of = |url| f.url_details(url).unwrap().unwrap().links_out.len();
    assert_eq!(links_of("gemini://a.test/1"), 3);
    assert_eq!(links_of("gemini://a.test/2"), 2);
}

fn a_held_page_gains_labels_unmarked_and_loses_them_marked(f: &mut dyn Frontier) {
    let mut b = f.batch(0).unwrap();
    let page = id_of(&mut *b, "gemini://a.test/");
    let [held, written] = indexed_pages(&mut *b, ["gemini://b.test/", "gemini://c.test/"]);
    b.commit().unwrap();
    let links = [
        labelled("gemini://b.test/", "kept back"),
        labelled("gemini://c.test/", "sent"),
    ];
    let mut b = f.batch(0).unwrap();
    b.set_links_holding(
        &PageLinks {
            source: page,
            depth: 0,
            links: &links,
            held: &|id| id == held,
        },
        u64::MAX,
    )
    .unwrap();
    b.commit().unwrap();
    // The held document reads its label when it goes; the written one needs an update.
    assert_eq!(marked(f), [written]);
    assert_eq!(f.inbound_labels(held, 10).unwrap(), ["kept back"]);
    f.clear_anchor_updates(&[written]).unwrap();
    // Losing a label marks a held page all the same.
    let mut b = f.batch(0).unwrap();
    b.set_links_holding(
        &PageLinks {
            source: page,
            depth: 0,
            links: &[],
            held: &|id| id == held,
        },
        u64::MAX,
    )
    .unwrap();
    b.commit().unwrap();
    assert_eq!(marked(f), [held, written]);
}

fn anchor_updates_resolve_through_redirects_to_indexed_pages(f: &mut dyn Frontier) {
    let mut b = f.batch(0).unwrap();
    let old = id_of(&mut *b, "gemini://a.test/book");
    let page = redirect(&mut *b, old, "gemini://a.test/book/", None);
    visit(&mut *b, page, UrlState::Indexed, 20);
    let linker = id_of(&mut *b, "gemini://b.test/");
    link_to(&mut *b, linker, "gemini://a.test/book", "The Book");
    b.commit().unwrap();
    // Not committed yet: no page to rewrite.
    let updates = f.anchor_updates(0, 10).unwrap();
    assert_eq!(updates.len(), 1);
    assert_eq!(updates[0].dirty_id, old);
    assert_eq!(updates[0].page, None);
    index(f, &[page], 1);
    let updates = f.anchor_updates(0, 10).unwrap();
    let target = updates[0].page.as_ref().expect("resolved");
    assert_eq!(target.url, "gemini://a.test/book/");
    assert!(!target.header_only);
    assert_eq!(f.inbound_labels(page, 10).unwrap(), ["The Book"]);
}

fn inbound_labels_gather_a_redirect_chain_in_label_order_within_the_limit(f: &mut dyn Frontier) {
    let mut b = f.batch(0).unwrap();
    // /a -> /b -> /page, and /page -> /a closes a loop.
    let a = id_of(&mut *b, "gemini://x.test/a");
    let bb = redirect(&mut *b, a, "gemini://x.test/b", None);
    let page = redirect(&mut *b, bb, "gemini://x.test/page", None);
    redirect(&mut *b, page, "gemini://x.test/a", None);
    // (link_to replaces a page's links: one linking page per label.)
    let linker = id_of(&mut *b, "gemini://y.test/");
    link_to(&mut *b, linker, "gemini://x.test/a", "zebra");
    for (from, to, label) in [
        ("gemini://y.test/1", "gemini://x.test/b", "apple"),
        ("gemini://y.test/2", "gemini://x.test/page", "mango"),
        ("gemini://z.test/", "gemini://x.test/page", "apple"),
    ] {
        let source = id_of(&mut *b, from);
        link_to(&mut *b, source, to, label);
    }
    b.commit().unwrap();
    assert_eq!(
        f.inbound_labels(page, 10).unwrap(),
        ["apple", "mango", "zebra"]
    );
    assert_eq!(f.inbound_labels(page, 2).unwrap(), ["apple", "mango"]);
    // Labels flow along redirects, not against them.
    assert_eq!(f.inbound_labels(linker, 10).unwrap(), Vec::<String>::new());
}

fn a_page_written_with_its_labels_forgets_its_anchor_update(f: &mut dyn Frontier) {
    let mut b = f.batch(0).unwrap();
    let [page] = indexed_pages(&mut *b, ["gemini://a.test/"]);
    let linker = id_of(&mut *b, "gemini://b.test/");
    b.commit().unwrap();
    let mut b = f.batch(0).unwrap();
    link_to(&mut *b, linker, "gemini://a.test/", "lantern");
    b.commit().unwrap();
    assert_eq!(f.anchor_updates(0, 10).unwrap().len(), 1);
    // The page is written now with the labels read in this transaction.
    let mut b = f.batch(0).unwrap();
    assert_eq!(b.inbound_labels(page, 10).unwrap(), ["lantern"]);
    b.forget_anchor_update(page).unwrap();
    b.commit().unwrap();
    assert!(f.anchor_updates(0, 10).unwrap().is_empty());
}

// The index: operations applied when committed, recovery after a crash, duplicates.

/// The ids of the URLs whose index operation waits for a commit, in id order.
fn pending(f: &dyn Frontier) -> Vec<i64> {
    let ops = f.pending_index_ops(0, 100).unwrap();
    ops.iter().map(|op| op.page.id).collect()
}

fn index_operations_apply_only_when_committed(f: &mut dyn Frontier) {
    let mut b = f.batch(0).unwrap();
    let [a, c] = indexed_pages(&mut *b, ["gemini://a.test/", "gemini://a.test/c"]);
    b.commit().unwrap();
    assert!(f.indexed_urls().unwrap().is_empty());
    assert_eq!(pending(f), [a, c]);
    index(f, &[a], 1);
    assert_eq!(f.indexed_urls().unwrap(), ["gemini://a.test/"]);
    assert_eq!(pending(f), [c], "c's upsert waits for a commit");
    // Tagged with commit 3: confirming commit 2 leaves it waiting, confirming 3 applies it.
    f.assign_batch(&[c], 3).unwrap();
    f.mark_committed(2).unwrap();
    assert_eq!(pending(f), [c]);
    f.mark_committed(3).unwrap();
    assert!(pending(f).is_empty());
    assert_eq!(
        f.indexed_urls().unwrap(),
        ["gemini://a.test/", "gemini://a.test/c"]
    );
}

/// (The second half of what was `index_operations_apply_only_when_committed`.)
fn an_upsert_no_commit_holds_is_redone_after_a_crash(f: &mut dyn Frontier) {
    let mut b = f.batch(0).unwrap();
    let [a, _] = indexed_pages(&mut *b, ["gemini://a.test/", "gemini://a.test/c"]);
    b.commit().unwrap();
    index(f, &[a], 1);
    // c's upsert never reached a commit: after a crash it is visited again at once, as new, and
    // its hash is forgotten so the visit indexes it whatever it finds.
    let (confirmed, redone) = f.recover(1, 7777).unwrap();
    assert_eq!((confirmed, redone), (0, 1));
    let again = claim(f, 1, 5, 7777);
    assert_eq!(urls(&again), ["gemini://a.test/c"]);
    assert_eq!(again[0].prior.state, Some(UrlState::New));
    assert_eq!(again[0].prior.content_hash, None);
    assert!(pending(f).is_empty(), "no operation is left pending");
    assert_eq!(f.indexed_urls().unwrap(), ["gemini://a.test/"]);
}

fn recovery_confirms_what_the_index_holds_and_redoes_removals(f: &mut dyn Frontier) {
    let mut b = f.batch(0).unwrap();
    let [a] = indexed_pages(&mut *b, ["gemini://a.test/"]);
    id_of(&mut *b, "gemini://a.test/e");
    b.commit().unwrap();
    index(f, &[a], 1);
    // The crawl that dies holds a claim (a.test/e, and so a lease of a.test) ...
    let claimed = claim(f, 1, 5, 0);
    assert_eq!(urls(&claimed), ["gemini://a.test/e"]);
    // ... a removal tagged with commit 2, which the index holds, though the crawl died before
    // confirming it; and a second page tagged with commit 3, which never happened.
    let mut b = f.batch(0).unwrap();
    let result = FetchResult {
        status: Some(51),
        fetched_at: 2000,
        ..FetchResult::default()
    };
    b.record_visit(
        a,
        &VisitRecord {
            state: UrlState::Fetched,
            result: &result,
            due_at: Some(9999),
            revisit_secs: 10,
            first_failed_at: None,
            prio: Priority::Hub,
            feed: false,
            changed: false,
            index_op: Some(IndexOp::Delete),
            redirect_to: None,
        },
    )
    .unwrap();
    let [d] = indexed_pages(&mut *b, ["gemini://a.test/d"]);
    b.commit().unwrap();
    f.assign_batch(&[a], 2).unwrap();
    f.assign_batch(&[d], 3).unwrap();
    let (confirmed, redone) = f.recover(2, 3000).unwrap();
    assert_eq!((confirmed, redone), (1, 1));
    assert!(f.indexed_urls().unwrap().is_empty());
    assert!(pending(f).is_empty());
    // The removed page keeps its schedule; the lost page is due now.
    let due = |url: &str| f.url_details(url).unwrap().unwrap().due_at;
    assert_eq!(due("gemini://a.test/"), Some(9999));
    assert_eq!(due("gemini://a.test/d"), Some(3000));
    // The dead crawl's claims, lease and visits are let go: all three are claimed when due.
    assert_eq!(
        sorted_urls(&claim_all(f, 5, 9999)),
        ["gemini://a.test/", "gemini://a.test/d", "gemini://a.test/e"]
    );
}

fn duplicates_are_found_among_pages_in_or_on_their_way_to_the_index(f: &mut dyn Frontier) {
    let mut b = f.batch(0).unwrap();
    let [a] = indexed_pages(&mut *b, ["gemini://a.test/"]);
    let c = id_of(&mut *b, "gemini://a.test/c");
    let hash = format!("hash-{a}");
    assert_eq!(
        b.same_content(&hash, c).unwrap().as_deref(),
        Some("gemini://a.test/")
    );
    assert_eq!(b.same_content(&hash, a).unwrap(), None);
    b.commit().unwrap();
    index(f, &[a], 1);
    let mut b = f.batch(0).unwrap();
    assert!(b.same_content(&hash, c).unwrap().is_some());
    b.commit().unwrap();
}

/// A store may keep a batch's visits and write them later (PostgreSQL writes them together):
/// the duplicate check answers as if each had been written when recorded.
fn duplicates_are_judged_by_the_visits_recorded_earlier_in_the_batch(f: &mut dyn Frontier) {
    let mut b = f.batch(0).unwrap();
    let [moved, removed] = indexed_pages(&mut *b, ["gemini://a.test/m", "gemini://a.test/r"]);
    let c = id_of(&mut *b, "gemini://a.test/c");
    b.commit().unwrap();
    index(f, &[moved, removed], 1);
    let (old, gone) = (format!("hash-{moved}"), format!("hash-{removed}"));
    let mut b = f.batch(0).unwrap();
    assert_eq!(
        b.same_content(&old, c).unwrap().as_deref(),
        Some("gemini://a.test/m")
    );
    // The page's content changes, the other page leaves the index: neither holds its old
    // content any more, and the new content is on its way to the index.
    let changed = FetchResult {
        status: Some(20),
        fetched_at: 2000,
        content_hash: Some("new content".into()),
        ..FetchResult::default()
    };
    record(&mut *b, moved, UrlState::Indexed, &changed, None);
    let failed = FetchResult {
        status: Some(51),
        fetched_at: 2000,
        ..FetchResult::default()
    };
    let removal = VisitRecord {
        state: UrlState::Fetched,
        result: &failed,
        due_at: None,
        revisit_secs: 86400,
        first_failed_at: Some(2000),
        prio: Priority::Revisit,
        feed: false,
        changed: false,
        index_op: Some(IndexOp::Delete),
        redirect_to: None,
    };
    b.record_visit(removed, &removal).unwrap();
    // Asked at once, then told first which contents are coming (a store may read them
    // ahead): the same answers.
    for told in [false, true] {
        if told {
            b.expect_contents(&[&old, &gone, "new content"]).unwrap();
        }
        assert_eq!(
            b.same_content(&old, c).unwrap(),
            None,
            "its content changed"
        );
        assert_eq!(
            b.same_content(&gone, c).unwrap(),
            None,
            "it leaves the index"
        );
        assert_eq!(
            b.same_content("new content", c).unwrap().as_deref(),
            Some("gemini://a.test/m")
        );
        assert_eq!(b.same_content("new content", moved).unwrap(), None);
    }
    // Told ahead, before the visits that change what holds a content.
    let [p, q] = indexed_pages(&mut *b, ["gemini://a.test/p", "gemini://a.test/q"]);
    let (hash_p, hash_q) = (format!("hash-{p}"), format!("hash-{q}"));
    b.commit().unwrap();
    index(f, &[p, q], 2);
    let mut b = f.batch(0).unwrap();
    b.expect_contents(&[&hash_p, &hash_q, "copied"]).unwrap();
    assert_eq!(
        b.same_content(&hash_p, c).unwrap().as_deref(),
        Some("gemini://a.test/p")
    );
    let copied = FetchResult {
        status: Some(20),
        fetched_at: 3000,
        content_hash: Some("copied".into()),
        ..FetchResult::default()
    };
    record(&mut *b, q, UrlState::Indexed, &copied, None);
    assert_eq!(
        b.same_content(&hash_q, c).unwrap(),
        None,
        "its content changed"
    );
    assert_eq!(
        b.same_content("copied", c).unwrap().as_deref(),
        Some("gemini://a.test/q"),
        "a page the batch gave the content to"
    );
    b.commit().unwrap();
    let mut b = f.batch(0).unwrap();
    assert_eq!(b.same_content(&old, c).unwrap(), None);
    assert_eq!(b.same_content(&gone, c).unwrap(), None);
    assert!(b.same_content("new content", c).unwrap().is_some());
    b.commit().unwrap();
}

// Capsules: certificates, stats, seeds, web URLs.

fn certificate_changes_are_recorded(f: &mut dyn Frontier) {
    let mut b = f.batch(0).unwrap();
    let host = b.host_id("a.test").unwrap();
    assert_eq!(b.pin_certificate(host, "aa", 10).unwrap(), Pin::First);
    assert_eq!(b.pin_certificate(host, "aa", 20).unwrap(), Pin::Same);
    assert_eq!(
        b.pin_certificate(host, "bb", 30).unwrap(),
        Pin::Changed {
            previous: "aa".into()
        }
    );
    b.commit().unwrap();
    let stats = f.stats(40).unwrap();
    assert_eq!(stats.certificate_changes, 1);
    assert_eq!(
        stats.certificates_changed,
        [CertificateChange {
            host: "a.test".into(),
            changes: 1,
            current_since: Some(30),
            last_seen: Some(30),
        }]
    );
}

fn stats_show_the_schedule(f: &mut dyn Frontier) {
    let mut b = f.batch(0).unwrap();
    let a = id_of(&mut *b, "gemini://a.test/");
    id_of(&mut *b, "gemini://a.test/new");
    visit(&mut *b, a, UrlState::Indexed, 20);
    b.commit().unwrap();
    let s = f.stats(1000).unwrap().schedule;
    assert_eq!(s.due_now, 1, "the new URL");
    assert_eq!(s.due_within_day, 2);
    assert_eq!(s.due_within_week, 2);
    assert_eq!(s.never_visited, 1);
    assert_eq!(
        s.intervals,
        [
            ("under 1 day".to_string(), 0),
            ("1-3 days".to_string(), 1),
            ("3-7 days".to_string(), 0),
            ("7-14 days".to_string(), 0),
            ("14-30 days".to_string(), 0),
            ("30 days or more".to_string(), 0),
        ]
    );
}

fn seeds_people_suggest_are_due_at_once_and_listed(f: &mut dyn Frontier) {
    assert_eq!(
        f.suggest_seed("gemini://new.test/", "new.test", "cli", 10)
            .unwrap(),
        Suggested::New
    );
    assert_eq!(
        f.suggest_seed("gemini://new.test/", "new.test", "serve", 20)
            .unwrap(),
        Suggested::AlreadySuggested
    );
    // A known page that is not due is made due.
    let mut b = f.batch(0).unwrap();
    let known = id_of(&mut *b, "gemini://known.test/");
    visit(&mut *b, known, UrlState::Indexed, 20);
    b.commit().unwrap();
    f.end_run().unwrap();
    assert!(f
        .claim_capsules(
            &ClaimRequest {
                capsules: 10,
                per_capsule: 5,
                permits: &|c| c == "known.test"
            },
            30
        )
        .unwrap()
        .0
        .is_empty());
    f.end_run().unwrap();
    assert_eq!(
        f.suggest_seed("gemini://known.test/", "known.test", "serve", 30)
            .unwrap(),
        Suggested::Known
    );
    let claimed = claim(f, 10, 5, 30);
    assert_eq!(
        urls(&claimed),
        ["gemini://new.test/", "gemini://known.test/"]
    );
    let listed = f.suggested_seeds().unwrap();
    assert_eq!(listed.len(), 2);
    assert_eq!(listed[0].url, "gemini://known.test/");
    assert_eq!(listed[0].source, "serve");
    assert_eq!(listed[1].state, "new");
}

fn web_urls_recorded_as_not_fetchable_are_admitted_under_their_origin(f: &mut dyn Frontier) {
    let mut b = f.batch(0).unwrap();
    id_of(&mut *b, "gemini://both.test/");
    // What geode recorded before it spoke HTTP: web links excluded, under the bare host.
    for url in [
        "https://both.test/a",
        "http://both.test:8080/b",
        "mailto:x@both.test",
    ] {
        let new = NewUrl {
            url,
            host: "both.test",
            depth: 1,
            hops: 0,
            from: None,
            alias_of: None,
            prio: Priority::Fresh,
        };
        b.ensure_url(&new, Some("not-fetchable"), u64::MAX).unwrap();
    }
    b.commit().unwrap();
    let mut b = f.batch(50).unwrap();
    assert_eq!(b.admit_web_urls().unwrap(), 2);
    b.commit().unwrap();
    let row = |url: &str| {
        let d = f.url_details(url).unwrap().unwrap();
        (d.state, d.capsule, d.due_at)
    };
    assert_eq!(
        row("https://both.test/a"),
        ("new".into(), "https://both.test".into(), Some(50))
    );
    assert_eq!(
        row("http://both.test:8080/b"),
        ("new".into(), "http://both.test:8080".into(), Some(50))
    );
    assert_eq!(row("mailto:x@both.test").0, "excluded");
    // The capsules' URL counts (their budgets) follow the URLs: each is full at its count and
    // not one below it.
    let mut b = f.batch(60).unwrap();
    for (capsule, urls) in [
        ("both.test", 2),
        ("https://both.test", 1),
        ("http://both.test:8080", 1),
    ] {
        let host = b.host_id(capsule).unwrap();
        assert!(
            b.capsule_full(host, urls).unwrap(),
            "{capsule} holds {urls}"
        );
        assert!(
            !b.capsule_full(host, urls + 1).unwrap(),
            "{capsule} holds {urls} only"
        );
    }
    // Nothing left to admit.
    assert_eq!(b.admit_web_urls().unwrap(), 0);
}

/// What a crawl writes reads back the same through the trait: visits, links and anchors,
/// robots.txt, certificate pins, the archive, stats, backlinks and seeds.
fn what_a_crawl_records_reads_back(f: &mut dyn Frontier) {
    assert!(f.add_seed("gemini://a.test/", "a.test", 0).unwrap());
    assert!(
        !f.add_seed("gemini://a.test/", "a.test", 0).unwrap(),
        "known"
    );
    let claimed = claim(f, 1, 8, 1);
    assert_eq!(claimed.len(), 1);
    let root = &claimed[0];
    let mut b = f.batch(1).unwrap();
    let host = b.host_id("a.test").unwrap();
    assert_eq!(host, root.host_id);
    b.set_robots(host, 20, Some("User-agent: *\nDisallow: /private/\n"), 1)
        .unwrap();
    assert_eq!(b.pin_certificate(host, "aa", 1).unwrap(), Pin::First);
    assert_eq!(
        b.pin_certificate(host, "bb", 2).unwrap(),
        Pin::Changed {
            previous: "aa".into()
        }
    );
    assert_eq!(b.pin_certificate(host, "bb", 3).unwrap(), Pin::Same);
    let report = b
        .set_links(root.id, 0, &[labelled("gemini://b.test/", "Bee")], 100)
        .unwrap();
    assert_eq!(report.added, 1);
    let result = FetchResult {
        status: Some(20),
        meta: "text/gemini".into(),
        fetched_at: 1,
        ..FetchResult::default()
    };
    let visit = VisitRecord {
        state: UrlState::Fetched,
        result: &result,
        due_at: Some(1 + 86_400),
        revisit_secs: 86_400,
        first_failed_at: None,
        prio: Priority::Revisit,
        feed: false,
        changed: false,
        index_op: None,
        redirect_to: None,
    };
    b.record_visit(root.id, &visit).unwrap();
    let zstd = geode::frontier::archive::compress(b"# Hello\n");
    b.archive(
        root.id,
        &geode::frontier::ArchiveRecord {
            status: 20,
            meta: "text/gemini",
            fetched_at: 1,
            cert_sha256: Some("bb"),
            body: Some(geode::frontier::ArchivedBody {
                hash: "h1",
                size: 8,
                zstd: &zstd,
            }),
        },
    )
    .unwrap();
    b.commit().unwrap();
    let robots = f.robots(host).unwrap().expect("robots cached");
    assert_eq!(robots.status, 20);
    assert!(robots.text.unwrap().contains("/private/"));
    assert_eq!(
        f.archived(root.id).unwrap().unwrap().body.as_deref(),
        Some(&b"# Hello\n"[..])
    );
    let stats = f.stats(1).unwrap();
    assert_eq!(stats.urls_known, 2);
    assert_eq!(stats.certificate_changes, 1);
    assert_eq!(stats.archive.bodies, 1);
    let backlinks = f.backlinks("gemini://b.test/").unwrap();
    assert_eq!(backlinks.len(), 1);
    assert_eq!(backlinks[0].url, "gemini://a.test/");
    assert_eq!(backlinks[0].label, "Bee");
    let b_id = url_id(f, "gemini://b.test/");
    assert_eq!(f.inbound_labels(b_id, 10).unwrap(), ["Bee"]);
    assert_eq!(
        f.suggest_seed("gemini://c.test/", "c.test", "cli", 2)
            .unwrap(),
        Suggested::New
    );
    f.end_run().unwrap();
}
