//! Link authority: a PageRank over the crawl's link graph, damped so that a capsule, a site or a
//! link farm cannot vote for itself. Pure computation: the graph comes from the frontier
//! ([`crate::frontier::Frontier::link_graph`]), the scores go to the index directory
//! ([`crate::index::authority`]); nothing here does I/O.
//!
//! It is not a relevance score: authority says how much geminispace points at a page, whatever
//! the query. Search multiplies it into the text score.
//!
//! # The walk
//!
//! Pages are the indexed pages; a link is a deduplicated (source page, target page) pair without
//! self-links. Each page splits its rank evenly over its out-links, and each link passes on only
//! a fraction `w` of its share:
//!
//! - `w = 1.0` for a link between two sites, `w = 0.1` ([`INTERNAL_WEIGHT`]) for a link inside
//!   one site. A site groups capsules by their registrable-ish domain ([`site_of`]), so
//!   `a.example.org -> b.example.org` is internal.
//! - `w` is then divided by the number of pages of the source's site that link to the same target
//!   page: a site casts about one vote per target however many pages it has, so a 1000-page farm
//!   counts like one page.
//!
//! What a link does not pass on, the rank of pages without out-links, and the teleportation share
//! `1 - d` are spread uniformly over all pages. With `N` pages, damping `d = 0.85`
//! ([`DAMPING`]), out-degree `out(s)` and `in(t)` the (weighted) links into `t`:
//!
//! ```text
//! pr'(t) = d * sum over s in in(t) of pr(s) * w(s, t) / out(s)  +  (total - d * passed) / N
//! ```
//!
//! where `total` is the sum of `pr` (1) and `passed` what all links passed on in this round, so
//! no rank is created or lost. It starts from `1 / N` everywhere and iterates until the L1 change
//! is below `1e-6` ([`TOLERANCE`]) or for 100 rounds ([`MAX_ITERATIONS`]).
//!
//! # The score
//!
//! Raw ranks span orders of magnitude, so the score is logarithmic, relative to the smallest
//! rank (that of a page nothing links to):
//!
//! ```text
//! authority(p) = ln(pr(p) / pr_min) / ln(pr_max / pr_min)      in [0, 1]
//! ```
//!
//! A page nothing links to scores 0, the most linked-to page 1. When all ranks are equal (no
//! links, one page, a symmetric cycle) every page scores 0: no page stands out.

use std::collections::HashMap;
use std::net::Ipv4Addr;

/// The probability that the walk follows a link rather than jumping to a random page.
pub const DAMPING: f64 = 0.85;

/// The weight of a link inside one site, against 1.0 for a link between sites.
pub const INTERNAL_WEIGHT: f64 = 0.1;

/// The walk stops when the L1 change of the ranks in a round falls below this...
pub const TOLERANCE: f64 = 1e-6;

/// ...or after this many rounds.
pub const MAX_ITERATIONS: usize = 100;

/// Second-level labels under which a country-code domain is registered (`example.co.uk`,
/// `example.com.au`): a site is then the last three labels instead of two.
const GENERIC_SECOND_LEVEL: &[&str] = &[
    "ac", "co", "com", "edu", "gob", "go", "gov", "mil", "ne", "net", "nic", "or", "org",
];

/// The indexed pages and the links between them. Build one with [`LinkGraphBuilder`].
///
/// At the end of a crawl the graph of the whole index is in memory at once, so it is kept
/// lean: a page is its key (the caller's name for it, e.g. the URL's index key), its capsule
/// and its site, 16 bytes whatever the URL's length; a link is 8 bytes, in the order the walk
/// reads them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LinkGraph {
    keys: Vec<u64>,
    /// Index into `capsules`, per page.
    capsule_of: Vec<u32>,
    capsules: Vec<String>,
    /// The site ([`site_of`]) of each page, as a number.
    site_of: Vec<u32>,
    /// The links, each `target << 32 | source`: distinct, without self-links, ordered by
    /// target, then by the source's site, then by source, so that the pages of one site that
    /// link to one target are together.
    links: Vec<u64>,
}

