//! Near-duplicate pages: a SimHash fingerprint of a page's text, computed when the page is
//! indexed, and the rule that makes two fingerprints near.
//!
//! Every shingle of the body (three neighbouring words, as the index analyses them: case and
//! accents folded) is hashed to 64 bits, once however often it occurs; bit `i` of the
//! fingerprint is set when more shingles have bit `i` set than not. Pages sharing most of their
//! shingles (a mirror, a repost, the same post under a dated and an undated name) get
//! fingerprints that differ in a few bits; at most [`MAX_DISTANCE`] make them near-duplicates.
//! This is Charikar's SimHash as Manku, Jain and Das Sarma used it for web pages.
//!
//! The text fingerprinted is the body and the labels of the page's links: a page that is a
//! list of links (an index, a tag page) has little body, and its labels are what it says.
//!
//! Finding the near fingerprints among millions cheaply: split into [`BANDS`] bands of about 11
//! bits, two fingerprints at most [`MAX_DISTANCE`] bits apart agree on at least one whole band
//! (one band more than bits that differ). The bands are indexed as terms ([`bands`]); a page's
//! candidates are the pages sharing a band, and the full distance decides.
//!
//! Pure and bounded: only the first [`SHINGLE_BYTES`] of a body are read, and a body with
//! fewer than [`MIN_SHINGLES`] shingles gets no fingerprint (a short page's few shingles would
//! make unrelated short pages look alike). Not here: assigning clusters (the writer) and
//! folding results (the searcher).

use super::analysis;
use super::prefix;

/// Fingerprints at most this many bits apart are near-duplicates. On the labelled pairs of
/// `scripts/eval/neardup-pairs.tsv`, distinct pages are 10 bits apart or more, and copies
/// mostly 0 to 4. Every bit more needs one band more, and narrower bands match more pages.
pub const MAX_DISTANCE: u32 = 5;

/// Bands of a fingerprint: one more than [`MAX_DISTANCE`], so a near pair shares one whole.
pub const BANDS: usize = MAX_DISTANCE as usize + 1;

/// How much of a body is fingerprinted: a page's identity is in its first pages of text.
pub const SHINGLE_BYTES: usize = 64 * 1024;

/// How much of the link labels is fingerprinted with the body.
pub const LABEL_BYTES: usize = 16 * 1024;

/// Fewest distinct shingles a fingerprinted body has.
pub const MIN_SHINGLES: usize = 16;

/// Words per shingle.
const SHINGLE_WORDS: usize = 3;

/// The fingerprint of a page: its body and its link labels (one per line).
pub fn page_fingerprint(body: &str, link_labels: &str) -> Option<u64> {
    let body = prefix(body, SHINGLE_BYTES);
    let labels = prefix(link_labels, LABEL_BYTES);
    let mut text = String::with_capacity(body.len() + 1 + labels.len());
    text.push_str(body);
    text.push('\n');
    text.push_str(labels);
    simhash(&text)
}

/// The fingerprint of `text` (its first [`SHINGLE_BYTES`] and a little more), or `None` when it
/// is too short to tell.
pub fn simhash(text: &str) -> Option<u64> {
    let text = prefix(text, SHINGLE_BYTES + LABEL_BYTES + 1);
    let mut window = [0u64; SHINGLE_WORDS];
    let mut words = 0usize;
    // Sorted and deduplicated below: cheaper than a hashed set for a few hundred numbers.
    let mut shingles: Vec<u64> = Vec::new();
    analysis::for_each_index_word(text, |_, token| {
        window.rotate_left(1);
        window[SHINGLE_WORDS - 1] = fnv1a(token.as_bytes());
        words += 1;
        if words >= SHINGLE_WORDS {
            let combined = window
                .iter()
                .enumerate()
                .fold(0u64, |acc, (i, h)| acc ^ h.rotate_left(21 * i as u32));
            shingles.push(mix(combined));
        }
    });
    shingles.sort_unstable();
    shingles.dedup();
    if shingles.len() < MIN_SHINGLES {
        return None;
    }
    // Each bit is set when more shingles have it than not. Counting the ones without a branch
    // lets the compiler count all 64 bits at once.
    let mut ones = [0u32; 64];
    for h in &shingles {
        for (bit, count) in ones.iter_mut().enumerate() {
            *count += (h >> bit & 1) as u32;
        }
    }
    let total = shingles.len() as u32;
    let hash = ones.iter().enumerate().fold(
        0u64,
        |acc, (bit, &n)| {
            if 2 * n > total {
                acc | 1 << bit
            } else {
                acc
            }
        },
    );
    Some(hash)
}

