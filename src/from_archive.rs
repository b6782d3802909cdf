//! What the two index writers that build documents from the store's archive share: `geode
//! index` ([`crate::apply`], a shared store's pending operations) and `geode reindex`
//! ([`crate::reindex`], a whole new index). A crawl writes what it has just fetched instead.
//!
//! A page is written from its archived body, extracted again by the crawl's own document
//! builder ([`crate::document`]), with the labels of the links to it as its anchors. A page whose
//! content needs a body that the archive lacks cannot be written: it is [`missing`].

use ::url::Url;

use crate::datadir::lock;
use crate::document;
use crate::frontier::{Frontier, FrontierError, IndexedContent};
use crate::index::{IndexError, Indexer};

/// Errors that stop either writer. What `geode index` committed stays; a rebuild leaves the
/// live index untouched.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error(transparent)]
    Frontier(#[from] FrontierError),
    #[error(transparent)]
    Index(#[from] IndexError),
    #[error(transparent)]
    Lock(#[from] lock::LockError),
    /// What was being done (`data directory DIR`, `removing DIR`), and why it failed.
    #[error("{0}: {1}")]
    Io(String, std::io::Error),
}

/// The archived body of `page`, if the archive holds one.
pub fn body(
    frontier: &dyn Frontier,
    page: &IndexedContent,
) -> Result<Option<Vec<u8>>, FrontierError> {
    match &page.content_hash {
        Some(hash) => frontier.archived_body(hash),
        None => Ok(None),
    }
}

/// Whether `page` cannot be written with `body`, what the archive holds of it: a text page
/// whose body is not archived (a file known by its header only needs none).
pub fn missing(page: &IndexedContent, body: Option<&[u8]>) -> bool {
    body.is_none() && crate::content::wants_body(page.content_meta.as_deref().unwrap_or(""))
}

/// Writes the document of `page` to `indexer` (replacing the one of its URL): its content
/// extracted again from `body`, with the labels of the links to it. Returns false, and writes
/// nothing, when its URL does not parse.
pub fn upsert(
    frontier: &dyn Frontier,
    indexer: &mut Indexer,
    page: &IndexedContent,
    body: Option<&[u8]>,
) -> Result<bool, WriteError> {
    let anchors = frontier
        .inbound_labels(page.id, document::MAX_ANCHORS)?
        .join("\n");
    upsert_with_anchors(indexer, page, body, anchors)
}

/// [`upsert`] with the labels of the links to the page already read (`anchors`, one a line):
/// a writer reading those of many pages at once.
pub fn upsert_with_anchors(
    indexer: &mut Indexer,
    page: &IndexedContent,
    body: Option<&[u8]>,
    anchors: String,
) -> Result<bool, WriteError> {
    let Ok(url) = Url::parse(&page.url) else {
        return Ok(false);
    };
    let doc = document::document(
        &url,
        page.url.clone(),
        page.host.clone(),
        page.content_meta.as_deref().unwrap_or(""),
        body,
        anchors,
        page.size,
        page.fetched_at,
    );
    indexer.upsert(&doc)?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(meta: &str) -> IndexedContent {
        IndexedContent {
            id: 1,
            url: "gemini://example.org/a".into(),
            host: "example.org".into(),
            content_hash: None,
            content_meta: Some(meta.into()),
            size: 3,
            fetched_at: 0,
        }
    }

    #[test]
    fn only_a_page_read_for_its_text_is_missing_without_its_body() {
        assert!(missing(&page("text/gemini"), None));
        assert!(!missing(&page("text/gemini"), Some(b"# a")));
        assert!(!missing(&page("image/png"), None));
    }
}