/// A link as [`LinkGraph`] keeps it.
fn pack(source: u32, target: u32) -> u64 {
    u64::from(target) << 32 | u64::from(source)
}

/// The (source, target) of a kept link.
fn unpack(link: u64) -> (u32, u32) {
    (link as u32, (link >> 32) as u32)
}

impl LinkGraph {
    /// Number of pages.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The pages' keys, in page-id order (the order of [`authority`]'s scores).
    pub fn keys(&self) -> &[u64] {
        &self.keys
    }

    /// The key of a page.
    pub fn key(&self, page: u32) -> Option<u64> {
        self.keys.get(page as usize).copied()
    }

    /// The capsule key of a page.
    pub fn capsule(&self, page: u32) -> Option<&str> {
        let capsule = *self.capsule_of.get(page as usize)?;
        self.capsules.get(capsule as usize).map(String::as_str)
    }

    /// The capsule of a page, as its place in [`LinkGraph::capsules`].
    pub fn capsule_index(&self, page: u32) -> Option<u32> {
        self.capsule_of.get(page as usize).copied()
    }

    /// The capsule keys of the graph, each once.
    pub fn capsules(&self) -> &[String] {
        &self.capsules
    }

    /// Number of links.
    pub fn link_count(&self) -> usize {
        self.links.len()
    }

    /// The links as (source, target) page ids, distinct, without self-links, by target.
    pub fn links(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        self.links.iter().map(|&link| unpack(link))
    }
}

/// Collects pages and links into a [`LinkGraph`].
#[derive(Debug, Default)]
pub struct LinkGraphBuilder {
    graph: LinkGraph,
    capsule_ids: HashMap<String, u32>,
    /// Links as added ([`pack`]ed); [`LinkGraphBuilder::build`] orders them.
    links: Vec<u64>,
}

impl LinkGraphBuilder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a page under `key` and returns its id (ids count up from 0). The caller adds each
    /// page once. A graph holds at most `u32::MAX - 1` pages; beyond that the page is dropped
    /// and the id returned is `u32::MAX`, which [`LinkGraphBuilder::add_link`] ignores.
    pub fn add_page(&mut self, key: u64, capsule: &str) -> u32 {
        let Ok(id) = u32::try_from(self.graph.keys.len()) else {
            return u32::MAX;
        };
        if id == u32::MAX {
            return u32::MAX;
        }
        let capsule_id = match self.capsule_ids.get(capsule) {
            Some(&c) => c,
            None => {
                let c = self.graph.capsules.len() as u32;
                self.graph.capsules.push(capsule.to_string());
                self.capsule_ids.insert(capsule.to_string(), c);
                c
            }
        };
        self.graph.keys.push(key);
        self.graph.capsule_of.push(capsule_id);
        id
    }

    /// Adds a link between two pages. Self-links and unknown page ids are ignored; duplicates
    /// are removed by [`LinkGraphBuilder::build`].
    pub fn add_link(&mut self, source: u32, target: u32) {
        let pages = self.graph.keys.len();
        if source != target && (source as usize) < pages && (target as usize) < pages {
            self.links.push(pack(source, target));
        }
    }

    pub fn build(self) -> LinkGraph {
        let LinkGraphBuilder {
            mut graph,
            capsule_ids,
            mut links,
        } = self;
        drop(capsule_ids);
        // Sites, interned per capsule and then looked up per page.
        let mut site_ids: HashMap<&str, u32> = HashMap::new();
        let site_of_capsule: Vec<u32> = graph
            .capsules
            .iter()
            .map(|capsule| {
                let next = site_ids.len() as u32;
                *site_ids.entry(site_of(capsule)).or_insert(next)
            })
            .collect();
        graph.site_of = graph
            .capsule_of
            .iter()
            .map(|&capsule| site_of_capsule[capsule as usize])
            .collect();
        let site = &graph.site_of;
        links.sort_unstable_by_key(|&link| {
            let (source, target) = unpack(link);
            (target, site[source as usize], source)
        });
        links.dedup();
        links.shrink_to_fit();
        graph.links = links;
        graph
    }
}

