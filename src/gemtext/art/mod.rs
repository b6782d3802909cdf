//! The ASCII-art classifier: decides whether a preformatted block is decoration (figlet banners,
//! framed banners, drawings, braille or block-element pictures, dividers) or content worth indexing (code, shell
//! sessions, tables, poems), and whether a line of ordinary text is pure decoration.
//!
//! It is a short, ordered list of rules over measures of the block; the first rule that applies
//! decides, and the [`Verdict`] names it and prints the measures, so every decision can be
//! explained. The measures are Unicode-aware: text is read as grapheme clusters, and characters
//! are judged by the Unicode block they come from (braille patterns, block elements, box
//! drawing, geometric shapes, dingbat stars), never by bytes.
//!
//! It is not a general language detector and does no I/O. It judges one block at a time; the
//! only thing it knows about the page is whether the block is *leading* (nothing with content
//! came before it), which the caller works out.

mod alt;
mod frame;
mod glyphs;
mod measures;
#[cfg(test)]
mod tests;

use alt::*;
use glyphs::*;
use measures::*;

/// Only this many lines of a block are measured: a block's opening is representative, and a
/// pasted 100,000-line log should not cost more than a page of prose.
const MAX_LINES: usize = 400;

/// A block drawn from at most this many distinct glyphs (over at least [`PALETTE_MIN_GRAPHEMES`])
/// repeats a small palette, as fonts and drawings do; prose and code use far more.
const PALETTE_MAX: usize = 12;
const PALETTE_MIN_GRAPHEMES: usize = 40;

/// A leading block with fewer words than this is a banner even if its words are real (a name
/// framed in a box).
const LEADING_MIN_WORDS: usize = 3;

/// A preformatted block as the classifier sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Block<'a> {
    /// The alt text after the opening fence, as written.
    pub alt: &'a str,
    /// The lines of the block joined with `\n`.
    pub text: &'a str,
    /// True when nothing with content (text, heading, link, another block) precedes the block
    /// on its page: where capsules put their banners.
    pub leading: bool,
}

/// The rule that decided a [`Verdict`], in the order the rules are tried.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Rule {
    /// Nothing but whitespace: nothing to index either way.
    Empty,
    /// Terminal colour escapes: an ANSI-art picture or a terminal screenshot.
    AnsiArt,
    /// Block elements used as the bars of a labelled bar chart.
    BarChart,
    /// Braille patterns, block elements, geometric shapes or dingbat stars dominate.
    ArtCharacters,
    /// The alt text names a programming language, a file, or a kind of content (table,
    /// output, poem...).
    AltContent,
    /// Every line is a rule line: repeated dashes, dots, stars or box-drawing strokes.
    Decoration,
    /// The alt text calls the block art (ascii, banner, logo...) and the content agrees.
    AltArt,
    /// The alt text calls the block art, but it reads as prose or code.
    WordsDespiteAlt,
    /// A title, name or greeting in a decorative box-drawing frame, without columns: a banner
    /// anywhere on the page.
    FramedBanner,
    /// A shell or REPL prompt: a session, whatever its output looks like.
    ShellPrompt,
    /// Most of the block sits on lines that hold no word and few letters: a drawing or a
    /// figlet font made of punctuation.
    Drawing,
    /// Few words, and the block repeats itself: long runs of one grapheme, or a palette of a
    /// dozen glyphs used over and over (fonts drawn with `8`, `S:::S` or `/_\`).
    Repetition,
    /// A leading block that does not read as prose, code or data, or holds at most a couple of
    /// words: a banner.
    Leading,
    /// None of the above: words, identifiers or numbers dominate.
    ReadsAsContent,
}

impl Rule {
    /// A short stable name, for logs and the evaluation script.
    pub fn name(self) -> &'static str {
        match self {
            Rule::Empty => "empty",
            Rule::AnsiArt => "ansi-art",
            Rule::BarChart => "bar-chart",
            Rule::ArtCharacters => "art-characters",
            Rule::AltContent => "alt-content",
            Rule::Decoration => "decoration",
            Rule::AltArt => "alt-art",
            Rule::WordsDespiteAlt => "words-despite-alt",
            Rule::FramedBanner => "framed-banner",
            Rule::ShellPrompt => "shell-prompt",
            Rule::Drawing => "drawing",
            Rule::Repetition => "repetition",
            Rule::Leading => "leading",
            Rule::ReadsAsContent => "reads-as-content",
        }
    }

    /// Whether a verdict by this rule marks the block as art.
    pub fn is_art(self) -> bool {
        matches!(
            self,
            Rule::AnsiArt
                | Rule::ArtCharacters
                | Rule::Decoration
                | Rule::AltArt
                | Rule::FramedBanner
                | Rule::Drawing
                | Rule::Repetition
                | Rule::Leading
        )
    }
}

/// The classifier's decision on one block, with the rule that made it and the measures behind it.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    pub art: bool,
    pub rule: Rule,
    /// The measures that the rule looked at, as `name=value` pairs.
    pub detail: String,
}

impl Verdict {
    fn new(rule: Rule, detail: String) -> Verdict {
        Verdict {
            art: rule.is_art(),
            rule,
            detail,
        }
    }
}

