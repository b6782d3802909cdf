//! The ASCII-art classifier: decides whether a preformatted block is decoration (figlet banners,
//! drawings, braille or block-element pictures, dividers) or content worth indexing (code, shell
//! sessions, tables, poems), and whether a line of ordinary text is pure decoration.
//!
//! It is a short, ordered list of rules over measures of the block; the first rule that applies
//! decides, and the [`Verdict`] names it and prints the measures, so every decision can be
//! explained. The measures are Unicode-aware: text is read as grapheme clusters, and characters
//! are judged by the Unicode block they come from (braille patterns, block elements, box
//! drawing, geometric shapes, dingbat stars), never by bytes.
//!
//! It is not a general language detector and does no I/O. It judges one block at a time; the
//! only thing it knows about the page is whether the block is *leading* (nothing with content
//! came before it), which the caller works out.

use unicode_segmentation::UnicodeSegmentation;

/// Only this many lines of a block are measured: a block's opening is representative, and a
/// pasted 100,000-line log should not cost more than a page of prose.
const MAX_LINES: usize = 400;

/// A block drawn from at most this many distinct glyphs (over at least [`PALETTE_MIN_GRAPHEMES`])
/// repeats a small palette, as fonts and drawings do; prose and code use far more.
const PALETTE_MAX: usize = 12;
const PALETTE_MIN_GRAPHEMES: usize = 40;

/// A leading block with fewer words than this is a banner even if its words are real (a name
/// framed in a box).
const LEADING_MIN_WORDS: usize = 3;

/// A preformatted block as the classifier sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Block<'a> {
    /// The alt text after the opening fence, as written.
    pub alt: &'a str,
    /// The lines of the block joined with `\n`.
    pub text: &'a str,
    /// True when nothing with content (text, heading, link, another block) precedes the block
    /// on its page: where capsules put their banners.
    pub leading: bool,
}

/// The rule that decided a [`Verdict`], in the order the rules are tried.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Rule {
    /// Nothing but whitespace: nothing to index either way.
    Empty,
    /// Terminal colour escapes: an ANSI-art picture or a terminal screenshot.
    AnsiArt,
    /// Block elements used as the bars of a labelled bar chart.
    BarChart,
    /// Braille patterns, block elements, geometric shapes or dingbat stars dominate.
    ArtCharacters,
    /// The alt text names a programming language, a file, or a kind of content (table,
    /// output, poem...).
    AltContent,
    /// Every line is a rule line: repeated dashes, dots, stars or box-drawing strokes.
    Decoration,
    /// The alt text calls the block art (ascii, banner, logo...) and the content agrees.
    AltArt,
    /// The alt text calls the block art, but it reads as prose or code.
    WordsDespiteAlt,
    /// A shell or REPL prompt: a session, whatever its output looks like.
    ShellPrompt,
    /// Most of the block sits on lines that hold no word and few letters: a drawing or a
    /// figlet font made of punctuation.
    Drawing,
    /// Few words, and the block repeats itself: long runs of one grapheme, or a palette of a
    /// dozen glyphs used over and over (fonts drawn with `8`, `S:::S` or `/_\`).
    Repetition,
    /// A leading block that does not read as prose, code or data, or holds at most a couple of
    /// words: a banner.
    Leading,
    /// None of the above: words, identifiers or numbers dominate.
    ReadsAsContent,
}

impl Rule {
    /// A short stable name, for logs and the evaluation script.
    pub fn name(self) -> &'static str {
        match self {
            Rule::Empty => "empty",
            Rule::AnsiArt => "ansi-art",
            Rule::BarChart => "bar-chart",
            Rule::ArtCharacters => "art-characters",
            Rule::AltContent => "alt-content",
            Rule::Decoration => "decoration",
            Rule::AltArt => "alt-art",
            Rule::WordsDespiteAlt => "words-despite-alt",
            Rule::ShellPrompt => "shell-prompt",
            Rule::Drawing => "drawing",
            Rule::Repetition => "repetition",
            Rule::Leading => "leading",
            Rule::ReadsAsContent => "reads-as-content",
        }
    }

    /// Whether a verdict by this rule marks the block as art.
    pub fn is_art(self) -> bool {
        matches!(
            self,
            Rule::AnsiArt
                | Rule::ArtCharacters
                | Rule::Decoration
                | Rule::AltArt
                | Rule::Drawing
                | Rule::Repetition
                | Rule::Leading
        )
    }
}

