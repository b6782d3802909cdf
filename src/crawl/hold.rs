//! Documents held back until their capsule's pages are fetched.
//!
//! A document carries the labels of the links to its page (`anchors`). On a first crawl most of
//! those links sit on pages of the same capsule that are fetched after it, so a document written
//! at once has to be written again at the end of the run (an anchor refresh indexes the whole
//! document anew). The crawl therefore keeps a capsule's new and changed documents here until
//! it lets the capsule go, and reads their anchors then: one write instead of two.
//!
//! What is held is bounded: in bytes across capsules (the largest holdings go first when over)
//! and in age (a capsule that takes long sends what it has). A document sent early is refreshed
//! at the end of the run like any other, if its anchors change after.
//!
//! A crash loses what is held as it loses what the index has not committed: those pages are
//! recorded with a pending upsert, which `Frontier::recover` makes due again. A stop by signal
//! sends at most [`SENT_ON_SIGNAL`] of them, for the same reason. Pure bookkeeping:
//! the crawl loop does the reading and the sending.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use crate::index::PageDoc;

/// Bytes of text held across capsules: what the crawl may spend on it of its 256 MB (the
/// 10,000 pages of the bench farm hold 29 MB of text; the largest holdings go first).
pub(super) const MAX_BYTES: usize = 16 << 20;
/// How long a capsule's first held document may wait.
pub(super) const MAX_AGE: Duration = crate::frontier::HOLD_MAX_AGE;
/// Held documents sent when a signal stops the crawl: as many as the indexing thread's queue
/// holds (what could be waiting there anyway), so that the stop stays quick.
pub(super) const SENT_ON_SIGNAL: usize = 1024;
/// What a held document costs beside its text: the document's own strings and bookkeeping.
const OVERHEAD: usize = 256;

/// A document waiting for its anchors.
#[derive(Debug)]
pub(super) struct Held {
    /// Frontier id of the document's URL.
    pub url_id: i64,
    /// A file known by its header carries its anchors in its body too.
    pub header_only: bool,
    pub doc: Box<PageDoc>,
}

#[derive(Debug)]
struct Capsule {
    docs: Vec<Held>,
    bytes: usize,
    since: Instant,
}

/// The held documents of every capsule, and which are due to go.
#[derive(Debug)]
pub(super) struct Hold {
    enabled: bool,
    max_bytes: usize,
    max_age: Duration,
    capsules: HashMap<i64, Capsule>,
    /// Which capsule holds a URL's document.
    owner: HashMap<i64, i64>,
    bytes: usize,
    /// Capsules let go since the last [`Hold::take_due`].
    done: Vec<i64>,
}

impl Hold {
    /// A hold that keeps nothing when `enabled` is false: every document goes at the next
    /// [`Hold::take_due`], in the transaction that recorded it.
    pub fn new(enabled: bool, max_bytes: usize, max_age: Duration) -> Hold {
        Hold {
            enabled,
            max_bytes,
            max_age,
            capsules: HashMap::new(),
            owner: HashMap::new(),
            bytes: 0,
            done: Vec::new(),
        }
    }

    /// Documents held now.
    pub fn len(&self) -> usize {
        self.owner.len()
    }

    /// Whether the document of URL `url_id` is held: it reads its anchors when it goes.
    pub fn holds(&self, url_id: i64) -> bool {
        self.owner.contains_key(&url_id)
    }

    /// Holds `held` for capsule `host_id`; a document of the same URL held before is replaced.
    pub fn add(&mut self, host_id: i64, held: Held, now: Instant) {
        self.forget(held.url_id);
        let size = cost(&held.doc);
        self.owner.insert(held.url_id, host_id);
        let capsule = self.capsules.entry(host_id).or_insert_with(|| Capsule {
            docs: Vec::new(),
            bytes: 0,
            since: now,
        });
        capsule.docs.push(held);
        capsule.bytes += size;
        self.bytes += size;
    }

    /// Drops the held document of a URL (its page is leaving the index). Returns whether one
    /// was held.
    pub fn forget(&mut self, url_id: i64) -> bool {
        let Some(host_id) = self.owner.remove(&url_id) else {
            return false;
        };
        let capsule = self
            .capsules
            .get_mut(&host_id)
            .expect("an owned document's capsule is held");
        let at = capsule
            .docs
            .iter()
            .position(|h| h.url_id == url_id)
            .expect("an owned document is in its capsule");
        let size = cost(&capsule.docs.remove(at).doc);
        capsule.bytes -= size;
        self.bytes -= size;
        if capsule.docs.is_empty() {
            self.capsules.remove(&host_id);
        }
        true
    }

    /// The crawl let capsule `host_id` go: its documents are due at the next [`Hold::take_due`].
    pub fn capsule_done(&mut self, host_id: i64) {
        if self.capsules.contains_key(&host_id) {
            self.done.push(host_id);
        }
    }

