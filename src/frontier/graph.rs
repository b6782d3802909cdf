//! The link graph of the indexed pages, read in bulk for ranking ([`crate::rank`]).
//!
//! Nodes are the `indexed` URLs. A link recorded against a URL that is not indexed itself counts
//! for the page it resolves to: a URL reached through a temporary redirect resolves to the URL
//! its content is indexed under (`alias_of`), and a URL that redirected permanently resolves to
//! its redirect target (the URL it was discovered from with `hops > 0` and no `alias_of`; such a
//! target records the redirecting URL in `discovered_from`). Chains are followed a few steps;
//! links that resolve to no indexed page (mail, web, excluded or failed URLs) are left out.
//!
//! Two statements read everything (the redirect-relevant URLs with the pages, then the links);
//! ids are mapped in memory, so the cost is two table scans whatever the graph's size. Only
//! SELECTs: this works on a read-only [`Frontier`] too. It is not a live view: the graph is a
//! snapshot of one moment.

use std::collections::HashMap;

use crate::rank::{LinkGraph, LinkGraphBuilder};

use super::{Frontier, Result};

/// Redirects followed from one URL before giving up (a crawl follows at most five).
const MAX_CHAIN: usize = 8;

impl Frontier {
    /// The indexed pages and the links between them, resolved through redirects.
    pub fn link_graph(&self) -> Result<LinkGraph> {
        let mut builder = LinkGraphBuilder::new();
        // URL id -> page id, for indexed pages.
        let mut page_of: HashMap<i64, u32> = HashMap::new();
        // URL id -> the URL it stands for, for URLs that are not indexed themselves.
        let mut redirects: HashMap<i64, i64> = HashMap::new();
        {
            let mut stmt = self.conn.prepare(
                "SELECT u.id, u.state = 'indexed', u.url, h.name, u.alias_of,
                        CASE WHEN u.hops > 0 AND u.alias_of IS NULL THEN u.discovered_from END
                 FROM urls u JOIN hosts h ON h.id = u.host_id
                 WHERE u.state = 'indexed' OR u.alias_of IS NOT NULL OR u.hops > 0
                 ORDER BY u.id",
            )?;
            let mut rows = stmt.query([])?;
            while let Some(row) = rows.next()? {
                let id: i64 = row.get(0)?;
                // A permanent redirect's target names the URL that redirected to it. Rows come
                // in id order and that URL is older, so its own `alias_of` (set below when it
                // has one) is already in place and wins.
                if let Some(from) = row.get::<_, Option<i64>>(5)? {
                    redirects.entry(from).or_insert(id);
                }
                if row.get::<_, bool>(1)? {
                    let url: String = row.get(2)?;
                    let capsule: String = row.get(3)?;
                    page_of.insert(id, builder.add_page(url, &capsule));
                } else if let Some(canonical) = row.get::<_, Option<i64>>(4)? {
                    redirects.insert(id, canonical);
                }
            }
        }
        let resolved: HashMap<i64, u32> = redirects
            .keys()
            .filter_map(|&id| Some((id, resolve(id, &page_of, &redirects)?)))
            .collect();
        let page = |id: i64| page_of.get(&id).or_else(|| resolved.get(&id)).copied();

        let mut stmt = self
            .conn
            .prepare("SELECT DISTINCT source, target FROM links")?;
        let mut rows = stmt.query([])?;
        while let Some(row) = rows.next()? {
            if let (Some(source), Some(target)) = (page(row.get(0)?), page(row.get(1)?)) {
                builder.add_link(source, target);
            }
        }
        Ok(builder.build())
    }
}

