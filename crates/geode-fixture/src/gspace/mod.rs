//! Geminispace in a box (issue 39): a deterministic generator of a whole geminispace, served
//! procedurally by the fixture server. A [`World`] is built from a [`WorldSpec`] (a seed and a
//! few sizes) and holds only the capsules, their addresses and the links between capsules;
//! every page is computed from (seed, capsule, path, epoch) when it is asked for, so the full
//! size (about 2,750 capsules on 1,200 addresses, 500,000 legitimate pages) costs a few MB.
//!
//! The world is shaped like the real one: capsule sizes are heavy-tailed (most capsules a few
//! dozen pages, a few thousands), several capsules share an address as on tilde hosts, links
//! between capsules follow preferential attachment (older and bigger capsules attract more),
//! capsules have gemlogs with gemfeed indexes and sometimes an `atom.xml`, and every legitimate
//! page is within 25 links of the seeds. Each legitimate page carries one unique word (`zq` and
//! five consonants, see [`LegitPage`]) so that a test can check coverage by searching it.
//!
//! Beside them are traps, each linked from one to three legitimate capsules ([`Kind`]): a web
//! proxy, a git browser, a calendar, a query space, a link bomb, a mirror, a slow capsule, a
//! dead address and a capsule whose text changes on every request. Trap pages never count as
//! legitimate; that includes the slow capsule's (its pages carry no unique word), so coverage
//! measures the crawler's work, not the patience of a capsule that answers in 1-3 s.
//!
//! [`World::set_epoch`] moves the world on while it is served: each step changes the text of
//! about a tenth of the legitimate pages (their unique word, title and links stay), for
//! recrawl benchmarks.
//!
//! Layout: [`rng`](self) is the hand-written randomness, `words` the vocabulary and text,
//! `layout` the structure of one capsule, `build` the generation of the world, `legit` and
//! `traps` the pages, `manifest` the files a benchmark reads.

mod build;
mod layout;
mod legit;
mod manifest;
mod rng;
mod traps;
mod words;

#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, HashMap};
use std::ops::Range;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use crate::answer::Response;
use layout::Layout;

pub use manifest::{loopback_addresses, write_manifest};

/// What a capsule is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// Ordinary pages, all of them legitimate.
    Legit,
    /// An endless web as gemtext: every article has new text and about 40 links to other
    /// articles of an infinite title space (`/wiki/Some_Title`).
    WebProxy,
    /// Repositories, commits, trees and blobs; every commit has a parent, forever, and the
    /// blobs of neighbouring commits are near-duplicates.
    GitBrowser,
    /// Month pages linking the next and the previous month, forever, with day pages.
    Calendar,
    /// `/list?sort=...&order=...&page=N`: pagination and orderings without end.
    QuerySpace,
    /// A home page of 50,000 links, each to a page of 1,000 more, and so on.
    LinkBomb,
    /// An exact copy of a legitimate capsule under another host.
    Mirror,
    /// A small capsule answering every request after 1 to 3 seconds.
    Slow,
    /// A capsule whose address nothing listens on: connections are refused.
    Dead,
    /// Pages whose text changes on every request (a counter, a time, a quote); links stable.
    PerRequest,
}

impl Kind {
    /// Every trap kind, in the order the world generates them.
    pub const TRAPS: [Kind; 9] = [
        Kind::WebProxy,
        Kind::GitBrowser,
        Kind::Calendar,
        Kind::QuerySpace,
        Kind::LinkBomb,
        Kind::Mirror,
        Kind::Slow,
        Kind::Dead,
        Kind::PerRequest,
    ];

    /// The kind's name in manifests: `legit`, `web-proxy`, `git-browser` ...
    pub fn name(self) -> &'static str {
        match self {
            Kind::Legit => "legit",
            Kind::WebProxy => "web-proxy",
            Kind::GitBrowser => "git-browser",
            Kind::Calendar => "calendar",
            Kind::QuerySpace => "query-space",
            Kind::LinkBomb => "link-bomb",
            Kind::Mirror => "mirror",
            Kind::Slow => "slow",
            Kind::Dead => "dead",
            Kind::PerRequest => "per-request",
        }
    }

    pub fn is_trap(self) -> bool {
        self != Kind::Legit
    }
}

