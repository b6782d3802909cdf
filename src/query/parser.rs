//! The recursive-descent parser: tokens into a simplified [`Query`] tree (nested `AND`s and
//! `OR`s flattened, double negations removed), bounded by [`MAX_TERMS`] leaves and
//! [`MAX_DEPTH`] levels of parentheses. Parts that could not run on their own (an alternative
//! made only of exclusions) are reported once the whole query is known to be well-formed.

use std::ops::Range;

use super::lexer::{Tok, Token};
use super::{error_at, Query, QueryError, MAX_DEPTH, MAX_TERMS};

/// A parsed part of the query and the text it came from.
pub(super) struct Node {
    pub(super) query: Query,
    pub(super) span: Range<usize>,
}

pub(super) struct Parser<'a> {
    pub(super) text: &'a str,
    pub(super) tokens: Vec<Token>,
    pub(super) next: usize,
    /// Parentheses open around the current position.
    pub(super) depth: usize,
    /// Words, phrases and filters read so far.
    pub(super) leaves: usize,
    /// The first "cannot be executed" error, reported only if the query is otherwise
    /// well-formed (a syntax error anywhere says more).
    pub(super) deferred: Option<QueryError>,
}

impl Parser<'_> {
    pub(super) fn peek(&self) -> Option<&Token> {
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

    pub(super) fn parse_or(&mut self) -> Result<Node, QueryError> {
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
