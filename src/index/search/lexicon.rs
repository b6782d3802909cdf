//! The index as the query compiler sees it ([`Lexicon`]): document
//! frequencies, spelling neighbours, capsule names and near-duplicate clusters.

use std::collections::BTreeSet;
use std::ops::Bound;
use std::sync::{Arc, Mutex, PoisonError};

use tantivy::collector::TopDocs;
use tantivy::query::TermQuery;
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::{Searcher, Term};

use crate::index::compile::Lexicon;
use crate::index::spelling::{self, Neighbour};
use crate::index::Fields;

/// Site keys read per segment to tell whether a query word names a capsule.
const MAX_SITE_TERMS: usize = 100_000;

/// The index as the query compiler sees it.
pub(super) struct IndexLexicon<'a> {
    pub(super) searcher: &'a Searcher,
    pub(super) fields: &'a Fields,
    /// The labels of the capsule names, read for this snapshot when first asked.
    pub(super) sites: &'a SiteCache,
}

/// The [`SiteLabels`] of the last index snapshot that needed them, by its generation: read
/// only by a query that asks whether a word names a capsule, and once per snapshot.
#[derive(Debug, Default)]
pub(super) struct SiteCache {
    last: Mutex<Option<(u64, Arc<SiteLabels>)>>,
}

impl SiteCache {
    /// The labels of `searcher`'s snapshot. Two searches of a new snapshot at once may both
    /// read them; the last one is kept.
    fn labels(&self, searcher: &Searcher, fields: &Fields) -> Arc<SiteLabels> {
        let generation = searcher.generation().generation_id();
        let cached = self
            .last
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if let Some((seen, labels)) = cached {
            if seen == generation {
                return labels;
            }
        }
        let labels = Arc::new(SiteLabels::read(searcher, fields));
        *self.last.lock().unwrap_or_else(PoisonError::into_inner) =
            Some((generation, Arc::clone(&labels)));
        labels
    }
}

/// The labels of the `site:` keys of an index snapshot (`osiux` and `gmi` of `gmi.osiux.com`,
/// `gwenillia` of `tilde.team/~gwenillia`), read once per snapshot: asking the term
/// dictionary again for every query word was a sixth of a multi-word query's time at 500,000
/// documents.
#[derive(Debug, Default)]
pub(super) struct SiteLabels {
    labels: BTreeSet<String>,
}

impl SiteLabels {
    /// Reads the labels of up to [`MAX_SITE_TERMS`] site keys of each segment.
    fn read(searcher: &Searcher, fields: &Fields) -> SiteLabels {
        let mut labels = BTreeSet::new();
        for segment in searcher.segment_readers() {
            let Ok(inverted) = segment.inverted_index(fields.site) else {
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
                for label in site.split(['.', '/', '~', ':', '-']) {
                    if !labels.contains(label) {
                        labels.insert(label.to_string());
                    }
                }
            }
        }
        SiteLabels { labels }
    }

    /// Whether `token` is a label, or begins one at most three bytes longer.
    fn names(&self, token: &str) -> bool {
        self.labels
            .range::<str, _>((Bound::Included(token), Bound::Unbounded))
            .take_while(|label| label.starts_with(token))
            .any(|label| label.len() <= token.len() + 3)
    }
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
        token.chars().count() >= 3 && self.sites.labels(self.searcher, self.fields).names(token)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_word_names_a_capsule_label_or_the_start_of_one() {
        let labels = ["gmi", "osiux", "com", "tilde", "team", "gwenillia", "1965"];
        let sites = SiteLabels {
            labels: labels.iter().map(|l| l.to_string()).collect(),
        };
        for (token, names) in [
            ("osiux", true),
            ("osi", true),
            ("gwenillia", true),
            ("gwen", false),
            ("tild", true),
            ("teams", false),
            ("zzz", false),
            ("", true),
        ] {
            assert_eq!(sites.names(token), names, "{token:?}");
        }
        assert!(!SiteLabels::default().names("osiux"));
    }
}
