//! The link graph of the indexed pages, read in bulk for ranking ([`crate::rank`]).
//!
//! Nodes are the URLs the index holds (`in_index`); a link to a URL that redirects counts for
//! the page it resolves to ([`crate::frontier::graph`] says how).
//!
//! Two statements read everything (the redirect-relevant URLs with the pages, then each page's
//! packed links, `outlinks`); ids are mapped in memory, so the cost is two table scans whatever
//! the graph's size. Only SELECTs: this works on a read-only [`SqliteFrontier`] too. It is not a
//! live view: the graph is a snapshot of one moment.

use crate::frontier::graph::GraphRows;
use crate::rank::LinkGraph;

use super::outlinks;
use super::rows::str_at;
use super::{Result, SqliteFrontier};

/// The page cache, in KiB, while the link graph is read.
pub(super) const SCAN_CACHE_KIB: i64 = 2048;

impl SqliteFrontier {
    pub(super) fn read_link_graph(&self) -> Result<LinkGraph> {
        let mut rows = GraphRows::default();
        {
            let mut stmt = self.conn.prepare(
                "SELECT u.id, u.in_index = 1, u.url, h.name, u.alias_of,
                        CASE WHEN u.status BETWEEN 30 AND 39 THEN u.redirect_to END
                 FROM urls u JOIN hosts h ON h.id = u.host_id
                 WHERE u.in_index = 1 OR u.alias_of IS NOT NULL OR u.redirect_to IS NOT NULL
                 ORDER BY u.id",
            )?;
            let mut urls = stmt.query([])?;
            while let Some(row) = urls.next()? {
                let id: i64 = row.get(0)?;
                if row.get::<_, bool>(1)? {
                    rows.page(id, str_at(row, 2)?, str_at(row, 3)?);
                } else if let Some(canonical) = row.get::<_, Option<i64>>(4)? {
                    // Content reached through a temporary redirect counts for the URL that
                    // redirected, whatever this URL does itself.
                    rows.stands_for(id, canonical);
                } else if let Some(target) = row.get::<_, Option<i64>>(5)? {
                    rows.stands_for(id, target);
                }
            }
        }
        rows.links_follow();

        // Each page's own links, packed by target: a target's labels come together, so a
        // target differing from the one before is a distinct (source, target).
        let mut stmt = self.conn.prepare("SELECT source, links FROM outlinks")?;
        let mut packed = stmt.query([])?;
        while let Some(row) = packed.next()? {
            let id: i64 = row.get(0)?;
            let Some(source) = rows.page_of(id) else {
                continue;
            };
            let blob = row.get_ref(1)?.as_blob().map_err(rusqlite::Error::from)?;
            let links = outlinks::unpack(id, blob)?;
            let mut previous = None;
            for (target, _) in links {
                if previous.replace(target) != Some(target) {
                    if let Some(target) = rows.page_of(target) {
                        rows.add_link(source, target);
                    }
                }
            }
        }
        Ok(rows.build())
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{id_of, index, link, redirect, visit};
    use super::super::UrlState;
    use super::*;
    use crate::digest::url_hash;
    use crate::frontier::LinkOut;
    use crate::frontier::{Batch as _, IndexLog as _};

    /// Every URL the tests below make, by its key: the graph knows its pages by key only.
    const URLS: &[&str] = &[
        "gemini://a.test/",
        "gemini://c.test/",
        "gemini://c.test/old",
        "gemini://c.test/moved",
        "gemini://d.test/short",
        "gemini://d.test/long",
        "gemini://new.test/",
        "gemini://p.test/",
        "gemini://x.test/",
        "gemini://y.test/",
    ];

    /// The URL a page stands for ("?" for a key none of [`URLS`] has).
    fn url_of(g: &LinkGraph, page: u32) -> String {
        let key = g.key(page).expect("page in graph");
        URLS.iter()
            .find(|u| url_hash(u) == key)
            .map_or_else(|| "?".to_string(), |u| u.to_string())
    }

    /// The graph as sorted (source URL, target URL) pairs.
    fn edges(g: &LinkGraph) -> Vec<(String, String)> {
        let mut e: Vec<(String, String)> = g
            .links()
            .map(|(s, t)| (url_of(g, s), url_of(g, t)))
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
        let mut urls: Vec<String> = (0..g.len() as u32).map(|p| url_of(&g, p)).collect();
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
        let short_page = g
            .keys()
            .iter()
            .position(|&k| k == url_hash("gemini://d.test/short"));
        assert_eq!(g.capsule(short_page.unwrap() as u32), Some("d.test"));
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
        assert_eq!(g.link_count(), 0);
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
            g.link_count(),
            started.elapsed()
        );
        assert_eq!(g.len(), pages as usize);
        assert!(g.link_count() > 900_000);

        // The rest of the crawl's authority step: rank, hash, write.
        let started = std::time::Instant::now();
        let scores = crate::rank::authority(&g);
        let ranked = started.elapsed();
        let pairs: Vec<(u64, f32)> = g.keys().iter().copied().zip(scores).collect();
        crate::index::authority::write(dir.path(), &pairs).unwrap();
        println!(
            "ranked in {ranked:?}, hashed and written in {:?}",
            started.elapsed() - ranked
        );
    }
}
