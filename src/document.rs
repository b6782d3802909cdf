//! What an index document is made of, in one place for everyone who writes one: a crawl
//! (`crawl::record`, `crawl::driver`), the index writer of a shared store (`apply`) and
//! `geode reindex`. A page's extracted text, its headings and link labels, and the labels of the
//! links that point to it (its anchors, at most [`MAX_ANCHORS`]); a file known by its header only
//! also carries its anchors in its body, its only other text.
//!
//! No I/O: what is stored is read by the callers and handed in.

use url::Url;

use crate::content::{self, Extracted};
use crate::frontier::IndexedPage;
use crate::index::PageDoc;

/// Most distinct inbound link labels indexed with a page: enough to say what others call it,
/// bounded for pages every capsule links to.
pub const MAX_ANCHORS: usize = 200;

/// The document of a page extracted as `page`, with `anchors`, the labels of links to it.
pub fn page_doc(
    url: String,
    host: String,
    page: &Extracted,
    header_only: bool,
    anchors: String,
    size: u64,
    fetched_at: i64,
) -> PageDoc {
    let mut doc = PageDoc {
        url,
        host,
        title: page.title.clone(),
        body: page.body.clone(),
        headings: page.headings.join("\n"),
        link_labels: page.link_labels(),
        mime: page.mime.clone(),
        lang: page.lang.clone(),
        size,
        fetched_at,
        anchors: String::new(),
    };
    set_anchors(&mut doc, header_only, anchors);
    doc
}

/// The index document of an archived page: its content extracted again from `meta` and `body`
/// (`None`: only the header was read), with `anchors`, the labels of links to it. How
/// `geode reindex` rebuilds what a crawl indexed.
#[allow(clippy::too_many_arguments)]
pub fn document(
    url: &Url,
    url_text: String,
    host: String,
    meta: &str,
    body: Option<&[u8]>,
    anchors: String,
    size: u64,
    fetched_at: i64,
) -> PageDoc {
    let extracted = content::extract(url, meta, body.unwrap_or_default());
    page_doc(
        url_text,
        host,
        &extracted,
        body.is_none(),
        anchors,
        size,
        fetched_at,
    )
}

/// Gives a document the anchors read for it: a file known by its header only also carries them
/// in its body, the only text it has.
pub fn set_anchors(doc: &mut PageDoc, header_only: bool, anchors: String) {
    if header_only {
        doc.body = header_only_body(&doc.body, &anchors);
    }
    doc.anchors = anchors;
}

/// The body of a document known by its header only (a file whose body is not read): what its
/// URL and type say of it, then the labels of the links to it, its only other text. The one rule
/// for such a document, whether it is written whole ([`page_doc`], [`document`]) or rewritten
/// for new anchors ([`refreshed_body`]).
pub fn header_only_body(description: &str, anchors: &str) -> String {
    if anchors.is_empty() {
        description.to_string()
    } else {
        format!("{description}\n{anchors}")
    }
}

/// The body a document rewritten with new `anchors` gets: for a file known by its header only,
/// [`header_only_body`]; other documents keep theirs (`None`).
pub fn refreshed_body(page: &IndexedPage, anchors: &str) -> Option<String> {
    if !page.header_only {
        return None;
    }
    let url = Url::parse(&page.url).ok()?;
    let described = content::extract(&url, page.mime.as_deref().unwrap_or(""), &[]).body;
    Some(header_only_body(&described, anchors))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anchors_go_into_the_body_of_a_file_known_by_its_header_only() {
        let mut page = PageDoc {
            body: "An image".into(),
            ..PageDoc::default()
        };
        set_anchors(&mut page, false, "a label".into());
        assert_eq!(
            (page.body.as_str(), page.anchors.as_str()),
            ("An image", "a label")
        );
        set_anchors(&mut page, true, "a label".into());
        assert_eq!(page.body, "An image\na label");
        let mut empty = PageDoc {
            body: "An image".into(),
            ..PageDoc::default()
        };
        set_anchors(&mut empty, true, String::new());
        assert_eq!(empty.body, "An image");
    }

    #[test]
    fn a_file_rewritten_for_new_anchors_reads_as_one_written_whole_with_them() {
        let url = Url::parse("gemini://capsule.example/photos/harbour-at-dawn.jpg").unwrap();
        let anchors = "the harbour at dawn\nmy best photo";
        let whole = document(
            &url,
            url.to_string(),
            "capsule.example".into(),
            "image/jpeg",
            None,
            anchors.into(),
            123_456,
            0,
        );
        let page = crate::frontier::IndexedPage {
            id: 1,
            url: url.to_string(),
            mime: Some("image/jpeg".into()),
            header_only: true,
        };
        assert_eq!(
            refreshed_body(&page, anchors).as_deref(),
            Some(&*whole.body)
        );
        assert!(whole.body.contains("my best photo"), "{}", whole.body);
        // With no labels, the description alone, both ways.
        let bare = document(
            &url,
            url.to_string(),
            "c".into(),
            "image/jpeg",
            None,
            String::new(),
            1,
            0,
        );
        assert_eq!(refreshed_body(&page, ""), Some(bare.body));
        // A page whose body was read keeps its body.
        let read = crate::frontier::IndexedPage {
            header_only: false,
            ..page
        };
        assert_eq!(refreshed_body(&read, anchors), None);
    }
}
