//! Generation of a world from its spec, in one pass of one random stream: capsule sizes (a
//! Pareto law scaled to the exact total), addresses (each used once, then shared Zipf-like, as
//! on tilde hosts), host names, links between capsules (each capsule introduced by an earlier
//! one chosen by preferential attachment, then linking to earlier capsules the same way; the
//! large capsule and the traps get a few linkers only), mirrors, seeds, and the depth of every
//! home page from the seeds (Dijkstra over capsules).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet};
use std::sync::atomic::{AtomicU32, AtomicU64};

use super::layout::Layout;
use super::rng::{hash, label, Rng};
use super::words;
use super::{Capsule, Kind, Link, World, WorldSpec};

/// Pages of a slow capsule and of a per-request capsule.
const SMALL_TRAP_PAGES: (u64, u64) = (8, 16);

pub(crate) fn generate(spec: &WorldSpec) -> World {
    let mut rng = Rng::keyed(&[label::WORLD, spec.seed]);
    let traps = spec.traps_per_kind * Kind::TRAPS.len();
    assert!(
        spec.capsules > traps + 1,
        "a world needs legitimate capsules besides its {traps} traps"
    );
    let legit = spec.capsules - traps;
    assert!(
        spec.addresses > spec.traps_per_kind + usize::from(spec.large_capsule.is_some()),
        "a world needs addresses besides the dead ones"
    );

    let (sizes, large) = sizes(&mut rng, spec, legit);
    let mut kinds: Vec<Kind> = vec![Kind::Legit; legit];
    for kind in Kind::TRAPS {
        kinds.extend(std::iter::repeat(kind).take(spec.traps_per_kind));
    }
    let (addresses, dead_addresses) = addresses(&mut rng, spec, &kinds, large);
    let names = names(&mut rng, &addresses);

    let mut first_page = 0u64;
    let mut capsules: Vec<Capsule> = Vec::with_capacity(spec.capsules);
    for (i, kind) in kinds.iter().enumerate() {
        let key = hash(&[label::WORLD, spec.seed, i as u64]);
        let pages = sizes.get(i).copied().unwrap_or(0);
        let layout = match kind {
            Kind::Legit => Some(Layout::new(pages, key)),
            Kind::Slow | Kind::PerRequest => {
                let (lo, hi) = SMALL_TRAP_PAGES;
                Some(Layout::new(rng.range(lo, hi) as u32, key))
            }
            _ => None,
        };
        let (host, name) = names[i].clone();
        capsules.push(Capsule {
            host,
            name,
            address: addresses[i],
            kind: *kind,
            pages,
            linked_from: 0,
            mirror_of: None,
            first_page,
            layout,
            links: 0..0,
            key,
        });
        first_page += u64::from(pages);
    }

    let mut links = Vec::new();
    link_legit(&mut rng, &capsules, legit, large, &mut links);
    choose_mirrors(&mut rng, &mut capsules, legit, large);
    for i in legit..capsules.len() {
        let linkers = rng.range(1, 3) as usize;
        link_from_few(&mut rng, &capsules, legit, large, i, linkers, &mut links);
    }
    if let Some(large) = large {
        let linkers = rng.range(2, 3) as usize;
        link_from_few(
            &mut rng,
            &capsules,
            legit,
            Some(large),
            large,
            linkers,
            &mut links,
        );
    }

    let mut world = World {
        spec: spec.clone(),
        capsules,
        links: Vec::new(),
        dead_addresses,
        by_host: HashMap::new(),
        seeds: Vec::new(),
        root_depth: Vec::new(),
        epoch: AtomicU32::new(0),
        visits: AtomicU64::new(0),
    };
    world.install_links(links);
    world.seeds = seeds(&world, legit, large);
    // A capsule too deep for its pages to be within reach gets a link from the first seed's
    // home page; a preferential world rarely needs it.
    loop {
        world.root_depth = depths(&world);
        let too_deep: Vec<usize> = (0..legit)
            .filter(|&i| world.root_depth[i].saturating_add(2) > spec.reach_depth)
            .collect();
        if too_deep.is_empty() {
            break;
        }
        let mut links = std::mem::take(&mut world.links);
        let from = world.seeds[0] as u32;
        links.extend(too_deep.iter().map(|&to| Link {
            from,
            page: 0,
            to: to as u32,
        }));
        world.install_links(links);
    }
    world.by_host = world
        .capsules
        .iter()
        .enumerate()
        .map(|(i, c)| (c.host.clone(), i))
        .collect();
    world
}

