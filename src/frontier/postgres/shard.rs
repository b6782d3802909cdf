//! Shards: how the crawlers sharing a database split its capsules so that each writes only
//! rows of its own and none waits for another's lock.
//!
//! Capsules fall into [`SHARDS`] shards by a hash of their IP address (the unit of politeness),
//! or of their name until a crawler resolved it (`geode_shard` in `shards.sql`; a capsule whose
//! address changes moves shard with it, [`place`]). The `shards` table names each shard's owner,
//! the end of its lease on the database's clock, and an epoch that grows at every change of
//! owner. A crawler says it is alive when it starts (`recover`), and syncs ([`sync`]) when it
//! first claims (half a second later, so that crawlers started together count each other),
//! about every second while it runs (`keep_share`, and its claims), and when it renews its
//! leases: one statement renews its heartbeat and every shard it owns and counts the live
//! crawlers; another reads every shard's [`Load`] (its owner, its capsules waiting). Shards are
//! shared by count, so that the work found later (a capsule's shard once its address is known)
//! lands evenly: a crawler adopts shards nobody holds (free, or whose owner stopped renewing;
//! those with work first) up to its fair share (the shards over the live crawlers, rounded up),
//! letting go of what a dead owner had claimed there, or gives back shards without work it holds
//! over its share. **Shards with work** move by how much of it waits: a crawler with more
//! capsules waiting to be started than the mean of the crawlers that synced lately hands its
//! heaviest shards where it leases no capsule to the one with the fewest ([`plan_gifts`]), at
//! new epochs and under their leases, so that a crawler whose shards happen to hold more
//! addresses, or a crawler that joins, does not leave the others idle; the receiver, over its
//! share then, gives back shards without work, which the giver adopts. Shards with work that
//! nobody took for a few seconds (their crawler ended or died) are adopted beyond the share.
//! Only the owner claims a shard's capsules, so claims read and mark the crawler's own rows and
//! take no global lock.
//!
//! **Fencing.** A crawler that stopped renewing (SIGSTOP, a stalled machine) loses its shards
//! when their lease runs out; when it runs again, its next sync finds them gone or their epoch
//! changed ([`Owned::lost`]), the crawl lets go of their capsules, and the visits it still
//! records there are refused: a visit is written only while the URL's shard is owned by the
//! crawler at the epoch it knows, or by no live crawler ([`FENCE`]).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use postgres::GenericClient;

use super::claim::{crawler_alive, freed, host_next_due, let_go, release_expired};
use super::{Result, DB_NOW};

/// How many shards capsules are split into (`shards.sql` makes as many rows, and its
/// `geode_shard` hashes into as many).
pub(super) const SHARDS: i64 = 256;

/// How often a crawler syncs its shards while it claims.
pub(super) const SYNC_EVERY: Duration = Duration::from_secs(1);

/// The condition, on a statement updating `urls`, that no other crawler holds the URL's shard:
/// the shard is owned by crawler `$OWNER` at one of the epochs in `$SHARDS`/`$EPOCHS`, or by
/// nobody (no owner, or an owner whose lease ran out: a one-off writer such as `geode seed`
/// may write there). Placeholders are replaced by [`fence`].
const FENCE: &str = "NOT EXISTS (SELECT 1 FROM hosts fh JOIN shards fs ON fs.id = fh.shard
                       WHERE fh.id = urls.host_id AND fs.owner IS NOT NULL
                         AND fs.leased_until >= EXTRACT(EPOCH FROM clock_timestamp())::BIGINT
                         AND NOT (fs.owner = $OWNER AND (fs.id, fs.epoch) IN
                                  (SELECT * FROM unnest($SHARDS::INT[], $EPOCHS::BIGINT[]))))";

/// The condition that capsule `h` (a row of `hosts`) has work at `now` (an SQL expression):
/// leased or claimed by a crawler, due and out of back-off, or with URLs other writers added
/// that its owner did not fold in. A shard with such a capsule and no owner is orphaned.
pub(super) fn has_work(h: &str, now: &str) -> String {
    format!(
        "({h}.claimed != 0
          OR ({h}.next_due <= {now} AND COALESCE({h}.backoff_until, 0) <= {now})
          OR EXISTS (SELECT 1 FROM host_news n WHERE n.host_id = {h}.id AND n.due IS NOT NULL))"
    )
}

