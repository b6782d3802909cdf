//! Tests of the analysis: tokens, CJK n-grams, stems, language tags and detection.

use super::stem::STEMMERS;
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
        // An ASCII start goes on into the letters and marks that follow it, and stops at
        // anything else.
        ("abcé word\u{301}s", &["abce", "words"]),
        (
            "ab😀cd ab\u{200C}cd ab\u{200C}",
            &["ab", "cd", "ab\u{200C}cd", "ab"],
        ),
    ];
    for (text, want) in cases {
        assert_eq!(texts(text), *want, "tokens of {text:?}");
    }
}

/// Reads `"hello 0 0-5, world 1 7-13"`: each token's text, position and byte offsets.
fn expected_tokens(spec: &str) -> Vec<(String, usize, usize, usize)> {
    spec.split(", ")
        .map(|token| {
            let parts: Vec<&str> = token.split(' ').collect();
            let (from, to) = parts[2].split_once('-').expect("from-to");
            (
                parts[0].to_string(),
                parts[1].parse().expect("position"),
                from.parse().expect("from"),
                to.parse().expect("to"),
            )
        })
        .collect()
}

#[test]
fn positions_and_offsets() {
    let cases: &[(&str, &str)] = &[
        ("Hello, wörld!", "hello 0 0-5, world 1 7-13"),
        // A dropped long token still takes its position.
        (
            "a BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB c",
            "a 0 0-1, c 2 44-45",
        ),
        (
            "日本語 text",
            "日 0 0-3, 日本 0 0-6, 本 1 3-6, 本語 1 3-9, 語 2 6-9, text 3 10-14",
        ),
        (
            "Rust言語で",
            "rust 0 0-4, 言 1 4-7, 言語 1 4-10, 語 2 7-10, 語で 2 7-13, で 3 10-13",
        ),
        (
            "한국어 a",
            "한 0 0-3, 한국 0 0-6, 국 1 3-6, 국어 1 3-9, 어 2 6-9, a 3 10-11",
        ),
        // Punctuation ends a run; a single character is a unigram only.
        ("東、京 x", "東 0 0-3, 京 1 6-9, x 2 10-11"),
        ("ab😀cd é-x", "ab 0 0-2, cd 1 6-8, e 2 9-11, x 3 12-13"),
        // Katakana with the prolonged sound mark is one run.
        (
            "カード",
            "カ 0 0-3, カー 0 0-6, ー 1 3-6, ード 1 3-9, ド 2 6-9",
        ),
    ];
    for (text, want) in cases {
        assert_eq!(
            index_tokens(text),
            expected_tokens(want),
            "tokens of {text:?}"
        );
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
        let want: Vec<(usize, String)> = want.iter().map(|&(p, t)| (p, t.to_string())).collect();
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
    // The sample is 2,000 characters however its ASCII start and the rest divide them.
    let kana = "ゆきどけのゆうびんぽすと".repeat(10);
    let english = "the english words after ".repeat(100) + &kana;
    assert_eq!(
        detect_lang(&english),
        Some("en"),
        "the kana are past the sample"
    );
    let five = " ".repeat(1995) + &kana;
    assert_eq!(detect_lang(&five), None, "five kana are too few letters");
    let twenty = " ".repeat(1980) + &kana;
    assert_eq!(detect_lang(&twenty), Some("ja"), "twenty kana");
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
    let got: Vec<(String, usize, usize, usize)> =
        stem_tokens("Running dogs 日本 Häuser Linux's kernels", "en")
            .into_iter()
            .map(|t| (t.text, t.position, t.offset_from, t.offset_to))
            .collect();
    // `Häuser` and `linux` are their own English stems (folded): the text fields hold them.
    let want: Vec<(String, usize, usize, usize)> = vec![
        ("en:run".into(), 0, 0, 7),
        ("en:dog".into(), 1, 8, 12),
        ("en:kernel".into(), 7, 36, 43),
    ];
    assert_eq!(got, want);
    let de: Vec<String> = stem_tokens("Die Häuser", "de-AT")
        .into_iter()
        .map(|t| t.text)
        .collect();
    assert_eq!(de, ["de:haus"]);
    assert!(stem_tokens("some words", "ja").is_empty());
    assert!(stem_tokens("日本語", "en").is_empty());
}

/// Texts the `stem` field's analyzer gives for one value.
fn stem_field_texts(value: &str) -> Vec<String> {
    let mut analyzer = stem_analyzer();
    let mut stream = analyzer.token_stream(value);
    let mut out = Vec::new();
    while let Some(t) = stream.next() {
        out.push(t.text.clone());
    }
    out
}

#[test]
fn the_stem_field_analyzer_stems_in_the_language_its_value_names() {
    let texts = |text: &str, lang: &str| -> Vec<String> {
        stem_tokens(text, lang)
            .into_iter()
            .map(|t| t.text)
            .collect()
    };
    for (text, lang) in [
        ("Running dogs 日本 Häuser", "en"),
        ("Die Häuser der Stadt", "de"),
        ("Les maisons anciennes", "fr"),
        ("", "en"),
    ] {
        let sl = stem_lang(lang).expect("a stemmer");
        let got = stem_field_texts(&stem_field_value(sl, text));
        assert_eq!(got, texts(text, lang), "{text} in {lang}");
    }
    // One analyzer over several values (as an indexing thread uses it) gives each its own
    // language's stems, the second time from its cache.
    let mut analyzer = stem_analyzer();
    for (lang, want) in [("en", "en:hous"), ("de", "de:hous"), ("en", "en:hous")] {
        let value = stem_field_value(stem_lang(lang).expect("a stemmer"), "houses");
        let mut stream = analyzer.token_stream(&value);
        assert_eq!(stream.next().map(|t| t.text.clone()).as_deref(), Some(want));
        assert!(stream.next().is_none());
    }
    // A value without a language it knows gives nothing.
    assert!(stem_field_texts("running dogs").is_empty());
    assert!(stem_field_texts("xx\u{1f}running dogs").is_empty());
    assert!(stem_field_texts("").is_empty());
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

#[test]
fn the_ascii_word_path_gives_the_analyzer_s_tokens() {
    let words = |text: &str| {
        let mut out = Vec::new();
        for_each_index_word(text, |at, word| {
            out.push((word.to_string(), at.start, at.end))
        });
        out
    };
    let analyzed = |text: &str| {
        index_tokens(text)
            .into_iter()
            .map(|(word, _, from, to)| (word, from, to))
            .collect::<Vec<_>>()
    };
    let long = |n: usize| "Ab9".repeat(n).chars().take(n).collect::<String>();
    let mut texts: Vec<String> = vec![
        String::new(),
        "Hello, World! gemini://Example.ORG/a_b-c?d=1".to_string(),
        format!("x {} y {} z {}", long(39), long(40), long(41)),
        "tab\there\r\nCRLF 3.14 don't e-mail".to_string(),
        "café Straße".to_string(), // not ASCII: the analyzer's path, still equal
        "don’t — “quoted” … «guillemets» 3×4 ½ naïve".to_string(),
        "Thai ก่า, re\u{301}sume\u{301}, zero\u{200D}width, 日本語".to_string(),
        "an ASCII line\nune ligne accentuée\r\nand ASCII again, 日本\n\nlast".to_string(),
    ];
    // Pseudo-random ASCII with words of every length around the limit.
    let alphabet = [
        'a', 'Z', '0', '9', ' ', '.', '-', '_', '/', '\'', '\t', '!', 'q', 'Q', '’', '—', '…', '«',
        '×',
    ];
    let rare = ['é', 'ß', '\u{301}', '\u{200D}', '語', 'ж', '٣', '²'];
    let mut state = 7u64;
    for _ in 0..500 {
        let mut text = String::new();
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1);
        let len = (state >> 40) % 200;
        for _ in 0..len {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1);
            let pick = (state >> 33) as usize;
            if pick % 17 == 0 {
                text.push_str(&long(36 + pick % 8));
            } else if pick % 23 == 0 {
                text.push('\n');
            } else if pick % 97 == 0 {
                // Now and then a character that belongs to words outside ASCII.
                text.push(rare[pick % rare.len()]);
            } else {
                text.push(alphabet[pick % alphabet.len()]);
            }
        }
        texts.push(text);
    }
    for text in &texts {
        assert_eq!(words(text), analyzed(text), "{text:?}");
    }
}