/// The classifier's decision on one block, with the rule that made it and the measures behind it.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    pub art: bool,
    pub rule: Rule,
    /// The measures that the rule looked at, as `name=value` pairs.
    pub detail: String,
}

impl Verdict {
    fn new(rule: Rule, detail: String) -> Verdict {
        Verdict {
            art: rule.is_art(),
            rule,
            detail,
        }
    }
}

/// Classifies one preformatted block. Never fails; an empty block is not art.
pub fn classify(block: &Block<'_>) -> Verdict {
    let alt = alt_kind(block.alt);
    let m = Measures::of(block.text);
    let detail = m.describe();
    let with_alt = |what: &str| format!("alt {what} {:?}; {detail}", block.alt.trim());

    if m.lines == 0 {
        return Verdict::new(Rule::Empty, detail);
    }
    // One colour escape per line or more is a picture painted in a terminal; a stray one is not.
    if m.escapes >= 3 && m.escapes * 2 >= m.lines {
        return Verdict::new(Rule::AnsiArt, detail);
    }
    if m.art_chars * 5 >= m.graphemes {
        if m.bar_lines * 5 >= m.art_lines * 4 && m.bar_lines >= 2 {
            return Verdict::new(Rule::BarChart, detail);
        }
        return Verdict::new(Rule::ArtCharacters, detail);
    }
    if let AltKind::Content(word) = alt {
        return Verdict::new(Rule::AltContent, with_alt(&format!("names {word:?}")));
    }
    if m.content_lines == 0 {
        return Verdict::new(Rule::Decoration, detail);
    }
    if let AltKind::Art(word) = alt {
        // The author's own word outweighs the shape of the text, unless the block plainly reads
        // as sentences, code or a listing (`ascii art` over a `tree` listing): a banner with a
        // caption inside its frame is still a banner.
        let plain = m.alnum_share() >= 0.7 && m.word_share() >= 0.7;
        if plain && m.drawing_share() < 0.2 && m.drawing_line_share() < 0.2 {
            return Verdict::new(Rule::WordsDespiteAlt, with_alt(&format!("says {word:?}")));
        }
        return Verdict::new(Rule::AltArt, with_alt(&format!("says {word:?}")));
    }
    if m.prompts > 0 {
        return Verdict::new(Rule::ShellPrompt, detail);
    }
    // A single line is too little to judge by shape; only its characters (above) can condemn it.
    // Code with one-letter names (`a -> { b, c }`, `x=['a', 'b']`) can look like line art; its
    // statements give it away.
    if m.lines >= 2 && m.code_share() < 0.5 {
        let punctuation_font = m.alnum_share() < 0.3 && m.word_share() < 0.3;
        // Small pictures with a caption (`(o o) boo!`) have few drawing graphemes but mostly
        // drawing lines, and their symbols stand apart from letters, unlike code's `f(x)`.
        let small_picture = m.drawing_line_share() >= 0.5 && m.loose_share() >= 0.5;
        if m.drawing_share() >= 0.5 || punctuation_font || small_picture {
            return Verdict::new(Rule::Drawing, detail);
        }
    }
    if m.content_lines >= 2 {
        let small_palette =
            m.content_graphemes >= PALETTE_MIN_GRAPHEMES && m.palette.len() <= PALETTE_MAX;
        if (m.repeat_share() >= 0.3 || small_palette) && m.word_share() < 0.3 {
            return Verdict::new(Rule::Repetition, detail);
        }
    }
    // Where banners live, a block must read as content and say a little more than a name.
    if block.leading && !(m.reads_as_content() && m.words >= LEADING_MIN_WORDS) {
        return Verdict::new(Rule::Leading, detail);
    }
    Verdict::new(Rule::ReadsAsContent, detail)
}