/// [`FENCE`] with its parameters numbered `owner`, `shards` and `epochs`.
pub(super) fn fence(owner: usize, shards: usize, epochs: usize) -> String {
    FENCE
        .replace("$OWNER", &format!("${owner}"))
        .replace("$SHARDS", &format!("${shards}"))
        .replace("$EPOCHS", &format!("${epochs}"))
}

/// The shards a crawler owns, each at the epoch it adopted it, and when it last synced.
#[derive(Debug, Default)]
pub(super) struct Owned {
    epochs: BTreeMap<i32, i64>,
    synced: Option<Instant>,
    /// Shards it owned and found lost at a sync, until the crawl asks (`lost_leases`).
    lost: Vec<i32>,
    /// The crawlers alive at the last sync, itself included.
    live: i64,
    /// Set when the crawler, about to end, found URLs other crawlers claim
    /// ([`Owned::note_others_claims`]): its next sync lets go of those of crawlers no longer
    /// alive.
    others_claims: AtomicBool,
}

impl Owned {
    /// The shards owned, in order.
    pub(super) fn ids(&self) -> Vec<i32> {
        self.epochs.keys().copied().collect()
    }

    /// The shards owned and their epochs, as two arrays (for [`fence`]).
    pub(super) fn arrays(&self) -> (Vec<i32>, Vec<i64>) {
        self.epochs.iter().map(|(&id, &epoch)| (id, epoch)).unzip()
    }

    pub(super) fn contains(&self, shard: i32) -> bool {
        self.epochs.contains_key(&shard)
    }

    /// Whether a sync is due (never synced, or not for [`SYNC_EVERY`]).
    pub(super) fn stale(&self) -> bool {
        self.synced.map_or(true, |at| at.elapsed() >= SYNC_EVERY)
    }

    /// The shards lost since the last call.
    pub(super) fn take_lost(&mut self) -> Vec<i32> {
        std::mem::take(&mut self.lost)
    }

    /// Notes that other crawlers claim URLs: the next sync lets go of the claims of those no
    /// longer alive (a crawler that failed or was killed before giving its claims back).
    pub(super) fn note_others_claims(&self) {
        self.others_claims.store(true, Ordering::Relaxed);
    }

    /// Forgets every shard (given back at the end of a run).
    pub(super) fn clear(&mut self) {
        self.epochs.clear();
        self.synced = None;
    }
}

/// A crawler's fair share of the shards when `live` crawlers work (itself included).
pub(super) fn fair_share(live: i64) -> i64 {
    let live = live.max(1);
    (SHARDS + live - 1) / live
}

