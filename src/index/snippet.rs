//! Snippets and titles as a result shows them: the best passage of a page's body with the
//! query's words marked, and a title without its decoration.
//!
//! [`snippet`] picks one line, or two neighbouring lines, of the body by how many distinct query
//! words they hold, then how many matches, then how early they come; it cuts a passage longer
//! than the limit to the window around its densest cluster of matches, on word boundaries, with
//! `…` where it cut. Words are matched as the index analyses them ([`super::analysis`]), and by
//! stem in the page's language, so a query for `running` marks `runs` on an English page.
//! Matched words are wrapped in `**`; turning that into bold, colour or gemtext is the caller's
//! business.
//!
//! Everything here is pure and bounded: only the first [`SCAN_BYTES`] of a body are read, and
//! any UTF-8 text gives a result. Not here: finding which documents match (the query compiler
//! and Tantivy do that) and stored fields.

use std::cmp::Reverse;
use std::collections::HashMap;
use std::ops::Range;

use foldhash::fast::RandomState;

use super::analysis::{self, StemCache, StemLang};
use super::prefix;
use crate::gemtext::art::is_decoration_line;

/// How much of a body a snippet reads, in bytes: bodies can be 4 MiB, and a passage worth
/// showing is almost always near the start. Tokenizing (and stemming) the scanned text is most
/// of a snippet's cost, and ten snippets are the largest part of a search: 32 KiB keeps that
/// bounded (it was 200 KB, when snippets took most of a search's time).
pub const SCAN_BYTES: usize = 32 * 1024;

/// Marks around a matched word.
const MARK: &str = "**";

/// Marks where a passage was cut.
const ELLIPSIS: char = '…';

/// The query's words and phrases in the form a snippet matches them against.
///
/// Every word and every phrase is one *term*; a passage holding more distinct terms is a better
/// passage. Words match their analysed tokens (all of them: `e-mail` is `e` and `mail`, a CJK word
/// its bigrams) and, on pages in a language with a stemmer, any word with the same stem. Phrase
/// words match exactly only.
#[derive(Debug, Clone, Default)]
pub struct Highlighter {
    /// Analysed token -> bit set of the terms it belongs to.
    exact: HashMap<String, u64, RandomState>,
    /// Prefixed stem (`en:run`) -> bit set of the terms it belongs to.
    stems: HashMap<String, u64, RandomState>,
    /// The first bytes of the exact tokens and of the stems: a token beginning with another byte
    /// matches nothing, unless its language's stemmer may change a word's first byte
    /// ([`first_byte_kept`]). Most tokens of a page are turned away here, before the lookups.
    /// `None` when some term is empty, which any token could match by stem.
    first_bytes: Option<[bool; 256]>,
}

/// Whether the stemmer of `lang` always keeps a word's first byte, so that a token can match a
/// query's stem only if it begins as that stem does. Snowball's stemmers cut suffixes, except
/// Arabic's (which cuts the prefix `ال`), Greek's (which drops the accent of a first `ό`, a
/// letter of another UTF-8 lead byte than `ο`) and Turkish's (`dime` to `t`).
/// `stem_prefilter_languages_keep_the_first_byte` checks the others on words of each language.
fn first_byte_kept(lang: StemLang) -> bool {
    !matches!(lang.code(), "ar" | "el" | "tr")
}

/// The bit of term `i` in a term set. Terms past the 64th share the last bit: they still
/// match, they just count as one distinct term.
fn term_bit(i: usize) -> u64 {
    1u64 << i.min(63)
}

impl Highlighter {
    /// A highlighter for the raw texts of a query's positive words and phrases.
    pub fn new(words: &[String], phrases: &[String]) -> Self {
        let mut hl = Highlighter::default();
        for (i, word) in words.iter().enumerate() {
            let bit = term_bit(i);
            for (_, token) in analysis::query_tokens(word) {
                *hl.exact.entry(token).or_default() |= bit;
            }
            for form in analysis::stem_query_word(word) {
                *hl.stems.entry(form).or_default() |= bit;
            }
        }
        for (i, phrase) in phrases.iter().enumerate() {
            let bit = term_bit(words.len() + i);
            for (_, token) in analysis::query_tokens(phrase) {
                *hl.exact.entry(token).or_default() |= bit;
            }
        }
        let stems = hl.stems.keys().map(|form| analysis::unprefixed(form));
        let mut first = [false; 256];
        let mut all_begin = true;
        for term in hl.exact.keys().map(String::as_str).chain(stems) {
            match term.as_bytes().first() {
                Some(&byte) => first[usize::from(byte)] = true,
                None => all_begin = false,
            }
        }
        hl.first_bytes = all_begin.then_some(first);
        hl
    }

