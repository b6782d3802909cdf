//! The score of one matching page while Tantivy collects, and the best pages kept ([`Ranker`]):
//! BM25 times authority and the home-page prior, and, for relaxed queries, the share of the
//! query's weight a page holds ([`Coverage`]) and which words it lacks ([`WordChecks`]).

use std::cmp::Ordering;
use std::collections::HashMap;
use std::sync::Arc;

use tantivy::collector::{Collector, SegmentCollector};
use tantivy::columnar::ColumnValues;
use tantivy::query::{EnableScoring, Query, Scorer, Weight};
use tantivy::{DocAddress, DocId, Score, Searcher, SegmentOrdinal, SegmentReader};

use super::priors::{Priors, SegmentPriors};
use super::proximity;
use super::walk::{holds, in_index_order};
use crate::index::compile::{Proximity, Relaxed};
use crate::index::ScoreParts;

/// Weight of link authority: a page with the highest authority scores `1 + W_AUTHORITY` times
/// its text score.
const W_AUTHORITY: f32 = 1.0;

/// Weight of the home-page prior: a capsule's root scores `1 + W_HOME` times its text score, a
/// page one level down `1 + W_HOME / 2`, and so on.
const W_HOME: f32 = 0.5;

/// Added to the text score before the factors, so that filter-only queries (`site:x`, whose
/// clauses score 0) still order by authority and prior.
const TEXT_FLOOR: f32 = 0.01;

/// A page lacking words scores its text relevance times the share of the query's weight it
/// holds to this power: missing a rare word costs much more than missing a common one.
const COVERAGE_POWER: f32 = 3.0;

/// A candidate's score, its parts, its capsule and cluster. The collector fills in the score
/// and its parts; capsule and cluster are read afterwards for the window kept
/// ([`annotate`]), so that the thousands of pages that never enter it do not pay for them.
#[derive(Debug, Clone, Copy)]
pub(super) struct Ranked {
    pub(super) score: f32,
    pub(super) parts: ScoreParts,
    pub(super) capsule: u64,
    /// Its cluster of near-duplicates.
    pub(super) cluster: u64,
}

/// Collects the `limit` best pages by ranking score (BM25 times authority and the home-page
/// prior, times coverage cubed for pages that may lack words), best first, ties by document
/// address: the order Tantivy's `TopDocs` gives.
///
/// A page's coverage costs a seek per query word; it is computed only for pages whose score
/// without it (coverage is at most 1) could still enter the best `limit`, so the result is the
/// same as scoring every page.
pub(super) struct Ranker {
    pub(super) limit: usize,
    pub(super) priors: Arc<Priors>,
    pub(super) full: bool,
    /// For pages that may lack words: how much of the query each holds.
    pub(super) coverage: Option<Arc<Coverage>>,
}

pub(super) struct SegmentRanker {
    segment_ord: u32,
    /// Authority and depth by document, for the full ranking.
    priors: Option<Arc<SegmentPriors>>,
    coverage: Option<SegmentCoverage>,
    best: TopN,
}

/// The best `limit` entries, kept as Tantivy's `TopDocs` keeps them: a buffer of twice the
/// limit, cut back to the limit when full, which also raises the score an entry needs.
struct TopN {
    limit: usize,
    buffer: Vec<Entry>,
    /// No entry scoring less than this can be among the best.
    threshold: Option<f32>,
}

impl TopN {
    fn new(limit: usize) -> TopN {
        TopN {
            limit,
            buffer: Vec::with_capacity(2 * limit.min(4096)),
            threshold: None,
        }
    }

    /// Whether an entry scoring `score` would be passed over.
    fn below(&self, score: f32) -> bool {
        self.threshold.is_some_and(|t| score < t)
    }

    fn push(&mut self, entry: Entry) {
        if self.limit == 0 || self.below(entry.score) {
            return;
        }
        if self.buffer.len() >= 2 * self.limit {
            self.cut();
        }
        self.buffer.push(entry);
    }

