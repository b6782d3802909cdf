//! Name resolution for the crawl, with `--resolve` overrides (like curl's) so that tests and demos
//! can put capsules on loopback addresses, optionally on another port (so test servers can bind
//! port 0). The cache lives in the crawl loop; this is one lookup.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};

/// Where an overridden host name goes: an address, and a port that replaces the URL's if given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Target {
    pub ip: IpAddr,
    pub port: Option<u16>,
}

/// Host name overrides: a name listed here never reaches the system resolver.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    map: HashMap<String, Target>,
}

impl Overrides {
    pub fn new(pairs: impl IntoIterator<Item = (String, Target)>) -> Self {
        Overrides {
            map: pairs
                .into_iter()
                .map(|(h, t)| (h.trim_end_matches('.').to_ascii_lowercase(), t))
                .collect(),
        }
    }

    pub fn get(&self, host: &str) -> Option<Target> {
        self.map.get(&host.to_ascii_lowercase()).copied()
    }
}

/// Parses the `ADDR` of `--resolve HOST=ADDR`: an IP address, optionally with a port
/// (`127.0.0.1`, `127.0.0.1:1966`, `::1`, `[::1]:1966`).
pub fn parse_target(s: &str) -> Option<Target> {
    let s = s.trim();
    if let Ok(ip) = s
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse::<IpAddr>()
    {
        return Some(Target { ip, port: None });
    }
    s.parse::<SocketAddr>().ok().map(|sa| Target {
        ip: sa.ip(),
        port: Some(sa.port()),
    })
}

/// Resolves `host` to socket addresses on `port`. IP literals (with or without brackets) resolve
/// to themselves; names listed in `overrides` resolve to the override only.
pub async fn resolve(
    host: &str,
    port: u16,
    overrides: &Overrides,
) -> Result<Vec<SocketAddr>, super::FetchError> {
    if let Some(target) = overrides.get(host) {
        return Ok(vec![SocketAddr::new(
            target.ip,
            target.port.unwrap_or(port),
        )]);
    }
    let literal = host.trim_start_matches('[').trim_end_matches(']');
    if let Ok(ip) = literal.parse::<IpAddr>() {
        return Ok(vec![SocketAddr::new(ip, port)]);
    }
    match tokio::net::lookup_host((host, port)).await {
        Ok(addrs) => {
            let addrs: Vec<SocketAddr> = addrs.collect();
            if addrs.is_empty() {
                Err(super::FetchError::Unresolved(host.to_string()))
            } else {
                Ok(addrs)
            }
        }
        Err(_) => Err(super::FetchError::Unresolved(host.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_parse() {
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        assert_eq!(
            parse_target("127.0.1.1"),
            Some(Target {
                ip: ip("127.0.1.1"),
                port: None
            })
        );
        assert_eq!(
            parse_target("127.0.1.1:40000"),
            Some(Target {
                ip: ip("127.0.1.1"),
                port: Some(40000)
            })
        );
        assert_eq!(
            parse_target("::1"),
            Some(Target {
                ip: ip("::1"),
                port: None
            })
        );
        assert_eq!(
            parse_target("[::1]"),
            Some(Target {
                ip: ip("::1"),
                port: None
            })
        );
        assert_eq!(
            parse_target("[::1]:1966"),
            Some(Target {
                ip: ip("::1"),
                port: Some(1966)
            })
        );
        assert_eq!(parse_target("localhost"), None);
        assert_eq!(parse_target("1.2.3.4:99999"), None);
    }

    #[tokio::test]
    async fn overrides_win_and_literals_resolve_to_themselves() {
        let o = Overrides::new([(
            "A.test.".to_string(),
            parse_target("127.0.1.9:1234").unwrap(),
        )]);
        let got = resolve("a.test", 1965, &o).await.unwrap();
        assert_eq!(got, vec!["127.0.1.9:1234".parse().unwrap()]);
        let got = resolve("[::1]", 1965, &o).await.unwrap();
        assert_eq!(got, vec!["[::1]:1965".parse().unwrap()]);
    }
}