    /// Whether a token beginning with `byte` may match a term of the query on a page whose
    /// stemmer is `stem_lang`: false only when it cannot ([`Highlighter::first_bytes`]).
    fn may_begin(&self, byte: u8, stem_lang: Option<StemLang>) -> bool {
        match &self.first_bytes {
            Some(first) if stem_lang.map_or(true, first_byte_kept) => first[usize::from(byte)],
            _ => true,
        }
    }

    /// Whether the highlighter has nothing to match.
    pub fn is_empty(&self) -> bool {
        self.exact.is_empty()
    }

    /// Whether an analysed token (lowercased, folded: as the index holds it) matches a query
    /// term: exactly, or by its stem in `lang` when that language has a stemmer.
    pub fn matches(&self, token: &str, lang: Option<&str>) -> bool {
        let stem_lang = lang.and_then(analysis::stem_lang);
        self.terms_of(token, stem_lang, &mut StemCache::default()) != 0
    }

    /// The terms an analysed token matches, as a bit set (0 for none).
    fn terms_of(&self, token: &str, stem_lang: Option<StemLang>, stems: &mut StemCache) -> u64 {
        if !token
            .as_bytes()
            .first()
            .map_or(true, |&b| self.may_begin(b, stem_lang))
        {
            return 0;
        }
        let mut terms = self.exact.get(token).copied().unwrap_or(0);
        if let Some(sl) = stem_lang.filter(|_| !self.stems.is_empty()) {
            if let Some(stem) = analysis::stem_analysed_with(token, sl, stems) {
                terms |= self.stems.get(&stem).copied().unwrap_or(0);
            }
        }
        terms
    }
}

/// One matched token: its byte range in the body and the terms it matches.
#[derive(Debug, Clone)]
struct Match {
    range: Range<usize>,
    terms: u64,
}

/// A line of the body that may be shown.
#[derive(Debug)]
struct Line {
    /// Byte range in the body, without the newline.
    range: Range<usize>,
    matches: Vec<Match>,
}

impl Line {
    fn terms(&self) -> u64 {
        self.matches.iter().fold(0, |acc, m| acc | m.terms)
    }
}

/// The best passage of `body` for the query of `hl`, at most `max_chars` characters (not
/// counting the marks; a limit under 5 may be exceeded by the ellipses), matched words wrapped
/// in `**`, whitespace collapsed to single spaces, never a newline.
/// `lang` is the page's language, for matching by stem. When nothing matches, the start of the
/// body, unmarked. Lines that are decoration (rules, ASCII-art borders) are never shown.
pub fn snippet(body: &str, hl: &Highlighter, lang: Option<&str>, max_chars: usize) -> String {
    snippet_with(body, hl, lang, max_chars, &mut TermCache::default())
}

/// The terms of the tokens a query's snippets have met, by the page language's stemmer:
/// words repeat within a page and across the pages of one result list, and stemming each one
/// again is the costliest part of a snippet. Belongs to one [`Highlighter`]; its stems hold
/// for any query (a searcher keeps them from one query to the next).
#[derive(Debug, Default)]
pub struct TermCache {
    /// (stemmer language, or "" for none) -> analysed token -> terms.
    by_lang: HashMap<&'static str, HashMap<String, u64, RandomState>>,
    /// The stems of tokens, whatever the query.
    pub stems: StemCache,
}

/// Tokens a [`TermCache`] keeps per language before it starts afresh.
const TERM_CACHE_TOKENS: usize = 50_000;

/// [`snippet`], reusing the terms found for earlier snippets of the same query in `cache`.
pub fn snippet_with(
    body: &str,
    hl: &Highlighter,
    lang: Option<&str>,
    max_chars: usize,
    cache: &mut TermCache,
) -> String {
    let scan = prefix(body, SCAN_BYTES);
    let stem_lang = lang.and_then(analysis::stem_lang);
    let mut lines: Vec<Line> = Vec::new();
    let TermCache { by_lang, stems } = cache;
    let seen = by_lang
        .entry(stem_lang.map_or("", analysis::StemLang::code))
        .or_default();
    if seen.len() > TERM_CACHE_TOKENS {
        seen.clear();
    }
    let mut start = 0;
    // Characters of the lines kept so far, when nothing can match.
    let mut shown = 0;
    for text in scan.split('\n') {
        let range = start..start + text.len();
        start = range.end + 1;
        if text.trim().is_empty() || is_decoration_line(text) {
            continue;
        }
        let mut matches = Vec::new();
        if !hl.is_empty() {
            let begins = |byte| hl.may_begin(byte, stem_lang);
            analysis::for_each_index_word_where(text, begins, |at, token| {
                let terms = match seen.get(token) {
                    Some(&terms) => terms,
                    None => {
                        let terms = hl.terms_of(token, stem_lang, stems);
                        seen.insert(token.to_string(), terms);
                        terms
                    }
                };
                if terms != 0 {
                    matches.push(Match {
                        range: range.start + at.start..range.start + at.end,
                        terms,
                    });
                }
            });
        } else if shown > max_chars {
            // Nothing can match: the first lines that fill the snippet are all it needs.
            break;
        } else {
            shown = joined_chars(shown, collapsed_len(text));
        }
        lines.push(Line { range, matches });
    }

    match best_passage(scan, &lines, max_chars) {
        Some(passage) => render(scan, &lines[passage], max_chars),
        None => {
            // No match: the first lines, as many as fit.
            let (mut end, mut chars) = (0, 0);
            while end < lines.len() && chars < max_chars {
                chars = joined_chars(chars, collapsed_len(line_text(scan, &lines[end])));
                end += 1;
            }
            render(scan, &lines[..end], max_chars)
        }
    }
}

