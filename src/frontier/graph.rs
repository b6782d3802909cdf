//! The link graph ([`crate::rank`]) from a store's rows, the same for both stores: the
//! indexed pages numbered in URL id order, and every other URL resolved to the page it stands
//! for. Pure: the stores read the rows and hand them over.
//!
//! Nodes are the URLs the index holds. A link recorded against a URL that is not indexed itself
//! counts for the page it resolves to: a URL reached through a temporary redirect resolves to
//! the URL its content is indexed under (`alias_of`), and a URL that redirects resolves to its
//! redirect's target (`redirect_to`). Chains are followed up to [`MAX_REDIRECT_CHAIN`] steps;
//! links that resolve to no indexed page (mail, web, excluded or failed URLs) are left out.
//!
//! The whole graph of the index is in memory at once at the end of a crawl, so its bookkeeping
//! is lean: a page costs 8 bytes here (its URL id, found again by binary search) and 16 in the
//! graph, a link 8.

use std::collections::HashMap;

use crate::digest::url_hash;
use crate::rank::{LinkGraph, LinkGraphBuilder};

use super::MAX_REDIRECT_CHAIN;

/// Collects a store's rows into a [`LinkGraph`]: first the URLs ([`GraphRows::page`] and
/// [`GraphRows::stands_for`], pages in increasing URL id order), then the links.
#[derive(Default)]
pub(super) struct GraphRows {
    builder: LinkGraphBuilder,
    /// The URL ids of the indexed pages, increasing: a page's id in the graph is its place here.
    ids: Vec<i64>,
    /// URL id -> the URL it stands for, for URLs that are not indexed themselves.
    redirects: HashMap<i64, i64>,
    /// The pages those URLs resolve to, once every URL is in ([`GraphRows::links_follow`]).
    resolved: HashMap<i64, u32>,
}

impl GraphRows {
    /// An indexed page: URL id `id` (greater than every id given before), its URL and capsule.
    pub(super) fn page(&mut self, id: i64, url: &str, capsule: &str) {
        let page = self.builder.add_page(url_hash(url), capsule);
        // The builder numbers pages from 0 in the order they are added; a page it drops (past
        // u32::MAX pages) is never looked up.
        if page as usize == self.ids.len() {
            debug_assert!(self.ids.last().map_or(true, |&last| last < id));
            self.ids.push(id);
        }
    }

    /// URL `id` is not indexed and stands for URL `other` (its alias or redirect target).
    pub(super) fn stands_for(&mut self, id: i64, other: i64) {
        self.redirects.insert(id, other);
    }

    /// Every URL is in: what each redirecting URL resolves to is worked out once, before the
    /// links are looked up.
    pub(super) fn links_follow(&mut self) {
        let resolved = self
            .redirects
            .keys()
            .filter_map(|&id| Some((id, self.resolve(id)?)))
            .collect();
        self.resolved = resolved;
        self.redirects = HashMap::new();
    }

    /// The page URL `id` stands for, if any.
    pub(super) fn page_of(&self, id: i64) -> Option<u32> {
        self.indexed(id).or_else(|| self.resolved.get(&id).copied())
    }

    /// A link between two pages ([`GraphRows::page_of`]).
    pub(super) fn add_link(&mut self, source: u32, target: u32) {
        self.builder.add_link(source, target);
    }

    pub(super) fn build(self) -> LinkGraph {
        self.builder.build()
    }

    fn indexed(&self, id: i64) -> Option<u32> {
        self.ids.binary_search(&id).ok().map(|i| i as u32)
    }

    /// Follows the redirects from `id` to an indexed page, giving up on loops and long chains.
    fn resolve(&self, mut id: i64) -> Option<u32> {
        for _ in 0..=MAX_REDIRECT_CHAIN {
            if let Some(page) = self.indexed(id) {
                return Some(page);
            }
            id = *self.redirects.get(&id)?;
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_resolve_through_redirects_and_stop_on_loops() {
        let mut rows = GraphRows::default();
        rows.page(1, "gemini://a.test/", "a.test");
        rows.page(7, "gemini://b.test/", "b.test");
        for (id, other) in [(2, 3), (3, 2), (4, 5), (5, 1), (6, 7)] {
            rows.stands_for(id, other);
        }
        rows.links_follow();
        let found: Vec<Option<u32>> = (1..=9).map(|id| rows.page_of(id)).collect();
        assert_eq!(
            found,
            [
                Some(0), // a page
                None,    // 2 -> 3 -> 2: a loop
                None,
                Some(0), // 4 -> 5 -> 1
                Some(0), // 5 -> 1
                Some(1), // 6 -> 7
                Some(1),
                None, // unknown
                None,
            ]
        );
        rows.add_link(0, 1);
        let g = rows.build();
        assert_eq!(
            g.keys(),
            [url_hash("gemini://a.test/"), url_hash("gemini://b.test/")]
        );
        assert_eq!(g.links().collect::<Vec<_>>(), [(0, 1)]);
    }

    #[test]
    fn a_chain_longer_than_the_bound_leads_nowhere() {
        let mut rows = GraphRows::default();
        rows.page(0, "gemini://a.test/", "a.test");
        let n = MAX_REDIRECT_CHAIN as i64 + 2;
        for id in 1..=n {
            rows.stands_for(id, id - 1);
        }
        rows.links_follow();
        assert_eq!(rows.page_of(MAX_REDIRECT_CHAIN as i64), Some(0));
        assert_eq!(rows.page_of(n), None);
    }
}
