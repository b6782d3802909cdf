//! From a successful response to what the index stores: MIME parameters, text, title, headings
//! and links. Pure: no I/O. `text/gemini` goes through the [`crate::gemtext`] parser (over HTTP
//! as well), HTML through [`html`], Atom and RSS documents through [`crate::feed`], other
//! `text/*` is indexed as plain text, and anything else is described by its URL alone.

mod dom;
pub mod html;

use ::url::Url;

use crate::gemtext::{self, PageLink};

/// A parsed MIME type (the meta of a 20 response).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mime {
    /// `type/subtype`, lower-case.
    pub essence: String,
    pub charset: Option<String>,
    /// The first language tag of `lang=`.
    pub lang: Option<String>,
}

/// Parses a response's MIME type. An empty meta means `text/gemini; charset=utf-8`.
pub fn parse_mime(meta: &str) -> Mime {
    let mut parts = meta.split(';');
    let essence = parts.next().unwrap_or("").trim().to_ascii_lowercase();
    let essence = if essence.is_empty() {
        "text/gemini".to_string()
    } else {
        essence
    };
    let mut mime = Mime {
        essence,
        charset: None,
        lang: None,
    };
    for param in parts {
        let Some((name, value)) = param.split_once('=') else {
            continue;
        };
        let value = value.trim().trim_matches('"');
        match name.trim().to_ascii_lowercase().as_str() {
            "charset" if !value.is_empty() => mime.charset = Some(value.to_ascii_lowercase()),
            "lang" => {
                let first = value.split(',').next().unwrap_or("").trim();
                if !first.is_empty() {
                    mime.lang = Some(first.to_string());
                }
            }
            _ => {}
        }
    }
    mime
}

/// What the indexer and the frontier need from one response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Extracted {
    pub title: String,
    pub body: String,
    pub headings: Vec<String>,
    pub links: Vec<PageLink>,
    pub mime: String,
    pub lang: Option<String>,
    /// A gemfeed, Atom or RSS feed: revisited often, its new entries fetched first.
    pub feed: bool,
}

impl Extracted {
    /// The page's link labels, one a line, the empty ones left out: what the index holds of
    /// its links.
    pub fn link_labels(&self) -> String {
        self.links
            .iter()
            .map(|l| l.label.as_str())
            .filter(|l| !l.is_empty())
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// Most distinct link targets kept from one page ([`gemtext::MAX_LINK_TARGETS`]); links to
/// further targets are dropped, so a page of a million links costs no more than a large index
/// page. Of links to the targets kept, the first [`gemtext::MAX_LINKS`] in all are kept.
pub const MAX_LINKS_PER_PAGE: usize = gemtext::MAX_LINK_TARGETS;

/// Extracts a page. `body` is empty for types whose body was not downloaded. Links are kept as
/// [`gemtext::LinkSet`] keeps them, as they are found: a page's links never cost more than
/// that.
pub fn extract(url: &Url, meta: &str, body: &[u8]) -> Extracted {
    let mime = parse_mime(meta);
    let is_html = is_html(&mime.essence);
    // HTML may declare its charset inside (a BOM, which `decode` honours, still wins).
    let charset = match (&mime.charset, is_html) {
        (None, true) => html::sniff_charset(body),
        (declared, _) => declared.clone(),
    };
    let text = decode(body, charset.as_deref());
    if is_html {
        let page = html::extract(url, &text);
        return Extracted {
            title: if page.title.is_empty() {
                gemtext::title_of(&[], url)
            } else {
                page.title
            },
            body: page.body,
            headings: page.headings,
            links: page.links,
            mime: mime.essence,
            lang: mime.lang.or(page.lang),
            feed: false,
        };
    }
    let xml_feed = crate::feed::is_xml_feed_type(&mime.essence)
        .then(|| crate::feed::read_xml_feed(&text))
        .flatten();
    let mut feed = xml_feed.is_some();
    let (title, body, headings, links) = if mime.essence == "text/gemini" {
        let page = gemtext::extract(url, &text);
        feed = page.feed;
        (page.title, page.body, page.headings, page.links)
    } else if let Some(xml) = xml_feed {
        let mut links = gemtext::LinkSet::new(gemtext::MAX_LINK_TARGETS, gemtext::MAX_LINKS);
        for (href, label) in &xml.entries {
            if let Ok(target) = crate::urlnorm::resolve(url, href) {
                links.offer(target, || label.clone(), true);
            }
        }
        let links = links.into_links();
        let title = if xml.title.is_empty() {
            gemtext::title_of(&[], url)
        } else {
            xml.title
        };
        (title, xml.text, Vec::new(), links)
    } else if mime.essence.starts_with("text/") {
        let title = text
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .filter(|l| l.chars().count() <= 120)
            .map(str::to_string)
            .unwrap_or_else(|| gemtext::title_of(&[], url));
        (title, text.into_owned(), Vec::new(), Vec::new())
    } else {
        // A file geode does not download: it is found by the words of its path.
        (
            gemtext::title_of(&[], url),
            path_words(url),
            Vec::new(),
            Vec::new(),
        )
    };
    Extracted {
        title,
        body,
        headings,
        links,
        mime: mime.essence,
        lang: mime.lang,
        feed,
    }
}

/// Whether the body of a response with this meta is downloaded and read: text, and the XML
/// types feeds come in. Other types are indexed from their header, URL and inbound links.
pub fn wants_body(meta: &str) -> bool {
    let essence = parse_mime(meta).essence;
    essence.starts_with("text/") || is_html(&essence) || crate::feed::is_xml_feed_type(&essence)
}

/// Whether a response with this meta is read as HTML.
pub fn is_html_meta(meta: &str) -> bool {
    is_html(&parse_mime(meta).essence)
}

fn is_html(essence: &str) -> bool {
    matches!(essence, "text/html" | "application/xhtml+xml")
}

/// Decodes a text body in its declared charset (UTF-8 when none is declared or the label is
/// unknown). A leading byte order mark is dropped; undecodable bytes become U+FFFD.
pub fn decode<'a>(body: &'a [u8], charset: Option<&str>) -> std::borrow::Cow<'a, str> {
    let encoding = charset
        .and_then(|label| encoding_rs::Encoding::for_label(label.as_bytes()))
        .filter(|e| *e != encoding_rs::UTF_8);
    match encoding {
        // encoding_rs sniffs a BOM first, as browsers do: a BOM wins over the label.
        Some(encoding) => encoding.decode(body).0,
        None => gemtext::decode(body),
    }
}