/// Length in characters of text of `before` characters followed by text of `after`, joined by a
/// space when both have some: the collapsed length of lines joined by spaces, one line at a
/// time.
fn joined_chars(before: usize, after: usize) -> usize {
    match (before, after) {
        (0, n) | (n, 0) => n,
        (b, a) => b + 1 + a,
    }
}

/// Length in characters of `text` with its whitespace collapsed to single spaces and trimmed.
fn collapsed_len(text: &str) -> usize {
    if !text.is_ascii() {
        return text
            .split_whitespace()
            .fold(0, |n, word| joined_chars(n, word.chars().count()));
    }
    // ASCII: a character is a byte. The whitespace is `char::is_whitespace`'s, vertical tab
    // included (`u8::is_ascii_whitespace` leaves it out).
    let (mut chars, mut words, mut in_word) = (0, 0, false);
    for &b in text.as_bytes() {
        if matches!(b, b' ' | b'\t' | b'\n' | 0x0B | 0x0C | b'\r') {
            in_word = false;
        } else {
            words += usize::from(!in_word);
            in_word = true;
            chars += 1;
        }
    }
    chars + words.saturating_sub(1)
}

fn line_text<'a>(text: &'a str, line: &Line) -> &'a str {
    text.get(line.range.clone()).unwrap_or_default()
}

/// The lines (one, or two neighbours) that make the best passage; `None` when no line matches.
fn best_passage(text: &str, lines: &[Line], max_chars: usize) -> Option<Range<usize>> {
    // Ordered by: distinct terms, matches, earliest first match, starting with a matched line
    // (rather than with the line before it), two lines rather than one (more context).
    type Key = (u32, usize, Reverse<usize>, bool, bool);
    let key = |passage: &Range<usize>| -> Key {
        let ls = &lines[passage.clone()];
        let terms = ls.iter().fold(0, |acc, l| acc | l.terms());
        let total = ls.iter().map(|l| l.matches.len()).sum();
        let first = ls
            .iter()
            .find_map(|l| l.matches.first())
            .map_or(usize::MAX, |m| m.range.start);
        let starts_matched = !ls[0].matches.is_empty();
        (
            terms.count_ones(),
            total,
            Reverse(first),
            starts_matched,
            ls.len() > 1,
        )
    };
    // Each line's collapsed length, found the first time a two-line passage needs it.
    let mut lengths: Vec<Option<usize>> = vec![None; lines.len()];
    let mut length =
        |i: usize| *lengths[i].get_or_insert_with(|| collapsed_len(line_text(text, &lines[i])));
    let mut best: Option<(Key, Range<usize>)> = None;
    for (i, line) in lines.iter().enumerate() {
        if line.matches.is_empty() {
            continue;
        }
        let candidates = [
            Some(i..i + 1),
            (i > 0).then(|| i - 1..i + 1),
            (i + 1 < lines.len()).then(|| i..i + 2),
        ];
        for passage in candidates.into_iter().flatten() {
            if passage.len() > 1
                && passage.clone().map(&mut length).fold(0, joined_chars) > max_chars
            {
                continue;
            }
            let k = key(&passage);
            let better = match &best {
                Some((best_key, _)) => k > *best_key,
                None => true,
            };
            if better {
                best = Some((k, passage));
            }
        }
    }
    best.map(|(_, passage)| passage)
}

/// A whitespace-free piece of a passage: a word, or part of a word too long to show whole.
#[derive(Debug)]
struct Segment {
    range: Range<usize>,
    chars: usize,
    /// Whether a space separates it from the previous segment.
    space_before: bool,
    /// Terms of the matches that start in it, one entry per match.
    matches: Vec<u64>,
}

