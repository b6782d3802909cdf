//! The gemtext parser: one pass over the lines of a `text/gemini` document, with one bit of state
//! (inside a preformatted block or not). It never fails: any input yields a document. [`extract`]
//! reads the lines one at a time, borrowed from the source, and keeps links as it goes
//! ([`LinkSet`]): a page of 260,000 links costs no more than the 5,000 it keeps.
//! It does no I/O and knows nothing about fetching or indexing; charset handling beyond UTF-8 is
//! the caller's business ([`decode`] only covers the UTF-8 default).
//!
//! Decisions the specification leaves open:
//! - `=>` followed by nothing but whitespace has no target, so it is not a link: it stays a
//!   [`Line::Text`] holding the raw line, like any other line that matches no rule.
//! - A heading with no text (`#` alone) is kept by [`parse`] but never becomes a title and is left
//!   out of [`Page::headings`] and [`Page::body`].
//! - The text of a preformatted block is its lines joined with `\n`, without a final newline.
//!
//! [`extract`] leaves ASCII art out of the body: the [`art`] classifier judges each
//! preformatted block and each line of text.

use std::borrow::Cow;

use ::url::Url;

pub mod art;
mod frontmatter;
pub mod title;

pub use title::{clean_title, title_of};

/// One element of a gemtext document. A preformatted block is kept whole, because later stages
/// (the ASCII-art classifier) judge blocks, not lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line {
    Text(String),
    /// `=> target label`; `target` is the raw reference as written.
    Link {
        target: String,
        label: Option<String>,
    },
    Heading {
        level: u8,
        text: String,
    },
    ListItem(String),
    Quote(String),
    /// The lines between two fences. `closed` is false when the document ended inside the block.
    Preformatted {
        alt: String,
        text: String,
        closed: bool,
    },
}

/// Titles longer than this many characters are cut, so that one run-on first line cannot fill
/// a whole search result.
pub const MAX_TITLE_CHARS: usize = 200;

const BOM: char = '\u{FEFF}';
const FENCE: &str = "```";

/// Whitespace as the gemtext grammar means it: only spaces and tabs separate syntax.
fn is_sep(c: char) -> bool {
    c == ' ' || c == '\t'
}

/// Decodes a response body as UTF-8, replacing invalid sequences with U+FFFD, and drops a
/// leading byte order mark. Borrows when the bytes are valid UTF-8 without a BOM.
pub fn decode(bytes: &[u8]) -> Cow<'_, str> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    String::from_utf8_lossy(bytes)
}

/// Parses gemtext. Lines end in LF or CRLF; a leading BOM is ignored.
pub fn parse(src: &str) -> Vec<Line> {
    lines(src).map(LineRef::into_line).collect()
}

/// A line of a document as the parser reads it, borrowing from the source: what [`extract`]
/// walks one at a time, so that a page of a million lines never becomes a million [`Line`]s.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum LineRef<'a> {
    Text(&'a str),
    /// An empty `label` is no label.
    Link {
        target: &'a str,
        label: &'a str,
    },
    Heading {
        level: u8,
        text: &'a str,
    },
    ListItem(&'a str),
    Quote(&'a str),
    /// The block's lines joined with `\n`: a slice of the source unless CRs had to go.
    Preformatted {
        alt: &'a str,
        text: Cow<'a, str>,
        closed: bool,
    },
}

impl LineRef<'_> {
    fn into_line(self) -> Line {
        match self {
            LineRef::Text(t) => Line::Text(t.to_string()),
            LineRef::Link { target, label } => Line::Link {
                target: target.to_string(),
                label: (!label.is_empty()).then(|| label.to_string()),
            },
            LineRef::Heading { level, text } => Line::Heading {
                level,
                text: text.to_string(),
            },
            LineRef::ListItem(t) => Line::ListItem(t.to_string()),
            LineRef::Quote(t) => Line::Quote(t.to_string()),
            LineRef::Preformatted { alt, text, closed } => Line::Preformatted {
                alt: alt.to_string(),
                text: text.into_owned(),
                closed,
            },
        }
    }
}

impl Line {
    /// The line borrowed, as [`extract`] reads lines.
    pub(crate) fn as_ref(&self) -> LineRef<'_> {
        match self {
            Line::Text(t) => LineRef::Text(t),
            Line::Link { target, label } => LineRef::Link {
                target,
                label: label.as_deref().unwrap_or(""),
            },
            Line::Heading { level, text } => LineRef::Heading {
                level: *level,
                text,
            },
            Line::ListItem(t) => LineRef::ListItem(t),
            Line::Quote(t) => LineRef::Quote(t),
            Line::Preformatted { alt, text, closed } => LineRef::Preformatted {
                alt,
                text: Cow::Borrowed(text),
                closed: *closed,
            },
        }
    }
}

