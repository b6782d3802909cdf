//! Searching: readers over the index, ranking, result diversity, snippets.
//!
//! A [`SearchIndex`] never takes the writer lock and writes nothing (it reads through
//! `readonly.rs`), so `geode search` and `geode serve` can run while a crawl is writing, on a
//! read-only directory, or as a user who may only read the index; the reader picks up new commits shortly after they land, and the
//! authority file when a crawl rewrites it.
//!
//! Ranking (the formula is in ARCHITECTURE.md, "Ranking"): Tantivy's BM25 over the fields the
//! compiled query names, times a link-authority factor and a home-page prior, computed per
//! matching document from fast fields while Tantivy collects the top candidates. The first
//! [`DIVERSITY_WINDOW`] results are then reordered so that no capsule takes more than
//! [`PER_CAPSULE`] places in any block of [`BLOCK`] results; the others move down, never out.
//!
//! Snippets are plain text, matched words wrapped in `**`..`**`; rendering them as gemtext or
//! a terminal line is the caller's business.
//!
//! Not here: query parsing (`crate::query`), compiling a query (`compile`), writing.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tantivy::collector::{Count, TopDocs};
use tantivy::collector::{ScoreSegmentTweaker, ScoreTweaker};
use tantivy::columnar::ColumnValues;
use tantivy::query::{EnableScoring, Query as _, Scorer, TermQuery, Weight};
use tantivy::schema::{Field, IndexRecordOption, Value};
use tantivy::{
    DocAddress, DocId, DocSet, Index, IndexReader, ReloadPolicy, Score, Searcher, SegmentReader,
    TantivyDocument, Term,
};

use super::authority::Authority;
use super::compile::{compile, relax, Lexicon, Relaxed};
use super::snippet::{snippet, Highlighter};
use super::spelling::{self, Neighbour};
use super::{open_index, Access, Fields, IndexError};
use crate::query;

/// Longest snippet, in characters.
const SNIPPET_MAX_CHARS: usize = 220;

/// Weight of link authority: a page with the highest authority scores `1 + W_AUTHORITY` times
/// its text score.
const W_AUTHORITY: f32 = 1.0;
/// Weight of the home-page prior: a capsule's root scores `1 + W_HOME` times its text score, a
/// page one level down `1 + W_HOME / 2`, and so on.
const W_HOME: f32 = 0.5;
/// Added to the text score before the factors, so that filter-only queries (`site:x`, whose
/// clauses score 0) still order by authority and prior.
const TEXT_FLOOR: f32 = 0.01;

/// How many top results diversity reorders. Fixed, so that every page of results comes from the
/// same reordering and paging never repeats or skips a result.
const DIVERSITY_WINDOW: usize = 1000;
/// Results per block of [`BLOCK`] that one capsule may take while other capsules have
/// candidates.
const PER_CAPSULE: usize = 2;
const BLOCK: usize = 10;
/// A result of another capsule takes a waiting result's place only when it scores at least
/// this share of it.
const DIVERSITY_MIN_SHARE: f32 = 0.2;

/// A page lacking words scores its text relevance times the share of the query's weight it
/// holds to this power: missing a rare word costs much more than missing a common one.
const COVERAGE_POWER: f32 = 3.0;

/// Site keys read per segment to tell whether a query word names a capsule.
const MAX_SITE_TERMS: usize = 100_000;

/// How often a search checks whether the authority file changed.
const AUTHORITY_CHECK_EVERY: Duration = Duration::from_secs(2);

/// How results are ordered.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Ranking {
    /// BM25 x authority x home-page prior, then capsule diversity.
    #[default]
    Full,
    /// Plain BM25 over the same fields and boosts: for comparison (`scripts/eval-search`).
    Bm25,
}

/// A search request.
#[derive(Debug, Clone, Copy)]
pub struct SearchOptions {
    pub limit: usize,
    pub offset: usize,
    pub ranking: Ranking,
    /// Every bare word required, as before issue 14: no partial matches, no spelling
    /// neighbours, no "did you mean".
    pub strict: bool,
    /// Every near-duplicate listed, instead of one page per cluster.
    pub all: bool,
}

impl Default for SearchOptions {
    fn default() -> Self {
        SearchOptions {
            limit: 10,
            offset: 0,
            ranking: Ranking::Full,
            strict: false,
            all: false,
        }
    }
}

/// The factors of a hit's score: `score = (text x coverage^3 + 0.01) x (1 + authority) x prior`.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct ScoreParts {
    /// BM25 over the matched fields, with their boosts.
    pub text: f32,
    /// Link authority in 0..=1 (times its weight in the score).
    pub authority: f32,
    /// Home-page prior, at least 1.
    pub prior: f32,
    /// Share of the query's weight (its words' idf) the page holds: 1 when it has every word.
    pub coverage: f32,
}

/// One result.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Hit {
    pub url: String,
    pub title: String,
    /// Plain text of the best passage for the query, matched words wrapped in `**`; the start
    /// of the body when no body word matched (e.g. only the title did).
    pub snippet: String,
    /// The ranking score; only meaningful relative to the other hits of the same query.
    pub score: f32,
    pub parts: ScoreParts,
    pub host: String,
    pub mime: String,
    /// The page's language: declared by its server, else detected.
    pub lang: Option<String>,
    pub size: u64,
    /// Fetch time, seconds since the Unix epoch.
    pub fetched_at: i64,
    /// The query's words the page lacks, as typed (empty when it has them all).
    pub missing: Vec<String>,
    /// How many other pages of the index are near-duplicates of this one; they are left out of
    /// the results unless all are asked for (`similar:URL` lists them).
    pub similar: usize,
}

/// A page of results.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct SearchResults {
    /// How many documents match in all, with all the words or some.
    pub total: usize,
    /// How many of them hold every word (every word that is not very common).
    pub with_all_words: usize,
    /// The query with its misspelled-looking words replaced by their likeliest spelling in
    /// the index, when some word is unknown or nothing holds all the words.
    pub did_you_mean: Option<String>,
    pub hits: Vec<Hit>,
}

/// A read-only view of the index; cheap to query many times, from several threads.
pub struct SearchIndex {
    // Kept so the tokenizer registration the analysis relies on stays alive.
    _index: Index,
    reader: IndexReader,
    fields: Fields,
    dir: PathBuf,
    authority: Mutex<AuthorityState>,
}

struct AuthorityState {
    scores: Arc<Authority>,
    checked: Instant,
}