/// Whether a line of ordinary text is pure decoration: a separator of repeated symbols
/// (`----`, `* * *`, `~~~~`, `═══`) or one with a tiny ornament in the middle (`---- x ----`,
/// `~~~ § ~~~`). Lines holding a word or a number of two or more digits are never decoration, so
/// `---- Chapter 2 ----` and `== 2024 ==` stay.
pub fn is_decoration_line(line: &str) -> bool {
    // Fast path for prose: two ASCII letters or digits are two alphanumeric graphemes, which no
    // decoration line has. This runs on every text line of every page.
    if line
        .bytes()
        .filter(u8::is_ascii_alphanumeric)
        .nth(1)
        .is_some()
    {
        return false;
    }
    let graphemes: Vec<&str> = line
        .graphemes(true)
        .filter(|g| kind(g) != Kind::Space)
        .collect();
    if graphemes.len() < 3 {
        return false;
    }
    let alnum = graphemes.iter().filter(|g| kind(g) == Kind::Alnum).count();
    if alnum == 0 {
        return true;
    }
    if alnum > 1 {
        return false;
    }
    // One letter or digit framed by runs of symbols on both sides, like `---- x ----`.
    let is_symbol = |g: &&str| matches!(kind(g), Kind::Symbol | Kind::Frame | Kind::ArtChar);
    let lead = graphemes
        .iter()
        .take_while(|g| is_symbol(g) && **g == graphemes[0])
        .count();
    let last = graphemes[graphemes.len() - 1];
    let trail = graphemes
        .iter()
        .rev()
        .take_while(|g| is_symbol(g) && **g == last)
        .count();
    lead >= 3 && trail >= 3
}

/// The alt text of an art block worth keeping as a caption, or `None` when it is empty, has no
/// letters or digits (`_ ,`), or says nothing beyond that the block is art (`ascii art`).
pub fn caption(alt: &str) -> Option<&str> {
    let alt = alt.trim();
    let words = alt_words(alt);
    let informative = words
        .iter()
        .any(|w| !ART_WORDS.contains(&w.as_str()) && !STOP_WORDS.contains(&w.as_str()));
    informative.then_some(alt)
}

/// What the alt text says about the block.
#[derive(Debug, Clone, PartialEq, Eq)]
enum AltKind {
    /// Nothing decisive (empty, a free description, or conflicting words).
    Neutral,
    /// An art word, and no word for content.
    Art(String),
    /// A language, a file name or a word for content, and no art word.
    Content(String),
}

/// Words in alt text that say a block is a picture. Matched as whole words, so `part` and
/// `start` are not `art`.
#[rustfmt::skip]
const ART_WORDS: &[&str] = &[
    "ascii", "asciiart", "ansi", "art", "artwork", "banner", "logo", "logotype", "wordmark",
    "emblem", "figlet", "toilet", "cowsay", "ponysay", "drawing", "doodle", "sketch",
    "illustration", "picture", "pic", "image", "graphic", "graphics", "braille", "kaomoji",
    "decoration", "decorative", "ornament", "divider", "separator",
];

/// Fence languages and formats, as written after the fence or in a pandoc/org class
/// (`{.bash ...}`). Only the alt text's first word is looked up, so a description that happens
/// to contain `go` or `c` is not taken for code.
#[rustfmt::skip]
const LANGUAGES: &[&str] = &[
    "ada", "apl", "asm", "assembly", "awk", "bash", "bat", "batch", "bf", "bnf", "brainfuck", "c",
    "c#", "c++", "cc", "cfg", "clj", "clojure", "cmake", "cmd", "cobol", "conf", "config",
    "console", "cpp", "crontab", "cs", "csharp", "css", "cxx", "d", "dart", "desktop", "diff",
    "dockerfile", "dos", "ebnf", "el", "elisp", "elixir", "erl", "erlang", "ex", "f#", "fennel",
    "fish", "forth", "fortran", "gemtext", "gmi", "gnuplot", "go", "golang", "gp", "graphql",
    "groovy", "h", "hare", "haskell", "hcl", "hpp", "hs", "htm", "html", "http", "ini", "janet",
    "java", "javascript", "jl", "js", "json", "jsonc", "jsx", "julia", "kotlin", "kt", "latex",
    "lisp", "lua", "m4", "make", "makefile", "markdown", "md", "ml", "mysql", "nasm", "nginx",
    "nim", "nix", "objc", "ocaml", "odin", "pascal", "patch", "perl", "php", "pl", "plantuml",
    "powershell", "prolog", "proto", "protobuf", "ps1", "psql", "py", "python", "python3", "r",
    "racket", "rb", "regex", "regexp", "repl", "rs", "ruby", "rust", "s", "scala", "scheme", "scm",
    "scss", "sed", "sh", "shell", "shellsession", "sparql", "sql", "sqlite", "swift", "systemd",
    "tcl", "terminal", "tex", "toml", "ts", "tsx", "typescript", "v", "vb", "vim", "viml", "xml",
    "yaml", "yml", "zig", "zsh",
];

