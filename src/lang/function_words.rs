//! A fast first guess at a page's language from its function words (`the`, `und`, `avec`...):
//! the most frequent words of a language, chosen here so that none of them is a common word of
//! another language geode might meet. Counting them over a sample costs a few microseconds,
//! where whatlang's trigram profiles cost over a hundred; a page answered here never reaches
//! whatlang. Only clear cases are answered: a sample with enough words, one language's function
//! words far ahead of every other's, and few words of the related languages this guess does not
//! know (Catalan beside Spanish and French, Afrikaans beside Dutch, Galician beside Portuguese,
//! Latin, Esperanto, the Scandinavian languages). Everything else is left to whatlang. Pure.

use hashbrown::HashMap;

/// No function word is longer than eight letters (`entonces`), two bytes for each accented one
/// at most: longer words are counted as words but not looked up.
const MAX_WORD_BYTES: usize = 16;

/// The languages this guess can give.
const LANGS: [&str; 7] = ["en", "de", "fr", "es", "it", "pt", "nl"];
/// The counts' slot of the related languages, which only make the guess step aside.
const RELATED: usize = LANGS.len();
/// How [`LISTS`] names the related languages.
const RELATED_LANGS: &str = "related";

/// Function words by language (one of [`LANGS`], or [`RELATED_LANGS`]), lowercase, separated
/// by spaces. A word is in one list only: words two candidate languages share (`de`, `la`,
/// `que`, `is`) prove nothing and are left out.
const LISTS: &[(&str, &str)] = &[
    // English (not `is`, `of`, `was`, `an`, `so`, `we`, `for`, `to`: words of neighbours too).
    (
        "en",
        "the and that with this you are have not but they from which what there their would \
        can about been were has your more when some just like into than only because these \
        should could its it be how who them then if or she him her his here any other out \
        all one",
    ),
    // German (not `das`, `den`, `des`, `es`, `man`, `er`, `hier`, `wie`, `was`, `um`).
    (
        "de",
        "und der die nicht ist ich mit auf sich dem ein eine einen einem einer zu von auch \
        wir sie aber oder wenn noch nur bei dass daß sind werden wird hat kann mehr über für \
        haben diese dieser dieses durch nach schon sehr jetzt mich mir uns zum zur im vom \
        gibt",
    ),
    // French (not `le`, `des`, `du`, `il`, `je`, `un`, `que`, `ce`, `la`, `mais`, `bien`).
    (
        "fr",
        "les et est une pour dans qui pas sur avec elle nous vous sont cette été être aux \
        leur comme tout fait très où ça au ils ont sans faire était alors donc quand même \
        aussi peut mon mes ses avoir",
    ),
    // Spanish (not `del`, `una`, `con`, `para`, `por`, `como`, `este`, `lo`, `se`, `son`).
    (
        "es",
        "los las el más pero muy también hay donde desde cuando esto y ya puede tiene yo eso \
        fue hasta qué él sus sin hacer cómo están había ahora aquí algo nada mucho siempre \
        entonces",
    ),
    // Portuguese (not `do`, `da`, `das`, `dos`, `um`, `com`, `mais`, `ou`, `nos`, `sempre`).
    (
        "pt",
        "não em uma os foi ao aos ele seu sua muito também você isso isto são eu até pelo \
        pela ela nas já há só minha meu num numa esse essa então ainda agora aqui",
    ),
    // Italian (not `il`, `del`, `con`, `una`, `uno`, `come`, `cosa`, `ma`, `ha`, `qui`).
    (
        "it",
        "di che sono della delle degli dei anche più nel nella alla questo questa gli è molto \
        perché così essere tutto fatto stato ancora dove quindi però non per",
    ),
    // Dutch (not `de`, `en`, `is`, `je`, `er`, `op`, `om`, `als`, `dan`, `met`, `door`).
    (
        "nl",
        "het een van ik niet zijn voor maar ook naar heb hij wel dit wordt geen heeft mijn \
        jij nog bij worden deze kunnen zou veel omdat hebben alleen waar",
    ),
    // Related languages left to whatlang: Catalan,
    (
        RELATED_LANGS,
        "amb els és aquest aquesta perquè això molt també quan",
    ),
    // Galician,
    (RELATED_LANGS, "unha tamén xa coa polo pola"),
    // Afrikaans,
    (RELATED_LANGS, "nie ek hulle baie vir jy julle"),
    // Danish, Norwegian and Swedish,
    (
        RELATED_LANGS,
        "og ikke jeg och inte jag att är på det som af",
    ),
    // Latin,
    (
        RELATED_LANGS,
        "sunt quod enim autem sed atque ut nec quae cum ad eius quam hoc etiam",
    ),
    // Esperanto,
    (
        RELATED_LANGS,
        "kaj estas kiu ankaŭ tiu povas pri kun oni ili ĉi ke",
    ),
    // and Romanian.
    (RELATED_LANGS, "și să pe cu din mai nu pentru fost acest"),
];