/// Bits in which two fingerprints differ.
pub fn distance(a: u64, b: u64) -> u32 {
    (a ^ b).count_ones()
}

/// Whether two fingerprints are near-duplicates.
pub fn near(a: u64, b: u64) -> bool {
    distance(a, b) <= MAX_DISTANCE
}

/// The index terms of a fingerprint's bands: `0:1a2`, `1:7ff`, ... (band number, bits in hex).
pub fn bands(hash: u64) -> [String; BANDS] {
    std::array::from_fn(|i| {
        let (from, to) = (i * 64 / BANDS, (i + 1) * 64 / BANDS);
        let bits = (hash >> from) & ((1u64 << (to - from)) - 1);
        format!("{i}:{bits:x}")
    })
}

/// FNV-1a: fixed, so fingerprints stay comparable across builds (std's hasher may change).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// SplitMix64's finaliser: spreads FNV's weak high bits over the whole word.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    const POST: &str = "Yesterday I finally replaced the battery of my old laptop. The \
        screws were tiny and the case was glued shut, so I used a hair dryer to soften the \
        glue before prying it open with a guitar pick. The new battery holds a charge for five \
        hours, which is better than the original ever did. Next I want to swap the hard disk \
        for a solid state drive and see whether the fan noise goes away too.";

    #[test]
    fn the_same_text_lightly_changed_is_near() {
        let a = simhash(POST).expect("long enough");
        // The same post with a date line and a sign-off: a dated variant or a repost.
        let reposted = format!("2021-03-07\n\n{POST}\n\nThanks for reading!");
        let b = simhash(&reposted).expect("long enough");
        assert!(near(a, b), "distance {}", distance(a, b));
        // Case and accents do not matter: the index's analysis folds them.
        let c = simhash(&POST.to_uppercase()).expect("long enough");
        assert_eq!(a, c);
    }

    #[test]
    fn different_texts_are_far() {
        let other = "The recipe calls for two cups of flour, a spoon of sugar, a pinch of \
            salt and warm water. Knead the dough for ten minutes, let it rise for an hour in a \
            warm place, shape it into a loaf and bake it for forty minutes until the crust is \
            brown and sounds hollow when tapped underneath.";
        let a = simhash(POST).expect("long enough");
        let b = simhash(other).expect("long enough");
        assert!(!near(a, b), "distance {}", distance(a, b));
    }

    #[test]
    fn short_bodies_have_no_fingerprint() {
        assert_eq!(simhash(""), None);
        assert_eq!(simhash("hello world, this is my capsule"), None);
    }

    #[test]
    fn bands_cover_the_fingerprint() {
        assert_eq!(bands(0).len(), BANDS);
        assert!(bands(0)
            .iter()
            .enumerate()
            .all(|(i, b)| *b == format!("{i}:0")));
        assert_eq!(bands(u64::MAX)[0], "0:3ff");
        // Within MAX_DISTANCE bits, at least one band is the same, wherever the bits are.
        let a = 0x0123_4567_89ab_cdef_u64;
        for spread in [1, 7, 11, 13] {
            let mut b = a;
            for k in 0..MAX_DISTANCE {
                b ^= 1 << ((k as usize * spread * 5 + 3) % 64);
            }
            let shared = bands(a)
                .iter()
                .zip(bands(b))
                .filter(|(x, y)| *x == y)
                .count();
            assert!(shared >= 1, "spread {spread}: {a:x} {b:x}");
        }
    }

    #[test]
    fn link_lists_are_fingerprinted_by_their_labels() {
        let labels: Vec<String> = (0..30)
            .map(|i| format!("Post number {i} about things"))
            .collect();
        let a = page_fingerprint("", &labels.join("\n")).expect("labels are text");
        let b = page_fingerprint("Index", &labels.join("\n")).expect("labels are text");
        assert!(near(a, b));
    }
}
