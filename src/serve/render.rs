//! The safe gemtext builder of `geode serve`: [`Gemtext`] writes every line with a prefix it
//! chose, and the escaping functions place outside text after it. Every page goes through here;
//! nothing else in the frontend writes gemtext. Pure.
//!
//! # Escaping
//!
//! Gemtext decides a line's kind by its first characters: `=>` link, `#` heading, `*` item, `>`
//! quote, three backticks a preformatted fence (and `=:` a prompt in some clients). Every line
//! written here starts with a prefix this module chose; text that came from a crawled page or a
//! query is only ever placed after it, in one of three ways:
//!
//! - [`one_line`]: control characters (CR, LF, tabs, NEL), Unicode line and paragraph separators
//!   and bidirectional overrides become spaces, blank runs collapse, the ends are trimmed. Used
//!   for everything that follows a prefix (`=> URL `, `# `, `> `, `* `).
//! - [`neutral`]: [`one_line`], and when the result starts with a markup character (`=`, `#`,
//!   `*`, `>`, a backtick) a ZERO WIDTH SPACE (U+200B) goes in front. Clients that trim leading
//!   blanks before classifying a line do not trim U+200B (it is not White_Space in Unicode), and
//!   it shows nothing. Used for text lines that would otherwise start with outside text.
//! - [`safe_url`]: a URL from the index is written after `=> ` only with its blanks and control
//!   characters percent-encoded, so it ends where the label begins.
//!
//! Snippets carry `**` around matched words; Gemini has no emphasis, so result pages drop the
//! marks and show the snippet as a quote line, and the verbose page keeps them to show what
//! matched (the web pages show them as `<mark>`, cut by [`marked`]). A result lacking some of the query's words says `missing: ...` on its facts line;
//! one with near-duplicates links to them (`similar:URL`); a query that looked misspelled gets a
//! "did you mean" link first.

use std::fmt::Write as _;

/// Zero width space: put in front of text that would otherwise read as markup.
const NEUTRALISER: char = '\u{200b}';

/// Text on one line: no line breaks, no control characters, no bidi overrides, blanks collapsed.
pub fn one_line(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut pending_space = false;
    for c in text.chars() {
        let blank = c.is_whitespace() || c.is_control() || is_bidi_control(c);
        if blank {
            pending_space = !out.is_empty();
            continue;
        }
        if pending_space {
            out.push(' ');
            pending_space = false;
        }
        out.push(c);
    }
    out
}

/// Bidirectional embedding, override and isolate controls: they could make a label read as
/// something else on screen (or flip a URL around).
pub(super) fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}')
}

/// [`one_line`], made safe to start a text line with.
pub fn neutral(text: &str) -> String {
    let line = one_line(text);
    if line.starts_with(['=', '#', '*', '>', '`']) {
        format!("{NEUTRALISER}{line}")
    } else {
        line
    }
}

