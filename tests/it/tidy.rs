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
