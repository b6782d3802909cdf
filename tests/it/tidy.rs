//! Rules of the code base that a reader of the source can check, checked here by reading the
//! source as text, so that they stay true without anyone remembering them.

use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("source directory")
        .flatten()
        .map(|e| e.path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// One `#[error(...)]` variant of a thiserror enum: its format string and the source of the
/// variant's fields, up to the next variant.
struct Variant {
    line: usize,
    format: String,
    fields: String,
}

/// The error variants of one file. Good enough for the way geode writes them: the attribute's
/// format string is one string literal, and a variant ends at the next `#[error` or at the
/// enum's closing brace (a line holding only `}`).
fn error_variants(text: &str) -> Vec<Variant> {
    let lines: Vec<&str> = text.lines().collect();
    let mut variants = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let Some(at) = lines[i].find("#[error(") else {
            i += 1;
            continue;
        };
        let start = i;
        // The attribute may span lines: read up to its closing `)]`.
        let mut attribute = lines[i][at..].to_string();
        while !attribute.trim_end().ends_with(")]") && i + 1 < lines.len() {
            i += 1;
            attribute.push_str(lines[i].trim());
        }
        let format = attribute
            .split_once('"')
            .and_then(|(_, rest)| rest.rsplit_once('"'))
            .map(|(inside, _)| inside.to_string())
            .unwrap_or_default();
        let mut fields = String::new();
        i += 1;
        while i < lines.len() && !lines[i].contains("#[error(") && lines[i].trim() != "}" {
            fields.push_str(lines[i]);
            fields.push('\n');
            i += 1;
        }
        variants.push(Variant {
            line: start + 1,
            format,
            fields,
        });
    }
    variants
}

/// The fields of a variant that thiserror makes its `source()`: `#[from]` or `#[source]`
/// fields, and a field named `source`. Tuple fields are named by position (`0`).
fn source_fields(fields: &str) -> Vec<String> {
    let mut names = Vec::new();
    let tuple = fields
        .trim_start()
        .starts_with(|c: char| c.is_alphanumeric())
        && fields.split('\n').next().is_some_and(|l| l.contains('('));
    if tuple {
        if fields.contains("#[from]") || fields.contains("#[source]") {
            // geode's tuple variants that carry a source have it as their only field.
            names.push("0".to_string());
        }
        return names;
    }
    let mut marked = false;
    for line in fields.lines().map(str::trim) {
        if line.starts_with("#[from]") || line.starts_with("#[source]") {
            marked = true;
        }
        let declaration = line
            .trim_start_matches("#[from]")
            .trim_start_matches("#[source]")
            .trim();
        if let Some((name, _)) = declaration.split_once(':') {
            let name = name.trim().trim_start_matches("pub ").to_string();
            if !name.is_empty() && name.chars().all(|c| c.is_alphanumeric() || c == '_') {
                if marked || name == "source" {
                    names.push(name);
                }
                marked = false;
            }
        }
    }
    names
}

/// `geode: {e:#}` prints an error and every `source()` below it. A message that shows its
/// cause and also returns it as the source prints the cause twice on one line (issue 12,
/// item 15): "tantivy: Data corrupted: ...: Data corrupted: ...".
#[test]
fn error_messages_never_repeat_their_source() {
    let mut files = Vec::new();
    rust_files(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut files,
    );
    let mut breaches = Vec::new();
    let mut checked = 0;
    for file in &files {
        let text = std::fs::read_to_string(file).expect("source file");
        for variant in error_variants(&text) {
            checked += 1;
            for name in source_fields(&variant.fields) {
                if variant.format.contains(&format!("{{{name}}}"))
                    || variant.format.contains(&format!("{{{name}:"))
                {
                    breaches.push(format!(
                        "{}:{}: #[error(\"{}\")] shows `{name}`, which is also its source()",
                        file.display(),
                        variant.line,
                        variant.format
                    ));
                }
            }
        }
    }
    assert!(
        checked > 20,
        "the scanner found only {checked} error variants"
    );
    assert!(breaches.is_empty(), "{}", breaches.join("\n"));
}