impl SearchIndex {
    /// Opens the index in `dir` for reading. Fails with [`IndexError::Missing`] when absent.
    pub fn open(dir: &Path) -> Result<Self, IndexError> {
        let Some((index, fields)) = open_index(dir, Access::Read)? else {
            return Err(IndexError::Missing(dir.to_path_buf()));
        };
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::OnCommitWithDelay)
            .try_into()?;
        let scores = Arc::new(Authority::load(dir)?);
        Ok(SearchIndex {
            _index: index,
            reader,
            fields,
            dir: dir.to_path_buf(),
            authority: Mutex::new(AuthorityState {
                scores,
                checked: Instant::now(),
            }),
        })
    }

    /// Number of documents in the index.
    pub fn num_docs(&self) -> u64 {
        self.reader.searcher().num_docs()
    }

    /// A snapshot of the index as it is now.
    #[cfg(test)]
    pub(crate) fn searcher(&self) -> Searcher {
        self.reader.searcher()
    }

    #[cfg(test)]
    pub(crate) fn fields(&self) -> &Fields {
        &self.fields
    }

    /// Runs a query with the full ranking; a malformed query is [`IndexError::Query`].
    pub fn search(
        &self,
        query: &str,
        limit: usize,
        offset: usize,
    ) -> Result<SearchResults, IndexError> {
        self.search_with(
            query,
            &SearchOptions {
                limit,
                offset,
                ..SearchOptions::default()
            },
        )
    }

    /// Runs a query; a malformed query is [`IndexError::Query`].
    pub fn search_with(
        &self,
        text: &str,
        options: &SearchOptions,
    ) -> Result<SearchResults, IndexError> {
        let parsed = query::parse(text).map_err(|e| IndexError::Query(e.to_string()))?;
        self.search_parsed(text, &parsed, options)
    }

    /// Runs a query the caller has already parsed from `text` (to report its errors its own
    /// way).
    pub fn search_parsed(
        &self,
        text: &str,
        parsed: &query::Query,
        options: &SearchOptions,
    ) -> Result<SearchResults, IndexError> {
        let searcher = self.reader.searcher();
        let lexicon = IndexLexicon {
            searcher: &searcher,
            fields: &self.fields,
        };
        let compiled = compile(parsed, &self.fields, &lexicon).map_err(|_| {
            IndexError::Query("the query has no word that can be searched for".to_string())
        })?;
        let relaxed = if options.strict {
            None
        } else {
            relax(parsed, &self.fields, &lexicon, query::explicit_and(text))
        };
        // Listing a cluster (`similar:`) or asking for everything shows every member.
        let collapse = !options.all && !parsed.has_similar_filter();

        // TopDocs allocates room for its limit up front and panics on a zero limit, so bound
        // the window by the number of documents: no page can hold more than that.
        let num_docs = usize::try_from(searcher.num_docs()).unwrap_or(usize::MAX);
        let (offset, limit) = (options.offset, options.limit);
        let page = limit.min(num_docs.saturating_sub(offset));
        let full = options.ranking == Ranking::Full;
        if page == 0 {
            let (total, with_all_words) = match &relaxed {
                None => {
                    let n = searcher.search(&*compiled, &Count)?;
                    (n, n)
                }
                Some(r) => (
                    searcher.search(&*r.any_word(), &Count)?,
                    searcher.search(&*r.all_words(), &Count)?,
                ),
            };
            return Ok(SearchResults {
                total,
                with_all_words,
                did_you_mean: relaxed
                    .as_ref()
                    .and_then(|r| suggestion(text, r, with_all_words)),
                hits: Vec::new(),
            });
        }
        let end = offset.saturating_add(page);
        // Diversity and near-duplicate folding reorder a fixed window, so that every page of
        // results comes from the same order.
        let window = if full || collapse {
            end.max(DIVERSITY_WINDOW).min(num_docs)
        } else {
            end
        };
        let authority = self.current_authority();
        let ranker = |coverage| Ranker {
            authority: Arc::clone(&authority),
            full,
            coverage,
        };

        // One ranking for pages with all the words and pages with some: a page lacking words
        // scores its text relevance times its coverage cubed, so it follows the pages with all
        // the words unless those match them only faintly (a bookmark list of 12,000 links holds
        // every word of most queries, each drowned in its length).
        let (total, with_all_words, ranked) = match &relaxed {
            None => {
                let (n, ranked) = searcher.search(
                    &*compiled,
                    &(Count, TopDocs::with_limit(window).tweak_score(ranker(None))),
                )?;
                (n, n, ranked)
            }
            Some(r) => {
                // Pages with all the words first: when a thousand of them fill the window, a
                // page lacking words would need to beat them all on a third or less of its
                // score, so the costlier scoring of every page with some word is skipped.
                let (complete, ranked) = searcher.search(
                    &*r.all_words(),
                    &(Count, TopDocs::with_limit(window).tweak_score(ranker(None))),
                )?;
                if complete >= window.max(DIVERSITY_WINDOW) {
                    (searcher.search(&*r.any_word(), &Count)?, complete, ranked)
                } else {
                    let coverage = Arc::new(Coverage::new(&searcher, r)?);
                    let (total, ranked) = searcher.search(
                        &*r.any_word(),
                        &(
                            Count,
                            TopDocs::with_limit(window).tweak_score(ranker(Some(coverage))),
                        ),
                    )?;
                    (total, complete, ranked)
                }
            }
        };
        // The best-ranked member of a cluster of near-duplicates stands for it; then no capsule
        // takes more than its share of each block.
        let mut ranked = ranked;
        if collapse {
            let mut seen = HashSet::new();
            ranked.retain(|(r, _)| seen.insert(r.cluster));
        }
        if full {
            let head = ranked.len().min(DIVERSITY_WINDOW);
            let reordered = diversify(
                &ranked[..head],
                |(r, _)| r.capsule,
                |(r, _)| r.score,
                PER_CAPSULE,
                BLOCK,
            );
            ranked.splice(..head, reordered);
        }

        let checks = match &relaxed {
            Some(r) => Some(WordChecks::new(&searcher, r)?),
            None => None,
        };
        let highlighter = Highlighter::new(&parsed.highlight_words(), &[]);
        let mut hits = Vec::with_capacity(page);
        for (ranked, address) in ranked.into_iter().skip(offset).take(page) {
            let doc: TantivyDocument = searcher.doc(address)?;
            let mut hit = self.hit(&doc, ranked, &highlighter);
            if let Some(checks) = &checks {
                hit.missing = checks.missing(&searcher, address)?;
            }
            hit.similar = self.similar_count(&searcher, ranked.cluster)?;
            hits.push(hit);
        }
        Ok(SearchResults {
            total,
            with_all_words,
            did_you_mean: relaxed
                .as_ref()
                .and_then(|r| suggestion(text, r, with_all_words)),
            hits,
        })
    }

    /// How many other pages share a cluster of near-duplicates.
    fn similar_count(&self, searcher: &Searcher, cluster: u64) -> Result<usize, IndexError> {
        let query = TermQuery::new(
            Term::from_field_u64(self.fields.cluster, cluster),
            IndexRecordOption::Basic,
        );
        Ok(searcher.search(&query, &Count)?.saturating_sub(1))
    }

    fn hit(&self, doc: &TantivyDocument, ranked: Ranked, highlighter: &Highlighter) -> Hit {
        let f = &self.fields;
        let lang = first_str(doc, f.lang).map(str::to_string);
        let body = first_str(doc, f.body).unwrap_or_default();
        Hit {
            url: self.text(doc, f.url),
            title: self.text(doc, f.title),
            snippet: snippet(body, highlighter, lang.as_deref(), SNIPPET_MAX_CHARS),
            score: ranked.score,
            parts: ranked.parts,
            host: self.text(doc, f.host),
            mime: self.text(doc, f.mime),
            lang,
            size: doc.get_first(f.size).and_then(|v| v.as_u64()).unwrap_or(0),
            fetched_at: doc
                .get_first(f.fetched_at)
                .and_then(|v| v.as_i64())
                .unwrap_or(0),
            missing: Vec::new(),
            similar: 0,
        }
    }

    /// The authority scores, reloaded when a crawl has rewritten the file since the last check.
    /// A file that fails to load keeps the old scores (and logs why): ranking degrades, search
    /// goes on.
    fn current_authority(&self) -> Arc<Authority> {
        let mut state = match self.authority.lock() {
            Ok(state) => state,
            Err(poisoned) => poisoned.into_inner(),
        };
        if state.checked.elapsed() >= AUTHORITY_CHECK_EVERY {
            state.checked = Instant::now();
            if state.scores.is_stale(&self.dir) {
                match Authority::load(&self.dir) {
                    Ok(fresh) => state.scores = Arc::new(fresh),
                    Err(e) => tracing::warn!("keeping the old authority scores: {e}"),
                }
            }
        }
        Arc::clone(&state.scores)
    }

    fn text(&self, doc: &TantivyDocument, field: tantivy::schema::Field) -> String {
        first_str(doc, field).unwrap_or_default().to_string()
    }
}

