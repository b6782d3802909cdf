//! URL normalisation: turns any URL geode meets into one canonical form, so that equivalent URLs
//! are stored, fetched and indexed once. Pure functions, no I/O.
//!
//! Rules: lowercase scheme and host, IDNA to punycode, strip a trailing dot from the host, drop
//! the default port (1965 for gemini, 80 for http, 443 for https), an empty path becomes `/`,
//! `.` and `..` resolved, percent-encoding normalised in path and query (unreserved characters
//! decoded, hex digits of the other escapes upper-case, reserved characters such as `%2F` never
//! decoded), an empty query `?` dropped, fragment dropped; URLs with userinfo, gemini/http/https
//! URLs without a host and URLs longer than [`MAX_URL_BYTES`] once normalised are rejected.
//!
//! It is not a fetch policy: URLs of any scheme normalise (a `mailto:` or other URL without a
//! hierarchical part is returned as parsed, minus its fragment) and callers decide with
//! [`is_fetchable`]. It does not guess at relative input either: [`normalize`] accepts only
//! absolute URLs, [`resolve`] is the entry point for links found in pages.
//!
//! Parsing is the WHATWG algorithm of the `url` crate, which treats `gemini://` hosts as opaque:
//! it neither lowercases nor punycodes them. The host is therefore re-parsed here with
//! [`url::Host::parse`], the crate's own domain parser (percent-decoding, IDNA/UTS 46 mapping,
//! lowercasing, IPv4/IPv6 literal recognition), since `url` does not re-export `idna`.

use ::url::{Host, Url};

/// The Gemini request limit: a URL longer than this can never be requested.
pub const MAX_URL_BYTES: usize = 1024;

/// Why a URL cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UrlError {
    #[error("not a valid URL: {0}")]
    Parse(String),
    #[error("URL is {0} bytes long, over the limit of {MAX_URL_BYTES}")]
    TooLong(usize),
    #[error("URL carries userinfo")]
    Userinfo,
    #[error("URL has no host")]
    NoHost,
}

/// Parses and normalises an absolute URL.
///
/// ```
/// use geode::urlnorm::{capsule_key, normalize, UrlError};
///
/// let url = normalize("GEMINI://Example.ORG.:1965/a/./b/../%7euser/?#top").unwrap();
/// assert_eq!(url.as_str(), "gemini://example.org/a/~user/");
/// assert_eq!(capsule_key(&url), "example.org");
/// // Web URLs belong to their origin.
/// assert_eq!(capsule_key(&normalize("https://example.org/x").unwrap()), "https://example.org");
/// // Some URLs cannot be used at all.
/// assert_eq!(normalize("gemini://me@example.org/"), Err(UrlError::Userinfo));
/// assert!(matches!(normalize("/relative/path"), Err(UrlError::Parse(_))));
/// ```
pub fn normalize(input: &str) -> Result<Url, UrlError> {
    let url = Url::parse(input).map_err(|e| UrlError::Parse(e.to_string()))?;
    canonicalize(url)
}

/// Resolves a possibly relative reference against `base` and normalises the result.
///
/// Resolution follows RFC 3986 section 5 as refined by WHATWG: `foo`, `../x`, `/abs`,
/// `//other.host/p`, `?q`, `#frag` and absolute references of any scheme.
pub fn resolve(base: &Url, reference: &str) -> Result<Url, UrlError> {
    let joined = base
        .join(reference)
        .map_err(|e| UrlError::Parse(e.to_string()))?;
    canonicalize(joined)
}

/// The default port of a scheme geode knows (gemini 1965, http 80, https 443).
pub fn default_port(scheme: &str) -> Option<u16> {
    match scheme {
        "gemini" => Some(1965),
        "http" => Some(80),
        "https" => Some(443),
        _ => None,
    }
}

/// Whether `name` (lower case, no trailing dot) is a DNS host name: labels of 1 to 63 letters,
/// digits and hyphens (and underscores, which some hosts use, with `underscore`), 253 bytes in
/// all.
pub fn is_host_name(name: &str, underscore: bool) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || (underscore && b == b'_'))
        })
}

/// Whether geode can fetch URLs of this scheme: gemini, http and https (which of them a crawl
/// follows is its own choice, `--protocols`).
pub fn is_fetchable(url: &Url) -> bool {
    matches!(url.scheme(), "gemini" | "http" | "https") && url.host_str().is_some()
}

