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
//! Not here: which fields use which analysis (the schema in `index/mod.rs`) and turning a query
//! into Tantivy queries (`index/compile.rs`). Changing anything here changes the terms on disk:
//! old indexes must be rebuilt.

use tantivy::tokenizer::{
    AsciiFoldingFilter, Language, LowerCaser, RawTokenizer, RemoveLongFilter, Stemmer,
    TextAnalyzer, Token, TokenFilter, TokenStream, Tokenizer,
};

/// Tokens longer than this (in bytes) are dropped: they are base64 blobs, hashes or ASCII art,
/// never words anyone searches for, and they bloat the term dictionary.
pub(crate) const MAX_TOKEN_BYTES: usize = 40;

/// Language detection reads at most this many characters: enough for a confident guess, and
/// bodies can be megabytes long.
const DETECT_MAX_CHARS: usize = 2000;

/// Below this many letters, language detection does not guess.
const DETECT_MIN_LETTERS: usize = 12;

/// The `geode_text` analyzer used by every searchable text field (see the module doc).
pub(crate) fn text_analyzer() -> TextAnalyzer {
    TextAnalyzer::builder(GeodeTokenizer::new(Mode::Index))
        .filter(RemoveLongFilter::limit(MAX_TOKEN_BYTES))
        .filter(LowerCaser)
        .filter(AsciiFoldingFilter)
        .build()
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

/// The primary subtag of a BCP 47 language tag, lowercased: `en-US` and `EN` give `en`. `None`
/// unless that subtag is two or three ASCII letters (`x-private`, `i-klingon`, `12`, ``).
pub fn normalize_lang(tag: &str) -> Option<String> {
    let primary = tag.trim().split(['-', '_']).next().unwrap_or_default();
    let ok = (2..=3).contains(&primary.len()) && primary.bytes().all(|b| b.is_ascii_alphabetic());
    ok.then(|| primary.to_ascii_lowercase())
}

/// Guesses the language of `text` as an ISO 639-1 code, from its first 2,000 characters.
/// `None` when the text has too few letters or the guess is not reliable.
pub fn detect_lang(text: &str) -> Option<&'static str> {
    let end = text
        .char_indices()
        .nth(DETECT_MAX_CHARS)
        .map_or(text.len(), |(i, _)| i);
    let sample = text.get(..end).unwrap_or(text);
    if sample.chars().filter(|c| c.is_alphabetic()).count() < DETECT_MIN_LETTERS {
        return None;
    }
    if let Some(lang) = cjk_language(sample) {
        return Some(lang);
    }
    let info = whatlang::detect(sample)?;
    info.is_reliable().then(|| iso639_1(info.lang()))
}

/// Chinese, Japanese or Korean when CJK characters carry at least as much of `sample` as the
/// other letters, a CJK character counting like three letters (it is about a word). whatlang
/// compares raw character counts, so a Japanese page with an English paragraph would read as
/// English. Kana means Japanese, Hangul Korean, Han alone Chinese.
fn cjk_language(sample: &str) -> Option<&'static str> {
    let (mut kana, mut hangul, mut han, mut other) = (0usize, 0usize, 0usize, 0usize);
    for c in sample.chars() {
        match u32::from(c) {
            0x3040..=0x30FF | 0x31F0..=0x31FF | 0xFF66..=0xFF9F => kana += 1,
            0x1100..=0x11FF | 0x3130..=0x318F | 0xAC00..=0xD7AF => hangul += 1,
            0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF => han += 1,
            _ if c.is_alphabetic() => other += 1,
            _ => {}
        }
    }
    let cjk = kana + hangul + han;
    if cjk == 0 || cjk * 3 < other {
        return None;
    }
    Some(if hangul > kana + han {
        "ko"
    } else if kana > 0 {
        "ja"
    } else {
        "zh"
    })
}

