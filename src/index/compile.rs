//! From a parsed [`query::Query`](crate::query::Query) to a Tantivy query over geode's schema.
//!
//! - A word must match in one of the text fields (title, headings, link labels, body, each with
//!   its boost: title, headings, anchors, own link labels, body) or, by stem, in the `stem` field
//!   in any language with a stemmer; a stem that is a word of its own (`run`, which the `stem`
//!   field leaves out) matches that word in the text fields it covers. A word the analyzer
//!   splits into several tokens (`e-mail`, a CJK word cut into bigrams) is a phrase.
//! - A quoted phrase matches those tokens in a row, exactly (no stems), in one text field.
//! - Filters restrict without scoring (`ConstScoreQuery` at 0), except `intitle:`, which is
//!   topical and scores like a title word. `inurl:` matches the URL's words, constant score.
//!   `similar:URL` matches the page's cluster of near-duplicates (the page included).
//! - `-x`/`NOT x` inside an AND is a must-not clause; anywhere else it is "all documents
//!   except x".
//!
//! A word with no searchable token (`---`) constrains nothing and is dropped; a query left with
//! nothing to match is a query error.
//!
//! Relaxed form ([`relax`]): when the query's top level is a plain conjunction of bare words
//! (possibly with phrases, filters, groups and exclusions, but no `AND` written out), the bare
//! words become [`Word`]s that a result may lack. Phrases, filters, groups and exclusions keep
//! their strict meaning. Each word is weighed by its rarity (its idf); a word on more than a tenth
//! of the pages is not *essential* (`how`, `the`, `gemini` on a Gemini index): a result lacking
//! it is still a result with all the words. A word that is rare or absent in the index is also
//! matched through its spelling neighbours ([`super::spelling`]), each counting less than the
//! word, the more frequent neighbours more. `search.rs` turns the words into tiers and coverage.
//!
//! Not here: parsing (`crate::query`), ranking and snippets (`search`).

use std::ops::{Bound, Range};

use tantivy::query::{
    AllQuery, BooleanQuery, BoostQuery, ConstScoreQuery, Occur, PhraseQuery, Query as TQuery,
    RangeQuery, RegexQuery, TermQuery,
};
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::Term;

use super::analysis;
use super::spelling::Neighbour;
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
/// Words of the URL count a little for plain words (`gemlog`, a capsule's name)...
pub(crate) const BOOST_URL: f32 = 0.5;
/// ...and much more in a navigational query (see [`relax`]): the address of the page asked for
/// usually says what the query says (`/gemlog/`, `blog.gmi`, `/team/`).
pub(crate) const BOOST_URL_NAVIGATIONAL: f32 = 2.0;
/// Navigational queries have at most this many words.
const NAVIGATIONAL_MAX_WORDS: usize = 3;
/// A match by stem only (`runs` for `running`) is worth less than the exact form; an exact
/// match scores in both its text field and `stem`.
pub(crate) const BOOST_STEM: f32 = 0.6;

/// A word on more than this share of the pages is not essential (see the module doc)...
const COMMON_SHARE: f64 = 0.10;
/// ...once the index holds this many pages: in a tiny index every word is on a large share.
const COMMON_MIN_DOCS: u64 = 100;
/// Queries of fewer words have no common words: each is essential.
const COMMON_MIN_WORDS: usize = 3;
/// A word on at most this many pages is rare: its spelling neighbours are searched too.
const RARE_DOC_FREQ: u64 = 2;
/// A neighbour is used only when it is on this many times more pages than the word (at least
/// one): a rare word that is a real word should not turn into a frequent one.
const NEIGHBOUR_GAIN: u64 = 4;
/// Most spelling neighbours used per word.
const MAX_NEIGHBOURS: usize = 3;
/// A neighbour one edit away counts this much of the word itself, two edits away less: a page
/// with the word as typed outranks one with a neighbour.
const BOOST_NEIGHBOUR_1: f32 = 0.5;
const BOOST_NEIGHBOUR_2: f32 = 0.3;
/// The words of a query near each other in a body (within this many positions of a phrase)
/// earn a bonus, with this boost (the best pages only: `search` adds it after collecting).
const PROXIMITY_SLOP: u32 = 3;
const BOOST_PROXIMITY: f32 = 1.0;
/// Proximity is checked for at most this many words.
const PROXIMITY_MAX_WORDS: usize = 8;

