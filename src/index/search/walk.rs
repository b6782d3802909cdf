//! Walking documents in index order: a doc set or a segment's columns only move forward, so
//! the pages of a result list are visited sorted by address, each segment opened once.

use tantivy::{DocAddress, DocId, DocSet, Searcher, SegmentOrdinal, SegmentReader};

/// Whether `docs` holds `doc`, moving it forward to `doc` if it is behind (a doc set only moves
/// forward: documents must be asked for in increasing order).
pub(super) fn holds(docs: &mut dyn DocSet, doc: DocId) -> bool {
    if docs.doc() < doc {
        docs.seek(doc);
    }
    docs.doc() == doc
}

/// Calls `visit` with each of `addresses` (its index in `addresses`, its document and the state
/// of its segment) in index order, so that cursors in the state only move forward; `open` makes
/// a segment's state once, when the walk reaches it.
pub(super) fn in_index_order<S>(
    searcher: &Searcher,
    addresses: &[DocAddress],
    mut open: impl FnMut(&SegmentReader) -> tantivy::Result<S>,
    mut visit: impl FnMut(usize, DocId, &mut S),
) -> tantivy::Result<()> {
    let mut order: Vec<usize> = (0..addresses.len()).collect();
    order.sort_by_key(|&i| addresses[i]);
    let mut current: Option<(SegmentOrdinal, S)> = None;
    for i in order {
        let address = addresses[i];
        let state = match &mut current {
            Some((ord, state)) if *ord == address.segment_ord => state,
            _ => {
                let state = open(searcher.segment_reader(address.segment_ord))?;
                &mut current.insert((address.segment_ord, state)).1
            }
        };
        visit(i, address.doc_id, state);
    }
    Ok(())
}