/// The indexed page a URL stands for, following at most [`MAX_CHAIN`] redirects.
fn resolve(mut id: i64, page_of: &HashMap<i64, u32>, redirects: &HashMap<i64, i64>) -> Option<u32> {
    for _ in 0..=MAX_CHAIN {
        if let Some(&page) = page_of.get(&id) {
            return Some(page);
        }
        id = *redirects.get(&id)?;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::super::{Batch, FetchResult, LinkOut, UrlState};
    use super::*;

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
        }
    }

    fn id_of(batch: &mut Batch<'_>, url: &str) -> i64 {
        let l = link(url);
        let new = super::super::NewUrl {
            url: &l.url,
            host: &l.host,
            depth: 0,
            hops: 0,
            from: None,
            alias_of: None,
        };
        batch.ensure_url(&new, None, u64::MAX).unwrap().0
    }

    fn set_state(batch: &mut Batch<'_>, id: i64, state: UrlState) {
        batch
            .finish_url(id, state, &FetchResult::default())
            .unwrap();
    }

    /// The graph as sorted (source URL, target URL) pairs.
    fn edges(g: &LinkGraph) -> Vec<(String, String)> {
        let mut e: Vec<(String, String)> = g
            .links()
            .iter()
            .map(|&(s, t)| (g.url(s).unwrap().to_string(), g.url(t).unwrap().to_string()))
            .collect();
        e.sort();
        e
    }

    #[test]
    fn pages_links_and_redirects() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("crawl.sqlite");
        let mut f = Frontier::open(&db).unwrap();
        let mut b = f.batch().unwrap();
        let a = id_of(&mut b, "gemini://a.test/");
        let c = id_of(&mut b, "gemini://c.test/");
        // Links from a: to c (twice, two labels), to itself, to mail, to a page never fetched,
        // to an old URL that moved permanently, and to a URL that redirects temporarily.
        b.add_links(
            a,
            0,
            &[
                link("gemini://c.test/"),
                LinkOut {
                    label: "other label".into(),
                    ..link("gemini://c.test/")
                },
                link("gemini://a.test/"),
                link("mailto:someone@a.test"),
                link("gemini://new.test/"),
                link("gemini://c.test/old"),
                link("gemini://d.test/short"),
            ],
            u64::MAX,
        )
        .unwrap();
        let old = id_of(&mut b, "gemini://c.test/old");
        let short = id_of(&mut b, "gemini://d.test/short");
        // c.test/old -31-> c.test/moved (indexed); d.test/short -30-> d.test/long (indexed
        // under short).
        b.add_redirect(old, 1, 1, &link("gemini://c.test/moved"), None, u64::MAX)
            .unwrap();
        let moved = id_of(&mut b, "gemini://c.test/moved");
        b.add_redirect(
            short,
            1,
            1,
            &link("gemini://d.test/long"),
            Some(short),
            u64::MAX,
        )
        .unwrap();
        let long = id_of(&mut b, "gemini://d.test/long");
        // The long page's links are recorded against it; they count for short.
        b.add_links(long, 1, &[link("gemini://a.test/")], u64::MAX)
            .unwrap();
        // moved links to a page that is only pending: not in the graph.
        b.add_links(moved, 1, &[link("gemini://p.test/")], u64::MAX)
            .unwrap();
        let pending = id_of(&mut b, "gemini://p.test/");
        b.add_links(pending, 1, &[link("gemini://a.test/")], u64::MAX)
            .unwrap();
        for id in [a, c, moved, short] {
            set_state(&mut b, id, UrlState::Indexed);
        }
        set_state(&mut b, old, UrlState::Fetched);
        set_state(&mut b, long, UrlState::Fetched);
        set_state(&mut b, pending, UrlState::Pending);
        b.commit().unwrap();

        let g = f.link_graph().unwrap();
        let mut urls: Vec<&str> = g.urls().collect();
        urls.sort();
        assert_eq!(
            urls,
            [
                "gemini://a.test/",
                "gemini://c.test/",
                "gemini://c.test/moved",
                "gemini://d.test/short",
            ]
        );
        let want: Vec<(String, String)> = [
            ("gemini://a.test/", "gemini://c.test/"),
            ("gemini://a.test/", "gemini://c.test/moved"),
            ("gemini://a.test/", "gemini://d.test/short"),
            ("gemini://d.test/short", "gemini://a.test/"),
        ]
        .iter()
        .map(|(s, t)| (s.to_string(), t.to_string()))
        .collect();
        assert_eq!(edges(&g), want);
        let short_page = g.urls().position(|u| u == "gemini://d.test/short").unwrap();
        assert_eq!(g.capsule(short_page as u32), Some("d.test"));
        drop(f);

        // The same from a read-only connection.
        let ro = Frontier::open_read_only(&db).unwrap();
        assert_eq!(edges(&ro.link_graph().unwrap()), want);
    }

    #[test]
    fn empty_database_and_redirect_loops() {
        let dir = tempfile::tempdir().unwrap();
        let mut f = Frontier::open(&dir.path().join("crawl.sqlite")).unwrap();
        assert!(f.link_graph().unwrap().is_empty());

        // x -31-> y -31-> x: neither is indexed, links to them lead nowhere, and nothing hangs.
        let mut b = f.batch().unwrap();
        let a = id_of(&mut b, "gemini://a.test/");
        let x = id_of(&mut b, "gemini://x.test/");
        b.add_redirect(x, 1, 1, &link("gemini://y.test/"), None, u64::MAX)
            .unwrap();
        let y = id_of(&mut b, "gemini://y.test/");
        b.add_links(y, 1, &[link("gemini://x.test/")], u64::MAX)
            .unwrap();
        b.add_links(a, 0, &[link("gemini://x.test/")], u64::MAX)
            .unwrap();
        set_state(&mut b, a, UrlState::Indexed);
        set_state(&mut b, x, UrlState::Fetched);
        set_state(&mut b, y, UrlState::Fetched);
        b.commit().unwrap();
        let g = f.link_graph().unwrap();
        assert_eq!(g.len(), 1);
        assert!(g.links().is_empty());
    }

    #[test]
    fn resolve_stops_on_loops() {
        let page_of = HashMap::from([(1, 0u32)]);
        let redirects = HashMap::from([(2, 3), (3, 2), (4, 5), (5, 1)]);
        assert_eq!(resolve(2, &page_of, &redirects), None);
        assert_eq!(resolve(4, &page_of, &redirects), Some(0));
        assert_eq!(resolve(9, &page_of, &redirects), None);
    }

    /// Reading a 100k-page, 1M-link graph:
    /// `cargo test --lib frontier::graph::tests::scale -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn scale() {
        let dir = tempfile::tempdir().unwrap();
        let mut f = Frontier::open(&dir.path().join("crawl.sqlite")).unwrap();
        let pages = 100_000u64;
        let started = std::time::Instant::now();
        let mut state: u64 = 42;
        let mut next = move || {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            state >> 33
        };
        let url = |i: u64| format!("gemini://c{}.example/{i}", i / 20);
        let mut b = f.batch().unwrap();
        let mut ids = Vec::new();
        for i in 0..pages {
            let id = id_of(&mut b, &url(i));
            set_state(&mut b, id, UrlState::Indexed);
            ids.push(id);
        }
        for &id in &ids {
            let links: Vec<LinkOut> = (0..10).map(|_| link(&url(next() % pages))).collect();
            b.add_links(id, 0, &links, u64::MAX).unwrap();
        }
        b.commit().unwrap();
        println!("database built in {:?}", started.elapsed());
        let started = std::time::Instant::now();
        let g = f.link_graph().unwrap();
        println!(
            "link_graph: {} pages, {} links in {:?}",
            g.len(),
            g.links().len(),
            started.elapsed()
        );
        assert_eq!(g.len(), pages as usize);
        assert!(g.links().len() > 900_000);

        // The rest of the crawl's authority step: rank, hash, write.
        let started = std::time::Instant::now();
        let scores = crate::rank::authority(&g);
        let ranked = started.elapsed();
        let pairs: Vec<(u64, f32)> = g
            .urls()
            .map(crate::index::authority::url_hash)
            .zip(scores)
            .collect();
        crate::index::authority::write(dir.path(), &pairs).unwrap();
        println!(
            "ranked in {ranked:?}, hashed and written in {:?}",
            started.elapsed() - ranked
        );
    }
}
