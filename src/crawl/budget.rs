//! Per-capsule crawl budgets: how many requests one capsule may have in one run, grown by
//! evidence of its value, and the trap shapes that end its run early. No list to keep: a
//! capsule earns its crawl the way IRLbot's STAR budgets do (Lee et al., WWW 2008), from
//! *other* capsules linking to it, and spends it only while its pages keep bringing new text.
//!
//! A capsule's allowance for a run ([`CapsuleRun::allowance`]) is
//!
//! ```text
//!   BASE_REQUESTS                                   (1,000: any capsule, even unknown)
//! + PER_LINKER x other capsules linking to it       (1,000 each, up to MAX_LINKERS)
//! + PER_FEED x feeds found in it this run           (250 each, up to MAX_FEEDS)
//! + its pages the index held after the last run     (what it proved before is revisited)
//! ```
//!
//! A linker is another *site* (a host's registrable part, as ranking reads it: [`site_of`]), so
//! that a farm of subdomains cannot vote for itself. Linkers are counted from the link graph of
//! the index at the end of each run (indexed pages of other sites, so a trap's own junk never
//! votes), and grow during a run as pages of other sites are seen linking to the capsule. A capsule that passes its
//! allowance, or shows a trap shape, is *held back*: its lease is let go, its queued URLs wait
//! in the frontier, and it is not claimed again before `--revisit-min` has passed, so the next
//! scheduled run goes on where this one stopped. What it has is indexed; each run lets a
//! deserving capsule grow by its allowance again.
//!
//! Trap shapes, judged on this run's counts only:
//! - **near-duplicates** ([`HoldReason::Duplicates`]): of the capsule's last [`NOVELTY_WINDOW`]
//!   pages with content, fewer than a quarter brought new text: exact copies of pages indexed
//!   elsewhere (mirrors), or pages whose SimHash fingerprint is near one of its own recent
//!   pages (pages that differ by a date or a counter, a git browser's blobs). Thin pages, with
//!   fewer than [`THIN_WORDS`] words of text besides their links (an index, a calendar's
//!   month, a one-line note), are left out of the window: too short to tell, and a capsule of
//!   short notes is no trap;
//! - **fan-out** ([`HoldReason::FanOut`]): pages of its own keep adding URLs of its own faster
//!   than they can be fetched: more than [`FANOUT_SLACK`] new ones plus [`FANOUT_PER_REQUEST`]
//!   per request made. Only URLs found where a capsule's own structure does not put them
//!   count: by pages that bring no new text (bare lists of links, copies, near-copies: a link
//!   bomb, an endless listing), or by pages [`FANOUT_DEPTH`] links or more below the
//!   shallowest page of it this run reached (an article of a web proxy linking to forty new
//!   articles, each of which does the same). A capsule finds its pages from its home and its
//!   index pages, one level down: a big capsule whose home lists two hundred sections, each
//!   listing a hundred new pages with an introduction, finds 20,000 URLs in its first two
//!   hundred requests and is no trap. A wiki whose articles keep finding new articles far from
//!   its home looks like a proxy, and is held as one once it outgrows the slack.
//!
//! - **deep chain** ([`HoldReason::Chain`]): more than [`MAX_DEEP`] of its pages lie
//!   [`CHAIN_DEPTH`] links or more below the shallowest page of it this run reached: a chain of
//!   "next" links that never ends (a calendar's next day, `?page=N+1`, a commit's parent). A
//!   capsule's own structure (home, sections, posts, an index of thousands) is shallow; its
//!   posts are found from its index, not from each other.
//!
//! `--max-depth` bounds every chain besides, counted from the seeds.
//! **Junk does not rank.** The pages a trap-shaped capsule got into the index before it was held
//! back stay searchable, but their authority is [`TRAP_AUTHORITY`] ([`demote_traps`]): a
//! tenth of the score a page of no authority would have, so they never stand before real pages
//! that match as well. A capsule held back only for its budget is not demoted.
//!
//! Pure: counts in, verdicts out. The crawl loop keeps one [`CapsuleRun`] per capsule it touches
//! in a run ([`Budgets`]); nothing here is kept per URL.

use std::collections::{HashMap, HashSet, VecDeque};

pub use crate::frontier::Standing;
use crate::rank::{site_of, LinkGraph};