/// A candidate's score, its parts, its capsule and cluster, as collected.
#[derive(Debug, Clone, Copy)]
struct Ranked {
    score: f32,
    parts: ScoreParts,
    capsule: u64,
    /// Its cluster of near-duplicates.
    cluster: u64,
}

impl PartialEq for Ranked {
    fn eq(&self, other: &Self) -> bool {
        self.score == other.score
    }
}

impl PartialOrd for Ranked {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        self.score.partial_cmp(&other.score)
    }
}

/// Turns BM25 scores into ranking scores, segment by segment.
struct Ranker {
    authority: Arc<Authority>,
    full: bool,
    /// For pages that may lack words: how much of the query each holds.
    coverage: Option<Arc<Coverage>>,
}

struct SegmentRanker {
    authority: Arc<Authority>,
    full: bool,
    url_hash: Arc<dyn ColumnValues<u64>>,
    host_hash: Arc<dyn ColumnValues<u64>>,
    depth: Arc<dyn ColumnValues<u64>>,
    cluster: Arc<dyn ColumnValues<u64>>,
    coverage: Option<SegmentCoverage>,
}

impl ScoreTweaker<Ranked> for Ranker {
    type Child = SegmentRanker;

    fn segment_tweaker(&self, segment: &SegmentReader) -> tantivy::Result<SegmentRanker> {
        let fast = segment.fast_fields();
        let coverage = match &self.coverage {
            Some(c) => Some(c.for_segment(segment)?),
            None => None,
        };
        Ok(SegmentRanker {
            authority: Arc::clone(&self.authority),
            full: self.full,
            url_hash: fast.u64("url_hash")?.first_or_default_col(0),
            host_hash: fast.u64("host_hash")?.first_or_default_col(0),
            depth: fast.u64("depth")?.first_or_default_col(0),
            cluster: fast.u64("cluster")?.first_or_default_col(0),
            coverage,
        })
    }
}

impl ScoreSegmentTweaker<Ranked> for SegmentRanker {
    fn score(&mut self, doc: DocId, bm25: Score) -> Ranked {
        let capsule = self.host_hash.get_val(doc);
        let cluster = self.cluster.get_val(doc);
        let share = self.coverage.as_mut().map_or(1.0, |c| c.at(doc));
        let text = bm25 * share.powf(COVERAGE_POWER);
        if !self.full {
            return Ranked {
                score: text,
                parts: ScoreParts {
                    text: bm25,
                    authority: 0.0,
                    prior: 1.0,
                    coverage: share,
                },
                capsule,
                cluster,
            };
        }
        let authority = self.authority.get(self.url_hash.get_val(doc));
        let depth = self.depth.get_val(doc);
        let prior = 1.0 + W_HOME / (1.0 + depth as f32);
        let score = (text + TEXT_FLOOR) * (1.0 + W_AUTHORITY * authority) * prior;
        Ranked {
            score,
            parts: ScoreParts {
                text: bm25,
                authority,
                prior,
                coverage: share,
            },
            capsule,
            cluster,
        }
    }
}

/// The words of a relaxed query as matchers (no scoring), with their weights: enough to tell
/// which words a page holds.
struct Coverage {
    words: Vec<(Box<dyn Weight>, f32)>,
    total: f32,
}

impl Coverage {
    fn new(searcher: &Searcher, relaxed: &Relaxed) -> tantivy::Result<Coverage> {
        let scoring = EnableScoring::disabled_from_searcher(searcher);
        let mut words = Vec::with_capacity(relaxed.words.len());
        for w in &relaxed.words {
            words.push((w.query.weight(scoring)?, w.weight));
        }
        let total = words.iter().map(|(_, weight)| weight).sum();
        Ok(Coverage { words, total })
    }

    fn for_segment(&self, segment: &SegmentReader) -> tantivy::Result<SegmentCoverage> {
        let mut scorers = Vec::with_capacity(self.words.len());
        for (weight, _) in &self.words {
            scorers.push(weight.scorer(segment, 1.0)?);
        }
        Ok(SegmentCoverage {
            scorers,
            weights: self.words.iter().map(|(_, w)| *w).collect(),
            total: self.total,
        })
    }
}

/// [`Coverage`] in one segment: one cursor per word, moving forward only, as the collector
/// visits documents in increasing order.
struct SegmentCoverage {
    scorers: Vec<Box<dyn Scorer>>,
    weights: Vec<f32>,
    total: f32,
}

