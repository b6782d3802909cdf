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
//! `content_type`, `intitle`, `inurl`, `filetype`, `size`, `similar`) are case-insensitive; a word whose
//! text before its first `:` is not one of them is an ordinary word (`gemini://example.org/`,
//! `12:30`). Filter values are normalised here (see [`Filter`]).
//!
//! Every query the parser accepts can be executed: the whole query, every alternative of an
//! `OR` and every negated group hold at least one word, phrase or filter that is not negated. A
//! malformed query gives a [`QueryError`] with a byte span; [`QueryError::caret_line`] draws it.
//! Inputs are bounded: [`MAX_QUERY_BYTES`], [`MAX_TERMS`] and [`MAX_DEPTH`].

use std::ops::Range;

use url::Host;

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

// ---------------------------------------------------------------------------------------------
// Lexer

#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    LParen,
    RParen,
    /// `OR` or `|`.
    Or,
    And,
    /// `NOT`.
    Not,
    /// A `-` attached to the token after it.
    Minus,
    Word(String),
    Phrase(String),
    Filter(Filter),
}

#[derive(Debug, Clone)]
struct Token {
    tok: Tok,
    span: Range<usize>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FilterKind {
    Site,
    Lang,
    Mime,
    InTitle,
    InUrl,
    FileType,
    Size,
    Similar,
}

impl FilterKind {
    fn from_name(name: &str) -> Option<FilterKind> {
        Some(match name.to_ascii_lowercase().as_str() {
            "site" => FilterKind::Site,
            "lang" => FilterKind::Lang,
            "mime" | "content_type" => FilterKind::Mime,
            "intitle" => FilterKind::InTitle,
            "inurl" => FilterKind::InUrl,
            "filetype" => FilterKind::FileType,
            "size" => FilterKind::Size,
            "similar" => FilterKind::Similar,
            _ => return None,
        })
    }
}

/// Characters that end a word wherever they appear.
fn ends_word(c: char) -> bool {
    c.is_whitespace() || matches!(c, '(' | ')' | '"' | '|')
}

struct Lexer<'a> {
    text: &'a str,
    pos: usize,
}

impl<'a> Lexer<'a> {
    fn tokens(mut self) -> Result<Vec<Token>, QueryError> {
        let mut tokens = Vec::new();
        while let Some(token) = self.next_token()? {
            tokens.push(token);
        }
        Ok(tokens)
    }

    fn rest(&self) -> &'a str {
        &self.text[self.pos..]
    }

    fn next_token(&mut self) -> Result<Option<Token>, QueryError> {
        loop {
            let rest = self.rest();
            let trimmed = rest.trim_start();
            self.pos += rest.len() - trimmed.len();
            let start = self.pos;
            let Some(c) = trimmed.chars().next() else {
                return Ok(None);
            };
            let simple = |tok, len: usize| Token {
                tok,
                span: start..start + len,
            };
            let token = match c {
                '(' => simple(Tok::LParen, 1),
                ')' => simple(Tok::RParen, 1),
                '|' => {
                    let len = trimmed.len() - trimmed.trim_start_matches('|').len();
                    simple(Tok::Or, len)
                }
                '"' => {
                    let (text, end) = self.phrase(start)?;
                    Token {
                        tok: Tok::Phrase(text),
                        span: start..end,
                    }
                }
                '-' => {
                    let after_dashes = trimmed.trim_start_matches('-');
                    let dashes = trimmed.len() - after_dashes.len();
                    match after_dashes.chars().next() {
                        Some(next) if !next.is_whitespace() => simple(Tok::Minus, 1),
                        // Dashes between spaces are punctuation (`Artist - Title`, `a -- b`)...
                        Some(_) if !after_dashes.trim().is_empty() => {
                            self.pos += dashes;
                            continue;
                        }
                        // ...but at the very end they were meant to negate something.
                        _ => {
                            let last = start + dashes - 1;
                            return Err(error_at(
                                self.text,
                                last..last + 1,
                                "'-' needs something after it",
                            ));
                        }
                    }
                }
                _ => self.word(start)?,
            };
            self.pos = token.span.end;
            return Ok(Some(token));
        }
    }

    /// Reads a quoted phrase opening at `quote`: its trimmed text and the end of the closing
    /// quote.
    fn phrase(&self, quote: usize) -> Result<(String, usize), QueryError> {
        let Some(length) = self.text[quote + 1..].find('"') else {
            return Err(error_at(self.text, quote..quote + 1, "unbalanced quote"));
        };
        let close = quote + 1 + length;
        let text = self.text[quote + 1..close].trim();
        if text.is_empty() {
            return Err(error_at(self.text, quote..close + 1, "empty phrase"));
        }
        Ok((text.to_string(), close + 1))
    }

    fn word(&self, start: usize) -> Result<Token, QueryError> {
        let rest = &self.text[start..];
        let end = start + rest.find(ends_word).unwrap_or(rest.len());
        let word = &self.text[start..end];
        let tok = match word {
            "OR" => Tok::Or,
            "AND" => Tok::And,
            "NOT" => Tok::Not,
            _ => {
                let filter = word
                    .split_once(':')
                    .and_then(|(name, value)| Some((name, FilterKind::from_name(name)?, value)));
                let Some((name, kind, value)) = filter else {
                    return Ok(Token {
                        tok: Tok::Word(word.to_string()),
                        span: start..end,
                    });
                };
                let name = name.to_ascii_lowercase();
                if !value.is_empty() {
                    let value_span = end - value.len()..end;
                    let filter = make_filter(self.text, kind, &name, value, false, value_span)?;
                    return Ok(Token {
                        tok: Tok::Filter(filter),
                        span: start..end,
                    });
                }
                if self.text[end..].starts_with('"') {
                    let (value, phrase_end) = self.phrase(end)?;
                    let filter =
                        make_filter(self.text, kind, &name, &value, true, end..phrase_end)?;
                    return Ok(Token {
                        tok: Tok::Filter(filter),
                        span: start..phrase_end,
                    });
                }
                return Err(error_at(
                    self.text,
                    start..end,
                    &format!("{name}: needs a value"),
                ));
            }
        };
        Ok(Token {
            tok,
            span: start..end,
        })
    }
}