/// Renews this crawler's heartbeat and shards, notes those it lost, and adopts or gives back
/// shards to hold its fair share. Returns how many shards it owns.
pub(super) fn sync(
    tx: &mut impl GenericClient,
    crawler: &str,
    lease_secs: i64,
    owned: &mut Owned,
) -> Result<usize> {
    // The heartbeat, the renewal and the count of the others alive, in one statement (its
    // snapshot does not see its own heartbeat: the others are counted, and this one added).
    let rows = tx.query(
        &format!(
            "WITH beat AS (
                 INSERT INTO crawlers(id, seen_at, lease_secs) VALUES ($1, {DB_NOW}, $2)
                 ON CONFLICT (id) DO UPDATE SET seen_at = excluded.seen_at,
                                                lease_secs = excluded.lease_secs
                 RETURNING id),
             renewed AS (
                 UPDATE shards SET leased_until = {DB_NOW} + $2 WHERE owner = $1
                 RETURNING id, epoch)
             SELECT id, epoch FROM renewed
             UNION ALL
             SELECT -1, 1 + (SELECT COUNT(*) FROM crawlers
                             WHERE id <> $1 AND seen_at + lease_secs >= {DB_NOW})"
        ),
        &[&crawler, &lease_secs],
    )?;
    let mut mine = BTreeMap::new();
    let mut live = 1;
    for row in rows {
        let (id, epoch): (i32, i64) = (row.get(0), row.get(1));
        if id < 0 {
            live = epoch;
        } else {
            mine.insert(id, epoch);
        }
    }
    for (&id, &epoch) in &owned.epochs {
        if mine.get(&id) != Some(&epoch) {
            owned.lost.push(id);
        }
    }
    // A crawler that died (its heartbeat ran out) may leave claims on capsules it had let go,
    // in shards nobody adopts again (their owner lives): they go as soon as it is seen gone,
    // or when this crawler, about to end, found claims of others.
    // (Both noted only at the end, for a transaction run again after a conflict.)
    if live < owned.live || owned.others_claims.load(Ordering::Relaxed) {
        release_expired(tx)?;
    }
    // Where the work waits, after the renewal; read only when another crawler is alive (those
    // that synced lately, the only ones handed shards, are counted alive).
    let gifts = if live > 1 {
        let loads = loads(tx, crawler)?;
        debug_assert_eq!(
            loads.len() as i64,
            SHARDS,
            "shards.sql makes every shard's row"
        );
        plan_gifts(crawler, &loads)
    } else {
        Vec::new()
    };
    // Shards are shared by count, so that the work found later (a capsule's shard once its
    // address is known) lands evenly; only shards without work are given back, and those with
    // work move by how much waits in them (below).
    let share = fair_share(live);
    let held = mine.len() as i64;
    if held < share {
        mine.extend(adopt(tx, crawler, lease_secs, Wanted::Share(share - held))?);
    } else if held > share {
        for id in give_back(tx, crawler, held - share)? {
            mine.remove(&id);
        }
    } else {
        // Shares add up to every shard, but a crawler that ended or died may leave shards
        // with work that no crawler short of its share takes: those are adopted beyond it.
        mine.extend(adopt(tx, crawler, lease_secs, Wanted::Orphans)?);
    }
    for id in hand_over(tx, crawler, &gifts)? {
        mine.remove(&id);
    }
    owned.epochs = mine;
    owned.synced = Some(Instant::now());
    owned.live = live;
    owned.others_claims.store(false, Ordering::Relaxed);
    Ok(owned.epochs.len())
}

/// A shard as a sync sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Load {
    pub id: i32,
    /// Its owner while its lease runs.
    pub owner: Option<String>,
    /// Whether the owner synced within [`RECENT_SECS`] (it may be handed shards).
    pub recent: bool,
    /// How many of its capsules wait for a crawler: with work, and leased by none.
    pub waiting: i64,
    /// Whether the crawler syncing leases a capsule there (it cannot hand the shard over).
    pub leased: bool,
}

/// How recently a crawler must have synced to be handed shards (seconds): crawlers sync about
/// every second while they work and every two while they wait for work, so one silent for
/// longer is stopped, or ending.
const RECENT_SECS: i64 = 5;

/// Every shard's [`Load`], as `crawler` sees it (one statement).
fn loads(tx: &mut impl GenericClient, crawler: &str) -> Result<Vec<Load>> {
    Ok(tx
        .query(
            &format!(
                "SELECT s.id,
                        CASE WHEN s.owner IS NOT NULL AND s.leased_until >= {DB_NOW}
                             THEN s.owner END,
                        EXISTS (SELECT 1 FROM crawlers c
                                WHERE c.id = s.owner AND c.seen_at >= {DB_NOW} - $2),
                        COALESCE(w.waiting, 0), COALESCE(w.leased, FALSE)
                 FROM shards s
                 LEFT JOIN (SELECT h.shard, COUNT(*) FILTER (WHERE h.claimed = 0) AS waiting,
                                   bool_or(h.claimed != 0 AND h.leased_by = $1) AS leased
                            FROM hosts h WHERE {work} GROUP BY h.shard) w ON w.shard = s.id
                 ORDER BY s.id",
                work = has_work("h", DB_NOW)
            ),
            &[&crawler, &RECENT_SECS],
        )?
        .iter()
        .map(|r| Load {
            id: r.get(0),
            owner: r.get(1),
            recent: r.get(2),
            waiting: r.get(3),
            leased: r.get(4),
        })
        .collect())
}