#[test]
fn the_scanner_sees_a_repeated_cause() {
    let text = r#"
pub enum E {
    #[error("tantivy: {0}")]
    Tantivy(#[from] tantivy::TantivyError),
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("fine: {0}")]
    Fine(String),
    #[error(transparent)]
    Wrapped(#[from] Other),
}
"#;
    let variants = error_variants(text);
    let found: Vec<(String, Vec<String>)> = variants
        .iter()
        .map(|v| (v.format.clone(), source_fields(&v.fields)))
        .collect();
    assert_eq!(
        found,
        [
            ("tantivy: {0}".to_string(), vec!["0".to_string()]),
            (
                "cannot listen on {addr}: {source}".to_string(),
                vec!["source".to_string()]
            ),
            ("fine: {0}".to_string(), vec![]),
            (String::new(), vec!["0".to_string()]),
        ]
    );
}

// ---------------------------------------------------------------------------------------------
// The architecture's rules (ARCHITECTURE.md, "Code map" and "Invariants"), checked by reading the
// source as text in the spirit of rust-analyzer's tidy tests. Each rule is a list of forbidden
// marks and the places allowed to carry them. Comments and everything from a file's first
// `#[cfg(test)]` on are not read: tests may build what they check with any tool.

/// The pure domain floor, by module path: no I/O, no clock, no async runtime, no index or
/// database, no store types. Every entry must name a module of the crate's module tree.
const DOMAIN: &[&str] = &[
    "urlnorm",
    "gemtext",
    "query",
    "rank",
    "revisit",
    "feed",
    "robots",
    "content",
    "crawl::scheduler",
    "crawl::policy",
    "lang",
    "human",
    "warc",
    "digest",
    "embed::input",
    "embed::quant",
    "index::search::fuse",
];

/// What a pure module may not name: I/O, the clock, the async runtime, the index or the
/// database.
const NO_IO: &[&str] = &[
    "std::fs",
    "Instant::now",
    "SystemTime",
    "crate::clock",
    "unix_now",
    "File::open",
    "File::create",
    "tokio",
    "tantivy",
    "rusqlite",
    "postgres",
    "std::net::Tcp",
];

/// What a domain module may not name besides: the layers above the floor and their types.
const NOT_IN_DOMAIN: &[&str] = &[
    "crate::frontier",
    "crate::fetch",
    "crate::index",
    "crate::serve",
    "crate::cmd",
];

/// The frontends' pure parts: requests to routes, and pages from the data they show. They read
/// no clock (the time shown is passed in) and do no I/O, so every page is tested as a value.
const PAGES: &[&str] = &[
    "serve::request",
    "serve::render",
    "serve::pages",
    "serve::web::route",
    "serve::web::html",
];

/// Modules that decide what others do: they may read the fetch layer's and the store's types
/// (an answer, a claimed URL), but, like the domain floor, no clock and no I/O, and they name
/// nothing that acts (a store, a transaction, a fetcher, the scheduler).
const DECISIONS: &[&str] = &["crawl::verdict"];

/// What a decision module may not name besides.
const NOT_IN_DECISIONS: &[&str] = &[
    "crate::index",
    "crate::serve",
    "crate::cmd",
    "Frontier",
    "Batch",
    "Fetcher",
    "Scheduler",
];

/// Marks of an outgoing connection or a name lookup: only the fetch layer opens sockets.
const CONNECT: &[&str] = &[
    "TcpStream::connect",
    "lookup_host",
    "to_socket_addrs",
    "ToSocketAddrs",
    "UdpSocket",
    "getaddrinfo",
    ".connect(",
];

/// One rule: modules under `scope` must not carry any mark of `marks`, except modules under
/// `allowed` (module paths; `crate` is every module).
struct Rule {
    name: &'static str,
    scope: &'static [&'static str],
    marks: &'static [&'static [&'static str]],
    allowed: &'static [&'static str],
}

const RULES: &[Rule] = &[
    Rule {
        name: "only the stores speak SQL",
        scope: &["crate"],
        marks: &[&["rusqlite", "Connection::open", "postgres::", "r2d2"]],
        allowed: &["frontier"],
    },
    Rule {
        name: "only the fetch layer opens outgoing sockets and resolves names",
        scope: &["crate"],
        marks: &[CONNECT],
        allowed: &["fetch"],
    },
    Rule {
        name: "only the indexer holds the IndexWriter",
        scope: &["crate"],
        marks: &[&["IndexWriter", ".writer(", ".writer_with_num_threads("]],
        allowed: &["index::writer"],
    },
    Rule {
        name: "domain modules do no I/O, read no clock and use no store",
        scope: DOMAIN,
        marks: &[NO_IO, NOT_IN_DOMAIN],
        allowed: &[],
    },
    Rule {
        name: "pages and routes do no I/O and read no clock",
        scope: PAGES,
        marks: &[NO_IO],
        allowed: &[],
    },
    Rule {
        name: "decisions do no I/O, read no clock and act on nothing",
        scope: DECISIONS,
        marks: &[NO_IO, NOT_IN_DECISIONS],
        allowed: &[],
    },
];

