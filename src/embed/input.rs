//! What of a page is embedded, and the key its vector is stored under. Pure: no I/O.
//!
//! A page's embedding input is its title, its headings (those not the title again) and the
//! opening of its text, cut at [`MAX_INPUT_CHARS`]: the model reads at most its token limit of
//! it anyway, and a title and the first paragraphs say what most pages are about. The key is a
//! hash of that input and of [`RECIPE`]: a page recrawled unchanged, or rebuilt by `geode
//! reindex`, has the same key, and its vector is reused instead of computed again.

/// Changes whenever the input of a page changes shape, so that no vector made from the old
/// recipe is reused for the new one.
pub const RECIPE: u32 = 1;

/// The most characters of a page given to the tokenizer.
pub const MAX_INPUT_CHARS: usize = 2_000;

/// The bytes of a vector's key: a prefix of a SHA-256, enough that two inputs of one index
/// never share one by chance.
pub const KEY_BYTES: usize = 12;

/// The text a page is embedded from: title, headings and the opening of the body, each on a
/// line of its own.
pub fn page_text(title: &str, headings: &str, body: &str) -> String {
    let mut out = String::new();
    let title = title.trim();
    if !title.is_empty() {
        out.push_str(title);
        out.push('\n');
    }
    for heading in headings.lines().map(str::trim) {
        if heading.is_empty() || heading.eq_ignore_ascii_case(title) {
            continue;
        }
        if out.len() + heading.len() > MAX_INPUT_CHARS / 2 {
            break;
        }
        out.push_str(heading);
        out.push('\n');
    }
    for c in body.chars() {
        if out.chars().count() >= MAX_INPUT_CHARS {
            break;
        }
        out.push(c);
    }
    cut(out, MAX_INPUT_CHARS)
}

/// `text` cut to at most `max` characters.
fn cut(mut text: String, max: usize) -> String {
    if let Some((at, _)) = text.char_indices().nth(max) {
        text.truncate(at);
    }
    text
}

/// The key a vector of `text` is stored under.
pub fn key(text: &str) -> [u8; KEY_BYTES] {
    let mut ctx = ring::digest::Context::new(&ring::digest::SHA256);
    ctx.update(&RECIPE.to_le_bytes());
    ctx.update(text.as_bytes());
    let digest = ctx.finish();
    let mut out = [0; KEY_BYTES];
    out.copy_from_slice(&digest.as_ref()[..KEY_BYTES]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_title_comes_first_and_is_not_repeated_by_a_heading() {
        let text = page_text(
            "Things I hate in Go",
            "Things I hate in Go\nErrors",
            "Body.",
        );
        assert_eq!(text, "Things I hate in Go\nErrors\nBody.");
    }

    #[test]
    fn a_long_body_is_cut_on_a_character_boundary() {
        let body = "é".repeat(5_000);
        let text = page_text("", "", &body);
        assert_eq!(text.chars().count(), MAX_INPUT_CHARS);
    }

    #[test]
    fn equal_inputs_share_a_key_and_different_ones_do_not() {
        assert_eq!(key("a page"), key("a page"));
        assert_ne!(key("a page"), key("a page!"));
    }
}