/// A sample with fewer words than this is left to whatlang.
const MIN_WORDS: usize = 30;
/// The winner's function words must be at least this many,
const MIN_HITS: usize = 8;
/// at least this share of the sample's words (one in sixteen),
const MIN_SHARE_DIVISOR: usize = 16;
/// and this many times the runner-up's, related languages counted as one runner-up.
const MARGIN: usize = 4;

/// The language of `sample` when its function words leave no doubt, else `None` (ask
/// whatlang). `sample` is already bounded by the caller.
pub(super) fn guess(sample: &str) -> Option<&'static str> {
    let table = table();
    let mut counts = [0usize; RELATED + 1];
    let mut words = 0usize;
    let mut count = |key: &str| {
        if let Some(&slot) = table.get(key) {
            counts[slot] += 1;
        }
    };
    if sample.is_ascii() {
        // Most samples: words are runs of ASCII letters, lowercased in a buffer on the stack.
        let mut lower = [0u8; MAX_WORD_BYTES];
        for word in sample.as_bytes().split(|b| !b.is_ascii_alphabetic()) {
            if word.is_empty() {
                continue;
            }
            words += 1;
            if word.len() > MAX_WORD_BYTES {
                continue;
            }
            let lower = &mut lower[..word.len()];
            lower.copy_from_slice(word);
            lower.make_ascii_lowercase();
            // ASCII letters only, so UTF-8.
            if let Ok(key) = std::str::from_utf8(lower) {
                count(key);
            }
        }
    } else {
        let mut lower = String::new();
        for word in sample.split(|c: char| !c.is_alphabetic()) {
            if word.is_empty() {
                continue;
            }
            words += 1;
            if word.len() > MAX_WORD_BYTES {
                continue;
            }
            let key = if word.chars().any(char::is_uppercase) {
                lower.clear();
                lower.extend(word.chars().flat_map(char::to_lowercase));
                lower.as_str()
            } else {
                word
            };
            count(key);
        }
    }
    if words < MIN_WORDS {
        return None;
    }
    let (best, &hits) = counts[..RELATED]
        .iter()
        .enumerate()
        .max_by_key(|&(_, n)| *n)?;
    let runner_up = counts
        .iter()
        .enumerate()
        .filter(|&(i, _)| i != best)
        .map(|(_, &n)| n)
        .max()
        .unwrap_or(0);
    let clear =
        hits >= MIN_HITS && hits * MIN_SHARE_DIVISOR >= words && hits >= MARGIN * runner_up.max(1);
    clear.then_some(LANGS[best])
}

