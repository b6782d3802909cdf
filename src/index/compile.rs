//! From a parsed [`query::Query`](crate::query::Query) to a Tantivy query over geode's schema.
//!
//! - A word must match in one of the text fields (title, headings, link labels, body, each with
//!   its boost: title, headings, anchors, own link labels, body) or, by stem, in the `stem` field in any language with a stemmer. A word the
//!   analyzer splits into several tokens (`e-mail`, a CJK word cut into bigrams) is a phrase.
//! - A quoted phrase matches those tokens in a row, exactly (no stems), in one text field.
//! - Filters restrict without scoring (`ConstScoreQuery` at 0), except `intitle:`, which is
//!   topical and scores like a title word. `inurl:` matches the URL's words, constant score.
//! - `-x`/`NOT x` inside an AND is a must-not clause; anywhere else it is "all documents
//!   except x".
//!
//! A word with no searchable token (`---`) constrains nothing and is dropped; a query left with
//! nothing to match is a query error.
//!
//! Not here: parsing (`crate::query`), ranking and snippets (`search`).

use std::ops::Bound;

use tantivy::query::{
    AllQuery, BooleanQuery, BoostQuery, ConstScoreQuery, Occur, PhraseQuery, Query as TQuery,
    RangeQuery, TermQuery,
};
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::Term;

use super::analysis;
use super::Fields;
use crate::query::{Comparison, Filter, Query, TextValue};

/// Per-field boosts: a word in the title says more about a page than one in its body, and the
/// labels of links pointing at a page say what others think it is. The labels of a page's own
/// links say more about the pages they lead to than about it.
pub(crate) const BOOST_TITLE: f32 = 3.0;
pub(crate) const BOOST_HEADINGS: f32 = 2.0;
pub(crate) const BOOST_ANCHORS: f32 = 1.5;
pub(crate) const BOOST_LINK_LABELS: f32 = 0.5;
pub(crate) const BOOST_BODY: f32 = 1.0;
/// Words of the URL count a little for plain words (`gemlog`, a capsule's name).
pub(crate) const BOOST_URL: f32 = 0.5;
/// A match by stem only (`runs` for `running`) is worth less than the exact form; an exact
/// match scores in both its text field and `stem`.
pub(crate) const BOOST_STEM: f32 = 0.6;

/// Why a query compiled to nothing.
#[derive(Debug)]
pub(crate) struct NothingToSearch;

/// Compiles `query` for `fields`.
pub(crate) fn compile(query: &Query, fields: &Fields) -> Result<Box<dyn TQuery>, NothingToSearch> {
    Compiler { fields }.node(query).ok_or(NothingToSearch)
}

struct Compiler<'a> {
    fields: &'a Fields,
}