// ---------------------------------------------------------------------------------------------
// Filter values

/// Builds a filter from its value; `quoted` values came from a `"..."` phrase.
fn make_filter(
    text: &str,
    kind: FilterKind,
    name: &str,
    value: &str,
    quoted: bool,
    value_span: Range<usize>,
) -> Result<Filter, QueryError> {
    let fail = |message: String| error_at(text, value_span.clone(), &message);
    let text_value = |value: &str| {
        if quoted {
            TextValue::Phrase(value.to_string())
        } else {
            TextValue::Word(value.to_string())
        }
    };
    Ok(match kind {
        FilterKind::InTitle => Filter::InTitle(text_value(value)),
        FilterKind::InUrl => Filter::InUrl(text_value(value)),
        FilterKind::Site => Filter::Site(normalize_site(value).map_err(fail)?),
        FilterKind::Lang => {
            let primary = value.split(['-', '_']).next().unwrap_or("");
            if !(2..=3).contains(&primary.len())
                || !primary.bytes().all(|b| b.is_ascii_alphabetic())
            {
                return Err(fail(format!(
                    "{name}: expects a two- or three-letter language code such as en or de-DE, \
                     got '{value}'"
                )));
            }
            Filter::Lang(primary.to_ascii_lowercase())
        }
        FilterKind::Mime => Filter::Mime(normalize_mime(value).ok_or_else(|| {
            fail(format!(
                "{name}: expects a media type such as text or text/gemini, got '{value}'"
            ))
        })?),
        FilterKind::FileType => {
            let ext = value.strip_prefix('.').unwrap_or(value);
            if !(1..=10).contains(&ext.len()) || !ext.bytes().all(|b| b.is_ascii_alphanumeric()) {
                return Err(fail(format!(
                    "{name}: expects a file extension of 1 to 10 letters or digits such as gmi, \
                     got '{value}'"
                )));
            }
            Filter::FileType(ext.to_ascii_lowercase())
        }
        FilterKind::Similar => {
            let url = crate::urlnorm::normalize(value).map_err(|e| {
                fail(format!(
                    "{name}: expects the URL of a page, got '{value}' ({e})"
                ))
            })?;
            Filter::Similar(url.to_string())
        }
        FilterKind::Size => {
            let (comparison, bytes) = parse_size(value).map_err(|problem| {
                fail(match problem {
                    SizeProblem::Malformed => format!(
                        "{name}: expects a number of bytes such as >10K, <=2M or 1.5MiB, \
                         got '{value}'"
                    ),
                    SizeProblem::TooLarge => format!("{name}: '{value}' is too large"),
                })
            })?;
            Filter::Size(comparison, bytes)
        }
    })
}

/// `site:` values: a host (any scheme and trailing slash removed, IDNA to punycode, lowercase,
/// port dropped since the index keys sites by host alone), optionally followed by `/~user` on
/// shared hosts. `*.example.org` means `example.org`, whose subdomains match anyway.
fn normalize_site(value: &str) -> Result<String, String> {
    let expected = "site: expects a host name such as example.org, optionally with /~user";
    if value.is_empty() || value.chars().any(char::is_whitespace) {
        return Err(format!("{expected}, got '{value}'"));
    }
    let mut rest = value;
    if let Some((scheme, after)) = value.split_once("://") {
        let is_scheme = !scheme.is_empty()
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
        if is_scheme {
            rest = after;
        }
    }
    let rest = rest.trim_end_matches('/');
    let (host_port, path) = match rest.find('/') {
        Some(slash) => rest.split_at(slash),
        None => (rest, ""),
    };
    let host = strip_port(host_port);
    let host = host.strip_prefix("*.").unwrap_or(host);
    if host.is_empty() {
        return Err(format!("{expected}, got '{value}'"));
    }
    let host = match Host::parse(host) {
        Ok(Host::Domain(domain)) => domain.trim_end_matches('.').to_string(),
        Ok(other) => other.to_string(),
        Err(_) => return Err(format!("site: '{host}' is not a valid host name")),
    };
    if host.is_empty() {
        return Err(format!("{expected}, got '{value}'"));
    }
    if path.is_empty() {
        return Ok(host);
    }
    let user = path.strip_prefix("/~").unwrap_or("");
    if user.is_empty() || user.contains('/') {
        return Err(format!(
            "site: takes a host name, optionally with /~user, not the path '{path}' \
             (inurl: matches words of paths)"
        ));
    }
    Ok(format!("{host}{path}"))
}

/// `example.org:1965` -> `example.org`; `[::1]:1965` -> `[::1]`.
fn strip_port(host_port: &str) -> &str {
    if host_port.starts_with('[') {
        return match host_port.find(']') {
            Some(close) => &host_port[..=close],
            None => host_port,
        };
    }
    match host_port.rsplit_once(':') {
        Some((host, port)) if port.bytes().all(|b| b.is_ascii_digit()) => host,
        _ => host_port,
    }
}

