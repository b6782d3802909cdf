//! Feeds, which tell when something new appeared: gemfeeds (gemtext pages whose link labels start
//! with an ISO date, per the Gemini subscription companion) and Atom or RSS documents, read into
//! the title, text and entry links geode indexes. Pure, no I/O; a malformed document yields what
//! could be read before the error.
//!
//! Not here: how often feeds are revisited ([`crate::revisit`]) and fetching them.

use quick_xml::events::Event;
use quick_xml::{Reader, XmlVersion};

/// A gemtext page is a feed when at least this many of its link labels start with a date: one
/// dated link is often just a mention, and a feed is revisited every day.
pub const MIN_GEMFEED_ENTRIES: usize = 2;

/// Most entries read from one Atom or RSS document.
pub const MAX_ENTRIES: usize = 10_000;

/// Whether a link label starts with an ISO 8601 date (`2024-05-01 Title`), the mark of a
/// gemfeed entry.
pub fn is_dated_label(label: &str) -> bool {
    let b = label.trim_start().as_bytes();
    if b.len() < 10 {
        return false;
    }
    let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
    digits(0..4)
        && b[4] == b'-'
        && digits(5..7)
        && b[7] == b'-'
        && digits(8..10)
        && !b.get(10).is_some_and(u8::is_ascii_digit)
}

/// MIME types that may hold an Atom or RSS document.
pub fn is_xml_feed_type(essence: &str) -> bool {
    matches!(
        essence,
        "application/atom+xml"
            | "application/rss+xml"
            | "application/rdf+xml"
            | "application/xml"
            | "text/xml"
    )
}

/// What an Atom or RSS document says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct XmlFeed {
    /// The feed's (or channel's) title.
    pub title: String,
    /// Entry titles and summaries, one per line.
    pub text: String,
    /// Entries: (link as written, entry title).
    pub entries: Vec<(String, String)>,
}

/// Reads an Atom, RSS or RDF document; `None` when the root element is none of those.
pub fn read_xml_feed(text: &str) -> Option<XmlFeed> {
    // Text is trimmed per element below, not per event: entities split text into events.
    let mut reader = Reader::from_str(text);
    let mut feed = XmlFeed::default();
    // Element names from the root down (local names, lower-case).
    let mut path: Vec<String> = Vec::new();
    let mut current = Entry::default();
    let mut in_entry = false;
    let mut text_buf = String::new();
    let mut is_feed = None;
    while let Ok(event) = reader.read_event() {
        match event {
            Event::Start(e) => {
                let name = local(e.local_name().as_ref());
                if path.is_empty() {
                    is_feed = Some(matches!(name.as_str(), "feed" | "rss" | "rdf"));
                }
                if matches!(name.as_str(), "entry" | "item") {
                    in_entry = true;
                    current = Entry::default();
                }
                if name == "link" && in_entry {
                    if let Some(href) = href(&e) {
                        current.link.get_or_insert(href);
                    }
                }
                path.push(name);
                text_buf.clear();
            }
            // Atom: `<link href="..." rel="alternate"/>`.
            Event::Empty(e) if in_entry && local(e.local_name().as_ref()) == "link" => {
                let rel = attribute(&e, b"rel");
                if rel.as_deref().is_none() || rel.as_deref() == Some("alternate") {
                    if let Some(href) = href(&e) {
                        current.link.get_or_insert(href);
                    }
                }
            }
            Event::Text(t) => {
                if let Ok(s) = t.xml_content(XmlVersion::Implicit1_0) {
                    text_buf.push_str(&s);
                }
            }
            Event::CData(t) => {
                if let Ok(s) = t.decode() {
                    text_buf.push_str(&s);
                }
            }
            Event::GeneralRef(r) => {
                if let Ok(Some(c)) = r.resolve_char_ref() {
                    text_buf.push(c);
                } else if let Ok(name) = r.decode() {
                    if let Some(s) = quick_xml::escape::resolve_predefined_entity(&name) {
                        text_buf.push_str(s);
                    }
                }
            }
            Event::End(_) => {
                let Some(name) = path.pop() else { break };
                let value = std::mem::take(&mut text_buf);
                let value = value.trim();
                let parent = path.last().map(String::as_str);
                match (name.as_str(), in_entry) {
                    ("entry" | "item", true) => {
                        in_entry = false;
                        let entry = std::mem::take(&mut current);
                        if let Some(link) = entry.link {
                            if feed.entries.len() < MAX_ENTRIES {
                                feed.entries.push((link, entry.title.clone()));
                            }
                        }
                        for line in [entry.title, entry.summary] {
                            if !line.is_empty() {
                                feed.text.push_str(&line);
                                feed.text.push('\n');
                            }
                        }
                    }
                    ("title", true) => current.title = one_line(value),
                    ("link", true) if !value.is_empty() => {
                        current.link.get_or_insert_with(|| value.to_string());
                    }
                    ("summary" | "description" | "content", true) if current.summary.is_empty() => {
                        current.summary = one_line(value)
                    }
                    ("title", false)
                        if feed.title.is_empty() && matches!(parent, Some("feed" | "channel")) =>
                    {
                        feed.title = one_line(value);
                    }
                    _ => {}
                }
            }
            Event::Eof => break,
            _ => {}
        }
        if is_feed == Some(false) {
            return None;
        }
    }
    is_feed.unwrap_or(false).then_some(feed)
}

