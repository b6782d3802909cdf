//! robots.txt for Gemini (the robots companion specification) and for the web (RFC 9309):
//! parsing and matching. Pure: the crawl loop fetches the file and the frontier caches it; this
//! module only decides. Sitemaps are ignored.
//!
//! On Gemini geode is an `indexer`. It obeys the union of the groups for `indexer`, `geode` and
//! `*` (agent names compared case-insensitively); groups for `archiver`, `researcher`,
//! `webproxy` and any other agent do not apply to it. On the web ([`Robots::parse_web`]) it
//! obeys, as RFC 9309 says, the group naming its product token `geode` if there is one, else
//! the `*` group.
//!
//! `Crawl-delay: N` (seconds, fractions allowed) in a group that applies is kept as
//! [`Robots::crawl_delay`], the largest of them, capped at [`MAX_CRAWL_DELAY`]; the crawl makes
//! it the least gap between requests to the capsule's address.
//!
//! Format: consecutive `User-agent` lines form one group's agent list; the `Disallow` and
//! `Allow` lines after them belong to that group until a `User-agent` line follows a rule. Field
//! names are case-insensitive, `#` starts a comment, blank lines, unknown fields, a BOM and
//! CR/LF/CRLF line ends are tolerated; rules before any `User-agent` line are ignored.
//!
//! Matching, as in RFC 9309: a pattern matches a prefix of the path (plus `?query`), `*` matches
//! any run of characters and a trailing `$` anchors the end. The longest matching pattern of an
//! agent decides, `Allow` winning a tie; an empty `Disallow:` matches nothing. Groups naming the
//! same agent are merged into that agent's rule list (RFC 9309 section 2.2.1); the verdict is then
//! computed per agent name and the path is refused if any of `indexer`, `geode`, `*` refuses it,
//! which is the companion specification's "most restrictive combination". So an empty
//! `Disallow:` for `*` never lifts a `Disallow` for `indexer`. Patterns and paths are compared
//! with their percent-encoding in one form (see [`crate::urlnorm`]): `%7e` matches `~`, `%2f`
//! matches `%2F`, `é` matches `%C3%A9`.
//!
//! Caps, so that a hostile or broken file cannot make parsing or matching slow: only the first
//! [`MAX_ROBOTS_BYTES`] of the text are read (a line cut by that limit is dropped), and at most
//! [`MAX_RULES`] rules are kept, later ones ignored. Matching one rule is linear in the path plus
//! the pattern length (segment search, no backtracking), so one decision costs at most about
//! `MAX_RULES` times the URL length.

use crate::urlnorm::normalize_escapes;

/// How much of a robots.txt is read; the rest is ignored. RFC 9309 asks crawlers to parse at
/// least 500 KiB.
pub const MAX_ROBOTS_BYTES: usize = 512 * 1024;

/// How many rules (for the agents geode obeys) are kept; later ones are ignored.
pub const MAX_RULES: usize = 2000;

/// The longest `Crawl-delay` honoured: a capsule asking more is still visited every 60 s.
pub const MAX_CRAWL_DELAY: std::time::Duration = std::time::Duration::from_secs(60);

/// The agent names geode answers to, in the order their rule lists are kept.
const AGENTS: [&str; 3] = ["*", "indexer", "geode"];
/// Indices into [`AGENTS`].
const STAR: usize = 0;
const GEODE: usize = 2;