/// The code of a file as the rules read it: no comments, and no item marked `#[cfg(test)]` (a
/// test module is skipped to its closing brace; code after it is read again).
fn code_of(text: &str) -> String {
    let mut code = String::new();
    // Inside a test item: the brace depth reached so far, and whether its body has opened.
    let mut skipping: Option<(i64, bool)> = None;
    for line in text.lines() {
        // A `//` inside a string (a URL, say) is kept; a line's trailing comment is not.
        let comment = line
            .match_indices("//")
            .map(|(at, _)| at)
            .find(|&at| line[..at].matches('"').count() % 2 == 0);
        let line = comment.map_or(line, |at| &line[..at]);
        let mut line = line;
        if skipping.is_none() {
            if let Some(rest) = line.trim_start().strip_prefix("#[cfg(test)]") {
                // The item may follow on the attribute's own line.
                skipping = Some((0, false));
                line = rest;
            }
        }
        if let Some((depth, opened)) = skipping.as_mut() {
            for c in braces_outside_strings(line) {
                *depth += if c == '{' { 1 } else { -1 };
                *opened = true;
            }
            // The item ends where its body closes, or at a `;` for `mod tests;`.
            let declared = !*opened && line.trim_end().ends_with(';');
            if (*opened && *depth <= 0) || declared {
                skipping = None;
            }
            code.push('\n');
            continue;
        }
        code.push_str(line);
        code.push('\n');
    }
    code
}

/// The braces of a line that stand outside string and character literals, in order.
fn braces_outside_strings(line: &str) -> Vec<char> {
    let mut out = Vec::new();
    let mut in_string = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if in_string => {
                chars.next();
            }
            '"' => in_string = !in_string,
            '\'' if !in_string => {
                // '{' and '}' as character literals.
                let rest: String = chars.clone().take(2).collect();
                if rest == "{'" || rest == "}'" {
                    chars.next();
                    chars.next();
                }
            }
            '{' | '}' if !in_string => out.push(c),
            _ => {}
        }
    }
    out
}

/// The module path of a source file under `src/` (`src/gemtext/art/mod.rs` is
/// `gemtext::art`; the crate roots are `crate`), as the compiler maps them: geode uses no
/// `#[path]` attribute.
fn module_of(path: &str) -> String {
    let inner = path.trim_start_matches("src/").trim_end_matches(".rs");
    let inner = inner.trim_end_matches("/mod");
    match inner {
        "lib" | "main" => "crate".to_string(),
        _ => inner.replace('/', "::"),
    }
}

/// Whether `module` is one of `prefixes` or inside one.
fn within(module: &str, prefixes: &[&str]) -> bool {
    prefixes
        .iter()
        .any(|p| *p == "crate" || module == *p || module.starts_with(&format!("{p}::")))
}

/// Breaches of `rule` in one file (`path` relative to the crate root, with `/`).
fn breaches_of(rule: &Rule, path: &str, text: &str) -> Vec<String> {
    let module = module_of(path);
    // A module's tests in a file of their own (`tests.rs`) are tests too.
    if !within(&module, rule.scope)
        || within(&module, rule.allowed)
        || module == "tests"
        || module.ends_with("::tests")
    {
        return Vec::new();
    }
    let code = code_of(text);
    let mut found = Vec::new();
    for (number, line) in code.lines().enumerate() {
        for mark in rule.marks.iter().copied().flatten() {
            if line.contains(mark) {
                found.push(format!(
                    "{path}:{}: `{mark}` breaks \"{}\"",
                    number + 1,
                    rule.name
                ));
            }
        }
    }
    found
}

fn crate_files(root: &Path) -> Vec<(String, String)> {
    let mut files = Vec::new();
    for dir in ["src", "tests", "crates", "benches", "examples"] {
        let dir = root.join(dir);
        if dir.is_dir() {
            rust_files(&dir, &mut files);
        }
    }
    files
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).expect("source file");
            let relative = path
                .strip_prefix(root)
                .expect("under the root")
                .to_string_lossy()
                .replace('\\', "/");
            (relative, text)
        })
        .collect()
}

