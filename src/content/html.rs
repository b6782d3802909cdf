//! HTML pages into what the index stores: title, headings, readable text and links with their
//! labels, and the page's declared language. Pure: no I/O.
//!
//! Parsing is html5ever's, the algorithm browsers use, so broken markup reads as a browser would
//! read it, into a compact tree ([`super::dom`]). The walk over the tree is iterative: nesting
//! depth costs no stack. Left out of the text: `head` (but its `title`), scripts, styles, `noscript`,
//! `template`, embedded objects, form controls, hidden elements (`hidden`,
//! `aria-hidden="true"`), and navigation chrome (`nav`, `footer`, `role="navigation"`,
//! `"banner"` and `"contentinfo"`), whose links are still followed. Block elements end lines;
//! `pre` keeps its white space.
//!
//! html5ever's tree builder is quadratic in the nesting depth (200,000 nested `div`s take
//! minutes), so a document whose tags nest deeper than [`MAX_NESTING`] (counted by a linear
//! prescan, leaving out elements that close themselves implicitly) is not given to it: its text
//! is read by stripping the tags, and its links from the `href` attributes.

use ::url::Url;

use super::dom::{Data, Dom, Edge, Element};
use crate::gemtext::{LinkSet, PageLink, MAX_LINKS, MAX_LINK_TARGETS};

/// What an HTML page holds for the index.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HtmlPage {
    /// `<title>`, else the first `h1`; empty when neither has text.
    pub title: String,
    pub body: String,
    pub headings: Vec<String>,
    pub links: Vec<PageLink>,
    /// The `lang` attribute of `<html>`.
    pub lang: Option<String>,
}

/// Elements whose content is never text nor links.
const SILENT: &[&str] = &[
    "script", "style", "noscript", "template", "svg", "math", "canvas", "iframe", "object",
    "embed", "select", "textarea", "button", "input", "head",
];

/// Elements that end a line of text.
const BLOCKS: &[&str] = &[
    "address",
    "article",
    "aside",
    "blockquote",
    "br",
    "dd",
    "details",
    "div",
    "dl",
    "dt",
    "figcaption",
    "figure",
    "footer",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "header",
    "hr",
    "li",
    "main",
    "nav",
    "ol",
    "p",
    "pre",
    "section",
    "summary",
    "table",
    "td",
    "th",
    "tr",
    "ul",
];

fn is_heading(name: &str) -> bool {
    matches!(name, "h1" | "h2" | "h3" | "h4" | "h5" | "h6")
}

/// Whether an element is navigation chrome: its links count, its text does not.
fn is_chrome(element: &Element) -> bool {
    matches!(element.name(), "nav" | "footer")
        || matches!(
            element.attr("role").map(str::to_ascii_lowercase).as_deref(),
            Some("navigation" | "banner" | "contentinfo")
        )
}

fn is_hidden(element: &Element) -> bool {
    element.attr("hidden").is_some()
        || element
            .attr("aria-hidden")
            .is_some_and(|v| v.eq_ignore_ascii_case("true"))
}