    /// Keeps the best `limit`; the best one left out sets the threshold.
    fn cut(&mut self) {
        if self.buffer.len() > self.limit {
            let (_, first_out, _) = self
                .buffer
                .select_nth_unstable_by(self.limit, |a, b| b.cmp(a));
            self.threshold = Some(first_out.score);
            self.buffer.truncate(self.limit);
        }
    }
}

/// A collected page, ordered by score, then by lower document id first (as `TopDocs`).
#[derive(Debug, Clone, Copy)]
struct Entry {
    score: f32,
    parts: ScoreParts,
    doc: DocId,
}

impl Ord for Entry {
    fn cmp(&self, other: &Self) -> Ordering {
        self.score
            .total_cmp(&other.score)
            .then_with(|| other.doc.cmp(&self.doc))
    }
}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Entry {}

impl Collector for Ranker {
    type Fruit = Vec<(Ranked, DocAddress)>;
    type Child = SegmentRanker;

    fn for_segment(
        &self,
        segment_ord: SegmentOrdinal,
        segment: &SegmentReader,
    ) -> tantivy::Result<SegmentRanker> {
        let coverage = match &self.coverage {
            Some(c) => Some(c.for_segment(segment)?),
            None => None,
        };
        let priors = match self.full {
            true => Some(self.priors.for_segment(segment)?),
            false => None,
        };
        Ok(SegmentRanker {
            segment_ord,
            priors,
            coverage,
            best: TopN::new(self.limit),
        })
    }

    fn requires_scoring(&self) -> bool {
        true
    }

    fn merge_fruits(&self, fruits: Vec<Self::Fruit>) -> tantivy::Result<Self::Fruit> {
        let mut all: Self::Fruit = fruits.into_iter().flatten().collect();
        if all.len() > self.limit {
            all.select_nth_unstable_by(self.limit, best_first);
            all.truncate(self.limit);
        }
        all.sort_unstable_by(best_first);
        Ok(all)
    }
}

impl SegmentCollector for SegmentRanker {
    type Fruit = Vec<(Ranked, DocAddress)>;

    fn collect(&mut self, doc: DocId, bm25: Score) {
        // Most pages are passed over on the highest score they could have, before their priors
        // are read from memory (a cache miss each: it was a tenth of a multi-word query's time).
        if let Some(p) = &self.priors {
            if self.best.below(score_bound(bm25, p.max_authority())) {
                return;
            }
        }
        let (authority, prior) = match &self.priors {
            Some(p) => (
                p.authority(doc),
                1.0 + W_HOME / (1.0 + f32::from(p.depth(doc))),
            ),
            None => (0.0, 1.0),
        };
        let full = self.priors.is_some();
        let mut parts = ScoreParts {
            text: bm25,
            authority,
            prior,
            coverage: 1.0,
            semantic: None,
        };
        // Coverage is at most 1: a page that cannot enter the best even with all the words
        // is passed over before its words are looked up.
        if self.best.below(final_score(&parts, full)) {
            return;
        }
        if let Some(c) = self.coverage.as_mut() {
            parts.coverage = c.at(doc);
        }
        self.best.push(Entry {
            score: final_score(&parts, full),
            parts,
            doc,
        });
    }

    fn harvest(mut self) -> Self::Fruit {
        let segment_ord = self.segment_ord;
        self.best.cut();
        self.best
            .buffer
            .into_iter()
            .map(|e| {
                (
                    Ranked {
                        score: e.score,
                        parts: e.parts,
                        capsule: 0,
                        cluster: 0,
                    },
                    DocAddress::new(segment_ord, e.doc),
                )
            })
            .collect()
    }
}

/// A page's ranking score from its parts: `(text x coverage^3 + floor) x (1 + authority) x
/// prior` for the full ranking, the text score times coverage cubed for plain BM25 (whose
/// authority is 0 and prior 1).
pub(super) fn final_score(parts: &ScoreParts, full: bool) -> f32 {
    let cubed = if parts.coverage < 1.0 {
        parts.coverage.powf(COVERAGE_POWER)
    } else {
        1.0
    };
    let text = parts.text * cubed;
    if full {
        (text + TEXT_FLOOR) * (1.0 + W_AUTHORITY * parts.authority) * parts.prior
    } else {
        text
    }
}