impl Compiler<'_> {
    /// `None` when the node constrains nothing (a word without searchable tokens).
    fn node(&self, query: &Query) -> Option<Box<dyn TQuery>> {
        match query {
            Query::Term { text, .. } => self.word(text),
            Query::Phrase { text, .. } => self.phrase(text, &self.text_fields()),
            Query::Filter { filter, .. } => self.filter(filter),
            Query::Not(inner) => {
                let inner = self.node(inner)?;
                Some(Box::new(BooleanQuery::new(vec![
                    (Occur::Must, zero_score(Box::new(AllQuery))),
                    (Occur::MustNot, inner),
                ])))
            }
            Query::And(parts) => {
                let mut clauses = Vec::with_capacity(parts.len());
                for part in parts {
                    match part {
                        Query::Not(inner) => {
                            if let Some(q) = self.node(inner) {
                                clauses.push((Occur::MustNot, q));
                            }
                        }
                        _ => {
                            if let Some(q) = self.node(part) {
                                clauses.push((Occur::Must, q));
                            }
                        }
                    }
                }
                if !clauses.iter().any(|(occur, _)| *occur == Occur::Must) {
                    // Only exclusions survived (their positive parts had no tokens).
                    return None;
                }
                Some(Box::new(BooleanQuery::new(clauses)))
            }
            Query::Or(parts) => {
                let clauses: Vec<_> = parts
                    .iter()
                    .filter_map(|p| self.node(p))
                    .map(|q| (Occur::Should, q))
                    .collect();
                (!clauses.is_empty()).then(|| Box::new(BooleanQuery::new(clauses)) as _)
            }
        }
    }

    /// The searchable text fields with their boosts.
    fn text_fields(&self) -> [(Field, f32); 5] {
        let f = self.fields;
        [
            (f.title, BOOST_TITLE),
            (f.headings, BOOST_HEADINGS),
            (f.anchors, BOOST_ANCHORS),
            (f.link_labels, BOOST_LINK_LABELS),
            (f.body, BOOST_BODY),
        ]
    }

    /// A bare word: exact in any text field (or the URL), or by stem.
    fn word(&self, text: &str) -> Option<Box<dyn TQuery>> {
        let tokens = analysis::query_tokens(text);
        match tokens.as_slice() {
            [] => None,
            [(_, token)] => {
                let mut clauses: Vec<(Occur, Box<dyn TQuery>)> = Vec::new();
                for (field, boost) in self.text_fields() {
                    clauses.push((Occur::Should, boosted(term(field, token), boost)));
                }
                clauses.push((
                    Occur::Should,
                    boosted(term(self.fields.url_text, token), BOOST_URL),
                ));
                for stem in analysis::stem_query_word(&text.to_lowercase()) {
                    clauses.push((
                        Occur::Should,
                        boosted(term(self.fields.stem, &stem), BOOST_STEM),
                    ));
                }
                Some(Box::new(BooleanQuery::new(clauses)))
            }
            _ => self.phrase(text, &self.text_fields()),
        }
    }

    /// Tokens of `text` in a row in one of `fields`. A single token is a plain term query.
    fn phrase(&self, text: &str, fields: &[(Field, f32)]) -> Option<Box<dyn TQuery>> {
        let tokens = analysis::query_tokens(text);
        if tokens.is_empty() {
            return None;
        }
        let clauses: Vec<(Occur, Box<dyn TQuery>)> = fields
            .iter()
            .map(|&(field, boost)| {
                let q: Box<dyn TQuery> = if let [(_, token)] = tokens.as_slice() {
                    term(field, token)
                } else {
                    Box::new(PhraseQuery::new_with_offset(
                        tokens
                            .iter()
                            .map(|(pos, t)| (*pos, Term::from_field_text(field, t)))
                            .collect(),
                    ))
                };
                (Occur::Should, boosted(q, boost))
            })
            .collect();
        Some(Box::new(BooleanQuery::new(clauses)))
    }

    fn filter(&self, filter: &Filter) -> Option<Box<dyn TQuery>> {
        let f = self.fields;
        let exact = |field: Field, value: &str| -> Option<Box<dyn TQuery>> {
            Some(zero_score(Box::new(TermQuery::new(
                Term::from_field_text(field, value),
                IndexRecordOption::Basic,
            ))))
        };
        match filter {
            Filter::Site(site) => exact(f.site, site),
            Filter::Lang(lang) => exact(f.lang, lang),
            Filter::Mime(mime) => exact(f.mime, mime),
            Filter::FileType(ext) => exact(f.ext, ext),
            Filter::InTitle(value) => {
                let text = text_of(value);
                self.phrase(text, &[(f.title, BOOST_TITLE)])
            }
            Filter::InUrl(value) => {
                let text = text_of(value);
                // A URL fragment with no word in it (`inurl:/`) matches every URL.
                Some(
                    self.phrase(text, &[(f.url_text, 1.0)])
                        .map_or_else(|| zero_score(Box::new(AllQuery)), zero_score),
                )
            }
            Filter::Size(cmp, n) => {
                let at = |v: u64| Term::from_field_u64(f.size, v);
                let (lower, upper) = match cmp {
                    Comparison::Less => (Bound::Unbounded, Bound::Excluded(at(*n))),
                    Comparison::LessOrEqual => (Bound::Unbounded, Bound::Included(at(*n))),
                    Comparison::Equal => (Bound::Included(at(*n)), Bound::Included(at(*n))),
                    Comparison::GreaterOrEqual => (Bound::Included(at(*n)), Bound::Unbounded),
                    Comparison::Greater => (Bound::Excluded(at(*n)), Bound::Unbounded),
                };
                Some(zero_score(Box::new(RangeQuery::new(lower, upper))))
            }
        }
    }
}

fn text_of(value: &TextValue) -> &str {
    match value {
        TextValue::Word(text) | TextValue::Phrase(text) => text,
    }
}

fn term(field: Field, token: &str) -> Box<dyn TQuery> {
    Box::new(TermQuery::new(
        Term::from_field_text(field, token),
        IndexRecordOption::WithFreqs,
    ))
}

fn boosted(query: Box<dyn TQuery>, boost: f32) -> Box<dyn TQuery> {
    if boost == 1.0 {
        query
    } else {
        Box::new(BoostQuery::new(query, boost))
    }
}

/// A restriction that must not change scores.
fn zero_score(query: Box<dyn TQuery>) -> Box<dyn TQuery> {
    Box::new(ConstScoreQuery::new(query, 0.0))
}
