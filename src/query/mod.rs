//! The query language of `geode search` and `geode serve`: a lexer and a recursive-descent
//! parser from the text a person types to a [`Query`] tree. Pure: no Tantivy, no I/O. The index
//! module turns the tree into a Tantivy query (`index::compile`); this module does not analyse
//! words (splitting, folding, stemming belong to the index's analyser).
//!
//! The language:
//!
//! ```text
//! query   := or
//! or      := and ( ("OR" | "|") and )*
//! and     := unary ( ["AND"] unary )*
//! unary   := ("-" | "NOT") unary | primary
//! primary := "(" or ")" | filter | phrase | word
//! filter  := NAME ":" (word | phrase)
//! ```
//!
//! `OR`, `AND` and `NOT` are operators only in upper case; `or` is a word. A `-` negates only at
//! the start of a token (`e-mail` is one word); a `-` standing alone between spaces is
//! punctuation, as in `Artist - Title`, and is ignored. Filter names (`site`, `lang`, `mime`,
//! `content_type`, `intitle`, `inurl`, `filetype`, `size`, `similar`, `scheme`) are case-insensitive; a word whose
//! text before its first `:` is not one of them is an ordinary word (`gemini://example.org/`,
//! `12:30`). Filter values are normalised here (see [`Filter`]).
//!
//! Every query the parser accepts can be executed: the whole query, every alternative of an
//! `OR` and every negated group hold at least one word, phrase or filter that is not negated. A
//! malformed query gives a [`QueryError`] with a byte span; [`QueryError::caret_line`] draws it.
//! Inputs are bounded: [`MAX_QUERY_BYTES`], [`MAX_TERMS`] and [`MAX_DEPTH`].

mod filters;
mod lexer;
mod parser;
#[cfg(test)]
mod tests;

use std::ops::Range;

use lexer::{Lexer, Tok};
use parser::Parser;

/// The longest query accepted, in bytes.
pub const MAX_QUERY_BYTES: usize = 1024;
/// The most words, phrases and filters in one query.
pub const MAX_TERMS: usize = 64;
/// The deepest nesting of parentheses.
pub const MAX_DEPTH: usize = 16;

/// A parsed query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Query {
    /// A bare word as typed (not yet analysed: the index splits, folds and stems it).
    Term { text: String, span: Range<usize> },
    /// `"an exact phrase"`, the text between the quotes.
    Phrase { text: String, span: Range<usize> },
    /// A `name:value` restriction.
    Filter { filter: Filter, span: Range<usize> },
    /// `-x` or `NOT x`.
    Not(Box<Query>),
    /// Every part must match (juxtaposition or `AND`).
    And(Vec<Query>),
    /// At least one part must match (`OR`).
    Or(Vec<Query>),
}

/// A filter's restriction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Filter {
    /// `site:host[/~user]`, lowercased, without scheme or trailing slash.
    Site(String),
    /// `scheme:gemini`, `scheme:http` or `scheme:https`, lowercased.
    Scheme(String),
    /// `lang:xx`, the primary language subtag, lowercased.
    Lang(String),
    /// `mime:type/sub`, `mime:type` or `content_type:...`, lowercased.
    Mime(String),
    /// `intitle:word` or `intitle:"a phrase"`.
    InTitle(TextValue),
    /// `inurl:word` or `inurl:"a phrase"`.
    InUrl(TextValue),
    /// `filetype:ext`, lowercased, without a leading dot.
    FileType(String),
    /// `size:>N`, `size:<N`, `size:>=N`, `size:<=N`, `size:N`, bytes after K/M/G suffixes.
    Size(Comparison, u64),
    /// `similar:URL`: the page and its near-duplicates; the URL in canonical form.
    Similar(String),
}

/// The text of `intitle:` and `inurl:`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TextValue {
    Word(String),
    Phrase(String),
}

