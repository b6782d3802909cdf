//! The score of one matching page while Tantivy collects: BM25 times authority and the home-page
//! prior ([`Ranker`]), and, for relaxed queries, the share of the query's weight a page holds
//! ([`Coverage`]) and which words it lacks ([`WordChecks`]).

use std::sync::Arc;

use tantivy::collector::{ScoreSegmentTweaker, ScoreTweaker};
use tantivy::columnar::ColumnValues;
use tantivy::query::{EnableScoring, Query as _, Scorer, Weight};
use tantivy::{DocAddress, DocId, DocSet, Score, Searcher, SegmentReader};

use crate::index::authority::Authority;
use crate::index::compile::Relaxed;
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

/// A candidate's score, its parts, its capsule and cluster, as collected.
#[derive(Debug, Clone, Copy)]
pub(super) struct Ranked {
    pub(super) score: f32,
    pub(super) parts: ScoreParts,
    pub(super) capsule: u64,
    /// Its cluster of near-duplicates.
    pub(super) cluster: u64,
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
pub(super) struct Ranker {
    pub(super) authority: Arc<Authority>,
    pub(super) full: bool,
    /// For pages that may lack words: how much of the query each holds.
    pub(super) coverage: Option<Arc<Coverage>>,
}

pub(super) struct SegmentRanker {
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
pub(super) struct Coverage {
    words: Vec<(Box<dyn Weight>, f32)>,
    total: f32,
}

impl Coverage {
    pub(super) fn new(searcher: &Searcher, relaxed: &Relaxed) -> tantivy::Result<Coverage> {
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
pub(super) struct WordChecks {
    words: Vec<(String, Box<dyn Weight>)>,
}

impl WordChecks {
    pub(super) fn new(searcher: &Searcher, relaxed: &Relaxed) -> tantivy::Result<WordChecks> {
        let scoring = EnableScoring::disabled_from_searcher(searcher);
        let mut words = Vec::with_capacity(relaxed.words.len());
        for w in &relaxed.words {
            words.push((w.text.clone(), w.query.weight(scoring)?));
        }
        Ok(WordChecks { words })
    }

    pub(super) fn missing(
        &self,
        searcher: &Searcher,
        address: DocAddress,
    ) -> tantivy::Result<Vec<String>> {
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
