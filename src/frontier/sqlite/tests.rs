//! Tests of the frontier's write paths, claims and recovery, and helpers shared with the other
//! test modules of the frontier.

use super::*;
use rusqlite::params;

use crate::frontier::{
    Batch as _, CertificateChange, Frontier as _, IndexLog as _, Reader as _, Standing,
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

fn urls(queued: &[QueuedUrl]) -> Vec<&str> {
    queued.iter().map(|q| q.url.as_str()).collect()
}

fn count(f: &SqliteFrontier, sql: &str) -> i64 {
    f.conn.query_row(sql, [], |r| r.get(0)).unwrap()
}

#[test]
fn capsules_are_leased_whole_and_urls_claimed_hubs_first() {
    let (_d, mut f) = open();
    let mut b = f.batch(100).unwrap();
    for u in [
        "gemini://a.test/one.gmi",
        "gemini://a.test/two.gmi",
        "gemini://b.test/x.gmi",
    ] {
        id_of(&mut b, u);
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
    assert!(f.claim_capsules(10, 2, 99, &|_| true).unwrap().0.is_empty());
    let claimed = f.claim_capsules(10, 2, 100, &|_| true).unwrap().0;
    assert_eq!(
        urls(&claimed),
        [
            "gemini://a.test/",
            "gemini://a.test/one.gmi",
            "gemini://b.test/x.gmi"
        ]
    );
    // Leased capsules are not handed out again, but their remaining URLs can be claimed.
    assert!(f
        .claim_capsules(10, 2, 100, &|_| true)
        .unwrap()
        .0
        .is_empty());
    let a = claimed[0].host_id;
    assert_eq!(
        urls(&f.claim_more(a, 5, 100).unwrap()),
        ["gemini://a.test/two.gmi"]
    );
    assert!(f.claim_more(a, 5, 100).unwrap().is_empty());
    // Let go with nothing visited: claimed URLs stay claimed until the run ends.
    f.release_capsule(a).unwrap();
    assert!(f
        .claim_capsules(10, 5, 100, &|_| true)
        .unwrap()
        .0
        .is_empty());
    f.end_run().unwrap();
    assert_eq!(f.claim_capsules(10, 5, 100, &|_| true).unwrap().0.len(), 4);
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
    assert_eq!(f.claim_capsules(1, n, 0, &|_| true).unwrap().0.len(), n);
    assert_eq!(
        count(&f, "SELECT COUNT(*) FROM urls WHERE claimed != 0"),
        n as i64
    );
    f.end_run().unwrap();
    assert_eq!(count(&f, "SELECT COUNT(*) FROM urls WHERE claimed != 0"), 0);
    assert_eq!(f.claim_capsules(1, n, 0, &|_| true).unwrap().0.len(), n);
}

#[test]
fn new_urls_and_revisits_take_turns() {
    let (_d, mut f) = open();
    let mut b = f.batch(0).unwrap();
    let mut old = Vec::new();
    for i in 0..4 {
        let id = id_of(&mut b, &format!("gemini://a.test/old{i}"));
        old.push(id);
    }
    b.commit().unwrap();
    // Visit the old ones once; they come due again at 1000 + a day.
    let claimed = f.claim_capsules(1, 10, 0, &|_| true).unwrap().0;
    assert_eq!(claimed.len(), 4);
    let mut b = f.batch(0).unwrap();
    for &id in &old {
        visit(&mut b, id, UrlState::Fetched, 51);
    }
    b.commit().unwrap();
    f.end_run().unwrap();
    let mut b = f.batch(5000).unwrap();
    for i in 0..4 {
        id_of(&mut b, &format!("gemini://a.test/new{i}"));
    }
    b.commit().unwrap();
    let later = 1000 + 86400;
    let claimed = f.claim_capsules(1, 6, later, &|_| true).unwrap().0;
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

#[test]
fn a_url_visited_in_a_run_is_not_claimed_again_in_it() {
    let (_d, mut f) = open();
    let mut b = f.batch(0).unwrap();
    let id = id_of(&mut b, "gemini://a.test/page");
    b.commit().unwrap();
    let claimed = f.claim_capsules(1, 5, 0, &|_| true).unwrap().0;
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
    assert!(f.claim_capsules(1, 5, 10, &|_| true).unwrap().0.is_empty());
    // The next run takes it.
    f.end_run().unwrap();
    let again = f.claim_capsules(1, 5, 10, &|_| true).unwrap().0;
    assert_eq!(urls(&again), ["gemini://a.test/page"]);
    assert!(again[0].prior.visited);
    assert_eq!(again[0].prior.revisit_secs, Some(1));
}

#[test]
fn retries_come_back_in_the_same_run_and_wake_the_crawl() {
    let (_d, mut f) = open();
    let mut b = f.batch(0).unwrap();
    let id = id_of(&mut b, "gemini://a.test/flaky");
    b.commit().unwrap();
    let host = f.claim_capsules(1, 5, 0, &|_| true).unwrap().0[0].host_id;
    let mut b = f.batch(0).unwrap();
    let result = FetchResult {
        status: Some(40),
        fetched_at: 0,
        ..FetchResult::default()
    };
    b.retry_later(id, &result, 60).unwrap();
    b.commit().unwrap();
    f.release_capsule(host).unwrap();
    assert_eq!(f.next_wakeup(0).unwrap(), Some(60));
    assert!(f.claim_capsules(1, 5, 59, &|_| true).unwrap().0.is_empty());
    let again = f.claim_capsules(1, 5, 60, &|_| true).unwrap().0;
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].prior.attempts, 1);
    assert_eq!(again[0].prior.state, Some(UrlState::New));
}

#[test]
fn capsules_in_back_off_wait() {
    let (_d, mut f) = open();
    let mut b = f.batch(0).unwrap();
    id_of(&mut b, "gemini://a.test/");
    let host = b.host_id("a.test").unwrap();
    b.set_backoff(host, 500).unwrap();
    b.commit().unwrap();
    assert!(f.claim_capsules(1, 5, 0, &|_| true).unwrap().0.is_empty());
    assert_eq!(f.next_wakeup(0).unwrap(), Some(500));
    // The last claim came a second too early: the crawl, asking at or after the end of the
    // back-off, is told to claim now rather than that nothing is left.
    assert!(f.claim_capsules(1, 5, 499, &|_| true).unwrap().0.is_empty());
    assert_eq!(f.next_wakeup(500).unwrap(), Some(500));
    assert_eq!(f.next_wakeup(501).unwrap(), Some(501));
    assert_eq!(f.claim_capsules(1, 5, 501, &|_| true).unwrap().0.len(), 1);
    assert_eq!(f.next_wakeup(501).unwrap(), None, "leased now");
}

#[test]
fn a_capsule_held_back_waits_and_stats_say_why_until_the_hold_ends() {
    let (_d, mut f) = open();
    let mut b = f.batch(0).unwrap();
    id_of(&mut b, "gemini://trap.test/");
    id_of(&mut b, "gemini://good.test/");
    let trap = b.host_id("trap.test").unwrap();
    let good = b.host_id("good.test").unwrap();
    b.hold_capsule(trap, 1_000, "fan-out").unwrap();
    b.commit().unwrap();
    let claimed = f.claim_capsules(5, 5, 10, &|_| true).unwrap().0;
    assert_eq!(claimed.len(), 1);
    assert_eq!(claimed[0].host_id, good);
    let stats = f.stats(10).unwrap();
    assert_eq!(stats.capsules_held_back, 1);
    assert_eq!(
        stats.held_back,
        vec![crate::frontier::HeldCapsule {
            host: "trap.test".into(),
            reason: "fan-out".into(),
            until: 1_000,
        }]
    );
    // Once the hold is over it is not listed, and the capsule is claimed again.
    assert_eq!(f.stats(1_000).unwrap().capsules_held_back, 0);
    assert_eq!(f.claim_capsules(5, 5, 1_000, &|_| true).unwrap().0.len(), 1);
    // A back-off set later is no hold of the budget's.
    f.release_capsule(trap).unwrap();
    let mut b = f.batch(0).unwrap();
    b.set_backoff(trap, 2_000).unwrap();
    b.commit().unwrap();
    assert_eq!(f.stats(1_500).unwrap().capsules_held_back, 0);
    assert_eq!(f.stats(1_500).unwrap().hosts_in_backoff, 1);
}

#[test]
fn standings_are_stored_per_capsule_and_pages_reset_for_those_not_listed() {
    let (_d, mut f) = open();
    let mut b = f.batch(0).unwrap();
    id_of(&mut b, "gemini://a.test/");
    id_of(&mut b, "gemini://b.test/");
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

/// The pages marked for an anchor update.
fn marked(f: &SqliteFrontier) -> Vec<i64> {
    let updates = f.anchor_updates(0, 100).unwrap();
    updates.into_iter().map(|u| u.dirty_id).collect()
}

#[test]
fn links_are_replaced_and_anchor_changes_marked() {
    let (_d, mut f) = open();
    let mut b = f.batch(0).unwrap();
    let page = id_of(&mut b, "gemini://a.test/");
    let [target, other] = indexed_pages(&mut b, ["gemini://b.test/", "gemini://c.test/"]);
    // Known, never visited: its anchors are read when it is first indexed.
    let unvisited = id_of(&mut b, "gemini://u.test/");
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
    assert_eq!(marked(&f), [target, other]);
    assert_eq!(f.inbound_labels(unvisited, 10).unwrap(), ["not yet"]);
    assert_eq!(f.inbound_labels(target, 10).unwrap(), ["lantern"]);
    f.clear_anchor_updates(&[target, other]).unwrap();

    // The page changes: the lantern becomes a beacon, the owl stays, d.test and u.test go.
    // d.test was visited meanwhile, u.test was not.
    let mut b = f.batch(0).unwrap();
    let d = id_of(&mut b, "gemini://d.test/");
    visit(&mut b, d, UrlState::Fetched, 51);
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
        marked(&f),
        [target, d],
        "owl did not change, u.test has no document"
    );
    assert_eq!(f.own_labels(page).unwrap(), ["beacon", "owl"]);

    // A second page with the same label: removing the first one's keeps the anchor, no mark.
    f.clear_anchor_updates(&[target, d]).unwrap();
    let mut b = f.batch(0).unwrap();
    let second = id_of(&mut b, "gemini://e.test/");
    link_to(&mut b, second, "gemini://b.test/", "beacon");
    b.drop_links(page).unwrap();
    b.commit().unwrap();
    assert_eq!(f.inbound_labels(target, 10).unwrap(), ["beacon"]);
    assert_eq!(marked(&f), [other], "only the owl's target lost a label");
}

#[test]
fn many_links_of_a_page_are_all_recorded_and_replaced() {
    let (_d, mut f) = open();
    let mut b = f.batch(0).unwrap();
    let page = id_of(&mut b, "gemini://a.test/");
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
    let recorded = |f: &SqliteFrontier| count(f, "SELECT COUNT(*) FROM links");
    assert_eq!(recorded(&f), 40);
    for i in [0, 15, 16, 31, 32, 39] {
        let mut b = f.batch(0).unwrap();
        let target = id_of(&mut b, &format!("gemini://b.test/{i}"));
        drop(b);
        assert_eq!(f.inbound_labels(target, 10).unwrap(), [format!("to {i}")]);
    }
    // Seen again with 20 of them and 17 new ones: 37 links, the other 20 gone.
    let again: Vec<LinkOut> = (20..57)
        .map(|i| labelled(&format!("gemini://b.test/{i}"), &format!("to {i}")))
        .collect();
    let mut b = f.batch(0).unwrap();
    b.set_links(page, 0, &again, u64::MAX).unwrap();
    b.commit().unwrap();
    assert_eq!(recorded(&f), 37);
    assert_eq!(
        count(
            &f,
            "SELECT MIN(CAST(substr(label, 4) AS INTEGER)) FROM links"
        ),
        20
    );
    assert_eq!(
        count(
            &f,
            "SELECT MAX(CAST(substr(label, 4) AS INTEGER)) FROM links"
        ),
        56
    );
}

#[test]
fn a_held_page_gains_labels_unmarked_and_loses_them_marked() {
    let (_d, mut f) = open();
    let mut b = f.batch(0).unwrap();
    let page = id_of(&mut b, "gemini://a.test/");
    let [held, written] = indexed_pages(&mut b, ["gemini://b.test/", "gemini://c.test/"]);
    b.commit().unwrap();
    let links = [
        labelled("gemini://b.test/", "kept back"),
        labelled("gemini://c.test/", "sent"),
    ];
    let mut b = f.batch(0).unwrap();
    b.set_links_holding(page, 0, &links, u64::MAX, &|id| id == held)
        .unwrap();
    b.commit().unwrap();
    // The held document reads its label when it goes; the written one needs an update.
    assert_eq!(marked(&f), [written]);
    assert_eq!(f.inbound_labels(held, 10).unwrap(), ["kept back"]);
    f.clear_anchor_updates(&[written]).unwrap();
    // Losing a label marks a held page all the same.
    let mut b = f.batch(0).unwrap();
    b.set_links_holding(page, 0, &[], u64::MAX, &|id| id == held)
        .unwrap();
    b.commit().unwrap();
    assert_eq!(marked(&f), [held, written]);
}

#[test]
fn anchor_updates_resolve_through_redirects_to_indexed_pages() {
    let (_d, mut f) = open();
    let mut b = f.batch(0).unwrap();
    let old = id_of(&mut b, "gemini://a.test/book");
    let page = redirect(&mut b, old, "gemini://a.test/book/", None);
    visit(&mut b, page, UrlState::Indexed, 20);
    let linker = id_of(&mut b, "gemini://b.test/");
    link_to(&mut b, linker, "gemini://a.test/book", "The Book");
    b.commit().unwrap();
    // Not committed yet: no page to rewrite.
    let updates = f.anchor_updates(0, 10).unwrap();
    assert_eq!(updates.len(), 1);
    assert_eq!(updates[0].dirty_id, old);
    assert_eq!(updates[0].page, None);
    index(&mut f, &[page], 1);
    let updates = f.anchor_updates(0, 10).unwrap();
    let target = updates[0].page.as_ref().expect("resolved");
    assert_eq!(target.url, "gemini://a.test/book/");
    assert!(!target.header_only);
    assert_eq!(f.inbound_labels(page, 10).unwrap(), ["The Book"]);
}

#[test]
fn inbound_labels_gather_a_redirect_chain_in_label_order_within_the_limit() {
    let (_d, mut f) = open();
    let mut b = f.batch(0).unwrap();
    // /a -> /b -> /page, and /page -> /a closes a loop.
    let a = id_of(&mut b, "gemini://x.test/a");
    let bb = redirect(&mut b, a, "gemini://x.test/b", None);
    let page = redirect(&mut b, bb, "gemini://x.test/page", None);
    redirect(&mut b, page, "gemini://x.test/a", None);
    // (link_to replaces a page's links: one linking page per label.)
    let linker = id_of(&mut b, "gemini://y.test/");
    link_to(&mut b, linker, "gemini://x.test/a", "zebra");
    for (from, to, label) in [
        ("gemini://y.test/1", "gemini://x.test/b", "apple"),
        ("gemini://y.test/2", "gemini://x.test/page", "mango"),
        ("gemini://z.test/", "gemini://x.test/page", "apple"),
    ] {
        let source = id_of(&mut b, from);
        link_to(&mut b, source, to, label);
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

#[test]
fn a_page_written_with_its_labels_forgets_its_anchor_update() {
    let (_d, mut f) = open();
    let mut b = f.batch(0).unwrap();
    let [page] = indexed_pages(&mut b, ["gemini://a.test/"]);
    let linker = id_of(&mut b, "gemini://b.test/");
    b.commit().unwrap();
    let mut b = f.batch(0).unwrap();
    link_to(&mut b, linker, "gemini://a.test/", "lantern");
    b.commit().unwrap();
    assert_eq!(f.anchor_updates(0, 10).unwrap().len(), 1);
    // The page is written now with the labels read in this transaction.
    let mut b = f.batch(0).unwrap();
    assert_eq!(b.inbound_labels(page, 10).unwrap(), ["lantern"]);
    b.forget_anchor_update(page).unwrap();
    b.commit().unwrap();
    assert!(f.anchor_updates(0, 10).unwrap().is_empty());
}

#[test]
fn index_operations_apply_only_when_committed() {
    let (_d, mut f) = open();
    let mut b = f.batch(0).unwrap();
    let [a, _] = indexed_pages(&mut b, ["gemini://a.test/", "gemini://a.test/c"]);
    b.commit().unwrap();
    assert!(f.indexed_urls().unwrap().is_empty());
    index(&mut f, &[a], 1);
    assert_eq!(f.indexed_urls().unwrap(), ["gemini://a.test/"]);
    // c's upsert never reached a commit: after a crash it is visited again at once, as new, and
    // its hash is forgotten so the visit indexes it whatever it finds.
    let (confirmed, redone) = f.recover(1, 7777).unwrap();
    assert_eq!((confirmed, redone), (0, 1));
    let again = f.claim_capsules(1, 5, 7777, &|_| true).unwrap().0;
    assert_eq!(urls(&again), ["gemini://a.test/c"]);
    assert_eq!(again[0].prior.state, Some(UrlState::New));
    assert_eq!(again[0].prior.content_hash, None);
    assert_eq!(
        count(&f, "SELECT COUNT(*) FROM urls WHERE index_op IS NOT NULL"),
        0
    );
}

#[test]
fn recovery_confirms_what_the_index_holds_and_redoes_removals() {
    let (_d, mut f) = open();
    let mut b = f.batch(0).unwrap();
    let [a] = indexed_pages(&mut b, ["gemini://a.test/"]);
    b.commit().unwrap();
    index(&mut f, &[a], 1);
    // A removal tagged with commit 2, which the index holds, though the crawl died before
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
    let [d] = indexed_pages(&mut b, ["gemini://a.test/d"]);
    b.commit().unwrap();
    f.assign_batch(&[a], 2).unwrap();
    f.assign_batch(&[d], 3).unwrap();
    let (confirmed, redone) = f.recover(2, 3000).unwrap();
    assert_eq!((confirmed, redone), (1, 1));
    assert!(f.indexed_urls().unwrap().is_empty());
    // The removed page keeps its schedule; the lost page is due now.
    let due = |id: i64| -> Option<i64> {
        f.conn
            .query_row("SELECT due_at FROM urls WHERE id = ?1", [id], |r| r.get(0))
            .unwrap()
    };
    assert_eq!(due(a), Some(9999));
    assert_eq!(due(d), Some(3000));
    assert_eq!(count(&f, "SELECT COUNT(*) FROM urls WHERE claimed != 0"), 0);
}

#[test]
fn duplicates_are_found_among_pages_in_or_on_their_way_to_the_index() {
    let (_d, mut f) = open();
    let mut b = f.batch(0).unwrap();
    let [a] = indexed_pages(&mut b, ["gemini://a.test/"]);
    let c = id_of(&mut b, "gemini://a.test/c");
    let hash = format!("hash-{a}");
    assert_eq!(
        b.same_content(&hash, c).unwrap().as_deref(),
        Some("gemini://a.test/")
    );
    assert_eq!(b.same_content(&hash, a).unwrap(), None);
    b.commit().unwrap();
    index(&mut f, &[a], 1);
    let mut b = f.batch(0).unwrap();
    assert!(b.same_content(&hash, c).unwrap().is_some());
    b.commit().unwrap();
}

#[test]
fn certificate_changes_are_recorded() {
    let (_d, mut f) = open();
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

#[test]
fn stats_show_the_schedule() {
    let (_d, mut f) = open();
    let mut b = f.batch(0).unwrap();
    let a = id_of(&mut b, "gemini://a.test/");
    id_of(&mut b, "gemini://a.test/new");
    visit(&mut b, a, UrlState::Indexed, 20);
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

#[test]
fn capsules_out_of_scope_are_passed_over_until_the_run_ends() {
    let (_d, mut f) = open();
    let mut b = f.batch(0).unwrap();
    id_of(&mut b, "gemini://in.test/");
    id_of(&mut b, "gemini://out.test/");
    b.commit().unwrap();
    let only_in = |capsule: &str| capsule == "in.test";
    let (claimed, examined) = f.claim_capsules(10, 5, 0, &only_in).unwrap();
    assert_eq!(urls(&claimed), ["gemini://in.test/"]);
    assert_eq!(examined, 2);
    // Not examined again in this run, and not lost for the next one.
    assert_eq!(f.claim_capsules(10, 5, 0, &only_in).unwrap().1, 0);
    f.end_run().unwrap();
    let (claimed, _) = f.claim_capsules(10, 5, 0, &|_| true).unwrap();
    assert_eq!(claimed.len(), 2);
}

#[test]
fn seeds_people_suggest_are_due_at_once_and_listed() {
    let (_d, mut f) = open();
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
    let known = id_of(&mut b, "gemini://known.test/");
    visit(&mut b, known, UrlState::Indexed, 20);
    b.commit().unwrap();
    f.end_run().unwrap();
    assert!(f
        .claim_capsules(10, 5, 30, &|c| c == "known.test")
        .unwrap()
        .0
        .is_empty());
    f.end_run().unwrap();
    assert_eq!(
        f.suggest_seed("gemini://known.test/", "known.test", "serve", 30)
            .unwrap(),
        Suggested::Known
    );
    let (claimed, _) = f.claim_capsules(10, 5, 30, &|_| true).unwrap();
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

#[test]
fn web_urls_recorded_as_not_fetchable_are_admitted_under_their_origin() {
    let (_d, mut f) = open();
    let mut b = f.batch(0).unwrap();
    id_of(&mut b, "gemini://both.test/");
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
    let row = |url: &str| -> (String, String, Option<i64>) {
        f.conn
            .query_row(
                "SELECT state, hosts.name, due_at FROM urls JOIN hosts ON hosts.id = host_id
                 WHERE url = ?1",
                [url],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .unwrap()
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
    // The capsules' URL counts (their budgets) follow the URLs.
    let known = |name: &str| {
        count(
            &f,
            &format!("SELECT url_count FROM hosts WHERE name = '{name}'"),
        )
    };
    assert_eq!(known("both.test"), 2);
    assert_eq!(known("https://both.test"), 1);
    assert_eq!(known("http://both.test:8080"), 1);
    // Nothing left to admit.
    let mut b = f.batch(60).unwrap();
    assert_eq!(b.admit_web_urls().unwrap(), 0);
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