/// Words in alt text for kinds of content that are not art: data, program output, writing.
#[rustfmt::skip]
const CONTENT_WORDS: &[&str] = &[
    "chart", "code", "csv", "data", "diagram", "graph", "haiku", "listing", "log", "lyrics",
    "output", "plot", "poem", "poetry", "prose", "quote", "schema", "session", "snippet", "source",
    "table", "transcript", "tsv", "verse",
];

/// Words that say nothing about what a caption shows.
#[rustfmt::skip]
const STOP_WORDS: &[&str] = &[
    "a", "an", "and", "by", "for", "in", "of", "on", "the", "with", "my", "this", "some",
];

/// The alt text as lower-case words; `+` and `#` stay inside words for `c++` and `f#`.
fn alt_words(alt: &str) -> Vec<String> {
    alt.split(|c: char| !(c.is_alphanumeric() || c == '+' || c == '#'))
        .map(|w| w.trim_matches(|c| c == '+' || c == '#'))
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// Reads the alt text. Conflicting words (`bash script printing a banner`) give
/// [`AltKind::Neutral`], so the content decides.
fn alt_kind(alt: &str) -> AltKind {
    let raw = alt.trim().to_lowercase();
    let words = alt_words(&raw);
    // `c++` and `c#` lose their marks in `alt_words`' trimming; look at the raw first word too.
    let first_raw = raw
        .trim_start_matches(['{', '.', '`'])
        .split(|c: char| c.is_whitespace() || c == '}' || c == '`')
        .next()
        .unwrap_or("");
    // `python3:` or `sh,` still name a language; `make-feed.sh` does not name `make`.
    let first_bare =
        first_raw.trim_end_matches(|c: char| !(c.is_alphanumeric() || "+#".contains(c)));
    // One-letter names (`c`, `r`, `s`) count only alone or as a class: "C is for cookie" is not C.
    let alone = words.len() == 1 || raw.starts_with("{.");
    let language = [first_raw, first_bare]
        .into_iter()
        .find(|w| LANGUAGES.contains(w) && (w.chars().count() > 1 || alone));
    let art = words.iter().find(|w| ART_WORDS.contains(&w.as_str()));
    let content = words.iter().find(|w| CONTENT_WORDS.contains(&w.as_str()));
    let file = raw.split_whitespace().find(|w| looks_like_file(w));
    match (art, language, content, file) {
        (Some(a), None, None, _) => AltKind::Art(a.clone()),
        (Some(_), _, _, _) => AltKind::Neutral,
        (None, Some(l), _, _) => AltKind::Content(l.to_string()),
        (None, None, Some(c), _) => AltKind::Content(c.clone()),
        (None, None, None, Some(f)) => AltKind::Content(f.to_string()),
        (None, None, None, None) => AltKind::Neutral,
    }
}

/// A path (`~/.ipfs/config`, `/etc/hosts`) or a file name with an extension (`make-feed.sh`).
fn looks_like_file(word: &str) -> bool {
    let word = word.trim_matches(|c: char| "\"'`()[]{},;:".contains(c));
    if word.contains("://") {
        return false;
    }
    if (word.starts_with('/') || word.starts_with("~/") || word.starts_with("./")) && word.len() > 2
    {
        return true;
    }
    match word.rsplit_once('.') {
        Some((stem, ext)) => {
            !stem.is_empty()
                && (1..=8).contains(&ext.len())
                && ext.chars().all(|c| c.is_ascii_alphanumeric())
                && ext.chars().any(|c| c.is_ascii_alphabetic())
                && stem
                    .chars()
                    .all(|c| c.is_alphanumeric() || "._-/~".contains(c))
        }
        None => false,
    }
}

/// How a grapheme counts, judged by its first character.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Space,
    /// A letter or digit of any script.
    Alnum,
    /// A character from a block whose only use is pictures: braille, block elements, geometric
    /// shapes, legacy-computing sextants, dingbat stars and florettes.
    ArtChar,
    /// Box drawing: frames tables as often as pictures, so it is neither content nor art.
    Frame,
    Symbol,
}

fn kind(grapheme: &str) -> Kind {
    let Some(c) = grapheme.chars().next() else {
        return Kind::Space;
    };
    let cp = u32::from(c);
    if c.is_whitespace() || c.is_control() {
        Kind::Space
    } else if c.is_alphanumeric() {
        Kind::Alnum
    } else if (0x2500..=0x257F).contains(&cp) {
        Kind::Frame
    } else if (0x2580..=0x25FF).contains(&cp)
        || (0x2800..=0x28FF).contains(&cp)
        || (0x1FB00..=0x1FBFF).contains(&cp)
        || cp == 0x2605
        || cp == 0x2606
        || (0x2722..=0x274B).contains(&cp)
    {
        Kind::ArtChar
    } else {
        Kind::Symbol
    }
}