impl SegmentCoverage {
    /// The share of the query's weight `doc` holds.
    fn at(&mut self, doc: DocId) -> f32 {
        let mut held = 0.0;
        for (scorer, &weight) in self.scorers.iter_mut().zip(&self.weights) {
            if scorer.doc() < doc {
                scorer.seek(doc);
            }
            if scorer.doc() == doc {
                held += weight;
            }
        }
        if self.total > 0.0 {
            held / self.total
        } else {
            1.0
        }
    }
}

/// Which words of a relaxed query a shown result lacks.
struct WordChecks {
    words: Vec<(String, Box<dyn Weight>)>,
}

impl WordChecks {
    fn new(searcher: &Searcher, relaxed: &Relaxed) -> tantivy::Result<WordChecks> {
        let scoring = EnableScoring::disabled_from_searcher(searcher);
        let mut words = Vec::with_capacity(relaxed.words.len());
        for w in &relaxed.words {
            words.push((w.text.clone(), w.query.weight(scoring)?));
        }
        Ok(WordChecks { words })
    }

    fn missing(&self, searcher: &Searcher, address: DocAddress) -> tantivy::Result<Vec<String>> {
        let segment = searcher.segment_reader(address.segment_ord);
        let mut missing = Vec::new();
        for (text, weight) in &self.words {
            let mut scorer = weight.scorer(segment, 1.0)?;
            if scorer.doc() < address.doc_id {
                scorer.seek(address.doc_id);
            }
            if scorer.doc() != address.doc_id && !missing.contains(text) {
                missing.push(text.clone());
            }
        }
        Ok(missing)
    }
}

/// The index as the query compiler sees it.
struct IndexLexicon<'a> {
    searcher: &'a Searcher,
    fields: &'a Fields,
}

impl Lexicon for IndexLexicon<'_> {
    fn num_docs(&self) -> u64 {
        self.searcher.num_docs()
    }

    fn doc_freq(&self, field: Field, term: &str) -> u64 {
        self.searcher
            .doc_freq(&Term::from_field_text(field, term))
            .unwrap_or(0)
    }

    fn neighbours(&self, token: &str) -> Vec<Neighbour> {
        spelling::neighbours(self.searcher, &[self.fields.body, self.fields.title], token)
    }

    fn names_site(&self, token: &str) -> bool {
        if token.chars().count() < 3 {
            return false;
        }
        for segment in self.searcher.segment_readers() {
            let Ok(inverted) = segment.inverted_index(self.fields.site) else {
                continue;
            };
            let Ok(mut stream) = inverted.terms().stream() else {
                continue;
            };
            let mut scanned = 0;
            while scanned < MAX_SITE_TERMS && stream.advance() {
                scanned += 1;
                let Ok(site) = std::str::from_utf8(stream.key()) else {
                    continue;
                };
                let names = site.split(['.', '/', '~', ':', '-']).any(|label| {
                    label == token || (label.starts_with(token) && label.len() <= token.len() + 3)
                });
                if names {
                    return true;
                }
            }
        }
        false
    }

    fn cluster_of(&self, url: &str) -> Option<u64> {
        let query = TermQuery::new(
            Term::from_field_text(self.fields.url, url),
            IndexRecordOption::Basic,
        );
        let top = self.searcher.search(&query, &TopDocs::with_limit(1)).ok()?;
        let (_, address) = top.first()?;
        let segment = self.searcher.segment_reader(address.segment_ord);
        let column = segment.fast_fields().u64("cluster").ok()?;
        column.first(address.doc_id)
    }
}

/// "Did you mean": the query text with each unknown word (or, when no page holds all the
/// words, each word with spelling neighbours) replaced by its likeliest neighbour.
fn suggestion(text: &str, relaxed: &Relaxed, with_all_words: usize) -> Option<String> {
    let mut fixes: Vec<(std::ops::Range<usize>, &str)> = relaxed
        .words
        .iter()
        .filter(|w| !w.known || with_all_words == 0)
        .filter_map(|w| Some((w.span.clone(), w.corrections.first()?.as_str())))
        .collect();
    if fixes.is_empty() {
        return None;
    }
    fixes.sort_by_key(|(span, _)| span.start);
    let mut out = String::with_capacity(text.len());
    let mut pos = 0;
    for (span, word) in fixes {
        out.push_str(text.get(pos..span.start)?);
        out.push_str(word);
        pos = span.end;
    }
    out.push_str(text.get(pos..)?);
    Some(out)
}

/// Reorders `items` (best first) so that in every block of `block` results no capsule has more
/// than `cap` places while candidates of other capsules remain; a result that must wait keeps
/// its rank among the waiting ones and comes first in the next block. When only one capsule's
/// results remain, or the others score under [`DIVERSITY_MIN_SHARE`] of the best waiting one,
/// the waiting results fill the block in order. Every item appears exactly once.
fn diversify<T: Clone>(
    items: &[T],
    capsule: impl Fn(&T) -> u64,
    score: impl Fn(&T) -> f32,
    cap: usize,
    block: usize,
) -> Vec<T> {
    let mut out = Vec::with_capacity(items.len());
    let mut pending: std::collections::VecDeque<T> = items.iter().cloned().collect();
    while !pending.is_empty() {
        let mut taken = 0;
        let mut counts: HashMap<u64, usize> = HashMap::new();
        let mut waiting = Vec::new();
        while taken < block {
            let Some(item) = pending.pop_front() else {
                break;
            };
            // Variety is not worth a much worse result: a strong page of a capsule that has had
            // its share beats a faint match elsewhere (a query naming a capsule wants its pages).
            if waiting
                .first()
                .is_some_and(|w| score(&item) < DIVERSITY_MIN_SHARE * score(w))
            {
                pending.push_front(item);
                break;
            }
            let count = counts.entry(capsule(&item)).or_default();
            if *count < cap {
                *count += 1;
                out.push(item);
                taken += 1;
            } else {
                waiting.push(item);
            }
        }
        // Not enough other capsules: the waiting results fill the block in rank order.
        let mut waiting = waiting.into_iter();
        while taken < block {
            let Some(item) = waiting.next() else { break };
            out.push(item);
            taken += 1;
        }
        for item in waiting.rev() {
            pending.push_front(item);
        }
    }
    out
}