/// What the compiler needs to know about the index: how many pages hold a term, and which terms
/// are spelled nearly like a word.
pub(crate) trait Lexicon {
    fn num_docs(&self) -> u64;
    /// Pages holding `term` in `field`.
    fn doc_freq(&self, field: Field, term: &str) -> u64;
    /// Terms of the text fields near `token` (an analysed token), nearest and most frequent
    /// first.
    fn neighbours(&self, token: &str) -> Vec<Neighbour>;
    /// Whether some page holds stems in the language `code` (`en`): a stem in another language
    /// matches nothing.
    fn has_stems_in(&self, code: &str) -> bool;
    /// The cluster of near-duplicates of the page at `url`, if the index holds it.
    fn cluster_of(&self, url: &str) -> Option<u64>;
    /// Whether `token` names a capsule: it is a label of a host name or a user directory
    /// (`osiux` in `gmi.osiux.com`, `gwenillia` in `tilde.team/~gwenillia`), or begins one.
    fn names_site(&self, token: &str) -> bool;
}

/// A bare word of a relaxed query.
pub(crate) struct Word {
    /// As the user typed it.
    pub text: String,
    /// Where it is in the query text.
    pub span: Range<usize>,
    /// The word in each text field, by stem, and through its spelling neighbours: a union of
    /// several words' forms is one union of their forms, cheaper than a union of unions
    /// (Tantivy merges term cursors directly) and scoring the same sum.
    forms: Vec<Box<dyn TQuery>>,
    /// Whether a result needs it to count as holding all the words.
    pub essential: bool,
    /// Its share of the query: the word's idf.
    pub weight: f32,
    /// Whether the index holds the word as typed (or one of its stems).
    pub known: bool,
    /// Pages holding it in its likeliest field or by stem: a guess of how common it is.
    pub doc_freq: u64,
    /// The spelling neighbours matched for it, best first.
    pub corrections: Vec<String>,
}

/// The relaxed form of a query (see the module doc).
pub(crate) struct Relaxed {
    /// Phrases, filters and groups: every result matches them.
    required: Vec<Box<dyn TQuery>>,
    excluded: Vec<Box<dyn TQuery>>,
    pub words: Vec<Word>,
    /// The words near each other in the body: a bonus only, added to the best pages after they
    /// are collected.
    proximity: Option<Proximity>,
}

/// The words of a query near each other in the body: a phrase of their tokens with a slop of
/// [`PROXIMITY_SLOP`], boosted by [`BOOST_PROXIMITY`]. `search` checks it at the best pages
/// only (`search/proximity.rs`), not as a query run over the index.
pub(crate) struct Proximity {
    /// The body terms, in query order (term `i` at phrase position `i`).
    pub terms: Vec<Term>,
    pub slop: u32,
    pub boost: f32,
}

impl Word {
    /// Matches the word in any text field, by stem, or through a spelling neighbour.
    pub fn query(&self) -> Box<dyn TQuery> {
        any(self.forms.iter().map(|f| f.box_clone()).collect())
    }
}

impl Relaxed {
    /// Pages holding every essential word: the first tier. Other words score where present.
    pub fn all_words(&self) -> Box<dyn TQuery> {
        let mut clauses = self.frame();
        for word in self.words.iter().filter(|w| w.essential) {
            clauses.push((Occur::Must, word.query()));
        }
        if let Some(others) = self.forms_of(false) {
            clauses.push((Occur::Should, others));
        }
        Box::new(BooleanQuery::new(clauses))
    }

    /// How many of `num_docs` pages would hold every essential word if the words were
    /// independent of each other: a guess for choosing the order of work, never for results.
    pub fn independent_estimate(&self, num_docs: u64) -> f64 {
        let n = num_docs.max(1) as f64;
        self.words
            .iter()
            .filter(|w| w.essential)
            .fold(n, |pages, w| pages * (w.doc_freq as f64 / n).min(1.0))
    }

    /// The words near each other in the body, as a sloppy phrase: a bonus the best pages earn
    /// when ranked (`search`), never a condition.
    pub fn proximity(&self) -> Option<&Proximity> {
        self.proximity.as_ref()
    }

    /// Pages holding at least one essential word: both tiers.
    pub fn any_word(&self) -> Box<dyn TQuery> {
        let mut clauses = self.frame();
        if let Some(essential) = self.forms_of(true) {
            clauses.push((Occur::Must, essential));
        }
        if let Some(others) = self.forms_of(false) {
            clauses.push((Occur::Should, others));
        }
        Box::new(BooleanQuery::new(clauses))
    }

    /// Whether [`Relaxed::any_word`] matches exactly what [`Relaxed::all_words`] does: with one
    /// essential word or none, both ask for the same pages (the other words only score).
    pub fn any_word_is_all_words(&self) -> bool {
        self.words.iter().filter(|w| w.essential).count() <= 1
    }

