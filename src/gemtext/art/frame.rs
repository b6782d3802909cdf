//! Framed banners: a title, a name or a greeting in a decorative frame of box-drawing
//! characters (double, heavy or rounded corners), in the middle of a page as much as at its top.
//!
//! Inside the frame the text is ordinary words, so the measures of the whole block read it as
//! content; what gives a banner away is its shape: one frame, no columns inside it, and too
//! little text to be a notice, a table, a menu or code. Light frames (`┌─┐`) are left alone:
//! table printers and diagrams draw with them, and a framed word below text may be a tiny table.
//! Pure: text in, a judgement out.

use super::glyphs::{is_prompt, is_word, looks_like_code};

/// Corners that open a decorative frame: double, heavy, rounded, and the mixed double ones.
const OPENING_CORNERS: &[char] = &['╔', '┏', '╭', '╒', '╓'];

/// At most this many lines with letters or digits inside a banner's frame (a title and a
/// subtitle); a menu or a list of facts has more.
pub(super) const MAX_TEXT_LINES: usize = 2;

/// At most this many words inside a banner's frame; a notice says more.
pub(super) const MAX_WORDS: usize = 8;

fn is_box_drawing(c: char) -> bool {
    ('\u{2500}'..='\u{257F}').contains(&c)
}

/// The lines of text inside `text` when it is a single decorative frame with nothing beside
/// it: a top edge opening with one of [`OPENING_CORNERS`], a bottom edge, and between them
/// lines that begin and end with an edge and hold no box drawing (no columns, no separators).
fn framed_lines(text: &str) -> Option<Vec<&str>> {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let (top, rest) = lines.split_first()?;
    let (bottom, middle) = rest.split_last()?;
    if middle.is_empty() {
        return None;
    }
    let edge = |line: &str| line.chars().all(|c| is_box_drawing(c) || c == ' ');
    if !top.starts_with(OPENING_CORNERS) || !edge(top) || !edge(bottom) {
        return None;
    }
    middle
        .iter()
        .map(|line| {
            let mut chars = line.chars();
            let (first, last) = (chars.next()?, chars.next_back()?);
            let inner = chars.as_str();
            (is_box_drawing(first) && is_box_drawing(last) && !inner.chars().any(is_box_drawing))
                .then_some(inner.trim())
        })
        .collect()
}

/// Whether `text` is a banner in a frame: a decorative frame around at most
/// [`MAX_TEXT_LINES`] lines and [`MAX_WORDS`] words, none of them a command, code or a link.
pub(super) fn is_framed_banner(text: &str) -> bool {
    let Some(inner) = framed_lines(text) else {
        return false;
    };
    let with_text: Vec<&str> = inner
        .into_iter()
        .filter(|l| l.chars().any(char::is_alphanumeric))
        .collect();
    let words: usize = with_text
        .iter()
        .map(|l| l.split_whitespace().filter(|t| is_word(t)).count())
        .sum();
    let instructions = with_text
        .iter()
        .any(|l| is_prompt(l) || looks_like_code(l) || l.starts_with("=>") || l.contains("://"));
    !with_text.is_empty()
        && with_text.len() <= MAX_TEXT_LINES
        && words <= MAX_WORDS
        && !instructions
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_title_in_a_decorative_frame_is_a_banner() {
        for text in [
            "╔══════════════════════╗\n║  ★ Welcome, friend ★  ║\n╚══════════════════════╝",
            "  ╭──────────╮\n  │  hello   │\n  ╰──────────╯",
            "┏━━━━━━━━━┓\n┃  N E W S ┃\n┗━━━━━━━━━┛",
            "╔═════════╗\n║ * * *   ║\n║ Archive ║\n║ * * *   ║\n╚═════════╝",
            "╒═══════════╕\n│ Chapter 1 │\n│ The quay  │\n╘═══════════╛",
        ] {
            assert!(is_framed_banner(text), "{text}");
        }
    }

    #[test]
    fn tables_notices_menus_light_boxes_and_commands_in_frames_are_not() {
        for text in [
            // A table: columns and a separator inside.
            "╔════╦══════╗\n║ id ║ name ║\n╠════╬══════╣\n║  1 ║ ann  ║\n╚════╩══════╝",
            // A notice: too many words.
            "╔═══╗\n║ This capsule moves to a new host on the first of May. ║\n╚═══╝",
            // A menu: too many lines of text.
            "╔═══════════╗\n║ 1. Play   ║\n║ 2. Scores ║\n║ 3. Quit   ║\n╚═══════════╝",
            // A light frame: a tiny table as often as a banner.
            "┌───────┐\n│ geode │\n└───────┘",
            // A command, code, a link.
            "╭─────────────────────╮\n│ $ cargo install geode │\n╰─────────────────────╯",
            "╭──────────╮\n│ x = f(y); │\n╰──────────╯",
            "╭──────────────────────────╮\n│ => gemini://example.org/ │\n╰──────────────────────────╯",
            // Two boxes side by side: a diagram.
            "╭───╮  ╭───╮\n│ a │->│ b │\n╰───╯  ╰───╯",
            // Text beside the frame.
            "╔═══╗\n║ hi ║ and more\n╚═══╝",
            // An empty frame holds no banner (the decoration rule judges it).
            "╔═══╗\n║   ║\n╚═══╝",
        ] {
            assert!(!is_framed_banner(text), "{text}");
        }
    }
}
