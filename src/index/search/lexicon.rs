//! The index as the query compiler sees it ([`Lexicon`]): document
//! frequencies, spelling neighbours, capsule names and near-duplicate clusters.

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