/// Every word of [`LISTS`] with its language's slot in the counts, built once: one hash a word
/// of the sample (a sorted table took nine comparisons).
fn table() -> &'static HashMap<&'static str, usize> {
    static TABLE: std::sync::OnceLock<HashMap<&'static str, usize>> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| {
        LISTS
            .iter()
            .flat_map(|&(lang, words)| {
                let slot = LANGS.iter().position(|&l| l == lang).unwrap_or(RELATED);
                words.split_whitespace().map(move |w| (w, slot))
            })
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_word_is_in_one_list_and_lowercase() {
        let mut seen = std::collections::HashMap::new();
        for &(lang, words) in LISTS {
            assert!(
                LANGS.contains(&lang) || lang == RELATED_LANGS,
                "unknown list {lang}"
            );
            for word in words.split_whitespace() {
                assert_eq!(word, word.to_lowercase(), "{word} is not lowercase");
                assert!(word.len() <= 16, "{word} is longer than guess reads");
                if let Some(other) = seen.insert(word, lang) {
                    panic!("{word} is in two lists ({other} and {lang})");
                }
            }
        }
    }

    #[test]
    fn clear_paragraphs_are_answered() {
        let cases = [
            (
                "en",
                "I have been thinking about the small web for a while now, and this capsule is \
                 where I write down what I find. Some of the posts are about old computers that \
                 I have repaired, and some are about the books that I read when the weather is \
                 bad. If you want to write to me, there is an address on the home page.",
            ),
            (
                "de",
                "Ich schreibe hier über alte Computer und über die Bücher, die ich gerade lese. \
                 Wenn das Wetter schlecht ist, sitze ich am Tisch und repariere einen alten \
                 Rechner. Die meisten Beiträge sind kurz, aber manche werden auch länger, wenn \
                 ich mit einem Projekt nicht fertig werde und noch mehr dazu sagen will.",
            ),
            (
                "fr",
                "Je vous écris depuis ma petite capsule, où je parle des vieux ordinateurs et \
                 des livres que je lis. Quand il fait mauvais, je répare une machine avec mes \
                 outils et je note ce que je fais pour ne pas oublier. Les billets sont courts, \
                 mais certains sont plus longs quand le projet avance bien et nous avons le \
                 temps.",
            ),
            (
                "es",
                "Escribo en esta cápsula sobre los ordenadores antiguos y los libros que leo \
                 cuando hace mal tiempo. Muchas veces reparo una máquina vieja y cuento aquí lo \
                 que hice, porque si no lo escribo se me olvida. Las entradas son cortas, pero \
                 algunas son más largas cuando el proyecto tiene muchas partes y hay mucho que \
                 contar.",
            ),
        ];
        for (want, text) in cases {
            assert_eq!(guess(text), Some(want), "{text}");
        }
    }

    #[test]
    fn doubtful_samples_are_left_to_whatlang() {
        let cases = [
            // Too short.
            "The small web and the books that I read.",
            // No function words at all (a list of names).
            "Lagrange Amfora Kristall Castor Bombadillo Telescope Elaho Gemini Deedum Geopard \
             Alhena Ariane Buran Elpher Gemalaya Gemini Diohsc Gneto Kineto Moonlander Rocketeer \
             Spacewalk Starship Voyager Apollo Gemini Mercury Skylab Soyuz Vostok Voskhod Mir",
            // Catalan: Spanish and French words, but Catalan ones too.
            "Escric en aquesta càpsula sobre els ordinadors antics i els llibres que llegeixo \
             quan fa mal temps. Moltes vegades reparo una màquina vella i explico aquí el que \
             he fet, perquè si no ho escric se m'oblida. Les entrades són curtes, però algunes \
             són més llargues quan el projecte té moltes parts i hi ha molt a explicar amb \
             calma.",
            // Two languages side by side.
            "The small web is where I write about the books that I read and the computers \
             that I have repaired. Das kleine Netz ist, wo ich über die Bücher schreibe, die \
             ich lese, und über die Rechner, die ich repariert habe, wenn das Wetter schlecht \
             ist und ich nicht nach draußen gehen will.",
        ];
        for text in cases {
            assert_eq!(guess(text), None, "{text}");
        }
    }

    #[test]
    fn capitals_count_as_their_lowercase() {
        let text = "THE SMALL WEB IS WHERE I WRITE ABOUT THE BOOKS THAT I READ AND THE \
                    COMPUTERS THAT I HAVE REPAIRED, AND THIS IS WHAT YOU WILL FIND HERE WHEN \
                    YOU COME BACK: MORE OF THE SAME, WITH SOME PICTURES.";
        assert_eq!(guess(text), Some("en"));
    }
}