    /// The terms whose union is exactly what [`Relaxed::any_word`] matches, when it is such a
    /// union: no phrase, filter or exclusion, and every form of the words it needs one term
    /// (a phrase, a word of several tokens, has no such form). `None` otherwise. Counting the
    /// pages that hold one of them needs no scorer at all.
    pub fn any_word_terms(&self) -> Option<Vec<Term>> {
        if !self.required.is_empty() || !self.excluded.is_empty() {
            return None;
        }
        // Pages must hold an essential word when there is one: the other words only score.
        let essential = self.words.iter().any(|w| w.essential);
        let mut terms = Vec::new();
        for form in self
            .words
            .iter()
            .filter(|w| w.essential == essential)
            .flat_map(|w| &w.forms)
        {
            let (mut found, mut single) = (0, true);
            form.query_terms(&mut |term, needs_positions| {
                found += 1;
                single &= !needs_positions;
                terms.push(term.clone());
            });
            if found != 1 || !single {
                return None;
            }
        }
        Some(terms)
    }

    /// The union of the forms of the words that are `essential` (or not): one union, scoring
    /// what the union of the words' own unions would. `None` when there is no such word.
    fn forms_of(&self, essential: bool) -> Option<Box<dyn TQuery>> {
        let words = self.words.iter().filter(|w| w.essential == essential);
        words.clone().next()?;
        // No form at all (no page holds any of the words): an empty union, matching nothing.
        let forms = words
            .flat_map(|w| w.forms.iter().map(|f| f.box_clone()))
            .collect();
        Some(any(forms))
    }

    /// The required and excluded parts.
    fn frame(&self) -> Vec<(Occur, Box<dyn TQuery>)> {
        let mut clauses: Vec<(Occur, Box<dyn TQuery>)> = Vec::new();
        for q in &self.required {
            clauses.push((Occur::Must, q.box_clone()));
        }
        for q in &self.excluded {
            clauses.push((Occur::MustNot, q.box_clone()));
        }
        clauses
    }
}

