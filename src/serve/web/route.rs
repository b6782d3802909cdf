//! HTTP requests of the web frontend: from a method, a path and a query string to a typed
//! [`WebRoute`], or the status that refuses it; and the links the pages write, built here so
//! that every link a page writes is one this module parses back.
//!
//! Pure: no I/O, no clock, no index.
//!
//! # Routes
//!
//! | method | path | what |
//! |---|---|---|
//! | GET | `/` | home: what this is, statistics, a search box |
//! | GET | `/search?q=Q&page=N` | results, ten a page (`page` 1 when absent, at most [`MAX_PAGE`]) |
//! | GET | `/v/search?q=Q&page=N` | the same with scores and crawl times |
//! | GET | `/backlinks?url=U` | pages linking to U |
//! | GET | `/known-hosts`, `/stats`, `/about` | as in the Gemini frontend |
//! | GET | `/add-seed` | the suggestion form |
//! | POST | `/add-seed` | the form's answer (`url=U`, form-encoded) |
//! | GET | `/api/search?q=Q&offset=O&limit=L` | the JSON of `geode search --json` |
//! | GET | `/opensearch.xml`, `/style.css`, `/robots.txt` | fixed documents |
//!
//! HEAD is answered as GET without the body. A query value is form-decoded (`+` is a space)
//! and must be UTF-8.

pub use crate::serve::request::{MAX_PAGE, PAGE_SIZE};

/// `/search?q=Q` for the first page, `/search?q=Q&page=N` after; `/v/search` when verbose.
pub fn search_href(query: &str, page: usize, verbose: bool) -> String {
    let base = if verbose { "/v/search" } else { "/search" };
    let q = form_encode(query);
    if page <= 1 {
        format!("{base}?q={q}")
    } else {
        format!("{base}?q={q}&page={page}")
    }
}

/// `/backlinks?url=U`.
pub fn backlinks_href(url: &str) -> String {
    format!("/backlinks?url={}", form_encode(url))
}

/// The link to `url` through the operator's web proxy of Gemini pages (`--http-gemini-proxy`):
/// the prefix followed by the URL without its `gemini://`. `None` for other schemes (a web
/// page is linked directly).
pub fn proxied(prefix: &str, url: &str) -> Option<String> {
    let rest = url.strip_prefix("gemini://")?;
    Some(format!("{prefix}{rest}"))
}

/// Percent-encodes everything but unreserved characters, as forms do (a space as `%20`, which
/// form decoding reads back like `+`).
pub fn form_encode(text: &str) -> String {
    percent_encoding::utf8_percent_encode(text, FORM).to_string()
}

/// Every byte but ASCII letters, digits and `-._~` is encoded.
const FORM: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// Longest request target (path and query) in bytes; a longer one is answered 414. A query
/// longer than the Gemini frontend's whole request line has no use here either.
pub const MAX_TARGET: usize = 2048;

/// Most results `/api/search` returns at once.
pub const MAX_API_LIMIT: usize = 100;

/// Deepest result `/api/search` starts at: the HTML pages' last page, as a number of results.
pub const MAX_API_OFFSET: usize = MAX_PAGE * PAGE_SIZE;

/// A request this frontend answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WebRoute {
    Home,
    /// `/search` or `/v/search` (`verbose`); no query shows the search box.
    Search {
        query: Option<String>,
        page: usize,
        verbose: bool,
    },
    Backlinks {
        url: Option<String>,
    },
    KnownHosts,
    Stats,
    About,
    /// `GET /add-seed`: the form.
    AddSeedForm,
    /// `POST /add-seed`: the body holds the form.
    AddSeed,
    /// `/api/search`: `query` `None` is refused by the answer (400), not here, so the refusal
    /// is JSON.
    Api {
        query: Option<String>,
        offset: usize,
        limit: usize,
    },
    OpenSearch,
    Style,
    Robots,
}

impl WebRoute {
    /// Fixed documents: cheap, the same for everyone, and not counted against a client's rate.
    pub fn is_static(&self) -> bool {
        matches!(
            self,
            WebRoute::OpenSearch | WebRoute::Style | WebRoute::Robots
        )
    }
}

/// Why a request has no answer but an error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// 404.
    NotFound,
    /// 405, with the methods the path allows.
    Method { allow: &'static str },
    /// 414.
    TooLong,
    /// 400, saying what is wrong.
    Bad(String),
}

/// Routes a request: `method` as sent, `path` and `query` from the request target (the query
/// without its `?`).
pub fn parse(method: &str, path: &str, query: Option<&str>) -> Result<WebRoute, Refusal> {
    if path.len() + query.map_or(0, |q| q.len() + 1) > MAX_TARGET {
        return Err(Refusal::TooLong);
    }
    let post = path == "/add-seed";
    let allow = if post { "GET, HEAD, POST" } else { "GET, HEAD" };
    match method {
        "GET" | "HEAD" => {}
        "POST" if post => return Ok(WebRoute::AddSeed),
        _ => return Err(Refusal::Method { allow }),
    }
    let params = Params::parse(query.unwrap_or(""))?;
    let route = match path {
        "/" => WebRoute::Home,
        "/search" | "/v/search" => WebRoute::Search {
            query: params.text("q"),
            page: params.number("page", 1, 1, MAX_PAGE)?,
            verbose: path == "/v/search",
        },
        "/backlinks" => WebRoute::Backlinks {
            url: params.text("url"),
        },
        "/known-hosts" => WebRoute::KnownHosts,
        "/stats" => WebRoute::Stats,
        "/about" => WebRoute::About,
        "/add-seed" => WebRoute::AddSeedForm,
        "/api/search" => WebRoute::Api {
            query: params.text("q"),
            offset: params.number("offset", 0, 0, MAX_API_OFFSET)?,
            limit: params.number("limit", PAGE_SIZE, 1, MAX_API_LIMIT)?,
        },
        "/opensearch.xml" => WebRoute::OpenSearch,
        "/style.css" => WebRoute::Style,
        "/robots.txt" => WebRoute::Robots,
        _ => return Err(Refusal::NotFound),
    };
    Ok(route)
}