/// Requests any capsule may have in a run before any evidence of its value.
pub const BASE_REQUESTS: u64 = 1_000;
/// Requests added for each other capsule linking to it.
pub const PER_LINKER: u64 = 1_000;
/// Linking capsules counted at most (about the 100,000 URLs a capsule may store).
pub const MAX_LINKERS: u64 = 100;
/// Requests added for each feed (gemfeed, Atom, RSS) found in it during the run.
pub const PER_FEED: u64 = 250;
/// Feeds counted at most.
pub const MAX_FEEDS: u64 = 4;
/// Words of text (besides link labels) below which a page brings nothing new: a page of
/// links, a date, a heading.
pub const THIN_WORDS: usize = 30;
/// Pages with content that the novelty of a capsule is judged on: its most recent ones.
pub const NOVELTY_WINDOW: usize = 64;
/// Fingerprints of a capsule's recent new pages kept to compare new ones with.
pub const RECENT_FINGERPRINTS: usize = 32;
/// Links below the shallowest page of a capsule reached in a run from which a page is deep.
pub const CHAIN_DEPTH: u32 = 8;
/// Deep pages a capsule may have in a run.
pub const MAX_DEEP: u64 = 64;
/// New URLs of its own a capsule may add in a run before its fan-out is judged.
pub const FANOUT_SLACK: u64 = 5_000;
/// Links below the shallowest page of a capsule from which the new URLs its pages find count
/// towards fan-out whatever their text.
pub const FANOUT_DEPTH: u32 = 2;
/// New URLs of its own per request a capsule may keep adding past [`FANOUT_SLACK`].
pub const FANOUT_PER_REQUEST: u64 = 10;
/// The link authority of every page of a capsule held back for a trap shape: ranking multiplies
/// a page's score by `1 + authority`, so these score a tenth.
pub const TRAP_AUTHORITY: f32 = -0.9;
/// Capsules whose linkers a run tracks at most (a page linking to thousands of capsules is
/// counted for as many as fit; beyond that, new capsules are judged on the stored count).
pub const MAX_TRACKED: usize = 200_000;

/// Why a capsule was held back for the rest of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HoldReason {
    /// It used its allowance of requests.
    Budget,
    /// Its recent pages brought almost no new text.
    Duplicates,
    /// Its pages add URLs faster than they can be fetched.
    FanOut,
    /// Its pages go on and on, one link below the other.
    Chain,
}

impl HoldReason {
    /// The reasons that say a capsule looks like a trap (all but [`HoldReason::Budget`]), as
    /// stored.
    pub const TRAP_SHAPES: [&'static str; 3] = ["near-duplicates", "fan-out", "deep-chain"];

    /// The name stored with the capsule and shown by `geode stats`.
    pub fn as_str(self) -> &'static str {
        match self {
            HoldReason::Budget => "budget",
            HoldReason::Duplicates => "near-duplicates",
            HoldReason::FanOut => "fan-out",
            HoldReason::Chain => "deep-chain",
        }
    }
}

/// What one page with an answer brought, for its capsule's novelty.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Content {
    /// New or changed text, with its SimHash fingerprint when it is long enough to have one.
    New(Option<u64>),
    /// The same body as a page indexed already (another URL, maybe another capsule).
    Copy,
    /// Fewer than [`THIN_WORDS`] words of text besides its links: judged neither way.
    Thin,
}

impl Content {
    /// What a page with text `body` (its link labels apart) brings; `fingerprint` computes
    /// its SimHash, and is called only when the page is not thin.
    pub fn of(body: &str, fingerprint: impl FnOnce() -> Option<u64>) -> Content {
        if body.split_whitespace().nth(THIN_WORDS - 1).is_none() {
            Content::Thin
        } else {
            Content::New(fingerprint())
        }
    }
}

/// One capsule's counts in this run, and the verdict they give.
#[derive(Debug, Clone, Default)]
pub struct CapsuleRun {
    /// Known once the capsule is leased in this run.
    standing: Option<Standing>,
    /// Other sites (a hash of their names) seen linking to it in this run, at most
    /// [`MAX_LINKERS`].
    linkers: HashSet<u64>,
    feeds: u64,
    requests: u64,
    /// New URLs of its own added in this run by pages that count towards fan-out.
    discovered: u64,
    /// The link depth of its shallowest page requested in this run, and how many requested
    /// pages lay [`CHAIN_DEPTH`] or more below it.
    entry_depth: Option<u32>,
    deep: u64,
    /// Novelty of its most recent pages with content, oldest first.
    novelty: VecDeque<bool>,
    novel_in_window: usize,
    /// Fingerprints of its most recent new pages.
    recent: VecDeque<u64>,
    held: Option<HoldReason>,
}