/// The ISO 639-1 code of a whatlang language.
fn iso639_1(lang: whatlang::Lang) -> &'static str {
    use whatlang::Lang::*;
    match lang {
        Afr => "af",
        Aka => "ak",
        Amh => "am",
        Ara => "ar",
        Aze => "az",
        Bel => "be",
        Ben => "bn",
        Bul => "bg",
        Cat => "ca",
        Ces => "cs",
        Cmn => "zh",
        Cym => "cy",
        Dan => "da",
        Deu => "de",
        Ell => "el",
        Eng => "en",
        Epo => "eo",
        Est => "et",
        Fin => "fi",
        Fra => "fr",
        Guj => "gu",
        Heb => "he",
        Hin => "hi",
        Hrv => "hr",
        Hun => "hu",
        Hye => "hy",
        Ind => "id",
        Ita => "it",
        Jav => "jv",
        Jpn => "ja",
        Kan => "kn",
        Kat => "ka",
        Khm => "km",
        Kor => "ko",
        Lat => "la",
        Lav => "lv",
        Lit => "lt",
        Mal => "ml",
        Mar => "mr",
        Mkd => "mk",
        Mya => "my",
        Nep => "ne",
        Nld => "nl",
        Nob => "nb",
        Ori => "or",
        Pan => "pa",
        Pes => "fa",
        Pol => "pl",
        Por => "pt",
        Ron => "ro",
        Rus => "ru",
        Sin => "si",
        Slk => "sk",
        Slv => "sl",
        Sna => "sn",
        Spa => "es",
        Srp => "sr",
        Swe => "sv",
        Tam => "ta",
        Tel => "te",
        Tgl => "tl",
        Tha => "th",
        Tuk => "tk",
        Tur => "tr",
        Ukr => "uk",
        Urd => "ur",
        Uzb => "uz",
        Vie => "vi",
        Yid => "yi",
        Zul => "zu",
    }
}

/// The languages with a stemmer, by the code that prefixes their stems.
const STEMMERS: [(&str, Language); 18] = [
    ("ar", Language::Arabic),
    ("da", Language::Danish),
    ("de", Language::German),
    ("el", Language::Greek),
    ("en", Language::English),
    ("es", Language::Spanish),
    ("fi", Language::Finnish),
    ("fr", Language::French),
    ("hu", Language::Hungarian),
    ("it", Language::Italian),
    ("nl", Language::Dutch),
    ("no", Language::Norwegian),
    ("pt", Language::Portuguese),
    ("ro", Language::Romanian),
    ("ru", Language::Russian),
    ("sv", Language::Swedish),
    ("ta", Language::Tamil),
    ("tr", Language::Turkish),
];

/// A language with a stemmer: the code its stems are prefixed with and Tantivy's stemmer.
#[derive(Debug, Clone, Copy)]
pub(crate) struct StemLang {
    code: &'static str,
    language: Language,
}

/// The stemmer for a language tag (any case, any subtags). Norwegian Bokmål (`nb`) and Nynorsk
/// (`nn`) share the Norwegian stemmer, whose stems are prefixed `no:`.
pub(crate) fn stem_lang(lang: &str) -> Option<StemLang> {
    let primary = lang.trim().split(['-', '_']).next().unwrap_or_default();
    let primary = match primary.to_ascii_lowercase().as_str() {
        "nb" | "nn" => "no".to_string(),
        other => other.to_string(),
    };
    STEMMERS
        .iter()
        .find(|(code, _)| *code == primary)
        .map(|&(code, language)| StemLang { code, language })
}

/// Whether `lang` (an ISO 639-1 code or BCP 47 tag) has a stemmer.
pub fn has_stemmer(lang: &str) -> bool {
    stem_lang(lang).is_some()
}

/// The `stem` field's tokens of `text` in language `lang`: its words (as [`text_analyzer`]
/// splits them, CJK runs left out but still counted in positions), lowercased, stemmed, folded
/// to ASCII and prefixed with the language code (`en:run`). Positions and offsets are those of
/// the words. Empty when `lang` has no stemmer.
pub fn stem_tokens(text: &str, lang: &str) -> Vec<Token> {
    let Some(sl) = stem_lang(lang) else {
        return Vec::new();
    };
    let words =
        RemoveLongFilter::limit(MAX_TOKEN_BYTES).transform(GeodeTokenizer::new(Mode::Words));
    let mut analyzer = AsciiFoldingFilter
        .transform(Stemmer::new(sl.language).transform(LowerCaser.transform(words)));
    let mut stream = analyzer.token_stream(text);
    let mut out = Vec::new();
    while let Some(token) = stream.next() {
        let mut token = token.clone();
        token.text = prefixed(sl.code, &token.text);
        out.push(token);
    }
    out
}

fn prefixed(code: &str, stem: &str) -> String {
    let mut s = String::with_capacity(code.len() + 1 + stem.len());
    s.push_str(code);
    s.push(':');
    s.push_str(stem);
    s
}

/// `word` (one lowercase word, no separators) stemmed in `sl` and folded to ASCII, unprefixed.
fn stem_lower(word: &str, sl: StemLang) -> String {
    let mut analyzer =
        AsciiFoldingFilter.transform(Stemmer::new(sl.language).transform(RawTokenizer::default()));
    let mut stream = analyzer.token_stream(word);
    stream.next().map(|t| t.text.clone()).unwrap_or_default()
}