/// Renders `lines` as one passage of at most `max_chars` characters plus marks.
fn render(text: &str, lines: &[Line], max_chars: usize) -> String {
    let max_chars = max_chars.max(1);
    let segments = segments(text, lines, max_chars);
    let window = if width(&segments) <= max_chars {
        0..segments.len()
    } else {
        // Leave room for "… " on both sides while choosing, then grow to the exact limit.
        let chosen = best_window(&segments, max_chars.saturating_sub(4).max(1));
        grow_window(&segments, chosen, max_chars)
    };
    let marks = merged_marks(lines);
    let mut out = String::new();
    if window.start > 0 {
        out.push(ELLIPSIS);
        if segments[window.start].space_before {
            out.push(' ');
        }
    }
    // Pieces of one word are contiguous in the text: render them as one, so a mark spanning a
    // cut between pieces stays one mark.
    let mut group: Option<Range<usize>> = None;
    for seg in &segments[window.clone()] {
        match group.as_mut() {
            Some(g) if !seg.space_before => g.end = seg.range.end,
            Some(g) => {
                push_marked(&mut out, text, g.clone(), &marks);
                out.push(' ');
                group = Some(seg.range.clone());
            }
            None => group = Some(seg.range.clone()),
        }
    }
    if let Some(g) = group {
        push_marked(&mut out, text, g, &marks);
    }
    if window.end < segments.len() {
        if segments[window.end].space_before {
            out.push(' ');
        }
        out.push(ELLIPSIS);
    }
    out
}

/// The byte ranges to mark: every match, overlapping and touching ranges merged (the unigrams
/// and bigrams of a CJK run overlap, and two matched characters in a row are one marked span).
fn merged_marks(lines: &[Line]) -> Vec<Range<usize>> {
    let mut ranges: Vec<Range<usize>> = lines
        .iter()
        .flat_map(|l| l.matches.iter().map(|m| m.range.clone()))
        .collect();
    ranges.sort_by_key(|r| (r.start, r.end));
    let mut merged: Vec<Range<usize>> = Vec::with_capacity(ranges.len());
    for r in ranges {
        match merged.last_mut() {
            Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
            _ => merged.push(r),
        }
    }
    merged
}

/// Splits `lines` into segments: their whitespace-separated words, and words longer than half
/// the limit (blobs, URLs, CJK runs) cut into pieces of an eighth of it.
fn segments(text: &str, lines: &[Line], max_chars: usize) -> Vec<Segment> {
    let budget = max_chars.saturating_sub(4);
    let long_word = (budget / 2).max(1);
    // Small pieces let a window centre on a match inside a long CJK run, which is one "word".
    let piece_max = (budget / 8).max(1);
    let mut out: Vec<Segment> = Vec::new();
    for line in lines {
        let line_text = text.get(line.range.clone()).unwrap_or_default();
        for word in line_text.split_whitespace() {
            // `word` is a subslice of `line_text`: its offset is the pointer difference.
            let word_start =
                line.range.start + (word.as_ptr() as usize - line_text.as_ptr() as usize);
            let piece_max = if word.chars().nth(long_word).is_some() {
                piece_max
            } else {
                usize::MAX
            };
            let mut first_piece = true;
            let mut piece_start = 0;
            let mut chars = 0;
            for (i, _) in word.char_indices() {
                if chars == piece_max {
                    out.push(Segment {
                        range: word_start + piece_start..word_start + i,
                        chars,
                        space_before: first_piece && !out.is_empty(),
                        matches: Vec::new(),
                    });
                    first_piece = false;
                    piece_start = i;
                    chars = 0;
                }
                chars += 1;
            }
            out.push(Segment {
                range: word_start + piece_start..word_start + word.len(),
                chars,
                space_before: first_piece && !out.is_empty(),
                matches: Vec::new(),
            });
        }
    }
    // Attach each match to the segment it starts in (both lists are in text order).
    let mut seg = 0;
    for m in lines.iter().flat_map(|l| l.matches.iter()) {
        while seg < out.len() && m.range.start >= out[seg].range.end {
            seg += 1;
        }
        match out.get_mut(seg) {
            Some(s) => s.matches.push(m.terms),
            None => break,
        }
    }
    out
}

/// Characters of `segments` rendered without marks.
fn width(segments: &[Segment]) -> usize {
    segments
        .iter()
        .enumerate()
        .map(|(i, s)| s.chars + usize::from(i > 0 && s.space_before))
        .sum()
}

/// Characters of the window `w` of `segments` rendered with its ellipses.
fn window_width(segments: &[Segment], w: &Range<usize>) -> usize {
    let ellipsis = |i: usize| 1 + usize::from(segments[i].space_before);
    let mut n = width(&segments[w.clone()]);
    if w.start > 0 {
        n += ellipsis(w.start);
    }
    if w.end < segments.len() {
        n += ellipsis(w.end);
    }
    n
}

