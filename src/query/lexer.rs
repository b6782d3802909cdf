//! The query lexer: the text a person typed into tokens (words, phrases, filters, operators and
//! parentheses), each with the byte span it came from. A word is cut at white space, quotes and
//! parentheses; `NAME:` starts a filter only when NAME is a known filter name.

use std::ops::Range;

use super::filters::{make_filter, FilterKind};
use super::{error_at, Filter, QueryError};

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Tok {
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
pub(super) struct Token {
    pub(super) tok: Tok,
    pub(super) span: Range<usize>,
}

/// Characters that end a word wherever they appear.
fn ends_word(c: char) -> bool {
    c.is_whitespace() || matches!(c, '(' | ')' | '"' | '|')
}

pub(super) struct Lexer<'a> {
    pub(super) text: &'a str,
    pub(super) pos: usize,
}

impl<'a> Lexer<'a> {
    pub(super) fn tokens(mut self) -> Result<Vec<Token>, QueryError> {
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
