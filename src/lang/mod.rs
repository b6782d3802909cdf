//! Facts about text that do not depend on the index: language tags (BCP 47 to ISO 639-1),
//! language detection (a CJK-aware guess, then function words for clear cases in `function_words`,
//! then whatlang), and which characters belong to scripts written without spaces (Han, kana,
//! Hangul, Bopomofo). Pure: no I/O. Used by the index's analysis, the ASCII-art classifier and
//! `geode show`.

mod function_words;

/// Language detection reads at most this many characters: enough for a confident guess, and
/// bodies can be megabytes long.
const DETECT_MAX_CHARS: usize = 2000;
/// Below this many letters, language detection does not guess.
const DETECT_MIN_LETTERS: usize = 12;
/// The primary subtag of a BCP 47 language tag, lowercased: `en-US` and `EN` give `en`. `None`
/// unless that subtag is two or three ASCII letters (`x-private`, `i-klingon`, `12`, ``).
pub fn normalize_lang(tag: &str) -> Option<String> {
    let primary = tag.trim().split(['-', '_']).next().unwrap_or_default();
    let ok = (2..=3).contains(&primary.len()) && primary.bytes().all(|b| b.is_ascii_alphabetic());
    ok.then(|| primary.to_ascii_lowercase())
}
/// Guesses the language of `text` as an ISO 639-1 code, from its first 2,000 characters.
/// `None` when the text has too few letters or the guess is not reliable. Chinese, Japanese and
/// Korean are told by their scripts; a sample whose function words leave no doubt (most English
/// pages) is answered from them; whatlang's trigrams judge the rest.
pub fn detect_lang(text: &str) -> Option<&'static str> {
    detect_sample(text, true)
}

/// [`detect_lang`] without the function-word guess: whatlang decides all but CJK.
pub fn detect_lang_whatlang(text: &str) -> Option<&'static str> {
    detect_sample(text, false)
}

fn detect_sample(text: &str, function_words: bool) -> Option<&'static str> {
    // One pass over the sample finds its end and counts what the guess needs. Its ASCII
    // start (all of most pages) is counted a byte at a time: an ASCII letter is a letter of
    // no CJK script.
    let mut counts = Letters::default();
    let bytes = &text.as_bytes()[..text.len().min(DETECT_MAX_CHARS)];
    let ascii = bytes
        .iter()
        .position(|b| !b.is_ascii())
        .unwrap_or(bytes.len());
    let ascii_letters = bytes[..ascii]
        .iter()
        .filter(|b| b.is_ascii_alphabetic())
        .count();
    counts.letters = ascii_letters;
    counts.other = ascii_letters;
    let mut end = text.len();
    // `ascii` is a character boundary, and the characters before it are bytes.
    for (n, (i, c)) in text[ascii..].char_indices().enumerate() {
        if ascii + n == DETECT_MAX_CHARS {
            end = ascii + i;
            break;
        }
        counts.add(c);
    }
    if counts.letters < DETECT_MIN_LETTERS {
        return None;
    }
    if let Some(lang) = counts.cjk_language() {
        return Some(lang);
    }
    let sample = text.get(..end).unwrap_or(text);
    if function_words {
        if let Some(lang) = function_words::guess(sample) {
            return Some(lang);
        }
    }
    let info = whatlang::detect(sample)?;
    info.is_reliable().then(|| iso639_1(info.lang()))
}

/// The letters of a sample, by script where the guess needs it.
#[derive(Default)]
struct Letters {
    letters: usize,
    kana: usize,
    hangul: usize,
    han: usize,
    /// Letters of other scripts.
    other: usize,
}

impl Letters {
    fn add(&mut self, c: char) {
        let alphabetic = c.is_alphabetic();
        self.letters += usize::from(alphabetic);
        match u32::from(c) {
            0x3040..=0x30FF | 0x31F0..=0x31FF | 0xFF66..=0xFF9F => self.kana += 1,
            0x1100..=0x11FF | 0x3130..=0x318F | 0xAC00..=0xD7AF => self.hangul += 1,
            0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF => self.han += 1,
            _ => self.other += usize::from(alphabetic),
        }
    }

    /// Chinese, Japanese or Korean when CJK characters carry at least as much of the sample as
    /// the other letters, a CJK character counting like three letters (it is about a word).
    /// whatlang compares raw character counts, so a Japanese page with an English paragraph
    /// would read as English. Kana means Japanese, Hangul Korean, Han alone Chinese.
    fn cjk_language(&self) -> Option<&'static str> {
        let cjk = self.kana + self.hangul + self.han;
        if cjk == 0 || cjk * 3 < self.other {
            return None;
        }
        Some(if self.hangul > self.kana + self.han {
            "ko"
        } else if self.kana > 0 {
            "ja"
        } else {
            "zh"
        })
    }
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
/// Han, kana, Hangul and Bopomofo letters: scripts written without spaces between words (Korean
/// has spaces, but its compounds are long, so it is indexed the same way).
pub fn is_cjk(c: char) -> bool {
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