#[derive(Debug, Default)]
struct Entry {
    title: String,
    summary: String,
    link: Option<String>,
}

fn local(name: &[u8]) -> String {
    String::from_utf8_lossy(name).to_ascii_lowercase()
}

fn attribute(e: &quick_xml::events::BytesStart<'_>, key: &[u8]) -> Option<String> {
    e.attributes()
        .flatten()
        .find(|a| a.key.local_name().as_ref() == key)
        .and_then(|a| a.normalized_value(XmlVersion::Implicit1_0).ok())
        .map(|v| v.trim().to_string())
}

fn href(e: &quick_xml::events::BytesStart<'_>) -> Option<String> {
    attribute(e, b"href").filter(|h| !h.is_empty())
}

/// Whitespace runs (markup-stripped summaries are full of them) become single spaces.
fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dated_labels() {
        for yes in [
            "2024-05-01 Title",
            "2024-05-01",
            "  2024-05-01 - x",
            "2024-05-01: x",
        ] {
            assert!(is_dated_label(yes), "{yes:?}");
        }
        for no in [
            "",
            "2024-5-01 x",
            "Title 2024-05-01",
            "20240501 x",
            "2024-05-012",
            "2024/05/01",
        ] {
            assert!(!is_dated_label(no), "{no:?}");
        }
    }

    #[test]
    fn atom_entries_titles_and_links() {
        let atom = r#"<?xml version="1.0" encoding="utf-8"?>
<feed xmlns="http://www.w3.org/2005/Atom">
  <title>Juniper &amp; friends</title>
  <link href="gemini://a.test/"/>
  <entry>
    <title>Winter bread</title>
    <link rel="alternate" href="gemini://a.test/gemlog/bread.gmi"/>
    <summary>A sourdough &#x2014; starter named Bartholomew</summary>
  </entry>
  <entry>
    <title><![CDATA[Moths & more]]></title>
    <link href="moths.gmi"/>
  </entry>
  <entry><title>No link</title></entry>
</feed>"#;
        let feed = read_xml_feed(atom).expect("atom");
        assert_eq!(feed.title, "Juniper & friends");
        assert_eq!(
            feed.entries,
            [
                (
                    "gemini://a.test/gemlog/bread.gmi".to_string(),
                    "Winter bread".to_string()
                ),
                ("moths.gmi".to_string(), "Moths & more".to_string()),
            ]
        );
        assert!(feed.text.contains("starter named Bartholomew"));
        assert!(feed.text.contains("A sourdough \u{2014} starter"));
        assert!(feed.text.contains("No link"));
    }

    #[test]
    fn rss_items() {
        let rss = "<rss version=\"2.0\"><channel><title>Radio log</title>
            <link>gemini://r.test/</link>
            <item><title>Shortwave</title><link>gemini://r.test/sw.gmi</link>
            <description>lullaby</description></item></channel></rss>";
        let feed = read_xml_feed(rss).expect("rss");
        assert_eq!(feed.title, "Radio log");
        assert_eq!(
            feed.entries,
            [(
                "gemini://r.test/sw.gmi".to_string(),
                "Shortwave".to_string()
            )]
        );
        assert_eq!(feed.text, "Shortwave\nlullaby\n");
    }

    #[test]
    fn other_xml_and_garbage_are_not_feeds() {
        assert_eq!(read_xml_feed("<svg><title>x</title></svg>"), None);
        assert_eq!(read_xml_feed(""), None);
        assert_eq!(read_xml_feed("not xml at all"), None);
        // Truncated: what was read before the end is kept.
        let cut =
            read_xml_feed("<feed><entry><title>A</title><link href=\"a\"/></entry><entry><ti")
                .expect("a feed, cut short");
        assert_eq!(cut.entries.len(), 1);
    }
}