/// The rules that apply to geode on one capsule.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Robots {
    /// One merged rule list per applicable agent name that has at least one rule; empty means
    /// everything is allowed.
    agents: Vec<RuleSet>,
    /// The largest `Crawl-delay` of the applicable groups, capped.
    crawl_delay: Option<std::time::Duration>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct RuleSet {
    agent: String,
    rules: Vec<Rule>,
    /// Some group naming this agent was found (with or without rules).
    named: bool,
    /// The largest `Crawl-delay` in the groups naming this agent, in milliseconds (capped).
    delay: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Rule {
    allow: bool,
    /// Length of the normalised pattern, wildcards included: the precedence measure.
    specificity: usize,
    /// The pattern split at `*`: the first piece must match at the start, the others in order.
    pieces: Vec<String>,
    /// The pattern ended in `$`: the last piece must end the path.
    anchored: bool,
}

impl Rule {
    /// `None` for an empty pattern, which matches nothing.
    fn new(allow: bool, pattern: &str) -> Option<Rule> {
        if pattern.is_empty() {
            return None;
        }
        let normalized = normalize_escapes(pattern);
        let (body, anchored) = match normalized.strip_suffix('$') {
            Some(body) => (body, true),
            None => (normalized.as_str(), false),
        };
        Some(Rule {
            allow,
            specificity: normalized.len(),
            pieces: split_pieces(body),
            anchored,
        })
    }

    /// Whether the pattern matches `path` (already in [`normalize_escapes`] form).
    fn matches(&self, path: &str) -> bool {
        let Some((first, rest)) = self.pieces.split_first() else {
            return false;
        };
        if !path.starts_with(first.as_str()) {
            return false;
        }
        let mut pos = first.len();
        let Some((last, middle)) = rest.split_last() else {
            // No `*` at all: plain prefix, or exact when anchored.
            return !self.anchored || pos == path.len();
        };
        // Leftmost match for each piece is always safe for `*`-only globs: matching earlier never
        // leaves less room for the pieces after it.
        for piece in middle {
            match path.get(pos..).and_then(|tail| tail.find(piece.as_str())) {
                Some(found) => pos += found + piece.len(),
                None => return false,
            }
        }
        let tail = path.get(pos..).unwrap_or("");
        if self.anchored {
            tail.ends_with(last.as_str())
        } else {
            tail.contains(last.as_str())
        }
    }
}

/// Splits a pattern at `*`, keeping the first and last pieces (they anchor the start and, with
/// `$`, the end) but dropping empty ones in between: `a**b` is `a*b`, and a run of thousands of
/// stars costs nothing at match time.
fn split_pieces(body: &str) -> Vec<String> {
    let all: Vec<&str> = body.split('*').collect();
    let last = all.len().saturating_sub(1);
    all.iter()
        .enumerate()
        .filter(|(i, piece)| *i == 0 || *i == last || !piece.is_empty())
        .map(|(_, piece)| (*piece).to_string())
        .collect()
}

impl RuleSet {
    fn allows(&self, path: &str) -> bool {
        // (specificity, allow) of the best match so far; no match at all means allowed.
        let mut best: Option<(usize, bool)> = None;
        for rule in self.rules.iter().filter(|rule| rule.matches(path)) {
            best = match best {
                Some((len, allow)) if len > rule.specificity => Some((len, allow)),
                Some((len, allow)) if len == rule.specificity => Some((len, allow || rule.allow)),
                _ => Some((rule.specificity, rule.allow)),
            };
        }
        match best {
            Some((_, allow)) => allow,
            None => true,
        }
    }
}

/// The readable part of the file: at most [`MAX_ROBOTS_BYTES`], cut at the last line end if the
/// cap falls inside a line (a truncated `Allow: /pub` would allow more than was written).
fn capped(text: &str) -> &str {
    if text.len() <= MAX_ROBOTS_BYTES {
        return text;
    }
    let mut end = MAX_ROBOTS_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let head = &text[..end];
    match head.rfind(['\n', '\r']) {
        Some(line_end) => &head[..line_end],
        None => "",
    }
}

/// Reads the groups of a robots.txt into one merged rule list per agent of [`AGENTS`].
fn read_groups(text: &str) -> Vec<RuleSet> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut sets: Vec<RuleSet> = AGENTS
        .iter()
        .map(|agent| RuleSet {
            agent: (*agent).to_string(),
            ..RuleSet::default()
        })
        .collect();
    // Indices into `sets` of the agents named by the current group.
    let mut group: Vec<usize> = Vec::new();
    let mut in_group = false;
    let mut group_has_rule = false;
    let mut kept = 0usize;

    for line in capped(text).split(['\n', '\r']) {
        let line = match line.find('#') {
            Some(hash) => &line[..hash],
            None => line,
        };
        let Some((field, value)) = line.split_once(':') else {
            continue;
        };
        let field = field.trim();
        let value = value.trim();
        if field.eq_ignore_ascii_case("user-agent") {
            if group_has_rule || !in_group {
                group.clear();
                group_has_rule = false;
                in_group = true;
            }
            if let Some(index) = AGENTS.iter().position(|a| a.eq_ignore_ascii_case(value)) {
                if !group.contains(&index) {
                    group.push(index);
                }
                sets[index].named = true;
            }
        } else if field.eq_ignore_ascii_case("crawl-delay") {
            if !in_group {
                continue;
            }
            group_has_rule = true;
            let Ok(secs) = value.parse::<f64>() else {
                continue;
            };
            if !secs.is_finite() || secs <= 0.0 {
                continue;
            }
            let millis = (secs * 1000.0).min(MAX_CRAWL_DELAY.as_millis() as f64) as u64;
            for &index in &group {
                let set = &mut sets[index];
                set.delay = Some(set.delay.map_or(millis, |d| d.max(millis)));
            }
        } else if field.eq_ignore_ascii_case("disallow") || field.eq_ignore_ascii_case("allow") {
            if !in_group {
                continue;
            }
            group_has_rule = true;
            let allow = field.eq_ignore_ascii_case("allow");
            let Some(rule) = Rule::new(allow, value) else {
                continue;
            };
            for &index in &group {
                if kept >= MAX_RULES {
                    break;
                }
                sets[index].rules.push(rule.clone());
                kept += 1;
            }
        }
    }
    sets
}

