//! The pages of ordinary capsules: gemtext with a title, paragraphs (100 to 400 words in all,
//! the page's unique word in the first), headings and links (within the capsule, and to the
//! capsules its links in the world point to), gemfeed indexes, Atom feeds and robots.txt.
//! Mirrors and the slow capsule are served from here too (the slow one without unique words).
//!
//! Everything but the paragraph text is fixed by the page; the text also depends on the
//! page's version at the world's epoch.

use super::layout::{Layout, Page, MISC, RECENT_POSTS};
use super::rng::{hash, label, Rng};
use super::words;
use super::World;
use crate::answer::Response;

/// Posts an Atom feed lists.
const FEED_ENTRIES: u32 = 20;

/// The answer for `path` on capsule `i`; `marked` pages carry their unique word and change
/// with the epoch.
pub(crate) fn answer(world: &World, i: usize, path: &str, marked: bool) -> Response {
    let capsule = &world.capsules()[i];
    let Some(layout) = capsule.layout else {
        return Response::not_found();
    };
    if path == "/robots.txt" {
        return robots(layout.key);
    }
    if layout.feed && path == "/gemlog/atom.xml" {
        let feed = atom(&layout, &capsule.host, &capsule.name);
        return Response::success("application/atom+xml", feed.into_bytes());
    }
    if let Some(idx) = layout.parse(path) {
        let page = page(world, i, idx, marked);
        return Response::success("text/gemini", page.into_bytes());
    }
    // A directory named without its slash, as a static server answers it.
    if !path.ends_with('/') && layout.parse(&format!("{path}/")).is_some() {
        return Response::new(31, format!("{path}/"));
    }
    Response::not_found()
}

/// Most capsules have no robots.txt; some forbid a directory that nothing links to.
fn robots(key: u64) -> Response {
    if hash(&[label::TRAP, key, 0x0b07]) % 100 < 15 {
        Response::success(
            "text/plain",
            b"User-agent: *\nDisallow: /private/\n".to_vec(),
        )
    } else {
        Response::not_found()
    }
}

/// The gemtext of page `idx` of capsule `i`.
pub(crate) fn page(world: &World, i: usize, idx: u32, marked: bool) -> String {
    let capsule = &world.capsules()[i];
    let layout = capsule
        .layout
        .expect("pages belong to capsules with a layout");
    let g = capsule.first_page + u64::from(idx);
    let version = if marked { world.version(g) } else { 0 };
    let mut text = Rng::keyed(&[label::TEXT, layout.key, u64::from(idx), u64::from(version)]);
    let mut fixed = Rng::keyed(&[label::LINKS, layout.key, u64::from(idx)]);
    let mark = marked.then(|| words::unique_word(g));
    let total = text.range(100, 400) as usize;
    let paragraphs = fixed.range(1, 3) as usize;
    let per = total / paragraphs;
    let title = layout.title(idx, &capsule.name);

    let mut out = format!("# {title}\n\n");
    let role = layout.page(idx);
    if let Page::Post(k) = role {
        out.push_str(&format!("Posted on {}.\n\n", layout.post_date(k)));
    }
    out.push_str(&words::paragraph(&mut text, per, mark.as_deref()));
    out.push_str("\n\n");
    for _ in 1..paragraphs {
        let n = fixed.range(2, 4) as usize;
        out.push_str(&format!("## {}\n\n", words::title(&mut fixed, n)));
        out.push_str(&words::paragraph(&mut text, per, None));
        out.push_str("\n\n");
    }

    let links = world.links_on(i, idx);
    let link_lines = |out: &mut String| {
        for link in links {
            let target = &world.capsules()[link.to as usize];
            out.push_str(&format!("=> gemini://{}/ {}\n", target.host, target.name));
        }
    };
    match role {
        Page::Root => {
            if layout.sections > 0 {
                out.push_str("## Sections\n\n");
                for s in 0..layout.sections {
                    let section = layout.index(Page::Section(s));
                    out.push_str(&format!(
                        "=> {} {}\n",
                        layout.path(section),
                        layout.title(section, &capsule.name)
                    ));
                }
                out.push('\n');
            }
            if layout.gemlog {
                out.push_str("## Gemlog\n\n=> /gemlog/ All posts\n");
                for k in 0..layout.posts.min(RECENT_POSTS) {
                    out.push_str(&post_line(&layout, k, "/gemlog/"));
                }
                if layout.feed {
                    out.push_str("=> /gemlog/atom.xml Atom feed\n");
                }
                out.push('\n');
            }
            for m in 0..layout.misc {
                out.push_str(&format!(
                    "=> /{}.gmi {}\n",
                    MISC[m as usize],
                    words::capitalised(MISC[m as usize])
                ));
            }
            if !links.is_empty() {
                out.push_str("\n## Elsewhere\n\n");
                link_lines(&mut out);
            }
        }
        Page::Misc(_) => {
            if !links.is_empty() {
                out.push_str("## Capsules I read\n\n");
                link_lines(&mut out);
                out.push('\n');
            }
            out.push_str("=> / Home\n");
        }
        Page::Gemlog => {
            for k in 0..layout.posts {
                out.push_str(&post_line(&layout, k, ""));
            }
            if layout.feed {
                out.push_str("\n=> atom.xml Atom feed\n");
            }
            link_lines(&mut out);
            out.push_str("=> / Home\n");
        }
        Page::Post(k) => {
            out.push_str("=> /gemlog/ Back to the gemlog\n");
            if k > 0 {
                out.push_str(&neighbour(
                    &layout,
                    Page::Post(k - 1),
                    "Newer",
                    &capsule.name,
                ));
            }
            if k + 1 < layout.posts {
                out.push_str(&neighbour(
                    &layout,
                    Page::Post(k + 1),
                    "Older",
                    &capsule.name,
                ));
            }
            related(&mut out, &mut fixed, &layout, idx, &capsule.name);
            link_lines(&mut out);
        }
        Page::Section(s) => {
            for j in 0..layout.section_len(s) {
                let entry = layout.index(Page::Entry(s, j));
                out.push_str(&format!(
                    "=> {} {}\n",
                    layout.entry_file(s, j),
                    layout.title(entry, &capsule.name)
                ));
            }
            link_lines(&mut out);
            out.push_str("\n=> / Home\n");
        }
        Page::Entry(s, j) => {
            let section = layout.index(Page::Section(s));
            out.push_str(&format!(
                "=> {} Up: {}\n",
                layout.path(section),
                layout.title(section, &capsule.name)
            ));
            if j > 0 {
                out.push_str(&neighbour(
                    &layout,
                    Page::Entry(s, j - 1),
                    "Previous",
                    &capsule.name,
                ));
            }
            if j + 1 < layout.section_len(s) {
                out.push_str(&neighbour(
                    &layout,
                    Page::Entry(s, j + 1),
                    "Next",
                    &capsule.name,
                ));
            }
            related(&mut out, &mut fixed, &layout, idx, &capsule.name);
            link_lines(&mut out);
        }
    }
    out
}

