//! Snowball stems for the `stem` field and for query words: the 18 languages Tantivy has a
//! stemmer for, each stem prefixed with its language (`en:run`). Stemming runs on lowercased
//! words before accent folding (the German and French stemmers need the accents); the stem is
//! folded after.

use tantivy::tokenizer::{
    AsciiFoldingFilter, Language, LowerCaser, RawTokenizer, RemoveLongFilter, Stemmer, Token,
    TokenFilter, TokenStream, Tokenizer,
};

use hashbrown::HashMap;

use crate::lang::is_cjk;

use super::tokenizer::{GeodeTokenizer, Mode};
use super::MAX_TOKEN_BYTES;

/// The languages with a stemmer, by the code that prefixes their stems.
pub(super) const STEMMERS: [(&str, Language); 18] = [
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
/// The codes that prefix stems (`en`, `de`, ...), one per language with a stemmer.
pub fn stemmer_codes() -> impl Iterator<Item = &'static str> {
    STEMMERS.iter().map(|(code, _)| *code)
}

/// A language with a stemmer: the code its stems are prefixed with and Tantivy's stemmer.
#[derive(Debug, Clone, Copy)]
pub(crate) struct StemLang {
    code: &'static str,
    language: Language,
    /// Its place in [`STEMMERS`]: where a [`StemCache`] keeps its words.
    slot: usize,
}

impl StemLang {
    /// The language code its stems are prefixed with (`en`).
    pub(crate) fn code(self) -> &'static str {
        self.code
    }
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
        .position(|(code, _)| *code == primary)
        .map(|slot| {
            let (code, language) = STEMMERS[slot];
            StemLang {
                code,
                language,
                slot,
            }
        })
}
/// Whether `lang` (an ISO 639-1 code or BCP 47 tag) has a stemmer.
pub fn has_stemmer(lang: &str) -> bool {
    stem_lang(lang).is_some()
}
/// The `stem` field's tokens of `text` in language `lang`: its words (as [`text_analyzer`]
/// splits them, CJK runs left out but still counted in positions), lowercased, stemmed, folded
/// to ASCII and prefixed with the language code (`en:run`), except the words that are their own
/// stem (`run`, `linux`: the text fields hold them as they are). Positions and offsets are those
/// of the words. Empty when `lang` has no stemmer.
pub fn stem_tokens(text: &str, lang: &str) -> Vec<Token> {
    stem_tokens_with(text, lang, &mut StemCache::default())
}

/// Stems already found, by language: every page repeats the same words, and a Snowball stemmer
/// costs thousands of instructions a word where a lookup costs tens. Each language keeps at
/// most [`STEM_CACHE_WORDS`] words, then starts afresh.
///
/// Words and most stems live in the map's own slots, not behind pointers: a lookup is one
/// probe, where a `String` key cost a cache miss on its text at every hit (the lookups were 4%
/// of a crawl's CPU).
#[derive(Debug, Default, Clone)]
pub struct StemCache {
    /// By language, in the order of [`STEMMERS`] (empty until a word is stemmed): lowercased
    /// word -> its stem.
    by_lang: Vec<HashMap<InlineWord, Stem>>,
    /// Where the stem of a word too long to be kept is put for the caller to read.
    spill: Stem,
}

/// A word of at most [`INLINE_WORD_BYTES`] bytes, held by value (the bytes after it are zero).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct InlineWord {
    len: u8,
    bytes: [u8; INLINE_WORD_BYTES],
}

/// The longest word a [`StemCache`] keeps: every word [`text_analyzer`] gives (it drops tokens
/// of [`MAX_TOKEN_BYTES`] or more). A longer word is stemmed each time it comes.
const INLINE_WORD_BYTES: usize = MAX_TOKEN_BYTES;

impl std::hash::Hash for InlineWord {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        // The word alone: hashing the padding too would cost more than the lookup saves.
        state.write(&self.bytes[..usize::from(self.len)]);
    }
}

impl InlineWord {
    fn new(word: &str) -> Option<Self> {
        let len = word.len();
        let mut bytes = [0; INLINE_WORD_BYTES];
        bytes.get_mut(..len)?.copy_from_slice(word.as_bytes());
        Some(InlineWord {
            len: len as u8,
            bytes,
        })
    }
}