impl Robots {
    /// No restrictions (robots.txt missing or permanently failing).
    pub fn allow_all() -> Self {
        Robots::default()
    }

    /// Parses robots.txt text served by a Gemini capsule. Never fails; unknown lines are
    /// ignored.
    pub fn parse(text: &str) -> Self {
        Robots::from_sets(read_groups(text), |_| true)
    }

    /// Parses robots.txt text served over HTTP(S), per RFC 9309: the `geode` group if the file
    /// names one, else the `*` group. Never fails.
    ///
    /// ```
    /// use geode::robots::Robots;
    ///
    /// let text = "User-agent: *\nDisallow: /\n\nUser-agent: geode\nDisallow: /private/\n\
    ///             Allow: /private/open\nCrawl-delay: 2.5\n";
    /// let robots = Robots::parse_web(text);
    /// assert!(robots.is_allowed("/blog/"));
    /// assert!(!robots.is_allowed("/private/notes"));
    /// // The longest match wins.
    /// assert!(robots.is_allowed("/private/open/day.html"));
    /// assert_eq!(robots.crawl_delay(), Some(std::time::Duration::from_millis(2500)));
    /// // On Gemini, geode also obeys `*`: the union of the groups is stricter.
    /// assert!(!Robots::parse(text).is_allowed("/blog/"));
    /// ```
    pub fn parse_web(text: &str) -> Self {
        let sets = read_groups(text);
        let chosen = if sets[GEODE].named { GEODE } else { STAR };
        Robots::from_sets(sets, |index| index == chosen)
    }

    /// No request at all: what RFC 9309 asks while a web server's robots.txt answers 5xx or
    /// cannot be reached.
    pub fn disallow_all() -> Self {
        Robots::parse("User-agent: *\nDisallow: /\n")
    }

    /// The least gap between two requests the file asks for (`Crawl-delay`), capped at
    /// [`MAX_CRAWL_DELAY`].
    pub fn crawl_delay(&self) -> Option<std::time::Duration> {
        self.crawl_delay
    }

    fn from_sets(sets: Vec<RuleSet>, applies: impl Fn(usize) -> bool) -> Self {
        let mut delay: Option<u64> = None;
        let mut agents = Vec::new();
        for (index, set) in sets.into_iter().enumerate() {
            if !applies(index) {
                continue;
            }
            if let Some(d) = set.delay {
                delay = Some(delay.map_or(d, |other| other.max(d)));
            }
            if !set.rules.is_empty() {
                agents.push(set);
            }
        }
        Robots {
            agents,
            crawl_delay: delay.map(std::time::Duration::from_millis),
        }
    }

