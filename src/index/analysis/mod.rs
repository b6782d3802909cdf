//! Text analysis for the index and for queries: the `geode_text` analyzer, the analysed form of
//! query words and phrases, language tags and detection, and stemming.
//!
//! # Words
//!
//! [`text_analyzer`] splits text into words, drops tokens over [`MAX_TOKEN_BYTES`] bytes,
//! lowercases and folds accents to ASCII (`Café` and `cafe` are one term). A word is a run of
//! alphanumeric characters, as in Tantivy's `SimpleTokenizer` (`gemini://a.b/c_d` gives
//! `gemini a b c d`), except that combining marks which Unicode does not count as alphabetic
//! (Thai tone marks, Indic viramas, decomposed Latin accents) continue a word instead of
//! splitting it; decomposed Latin accents are dropped from the token text, so `re\u{301}sume\u{301}`
//! and `résumé` are the same term.
//!
//! Chinese, Japanese and Korean text has no spaces between words, so a run of Han, kana or
//! Hangul characters is indexed as every character (unigram) and every pair of neighbouring
//! characters (bigram): character `i` of a run starting at position `p` gives the unigram at
//! `p + i` and the bigram of characters `i, i+1` at the same position, and the token after the
//! run is at `p + n`. A query ([`query_tokens`]) uses only the bigrams of a run of two or more
//! characters, at consecutive positions, so a phrase query over them finds the run wherever it
//! is indexed. Other scripts (Latin, Cyrillic, Greek, Arabic, Thai...) are split into words only.
//!
//! # Languages and stems
//!
//! Languages are ISO 639-1 codes (`en`, `de`): [`normalize_lang`] turns a server's BCP 47 tag
//! into one, [`detect_lang`] guesses one from the text (whatlang). For the 18 languages with a
//! Snowball stemmer in Tantivy, [`stem_tokens`] gives the `stem` field's tokens, each text
//! prefixed with the language (`en:run`), and [`stem_query_word`] the forms a query word may
//! take there in any of those languages. Stemming runs on lowercased words before accent
//! folding (the German and French stemmers need the accents), and the stem is folded after.
//!
//! Layout: this file holds the analyzer and the query-side helpers; `tokenizer.rs` the word and
//! CJK splitting; `stem.rs` the stemmers. Language tags, detection and the CJK test are pure
//! text facts, in [`crate::lang`].
//!
//! Not here: which fields use which analysis (the schema in `index/mod.rs`) and turning a query
//! into Tantivy queries (`index/compile.rs`). Changing anything here changes the terms on disk:
//! old indexes must be rebuilt.

mod stem;
mod tokenizer;

use std::ops::Range;

use tantivy::tokenizer::{
    AsciiFoldingFilter, LowerCaser, RemoveLongFilter, TextAnalyzer, Token, TokenFilter,
    TokenStream, Tokenizer,
};

pub use crate::lang::{detect_lang, is_cjk, normalize_lang};
pub use stem::{
    has_stemmer, stem_query_word, stem_tokens, stem_tokens_with, stem_word, stemmer_codes,
    StemCache,
};
pub(crate) use stem::{stem_analysed_with, stem_field_value, stem_lang, unprefixed, StemLang};
use tokenizer::{GeodeTokenizer, Mode};

/// Tokens longer than this (in bytes) are dropped: they are base64 blobs, hashes or ASCII art,
/// never words anyone searches for, and they bloat the term dictionary.
pub(crate) const MAX_TOKEN_BYTES: usize = 40;

/// The `geode_text` analyzer used by every searchable text field (see the module doc).
pub(crate) fn text_analyzer() -> TextAnalyzer {
    TextAnalyzer::builder(GeodeTokenizer::new(Mode::Index))
        .filter(RemoveLongFilter::limit(MAX_TOKEN_BYTES))
        .filter(LowerCaser)
        .filter(AsciiFoldingFilter)
        .build()
}

/// The analyzer of the `stem` field: values made by [`stem_field_value`] give their words'
/// stems in their language, prefixed (`en:run`), as [`stem_tokens`] does.
pub(crate) fn stem_analyzer() -> TextAnalyzer {
    TextAnalyzer::from(stem::StemTokenizer::new())
}

/// The `geode_text` pipeline in `mode`, as a concrete type (no boxing per token stream).
fn pipeline(mode: Mode) -> impl Tokenizer {
    let words = RemoveLongFilter::limit(MAX_TOKEN_BYTES).transform(GeodeTokenizer::new(mode));
    AsciiFoldingFilter.transform(LowerCaser.transform(words))
}