/// The names of the modules a file declares in files of their own (`mod name;`, whatever its
/// visibility or attributes), comments left out.
fn declared_modules(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|line| {
            let line = line.split("//").next().unwrap_or("").trim();
            let line = line.rsplit(']').next().unwrap_or(line).trim();
            let rest = line.strip_prefix("pub").map_or(line, |rest| {
                rest.trim_start()
                    .strip_prefix('(')
                    .and_then(|r| r.split_once(')'))
                    .map_or(rest, |(_, after)| after)
                    .trim_start()
            });
            let name = rest.strip_prefix("mod ")?.strip_suffix(';')?.trim();
            name.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_')
                .then(|| name.to_string())
        })
        .collect()
}

/// The crate's source files as the compiler reaches them: from `src/lib.rs` and `src/main.rs`,
/// each `mod name;` followed to `name.rs` or `name/mod.rs` (paths relative to `root`, sorted).
fn module_tree(root: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut todo = vec!["src/lib.rs".to_string(), "src/main.rs".to_string()];
    while let Some(file) = todo.pop() {
        let text = std::fs::read_to_string(root.join(&file))
            .unwrap_or_else(|e| panic!("{file}, declared as a module: {e}"));
        // Children of `x/mod.rs`, `lib.rs` and `main.rs` live beside them, those of `x.rs`
        // in `x/`.
        let dir = match file.rsplit_once('/') {
            Some((dir, "mod.rs" | "lib.rs" | "main.rs")) => dir.to_string(),
            _ => file.trim_end_matches(".rs").to_string(),
        };
        for name in declared_modules(&text) {
            let flat = format!("{dir}/{name}.rs");
            let nested = format!("{dir}/{name}/mod.rs");
            let child = if root.join(&flat).is_file() {
                flat
            } else {
                nested
            };
            todo.push(child);
        }
        found.push(file);
    }
    found.sort();
    found.dedup();
    found
}

/// A file under `src/` that no `mod` declaration reaches is not compiled: the rules would read
/// it for nothing (and a rename that left one behind would look checked).
#[test]
fn every_source_file_is_in_the_module_tree() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let tree = module_tree(root);
    let mut on_disk = Vec::new();
    rust_files(&root.join("src"), &mut on_disk);
    let stray: Vec<String> = on_disk
        .iter()
        .map(|p| {
            p.strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/")
        })
        .filter(|p| !tree.contains(p))
        .collect();
    assert!(tree.len() > 100, "the module tree has {} files", tree.len());
    assert!(stray.is_empty(), "files no `mod` reaches: {stray:?}");
}

#[test]
fn the_module_tree_follows_declarations() {
    let text = "//! x\npub mod a;\nmod b; // comment\n#[cfg(test)]\nmod tests;\n\
                pub(crate) mod c;\n#[cfg(feature = \"x\")] pub mod d;\nmod e {\n}\n\
                // mod f;\nlet s = \"mod g;\";\n";
    assert_eq!(declared_modules(text), ["a", "b", "tests", "c", "d"]);
    assert_eq!(module_of("src/gemtext/art/mod.rs"), "gemtext::art");
    assert_eq!(module_of("src/crawl/scheduler.rs"), "crawl::scheduler");
    assert_eq!(module_of("src/lib.rs"), "crate");
}

#[test]
fn the_architecture_rules_hold() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let tree = module_tree(root);
    let modules: Vec<String> = tree.iter().map(|path| module_of(path)).collect();
    // A rename that leaves the list behind would silently check nothing.
    for pure in DOMAIN.iter().chain(DECISIONS) {
        assert!(
            modules.iter().any(|m| m == pure),
            "DOMAIN or DECISIONS names `{pure}`, which is not a module of the crate"
        );
    }
    let files: Vec<(String, String)> = tree
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(root.join(&path)).expect("source file");
            (path, text)
        })
        .collect();
    let mut breaches = Vec::new();
    for (path, text) in &files {
        for rule in RULES {
            breaches.extend(breaches_of(rule, path, text));
        }
    }
    assert!(breaches.is_empty(), "{}", breaches.join("\n"));
}

#[test]
fn every_rust_file_opens_with_a_module_doc() {
    let files = crate_files(Path::new(env!("CARGO_MANIFEST_DIR")));
    assert!(files.len() > 100, "found {} files", files.len());
    let missing: Vec<&str> = files
        .iter()
        .filter(|(_, text)| !text.trim_start().starts_with("//!"))
        .map(|(path, _)| path.as_str())
        .collect();
    assert!(
        missing.is_empty(),
        "files without a `//!` module doc: {missing:?}"
    );
}