/// Collapses runs of white space into single spaces.
fn collapse(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Appends `text` to `out`, collapsing white space across the boundary.
fn push_words(out: &mut String, text: &str) {
    if text.trim().is_empty() {
        if !text.is_empty() && !out.is_empty() && !out.ends_with([' ', '\n']) {
            out.push(' ');
        }
        return;
    }
    if text.starts_with(char::is_whitespace) && !out.is_empty() && !out.ends_with([' ', '\n']) {
        out.push(' ');
    }
    out.push_str(&collapse(text));
    if text.ends_with(char::is_whitespace) {
        out.push(' ');
    }
}

fn end_line(out: &mut String) {
    while out.ends_with(' ') {
        out.pop();
    }
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
}

/// The deepest nesting handed to the HTML parser; real pages stay far below it.
pub const MAX_NESTING: usize = 512;

/// Elements without content or closed implicitly by their siblings: they add no depth.
const NO_DEPTH: &[&str] = &[
    "area", "base", "br", "col", "dd", "dt", "embed", "hr", "img", "input", "li", "link", "meta",
    "option", "p", "param", "source", "td", "th", "tr", "track", "wbr",
];

/// The deepest nesting of tags, estimated in one pass without parsing.
fn nesting(text: &str) -> usize {
    let bytes = text.as_bytes();
    let (mut depth, mut deepest) = (0usize, 0usize);
    let mut i = 0;
    while let Some(at) = bytes[i..].iter().position(|&b| b == b'<') {
        let start = i + at + 1;
        let closing = bytes.get(start) == Some(&b'/');
        let name_start = start + usize::from(closing);
        let name_len = bytes[name_start..]
            .iter()
            .take_while(|b| b.is_ascii_alphanumeric())
            .count();
        i = name_start + name_len;
        if name_len == 0 {
            continue;
        }
        let name = text[name_start..name_start + name_len].to_ascii_lowercase();
        if NO_DEPTH.contains(&name.as_str()) {
            continue;
        }
        let end = bytes[i..].iter().position(|&b| b == b'>').map(|p| i + p);
        let self_closing = end.is_some_and(|e| e > 0 && bytes[e - 1] == b'/');
        if closing {
            depth = depth.saturating_sub(1);
        } else if !self_closing {
            depth += 1;
            deepest = deepest.max(depth);
        }
    }
    deepest
}

/// What a document too deep to parse still gives: its text without tags, scripts and styles,
/// and the targets of its `href` attributes.
fn extract_flat(url: &Url, text: &str) -> HtmlPage {
    let mut body = String::new();
    let mut links = LinkSet::new(MAX_LINK_TARGETS, MAX_LINKS);
    let lower = text.to_ascii_lowercase();
    let mut i = 0;
    while i < text.len() {
        let Some(at) = text[i..].find('<') else {
            push_words(&mut body, &text[i..]);
            break;
        };
        push_words(&mut body, &text[i..i + at]);
        let tag_start = i + at;
        let tag_end = text[tag_start..]
            .find('>')
            .map_or(text.len(), |p| tag_start + p + 1);
        let tag = &lower[tag_start..tag_end];
        if let Some(at) = tag.find("href=") {
            let value = tag[at + 5..].trim_start_matches(['"', '\'']);
            let len = value
                .find(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '>'))
                .unwrap_or(value.len());
            // The original case of the URL, from the same place.
            let from = tag_start + at + 5 + (tag[at + 5..].len() - value.len());
            if let Ok(target) = crate::urlnorm::resolve(url, &text[from..from + len]) {
                links.offer(target, String::new, false);
            }
        }
        i = tag_end;
        for silent in ["<script", "<style"] {
            if tag.starts_with(silent) {
                let close = format!("</{}", &silent[1..]);
                i = lower[i..].find(&close).map_or(text.len(), |p| i + p);
            }
        }
        end_line_if_block(&mut body, tag);
    }
    HtmlPage {
        body: body.trim().to_string(),
        links: links.into_links(),
        ..HtmlPage::default()
    }
}

fn end_line_if_block(body: &mut String, tag: &str) {
    let name: String = tag
        .trim_start_matches(['<', '/'])
        .chars()
        .take_while(char::is_ascii_alphanumeric)
        .collect();
    if BLOCKS.contains(&name.as_str()) {
        end_line(body);
    }
}