/// A word's stem as a [`StemCache`] keeps it, without its language prefix.
#[derive(Debug, Clone, Default)]
enum Stem {
    /// The word itself as the text fields hold it (folded): `linux`, `run`.
    #[default]
    Own,
    /// The word's first `n` bytes (`run` of `running`), the commonest case.
    Prefix(u8),
    /// Anything else (`happi` of `happy`, a folded stem of an accented word).
    Other(Box<str>),
}

impl Stem {
    fn of(word: &str, sl: StemLang) -> Self {
        let stem = stem_lower(word, sl);
        let own = match word.is_ascii() {
            true => stem == word,
            false => stem == fold(word),
        };
        match own {
            true => Stem::Own,
            false
                if word.as_bytes().starts_with(stem.as_bytes())
                    && word.is_char_boundary(stem.len()) =>
            {
                Stem::Prefix(stem.len() as u8)
            }
            false => Stem::Other(stem.into_boxed_str()),
        }
    }

    /// The stem of `word`, unprefixed, where it is not the word itself (folded): `word` is the
    /// word this was made from.
    fn text<'a>(&'a self, word: &'a str) -> Option<&'a str> {
        match self {
            Stem::Own => None,
            Stem::Prefix(n) => word.get(..usize::from(*n)),
            Stem::Other(stem) => Some(stem),
        }
    }
}

impl StemCache {
    /// The stem of `word` (lowercased) in `sl`, prefixed (`en:run`): from the cache, else from
    /// the stemmer and kept.
    fn stem(&mut self, word: &str, sl: StemLang) -> String {
        let mut out = String::new();
        match self.stemmed(word, sl) {
            // The word folded, which for an accented word is not the word.
            None if word.is_ascii() => push_prefixed(&mut out, sl.code, word),
            None => push_prefixed(&mut out, sl.code, &fold(word)),
            Some(stem) => push_prefixed(&mut out, sl.code, stem),
        }
        out
    }

    /// The stem of `word` (lowercased) in `sl`, unprefixed; `None` when it is the word itself
    /// as the text fields hold it (folded). From the cache, else from the stemmer and kept.
    fn stemmed<'a>(&'a mut self, word: &'a str, sl: StemLang) -> Option<&'a str> {
        let Some(key) = InlineWord::new(word) else {
            self.spill = Stem::of(word, sl);
            return self.spill.text(word);
        };
        if self.by_lang.is_empty() {
            self.by_lang.resize_with(STEMMERS.len(), HashMap::default);
        }
        let stems = &mut self.by_lang[sl.slot];
        // Full: start afresh (the word last added may make it one over).
        if stems.len() > STEM_CACHE_WORDS {
            stems.clear();
        }
        stems
            .entry(key)
            .or_insert_with(|| Stem::of(word, sl))
            .text(word)
    }