/// How many shards a crawler hands over at one sync, at most.
const GIFTS_AT_ONCE: usize = 8;

/// Which of its shards with work `crawler` hands to which other crawler, so that the crawlers
/// that synced lately have about as many capsules waiting to be started ([`Load::waiting`]):
/// work under way stays where it is (a capsule leased is served by its crawler to the end), and
/// how much a capsule not yet started holds is not known, so capsules waiting are what can be
/// moved and what is counted. To the crawler with the fewest, its heaviest shard that leaves
/// the giver no lighter than the mean nor than the receiver, among those where the giver leases
/// no capsule; at most [`GIFTS_AT_ONCE`]. The giver never drops below the mean, so givers
/// syncing at once cannot together push a receiver far past it; a receiver never ends heavier
/// than its giver, so shards do not swing back and forth.
pub(super) fn plan_gifts(crawler: &str, loads: &[Load]) -> Vec<(i32, String)> {
    let mut others: BTreeMap<&str, i64> = BTreeMap::new();
    let mut held = 0;
    let mut giftable: Vec<(i64, i32)> = Vec::new();
    for load in loads {
        match load.owner.as_deref() {
            Some(owner) if owner == crawler => {
                held += load.waiting;
                if load.waiting > 0 && !load.leased {
                    giftable.push((load.waiting, load.id));
                }
            }
            Some(owner) if load.recent => *others.entry(owner).or_default() += load.waiting,
            _ => {}
        }
    }
    if others.is_empty() {
        return Vec::new();
    }
    let mean = (held + others.values().sum::<i64>()) / (others.len() as i64 + 1);
    // Heaviest first.
    giftable.sort_unstable_by_key(|&(w, id)| (std::cmp::Reverse(w), id));
    let mut gifts = Vec::new();
    while gifts.len() < GIFTS_AT_ONCE {
        let Some((&to, &has)) = others.iter().min_by_key(|&(name, w)| (*w, *name)) else {
            break;
        };
        let Some(at) = giftable
            .iter()
            .position(|&(w, _)| held - w >= mean && has + w <= held - w)
        else {
            break;
        };
        let (w, id) = giftable.remove(at);
        held -= w;
        others.insert(to, has + w);
        gifts.push((id, to.to_string()));
    }
    gifts
}

/// Hands shards of `crawler` to other crawlers (shard, receiver), each at a new epoch and under
/// the receiver's lease, where `crawler` still leases no capsule and the receiver synced
/// lately. The receiver finds them its own when it next renews its shards. Returns those
/// handed over.
fn hand_over(
    tx: &mut impl GenericClient,
    crawler: &str,
    gifts: &[(i32, String)],
) -> Result<Vec<i32>> {
    if gifts.is_empty() {
        return Ok(Vec::new());
    }
    let (ids, to): (Vec<i32>, Vec<&str>) = gifts.iter().map(|(id, to)| (*id, to.as_str())).unzip();
    let given: Vec<i32> = tx
        .query(
            &format!(
                "UPDATE shards s SET owner = g.owner, epoch = s.epoch + 1,
                        leased_until = {DB_NOW} + c.lease_secs
                 FROM unnest($2::INT[], $3::TEXT[]) AS g(id, owner)
                 JOIN crawlers c ON c.id = g.owner
                 WHERE s.id = g.id AND s.owner = $1 AND c.seen_at >= {DB_NOW} - $4
                   AND NOT EXISTS (SELECT 1 FROM hosts h WHERE h.shard = s.id
                                     AND h.claimed != 0 AND h.leased_by = $1)
                 RETURNING s.id"
            ),
            &[&crawler, &ids, &to, &RECENT_SECS],
        )?
        .iter()
        .map(|r| r.get(0))
        .collect();
    if !given.is_empty() {
        tracing::debug!(
            shards = given.len(),
            "handed shards with work to lighter crawlers"
        );
    }
    Ok(given)
}