impl CapsuleRun {
    /// Requests it may have in this run, from what is known of it now.
    pub fn allowance(&self) -> u64 {
        let standing = self.standing.unwrap_or_default();
        let linkers = standing
            .linkers
            .max(self.linkers.len() as u64)
            .min(MAX_LINKERS);
        BASE_REQUESTS + PER_LINKER * linkers + PER_FEED * self.feeds.min(MAX_FEEDS) + standing.pages
    }

    /// Whether its standing has been read (at its first lease in the run).
    pub fn has_standing(&self) -> bool {
        self.standing.is_some()
    }

    pub fn set_standing(&mut self, standing: Standing) {
        self.standing = Some(standing);
    }

    /// Counts a request made to it.
    pub fn requested(&mut self) {
        self.requests += 1;
    }

    /// Counts a request for one of its pages, `depth` links from a seed.
    pub fn requested_page(&mut self, depth: u32) {
        self.requested();
        match self.entry_depth {
            Some(entry) if depth >= entry.saturating_add(CHAIN_DEPTH) => self.deep += 1,
            Some(entry) if depth >= entry => {}
            _ => self.entry_depth = Some(depth),
        }
    }

    pub fn requests(&self) -> u64 {
        self.requests
    }

    /// A page of another site links to it (`site`: a hash of the site's name).
    pub fn linked_from(&mut self, site: u64) {
        if (self.linkers.len() as u64) < MAX_LINKERS {
            self.linkers.insert(site);
        }
    }

    /// One of its pages turned out to be a feed.
    pub fn feed_found(&mut self) {
        self.feeds += 1;
    }

    /// One of its pages, `depth` links from a seed, added `n` new URLs of its own; `new_text`:
    /// the page brought new text ([`CapsuleRun::page`] said so). They count towards fan-out
    /// unless a page of new text near the top of the capsule found them.
    pub fn discovered(&mut self, n: u64, new_text: bool, depth: u32) {
        let entry = self.entry_depth.unwrap_or(depth);
        if !new_text || depth >= entry.saturating_add(FANOUT_DEPTH) {
            self.discovered += n;
        }
    }

    /// One of its pages brought `content`: novel unless it is a copy, or near (SimHash) one
    /// of its recent new pages; a thin page counts neither way. Returns whether it was novel.
    pub fn page(&mut self, content: Content) -> bool {
        let novel = match content {
            Content::Thin => return false,
            Content::Copy => false,
            Content::New(None) => true,
            Content::New(Some(print)) => {
                let novel = !self
                    .recent
                    .iter()
                    .any(|&seen| crate::index::neardup::near(seen, print));
                if self.recent.len() == RECENT_FINGERPRINTS {
                    self.recent.pop_front();
                }
                self.recent.push_back(print);
                novel
            }
        };
        if self.novelty.len() == NOVELTY_WINDOW && self.novelty.pop_front() == Some(true) {
            self.novel_in_window -= 1;
        }
        self.novelty.push_back(novel);
        self.novel_in_window += usize::from(novel);
        novel
    }

    /// Whether it must be held back now, and why. Once held, it stays held for the run.
    pub fn verdict(&mut self) -> Option<HoldReason> {
        if self.held.is_none() {
            self.held = self.judge();
        }
        self.held
    }

    /// Whether it was held back in this run.
    pub fn held(&self) -> Option<HoldReason> {
        self.held
    }

    fn judge(&self) -> Option<HoldReason> {
        if self.requests >= self.allowance() {
            return Some(HoldReason::Budget);
        }
        if self.novelty.len() == NOVELTY_WINDOW && self.novel_in_window * 4 < NOVELTY_WINDOW {
            return Some(HoldReason::Duplicates);
        }
        if self.discovered > FANOUT_SLACK + FANOUT_PER_REQUEST * self.requests {
            return Some(HoldReason::FanOut);
        }
        if self.deep > MAX_DEEP {
            return Some(HoldReason::Chain);
        }
        None
    }