/// The window of segments at most `budget` characters wide holding the most distinct terms,
/// then the most matches, then the earliest.
fn best_window(segments: &[Segment], budget: usize) -> Range<usize> {
    let n = segments.len();
    let cost = |i: usize| segments[i].chars + usize::from(segments[i].space_before);
    // How many matches of each term the window holds, and how many terms that is.
    let mut term_counts = [0u32; 64];
    let mut distinct = 0u32;
    let mut total = 0usize;
    let mut update = |seg: &Segment, add: bool, distinct: &mut u32, total: &mut usize| {
        for &terms in &seg.matches {
            for (bit, count) in term_counts.iter_mut().enumerate() {
                if terms & (1u64 << bit) == 0 {
                    continue;
                }
                if add {
                    *count += 1;
                    *distinct += u32::from(*count == 1);
                } else {
                    *count = count.saturating_sub(1);
                    *distinct -= u32::from(*count == 0);
                }
            }
        }
        if add {
            *total += seg.matches.len();
        } else {
            *total -= seg.matches.len();
        }
    };
    // The window is i..j; `sum` is the cost of its segments with their leading spaces, so its
    // width is `sum` less the first segment's space.
    // Ordered by: distinct terms, matches, earliest.
    type Key = (u32, usize, Reverse<usize>);
    let mut best: Option<(Key, Range<usize>)> = None;
    let mut j = 0;
    let mut sum = 0usize;
    for i in 0..n {
        let lead = usize::from(segments[i].space_before);
        while j < n && (j == i || sum + cost(j) - lead <= budget) {
            sum += cost(j);
            update(&segments[j], true, &mut distinct, &mut total);
            j += 1;
        }
        let key = (distinct, total, Reverse(i));
        let better = match &best {
            Some((best_key, _)) => key > *best_key,
            None => true,
        };
        if better {
            best = Some((key, i..j));
        }
        sum -= cost(i);
        update(&segments[i], false, &mut distinct, &mut total);
    }
    best.map_or(0..0, |(_, window)| window)
}

/// Re-centres `window` on its matched segments and grows it on both sides, taking turns, while
/// it stays within `max_chars` with its ellipses: the matches get context on both sides.
fn grow_window(segments: &[Segment], window: Range<usize>, max_chars: usize) -> Range<usize> {
    let mut matched = window
        .clone()
        .filter(|&i| segments.get(i).is_some_and(|s| !s.matches.is_empty()));
    let (mut lo, mut hi) = match (matched.next(), matched.next_back()) {
        (Some(first), Some(last)) => (first, last + 1),
        (Some(first), None) => (first, first + 1),
        _ => (window.start, window.end),
    };
    if window_width(segments, &(lo..hi)) > max_chars {
        return window;
    }
    loop {
        let mut grew = false;
        if lo > 0 && window_width(segments, &(lo - 1..hi)) <= max_chars {
            lo -= 1;
            grew = true;
        }
        if hi < segments.len() && window_width(segments, &(lo..hi + 1)) <= max_chars {
            hi += 1;
            grew = true;
        }
        if !grew {
            break;
        }
    }
    lo..hi
}