/// Which shards nobody holds a crawler adopts.
enum Wanted {
    /// Up to so many, to make up its fair share (with work first).
    Share(i64),
    /// Up to [`ORPHANS_AT_ONCE`] beyond its share: those with work (a capsule due, claimed by
    /// a crawler that stopped, or with news) that nobody took for [`ORPHAN_GRACE_SECS`] (a
    /// crawler short of its share would have).
    Orphans,
}

/// How long a shard with work may stay without an owner before crawlers holding their share
/// adopt it too (seconds).
const ORPHAN_GRACE_SECS: i64 = 3;

/// How many orphaned shards a crawler holding its share adopts at one sync.
const ORPHANS_AT_ONCE: i64 = 8;

/// Adopts shards nobody holds (`wanted`), each at a new epoch, and lets go of what crawlers no
/// longer alive had claimed and leased in them. Returns the shards and their epochs.
fn adopt(
    tx: &mut impl GenericClient,
    crawler: &str,
    lease_secs: i64,
    wanted: Wanted,
) -> Result<Vec<(i32, i64)>> {
    let (n, orphans_only) = match wanted {
        Wanted::Share(n) => (n, false),
        Wanted::Orphans => (ORPHANS_AT_ONCE, true),
    };
    // Shards with work first, so that a crawler that joins while another holds every shard
    // gets work, not empty shards; then in an order of the crawler's own, so that crawlers
    // adopting at once mostly want different shards (those another is taking are skipped,
    // not waited for). A shard given back or lapsed holds the moment it did in `leased_until`.
    let adopted: Vec<(i32, i64)> = tx
        .query(
            &format!(
                "WITH free AS (
                     SELECT id FROM shards s
                     WHERE (owner IS NULL OR leased_until < {DB_NOW})
                       AND (NOT $4 OR (leased_until < {DB_NOW} - $5
                            AND EXISTS (SELECT 1 FROM hosts h
                                        WHERE h.shard = s.id AND {work})))
                     ORDER BY EXISTS (SELECT 1 FROM hosts h WHERE h.shard = s.id AND {work})
                                  DESC,
                              md5(id::TEXT || $1)
                     LIMIT $3
                     FOR UPDATE SKIP LOCKED)
                 UPDATE shards s SET owner = $1, epoch = s.epoch + 1,
                        leased_until = {DB_NOW} + $2
                 FROM free WHERE s.id = free.id
                 RETURNING s.id, s.epoch",
                work = has_work("h", DB_NOW)
            ),
            &[&crawler, &lease_secs, &n, &orphans_only, &ORPHAN_GRACE_SECS],
        )?
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    if adopted.is_empty() {
        return Ok(adopted);
    }
    let ids: Vec<i32> = adopted.iter().map(|&(id, _)| id).collect();
    // Claims and visit marks of crawlers that stopped (a live one that gave a shard back held
    // no capsule there; its visit marks keep it from fetching a page twice in its run). A live
    // crawler may lease a capsule here that moved into this shard when it resolved the
    // capsule's address: it puts the capsule's URLs back itself, and they reach this shard's
    // owner as news (`PgBatch::write_requeued`).
    // URLs in id order, then capsules, as every release does (no deadlock with them).
    let released = let_go(
        tx,
        &format!(
            "claimed != 0 AND claimed_by IS DISTINCT FROM $2
             AND host_id IN (SELECT id FROM hosts WHERE shard = ANY($1))
             AND NOT {alive}",
            alive = crawler_alive("urls.claimed_by")
        ),
        &[&ids, &crawler],
    )?;
    let taken = tx.execute(
        &format!(
            "UPDATE hosts SET {}
             WHERE shard = ANY($1) AND claimed != 0 AND leased_by IS DISTINCT FROM $2",
            freed("hosts.id")
        ),
        &[&ids, &crawler],
    )?;
    // A free capsule's due time left out the URLs the dead had claimed: they count now (a
    // crawler that failed after letting its capsule go left it with no due time at all).
    if !released.is_empty() {
        tx.execute(
            &format!(
                "UPDATE hosts SET next_due = ({}) WHERE id = ANY($1) AND claimed = 0",
                host_next_due("hosts.id")
            ),
            &[&released],
        )?;
    }
    if taken > 0 {
        tracing::info!(
            capsules = taken,
            shards = ids.len(),
            "taking over capsules whose lease ran out"
        );
    }
    tracing::debug!(shards = ids.len(), orphans_only, "adopted shards");
    Ok(adopted)
}

