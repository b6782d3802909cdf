//! Which discovered URLs a crawl may fetch: scheme, link depth, crawler traps (a path segment
//! repeated three or more times) and the operator's exclusion list. Pure: the verdict is stored
//! with the URL in the frontier, so the link graph keeps every link while the crawl skips the
//! excluded ones.

use ::url::Url;
use regex::Regex;

use crate::urlnorm;

/// How often one path segment may occur before a URL counts as a trap (`/a/b/a/b/a` is one).
pub const MAX_SEGMENT_REPEATS: usize = 2;

/// URL prefixes and regular expressions the operator never wants fetched (known tar pits).
#[derive(Debug, Clone, Default)]
pub struct Exclusions {
    prefixes: Vec<String>,
    patterns: Vec<Regex>,
}

impl Exclusions {
    /// Parses an exclusion list: one rule per line; blank lines and lines starting with `#` are
    /// ignored; `re:PATTERN` is a regular expression searched in the whole normalised URL;
    /// anything else is a URL prefix (normalised like every URL geode stores).
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut rules = Exclusions::default();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            if let Some(pattern) = line.strip_prefix("re:") {
                let re = Regex::new(pattern.trim())
                    .map_err(|e| format!("line {}: bad regular expression: {e}", n + 1))?;
                rules.patterns.push(re);
            } else {
                let url =
                    urlnorm::normalize(line).map_err(|e| format!("line {}: {line}: {e}", n + 1))?;
                // A prefix written without a path (`gemini://host`) normalises to `.../`; keep
                // what was meant: everything on that capsule.
                rules.prefixes.push(url.to_string());
            }
        }
        Ok(rules)
    }

    pub fn is_empty(&self) -> bool {
        self.prefixes.is_empty() && self.patterns.is_empty()
    }

    pub fn matches(&self, url: &str) -> bool {
        self.prefixes.iter().any(|p| url.starts_with(p.as_str()))
            || self.patterns.iter().any(|re| re.is_match(url))
    }
}

/// Which capsules a run may fetch: with no `--allow-host` pattern every capsule, else only those
/// an allow pattern matches; a `--deny-host` pattern always wins. A pattern is a host name
/// (`example.org`) or a wildcard for its subdomains (`*.example.org`, which does not match
/// `example.org` itself); case and a trailing dot do not matter, ports are ignored. Web origins
/// (`https://host`) are fetched only when the run follows the web (`--protocols gemini,http`);
/// otherwise their URLs are recorded and wait for a run that does.
#[derive(Debug, Clone, Default)]
pub struct Scope {
    allow: Vec<HostPattern>,
    deny: Vec<HostPattern>,
    web: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum HostPattern {
    Exact(String),
    /// `.example.org`: any host ending so.
    Subdomains(String),
}

impl HostPattern {
    fn parse(text: &str) -> Result<HostPattern, String> {
        let t = text.trim().trim_end_matches('.').to_ascii_lowercase();
        let (wild, name) = match t.strip_prefix("*.") {
            Some(rest) => (true, rest.to_string()),
            None => (false, t.clone()),
        };
        if !urlnorm::is_host_name(&name, true) {
            return Err(format!(
                "{text:?} is not a host name or *.host.name pattern"
            ));
        }
        Ok(if wild {
            HostPattern::Subdomains(format!(".{name}"))
        } else {
            HostPattern::Exact(name)
        })
    }

    fn matches(&self, host: &str) -> bool {
        match self {
            HostPattern::Exact(name) => host == name,
            HostPattern::Subdomains(suffix) => host.ends_with(suffix.as_str()),
        }
    }
}

impl Scope {
    /// Adds an `--allow-host` pattern.
    pub fn allow(&mut self, pattern: &str) -> Result<(), String> {
        self.allow.push(HostPattern::parse(pattern)?);
        Ok(())
    }

    /// Adds a `--deny-host` pattern.
    pub fn deny(&mut self, pattern: &str) -> Result<(), String> {
        self.deny.push(HostPattern::parse(pattern)?);
        Ok(())
    }

