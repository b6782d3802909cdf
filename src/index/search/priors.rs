//! What ranking knows of a page before reading the query: its link authority and its depth
//! (for the home-page prior), kept per segment in plain arrays once read.
//!
//! Reading them for every matching page from fast fields (a 64-bit URL hash, then a lookup in
//! the authority table, and the depth) was a fifth of a one-word query's time at 500,000
//! documents; an array index costs next to nothing. Segments never change, so what was read
//! stays true until the authority file is reloaded (then it is read again) or the segment
//! leaves the index (then it is dropped).

use std::collections::HashMap;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicU16, AtomicU32};
use std::sync::{Arc, Mutex, PoisonError};

use tantivy::columnar::ColumnValues;
use tantivy::index::SegmentId;
use tantivy::{Searcher, SegmentReader};

use crate::index::authority::Authority;

/// The authority and depth of the documents of one segment, by document id, each read from
/// the fast fields the first time a query matches the document: a one-shot `geode search`
/// reads only the pages it matches, a long-running `geode serve` soon reads none.
pub(super) struct SegmentPriors {
    authority_table: Arc<Authority>,
    url_hash: Arc<dyn ColumnValues<u64>>,
    depth_column: Arc<dyn ColumnValues<u64>>,
    /// The bits of the authority (an `f32`), [`UNREAD`] until read.
    authority: Box<[AtomicU32]>,
    /// The depth, saturating below [`UNREAD_DEPTH`], which marks it unread.
    depth: Box<[AtomicU16]>,
}

/// No `f32` in 0..=1 has these bits (they are a NaN).
const UNREAD: u32 = u32::MAX;
const UNREAD_DEPTH: u16 = u16::MAX;

impl SegmentPriors {
    /// No page of the segment has a higher authority: a bound known without reading any.
    pub(super) fn max_authority(&self) -> f32 {
        self.authority_table.max_score()
    }

    /// The page's authority in 0..=1, or -0.9 for a page of a capsule held back for a trap
    /// shape (`crawl::budget`).
    pub(super) fn authority(&self, doc: u32) -> f32 {
        let Some(slot) = self.authority.get(doc as usize) else {
            return 0.0;
        };
        let bits = slot.load(Relaxed);
        if bits != UNREAD {
            return f32::from_bits(bits);
        }
        let value = self.authority_table.get(self.url_hash.get_val(doc));
        slot.store(value.to_bits(), Relaxed);
        value
    }

    /// The number of path segments of the page's URL (saturating).
    pub(super) fn depth(&self, doc: u32) -> u16 {
        let Some(slot) = self.depth.get(doc as usize) else {
            return 0;
        };
        let depth = slot.load(Relaxed);
        if depth != UNREAD_DEPTH {
            return depth;
        }
        let value = u16::try_from(self.depth_column.get_val(doc))
            .unwrap_or(UNREAD_DEPTH - 1)
            .min(UNREAD_DEPTH - 1);
        slot.store(value, Relaxed);
        value
    }
}

/// The [`SegmentPriors`] of the segments searched, for one authority table.
pub(super) struct Priors {
    authority: Arc<Authority>,
    segments: Mutex<HashMap<SegmentId, Arc<SegmentPriors>>>,
}

impl Priors {
    pub(super) fn new(authority: Arc<Authority>) -> Priors {
        Priors {
            authority,
            segments: Mutex::new(HashMap::new()),
        }
    }

    /// The authority table the priors were read from.
    pub(super) fn authority(&self) -> &Authority {
        &self.authority
    }

    /// The priors of `segment`, read on first use.
    pub(super) fn for_segment(
        &self,
        segment: &SegmentReader,
    ) -> tantivy::Result<Arc<SegmentPriors>> {
        let id = segment.segment_id();
        if let Some(found) = self.lock().get(&id) {
            return Ok(Arc::clone(found));
        }
        let fast = segment.fast_fields();
        let n = segment.max_doc() as usize;
        let read = Arc::new(SegmentPriors {
            authority_table: Arc::clone(&self.authority),
            url_hash: fast.u64("url_hash")?.first_or_default_col(0),
            depth_column: fast.u64("depth")?.first_or_default_col(0),
            authority: (0..n).map(|_| AtomicU32::new(UNREAD)).collect(),
            depth: (0..n).map(|_| AtomicU16::new(UNREAD_DEPTH)).collect(),
        });
        self.lock().insert(id, Arc::clone(&read));
        Ok(read)
    }

    /// Forgets the segments `searcher` no longer holds (merged away).
    pub(super) fn retain(&self, searcher: &Searcher) {
        let mut segments = self.lock();
        if segments.len() > searcher.segment_readers().len() {
            let live: Vec<SegmentId> = searcher
                .segment_readers()
                .iter()
                .map(|s| s.segment_id())
                .collect();
            segments.retain(|id, _| live.contains(id));
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<SegmentId, Arc<SegmentPriors>>> {
        self.segments.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