/// Block elements proper (the bars of a bar chart), a subset of [`Kind::ArtChar`].
fn is_block_element(grapheme: &str) -> bool {
    grapheme
        .chars()
        .next()
        .is_some_and(|c| (0x2580..=0x259F).contains(&u32::from(c)))
}

/// Symbols that rule lines are made of, besides box drawing.
fn is_rule_symbol(grapheme: &str) -> bool {
    #[rustfmt::skip]
    const RULE_SYMBOLS: &[&str] = &[
        "-", "=", "_", "~", "+", "*", "#", ".", ":", "'", "`", "^", "|",
        "·", "•", "‐", "‒", "–", "—", "―", "…", "・", "～",
    ];
    RULE_SYMBOLS.contains(&grapheme)
}

/// Whether a whitespace-separated token reads as a word, an identifier or a number: a run of two
/// or more letters that is not one letter repeated (`SSSS`, `lllll`, `oo`), a CJK character, a
/// number that is not one digit repeated (`888`), or a hexadecimal literal.
fn is_word(token: &str) -> bool {
    let mut run_len = 0;
    let mut run_varies = false;
    let mut streak = 0;
    let mut longest_streak = 0;
    let mut prev: Option<char> = None;
    let run_is_word = |len: usize, varies: bool, longest: usize| len >= 2 && varies && longest < 4;
    for c in token.chars() {
        if c.is_alphabetic() {
            // Ideographs, kana and hangul are words on their own, even one at a time.
            if crate::lang::is_cjk(c) {
                return true;
            }
            let lower = c.to_lowercase().next().unwrap_or(c);
            match prev {
                Some(p) if p == lower => streak += 1,
                Some(_) => {
                    run_varies = true;
                    streak = 1;
                }
                None => streak = 1,
            }
            longest_streak = longest_streak.max(streak);
            run_len += 1;
            prev = Some(lower);
        } else {
            if run_is_word(run_len, run_varies, longest_streak) {
                return true;
            }
            run_len = 0;
            run_varies = false;
            streak = 0;
            longest_streak = 0;
            prev = None;
        }
    }
    if run_is_word(run_len, run_varies, longest_streak) {
        return true;
    }
    is_number(token)
}

/// A number as data shows it (`42`, `-3.5`, `12:30`, `99%`, `2024-01-02`, `0x1f`), but not one
/// digit repeated three times or more, which is how digit fonts draw (`888`).
fn is_number(token: &str) -> bool {
    let t = token.trim_matches(|c: char| "()[]{},;:\"'<>".contains(c));
    if let Some(hex) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        return !hex.is_empty() && hex.chars().all(|c| c.is_ascii_hexdigit());
    }
    let t = t.strip_prefix(['-', '+']).unwrap_or(t);
    if !t.starts_with(|c: char| c.is_ascii_digit()) {
        return false;
    }
    if !t
        .chars()
        .all(|c| c.is_ascii_digit() || ".,:%/-+_".contains(c))
    {
        return false;
    }
    let mut digits = t.chars().filter(char::is_ascii_digit);
    let first = digits.next();
    let same = digits.clone().all(|d| Some(d) == first);
    !(same && digits.count() >= 2)
}

/// A shell, REPL or debugger prompt at the start of a line: `$ ls`, `% make`,
/// `user@host:~$ ls`, `[0x00401000]> pd`, `>>> print`, `(gdb) run`, `sqlite> .tables`.
fn is_prompt(line: &str) -> bool {
    let t = line.trim_start();
    let command_follows = |rest: &str| {
        rest.strip_prefix(' ')
            .and_then(|r| r.chars().next())
            .is_some_and(|c| c.is_ascii_alphabetic() || "./~<_".contains(c))
    };
    for prefix in ["$", "%", ">>>", "(gdb)", "sqlite>", "mysql>", "irb>"] {
        if t.strip_prefix(prefix).is_some_and(command_follows) {
            return true;
        }
    }
    // `user@host:~/dir$ cmd` and `[user@host dir]$ cmd` and `[0x0040]> cmd`.
    let Some(end) = t.find(|c: char| "$#>".contains(c)) else {
        return false;
    };
    let (head, rest) = t.split_at(end);
    let rest = &rest[1..];
    let head_ok = (head.contains('@') && !head.contains(' ') && head.len() > 2)
        || (head.starts_with('[') && head.ends_with(']') && head.len() > 2);
    head_ok && command_follows(rest)
}