    /// Other sites seen linking to it in this run.
    pub fn linkers_seen(&self) -> u64 {
        self.linkers.len() as u64
    }
}

/// The capsules one run touched, by capsule key.
#[derive(Debug, Default)]
pub struct Budgets {
    runs: HashMap<String, CapsuleRun>,
}

impl Budgets {
    /// The counts of a capsule, made when first met. `None` only for a capsule first met
    /// once [`MAX_TRACKED`] are tracked.
    pub fn get(&mut self, capsule: &str) -> Option<&mut CapsuleRun> {
        if !self.runs.contains_key(capsule) {
            if self.runs.len() >= MAX_TRACKED {
                return None;
            }
            self.runs.insert(capsule.to_string(), CapsuleRun::default());
        }
        self.runs.get_mut(capsule)
    }

    /// The counts of a capsule already met.
    pub fn peek(&self, capsule: &str) -> Option<&CapsuleRun> {
        self.runs.get(capsule)
    }

    /// Capsules seen linked from others in this run, with how many.
    pub fn linkers_seen(&self) -> impl Iterator<Item = (&str, u64)> + '_ {
        self.runs
            .iter()
            .filter(|(_, run)| run.linkers_seen() > 0)
            .map(|(capsule, run)| (capsule.as_str(), run.linkers_seen()))
    }
}

/// Every capsule's standing in the link graph of the index: its indexed pages, and the other
/// sites with an indexed page linking to one of them.
pub fn standings(graph: &LinkGraph) -> HashMap<String, Standing> {
    let capsules = graph.capsules();
    let mut site_ids: HashMap<&str, u32> = HashMap::new();
    let site: Vec<u32> = capsules
        .iter()
        .map(|capsule| {
            let next = site_ids.len() as u32;
            *site_ids.entry(site_of(capsule)).or_insert(next)
        })
        .collect();
    let mut standing = vec![Standing::default(); capsules.len()];
    for page in 0..graph.len() as u32 {
        if let Some(c) = graph.capsule_index(page) {
            standing[c as usize].pages += 1;
        }
    }
    // (linking site, capsule linked to)
    let mut pairs: HashSet<(u32, u32)> = HashSet::new();
    for (source, target) in graph.links() {
        if let (Some(from), Some(to)) = (graph.capsule_index(source), graph.capsule_index(target)) {
            let from = site[from as usize];
            if from != site[to as usize] && pairs.insert((from, to)) {
                standing[to as usize].linkers += 1;
            }
        }
    }
    capsules.iter().cloned().zip(standing).collect()
}

