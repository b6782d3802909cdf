//! Searching: readers over the index, ranking, result diversity, snippets.
//!
//! A [`SearchIndex`] never takes the writer lock and writes nothing (it reads through
//! `readonly.rs`), so `geode search` and `geode serve` can run while a crawl is writing, on a
//! read-only directory, or as a user who may only read the index; the reader picks up new commits shortly after they land, and the
//! authority file when a crawl rewrites it.
//!
//! Ranking (the formula is in ARCHITECTURE.md, "Ranking"): Tantivy's BM25 over the fields the
//! compiled query names, times a link-authority factor and a home-page prior (read per segment
//! into arrays, `priors`), computed per matching document while the collector (`score`) keeps
//! the best candidates. The first
//! [`DIVERSITY_WINDOW`] results are then reordered so that no capsule takes more than
//! [`PER_CAPSULE`] places in any block of [`BLOCK`] results; the others move down, never out.
//! The head of the window ([`FIRST_WINDOW`]) is ranked first and nearly always settles the page
//! asked for; the whole window is ranked only when it does not (`diversity::diversify_head`).
//!
//! Snippets are plain text, matched words wrapped in `**`..`**`; rendering them as gemtext or
//! a terminal line is the caller's business.
//!
//! Not here: query parsing (`crate::query`), compiling a query (`compile`), writing. Here and
//! below: `score` (the per-document score and its parts, coverage of relaxed queries), `lexicon`
//! (the index as the query compiler sees it), `proximity` (the words near each other, at the
//! best pages only), `diversity` (capsules taking turns), `fuse` (the ranking by words fused
//! with the pages nearest by meaning, when the caller brings them: [`SearchIndex::search_hybrid`]).

mod diversity;
mod fuse;
mod lexicon;
mod priors;
mod proximity;
mod score;
#[cfg(test)]
mod tests;
mod walk;

pub use fuse::FUSION;

use diversity::{diversify, diversify_head, BLOCK, DIVERSITY_WINDOW, FIRST_WINDOW, PER_CAPSULE};
use lexicon::{IndexLexicon, SnapshotCache};
use priors::Priors;
use score::{annotate, rescore, Coverage, Ranked, Ranker, WordChecks};

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tantivy::collector::Count;
use tantivy::query::TermQuery;
use tantivy::schema::{IndexRecordOption, Value};
use tantivy::{
    DocAddress, DocSet, Index, IndexReader, ReloadPolicy, Searcher, TantivyDocument, Term,
};

use crate::index::analysis::StemCache;
use crate::index::authority::Authority;
use crate::index::compile::{compile, relax, Relaxed};
use crate::index::snippet::{snippet_with, Highlighter, TermCache};
use crate::index::{open_index, Access, Fields, IndexError};
use crate::query;

/// How many of the best pages, by their score without it, earn the bonus of the query's words
/// near each other: looking for them in every matching page cost more than the rest of a search.
/// Within [`FIRST_WINDOW`], so that the head of the window holds them all.
const PROXIMITY_WINDOW: usize = 100;
const _: () = assert!(PROXIMITY_WINDOW <= FIRST_WINDOW);

/// The words of a query are found together several times more often than independent words
/// would be (on the 500,000 pages of `scripts/bench-search`: `linux kernel` 3 times, `coffee
/// bread` 11), for guessing whether many pages hold them all.
const WORDS_TOGETHER: f64 = 10.0;

/// How many pages hold any of the words of `relaxed` (what [`Relaxed::any_word`] matches),
/// `complete` being how many hold them all. With one essential word or none that is the same
/// count ([`Relaxed::any_word_is_all_words`]). When it is a union of terms, their postings are read for document ids alone and marked
/// in one bit set a segment: no scorer, no term frequencies, no union merging cursors (on the
/// several-word queries of `scripts/bench-search`, counting through a scorer took 13-42% of the
/// time that ranking the pages with every word took).
fn count_any_word(
    searcher: &Searcher,
    relaxed: &Relaxed,
    complete: usize,
) -> Result<usize, IndexError> {
    if relaxed.any_word_is_all_words() {
        return Ok(complete);
    }
    let Some(terms) = relaxed.any_word_terms() else {
        return Ok(searcher.search(&*relaxed.any_word(), &Count)?);
    };
    let mut total = 0;
    let mut bits: Vec<u64> = Vec::new();
    for segment in searcher.segment_readers() {
        bits.clear();
        bits.resize((segment.max_doc() as usize).div_ceil(64), 0);
        for term in &terms {
            let index = segment.inverted_index(term.field())?;
            let Some(mut postings) = index.read_postings(term, IndexRecordOption::Basic)? else {
                continue;
            };
            let mut doc = postings.doc();
            while doc != tantivy::TERMINATED {
                if !segment.is_deleted(doc) {
                    bits[doc as usize / 64] |= 1 << (doc % 64);
                }
                doc = postings.advance();
            }
        }
        total += bits.iter().map(|w| w.count_ones() as usize).sum::<usize>();
    }
    Ok(total)
}

