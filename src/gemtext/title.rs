//! Titles: the title of a page ([`title_of`]: its first heading, else its first text line, else
//! its URL), and a title as a result list shows it ([`clean_title`]: decoration such as
//! `=== x ===` or `~*~ x ~*~` stripped). Pure.

use unicode_segmentation::UnicodeSegmentation;
use url::Url;

use super::{percent_decode, Line, LineRef, MAX_TITLE_CHARS};
use crate::gemtext::art;

/// Marks where a long title was cut.
const ELLIPSIS: char = '…';

/// Longest title a result list shows, in characters, ellipsis included.
const TITLE_MAX_CHARS: usize = 120;

/// The title rule: first heading, else first non-empty text line, else the URL's last segment.
///
/// More precisely: the first heading of any level with a letter or digit in it, else the first Text line that is
/// neither blank nor decoration (`=====`), else the last non-empty path segment of `base`
/// (percent-decoded), else its host.
/// Whitespace runs become single spaces and the result is cut to [`MAX_TITLE_CHARS`]; it is
/// empty only when `base` has no host.
pub fn title_of(lines: &[Line], base: &Url) -> String {
    let mut finder = TitleFinder::default();
    for line in lines {
        match line.as_ref() {
            LineRef::Heading { text, .. } => finder.heading(text),
            LineRef::Text(t) if finder.wants_text() => finder.text(t, art::is_decoration_line(t)),
            _ => {}
        }
        if finder.found_heading() {
            break;
        }
    }
    finder.title(base)
}

/// [`title_of`] as the lines of a page come, one at a time: its first fitting heading, and the
/// first fitting text line in case no heading comes.
#[derive(Debug, Default)]
pub(super) struct TitleFinder {
    heading: Option<String>,
    text: Option<String>,
}

impl TitleFinder {
    /// A heading line's text.
    pub(super) fn heading(&mut self, text: &str) {
        // `# ~~~~` is a rule drawn as a heading, not a title.
        if self.heading.is_none() && text.chars().any(char::is_alphanumeric) {
            self.heading = non_blank(text);
        }
    }

    /// A text line, and whether it is decoration (`=====`).
    pub(super) fn text(&mut self, line: &str, decoration: bool) {
        if self.wants_text() && !decoration {
            self.text = non_blank(line);
        }
    }

    /// Whether a text line could still matter.
    fn wants_text(&self) -> bool {
        self.heading.is_none() && self.text.is_none()
    }

    fn found_heading(&self) -> bool {
        self.heading.is_some()
    }

    /// The title, from `base` when no line gave one.
    pub(super) fn title(self, base: &Url) -> String {
        let segment = || {
            base.path_segments()?
                .rfind(|s| !s.is_empty())
                .map(percent_decode)
                .and_then(|s| non_blank(&s))
        };
        self.heading
            .or(self.text)
            .or_else(segment)
            .or_else(|| base.host_str().and_then(non_blank))
            .unwrap_or_default()
    }
}

/// The cleaned title form of `s`, or `None` if nothing visible is left.
fn non_blank(s: &str) -> Option<String> {
    let cleaned = one_line(s);
    (!cleaned.is_empty()).then_some(cleaned)
}

/// Collapses whitespace and control characters to single spaces (a title is one line) and cuts
/// to [`MAX_TITLE_CHARS`], preferring a grapheme boundary so accents stay on their letters.
pub(super) fn one_line(s: &str) -> String {
    let mut words = String::new();
    for word in s
        .split(|c: char| c.is_whitespace() || c.is_control())
        .filter(|w| !w.is_empty())
    {
        if !words.is_empty() {
            words.push(' ');
        }
        words.push_str(word);
    }
    if words.chars().count() <= MAX_TITLE_CHARS {
        return words;
    }
    let mut out = String::new();
    let mut chars = 0;
    for g in words.graphemes(true) {
        let n = g.chars().count();
        if chars + n > MAX_TITLE_CHARS {
            break;
        }
        chars += n;
        out.push_str(g);
    }
    if out.is_empty() {
        // One giant grapheme (a letter with hundreds of combining marks): cut inside it.
        out = words.chars().take(MAX_TITLE_CHARS).collect();
    }
    out.trim_end().to_string()
}

/// A title as a result list shows it: whitespace collapsed, decoration stripped from both ends
/// (`=== My Capsule ===` is `My Capsule`), at most 120 characters. When stripping leaves
/// nothing (`...`), the collapsed title is kept as it is.
pub fn clean_title(title: &str) -> String {
    let collapsed = title.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut s = collapsed.as_str();
    loop {
        let before = s.len();
        s = strip_end_decoration(strip_start_decoration(s));
        if s.len() == before {
            break;
        }
    }
    let cleaned = if s.is_empty() { collapsed.as_str() } else { s };
    if cleaned.chars().count() <= TITLE_MAX_CHARS {
        return cleaned.to_string();
    }
    let mut out: String = cleaned.chars().take(TITLE_MAX_CHARS - 1).collect();
    out.truncate(out.trim_end().len());
    out.push(ELLIPSIS);
    out
}