/// Gives back up to `n` of this crawler's shards without work (where nobody leases a capsule,
/// nothing is due and no news waits), at a new epoch. Returns them.
fn give_back(tx: &mut impl GenericClient, crawler: &str, n: i64) -> Result<Vec<i32>> {
    let given: Vec<i32> = tx
        .query(
            &format!(
                "UPDATE shards SET owner = NULL, leased_until = {DB_NOW}, epoch = epoch + 1
                 WHERE id IN (
                     SELECT s.id FROM shards s WHERE s.owner = $1
                       AND NOT EXISTS (SELECT 1 FROM hosts h WHERE h.shard = s.id AND {work})
                     ORDER BY md5(s.id::TEXT || $1) DESC
                     LIMIT $2)
                 RETURNING id",
                work = has_work("h", DB_NOW)
            ),
            &[&crawler, &n],
        )?
        .iter()
        .map(|r| r.get(0))
        .collect();
    if !given.is_empty() {
        tracing::debug!(shards = given.len(), "gave shards back");
    }
    Ok(given)
}

/// Gives back every shard this crawler owns (the end of its run).
pub(super) fn give_back_all(tx: &mut impl GenericClient, crawler: &str) -> Result<()> {
    tx.execute(
        &format!(
            "UPDATE shards SET owner = NULL, leased_until = {DB_NOW}, epoch = epoch + 1
             WHERE owner = $1"
        ),
        &[&crawler],
    )?;
    Ok(())
}

/// Folds the news of this crawler's capsules (URLs other writers added, their earliest due
/// time) into their rows, in one statement.
pub(super) fn fold_news(tx: &mut impl GenericClient, shards: &[i32]) -> Result<()> {
    tx.execute(
        "WITH n AS (
             DELETE FROM host_news hn USING hosts h
             WHERE hn.host_id = h.id AND h.shard = ANY($1)
             RETURNING hn.host_id, hn.due, hn.added)
         UPDATE hosts h SET url_count = h.url_count + s.added,
                next_due = CASE WHEN s.due IS NOT NULL AND (h.next_due IS NULL OR h.next_due > s.due)
                                THEN s.due ELSE h.next_due END
         FROM (SELECT host_id, MIN(due) AS due, SUM(added)::BIGINT AS added
               FROM n GROUP BY host_id) s
         WHERE h.id = s.host_id",
        &[&shards],
    )?;
    Ok(())
}