/// A line of code by its look: a call, an assignment, a statement end, a block opener or
/// closer, or a keyword at the start.
fn looks_like_code(line: &str) -> bool {
    const KEYWORDS: &[&str] = &[
        "fn", "def", "let", "var", "const", "return", "if", "else", "for", "while", "import",
        "from", "use", "function", "class", "struct", "enum", "pub", "package", "local", "echo",
        "sudo", "cd", "export", "set", "int", "void", "static", "#include", "#define", "select",
        "begin", "end", "do", "done", "then", "fi", "mod", "impl", "public", "private",
    ];
    let t = line.trim();
    if t.ends_with(';') || t.ends_with('{') || t.ends_with('}') {
        return true;
    }
    let first = t.split_whitespace().next().unwrap_or("");
    if KEYWORDS.contains(&first) {
        return true;
    }
    // `name = value`, `x+=1`, `cfg.port := 1965`: a name, an assignment operator, a value.
    let name_len = t
        .find(|c: char| !(c.is_alphanumeric() || "_.[]'\"".contains(c)))
        .unwrap_or(t.len());
    let name = &t[..name_len];
    let rest = t[name_len..].trim_start();
    let assigns = ["=", ":=", "+=", "-=", "*=", "/=", "|=", "&="]
        .iter()
        .any(|op| {
            rest.strip_prefix(op)
                .is_some_and(|v| !v.starts_with(['=', '>']))
        });
    if name.chars().any(char::is_alphabetic) && assigns {
        return true;
    }
    // `name(` with a real identifier before the parenthesis.
    t.match_indices('(').any(|(i, _)| {
        let before = &t[..i];
        let ident: String = before
            .chars()
            .rev()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        ident.chars().filter(|c| c.is_alphabetic()).count() >= 2
    })
}

/// Counts over the lines of a block, from which the rules read shares.
#[derive(Debug, Default, Clone, PartialEq)]
struct Measures {
    /// Non-blank lines measured.
    lines: usize,
    /// Lines that are not rule lines.
    content_lines: usize,
    /// ANSI CSI escape sequences (colour codes) seen.
    escapes: usize,
    /// Non-space graphemes on all lines.
    graphemes: usize,
    art_chars: usize,
    /// Lines holding art characters, and those of them shaped like a labelled bar.
    art_lines: usize,
    bar_lines: usize,
    /// Non-space, non-frame graphemes on content lines, and how many are letters or digits.
    content_graphemes: usize,
    alnum: usize,
    /// Graphemes on content lines that hold no word and few letters.
    drawing_graphemes: usize,
    /// Content lines of three graphemes or more (a lone `}` says nothing), and those of them
    /// that hold no word and few letters.
    shaped_lines: usize,
    drawing_lines: usize,
    /// Symbols on content lines, and those with no letter or digit on either side.
    symbols: usize,
    loose_symbols: usize,
    /// Graphemes in runs of four or more of the same grapheme, on content lines.
    repeated: usize,
    /// Whitespace-separated tokens on content lines (table cells split at `|` and box strokes),
    /// and those that read as words, identifiers or numbers ([`is_word`]).
    tokens: usize,
    words: usize,
    /// Content lines that start with a shell or REPL prompt, or look like a line of code.
    prompts: usize,
    code_lines: usize,
    /// Distinct graphemes on content lines (frames aside), kept only up to one more than
    /// [`PALETTE_MAX`]: more than that is all the rules need to know.
    palette: Vec<String>,
}

impl Measures {
    fn of(text: &str) -> Measures {
        let mut m = Measures::default();
        for raw in text.split('\n').take(MAX_LINES) {
            let (line, escapes) = strip_escapes(raw);
            m.escapes += escapes;
            m.add_line(&line);
        }
        m
    }

