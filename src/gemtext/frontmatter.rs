//! Front matter: the metadata block static site generators leave at the top of a page when it
//! is converted to gemtext without being rendered, TOML between `+++` lines (often all on one
//! line: `+++ type = "blog" title = "Report #20" date = … +++`) or YAML between `---` lines.
//! It is the page's declared title and no part of its text. Pure.

use super::LineRef;

/// A front matter block longer than this many lines is not one: more likely a page that opens
/// with a rule.
const MAX_LINES: usize = 40;

/// The front matter at the start of a page: how many of its lines it takes, and its title.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct FrontMatter {
    pub lines: usize,
    pub title: Option<String>,
}

/// The front matter opening `lines` (blank lines before it allowed), if any. Reads no further
/// than the block could reach.
pub(super) fn front_matter<'a>(lines: impl Iterator<Item = LineRef<'a>>) -> Option<FrontMatter> {
    let mut lines = lines.enumerate();
    let (start, first) = lines.find(|(_, l)| !is_blank(l))?;
    let LineRef::Text(first) = first else {
        return None;
    };
    let first = first.trim();
    if first == "+++" || first == "---" {
        let toml = first == "+++";
        let mut fields: Vec<&str> = Vec::new();
        for (i, line) in lines.take(MAX_LINES) {
            let LineRef::Text(text) = line else {
                return None;
            };
            let text = text.trim();
            if text == first {
                return (!fields.is_empty()).then(|| FrontMatter {
                    lines: i + 1,
                    title: fields.iter().find_map(|f| title_in(f, toml)),
                });
            }
            if text.is_empty() || text.starts_with('#') {
                continue;
            }
            let nested = text.starts_with('-') || text.starts_with('[') || text.starts_with('"');
            if key_of(text, if toml { '=' } else { ':' }).is_none() && !nested {
                return None;
            }
            fields.push(text);
        }
        return None;
    }
    // TOML on one line: `+++ key = "value" key = … +++`.
    let inner = first.strip_prefix("+++")?.strip_suffix("+++")?.trim();
    inner.contains('=').then(|| FrontMatter {
        lines: start + 1,
        title: title_in(inner, true),
    })
}

fn is_blank(line: &LineRef) -> bool {
    matches!(line, LineRef::Text(t) if t.trim().is_empty())
}

/// The key of a `key = value` (or `key: value`) line.
fn key_of(line: &str, sep: char) -> Option<&str> {
    let (key, _) = line.split_once(sep)?;
    let key = key.trim();
    let word = |c: char| c.is_alphanumeric() || c == '_' || c == '-' || c == '.';
    (!key.is_empty() && key.chars().all(word)).then_some(key)
}

/// The title declared in `text`: the value of a `title` key, unquoted. In TOML the text may
/// hold several `key = "value"` pairs on one line.
fn title_in(text: &str, toml: bool) -> Option<String> {
    if !toml {
        let value = text.strip_prefix("title")?.trim_start().strip_prefix(':')?;
        return unquoted(value.trim());
    }
    let mut rest = text;
    while let Some(at) = rest.find("title") {
        let before = &rest[..at];
        let after = rest[at + "title".len()..].trim_start();
        let starts_key = before.is_empty() || before.ends_with(char::is_whitespace);
        if starts_key {
            if let Some(value) = after.strip_prefix('=') {
                return unquoted(value.trim_start());
            }
        }
        rest = &rest[at + "title".len()..];
    }
    None
}

/// A quoted string at the start of `value` (`"…"` with `\"` escapes, or `'…'`), else the bare
/// value; `None` when empty.
fn unquoted(value: &str) -> Option<String> {
    let mut chars = value.chars();
    let title = match chars.next()? {
        quote @ ('"' | '\'') => {
            let mut out = String::new();
            let mut escaped = false;
            for c in chars {
                match c {
                    '\\' if quote == '"' && !escaped => escaped = true,
                    c if c == quote && !escaped => break,
                    c => {
                        out.push(c);
                        escaped = false;
                    }
                }
            }
            out
        }
        _ => value.to_string(),
    };
    let title = title.trim();
    (!title.is_empty()).then(|| title.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gemtext::lines;

    fn fm(src: &str) -> Option<FrontMatter> {
        front_matter(lines(src))
    }

    #[test]
    fn toml_on_one_line_gives_its_title() {
        let src =
            "+++ type = \"blog\" author = \"PulkoMandy\" title = \"WebKit weekly report #20\" \
                   date = \"2014-02-21\" tags = [\"webkit\"] +++\n\nHello everyone!\n";
        assert_eq!(
            fm(src),
            Some(FrontMatter {
                lines: 1,
                title: Some("WebKit weekly report #20".into())
            })
        );
    }

    #[test]
    fn toml_and_yaml_blocks_give_their_titles_and_lengths() {
        let toml = "\n+++\ntitle = \"A \\\"quoted\\\" word\"\ndate = 2020-01-01\n+++\n# Heading\n";
        assert_eq!(
            fm(toml),
            Some(FrontMatter {
                lines: 5,
                title: Some("A \"quoted\" word".into())
            })
        );
        let yaml = "---\nlayout: post\ntitle: 'Hello, world'\ntags:\n  - a\n---\ntext\n";
        assert_eq!(
            fm(yaml),
            Some(FrontMatter {
                lines: 6,
                title: Some("Hello, world".into())
            })
        );
        let untitled = "---\nlayout: post\n---\ntext\n";
        assert_eq!(
            fm(untitled),
            Some(FrontMatter {
                lines: 3,
                title: None
            })
        );
    }

    #[test]
    fn pages_that_open_with_a_rule_or_text_have_none() {
        for src in [
            "---\nJust some prose after a rule.\n---\n",
            "---\n\n# A heading\n",
            "---\nkey: value\n",
            "+++ nothing to see +++\n",
            "# Title\n+++ title = \"x\" +++\n",
            "A subtitle = a joke +++\n",
            "",
        ] {
            assert_eq!(fm(src), None, "{src:?}");
        }
    }

    #[test]
    fn a_key_ending_in_title_is_not_the_title() {
        let src = "+++ subtitle = \"no\" title = \"yes\" +++\n";
        assert_eq!(fm(src).unwrap().title.as_deref(), Some("yes"));
        let src = "+++ subtitle = \"no\" +++\n";
        assert_eq!(fm(src).unwrap().title, None);
    }
}