/// `word` folded to ASCII.
fn fold(word: &str) -> String {
    let mut analyzer = AsciiFoldingFilter.transform(RawTokenizer::default());
    let mut stream = analyzer.token_stream(word);
    stream.next().map(|t| t.text.clone()).unwrap_or_default()
}

/// The single word of `text`, lowercased but not folded; `None` when `text` is not exactly one
/// word (empty, several words, CJK, or longer than [`MAX_TOKEN_BYTES`]).
fn single_word(text: &str) -> Option<String> {
    let words =
        RemoveLongFilter::limit(MAX_TOKEN_BYTES).transform(GeodeTokenizer::new(Mode::Words));
    let mut analyzer = LowerCaser.transform(words);
    let mut stream = analyzer.token_stream(text);
    let first = stream.next()?.text.clone();
    if stream.next().is_some() {
        return None;
    }
    Some(first)
}

/// The stem of one word in `lang`, as [`stem_tokens`] would index it (`en:run` for `Running`).
/// `None` when `lang` has no stemmer or `word` is not exactly one word.
pub fn stem_word(word: &str, lang: &str) -> Option<String> {
    let sl = stem_lang(lang)?;
    stem_word_in(word, sl)
}

/// [`stem_word`] with the language already resolved.
fn stem_word_in(word: &str, sl: StemLang) -> Option<String> {
    let lower = single_word(word)?;
    Some(prefixed(sl.code, &stem_lower(&lower, sl)))
}

/// The stem of a token as [`text_analyzer`] gives it (one lowercased word, or a CJK n-gram),
/// prefixed like [`stem_tokens`]; `None` for CJK n-grams, which have no stem. Cheaper than
/// [`stem_word`]: the token is not split again.
pub(crate) fn stem_analysed(token: &str, sl: StemLang) -> Option<String> {
    if token.is_empty() || token.chars().any(is_cjk) {
        return None;
    }
    Some(prefixed(sl.code, &stem_lower(token, sl)))
}

/// Every form one query word takes in the `stem` field: its stem in each language with a
/// stemmer, prefixed (`en:run`, `de:running`, ...), deduplicated, in a stable order.
///
/// Pass the word as the user typed it (any case, accents kept): it is lowercased here and
/// stemmed both as is and folded to ASCII, so `hauser` finds the `de:haus` of `Häuser` and
/// `häuser` does too. Empty when `word` is not exactly one word (CJK runs have no stems).
pub fn stem_query_word(word: &str) -> Vec<String> {
    let Some(lower) = single_word(word) else {
        return Vec::new();
    };
    let folded = fold(&lower);
    let mut out: Vec<String> = Vec::with_capacity(STEMMERS.len() * 2);
    for &(code, language) in &STEMMERS {
        let sl = StemLang { code, language };
        for variant in [&lower, &folded] {
            let form = prefixed(code, &stem_lower(variant, sl));
            if !out.contains(&form) {
                out.push(form);
            }
        }
    }
    out
}

/// What the tokenizer emits for CJK runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Unigrams and bigrams (indexing and highlighting).
    Index,
    /// Bigrams only, or the unigram of a one-character run (queries).
    Query,
    /// Nothing: words only, CJK runs still advance the position (stems).
    Words,
}

/// Splits text into words and CJK n-grams (see the module doc). Does no case or accent
/// folding: the filters after it do.
#[derive(Clone)]
struct GeodeTokenizer {
    mode: Mode,
    token: Token,
}

impl GeodeTokenizer {
    fn new(mode: Mode) -> Self {
        GeodeTokenizer {
            mode,
            token: Token::default(),
        }
    }
}

impl Tokenizer for GeodeTokenizer {
    type TokenStream<'a> = GeodeTokenStream<'a>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> GeodeTokenStream<'a> {
        self.token.reset();
        GeodeTokenStream {
            text,
            cursor: 0,
            next_position: 0,
            mode: self.mode,
            run: None,
            token: &mut self.token,
        }
    }
}

/// Where the tokenizer is inside a CJK run.
#[derive(Debug, Clone)]
struct CjkRun {
    /// Position of the run's first character.
    base: usize,
    /// Index in the run of the current character.
    index: usize,
    /// Byte range of the current character.
    cur: (usize, usize),
    /// Byte range of the next character when it belongs to the run too.
    next: Option<(usize, usize)>,
    /// Whether the current character's unigram was emitted already.
    unigram_done: bool,
}

struct GeodeTokenStream<'a> {
    text: &'a str,
    /// Byte offset where scanning resumes when not inside a CJK run.
    cursor: usize,
    /// Position of the next word, or of the first character of the next CJK run.
    next_position: usize,
    mode: Mode,
    run: Option<CjkRun>,
    token: &'a mut Token,
}