#[test]
fn the_rules_catch_what_they_forbid() {
    let rule = |name| RULES.iter().find(|r| r.name.starts_with(name)).unwrap();
    let sql = "//! x\nuse rusqlite::Connection;\n";
    assert_eq!(
        breaches_of(rule("only the stores"), "src/crawl/mod.rs", sql).len(),
        1
    );
    assert!(breaches_of(rule("only the stores"), "src/frontier/claim.rs", sql).is_empty());
    let dial = "fn f() { let s = tokio::net::TcpStream::connect(addr); }\n";
    assert_eq!(
        breaches_of(rule("only the fetch"), "src/serve/mod.rs", dial).len(),
        1
    );
    assert!(breaches_of(rule("only the fetch"), "src/fetch/http.rs", dial).is_empty());
    assert_eq!(
        breaches_of(rule("only the fetch"), "src/serve/render.rs", dial).len(),
        1
    );
    // The clock is read where times are taken, and handed to the pure modules.
    let clock = "let now = crate::clock::unix_now();\nlet t = std::time::Instant::now();\n";
    assert_eq!(breaches_of(rule("domain"), "src/warc.rs", clock).len(), 3);
    assert_eq!(
        breaches_of(rule("domain"), "src/gemtext/art/mod.rs", clock).len(),
        3
    );
    assert!(breaches_of(rule("domain"), "src/crawl/driver.rs", clock).is_empty());
    // Pages are given the time they show; the answers around them read the clock.
    assert_eq!(
        breaches_of(rule("pages"), "src/serve/web/html.rs", clock).len(),
        3
    );
    assert!(breaches_of(rule("pages"), "src/serve/web/answer.rs", clock).is_empty());
    // A decision reads an answer and a claimed URL, and does nothing with them.
    let decide = "use crate::fetch::Outcome;\nuse crate::frontier::{QueuedUrl, UrlState};\n";
    assert!(breaches_of(rule("decisions"), "src/crawl/verdict.rs", decide).is_empty());
    let act = "fn f(b: &mut dyn Batch) { b.requeue(1, unix_now()); }\n";
    assert_eq!(
        breaches_of(rule("decisions"), "src/crawl/verdict.rs", act).len(),
        2
    );
    assert!(breaches_of(rule("decisions"), "src/crawl/record/mod.rs", act).is_empty());
    let writer = "let w: tantivy::IndexWriter = index.writer(50_000_000)?;\n";
    assert_eq!(
        breaches_of(rule("only the indexer"), "src/reindex.rs", writer).len(),
        2
    );
    assert!(breaches_of(rule("only the indexer"), "src/index/writer.rs", writer).is_empty());
    let io = "use std::fs;\nfn f() -> crate::frontier::QueuedUrl { todo!() }\n";
    assert_eq!(
        breaches_of(rule("domain"), "src/gemtext/art.rs", io).len(),
        2
    );
    assert_eq!(
        breaches_of(rule("domain"), "src/query/lexer.rs", io).len(),
        2
    );
    assert!(breaches_of(rule("domain"), "src/querying.rs", io).is_empty());
    // Comments, strings' `//` and tests are read as the rules say.
    let quiet = "// tokio would be wrong here\nlet u = \"gemini://x\"; // tantivy\n\
                 #[cfg(test)]\nmod tests { use std::fs; }\n";
    assert!(breaches_of(rule("domain"), "src/urlnorm.rs", quiet).is_empty());
    let loud = "let u = \"gemini://x\"; let t = tokio::spawn(f);\n";
    assert_eq!(breaches_of(rule("domain"), "src/urlnorm.rs", loud).len(), 1);
    // Code after a test module is read again, line numbers kept.
    let after = "#[cfg(test)]\nmod tests {\n    fn f() { let b = '{'; }\n}\nuse std::fs;\n";
    assert_eq!(
        breaches_of(rule("domain"), "src/urlnorm.rs", after),
        ["src/urlnorm.rs:5: `std::fs` breaks \"domain modules do no I/O, read no clock and use no store\""]
    );
    let declared = "#[cfg(test)]\nmod tests;\nfn f() { tokio::spawn(g); }\n";
    assert_eq!(
        breaches_of(rule("domain"), "src/urlnorm.rs", declared).len(),
        1
    );
    let one_line = "#[cfg(test)] use std::fs;\nfn f() { tokio::spawn(g); }\n";
    assert_eq!(
        breaches_of(rule("domain"), "src/urlnorm.rs", one_line).len(),
        1
    );
}
