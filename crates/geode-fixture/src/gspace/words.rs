//! The generator's English: a vocabulary of common words drawn with Zipf-like frequencies into
//! sentences, paragraphs, titles and slugs, and the unique marker word of every legitimate page.
//!
//! Plausible text for a search engine to tokenise, stem, rank and snippet, not readable prose:
//! no grammar beyond capitals and full stops.

use std::sync::OnceLock;

use super::rng::Rng;

/// Short function words, most frequent first.
const FUNCTION: &str = "\
    the of and to a in is it that for was on with as at by this from but not or have be are an \
    they which one you we all there were when can more if out so what up about into than them \
    some then other its over only also after most any where much before through just because \
    each while both again still never always every under between once here very well even back \
    down off such own same few many our their my his her these those who how why";

/// Content words (nouns, verbs, adjectives), roughly most frequent first.
const CONTENT: &str = "\
    time people year way day thing world life hand part place work week case point home water \
    room book word story fact month night house light money side kind head line name city idea \
    body door road town music paper table morning garden river window friend letter market \
    summer winter spring autumn field forest island mountain valley village street bridge \
    station kitchen bread coffee tea apple cheese soup dinner breakfast lunch recipe oven \
    bicycle train boat engine machine computer keyboard screen terminal server network program \
    language system file folder editor script project version library manual question answer \
    problem reason result change moment minute hour season weather rain snow wind cloud storm \
    sun moon star sky sea shore beach wave stone rock sand tree leaf flower seed root branch \
    grass bird fish dog cat horse fox owl bee bear deer rabbit mouse wolf crow heron walnut \
    cherry pepper onion potato tomato lemon honey butter salt sugar milk glass bottle cup plate \
    knife spoon chair lamp clock mirror candle blanket pillow shelf drawer box basket bag coat \
    shoe hat scarf glove shirt thread needle wool cotton paint brush pencil notebook camera \
    photo picture poem song guitar piano drum radio record film game puzzle map journey trip \
    walk path trail hill lake pond stream harbor port ship sail anchor lighthouse tower castle \
    church school office shop farm barn fence gate wall roof floor stairs corner edge center \
    circle square shape color sound voice silence memory dream hope fear joy anger patience \
    habit routine practice lesson teacher student child parent mother father sister brother \
    neighbor stranger guest crowd team group club meeting party festival holiday birthday gift \
    card note list plan goal task job career skill craft tool hammer nail screw wheel gear \
    spring chain rope knot sewing knitting baking cooking reading writing drawing walking \
    running swimming climbing fishing gardening camping hiking sleeping thinking learning \
    building make take come see know get give find tell ask seem feel try leave call keep begin \
    help show hear play run move live believe bring happen write sit stand lose pay meet include \
    continue learn lead understand watch follow stop create speak read spend grow open walk \
    offer remember love consider appear buy wait serve send expect stay fall cut reach remain \
    suggest raise pass sell decide return explain carry develop drive break thank receive join \
    agree wonder notice repair fix clean wash cook bake plant water gather collect sort measure \
    compare draw paint sing dance travel visit explore wander rest sleep wake dream listen \
    whisper good new first last long great little old big high different small large next early \
    young important public bad able late hard major better real best free strong whole clear \
    simple quiet gentle slow quick bright dark warm cold soft rough smooth heavy light empty \
    full fresh stale sweet bitter sour green blue red yellow brown grey white black golden \
    silver wooden broken hidden open narrow wide deep shallow distant nearby ancient modern \
    strange familiar curious careful patient happy sad tired busy lazy calm wild tiny huge plain \
    fancy humble honest kind brave clever simple useful useless pleasant lovely ugly pretty \
    steady sudden weekly daily yearly local remote tidy messy cozy rainy sunny windy snowy foggy \
    muddy dusty rusty shiny noisy";

/// Letters of the unique words: consonants only (and no `s`, `y`), so that no English stemmer
/// finds a suffix to cut and two unique words never share a stem.
const MARK_LETTERS: &[u8] = b"bcdfghjklmnpqrtvwxz";
/// Digits of a unique word after its `zq` prefix: 19^5 is about 2.5 million pages.
const MARK_DIGITS: u32 = 5;

/// The unique word of the legitimate page numbered `g` in the world: `zq` and five consonants,
/// never a real word (no English word starts with `zq`).
pub(crate) fn unique_word(g: u64) -> String {
    let base = MARK_LETTERS.len() as u64;
    let mut digits = [b'b'; MARK_DIGITS as usize];
    let mut rest = g;
    for digit in digits.iter_mut().rev() {
        *digit = MARK_LETTERS[(rest % base) as usize];
        rest /= base;
    }
    debug_assert_eq!(rest, 0, "page number {g} exceeds the unique word space");
    let mut word = String::from("zq");
    word.push_str(std::str::from_utf8(&digits).unwrap_or("bbbbb"));
    word
}

/// Cumulative Zipf weights (rank r weighs 1 / (r + 3)) for a list of `n` words.
fn zipf(n: usize) -> Vec<f64> {
    let mut total = 0.0;
    (0..n)
        .map(|r| {
            total += 1.0 / (r as f64 + 3.0);
            total
        })
        .collect()
}