/// Classifies one preformatted block. Never fails; an empty block is not art.
pub fn classify(block: &Block<'_>) -> Verdict {
    let alt = alt_kind(block.alt);
    let m = Measures::of(block.text);
    let detail = m.describe();
    let with_alt = |what: &str| format!("alt {what} {:?}; {detail}", block.alt.trim());

    if m.lines == 0 {
        return Verdict::new(Rule::Empty, detail);
    }
    // One colour escape per line or more is a picture painted in a terminal; a stray one is not.
    if m.escapes >= 3 && m.escapes * 2 >= m.lines {
        return Verdict::new(Rule::AnsiArt, detail);
    }
    if m.art_chars * 5 >= m.graphemes {
        if m.bar_lines * 5 >= m.art_lines * 4 && m.bar_lines >= 2 {
            return Verdict::new(Rule::BarChart, detail);
        }
        return Verdict::new(Rule::ArtCharacters, detail);
    }
    if let AltKind::Content(word) = alt {
        return Verdict::new(Rule::AltContent, with_alt(&format!("names {word:?}")));
    }
    if m.content_lines == 0 {
        return Verdict::new(Rule::Decoration, detail);
    }
    if let AltKind::Art(word) = alt {
        // The author's own word outweighs the shape of the text, unless the block plainly reads
        // as sentences, code or a listing (`ascii art` over a `tree` listing): a banner with a
        // caption inside its frame is still a banner.
        let plain = m.alnum_share() >= 0.7 && m.word_share() >= 0.7;
        if plain && m.drawing_share() < 0.2 && m.drawing_line_share() < 0.2 {
            return Verdict::new(Rule::WordsDespiteAlt, with_alt(&format!("says {word:?}")));
        }
        return Verdict::new(Rule::AltArt, with_alt(&format!("says {word:?}")));
    }
    if frame::is_framed_banner(block.text) {
        return Verdict::new(Rule::FramedBanner, detail);
    }
    if m.prompts > 0 {
        return Verdict::new(Rule::ShellPrompt, detail);
    }
    // A single line is too little to judge by shape; only its characters (above) can condemn it.
    // Code with one-letter names (`a -> { b, c }`, `x=['a', 'b']`) can look like line art; its
    // statements give it away.
    if m.lines >= 2 && m.code_share() < 0.5 {
        let punctuation_font = m.alnum_share() < 0.3 && m.word_share() < 0.3;
        // Small pictures with a caption (`(o o) boo!`) have few drawing graphemes but mostly
        // drawing lines, and their symbols stand apart from letters, unlike code's `f(x)`.
        let small_picture = m.drawing_line_share() >= 0.5 && m.loose_share() >= 0.5;
        if m.drawing_share() >= 0.5 || punctuation_font || small_picture {
            return Verdict::new(Rule::Drawing, detail);
        }
    }
    if m.content_lines >= 2 {
        let small_palette =
            m.content_graphemes >= PALETTE_MIN_GRAPHEMES && m.palette.len() <= PALETTE_MAX;
        if (m.repeat_share() >= 0.3 || small_palette) && m.word_share() < 0.3 {
            return Verdict::new(Rule::Repetition, detail);
        }
    }
    // Where banners live, a block must read as content and say a little more than a name.
    if block.leading && !(m.reads_as_content() && m.words >= LEADING_MIN_WORDS) {
        return Verdict::new(Rule::Leading, detail);
    }
    Verdict::new(Rule::ReadsAsContent, detail)
}

/// Whether a line of ordinary text is pure decoration: a separator of repeated symbols
/// (`----`, `* * *`, `~~~~`, `═══`) or one with a tiny ornament in the middle (`---- x ----`,
/// `~~~ § ~~~`). Lines holding a word or a number of two or more digits are never decoration, so
/// `---- Chapter 2 ----` and `== 2024 ==` stay.
pub fn is_decoration_line(line: &str) -> bool {
    // Fast path for prose: two ASCII letters or digits are two alphanumeric graphemes, which no
    // decoration line has. This runs on every text line of every page.
    if line
        .bytes()
        .filter(u8::is_ascii_alphanumeric)
        .nth(1)
        .is_some()
    {
        return false;
    }
    let graphemes: Vec<&str> = graphemes(line).filter(|g| kind(g) != Kind::Space).collect();
    if graphemes.len() < 3 {
        return false;
    }
    let alnum = graphemes.iter().filter(|g| kind(g) == Kind::Alnum).count();
    if alnum == 0 {
        return true;
    }
    if alnum > 1 {
        return false;
    }
    // One letter or digit framed by runs of symbols on both sides, like `---- x ----`.
    let is_symbol = |g: &&str| matches!(kind(g), Kind::Symbol | Kind::Frame | Kind::ArtChar);
    let lead = graphemes
        .iter()
        .take_while(|g| is_symbol(g) && **g == graphemes[0])
        .count();
    let last = graphemes[graphemes.len() - 1];
    let trail = graphemes
        .iter()
        .rev()
        .take_while(|g| is_symbol(g) && **g == last)
        .count();
    lead >= 3 && trail >= 3
}

/// The alt text of an art block worth keeping as a caption, or `None` when it is empty, has no
/// letters or digits (`_ ,`), or says nothing beyond that the block is art (`ascii art`).
pub fn caption(alt: &str) -> Option<&str> {
    let alt = alt.trim();
    let words = alt_words(alt);
    let informative = words
        .iter()
        .any(|w| !ART_WORDS.contains(&w.as_str()) && !STOP_WORDS.contains(&w.as_str()));
    informative.then_some(alt)
}