/// The highest full-ranking score ([`final_score`]) of a page whose text scores `text`, whatever
/// its coverage, depth and authority (at most `max_authority`): computed as `final_score`
/// computes it, so that rounding keeps it a bound.
fn score_bound(text: f32, max_authority: f32) -> f32 {
    (text + TEXT_FLOOR) * (1.0 + W_AUTHORITY * max_authority) * (1.0 + W_HOME)
}

/// Adds the proximity bonus (the query's words near each other, `proximity.rs`) to the text
/// score of each page of `ranked` that earns it, and orders them again, best first (ties by
/// document address, as collected).
pub(super) fn rescore(
    searcher: &Searcher,
    near: &Proximity,
    ranked: &mut [(Ranked, DocAddress)],
    full: bool,
) -> tantivy::Result<()> {
    if ranked.is_empty() {
        return Ok(());
    }
    let addresses: Vec<DocAddress> = ranked.iter().map(|&(_, address)| address).collect();
    let bonuses = proximity::bonuses(searcher, near, &addresses)?;
    for ((r, _), bonus) in ranked.iter_mut().zip(bonuses) {
        if let Some(bonus) = bonus {
            r.parts.text += bonus;
            r.score = final_score(&r.parts, full);
        }
    }
    ranked.sort_by(best_first);
    Ok(())
}

/// Ranked pages best first, ties by document address: the order Tantivy's `TopDocs` gives.
fn best_first((a, x): &(Ranked, DocAddress), (b, y): &(Ranked, DocAddress)) -> Ordering {
    b.score.total_cmp(&a.score).then_with(|| x.cmp(y))
}

/// Fills in the capsule and the cluster of each collected page.
pub(super) fn annotate(
    searcher: &Searcher,
    ranked: &mut [(Ranked, DocAddress)],
) -> tantivy::Result<()> {
    let mut columns: HashMap<u32, [Arc<dyn ColumnValues<u64>>; 2]> = HashMap::new();
    for (r, address) in ranked.iter_mut() {
        let [host, cluster] = match columns.entry(address.segment_ord) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => {
                let fast = searcher.segment_reader(address.segment_ord).fast_fields();
                e.insert([
                    fast.u64("host_hash")?.first_or_default_col(0),
                    fast.u64("cluster")?.first_or_default_col(0),
                ])
            }
        };
        r.capsule = host.get_val(address.doc_id);
        r.cluster = cluster.get_val(address.doc_id);
    }
    Ok(())
}

/// The words of a relaxed query as matchers (no scoring), with their weights: enough to tell
/// which words a page holds.
pub(super) struct Coverage {
    words: Vec<(Box<dyn Weight>, f32)>,
    total: f32,
}

