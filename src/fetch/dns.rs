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

/// Longest host name: DNS allows 253 characters (in the ASCII form), 63 per label.
const MAX_HOST_NAME: usize = 253;
const MAX_LABEL: usize = 63;

/// Parses the `ADDR` of `--resolve HOST=ADDR`: an IP address, optionally with a port
/// (`127.0.0.1`, `127.0.0.1:1966`, `::1`, `[::1]`, `[::1]:1966`). Brackets must pair up and
/// enclose an IPv6 address; port 0 is refused (nothing can be connected to on it). The error
/// says what is wrong, for the command line.
pub fn parse_target(s: &str) -> Result<Target, String> {
    const EXPECTED: &str = "an IP address (IPv4 or IPv6), optionally with :PORT";
    let s = s.trim();
    let shown = || s.chars().take(60).collect::<String>();
    let bad = || format!("{:?} is not {EXPECTED}", shown());
    // Anything longer is no address; do not echo or parse kilobytes of it.
    if s.len() > 64 {
        return Err(format!("{:?}... is not {EXPECTED}", shown()));
    }
    let (ip, port) = if let Some(inner) = s.strip_prefix('[') {
        let (ip, after) = inner
            .split_once(']')
            .ok_or_else(|| format!("{:?}: unbalanced [ (write [IPv6]:PORT)", shown()))?;
        let ip: std::net::Ipv6Addr = ip
            .parse()
            .map_err(|_| format!("{:?}: only an IPv6 address goes in brackets", shown()))?;
        let port = match after {
            "" => None,
            _ => Some(
                after
                    .strip_prefix(':')
                    .and_then(parse_port)
                    .ok_or_else(bad)?,
            ),
        };
        (IpAddr::V6(ip), port)
    } else if s.contains(['[', ']']) {
        return Err(format!("{:?}: unbalanced ] (write [IPv6]:PORT)", shown()));
    } else if let Ok(ip) = s.parse::<IpAddr>() {
        (ip, None)
    } else {
        // IPv4:PORT (a bare IPv6 address with a port would be ambiguous: it takes brackets).
        let (ip, port) = s.rsplit_once(':').ok_or_else(bad)?;
        let ip: std::net::Ipv4Addr = ip.parse().map_err(|_| bad())?;
        (IpAddr::V4(ip), Some(parse_port(port).ok_or_else(bad)?))
    };
    if port == Some(0) {
        return Err(format!(
            "{:?}: port 0 cannot be connected to (give a port from 1 to 65535, or none)",
            shown()
        ));
    }
    Ok(Target { ip, port })
}

