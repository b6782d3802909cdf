//! Tests of the generated world through its own answers ([`World::fetch`], no network): the
//! same seed gives the same world, sizes are heavy-tailed and sum up, every legitimate page is
//! within reach of the seeds by the links pages really hold, traps never end, a mirror is a
//! copy, and an epoch step changes about a tenth of the pages.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};

use super::*;

fn small() -> World {
    World::generate(&WorldSpec::small(7))
}

fn body(world: &World, url: &str) -> String {
    let reply = world.fetch(url);
    assert_eq!(reply.status, 20, "{url}: {} {}", reply.status, reply.meta);
    String::from_utf8(reply.body).expect("UTF-8")
}

/// The absolute URLs a gemtext page at `base` links to.
fn links(base: &str, gemtext: &str) -> Vec<String> {
    let base = url::Url::parse(base).expect("base URL");
    gemtext
        .lines()
        .filter_map(|l| l.strip_prefix("=>"))
        .filter_map(|l| l.split_whitespace().next())
        .filter_map(|target| base.join(target).ok())
        .map(String::from)
        .collect()
}

fn host_of(url: &str) -> String {
    url::Url::parse(url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_owned))
        .unwrap_or_default()
}

#[test]
fn the_same_seed_gives_the_same_world_and_another_seed_another() {
    let a = small();
    let b = small();
    let c = World::generate(&WorldSpec::small(8));
    let shape = |w: &World| -> Vec<(String, usize, Kind, u32, u32)> {
        w.capsules()
            .iter()
            .map(|c| (c.host.clone(), c.address, c.kind, c.pages, c.linked_from))
            .collect()
    };
    assert_eq!(shape(&a), shape(&b));
    assert_ne!(shape(&a), shape(&c));
    assert_eq!(a.links, b.links);
    assert_eq!(a.seeds(), b.seeds());
    let pages: Vec<LegitPage> = a.legit_pages().step_by(97).collect();
    assert_eq!(pages, b.legit_pages().step_by(97).collect::<Vec<_>>());
    for page in pages.iter().take(10) {
        assert_eq!(body(&a, &page.url), body(&b, &page.url));
    }
}

#[test]
fn small_world_sizes_and_the_large_poorly_linked_capsule() {
    let world = small();
    let spec = world.spec();
    assert_eq!(world.capsules().len(), spec.capsules);
    assert_eq!(world.addresses(), spec.addresses);
    let legit: Vec<&Capsule> = world
        .capsules()
        .iter()
        .filter(|c| c.kind == Kind::Legit)
        .collect();
    assert_eq!(
        legit.iter().map(|c| u64::from(c.pages)).sum::<u64>(),
        spec.legit_pages
    );
    assert_eq!(
        world.legit_page_count(),
        spec.legit_pages,
        "every legit page is in reach"
    );
    let large: Vec<&&Capsule> = legit.iter().filter(|c| c.pages == 2_000).collect();
    assert_eq!(large.len(), 1);
    let large = large[0];
    assert!((2..=3).contains(&large.linked_from), "{large:?}");
    let sharing = world
        .capsules()
        .iter()
        .filter(|c| c.address == large.address)
        .count();
    assert_eq!(sharing, 1, "the large capsule has its address to itself");
    for kind in Kind::TRAPS {
        let hosts = world.hosts_of(kind);
        assert_eq!(hosts.len(), 1, "{kind:?}");
        let (_, trap) = world.capsule(hosts[0]).expect("trap host");
        assert!((1..=3).contains(&trap.linked_from), "{trap:?}");
        assert_eq!(trap.pages, 0);
    }
    // Every address is used; some are shared, as on tilde hosts.
    let mut per_address = vec![0; world.addresses()];
    for c in world.capsules() {
        per_address[c.address] += 1;
    }
    assert!(per_address.iter().all(|&n| n >= 1), "{per_address:?}");
    assert!(per_address.iter().any(|&n| n >= 4), "{per_address:?}");
    let dead: Vec<usize> = (0..world.addresses())
        .filter(|&a| world.is_dead_address(a))
        .collect();
    assert_eq!(dead.len(), 1);
    assert_eq!(per_address[dead[0]], 1);
}