    /// Adds the allow patterns of a list (`--allow-hosts-file`): one per line, blank lines and
    /// `#` comments ignored. Errors name the line.
    pub fn allow_list(&mut self, text: &str) -> Result<usize, String> {
        let mut added = 0;
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            self.allow(line)
                .map_err(|e| format!("line {}: {e}", n + 1))?;
            added += 1;
        }
        Ok(added)
    }

    /// Whether every capsule may be fetched.
    pub fn is_everything(&self) -> bool {
        self.allow.is_empty() && self.deny.is_empty() && self.web
    }

    /// Follows http and https URLs too (`--protocols gemini,http`).
    pub fn follow_web(&mut self, yes: bool) {
        self.web = yes;
    }

    /// Whether http and https URLs are fetched in this run.
    pub fn follows_web(&self) -> bool {
        self.web
    }

    /// Whether a capsule (a [`urlnorm::capsule_key`]: `host`, `host:port` or a web origin) may
    /// be fetched in this run.
    pub fn permits(&self, capsule: &str) -> bool {
        let capsule = urlnorm::Capsule::parse(capsule);
        if capsule.is_web() && !self.web {
            return false;
        }
        let host = capsule.host.trim_end_matches('.').to_ascii_lowercase();
        if self.deny.iter().any(|p| p.matches(&host)) {
            return false;
        }
        self.allow.is_empty() || self.allow.iter().any(|p| p.matches(&host))
    }
}

/// The rules a crawl applies to every URL it discovers.
#[derive(Debug, Clone)]
pub struct UrlPolicy {
    /// Link hops from a seed after which URLs are no longer fetched.
    pub max_depth: u32,
    pub exclusions: Exclusions,
    /// Whether http and https URLs are followed (`--protocols gemini,http`); when not, they are
    /// recorded as excluded for the reason `web`, and the first run that follows the web admits
    /// them.
    pub web: bool,
}

impl UrlPolicy {
    /// Why a URL found at link depth `depth` must not be fetched, or `None` if it may be.
    pub fn verdict(&self, url: &Url, depth: u32) -> Option<&'static str> {
        if !urlnorm::is_fetchable(url) {
            Some("not-fetchable")
        } else if urlnorm::is_web(url) && !self.web {
            Some("web")
        } else if depth > self.max_depth {
            Some("too-deep")
        } else if repeats_a_segment(url.path()) {
            Some("trap")
        } else if self.exclusions.matches(url.as_str()) {
            Some("excluded-by-config")
        } else {
            None
        }
    }
}

