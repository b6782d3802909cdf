//! The proximity bonus of a few chosen pages: the query's words near each other in a page's
//! body, a sloppy phrase, computed at those pages only.
//!
//! It was a Tantivy `PhraseQuery` with a slop. Seeking its scorer to a page that does not hold
//! the phrase moves it on to the next page that does: every page holding all the words in
//! between has its positions read and matched. For the hundred best pages of a query, scattered
//! over the index, that was most of a full phrase search (0.9 ms for `mariadb database server`
//! on 500,000 pages). Here each word's postings are sought to the chosen pages only, and the
//! positions of a page holding them all are matched here ([`near_count`]).
//!
//! The match: word `i` of the phrase at position `p_i`, and the sum over the words after the
//! first of `|p_i - p_(i-1) - 1|` (how far each word is from where an exact phrase puts it) at
//! most the slop. A page's count is the number of positions of the last word that end such a
//! match, and its bonus the phrase's BM25 weight (the words' idf, as Tantivy weighs a phrase)
//! at that count and the page's body length. Without slop that is Tantivy's phrase score, and
//! a test holds it so; with a slop, Tantivy pairs positions off greedily and its matches differ
//! on some pages (see the test).
//!
//! Pure: reads the index through a searcher, writes nothing.

use tantivy::fieldnorm::FieldNormReader;
use tantivy::postings::{Postings, SegmentPostings};
use tantivy::query::Bm25Weight;
use tantivy::schema::IndexRecordOption;
use tantivy::{DocAddress, Score, Searcher, SegmentReader};

use super::walk::{holds, in_index_order};
use crate::index::compile::Proximity;

/// The bonus of each of `addresses` (in their order): the phrase's score where the page holds
/// the words near each other, `None` where it does not.
pub(super) fn bonuses(
    searcher: &Searcher,
    proximity: &Proximity,
    addresses: &[DocAddress],
) -> tantivy::Result<Vec<Option<Score>>> {
    let mut out = vec![None; addresses.len()];
    let Some(field) = proximity.terms.first().map(|t| t.field()) else {
        return Ok(out);
    };
    let weight = Bm25Weight::for_terms(searcher, &proximity.terms)?.boost_by(proximity.boost);
    // A segment's cursor on each word and its body lengths; `None` when a word is absent from
    // it: no page of it holds the phrase.
    let open = |reader: &SegmentReader| -> tantivy::Result<Option<Segment>> {
        let index = reader.inverted_index(field)?;
        let mut postings = Vec::with_capacity(proximity.terms.len());
        for term in &proximity.terms {
            match index.read_postings(term, IndexRecordOption::WithFreqsAndPositions)? {
                Some(p) => postings.push(p),
                None => return Ok(None),
            }
        }
        Ok(Some((postings, reader.get_fieldnorms_reader(field)?)))
    };
    let mut positions: Vec<Vec<u32>> = vec![Vec::new(); proximity.terms.len()];
    in_index_order(searcher, addresses, open, |i, doc, segment| {
        let Some((postings, fieldnorms)) = segment else {
            return;
        };
        if !postings.iter_mut().all(|p| holds(p, doc)) {
            return;
        }
        for (p, at) in postings.iter_mut().zip(positions.iter_mut()) {
            p.positions(at);
        }
        let count = near_count(&positions, proximity.slop);
        if count > 0 {
            out[i] = Some(weight.score(fieldnorms.fieldnorm_id(doc), count));
        }
    })?;
    Ok(out)
}

/// What [`bonuses`] reads in a segment: each word's postings, and the body lengths.
type Segment = (Vec<SegmentPostings>, FieldNormReader);