/// The words of a URL's path, for files indexed without their content: `/pics/red-fox.png`
/// gives `pics red fox png`.
fn path_words(url: &Url) -> String {
    let path = gemtext::percent_decode(url.path());
    path.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mime_parameters() {
        let cases = [
            ("", "text/gemini", None, None),
            ("text/gemini", "text/gemini", None, None),
            (
                "TEXT/Gemini; charset=UTF-8; lang=en",
                "text/gemini",
                Some("utf-8"),
                Some("en"),
            ),
            (
                "text/gemini;lang=\"fr,en\"",
                "text/gemini",
                None,
                Some("fr"),
            ),
            (
                "text/plain; charset=iso-8859-1",
                "text/plain",
                Some("iso-8859-1"),
                None,
            ),
            ("image/png", "image/png", None, None),
            ("text/gemini; lang=; junk", "text/gemini", None, None),
        ];
        for (meta, essence, charset, lang) in cases {
            let m = parse_mime(meta);
            assert_eq!(m.essence, essence, "{meta}");
            assert_eq!(m.charset.as_deref(), charset, "{meta}");
            assert_eq!(m.lang.as_deref(), lang, "{meta}");
        }
    }

    #[test]
    fn charsets_are_decoded() {
        let latin1 = b"caf\xe9 cr\xe8me";
        assert_eq!(decode(latin1, Some("iso-8859-1")), "café crème");
        assert_eq!(decode(latin1, Some("ISO-8859-1")), "café crème");
        assert_eq!(decode("café".as_bytes(), Some("utf-8")), "café");
        assert_eq!(decode("\u{feff}café".as_bytes(), None), "café");
        assert_eq!(decode(b"caf\xe9", Some("no-such-charset")), "caf\u{fffd}");
        assert_eq!(decode(b"\x82\xa0", Some("shift_jis")), "あ");
        let url = Url::parse("gemini://h.test/fr.gmi").unwrap();
        let e = extract(
            &url,
            "text/gemini; charset=iso-8859-1; lang=fr",
            b"# Cr\xe8me br\xfbl\xe9e\n",
        );
        assert_eq!(e.title, "Crème brûlée");
        assert_eq!(e.lang.as_deref(), Some("fr"));
    }

    #[test]
    fn feeds_are_recognised() {
        let url = Url::parse("gemini://h.test/gemlog/").unwrap();
        let log = "# Log\n=> a.gmi 2024-01-01 First\n=> b.gmi 2024-02-01 Second\n=> / Home\n";
        let e = extract(&url, "text/gemini", log.as_bytes());
        assert!(e.feed);
        let entries: Vec<bool> = e.links.iter().map(|l| l.entry).collect();
        assert_eq!(entries, [true, true, false]);
        let one = extract(&url, "text/gemini", b"=> a.gmi 2024-01-01 Only one\n");
        assert!(!one.feed, "one dated link is a mention, not a feed");

        let atom = b"<feed xmlns='http://www.w3.org/2005/Atom'><title>Log</title>\
            <entry><title>First post</title><link href='a.gmi'/></entry></feed>";
        let url = Url::parse("gemini://h.test/gemlog/atom.xml").unwrap();
        let e = extract(&url, "application/atom+xml", atom);
        assert!(e.feed);
        assert_eq!(e.title, "Log");
        assert_eq!(e.links[0].url.as_str(), "gemini://h.test/gemlog/a.gmi");
        assert_eq!(e.links[0].label, "First post");
        assert!(e.links[0].entry);
        assert!(e.body.contains("First post"));
        for meta in [
            "text/gemini",
            "",
            "application/atom+xml",
            "text/xml; charset=utf-8",
        ] {
            assert!(wants_body(meta), "{meta}");
        }
        assert!(!wants_body("image/png"));
        // XML that is no feed is described by its path, like any other file.
        let svg = extract(&url, "application/xml", b"<svg/>");
        assert!(!svg.feed);
        assert_eq!(svg.body, "gemlog atom xml");
    }

    #[test]
    fn a_page_keeps_the_links_of_its_first_distinct_targets() {
        let url = Url::parse("gemini://h.test/bomb").unwrap();
        let mut page = String::new();
        for i in 0..(MAX_LINKS_PER_PAGE + 500) {
            page.push_str(&format!("=> /t/{i} link {i}\n=> /t/0 again\n"));
        }
        let e = extract(&url, "text/gemini", page.as_bytes());
        let distinct: std::collections::HashSet<&str> =
            e.links.iter().map(|l| l.url.as_str()).collect();
        assert_eq!(distinct.len(), MAX_LINKS_PER_PAGE);
        assert!(distinct.contains("gemini://h.test/t/4999"));
        assert!(!distinct.contains("gemini://h.test/t/5000"));
        // Repeated links to a kept target stay (their labels are anchors).
        assert_eq!(e.links.len(), 2 * MAX_LINKS_PER_PAGE + 500);
    }

    #[test]
    fn files_are_described_by_their_path() {
        let url = Url::parse("gemini://h.test/pics/red-fox%20photo.png").unwrap();
        let e = extract(&url, "image/png", b"");
        assert_eq!(e.body, "pics red fox photo png");
        assert_eq!(e.mime, "image/png");
        assert!(e.links.is_empty());
    }

    #[test]
    fn plain_text_keeps_its_text_and_takes_its_first_line_as_title() {
        let url = Url::parse("gemini://h.test/notes.txt").unwrap();
        let e = extract(
            &url,
            "text/plain",
            b"\n  Field notes  \nThe heron returned.\n",
        );
        assert_eq!(e.title, "Field notes");
        assert!(e.body.contains("The heron returned."));
    }

    #[test]
    fn html_pages_are_read_in_their_declared_charset() {
        let url = Url::parse("https://web.test/a.html").unwrap();
        let latin1 = b"<html lang=fr><title>Caf\xe9</title><h1>Cr\xe8me</h1><p>br\xfbl\xe9e</p>";
        let e = extract(&url, "text/html; charset=ISO-8859-1", latin1);
        assert_eq!(e.title, "Café");
        assert_eq!(e.headings, ["Crème"]);
        assert!(e.body.contains("brûlée"), "{}", e.body);
        assert_eq!(e.lang.as_deref(), Some("fr"));
        assert_eq!(e.mime, "text/html");
        // No charset in the header: the document's own <meta> says it.
        let cp1251 = b"<meta charset=windows-1251><title>\xcf\xf0\xe8\xe2\xe5\xf2</title>";
        assert_eq!(extract(&url, "text/html", cp1251).title, "Привет");
        // The header wins over the document.
        let e = extract(
            &url,
            "text/html; charset=utf-8",
            "<meta charset=koi8-r><title>Été</title>".as_bytes(),
        );
        assert_eq!(e.title, "Été");
        // A page without a title is named by its URL.
        assert_eq!(
            extract(&url, "application/xhtml+xml", b"<p>x</p>").title,
            gemtext::title_of(&[], &url)
        );
        assert!(wants_body("application/xhtml+xml"));
        // Gemtext over HTTP is gemtext.
        let e = extract(&url, "text/gemini", b"# Over HTTP\n=> /x Link\n");
        assert_eq!(e.title, "Over HTTP");
        assert_eq!(e.links[0].url.as_str(), "https://web.test/x");
    }
}