    /// Whether geode may fetch a URL with this path (and query, if any: `/a/b?x`).
    pub fn is_allowed(&self, path_and_query: &str) -> bool {
        if self.agents.is_empty() {
            return true;
        }
        let path = if path_and_query.is_empty() {
            "/".to_string()
        } else {
            normalize_escapes(path_and_query)
        };
        self.agents.iter().all(|set| set.allows(&path))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each case: robots.txt text, then (path, allowed?) pairs.
    type Case<'a> = (&'a str, &'a str, &'a [(&'a str, bool)]);

    fn run(cases: &[Case]) {
        for (name, text, checks) in cases {
            let robots = Robots::parse(text);
            for (path, want) in checks.iter() {
                assert_eq!(
                    robots.is_allowed(path),
                    *want,
                    "case {name:?}, path {path:?}, parsed {robots:?}"
                );
            }
        }
    }

    #[test]
    fn which_groups_apply() {
        run(&[
            (
                "only archiver disallows",
                "User-agent: archiver\nDisallow: /\n",
                &[("/", true), ("/a", true)],
            ),
            (
                "researcher and webproxy and others ignored",
                "User-agent: researcher\nDisallow: /r\n\nUser-agent: webproxy\nDisallow: /w\n\
                 User-agent: googlebot\nDisallow: /g\n",
                &[("/r", true), ("/w", true), ("/g", true)],
            ),
            (
                "star applies",
                "User-agent: *\nDisallow: /private\n",
                &[
                    ("/private", false),
                    ("/private/x", false),
                    ("/public", true),
                ],
            ),
            (
                "indexer applies",
                "User-agent: indexer\nDisallow: /i\n",
                &[("/i", false), ("/x", true)],
            ),
            (
                "geode by name applies, any case",
                "User-agent: GeoDe\nDisallow: /g\n",
                &[("/g", false), ("/x", true)],
            ),
            (
                "indexer disallow and star disallow are a union",
                "User-agent: indexer\nDisallow: /a\n\nUser-agent: *\nDisallow: /b\n",
                &[("/a", false), ("/b", false), ("/c", true)],
            ),
            (
                "indexer allow does not lift star disallow",
                "User-agent: *\nDisallow: /x\n\nUser-agent: indexer\nAllow: /x\n",
                &[("/x", false), ("/y", true)],
            ),
            (
                "empty disallow in star keeps indexer disallow",
                "User-agent: *\nDisallow:\n\nUser-agent: indexer\nDisallow: /secret\n",
                &[
                    ("/secret", false),
                    ("/secret/a", false),
                    ("/open", true),
                    ("/", true),
                ],
            ),
            (
                "empty disallow in indexer keeps star disallow",
                "User-agent: indexer\nDisallow:\n\nUser-agent: *\nDisallow: /\n",
                &[("/", false), ("/a", false)],
            ),
            (
                "archiver group's rules stay in archiver",
                "User-agent: archiver\nDisallow: /\nUser-agent: indexer\nDisallow: /i\n",
                &[("/", true), ("/i", false)],
            ),
            (
                "a group naming archiver and indexer applies",
                "User-agent: archiver\nUser-agent: indexer\nDisallow: /both\n",
                &[("/both", false), ("/x", true)],
            ),
            (
                "same agent in two groups is merged",
                "User-agent: *\nDisallow: /\n\nUser-agent: *\nAllow: /public/\n",
                &[("/public/a", true), ("/private", false)],
            ),
            (
                "agent value needs to be exact",
                "User-agent: indexers\nDisallow: /\nUser-agent: geode-bot\nDisallow: /\n",
                &[("/", true)],
            ),
        ]);
    }

    #[test]
    fn grouping() {
        run(&[
            (
                "user-agent after a rule starts a new group",
                "User-agent: *\nDisallow: /a\nUser-agent: archiver\nDisallow: /b\n",
                &[("/a", false), ("/b", true)],
            ),
            (
                "consecutive user-agents share the rules",
                "User-agent: archiver\nUser-agent: *\nDisallow: /a\nDisallow: /b\n",
                &[("/a", false), ("/b", false)],
            ),
            (
                "blank lines and comments do not end a group",
                "User-agent: archiver\n\n# note\nUser-agent: *\n\nDisallow: /a\n",
                &[("/a", false)],
            ),
            (
                "unknown fields do not end a group",
                "User-agent: *\nCrawl-delay: 10\nSitemap: gemini://x/s\nDisallow: /a\n",
                &[("/a", false)],
            ),
            (
                "rules before any user-agent are ignored",
                "Disallow: /\nUser-agent: *\nDisallow: /a\n",
                &[("/", true), ("/a", false)],
            ),
            (
                "rules after an inapplicable group do not leak",
                "User-agent: *\nDisallow: /a\n\nUser-agent: archiver\nDisallow: /\nAllow: /x\n",
                &[("/a", false), ("/b", true), ("/x", true)],
            ),
        ]);
    }

    #[test]
    fn matching_and_precedence() {
        run(&[
            (
                "disallow all but public",
                "User-agent: *\nDisallow: /\nAllow: /public/\n",
                &[
                    ("/", false),
                    ("/index.gmi", false),
                    ("/public/", true),
                    ("/public/a.gmi", true),
                    ("/public", false),
                ],
            ),
            (
                "rule order does not matter",
                "User-agent: *\nAllow: /public/\nDisallow: /\n",
                &[("/public/a", true), ("/a", false)],
            ),
            (
                "longer disallow beats shorter allow",
                "User-agent: *\nAllow: /docs/\nDisallow: /docs/private/\n",
                &[("/docs/a", true), ("/docs/private/a", false)],
            ),
            (
                "allow wins a tie",
                "User-agent: *\nDisallow: /page\nAllow: /page\n",
                &[("/page", true)],
            ),
            (
                "prefix matching",
                "User-agent: *\nDisallow: /cgi\n",
                &[
                    ("/cgi", false),
                    ("/cgi-bin/x", false),
                    ("/cg", true),
                    ("/a/cgi", true),
                ],
            ),
            (
                "star and dollar: gemtext only",
                "User-agent: *\nDisallow: /*.gmi$\n",
                &[
                    ("/a.gmi", false),
                    ("/dir/b.gmi", false),
                    ("/.gmi", false),
                    ("/a.gmi.bak", true),
                    ("/a.gmi?q", true),
                    ("/a.txt", true),
                ],
            ),
            (
                "star in the middle",
                "User-agent: *\nDisallow: /*/private/\n",
                &[
                    ("/u/private/x", false),
                    ("/a/b/private/", false),
                    ("/private/", true),
                ],
            ),
            (
                "several stars, pieces in order",
                "User-agent: *\nDisallow: /a*b*c\n",
                &[
                    ("/abc", false),
                    ("/a-b-c-d", false),
                    ("/acb", true),
                    ("/a-c-b", true),
                ],
            ),
            (
                "repeated piece needs two occurrences",
                "User-agent: *\nDisallow: /*x*x$\n",
                &[
                    ("/x", true),
                    ("/xx", false),
                    ("/axbx", false),
                    ("/ax", true),
                ],
            ),
            (
                "dollar alone anchors an exact path",
                "User-agent: *\nDisallow: /$\n",
                &[("/", false), ("/a", true)],
            ),
            (
                "star alone matches everything",
                "User-agent: *\nDisallow: *\n",
                &[("/", false), ("/a?b", false)],
            ),
            (
                "dollar inside a pattern is literal",
                "User-agent: *\nDisallow: /a$b\n",
                &[("/a$b", false), ("/a", true)],
            ),
            (
                "query is part of the match",
                "User-agent: *\nDisallow: /search?\nDisallow: /*?sort=\n",
                &[
                    ("/search", true),
                    ("/search?q=x", false),
                    ("/list?sort=a", false),
                    ("/list?page=2", true),
                ],
            ),
            (
                "paths are case-sensitive",
                "User-agent: *\nDisallow: /Private\n",
                &[("/Private", false), ("/private", true)],
            ),
            (
                "empty path is the root",
                "User-agent: *\nDisallow: /$\n",
                &[("", false)],
            ),
            (
                "empty allow matches nothing",
                "User-agent: *\nDisallow: /\nAllow:\n",
                &[("/a", false)],
            ),
        ]);
    }

    #[test]
    fn percent_encoding_is_compared_normalised() {
        run(&[
            (
                "lowercase escape in pattern",
                "User-agent: *\nDisallow: /a%2fb\n",
                &[("/a%2Fb", false), ("/a%2fb", false), ("/a/b", true)],
            ),
            (
                "unreserved escape matches the plain character",
                "User-agent: *\nDisallow: /%7euser/\n",
                &[("/~user/x", false), ("/%7Euser/x", false)],
            ),
            (
                "non-ASCII pattern matches the encoded path",
                "User-agent: *\nDisallow: /café\n",
                &[
                    ("/caf%C3%A9", false),
                    ("/caf%c3%a9/x", false),
                    ("/cafe", true),
                ],
            ),
        ]);
    }

    #[test]
    fn file_format_tolerance() {
        run(&[
            (
                "CRLF, BOM, odd case and spacing",
                "\u{feff}USER-AGENT :  *  \r\n  disallow:/a   \r\nALLOW: /a/ok\r\n",
                &[("/a", false), ("/a/ok", true), ("/b", true)],
            ),
            (
                "bare CR line ends",
                "User-agent: *\rDisallow: /a\r",
                &[("/a", false), ("/b", true)],
            ),
            (
                "comments",
                "# robots\nUser-agent: * # everyone\nDisallow: /a # not /b\n#Disallow: /c\n",
                &[("/a", false), ("/b", true), ("/c", true)],
            ),
            (
                "no colon, garbage lines ignored",
                "User-agent *\nDisallow /\nwhat is this\nUser-agent: *\nDisallow: /x\n",
                &[("/", true), ("/x", false)],
            ),
            ("empty file", "", &[("/", true)]),
            (
                "only empty disallow",
                "User-agent: *\nDisallow:\n",
                &[("/", true), ("/anything", true)],
            ),
        ]);
    }

    #[test]
    fn allow_all_and_equivalent_parses() {
        assert!(Robots::allow_all().is_allowed("/"));
        assert!(Robots::allow_all().is_allowed("/any/thing?q"));
        for text in [
            "",
            "User-agent: archiver\nDisallow: /\n",
            "User-agent: *\nDisallow:\n",
            "Disallow: /\n",
        ] {
            assert_eq!(Robots::parse(text), Robots::allow_all(), "text {text:?}");
        }
        assert_ne!(
            Robots::parse("User-agent: *\nDisallow: /\n"),
            Robots::allow_all()
        );
    }

    #[test]
    fn caps_bound_the_work() {
        // A rule past the byte cap is not seen.
        let filler = format!("User-agent: *\n#{}\n", "x".repeat(MAX_ROBOTS_BYTES));
        let robots = Robots::parse(&format!("{filler}Disallow: /\n"));
        assert!(robots.is_allowed("/"));

        // A line cut by the byte cap is dropped rather than read shortened: `Allow: /p` would
        // otherwise allow `/private`.
        let head = "User-agent: *\nDisallow: /\n";
        let pad = "#".repeat(MAX_ROBOTS_BYTES - head.len() - 1 - "Allow: /p".len());
        let text = format!("{head}{pad}\nAllow: /public/only\n");
        let robots = Robots::parse(&text);
        assert!(!robots.is_allowed("/private"));
        assert!(!robots.is_allowed("/public/only"));
        // The same line inside the cap is honoured.
        let robots = Robots::parse(&format!("{head}Allow: /public/only\n"));
        assert!(robots.is_allowed("/public/only"));

        // Rules past the rule cap are ignored.
        let mut text = String::from("User-agent: *\n");
        for i in 0..MAX_RULES {
            text.push_str(&format!("Disallow: /r{i}/\n"));
        }
        text.push_str("Disallow: /last\n");
        let robots = Robots::parse(&text);
        assert!(!robots.is_allowed("/r0/"));
        assert!(!robots.is_allowed(&format!("/r{}/", MAX_RULES - 1)));
        assert!(robots.is_allowed("/last"));

        // Many wildcard rules against a long path still decide quickly.
        let mut text = String::from("User-agent: *\n");
        for _ in 0..MAX_RULES {
            text.push_str("Disallow: /*a*a*a*a*a*a*a*a*a*a*a*a*b$\n");
        }
        let robots = Robots::parse(&text);
        let path = format!("/{}", "a".repeat(1000));
        let start = std::time::Instant::now();
        assert!(robots.is_allowed(&path));
        assert!(start.elapsed() < std::time::Duration::from_secs(1));
    }

    #[test]
    fn garbage_never_panics() {
        let long_line = "Disallow: ".to_string() + &"*".repeat(60_000);
        let inputs = [
            "\0\0\0",
            ":",
            "::::",
            "User-agent:",
            "User-agent: *\nDisallow: $",
            "User-agent: *\nDisallow: *$",
            "User-agent: *\nDisallow: %",
            "User-agent: *\nDisallow: %zz%4",
            "User-agent: *\nAllow: é*ü$",
            "\u{feff}\u{feff}User-agent: *",
            "User-agent: *\nDisallow: /\u{0}\u{7f}",
            "💩: 💩\nUser-agent: 💩\nDisallow: 💩",
            "User-agent: *\n",
        ];
        let mut texts: Vec<String> = inputs.iter().map(|s| s.to_string()).collect();
        texts.push(format!("User-agent: *\n{long_line}\n"));
        texts.push("é".repeat(MAX_ROBOTS_BYTES)); // cap falls inside a character
        let paths = ["", "/", "$", "*", "%", "/é", "/%zz", "/a?b#c", "\u{0}"];
        for text in &texts {
            let robots = Robots::parse(text);
            for path in paths {
                let _ = robots.is_allowed(path);
            }
        }
        // A pattern of only wildcards matches everything, `$` alone matches the empty path only.
        let robots = Robots::parse(&format!("User-agent: *\n{long_line}\n"));
        assert!(!robots.is_allowed("/x"));
        let robots = Robots::parse("User-agent: *\nDisallow: $\n");
        assert!(robots.is_allowed("/x"));
    }

    #[test]
    fn the_web_obeys_the_geode_group_else_star() {
        let star_and_indexer = "User-agent: *\nDisallow: /a\n\nUser-agent: indexer\nDisallow: /b\n";
        let web = Robots::parse_web(star_and_indexer);
        assert!(!web.is_allowed("/a"));
        assert!(web.is_allowed("/b"), "indexer is a Gemini convention");
        assert!(!Robots::parse(star_and_indexer).is_allowed("/b"));
        // A group naming geode, even one without rules, replaces `*`.
        let named = "User-agent: *\nDisallow: /\n\nUser-agent: GeoDe\nCrawl-delay: 1\n";
        let web = Robots::parse_web(named);
        assert!(web.is_allowed("/anything"));
        assert_eq!(web.crawl_delay(), Some(std::time::Duration::from_secs(1)));
        assert!(!Robots::parse(named).is_allowed("/anything"));
        assert!(!Robots::disallow_all().is_allowed("/"));
        assert!(!Robots::disallow_all().is_allowed("/robots.txt"));
    }

    #[test]
    fn crawl_delays_are_read_capped_and_combined() {
        let cases: &[(&str, Option<u64>)] = &[
            ("User-agent: *\nCrawl-delay: 10\n", Some(10_000)),
            ("User-agent: *\nCrawl-delay: 0.25\n", Some(250)),
            ("User-agent: *\nCrawl-delay: 86400\n", Some(60_000)),
            ("User-agent: *\nCrawl-delay: soon\n", None),
            ("User-agent: *\nCrawl-delay: -3\n", None),
            ("User-agent: *\nCrawl-delay: NaN\n", None),
            ("Crawl-delay: 5\nUser-agent: *\nDisallow: /x\n", None),
            ("User-agent: archiver\nCrawl-delay: 5\n", None),
            // Gemini: the largest of the groups that apply.
            (
                "User-agent: *\nCrawl-delay: 2\n\nUser-agent: indexer\nCrawl-delay: 7\n",
                Some(7_000),
            ),
        ];
        for (text, want) in cases {
            assert_eq!(
                Robots::parse(text).crawl_delay(),
                want.map(std::time::Duration::from_millis),
                "{text:?}"
            );
        }
    }
}