#[test]
fn full_world_sizes_are_heavy_tailed_and_sum_up() {
    let world = World::generate(&WorldSpec::full(1));
    let spec = world.spec();
    assert_eq!(world.capsules().len(), 2_750);
    let mut sizes: Vec<u32> = world
        .capsules()
        .iter()
        .filter(|c| c.kind == Kind::Legit)
        .map(|c| c.pages)
        .collect();
    assert_eq!(
        sizes.iter().map(|&s| u64::from(s)).sum::<u64>(),
        spec.legit_pages
    );
    sizes.sort_unstable();
    let median = sizes[sizes.len() / 2];
    let top: u64 = sizes
        .iter()
        .rev()
        .take(sizes.len() / 100)
        .map(|&s| u64::from(s))
        .sum();
    let thousands = sizes.iter().filter(|&&s| s >= 1_000).count();
    assert!((10..=80).contains(&median), "median {median}");
    assert!(top * 5 >= spec.legit_pages, "the top 1% hold {top} pages");
    assert!(
        (10..=200).contains(&thousands),
        "{thousands} capsules of 1,000+ pages"
    );
    assert_eq!(
        world.legit_page_count(),
        spec.legit_pages,
        "every legit page is in reach"
    );
    let mut per_address: HashMap<usize, usize> = HashMap::new();
    for c in world.capsules() {
        *per_address.entry(c.address).or_default() += 1;
    }
    assert_eq!(per_address.len(), 1_200);
    let busiest = per_address.values().max().copied().unwrap_or(0);
    assert!(busiest >= 30, "busiest address holds {busiest} capsules");
    let in_links: Vec<u32> = world.capsules().iter().map(|c| c.linked_from).collect();
    let most = in_links.iter().max().copied().unwrap_or(0);
    assert!(
        most >= 50,
        "preferential attachment makes hubs; the most linked has {most}"
    );
    for kind in Kind::TRAPS {
        assert_eq!(world.hosts_of(kind).len(), 10, "{kind:?}");
    }
    let deepest = world.legit_pages().map(|p| p.depth).max().unwrap_or(0);
    assert!(deepest <= spec.reach_depth, "{deepest}");
}

/// Breadth-first over the links the served pages hold, from the seeds, through legitimate
/// capsules only: the depth of every legitimate URL.
fn crawl_legit(world: &World) -> HashMap<String, u32> {
    let legit_host: HashSet<&str> = world.hosts_of(Kind::Legit).into_iter().collect();
    let mut depth: HashMap<String, u32> = HashMap::new();
    let mut queue: VecDeque<String> = VecDeque::new();
    for seed in world.seeds() {
        depth.insert(seed.clone(), 0);
        queue.push_back(seed);
    }
    while let Some(url) = queue.pop_front() {
        let reply = world.fetch(&url);
        assert_eq!(
            reply.status, 20,
            "{url} is linked but answers {}",
            reply.status
        );
        if reply.meta != "text/gemini" {
            continue;
        }
        let d = depth[&url];
        for target in links(&url, &String::from_utf8(reply.body).expect("UTF-8")) {
            if legit_host.contains(host_of(&target).as_str()) && !depth.contains_key(&target) {
                depth.insert(target.clone(), d + 1);
                queue.push_back(target);
            }
        }
    }
    depth
}

#[test]
fn every_legit_page_is_within_reach_by_the_links_pages_hold_and_holds_its_word() {
    let world = small();
    let reached = crawl_legit(&world);
    let mut words = HashSet::new();
    for page in world.legit_pages() {
        let d = reached.get(&page.url).copied();
        assert!(
            d.is_some_and(|d| d <= page.depth && d <= 25),
            "{page:?}: reached at {d:?}"
        );
        let text = body(&world, &page.url);
        assert_eq!(text.matches(&page.word).count(), 1, "{page:?}");
        assert!(words.insert(page.word.clone()));
    }
    // Gemlogs: gemfeed indexes with dated links, and some Atom feeds.
    let feeds = reached
        .keys()
        .filter(|u| u.ends_with("/gemlog/atom.xml"))
        .count();
    assert!(feeds >= 1);
    let index = reached
        .keys()
        .find(|u| u.ends_with("/gemlog/"))
        .expect("a gemlog");
    let dated = body(&world, index)
        .lines()
        .filter(|l| {
            let parts: Vec<&str> = l.splitn(4, ' ').collect();
            parts.len() == 4
                && parts[0] == "=>"
                && parts[2].len() == 10
                && parts[2].as_bytes()[4] == b'-'
        })
        .count();
    assert!(dated >= 1, "{index}");
}