/// The numbers a world is generated from. The same spec always gives the same world.
#[derive(Debug, Clone, PartialEq)]
pub struct WorldSpec {
    pub seed: u64,
    /// Capsules in all, traps included.
    pub capsules: usize,
    /// Host addresses in all, the dead capsules' own addresses included.
    pub addresses: usize,
    /// Legitimate pages in all, summed over the legitimate capsules.
    pub legit_pages: u64,
    /// One legitimate capsule of this many pages, linked from only 2 or 3 other capsules (on
    /// an address of its own), besides the heavy-tailed others.
    pub large_capsule: Option<u32>,
    /// Capsules of each trap kind.
    pub traps_per_kind: usize,
    /// Seed URLs: the oldest capsule and the most linked ones.
    pub seeds: usize,
    /// Largest ordinary legitimate capsule, in pages.
    pub max_capsule_pages: u32,
    /// Shape of the Pareto law of capsule sizes (smaller is heavier-tailed).
    pub size_alpha: f64,
    /// Every legitimate page is at most this many links from a seed.
    pub reach_depth: u32,
    /// Share of the legitimate pages whose text each epoch step changes.
    pub change_share: f64,
}

impl WorldSpec {
    /// The world of `cargo test`: 60 capsules on 25 addresses, 3,000 legitimate pages of which
    /// 2,000 in one poorly linked capsule, one capsule of each trap kind.
    pub fn small(seed: u64) -> WorldSpec {
        WorldSpec {
            seed,
            capsules: 60,
            addresses: 25,
            legit_pages: 3_000,
            large_capsule: Some(2_000),
            traps_per_kind: 1,
            seeds: 3,
            max_capsule_pages: 200,
            size_alpha: 1.2,
            reach_depth: 25,
            change_share: 0.1,
        }
    }

    /// Geminispace's size: 2,750 capsules on 1,200 addresses, 500,000 legitimate pages, ten
    /// capsules of each trap kind.
    pub fn full(seed: u64) -> WorldSpec {
        WorldSpec {
            seed,
            capsules: 2_750,
            addresses: 1_200,
            legit_pages: 500_000,
            large_capsule: None,
            traps_per_kind: 10,
            seeds: 8,
            max_capsule_pages: 20_000,
            size_alpha: 1.1,
            reach_depth: 25,
            change_share: 0.1,
        }
    }
}

/// One capsule of a world.
#[derive(Debug, Clone)]
pub struct Capsule {
    /// Host name (lower case, under `.test`).
    pub host: String,
    /// Display name, the title of its home page.
    pub name: String,
    /// Index of its address among the world's addresses.
    pub address: usize,
    pub kind: Kind,
    /// Legitimate pages (0 for traps).
    pub pages: u32,
    /// Distinct capsules that link to it.
    pub linked_from: u32,
    /// For a mirror, the capsule it copies.
    pub mirror_of: Option<usize>,
    /// Global number of its page 0 (legitimate capsules); page i's unique word is that of
    /// `first_page + i`.
    pub(crate) first_page: u64,
    /// The structure of its pages (legitimate, slow and per-request capsules).
    pub(crate) layout: Option<Layout>,
    /// Its links to other capsules, in [`World::links`].
    pub(crate) links: Range<usize>,
    /// Its own key for generated text.
    pub(crate) key: u64,
}

/// A link from a page of one capsule to the home page of another.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Link {
    pub from: u32,
    pub page: u32,
    pub to: u32,
}

/// A legitimate page reachable from the seeds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LegitPage {
    pub url: String,
    /// The word only this page holds.
    pub word: String,
    /// Index of its capsule.
    pub capsule: usize,
    /// Links from the nearest seed.
    pub depth: u32,
}