/// How many positions of the last word end a match of the words in order, each word's
/// positions in `positions` (sorted), within `slop` (see the module doc). Words of one position
/// list may match at the same position.
pub(super) fn near_count(positions: &[Vec<u32>], slop: u32) -> u32 {
    let Some((first, rest)) = positions.split_first() else {
        return 0;
    };
    // (position, least slop spent to reach it) of the previous word, by position.
    let mut reached: Vec<(u32, u32)> = first.iter().map(|&p| (p, 0)).collect();
    let mut next: Vec<(u32, u32)> = Vec::new();
    for word in rest {
        next.clear();
        // The previous word's reachable positions within the slop of where an exact phrase puts
        // it (one before `p`): a window moving forward with `p`.
        let mut from = 0;
        for &p in word {
            let ideal = i64::from(p) - 1;
            while from < reached.len() && i64::from(reached[from].0) < ideal - i64::from(slop) {
                from += 1;
            }
            let spent = reached[from..]
                .iter()
                .take_while(|(q, _)| i64::from(*q) <= ideal + i64::from(slop))
                .map(|&(q, s)| s + (i64::from(q) - ideal).unsigned_abs() as u32)
                .min();
            if let Some(spent) = spent.filter(|&s| s <= slop) {
                next.push((p, spent));
            }
        }
        std::mem::swap(&mut reached, &mut next);
        if reached.is_empty() {
            return 0;
        }
    }
    reached.len() as u32
}

#[cfg(test)]
mod tests {
    use super::*;
    use tantivy::collector::TopDocs;
    use tantivy::query::PhraseQuery;
    use tantivy::schema::{Schema, FAST, TEXT};
    use tantivy::{doc, Index, Term};

    /// Over pages of a few words in every order, repeats included, in three segments and asked
    /// for in no particular order: a page earns the bonus at the count a search of every choice
    /// of positions finds, and exact phrases (no slop) score as Tantivy's `PhraseQuery` scores
    /// them. (With a slop, Tantivy's matches are not these: it pairs positions off greedily,
    /// counts a position of the last word once per pairing, and on some pages of this test
    /// matches where no choice of positions is within the slop, or passes over one that is.)
    #[test]
    fn bonuses_count_the_matches_every_choice_of_positions_finds() {
        let mut builder = Schema::builder();
        let body = builder.add_text_field("body", TEXT);
        let page_no = builder.add_u64_field("page", FAST);
        let index = Index::create_in_ram(builder.build());
        let mut writer = index.writer(15_000_000).unwrap();
        let words = ["a", "b", "c", "d", "x", "y"];
        let mut pages: Vec<Vec<&str>> = Vec::new();
        let mut state = 7u64;
        for n in 0..3000u64 {
            let mut next = || {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (state >> 33) as usize
            };
            let len = 2 + next() % 60;
            let text: Vec<&str> = (0..len).map(|_| words[next() % words.len()]).collect();
            writer
                .add_document(doc!(body => text.join(" "), page_no => n))
                .unwrap();
            pages.push(text);
            if n % 1000 == 999 {
                writer.commit().unwrap();
            }
        }
        let searcher = index.reader().unwrap().searcher();
        assert_eq!(searcher.segment_readers().len(), 3);
        // Every document, last segment first and each backwards, with its page.
        let mut all: Vec<(DocAddress, usize)> = Vec::new();
        for (ord, reader) in searcher.segment_readers().iter().enumerate().rev() {
            let column = reader.fast_fields().u64("page").unwrap();
            for doc in (0..reader.max_doc()).rev() {
                let page = column.first(doc).unwrap() as usize;
                all.push((DocAddress::new(ord as u32, doc), page));
            }
        }
        let addresses: Vec<DocAddress> = all.iter().map(|&(a, _)| a).collect();
        let phrases: [&[&str]; 6] = [
            &["a", "b"],
            &["a", "b", "c"],
            &["a", "a"],
            &["b", "a", "c", "d"],
            &["a", "b", "a"],
            &["c", "x", "y", "d", "b"],
        ];
        for slop in [0, 1, 3] {
            for phrase in phrases {
                let terms: Vec<Term> = phrase
                    .iter()
                    .map(|w| Term::from_field_text(body, w))
                    .collect();
                let mut query = PhraseQuery::new(terms.clone());
                query.set_slop(slop);
                let found = searcher
                    .search(&query, &TopDocs::with_limit(all.len()))
                    .unwrap();
                let tantivy: std::collections::HashMap<DocAddress, Score> = found
                    .into_iter()
                    .map(|(score, a)| (a, score * 1.5))
                    .collect();
                let proximity = Proximity {
                    terms,
                    slop,
                    boost: 1.5,
                };
                let got = bonuses(&searcher, &proximity, &addresses).unwrap();
                let weight = Bm25Weight::for_terms(&searcher, &proximity.terms)
                    .unwrap()
                    .boost_by(proximity.boost);
                let mut matched = 0;
                for (&(address, page), got) in all.iter().zip(&got) {
                    let count = every_choice_count(&pages[page], phrase, slop);
                    let fieldnorms = searcher
                        .segment_reader(address.segment_ord)
                        .get_fieldnorms_reader(body)
                        .unwrap();
                    let expected = (count > 0)
                        .then(|| weight.score(fieldnorms.fieldnorm_id(address.doc_id), count));
                    let context = format!("{phrase:?} slop {slop}, page {page}");
                    assert_eq!(*got, expected, "{context}");
                    if slop == 0 {
                        let tantivy = tantivy.get(&address).copied();
                        let same = match (*got, tantivy) {
                            (Some(g), Some(t)) => (g - t).abs() <= 1e-5 * t,
                            (g, t) => g.is_none() && t.is_none(),
                        };
                        assert!(same, "{context}: {got:?} against {tantivy:?}");
                    }
                    matched += usize::from(count > 0);
                }
                assert!(
                    matched > 3,
                    "{phrase:?} slop {slop}: too few matches to tell"
                );
            }
        }
    }