    /// Words kept, in all languages.
    pub fn len(&self) -> usize {
        self.by_lang.iter().map(HashMap::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Words a [`StemCache`] keeps per language (a few megabytes).
const STEM_CACHE_WORDS: usize = 20_000;

/// [`stem_tokens`], with the stems of words met before taken from `cache`.
pub fn stem_tokens_with(text: &str, lang: &str, cache: &mut StemCache) -> Vec<Token> {
    let Some(sl) = stem_lang(lang) else {
        return Vec::new();
    };
    let mut words = stem_words();
    let mut stream = StemTokenStream {
        words: Some((words.token_stream(text), sl)),
        cache,
        token: Token::default(),
    };
    let mut out = Vec::new();
    while stream.advance() {
        out.push(stream.token().clone());
    }
    out
}

/// What the words of the `stem` field are before stemming: [`text_analyzer`]'s words without
/// CJK runs, lowercased, not yet folded.
type StemWords = <LowerCaser as TokenFilter>::Tokenizer<
    <RemoveLongFilter as TokenFilter>::Tokenizer<GeodeTokenizer>,
>;

fn stem_words() -> StemWords {
    LowerCaser.transform(
        RemoveLongFilter::limit(MAX_TOKEN_BYTES).transform(GeodeTokenizer::new(Mode::Words)),
    )
}

/// Separates the language code from the text in a value of the `stem` field (`en\u{1f}text`).
const STEM_VALUE_SEPARATOR: char = '\u{1f}';

/// The value the indexer gives the `stem` field for `text` in language `sl`: the field's
/// [`StemTokenizer`] reads the language from its start.
pub(crate) fn stem_field_value(sl: StemLang, text: &str) -> String {
    let mut value = String::with_capacity(sl.code.len() + 1 + text.len());
    value.push_str(sl.code);
    value.push(STEM_VALUE_SEPARATOR);
    value.push_str(text);
    value
}

/// The `stem` field's tokenizer: a value made by [`stem_field_value`] gives the tokens
/// [`stem_tokens`] would give its text in its language; any other value gives none. Stemming in
/// the tokenizer lets Tantivy's indexing threads do it, and spares the pre-tokenized text that
/// Tantivy's documents carry as JSON. Each clone (one per indexing thread and segment) keeps its
/// own [`StemCache`].
#[derive(Clone)]
pub(super) struct StemTokenizer {
    words: StemWords,
    cache: StemCache,
}

impl StemTokenizer {
    pub(super) fn new() -> Self {
        StemTokenizer {
            words: stem_words(),
            cache: StemCache::default(),
        }
    }
}

impl Tokenizer for StemTokenizer {
    type TokenStream<'a> = StemTokenStream<'a, <StemWords as Tokenizer>::TokenStream<'a>>;

    fn token_stream<'a>(&'a mut self, value: &'a str) -> Self::TokenStream<'a> {
        let words = value
            .split_once(STEM_VALUE_SEPARATOR)
            .and_then(|(code, text)| Some((self.words.token_stream(text), stem_lang(code)?)));
        StemTokenStream {
            words,
            cache: &mut self.cache,
            token: Token::default(),
        }
    }
}

/// The stems of a stream of lowercased words in a language, prefixed with it; empty without
/// words.
pub(super) struct StemTokenStream<'a, S> {
    words: Option<(S, StemLang)>,
    cache: &'a mut StemCache,
    token: Token,
}

impl<S: TokenStream> TokenStream for StemTokenStream<'_, S> {
    fn advance(&mut self) -> bool {
        let Some((words, lang)) = self.words.as_mut() else {
            return false;
        };
        // A word that is its own stem is in the text fields already, where queries find it
        // by its stem too (`compile`): most words are, and the field is half the size without.
        let (word, stem) = loop {
            if !words.advance() {
                return false;
            }
            let word = words.token();
            if let Some(stem) = self.cache.stemmed(&word.text, *lang) {
                break (word, stem);
            }
        };
        self.token.text.clear();
        push_prefixed(&mut self.token.text, lang.code, stem);
        self.token.offset_from = word.offset_from;
        self.token.offset_to = word.offset_to;
        self.token.position = word.position;
        self.token.position_length = word.position_length;
        true
    }

    fn token(&self) -> &Token {
        &self.token
    }

    fn token_mut(&mut self) -> &mut Token {
        &mut self.token
    }
}

fn prefixed(code: &str, stem: &str) -> String {
    let mut s = String::with_capacity(code.len() + 1 + stem.len());
    push_prefixed(&mut s, code, stem);
    s
}
/// Appends `stem` prefixed with its language code (`en:run`) to `out`.
fn push_prefixed(out: &mut String, code: &str, stem: &str) {
    out.push_str(code);
    out.push(':');
    out.push_str(stem);
}
/// A stem without the language [`prefixed`] gave it: `run` for `en:run`.
pub(crate) fn unprefixed(stem: &str) -> &str {
    stem.split_once(':').map_or(stem, |(_, bare)| bare)
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
/// Stems of tokens met before are taken from `cache`.
pub(crate) fn stem_analysed_with(
    token: &str,
    sl: StemLang,
    cache: &mut StemCache,
) -> Option<String> {
    if token.is_empty() || token.chars().any(is_cjk) {
        return None;
    }
    Some(cache.stem(token, sl))
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
    for (slot, &(code, language)) in STEMMERS.iter().enumerate() {
        let sl = StemLang {
            code,
            language,
            slot,
        };
        // Most words fold to themselves: their one variant is stemmed once.
        let variants = match folded == lower {
            true => &[&lower][..],
            false => &[&lower, &folded][..],
        };
        for variant in variants {
            let form = prefixed(code, &stem_lower(variant, sl));
            if !out.contains(&form) {
                out.push(form);
            }
        }
    }
    out
}
