//! Spelling neighbours of a query word, learned from the index itself: the terms of a field's
//! term dictionary within a small edit distance of the word, with their document frequencies.
//!
//! The term dictionary is an FST; a Levenshtein automaton (a swap of two neighbouring letters
//! counts as one edit, so `reveiw` is one edit from `review`) walks only the branches that can
//! still match, so finding the neighbours of a word costs a few hundred state transitions, not a
//! scan of the lexicon. How far a word may be from its neighbours depends on its length:
//! [`max_distance`]. Work is bounded: at most [`MAX_SCANNED`] matching terms are read per field
//! and segment.
//!
//! Not here: deciding which query words need neighbours and how much a neighbour counts (the
//! query compiler, `compile.rs`) and the "did you mean" text (`search.rs`).

use std::collections::HashMap;
use std::sync::OnceLock;

use levenshtein_automata::{Distance, LevenshteinAutomatonBuilder, DFA, SINK_STATE};
use tantivy::schema::Field;
use tantivy::Searcher;

/// Matching terms read per field and segment: a short word in a big lexicon can have many
/// neighbours, and only the few most frequent are used.
const MAX_SCANNED: usize = 256;

/// Edits allowed between a word and its neighbours: none under 4 characters (`cat` is one edit
/// from too many words to mean anything), one up to 7, two from 8.
pub(crate) fn max_distance(word: &str) -> u8 {
    match word.chars().count() {
        0..=3 => 0,
        4..=7 => 1,
        _ => 2,
    }
}

/// A term of the index near a query word.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Neighbour {
    pub token: String,
    /// Edits from the query word (1 or 2).
    pub distance: u8,
    /// Documents holding the term in the field where it was found most often.
    pub doc_freq: u64,
}

/// The terms of `fields` within [`max_distance`] of `token` (an analysed query token), other
/// than `token` itself, most frequent first within each distance, nearest first.
pub(crate) fn neighbours(searcher: &Searcher, fields: &[Field], token: &str) -> Vec<Neighbour> {
    let distance = max_distance(token);
    if distance == 0 {
        return Vec::new();
    }
    let dfa = builder(distance).build_dfa(token);
    // term -> (distance, doc frequency per field summed over segments)
    let mut found: HashMap<String, (u8, HashMap<usize, u64>)> = HashMap::new();
    for segment in searcher.segment_readers() {
        for (fi, &field) in fields.iter().enumerate() {
            let Ok(inverted) = segment.inverted_index(field) else {
                continue;
            };
            let Ok(mut stream) = inverted.terms().search(Automaton(&dfa)).into_stream() else {
                continue;
            };
            let mut scanned = 0;
            while scanned < MAX_SCANNED && stream.advance() {
                scanned += 1;
                let Ok(term) = std::str::from_utf8(stream.key()) else {
                    continue;
                };
                if term == token {
                    continue;
                }
                let Distance::Exact(d) = distance_of(&dfa, term) else {
                    continue;
                };
                let entry = found
                    .entry(term.to_string())
                    .or_insert_with(|| (d, HashMap::new()));
                *entry.1.entry(fi).or_default() += u64::from(stream.value().doc_freq);
            }
        }
    }
    let mut out: Vec<Neighbour> = found
        .into_iter()
        .map(|(token, (distance, per_field))| Neighbour {
            token,
            distance,
            doc_freq: per_field.values().copied().max().unwrap_or(0),
        })
        .collect();
    out.sort_by(|a, b| {
        (a.distance, std::cmp::Reverse(a.doc_freq), &a.token).cmp(&(
            b.distance,
            std::cmp::Reverse(b.doc_freq),
            &b.token,
        ))
    });
    out
}

/// The automaton builders, one per distance; building one precomputes tables, so it is done once.
fn builder(distance: u8) -> &'static LevenshteinAutomatonBuilder {
    static ONE: OnceLock<LevenshteinAutomatonBuilder> = OnceLock::new();
    static TWO: OnceLock<LevenshteinAutomatonBuilder> = OnceLock::new();
    let cell = if distance <= 1 { &ONE } else { &TWO };
    cell.get_or_init(|| LevenshteinAutomatonBuilder::new(distance.clamp(1, 2), true))
}

fn distance_of(dfa: &DFA, term: &str) -> Distance {
    let mut state = dfa.initial_state();
    for &b in term.as_bytes() {
        state = dfa.transition(state, b);
    }
    dfa.distance(state)
}

/// The Levenshtein DFA as the FST term dictionary walks it.
struct Automaton<'a>(&'a DFA);

impl tantivy_fst::Automaton for Automaton<'_> {
    type State = u32;

    fn start(&self) -> u32 {
        self.0.initial_state()
    }

    fn is_match(&self, state: &u32) -> bool {
        matches!(self.0.distance(*state), Distance::Exact(_))
    }

    fn can_match(&self, state: &u32) -> bool {
        *state != SINK_STATE
    }

    fn accept(&self, state: &u32, byte: u8) -> u32 {
        self.0.transition(*state, byte)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::{Indexer, PageDoc, SearchIndex};

    #[test]
    fn distance_grows_with_the_word() {
        let cases = [("cat", 0), ("sause", 1), ("reveiw", 1), ("spanakopitta", 2)];
        for (word, want) in cases {
            assert_eq!(max_distance(word), want, "{word}");
        }
    }

    #[test]
    fn neighbours_come_from_the_lexicon_nearest_and_most_frequent_first() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let mut ix = Indexer::open_or_create(tmp.path()).expect("open");
        let bodies = [
            "a review of the phone",
            "another review here",
            "the reviews were kind",
            "a preview of things",
            "the sauce was good",
        ];
        for (i, body) in bodies.iter().enumerate() {
            ix.upsert(&PageDoc {
                url: format!("gemini://n{i}.example/"),
                host: format!("n{i}.example"),
                title: "T".into(),
                body: body.to_string(),
                mime: "text/gemini".into(),
                ..PageDoc::default()
            })
            .expect("upsert");
        }
        ix.commit(1).expect("commit");
        let si = SearchIndex::open(tmp.path()).expect("open");
        let searcher = si.searcher();
        let body = si.fields().body;
        let got: Vec<(String, u8, u64)> = neighbours(&searcher, &[body], "reveiw")
            .into_iter()
            .map(|n| (n.token, n.distance, n.doc_freq))
            .collect();
        assert_eq!(got, [("review".to_string(), 1, 2)]);
        let got: Vec<String> = neighbours(&searcher, &[body], "sause")
            .into_iter()
            .map(|n| n.token)
            .collect();
        assert_eq!(got, ["sauce"]);
        // The word itself is not its own neighbour, and short words have none.
        assert!(neighbours(&searcher, &[body], "review")
            .iter()
            .all(|n| n.token != "review"));
        assert!(neighbours(&searcher, &[body], "the").is_empty());
    }
}