    /// The positions of the last word of `phrase` in `page` that end a match within `slop`,
    /// found by trying the choices of positions one word at a time.
    fn every_choice_count(page: &[&str], phrase: &[&str], slop: u32) -> u32 {
        fn reaches(page: &[&str], phrase: &[&str], at: usize, budget: i64) -> bool {
            // Word `phrase[0]` is at `at`; can the rest follow within `budget`?
            let Some(next) = phrase.get(1) else {
                return true;
            };
            page.iter().enumerate().any(|(p, w)| {
                let cost = (p as i64 - at as i64 - 1).abs();
                w == next && cost <= budget && reaches(page, &phrase[1..], p, budget - cost)
            })
        }
        let last = phrase.len() - 1;
        let reversed: Vec<&str> = phrase.iter().rev().copied().collect();
        // A match read backwards is a match of the reversed phrase with the same costs.
        let mirrored: Vec<&str> = page.iter().rev().copied().collect();
        (0..page.len())
            .filter(|&p| page[p] == phrase[last])
            .filter(|&p| reaches(&mirrored, &reversed, page.len() - 1 - p, i64::from(slop)))
            .count() as u32
    }

    #[test]
    fn near_count_by_hand() {
        let p = |v: &[u32]| v.to_vec();
        // `a b` exactly at 1-2, and `a _ b` (one off) at 5-7.
        assert_eq!(near_count(&[p(&[1, 5]), p(&[2, 7])], 0), 1);
        assert_eq!(near_count(&[p(&[1, 5]), p(&[2, 7])], 1), 2);
        // Out of order costs twice the gap: `b a` is 2 away from `a b`.
        assert_eq!(near_count(&[p(&[3]), p(&[2])], 1), 0);
        assert_eq!(near_count(&[p(&[3]), p(&[2])], 2), 1);
        // The slop is shared by the whole phrase.
        assert_eq!(near_count(&[p(&[0]), p(&[2]), p(&[4])], 1), 0);
        assert_eq!(near_count(&[p(&[0]), p(&[2]), p(&[4])], 2), 1);
        assert_eq!(near_count(&[p(&[0]), p(&[])], 3), 0);
        assert_eq!(near_count(&[], 3), 0);
    }
}