/// Gives every page of the capsules in `traps` the authority [`TRAP_AUTHORITY`]; `scores` are
/// the pages' authority in graph order.
pub fn demote_traps(graph: &LinkGraph, scores: &mut [f32], traps: &HashSet<String>) {
    if traps.is_empty() {
        return;
    }
    let trap: Vec<bool> = graph.capsules().iter().map(|c| traps.contains(c)).collect();
    for (page, score) in scores.iter_mut().enumerate() {
        if graph
            .capsule_index(page as u32)
            .is_some_and(|c| trap[c as usize])
        {
            *score = TRAP_AUTHORITY;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rank::LinkGraphBuilder;

    fn run(standing: Standing) -> CapsuleRun {
        let mut run = CapsuleRun::default();
        run.set_standing(standing);
        run
    }

    #[test]
    fn the_allowance_grows_with_linkers_feeds_and_pages_proved_before() {
        let cases = [
            // (pages before, linkers stored, linkers seen this run, feeds, allowance)
            (0, 0, 0, 0, 1_000),
            (0, 2, 0, 0, 3_000),
            (0, 0, 3, 0, 4_000),
            (0, 5, 3, 0, 6_000),
            (0, 500, 0, 0, 101_000),
            (0, 0, 0, 1, 1_250),
            (0, 0, 0, 9, 2_000),
            (2_500, 2, 0, 0, 5_500),
        ];
        for (pages, stored, seen, feeds, allowance) in cases {
            let mut r = run(Standing {
                pages,
                linkers: stored,
            });
            for other in 0..seen {
                r.linked_from(other);
                r.linked_from(other);
            }
            for _ in 0..feeds {
                r.feed_found();
            }
            assert_eq!(
                r.allowance(),
                allowance,
                "pages {pages}, stored {stored}, seen {seen}, feeds {feeds}"
            );
        }
    }

    #[test]
    fn a_capsule_is_held_once_it_used_its_allowance_and_stays_held() {
        let mut r = run(Standing {
            pages: 0,
            linkers: 1,
        });
        for _ in 0..1_999 {
            r.requested();
            r.page(Content::New(None));
            assert_eq!(r.verdict(), None);
        }
        r.requested();
        assert_eq!(r.verdict(), Some(HoldReason::Budget));
        // A linker seen afterwards does not lift the hold within the run.
        r.linked_from(42);
        assert_eq!(r.verdict(), Some(HoldReason::Budget));
        assert_eq!(r.held(), Some(HoldReason::Budget));
    }

    #[test]
    fn a_stream_of_copies_and_near_copies_is_a_trap_and_new_text_is_not() {
        // Distinct fingerprints: at least 16 bits apart from each other.
        let distinct = |i: u64| i.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let mut real = run(Standing::default());
        for i in 0..500 {
            real.requested();
            real.page(Content::New(Some(distinct(i))));
            assert_eq!(real.verdict(), None, "page {i}");
        }
        // A calendar: every page a little different, one bit from the first and two from
        // each other.
        let mut calendar = run(Standing::default());
        let base = distinct(7);
        let mut held_at = None;
        for i in 0..500u64 {
            calendar.requested();
            calendar.page(Content::New(Some(base ^ (1 << (i % 64)))));
            if calendar.verdict().is_some() {
                held_at = Some(i);
                break;
            }
        }
        assert_eq!(calendar.held(), Some(HoldReason::Duplicates));
        assert_eq!(held_at, Some(NOVELTY_WINDOW as u64 - 1));
        // A mirror: copies of pages indexed elsewhere, with a new page now and then.
        let mut mirror = run(Standing::default());
        for i in 0..NOVELTY_WINDOW as u64 {
            mirror.requested();
            let content = if i % 5 == 0 {
                Content::New(Some(distinct(i)))
            } else {
                Content::Copy
            };
            mirror.page(content);
        }
        assert_eq!(mirror.verdict(), Some(HoldReason::Duplicates));
        // Exactly a quarter new is still a capsule worth fetching.
        let mut quarter = run(Standing::default());
        for i in 0..NOVELTY_WINDOW as u64 {
            quarter.requested();
            let content = if i % 4 == 0 {
                Content::New(None)
            } else {
                Content::Copy
            };
            quarter.page(content);
        }
        assert_eq!(quarter.verdict(), None);
    }

    #[test]
    fn a_page_of_links_or_a_line_is_thin_and_a_paragraph_is_not() {
        let print = || Some(7);
        assert_eq!(Content::of("", print), Content::Thin);
        assert_eq!(Content::of("June 2025", print), Content::Thin);
        let words = |n: usize| vec!["word"; n].join(" ");
        assert_eq!(Content::of(&words(THIN_WORDS - 1), print), Content::Thin);
        assert_eq!(
            Content::of(&words(THIN_WORDS), print),
            Content::New(Some(7))
        );
        assert_eq!(Content::of(&words(THIN_WORDS), || None), Content::New(None));
        // A capsule of short notes is no trap, and thin pages do not hide copies either.
        let mut notes = run(Standing::default());
        for _ in 0..10 * NOVELTY_WINDOW {
            notes.requested();
            notes.page(Content::of("Fed the cat. Rain again.", print));
        }
        assert_eq!(notes.verdict(), None);
        for _ in 0..NOVELTY_WINDOW {
            notes.page(Content::Copy);
            notes.page(Content::Thin);
        }
        assert_eq!(notes.verdict(), Some(HoldReason::Duplicates));
    }

    #[test]
    fn novelty_is_judged_on_the_latest_window_only() {
        let mut r = run(Standing::default());
        for _ in 0..NOVELTY_WINDOW {
            r.page(Content::New(None));
        }
        // 47 copies: 17 of the last 64 are new, more than a quarter.
        for _ in 0..47 {
            r.page(Content::Copy);
        }
        assert_eq!(r.verdict(), None);
        r.page(Content::Copy);
        assert_eq!(r.verdict(), None);
        r.page(Content::Copy);
        assert_eq!(r.verdict(), Some(HoldReason::Duplicates));
    }

    #[test]
    fn fan_out_is_new_urls_found_off_the_capsule_s_structure_growing_faster_than_requests() {
        // A big capsule entered at depth 3: 200 section pages of text one link below its home,
        // each listing 100 new pages, then 20,000 pages of text two links down that add one or
        // none.
        let mut big = run(Standing {
            pages: 0,
            linkers: 50,
        });
        big.requested_page(3);
        big.discovered(200, true, 3);
        for _ in 0..200 {
            big.requested_page(4);
            big.discovered(100, true, 4);
            assert_eq!(big.verdict(), None);
        }
        for i in 0..20_000u64 {
            big.requested_page(5);
            big.discovered(i % 2, true, 5);
            assert_eq!(big.verdict(), None);
        }
        // A gemlog whose bare archive page lists 4,000 posts: found once, then fetched.
        let mut gemlog = run(Standing::default());
        gemlog.requested_page(0);
        gemlog.discovered(4_000, false, 0);
        for _ in 0..900 {
            gemlog.requested_page(1);
            gemlog.discovered(0, true, 1);
            assert_eq!(gemlog.verdict(), None);
        }
        // A link bomb: pages of nothing but 5,000 new links (the most a page contributes).
        let mut bomb = run(Standing::default());
        bomb.requested_page(0);
        bomb.discovered(5_000, false, 0);
        assert_eq!(bomb.verdict(), None);
        bomb.requested_page(1);
        bomb.discovered(5_000, false, 1);
        assert_eq!(bomb.verdict(), Some(HoldReason::FanOut));
        // Bare listings one level down adding 35 new URLs each, without end.
        let mut listing = run(Standing {
            pages: 0,
            linkers: 3,
        });
        let mut requests = 0;
        while listing.verdict().is_none() {
            listing.requested_page(1);
            listing.discovered(35, false, 1);
            requests += 1;
        }
        assert_eq!(listing.held(), Some(HoldReason::FanOut));
        assert_eq!(requests, 201);
        // A web proxy: a front page of 40 articles, each article of new text linking to 35 new
        // ones. Those found one level down do not count, those found further down do.
        let mut proxy = run(Standing {
            pages: 0,
            linkers: 3,
        });
        proxy.requested_page(1);
        proxy.discovered(40, false, 1);
        for _ in 0..40 {
            proxy.requested_page(2);
            proxy.discovered(35, true, 2);
            assert_eq!(proxy.verdict(), None);
        }
        let mut deeper = 0;
        while proxy.verdict().is_none() {
            proxy.requested_page(3);
            proxy.discovered(35, true, 3);
            deeper += 1;
        }
        assert_eq!(proxy.held(), Some(HoldReason::FanOut));
        assert_eq!(deeper, 215);
        // Ten a bare page, sustained, is not fan-out.
        let mut wiki = run(Standing {
            pages: 0,
            linkers: 50,
        });
        for _ in 0..20_000 {
            wiki.requested_page(1);
            wiki.discovered(FANOUT_PER_REQUEST, false, 1);
        }
        assert_eq!(wiki.verdict(), None);
    }

    #[test]
    fn a_page_says_whether_it_brought_new_text() {
        let mut r = run(Standing::default());
        assert!(r.page(Content::New(None)));
        assert!(r.page(Content::New(Some(0xdead_beef))));
        assert!(!r.page(Content::New(Some(0xdead_beef))), "a near-copy");
        assert!(!r.page(Content::Copy));
        assert!(!r.page(Content::Thin));
    }

    #[test]
    fn a_chain_of_next_links_is_deep_and_a_big_shallow_capsule_is_not() {
        // A capsule entered at depth 3: home, 50 sections, 4,000 posts two links down.
        let mut big = run(Standing {
            pages: 0,
            linkers: 5,
        });
        big.requested_page(3);
        for section in 0..50 {
            big.requested_page(4);
            for _ in 0..80 {
                big.requested_page(5 + section % 2);
            }
        }
        assert_eq!(big.verdict(), None);
        // A calendar entered at depth 3, each day one link below the one before, from every
        // month's page.
        let mut calendar = run(Standing::default());
        let mut requests = 0;
        'months: for month in 0..100 {
            for day in 0..30 {
                calendar.requested_page(4 + month / 12 + day);
                requests += 1;
                if calendar.verdict().is_some() {
                    break 'months;
                }
            }
        }
        assert_eq!(calendar.held(), Some(HoldReason::Chain));
        assert!(requests < 500, "{requests}");
        // Depth counts from the shallowest page, whenever it came.
        let (entry, deep) = (8, 8 + CHAIN_DEPTH);
        let mut late = run(Standing::default());
        for _ in 0..=MAX_DEEP {
            late.requested_page(deep);
        }
        late.requested_page(entry);
        for _ in 0..MAX_DEEP {
            late.requested_page(deep - 1);
            late.requested_page(deep);
        }
        assert_eq!(late.verdict(), None);
        late.requested_page(deep);
        assert_eq!(late.verdict(), Some(HoldReason::Chain));
    }

    #[test]
    fn the_pages_of_trap_shaped_capsules_are_demoted_and_no_other() {
        for reason in [
            HoldReason::Duplicates,
            HoldReason::FanOut,
            HoldReason::Chain,
        ] {
            assert!(HoldReason::TRAP_SHAPES.contains(&reason.as_str()));
        }
        assert!(!HoldReason::TRAP_SHAPES.contains(&HoldReason::Budget.as_str()));
        let mut b = LinkGraphBuilder::new();
        let pages = [
            b.add_page(1, "real.example"),
            b.add_page(2, "trap.example"),
            b.add_page(3, "real.example"),
            b.add_page(4, "trap.example"),
        ];
        b.add_link(pages[1], pages[0]);
        let graph = b.build();
        let mut scores = vec![0.5, 0.7, 0.0, 0.1];
        demote_traps(&graph, &mut scores, &HashSet::new());
        assert_eq!(scores, [0.5, 0.7, 0.0, 0.1]);
        let traps: HashSet<String> = ["trap.example".to_string()].into();
        demote_traps(&graph, &mut scores, &traps);
        assert_eq!(scores, [0.5, TRAP_AUTHORITY, 0.0, TRAP_AUTHORITY]);
    }

    #[test]
    fn linkers_seen_in_a_run_are_bounded() {
        let mut r = CapsuleRun::default();
        for other in 0..1_000 {
            r.linked_from(other);
        }
        assert_eq!(r.linkers_seen(), MAX_LINKERS);
        assert_eq!(r.allowance(), BASE_REQUESTS + PER_LINKER * MAX_LINKERS);
    }

    #[test]
    fn standings_count_indexed_pages_and_distinct_other_capsules() {
        let mut b = LinkGraphBuilder::new();
        let big: Vec<u32> = (0..5).map(|i| b.add_page(i, "big.example")).collect();
        let a = b.add_page(10, "a.example");
        let a2 = b.add_page(11, "a.example");
        let c = b.add_page(12, "c.example");
        let trap = b.add_page(13, "trap.example");
        // Subdomains of one site: one linker however many, and none for each other.
        let farm: Vec<u32> = (0..4)
            .map(|i| b.add_page(20 + i, &format!("f{i}.farm.example")))
            .collect();
        // Inside links do not count; two pages of one capsule count once.
        b.add_link(big[0], big[1]);
        b.add_link(a, big[2]);
        b.add_link(a2, big[3]);
        b.add_link(c, big[0]);
        for &f in &farm {
            b.add_link(f, big[1]);
            for &g in &farm {
                b.add_link(f, g);
            }
        }
        // The trap links to everyone: one linker for each.
        b.add_link(trap, a);
        b.add_link(trap, c);
        b.add_link(trap, big[4]);
        b.add_link(big[0], trap);
        let s = standings(&b.build());
        let get = |c: &str| s[c];
        assert_eq!(
            get("big.example"),
            Standing {
                pages: 5,
                linkers: 4
            }
        );
        assert_eq!(
            get("f2.farm.example"),
            Standing {
                pages: 1,
                linkers: 0
            }
        );
        assert_eq!(
            get("a.example"),
            Standing {
                pages: 2,
                linkers: 1
            }
        );
        assert_eq!(
            get("trap.example"),
            Standing {
                pages: 1,
                linkers: 1
            }
        );
        assert_eq!(s.len(), 8);
    }
}