/// Longest snippet, in characters.
const SNIPPET_MAX_CHARS: usize = 220;

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
    /// Link authority in 0..=1, -0.9 for a page of a capsule held back as a trap (times its
    /// weight in the score).
    pub authority: f32,
    /// Home-page prior, at least 1.
    pub prior: f32,
    /// Share of the query's weight (its words' idf) the page holds: 1 when it has every word.
    pub coverage: f32,
    /// The cosine of the page's vector and the query's, when the search used a model and the
    /// page was among the query's nearest (`score` is then the fused one, see `fuse.rs`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub semantic: Option<f32>,
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

impl SearchResults {
    /// The JSON object `geode search --json` prints and the web frontend's `/api/search`
    /// answers: the query, the counts, the correction, where the page starts, how long the
    /// search took (milliseconds, to the microsecond) and the hits.
    pub fn to_json(
        &self,
        query: &str,
        offset: usize,
        limit: usize,
        took: std::time::Duration,
    ) -> serde_json::Value {
        let took_ms = took.as_secs_f64() * 1000.0;
        serde_json::json!({
            "query": query,
            "total": self.total,
            "with_all_words": self.with_all_words,
            "did_you_mean": self.did_you_mean,
            "offset": offset,
            "limit": limit,
            "took_ms": (took_ms * 1000.0).round() / 1000.0,
            "hits": self.hits,
        })
    }
}

/// The form of a query that is searched.
#[derive(Clone, Copy)]
enum Matcher<'a> {
    /// Every word required.
    Strict(&'a dyn tantivy::query::Query),
    /// Words that may be missing (see `compile::relax`).
    Relaxed(&'a Relaxed),
}

/// What [`SearchIndex::rank`] is asked for.
struct RankRequest<'a> {
    matcher: Matcher<'a>,
    /// The pages nearest the query by meaning, nearest first, with their cosines: fused with
    /// the ranking by words when given.
    near: Option<&'a [(String, f32)]>,
    full: bool,
    collapse: bool,
    /// The results that must come out as from the whole window: those up to the end of the
    /// page asked for.
    settle: usize,
}

/// The ranked window of a search, folded and reordered.
struct RankedWindow {
    /// Pages matching, with all the words or some.
    total: usize,
    with_all_words: usize,
    ranked: Vec<(Ranked, DocAddress)>,
    /// Whether the pages were scored by coverage (else each holds every essential word).
    covered: bool,
}

/// A read-only view of the index; cheap to query many times, from several threads.
pub struct SearchIndex {
    // Kept so the tokenizer registration the analysis relies on stays alive.
    _index: Index,
    reader: IndexReader,
    fields: Fields,
    dir: PathBuf,
    authority: Mutex<AuthorityState>,
    /// What queries read once per index snapshot (capsule-name labels, stem languages).
    cache: SnapshotCache,
    /// The stems snippets found, kept for the next query (taken by one query at a time:
    /// another running meanwhile starts without).
    stems: Mutex<StemCache>,
}