#[test]
fn cached_stems_are_the_stemmer_s() {
    // The analysis chain the `stem` field was first built with, as the reference.
    fn reference(text: &str, lang: &str) -> Vec<(String, usize, usize, usize)> {
        use tantivy::tokenizer::{AsciiFoldingFilter, LowerCaser, RemoveLongFilter, Stemmer};
        let Some((code, language)) = STEMMERS
            .iter()
            .copied()
            .find(|(code, _)| lang.starts_with(code))
        else {
            return Vec::new();
        };
        let words = RemoveLongFilter::limit(MAX_TOKEN_BYTES).transform(
            super::tokenizer::GeodeTokenizer::new(super::tokenizer::Mode::Words),
        );
        let mut analyzer = AsciiFoldingFilter
            .transform(Stemmer::new(language).transform(LowerCaser.transform(words.clone())));
        // The words as the text fields hold them: a word equal to its stem is left out.
        let mut folder = AsciiFoldingFilter.transform(LowerCaser.transform(words));
        let mut folded = folder.token_stream(text);
        let mut stream = analyzer.token_stream(text);
        let mut out = Vec::new();
        while let Some(t) = stream.next() {
            let word = folded.next().expect("as many words as stems");
            if word.text == t.text {
                continue;
            }
            out.push((
                format!("{code}:{}", t.text),
                t.position,
                t.offset_from,
                t.offset_to,
            ));
        }
        out
    }
    let texts = [
        "Running dogs run; the runner ran. RUNNING again, and running",
        "Die Häuser, das Haus, den HÄUSERN: Straße und Strasse",
        "Les maisons étaient là, la maison était là",
        "Бегущие собаки бегут, собака бежит",
        "日本語 mixed with Running words and 中文",
    ];
    // One cache for every text and language, small pieces first so that later ones hit it.
    let mut cache = StemCache::default();
    for lang in ["en", "de", "fr", "ru"] {
        for text in texts {
            let half: String = text.chars().take(text.chars().count() / 2).collect();
            for piece in [half.as_str(), text] {
                let got: Vec<_> = stem_tokens_with(piece, lang, &mut cache)
                    .into_iter()
                    .map(|t| (t.text, t.position, t.offset_from, t.offset_to))
                    .collect();
                assert_eq!(got, reference(piece, lang), "{lang}: {piece}");
            }
        }
    }
}