/// The words of both lists, and their cumulative Zipf weights.
struct Vocabulary {
    function: Vec<&'static str>,
    content: Vec<&'static str>,
    function_weights: Vec<f64>,
    content_weights: Vec<f64>,
}

fn vocabulary() -> &'static Vocabulary {
    static VOCABULARY: OnceLock<Vocabulary> = OnceLock::new();
    VOCABULARY.get_or_init(|| {
        let function: Vec<&str> = FUNCTION.split_whitespace().collect();
        let content: Vec<&str> = CONTENT.split_whitespace().collect();
        Vocabulary {
            function_weights: zipf(function.len()),
            content_weights: zipf(content.len()),
            function,
            content,
        }
    })
}

/// A content word, frequent words more often.
pub(crate) fn content_word(rng: &mut Rng) -> &'static str {
    let v = vocabulary();
    v.content[rng.weighted(&v.content_weights)]
}

/// A content word drawn uniformly: names and slugs should not all say "time".
pub(crate) fn any_content_word(rng: &mut Rng) -> &'static str {
    let content = &vocabulary().content;
    content[rng.below(content.len() as u64) as usize]
}

/// Any word of running text: a function word about four times in ten.
pub(crate) fn text_word(rng: &mut Rng) -> &'static str {
    if rng.chance(0.4) {
        let v = vocabulary();
        v.function[rng.weighted(&v.function_weights)]
    } else {
        content_word(rng)
    }
}

/// `word` with its first letter in upper case.
pub(crate) fn capitalised(word: &str) -> String {
    let mut chars = word.chars();
    match chars.next() {
        Some(first) => first.to_ascii_uppercase().to_string() + chars.as_str(),
        None => String::new(),
    }
}

/// `n` content words in title case, drawn uniformly.
pub(crate) fn title(rng: &mut Rng, n: usize) -> String {
    (0..n)
        .map(|_| capitalised(any_content_word(rng)))
        .collect::<Vec<_>>()
        .join(" ")
}

/// A title's words joined with hyphens, in lower case: the slug of a path.
pub(crate) fn slug_of(title: &str) -> String {
    title.to_ascii_lowercase().replace(' ', "-")
}

/// Sentences of 5 to 16 words totalling about `words`, with `mark` (if any) placed inside one
/// of them.
pub(crate) fn paragraph(rng: &mut Rng, words: usize, mark: Option<&str>) -> String {
    let mut out = String::with_capacity(words * 7);
    let mut left = words.max(5);
    // Where the mark goes, counted in words from the start.
    let mark_at = mark.map(|_| rng.below(left as u64) as usize);
    let mut written = 0;
    while left > 0 {
        let n = (rng.range(5, 16) as usize).min(left);
        let n = if left - n < 4 { left } else { n };
        if !out.is_empty() {
            out.push(' ');
        }
        for i in 0..n {
            let (word, is_mark) = match (mark, mark_at) {
                (Some(mark), Some(at)) if at == written => (mark, true),
                _ => (text_word(rng), false),
            };
            if i == 0 {
                // The mark stays in lower case: it is searched for exactly as written.
                if is_mark {
                    out.push_str(word);
                } else {
                    out.push_str(&capitalised(word));
                }
            } else {
                out.push(' ');
                out.push_str(word);
                if i + 1 < n && rng.chance(0.06) {
                    out.push(',');
                }
            }
            written += 1;
        }
        out.push('.');
        left -= n;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unique_words_are_distinct_letters_that_no_stemmer_shortens() {
        let words: Vec<String> = [0, 1, 18, 19, 500_000, 2_000_000]
            .iter()
            .map(|&g| unique_word(g))
            .collect();
        assert_eq!(words[0], "zqbbbbb");
        assert_eq!(words[1], "zqbbbbc");
        assert_eq!(words[3], "zqbbbcb");
        for w in &words {
            assert_eq!(w.len(), 7, "{w}");
            assert!(w.starts_with("zq"), "{w}");
            assert!(!w[2..].contains(['a', 'e', 'i', 'o', 'u', 'y', 's']), "{w}");
        }
        let mut sorted = words.clone();
        sorted.dedup();
        assert_eq!(sorted.len(), words.len());
    }

    #[test]
    fn paragraphs_hold_about_the_words_asked_and_the_mark_once() {
        let mut rng = Rng::keyed(&[3]);
        for words in [5, 40, 100, 400] {
            let text = paragraph(&mut rng, words, Some("zqmark"));
            let n = text.split_whitespace().count();
            assert_eq!(n, words, "{text}");
            assert_eq!(text.matches("zqmark").count(), 1, "{text}");
            assert!(text.ends_with('.'));
            assert!(text.chars().next().is_some_and(|c| c.is_ascii_uppercase()));
        }
        let title = title(&mut rng, 3);
        assert_eq!(title.split(' ').count(), 3);
        assert_eq!(slug_of("Quiet River Stone"), "quiet-river-stone");
    }
}