    fn add_line(&mut self, line: &str) {
        let graphemes: Vec<(&str, Kind)> = line
            .graphemes(true)
            .map(|g| (g, kind(g)))
            .filter(|(_, k)| *k != Kind::Space)
            .collect();
        if graphemes.is_empty() {
            return;
        }
        self.lines += 1;
        self.graphemes += graphemes.len();
        let art = graphemes
            .iter()
            .filter(|(_, k)| *k == Kind::ArtChar)
            .count();
        self.art_chars += art;
        let tokens: Vec<&str> = line
            .split(|c: char| {
                c.is_whitespace() || c == '|' || (0x2500..=0x257F).contains(&u32::from(c))
            })
            .filter(|t| !t.is_empty())
            .collect();
        let words = tokens.iter().filter(|t| is_word(t)).count();
        if art > 0 {
            self.art_lines += 1;
            if words > 0 && is_single_bar(line) {
                self.bar_lines += 1;
            }
        }
        if is_rule_line(line) {
            return;
        }
        self.content_lines += 1;
        let measured: Vec<&str> = graphemes
            .iter()
            .filter(|(_, k)| *k != Kind::Frame)
            .map(|(g, _)| *g)
            .collect();
        let alnum = graphemes.iter().filter(|(_, k)| *k == Kind::Alnum).count();
        self.content_graphemes += measured.len();
        for g in &measured {
            if self.palette.len() <= PALETTE_MAX && !self.palette.iter().any(|p| p == g) {
                self.palette.push((*g).to_string());
            }
        }
        self.alnum += alnum;
        let drawing_line = words == 0 && alnum * 2 < measured.len();
        if drawing_line {
            self.drawing_graphemes += measured.len();
        }
        if measured.len() >= 3 {
            self.shaped_lines += 1;
            self.drawing_lines += usize::from(drawing_line);
        }
        let (symbols, loose) = loose_symbols(line);
        self.symbols += symbols;
        self.loose_symbols += loose;
        self.repeated += repeated_graphemes(line);
        self.tokens += tokens.len();
        self.words += words;
        if is_prompt(line) {
            self.prompts += 1;
        }
        if looks_like_code(line) {
            self.code_lines += 1;
        }
    }

    fn share(part: usize, whole: usize) -> f64 {
        if whole == 0 {
            0.0
        } else {
            part as f64 / whole as f64
        }
    }
    fn alnum_share(&self) -> f64 {
        Self::share(self.alnum, self.content_graphemes)
    }
    fn word_share(&self) -> f64 {
        Self::share(self.words, self.tokens)
    }
    fn drawing_share(&self) -> f64 {
        Self::share(self.drawing_graphemes, self.content_graphemes)
    }
    fn drawing_line_share(&self) -> f64 {
        Self::share(self.drawing_lines, self.shaped_lines)
    }
    fn loose_share(&self) -> f64 {
        Self::share(self.loose_symbols, self.symbols)
    }
    fn repeat_share(&self) -> f64 {
        Self::share(self.repeated, self.content_graphemes)
    }
    fn code_share(&self) -> f64 {
        Self::share(self.code_lines, self.content_lines)
    }

    /// Prose, code or data: mostly letters and digits in real words, or lines shaped like code,
    /// without long runs of one character.
    fn reads_as_content(&self) -> bool {
        let wordy = self.alnum_share() >= 0.6 && self.word_share() >= 0.5;
        (wordy || self.code_share() >= 0.5) && self.repeat_share() < 0.25
    }

    fn describe(&self) -> String {
        format!(
            "lines={} content={} alnum={:.2} words={:.2} drawing={:.2} drawing-lines={}/{} \
             loose={:.2} repeat={:.2} glyphs={}{} art-chars={}/{} code={:.2} prompts={} escapes={}",
            self.lines,
            self.content_lines,
            self.alnum_share(),
            self.word_share(),
            self.drawing_share(),
            self.drawing_lines,
            self.shaped_lines,
            self.loose_share(),
            self.repeat_share(),
            self.palette.len(),
            if self.palette.len() > PALETTE_MAX {
                "+"
            } else {
                ""
            },
            self.art_chars,
            self.graphemes,
            self.code_share(),
            self.prompts,
            self.escapes,
        )
    }
}

/// Removes ANSI CSI sequences (`ESC [ params final`), counting them. Borrows when there are none.
fn strip_escapes(line: &str) -> (std::borrow::Cow<'_, str>, usize) {
    if !line.contains('\u{1b}') {
        return (std::borrow::Cow::Borrowed(line), 0);
    }
    let mut out = String::with_capacity(line.len());
    let mut count = 0;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' && chars.peek() == Some(&'[') {
            chars.next();
            // Parameter and intermediate bytes, then one final byte in @..~.
            for p in chars.by_ref() {
                if ('@'..='~').contains(&p) {
                    break;
                }
            }
            count += 1;
        } else {
            out.push(c);
        }
    }
    (std::borrow::Cow::Owned(out), count)
}