impl World {
    /// Sorts the links, gives each capsule its range and counts distinct linkers.
    fn install_links(&mut self, mut links: Vec<Link>) {
        links.sort_unstable();
        links.dedup();
        let mut linkers: HashSet<(u32, u32)> = HashSet::new();
        for capsule in &mut self.capsules {
            capsule.linked_from = 0;
        }
        for link in &links {
            if linkers.insert((link.from, link.to)) {
                self.capsules[link.to as usize].linked_from += 1;
            }
        }
        let mut start = 0;
        for (i, capsule) in self.capsules.iter_mut().enumerate() {
            let end = start + links[start..].partition_point(|l| l.from as usize == i);
            capsule.links = start..end;
            start = end;
        }
        self.links = links;
    }
}

/// Sizes of the legitimate capsules (in age order) summing to `legit_pages`, and the index of
/// the large one.
fn sizes(rng: &mut Rng, spec: &WorldSpec, legit: usize) -> (Vec<u32>, Option<usize>) {
    let large = spec
        .large_capsule
        .map(|_| legit / 3 + rng.below((legit / 3).max(1) as u64) as usize);
    let others = legit - usize::from(large.is_some());
    let total = spec.legit_pages - u64::from(spec.large_capsule.unwrap_or(0));
    let cap = u64::from(spec.max_capsule_pages);
    assert!(
        others as u64 <= total && total <= others as u64 * cap,
        "{total} pages cannot fill {others} capsules of 1 to {cap} pages"
    );
    // Pareto shifted to start at 0 (Lomax): many capsules of a page or two, a heavy tail.
    let raw: Vec<f64> = (0..others)
        .map(|_| rng.pareto(spec.size_alpha) - 1.0)
        .collect();
    let fill = |k: f64| -> Vec<u64> {
        raw.iter()
            .map(|r| (1 + (r * k).round() as u64).min(cap))
            .collect()
    };
    // The largest scale whose sizes do not exceed the total, by bisection.
    let (mut lo, mut hi) = (0.0f64, total as f64);
    for _ in 0..100 {
        let mid = (lo + hi) / 2.0;
        if fill(mid).iter().sum::<u64>() <= total {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let mut sizes = fill(lo);
    let mut missing = total - sizes.iter().sum::<u64>();
    while missing > 0 {
        let i = rng.below(others as u64) as usize;
        if sizes[i] < cap {
            sizes[i] += 1;
            missing -= 1;
        }
    }
    let mut sizes: Vec<u32> = sizes.into_iter().map(|s| s as u32).collect();
    if let (Some(at), Some(pages)) = (large, spec.large_capsule) {
        sizes.insert(at, pages);
    }
    (sizes, large)
}

/// Each capsule's address, and which addresses are dead. The dead capsules and the large
/// capsule have addresses of their own; every other address serves at least one capsule, and
/// the capsules left over crowd onto a few (Zipf: the busiest address holds the most).
fn addresses(
    rng: &mut Rng,
    spec: &WorldSpec,
    kinds: &[Kind],
    large: Option<usize>,
) -> (Vec<usize>, Vec<bool>) {
    let mut address = vec![usize::MAX; kinds.len()];
    let mut dead = vec![false; spec.addresses];
    let mut next = spec.addresses;
    for (i, kind) in kinds.iter().enumerate() {
        if *kind == Kind::Dead || Some(i) == large {
            next -= 1;
            address[i] = next;
            dead[next] = *kind == Kind::Dead;
        }
    }
    let shared = next;
    let mut rest: Vec<usize> = (0..kinds.len())
        .filter(|&i| address[i] == usize::MAX)
        .collect();
    rng.shuffle(&mut rest);
    let mut ranks: Vec<usize> = (0..shared).collect();
    rng.shuffle(&mut ranks);
    let mut total = 0.0;
    let cumulative: Vec<f64> = (0..shared)
        .map(|r| {
            total += 1.0 / (r as f64 + 1.0);
            total
        })
        .collect();
    for (n, &i) in rest.iter().enumerate() {
        address[i] = if n < shared {
            n
        } else {
            ranks[rng.weighted(&cumulative)]
        };
    }
    (address, dead)
}

/// Host and display name of every capsule: `word-word.test` alone on an address,
/// `user.place.test` on a shared one.
fn names(rng: &mut Rng, addresses: &[usize]) -> Vec<(String, String)> {
    let mut rng = Rng::keyed(&[label::NAME, rng.next_u64()]);
    let mut per_address: HashMap<usize, usize> = HashMap::new();
    for &a in addresses {
        *per_address.entry(a).or_default() += 1;
    }
    let mut places: HashMap<usize, (String, String)> = HashMap::new();
    let mut taken: HashSet<String> = HashSet::new();
    // `first` and `rest` make a host; on a clash `first` gets a number (`house2.place.test`).
    let unique = |first: String, rest: &str, taken: &mut HashSet<String>| -> String {
        let mut candidate = format!("{first}{rest}");
        let mut n = 2;
        while !taken.insert(candidate.clone()) {
            candidate = format!("{first}{n}{rest}");
            n += 1;
        }
        candidate
    };
    addresses
        .iter()
        .map(|&a| {
            let w1 = words::any_content_word(&mut rng);
            let w2 = words::any_content_word(&mut rng);
            if per_address[&a] == 1 {
                let host = unique(format!("{w1}-{w2}"), ".test", &mut taken);
                let name = format!("{} {}", words::capitalised(w1), words::capitalised(w2));
                return (host, name);
            }
            let (place, place_name) = places
                .entry(a)
                .or_insert_with(|| {
                    let place = unique(format!("{w1}{w2}"), ".test", &mut taken);
                    let name = format!("{}{}", words::capitalised(w1), w2);
                    (place, name)
                })
                .clone();
            let user = words::any_content_word(&mut rng);
            let host = unique(user.to_string(), &format!(".{place}"), &mut taken);
            let name = format!("{} at {place_name}", words::capitalised(user));
            (host, name)
        })
        .collect()
}

/// A page of capsule `from` to hold a link: the home page, the links page or any page.
fn link_page(rng: &mut Rng, capsule: &Capsule) -> u32 {
    let layout = capsule.layout.expect("linkers are legitimate");
    match rng.below(10) {
        0..=2 => 0,
        3..=5 => layout.links_page(),
        _ => rng.below(u64::from(layout.pages)) as u32,
    }
}

/// Links among the legitimate capsules, oldest first. The pool holds each capsule once per
/// link it received plus a weight for its size: drawing from it is preferential attachment.
fn link_legit(
    rng: &mut Rng,
    capsules: &[Capsule],
    legit: usize,
    large: Option<usize>,
    links: &mut Vec<Link>,
) {
    let weight = |c: &Capsule| 1 + (32 - c.pages.leading_zeros()) as usize / 2;
    let mut pool: Vec<u32> = Vec::new();
    for i in 0..legit {
        if Some(i) == large {
            continue;
        }
        if !pool.is_empty() {
            // The introducer puts the link where readers find it: home or links page.
            let j = *rng.pick(&pool);
            let layout = capsules[j as usize].layout.expect("legitimate");
            let page = if rng.chance(0.5) {
                0
            } else {
                layout.links_page()
            };
            links.push(Link {
                from: j,
                page,
                to: i as u32,
            });
            pool.push(i as u32);
            let n = (rng.pareto(1.4) as usize).min(40);
            let mut chosen = HashSet::new();
            for _ in 0..n {
                let t = *rng.pick(&pool);
                if t as usize != i && chosen.insert(t) {
                    let page = link_page(rng, &capsules[i]);
                    links.push(Link {
                        from: i as u32,
                        page,
                        to: t,
                    });
                    pool.push(t);
                }
            }
        }
        pool.extend(std::iter::repeat(i as u32).take(weight(&capsules[i])));
    }
    // Some links to capsules of any age, so young capsules are not only linked by their
    // introducer.
    let ordinary: Vec<u32> = (0..legit as u32)
        .filter(|&i| Some(i as usize) != large)
        .collect();
    for &i in &ordinary {
        if rng.chance(0.3) {
            let t = *rng.pick(&ordinary);
            if t != i {
                let page = link_page(rng, &capsules[i as usize]);
                links.push(Link {
                    from: i,
                    page,
                    to: t,
                });
            }
        }
    }
}

/// Links to capsule `to` from `n` distinct ordinary legitimate capsules.
fn link_from_few(
    rng: &mut Rng,
    capsules: &[Capsule],
    legit: usize,
    large: Option<usize>,
    to: usize,
    n: usize,
    links: &mut Vec<Link>,
) {
    let mut chosen = HashSet::new();
    while chosen.len() < n.min(legit - 1) {
        let from = rng.below(legit as u64) as usize;
        if from != to && Some(from) != large && chosen.insert(from) {
            let page = link_page(rng, &capsules[from]);
            links.push(Link {
                from: from as u32,
                page,
                to: to as u32,
            });
        }
    }
}

/// Each mirror copies a distinct ordinary legitimate capsule of moderate size.
fn choose_mirrors(rng: &mut Rng, capsules: &mut [Capsule], legit: usize, large: Option<usize>) {
    let mut candidates: Vec<usize> = (0..legit)
        .filter(|&i| Some(i) != large && (10..=300).contains(&capsules[i].pages))
        .collect();
    if candidates.is_empty() {
        candidates = (0..legit).filter(|&i| Some(i) != large).collect();
    }
    rng.shuffle(&mut candidates);
    let mirrors: Vec<usize> = (legit..capsules.len())
        .filter(|&i| capsules[i].kind == Kind::Mirror)
        .collect();
    for (n, m) in mirrors.into_iter().enumerate() {
        capsules[m].mirror_of = Some(candidates[n % candidates.len()]);
    }
}

/// The oldest capsule (from which every other was introduced), then the most linked ones.
fn seeds(world: &World, legit: usize, large: Option<usize>) -> Vec<usize> {
    let mut by_links: Vec<usize> = (1..legit).filter(|&i| Some(i) != large).collect();
    by_links.sort_by_key(|&i| (Reverse(world.capsules[i].linked_from), i));
    let first = if large == Some(0) { 1 } else { 0 };
    let mut seeds = vec![first];
    seeds.extend(
        by_links
            .into_iter()
            .filter(|&i| i != first)
            .take(world.spec.seeds.saturating_sub(1)),
    );
    seeds
}

/// Links from the nearest seed to every capsule's home page, a link from page p costing the
/// depth of p in its capsule plus one. Only legitimate capsules pass links on (a mirror's
/// copies of its source's links are not needed to reach anything).
fn depths(world: &World) -> Vec<u32> {
    let mut depth = vec![u32::MAX; world.capsules.len()];
    let mut heap = BinaryHeap::new();
    for &s in &world.seeds {
        depth[s] = 0;
        heap.push(Reverse((0u32, s)));
    }
    while let Some(Reverse((d, i))) = heap.pop() {
        if d > depth[i] || world.capsules[i].kind != Kind::Legit {
            continue;
        }
        let layout = world.capsules[i].layout.expect("legitimate");
        for link in &world.links[world.capsules[i].links.clone()] {
            let to = link.to as usize;
            let through = d + layout.depth(link.page) + 1;
            if through < depth[to] {
                depth[to] = through;
                heap.push(Reverse((through, to)));
            }
        }
    }
    depth
}