    /// The documents due now, in the order they were held within each capsule: those of the
    /// capsules let go, those held longer than the age limit, and the largest holdings while
    /// over the byte limit. Everything when `all`.
    pub fn take_due(&mut self, now: Instant, all: bool) -> Vec<Held> {
        let mut due: Vec<i64> = std::mem::take(&mut self.done);
        if all || !self.enabled {
            due = self.capsules.keys().copied().collect();
        } else {
            let max_age = self.max_age;
            due.extend(
                self.capsules
                    .iter()
                    .filter(|(_, c)| now.saturating_duration_since(c.since) >= max_age)
                    .map(|(&id, _)| id),
            );
        }
        let mut out = Vec::new();
        for host_id in due {
            self.take_capsule(host_id, &mut out);
        }
        while self.bytes > self.max_bytes {
            let Some(largest) = self
                .capsules
                .iter()
                .max_by_key(|(_, c)| c.bytes)
                .map(|(&id, _)| id)
            else {
                break;
            };
            self.take_capsule(largest, &mut out);
        }
        out
    }

    fn take_capsule(&mut self, host_id: i64, out: &mut Vec<Held>) {
        let Some(capsule) = self.capsules.remove(&host_id) else {
            return;
        };
        self.bytes -= capsule.bytes;
        for held in &capsule.docs {
            self.owner.remove(&held.url_id);
        }
        out.extend(capsule.docs);
    }
}

fn cost(doc: &PageDoc) -> usize {
    OVERHEAD + doc.text_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn held(url_id: i64, body_len: usize) -> Held {
        Held {
            url_id,
            header_only: false,
            doc: Box::new(PageDoc {
                url: format!("gemini://example.org/{url_id}"),
                body: "x".repeat(body_len),
                ..PageDoc::default()
            }),
        }
    }

    fn ids(docs: &[Held]) -> Vec<i64> {
        docs.iter().map(|h| h.url_id).collect()
    }

    #[test]
    fn a_capsule_s_documents_wait_until_it_is_let_go() {
        let now = Instant::now();
        let mut hold = Hold::new(true, 1 << 20, MAX_AGE);
        hold.add(1, held(10, 100), now);
        hold.add(2, held(20, 100), now);
        hold.add(1, held(11, 100), now);
        assert!(hold.take_due(now, false).is_empty());
        hold.capsule_done(1);
        assert_eq!(ids(&hold.take_due(now, false)), [10, 11]);
        assert_eq!(hold.len(), 1);
        assert!(hold.take_due(now, false).is_empty(), "taken once");
        assert_eq!(ids(&hold.take_due(now, true)), [20]);
        assert_eq!((hold.len(), hold.bytes), (0, 0));
    }

    #[test]
    fn a_hold_not_enabled_gives_every_document_at_the_next_take() {
        let now = Instant::now();
        let mut hold = Hold::new(false, 1 << 20, MAX_AGE);
        hold.add(1, held(10, 100), now);
        hold.add(2, held(20, 100), now);
        let mut due = ids(&hold.take_due(now, false));
        due.sort();
        assert_eq!(due, [10, 20]);
        assert_eq!((hold.len(), hold.bytes), (0, 0));
    }

    #[test]
    fn the_largest_holdings_go_first_when_over_the_byte_limit() {
        let now = Instant::now();
        let limit = 3 * (OVERHEAD + 1000);
        let mut hold = Hold::new(true, limit, MAX_AGE);
        hold.add(1, held(10, 1000), now);
        hold.add(2, held(20, 600), now);
        hold.add(2, held(21, 600), now);
        assert!(hold.take_due(now, false).is_empty(), "under the limit");
        hold.add(3, held(30, 900), now);
        // Over by one document: the capsule holding the most bytes goes, the others stay.
        assert_eq!(ids(&hold.take_due(now, false)), [20, 21]);
        assert!(hold.bytes <= limit);
        assert_eq!(hold.len(), 2);
    }

    #[test]
    fn a_capsule_held_too_long_sends_what_it_has() {
        let start = Instant::now();
        let mut hold = Hold::new(true, 1 << 20, Duration::from_secs(60));
        hold.add(1, held(10, 10), start);
        hold.add(2, held(20, 10), start + Duration::from_secs(30));
        assert!(hold
            .take_due(start + Duration::from_secs(59), false)
            .is_empty());
        let due = hold.take_due(start + Duration::from_secs(60), false);
        assert_eq!(ids(&due), [10]);
        assert_eq!(
            ids(&hold.take_due(start + Duration::from_secs(90), false)),
            [20]
        );
    }

    #[test]
    fn a_url_held_twice_keeps_its_last_document_and_a_forgotten_one_is_gone() {
        let now = Instant::now();
        let mut hold = Hold::new(true, 1 << 20, MAX_AGE);
        hold.add(1, held(10, 100), now);
        hold.add(1, held(11, 100), now);
        hold.add(1, held(10, 300), now);
        assert_eq!(hold.len(), 2);
        assert!(hold.forget(11));
        assert!(!hold.forget(11), "already gone");
        let due = hold.take_due(now, true);
        assert_eq!(ids(&due), [10]);
        assert_eq!(due[0].doc.body.len(), 300, "the later document");
        // A capsule whose every document was forgotten holds nothing.
        hold.add(2, held(20, 1), now);
        assert!(hold.forget(20));
        assert!(hold.capsules.is_empty());
    }
}
