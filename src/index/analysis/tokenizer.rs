//! The tokenizer under `geode_text`: words (runs of alphanumerics, combining marks included),
//! and CJK runs as unigrams and bigrams (see the module doc of [`super`]). No case or accent
//! folding: the filters after it do that.

use tantivy::tokenizer::{Token, TokenStream, Tokenizer};

use crate::lang::is_cjk;

/// What the tokenizer emits for CJK runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Mode {
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
pub(super) struct GeodeTokenizer {
    mode: Mode,
    token: Token,
}
impl GeodeTokenizer {
    pub(super) fn new(mode: Mode) -> Self {
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
pub(super) struct GeodeTokenStream<'a> {
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
        // Most words are ASCII: their letters and digits need no decoding. A word goes on past
        // them only into a non-ASCII character (a letter, a mark or a joiner), read as such.
        let bytes = self.text.as_bytes();
        let mut end = start;
        while end < bytes.len() && bytes[end].is_ascii_alphanumeric() {
            end += 1;
        }
        let mut has_latin_marks = false;
        if bytes.get(end).is_some_and(|b| !b.is_ascii()) {
            let from = end;
            let rest = self.text.get(from..).unwrap_or_default();
            let mut chars = rest.char_indices().peekable();
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
                end = from + i + c.len_utf8();
            }
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
            // Spaces and ASCII punctuation are passed over a byte at a time.
            let bytes = self.text.as_bytes();
            while bytes
                .get(self.cursor)
                .is_some_and(|b| b.is_ascii() && !b.is_ascii_alphanumeric())
            {
                self.cursor += 1;
            }
            if bytes
                .get(self.cursor)
                .is_some_and(u8::is_ascii_alphanumeric)
            {
                self.take_word(self.cursor);
                return true;
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
/// Decomposed Latin accents (combining diacritical marks), dropped from token text.
fn is_latin_mark(c: char) -> bool {
    matches!(c as u32, 0x0300..=0x036F)
}
/// Zero-width joiner and non-joiner, which Persian and Indic words contain.
pub(super) fn is_joiner(c: char) -> bool {
    matches!(c, '\u{200C}' | '\u{200D}')
}
/// Combining marks that continue a word although Unicode does not call them alphabetic: accents
/// in decomposed text, Hebrew and Arabic points, Indic viramas and nuktas, Thai and Lao tone
/// marks, Myanmar and Khmer signs. Punctuation inside those blocks (dandas, Thai and Khmer
/// sentence marks, currency signs) still ends a word.
pub(super) fn is_mark(c: char) -> bool {
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