/// `text`, `text/gemini` or `text/*` (= `text`), lowercased; each part an RFC 2045 token.
fn normalize_mime(value: &str) -> Option<String> {
    let lower = value.to_ascii_lowercase();
    let lower = lower.strip_suffix("/*").unwrap_or(&lower);
    let is_token = |part: &str| {
        !part.is_empty()
            && part.bytes().all(|b| {
                b.is_ascii_alphanumeric()
                    || matches!(
                        b,
                        b'!' | b'#' | b'$' | b'&' | b'^' | b'_' | b'.' | b'+' | b'-'
                    )
            })
    };
    let mut parts = lower.split('/');
    let kind = parts.next()?;
    let subtype = parts.next();
    if parts.next().is_some() || !is_token(kind) || !subtype.into_iter().all(is_token) {
        return None;
    }
    Some(lower.to_string())
}

enum SizeProblem {
    Malformed,
    TooLarge,
}

/// `>N`, `<N`, `>=N`, `<=N`, `=N` or `N`; N a decimal number with an optional K, M or G
/// (powers of 1024) and an optional `B` or `iB`. Fractions of a byte round to the nearest byte.
fn parse_size(value: &str) -> Result<(Comparison, u64), SizeProblem> {
    let (comparison, rest) = [
        (">=", Comparison::GreaterOrEqual),
        ("<=", Comparison::LessOrEqual),
        (">", Comparison::Greater),
        ("<", Comparison::Less),
        ("=", Comparison::Equal),
    ]
    .iter()
    .find_map(|(prefix, comparison)| Some((*comparison, value.strip_prefix(prefix)?)))
    .unwrap_or((Comparison::Equal, value));
    let number_len = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(rest.len());
    let (number, suffix) = rest.split_at(number_len);
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty() || (number.contains('.') && fraction.is_empty()) || fraction.contains('.') {
        return Err(SizeProblem::Malformed);
    }
    let unit: u128 = match suffix.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        _ => return Err(SizeProblem::Malformed),
    };
    let mut bytes: u128 = 0;
    for digit in whole.bytes() {
        bytes = bytes
            .checked_mul(10)
            .and_then(|b| b.checked_add(u128::from(digit - b'0')))
            .ok_or(SizeProblem::TooLarge)?;
    }
    bytes = bytes.checked_mul(unit).ok_or(SizeProblem::TooLarge)?;
    // Digits past the 18th are worth less than a billionth of a byte (the unit is at most 2^30)
    // and are ignored, which keeps the arithmetic within u128.
    let fraction = &fraction[..fraction.len().min(18)];
    if !fraction.is_empty() {
        let scale = 10u128.pow(fraction.len() as u32);
        let numerator: u128 = fraction
            .bytes()
            .fold(0, |n, digit| n * 10 + u128::from(digit - b'0'));
        bytes = bytes
            .checked_add((numerator * unit + scale / 2) / scale)
            .ok_or(SizeProblem::TooLarge)?;
    }
    let bytes = u64::try_from(bytes).map_err(|_| SizeProblem::TooLarge)?;
    Ok((comparison, bytes))
}

// ---------------------------------------------------------------------------------------------
// Parser

/// A parsed part of the query and the text it came from.
struct Node {
    query: Query,
    span: Range<usize>,
}

