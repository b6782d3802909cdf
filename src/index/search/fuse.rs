//! Hybrid ranking: the words' ranking and the meaning's, fused by reciprocal rank.
//!
//! Each page is scored `lexical / (K + its rank by words) + semantic / (K + its rank by
//! meaning)` (ranks from 1; a list a page is not in adds nothing). Ranks, not scores, are
//! fused: BM25 and cosines are on scales that share nothing, and a rank fusion needs no
//! calibration between them. Only the nearest [`Fusion::depth`] neighbours at least
//! [`Fusion::min_similarity`] close count as found by meaning, so that a query no page is about
//! adds little noise, and a small `K` lets the heads of the lists decide (with the classic 60,
//! pages ranked 20th by both beat the first by words). One exception keeps what words settle:
//! a page holding every word that the words rank clearly first stays first
//! ([`Fusion::keeps_first`]): the model knows nothing of names like "rogallo" or "nvme".
//! Pure arithmetic: what the lists are is decided in `mod.rs`; the constants were tuned on the
//! dev and natural sets (`docs/benchmarks.md`, "Search by meaning").

/// The constants of the fusion.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fusion {
    /// The rank damping of reciprocal-rank fusion (60 in the paper that named it).
    pub k: f32,
    /// The weight of the ranking by words.
    pub lexical: f32,
    /// The weight of the ranking by meaning.
    pub semantic: f32,
    /// The least cosine for a neighbour to count.
    pub min_similarity: f32,
    /// How many neighbours count at most.
    pub depth: usize,
    /// A page the words rank first with a score at least this many times the second's stays
    /// first (0: none does).
    pub clear_winner: f32,
}

/// geode's fusion, tuned on `scripts/eval/queries-dev.tsv` and `queries-natural.tsv` (see
/// `docs/benchmarks.md`, "Hybrid retrieval").
pub const FUSION: Fusion = Fusion {
    k: 3.0,
    lexical: 1.0,
    semantic: 1.0,
    min_similarity: 0.30,
    depth: 20,
    clear_winner: 1.5,
};

impl Fusion {
    /// The fused score of a page at `lexical` rank by words and `semantic` rank by meaning
    /// (both from 0; `None` when not in that list).
    pub fn score(&self, lexical: Option<usize>, semantic: Option<usize>) -> f32 {
        let part = |weight: f32, rank: Option<usize>| match rank {
            Some(r) => weight / (self.k + r as f32 + 1.0),
            None => 0.0,
        };
        part(self.lexical, lexical) + part(self.semantic, semantic)
    }

    /// Whether the page the words rank first stays first: it holds every word of the query
    /// (`coverage` 1) and scores at least [`Fusion::clear_winner`] times the second page (a
    /// page alone stays first too).
    pub fn keeps_first(&self, coverage: f32, first: f32, second: Option<f32>) -> bool {
        self.clear_winner > 0.0
            && coverage >= 1.0
            && second.map_or(true, |second| first >= self.clear_winner * second)
    }

    /// The neighbours that count, of those given nearest first: at most `depth`, each at
    /// least `min_similarity` close.
    pub fn counted(&self, similarities: &[f32]) -> usize {
        similarities
            .iter()
            .take(self.depth)
            .take_while(|&&s| s >= self.min_similarity)
            .count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const F: Fusion = Fusion {
        k: 60.0,
        lexical: 1.0,
        semantic: 1.0,
        min_similarity: 0.3,
        depth: 3,
        clear_winner: 1.5,
    };

    #[test]
    fn a_page_in_both_lists_sums_its_two_reciprocal_ranks() {
        assert!((F.score(Some(0), Some(0)) - 2.0 / 61.0).abs() < 1e-7);
        assert!((F.score(Some(4), None) - 1.0 / 65.0).abs() < 1e-7);
        assert!((F.score(None, Some(9)) - 1.0 / 70.0).abs() < 1e-7);
        assert_eq!(F.score(None, None), 0.0);
    }

    #[test]
    fn found_by_both_beats_first_by_one() {
        // Second by words and third by meaning beats first by words alone.
        assert!(F.score(Some(1), Some(2)) > F.score(Some(0), None));
        // A heavier lexical weight keeps the first by words ahead of the first by meaning.
        let heavy = Fusion { lexical: 1.5, ..F };
        assert!(heavy.score(Some(0), None) > heavy.score(None, Some(0)));
        assert!(heavy.score(Some(3), None) > heavy.score(None, Some(3)));
    }

    #[test]
    fn a_clear_first_page_holding_every_word_stays_first() {
        assert!(F.keeps_first(1.0, 15.0, Some(10.0)));
        assert!(F.keeps_first(1.0, 15.0, None));
        assert!(!F.keeps_first(1.0, 14.9, Some(10.0)), "not clear enough");
        assert!(!F.keeps_first(0.8, 100.0, Some(10.0)), "lacks a word");
        let off = Fusion {
            clear_winner: 0.0,
            ..F
        };
        assert!(!off.keeps_first(1.0, 100.0, Some(1.0)));
    }

    #[test]
    fn only_close_neighbours_count_and_no_more_than_the_depth() {
        assert_eq!(F.counted(&[0.9, 0.5, 0.31, 0.29, 0.8]), 3);
        assert_eq!(F.counted(&[0.9, 0.8, 0.7, 0.6, 0.5]), 3);
        assert_eq!(F.counted(&[0.2, 0.9]), 0);
        assert_eq!(F.counted(&[]), 0);
    }
}