/// Records capsules' addresses (capsule id, address). Returns the shard of each whose address
/// is new to it (the capsule then belongs to the owner of that shard); the others are
/// unchanged.
pub(super) fn place(
    tx: &mut impl GenericClient,
    placed: &[(i64, String)],
) -> Result<std::collections::HashMap<i64, i32>> {
    let (ids, ips): (Vec<i64>, Vec<&str>) =
        placed.iter().map(|(id, ip)| (*id, ip.as_str())).unzip();
    Ok(tx
        .query(
            "UPDATE hosts h SET ip = p.ip, shard = geode_shard(p.ip)
             FROM (SELECT DISTINCT ON (id) id, ip FROM unnest($1::BIGINT[], $2::TEXT[]) AS p(id, ip)
                   ORDER BY id) p
             WHERE h.id = p.id AND h.ip IS DISTINCT FROM p.ip
             RETURNING h.id, h.shard",
            &[&ids, &ips],
        )?
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_cover_every_shard() {
        assert_eq!(fair_share(0), 256);
        assert_eq!(fair_share(1), 256);
        assert_eq!(fair_share(2), 128);
        assert_eq!(fair_share(3), 86);
        for live in 1..=300 {
            assert!(fair_share(live) * live >= SHARDS, "{live} crawlers");
            assert!((fair_share(live) - 1) * live < SHARDS, "{live} crawlers");
        }
    }

    fn load(id: i32, owner: &str, waiting: i64) -> Load {
        Load {
            id,
            owner: (!owner.is_empty()).then(|| owner.to_string()),
            recent: true,
            waiting,
            leased: false,
        }
    }

    #[test]
    fn a_heavier_crawler_hands_work_to_the_lightest_down_to_the_mean() {
        // a has 12 capsules waiting, b 2, c 4: the mean is 6.
        let mut loads = vec![
            load(0, "a", 4),
            load(1, "a", 4),
            load(2, "a", 2),
            load(3, "a", 2),
            load(4, "b", 2),
            load(5, "c", 4),
            load(6, "b", 0),
            load(7, "", 5),
        ];
        // b (the lightest) gets a 4 (a 8, b 6), then c (now the lightest) a 2 (a 6, c 6);
        // then nothing goes: a would drop below the mean.
        let gifts = plan_gifts("a", &loads);
        assert_eq!(gifts, [(0, "b".to_string()), (2, "c".to_string())]);
        // A shard where a leases a capsule stays: the next heaviest goes.
        loads[0].leased = true;
        let gifts = plan_gifts("a", &loads);
        assert_eq!(gifts, [(1, "b".to_string()), (2, "c".to_string())]);
        // b and c give nothing: each is at or below the mean.
        assert!(plan_gifts("b", &loads).is_empty());
        assert!(plan_gifts("c", &loads).is_empty());
    }

    #[test]
    fn gifts_never_leave_the_receiver_heavier_than_the_giver() {
        // 5 against 3: a 2 would make it 3 against 5, and back again at the next sync.
        let loads = [load(0, "a", 2), load(1, "a", 3), load(2, "b", 3)];
        assert!(plan_gifts("a", &loads).is_empty());
        // 5 against 1: the 2 goes (3 and 3).
        let loads = [load(0, "a", 2), load(1, "a", 3), load(2, "b", 1)];
        assert_eq!(plan_gifts("a", &loads), [(0, "b".to_string())]);
    }

    #[test]
    fn gifts_go_only_to_crawlers_that_synced_lately_and_spread_over_them() {
        let mut loads: Vec<Load> = (0..16).map(|id| load(id, "a", 1)).collect();
        loads.push(load(16, "b", 0));
        loads.push(load(17, "c", 0));
        let mut stopped = load(18, "d", 0);
        stopped.recent = false;
        loads.push(stopped);
        let gifts = plan_gifts("a", &loads);
        // 16 over three crawlers: at most GIFTS_AT_ONCE at a sync, taking turns.
        assert_eq!(gifts.len(), GIFTS_AT_ONCE);
        let to = |name: &str| gifts.iter().filter(|(_, to)| to == name).count();
        assert_eq!((to("b"), to("c"), to("d")), (4, 4, 0));
        // Alone, or with stopped crawlers only, a crawler keeps everything.
        assert!(plan_gifts("a", &loads[..16]).is_empty());
        let mut only_stopped = loads[..16].to_vec();
        only_stopped.push(loads[18].clone());
        assert!(plan_gifts("a", &only_stopped).is_empty());
    }

    #[test]
    fn the_fence_numbers_its_parameters() {
        let sql = fence(3, 7, 8);
        assert!(sql.contains("fs.owner = $3"));
        assert!(sql.contains("unnest($7::INT[], $8::BIGINT[])"));
        assert!(sql.contains("fs.owner IS NOT NULL"));
        assert!(!sql.contains("$OWNER") && !sql.contains("$SHARDS") && !sql.contains("$EPOCHS"));
    }
}
