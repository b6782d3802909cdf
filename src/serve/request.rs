//! Gemini request lines for `geode serve`: from the bytes a client sent to a typed [`Request`]
//! naming a route, or a [`Reject`] carrying the status code and message to answer with.
//!
//! Pure: no I/O, no clock, no index. The connection code in `serve/mod.rs` reads the bytes into a
//! fixed buffer and hands the outcome here; what a route shows is `pages.rs`'s business.
//!
//! The rules, in the order they are checked: a request over 1024 bytes, without CRLF, not UTF-8,
//! with control characters or outer blanks, not an absolute URL, with userinfo or a fragment is
//! malformed (59); a scheme other than `gemini`, or a host or port this server does not answer
//! for, is refused (53); a path with no route is not found (51). The query is percent-decoded
//! and must be UTF-8 after decoding (59 otherwise).

use std::fmt;

use url::{Host, Url};

/// Longest request URL in bytes (the CRLF comes on top).
pub const MAX_REQUEST: usize = 1024;

/// Results per page of `/search`.
pub const PAGE_SIZE: usize = 10;

/// Deepest results page served: paging beyond the first thousand results is a crawler, not a
/// person, and deep offsets cost the index more for each page.
pub const MAX_PAGE: usize = 100;

/// What the bytes read from a connection looked like.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing<'a> {
    /// A line that ended in CRLF (the CRLF removed).
    Line(&'a [u8]),
    /// The buffer filled up without a line end.
    TooLong,
    /// The client stopped sending (closed, or a bare LF) before CRLF.
    Unterminated,
    /// The time limit ran out before a line arrived.
    TimedOut,
}

/// Which host and ports this server answers for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Authority {
    host: ServedHost,
    /// Ports accepted besides an absent one (1965, the default): the default itself, and the
    /// port the connection arrived on.
    ports: Vec<u16>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum ServedHost {
    /// Lower case, without a trailing dot.
    Name(String),
    Ip(std::net::IpAddr),
}

impl Authority {
    /// `hostname` as given to `--hostname` (a domain name or an IP address); `local_port` is the
    /// port the connection came in on.
    pub fn new(hostname: &str, local_port: u16) -> Authority {
        let trimmed = hostname.trim_end_matches('.');
        let host = match trimmed
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse()
        {
            Ok(ip) => ServedHost::Ip(ip),
            Err(_) => ServedHost::Name(trimmed.to_ascii_lowercase()),
        };
        let mut ports = vec![1965];
        if local_port != 1965 {
            ports.push(local_port);
        }
        Authority { host, ports }
    }

    fn serves(&self, url: &Url) -> bool {
        let host_ok = match (&self.host, url.host()) {
            (ServedHost::Name(name), Some(Host::Domain(d))) => {
                d.trim_end_matches('.').eq_ignore_ascii_case(name)
            }
            (ServedHost::Ip(ip), Some(Host::Ipv4(v4))) => *ip == std::net::IpAddr::V4(v4),
            (ServedHost::Ip(ip), Some(Host::Ipv6(v6))) => *ip == std::net::IpAddr::V6(v6),
            // An IPv4 literal in a gemini:// URL (a non-special scheme) parses as a domain.
            (ServedHost::Ip(ip), Some(Host::Domain(d))) => d.parse() == Ok(*ip),
            _ => false,
        };
        host_ok && url.port().map_or(true, |p| self.ports.contains(&p))
    }
}

/// A valid request for one of our routes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub route: Route,
}

/// What a request asks for. A `None` query on a route that needs one means: prompt for it (10).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    Home,
    /// `/search[/N][?QUERY]`, `page` counted from 1.
    Search {
        query: Option<String>,
        page: usize,
    },
    /// `/v/search[/N][?QUERY]`: scores and crawl times.
    VerboseSearch {
        query: Option<String>,
        page: usize,
    },
    /// `/backlinks[?URL]`.
    Backlinks {
        url: Option<String>,
    },
    KnownHosts,
    Stats,
    About,
    /// `/add-seed[?URL]`: a visitor suggests a capsule for the next crawl.
    AddSeed {
        url: Option<String>,
    },
    /// `/robots.txt`: keeps other crawlers out of result pages.
    Robots,
}

/// Why a request is refused, with the status it earns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reject {
    TooLong,
    NoCrlf,
    Timeout,
    NotUtf8,
    /// Empty, control characters, leading or trailing blanks.
    Malformed,
    NotAbsolute,
    Userinfo,
    Fragment,
    QueryNotUtf8,
    OtherScheme,
    OtherHost,
    NotFound,
}