/// The site of a capsule key (`host` or `host:port`): the port is dropped; an IP address is its
/// own site; a name with up to two labels is its own site; otherwise the last two labels
/// (`a.b.example.org` -> `example.org`), or the last three when the top-level label has two
/// letters (a country code) and the second-level one is a generic registration label such as
/// `co`, `com`, `org` or `ac` (`www.example.co.uk` -> `example.co.uk`).
///
/// This is deliberately not the Public Suffix List: geminispace has few names, and a shared
/// hosting domain (`user.flounder.online`) counting as one site errs on the side of not letting
/// neighbours vote for each other.
pub fn site_of(capsule: &str) -> &str {
    if capsule.starts_with('[') {
        // An IPv6 literal, with or without a port.
        return match capsule.find(']') {
            Some(end) => &capsule[..=end],
            None => capsule,
        };
    }
    let host = match capsule.rsplit_once(':') {
        Some((host, _port)) => host,
        None => capsule,
    };
    let host = host.strip_suffix('.').unwrap_or(host);
    if host.parse::<Ipv4Addr>().is_ok() {
        return host;
    }
    let mut dots = host.rmatch_indices('.').map(|(i, _)| i);
    let (Some(last), Some(second)) = (dots.next(), dots.next()) else {
        return host;
    };
    let tld = &host[last + 1..];
    let sld = &host[second + 1..last];
    if tld.len() == 2 && GENERIC_SECOND_LEVEL.contains(&sld) {
        return match dots.next() {
            Some(third) => &host[third + 1..],
            None => host,
        };
    }
    &host[second + 1..]
}

/// The raw outcome of the walk.
#[derive(Debug, Clone, PartialEq)]
pub struct PageRank {
    /// Rank per page id; sums to 1 (for a non-empty graph).
    pub ranks: Vec<f64>,
    /// Rounds run.
    pub iterations: usize,
    /// Whether the change fell below [`TOLERANCE`] before [`MAX_ITERATIONS`].
    pub converged: bool,
}

/// Runs the damped walk described in the module documentation.
pub fn pagerank(graph: &LinkGraph) -> PageRank {
    let n = graph.len();
    if n == 0 {
        return PageRank {
            ranks: Vec::new(),
            iterations: 0,
            converged: true,
        };
    }
    let mut out_degree = vec![0u32; n];
    for (source, _) in graph.links() {
        out_degree[source as usize] += 1;
    }
    let site = |page: u32| graph.site_of[page as usize];
    let uniform = 1.0 / n as f64;
    let mut ranks = vec![uniform; n];
    let mut next = vec![0.0; n];
    // Each page's rank over its out-degree, the share each of its links starts from.
    let mut per_link = vec![0.0; n];
    let mut iterations = 0;
    let mut converged = false;
    while iterations < MAX_ITERATIONS {
        iterations += 1;
        for ((share, &rank), &out) in per_link.iter_mut().zip(&ranks).zip(&out_degree) {
            *share = if out > 0 { rank / f64::from(out) } else { 0.0 };
        }
        next.fill(0.0);
        let mut passed = 0.0;
        // The pages of one site linking to one target share one vote: they are together.
        for voters in graph.links.chunk_by(|&a, &b| {
            let ((sa, ta), (sb, tb)) = (unpack(a), unpack(b));
            ta == tb && site(sa) == site(sb)
        }) {
            let (first, target) = unpack(voters[0]);
            let weight = if site(first) == site(target) {
                INTERNAL_WEIGHT
            } else {
                1.0
            };
            let weight = weight / voters.len() as f64;
            let mut received = 0.0;
            for &link in voters {
                received += per_link[unpack(link).0 as usize] * weight;
            }
            next[target as usize] += received;
            passed += received;
        }
        let total: f64 = ranks.iter().sum();
        let spread = (total - DAMPING * passed) / n as f64;
        let mut change = 0.0;
        for (new, old) in next.iter_mut().zip(&ranks) {
            *new = DAMPING * *new + spread;
            change += (*new - old).abs();
        }
        std::mem::swap(&mut ranks, &mut next);
        if change < TOLERANCE {
            converged = true;
            break;
        }
    }
    PageRank {
        ranks,
        iterations,
        converged,
    }
}

