//! Graphemes and tokens judged one at a time: the [`Kind`] of a grapheme by its Unicode block
//! (letters, braille, block elements, box drawing, symbols), and whether a token is a word, a
//! number, a shell prompt or a line of code.

/// The extended grapheme clusters of `text`, as `unicode-segmentation` cuts them. A text of
/// ASCII without a line feed is cut a byte at a time without the segmentation tables: every
/// ASCII character is a cluster of its own but CR followed by LF. That is most lines the
/// classifier reads: the tables were 44% of extracting the corpus' pages, and extraction went
/// from 62 to 46 us a page with this (`examples/bench_extract.rs`).
pub(super) fn graphemes(text: &str) -> Graphemes<'_> {
    if text.is_ascii() && !text.contains('\n') {
        Graphemes::Ascii { text, at: 0 }
    } else {
        Graphemes::Unicode(unicode_segmentation::UnicodeSegmentation::graphemes(
            text, true,
        ))
    }
}

/// The iterator of [`graphemes`].
pub(super) enum Graphemes<'a> {
    Ascii { text: &'a str, at: usize },
    Unicode(unicode_segmentation::Graphemes<'a>),
}

impl<'a> Iterator for Graphemes<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        match self {
            Graphemes::Ascii { text, at } => {
                let g = text.get(*at..*at + 1)?;
                *at += 1;
                Some(g)
            }
            Graphemes::Unicode(g) => g.next(),
        }
    }
}

/// How a grapheme counts, judged by its first character.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
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

pub(super) fn kind(grapheme: &str) -> Kind {
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
pub(super) fn is_block_element(grapheme: &str) -> bool {
    grapheme
        .chars()
        .next()
        .is_some_and(|c| (0x2580..=0x259F).contains(&u32::from(c)))
}

/// Symbols that rule lines are made of, besides box drawing.
pub(super) fn is_rule_symbol(grapheme: &str) -> bool {
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
pub(super) fn is_word(token: &str) -> bool {
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
pub(super) fn is_number(token: &str) -> bool {
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
pub(super) fn is_prompt(line: &str) -> bool {
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
pub(super) fn looks_like_code(line: &str) -> bool {
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