impl Reject {
    pub fn status(self) -> u8 {
        match self {
            Reject::OtherScheme | Reject::OtherHost => 53,
            Reject::NotFound => 51,
            _ => 59,
        }
    }

    pub fn message(self) -> &'static str {
        match self {
            Reject::TooLong => "Request too long (the URL may have at most 1024 bytes)",
            Reject::NoCrlf => "Request must end with CRLF",
            Reject::Timeout => "Request timeout",
            Reject::NotUtf8 => "Request is not UTF-8",
            Reject::Malformed => "Malformed request",
            Reject::NotAbsolute => "Request is not an absolute URL",
            Reject::Userinfo => "Userinfo is not allowed in requests",
            Reject::Fragment => "Fragments are not allowed in requests",
            Reject::QueryNotUtf8 => "The query is not UTF-8 once percent-decoded",
            Reject::OtherScheme => "Only gemini:// URLs are served here",
            Reject::OtherHost => "This server does not serve that host or port",
            Reject::NotFound => "Not found",
        }
    }
}

impl fmt::Display for Reject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.status(), self.message())
    }
}

/// Checks a request as read from the wire against the host and ports served.
pub fn parse(framing: Framing<'_>, authority: &Authority) -> Result<Request, Reject> {
    let line = match framing {
        Framing::Line(line) => line,
        Framing::TooLong => return Err(Reject::TooLong),
        Framing::Unterminated => return Err(Reject::NoCrlf),
        Framing::TimedOut => return Err(Reject::Timeout),
    };
    if line.len() > MAX_REQUEST {
        return Err(Reject::TooLong);
    }
    let text = std::str::from_utf8(line).map_err(|_| Reject::NotUtf8)?;
    // The url crate silently trims outer blanks and drops tabs and newlines anywhere; a request
    // carrying them is malformed rather than something to guess at.
    if text.is_empty()
        || text.starts_with([' ', '\u{feff}'])
        || text.ends_with(' ')
        || text.chars().any(char::is_control)
    {
        return Err(Reject::Malformed);
    }
    let url = Url::parse(text).map_err(|_| Reject::NotAbsolute)?;
    if !url.username().is_empty() || url.password().is_some() {
        return Err(Reject::Userinfo);
    }
    if url.fragment().is_some() {
        return Err(Reject::Fragment);
    }
    if url.scheme() != "gemini" {
        return Err(Reject::OtherScheme);
    }
    if !authority.serves(&url) {
        return Err(Reject::OtherHost);
    }
    let query = match url.query() {
        // `/search?` (an empty query) prompts again, as no query does.
        None | Some("") => None,
        Some(raw) => Some(
            String::from_utf8(percent_decode(raw.as_bytes())).map_err(|_| Reject::QueryNotUtf8)?,
        ),
    };
    let route = route(url.path(), query)?;
    Ok(Request { route })
}

fn route(path: &str, query: Option<String>) -> Result<Route, Reject> {
    let path = if path.is_empty() { "/" } else { path };
    let simple = match path {
        "/" => Some(Route::Home),
        "/known-hosts" => Some(Route::KnownHosts),
        "/stats" => Some(Route::Stats),
        "/about" => Some(Route::About),
        "/robots.txt" => Some(Route::Robots),
        "/backlinks" => Some(Route::Backlinks { url: query.clone() }),
        "/add-seed" => Some(Route::AddSeed { url: query.clone() }),
        _ => None,
    };
    if let Some(route) = simple {
        return Ok(route);
    }
    if let Some(rest) = path.strip_prefix("/v/search") {
        let page = page_number(rest)?;
        return Ok(Route::VerboseSearch { query, page });
    }
    if let Some(rest) = path.strip_prefix("/search") {
        let page = page_number(rest)?;
        return Ok(Route::Search { query, page });
    }
    Err(Reject::NotFound)
}

/// `""` is page 1, `"/N"` page N for N in 1..=[`MAX_PAGE`]; anything else has no route.
fn page_number(rest: &str) -> Result<usize, Reject> {
    if rest.is_empty() {
        return Ok(1);
    }
    let digits = rest.strip_prefix('/').ok_or(Reject::NotFound)?;
    if digits.is_empty() || digits.len() > 4 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(Reject::NotFound);
    }
    match digits.parse::<usize>() {
        Ok(n) if (1..=MAX_PAGE).contains(&n) => Ok(n),
        _ => Err(Reject::NotFound),
    }
}

