//! What a benchmark or a test needs to know about a served world, as files: a JSON manifest
//! (seed, sizes, seeds, every capsule with its address, `--resolve` arguments, trap hosts by
//! kind) and beside it a TSV of every reachable legitimate page (`URL<TAB>unique word`), and the
//! loopback addresses a world is served on.

use std::io::{self, BufWriter, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};

use serde_json::json;

use super::World;

/// `n` loopback addresses from `base` upwards, skipping those ending in .0 and .255 (which
/// some tools take for network or broadcast addresses). Fails when they would leave
/// 127.0.0.0/8.
pub fn loopback_addresses(base: Ipv4Addr, n: usize) -> io::Result<Vec<IpAddr>> {
    let outside = || {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{n} addresses from {base} do not fit in 127.0.0.0/8"),
        )
    };
    if !base.is_loopback() {
        return Err(outside());
    }
    let mut addresses = Vec::with_capacity(n);
    let mut next = u32::from(base);
    while addresses.len() < n {
        let ip = Ipv4Addr::from(next);
        if !ip.is_loopback() {
            return Err(outside());
        }
        if !matches!(ip.octets()[3], 0 | 255) {
            addresses.push(IpAddr::V4(ip));
        }
        next = next.checked_add(1).ok_or_else(outside)?;
    }
    Ok(addresses)
}

/// Writes the manifest of `world` served at `endpoints` (one per world address, in order; a
/// dead address's endpoint is one where nothing listens) to `path`, and the TSV of reachable
/// legitimate pages beside it (`path` with the extension `pages.tsv`), whose path it returns.
///
/// Manifest fields: `seed`, `epoch`, `capsule_count`, `address_count`, `legit_pages` (the
/// reachable legitimate pages, the TSV's lines), `pages_tsv` (its file name), `seeds` (URLs),
/// `resolve` (`host=ip:port` for geode's `--resolve`), `capsules` (each with `host`, `name`,
/// `ip`, `port`, `kind`, `pages`, `linked_from`, `depth` of its home page from the nearest
/// seed or null, `mirror_of` host or null), `traps` (kind -> hosts) and `addresses` (`ip`,
/// `port`, `dead`, `capsules` on it).
pub fn write_manifest(world: &World, endpoints: &[SocketAddr], path: &Path) -> io::Result<PathBuf> {
    if endpoints.len() != world.addresses() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "{} endpoints for a world of {} addresses",
                endpoints.len(),
                world.addresses()
            ),
        ));
    }
    let tsv = path.with_extension("pages.tsv");
    let mut out = BufWriter::new(std::fs::File::create(&tsv)?);
    let mut count = 0u64;
    for page in world.legit_pages() {
        writeln!(out, "{}\t{}", page.url, page.word)?;
        count += 1;
    }
    out.flush()?;

    let capsules = world.capsules();
    let mut on_address = vec![0usize; world.addresses()];
    for capsule in capsules {
        on_address[capsule.address] += 1;
    }
    let manifest = json!({
        "seed": world.spec().seed,
        "epoch": world.epoch(),
        "capsule_count": capsules.len(),
        "address_count": world.addresses(),
        "legit_pages": count,
        "pages_tsv": tsv.file_name().map(|n| n.to_string_lossy().into_owned()),
        "seeds": world.seeds(),
        "resolve": capsules
            .iter()
            .map(|c| format!("{}={}", c.host, endpoints[c.address]))
            .collect::<Vec<_>>(),
        "capsules": capsules
            .iter()
            .enumerate()
            .map(|(i, c)| json!({
                "host": c.host,
                "name": c.name,
                "ip": endpoints[c.address].ip().to_string(),
                "port": endpoints[c.address].port(),
                "kind": c.kind.name(),
                "pages": c.pages,
                "linked_from": c.linked_from,
                "depth": world.root_depth(i),
                "mirror_of": c.mirror_of.map(|m| capsules[m].host.clone()),
            }))
            .collect::<Vec<_>>(),
        "traps": world
            .hosts_by_kind()
            .into_iter()
            .filter(|(kind, _)| kind.is_trap())
            .map(|(kind, hosts)| (kind.name().to_string(), json!(hosts)))
            .collect::<serde_json::Map<_, _>>(),
        "addresses": endpoints
            .iter()
            .enumerate()
            .map(|(a, e)| json!({
                "ip": e.ip().to_string(),
                "port": e.port(),
                "dead": world.is_dead_address(a),
                "capsules": on_address[a],
            }))
            .collect::<Vec<_>>(),
    });
    let mut out = BufWriter::new(std::fs::File::create(path)?);
    serde_json::to_writer_pretty(&mut out, &manifest)?;
    out.write_all(b"\n")?;
    out.flush()?;
    Ok(tsv)
}