impl TextValue {
    /// The word or the phrase's text.
    pub fn text(&self) -> &str {
        match self {
            TextValue::Word(text) | TextValue::Phrase(text) => text,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Comparison {
    Less,
    LessOrEqual,
    Equal,
    GreaterOrEqual,
    Greater,
}

/// A malformed query: what is wrong and where (byte range in the query text).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct QueryError {
    pub message: String,
    pub span: Range<usize>,
}

impl QueryError {
    /// The query and, below it, carets under the span, for messages on a terminal:
    ///
    /// ```text
    /// cats "and dogs
    ///      ^
    /// ```
    ///
    /// Columns are counted in characters, so the carets line up under UTF-8 text; control
    /// characters (tabs, newlines) are shown as spaces to keep the query on one line.
    pub fn caret_line(&self, query: &str) -> String {
        let start = floor_boundary(query, self.span.start);
        let end = ceil_boundary(query, self.span.end).max(start);
        let column = query[..start].chars().count();
        let width = query[start..end].chars().count().max(1);
        let shown: String = query
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect();
        format!("{shown}\n{}{}", " ".repeat(column), "^".repeat(width))
    }
}

impl Query {
    /// The texts a snippet should highlight: words, phrases and `intitle:`/`inurl:` values that
    /// are not negated, in the order they were typed.
    pub fn highlight_words(&self) -> Vec<String> {
        let mut words = Vec::new();
        self.collect_highlight_words(&mut words);
        words
    }

    fn collect_highlight_words(&self, words: &mut Vec<String>) {
        match self {
            Query::Term { text, .. } | Query::Phrase { text, .. } => words.push(text.clone()),
            Query::Filter {
                filter: Filter::InTitle(value) | Filter::InUrl(value),
                ..
            } => words.push(value.text().to_string()),
            Query::Filter { .. } | Query::Not(_) => {}
            Query::And(parts) | Query::Or(parts) => {
                for part in parts {
                    part.collect_highlight_words(words);
                }
            }
        }
    }

    /// Whether the query is bare words and nothing else: no phrase, filter, operator or
    /// exclusion.
    pub fn is_bare_words(&self) -> bool {
        match self {
            Query::Term { .. } => true,
            Query::And(parts) => parts.iter().all(|p| matches!(p, Query::Term { .. })),
            _ => false,
        }
    }

    /// Whether a `similar:` filter lists a cluster of near-duplicates somewhere in the query.
    pub fn has_similar_filter(&self) -> bool {
        match self {
            Query::Filter {
                filter: Filter::Similar(_),
                ..
            } => true,
            Query::Term { .. } | Query::Phrase { .. } | Query::Filter { .. } => false,
            Query::Not(inner) => inner.has_similar_filter(),
            Query::And(parts) | Query::Or(parts) => parts.iter().any(Query::has_similar_filter),
        }
    }

    /// Whether any word, phrase or filter is outside every negation.
    fn has_plain_part(&self) -> bool {
        match self {
            Query::Term { .. } | Query::Phrase { .. } | Query::Filter { .. } => true,
            Query::Not(_) => false,
            Query::And(parts) | Query::Or(parts) => parts.iter().any(Query::has_plain_part),
        }
    }

    /// Whether the query can match on its own: it has a word, phrase or filter that is not
    /// negated in every alternative. A purely negative query would have to enumerate every
    /// document, which the parser refuses.
    fn is_positive(&self) -> bool {
        match self {
            Query::Term { .. } | Query::Phrase { .. } | Query::Filter { .. } => true,
            Query::Not(_) => false,
            Query::And(parts) => parts.iter().any(Query::is_positive),
            Query::Or(parts) => parts.iter().all(Query::is_positive),
        }
    }
}

/// Parses a query.
///
/// ```
/// use geode::query::{parse, Filter, Query};
///
/// let query = parse("gemlog -draft site:Example.org").unwrap();
/// let Query::And(parts) = &query else { panic!("{query:?}") };
/// assert!(matches!(&parts[0], Query::Term { text, .. } if text == "gemlog"));
/// assert!(matches!(&parts[1], Query::Not(_)));
/// // Filter values are normalised: the host is lower-cased.
/// assert!(matches!(
///     &parts[2],
///     Query::Filter { filter: Filter::Site(host), .. } if host == "example.org"
/// ));
///
/// // Errors say where: a caret under the column at fault.
/// let error = parse("(unclosed").unwrap_err();
/// assert!(error.message.contains("unmatched '('"), "{}", error.message);
/// ```
pub fn parse(text: &str) -> Result<Query, QueryError> {
    if text.len() > MAX_QUERY_BYTES {
        return Err(QueryError {
            message: format!(
                "query is too long: {} bytes, at most {MAX_QUERY_BYTES}",
                text.len()
            ),
            span: floor_boundary(text, MAX_QUERY_BYTES)..text.len(),
        });
    }
    let whole = trimmed_span(text);
    if whole.is_empty() {
        return Err(QueryError {
            message: "empty query".to_string(),
            span: 0..text.len(),
        });
    }
    let tokens = Lexer { text, pos: 0 }.tokens()?;
    let mut parser = Parser {
        text,
        tokens,
        next: 0,
        depth: 0,
        leaves: 0,
        deferred: None,
    };
    let root = parser.parse_or()?;
    if let Some(token) = parser.peek() {
        // parse_or stops only at the end or at a `)` that no `(` opened.
        let span = token.span.clone();
        return Err(error_at(text, span, "unmatched ')'"));
    }
    // A query without any plain part gets the general message; one with a plain part
    // somewhere gets the message about the alternative or group that lacks one.
    if root.query.has_plain_part() {
        if let Some(error) = parser.deferred {
            return Err(error);
        }
    }
    if !root.query.is_positive() {
        return Err(QueryError {
            message: "a query needs at least one word, phrase or filter that is not negated"
                .to_string(),
            span: whole,
        });
    }
    Ok(root.query)
}

/// Whether the user wrote the `AND` operator in `text`: the words it joins are then all
/// required, even where plain juxtaposed words may be missing from a result. `false` for a text
/// that does not lex.
pub fn explicit_and(text: &str) -> bool {
    Lexer { text, pos: 0 }
        .tokens()
        .is_ok_and(|tokens| tokens.iter().any(|t| t.tok == Tok::And))
}

/// An error at one place in the query; the message says the column (in characters, from 1).
fn error_at(text: &str, span: Range<usize>, message: &str) -> QueryError {
    let column = text[..floor_boundary(text, span.start)].chars().count() + 1;
    QueryError {
        message: format!("{message} at column {column}"),
        span,
    }
}

fn trimmed_span(text: &str) -> Range<usize> {
    let start = text.len() - text.trim_start().len();
    let end = text.trim_end().len();
    start..end.max(start)
}

fn floor_boundary(text: &str, index: usize) -> usize {
    let mut index = index.min(text.len());
    while !text.is_char_boundary(index) {
        index -= 1;
    }
    index
}

fn ceil_boundary(text: &str, index: usize) -> usize {
    let mut index = index.min(text.len());
    while !text.is_char_boundary(index) {
        index += 1;
    }
    index
}
