//! Tests of the classifier: labelled blocks, every rule named, decoration lines and captions.

use super::*;

/// cowsay's cow, five lines, to go under a speech bubble.
const COW: &str = concat!(
    r"        \   ^__^",
    "\n",
    r"         \  (oo)\_______",
    "\n",
    r"            (__)\       )\/\",
    "\n",
    r"                ||----w |",
    "\n",
    r"                ||     ||",
);

/// Checks a judgement of single lines against `(line, expected)` cases.
fn judge_lines(judge: fn(&str) -> bool, cases: &[(&str, bool)]) {
    for (line, want) in cases {
        assert_eq!(judge(line), *want, "line {line:?}");
    }
}

fn verdict(alt: &str, text: &str, leading: bool) -> Verdict {
    classify(&Block { alt, text, leading })
}

/// Hand-written blocks of each kind (one line per array element), with the rule a reader
/// would expect to decide them.
#[test]
fn classifies_hand_written_blocks() {
    let cases: &[(&str, &str, &[&str], bool, Rule)] = &[
        (
            "figlet banner in the body",
            "",
            &[
                r"  ___ ___  ___  __| | ___ ",
                r" / __/ _ \/ _ \/ _` |/ _ \",
                r"| (_| (_) | (_) | (_| |  __/",
                r" \___\___/ \___/ \__,_|\___|",
            ],
            false,
            Rule::Drawing,
        ),
        (
            "banner with a tagline (art with words in it)",
            "",
            &[
                r"    __  ___         ____                  __",
                r"   /  |/  /_  __   / __ \____ _____ ____ / /",
                r"  / /|_/ / / / /  / /_/ / __ `/ __ `/ _ \/ / ",
                r" / /  / / /_/ /  / ____/ /_/ / /_/ /  __/_/  ",
                r"/_/  /_/\__, /  /_/    \__,_/\__, /\___(_)   ",
                r"       /____/   a capsule   /____/  est. 2021",
            ],
            false,
            Rule::Drawing,
        ),
        (
            "cowsay",
            "",
            &[
                r" _________________",
                r"< hello, gemini! >",
                r" -----------------",
                COW,
            ],
            false,
            Rule::Drawing,
        ),
        (
            "wide braille art with a greeting beside it",
            "",
            &[
                "⣿⣿⣿⣿⣿⣿⡿⠿⠛⠛⠛⠛⠿⢿⣿⣿⣿⣿⣿⣿⣿⣿⣿⣿⣿⣿⣿⣿⣿⣿⣿⣿⣿⣿⣿⣿⣿⣿⣿⣿⣿⣿ Welcome to my capsule!",
                "⣿⣿⣿⣿⠋⠀⠀⠀⠀⠀⠀⠀⠀⠀⠀⠙⣿⣿⣿⣿⣿⣿⣿⣿⣿⣿⣿⣿⣿⣿⣿⣿⣿⣿⣿⣿⣿⣿⣿⣿⣿⣿",
                "⣿⣿⡟⠀⠀⠀⠀⠀⠀⠀⠀⠀⠀⠀⠀⠀⠀⢻⣿⣿⣿⣿⣿⣿⣿⣿⣿⣿⣿⣿⣿⣿⣿⣿⣿⣿⣿⣿⣿⣿⣿⣿ I write about trains.",
                "⣿⣿⣧⣀⠀⠀⠀⠀⠀⠀⠀⠀⠀⠀⠀⠀⣀⣼⣿⣿⣿⣿⣿⣿⣿⣿⣿⣿⣿⣿⣿⣿⣿⣿⣿⣿⣿⣿⣿⣿⣿⣿",
            ],
            false,
            Rule::ArtCharacters,
        ),
        (
            "block-element lettering",
            "",
            &["█▀▀ █▀▀ █▀▄▀█", "█▄█ ██▄ █░▀░█"],
            true,
            Rule::ArtCharacters,
        ),
        (
            "bar chart drawn with block elements",
            "",
            &[
                "rust    ████████████████ 16",
                "go      ████████ 8",
                "python  ██████████▌ 10.5",
                "c       ██ 2",
            ],
            false,
            Rule::BarChart,
        ),
        (
            "box-drawing font with no letters",
            "",
            &["┏━┓┏━┓╻ ╻", "┣━┫┣┳┛┗┳┛", "╹ ╹╹┗╸ ╹ "],
            true,
            Rule::Decoration,
        ),
        (
            "table drawn with box characters",
            "",
            &[
                "┌──────────┬───────┐",
                "│ planet   │ moons │",
                "├──────────┼───────┤",
                "│ Mars     │     2 │",
                "│ Jupiter  │    95 │",
                "└──────────┴───────┘",
            ],
            false,
            Rule::ReadsAsContent,
        ),
        (
            "leading ASCII table with +---+ rules",
            "",
            &[
                "+--------+-------+",
                "| host   | pages |",
                "+--------+-------+",
                "| alpha  |   120 |",
                "| beta   |    42 |",
                "+--------+-------+",
            ],
            true,
            Rule::ReadsAsContent,
        ),
        (
            "shell session with ==== rules",
            "",
            &[
                "$ cargo test",
                "==================== test session starts ====================",
                "running 3 tests",
                "test parse ... ok",
                "=============================================================",
                "test result: ok. 3 passed",
            ],
            false,
            Rule::ShellPrompt,
        ),
        (
            "shell session printing a banner",
            "",
            &[
                "$ figlet hi",
                r" _     _ ",
                r"| |__ (_)",
                r"| '_ \| |",
                r"| | | | |",
                r"|_| |_|_|",
            ],
            false,
            Rule::ShellPrompt,
        ),
        (
            "rust code with a language alt",
            "rust",
            &["fn main() {", "    println!(\"hello\");", "}"],
            true,
            Rule::AltContent,
        ),
        (
            "leading code without alt",
            "",
            &[
                "use std::io;",
                "",
                "fn main() -> io::Result<()> {",
                "    let mut line = String::new();",
                "    io::stdin().read_line(&mut line)?;",
                "    Ok(())",
                "}",
            ],
            true,
            Rule::ReadsAsContent,
        ),
        (
            "leading CSV",
            "",
            &[
                "type,length,count",
                "pubkeyhash,106,159683137",
                "scripthash,253,20739934",
                "10000,2,3",
            ],
            true,
            Rule::ReadsAsContent,
        ),
        (
            "poem with indentation",
            "",
            &[
                "the river keeps",
                "        its own counsel",
                "    under the bridge",
                "  where we waited",
            ],
            false,
            Rule::ReadsAsContent,
        ),
        (
            "letter-spaced concrete poem",
            "",
            &["w a v e s o n t h e", "s h o r e a g a i n"],
            false,
            Rule::ReadsAsContent,
        ),
        (
            "japanese haiku, no spaces",
            "",
            &["古池や", "蛙飛び込む", "水の音"],
            true,
            Rule::ReadsAsContent,
        ),
        (
            "alt says ascii art",
            "ASCII art of a cat",
            &[r"  /\_/\", r" ( o.o )", r"  > ^ <"],
            false,
            Rule::AltArt,
        ),
        (
            "alt says ascii but it is a paragraph",
            "ascii",
            &[
                "Install the package with your package manager, then run the setup once.",
                "Afterwards the configuration lives in your home directory.",
            ],
            false,
            Rule::WordsDespiteAlt,
        ),
        (
            "alt says diagram: a drawing that carries information",
            "network diagram",
            &[
                "[laptop] ---> [router] ---> [modem]",
                "                 |",
                "             [printer]",
            ],
            false,
            Rule::AltContent,
        ),
        (
            "alt names a file",
            "~/.config/app/settings",
            &["----", "----"],
            false,
            Rule::AltContent,
        ),
        (
            "figlet drawn with digits and letters",
            "",
            &[
                r"888                               d8b",
                r"888                               Y8P",
                r"888888 .d88b.  888d888 88888b.d88b.  888",
                r#"888   d8P  Y8b 888P"   888 "888 "88b 888"#,
                r"Y88b. Y8b.     888     888  888  888 888",
                r#" "Y888 "Y8888  888     888  888  888 888"#,
            ],
            false,
            Rule::Repetition,
        ),
        (
            "leading banner framing two words",
            "",
            &[
                r" _________________",
                r"|  _____________  |",
                r"| |   MY  HOME  | |",
                r"| |_____________| |",
                r"|_________________|",
            ],
            true,
            Rule::Leading,
        ),
        (
            "terminal screenshot in ANSI colours",
            "",
            &[
                "\u{1b}[31mred\u{1b}[0m \u{1b}[32mgreen\u{1b}[0m",
                "\u{1b}[34mblue\u{1b}[0m",
                "\u{1b}[1mbold\u{1b}[0m",
            ],
            false,
            Rule::AnsiArt,
        ),
        (
            "small picture with a caption",
            "",
            &[r"   (\_/)", r"   (='.'=)", r#"   (")_(")   bunny says hi"#],
            false,
            Rule::Drawing,
        ),
        (
            "cowsay with a long message",
            "",
            &[
                r" ______________________________________",
                r"/ Welcome to my corner of the internet \",
                r"\ where I write about plants and tea.   /",
                r" --------------------------------------",
                COW,
            ],
            false,
            Rule::Drawing,
        ),
        (
            "boxed letters between rules",
            "",
            &["+-+-+-+-+-+-+-+", "|g|e|m|l|o|g|s|", "+-+-+-+-+-+-+-+"],
            false,
            Rule::Drawing,
        ),
        (
            "code with one-letter names",
            "",
            &["l=['a', 'b', 'c']", "append(l, 'd')=['a', 'b', 'c', 'd']"],
            false,
            Rule::ReadsAsContent,
        ),
        (
            "graph notation with one-letter nodes",
            "",
            &["a -> { b, c }", "b -> { c }"],
            false,
            Rule::ReadsAsContent,
        ),
        (
            "excerpt with elisions",
            "",
            &["[...]", "\"sub\": request.args[\"user_id\"]", "[...]"],
            false,
            Rule::ReadsAsContent,
        ),
        (
            "dotted divider",
            "",
            &["* * * * *"],
            false,
            Rule::Decoration,
        ),
        (
            "a regex on one line",
            "",
            &[r"^(#+)\s+(.*)$"],
            false,
            Rule::ReadsAsContent,
        ),
        ("empty block", "", &["", "   ", ""], true, Rule::Empty),
    ];
    for (what, alt, lines, leading, rule) in cases {
        let v = verdict(alt, &lines.join("\n"), *leading);
        assert_eq!(v.rule, *rule, "{what}: {}", v.detail);
        assert_eq!(v.art, rule.is_art(), "{what}");
    }
}

/// The issue's end-to-end promise at the `extract` level: a page opening with a figlet
/// banner loses the banner, keeps its rust code, and drops decorative separators.
#[test]
fn extract_drops_a_leading_banner_and_keeps_code() {
    let banner = [
        r"   __ _  ___  ___   __| | ___ ",
        r"  / _` |/ _ \/ _ \ / _` |/ _ \",
        r" | (_| |  __/ (_) | (_| |  __/",
        r"  \__, |\___|\___/ \__,_|\___|",
        r"  |___/",
    ];
    let src = format!(
        "```\n{}\n```\n# Field notes\n\n---- x ----\nHow to say hello:\n\n\
         ```rust\nfn main() {{\n    println!(\"hello\");\n}}\n```\n\n* * *\n=> / home\n",
        banner.join("\n")
    );
    let base = url::Url::parse("gemini://capsule.example/notes.gmi").expect("test URL");
    let page = crate::gemtext::extract(&base, &src);
    assert_eq!(
        page.body,
        "Field notes\n\nHow to say hello:\n\nfn main() {\n    println!(\"hello\");\n}"
    );
    for line in banner {
        assert!(
            !page.body.contains(line.trim()),
            "banner line {line:?} in body"
        );
    }
    for stroke in ["__", "|_", "\\_", "(_", "---", "* *"] {
        assert!(!page.body.contains(stroke), "{stroke:?} in body");
    }
    assert_eq!(page.title, "Field notes");
}

/// Art in the middle of a page gives way to its alt text when that says something; a
/// decorative first text line does not become the title.
#[test]
fn extract_keeps_informative_alt_text_as_caption() {
    let src = "~~~~~~~~~~\nSome intro.\n```A rocket beside the capsule name\n   \\ \\_____\n\
               ###[==_____>\n   /_/\n```\n```ascii art\n  /\\_/\\\n ( o.o )\n  > ^ <\n```\nBye.";
    let base = url::Url::parse("gemini://capsule.example/").expect("test URL");
    let page = crate::gemtext::extract(&base, src);
    assert_eq!(
        page.body,
        "Some intro.\nA rocket beside the capsule name\nBye."
    );
    assert_eq!(page.title, "Some intro.");
}

#[test]
fn leading_is_decided_by_what_came_before() {
    // The same short framed name is a banner at the top of a page and a tiny table below
    // prose; decorative lines and blank lines before it do not end the page's head.
    let framed = "```\n+---------+\n| geode   |\n+---------+\n```";
    let base = url::Url::parse("gemini://capsule.example/").expect("test URL");
    let top = crate::gemtext::extract(&base, &format!("\n=====\n{framed}\nText."));
    assert_eq!(top.body, "Text.");
    let below = crate::gemtext::extract(&base, &format!("Text.\n{framed}"));
    assert_eq!(below.body, "Text.\n+---------+\n| geode   |\n+---------+");
}

#[test]
fn a_framed_banner_in_the_middle_of_a_page_leaves_the_text() {
    // Double-line frame, stars, no alt text, below prose: art. A notice in the same frame is
    // text, and stays.
    let banner =
        "```\n╔═══════════════════════╗\n║  ★  Poems, 2024  ★  ║\n╚═══════════════════════╝\n```";
    let notice =
        "```\n╔═══╗\n║ The poems moved to a new page; the old links still work. ║\n╚═══╝\n```";
    let base = url::Url::parse("gemini://capsule.example/").expect("test URL");
    let page = crate::gemtext::extract(&base, &format!("Intro.\n{banner}\nA poem.\n{notice}"));
    assert!(!page.body.contains("Poems, 2024"), "{}", page.body);
    assert!(page.body.starts_with("Intro.\nA poem.\n"), "{}", page.body);
    assert!(
        page.body.contains("the old links still work"),
        "{}",
        page.body
    );
}

#[test]
fn the_labelled_framed_blocks_are_judged_as_labelled() {
    // tests/art/framed.jsonl: framed banners and framed content (notices, tables, menus,
    // commands, a diagram), written and labelled before the framed-banner rule was.
    let labelled = include_str!("../../../tests/art/framed.jsonl");
    let mut wrong = Vec::new();
    for line in labelled.lines() {
        let rec: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
        let text = rec["text"].as_str().expect("text");
        let verdict = classify(&Block {
            alt: rec["alt"].as_str().unwrap_or(""),
            text,
            leading: rec["position"] == "leading",
        });
        if verdict.art != (rec["label"] == "art") {
            wrong.push(format!("{}: {}\n{text}", rec["note"], verdict.rule.name()));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn repetition_counts_graphemes_not_bytes() {
    // Four braille cells are four identical graphemes, though no two adjacent bytes match;
    // an accented letter with a combining mark is one grapheme.
    assert_eq!(repeated_graphemes("⣿⣿⣿⣿"), 4);
    assert_eq!(
        repeated_graphemes("e\u{301}e\u{301}e\u{301}e\u{301}e\u{301}"),
        5
    );
    assert_eq!(repeated_graphemes("abab ⣿⣿⣿ ----"), 4);
    assert_eq!(repeated_graphemes("    "), 0);
    // A number and a comment rule do not make a code block art: words dominate.
    let code = "// ////////\nlet total = 10000;\nlet limit = 20000;\nprintln!(\"{total}\");";
    assert!(!verdict("", code, false).art);
}

#[test]
fn decoration_lines() {
    let cases: &[(&str, bool)] = &[
        ("----------", true),
        ("* * *", true),
        ("~~~~~~~~~~~~", true),
        ("════════════", true),
        ("-=-=-=-=-=-=-", true),
        ("---- x ----", true),
        ("~~~ § ~~~", true),
        ("////", true),
        ("..........", true),
        ("🌸🌸🌸", true),
        ("---- Chapter 2 ----", false),
        ("=== 2024 ===", false),
        ("-----BEGIN PGP SIGNATURE-----", false),
        ("10000", false),
        ("--", false),
        (":)", false),
        ("", false),
        ("a line of prose --- with a dash", false),
        ("x ---- x", false),
    ];
    judge_lines(is_decoration_line, cases);
}

#[test]
fn alt_text_vocabulary() {
    let cases: &[(&str, AltKind)] = &[
        ("", AltKind::Neutral),
        ("rust", AltKind::Content("rust".into())),
        ("C++", AltKind::Content("c++".into())),
        (
            "{.bash org-language=\"sh\" exports=\"code\"}",
            AltKind::Content("bash".into()),
        ),
        ("make-feed.sh", AltKind::Content("make-feed.sh".into())),
        ("Output of the build", AltKind::Content("output".into())),
        ("Silly ASCII Art Logo", AltKind::Art("ascii".into())),
        (
            "logo: ASCII art for \"c.s/blag\"",
            AltKind::Art("logo".into()),
        ),
        ("ASCII table of results", AltKind::Neutral),
        ("bash script printing a banner", AltKind::Neutral),
        ("the start of part two", AltKind::Neutral),
        ("mountains under stars", AltKind::Neutral),
        ("gemini archive", AltKind::Neutral),
        ("c", AltKind::Content("c".into())),
        ("{.c}", AltKind::Content("c".into())),
        ("C is for cookie", AltKind::Neutral),
    ];
    for (alt, want) in cases {
        assert_eq!(&alt_kind(alt), want, "alt {alt:?}");
    }
}

#[test]
fn captions_keep_informative_alt_text() {
    let cases: &[(&str, Option<&str>)] = &[
        ("", None),
        ("_ ,", None),
        ("ascii", None),
        ("An ASCII art banner", None),
        ("⠀⠀⠀⠀", None),
        (
            " A rocket next to \"Drew\" ",
            Some("A rocket next to \"Drew\""),
        ),
        ("nytpu — creating content", Some("nytpu — creating content")),
    ];
    for (alt, want) in cases {
        assert_eq!(caption(alt), *want, "alt {alt:?}");
    }
}

#[test]
fn prompts() {
    let cases: &[(&str, bool)] = &[
        ("$ ls -la", true),
        ("  % make test", true),
        ("user@host:~/src$ cargo build", true),
        ("[0x00401000]> pd 20", true),
        (">>> print(1)", true),
        ("$$ |  $$ |", false),
        ("$5 for a coffee", false),
        ("# a comment", false),
        ("=> /link", false),
    ];
    judge_lines(is_prompt, cases);
}

#[test]
fn never_panics_on_odd_input() {
    let inputs = [
        String::new(),
        "\u{1b}".repeat(100),
        "\u{1b}[".repeat(100),
        "\u{1b}[31".to_string(),
        "⠀".repeat(10_000),
        "a\u{301}".repeat(1000),
        "\0\t\r\u{85}\u{2028}".repeat(100),
        "x\n".repeat(10_000),
        "0x".to_string(),
        "[$".to_string(),
        "@$ ".to_string(),
    ];
    for text in &inputs {
        for alt in ["", "{.", "`", "c++", "...", "~/", "."] {
            for leading in [false, true] {
                let v = verdict(alt, text, leading);
                assert_eq!(v.art, v.rule.is_art());
            }
        }
        let _ = is_decoration_line(text);
        let _ = caption(text);
    }
}

/// The ASCII path cuts text as the segmentation tables do, controls and CR included; other
/// text goes through the tables.
#[test]
fn graphemes_are_unicode_segmentation_s() {
    use unicode_segmentation::UnicodeSegmentation;
    let texts = [
        "",
        "plain words, (x) = y; | -- ##",
        "tab\there\rcr\x1b[0m\x00\x7f",
        "ends with cr\r",
        "crlf\r\nin ascii",
        "café ⣿⣿ e\u{301} 👍🏽 日本語",
        "  ",
    ];
    for text in texts {
        let ours: Vec<&str> = graphemes(text).collect();
        let tables: Vec<&str> = text.graphemes(true).collect();
        assert_eq!(ours, tables, "{text:?}");
    }
}