/// Decimal digits only (`u16::from_str` also takes a leading `+`).
fn parse_port(s: &str) -> Option<u16> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// Checks the `HOST` of `--resolve HOST=ADDR` and returns it as URLs hold it: an IP literal, or
/// a domain name in lower-case ASCII (an international name in its punycode form), without a
/// trailing dot. Refuses what no URL can hold: empty names, blanks and control characters,
/// names over 253 characters or with a label over 63.
pub fn parse_override_host(s: &str) -> Result<String, String> {
    let shown = || s.chars().take(60).collect::<String>();
    let trimmed = s.trim().trim_end_matches('.');
    if trimmed.is_empty() {
        return Err("no host name before =".to_string());
    }
    // The url crate's host parser drops some characters silently; refuse them here instead.
    if trimmed.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Err(format!(
            "{:?}: a host name cannot hold blanks or control characters",
            shown()
        ));
    }
    // Checked before parsing, so a huge argument costs nothing.
    if trimmed.len() > 4 * MAX_HOST_NAME {
        return Err(format!(
            "{:?}...: a host name has at most {MAX_HOST_NAME} characters",
            shown()
        ));
    }
    let host = match url::Host::parse(trimmed) {
        Ok(url::Host::Domain(d)) => d.to_ascii_lowercase(),
        Ok(url::Host::Ipv4(ip)) => ip.to_string(),
        Ok(url::Host::Ipv6(ip)) => format!("[{ip}]"),
        Err(e) => return Err(format!("{:?} is not a host name: {e}", shown())),
    };
    if host.len() > MAX_HOST_NAME {
        return Err(format!(
            "{:?}...: a host name has at most {MAX_HOST_NAME} characters",
            shown()
        ));
    }
    if host.starts_with('[') {
        return Ok(host);
    }
    if host
        .split('.')
        .any(|label| label.is_empty() || label.len() > MAX_LABEL)
    {
        return Err(format!(
            "{:?}: every label of a host name has 1 to {MAX_LABEL} characters",
            shown()
        ));
    }
    Ok(host)
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
        // Input, and the address and port it gives (`None`: refused).
        type Case = (&'static str, Option<(&'static str, Option<u16>)>);
        let cases: &[Case] = &[
            ("127.0.1.1", Some(("127.0.1.1", None))),
            (" 127.0.1.1 ", Some(("127.0.1.1", None))),
            ("127.0.1.1:40000", Some(("127.0.1.1", Some(40000)))),
            ("::1", Some(("::1", None))),
            ("[::1]", Some(("::1", None))),
            ("[::1]:1966", Some(("::1", Some(1966)))),
            ("[::ffff:127.0.0.1]:1", Some(("::ffff:127.0.0.1", Some(1)))),
            ("localhost", None),
            ("1.2.3.4:99999", None),
            ("", None),
        ];
        for (input, want) in cases {
            let got = parse_target(input).ok();
            let want = want.map(|(a, port)| Target { ip: ip(a), port });
            assert_eq!(got, want, "{input:?}");
        }
    }

    /// Issue 12, item 14: these were accepted, and the crawl then connected to port 0 or to
    /// whatever the brackets happened to leave.
    #[test]
    fn resolve_inputs_are_refused_with_a_reason() {
        let refused: &[(&str, &str)] = &[
            ("127.0.0.1:0", "port 0"),
            ("[::1]:0", "port 0"),
            ("[::1", "unbalanced ["),
            ("::1]", "unbalanced ]"),
            ("[::1]]", "not an IP"),
            ("[[::1]", "IPv6 address goes in brackets"),
            ("[127.0.0.1]", "IPv6 address goes in brackets"),
            ("[::1]1966", "not an IP"),
            ("127.0.0.1:+80", "not an IP"),
            ("127.0.0.1:", "not an IP"),
            ("::1:1966x", "not an IP"),
        ];
        for (input, why) in refused {
            match parse_target(input) {
                Ok(t) => panic!("{input:?} accepted as {t:?}"),
                Err(e) => assert!(e.contains(why), "{input:?}: {e}"),
            }
        }
        let long = "1".repeat(5000);
        assert!(parse_target(&long).unwrap_err().len() < 200);

        let hosts: &[(&str, Result<&str, &str>)] = &[
            ("Example.ORG.", Ok("example.org")),
            ("alpha.test", Ok("alpha.test")),
            ("café.test", Ok("xn--caf-dma.test")),
            ("127.0.0.1", Ok("127.0.0.1")),
            ("[::1]", Ok("[::1]")),
            ("", Err("no host name")),
            (".", Err("no host name")),
            ("a b", Err("blanks or control")),
            ("a\u{7}b", Err("blanks or control")),
            ("a\nb", Err("blanks or control")),
            ("a..b", Err("1 to 63")),
            ("a/b", Err("not a host name")),
            ("[::1", Err("not a host name")),
        ];
        for (input, want) in hosts {
            let got = parse_override_host(input);
            match (want, &got) {
                (Ok(w), Ok(g)) => assert_eq!(g, w, "{input:?}"),
                (Err(why), Err(e)) => assert!(e.contains(why), "{input:?}: {e}"),
                _ => panic!("{input:?}: {got:?}, wanted {want:?}"),
            }
        }
        let long_label = format!("{}.test", "a".repeat(64));
        assert!(parse_override_host(&long_label).is_err());
        let long_name = vec!["a".repeat(60); 5].join(".");
        assert!(
            parse_override_host(&long_name).is_err(),
            "{}",
            long_name.len()
        );
        let huge = "a".repeat(5000);
        let e = parse_override_host(&huge).unwrap_err();
        assert!(e.len() < 200, "{e}");
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
