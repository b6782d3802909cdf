//! Which discovered URLs a crawl may fetch: scheme, link depth, crawler traps (a path segment
//! repeated three or more times) and the operator's exclusion list. Pure: the verdict is stored
//! with the URL in the frontier, so the link graph keeps every link while the crawl skips the
//! excluded ones.

use std::path::Path;

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

    /// Reads an exclusion list from a file.
    pub fn load(path: &Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        Self::parse(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    pub fn is_empty(&self) -> bool {
        self.prefixes.is_empty() && self.patterns.is_empty()
    }

    pub fn matches(&self, url: &str) -> bool {
        self.prefixes.iter().any(|p| url.starts_with(p.as_str()))
            || self.patterns.iter().any(|re| re.is_match(url))
    }
}

/// The rules a crawl applies to every URL it discovers.
#[derive(Debug, Clone)]
pub struct UrlPolicy {
    /// Link hops from a seed after which URLs are no longer fetched.
    pub max_depth: u32,
    pub exclusions: Exclusions,
}

impl UrlPolicy {
    /// Why a URL found at link depth `depth` must not be fetched, or `None` if it may be.
    pub fn verdict(&self, url: &Url, depth: u32) -> Option<&'static str> {
        if !urlnorm::is_fetchable(url) {
            Some("not-fetchable")
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
        }
    }

    #[test]
    fn verdicts() {
        let p = policy("# tar pits\ngemini://pit.test/cgi/\nre:/calendar/\\d{4}/\n");
        let cases = [
            ("gemini://a.test/", 0, None),
            ("gemini://a.test/x", 3, None),
            ("gemini://a.test/x", 4, Some("too-deep")),
            ("https://a.test/", 0, Some("not-fetchable")),
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