/// The relaxed form of `query`, or `None` when it has no bare word at its top level or is not a
/// plain conjunction (an `OR`, a lone phrase or filter, a negation). `explicit_and` says the
/// user wrote `AND`: then every word stays required.
pub(crate) fn relax(
    query: &Query,
    fields: &Fields,
    lexicon: &dyn Lexicon,
    explicit_and: bool,
) -> Option<Relaxed> {
    if explicit_and {
        return None;
    }
    let parts: &[Query] = match query {
        Query::Term { .. } => std::slice::from_ref(query),
        Query::And(parts) => parts,
        _ => return None,
    };
    // A short query naming a capsule asks for a page of it: its address matters more.
    let bare: Vec<&str> = parts
        .iter()
        .filter_map(|p| match p {
            Query::Term { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    let navigational = bare.len() <= NAVIGATIONAL_MAX_WORDS
        && bare
            .iter()
            .any(|w| match analysis::query_tokens(w).as_slice() {
                [(_, token)] => lexicon.names_site(token),
                _ => false,
            });
    let compiler = Compiler {
        fields,
        lexicon,
        url_boost: if navigational {
            BOOST_URL_NAVIGATIONAL
        } else {
            BOOST_URL
        },
    };
    let mut relaxed = Relaxed {
        required: Vec::new(),
        excluded: Vec::new(),
        words: Vec::new(),
        proximity: None,
    };
    let n = lexicon.num_docs();
    for part in parts {
        match part {
            Query::Term { text, span } => {
                if let Some(word) = compiler.relaxed_word(text, span.clone(), lexicon, n) {
                    relaxed.words.push(word);
                }
            }
            Query::Not(inner) => {
                if let Some(q) = compiler.node(inner) {
                    relaxed.excluded.push(q);
                }
            }
            other => {
                if let Some(q) = compiler.node(other) {
                    relaxed.required.push(q);
                }
            }
        }
    }
    if relaxed.words.is_empty() {
        return None;
    }
    // In a query of one or two words each word is half of it or more: none is a filler.
    if relaxed.words.len() < COMMON_MIN_WORDS || !relaxed.words.iter().any(|w| w.essential) {
        for word in &mut relaxed.words {
            word.essential = true;
        }
    }
    relaxed.proximity = compiler.proximity(&relaxed.words);
    Some(relaxed)
}

/// Why a query compiled to nothing.
#[derive(Debug)]
pub(crate) struct NothingToSearch;

/// Compiles `query` for `fields`, every word required.
pub(crate) fn compile(
    query: &Query,
    fields: &Fields,
    lexicon: &dyn Lexicon,
) -> Result<Box<dyn TQuery>, NothingToSearch> {
    Compiler {
        fields,
        lexicon,
        url_boost: BOOST_URL,
    }
    .node(query)
    .ok_or(NothingToSearch)
}

struct Compiler<'a> {
    fields: &'a Fields,
    lexicon: &'a dyn Lexicon,
    /// Boost of the URL's words for a plain word.
    url_boost: f32,
}

impl Compiler<'_> {
    /// `None` when the node constrains nothing (a word without searchable tokens).
    fn node(&self, query: &Query) -> Option<Box<dyn TQuery>> {
        match query {
            Query::Term { text, .. } => self.word(text, &self.stems(text)),
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

    /// The text fields whose words the `stem` field holds by stem (when a word is not its own).
    fn stemmed_fields(&self) -> [Field; 4] {
        let f = self.fields;
        [f.title, f.headings, f.anchors, f.body]
    }

    /// The stems of a query word, tagged with their language (`en:run`), in the languages some
    /// page of the index has stems in: the others cannot match.
    fn stems(&self, text: &str) -> Vec<String> {
        let mut stems = analysis::stem_query_word(&text.to_lowercase());
        stems.retain(|stem| {
            let code = stem.split(':').next().unwrap_or_default();
            self.lexicon.has_stems_in(code)
        });
        stems
    }

    /// A bare word: exact in any text field (or the URL), or by one of its `stems` (from
    /// [`Self::stems`]).
    fn word(&self, text: &str, stems: &[String]) -> Option<Box<dyn TQuery>> {
        self.word_forms(text, stems, &|_, _| true).map(any)
    }

    /// The forms of a bare word, any of which matches: the word in each text field and the
    /// URL, and each of its `stems`, those `held` says the index may hold (a term no page holds
    /// matches nothing and adds nothing to a score, but costs a lookup in every segment each
    /// time the query runs); a word of several tokens is one phrase.
    fn word_forms(
        &self,
        text: &str,
        stems: &[String],
        held: &dyn Fn(Field, &str) -> bool,
    ) -> Option<Vec<Box<dyn TQuery>>> {
        let tokens = analysis::query_tokens(text);
        match tokens.as_slice() {
            [] => None,
            [(_, token)] => {
                let mut forms: Vec<Box<dyn TQuery>> = Vec::new();
                let stemmed_fields = self.stemmed_fields();
                let bare = bare_stems(stems);
                // The word is its own stem: where the text fields hold it, it also counts as
                // its stem (the `stem` field leaves such words out).
                let own = bare.contains(&token.as_str());
                let url = (self.fields.url_text, self.url_boost);
                for (field, boost) in self.text_fields().into_iter().chain([url]) {
                    let boost = match own && stemmed_fields.contains(&field) {
                        true => boost + BOOST_STEM,
                        false => boost,
                    };
                    if held(field, token) {
                        forms.push(boosted(term(field, token), boost));
                    }
                }
                for stem in stems.iter().filter(|stem| held(self.fields.stem, stem)) {
                    forms.push(boosted(term(self.fields.stem, stem), BOOST_STEM));
                }
                // Another word that is its own stem (`run` for `running`) is found as it is.
                for stem in bare.into_iter().filter(|stem| stem != token) {
                    for field in stemmed_fields {
                        if held(field, stem) {
                            forms.push(boosted(term(field, stem), BOOST_STEM));
                        }
                    }
                }
                Some(forms)
            }
            _ => Some(vec![self.phrase(text, &self.text_fields())?]),
        }
    }

    /// A bare word of a relaxed query, weighed against the lexicon; `None` when it has no
    /// searchable token.
    fn relaxed_word(
        &self,
        text: &str,
        span: Range<usize>,
        lexicon: &dyn Lexicon,
        num_docs: u64,
    ) -> Option<Word> {
        let tokens = analysis::query_tokens(text);
        let stems = self.stems(text);
        let held = |field, term: &str| lexicon.doc_freq(field, term) > 0;
        let mut forms = self.word_forms(text, &stems, &held)?;
        // Pages holding the word: for a word analysed into several tokens (`e-mail`, CJK), the
        // rarest token bounds it; stems count as holding it.
        let f = self.fields;
        let text_df = tokens
            .iter()
            .map(|(_, t)| {
                [f.title, f.headings, f.anchors, f.body]
                    .iter()
                    .map(|&field| lexicon.doc_freq(field, t))
                    .max()
                    .unwrap_or(0)
            })
            .min()
            .unwrap_or(0);
        let stem_df = stems
            .iter()
            .map(|s| lexicon.doc_freq(f.stem, s))
            .chain(bare_stems(&stems).into_iter().flat_map(|s| {
                self.stemmed_fields()
                    .map(|field| lexicon.doc_freq(field, s))
            }))
            .max()
            .unwrap_or(0);
        let doc_freq = text_df.max(stem_df);
        let mut corrections = Vec::new();
        if let [(_, token)] = tokens.as_slice() {
            // A word found by its stem is a real word in another form, not a misspelling.
            if doc_freq <= RARE_DOC_FREQ && !token.chars().any(analysis::is_cjk) {
                let floor = (doc_freq * NEIGHBOUR_GAIN).max(1);
                let neighbours: Vec<Neighbour> = lexicon
                    .neighbours(token)
                    .into_iter()
                    .filter(|n| n.doc_freq >= floor)
                    .take(MAX_NEIGHBOURS)
                    .collect();
                let best = neighbours.iter().map(|n| n.doc_freq).max().unwrap_or(1);
                for n in &neighbours {
                    let base = if n.distance <= 1 {
                        BOOST_NEIGHBOUR_1
                    } else {
                        BOOST_NEIGHBOUR_2
                    };
                    // The more pages use a neighbour, the likelier it is the word meant.
                    let weight = base * ((n.doc_freq as f32) / (best as f32)).sqrt();
                    for (field, boost) in self.text_fields() {
                        forms.push(boosted(term(field, &n.token), boost * weight));
                    }
                    corrections.push(n.token.clone());
                }
            }
        }
        // Rarity is the word's own: its stem also matches other words (`computers` shares
        // `en:comput` with `computing`), which says nothing about how common the word is.
        let df = text_df.max(1).min(num_docs) as f64;
        let n = num_docs as f64;
        let weight = (1.0 + (n - df + 0.5).max(0.0) / (df + 0.5)).ln() as f32;
        let essential = num_docs < COMMON_MIN_DOCS || df <= COMMON_SHARE * n;
        Some(Word {
            text: text.to_string(),
            span,
            forms,
            essential,
            weight: weight.max(0.01),
            known: doc_freq > 0,
            doc_freq,
            corrections,
        })
    }

    /// The words (those that are one token) near each other in the body.
    fn proximity(&self, words: &[Word]) -> Option<Proximity> {
        let mut terms = Vec::new();
        for word in words.iter().take(PROXIMITY_MAX_WORDS) {
            if let [(_, token)] = analysis::query_tokens(&word.text).as_slice() {
                terms.push(Term::from_field_text(self.fields.body, token));
            }
        }
        if terms.len() < 2 {
            return None;
        }
        Some(Proximity {
            terms,
            slop: PROXIMITY_SLOP,
            boost: BOOST_PROXIMITY,
        })
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
            // URLs are stored whole in `url`: the scheme is a prefix of its terms, which the
            // term dictionary (an FST) finds without reading any other term.
            Filter::Scheme(scheme) => RegexQuery::from_pattern(&format!("{scheme}://.*"), f.url)
                .ok()
                .map(|q| zero_score(Box::new(q))),
            Filter::Lang(lang) => exact(f.lang, lang),
            Filter::Mime(mime) => exact(f.mime, mime),
            Filter::FileType(ext) => exact(f.ext, ext),
            // A page the index does not hold has no near-duplicates: its URL matches nothing.
            Filter::Similar(url) => match self.lexicon.cluster_of(url) {
                Some(cluster) => Some(zero_score(Box::new(TermQuery::new(
                    Term::from_field_u64(f.cluster, cluster),
                    IndexRecordOption::Basic,
                )))),
                None => exact(f.url, url),
            },
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

/// The distinct stems of `stems` (`en:run`, `de:running`...) without their language: a stem
/// that is a word of its own is held as that word by the text fields.
fn bare_stems(stems: &[String]) -> Vec<&str> {
    let mut bare: Vec<&str> = Vec::with_capacity(stems.len());
    for stem in stems {
        let stem = analysis::unprefixed(stem);
        if !stem.is_empty() && !bare.contains(&stem) {
            bare.push(stem);
        }
    }
    bare
}

/// Matches what any of `forms` matches, with the sum of their scores (no forms: nothing).
fn any(mut forms: Vec<Box<dyn TQuery>>) -> Box<dyn TQuery> {
    match forms.len() {
        1 => forms.remove(0),
        _ => Box::new(BooleanQuery::new(
            forms.into_iter().map(|f| (Occur::Should, f)).collect(),
        )),
    }
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