/// The authority score in [0, 1] of every page, in page-id order (see the module documentation
/// for the formula).
pub fn authority(graph: &LinkGraph) -> Vec<f32> {
    normalize(&pagerank(graph).ranks)
}

/// Maps raw ranks to `ln(pr / min) / ln(max / min)`, or 0 everywhere when they are all equal.
pub fn normalize(ranks: &[f64]) -> Vec<f32> {
    let positive = || ranks.iter().copied().filter(|r| r.is_finite() && *r > 0.0);
    let (Some(min), Some(max)) = (
        positive().min_by(f64::total_cmp),
        positive().max_by(f64::total_cmp),
    ) else {
        return vec![0.0; ranks.len()];
    };
    let span = (max / min).ln();
    // Ranks that differ only by rounding are equal. (Every rank is at least the teleportation
    // share, so the span is never infinite in practice.)
    if !span.is_finite() || span <= 1e-9 {
        return vec![0.0; ranks.len()];
    }
    ranks
        .iter()
        .map(|&r| {
            if r.is_finite() && r > 0.0 {
                ((r / min).ln() / span).clamp(0.0, 1.0) as f32
            } else {
                0.0
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A page's key in these tests: its URL's index key, as the crawl uses.
    fn key(url: &str) -> u64 {
        crate::digest::url_hash(url)
    }

    /// A graph from (url, capsule) pages and (source, target) links given by URL.
    fn graph(pages: &[(&str, &str)], links: &[(&str, &str)]) -> LinkGraph {
        let mut b = LinkGraphBuilder::new();
        let mut ids = HashMap::new();
        for (url, capsule) in pages {
            ids.insert(url.to_string(), b.add_page(key(url), capsule));
        }
        for (s, t) in links {
            b.add_link(ids[*s], ids[*t]);
        }
        b.build()
    }

    fn score_of(g: &LinkGraph, scores: &[f32], url: &str) -> f32 {
        let i = g
            .keys()
            .iter()
            .position(|&k| k == key(url))
            .expect("page in graph");
        scores[i]
    }

    #[test]
    fn sites() {
        let cases: &[(&str, &str)] = &[
            ("example.org", "example.org"),
            ("a.example.org", "example.org"),
            ("a.b.example.org", "example.org"),
            ("a.example.org:1966", "example.org"),
            ("localhost", "localhost"),
            ("localhost:1966", "localhost"),
            ("www.example.co.uk", "example.co.uk"),
            ("example.co.uk", "example.co.uk"),
            ("co.uk", "co.uk"),
            ("x.y.example.com.au", "example.com.au"),
            ("foo.bar.de", "bar.de"),
            ("user.flounder.online", "flounder.online"),
            ("example.org.", "example.org"),
            ("127.0.0.1", "127.0.0.1"),
            ("127.0.0.1:1966", "127.0.0.1"),
            ("10.1.2.3", "10.1.2.3"),
            ("[::1]", "[::1]"),
            ("[::1]:1966", "[::1]"),
            ("[2001:db8::1]:1965", "[2001:db8::1]"),
            ("", ""),
            ("[broken", "[broken"),
        ];
        for (capsule, site) in cases {
            assert_eq!(site_of(capsule), *site, "capsule {capsule:?}");
        }
    }

    #[test]
    fn builder_drops_self_links_duplicates_and_unknown_ids() {
        let mut b = LinkGraphBuilder::new();
        let a = b.add_page(key("gemini://a.test/"), "a.test");
        let c = b.add_page(key("gemini://c.test/"), "c.test");
        b.add_link(a, c);
        b.add_link(a, c);
        b.add_link(c, a);
        b.add_link(a, a);
        b.add_link(a, 7);
        let g = b.build();
        assert_eq!(g.links().collect::<Vec<_>>(), [(1, 0), (0, 1)]);
        assert_eq!(g.link_count(), 2);
        assert_eq!(g.len(), 2);
        assert_eq!(g.capsule(c), Some("c.test"));
        assert_eq!(g.key(a), Some(key("gemini://a.test/")));
        assert_eq!(g.key(9), None);
    }

    /// A test graph under construction: pages with their capsules, and links.
    #[derive(Default)]
    struct Web {
        pages: Vec<(String, String)>,
        links: Vec<(String, String)>,
    }

    impl Web {
        fn with(urls: &[&str]) -> Web {
            let mut web = Web::default();
            for url in urls {
                web.page(url);
            }
            web
        }

        fn page(&mut self, url: &str) {
            let capsule = url.trim_start_matches("gemini://");
            let capsule = capsule.split('/').next().unwrap_or("");
            self.pages.push((url.to_string(), capsule.to_string()));
        }

        fn link(&mut self, from: &str, to: &str) {
            self.links.push((from.to_string(), to.to_string()));
        }

        /// `n` new pages, the i-th named `name(i)`, each linking to `target`; returns their URLs.
        fn voters(
            &mut self,
            n: usize,
            name: impl Fn(usize) -> String,
            target: &str,
        ) -> Vec<String> {
            (0..n)
                .map(|i| {
                    let url = name(i);
                    self.page(&url);
                    self.link(&url, target);
                    url
                })
                .collect()
        }
    }

    /// `winner` must outrank `loser`, in graphs built to tempt a naive PageRank the other way.
    #[test]
    fn who_outranks_whom() {
        type Case = (&'static str, Web, &'static str, &'static str);
        let (x, y) = ("gemini://x.org/", "gemini://y.org/");
        let mut cases: Vec<Case> = Vec::new();

        // Many capsules against one.
        let mut web = Web::with(&[x, y, "gemini://lone.net/"]);
        web.voters(4, |i| format!("gemini://s{i}.net/"), x);
        web.link("gemini://lone.net/", y);
        cases.push(("many capsules", web, x, y));

        // A 1000-page farm in one capsule (its pages also linking each other) against five
        // distinct capsules.
        let mut web = Web::with(&[x, y]);
        for src in web.voters(1000, |i| format!("gemini://farm.net/{i}"), x) {
            let next = src
                .trim_start_matches("gemini://farm.net/")
                .parse::<usize>()
                .unwrap();
            web.link(&src, &format!("gemini://farm.net/{}", (next + 1) % 1000));
            web.link(&src, "gemini://farm.net/0");
        }
        web.voters(5, |i| format!("gemini://s{i}.net/"), y);
        cases.push(("link farm", web, y, x));

        // Fifty subdomains of one site against five sites.
        let mut web = Web::with(&[x, y]);
        web.voters(50, |i| format!("gemini://a{i}.farm.net/"), x);
        web.voters(5, |i| format!("gemini://s{i}.net/"), y);
        cases.push(("subdomain farm", web, y, x));

        // Ten pages of its own capsule against one page of another site.
        let mut web = Web::with(&[x, y, "gemini://other.net/"]);
        web.voters(10, |i| format!("gemini://x.org/{i}"), x);
        web.link("gemini://other.net/", y);
        cases.push(("internal links", web, y, x));

        // A page linked by a well-linked page beats one linked by an unknown page.
        let mut web = Web::with(&[x, y, "gemini://hub.net/", "gemini://nobody.net/"]);
        web.link("gemini://hub.net/", x);
        web.link("gemini://nobody.net/", y);
        web.voters(6, |i| format!("gemini://fan{i}.net/"), "gemini://hub.net/");
        cases.push(("rank flows", web, x, y));

        for (name, web, winner, loser) in &cases {
            let pages: Vec<(&str, &str)> = web
                .pages
                .iter()
                .map(|(u, c)| (u.as_str(), c.as_str()))
                .collect();
            let links: Vec<(&str, &str)> = web
                .links
                .iter()
                .map(|(s, t)| (s.as_str(), t.as_str()))
                .collect();
            let g = graph(&pages, &links);
            let pr = pagerank(&g);
            assert!(pr.converged, "{name}: converged");
            let total: f64 = pr.ranks.iter().sum();
            assert!(
                (total - 1.0).abs() < 1e-9,
                "{name}: rank is conserved ({total})"
            );
            let scores = authority(&g);
            assert!(
                scores.iter().all(|s| (0.0..=1.0).contains(s)),
                "{name}: in [0, 1]"
            );
            let (w, l) = (score_of(&g, &scores, winner), score_of(&g, &scores, loser));
            assert!(w > l, "{name}: {winner} ({w}) should outrank {loser} ({l})");
        }
    }

    #[test]
    fn without_the_damping_the_farm_would_win() {
        // The farm test above means something: counted naively, the farm's votes beat five
        // capsules by far.
        let mut b = LinkGraphBuilder::new();
        let x = b.add_page(key("gemini://x.org/"), "x.org");
        let y = b.add_page(key("gemini://y.org/"), "y.org");
        for i in 0..1000 {
            let s = b.add_page(key(&format!("gemini://farm.net/{i}")), "farm.net");
            b.add_link(s, x);
        }
        for i in 0..5 {
            let s = b.add_page(key(&format!("gemini://s{i}.net/")), &format!("s{i}.net"));
            b.add_link(s, y);
        }
        let g = b.build();
        let in_degree = |page: u32| g.links().filter(|l| l.1 == page).count();
        assert!(in_degree(x) > 100 * in_degree(y));
        let scores = authority(&g);
        assert!(scores[y as usize] > scores[x as usize]);
    }

    #[test]
    fn edge_cases() {
        // Empty graph.
        let g = LinkGraphBuilder::new().build();
        assert!(authority(&g).is_empty());
        assert_eq!(pagerank(&g).iterations, 0);

        // One page.
        let g = graph(&[("gemini://a.test/", "a.test")], &[]);
        assert_eq!(authority(&g), vec![0.0]);
        assert!((pagerank(&g).ranks[0] - 1.0).abs() < 1e-12);

        // Pages without links: all equal.
        let g = graph(
            &[
                ("gemini://a.test/", "a.test"),
                ("gemini://b.test/", "b.test"),
            ],
            &[],
        );
        assert_eq!(authority(&g), vec![0.0, 0.0]);

        // A symmetric cycle: all equal.
        let pages = [
            ("gemini://a.test/", "a.test"),
            ("gemini://b.test/", "b.test"),
            ("gemini://c.test/", "c.test"),
        ];
        let cycle = [
            ("gemini://a.test/", "gemini://b.test/"),
            ("gemini://b.test/", "gemini://c.test/"),
            ("gemini://c.test/", "gemini://a.test/"),
        ];
        let g = graph(&pages, &cycle);
        assert!(pagerank(&g).converged);
        assert_eq!(authority(&g), vec![0.0, 0.0, 0.0]);

        // The same cycle with a tail into a: a leads, then b (fed by a), then c, then the tail.
        let mut pages = pages.to_vec();
        pages.push(("gemini://d.test/", "d.test"));
        let mut links = cycle.to_vec();
        links.push(("gemini://d.test/", "gemini://a.test/"));
        let g = graph(&pages, &links);
        let s = authority(&g);
        assert!(pagerank(&g).converged);
        assert!(s[0] > s[1] && s[1] > s[2] && s[2] > s[3], "{s:?}");
        assert_eq!(s[0], 1.0);
        assert_eq!(s[3], 0.0);

        // A two-page loop inside one capsule: both pages equal, no NaN.
        let g = graph(
            &[
                ("gemini://a.test/1", "a.test"),
                ("gemini://a.test/2", "a.test"),
            ],
            &[
                ("gemini://a.test/1", "gemini://a.test/2"),
                ("gemini://a.test/2", "gemini://a.test/1"),
            ],
        );
        assert_eq!(authority(&g), vec![0.0, 0.0]);
    }

    #[test]
    fn normalize_is_logarithmic_from_the_minimum() {
        let cases: &[(&[f64], &[f32])] = &[
            (&[], &[]),
            (&[0.5, 0.5], &[0.0, 0.0]),
            (&[1.0, 10.0, 100.0], &[0.0, 0.5, 1.0]),
            (&[0.0, f64::NAN, 1.0, 4.0], &[0.0, 0.0, 0.0, 1.0]),
        ];
        for (ranks, want) in cases {
            let got = normalize(ranks);
            assert_eq!(got.len(), want.len());
            for (g, w) in got.iter().zip(*want) {
                assert!(
                    (g - w).abs() < 1e-6,
                    "{ranks:?}: got {got:?}, want {want:?}"
                );
            }
        }
    }

    /// A pseudo-random graph: `pages` pages on `pages / 20` capsules over `pages / 60` sites,
    /// `links` links (fixed seed, no dependency).
    fn synthetic(pages: u32, links: usize) -> LinkGraph {
        let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = move || {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (state >> 33) as u32
        };
        let mut b = LinkGraphBuilder::new();
        for i in 0..pages {
            let capsule = format!("c{}.s{}.example", i / 20, i / 60);
            b.add_page(u64::from(i), &capsule);
        }
        for _ in 0..links {
            let source = next() % pages;
            // Half the links stay in the capsule; targets elsewhere favour low ids (popular).
            let target = if next() % 2 == 0 {
                source - source % 20 + next() % 20
            } else {
                let a = next() % pages;
                a.min(next() % pages)
            };
            b.add_link(source, target.min(pages - 1));
        }
        b.build()
    }

    #[test]
    fn deterministic() {
        let g = synthetic(2_000, 20_000);
        let a = authority(&g);
        let b = authority(&g.clone());
        assert_eq!(a, b);
        assert!(a.iter().all(|s| (0.0..=1.0).contains(s)));
        assert!(a.contains(&1.0));
    }

    /// The walk over links filed by target, against the formula of the module documentation
    /// applied the obvious way: a pass over (source, target) pairs, voters counted in a map.
    #[test]
    fn the_walk_is_the_documented_formula() {
        let g = synthetic(2_000, 20_000);
        let n = g.len();
        let site = |page: u32| site_of(g.capsule(page).unwrap());
        let links: Vec<(u32, u32)> = g.links().collect();
        assert_eq!(links.len(), g.link_count());
        let mut voters: HashMap<(u32, &str), u32> = HashMap::new();
        let mut out_degree = vec![0u32; n];
        for &(source, target) in &links {
            *voters.entry((target, site(source))).or_default() += 1;
            out_degree[source as usize] += 1;
        }
        assert!(
            voters.values().any(|&v| v > 1),
            "some site casts several votes"
        );
        assert!(
            links.iter().any(|&(s, t)| site(s) == site(t)),
            "internal links"
        );
        assert!(
            links.iter().any(|&(s, t)| site(s) != site(t)),
            "external links"
        );

        let pr = pagerank(&g);
        let mut ranks = vec![1.0 / n as f64; n];
        for _ in 0..pr.iterations {
            let mut next = vec![0.0; n];
            let mut passed = 0.0;
            for &(source, target) in &links {
                let weight = if site(source) == site(target) {
                    INTERNAL_WEIGHT
                } else {
                    1.0
                };
                let vote = ranks[source as usize] * weight
                    / f64::from(voters[&(target, site(source))])
                    / f64::from(out_degree[source as usize]);
                next[target as usize] += vote;
                passed += vote;
            }
            let total: f64 = ranks.iter().sum();
            let spread = (total - DAMPING * passed) / n as f64;
            ranks = next.iter().map(|v| DAMPING * v + spread).collect();
        }
        let worst = ranks
            .iter()
            .zip(&pr.ranks)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max);
        assert!(worst < 1e-12, "largest difference {worst}");
    }

    /// Timing at scale: `cargo test --lib rank::tests::scale -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn scale() {
        let started = std::time::Instant::now();
        let g = synthetic(100_000, 1_000_000);
        let built = started.elapsed();
        let started = std::time::Instant::now();
        let pr = pagerank(&g);
        let scores = normalize(&pr.ranks);
        let ranked = started.elapsed();
        println!(
            "100k pages, {} distinct links: graph built in {built:?}, ranked in {ranked:?} \
             ({} iterations, converged: {})",
            g.link_count(),
            pr.iterations,
            pr.converged
        );
        assert_eq!(scores.len(), 100_000);
        assert!(pr.converged);
    }
}