/// A separator or frame line: only rule symbols and box drawing, and shaped like a rule: a box
/// stroke, a run of three identical symbols (`+----+----+`, `=====`), or one or two symbols
/// repeated (`* * *`, `-=-=-=`). Lines of mixed punctuation such as `.'\`__\`-'__\`\`.` are
/// drawings, not rules, even though every character in them could appear in a rule.
fn is_rule_line(line: &str) -> bool {
    // An elision (`...`, `[...]`, `(…)`) separates what it elides, like a rule.
    let bare = line
        .trim()
        .trim_start_matches(['[', '('])
        .trim_end_matches([']', ')']);
    if !bare.is_empty() && bare.chars().all(|c| c == '.' || c == '…') && line.trim() != bare {
        return true;
    }
    let all: Vec<(&str, Kind)> = line.graphemes(true).map(|g| (g, kind(g))).collect();
    let graphemes: Vec<(&str, Kind)> = all
        .iter()
        .copied()
        .filter(|(_, k)| *k != Kind::Space)
        .collect();
    if !graphemes
        .iter()
        .all(|(g, k)| *k == Kind::Frame || is_rule_symbol(g))
    {
        return false;
    }
    if graphemes.iter().any(|(_, k)| *k == Kind::Frame) {
        return true;
    }
    // Runs are counted with the spaces in place: `| . | . |` has none.
    let run = all
        .windows(3)
        .any(|w| w[0].1 != Kind::Space && w[0].0 == w[1].0 && w[1].0 == w[2].0);
    let mut distinct: Vec<&str> = graphemes.iter().map(|(g, _)| *g).collect();
    distinct.sort_unstable();
    distinct.dedup();
    graphemes.len() >= 3 && (run || distinct.len() <= 2)
}

/// Whether the block elements of a line form one unbroken bar (`████▌`), as in a chart.
fn is_single_bar(line: &str) -> bool {
    let mut bars = 0;
    let mut inside = false;
    for g in line.graphemes(true) {
        let block = is_block_element(g);
        if block && !inside {
            bars += 1;
        }
        inside = block;
    }
    bars == 1
}

/// Symbols on a line, and how many of them have no letter or digit next to them: drawings set
/// their strokes apart (`/ \`, `(__)\`), code and data attach them to names (`f(x)`, `a, b`).
fn loose_symbols(line: &str) -> (usize, usize) {
    let kinds: Vec<Kind> = line.graphemes(true).map(kind).collect();
    let mut symbols = 0;
    let mut loose = 0;
    for (i, k) in kinds.iter().enumerate() {
        if *k != Kind::Symbol {
            continue;
        }
        symbols += 1;
        let before = i.checked_sub(1).and_then(|j| kinds.get(j));
        let after = kinds.get(i + 1);
        if before != Some(&Kind::Alnum) && after != Some(&Kind::Alnum) {
            loose += 1;
        }
    }
    (symbols, loose)
}

/// Graphemes in runs of four or more identical non-space, non-frame graphemes.
fn repeated_graphemes(line: &str) -> usize {
    let mut total = 0;
    let mut run = 0;
    let mut prev: Option<&str> = None;
    let mut flush = |run: usize, prev: Option<&str>| {
        if run >= 4 && prev.is_some_and(|g| !matches!(kind(g), Kind::Space | Kind::Frame)) {
            total += run;
        }
    };
    for g in line.graphemes(true) {
        if Some(g) == prev {
            run += 1;
        } else {
            flush(run, prev);
            run = 1;
            prev = Some(g);
        }
    }
    flush(run, prev);
    total
}

#[cfg(test)]
mod tests {
    use super::*;

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
                    r"        \   ^__^",
                    r"         \  (oo)\_______",
                    r"            (__)\       )\/\",
                    r"                ||----w |",
                    r"                ||     ||",
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
                    r"        \   ^__^",
                    r"         \  (oo)\_______",
                    r"            (__)\       )\/\",
                    r"                ||----w |",
                    r"                ||     ||",
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
        for (line, want) in cases {
            assert_eq!(is_decoration_line(line), *want, "line {line:?}");
        }
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
        for (line, want) in cases {
            assert_eq!(is_prompt(line), *want, "line {line:?}");
        }
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
}