/// A URL that cannot leave the link's URL field: blanks and control characters percent-encoded.
pub fn safe_url(url: &str) -> String {
    let mut out = String::with_capacity(url.len());
    for c in url.chars() {
        if c.is_whitespace() || c.is_control() || is_bidi_control(c) {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                let _ = write!(out, "%{b:02X}");
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Snippet text without the `**` match marks.
pub fn strip_marks(snippet: &str) -> String {
    snippet.replace("**", "")
}

/// A snippet cut at its `**` match marks: `(true, word)` for the marked stretches, `(false,
/// text)` between them, empty stretches left out. A mark left open (an odd `**`) marks nothing:
/// the text after it is plain, as [`strip_marks`] would show it.
pub fn marked(snippet: &str) -> Vec<(bool, &str)> {
    let pieces: Vec<&str> = snippet.split("**").collect();
    let closed = if pieces.len() % 2 == 0 {
        // An odd number of marks: the last one opens a stretch that never closes.
        pieces.len() - 1
    } else {
        pieces.len()
    };
    pieces
        .iter()
        .enumerate()
        .filter(|(_, piece)| !piece.is_empty())
        .map(|(i, piece)| (i % 2 == 1 && i < closed, *piece))
        .collect()
}

/// At most `max` characters of `text`, with an ellipsis when cut.
pub(super) fn truncate(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}

/// A gemtext page under construction. Each method writes whole lines, escaped as the module doc
/// says, so no caller can produce a line of the wrong kind.
#[derive(Debug, Default)]
pub struct Gemtext {
    out: String,
}

impl Gemtext {
    pub fn new() -> Gemtext {
        Gemtext::default()
    }

    /// `#`, `##` or `###` heading (levels outside 1-3 are clamped).
    pub fn heading(&mut self, level: usize, text: &str) -> &mut Self {
        let hashes = &"###"[..level.clamp(1, 3)];
        self.line(&format!("{hashes} {}", one_line(text)))
    }

    /// A text line; text starting like markup is neutralised.
    pub fn text(&mut self, text: &str) -> &mut Self {
        let line = neutral(text);
        self.line(&line)
    }

    /// A quote line (`> text`).
    pub fn quote(&mut self, text: &str) -> &mut Self {
        self.line(&format!("> {}", neutral(text)))
    }

    /// A list item (`* text`).
    pub fn item(&mut self, text: &str) -> &mut Self {
        self.line(&format!("* {}", neutral(text)))
    }

    /// A link line; without a usable label, the URL is its own label.
    pub fn link(&mut self, url: &str, label: &str) -> &mut Self {
        let url = safe_url(url.trim());
        if url.is_empty() {
            return self.text(label);
        }
        let label = one_line(label);
        if label.is_empty() {
            self.line(&format!("=> {url}"))
        } else {
            self.line(&format!("=> {url} {label}"))
        }
    }

    /// A preformatted block. No line inside can close it: lines starting with a backtick (after
    /// blanks) are neutralised, control characters become spaces.
    pub fn preformatted(&mut self, alt: &str, text: &str) -> &mut Self {
        self.line(&format!("```{}", one_line(alt)));
        for line in text.lines() {
            let line: String = line
                .chars()
                .map(|c| {
                    if c.is_control() || is_bidi_control(c) {
                        ' '
                    } else {
                        c
                    }
                })
                .collect();
            let line = line.trim_end();
            if line.trim_start().starts_with('`') {
                self.line(&format!("{NEUTRALISER}{line}"));
            } else {
                self.line(line);
            }
        }
        self.line("```")
    }

    pub fn blank(&mut self) -> &mut Self {
        self.line("")
    }

    fn line(&mut self, line: &str) -> &mut Self {
        self.out.push_str(line);
        self.out.push('\n');
        self
    }

    pub fn finish(&mut self) -> String {
        std::mem::take(&mut self.out)
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// The kinds a gemtext client sees, by the rules of the spec plus the lenient ones some
    /// clients apply (leading blanks trimmed, `=:` prompts).
    pub(in crate::serve) fn kind(line: &str) -> &'static str {
        for candidate in [line, line.trim_start()] {
            if candidate.starts_with("=>") || candidate.starts_with("=:") {
                return "link";
            }
            if candidate.starts_with("```") {
                return "fence";
            }
            if candidate.starts_with('#') {
                return "heading";
            }
            if candidate.starts_with("* ") {
                return "item";
            }
            if candidate.starts_with('>') {
                return "quote";
            }
        }
        "text"
    }

    pub(in crate::serve) const HOSTILE: &[&str] = &[
        "=> gemini://evil/ click",
        "  => gemini://evil/",
        "\t=>gemini://evil/",
        "# Fake heading",
        "* item",
        "> quote",
        "```",
        "   ```pre",
        "=: spartan://evil/",
        "line one\n=> gemini://evil/",
        "line one\r\n=> gemini://evil/",
        "a\u{2028}=> gemini://evil/",
        "a\u{85}=> gemini://evil/",
        "\u{202e}=> gemini://evil/",
        "\n\n```\n=> gemini://evil/",
    ];

    #[test]
    fn escaped_text_never_becomes_markup_or_a_new_line() {
        for input in HOSTILE {
            let mut g = Gemtext::new();
            g.text(input)
                .quote(input)
                .item(input)
                .heading(2, input)
                .link("gemini://ok.test/", input)
                .link(input, "label");
            let page = g.finish();
            let lines: Vec<&str> = page.lines().collect();
            assert_eq!(lines.len(), 6, "{input:?} made extra lines: {page:?}");
            let kinds: Vec<&str> = lines.iter().map(|l| kind(l)).collect();
            assert_eq!(
                kinds,
                ["text", "quote", "item", "heading", "link", "link"],
                "{input:?}: {page:?}"
            );
            // The link whose URL was hostile still points nowhere but at an escaped URL.
            assert!(!lines[5].contains(" gemini://evil/ "), "{}", lines[5]);
            assert!(
                lines[4].starts_with("=> gemini://ok.test/ "),
                "{}",
                lines[4]
            );
        }
    }

    #[test]
    fn neutral_leaves_plain_text_alone_and_marks_markup() {
        let cases = [
            ("plain words", "plain words"),
            ("  spaced   out  ", "spaced out"),
            ("a\nb\r\nc", "a b c"),
            ("=> x", "\u{200b}=> x"),
            ("  # x", "\u{200b}# x"),
            ("```", "\u{200b}```"),
            ("", ""),
        ];
        for (input, want) in cases {
            assert_eq!(neutral(input), want, "{input:?}");
        }
    }

    #[test]
    fn preformatted_blocks_cannot_be_closed_from_inside() {
        let mut g = Gemtext::new();
        g.preformatted("alt\n=> x", "fine\n```\n  ```\n=> inside is fine");
        let page = g.finish();
        let fences = page.lines().filter(|l| kind(l) == "fence").count();
        assert_eq!(fences, 2, "{page}");
        assert!(page.starts_with("```alt => x\n"), "{page}");
    }

    #[test]
    fn marks_split_snippets() {
        assert_eq!(
            marked("the **kettle** sings **loud**"),
            [
                (false, "the "),
                (true, "kettle"),
                (false, " sings "),
                (true, "loud")
            ]
        );
        assert_eq!(marked("plain"), [(false, "plain")]);
        assert_eq!(marked(""), Vec::<(bool, &str)>::new());
        assert_eq!(marked("**a****b**"), [(true, "a"), (true, "b")]);
        // An unclosed mark marks nothing; the text reads as strip_marks shows it.
        assert_eq!(
            marked("a **b** c **d"),
            [(false, "a "), (true, "b"), (false, " c "), (false, "d")]
        );
        let text: String = marked("x **y** **z").iter().map(|(_, t)| *t).collect();
        assert_eq!(text, strip_marks("x **y** **z"));
    }

    #[test]
    fn urls_cannot_grow_a_label() {
        assert_eq!(safe_url("gemini://a.test/x y"), "gemini://a.test/x%20y");
        assert_eq!(safe_url("gemini://a.test/\n=>"), "gemini://a.test/%0A=>");
        assert_eq!(safe_url("gemini://a.test/é"), "gemini://a.test/é");
    }
}