/// Feeds every token of `text`, analysed exactly as the index analyses it, to `sink`. Offsets
/// are byte offsets into `text`; unigrams and bigrams of CJK runs are both given.
pub(crate) fn for_each_index_token(text: &str, mut sink: impl FnMut(&Token)) {
    let mut analyzer = pipeline(Mode::Index);
    let mut stream = analyzer.token_stream(text);
    while let Some(token) = stream.next() {
        sink(token);
    }
}

/// The byte range and analysed text of every token of `text`, as [`for_each_index_token`]
/// gives them, for callers that need nothing else. A line whose words are all ASCII (most of
/// geminispace, typographic quotes and dashes included) is split here, without a token stream:
/// a token is a run of ASCII letters and digits shorter than [`MAX_TOKEN_BYTES`], lowercased,
/// which is what the analyzer makes of it (a test holds the two equal); other lines go through
/// the analyzer. No token spans a newline, so lines can be split apart.
pub(crate) fn for_each_index_word(text: &str, sink: impl FnMut(Range<usize>, &str)) {
    for_each_index_word_where(text, |_| true, sink);
}

/// [`for_each_index_word`] for the tokens whose first byte `begins` accepts only: the others
/// are passed over before they are lowercased (snippets look for a few words in a page).
pub(crate) fn for_each_index_word_where(
    text: &str,
    begins: impl Fn(u8) -> bool,
    mut sink: impl FnMut(Range<usize>, &str),
) {
    let mut base = 0;
    for line in text.split_inclusive('\n') {
        line_words(line, base, &begins, &mut sink);
        base += line.len();
    }
}

/// [`for_each_index_word_where`] of one line starting at byte `base` of the text.
fn line_words(
    line: &str,
    base: usize,
    begins: &impl Fn(u8) -> bool,
    sink: &mut impl FnMut(Range<usize>, &str),
) {
    // Outside ASCII, only characters that can be no part of a word (punctuation, symbols,
    // spaces) leave the split to the bytes.
    let ascii_words = line.is_ascii()
        || !line.chars().any(|c| {
            !c.is_ascii()
                && (c.is_alphanumeric() || tokenizer::is_mark(c) || tokenizer::is_joiner(c))
        });
    if !ascii_words {
        for_each_index_token(line, |token| {
            if token.text.as_bytes().first().is_some_and(|&b| begins(b)) {
                sink(
                    base + token.offset_from..base + token.offset_to,
                    &token.text,
                )
            }
        });
        return;
    }
    // A non-ASCII character's bytes are all >= 0x80, never ASCII letters or digits: they
    // separate words, as the character does.
    let bytes = line.as_bytes();
    let mut lower = [0u8; MAX_TOKEN_BYTES];
    let mut at = 0;
    while at < bytes.len() {
        if !bytes[at].is_ascii_alphanumeric() {
            at += 1;
            continue;
        }
        let start = at;
        while at < bytes.len() && bytes[at].is_ascii_alphanumeric() {
            at += 1;
        }
        let word = &bytes[start..at];
        if word.len() < MAX_TOKEN_BYTES && begins(word[0].to_ascii_lowercase()) {
            let lower = &mut lower[..word.len()];
            for (to, from) in lower.iter_mut().zip(word) {
                *to = from.to_ascii_lowercase();
            }
            // ASCII bytes are always UTF-8.
            if let Ok(word) = std::str::from_utf8(lower) {
                sink(base + start..base + at, word);
            }
        }
    }
}

/// The analysed tokens of a query word or phrase with their positions relative to the first
/// token, for term and phrase queries that match what [`text_analyzer`] indexed: a CJK run of
/// two or more characters gives its bigrams only (see the module doc).
///
/// `"日本語 text"` gives `[(0, "日本"), (1, "本語"), (3, "text")]`. Positions need not be
/// consecutive (a dropped over-long token leaves a gap), and the first one is always 0.
pub fn query_tokens(text: &str) -> Vec<(usize, String)> {
    let mut analyzer = pipeline(Mode::Query);
    let mut stream = analyzer.token_stream(text);
    let mut out = Vec::new();
    while let Some(token) = stream.next() {
        out.push((token.position, token.text.clone()));
    }
    if let Some(first) = out.first().map(|(p, _)| *p) {
        for (p, _) in &mut out {
            *p -= first;
        }
    }
    out
}

#[cfg(test)]
mod tests;