/// The lines of `src` (a leading BOM ignored), parsed one at a time.
pub(crate) fn lines(src: &str) -> Lines<'_> {
    let src = src.strip_prefix(BOM).unwrap_or(src);
    Lines {
        src,
        raw: RawLines::new(src),
    }
}

/// The parser: raw lines in, [`LineRef`]s out, with one bit of state (inside a preformatted
/// block or not), which it keeps by reading a whole block at once.
pub(crate) struct Lines<'a> {
    src: &'a str,
    raw: RawLines<'a>,
}

impl<'a> Iterator for Lines<'a> {
    type Item = LineRef<'a>;

    fn next(&mut self) -> Option<LineRef<'a>> {
        let line = self.raw.next()?;
        let Some(alt) = line.strip_prefix(FENCE) else {
            return Some(parse_line(line));
        };
        let mut span: Option<(&str, &str)> = None;
        let mut closed = false;
        for inner in self.raw.by_ref() {
            if inner.starts_with(FENCE) {
                closed = true;
                break;
            }
            span = Some((span.map_or(inner, |(first, _)| first), inner));
        }
        let text = span.map_or(Cow::Borrowed(""), |(first, last)| self.joined(first, last));
        Some(LineRef::Preformatted {
            alt: alt.trim(),
            text,
            closed,
        })
    }
}

impl<'a> Lines<'a> {
    /// The lines from `first` to `last` (raw lines of the source) joined with `\n`: the source
    /// between them as it is, unless some line ended in CRLF, whose CR is no part of the line.
    fn joined(&self, first: &'a str, last: &'a str) -> Cow<'a, str> {
        let offset = |s: &str| s.as_ptr() as usize - self.src.as_ptr() as usize;
        let span = &self.src[offset(first)..offset(last) + last.len()];
        if !span.contains("\r\n") {
            return Cow::Borrowed(span);
        }
        let lines: Vec<&str> = span
            .split('\n')
            .map(|l| l.strip_suffix('\r').unwrap_or(l))
            .collect();
        Cow::Owned(lines.join("\n"))
    }
}

/// Splits on LF, drops one CR before each line end, and yields no phantom empty line after a
/// final line ending (so `"a\n"` is one line, `"a\n\n"` two).
struct RawLines<'a> {
    rest: Option<&'a str>,
}

impl<'a> RawLines<'a> {
    fn new(src: &'a str) -> Self {
        let body = src.strip_suffix('\n').unwrap_or(src);
        RawLines {
            rest: (!src.is_empty()).then_some(body),
        }
    }
}

impl<'a> Iterator for RawLines<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        let rest = self.rest?;
        let line = match rest.find('\n') {
            Some(at) => {
                self.rest = Some(&rest[at + 1..]);
                &rest[..at]
            }
            None => {
                self.rest = None;
                rest
            }
        };
        Some(line.strip_suffix('\r').unwrap_or(line))
    }
}

/// Classifies one line outside a preformatted block.
fn parse_line(line: &str) -> LineRef<'_> {
    if let Some(rest) = line.strip_prefix("=>") {
        if let Some(link) = parse_link(rest) {
            return link;
        }
        return LineRef::Text(line);
    }
    // Longest prefix first, so `###` is never read as a level-1 heading with text `##`.
    for (prefix, level) in [("###", 3u8), ("##", 2), ("#", 1)] {
        if let Some(rest) = line.strip_prefix(prefix) {
            return LineRef::Heading {
                level,
                text: rest.trim(),
            };
        }
    }
    if let Some(rest) = line.strip_prefix("* ") {
        return LineRef::ListItem(rest.trim());
    }
    if let Some(rest) = line.strip_prefix('>') {
        return LineRef::Quote(rest.trim_start());
    }
    LineRef::Text(line)
}