impl GeodeTokenStream<'_> {
    /// The CJK character starting at byte `at`, as a byte range.
    fn cjk_at(&self, at: usize) -> Option<(usize, usize)> {
        let c = self.text.get(at..)?.chars().next()?;
        is_cjk(c).then(|| (at, at + c.len_utf8()))
    }

    fn set_token(&mut self, from: usize, to: usize, position: usize) {
        self.token.text.clear();
        self.token
            .text
            .push_str(self.text.get(from..to).unwrap_or_default());
        self.token.offset_from = from;
        self.token.offset_to = to;
        self.token.position = position;
        self.token.position_length = 1;
    }

    /// Emits the next token of the current CJK run, if it has one left.
    fn advance_in_run(&mut self) -> bool {
        while let Some(run) = self.run.clone() {
            let position = run.base + run.index;
            let emit_unigram = !run.unigram_done
                && match self.mode {
                    Mode::Index => true,
                    Mode::Query => run.index == 0 && run.next.is_none(),
                    Mode::Words => false,
                };
            if emit_unigram {
                if let Some(r) = self.run.as_mut() {
                    r.unigram_done = true;
                }
                self.set_token(run.cur.0, run.cur.1, position);
                return true;
            }
            // The bigram (if any) is the last token at this position: move on first.
            match run.next {
                Some(next) => {
                    self.run = Some(CjkRun {
                        base: run.base,
                        index: run.index + 1,
                        cur: next,
                        next: self.cjk_at(next.1),
                        unigram_done: false,
                    });
                    if self.mode != Mode::Words {
                        self.set_token(run.cur.0, next.1, position);
                        return true;
                    }
                }
                None => {
                    self.run = None;
                    self.cursor = run.cur.1;
                    self.next_position = position + 1;
                }
            }
        }
        false
    }

    /// Scans a word starting at byte `start` (an alphanumeric, non-CJK character) and makes it
    /// the current token.
    fn take_word(&mut self, start: usize) {
        let rest = self.text.get(start..).unwrap_or_default();
        let mut end = start;
        let mut chars = rest.char_indices().peekable();
        let mut has_latin_marks = false;
        while let Some((i, c)) = chars.next() {
            let continues = if c.is_alphanumeric() {
                !is_cjk(c)
            } else if is_joiner(c) {
                // A joiner belongs to the word only between two of its characters.
                chars
                    .peek()
                    .is_some_and(|&(_, n)| (n.is_alphanumeric() && !is_cjk(n)) || is_mark(n))
            } else {
                is_mark(c)
            };
            if !continues {
                break;
            }
            has_latin_marks |= is_latin_mark(c);
            end = start + i + c.len_utf8();
        }
        let word = self.text.get(start..end).unwrap_or_default();
        self.token.text.clear();
        if has_latin_marks {
            self.token
                .text
                .extend(word.chars().filter(|&c| !is_latin_mark(c)));
        } else {
            self.token.text.push_str(word);
        }
        self.token.offset_from = start;
        self.token.offset_to = end;
        self.token.position = self.next_position;
        self.token.position_length = 1;
        self.next_position += 1;
        self.cursor = end;
    }
}

impl TokenStream for GeodeTokenStream<'_> {
    fn advance(&mut self) -> bool {
        loop {
            if self.run.is_some() {
                if self.advance_in_run() {
                    return true;
                }
                continue;
            }
            let rest = self.text.get(self.cursor..).unwrap_or_default();
            let Some((i, c)) = rest.char_indices().find(|(_, c)| c.is_alphanumeric()) else {
                self.cursor = self.text.len();
                return false;
            };
            let start = self.cursor + i;
            if is_cjk(c) {
                let cur = (start, start + c.len_utf8());
                self.run = Some(CjkRun {
                    base: self.next_position,
                    index: 0,
                    cur,
                    next: self.cjk_at(cur.1),
                    unigram_done: false,
                });
                continue;
            }
            self.take_word(start);
            return true;
        }
    }

    fn token(&self) -> &Token {
        self.token
    }

    fn token_mut(&mut self) -> &mut Token {
        self.token
    }
}

