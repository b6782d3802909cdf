//! What a block's alt text says: art words (`ascii art`, `banner`), content words (`code`,
//! `output`), programming languages and file names, read into an [`AltKind`] the rules weigh;
//! and the word lists behind [`super::caption`].

/// What the alt text says about the block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum AltKind {
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
pub(super) const ART_WORDS: &[&str] = &[
    "ascii", "asciiart", "ansi", "art", "artwork", "banner", "logo", "logotype", "wordmark",
    "emblem", "figlet", "toilet", "cowsay", "ponysay", "drawing", "doodle", "sketch",
    "illustration", "picture", "pic", "image", "graphic", "graphics", "braille", "kaomoji",
    "decoration", "decorative", "ornament", "divider", "separator",
];

/// Fence languages and formats, as written after the fence or in a pandoc/org class
/// (`{.bash ...}`). Only the alt text's first word is looked up, so a description that happens
/// to contain `go` or `c` is not taken for code.
#[rustfmt::skip]
pub(super) const LANGUAGES: &[&str] = &[
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
pub(super) const CONTENT_WORDS: &[&str] = &[
    "chart", "code", "csv", "data", "diagram", "graph", "haiku", "listing", "log", "lyrics",
    "output", "plot", "poem", "poetry", "prose", "quote", "schema", "session", "snippet", "source",
    "table", "transcript", "tsv", "verse",
];

/// Words that say nothing about what a caption shows.
#[rustfmt::skip]
pub(super) const STOP_WORDS: &[&str] = &[
    "a", "an", "and", "by", "for", "in", "of", "on", "the", "with", "my", "this", "some",
];

/// The alt text as lower-case words; `+` and `#` stay inside words for `c++` and `f#`.
pub(super) fn alt_words(alt: &str) -> Vec<String> {
    alt.split(|c: char| !(c.is_alphanumeric() || c == '+' || c == '#'))
        .map(|w| w.trim_matches(|c| c == '+' || c == '#'))
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// Reads the alt text. Conflicting words (`bash script printing a banner`) give
/// [`AltKind::Neutral`], so the content decides.
pub(super) fn alt_kind(alt: &str) -> AltKind {
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
pub(super) fn looks_like_file(word: &str) -> bool {
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