/// The part of a link line after `=>`; `None` when there is no target.
fn parse_link(rest: &str) -> Option<LineRef<'_>> {
    let rest = rest.trim_start_matches(is_sep);
    let (target, label) = match rest.find(is_sep) {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    if target.is_empty() {
        return None;
    }
    Some(LineRef::Link {
        target,
        label: label.trim(),
    })
}

/// A link found on a page, resolved against the page URL and normalised.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageLink {
    pub url: Url,
    pub label: String,
    /// An entry of a feed: a gemtext link whose label starts with a date, or an Atom or RSS
    /// entry.
    pub entry: bool,
}

/// What the indexer needs from a gemtext page.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Page {
    pub title: String,
    /// Readable text of the page (text, list, quote, heading lines and preformatted blocks),
    /// one gemtext line per line. Preformatted blocks that [`art::classify`] judges to be art
    /// are left out (an informative alt text stands in for them, see [`art::caption`]), and so
    /// are text lines that are pure decoration ([`art::is_decoration_line`]).
    pub body: String,
    pub headings: Vec<String>,
    pub links: Vec<PageLink>,
    /// The page is a gemfeed: at least [`crate::feed::MIN_GEMFEED_ENTRIES`] of its links are
    /// dated entries.
    pub feed: bool,
}

/// Most distinct link targets a page keeps: links to further targets are dropped, so a page of
/// a million links costs no more than a large index page.
pub const MAX_LINK_TARGETS: usize = 5_000;

/// Most links a page keeps in all, links to a target kept before counted too (their labels
/// are anchors): a page repeating one link a million times is no larger.
pub const MAX_LINKS: usize = 20_000;

/// The links a page keeps as they are found: those to its first `max_targets` distinct
/// targets, in page order, at most `max_links` in all. What is dropped is never stored.
#[derive(Debug)]
pub struct LinkSet {
    max_targets: usize,
    max_links: usize,
    targets: std::collections::HashSet<String>,
    links: Vec<PageLink>,
}

impl LinkSet {
    pub fn new(max_targets: usize, max_links: usize) -> LinkSet {
        LinkSet {
            max_targets,
            max_links,
            targets: std::collections::HashSet::new(),
            links: Vec::new(),
        }
    }

    /// Whether a link to `url` would be kept.
    pub fn takes(&self, url: &Url) -> bool {
        self.links.len() < self.max_links
            && (self.targets.contains(url.as_str()) || self.targets.len() < self.max_targets)
    }

    /// Keeps a link if [`LinkSet::takes`] says so; the label is made only then.
    pub fn offer(&mut self, url: Url, label: impl FnOnce() -> String, entry: bool) {
        if !self.takes(&url) {
            return;
        }
        if !self.targets.contains(url.as_str()) {
            self.targets.insert(url.to_string());
        }
        self.links.push(PageLink {
            url,
            label: label(),
            entry,
        });
    }

    /// The links kept, in page order.
    pub fn into_links(self) -> Vec<PageLink> {
        self.links
    }
}