/// Whether a URL is of the web (http or https) rather than geminispace.
pub fn is_web(url: &Url) -> bool {
    matches!(url.scheme(), "http" | "https")
}

/// The capsule a URL belongs to: what has one robots.txt and one politeness record. For Gemini
/// it is `host`, or `host:port` when the port is not the default (the keys geode always used);
/// for the web, where robots.txt is per scheme, host and port (RFC 9309), it is the origin:
/// `https://host` or `http://host:8080`.
pub fn capsule_key(url: &Url) -> String {
    let host = url.host_str().unwrap_or("");
    let host_port = match url.port() {
        Some(port) if Some(port) != default_port(url.scheme()) => format!("{host}:{port}"),
        _ => host.to_string(),
    };
    if is_web(url) {
        format!("{}://{host_port}", url.scheme())
    } else {
        host_port
    }
}

/// A capsule key taken apart again: see [`capsule_key`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capsule<'a> {
    /// `gemini`, `http` or `https`.
    pub scheme: &'a str,
    /// The host as the key holds it (an IPv6 literal keeps its brackets).
    pub host: &'a str,
    /// The port, the scheme's default when the key names none.
    pub port: u16,
}

impl<'a> Capsule<'a> {
    /// Reads a key made by [`capsule_key`]. A key without a scheme is a Gemini capsule.
    pub fn parse(key: &'a str) -> Capsule<'a> {
        let (scheme, rest) = match key.split_once("://") {
            Some((scheme @ ("http" | "https"), rest)) => (scheme, rest),
            _ => ("gemini", key),
        };
        let default = default_port(scheme).unwrap_or(1965);
        // The port follows the last colon, unless that colon is inside an IPv6 literal.
        let (host, port) = match rest.rsplit_once(':') {
            Some((host, port))
                if !port.is_empty()
                    && port.bytes().all(|b| b.is_ascii_digit())
                    && (!rest.starts_with('[') || host.ends_with(']')) =>
            {
                (host, port.parse().unwrap_or(default))
            }
            _ => (rest, default),
        };
        Capsule { scheme, host, port }
    }

    /// Whether the capsule is a web origin (http or https).
    pub fn is_web(&self) -> bool {
        self.scheme != "gemini"
    }

    /// The capsule's root URL as text, `gemini://host/` or `https://host:8443/`.
    pub fn root(&self) -> String {
        if Some(self.port) == default_port(self.scheme) {
            format!("{}://{}/", self.scheme, self.host)
        } else {
            format!("{}://{}:{}/", self.scheme, self.host, self.port)
        }
    }

    /// The capsule's robots.txt URL.
    pub fn robots_url(&self) -> String {
        format!("{}robots.txt", self.root())
    }
}

/// Schemes whose URLs are meaningless without a host.
fn requires_host(scheme: &str) -> bool {
    matches!(scheme, "gemini" | "http" | "https")
}

/// Applies every rule to an already parsed URL. Shared by [`normalize`] and [`resolve`] so
/// that both produce byte-identical results for the same resource.
fn canonicalize(mut url: Url) -> Result<Url, UrlError> {
    url.set_fragment(None);

    if url.cannot_be_a_base() {
        // `mailto:x@y`, `data:...`, or `gemini:foo` (no `//`): nothing hierarchical to clean.
        if requires_host(url.scheme()) {
            return Err(UrlError::NoHost);
        }
        return check_length(url);
    }

    if !url.username().is_empty() || url.password().is_some() {
        return Err(UrlError::Userinfo);
    }

    let has_host = match url.host_str() {
        None | Some("") => {
            if requires_host(url.scheme()) {
                return Err(UrlError::NoHost);
            }
            false
        }
        Some(raw) => {
            let host = canonical_host(raw)?;
            if host != raw {
                url.set_host(Some(&host))
                    .map_err(|e| UrlError::Parse(format!("invalid host {host:?}: {e}")))?;
            }
            true
        }
    };

    if url.port().is_some() && url.port() == default_port(url.scheme()) {
        url.set_port(None)
            .map_err(|()| UrlError::Parse("URL cannot carry a port".to_string()))?;
    }

    let path = normalize_escapes(url.path());
    if path.is_empty() && has_host {
        url.set_path("/");
    } else if path != url.path() {
        url.set_path(&path);
    }

    match url.query() {
        None => {}
        Some("") => url.set_query(None),
        Some(query) => {
            let normalized = normalize_escapes(query);
            if normalized != query {
                url.set_query(Some(&normalized));
            }
        }
    }

    check_length(url)
}

fn check_length(url: Url) -> Result<Url, UrlError> {
    let len = url.as_str().len();
    if len > MAX_URL_BYTES {
        return Err(UrlError::TooLong(len));
    }
    Ok(url)
}

/// Lowercase, punycoded host without trailing dots; IP literals in their canonical spelling
/// (IPv6 keeps its brackets).
fn canonical_host(raw: &str) -> Result<String, UrlError> {
    let host =
        Host::parse(raw).map_err(|e| UrlError::Parse(format!("invalid host {raw:?}: {e}")))?;
    match host {
        Host::Domain(domain) => {
            // `example.org.` and `example.org` name the same capsule. All trailing dots go, so
            // that a second pass finds nothing left to strip.
            let trimmed = domain.trim_end_matches('.');
            if trimmed.is_empty() {
                return Err(UrlError::NoHost);
            }
            if trimmed.len() == domain.len() {
                return Ok(domain);
            }
            // Without its dots a name may read as something else: `0..` is a domain, `0` the
            // IPv4 address 0.0.0.0. Parsed again, it reads as a second pass would read it.
            match Host::parse(trimmed) {
                Ok(Host::Domain(again)) => Ok(again),
                Ok(other) => Ok(other.to_string()),
                Err(e) => Err(UrlError::Parse(format!("invalid host {raw:?}: {e}"))),
            }
        }
        other => Ok(other.to_string()),
    }
}

/// RFC 3986 unreserved characters: the only ones whose escapes may be decoded without
/// changing what the URL means.
fn is_unreserved(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~')
}

fn hex_value(byte: u8) -> Option<u8> {
    match byte {
        b'0'..=b'9' => Some(byte - b'0'),
        b'a'..=b'f' => Some(byte - b'a' + 10),
        b'A'..=b'F' => Some(byte - b'A' + 10),
        _ => None,
    }
}

const HEX_UPPER: &[u8; 16] = b"0123456789ABCDEF";

fn push_escape(out: &mut String, byte: u8) {
    out.push('%');
    out.push(char::from(HEX_UPPER[usize::from(byte >> 4)]));
    out.push(char::from(HEX_UPPER[usize::from(byte & 0x0F)]));
}

/// One spelling for percent-encoding: escapes of unreserved characters decoded, other escapes
/// with upper-case hex, non-ASCII bytes escaped. A `%` not followed by two hex digits becomes
/// `%25`: servers that tolerate a stray `%` read it literally, which is what `%25` says, and
/// leaving it bare would let a decoded character complete it into a new escape on the next pass
/// (`%%341` -> `%41` -> `A`), breaking idempotence.
///
/// Also used by the robots.txt matcher so that patterns and paths compare in the same form.
pub(crate) fn normalize_escapes(input: &str) -> String {
    let bytes = input.as_bytes();
    let mut out = String::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let byte = bytes[i];
        if byte == b'%' {
            let hi = bytes.get(i + 1).copied().and_then(hex_value);
            let lo = bytes.get(i + 2).copied().and_then(hex_value);
            if let (Some(hi), Some(lo)) = (hi, lo) {
                let decoded = (hi << 4) | lo;
                if is_unreserved(decoded) {
                    out.push(char::from(decoded));
                } else {
                    push_escape(&mut out, decoded);
                }
                i += 3;
                continue;
            }
            out.push_str("%25");
        } else if byte.is_ascii() {
            out.push(char::from(byte));
        } else {
            push_escape(&mut out, byte);
        }
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn norm(input: &str) -> Result<String, UrlError> {
        normalize(input).map(|u| u.to_string())
    }

    #[test]
    fn normalize_applies_every_rule() {
        let cases: &[(&str, &str)] = &[
            // scheme and host case
            ("GEMINI://EXAMPLE.ORG/Path", "gemini://example.org/Path"),
            ("Gemini://Example.Org/", "gemini://example.org/"),
            ("HTTP://Example.ORG/x", "http://example.org/x"),
            // IDNA
            (
                "gemini://bücher.example/",
                "gemini://xn--bcher-kva.example/",
            ),
            (
                "gemini://BÜCHER.example/",
                "gemini://xn--bcher-kva.example/",
            ),
            (
                "gemini://b%C3%BCcher.example/",
                "gemini://xn--bcher-kva.example/",
            ),
            (
                "gemini://xn--bcher-kva.example/",
                "gemini://xn--bcher-kva.example/",
            ),
            ("gemini://ex%41mple.org/", "gemini://example.org/"),
            ("https://bücher.example/", "https://xn--bcher-kva.example/"),
            // trailing dot
            ("gemini://example.org./", "gemini://example.org/"),
            ("gemini://example.org../a", "gemini://example.org/a"),
            ("gemini://example.org.:1965/", "gemini://example.org/"),
            // default ports dropped, others kept
            ("gemini://example.org:1965/", "gemini://example.org/"),
            ("gemini://example.org:01965/", "gemini://example.org/"),
            ("gemini://example.org:1966/", "gemini://example.org:1966/"),
            ("gemini://example.org:443/", "gemini://example.org:443/"),
            ("gemini://example.org:/x", "gemini://example.org/x"),
            ("http://example.org:80/", "http://example.org/"),
            ("https://example.org:443/", "https://example.org/"),
            ("https://example.org:1965/", "https://example.org:1965/"),
            ("gopher://example.org:70/1/", "gopher://example.org:70/1/"),
            // empty path
            ("gemini://example.org", "gemini://example.org/"),
            ("gemini://example.org?q", "gemini://example.org/?q"),
            ("gemini://example.org#f", "gemini://example.org/"),
            // dot segments
            (
                "gemini://example.org/a/./b/../c",
                "gemini://example.org/a/c",
            ),
            ("gemini://example.org/../../a", "gemini://example.org/a"),
            ("gemini://example.org/a/b/..", "gemini://example.org/a/"),
            ("gemini://example.org/a/.", "gemini://example.org/a/"),
            ("gemini://example.org/a/%2e%2E/b", "gemini://example.org/b"),
            ("gemini://example.org/a/%2E/b", "gemini://example.org/a/b"),
            (
                "gemini://example.org/a/.b/..c",
                "gemini://example.org/a/.b/..c",
            ),
            // percent-encoding: unreserved decoded, others upper-cased, reserved kept
            ("gemini://example.org/%7euser", "gemini://example.org/~user"),
            (
                "gemini://example.org/%41%62%2D%5f%2e%30",
                "gemini://example.org/Ab-_.0",
            ),
            ("gemini://example.org/a%2fb", "gemini://example.org/a%2Fb"),
            ("gemini://example.org/a%3fb", "gemini://example.org/a%3Fb"),
            ("gemini://example.org/a%23b", "gemini://example.org/a%23b"),
            ("gemini://example.org/%c3%bc", "gemini://example.org/%C3%BC"),
            ("gemini://example.org/ü", "gemini://example.org/%C3%BC"),
            ("gemini://example.org/a b", "gemini://example.org/a%20b"),
            ("gemini://example.org/100%", "gemini://example.org/100%25"),
            (
                "gemini://example.org/%zz%4",
                "gemini://example.org/%25zz%254",
            ),
            ("gemini://example.org/%%341", "gemini://example.org/%2541"),
            ("gemini://example.org/s?50%", "gemini://example.org/s?50%25"),
            // query kept and normalised; empty query dropped
            (
                "gemini://example.org/s?hello%20world",
                "gemini://example.org/s?hello%20world",
            ),
            (
                "gemini://example.org/s?%7e%2f%3d",
                "gemini://example.org/s?~%2F%3D",
            ),
            (
                "gemini://example.org/s?a+b&c=d",
                "gemini://example.org/s?a+b&c=d",
            ),
            ("gemini://example.org/s?", "gemini://example.org/s"),
            ("gemini://example.org/s?#frag", "gemini://example.org/s"),
            ("gemini://example.org/s?./..", "gemini://example.org/s?./.."),
            // fragment dropped
            ("gemini://example.org/a#frag", "gemini://example.org/a"),
            ("gemini://example.org/a?q#frag", "gemini://example.org/a?q"),
            // IP literals
            ("gemini://127.0.0.1:1965/", "gemini://127.0.0.1/"),
            ("gemini://127.0.0.1:1966/x", "gemini://127.0.0.1:1966/x"),
            ("gemini://127.0.0.1./", "gemini://127.0.0.1/"),
            ("gemini://[::1]:1965/", "gemini://[::1]/"),
            ("gemini://[::1]:1966/", "gemini://[::1]:1966/"),
            ("gemini://[0:0:0:0:0:0:0:1]/", "gemini://[::1]/"),
            ("gemini://[2001:DB8::A]/", "gemini://[2001:db8::a]/"),
            // leading and trailing blanks are not part of the URL
            ("  gemini://example.org/x \t", "gemini://example.org/x"),
            // other schemes
            ("mailto:someone@example.org", "mailto:someone@example.org"),
            ("mailto:someone@example.org#x", "mailto:someone@example.org"),
            ("gopher://Example.ORG/1/%7e", "gopher://example.org/1/~"),
            ("file:///tmp/a/../b", "file:///tmp/b"),
        ];
        for (input, want) in cases {
            assert_eq!(norm(input).as_deref(), Ok(*want), "input {input:?}");
        }
    }

    #[test]
    fn normalize_rejects() {
        let cases: &[(&str, UrlError)] = &[
            ("gemini://user@example.org/", UrlError::Userinfo),
            ("gemini://user:pw@example.org/", UrlError::Userinfo),
            ("gemini://:pw@example.org/", UrlError::Userinfo),
            ("https://user@example.org/", UrlError::Userinfo),
            ("gemini://", UrlError::NoHost),
            ("gemini:///x", UrlError::NoHost),
            ("gemini:foo", UrlError::NoHost),
            ("gemini://./", UrlError::NoHost),
            ("gemini://.../x", UrlError::NoHost),
        ];
        for (input, want) in cases {
            assert_eq!(norm(input).as_ref(), Err(want), "input {input:?}");
        }
        let parse_errors = [
            "",
            "example.org/a",
            "/relative/path",
            "//example.org/a",
            "gemini://exa mple.org/",
            "gemini://example.org:99999/",
            "gemini://example.org:x/",
            "gemini://[::1/",
            "gemini://[fe80::1%25eth0]/",
            "gemini://%FF.example/",
            "gemini://a<b.example/",
        ];
        for input in parse_errors {
            assert!(
                matches!(norm(input), Err(UrlError::Parse(_))),
                "input {input:?} gave {:?}",
                norm(input)
            );
        }
    }

    /// Found by `fuzz_url_normalisation` (issue 12, item 16): `0%2e%2E` decodes to the domain
    /// `0..`, which lost its dots became `0`; normalising that URL again read `0` as the IPv4
    /// address 0.0.0.0, so normalisation was not idempotent and one capsule had two keys.
    #[test]
    fn hosts_that_are_numbers_without_their_trailing_dots_normalise_once() {
        let cases = [
            ("GEMINI://0%2e%2E#", "gemini://0.0.0.0/"),
            ("gemini://0../", "gemini://0.0.0.0/"),
            ("gemini://127.0.0.1../x", "gemini://127.0.0.1/x"),
            ("gemini://0x7f.1.%2e/", "gemini://127.0.0.1/"),
            ("gemini://1.2.3.4%2E%2E%2E/", "gemini://1.2.3.4/"),
            ("gemini://example.org../", "gemini://example.org/"),
        ];
        for (input, want) in cases {
            let once = norm(input);
            assert_eq!(once.as_deref(), Ok(want), "input {input:?}");
            assert_eq!(norm(want).as_deref(), Ok(want), "again {want:?}");
        }
        let base = normalize("gemini://base.test/a").unwrap();
        let resolved = resolve(&base, "GEMINI://0%2e%2E#").unwrap();
        assert_eq!(resolved.as_str(), "gemini://0.0.0.0/");
    }

    #[test]
    fn equivalent_spellings_map_to_one_url() {
        let groups: &[&[&str]] = &[
            &[
                "gemini://example.org/a/c",
                "gemini://EXAMPLE.org:1965/a/./b/../c#frag",
                "GEMINI://example.org./a/c",
                "gemini://example.org:1965/a/%63",
                "gemini://ex%61mple.org/a/b/../c?",
            ],
            &[
                "gemini://xn--bcher-kva.example/",
                "gemini://bücher.example",
                "gemini://BÜCHER.EXAMPLE.:1965/#top",
            ],
            &[
                "gemini://example.org/caf%C3%A9",
                "gemini://example.org/caf%c3%a9",
                "gemini://example.org/café",
            ],
        ];
        for group in groups {
            let first = norm(group[0]);
            assert!(first.is_ok(), "{:?}", group[0]);
            for spelling in group.iter() {
                assert_eq!(norm(spelling), first, "spelling {spelling:?}");
            }
        }
        // Distinct resources must stay distinct.
        assert_ne!(
            norm("gemini://example.org/a%2Fb"),
            norm("gemini://example.org/a/b")
        );
        assert_ne!(
            norm("gemini://example.org/A"),
            norm("gemini://example.org/a")
        );
        assert_ne!(
            norm("gemini://example.org/s?q=1"),
            norm("gemini://example.org/s?q=2")
        );
        assert_ne!(
            norm("gemini://example.org:1966/"),
            norm("gemini://example.org/")
        );
    }

    #[test]
    fn normalize_is_idempotent() {
        let inputs = [
            "gemini://EXAMPLE.org:1965/a/./b/../c#frag",
            "gemini://bücher.example./x?y%7e%2f",
            "gemini://[::1]:1965/%2e%2e/a",
            "gemini://example.org/100%/%zz",
            "gemini://example.org..",
            "gemini://127.0.0.1.:1966",
            "gemini://example.org/a b/ü?ü ö",
            "gemini://example.org/a\\b",
            "gemini://example.org/%2E%2E%2Fetc",
            "gemini://example.org//double//slash/",
            "http://Example.org:80/%7e?'x'",
            "gopher://example.org:70/0/x",
            "mailto:a@example.org",
            "file:///a/./b",
        ];
        for input in inputs {
            let once = normalize(input).unwrap_or_else(|e| panic!("{input:?}: {e}"));
            let twice = normalize(once.as_str()).map(|u| u.to_string());
            assert_eq!(twice.as_deref(), Ok(once.as_str()), "input {input:?}");
            // WHATWG refuses any relative reference, even "", against `mailto:`-like bases.
            if !once.cannot_be_a_base() {
                let via_resolve = resolve(&once, "").map(|u| u.to_string());
                assert_eq!(via_resolve.as_deref(), Ok(once.as_str()), "input {input:?}");
            }
        }
    }

    #[test]
    fn resolve_rfc3986_examples() {
        // RFC 3986 section 5.4 with `http://a/b/c/d;p?q` turned into a gemini base. Results are
        // the RFC's, normalised: fragments dropped, `//g` gets the `/` path.
        let base = Url::parse("gemini://a/b/c/d;p?q").expect("base");
        let cases: &[(&str, &str)] = &[
            // 5.4.1 normal examples
            ("g:h", "g:h"),
            ("g", "gemini://a/b/c/g"),
            ("./g", "gemini://a/b/c/g"),
            ("g/", "gemini://a/b/c/g/"),
            ("/g", "gemini://a/g"),
            ("//g", "gemini://g/"),
            ("?y", "gemini://a/b/c/d;p?y"),
            ("g?y", "gemini://a/b/c/g?y"),
            ("#s", "gemini://a/b/c/d;p?q"),
            ("g#s", "gemini://a/b/c/g"),
            ("g?y#s", "gemini://a/b/c/g?y"),
            (";x", "gemini://a/b/c/;x"),
            ("g;x", "gemini://a/b/c/g;x"),
            ("g;x?y#s", "gemini://a/b/c/g;x?y"),
            ("", "gemini://a/b/c/d;p?q"),
            (".", "gemini://a/b/c/"),
            ("./", "gemini://a/b/c/"),
            ("..", "gemini://a/b/"),
            ("../", "gemini://a/b/"),
            ("../g", "gemini://a/b/g"),
            ("../..", "gemini://a/"),
            ("../../", "gemini://a/"),
            ("../../g", "gemini://a/g"),
            // 5.4.2 abnormal examples
            ("../../../g", "gemini://a/g"),
            ("../../../../g", "gemini://a/g"),
            ("/./g", "gemini://a/g"),
            ("/../g", "gemini://a/g"),
            ("g.", "gemini://a/b/c/g."),
            (".g", "gemini://a/b/c/.g"),
            ("g..", "gemini://a/b/c/g.."),
            ("..g", "gemini://a/b/c/..g"),
            ("./../g", "gemini://a/b/g"),
            ("./g/.", "gemini://a/b/c/g/"),
            ("g/./h", "gemini://a/b/c/g/h"),
            ("g/../h", "gemini://a/b/c/h"),
            ("g;x=1/./y", "gemini://a/b/c/g;x=1/y"),
            ("g;x=1/../y", "gemini://a/b/c/y"),
            ("g?y/./x", "gemini://a/b/c/g?y/./x"),
            ("g?y/../x", "gemini://a/b/c/g?y/../x"),
            ("g#s/./x", "gemini://a/b/c/g"),
            ("g#s/../x", "gemini://a/b/c/g"),
            // geode additions: other hosts and schemes, and the normalisation of the result
            ("//Other.Host:1965/p", "gemini://other.host/p"),
            ("//other.host", "gemini://other.host/"),
            ("gemini://B.example/x", "gemini://b.example/x"),
            ("https://example.org:443/w", "https://example.org/w"),
            ("mailto:me@example.org", "mailto:me@example.org"),
            ("%7Eme/", "gemini://a/b/c/~me/"),
            ("  g  ", "gemini://a/b/c/g"),
        ];
        for (reference, want) in cases {
            let got = resolve(&base, reference).map(|u| u.to_string());
            assert_eq!(got.as_deref(), Ok(*want), "reference {reference:?}");
        }
    }

    #[test]
    fn resolve_against_directory_and_redirected_base() {
        let dir = Url::parse("gemini://example.org/dir/").expect("base");
        let file = Url::parse("gemini://example.org/dir").expect("base");
        assert_eq!(
            resolve(&dir, "page.gmi").map(|u| u.to_string()).as_deref(),
            Ok("gemini://example.org/dir/page.gmi")
        );
        // Same link, page served at `/dir` without the slash: it resolves one level up.
        assert_eq!(
            resolve(&file, "page.gmi").map(|u| u.to_string()).as_deref(),
            Ok("gemini://example.org/page.gmi")
        );
    }

    #[test]
    fn resolve_rejects() {
        let base = Url::parse("gemini://example.org/a/b").expect("base");
        let cases: &[(&str, UrlError)] = &[
            ("//user@other.org/", UrlError::Userinfo),
            ("gemini://u:p@other.org/", UrlError::Userinfo),
            // WHATWG: a same-scheme reference without `//` is absolute for non-special schemes.
            ("gemini:g", UrlError::NoHost),
            ("gemini://", UrlError::NoHost),
        ];
        for (reference, want) in cases {
            assert_eq!(
                resolve(&base, reference).as_ref().map(|u| u.as_str()),
                Err(want),
                "reference {reference:?}"
            );
        }
        let long = format!("/{}", "x".repeat(2000));
        assert!(matches!(
            resolve(&base, &long),
            Err(UrlError::TooLong(len)) if len == "gemini://example.org".len() + 2001
        ));
        let opaque = Url::parse("mailto:a@example.org").expect("base");
        assert!(matches!(
            resolve(&opaque, "relative"),
            Err(UrlError::Parse(_))
        ));
    }

    #[test]
    fn length_limit_boundary() {
        let prefix = "gemini://example.org/";
        let at_limit = format!("{prefix}{}", "a".repeat(MAX_URL_BYTES - prefix.len()));
        assert_eq!(at_limit.len(), 1024);
        assert_eq!(norm(&at_limit).as_deref(), Ok(at_limit.as_str()));

        let over = format!("{at_limit}a");
        assert_eq!(over.len(), 1025);
        assert_eq!(norm(&over), Err(UrlError::TooLong(1025)));

        // The limit applies after normalisation: removable parts do not count...
        let with_port_and_fragment = format!(
            "gemini://example.org:1965/{}#frag",
            &at_limit[prefix.len()..]
        );
        assert!(with_port_and_fragment.len() > 1024);
        assert_eq!(
            norm(&with_port_and_fragment).as_deref(),
            Ok(at_limit.as_str())
        );
        // ...and escapes that normalisation expands do.
        let expanding = format!("{prefix}{}ü", "a".repeat(MAX_URL_BYTES - prefix.len() - 2));
        assert_eq!(expanding.len(), 1024);
        assert_eq!(norm(&expanding), Err(UrlError::TooLong(1028)));
    }

    #[test]
    fn odd_input_never_panics() {
        let long_dots = format!("gemini://example.org/{}", "../".repeat(5000));
        let long_host = format!("gemini://{}.org/", "a".repeat(5000));
        let long_escapes = format!("gemini://example.org/{}", "%".repeat(3000));
        let inputs: Vec<String> = [
            "",
            " ",
            "\0",
            "\u{7f}\u{1}\u{2}",
            "gemini://",
            "gemini:///x",
            "gemini:",
            "gemini:/",
            "gemini:?",
            "gemini://:",
            "gemini://:1965",
            "gemini://@",
            "gemini://[",
            "gemini://[]/",
            "gemini://%",
            "gemini://%%/",
            "gemini://\u{feff}example.org/",
            "gemini://exa\nmple.org/\r\n",
            "gemini://example.org/\0",
            "gemini://💩.example/💩?💩#💩",
            "gemini://xn--/",
            "gemini://xn--zz/",
            "://",
            "?",
            "#",
            "%",
            "\\\\host\\share",
            "data:text/plain,hi",
            "javascript:alert(1)",
        ]
        .iter()
        .map(|s| s.to_string())
        .chain([long_dots, long_host, long_escapes, "x".repeat(100_000)])
        .collect();
        let base = Url::parse("gemini://example.org/a/").expect("base");
        for input in &inputs {
            // Any Ok result must itself be a fixed point: odd input cannot sneak past the rules.
            if let Ok(url) = normalize(input) {
                assert_eq!(
                    normalize(url.as_str()).as_ref(),
                    Ok(&url),
                    "input {input:?}"
                );
                assert!(url.as_str().len() <= MAX_URL_BYTES);
                assert!(url.fragment().is_none());
            }
            if let Ok(url) = resolve(&base, input) {
                assert!(url.as_str().len() <= MAX_URL_BYTES);
                assert!(url.fragment().is_none());
            }
        }
        // The long `../` run collapses to the root instead of failing the length limit.
        assert_eq!(
            norm(&format!("gemini://example.org/{}x", "../".repeat(5000))).as_deref(),
            Ok("gemini://example.org/x")
        );
    }

    #[test]
    fn normalize_escapes_table() {
        let cases: &[(&str, &str)] = &[
            ("", ""),
            ("/plain", "/plain"),
            ("%7e%7E", "~~"),
            ("%2f%2F", "%2F%2F"),
            ("%3f", "%3F"),
            ("%2a", "%2A"),
            ("%c3%a9", "%C3%A9"),
            ("é", "%C3%A9"),
            ("%", "%25"),
            ("%4", "%254"),
            ("%g1", "%25g1"),
            ("a%", "a%25"),
            ("%%41", "%25A"),
            ("%25", "%25"),
        ];
        for (input, want) in cases {
            assert_eq!(normalize_escapes(input), *want, "input {input:?}");
        }
    }

    #[test]
    fn capsule_key_and_fetchable() {
        let cases: &[(&str, &str, bool)] = &[
            ("gemini://Example.org:1965/a", "example.org", true),
            ("gemini://example.org:1966/a", "example.org:1966", true),
            ("gemini://[::1]:1965/", "[::1]", true),
            ("gemini://[::1]:1966/", "[::1]:1966", true),
            ("https://example.org/", "https://example.org", true),
            ("https://example.org:443/x", "https://example.org", true),
            ("http://example.org:8080/x", "http://example.org:8080", true),
            ("http://[::1]:80/", "http://[::1]", true),
            ("mailto:a@example.org", "", false),
            ("ftp://example.org/", "example.org", false),
        ];
        for (input, key, fetchable) in cases {
            let url = normalize(input).unwrap_or_else(|e| panic!("{input:?}: {e}"));
            assert_eq!(capsule_key(&url), *key, "input {input:?}");
            assert_eq!(is_fetchable(&url), *fetchable, "input {input:?}");
        }
    }

    #[test]
    fn capsule_keys_read_back_into_roots_and_robots_urls() {
        let cases: &[(&str, &str, &str, u16, &str)] = &[
            (
                "example.org",
                "gemini",
                "example.org",
                1965,
                "gemini://example.org/",
            ),
            (
                "example.org:1966",
                "gemini",
                "example.org",
                1966,
                "gemini://example.org:1966/",
            ),
            ("[::1]", "gemini", "[::1]", 1965, "gemini://[::1]/"),
            ("[::1]:7", "gemini", "[::1]", 7, "gemini://[::1]:7/"),
            (
                "https://example.org",
                "https",
                "example.org",
                443,
                "https://example.org/",
            ),
            (
                "http://127.0.1.2:8080",
                "http",
                "127.0.1.2",
                8080,
                "http://127.0.1.2:8080/",
            ),
            ("http://[::1]", "http", "[::1]", 80, "http://[::1]/"),
        ];
        for (key, scheme, host, port, root) in cases {
            let capsule = Capsule::parse(key);
            assert_eq!(
                (capsule.scheme, capsule.host, capsule.port),
                (*scheme, *host, *port),
                "{key}"
            );
            assert_eq!(capsule.root(), *root, "{key}");
            assert_eq!(capsule.robots_url(), format!("{root}robots.txt"));
            assert_eq!(capsule.is_web(), *scheme != "gemini");
            // The root's own key is the key again.
            assert_eq!(capsule_key(&normalize(root).unwrap()), *key);
        }
    }
}