#[test]
fn cached_word_stems_match_the_stemmer_in_every_form() {
    // Kept in three forms (the word itself, a prefix of it, another text) and, past the
    // longest word kept, not kept at all: each must give what the stemmer gives, when first
    // met and when met again.
    let long = "a".repeat(45);
    let cases = [
        ("run", "en"),     // its own stem
        ("running", "en"), // a prefix of the word
        ("happy", "en"),   // another text (happi)
        ("häuser", "de"),  // folded, not a prefix (haus)
        ("haus", "de"),    // its own stem
        ("für", "de"),     // its own stem, accented: the stem is the word folded (fur)
        ("café", "fr"),    // a prefix of an accented word (caf)
        ("собаки", "ru"),  // a prefix, not ASCII
        (long.as_str(), "en"),
    ];
    // The stemmer alone, folded after, as the reference.
    fn reference(word: &str, lang: &str) -> String {
        use tantivy::tokenizer::{AsciiFoldingFilter, RawTokenizer, Stemmer};
        let (_, language) = STEMMERS
            .iter()
            .copied()
            .find(|(code, _)| *code == lang)
            .expect("a stemmer");
        let mut analyzer =
            AsciiFoldingFilter.transform(Stemmer::new(language).transform(RawTokenizer::default()));
        let mut stream = analyzer.token_stream(word);
        let stem = stream.next().expect("one token").text.clone();
        format!("{lang}:{stem}")
    }
    let mut cache = StemCache::default();
    for round in 0..2 {
        for (word, lang) in cases {
            let sl = stem_lang(lang).expect("a stemmer");
            let want = reference(word, lang);
            let got = stem_analysed_with(word, sl, &mut cache);
            assert_eq!(
                got.as_deref(),
                Some(want.as_str()),
                "{word} in {lang}, round {round}"
            );
        }
    }
    // The long word was stemmed, not kept.
    assert_eq!(cache.len(), cases.len() - 1);
}