/// Reads an HTML document (already decoded) found at `url`.
pub fn extract(url: &Url, text: &str) -> HtmlPage {
    if nesting(text) > MAX_NESTING {
        return extract_flat(url, text);
    }
    let document = Dom::parse(text);
    let lang = document
        .root_element()
        .and_then(|root| root.attr("lang"))
        .map(str::trim)
        .filter(|l| !l.is_empty() && l.len() <= 35)
        .map(str::to_string);
    // `<base href>` changes what relative links resolve against.
    let base = document
        .edges()
        .filter_map(|edge| match edge {
            Edge::Open(id) => match document.data(id) {
                Data::Element(e) => Some(e),
                _ => None,
            },
            Edge::Close(_) => None,
        })
        .find(|e| e.name() == "base" && e.attr("href").is_some())
        .and_then(|e| crate::urlnorm::resolve(url, e.attr("href")?).ok())
        .unwrap_or_else(|| url.clone());

    let mut page = HtmlPage {
        lang,
        ..HtmlPage::default()
    };
    let mut title = String::new();
    let mut first_h1: Option<String> = None;
    let mut links = LinkSet::new(MAX_LINK_TARGETS, MAX_LINKS);
    // Depths of open elements of each kind.
    let (mut silent, mut chrome, mut pre, mut in_title) = (0usize, 0usize, 0usize, 0usize);
    let mut heading: Option<String> = None;
    let mut link: Option<(Url, String)> = None;
    for edge in document.edges() {
        match edge {
            Edge::Open(node) => match document.data(node) {
                Data::Element(element) => {
                    let name = element.name();
                    if name == "title" {
                        in_title += 1;
                    }
                    if SILENT.contains(&name) || is_hidden(element) {
                        silent += 1;
                        continue;
                    }
                    if silent > 0 {
                        continue;
                    }
                    if is_chrome(element) {
                        chrome += 1;
                    }
                    if name == "pre" {
                        pre += 1;
                    }
                    if BLOCKS.contains(&name) && chrome == 0 {
                        end_line(&mut page.body);
                    }
                    if is_heading(name) && chrome == 0 && heading.is_none() {
                        heading = Some(String::new());
                    }
                    if name == "a" && link.is_none() {
                        if let Some(target) = element
                            .attr("href")
                            .map(str::trim)
                            .filter(|h| !h.is_empty() && !h.starts_with('#'))
                            .and_then(|h| crate::urlnorm::resolve(&base, h).ok())
                        {
                            let label = element
                                .attr("aria-label")
                                .or_else(|| element.attr("title"))
                                .unwrap_or("")
                                .to_string();
                            link = Some((target, label));
                        }
                    }
                    if name == "img" {
                        // An image's alt text labels the link around it.
                        if let (Some((_, label)), Some(alt)) = (link.as_mut(), element.attr("alt"))
                        {
                            push_words(label, alt);
                        }
                    }
                }
                Data::Text(text) => {
                    if in_title > 0 {
                        push_words(&mut title, text);
                    }
                    if silent > 0 {
                        continue;
                    }
                    if let Some((_, label)) = link.as_mut() {
                        push_words(label, text);
                    }
                    if chrome > 0 {
                        continue;
                    }
                    if let Some(heading) = heading.as_mut() {
                        push_words(heading, text);
                    }
                    if pre > 0 {
                        page.body.push_str(text);
                    } else {
                        push_words(&mut page.body, text);
                    }
                }
                _ => {}
            },
            Edge::Close(node) => {
                let Data::Element(element) = document.data(node) else {
                    continue;
                };
                let name = element.name();
                if name == "title" {
                    in_title = in_title.saturating_sub(1);
                }
                if SILENT.contains(&name) || is_hidden(element) {
                    silent = silent.saturating_sub(1);
                    continue;
                }
                if silent > 0 {
                    continue;
                }
                if BLOCKS.contains(&name) && chrome == 0 {
                    end_line(&mut page.body);
                }
                if is_chrome(element) {
                    chrome = chrome.saturating_sub(1);
                }
                if name == "pre" {
                    pre = pre.saturating_sub(1);
                }
                if is_heading(name) {
                    if let Some(text) = heading.take() {
                        let text = collapse(&text);
                        if !text.is_empty() {
                            if name == "h1" && first_h1.is_none() {
                                first_h1 = Some(text.clone());
                            }
                            page.headings.push(text);
                        }
                    }
                }
                if name == "a" {
                    if let Some((url, label)) = link.take() {
                        links.offer(url, || collapse(&label), false);
                    }
                }
            }
        }
    }
    end_line(&mut page.body);
    page.body = page.body.trim().to_string();
    page.links = links.into_links();
    let title = collapse(&title);
    page.title = if title.is_empty() {
        first_h1.unwrap_or_default()
    } else {
        title
    };
    page
}