/// An answer, as [`World::fetch`] gives it without a network.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    pub status: u8,
    pub meta: String,
    pub body: Vec<u8>,
    /// How long the server waits before answering.
    pub delay: Duration,
}

/// A generated geminispace. Cheap to share (`Arc`) between connection tasks: apart from the
/// epoch and a request counter, it never changes.
#[derive(Debug)]
pub struct World {
    spec: WorldSpec,
    capsules: Vec<Capsule>,
    links: Vec<Link>,
    dead_addresses: Vec<bool>,
    by_host: HashMap<String, usize>,
    seeds: Vec<usize>,
    /// Links from the nearest seed to each capsule's home page (u32::MAX: not reached).
    root_depth: Vec<u32>,
    epoch: AtomicU32,
    /// Requests answered by per-request capsules: their visitor counter.
    visits: AtomicU64,
}

impl World {
    /// Builds the world a spec describes; the same spec gives the same world, byte for byte.
    /// Panics on a spec that cannot hold (fewer legitimate pages than capsules, fewer
    /// addresses than dead capsules plus one).
    pub fn generate(spec: &WorldSpec) -> World {
        build::generate(spec)
    }

    pub fn spec(&self) -> &WorldSpec {
        &self.spec
    }

    /// Every capsule: the legitimate ones first, oldest first, then the traps by kind.
    pub fn capsules(&self) -> &[Capsule] {
        &self.capsules
    }

    /// The capsule serving `host` (any case, trailing dot allowed), with its index.
    pub fn capsule(&self, host: &str) -> Option<(usize, &Capsule)> {
        let i = *self.by_host.get(&crate::files::normalise_host(host))?;
        Some((i, &self.capsules[i]))
    }

    /// How many host addresses the world has (the caller maps each to an IP).
    pub fn addresses(&self) -> usize {
        self.dead_addresses.len()
    }

    /// Whether nothing should listen on address `i` (dead capsules' addresses).
    pub fn is_dead_address(&self, i: usize) -> bool {
        self.dead_addresses.get(i).copied().unwrap_or(false)
    }

    /// The seed URLs: a few well-linked legitimate home pages.
    pub fn seeds(&self) -> Vec<String> {
        self.seeds
            .iter()
            .map(|&i| format!("gemini://{}/", self.capsules[i].host))
            .collect()
    }

    /// The hosts of each kind, in capsule order.
    pub fn hosts_by_kind(&self) -> BTreeMap<Kind, Vec<&str>> {
        let mut kinds: BTreeMap<Kind, Vec<&str>> = BTreeMap::new();
        for capsule in &self.capsules {
            kinds.entry(capsule.kind).or_default().push(&capsule.host);
        }
        kinds
    }

    /// The hosts of one kind.
    pub fn hosts_of(&self, kind: Kind) -> Vec<&str> {
        self.hosts_by_kind().remove(&kind).unwrap_or_default()
    }

    /// Links from the nearest seed to capsule `i`'s home page, if the seeds reach it.
    pub fn root_depth(&self, i: usize) -> Option<u32> {
        self.root_depth.get(i).copied().filter(|&d| d != u32::MAX)
    }