#[test]
fn traps_never_end() {
    let world = small();
    let root = |kind: Kind| format!("gemini://{}/", world.hosts_of(kind)[0]);
    // Follow the first link of each page that `wanted` accepts and that leads somewhere new,
    // 300 times: there always is one.
    let follow = |start: String, wanted: &dyn Fn(&str) -> bool| -> usize {
        let mut seen = HashSet::new();
        let mut url = start;
        for _ in 0..300 {
            let page = body(&world, &url);
            seen.insert(url.clone());
            let next = links(&url, &page)
                .into_iter()
                .find(|u| wanted(u) && !seen.contains(u));
            match next {
                Some(u) => url = u,
                None => break,
            }
        }
        seen.len()
    };
    assert_eq!(follow(root(Kind::WebProxy), &|u| u.contains("/wiki/")), 300);
    let git = body(&world, &root(Kind::GitBrowser));
    let repo = links(&root(Kind::GitBrowser), &git)[0].clone();
    let head = links(&repo, &body(&world, &repo))[0].clone();
    assert_eq!(follow(head, &|u| u.contains("/commit/")), 300);
    let month = links(&root(Kind::Calendar), &body(&world, &root(Kind::Calendar)))[0].clone();
    let is_month = |u: &str| u.ends_with('/') && u.matches('/').count() == 6;
    assert_eq!(follow(month, &is_month), 300);
    let list = links(
        &root(Kind::QuerySpace),
        &body(&world, &root(Kind::QuerySpace)),
    )[0]
    .clone();
    assert_eq!(follow(list, &|u| u.contains("page=")), 300);
    // The link bomb: 50,000 links, then 1,000 on every page below, however deep.
    let bomb = root(Kind::LinkBomb);
    assert!(links(&bomb, &body(&world, &bomb)).len() >= 50_000);
    let deep = format!("{bomb}b/7/999/3/");
    assert_eq!(links(&deep, &body(&world, &deep)).len(), 1_000);
    // Per-request pages change every time, their links do not.
    let per = root(Kind::PerRequest);
    let (one, two) = (body(&world, &per), body(&world, &per));
    assert_ne!(one, two);
    assert_eq!(links(&per, &one), links(&per, &two));
    // The slow capsule waits 1 to 3 s; the dead one's address is not served.
    let slow = world.fetch(&root(Kind::Slow));
    assert_eq!(slow.status, 20);
    assert!(
        (1_000..=3_000).contains(&slow.delay.as_millis()),
        "{:?}",
        slow.delay
    );
    let (_, dead) = world.capsule(world.hosts_of(Kind::Dead)[0]).expect("dead");
    assert!(world.is_dead_address(dead.address));
}

#[test]
fn a_mirror_is_an_exact_copy_of_its_source() {
    let world = small();
    let (_, mirror) = world
        .capsule(world.hosts_of(Kind::Mirror)[0])
        .expect("mirror");
    let source = &world.capsules()[mirror.mirror_of.expect("source")];
    assert!(source.pages >= 10);
    let layout = source.layout.expect("layout");
    for idx in 0..source.pages {
        let path = layout.path(idx);
        let a = world.fetch(&format!("gemini://{}{path}", source.host));
        let b = world.fetch(&format!("gemini://{}{path}", mirror.host));
        assert_eq!(a, b, "{path}");
    }
    world.set_epoch(3);
    let path = layout.path(source.pages - 1);
    assert_eq!(
        world.fetch(&format!("gemini://{}{path}", source.host)),
        world.fetch(&format!("gemini://{}{path}", mirror.host))
    );
}

#[test]
fn each_epoch_step_changes_about_a_tenth_of_the_pages_and_keeps_words_and_links() {
    let world = small();
    let pages: Vec<LegitPage> = world.legit_pages().collect();
    let snapshot =
        |world: &World| -> Vec<String> { pages.iter().map(|p| body(world, &p.url)).collect() };
    let before = snapshot(&world);
    let mut previous = before.clone();
    for epoch in 1..=2 {
        world.set_epoch(epoch);
        let now = snapshot(&world);
        let mut changed = 0;
        for ((page, old), new) in pages.iter().zip(&previous).zip(&now) {
            if old != new {
                changed += 1;
                assert!(new.contains(&page.word));
                assert_eq!(links(&page.url, old), links(&page.url, new), "{}", page.url);
            }
        }
        let share = changed as f64 / pages.len() as f64;
        assert!((0.07..=0.13).contains(&share), "epoch {epoch}: {share}");
        previous = now;
    }
    world.set_epoch(0);
    assert_eq!(
        snapshot(&world),
        before,
        "epoch 0 is the original world again"
    );
}

#[test]
fn the_manifest_names_every_capsule_and_the_tsv_every_page() {
    let world = small();
    let ips = loopback_addresses("127.1.0.254".parse().unwrap(), world.addresses()).unwrap();
    assert_eq!(ips[1].to_string(), "127.1.1.1", "skips .255 and .0");
    assert!(loopback_addresses("127.255.255.250".parse().unwrap(), 10).is_err());
    let endpoints: Vec<std::net::SocketAddr> = ips
        .iter()
        .map(|ip| std::net::SocketAddr::new(*ip, 1965))
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("world.json");
    let tsv = write_manifest(&world, &endpoints, &path).unwrap();
    assert_eq!(tsv, dir.path().join("world.pages.tsv"));
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    assert_eq!(manifest["legit_pages"], 3_000);
    assert_eq!(manifest["capsules"].as_array().map(Vec::len), Some(60));
    assert_eq!(manifest["resolve"].as_array().map(Vec::len), Some(60));
    assert!(manifest["resolve"][0].as_str().unwrap().contains("=127.1."));
    let traps: BTreeMap<String, serde_json::Value> =
        serde_json::from_value(manifest["traps"].clone()).unwrap();
    assert_eq!(traps.len(), 9);
    let lines = std::fs::read_to_string(&tsv).unwrap();
    assert_eq!(lines.lines().count(), 3_000);
    assert!(lines
        .lines()
        .all(|l| l.starts_with("gemini://")
            && l.split('\t').nth(1).is_some_and(|w| w.starts_with("zq"))));
}