fn first_str(doc: &TantivyDocument, field: tantivy::schema::Field) -> Option<&str> {
    doc.get_first(field).and_then(|v| v.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::{url_hash, Indexer, PageDoc};

    fn page(url: &str, title: &str, body: &str) -> PageDoc {
        PageDoc {
            url: url.to_string(),
            host: "example.org".to_string(),
            title: title.to_string(),
            body: body.to_string(),
            mime: "text/gemini".to_string(),
            lang: Some("en".to_string()),
            size: body.len() as u64,
            fetched_at: 1_700_000_000,
            ..PageDoc::default()
        }
    }

    /// Builds an index from `pages`, committed, and opens it for searching.
    fn index_of(pages: &[PageDoc]) -> (tempfile::TempDir, SearchIndex) {
        let tmp = tempfile::tempdir().expect("tempdir");
        {
            let mut ix = Indexer::open_or_create(tmp.path()).expect("open");
            for p in pages {
                ix.upsert(p).expect("upsert");
            }
            ix.commit(1).expect("commit");
        }
        let si = SearchIndex::open(tmp.path()).expect("search index");
        (tmp, si)
    }

    /// Every word required, as `geode search --strict`.
    const STRICT: SearchOptions = SearchOptions {
        limit: 10,
        offset: 0,
        ranking: Ranking::Full,
        strict: true,
        all: false,
    };

    fn urls(res: &SearchResults) -> Vec<&str> {
        res.hits.iter().map(|h| h.url.as_str()).collect()
    }

    fn corpus() -> Vec<PageDoc> {
        vec![
            page(
                "gemini://a.example/",
                "Gardening notes",
                "Tomatoes need sun. My café sells them.",
            ),
            page("gemini://b.example/", "Tomatoes", "A page about red fruit."),
            page(
                "gemini://c.example/",
                "Русский сайт",
                "Привет мир, это капсула о погоде.",
            ),
            PageDoc {
                headings: "Compost heaps".to_string(),
                link_labels: "Worm farming guide".to_string(),
                ..page("gemini://d.example/", "Soil", "Dirt and more dirt.")
            },
        ]
    }

    #[test]
    fn finds_pages_by_each_searchable_field() {
        let (_tmp, si) = index_of(&corpus());
        let cases: &[(&str, &[&str])] = &[
            // body word
            ("sun", &["gemini://a.example/"]),
            // title word
            ("gardening", &["gemini://a.example/"]),
            // heading word
            ("compost", &["gemini://d.example/"]),
            // link label word (not stored, still searchable)
            ("worm", &["gemini://d.example/"]),
            // case-insensitive
            ("SUN", &["gemini://a.example/"]),
            // accent folding both ways
            ("cafe", &["gemini://a.example/"]),
            ("café", &["gemini://a.example/"]),
            // Cyrillic, in body and title, any case
            ("погоде", &["gemini://c.example/"]),
            ("РУССКИЙ", &["gemini://c.example/"]),
            // all terms required
            ("tomatoes sun", &["gemini://a.example/"]),
            ("tomatoes zebra", &[]),
            // explicit OR and phrase
            (
                "compost OR gardening",
                &["gemini://a.example/", "gemini://d.example/"],
            ),
            ("\"red fruit\"", &["gemini://b.example/"]),
            ("\"fruit red\"", &[]),
            ("intitle:tomatoes", &["gemini://b.example/"]),
        ];
        for (query, want) in cases {
            let res = si.search_with(query, &STRICT).expect(query);
            let mut got = urls(&res);
            got.sort_unstable();
            assert_eq!(&got, want, "query {query:?}");
            assert_eq!(res.total, want.len(), "total for {query:?}");
        }
    }

    /// Pages exercising every part of the query language.
    fn language_corpus() -> Vec<PageDoc> {
        let doc = |url: &str, title: &str, body: &str, mime: &str, size: u64| PageDoc {
            url: url.to_string(),
            host: url
                .trim_start_matches("gemini://")
                .split('/')
                .next()
                .unwrap_or_default()
                .to_string(),
            title: title.to_string(),
            body: body.to_string(),
            mime: mime.to_string(),
            lang: None,
            size,
            fetched_at: 1_700_000_000,
            ..PageDoc::default()
        };
        vec![
            doc(
                "gemini://example.org/",
                "Home",
                "Welcome to the example capsule. I write about running and cycling.",
                "text/gemini",
                500,
            ),
            doc(
                "gemini://blog.example.org/posts/runs.gmi",
                "Morning runs",
                "She runs every morning along the river before work.",
                "text/gemini",
                20_000,
            ),
            doc(
                "gemini://tilde.example/~alice/notes.txt",
                "Alice notes",
                "Plain text notes about the river and the mountains.",
                "text/plain",
                3_000,
            ),
            doc(
                "gemini://tilde.example/~bob/index.gmi",
                "Bob's page",
                "Bob writes about the river too, and about trains.",
                "text/gemini",
                2_000_000,
            ),
            doc(
                "gemini://de.example/haus.gmi",
                "Unser Haus",
                "Die Häuser in unserer Straße sind alt und schön. Wir wohnen seit vielen \
                 Jahren in diesem Haus und lieben den Garten hinter dem Haus sehr.",
                "text/gemini",
                1_000,
            ),
            doc(
                "gemini://jp.example/",
                "日本語のページ",
                "これは日本語のテキストです。東京の天気について書きます。",
                "text/gemini",
                800,
            ),
            doc(
                "gemini://files.example/pics/fox.png",
                "fox.png",
                "pics fox png",
                "image/png",
                90_000,
            ),
        ]
    }

    #[test]
    fn the_query_language_works_end_to_end() {
        let (_tmp, si) = index_of(&language_corpus());
        let cases: &[(&str, &[&str])] = &[
            // stemming: "running" finds "runs" in an English page
            (
                "running",
                &[
                    "gemini://blog.example.org/posts/runs.gmi",
                    "gemini://example.org/",
                ],
            ),
            // a quoted word is exact: no stems
            ("\"running\"", &["gemini://example.org/"]),
            // German stems, with or without the umlaut
            ("häuser", &["gemini://de.example/haus.gmi"]),
            ("hauser", &["gemini://de.example/haus.gmi"]),
            // CJK words inside unsegmented text
            ("東京", &["gemini://jp.example/"]),
            ("日本語", &["gemini://jp.example/"]),
            ("天気", &["gemini://jp.example/"]),
            // site: matches the host, its subdomains and ~user directories
            (
                "river site:example.org",
                &["gemini://blog.example.org/posts/runs.gmi"],
            ),
            (
                "site:example.org",
                &[
                    "gemini://blog.example.org/posts/runs.gmi",
                    "gemini://example.org/",
                ],
            ),
            (
                "river site:tilde.example/~alice",
                &["gemini://tilde.example/~alice/notes.txt"],
            ),
            (
                "river site:gemini://TILDE.example/",
                &[
                    "gemini://tilde.example/~alice/notes.txt",
                    "gemini://tilde.example/~bob/index.gmi",
                ],
            ),
            // lang: detected from the text (no server declared one)
            ("lang:de", &["gemini://de.example/haus.gmi"]),
            ("lang:ja", &["gemini://jp.example/"]),
            // mime: full type or top-level type; content_type: is an alias
            (
                "river mime:text/plain",
                &["gemini://tilde.example/~alice/notes.txt"],
            ),
            ("mime:image", &["gemini://files.example/pics/fox.png"]),
            (
                "content_type:image/png",
                &["gemini://files.example/pics/fox.png"],
            ),
            // filetype: the URL's extension
            (
                "river filetype:txt",
                &["gemini://tilde.example/~alice/notes.txt"],
            ),
            ("filetype:png", &["gemini://files.example/pics/fox.png"]),
            // size: with suffixes
            ("river size:>1M", &["gemini://tilde.example/~bob/index.gmi"]),
            (
                "river size:<10K",
                &["gemini://tilde.example/~alice/notes.txt"],
            ),
            // inurl: and intitle:
            ("inurl:pics", &["gemini://files.example/pics/fox.png"]),
            // the scheme is not a word of the URL: no page says "gemini"
            ("inurl:gemini", &[]),
            (
                "river intitle:notes",
                &["gemini://tilde.example/~alice/notes.txt"],
            ),
            (
                "intitle:\"morning runs\"",
                &["gemini://blog.example.org/posts/runs.gmi"],
            ),
            // NOT, -, OR and parentheses
            (
                "river -trains",
                &[
                    "gemini://blog.example.org/posts/runs.gmi",
                    "gemini://tilde.example/~alice/notes.txt",
                ],
            ),
            (
                "river NOT (trains OR mountains)",
                &["gemini://blog.example.org/posts/runs.gmi"],
            ),
            (
                "(trains OR mountains) river",
                &[
                    "gemini://tilde.example/~alice/notes.txt",
                    "gemini://tilde.example/~bob/index.gmi",
                ],
            ),
            (
                "cycling OR tokyo OR 東京",
                &["gemini://example.org/", "gemini://jp.example/"],
            ),
        ];
        for (query, want) in cases {
            let res = si.search(query, 10, 0).expect(query);
            let mut got = urls(&res);
            got.sort_unstable();
            let mut want = want.to_vec();
            want.sort_unstable();
            assert_eq!(got, want, "query {query:?}");
            assert_eq!(res.total, want.len(), "total for {query:?}");
        }
    }

    #[test]
    fn an_exact_form_outranks_a_stem_only_match() {
        let (_tmp, si) = index_of(&[
            page(
                "gemini://a.example/x",
                "A",
                "The dogs were running all day long.",
            ),
            page(
                "gemini://b.example/x",
                "B",
                "The dog runs all day long, every day.",
            ),
        ]);
        let res = si.search("running", 10, 0).expect("search");
        assert_eq!(urls(&res), ["gemini://a.example/x", "gemini://b.example/x"]);
    }

    #[test]
    fn title_match_ranks_above_body_only_match() {
        let (_tmp, si) = index_of(&corpus());
        let res = si.search("tomatoes", 10, 0).expect("search");
        assert_eq!(
            urls(&res),
            vec!["gemini://b.example/", "gemini://a.example/"]
        );
        assert!(res.hits[0].score > res.hits[1].score);
    }

    #[test]
    fn authority_and_the_home_page_prior_break_text_ties() {
        let same = "a page about otters and rivers";
        let pages = [
            page("gemini://a.example/deep/down/otters.gmi", "Otters", same),
            page("gemini://b.example/deep/down/otters.gmi", "Otters", same),
            page("gemini://c.example/", "Otters", same),
        ];
        let (tmp, si) = index_of(&pages);
        // Without authority, the home page wins on the prior; the others tie.
        let res = si.search("otters", 10, 0).expect("search");
        assert_eq!(res.hits[0].url, "gemini://c.example/");
        assert!(res.hits[0].parts.prior > res.hits[1].parts.prior);
        // A strong authority for b lifts it to the top once the reader sees the new file.
        crate::index::authority::write(
            tmp.path(),
            &[(url_hash("gemini://b.example/deep/down/otters.gmi"), 1.0)],
        )
        .expect("write authority");
        let reopened = SearchIndex::open(tmp.path()).expect("reopen");
        let res = reopened.search("otters", 10, 0).expect("search");
        assert_eq!(res.hits[0].url, "gemini://b.example/deep/down/otters.gmi");
        assert_eq!(res.hits[0].parts.authority, 1.0);
        assert_eq!(res.hits[1].url, "gemini://c.example/");
        // Plain BM25 ignores both: the three pages score alike.
        let bm25 = reopened
            .search_with(
                "otters",
                &SearchOptions {
                    ranking: Ranking::Bm25,
                    ..SearchOptions::default()
                },
            )
            .expect("bm25");
        let score_of = |host: &str| {
            let hit = bm25.hits.iter().find(|h| h.url.contains(host)).expect(host);
            assert_eq!((hit.parts.authority, hit.parts.prior), (0.0, 1.0));
            hit.score
        };
        assert_eq!(score_of("a.example"), score_of("b.example"));
    }

    #[test]
    fn one_capsule_takes_at_most_two_places_per_ten_while_others_wait() {
        // Capsule a has the 12 best pages (more matches), capsule b and c one each.
        let mut pages: Vec<PageDoc> = (0..12)
            .map(|i| PageDoc {
                host: "a.example".to_string(),
                ..page(
                    &format!("gemini://a.example/{i}"),
                    "Lynx",
                    "lynx lynx lynx lynx lynx in the forest",
                )
            })
            .collect();
        for host in ["b.example", "c.example"] {
            pages.push(PageDoc {
                host: host.to_string(),
                ..page(
                    &format!("gemini://{host}/p"),
                    "Lynx",
                    "a lynx in the forest, once",
                )
            });
        }
        let (_tmp, si) = index_of(&pages);
        let first = si.search("lynx", 10, 0).expect("first page");
        let hosts: Vec<&str> = first.hits.iter().map(|h| h.host.as_str()).collect();
        assert_eq!(
            &hosts[..4],
            ["a.example", "a.example", "b.example", "c.example"],
            "{hosts:?}"
        );
        // The rest of the first block is a's again (nobody else is left), and nothing is lost.
        let second = si.search("lynx", 10, 10).expect("second page");
        let mut all: Vec<&str> = urls(&first);
        all.extend(urls(&second));
        let mut sorted = all.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!((all.len(), sorted.len(), first.total), (14, 14, 14));
    }

    #[test]
    fn diversify_caps_capsules_per_block_and_keeps_every_item() {
        // (capsules of the ranked items, cap, block, expected order as indexes)
        type Case = (&'static [u64], usize, usize, &'static [usize]);
        let cases: &[Case] = &[
            (&[], 2, 10, &[]),
            (&[1, 1, 1, 2], 2, 10, &[0, 1, 3, 2]),
            (&[1, 1, 1, 1], 2, 10, &[0, 1, 2, 3]),
            (&[1, 1, 1, 2, 2, 2], 2, 3, &[0, 1, 3, 2, 4, 5]),
            (&[1, 2, 1, 2, 1, 2, 3], 2, 4, &[0, 1, 2, 3, 4, 5, 6]),
            (&[1, 1, 1, 1, 2, 3], 1, 3, &[0, 4, 5, 1, 2, 3]),
        ];
        for (capsules, cap, block, want) in cases {
            let items: Vec<(usize, u64)> = capsules.iter().copied().enumerate().collect();
            let got: Vec<usize> = diversify(&items, |&(_, c)| c, |_| 1.0, *cap, *block)
                .into_iter()
                .map(|(i, _)| i)
                .collect();
            assert_eq!(&got, want, "capsules {capsules:?} cap {cap} block {block}");
        }
    }

    #[test]
    fn diversity_does_not_promote_faint_results() {
        // (capsule, score), best first: capsule 1 has three strong results, capsule 3 a good
        // one, capsule 2 a faint one.
        let items = [(1u64, 10.0f32), (1, 9.0), (1, 8.0), (3, 5.0), (2, 1.0)];
        let order = |items: &[(u64, f32)]| -> Vec<(u64, f32)> {
            diversify(items, |&(c, _)| c, |&(_, s)| s, 2, 10)
        };
        // Capsule 3 (5.0 >= 0.2 x 8.0) moves up; capsule 2 (1.0 < 1.6) does not.
        assert_eq!(
            order(&items),
            [(1, 10.0), (1, 9.0), (3, 5.0), (1, 8.0), (2, 1.0)]
        );
    }

    #[test]
    fn hits_carry_the_stored_fields() {
        let (_tmp, si) = index_of(&corpus());
        let res = si.search("sun", 10, 0).expect("search");
        let hit = &res.hits[0];
        assert_eq!(hit.url, "gemini://a.example/");
        assert_eq!(hit.title, "Gardening notes");
        assert_eq!(hit.host, "example.org");
        assert_eq!(hit.mime, "text/gemini");
        assert_eq!(hit.lang.as_deref(), Some("en"));
        assert_eq!(
            hit.size,
            "Tomatoes need sun. My café sells them.".len() as u64
        );
        assert_eq!(hit.fetched_at, 1_700_000_000);
        assert!(hit.parts.text > 0.0 && hit.parts.prior >= 1.0);

        let json = serde_json::to_value(&res).expect("json");
        assert_eq!(json["total"], 1);
        assert_eq!(json["hits"][0]["url"], "gemini://a.example/");
        assert!(json["hits"][0]["parts"]["text"].as_f64().is_some());
    }

    #[test]
    fn language_is_declared_else_detected_else_none() {
        let english = "The weather was fine this morning, so we walked to the harbour and \
                       watched the boats come in with the tide before breakfast.";
        let (_tmp, si) = index_of(&[
            PageDoc {
                lang: None,
                ..page("gemini://x.example/", "T", "quokka")
            },
            PageDoc {
                lang: None,
                ..page("gemini://y.example/", "Harbour", english)
            },
            PageDoc {
                lang: Some("fr-CA".to_string()),
                ..page("gemini://z.example/", "Harbour", english)
            },
        ]);
        let lang_of = |q: &str| si.search(q, 10, 0).expect(q).hits[0].lang.clone();
        assert_eq!(lang_of("quokka"), None);
        assert_eq!(lang_of("harbour site:y.example").as_deref(), Some("en"));
        assert_eq!(lang_of("harbour site:z.example").as_deref(), Some("fr"));
    }

    #[test]
    fn total_counts_all_matches_while_limit_and_offset_page() {
        let pages: Vec<PageDoc> = (0..7)
            .map(|i| page(&format!("gemini://p{i}.example/"), "T", "common word"))
            .collect();
        let (_tmp, si) = index_of(&pages);
        let all = si.search("common", 100, 0).expect("all");
        let all_urls = urls(&all);
        let cases: &[(usize, usize, std::ops::Range<usize>)] = &[
            (3, 0, 0..3),
            (3, 3, 3..6),
            (3, 6, 6..7),
            (3, 7, 7..7),
            (3, 1000, 7..7),
            (0, 0, 0..0),
            (usize::MAX, 0, 0..7),
            (usize::MAX, usize::MAX, 7..7),
        ];
        for (limit, offset, want) in cases {
            let res = si.search("common", *limit, *offset).expect("page");
            assert_eq!(res.total, 7, "limit {limit} offset {offset}");
            assert_eq!(
                urls(&res),
                all_urls[want.clone()].to_vec(),
                "limit {limit} offset {offset}"
            );
        }
    }

    #[test]
    fn snippets_mark_matched_words_on_one_line() {
        let long_tail = " filler".repeat(100);
        let (_tmp, si) = index_of(&[
            page(
                "gemini://s.example/",
                "Snippets",
                &format!("Intro line.\n\nThe   Café opens\tat noon.{long_tail}"),
            ),
            page(
                "gemini://t.example/",
                "Ruby",
                "Про язык Ruby и его СИНТАКСИС.",
            ),
        ]);
        let cases: &[(&str, &str)] = &[
            ("cafe", "**Café**"),
            ("noon opens", "**opens** at **noon**"),
            ("синтаксис", "**СИНТАКСИС**"),
        ];
        for (query, want) in cases {
            let res = si.search(query, 10, 0).expect(query);
            let snippet = &res.hits[0].snippet;
            assert!(
                snippet.contains(want),
                "query {query:?}: snippet {snippet:?}"
            );
            assert!(
                !snippet.contains('\n') && !snippet.contains("  "),
                "{snippet:?}"
            );
            assert!(
                snippet.chars().count() <= SNIPPET_MAX_CHARS + 8,
                "{snippet:?}"
            );
        }
    }

    #[test]
    fn malformed_and_empty_queries_are_query_errors() {
        let (_tmp, si) = index_of(&corpus());
        for query in [
            "",
            "   \t\n",
            "\"unbalanced",
            "(tomatoes",
            "tomatoes)",
            "tomatoes OR",
            "-tomatoes",
            "site:",
            "size:notanumber",
            "lang:english!",
            // no word the index could hold
            "---",
            "!!! ???",
        ] {
            match si.search(query, 10, 0) {
                Err(IndexError::Query(msg)) => assert!(!msg.is_empty(), "{query:?}"),
                other => panic!("query {query:?}: expected Query error, got {other:?}"),
            }
        }
        // Words that merely contain a colon are words, not unknown fields.
        for query in ["gemini://a.example/", "nosuchfield:word", "12:30"] {
            assert!(si.search(query, 10, 0).is_ok(), "{query:?}");
        }
    }

    #[test]
    fn pages_lacking_words_follow_and_say_which() {
        let (_tmp, si) = index_of(&corpus());
        let res = si.search("tomatoes sun zebra", 10, 0).expect("search");
        // a.example holds two of the three words, b.example one; nobody holds zebra.
        assert_eq!(urls(&res), ["gemini://a.example/", "gemini://b.example/"]);
        assert_eq!(res.hits[0].missing, ["zebra"]);
        assert_eq!(res.hits[1].missing, ["sun", "zebra"]);
        assert!(res.hits[0].parts.coverage > res.hits[1].parts.coverage);
        assert_eq!((res.total, res.with_all_words), (2, 0));
        // All the words: first, with nothing missing.
        let res = si.search("tomatoes sun", 10, 0).expect("search");
        assert_eq!(urls(&res), ["gemini://a.example/", "gemini://b.example/"]);
        assert!(res.hits[0].missing.is_empty());
        assert_eq!(res.with_all_words, 1);
        // --strict: today's AND; phrases, exclusions and AND keep their strict meaning.
        let strict = si
            .search_with("tomatoes sun zebra", &STRICT)
            .expect("strict");
        assert_eq!(strict.total, 0);
        for query in ["tomatoes AND zebra", "\"red fruit\" sun", "tomatoes -sun"] {
            let got = si.search(query, 10, 0).expect(query);
            let want = si.search_with(query, &STRICT).expect(query);
            assert_eq!(urls(&got), urls(&want), "{query}");
        }
        let res = si
            .search("\"red fruit\" tomatoes sun", 10, 0)
            .expect("phrase");
        assert_eq!(urls(&res), ["gemini://b.example/"]);
        assert_eq!(res.hits[0].missing, ["sun"]);
    }

    #[test]
    fn misspelled_words_match_their_neighbours_below_exact_matches() {
        let mut pages: Vec<PageDoc> = (0..4)
            .map(|i| {
                page(
                    &format!("gemini://r.example/{i}"),
                    "R",
                    "A review of a phone.",
                )
            })
            .collect();
        pages.push(page(
            "gemini://t.example/",
            "Typo",
            "My reveiw of the phone.",
        ));
        pages.push(page(
            "gemini://s.example/",
            "Sauce",
            "Bearnaise sauce, slowly.",
        ));
        let (_tmp, si) = index_of(&pages);
        // "sause" is in no page: its neighbour "sauce" is searched, and offered.
        let res = si.search("bearnaise sause", 10, 0).expect("search");
        assert_eq!(urls(&res), ["gemini://s.example/"]);
        assert!(res.hits[0].missing.is_empty(), "{:?}", res.hits[0].missing);
        assert_eq!(res.did_you_mean.as_deref(), Some("bearnaise sauce"));
        // A rare word (one page) also finds its frequent neighbour, ranked below itself.
        let res = si.search("reveiw", 10, 0).expect("search");
        assert_eq!(res.hits[0].url, "gemini://t.example/");
        assert_eq!(res.total, 5);
        // A known word is left alone.
        let res = si.search("review", 10, 0).expect("search");
        assert_eq!((res.total, res.did_you_mean), (4, None));
        // --strict has no spelling help.
        assert_eq!(si.search_with("sause", &STRICT).expect("strict").total, 0);
    }

    #[test]
    fn near_duplicates_fold_into_their_best_member() {
        let story = "The lighthouse keeper climbed the stairs every evening at dusk, \
            trimmed the wick, polished the great lens and watched the ships pass the reef \
            until dawn, writing each one down in a leather log that nobody ever read.";
        let pages = [
            PageDoc {
                host: "a.example".to_string(),
                ..page("gemini://a.example/keeper.gmi", "The keeper", story)
            },
            PageDoc {
                host: "b.example".to_string(),
                ..page(
                    "gemini://b.example/2021-01-01-keeper.gmi",
                    "Keeper (repost)",
                    &format!("2021-01-01\n{story}"),
                )
            },
            PageDoc {
                host: "c.example".to_string(),
                ..page(
                    "gemini://c.example/other.gmi",
                    "Other",
                    "A different page that mentions a lighthouse once.",
                )
            },
        ];
        let (_tmp, si) = index_of(&pages);
        let res = si.search("lighthouse keeper", 10, 0).expect("search");
        let shown = urls(&res);
        assert_eq!(shown.len(), 2, "{shown:?}");
        let dup = &res.hits[0];
        assert!(dup.url.contains("keeper"), "{shown:?}");
        assert_eq!(dup.similar, 1);
        assert_eq!(res.hits[1].similar, 0);
        // --all lists both copies; similar:URL lists the cluster.
        let all = si
            .search_with(
                "lighthouse keeper",
                &SearchOptions {
                    all: true,
                    ..SearchOptions::default()
                },
            )
            .expect("all");
        assert_eq!(all.hits.len(), 3);
        let cluster = si
            .search("similar:gemini://a.example/keeper.gmi", 10, 0)
            .expect("similar");
        let mut members = urls(&cluster);
        members.sort_unstable();
        assert_eq!(
            members,
            [
                "gemini://a.example/keeper.gmi",
                "gemini://b.example/2021-01-01-keeper.gmi"
            ]
        );
        let unknown = si.search("similar:gemini://nowhere.example/", 10, 0);
        assert_eq!(unknown.expect("unknown page").total, 0);
    }

    #[test]
    fn opening_a_missing_index_is_missing() {
        let tmp = tempfile::tempdir().expect("tempdir");
        for dir in [tmp.path().to_path_buf(), tmp.path().join("absent")] {
            match SearchIndex::open(&dir) {
                Err(IndexError::Missing(p)) => assert_eq!(p, dir),
                Err(e) => panic!("{}: expected Missing, got {e:?}", dir.display()),
                Ok(_) => panic!("{}: expected Missing, got an index", dir.display()),
            }
        }
    }

    #[test]
    fn reader_sees_later_commits() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let mut ix = Indexer::open_or_create(tmp.path()).expect("open");
        ix.upsert(&page("gemini://a.example/", "A", "one"))
            .expect("upsert");
        ix.commit(1).expect("commit");
        let si = SearchIndex::open(tmp.path()).expect("open reader while writer lives");
        assert_eq!(si.num_docs(), 1);
        ix.upsert(&page("gemini://b.example/", "B", "two"))
            .expect("upsert");
        ix.commit(2).expect("commit");
        // OnCommitWithDelay reloads asynchronously; give it a bounded time.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while si.num_docs() < 2 && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        assert_eq!(si.num_docs(), 2);
    }
}