/// Han, kana, Hangul and Bopomofo letters: scripts written without spaces between words (Korean
/// has spaces, but its compounds are long, so it is indexed the same way).
pub(crate) fn is_cjk(c: char) -> bool {
    let u = c as u32;
    if u < 0x1100 {
        return false;
    }
    c.is_alphanumeric()
        && matches!(u,
            0x1100..=0x11FF // Hangul Jamo
            | 0x3005..=0x3007 // 々 〆 〇
            | 0x3021..=0x3029 // Hangzhou numerals
            | 0x3031..=0x3035 // kana repeat marks
            | 0x3038..=0x303C
            | 0x3040..=0x30FF // Hiragana, Katakana
            | 0x3100..=0x318F // Bopomofo, Hangul compatibility Jamo
            | 0x31A0..=0x31BF // Bopomofo extended
            | 0x31F0..=0x31FF // Katakana phonetic extensions
            | 0x3400..=0x4DBF // CJK extension A
            | 0x4E00..=0x9FFF // CJK unified ideographs
            | 0xA960..=0xA97F // Hangul Jamo extended A
            | 0xAC00..=0xD7FF // Hangul syllables, Jamo extended B
            | 0xF900..=0xFAFF // CJK compatibility ideographs
            | 0xFF66..=0xFFDC // halfwidth Katakana and Hangul
            | 0x1B000..=0x1B16F // Kana supplement and extensions
            | 0x20000..=0x323AF // CJK extensions B to H
        )
}

/// Decomposed Latin accents (combining diacritical marks), dropped from token text.
fn is_latin_mark(c: char) -> bool {
    matches!(c as u32, 0x0300..=0x036F)
}

/// Zero-width joiner and non-joiner, which Persian and Indic words contain.
fn is_joiner(c: char) -> bool {
    matches!(c, '\u{200C}' | '\u{200D}')
}