/// The charset an HTML document declares in its first 1024 bytes (`<meta charset>` or
/// `<meta http-equiv="Content-Type" content="...; charset=...">`), as the HTML standard's
/// prescan looks for it; `None` when it declares none.
pub fn sniff_charset(body: &[u8]) -> Option<String> {
    let head = &body[..body.len().min(1024)];
    let text = String::from_utf8_lossy(head).to_ascii_lowercase();
    let mut rest = text.as_str();
    while let Some(at) = rest.find("<meta") {
        rest = &rest[at + 5..];
        let tag = &rest[..rest.find('>').unwrap_or(rest.len())];
        if let Some(at) = tag.find("charset") {
            let value = tag[at + "charset".len()..].trim_start();
            let Some(value) = value.strip_prefix('=') else {
                continue;
            };
            let value = value.trim_start().trim_start_matches(['"', '\'']);
            let end = value
                .find(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | ';' | '/' | '>'))
                .unwrap_or(value.len());
            if end > 0 {
                return Some(value[..end].to_string());
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(html: &str) -> HtmlPage {
        extract(&Url::parse("https://web.test/dir/page.html").unwrap(), html)
    }

    #[test]
    fn text_headings_and_title_without_chrome_or_scripts() {
        let p = page(
            "<!doctype html><html lang=fr><head><title> Le  jardin </title>\
             <style>body{color:red}</style><script>var x = 'hidden';</script></head>\
             <body><nav><a href='/'>Accueil</a> menu words</nav>\
             <h1>Les <em>tomates</em></h1><p>Arroser   le soir.<br>Pas à midi.</p>\
             <div hidden>secret</div><span aria-hidden=true>icon</span>\
             <pre>  a  b\n  c</pre><footer>© 2024 site</footer></body></html>",
        );
        assert_eq!(p.title, "Le jardin");
        assert_eq!(p.lang.as_deref(), Some("fr"));
        assert_eq!(p.headings, ["Les tomates"]);
        assert!(p.body.contains("Les tomates"), "{}", p.body);
        assert!(
            p.body.contains("Arroser le soir.\nPas à midi."),
            "{}",
            p.body
        );
        assert!(p.body.contains("  a  b\n  c"), "{}", p.body);
        for absent in [
            "color",
            "hidden",
            "menu words",
            "secret",
            "icon",
            "2024",
            "Accueil",
        ] {
            assert!(!p.body.contains(absent), "{absent} in {}", p.body);
        }
        // Navigation links are still followed.
        assert_eq!(p.links[0].url.as_str(), "https://web.test/");
        assert_eq!(p.links[0].label, "Accueil");
    }

    #[test]
    fn links_resolve_against_the_base_and_take_their_labels() {
        let p = page(
            "<base href='https://cdn.test/root/'>\
             <a href='x.html'>  The   X </a>\
             <a href='#top'>top</a><a href=''>empty</a>\
             <a href='gemini://cap.test/'><img alt='A capsule'></a>\
             <a href='/y' title='Why'></a><a href='mailto:me@web.test'>mail</a>",
        );
        let links: Vec<(&str, &str)> = p
            .links
            .iter()
            .map(|l| (l.url.as_str(), l.label.as_str()))
            .collect();
        assert_eq!(
            links,
            [
                ("https://cdn.test/root/x.html", "The X"),
                ("gemini://cap.test/", "A capsule"),
                ("https://cdn.test/y", "Why"),
                ("mailto:me@web.test", "mail"),
            ]
        );
        assert_eq!(p.title, "", "no title, no h1");
    }

    #[test]
    fn the_first_h1_titles_a_page_without_a_title() {
        let p = page("<body><h2>Sub</h2><h1>Main</h1><h1>Other</h1></body>");
        assert_eq!(p.title, "Main");
        assert_eq!(p.headings, ["Sub", "Main", "Other"]);
    }

    #[test]
    fn deep_nesting_is_read_flat_and_garbage_still_parses() {
        let started = std::time::Instant::now();
        let deep = "<div>".repeat(700_000)
            + "deep <b>text</b><script>var no;</script><a HREF='/Deep'>x</a>"
            + &"</div>".repeat(700_000);
        assert!(nesting(&deep) > MAX_NESTING);
        let p = page(&deep);
        assert!(
            p.body.contains("deep text"),
            "{}",
            &p.body[..100.min(p.body.len())]
        );
        assert!(!p.body.contains("var no"));
        assert_eq!(p.links[0].url.as_str(), "https://web.test/Deep");
        assert!(started.elapsed() < std::time::Duration::from_secs(30));
        let p = page("<<<>>><p>ok</b></i><table><td>cell");
        assert!(p.body.contains("ok"), "{}", p.body);
        assert!(p.body.contains("cell"), "{}", p.body);
        // Implicitly closed elements and void elements add no depth.
        let list = "<ul>".to_string() + &"<li><p>item<br><img src=x>".repeat(10_000) + "</ul>";
        assert_eq!(nesting(&list), 1);
        assert_eq!(nesting("<div><span/><div></div></div>"), 2);
    }

    #[test]
    fn charsets_declared_in_meta_tags() {
        let cases: &[(&[u8], Option<&str>)] = &[
            (b"<meta charset=\"windows-1251\">", Some("windows-1251")),
            (b"<META CHARSET=ISO-8859-1>", Some("iso-8859-1")),
            (
                b"<meta http-equiv=\"Content-Type\" content=\"text/html; charset=Shift_JIS\">",
                Some("shift_jis"),
            ),
            (b"<meta name=viewport content=width>", None),
            (b"<p>charset=koi8-r</p>", None),
        ];
        for (html, want) in cases {
            assert_eq!(
                sniff_charset(html).as_deref(),
                *want,
                "{:?}",
                String::from_utf8_lossy(html)
            );
        }
        let late = [b"<p>".repeat(400).as_slice(), b"<meta charset=koi8-r>"].concat();
        assert_eq!(
            sniff_charset(&late),
            None,
            "only the first 1024 bytes are looked at"
        );
    }
}
