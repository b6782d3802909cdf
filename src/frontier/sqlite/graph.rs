//! The link graph of the indexed pages, read in bulk for ranking ([`crate::rank`]).
//!
//! Nodes are the URLs the index holds (`in_index`). A link recorded against a URL that is not
//! indexed itself counts for the page it resolves to: a URL reached through a temporary redirect
//! resolves to the URL its content is indexed under (`alias_of`), and a URL that redirects
//! resolves to its redirect's target (`redirect_to`). Chains are followed a few steps; links that
//! resolve to no indexed page (mail, web, excluded or failed URLs) are left out.
//!
//! Two statements read everything (the redirect-relevant URLs with the pages, then each page's
//! packed links, `outlinks`); ids are mapped in memory, so the cost is two table scans whatever
//! the graph's size. Only SELECTs: this works on a read-only [`SqliteFrontier`] too. It is not a
//! live view: the graph is a snapshot of one moment.

use std::collections::HashMap;

use crate::rank::{LinkGraph, LinkGraphBuilder};

use super::outlinks;
use super::{Result, SqliteFrontier};

/// Redirects followed from one URL before giving up (a crawl follows at most five).
const MAX_CHAIN: usize = 8;

impl SqliteFrontier {
    /// The indexed pages and the links between them, resolved through redirects.
    pub fn link_graph(&self) -> Result<LinkGraph> {
        let mut builder = LinkGraphBuilder::new();
        // URL id -> page id, for indexed pages.
        let mut page_of: HashMap<i64, u32> = HashMap::new();
        // URL id -> the URL it stands for, for URLs that are not indexed themselves.
        let mut redirects: HashMap<i64, i64> = HashMap::new();
        {
            let mut stmt = self.conn.prepare(
                "SELECT u.id, u.in_index = 1, u.url, h.name, u.alias_of,
                        CASE WHEN u.status BETWEEN 30 AND 39 THEN u.redirect_to END
                 FROM urls u JOIN hosts h ON h.id = u.host_id
                 WHERE u.in_index = 1 OR u.alias_of IS NOT NULL OR u.redirect_to IS NOT NULL",
            )?;
            let mut rows = stmt.query([])?;
            while let Some(row) = rows.next()? {
                let id: i64 = row.get(0)?;
                if row.get::<_, bool>(1)? {
                    let url: String = row.get(2)?;
                    let capsule: String = row.get(3)?;
                    page_of.insert(id, builder.add_page(url, &capsule));
                } else if let Some(canonical) = row.get::<_, Option<i64>>(4)? {
                    // Content reached through a temporary redirect counts for the URL that
                    // redirected, whatever this URL does itself.
                    redirects.insert(id, canonical);
                } else if let Some(target) = row.get::<_, Option<i64>>(5)? {
                    redirects.insert(id, target);
                }
            }
        }
        let resolved: HashMap<i64, u32> = redirects
            .keys()
            .filter_map(|&id| Some((id, resolve(id, &page_of, &redirects)?)))
            .collect();
        let page = |id: i64| page_of.get(&id).or_else(|| resolved.get(&id)).copied();

        // Each page's own links, packed by target: a target's labels come together, so a
        // target differing from the one before is a distinct (source, target).
        let mut stmt = self.conn.prepare("SELECT source, links FROM outlinks")?;
        let mut rows = stmt.query([])?;
        while let Some(row) = rows.next()? {
            let id: i64 = row.get(0)?;
            let Some(source) = page(id) else {
                continue;
            };
            let packed: Vec<u8> = row.get(1)?;
            let links = outlinks::unpack(id, &packed)?;
            let mut previous = None;
            for (target, _) in links {
                if previous.replace(target) != Some(target) {
                    if let Some(target) = page(target) {
                        builder.add_link(source, target);
                    }
                }
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
    use super::super::tests::{id_of, index, link, redirect, visit};
    use super::super::{LinkOut, UrlState};
    use super::*;
    use crate::frontier::Batch as _;

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
        let mut f = SqliteFrontier::open(&db).unwrap();
        let mut b = f.batch(0).unwrap();
        let a = id_of(&mut b, "gemini://a.test/");
        let c = id_of(&mut b, "gemini://c.test/");
        // Links from a: to c (twice, two labels), to itself, to mail, to a page never fetched,
        // to an old URL that moved permanently, and to a URL that redirects temporarily.
        b.set_links(
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
        let moved = redirect(&mut b, old, "gemini://c.test/moved", None);
        let long = redirect(&mut b, short, "gemini://d.test/long", Some(short));
        // The long page's links are recorded against it; they count for short.
        b.set_links(long, 1, &[link("gemini://a.test/")], u64::MAX)
            .unwrap();
        // moved links to a page whose document is not committed yet: not in the graph.
        b.set_links(moved, 1, &[link("gemini://p.test/")], u64::MAX)
            .unwrap();
        let pending = id_of(&mut b, "gemini://p.test/");
        b.set_links(pending, 1, &[link("gemini://a.test/")], u64::MAX)
            .unwrap();
        for id in [a, c, moved, short, pending] {
            visit(&mut b, id, UrlState::Indexed, 20);
        }
        visit(&mut b, long, UrlState::Fetched, 20);
        b.commit().unwrap();
        index(&mut f, &[a, c, moved, short], 1);

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
        let ro = SqliteFrontier::open_read_only(&db).unwrap();
        assert_eq!(edges(&ro.link_graph().unwrap()), want);
    }

    #[test]
    fn empty_database_and_redirect_loops() {
        let dir = tempfile::tempdir().unwrap();
        let mut f = SqliteFrontier::open(&dir.path().join("crawl.sqlite")).unwrap();
        assert!(f.link_graph().unwrap().is_empty());

        // x -31-> y -31-> x: neither is indexed, links to them lead nowhere, and nothing hangs.
        let mut b = f.batch(0).unwrap();
        let a = id_of(&mut b, "gemini://a.test/");
        let x = id_of(&mut b, "gemini://x.test/");
        let y = redirect(&mut b, x, "gemini://y.test/", None);
        redirect(&mut b, y, "gemini://x.test/", None);
        b.set_links(a, 0, &[link("gemini://x.test/")], u64::MAX)
            .unwrap();
        visit(&mut b, a, UrlState::Indexed, 20);
        b.commit().unwrap();
        index(&mut f, &[a], 1);
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
        let mut f = SqliteFrontier::open(&dir.path().join("crawl.sqlite")).unwrap();
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
        let mut b = f.batch(0).unwrap();
        let mut ids = Vec::new();
        for i in 0..pages {
            let id = id_of(&mut b, &url(i));
            visit(&mut b, id, UrlState::Indexed, 20);
            ids.push(id);
        }
        for &id in &ids {
            let links: Vec<_> = (0..10).map(|_| link(&url(next() % pages))).collect();
            b.set_links(id, 0, &links, u64::MAX).unwrap();
        }
        b.commit().unwrap();
        index(&mut f, &ids, 1);
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