    /// Every legitimate page within [`WorldSpec::reach_depth`] links of the seeds, capsule by
    /// capsule, computed as it goes (the full world has 500,000).
    pub fn legit_pages(&self) -> impl Iterator<Item = LegitPage> + '_ {
        self.capsules
            .iter()
            .enumerate()
            .filter(|(_, c)| c.kind == Kind::Legit)
            .flat_map(move |(i, c)| {
                let layout = c.layout.expect("legitimate capsules have a layout");
                let root = self.root_depth[i];
                (0..c.pages).filter_map(move |idx| {
                    let depth = root.checked_add(layout.depth(idx))?;
                    (depth <= self.spec.reach_depth).then(|| LegitPage {
                        url: format!("gemini://{}{}", c.host, layout.path(idx)),
                        word: words::unique_word(c.first_page + u64::from(idx)),
                        capsule: i,
                        depth,
                    })
                })
            })
    }

    /// How many pages [`World::legit_pages`] yields, without making them.
    pub fn legit_page_count(&self) -> u64 {
        self.capsules
            .iter()
            .enumerate()
            .filter(|(_, c)| c.kind == Kind::Legit)
            .map(|(i, c)| {
                let layout = c.layout.expect("legitimate capsules have a layout");
                let root = self.root_depth[i];
                (0..c.pages)
                    .filter(|&idx| {
                        root.checked_add(layout.depth(idx))
                            .is_some_and(|d| d <= self.spec.reach_depth)
                    })
                    .count() as u64
            })
            .sum()
    }

    pub fn epoch(&self) -> u32 {
        self.epoch.load(Ordering::Relaxed)
    }

    /// Moves the world to epoch `n` (callable while it is served). Each step from 0 changed
    /// the text of about [`WorldSpec::change_share`] of the legitimate pages.
    pub fn set_epoch(&self, n: u32) {
        self.epoch.store(n, Ordering::Relaxed);
    }

    /// The version of the text of the legitimate page numbered `g` at the current epoch: the
    /// last epoch step that changed it, 0 if none did.
    pub(crate) fn version(&self, g: u64) -> u32 {
        let share = self.spec.change_share;
        (1..=self.epoch())
            .rev()
            .find(|&step| {
                rng::Rng::keyed(&[rng::label::EPOCH, self.spec.seed, g, u64::from(step)])
                    .chance(share)
            })
            .unwrap_or(0)
    }

    /// The links of capsule `i` placed on its page `page`.
    pub(crate) fn links_on(&self, i: usize, page: u32) -> &[Link] {
        let links = &self.links[self.capsules[i].links.clone()];
        let start = links.partition_point(|l| l.page < page);
        let end = links.partition_point(|l| l.page <= page);
        &links[start..end]
    }

    /// The answer to a request for `url`, without a network: what the server would send.
    pub fn fetch(&self, url: &str) -> Reply {
        let response = match url::Url::parse(url) {
            Ok(url) => self.answer(&url),
            Err(_) => Response::bad_request("Not an absolute URL"),
        };
        Reply {
            status: response.logged_status().unwrap_or(0),
            meta: response.logged_meta().unwrap_or_default(),
            body: response.body,
            delay: response.delay,
        }
    }

    /// The answer to a well-formed `gemini://` request.
    pub(crate) fn answer(&self, url: &url::Url) -> Response {
        let Some((i, capsule)) = url.host_str().and_then(|h| self.capsule(h)) else {
            return Response::new(53, "Proxy request refused");
        };
        let path = percent_encoding::percent_decode_str(url.path()).decode_utf8_lossy();
        let path = if path.is_empty() { "/" } else { &path };
        match capsule.kind {
            Kind::Legit => legit::answer(self, i, path, true),
            Kind::Mirror => legit::answer(self, capsule.mirror_of.unwrap_or(i), path, true),
            Kind::Slow => {
                let mut response = legit::answer(self, i, path, false);
                let wait = 1_000
                    + rng::hash(&[rng::label::TRAP, capsule.key, rng::hash_str(path)]) % 2_001;
                response.delay = Duration::from_millis(wait);
                response
            }
            Kind::Dead => Response::nothing(),
            Kind::PerRequest => {
                let visit = self.visits.fetch_add(1, Ordering::Relaxed) + 1;
                traps::per_request(capsule, path, visit)
            }
            Kind::WebProxy => traps::web_proxy(capsule, path),
            Kind::GitBrowser => traps::git_browser(capsule, path),
            Kind::Calendar => traps::calendar(capsule, path),
            Kind::QuerySpace => traps::query_space(capsule, path, url.query()),
            Kind::LinkBomb => traps::link_bomb(capsule, path),
        }
    }
}