/// Appends `text[range]` to `out` with the parts inside `marks` wrapped in [`MARK`].
fn push_marked(out: &mut String, text: &str, range: Range<usize>, marks: &[Range<usize>]) {
    // The first mark that ends after the segment starts.
    let first = marks.partition_point(|m| m.end <= range.start);
    let mut pos = range.start;
    for m in &marks[first..] {
        if m.start >= range.end {
            break;
        }
        let start = m.start.max(range.start);
        let end = m.end.min(range.end);
        let (Some(before), Some(marked)) = (text.get(pos..start), text.get(start..end)) else {
            continue;
        };
        out.push_str(before);
        out.push_str(MARK);
        out.push_str(marked);
        out.push_str(MARK);
        pos = end;
    }
    out.push_str(text.get(pos..range.end).unwrap_or_default());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    fn hl(words: &[&str], phrases: &[&str]) -> Highlighter {
        Highlighter::new(&strings(words), &strings(phrases))
    }

    /// The snippet without its marks.
    fn visible(snippet: &str) -> String {
        snippet.replace(MARK, "")
    }

    #[test]
    fn highlighter_matches_exact_and_stemmed_forms() {
        let h = hl(&["Running", "Café", "日本語"], &["red fruit"]);
        let cases: &[(&str, Option<&str>, bool)] = &[
            ("running", None, true),
            ("runs", None, false),
            ("runs", Some("en"), true),
            ("run", Some("en-GB"), true),
            ("runs", Some("ja"), false),
            ("cafe", None, true),
            ("日本", None, true),
            ("本語", None, true),
            ("日", None, false),
            ("red", None, true),
            ("fruit", Some("en"), true),
            // Phrase words are not stemmed.
            ("fruits", Some("en"), false),
            ("other", Some("en"), false),
        ];
        for (token, lang, want) in cases {
            assert_eq!(h.matches(token, *lang), *want, "{token:?} in {lang:?}");
        }
        assert!(hl(&[], &[]).is_empty());
        assert!(hl(&["--"], &[]).is_empty());
    }

    /// The ASCII count is the count of the general case, every ASCII whitespace included.
    #[test]
    fn collapsed_len_of_ascii_is_the_general_count() {
        let general = |t: &str| {
            t.split_whitespace()
                .fold(0, |n, w| joined_chars(n, w.chars().count()))
        };
        let pieces = [
            "", " ", "a", "bc", "\t", "\x0b", "\x0c", "\r", "\n", "  ", "d-e", "é",
        ];
        for a in pieces {
            for b in pieces {
                for c in pieces {
                    let text = format!("{a}{b}{c}{a}");
                    assert_eq!(collapsed_len(&text), general(&text), "{text:?}");
                }
            }
        }
    }

    #[test]
    fn snippet_table() {
        // (body, words, phrases, lang, max_chars, snippet)
        type Case = (
            &'static str,
            &'static [&'static str],
            &'static [&'static str],
            Option<&'static str>,
            usize,
            &'static str,
        );
        let cases: &[Case] = &[
            (
                "Tomatoes need sun.\nMy café sells them.",
                &["cafe"],
                &[],
                None,
                200,
                "My **café** sells them.",
            ),
            // Two neighbouring lines holding both words beat either line alone.
            (
                "intro\nalpha here\nbeta there\ngamma",
                &["alpha", "beta"],
                &[],
                None,
                200,
                "**alpha** here **beta** there",
            ),
            // Distinct words count before repeated ones.
            (
                "foo foo foo\nunrelated line\nfoo bar",
                &["foo", "bar"],
                &[],
                None,
                20,
                "**foo** **bar**",
            ),
            // Whitespace is collapsed and the best line has context from its neighbour.
            (
                "First   line\twith\r\nthe word\n\nlast",
                &["word"],
                &[],
                None,
                200,
                "the **word** last",
            ),
            // Decoration lines are never shown, matched or not.
            (
                "=====\n★★★\nHello world",
                &["zebra"],
                &[],
                None,
                200,
                "Hello world",
            ),
            (
                "-----\n~~~~~\nThe sun is up.\n=====\n* * *",
                &["sun"],
                &[],
                None,
                200,
                "The **sun** is up.",
            ),
            // Stems in the page's language; no stemming without a language.
            (
                "She runs every day.",
                &["running"],
                &[],
                Some("en"),
                200,
                "She **runs** every day.",
            ),
            (
                "She runs every day.",
                &["running"],
                &[],
                None,
                200,
                "She runs every day.",
            ),
            (
                "Die Häuser sind alt.",
                &["haus"],
                &[],
                Some("de"),
                200,
                "Die **Häuser** sind alt.",
            ),
            // CJK: the run's bigrams are marked as one span.
            (
                "東京は日本の首都です。\n大阪も大きい。",
                &["日本"],
                &[],
                Some("ja"),
                200,
                "東京は**日本**の首都です。 大阪も大きい。",
            ),
            (
                "私はRust言語が好きです",
                &["言語", "rust"],
                &[],
                None,
                200,
                "私は**Rust言語**が好きです",
            ),
            // Whole words are marked, with their case and accents.
            (
                "ÉCOLE and école",
                &["ecole"],
                &[],
                None,
                200,
                "**ÉCOLE** and **école**",
            ),
            // Phrase words are marked, and the phrase counts as one term.
            (
                "a red apple\nred fruit here",
                &[],
                &["red fruit"],
                None,
                15,
                "**red** **fruit** here",
            ),
            // Nothing to match: the start of the body, cut on a word.
            (
                "one two three four five six seven",
                &[],
                &[],
                None,
                16,
                "one two three …",
            ),
            ("", &["x"], &[], None, 200, ""),
            ("\n\n  \n", &["x"], &[], None, 200, ""),
        ];
        for (body, words, phrases, lang, max, want) in cases {
            let got = snippet(body, &hl(words, phrases), *lang, *max);
            assert_eq!(got, *want, "body {body:?} words {words:?} lang {lang:?}");
            assert!(visible(&got).chars().count() <= *max, "{got:?} over {max}");
        }
    }

    #[test]
    fn long_lines_are_cut_around_the_densest_matches() {
        let mut words: Vec<String> = (0..400).map(|i| format!("w{i}")).collect();
        words[30] = "lonely".into();
        words[200] = "needle".into();
        words[204] = "haystack".into();
        let body = words.join(" ");
        let got = snippet(&body, &hl(&["needle", "haystack", "lonely"], &[]), None, 80);
        assert!(got.contains("**needle**"), "{got}");
        assert!(got.contains("**haystack**"), "{got}");
        assert!(got.starts_with("… "), "{got}");
        assert!(got.ends_with(" …"), "{got}");
        assert!(visible(&got).chars().count() <= 80, "{got}");
        // The matches sit in the middle, with context on both sides.
        let needle = got.find("needle").expect("needle");
        assert!(needle > 15 && needle < got.len() - 30, "{got}");
        // The words of the window are whole words of the body.
        let inner = visible(&got);
        for w in inner.trim_matches(|c| c == '…' || c == ' ').split(' ') {
            assert!(body.split(' ').any(|b| b == w), "{w:?} in {got}");
        }
    }

    #[test]
    fn overlong_words_are_cut_too() {
        let blob = "x".repeat(5000);
        let body = format!("{blob}needle{blob}");
        let got = snippet(&body, &hl(&["xneedlex"], &[]), None, 60);
        assert!(visible(&got).chars().count() <= 60, "{got}");
        let cjk = "漢字".repeat(3000) + "日本語" + &"漢字".repeat(3000);
        let got = snippet(&cjk, &hl(&["日本語"], &[]), None, 50);
        assert!(got.contains("**日本語**"), "{got}");
        assert!(got.starts_with('…') && got.ends_with('…'), "{got}");
        // The match is in the middle of the window, not at one end.
        let before = visible(&got)
            .split("日本語")
            .next()
            .map(|s| s.chars().count());
        assert!(before.is_some_and(|n| (15..=30).contains(&n)), "{got}");
        assert!(visible(&got).chars().count() <= 50, "{got}");
    }

    #[test]
    fn big_bodies_are_scanned_up_to_the_bound() {
        let filler = "lorem ipsum dolor sit amet\n".repeat(40_000); // ~1 MiB
        let body = format!("{filler}needle at the end\n");
        assert!(body.len() > 1 << 20);
        let start = std::time::Instant::now();
        let got = snippet(&body, &hl(&["needle"], &[]), Some("en"), 100);
        assert!(
            !got.contains("**"),
            "a match past the bound is not read: {got}"
        );
        assert!(got.starts_with("lorem ipsum"), "{got}");
        assert!(visible(&got).chars().count() <= 100, "{got}");
        let early = format!("intro\nneedle early\n{filler}");
        let got = snippet(&early, &hl(&["needle", "ipsum"], &[]), None, 100);
        assert!(
            got.contains("**needle**") && got.contains("**ipsum**"),
            "{got}"
        );
        // Generous: debug builds on a shared machine; the point is no quadratic blow-up.
        assert!(start.elapsed() < std::time::Duration::from_secs(20));
    }

    #[test]
    fn snippets_never_panic_and_stay_bounded() {
        let bodies = [
            "",
            "\n",
            "é",
            "\u{301}\u{301}abc\u{301}",
            "🚀🚀🚀 rocket 🚀🚀🚀",
            "a\u{200D}b c\u{200C}",
            "日本語のテキスト\nテキスト日本語",
            "**already marked** text",
            "ทดสอบภาษาไทย ที่นี่",
            "\u{feff}\u{0}\u{7f} control",
            "x y z",
        ];
        let queries = [
            hl(&[], &[]),
            hl(&["rocket"], &[]),
            hl(&["日本語", "テキスト"], &["テキスト日本語"]),
            hl(&["text", "a", "b", "c", "x"], &["y z"]),
            hl(&["ที่นี่"], &[]),
        ];
        for body in bodies {
            for q in &queries {
                for max in [0, 1, 2, 5, 10, 200] {
                    let got = snippet(body, q, Some("en"), max);
                    assert!(!got.contains('\n'), "{body:?} {got:?}");
                    assert!(
                        visible(&got).chars().count() <= max.max(5),
                        "{body:?} {max} {got:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn one_cache_across_pages_and_languages_gives_the_same_snippets() {
        let h = hl(&["running", "maison"], &[]);
        let pages = [
            ("They were running home. The runs were long.", Some("en")),
            ("Les maisons sont belles. Running nowhere.", Some("fr")),
            ("The runs again, and running.", Some("en")),
            ("no language: runs, running", None),
        ];
        let mut cache = TermCache::default();
        for (body, lang) in pages {
            assert_eq!(
                snippet_with(body, &h, lang, 80, &mut cache),
                snippet(body, &h, lang, 80),
                "{body:?}"
            );
        }
        // "runs" is a match in English pages only: the cache keeps languages apart.
        assert!(snippet("The runs again", &h, Some("en"), 80).contains("**runs**"));
        assert!(!snippet_with("runs", &h, None, 80, &mut cache).contains("**"));
    }

    /// Every stemmer [`first_byte_kept`] trusts keeps the first byte of the inflected words of
    /// its language; the three it does not trust change it for some word, so the check can fail.
    #[test]
    fn stem_prefilter_languages_keep_the_first_byte() {
        let words: &[(&str, &[&str])] = &[
            ("ar", &["الكتاب", "والمدرسة", "بالقلم", "فالبيت", "كتابهم"]),
            (
                "da",
                &["husene", "løbende", "æblerne", "øjnene", "århundreder"],
            ),
            (
                "de",
                &[
                    "Häuser",
                    "übernommen",
                    "Ärzte",
                    "Öfen",
                    "gegangen",
                    "ließen",
                ],
            ),
            ("el", &["ότι", "όλοι", "έχει", "ανθρώπων", "ήταν"]),
            (
                "en",
                &[
                    "running",
                    "lying",
                    "dying",
                    "happiness",
                    "skies",
                    "news",
                    "agreed",
                ],
            ),
            (
                "es",
                &["canciones", "árboles", "ínsulas", "útiles", "corriendo"],
            ),
            (
                "fi",
                &["taloissa", "äidille", "öisin", "ffi", "cci", "juoksemassa"],
            ),
            (
                "fr",
                &["maisons", "éléphants", "âgées", "œuvres", "continuellement"],
            ),
            (
                "hu",
                &["házakban", "ébredés", "örömmel", "úszással", "kutyáknak"],
            ),
            ("it", &["canzoni", "città", "è", "ospedali", "correndo"]),
            (
                "nl",
                &["huizen", "geboren", "ijsberen", "lopende", "beëindigd"],
            ),
            (
                "no",
                &["husene", "løpende", "ærlighet", "åpningene", "gutter"],
            ),
            ("pt", &["canções", "árvores", "ônibus", "correndo", "ações"]),
            (
                "ro",
                &["oamenilor", "școlile", "ţările", "îngerii", "ăstora"],
            ),
            (
                "ru",
                &["домами", "ёлками", "бегущий", "яблоки", "школьников"],
            ),
            (
                "sv",
                &["husen", "åkrarna", "ölen", "ärligheten", "springande"],
            ),
            ("ta", &["வீடுகள்", "மரங்களில்", "ஓடுகிறான்", "அம்மாவுக்கு"]),
            (
                "tr",
                &["dime", "dine", "bindir", "kitaplar", "evlerden", "gözlükçü"],
            ),
        ];
        let mut changed = Vec::new();
        for (code, list) in words {
            let sl = analysis::stem_lang(code).expect("a stemmer");
            for word in *list {
                for (_, token) in analysis::query_tokens(word) {
                    let stem = analysis::stem_analysed_with(&token, sl, &mut StemCache::default())
                        .expect("a stem");
                    let stem = analysis::unprefixed(&stem);
                    if stem
                        .as_bytes()
                        .first()
                        .is_some_and(|b| *b != token.as_bytes()[0])
                    {
                        changed.push((*code, token.clone(), stem.to_string()));
                    }
                }
            }
        }
        let trusted: Vec<_> = changed
            .iter()
            .filter(|(code, ..)| first_byte_kept(analysis::stem_lang(code).unwrap()))
            .collect();
        assert!(trusted.is_empty(), "{trusted:?}");
        for code in ["ar", "el", "tr"] {
            assert!(
                changed.iter().any(|(c, ..)| *c == code),
                "{code}: {changed:?}"
            );
        }
    }

    /// Turning tokens away by their first byte changes no snippet, in any language.
    #[test]
    fn the_first_byte_prefilter_changes_no_snippet() {
        let bodies: &[(&str, Option<&str>)] = &[
            (
                "They were lying down. The runs were long.\nRunning again.",
                Some("en"),
            ),
            ("Είπε ότι όλοι έχουν φύγει.\nΌλοι ήταν εκεί.", Some("el")),
            (
                "Bir dime ve bindir orada.\nKitaplar evlerden geldi.",
                Some("tr"),
            ),
            ("قرأ الكتاب في المدرسة\nوالكتاب جميل", Some("ar")),
            (
                "Die Häuser sind alt.\nÜbernommen wurden die Häuser.",
                Some("de"),
            ),
            ("Les maisons, la maison.\nÉléphants!", Some("fr")),
            ("no language here: lying, lie, runs", None),
        ];
        let queries = [
            hl(&["lie", "running"], &[]),
            hl(&["όλοι", "οτι"], &[]),
            hl(&["t", "kitap"], &[]),
            hl(&["كتاب", "المدرسة"], &[]),
            hl(&["haus", "übernehmen"], &["die häuser"]),
            hl(&["maison", "éléphant"], &[]),
        ];
        for q in &queries {
            let mut unfiltered = q.clone();
            unfiltered.first_bytes = None;
            for (body, lang) in bodies {
                assert_eq!(
                    snippet(body, q, *lang, 80),
                    snippet(body, &unfiltered, *lang, 80),
                    "{body:?}"
                );
            }
        }
        // The prefilter is on for these queries, and marks what it should.
        assert!(queries[0].first_bytes.is_some());
        assert!(snippet(bodies[0].0, &queries[0], Some("en"), 80).contains("**lying**"));
        assert!(snippet(bodies[1].0, &queries[1], Some("el"), 80).contains("**ότι**"));
    }
}