/// The `url` field of the add-a-seed form's body (form-encoded); `None` when absent or blank.
pub fn seed_form(body: &[u8]) -> Result<Option<String>, Refusal> {
    let text =
        std::str::from_utf8(body).map_err(|_| Refusal::Bad("the form is not UTF-8".into()))?;
    Ok(Params::parse(text)?.text("url"))
}

/// A decoded query string: the first value of each name.
struct Params(Vec<(String, String)>);

impl Params {
    fn parse(query: &str) -> Result<Params, Refusal> {
        let mut pairs = Vec::new();
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            pairs.push((form_decode(name)?, form_decode(value)?));
        }
        Ok(Params(pairs))
    }

    fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The value, `None` when absent or only blanks.
    fn text(&self, name: &str) -> Option<String> {
        self.get(name)
            .filter(|v| !v.trim().is_empty())
            .map(str::to_string)
    }

    /// A whole number in `min..=max`, `default` when absent or empty.
    fn number(&self, name: &str, default: usize, min: usize, max: usize) -> Result<usize, Refusal> {
        match self.get(name).map(str::trim) {
            None | Some("") => Ok(default),
            Some(v) => match v.parse::<usize>() {
                Ok(n) if (min..=max).contains(&n) => Ok(n),
                _ => Err(Refusal::Bad(format!(
                    "{name} must be a whole number from {min} to {max}"
                ))),
            },
        }
    }
}

/// Form decoding: `+` is a space, `%XX` a byte; the result must be UTF-8.
fn form_decode(text: &str) -> Result<String, Refusal> {
    let spaced = text.replace('+', " ");
    percent_encoding::percent_decode_str(&spaced)
        .decode_utf8()
        .map(|s| s.into_owned())
        .map_err(|_| Refusal::Bad("the query string is not UTF-8".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(target: &str) -> Result<WebRoute, Refusal> {
        let (path, query) = match target.split_once('?') {
            Some((p, q)) => (p, Some(q)),
            None => (target, None),
        };
        parse("GET", path, query)
    }

    #[test]
    fn links_written_parse_back() {
        for query in [
            "kettle",
            "a b+c",
            "\"slow radio\" -x",
            "<script>&amp;",
            "thé = café?",
        ] {
            for (page, verbose) in [(1, false), (7, true)] {
                let href = search_href(query, page, verbose);
                assert_eq!(
                    get(&href),
                    Ok(WebRoute::Search {
                        query: Some(query.to_string()),
                        page,
                        verbose
                    }),
                    "{href}"
                );
            }
        }
        let href = backlinks_href("gemini://a.test/x?y=1&z");
        assert_eq!(
            get(&href),
            Ok(WebRoute::Backlinks {
                url: Some("gemini://a.test/x?y=1&z".into())
            })
        );
    }

    #[test]
    fn routes_and_refusals() {
        assert_eq!(get("/"), Ok(WebRoute::Home));
        assert_eq!(
            get("/search?q=tea+pot&page="),
            Ok(WebRoute::Search {
                query: Some("tea pot".into()),
                page: 1,
                verbose: false
            })
        );
        assert_eq!(
            get("/search?q=%20"),
            Ok(WebRoute::Search {
                query: None,
                page: 1,
                verbose: false
            })
        );
        assert!(matches!(get("/search?q=x&page=0"), Err(Refusal::Bad(_))));
        assert!(matches!(get("/search?q=x&page=101"), Err(Refusal::Bad(_))));
        assert!(matches!(get("/search?q=%FF"), Err(Refusal::Bad(_))));
        assert_eq!(
            get("/api/search?q=x&offset=20&limit=5"),
            Ok(WebRoute::Api {
                query: Some("x".into()),
                offset: 20,
                limit: 5
            })
        );
        assert!(matches!(
            get("/api/search?q=x&limit=1000"),
            Err(Refusal::Bad(_))
        ));
        assert_eq!(get("/search/"), Err(Refusal::NotFound));
        assert_eq!(get("/../etc/passwd"), Err(Refusal::NotFound));
        assert_eq!(
            parse("DELETE", "/", None),
            Err(Refusal::Method { allow: "GET, HEAD" })
        );
        assert_eq!(
            parse("POST", "/search", Some("q=x")),
            Err(Refusal::Method { allow: "GET, HEAD" })
        );
        assert_eq!(parse("POST", "/add-seed", None), Ok(WebRoute::AddSeed));
        let long = format!("/search?q={}", "a".repeat(MAX_TARGET));
        assert_eq!(get(&long), Err(Refusal::TooLong));
    }

    #[test]
    fn the_seed_form_body() {
        assert_eq!(
            seed_form(b"url=gemini%3A%2F%2Fa.test%2F"),
            Ok(Some("gemini://a.test/".into()))
        );
        assert_eq!(seed_form(b"url=+"), Ok(None));
        assert_eq!(seed_form(b""), Ok(None));
        assert!(seed_form(b"url=%C3").is_err());
        assert!(seed_form(&[0xff]).is_err());
    }

    #[test]
    fn the_proxy_link_takes_gemini_urls_only() {
        assert_eq!(
            proxied("https://portal.example/gemini/", "gemini://a.test/x"),
            Some("https://portal.example/gemini/a.test/x".into())
        );
        assert_eq!(proxied("https://p/", "https://a.test/"), None);
    }
}
