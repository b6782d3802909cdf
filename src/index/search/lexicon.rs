//! The index as the query compiler sees it ([`Lexicon`]): document
//! frequencies, spelling neighbours, capsule names and near-duplicate clusters.

use std::collections::BTreeSet;
use std::ops::Bound;
use std::sync::{Arc, Mutex, PoisonError};

use tantivy::collector::TopDocs;
use tantivy::query::TermQuery;
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::{Searcher, Term};

use crate::index::analysis;
use crate::index::compile::Lexicon;
use crate::index::spelling::{self, Neighbour};
use crate::index::Fields;

/// Site keys read per segment to tell whether a query word names a capsule.
const MAX_SITE_TERMS: usize = 100_000;

/// The index as the query compiler sees it.
pub(super) struct IndexLexicon<'a> {
    pub(super) searcher: &'a Searcher,
    pub(super) fields: &'a Fields,
    /// What is read once per index snapshot.
    pub(super) cache: &'a SnapshotCache,
}

/// What the lexicon reads once per index snapshot, when a query first needs it: the labels of
/// the capsule names, and the languages the pages' stems are in.
#[derive(Debug, Default)]
pub(super) struct SnapshotCache {
    sites: PerSnapshot<SiteLabels>,
    stem_languages: PerSnapshot<BTreeSet<String>>,
}

/// A value of the last index snapshot that needed it, by the snapshot's generation. Two
/// searches of a new snapshot at once may both read it; the last one is kept.
#[derive(Debug)]
struct PerSnapshot<T> {
    last: Mutex<Option<(u64, Arc<T>)>>,
}

impl<T> Default for PerSnapshot<T> {
    fn default() -> Self {
        PerSnapshot {
            last: Mutex::new(None),
        }
    }
}

impl<T> PerSnapshot<T> {
    fn get(&self, searcher: &Searcher, read: impl FnOnce() -> T) -> Arc<T> {
        let generation = searcher.generation().generation_id();
        let cached = self
            .last
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if let Some((seen, value)) = cached {
            if seen == generation {
                return value;
            }
        }
        let value = Arc::new(read());
        *self.last.lock().unwrap_or_else(PoisonError::into_inner) =
            Some((generation, Arc::clone(&value)));
        value
    }
}

/// The language codes with a stemmer (`en`, `de`, ...) whose stems some page of the snapshot
/// holds: a query word's stems in the other languages cannot match anything.
fn stem_languages(searcher: &Searcher, fields: &Fields) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for code in analysis::stemmer_codes() {
        let (from, to) = (format!("{code}:"), format!("{code};"));
        let present = searcher.segment_readers().iter().any(|segment| {
            segment
                .inverted_index(fields.stem)
                .and_then(|inverted| {
                    Ok(inverted
                        .terms()
                        .range()
                        .ge(from.as_bytes())
                        .lt(to.as_bytes())
                        .into_stream()?
                        .advance())
                })
                // Unreadable: taken as present, which only costs a lookup.
                .unwrap_or(true)
        });
        if present {
            found.insert(code.to_string());
        }
    }
    found
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
        token.chars().count() >= 3
            && self
                .cache
                .sites
                .get(self.searcher, || {
                    SiteLabels::read(self.searcher, self.fields)
                })
                .names(token)
    }

    fn has_stems_in(&self, code: &str) -> bool {
        self.cache
            .stem_languages
            .get(self.searcher, || stem_languages(self.searcher, self.fields))
            .contains(code)
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