/// Decodes `%XX` escapes. A `%` not followed by two hex digits stays as it is; `+` stays a plus
/// (Gemini queries are not form-encoded).
pub fn percent_decode(raw: &[u8]) -> Vec<u8> {
    percent_encoding::percent_decode(raw).collect()
}

/// Percent-encodes a query for a link: blanks, control characters, non-ASCII and the characters
/// that end or confuse a URL (`%`, `#`, quotes, angle brackets and friends) become `%XX`; the rest
/// of printable ASCII stays, so links stay short and readable (`/search?site:a.test`). The
/// result holds no blank and no line break.
pub fn percent_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        let keep = b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:@/?".contains(&b);
        if keep {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn served() -> Authority {
        Authority::new("Geode.Example", 40000)
    }

    fn check(line: &str) -> Result<Route, Reject> {
        parse(Framing::Line(line.as_bytes()), &served()).map(|r| r.route)
    }

    fn search(query: Option<&str>, page: usize) -> Result<Route, Reject> {
        Ok(Route::Search {
            query: query.map(str::to_string),
            page,
        })
    }

    #[test]
    fn routes_and_queries() {
        let cases: &[(&str, Result<Route, Reject>)] = &[
            ("gemini://geode.example/", Ok(Route::Home)),
            ("gemini://geode.example", Ok(Route::Home)),
            ("gemini://GEODE.example./", Ok(Route::Home)),
            ("gemini://geode.example:1965/", Ok(Route::Home)),
            ("gemini://geode.example:40000/", Ok(Route::Home)),
            ("gemini://geode.example/stats", Ok(Route::Stats)),
            ("gemini://geode.example/stats?x", Ok(Route::Stats)),
            ("gemini://geode.example/known-hosts", Ok(Route::KnownHosts)),
            ("gemini://geode.example/about", Ok(Route::About)),
            ("gemini://geode.example/robots.txt", Ok(Route::Robots)),
            ("gemini://geode.example/search", search(None, 1)),
            ("gemini://geode.example/search?", search(None, 1)),
            (
                "gemini://geode.example/search?kettle",
                search(Some("kettle"), 1),
            ),
            (
                "gemini://geode.example/search?quiet%20kettle",
                search(Some("quiet kettle"), 1),
            ),
            // `+` is a plus; bad escapes stay literal; UTF-8 escapes decode.
            ("gemini://geode.example/search?a+b", search(Some("a+b"), 1)),
            (
                "gemini://geode.example/search?100%",
                search(Some("100%"), 1),
            ),
            ("gemini://geode.example/search?%zz", search(Some("%zz"), 1)),
            (
                "gemini://geode.example/search?caf%C3%A9",
                search(Some("café"), 1),
            ),
            // An injected line break is just text here; the renderer keeps it off new lines.
            (
                "gemini://geode.example/search?%0A=%3E%20gemini://evil/",
                search(Some("\n=> gemini://evil/"), 1),
            ),
            (
                "gemini://geode.example/search/2?kettle",
                search(Some("kettle"), 2),
            ),
            (
                "gemini://geode.example/search/100?k",
                search(Some("k"), 100),
            ),
            ("gemini://geode.example/search/3", search(None, 3)),
            (
                "gemini://geode.example/v/search/2?k",
                Ok(Route::VerboseSearch {
                    query: Some("k".into()),
                    page: 2,
                }),
            ),
            (
                "gemini://geode.example/backlinks?gemini://a.test/",
                Ok(Route::Backlinks {
                    url: Some("gemini://a.test/".into()),
                }),
            ),
            (
                "gemini://geode.example/backlinks",
                Ok(Route::Backlinks { url: None }),
            ),
            // Unknown paths and bad page numbers.
            ("gemini://geode.example/nope", Err(Reject::NotFound)),
            ("gemini://geode.example/stats/", Err(Reject::NotFound)),
            ("gemini://geode.example/searching", Err(Reject::NotFound)),
            ("gemini://geode.example/search/", Err(Reject::NotFound)),
            ("gemini://geode.example/search/0?k", Err(Reject::NotFound)),
            ("gemini://geode.example/search/101?k", Err(Reject::NotFound)),
            ("gemini://geode.example/search/-1?k", Err(Reject::NotFound)),
            ("gemini://geode.example/search/1x?k", Err(Reject::NotFound)),
            (
                "gemini://geode.example/search/99999999999999999999?k",
                Err(Reject::NotFound),
            ),
            // Other hosts, ports, schemes.
            ("gemini://other.example/", Err(Reject::OtherHost)),
            ("gemini://geode.example.evil/", Err(Reject::OtherHost)),
            ("gemini://geode.example:1966/", Err(Reject::OtherHost)),
            ("gemini://127.0.0.1/", Err(Reject::OtherHost)),
            ("https://geode.example/", Err(Reject::OtherScheme)),
            ("gopher://geode.example/", Err(Reject::OtherScheme)),
            // Malformed.
            ("gemini://user@geode.example/", Err(Reject::Userinfo)),
            ("gemini://u:p@geode.example/", Err(Reject::Userinfo)),
            ("gemini://geode.example/#top", Err(Reject::Fragment)),
            ("/search?x", Err(Reject::NotAbsolute)),
            ("geode.example/", Err(Reject::NotAbsolute)),
            ("", Err(Reject::Malformed)),
            (" gemini://geode.example/", Err(Reject::Malformed)),
            ("gemini://geode.example/ ", Err(Reject::Malformed)),
            ("gemini://geode.example/\tx", Err(Reject::Malformed)),
            (
                "gemini://geode.example/search?%FF",
                Err(Reject::QueryNotUtf8),
            ),
        ];
        for (line, want) in cases {
            assert_eq!(&check(line), want, "{line:?}");
        }
    }

    #[test]
    fn framing_and_size_limits() {
        let a = served();
        assert_eq!(parse(Framing::TooLong, &a), Err(Reject::TooLong));
        assert_eq!(parse(Framing::Unterminated, &a), Err(Reject::NoCrlf));
        assert_eq!(parse(Framing::TimedOut, &a), Err(Reject::Timeout));
        let prefix = "gemini://geode.example/search?";
        let fits = format!("{prefix}{}", "a".repeat(MAX_REQUEST - prefix.len()));
        assert_eq!(fits.len(), MAX_REQUEST);
        assert!(parse(Framing::Line(fits.as_bytes()), &a).is_ok());
        let over = format!("{fits}a");
        assert_eq!(
            parse(Framing::Line(over.as_bytes()), &a),
            Err(Reject::TooLong)
        );
        assert_eq!(
            parse(Framing::Line(b"gemini://geode.example/\xff"), &a),
            Err(Reject::NotUtf8)
        );
    }

    #[test]
    fn statuses_follow_the_spec() {
        assert_eq!(Reject::TooLong.status(), 59);
        assert_eq!(Reject::Userinfo.status(), 59);
        assert_eq!(Reject::QueryNotUtf8.status(), 59);
        assert_eq!(Reject::OtherHost.status(), 53);
        assert_eq!(Reject::OtherScheme.status(), 53);
        assert_eq!(Reject::NotFound.status(), 51);
        assert_eq!(Reject::OtherHost.to_string().get(..3), Some("53 "));
    }

    #[test]
    fn ip_literal_hosts() {
        let v4 = Authority::new("127.0.0.1", 1965);
        let v6 = Authority::new("::1", 1965);
        let ok = |a: &Authority, l: &str| parse(Framing::Line(l.as_bytes()), a).is_ok();
        assert!(ok(&v4, "gemini://127.0.0.1/"));
        assert!(!ok(&v4, "gemini://127.0.0.2/"));
        assert!(ok(&v6, "gemini://[::1]/"));
        assert!(ok(&v6, "gemini://[0:0::1]:1965/"));
        assert!(!ok(&v6, "gemini://127.0.0.1/"));
        // Only the default port when listening on it.
        assert!(!ok(&v4, "gemini://127.0.0.1:40000/"));
    }

    #[test]
    fn percent_round_trip() {
        let cases = [
            "kettle",
            "quiet kettle",
            "\"a phrase\" -not",
            "café 日本",
            "\n=> x",
            "100% +a",
        ];
        for text in cases {
            let encoded = percent_encode(text);
            assert!(
                encoded.bytes().all(|b| b.is_ascii_graphic()
                    && !matches!(b, b'#' | b'"' | b'<' | b'>' | b'`')),
                "{encoded}"
            );
            assert_eq!(
                percent_decode(encoded.as_bytes()),
                text.as_bytes(),
                "{text}"
            );
        }
        assert_eq!(percent_encode("a b%c#d\n=>é"), "a%20b%25c%23d%0A=%3E%C3%A9");
        assert_eq!(percent_decode(b"%4"), b"%4");
        assert_eq!(percent_decode(b"%%41"), b"%A");
    }
}