/// How readily a character is taken for decoration at the ends of a title.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Deco {
    /// Part of the title (letters, digits, quotes, brackets, most punctuation).
    No,
    /// Decoration when apart from the words, or in a run of three (`C++`, `C#` and `.plan` keep
    /// theirs): `- + # . < > / \ : « »`.
    Light,
    /// Decoration when apart from the words or doubled (`**bold**`): `= ~ * _ | ^ \` • ·`.
    Frame,
    /// Always decoration: box drawing, blocks, shapes, stars, arrows, dingbats, emoji.
    Strong,
}

fn deco(c: char) -> Deco {
    match c {
        '-' | '+' | '#' | '.' | '<' | '>' | '/' | '\\' | ':' | '«' | '»' => Deco::Light,
        '=' | '~' | '*' | '_' | '|' | '^' | '`' | '•' | '·' => Deco::Frame,
        _ => match c as u32 {
            0x2190..=0x21FF // arrows
            | 0x2500..=0x27BF // box drawing, blocks, shapes, misc symbols, dingbats
            | 0x2B00..=0x2BFF // misc symbols and arrows
            | 0xE000..=0xF8FF // private use (icon fonts)
            | 0xFE00..=0xFE0F // variation selectors
            | 0x200D // zero-width joiner (emoji sequences)
            | 0x1F000..=0x1FAFF // emoji and pictographs
            => Deco::Strong,
            _ => Deco::No,
        },
    }
}

/// Whether a run of decoration characters at one end of a title goes: `apart` tells whether
/// whitespace (or nothing) separates it from the rest.
fn strip_run(run: &str, apart: bool) -> bool {
    let kinds: Vec<Deco> = run.chars().map(deco).collect();
    apart
        || kinds.contains(&Deco::Strong)
        || kinds.len() >= 3
        || (kinds.len() >= 2 && kinds.iter().all(|k| *k != Deco::Light))
}

fn strip_start_decoration(s: &str) -> &str {
    let s = s.trim_start();
    let end = s
        .char_indices()
        .find(|&(_, c)| deco(c) == Deco::No || c.is_whitespace())
        .map_or(s.len(), |(i, _)| i);
    let (run, rest) = s.split_at(end);
    let apart = rest.is_empty() || rest.starts_with(char::is_whitespace);
    if !run.is_empty() && strip_run(run, apart) {
        rest.trim_start()
    } else {
        s
    }
}

fn strip_end_decoration(s: &str) -> &str {
    let s = s.trim_end();
    let start = s
        .char_indices()
        .rev()
        .find(|&(_, c)| deco(c) == Deco::No || c.is_whitespace())
        .map_or(0, |(i, c)| i + c.len_utf8());
    let (rest, run) = s.split_at(start);
    let apart = rest.is_empty() || rest.ends_with(char::is_whitespace);
    if !run.is_empty() && strip_run(run, apart) {
        rest.trim_end()
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clean_title_table() {
        let cases: &[(&str, &str)] = &[
            ("=== My Capsule ===", "My Capsule"),
            ("~*~ Welcome to my gemlog ~*~", "Welcome to my gemlog"),
            ("▓▒░ Neon ░▒▓", "Neon"),
            ("# Title", "Title"),
            ("  C++ notes ", "C++ notes"),
            ("Notes on C++", "Notes on C++"),
            ("C#", "C#"),
            (".plan", ".plan"),
            ("...", "..."),
            ("★ Stars ★", "Stars"),
            ("Hello — world", "Hello — world"),
            ("**Bold title**", "Bold title"),
            ("-- Page 2 --", "Page 2"),
            ("🚀 Launch log 🚀", "Launch log"),
            ("» My log «", "My log"),
            ("Why? (a question)", "Why? (a question)"),
            ("#1 hits", "#1 hits"),
            ("  lots \t of\n space  ", "lots of space"),
            ("═══╡ Box ╞═══", "Box"),
            ("", ""),
            ("   ", ""),
            ("🚀", "🚀"),
        ];
        for (title, want) in cases {
            assert_eq!(clean_title(title), *want, "title {title:?}");
        }
        let long = "word ".repeat(60);
        let got = clean_title(&long);
        assert_eq!(got.chars().count(), 120, "{got}");
        assert!(got.ends_with("word…") || got.ends_with(" wor…") || got.ends_with('…'));
        assert!(!got.contains("  "));
    }
}