struct AuthorityState {
    /// The authority scores and what was read from them per segment.
    priors: Arc<Priors>,
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
                priors: Arc::new(Priors::new(scores)),
                checked: Instant::now(),
            }),
            cache: SnapshotCache::default(),
            stems: Mutex::new(StemCache::default()),
        })
    }

    /// Number of documents in the index.
    pub fn num_docs(&self) -> u64 {
        self.reader.searcher().num_docs()
    }

    /// Calls `each` with the URL, title, headings and body of every page of the index as it is
    /// now (one snapshot), until it returns false: what `geode embed` reads.
    pub fn each_page(
        &self,
        mut each: impl FnMut(&str, &str, &str, &str) -> bool,
    ) -> Result<(), IndexError> {
        let searcher = self.reader.searcher();
        let f = &self.fields;
        for segment in searcher.segment_readers() {
            let store = segment.get_store_reader(4)?;
            for doc in store.iter::<TantivyDocument>(segment.alive_bitset()) {
                let doc = doc?;
                let text = |field| first_str(&doc, field).unwrap_or_default();
                if !each(text(f.url), text(f.title), text(f.headings), text(f.body)) {
                    return Ok(());
                }
            }
        }
        Ok(())
    }

    /// A number that changes whenever what a search can return changes: a hash of the
    /// segments the reader sees now and of their deletions. Equal numbers mean equal answers
    /// (the web frontend's `ETag`s rest on it); a commit that changes nothing may still change it.
    pub fn version(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let searcher = self.reader.searcher();
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        for segment in searcher.segment_readers() {
            segment.segment_id().uuid_string().hash(&mut hasher);
            segment.num_deleted_docs().hash(&mut hasher);
        }
        hasher.finish()
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
        self.search_hybrid(text, parsed, options, None)
    }

    /// The query with each word the index does not know replaced by its likeliest spelling
    /// there ("nvme drivr haiku" to "nvme driver haiku"), or `None` when every word is known or
    /// has no likely spelling: what a model should read of a query with a typo, since it
    /// cannot match words as the index does.
    pub fn respelled(&self, text: &str, parsed: &query::Query) -> Option<String> {
        let searcher = self.reader.searcher();
        let lexicon = IndexLexicon {
            searcher: &searcher,
            fields: &self.fields,
            cache: &self.cache,
        };
        let relaxed = relax(parsed, &self.fields, &lexicon, query::explicit_and(text))?;
        // Known words stay: `suggestion` replaces only unknown ones when some page holds all.
        suggestion(text, &relaxed, usize::MAX)
    }

    /// Runs a parsed query, its ranking by words fused with `near`, the pages nearest to it by
    /// meaning (nearest first, with their cosines), when given and when the query is one that
    /// meaning may answer ([`meaning_applies`]).
    pub fn search_hybrid(
        &self,
        text: &str,
        parsed: &query::Query,
        options: &SearchOptions,
        near: Option<&[(String, f32)]>,
    ) -> Result<SearchResults, IndexError> {
        let near = near.filter(|_| meaning_applies(text, parsed, options));
        let searcher = self.reader.searcher();
        let lexicon = IndexLexicon {
            searcher: &searcher,
            fields: &self.fields,
            cache: &self.cache,
        };
        let relaxed = if options.strict {
            None
        } else {
            relax(parsed, &self.fields, &lexicon, query::explicit_and(text))
        };
        // The strict form is compiled only when it is the one searched.
        let strict;
        let matcher = match &relaxed {
            Some(r) => Matcher::Relaxed(r),
            None => {
                strict = compile(parsed, &self.fields, &lexicon).map_err(|_| {
                    IndexError::Query("the query has no word that can be searched for".to_string())
                })?;
                Matcher::Strict(&*strict)
            }
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
            let (total, with_all_words) = match matcher {
                Matcher::Strict(q) => {
                    let n = searcher.search(q, &Count)?;
                    (n, n)
                }
                Matcher::Relaxed(r) => {
                    let complete = searcher.search(&*r.all_words(), &Count)?;
                    (count_any_word(&searcher, r, complete)?, complete)
                }
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
        // results comes from the same order. Most searches ask for the first page, which the
        // head of that window nearly always settles: the whole window is ranked only when the
        // head falls short.
        let window = if full || collapse {
            end.max(DIVERSITY_WINDOW).min(num_docs)
        } else {
            end
        };
        let ask = RankRequest {
            matcher,
            near,
            full,
            collapse,
            settle: end,
        };
        let head = end.max(FIRST_WINDOW).min(window);
        let mut ranking = match head < window {
            true => self.rank(&searcher, &ask, head, false)?,
            false => None,
        };
        if ranking.is_none() {
            ranking = self.rank(&searcher, &ask, window, true)?;
        }
        let Some(RankedWindow {
            total,
            with_all_words,
            ranked,
            covered,
        }) = ranking
        else {
            // Unreachable: the whole window always settles.
            return Err(IndexError::Query("the ranking fell short".to_string()));
        };

        // A page may lack words when its coverage says so, or when it was only asked to hold
        // the essential ones.
        let may_lack = |r: &Ranked| match &relaxed {
            None => false,
            Some(_) if found_by_meaning_alone(r) => true,
            Some(_) if covered => r.parts.coverage < 1.0,
            Some(rel) => rel.words.iter().any(|w| !w.essential),
        };
        let shown: Vec<(Ranked, DocAddress)> = ranked.into_iter().skip(offset).take(page).collect();
        // Which words the shown pages lack, looked up together: one cursor per word, moving
        // forward through the pages in index order.
        let mut missing = match &relaxed {
            Some(r) if shown.iter().any(|(ranked, _)| may_lack(ranked)) => {
                // Without coverage every page holds the essential words: only the others are
                // in question.
                // A page found by meaning alone may lack any word.
                let optional_only =
                    !covered && !shown.iter().any(|(r, _)| found_by_meaning_alone(r));
                let checks = WordChecks::new(&searcher, r, optional_only)?;
                let lacking: Vec<DocAddress> = shown
                    .iter()
                    .filter(|(ranked, _)| may_lack(ranked))
                    .map(|&(_, address)| address)
                    .collect();
                let found = checks.missing(&searcher, &lacking)?;
                lacking.into_iter().zip(found).collect()
            }
            _ => HashMap::new(),
        };
        let highlighter = Highlighter::new(&parsed.highlight_words(), &[]);
        let mut terms = TermCache::default();
        terms.stems = self.take_stems();
        let mut hits = Vec::with_capacity(page);
        for (ranked, address) in shown {
            let doc: TantivyDocument = searcher.doc(address)?;
            let mut hit = self.hit(&doc, ranked, &highlighter, &mut terms);
            hit.missing = missing.remove(&address).unwrap_or_default();
            hit.similar = self.similar_count(&searcher, ranked.cluster)?;
            hits.push(hit);
        }
        self.give_back_stems(terms.stems);
        Ok(SearchResults {
            total,
            with_all_words,
            did_you_mean: relaxed
                .as_ref()
                .and_then(|r| suggestion(text, r, with_all_words)),
            hits,
        })
    }

    /// The best `limit` pages for a query, folded and reordered; `None` when they are only the
    /// head of the window (`whole` false) and do not settle the first `ask.settle` results as
    /// the whole window would.
    fn rank(
        &self,
        searcher: &Searcher,
        ask: &RankRequest,
        limit: usize,
        whole: bool,
    ) -> Result<Option<RankedWindow>, IndexError> {
        let priors = self.current_priors();
        priors.retain(searcher);
        let ranker = |coverage| Ranker {
            limit,
            priors: Arc::clone(&priors),
            full: ask.full,
            coverage,
        };
        // Whether the pages were scored by coverage (else each holds every essential word).
        let mut covered = false;
        // One ranking for pages with all the words and pages with some: a page lacking words
        // scores its text relevance times its coverage cubed, so it follows the pages with all
        // the words unless those match them only faintly (a bookmark list of 12,000 links holds
        // every word of most queries, each drowned in its length).
        let (total, with_all_words, mut ranked) = match ask.matcher {
            Matcher::Strict(q) => {
                let (n, ranked) = searcher.search(q, &(Count, ranker(None)))?;
                (n, n, ranked)
            }
            Matcher::Relaxed(r) => {
                // Pages with all the words first: when a thousand of them fill the window, a
                // page lacking words would need to beat them all on a third or less of its
                // score, so the costlier scoring of every page with some word is skipped. When
                // few pages are likely to hold them all, they are only counted, since the pages
                // with some word will be ranked anyway. The guess only orders the work.
                let all_words = r.all_words();
                let enough = DIVERSITY_WINDOW.max(limit);
                let likely_few =
                    r.independent_estimate(searcher.num_docs()) * WORDS_TOGETHER < enough as f64;
                let (complete, ranked) = match likely_few {
                    true => match searcher.search(&*all_words, &Count)? {
                        complete if complete >= enough => {
                            (complete, searcher.search(&*all_words, &ranker(None))?)
                        }
                        complete => (complete, Vec::new()),
                    },
                    false => searcher.search(&*all_words, &(Count, ranker(None)))?,
                };
                if complete >= enough {
                    (count_any_word(searcher, r, complete)?, complete, ranked)
                } else {
                    covered = true;
                    let coverage = Arc::new(Coverage::new(searcher, r)?);
                    let (total, ranked) =
                        searcher.search(&*r.any_word(), &(Count, ranker(Some(coverage))))?;
                    (total, complete, ranked)
                }
            }
        };
        // Fewer pages than asked for: they are every match, as the whole window would hold.
        let every_match = whole || ranked.len() < limit;
        // The best pages earn a bonus for the words near each other, and stay ahead of the
        // others (whose scores are no higher than theirs without it).
        let proximity = match ask.matcher {
            Matcher::Relaxed(r) => r.proximity(),
            _ => None,
        };
        if let Some(proximity) = proximity {
            let best = ranked.len().min(PROXIMITY_WINDOW);
            rescore(searcher, proximity, &mut ranked[..best], ask.full)?;
        }
        let mut total = total;
        if let Some(near) = ask.near {
            total += self.fuse(searcher, &mut ranked, near)?;
        }
        // The best-ranked member of a cluster of near-duplicates stands for it; then no capsule
        // takes more than its share of each block.
        annotate(searcher, &mut ranked)?;
        if ask.collapse {
            let mut seen = HashSet::new();
            ranked.retain(|(r, _)| seen.insert(r.cluster));
        }
        if ask.full {
            let head = ranked.len().min(DIVERSITY_WINDOW);
            let capsule = |(r, _): &(Ranked, DocAddress)| r.capsule;
            let score = |(r, _): &(Ranked, DocAddress)| r.score;
            let reordered = match every_match {
                true => diversify(&ranked[..head], capsule, score, PER_CAPSULE, BLOCK),
                false => {
                    match diversify_head(
                        &ranked[..head],
                        capsule,
                        score,
                        PER_CAPSULE,
                        BLOCK,
                        ask.settle,
                    ) {
                        Some(reordered) => reordered,
                        None => return Ok(None),
                    }
                }
            };
            ranked.splice(..head, reordered);
        } else if !every_match && ranked.len() < ask.settle {
            return Ok(None);
        }
        Ok(Some(RankedWindow {
            total,
            with_all_words,
            ranked,
            covered,
        }))
    }

    /// Fuses the ranking by words (`ranked`, best first) with the pages nearest by meaning
    /// ([`FUSION`]): every page's score becomes its fused score, the pages found by meaning
    /// alone join, and all are ordered again. Returns how many joined.
    fn fuse(
        &self,
        searcher: &Searcher,
        ranked: &mut Vec<(Ranked, DocAddress)>,
        near: &[(String, f32)],
    ) -> Result<usize, IndexError> {
        let similarities: Vec<f32> = near.iter().map(|(_, s)| *s).collect();
        let fusion = FUSION;
        let counted = fusion.counted(&similarities);
        let mut by_meaning: HashMap<DocAddress, (usize, f32)> = HashMap::new();
        for (url, similarity) in &near[..counted] {
            if let Some(address) = self.address_of(searcher, url)? {
                let rank = by_meaning.len();
                by_meaning.entry(address).or_insert((rank, *similarity));
            }
        }
        // A page holding every word, ranked clearly first by them, stays first: meaning
        // reorders what the words leave open.
        let clear_winner = match ranked.as_slice() {
            [(first, address), rest @ ..] => Some(*address).filter(|_| {
                fusion.keeps_first(
                    first.parts.coverage,
                    first.score,
                    rest.first().map(|(r, _)| r.score),
                )
            }),
            [] => None,
        };
        for (rank, (r, address)) in ranked.iter_mut().enumerate() {
            let meaning = by_meaning.remove(address);
            r.parts.semantic = meaning.map(|(_, similarity)| similarity);
            r.score = fusion.score(Some(rank), meaning.map(|(rank, _)| rank));
        }
        let joined = by_meaning.len();
        for (address, (rank, similarity)) in by_meaning {
            let parts = ScoreParts {
                prior: 1.0,
                semantic: Some(similarity),
                ..ScoreParts::default()
            };
            let score = fusion.score(None, Some(rank));
            // Read with the others' by `annotate`, after the fusion.
            let (capsule, cluster) = (0, 0);
            ranked.push((
                Ranked {
                    score,
                    parts,
                    capsule,
                    cluster,
                },
                address,
            ));
        }
        ranked.sort_by(|(a, x), (b, y)| b.score.total_cmp(&a.score).then_with(|| x.cmp(y)));
        if let Some(winner) = clear_winner {
            if let Some(at) = ranked.iter().position(|(_, a)| *a == winner) {
                ranked[..=at].rotate_right(1);
            }
        }
        Ok(joined)
    }

    /// The live document of `url`, if the index holds it.
    fn address_of(&self, searcher: &Searcher, url: &str) -> Result<Option<DocAddress>, IndexError> {
        let term = Term::from_field_text(self.fields.url, url);
        for (ord, segment) in searcher.segment_readers().iter().enumerate() {
            let index = segment.inverted_index(self.fields.url)?;
            let Some(mut postings) = index.read_postings(&term, IndexRecordOption::Basic)? else {
                continue;
            };
            let mut doc = postings.doc();
            while doc != tantivy::TERMINATED {
                if !segment.is_deleted(doc) {
                    return Ok(Some(DocAddress::new(ord as u32, doc)));
                }
                doc = postings.advance();
            }
        }
        Ok(None)
    }

    /// The stems kept from earlier queries, or none while another query holds them.
    fn take_stems(&self) -> StemCache {
        match self.stems.try_lock() {
            Ok(mut kept) => std::mem::take(&mut *kept),
            Err(_) => StemCache::default(),
        }
    }

    /// Keeps `stems` for the next query, unless a query that ran meanwhile kept more.
    fn give_back_stems(&self, stems: StemCache) {
        if let Ok(mut kept) = self.stems.lock() {
            if kept.len() < stems.len() {
                *kept = stems;
            }
        }
    }

    /// How many other pages share a cluster of near-duplicates.
    fn similar_count(&self, searcher: &Searcher, cluster: u64) -> Result<usize, IndexError> {
        let query = TermQuery::new(
            Term::from_field_u64(self.fields.cluster, cluster),
            IndexRecordOption::Basic,
        );
        Ok(searcher.search(&query, &Count)?.saturating_sub(1))
    }

    fn hit(
        &self,
        doc: &TantivyDocument,
        ranked: Ranked,
        highlighter: &Highlighter,
        terms: &mut TermCache,
    ) -> Hit {
        let f = &self.fields;
        let lang = first_str(doc, f.lang).map(str::to_string);
        let body = first_str(doc, f.body).unwrap_or_default();
        Hit {
            url: self.text(doc, f.url),
            title: self.text(doc, f.title),
            snippet: snippet_with(body, highlighter, lang.as_deref(), SNIPPET_MAX_CHARS, terms),
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

    /// The authority scores (with the priors read from them), reloaded when a crawl has
    /// rewritten the file since the last check. A file that fails to load keeps the old scores
    /// (and logs why): ranking degrades, search goes on.
    fn current_priors(&self) -> Arc<Priors> {
        let mut state = match self.authority.lock() {
            Ok(state) => state,
            Err(poisoned) => poisoned.into_inner(),
        };
        if state.checked.elapsed() >= AUTHORITY_CHECK_EVERY {
            state.checked = Instant::now();
            if state.priors.authority().is_stale(&self.dir) {
                match Authority::load(&self.dir) {
                    Ok(fresh) => state.priors = Arc::new(Priors::new(Arc::new(fresh))),
                    Err(e) => tracing::warn!("keeping the old authority scores: {e}"),
                }
            }
        }
        Arc::clone(&state.priors)
    }

    fn text(&self, doc: &TantivyDocument, field: tantivy::schema::Field) -> String {
        first_str(doc, field).unwrap_or_default().to_string()
    }
}

/// Whether a query may be answered by meaning as well as by words: a relaxed query of bare
/// words, ranked in full. Phrases, filters, `AND`, `OR`, exclusions, `--strict` and the plain
/// BM25 ranking keep their lexical meaning.
pub fn meaning_applies(text: &str, parsed: &query::Query, options: &SearchOptions) -> bool {
    options.ranking == Ranking::Full
        && !options.strict
        && parsed.is_bare_words()
        && !query::explicit_and(text)
}

/// A page that holds none of the query's words and was found by its meaning.
fn found_by_meaning_alone(r: &Ranked) -> bool {
    r.parts.semantic.is_some() && r.parts.text == 0.0
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

fn first_str(doc: &TantivyDocument, field: tantivy::schema::Field) -> Option<&str> {
    doc.get_first(field).and_then(|v| v.as_str())
}