/// Combining marks that continue a word although Unicode does not call them alphabetic: accents
/// in decomposed text, Hebrew and Arabic points, Indic viramas and nuktas, Thai and Lao tone
/// marks, Myanmar and Khmer signs. Punctuation inside those blocks (dandas, Thai and Khmer
/// sentence marks, currency signs) still ends a word.
fn is_mark(c: char) -> bool {
    let u = c as u32;
    match u {
        0x0300..=0x036F | 0x0483..=0x0489 => true,
        0x0591..=0x05BD | 0x05BF | 0x05C1..=0x05C2 | 0x05C4..=0x05C5 | 0x05C7 => true,
        0x0610..=0x061A | 0x064B..=0x065F | 0x0670 => true,
        0x06D6..=0x06DC | 0x06DF..=0x06E4 | 0x06E7..=0x06E8 | 0x06EA..=0x06ED => true,
        0x0964 | 0x0965 | 0x0970 | 0x0DF4 => false,
        0x0900..=0x0DFF => true,
        0x0E3F | 0x0E4F | 0x0E5A | 0x0E5B => false,
        0x0E00..=0x0EFF => true,
        0x0F71..=0x0F84 | 0x0F86..=0x0F87 | 0x0F8D..=0x0FBC => true,
        0x104A..=0x104F => false,
        0x1000..=0x109F => true,
        0x17D4..=0x17DB => false,
        0x1780..=0x17FF => true,
        0x1AB0..=0x1AFF | 0x1DC0..=0x1DFF | 0x20D0..=0x20FF | 0xFE20..=0xFE2F => true,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (text, position, offsets) of every token `text_analyzer` gives.
    fn index_tokens(text: &str) -> Vec<(String, usize, usize, usize)> {
        let mut analyzer = text_analyzer();
        let mut stream = analyzer.token_stream(text);
        let mut out = Vec::new();
        while let Some(t) = stream.next() {
            out.push((t.text.clone(), t.position, t.offset_from, t.offset_to));
        }
        out
    }

    fn texts(text: &str) -> Vec<String> {
        index_tokens(text).into_iter().map(|t| t.0).collect()
    }

    #[test]
    fn words_are_split_lowercased_and_folded() {
        let cases: &[(&str, &[&str])] = &[
            ("", &[]),
            ("  ,;- ", &[]),
            ("Café au LAIT", &["cafe", "au", "lait"]),
            ("gemini://a.b/c_d", &["gemini", "a", "b", "c", "d"]),
            ("naïve Ærø", &["naive", "aero"]),
            ("Привет, Мир!", &["привет", "мир"]),
            // Greek keeps its accents: ASCII folding covers Latin letters only.
            ("Ελληνικά κείμενα", &["ελληνικά", "κείμενα"]),
            ("مرحبا بالعالم", &["مرحبا", "بالعالم"]),
            // Thai tone marks and Devanagari viramas do not split words.
            ("ที่นี่ ภาษา", &["ที่นี่", "ภาษา"]),
            ("हिन्दी भाषा", &["हिन्दी", "भाषा"]),
            // Decomposed accents: the same terms as precomposed ones.
            ("re\u{301}sume\u{301}", &["resume"]),
            // A joiner between letters stays (Persian), one before a symbol does not.
            ("می\u{200C}خواهم", &["می\u{200C}خواهم"]),
            ("ok\u{200D}👍", &["ok"]),
            // Emoji and symbols are not words.
            ("I ❤️ Gemini 🚀!", &["i", "gemini"]),
            ("v1.2.3 x86_64", &["v1", "2", "3", "x86", "64"]),
            // Fullwidth Latin is folded to ASCII.
            ("ＡＢＣ", &["abc"]),
            ("word AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", &["word"]),
        ];
        for (text, want) in cases {
            assert_eq!(texts(text), *want, "tokens of {text:?}");
        }
    }

    #[test]
    fn positions_and_offsets() {
        type Case = (&'static str, &'static [(&'static str, usize, usize, usize)]);
        let cases: &[Case] = &[
            ("Hello, wörld!", &[("hello", 0, 0, 5), ("world", 1, 7, 13)]),
            // A dropped long token still takes its position.
            (
                "a BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB c",
                &[("a", 0, 0, 1), ("c", 2, 44, 45)],
            ),
            (
                "日本語 text",
                &[
                    ("日", 0, 0, 3),
                    ("日本", 0, 0, 6),
                    ("本", 1, 3, 6),
                    ("本語", 1, 3, 9),
                    ("語", 2, 6, 9),
                    ("text", 3, 10, 14),
                ],
            ),
            (
                "Rust言語で",
                &[
                    ("rust", 0, 0, 4),
                    ("言", 1, 4, 7),
                    ("言語", 1, 4, 10),
                    ("語", 2, 7, 10),
                    ("語で", 2, 7, 13),
                    ("で", 3, 10, 13),
                ],
            ),
            (
                "한국어 a",
                &[
                    ("한", 0, 0, 3),
                    ("한국", 0, 0, 6),
                    ("국", 1, 3, 6),
                    ("국어", 1, 3, 9),
                    ("어", 2, 6, 9),
                    ("a", 3, 10, 11),
                ],
            ),
            // Punctuation ends a run; a single character is a unigram only.
            (
                "東、京 x",
                &[("東", 0, 0, 3), ("京", 1, 6, 9), ("x", 2, 10, 11)],
            ),
            // Katakana with the prolonged sound mark is one run.
            (
                "カード",
                &[
                    ("カ", 0, 0, 3),
                    ("カー", 0, 0, 6),
                    ("ー", 1, 3, 6),
                    ("ード", 1, 3, 9),
                    ("ド", 2, 6, 9),
                ],
            ),
        ];
        for (text, want) in cases {
            let got = index_tokens(text);
            let want: Vec<(String, usize, usize, usize)> = want
                .iter()
                .map(|&(t, p, f, e)| (t.to_string(), p, f, e))
                .collect();
            assert_eq!(got, want, "tokens of {text:?}");
        }
    }

    #[test]
    fn offsets_always_slice_the_original_text() {
        let texts = [
            "Chinese 中文分词很难, Japanese 日本語のテキスト、Korean 한국어 텍스트.",
            "mixed ÀÉÎ ﬁ ß İstanbul 🚀🚀 ①②③ x\u{301}y \u{200C}a",
            "\u{0}\u{7f}\u{feff}a\u{fe0f}b",
            "𠀀𠀁 (extension B) ｶﾀｶﾅ",
        ];
        for text in texts {
            for (_, _, from, to) in index_tokens(text) {
                assert!(text.get(from..to).is_some(), "{text:?} {from}..{to}");
                assert!(from < to, "{text:?} {from}..{to}");
            }
        }
    }

    #[test]
    fn query_tokens_use_bigrams_for_cjk() {
        type Case = (&'static str, &'static [(usize, &'static str)]);
        let cases: &[Case] = &[
            ("", &[]),
            ("Café Noir", &[(0, "cafe"), (1, "noir")]),
            ("日本語 text", &[(0, "日本"), (1, "本語"), (3, "text")]),
            ("日", &[(0, "日")]),
            ("日本", &[(0, "日本")]),
            ("東、京", &[(0, "東"), (1, "京")]),
            ("  -- hello", &[(0, "hello")]),
            (
                "a BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB c",
                &[(0, "a"), (2, "c")],
            ),
        ];
        for (text, want) in cases {
            let want: Vec<(usize, String)> =
                want.iter().map(|&(p, t)| (p, t.to_string())).collect();
            assert_eq!(query_tokens(text), want, "query tokens of {text:?}");
        }
    }

    #[test]
    fn phrase_queries_from_query_tokens_find_the_indexed_text() {
        use tantivy::collector::Count;
        use tantivy::query::{PhraseQuery, TermQuery};
        use tantivy::schema::{IndexRecordOption, Schema, TextFieldIndexing, TextOptions};
        use tantivy::{doc, Index, Term};

        let mut builder = Schema::builder();
        let indexing = TextFieldIndexing::default()
            .set_tokenizer("t")
            .set_index_option(IndexRecordOption::WithFreqsAndPositions);
        let body = builder.add_text_field(
            "body",
            TextOptions::default().set_indexing_options(indexing),
        );
        let index = Index::create_in_ram(builder.build());
        index.tokenizers().register("t", text_analyzer());
        let docs = [
            "我们在东京的日本语学校学习日本語和中文",
            "Ich wohne in München, nicht in Köln. Café Noir!",
            "ゲミニプロトコルはシンプルです。Rust言語で書いた",
            "한국어 텍스트도 검색할 수 있습니다",
            "x AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA y",
        ];
        let mut writer = index
            .writer_with_num_threads(1, 15_000_000)
            .expect("writer");
        for text in docs {
            writer.add_document(doc!(body => text)).expect("add");
        }
        writer.commit().expect("commit");
        let searcher = index.reader().expect("reader").searcher();

        let count = |phrase: &str| -> usize {
            let tokens = query_tokens(phrase);
            let terms: Vec<(usize, Term)> = tokens
                .iter()
                .map(|(p, t)| (*p, Term::from_field_text(body, t)))
                .collect();
            match terms.len() {
                0 => 0,
                1 => searcher
                    .search(
                        &TermQuery::new(terms[0].1.clone(), IndexRecordOption::Basic),
                        &Count,
                    )
                    .expect("search"),
                _ => searcher
                    .search(&PhraseQuery::new_with_offset(terms), &Count)
                    .expect("search"),
            }
        };
        let cases: &[(&str, usize)] = &[
            ("日本語", 1),
            ("日本", 1),
            ("东京", 1),
            ("学校学习", 1),
            ("中文", 1),
            ("本", 1),
            ("语日", 0),
            ("munchen nicht", 1),
            ("München, nicht in KÖLN", 1),
            ("cafe noir", 1),
            ("noir cafe", 0),
            ("プロトコル", 1),
            ("シンプルです", 1),
            ("rust言語", 1),
            ("Rust 言語で書いた", 1),
            ("言語 rust", 0),
            ("텍스트도 검색할", 1),
            ("한국어", 1),
            ("x y", 0),
            // The dropped blob leaves its position: the same gap on both sides.
            ("x BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB y", 1),
        ];
        for (phrase, want) in cases {
            assert_eq!(count(phrase), *want, "phrase {phrase:?}");
        }
    }

    #[test]
    fn normalize_lang_takes_the_primary_subtag() {
        let cases: &[(&str, Option<&str>)] = &[
            ("en", Some("en")),
            ("en-US", Some("en")),
            ("EN", Some("en")),
            (" de_DE ", Some("de")),
            ("zh-Hant-TW", Some("zh")),
            ("gsw", Some("gsw")),
            ("x", None),
            ("x-klingon", None),
            ("", None),
            ("e1", None),
            ("engl", None),
            ("ñu", None),
        ];
        for (tag, want) in cases {
            assert_eq!(normalize_lang(tag).as_deref(), *want, "tag {tag:?}");
        }
    }

    #[test]
    fn detect_lang_on_paragraphs() {
        let cases: &[(&str, Option<&str>)] = &[
            ("", None),
            ("hi", None),
            ("Hello world", None),
            (
                "This capsule is where I write about the small web, old computers and the books \
                 I have been reading this winter. New posts appear every week or so.",
                Some("en"),
            ),
            (
                "Diese Kapsel ist mein kleines Tagebuch. Hier schreibe ich über alte Computer, \
                 über das Wetter in den Bergen und über die Bücher, die ich gerade lese.",
                Some("de"),
            ),
            (
                "Bienvenue sur ma capsule ! J'y écris des notes sur les vieux ordinateurs, la \
                 cuisine de ma grand-mère et les livres que je lis cet hiver.",
                Some("fr"),
            ),
            (
                "Bienvenido a mi cápsula. Aquí escribo sobre ordenadores antiguos, la cocina de \
                 mi abuela y los libros que estoy leyendo este invierno.",
                Some("es"),
            ),
            (
                "このカプセルでは、古いコンピューターや読んでいる本について書いています。\
                 毎週新しい記事を公開する予定です。",
                Some("ja"),
            ),
            (
                "Это моя капсула. Здесь я пишу о старых компьютерах, о погоде в горах и о \
                 книгах, которые читаю этой зимой.",
                Some("ru"),
            ),
            // CJK text with a longer aside in English is still CJK; an English page quoting
            // a CJK word is English.
            (
                "季節の俳句\n友人が一年をかけて書いた俳句です。雪解けの郵便ポストという言葉が好きで、\
                 毎年春になると思い出します。(In English: the snowmelt postbox, a red mailbox \
                 standing in melting snow. Romaji: yukidoke no yuubin posuto.)",
                Some("ja"),
            ),
            (
                "我的胶囊主要写旧电脑和读书笔记。 (Notes on old computers.)",
                Some("zh"),
            ),
            (
                "오래된 컴퓨터와 책에 대해 씁니다. 매주 새 글을 올립니다.",
                Some("ko"),
            ),
            (
                "The word 雪解け means snowmelt; I learned it from a friend who writes haiku \
                 every winter and sends them to me on postcards.",
                Some("en"),
            ),
        ];
        for (text, want) in cases {
            assert_eq!(detect_lang(text), *want, "text {text:?}");
        }
        // Only the start of a long text is read, and a cut inside a character is avoided.
        let long = "é".repeat(3000) + &" the english words after".repeat(2000);
        assert_ne!(detect_lang(&long), Some("en"));
    }

    #[test]
    fn stemmer_languages() {
        for lang in [
            "en", "EN-gb", "de", "fr", "nb", "nn", "no", "ru", "tr", "ta",
        ] {
            assert!(has_stemmer(lang), "{lang}");
        }
        for lang in ["ja", "zh", "ko", "pl", "", "x", "english"] {
            assert!(!has_stemmer(lang), "{lang}");
        }
    }

    #[test]
    fn stem_word_table() {
        let cases: &[(&str, &str, Option<&str>)] = &[
            ("running", "en", Some("en:run")),
            ("runs", "en", Some("en:run")),
            ("Run", "en", Some("en:run")),
            ("Häuser", "de", Some("de:haus")),
            ("Haus", "de", Some("de:haus")),
            ("maisons", "fr", Some("fr:maison")),
            ("maison", "fr", Some("fr:maison")),
            ("книги", "ru", Some("ru:книг")),
            ("книгах", "ru", Some("ru:книг")),
            ("bøker", "nb", Some("no:bok")),
            ("running", "ja", None),
            ("two words", "en", None),
            ("", "en", None),
            ("日本語", "en", None),
        ];
        for (word, lang, want) in cases {
            assert_eq!(
                stem_word(word, lang).as_deref(),
                *want,
                "{word:?} in {lang}"
            );
        }
    }

    #[test]
    fn stem_tokens_keep_positions_and_skip_cjk() {
        let got: Vec<(String, usize, usize, usize)> = stem_tokens("Running dogs 日本 Häuser", "en")
            .into_iter()
            .map(|t| (t.text, t.position, t.offset_from, t.offset_to))
            .collect();
        let want: Vec<(String, usize, usize, usize)> = vec![
            ("en:run".into(), 0, 0, 7),
            ("en:dog".into(), 1, 8, 12),
            ("en:hauser".into(), 4, 20, 27),
        ];
        assert_eq!(got, want);
        let de: Vec<String> = stem_tokens("Die Häuser", "de-AT")
            .into_iter()
            .map(|t| t.text)
            .collect();
        assert_eq!(de, ["de:die", "de:haus"]);
        assert!(stem_tokens("some words", "ja").is_empty());
        assert!(stem_tokens("日本語", "en").is_empty());
    }

    #[test]
    fn stem_query_word_covers_every_language() {
        let forms = stem_query_word("Running");
        assert!(forms.contains(&"en:run".to_string()), "{forms:?}");
        for (code, _) in STEMMERS {
            let prefix = format!("{code}:");
            assert!(
                forms.iter().any(|f| f.starts_with(&prefix)),
                "{code} {forms:?}"
            );
        }
        let mut dedup = forms.clone();
        dedup.sort();
        dedup.dedup();
        assert_eq!(dedup.len(), forms.len(), "{forms:?}");

        // Accented and folded query words both reach the stem of the accented text.
        let indexed = stem_word("Häuser", "de").expect("stem");
        assert!(stem_query_word("häuser").contains(&indexed));
        assert!(stem_query_word("hauser").contains(&indexed));
        assert!(stem_query_word("maisons").contains(&"fr:maison".to_string()));
        assert!(stem_query_word("two words").is_empty());
        assert!(stem_query_word("日本語").is_empty());
        assert!(stem_query_word("").is_empty());
    }
}