/// A gemfeed line for post k: `=> PREFIXfile DATE Title`.
fn post_line(layout: &Layout, k: u32, prefix: &str) -> String {
    let idx = layout.index(Page::Post(k));
    format!(
        "=> {prefix}{} {} {}\n",
        layout.post_file(k),
        layout.post_date(k),
        layout.title(idx, "")
    )
}

fn neighbour(layout: &Layout, page: Page, word: &str, name: &str) -> String {
    let idx = layout.index(page);
    format!(
        "=> {} {word}: {}\n",
        layout.path(idx),
        layout.title(idx, name)
    )
}

/// Zero to two links to other pages of the capsule, fixed per page.
fn related(out: &mut String, rng: &mut Rng, layout: &Layout, idx: u32, name: &str) {
    for _ in 0..rng.below(3) {
        let other = rng.below(u64::from(layout.pages)) as u32;
        if other != idx {
            out.push_str(&format!(
                "=> {} {}\n",
                layout.path(other),
                layout.title(other, name)
            ));
        }
    }
}

/// The Atom feed of a gemlog: its newest posts, with absolute URLs.
fn atom(layout: &Layout, host: &str, name: &str) -> String {
    let mut out = format!(
        "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n\
         <feed xmlns=\"http://www.w3.org/2005/Atom\">\n\
         <title>{name}</title>\n\
         <id>gemini://{host}/gemlog/</id>\n\
         <link href=\"gemini://{host}/gemlog/\"/>\n\
         <updated>{}T12:00:00Z</updated>\n",
        layout.post_date(0)
    );
    for k in 0..layout.posts.min(FEED_ENTRIES) {
        let url = format!("gemini://{host}/gemlog/{}", layout.post_file(k));
        out.push_str(&format!(
            "<entry>\n<title>{}</title>\n<link href=\"{url}\"/>\n<id>{url}</id>\n\
             <updated>{}T12:00:00Z</updated>\n</entry>\n",
            layout.title(layout.index(Page::Post(k)), name),
            layout.post_date(k)
        ));
    }
    out.push_str("</feed>\n");
    out
}