impl Coverage {
    pub(super) fn new(searcher: &Searcher, relaxed: &Relaxed) -> tantivy::Result<Coverage> {
        let scoring = EnableScoring::disabled_from_searcher(searcher);
        let mut words = Vec::with_capacity(relaxed.words.len());
        for w in &relaxed.words {
            words.push((w.query().weight(scoring)?, w.weight));
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
pub(super) struct SegmentCoverage {
    scorers: Vec<Box<dyn Scorer>>,
    weights: Vec<f32>,
    total: f32,
}

impl SegmentCoverage {
    /// The share of the query's weight `doc` holds.
    fn at(&mut self, doc: DocId) -> f32 {
        let mut held = 0.0;
        for (scorer, &weight) in self.scorers.iter_mut().zip(&self.weights) {
            if holds(scorer.as_mut(), doc) {
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

/// Which words of a relaxed query shown results lack.
pub(super) struct WordChecks {
    words: Vec<(String, Box<dyn Weight>)>,
}

impl WordChecks {
    /// Checks for the words of `relaxed`; only for those a page may lack without failing the
    /// query when `optional_only`.
    pub(super) fn new(
        searcher: &Searcher,
        relaxed: &Relaxed,
        optional_only: bool,
    ) -> tantivy::Result<WordChecks> {
        let scoring = EnableScoring::disabled_from_searcher(searcher);
        let mut words = Vec::with_capacity(relaxed.words.len());
        for w in &relaxed.words {
            if !(optional_only && w.essential) {
                words.push((w.text.clone(), w.query().weight(scoring)?));
            }
        }
        Ok(WordChecks { words })
    }

    /// The words each page lacks, as typed and in the query's order, in the order of
    /// `addresses`. A segment's cursors are made once and only move forward.
    pub(super) fn missing(
        &self,
        searcher: &Searcher,
        addresses: &[DocAddress],
    ) -> tantivy::Result<Vec<Vec<String>>> {
        let mut out = vec![Vec::new(); addresses.len()];
        in_index_order(
            searcher,
            addresses,
            |segment| {
                self.words
                    .iter()
                    .map(|(_, weight)| weight.scorer(segment, 1.0))
                    .collect::<tantivy::Result<Vec<_>>>()
            },
            |i, doc, scorers| {
                let lacking = &mut out[i];
                for ((text, _), scorer) in self.words.iter().zip(scorers.iter_mut()) {
                    if !holds(scorer.as_mut(), doc) && !lacking.contains(text) {
                        lacking.push(text.clone());
                    }
                }
            },
        )?;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(score: f32, doc: DocId) -> Entry {
        Entry {
            score,
            parts: ScoreParts::default(),
            doc,
        }
    }

    #[test]
    fn top_n_keeps_the_best_in_the_order_top_docs_gives_ties_included() {
        // Scores with many ties, in a scrambled order of documents.
        let scores: Vec<f32> = (0..500u32).map(|i| ((i * 7919) % 37) as f32).collect();
        for limit in [0, 1, 5, 10, 37, 100, 499, 500, 800] {
            let mut top = TopN::new(limit);
            for (doc, &score) in scores.iter().enumerate() {
                top.push(entry(score, doc as DocId));
            }
            top.cut();
            let mut got: Vec<(f32, DocId)> = top.buffer.iter().map(|e| (e.score, e.doc)).collect();
            got.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
            let mut want: Vec<(f32, DocId)> = scores
                .iter()
                .enumerate()
                .map(|(doc, &s)| (s, doc as DocId))
                .collect();
            want.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
            want.truncate(limit);
            assert_eq!(got, want, "limit {limit}");
        }
    }

    #[test]
    fn a_score_below_the_threshold_is_passed_over() {
        let mut top = TopN::new(2);
        for (doc, score) in [(0, 5.0), (1, 4.0), (2, 3.0), (3, 1.0), (4, 9.0)] {
            top.push(entry(score, doc));
        }
        // Full at four entries: cut back to the best two (9 is not in yet), 3.0 left out first.
        assert!(top.below(2.9));
        assert!(!top.below(3.0));
    }

    #[test]
    fn no_page_scores_above_its_bound() {
        // Random text scores, authorities, depths and coverages, rounding included: the bound a
        // page is passed over on must never be below the score it would have.
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut unit = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 40) as f32 / (1u64 << 24) as f32
        };
        for _ in 0..200_000 {
            let text = unit() * 10f32.powi((unit() * 6.0) as i32 - 2);
            let max_authority = unit();
            let parts = ScoreParts {
                text,
                authority: max_authority * unit(),
                prior: 1.0 + W_HOME / (1.0 + (unit() * 5.0).floor()),
                coverage: if unit() < 0.5 { 1.0 } else { unit() },
                semantic: None,
            };
            let score = final_score(&parts, true);
            let bound = score_bound(text, max_authority);
            assert!(score <= bound, "{parts:?}: {score} > {bound}");
            // At depth 0, full coverage and the highest authority, the bound is the score.
            let best = ScoreParts {
                authority: max_authority,
                prior: 1.0 + W_HOME / (1.0 + 0.0),
                coverage: 1.0,
                ..parts
            };
            assert_eq!(final_score(&best, true), bound);
        }
    }
}