/// Parses `src` and extracts title, text, headings and links (resolved against `base`).
///
/// Link labels are not part of the body (they travel with their link). Runs of blank lines in
/// the body collapse into one, and the body neither starts nor ends with a blank line. Links
/// that do not resolve are skipped; the others are kept whatever their scheme, in order,
/// duplicates included, up to [`MAX_LINK_TARGETS`] distinct targets and [`MAX_LINKS`] links
/// (a feed is judged on every link all the same). A preformatted block counts as *leading* for
/// the art classifier when no link, heading, list item, block or non-decorative text line
/// comes before it.
///
/// The document is read a line at a time: what it costs beside its text is the page it
/// yields, whatever its number of lines.
pub fn extract(base: &Url, src: &str) -> Page {
    // Front matter left by a site generator is metadata: its title is the page's, its lines
    // are no text of the page.
    let front = frontmatter::front_matter(lines(src));
    let skip = front.as_ref().map_or(0, |f| f.lines);
    let mut body = Body::default();
    let mut headings = Vec::new();
    let mut links = LinkSet::new(MAX_LINK_TARGETS, MAX_LINKS);
    let mut entries = 0;
    let mut title = title::TitleFinder::default();
    // Whether anything with content came before the current line: blocks before it are not
    // leading.
    let mut seen_content = false;

    for line in lines(src).skip(skip) {
        match line {
            LineRef::Text(t) => {
                let decoration = art::is_decoration_line(t);
                title.text(t, decoration);
                if !decoration {
                    body.push(t);
                    seen_content |= !t.trim().is_empty();
                }
            }
            LineRef::Quote(t) => {
                if !art::is_decoration_line(t) {
                    body.push(t);
                    seen_content |= !t.trim().is_empty();
                }
            }
            LineRef::ListItem(t) => {
                // `* * *` parses as a list item holding `* *`: judge the line as written.
                if !art::is_decoration_line(&format!("* {t}")) {
                    body.push(t);
                    seen_content = true;
                }
            }
            LineRef::Heading { text, .. } => {
                seen_content = true;
                title.heading(text);
                if !text.is_empty() {
                    body.push(text);
                    headings.push(text.to_string());
                }
            }
            LineRef::Link { target, label } => {
                seen_content = true;
                if let Ok(url) = crate::urlnorm::resolve(base, target) {
                    let entry = crate::feed::is_dated_label(label);
                    entries += usize::from(entry);
                    links.offer(url, || label.to_string(), entry);
                }
            }
            LineRef::Preformatted { alt, text, .. } => {
                if block_in_body(alt, &text, !seen_content) {
                    for l in text.split('\n') {
                        body.push(l);
                    }
                } else if let Some(caption) = art::caption(alt) {
                    body.push(caption);
                }
                seen_content = true;
            }
        }
    }

    Page {
        title: match front.and_then(|f| f.title) {
            Some(declared) => title::one_line(&declared),
            None => title.title(base),
        },
        body: body.finish(),
        headings,
        links: links.into_links(),
        feed: entries >= crate::feed::MIN_GEMFEED_ENTRIES,
    }
}

/// Whether a preformatted block's text is readable prose, code or data worth indexing, rather
/// than ASCII art.
fn block_in_body(alt: &str, text: &str, leading: bool) -> bool {
    !art::classify(&art::Block { alt, text, leading }).art
}

/// The body being built: lines joined with `\n`, with blank runs collapsed as they arrive.
#[derive(Default)]
struct Body {
    text: String,
    /// A blank line was seen after some content and not yet written, because it is only
    /// written if more content follows.
    pending_blank: bool,
}

impl Body {
    fn push(&mut self, line: &str) {
        if line.trim().is_empty() {
            self.pending_blank = !self.text.is_empty();
            return;
        }
        if !self.text.is_empty() {
            self.text.push('\n');
            if self.pending_blank {
                self.text.push('\n');
            }
        }
        self.pending_blank = false;
        self.text.push_str(line);
    }

    fn finish(self) -> String {
        self.text
    }
}