/// Whether some path segment occurs more than [`MAX_SEGMENT_REPEATS`] times.
fn repeats_a_segment(path: &str) -> bool {
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    // Paths are short (a URL is at most 1024 bytes), so counting pairwise is cheap.
    segments
        .iter()
        .any(|s| segments.iter().filter(|t| *t == s).count() > MAX_SEGMENT_REPEATS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(exclusions: &str) -> UrlPolicy {
        UrlPolicy {
            max_depth: 3,
            exclusions: Exclusions::parse(exclusions).unwrap(),
            web: true,
        }
    }

    #[test]
    fn verdicts() {
        let p = policy("# tar pits\ngemini://pit.test/cgi/\nre:/calendar/\\d{4}/\n");
        let cases = [
            ("gemini://a.test/", 0, None),
            ("gemini://a.test/x", 3, None),
            ("gemini://a.test/x", 4, Some("too-deep")),
            ("https://a.test/", 0, None),
            ("http://a.test:8080/x", 3, None),
            ("https://a.test/x", 4, Some("too-deep")),
            ("ftp://a.test/", 0, Some("not-fetchable")),
            ("mailto:x@a.test", 0, Some("not-fetchable")),
            ("gemini://a.test/loop/loop/x", 1, None),
            ("gemini://a.test/loop/loop/loop/x", 1, Some("trap")),
            ("gemini://a.test/a/b/a/c/a/", 1, Some("trap")),
            ("gemini://a.test/2024/01/01/", 1, None),
            (
                "gemini://pit.test/cgi/search?q",
                1,
                Some("excluded-by-config"),
            ),
            ("gemini://pit.test/cgi", 1, None),
            (
                "gemini://a.test/calendar/2024/05/",
                1,
                Some("excluded-by-config"),
            ),
            ("gemini://a.test/calendar/", 1, None),
        ];
        for (url, depth, want) in cases {
            let url = Url::parse(url).unwrap();
            assert_eq!(p.verdict(&url, depth), want, "{url} at depth {depth}");
        }
        // A run that follows gemini links only records web links for a later run.
        let gemini_only = UrlPolicy { web: false, ..p };
        for (url, want) in [
            ("https://a.test/", Some("web")),
            ("http://a.test/", Some("web")),
            ("gemini://a.test/", None),
            ("mailto:x@a.test", Some("not-fetchable")),
        ] {
            assert_eq!(
                gemini_only.verdict(&Url::parse(url).unwrap(), 0),
                want,
                "{url}"
            );
        }
    }

    #[test]
    fn scope_allows_and_denies_capsules() {
        let gemini_only = Scope::default();
        assert!(!gemini_only.is_everything());
        assert!(gemini_only.permits("any.test"));
        assert!(gemini_only.permits("any.test:1966"));
        assert!(!gemini_only.permits("https://any.test"));
        assert!(!gemini_only.permits("http://any.test:8080"));
        let mut everything = Scope::default();
        everything.follow_web(true);
        assert!(everything.is_everything());
        assert!(everything.permits("https://any.test"));
        assert!(everything.permits("any.test"));

        let mut scope = Scope::default();
        scope.allow("*.Example.org.").unwrap();
        scope.allow("solo.test").unwrap();
        scope.deny("bad.example.org").unwrap();
        let cases = [
            ("a.example.org", true),
            ("deep.a.example.org", true),
            ("A.EXAMPLE.ORG.", true),
            ("a.example.org:1966", true),
            ("example.org", false),
            ("notexample.org", false),
            ("bad.example.org", false),
            ("x.bad.example.org", true),
            ("solo.test", true),
            ("solo.test:1965", true),
            ("other.test", false),
            ("[::1]:1966", false),
            // Web origins: the host patterns apply once the run follows the web.
            ("https://a.example.org", true),
            ("http://solo.test:8080", true),
            ("https://bad.example.org", false),
            ("https://other.test", false),
        ];
        scope.follow_web(true);
        for (capsule, want) in cases {
            assert_eq!(scope.permits(capsule), want, "{capsule}");
        }
        let mut deny_only = Scope::default();
        deny_only.deny("*.spam.test").unwrap();
        assert!(deny_only.permits("ham.test"));
        assert!(!deny_only.permits("x.spam.test"));
        for bad in [
            "",
            "*.",
            "a..b",
            "*",
            "a b.test",
            "https://x.test/",
            "*.*.x",
        ] {
            assert!(Scope::default().allow(bad).is_err(), "{bad:?}");
        }
        let mut listed = Scope::default();
        assert_eq!(
            listed
                .allow_list("# mine\none.test\n\n*.two.test\n")
                .unwrap(),
            2
        );
        assert!(listed.permits("x.two.test"));
        assert!(listed
            .allow_list("ok.test\nnot ok\n")
            .unwrap_err()
            .contains("line 2"));
    }

    #[test]
    fn exclusion_lists_report_bad_lines() {
        assert!(Exclusions::parse("re:(unclosed")
            .unwrap_err()
            .contains("line 1"));
        assert!(Exclusions::parse("\n\nnot a url")
            .unwrap_err()
            .contains("line 3"));
        let e = Exclusions::parse("GEMINI://Pit.Test:1965/a").unwrap();
        assert!(e.matches("gemini://pit.test/a/b"));
        assert!(Exclusions::parse("# only comments\n\n").unwrap().is_empty());
    }
}