struct Parser<'a> {
    text: &'a str,
    tokens: Vec<Token>,
    next: usize,
    /// Parentheses open around the current position.
    depth: usize,
    /// Words, phrases and filters read so far.
    leaves: usize,
    /// The first "cannot be executed" error, reported only if the query is otherwise
    /// well-formed (a syntax error anywhere says more).
    deferred: Option<QueryError>,
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.next)
    }

    fn peek_tok(&self) -> Option<&Tok> {
        self.peek().map(|token| &token.tok)
    }

    fn bump(&mut self) -> Option<Token> {
        let token = self.tokens.get(self.next).cloned();
        self.next += 1;
        token
    }

    fn error(&self, span: Range<usize>, message: &str) -> QueryError {
        error_at(self.text, span, message)
    }

    /// How an operator token reads in messages.
    fn operator_name(&self, token: &Token) -> String {
        match token.tok {
            Tok::Or if &self.text[token.span.clone()] == "OR" => "OR".to_string(),
            Tok::Or | Tok::Minus => format!("'{}'", &self.text[token.span.clone()]),
            Tok::And => "AND".to_string(),
            Tok::Not => "NOT".to_string(),
            _ => format!("'{}'", &self.text[token.span.clone()]),
        }
    }

    fn defer(&mut self, span: Range<usize>, message: &str) {
        if self.deferred.is_none() {
            self.deferred = Some(self.error(span, message));
        }
    }

    fn parse_or(&mut self) -> Result<Node, QueryError> {
        let mut branches = vec![self.parse_and()?];
        while let Some(Tok::Or) = self.peek_tok() {
            let Some(operator) = self.bump() else { break };
            if matches!(self.peek_tok(), None | Some(Tok::Or | Tok::RParen)) {
                let message = format!("{} needs something after it", self.operator_name(&operator));
                return Err(self.error(operator.span, &message));
            }
            branches.push(self.parse_and()?);
        }
        if branches.len() == 1 {
            return Ok(branches.remove(0));
        }
        for branch in &branches {
            if !branch.query.is_positive() {
                self.defer(
                    branch.span.clone(),
                    "each alternative of OR needs a word, phrase or filter that is not negated",
                );
            }
        }
        let span = branches[0].span.start..branches[branches.len() - 1].span.end;
        let mut parts = Vec::with_capacity(branches.len());
        for branch in branches {
            match branch.query {
                Query::Or(inner) => parts.extend(inner),
                other => parts.push(other),
            }
        }
        Ok(Node {
            query: Query::Or(parts),
            span,
        })
    }

    fn parse_and(&mut self) -> Result<Node, QueryError> {
        let mut items: Vec<Node> = Vec::new();
        while let Some(token) = self.peek() {
            match token.tok {
                Tok::Or | Tok::RParen => break,
                Tok::And => {
                    let Some(operator) = self.bump() else { break };
                    if items.is_empty() {
                        return Err(self.error(operator.span, "AND needs something before it"));
                    }
                    if !matches!(
                        self.peek_tok(),
                        Some(
                            Tok::LParen
                                | Tok::Minus
                                | Tok::Not
                                | Tok::Word(_)
                                | Tok::Phrase(_)
                                | Tok::Filter(_)
                        )
                    ) {
                        return Err(self.error(operator.span, "AND needs something after it"));
                    }
                }
                _ => items.push(self.parse_unary()?),
            }
        }
        if items.is_empty() {
            return Err(match self.peek() {
                Some(token) if token.tok == Tok::Or => {
                    let message =
                        format!("{} needs something before it", self.operator_name(token));
                    self.error(token.span.clone(), &message)
                }
                Some(token) => self.error(token.span.clone(), "unmatched ')'"),
                // Callers never start an empty sequence at the end; say so anyway, not panic.
                None => self.error(self.text.len()..self.text.len(), "unexpected end of query"),
            });
        }
        if items.len() == 1 {
            return Ok(items.remove(0));
        }
        let span = items[0].span.start..items[items.len() - 1].span.end;
        let mut parts = Vec::with_capacity(items.len());
        for item in items {
            match item.query {
                Query::And(inner) => parts.extend(inner),
                other => parts.push(other),
            }
        }
        Ok(Node {
            query: Query::And(parts),
            span,
        })
    }

    fn parse_unary(&mut self) -> Result<Node, QueryError> {
        let start = self
            .peek()
            .map_or(self.text.len(), |token| token.span.start);
        let mut negated = false;
        let mut last_operator = None;
        while let Some(Tok::Minus | Tok::Not) = self.peek_tok() {
            last_operator = self.bump();
            negated = !negated;
        }
        if let Some(operator) = &last_operator {
            if !matches!(
                self.peek_tok(),
                Some(Tok::LParen | Tok::Word(_) | Tok::Phrase(_) | Tok::Filter(_))
            ) {
                let message = format!("{} needs something after it", self.operator_name(operator));
                return Err(self.error(operator.span.clone(), &message));
            }
        }
        let node = self.parse_primary()?;
        if !negated {
            return Ok(node);
        }
        let span = start.min(node.span.start)..node.span.end;
        let query = match node.query {
            // `-(-x)` is `x`; the inner part was checked when it was negated.
            Query::Not(inner) => *inner,
            other => {
                if !other.is_positive() {
                    self.defer(
                        span.clone(),
                        "a negated group needs at least one word, phrase or filter in it \
                         that is not negated",
                    );
                }
                Query::Not(Box::new(other))
            }
        };
        Ok(Node { query, span })
    }

    fn parse_primary(&mut self) -> Result<Node, QueryError> {
        let Some(token) = self.bump() else {
            return Err(self.error(self.text.len()..self.text.len(), "unexpected end of query"));
        };
        let span = token.span.clone();
        let query = match token.tok {
            Tok::LParen => return self.parse_group(span),
            Tok::Word(text) => Query::Term { text, span },
            Tok::Phrase(text) => Query::Phrase { text, span },
            Tok::Filter(filter) => Query::Filter { filter, span },
            // Callers only get here when a primary starts; fail cleanly rather than panic.
            _ => return Err(self.error(span, "expected a word, phrase, filter or '('")),
        };
        self.leaves += 1;
        if self.leaves > MAX_TERMS {
            return Err(self.error(
                token.span,
                &format!("too many words, phrases and filters: at most {MAX_TERMS}"),
            ));
        }
        Ok(Node {
            query,
            span: token.span,
        })
    }

    /// The rest of a group after its `(`.
    fn parse_group(&mut self, open: Range<usize>) -> Result<Node, QueryError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.error(
                open,
                &format!("parentheses nested too deeply: at most {MAX_DEPTH} levels"),
            ));
        }
        match self.peek() {
            None => return Err(self.error(open, "unmatched '('")),
            Some(token) if token.tok == Tok::RParen => {
                let span = open.start..token.span.end;
                return Err(self.error(span, "empty parentheses"));
            }
            Some(_) => {}
        }
        let inner = self.parse_or()?;
        match self.bump() {
            Some(close) if close.tok == Tok::RParen => {
                self.depth -= 1;
                Ok(Node {
                    query: inner.query,
                    span: open.start..close.span.end,
                })
            }
            _ => Err(self.error(open, "unmatched '('")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A compact rendering without spans: `(and a b)`, `(or a b)`, `-x`, `"a phrase"`,
    /// `site:example.org`, `size:>=1024`, `intitle:"a b"`.
    fn render(query: &Query) -> String {
        let list = |name: &str, parts: &[Query]| {
            let parts: Vec<String> = parts.iter().map(render).collect();
            format!("({name} {})", parts.join(" "))
        };
        match query {
            Query::Term { text, .. } => text.clone(),
            Query::Phrase { text, .. } => format!("\"{text}\""),
            Query::Not(inner) => format!("-{}", render(inner)),
            Query::And(parts) => list("and", parts),
            Query::Or(parts) => list("or", parts),
            Query::Filter { filter, .. } => match filter {
                Filter::Site(v) => format!("site:{v}"),
                Filter::Lang(v) => format!("lang:{v}"),
                Filter::Mime(v) => format!("mime:{v}"),
                Filter::FileType(v) => format!("filetype:{v}"),
                Filter::Similar(v) => format!("similar:{v}"),
                Filter::InTitle(TextValue::Word(v)) => format!("intitle:{v}"),
                Filter::InTitle(TextValue::Phrase(v)) => format!("intitle:\"{v}\""),
                Filter::InUrl(TextValue::Word(v)) => format!("inurl:{v}"),
                Filter::InUrl(TextValue::Phrase(v)) => format!("inurl:\"{v}\""),
                Filter::Size(comparison, bytes) => {
                    let op = match comparison {
                        Comparison::Less => "<",
                        Comparison::LessOrEqual => "<=",
                        Comparison::Equal => "=",
                        Comparison::GreaterOrEqual => ">=",
                        Comparison::Greater => ">",
                    };
                    format!("size:{op}{bytes}")
                }
            },
        }
    }

    fn check_ok(cases: &[(&str, &str)]) {
        for (input, expected) in cases {
            match parse(input) {
                Ok(query) => assert_eq!(render(&query), *expected, "query {input:?}"),
                Err(e) => panic!("query {input:?} failed: {e} at {:?}", e.span),
            }
        }
    }

    fn check_err(cases: &[(&str, &str, Range<usize>)]) {
        for (input, message, span) in cases {
            match parse(input) {
                Ok(query) => panic!("query {input:?} parsed as {}", render(&query)),
                Err(e) => {
                    assert!(
                        e.message.contains(message),
                        "query {input:?}: message {:?} lacks {message:?}",
                        e.message
                    );
                    assert_eq!(e.span, *span, "query {input:?}: span of {:?}", e.message);
                }
            }
        }
    }

    #[test]
    fn words_phrases_and_operators() {
        check_ok(&[
            ("foo", "foo"),
            ("  foo  ", "foo"),
            ("foo bar", "(and foo bar)"),
            ("foo AND bar", "(and foo bar)"),
            ("foo OR bar", "(or foo bar)"),
            ("foo | bar", "(or foo bar)"),
            ("foo|bar", "(or foo bar)"),
            ("foo || bar", "(or foo bar)"),
            ("a OR b OR c", "(or a b c)"),
            ("foo or bar", "(and foo or bar)"),
            ("foo Or and bar", "(and foo Or and bar)"),
            ("not foo", "(and not foo)"),
            ("a b OR c", "(or (and a b) c)"),
            ("a (b OR c)", "(and a (or b c))"),
            ("a AND (b OR c) d", "(and a (or b c) d)"),
            ("\"exact phrase\"", "\"exact phrase\""),
            ("\"  padded words \"", "\"padded words\""),
            ("\"OR\" \"-x\"", "(and \"OR\" \"-x\")"),
            ("foo\"bar baz\"qux", "(and foo \"bar baz\" qux)"),
            ("e-mail", "e-mail"),
            ("foo-", "foo-"),
            ("Artist - Title", "(and Artist Title)"),
            ("before -- after", "(and before after)"),
            ("- foo", "foo"),
            ("(a)b", "(and a b)"),
            ("日本語 検索", "(and 日本語 検索)"),
        ]);
    }

    #[test]
    fn negation() {
        check_ok(&[
            ("foo -bar", "(and foo -bar)"),
            ("foo NOT bar", "(and foo -bar)"),
            ("-bar foo", "(and -bar foo)"),
            ("foo --bar", "(and foo bar)"),
            ("foo NOT -bar", "(and foo bar)"),
            ("foo ---bar", "(and foo -bar)"),
            ("foo -(-bar)", "(and foo bar)"),
            ("foo -\"bar baz\"", "(and foo -\"bar baz\")"),
            ("foo -(a OR b)", "(and foo -(or a b))"),
            ("NOT (a OR b) c", "(and -(or a b) c)"),
            ("-(a -b) c", "(and -(and a -b) c)"),
            ("-site:example.org foo", "(and -site:example.org foo)"),
            ("foo -e-mail", "(and foo -e-mail)"),
            ("a OR b -c", "(or a (and b -c))"),
        ]);
    }

    #[test]
    fn simplification() {
        check_ok(&[
            ("((a))", "a"),
            ("(a b) c", "(and a b c)"),
            ("a (b (c d))", "(and a b c d)"),
            ("(a OR b) OR c", "(or a b c)"),
            ("(a OR b) c", "(and (or a b) c)"),
            ("(a b) OR (c d)", "(or (and a b) (and c d))"),
        ]);
    }

    #[test]
    fn words_with_colons_that_are_not_filters() {
        check_ok(&[
            ("gemini://example.org/", "gemini://example.org/"),
            ("c:", "c:"),
            ("12:30", "12:30"),
            (":", ":"),
            ("foo:bar baz", "(and foo:bar baz)"),
            ("https://example.org/a?b=c", "https://example.org/a?b=c"),
        ]);
    }

    #[test]
    fn site_filter() {
        check_ok(&[
            ("site:example.org", "site:example.org"),
            ("SITE:Example.ORG", "site:example.org"),
            ("site:gemini://Example.org/", "site:example.org"),
            ("site:https://example.org", "site:example.org"),
            ("site:example.org/", "site:example.org"),
            ("site:example.org.", "site:example.org"),
            ("site:example.org/~Alice/", "site:example.org/~Alice"),
            ("site:gemini://example.org/~bob", "site:example.org/~bob"),
            ("site:example.org:1965", "site:example.org"),
            ("site:*.example.org", "site:example.org"),
            ("site:café.example", "site:xn--caf-dma.example"),
            ("site:[::1]:1965", "site:[::1]"),
            ("site:127.0.0.1", "site:127.0.0.1"),
            ("site:\"example.org\"", "site:example.org"),
            ("site:org", "site:org"),
            (
                "cats site:a.org OR site:b.org",
                "(or (and cats site:a.org) site:b.org)",
            ),
            (
                "cats (site:a.org OR site:b.org)",
                "(and cats (or site:a.org site:b.org))",
            ),
        ]);
    }

    #[test]
    fn other_filters() {
        check_ok(&[
            ("lang:en", "lang:en"),
            ("lang:en-US", "lang:en"),
            ("LANG:DE", "lang:de"),
            ("lang:pt_BR", "lang:pt"),
            ("lang:fil", "lang:fil"),
            ("mime:text/gemini", "mime:text/gemini"),
            ("MIME:Text/Gemini", "mime:text/gemini"),
            ("content_type:text", "mime:text"),
            ("Content_Type:text/plain", "mime:text/plain"),
            ("mime:text/*", "mime:text"),
            (
                "mime:application/vnd.api+json",
                "mime:application/vnd.api+json",
            ),
            ("filetype:gmi", "filetype:gmi"),
            ("filetype:.GMI", "filetype:gmi"),
            ("filetype:mp3", "filetype:mp3"),
            ("intitle:gemini", "intitle:gemini"),
            ("InTitle:\"space probe\"", "intitle:\"space probe\""),
            ("inurl:gemlog", "inurl:gemlog"),
            ("inurl:\"2024 notes\"", "inurl:\"2024 notes\""),
            ("intitle:a:b", "intitle:a:b"),
            ("intitle:OR", "intitle:OR"),
        ]);
    }

    #[test]
    fn size_filter() {
        check_ok(&[
            ("size:>10K", "size:>10240"),
            ("size:<2M", "size:<2097152"),
            ("size:>=1.5K", "size:>=1536"),
            ("size:<=1G", "size:<=1073741824"),
            ("size:=5", "size:=5"),
            ("size:100", "size:=100"),
            ("size:0", "size:=0"),
            ("size:10KB", "size:=10240"),
            ("size:10kb", "size:=10240"),
            ("size:2MiB", "size:=2097152"),
            ("size:<3gib", "size:<3221225472"),
            ("size:512B", "size:=512"),
            ("size:1.5", "size:=2"),
            ("size:1.0004K", "size:=1024"),
            ("size:0.5M", "size:=524288"),
            ("size:18446744073709551615", "size:=18446744073709551615"),
            ("size:>00010", "size:>10"),
        ]);
    }

    #[test]
    fn spans_of_parts() {
        let query = parse("foo \"a b\" site:x.org intitle:\"t w\"").expect("valid query");
        assert_eq!(
            query,
            Query::And(vec![
                Query::Term {
                    text: "foo".into(),
                    span: 0..3
                },
                Query::Phrase {
                    text: "a b".into(),
                    span: 4..9
                },
                Query::Filter {
                    filter: Filter::Site("x.org".into()),
                    span: 10..20
                },
                Query::Filter {
                    filter: Filter::InTitle(TextValue::Phrase("t w".into())),
                    span: 21..34
                },
            ])
        );
    }

    #[test]
    fn syntax_errors() {
        check_err(&[
            ("", "empty query", 0..0),
            ("   ", "empty query", 0..3),
            ("foo \"bar", "unbalanced quote", 4..5),
            ("\"a\" \"b", "unbalanced quote", 4..5),
            ("\"\"", "empty phrase", 0..2),
            ("foo \"  \"", "empty phrase", 4..8),
            ("intitle:\"\"", "empty phrase", 8..10),
            ("intitle:\"abc", "unbalanced quote", 8..9),
            ("(foo", "unmatched '('", 0..1),
            ("a (b (c)", "unmatched '('", 2..3),
            ("foo)", "unmatched ')'", 3..4),
            (")", "unmatched ')'", 0..1),
            (") foo", "unmatched ')'", 0..1),
            ("(a) b)", "unmatched ')'", 5..6),
            ("()", "empty parentheses", 0..2),
            ("a ( ) b", "empty parentheses", 2..5),
            ("foo OR", "OR needs something after it", 4..6),
            ("OR foo", "OR needs something before it", 0..2),
            ("foo OR OR bar", "OR needs something after it", 4..6),
            ("(a OR)", "OR needs something after it", 3..5),
            ("(OR a)", "OR needs something before it", 1..3),
            ("| foo", "'|' needs something before it", 0..1),
            ("foo ||", "'||' needs something after it", 4..6),
            ("foo AND", "AND needs something after it", 4..7),
            ("AND foo", "AND needs something before it", 0..3),
            ("(AND foo)", "AND needs something before it", 1..4),
            ("a AND OR b", "AND needs something after it", 2..5),
            ("a AND AND b", "AND needs something after it", 2..5),
            ("foo NOT", "NOT needs something after it", 4..7),
            ("foo NOT OR bar", "NOT needs something after it", 4..7),
            ("NOT", "NOT needs something after it", 0..3),
            ("foo -", "'-' needs something after it", 4..5),
            ("-", "'-' needs something after it", 0..1),
            ("(foo -)", "'-' needs something after it", 5..6),
            ("foo --", "'-' needs something after it", 5..6),
            ("foo - ", "'-' needs something after it", 4..5),
        ]);
    }

    #[test]
    fn filter_value_errors() {
        check_err(&[
            ("site:", "site: needs a value", 0..5),
            ("foo SITE: bar", "site: needs a value", 4..9),
            ("(lang:)", "lang: needs a value", 1..6),
            ("content_type:", "content_type: needs a value", 0..13),
            ("site:gemini://", "site: expects a host name", 5..14),
            ("site:/~alice", "site: expects a host name", 5..12),
            ("site:\"example org\"", "site: expects a host name", 5..18),
            ("site:example.org/docs/", "not the path '/docs'", 5..22),
            ("site:example.org/~a/b", "not the path '/~a/b'", 5..21),
            ("site:exa<mple.org", "is not a valid host name", 5..17),
            (
                "lang:english",
                "lang: expects a two- or three-letter language code",
                5..12,
            ),
            ("lang:e", "got 'e'", 5..6),
            ("lang:e1", "language code", 5..7),
            ("lang:-en", "language code", 5..8),
            ("mime:text/gemini/x", "mime: expects a media type", 5..18),
            ("mime:\"text gemini\"", "mime: expects a media type", 5..18),
            ("mime:/gemini", "media type", 5..12),
            ("mime:text/", "media type", 5..10),
            ("mime:text/gemini;charset=utf-8", "media type", 5..30),
            (
                "filetype:foo!bar",
                "filetype: expects a file extension",
                9..16,
            ),
            ("filetype:abcdefghijk", "file extension", 9..20),
            ("filetype:.", "file extension", 9..10),
            ("size:big", "size: expects a number of bytes", 5..8),
            ("size:>", "number of bytes", 5..6),
            ("size:10X", "number of bytes", 5..8),
            ("size:10KK", "number of bytes", 5..9),
            ("size:1.2.3", "number of bytes", 5..10),
            ("size:1.", "number of bytes", 5..7),
            ("size:.5", "number of bytes", 5..7),
            ("size:>-5", "number of bytes", 5..8),
            ("size:><5", "number of bytes", 5..8),
            ("size:18446744073709551616", "is too large", 5..25),
            ("size:16777216T", "number of bytes", 5..14),
            ("size:17179869184G", "is too large", 5..17),
            (
                "size:999999999999999999999999999999999999999999K",
                "too large",
                5..48,
            ),
        ]);
    }

    #[test]
    fn queries_that_cannot_match_alone() {
        let needs = "a query needs at least one word, phrase or filter that is not negated";
        check_err(&[
            ("-foo", needs, 0..4),
            (" -foo ", needs, 1..5),
            ("NOT a NOT b", needs, 0..11),
            ("-site:example.org", needs, 0..17),
            ("-(a b)", needs, 0..6),
            ("(-a -b)", needs, 0..7),
            ("-(-a -b)", needs, 0..8),
            ("-a OR -b", needs, 0..8),
            ("a OR -b", "each alternative of OR needs", 5..7),
            ("(-a -b) OR c", "each alternative of OR needs", 0..7),
            ("x (a OR NOT b)", "each alternative of OR needs", 8..13),
            ("x -(-a -b)", "a negated group needs at least one", 2..10),
        ]);
        // A syntax error anywhere is reported before a query that cannot match.
        check_err(&[("a OR -b (c", "unmatched '('", 8..9)]);
        // Filters alone are a positive query.
        check_ok(&[
            ("site:example.org", "site:example.org"),
            (
                "lang:en -site:example.org",
                "(and lang:en -site:example.org)",
            ),
        ]);
    }

    #[test]
    fn limits() {
        let long = "a ".repeat(600);
        check_err(&[(
            &long,
            "query is too long: 1200 bytes, at most 1024",
            1024..1200,
        )]);
        // The span starts on a character boundary even when byte 1024 falls inside one.
        let accented = format!("a{}", "é".repeat(600));
        let error = parse(&accented).expect_err("too long");
        assert_eq!(error.span, 1023..accented.len());
        assert!(parse(&"a".repeat(MAX_QUERY_BYTES)).is_ok());

        let words = |n: usize| {
            (0..n)
                .map(|i| format!("w{i}"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        assert!(parse(&words(MAX_TERMS)).is_ok());
        let too_many = words(MAX_TERMS + 1);
        let last = too_many.rfind(' ').expect("has spaces") + 1;
        check_err(&[(
            &too_many,
            "too many words, phrases and filters: at most 64",
            last..too_many.len(),
        )]);
        // Filters and phrases count too.
        let mixed = format!("{} \"x y\" site:a.org", words(MAX_TERMS - 1));
        let start = mixed.rfind(' ').expect("has spaces") + 1;
        check_err(&[(&mixed, "too many", start..mixed.len())]);

        let nested = |n: usize| format!("{}a{}", "(".repeat(n), ")".repeat(n));
        assert_eq!(
            parse(&nested(MAX_DEPTH)).map(|q| render(&q)),
            Ok("a".to_string())
        );
        check_err(&[(
            &nested(MAX_DEPTH + 1),
            "parentheses nested too deeply: at most 16",
            16..17,
        )]);
        // Siblings do not add up: depth is nesting, not the number of groups.
        let siblings = format!("{} x", "(a) ".repeat(30));
        assert!(parse(&siblings).is_ok());
        // Long chains of negation are a loop, not recursion.
        let negations = format!("x {}y", "-".repeat(1000));
        assert_eq!(
            parse(&negations).map(|q| render(&q)),
            Ok("(and x y)".to_string())
        );
    }

    #[test]
    fn messages_name_the_column_in_characters() {
        let error = parse("foo \"bar").expect_err("unbalanced");
        assert_eq!(error.to_string(), "unbalanced quote at column 5");
        let error = parse("café \"bar").expect_err("unbalanced");
        assert_eq!(error.message, "unbalanced quote at column 6");
        // Whole-query problems have no column.
        assert_eq!(parse("").expect_err("empty").message, "empty query");
    }

    #[test]
    fn caret_line_points_at_the_span() {
        let cases: &[(&str, Range<usize>, &str)] = &[
            ("foo \"bar", 4..5, "foo \"bar\n    ^"),
            ("a ( ) b", 2..5, "a ( ) b\n  ^^^"),
            ("café \"x", 6..7, "café \"x\n     ^"),
            ("日本 (", 7..8, "日本 (\n   ^"),
            ("a\tb)", 3..4, "a b)\n   ^"),
            ("", 0..0, "\n^"),
            ("abc", 3..3, "abc\n   ^"),
            ("abc", 100..200, "abc\n   ^"),
            ("é", 1..2, "é\n^"),
        ];
        for (query, span, expected) in cases {
            let error = QueryError {
                message: "x".into(),
                span: span.clone(),
            };
            assert_eq!(
                error.caret_line(query),
                *expected,
                "query {query:?} span {span:?}"
            );
        }
        let query = "café (tea";
        let error = parse(query).expect_err("unmatched");
        assert_eq!(error.caret_line(query), "café (tea\n     ^");
    }

    #[test]
    fn highlight_words_skip_negated_parts() {
        let query = parse(
            "foo \"bar baz\" -qux intitle:\"t w\" inurl:u site:x.org size:>1K (a OR c) -(d e) NOT f",
        )
        .expect("valid query");
        assert_eq!(
            query.highlight_words(),
            vec!["foo", "bar baz", "t w", "u", "a", "c"]
        );
        assert_eq!(
            parse("x --y").expect("valid").highlight_words(),
            vec!["x", "y"]
        );
        assert!(parse("site:x.org")
            .expect("valid")
            .highlight_words()
            .is_empty());
    }

    /// xorshift64*: deterministic, good enough to shuffle fragments.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }

        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
    }

    /// Checks what every accepted query promises: no single-child or directly nested groups,
    /// no double negation, nothing empty, and something positive in every alternative.
    fn check_shape(query: &Query, input: &str) {
        match query {
            Query::Term { text, span } | Query::Phrase { text, span } => {
                assert!(!text.is_empty(), "{input:?}");
                assert!(input.get(span.clone()).is_some(), "{input:?} span {span:?}");
            }
            Query::Filter { span, .. } => {
                assert!(input.get(span.clone()).is_some(), "{input:?} span {span:?}")
            }
            Query::Not(inner) => {
                assert!(!matches!(**inner, Query::Not(_)), "{input:?}");
                assert!(inner.is_positive(), "{input:?}");
                check_shape(inner, input);
            }
            Query::And(parts) | Query::Or(parts) => {
                assert!(parts.len() >= 2, "{input:?}");
                assert!(query.is_positive(), "{input:?}");
                for part in parts {
                    assert!(
                        std::mem::discriminant(part) != std::mem::discriminant(query),
                        "{input:?} nests a group in its own kind"
                    );
                    check_shape(part, input);
                }
            }
        }
    }

    #[test]
    fn random_queries_never_panic() {
        const PIECES: &[&str] = &[
            "(",
            ")",
            ":",
            "-",
            "|",
            " ",
            " ",
            " ",
            "a",
            "b",
            "O",
            "R",
            "N",
            "T",
            "\"",
            "OR",
            "NOT",
            "AND",
            "site:",
            "size:",
            "lang:",
            "intitle:",
            "inurl:",
            "mime:",
            "filetype:",
            ">",
            "<",
            "=",
            "1",
            ".",
            "K",
            "/",
            "~",
            "é",
            "日",
            "\t",
            "en",
            "x.org",
        ];
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let (mut accepted, mut rejected) = (0, 0);
        for _ in 0..5000 {
            let pieces = rng.below(24);
            let input: String = (0..pieces)
                .map(|_| PIECES[rng.below(PIECES.len())])
                .collect();
            match parse(&input) {
                Ok(query) => {
                    accepted += 1;
                    assert!(query.is_positive(), "{input:?}");
                    check_shape(&query, &input);
                    let _ = query.highlight_words();
                }
                Err(error) => {
                    rejected += 1;
                    assert!(error.span.start <= error.span.end, "{input:?}");
                    assert!(
                        input.get(error.span.clone()).is_some(),
                        "{input:?} {error:?}"
                    );
                    // The parser's fallbacks for impossible token orders are never reached.
                    assert!(
                        !error.message.starts_with("unexpected end")
                            && !error.message.starts_with("expected a word"),
                        "{input:?}: {}",
                        error.message
                    );
                    let caret = error.caret_line(&input);
                    let (shown, marks) = caret.split_once('\n').expect("two lines");
                    assert!(!shown.contains('\n') && !marks.contains('\n'), "{input:?}");
                    assert!(marks.trim_start_matches(' ').chars().all(|c| c == '^'));
                    assert!(marks.ends_with('^'), "{input:?}");
                }
            }
        }
        // The alphabet must exercise both outcomes, or the test proves little.
        assert!(
            accepted > 500 && rejected > 500,
            "{accepted} accepted, {rejected} rejected"
        );
    }
}