/// Percent-decodes a path segment; bytes that do not form UTF-8 become U+FFFD and malformed
/// escapes are kept as written.
pub(crate) fn percent_decode(s: &str) -> String {
    percent_encoding::percent_decode_str(s)
        .decode_utf8_lossy()
        .into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(s: &str) -> Line {
        Line::Text(s.to_string())
    }
    fn link(target: &str, label: Option<&str>) -> Line {
        Line::Link {
            target: target.to_string(),
            label: label.map(str::to_string),
        }
    }
    fn heading(level: u8, s: &str) -> Line {
        Line::Heading {
            level,
            text: s.to_string(),
        }
    }
    fn pre(alt: &str, s: &str, closed: bool) -> Line {
        Line::Preformatted {
            alt: alt.to_string(),
            text: s.to_string(),
            closed,
        }
    }
    fn url(s: &str) -> Url {
        Url::parse(s).expect("test URL")
    }

    #[test]
    fn parse_single_lines() {
        let cases: &[(&str, Line)] = &[
            ("hello world", text("hello world")),
            ("  indented", text("  indented")),
            (
                "=> gemini://h/x Label here",
                link("gemini://h/x", Some("Label here")),
            ),
            ("=>gemini://h/x", link("gemini://h/x", None)),
            (
                "=> \t/a\t\tTabbed label\t",
                link("/a", Some("Tabbed label")),
            ),
            ("=>\t/a   ", link("/a", None)),
            ("=> /a \t ", link("/a", None)),
            ("=>", text("=>")),
            ("=>   \t", text("=>   \t")),
            ("# One", heading(1, "One")),
            ("#One", heading(1, "One")),
            ("## Two  ", heading(2, "Two")),
            ("### Three", heading(3, "Three")),
            ("#### Four", heading(3, "# Four")),
            ("#", heading(1, "")),
            ("* item", Line::ListItem("item".into())),
            ("*  spaced item", Line::ListItem("spaced item".into())),
            ("*item", text("*item")),
            ("*", text("*")),
            ("> quoted", Line::Quote("quoted".into())),
            (">quoted", Line::Quote("quoted".into())),
            (">   \tdeep", Line::Quote("deep".into())),
            (">", Line::Quote("".into())),
            (" => not a link", text(" => not a link")),
            (" # not a heading", text(" # not a heading")),
        ];
        for (src, want) in cases {
            assert_eq!(parse(src), vec![want.clone()], "input {src:?}");
        }
    }

    #[test]
    fn parse_line_endings_and_bom() {
        let want = vec![text("a"), heading(1, "b"), text(""), text("c")];
        let cases = [
            "a\n# b\n\nc",
            "a\n# b\n\nc\n",
            "a\r\n# b\r\n\r\nc\r\n",
            "a\r\n# b\n\r\nc\r",
            "\u{FEFF}a\n# b\n\nc\n",
            "\u{FEFF}a\r\n# b\r\n\r\nc",
        ];
        for src in cases {
            assert_eq!(parse(src), want, "input {src:?}");
        }
        // A CR inside a line is not a line ending, and only one BOM is dropped.
        assert_eq!(parse("a\rb"), vec![text("a\rb")]);
        assert_eq!(parse("\u{FEFF}\u{FEFF}x"), vec![text("\u{FEFF}x")]);
        assert_eq!(parse(""), Vec::<Line>::new());
        assert_eq!(parse("\n"), vec![text("")]);
        assert_eq!(parse("\n\n"), vec![text(""), text("")]);
    }

    #[test]
    fn parse_preformatted() {
        let cases: &[(&str, Vec<Line>)] = &[
            (
                "```  rust code \nfn main() {}\n=> /x not a link\n# not a heading\n``` ignored\nafter",
                vec![
                    pre("rust code", "fn main() {}\n=> /x not a link\n# not a heading", true),
                    text("after"),
                ],
            ),
            ("```\r\n  a  \r\n\r\nb\r\n```\r\n", vec![pre("", "  a  \n\nb", true)]),
            ("```\n```", vec![pre("", "", true)]),
            ("```alt\nrest\n* of doc", vec![pre("alt", "rest\n* of doc", false)]),
            ("```", vec![pre("", "", false)]),
            (
                "``````\n``\n```\n```\n```\n```",
                vec![pre("```", "``", true), pre("", "", true), pre("", "", false)],
            ),
            ("``not a fence", vec![text("``not a fence")]),
            (" ```indented", vec![text(" ```indented")]),
        ];
        for (src, want) in cases {
            assert_eq!(&parse(src), want, "input {src:?}");
        }
    }

    #[test]
    fn parse_non_ascii() {
        let src = "# 日本語の見出し\n* café crème\n> naïve «quote»\n=> /ü Ünïcödé\nΕλληνικά 🌍";
        assert_eq!(
            parse(src),
            vec![
                heading(1, "日本語の見出し"),
                Line::ListItem("café crème".into()),
                Line::Quote("naïve «quote»".into()),
                link("/ü", Some("Ünïcödé")),
                text("Ελληνικά 🌍"),
            ]
        );
    }

    #[test]
    fn decode_is_lossy_and_drops_bom() {
        let cases: &[(&[u8], &str, bool)] = &[
            (b"plain", "plain", true),
            (b"\xEF\xBB\xBFwith bom", "with bom", true),
            (b"bad \xFF byte", "bad \u{FFFD} byte", false),
            (b"cut \xE6\x97", "cut \u{FFFD}", false),
            ("caf\u{e9}".as_bytes(), "café", true),
            (b"\xEF\xBB", "\u{FFFD}", false),
            (b"", "", true),
        ];
        for (bytes, want, borrowed) in cases {
            let got = decode(bytes);
            assert_eq!(got, *want, "input {bytes:?}");
            assert_eq!(
                matches!(got, Cow::Borrowed(_)),
                *borrowed,
                "input {bytes:?}"
            );
        }
        assert_eq!(
            parse(&decode(b"\xEF\xBB\xBF# T\xC3\xA9st \xC0\n")),
            vec![heading(1, "Tést \u{FFFD}")]
        );
    }

    #[test]
    fn front_matter_gives_the_title_and_stays_out_of_the_text() {
        let base = url("gemini://h/blog/post.gmi");
        let src = "+++ type = \"blog\" author = \"ann\" title = \"Weekly   report\" +++\n\n\
                   # Introduction Hey everyone!\nBody text.\n";
        let page = extract(&base, src);
        assert_eq!(page.title, "Weekly report");
        assert_eq!(page.body, "Introduction Hey everyone!\nBody text.");
        let yaml = "---\nlayout: post\n---\n# Real heading\ntext\n";
        let page = extract(&base, yaml);
        assert_eq!(page.title, "Real heading");
        assert!(!page.body.contains("layout"), "{:?}", page.body);
    }

    #[test]
    fn title_rules() {
        let page = "gemini://h/dir/page.gmi";
        let long = "x".repeat(500);
        let cut = "x".repeat(MAX_TITLE_CHARS);
        let accents = "e\u{301}".repeat(150);
        let cases: &[(&str, &str, &str)] = &[
            ("text first\n## Second level\n# First", page, "Second level"),
            (
                "\n   \n#  \n* item\n> quote\n=> /x label\nBody line  \n# Late",
                page,
                "Late",
            ),
            (
                "\n   \n* item\n> quote\n=> /x label\n  Body   line  \n",
                page,
                "Body line",
            ),
            ("", page, "page.gmi"),
            ("\n\n* only a list\n=> /x", page, "page.gmi"),
            ("```\nPre text\n```", page, "page.gmi"),
            ("", "gemini://h/dir/sub/", "sub"),
            ("", "gemini://h/caf%C3%A9%20menu.gmi", "café menu.gmi"),
            ("", "gemini://h/bad%FF%zz", "bad\u{FFFD}%zz"),
            ("", "gemini://h/%20/", "h"),
            ("", "gemini://h/", "h"),
            ("", "gemini://example.org", "example.org"),
            ("", "gemini://[::1]:1966/", "[::1]"),
            ("", "mailto:someone@example.org", ""),
            ("# tab\tand\r\ncontrol\u{7}", page, "tab and"),
            ("# a\u{7}b", page, "a b"),
            ("=> ./ Back\n# ~~~~\n\n# Five days\n", page, "Five days"),
            ("# * * *\nSome text", page, "Some text"),
        ];
        for (src, base, want) in cases {
            assert_eq!(
                title_of(&parse(src), &url(base)),
                *want,
                "input {src:?} at {base}"
            );
        }
        let base = url(page);
        assert_eq!(title_of(&parse(&long), &base), cut);
        let t = title_of(&parse(&format!("# {accents}")), &base);
        assert_eq!(t, "e\u{301}".repeat(MAX_TITLE_CHARS / 2));
        let odd = format!("é{accents}");
        let t = title_of(&parse(&odd), &base);
        assert_eq!(
            t.chars().count(),
            MAX_TITLE_CHARS - 1,
            "no accent cut off its letter"
        );
        let giant = format!("a{}", "\u{301}".repeat(1000));
        assert_eq!(
            title_of(&parse(&giant), &base).chars().count(),
            MAX_TITLE_CHARS
        );
    }

    #[test]
    fn extract_body_and_headings() {
        let src = "\n\n# Title\n\n\n\nIntro text.\n=> /a Link label\n\n=> /b\n\n* one\n* two\n\
                   > said\n## \n### Sub\n```ascii\n  /\\_/\\\n\n\n ( o.o )\n```\n\n\n";
        let page = extract(&url("gemini://h/"), src);
        assert_eq!(page.title, "Title");
        assert_eq!(page.headings, vec!["Title".to_string(), "Sub".to_string()]);
        // The `ascii` block is a drawing of a cat: art by design, so it stays out of the body
        // (its alt text says nothing more, so no caption either).
        assert_eq!(page.body, "Title\n\nIntro text.\n\none\ntwo\nsaid\nSub");
        assert!(
            !page.body.contains("Link label"),
            "link labels stay out of the body"
        );
        assert_eq!(extract(&url("gemini://h/"), "").body, "");
        assert_eq!(extract(&url("gemini://h/"), "\n \n\t\n").body, "");
    }

    #[test]
    fn extract_resolves_links() {
        let src = "=> ../x up\n=> sub/\n=> /abs Absolute\n=>\tgemini://Other.example:1965/p\tOther\n\
                   => mailto:someone@example.org Mail\n=> https://web.example/ Web\n\
                   => ../x again\n=> http://[bad bad\n=> //other.example/q\n```\n=> /pre hidden\n```";
        let page = extract(&url("gemini://h/dir/page.gmi"), src);
        let got: Vec<(&str, &str)> = page
            .links
            .iter()
            .map(|l| (l.url.as_str(), l.label.as_str()))
            .collect();
        let want = vec![
            ("gemini://h/x", "up"),
            ("gemini://h/dir/sub/", ""),
            ("gemini://h/abs", "Absolute"),
            ("gemini://other.example/p", "Other"),
            ("mailto:someone@example.org", "Mail"),
            ("https://web.example/", "Web"),
            ("gemini://h/x", "again"),
            ("gemini://other.example/q", ""),
        ];
        assert_eq!(got, want);
    }

    #[test]
    fn never_panics() {
        let base = url("gemini://h/dir/page.gmi");
        let mut inputs: Vec<String> = vec![
            String::new(),
            "```".repeat(1000),
            "```\n".repeat(1001),
            "```\r\n".repeat(1000),
            "\r".repeat(1000),
            "\r\n".repeat(1000),
            "\u{FEFF}".repeat(100),
            "=>".repeat(10_000),
            "=> ".repeat(10_000),
            "#".repeat(100_000),
            "* ".repeat(10_000),
            ">".repeat(10_000),
            format!("# {}", "日".repeat(100_000)),
            format!("=> {} {}", "x".repeat(100_000), "é".repeat(100_000)),
            "a\u{301}\u{301}\u{301}".repeat(10_000),
            "\0\0\0\n\t\t\t\n\u{b}\u{c}\u{85}\u{2028}".to_string(),
        ];
        for b in 0..=255u8 {
            for prefix in [&b""[..], b"=> ", b"# ", b"```", b"* ", b">", b"\xEF\xBB"] {
                let mut bytes = prefix.to_vec();
                bytes.extend([b, b, b'\n', b, b'\r', b'\n', b'x', b]);
                inputs.push(decode(&bytes).into_owned());
            }
        }
        let all: Vec<u8> = (0..=255u8).collect();
        inputs.push(decode(&all).into_owned());
        inputs.push(decode(&all.repeat(50)).into_owned());

        for (i, src) in inputs.iter().enumerate() {
            let lines = parse(src);
            let t = title_of(&lines, &base);
            assert!(
                !t.is_empty(),
                "input {i}: a URL with a host always gives a title"
            );
            assert!(
                t.chars().count() <= MAX_TITLE_CHARS,
                "input {i}: title too long"
            );
            let page = extract(&base, src);
            assert!(
                !page.body.contains("\n\n\n"),
                "input {i}: blank runs collapse"
            );
        }
    }
}
