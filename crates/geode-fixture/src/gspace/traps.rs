//! The pages of trap capsules, each an endless or ever-changing URL space a crawler must not
//! get lost in: a web proxy, a git browser, a calendar, a query space, a link bomb and a
//! capsule whose text changes on every request. (Mirrors, the slow capsule and dead addresses
//! need no pages of their own.) Every answer is computed from the capsule's key and the path.

use std::time::{SystemTime, UNIX_EPOCH};

use super::layout::{civil_from_days, days_from_civil, Page};
use super::rng::{hash, hash_str, label, Rng};
use super::words;
use super::Capsule;
use crate::answer::Response;

/// Links on every web proxy article.
const ARTICLE_LINKS: u64 = 40;
/// Links on a link bomb's home page, and on each page below it.
const BOMB_ROOT_LINKS: u32 = 50_000;
const BOMB_PAGE_LINKS: u32 = 1_000;
/// Items of a query space's catalogue, and items per listed page.
const ITEMS: u64 = 500;
const ITEMS_PER_PAGE: u64 = 20;
const SORTS: &[&str] = &["name", "date", "size", "rating"];
/// Files of every repository of a git browser; a tree lists the top level, `src/` or `docs/`.
#[rustfmt::skip]
const FILES: &[&str] = &[
    "README.md", "Makefile", "LICENSE", "src/main.c", "src/util.c", "src/util.h",
    "docs/guide.gmi", "docs/changes.gmi",
];
/// Commit hashes are 12 hex digits.
const HASH_MASK: u64 = 0xffff_ffff_ffff;
/// The months of a calendar.
#[rustfmt::skip]
const MONTHS: &[&str] = &[
    "January", "February", "March", "April", "May", "June", "July", "August", "September",
    "October", "November", "December",
];
/// The per-request capsule's sayings (made up for this fixture).
const QUOTES: &[&str] = &[
    "A kettle watched by two people boils for neither.",
    "Every map is wrong about the weather.",
    "The slowest train still reaches the sea.",
    "Paint the fence before you argue about the colour.",
    "A library is a garden that does not need rain.",
    "Nobody remembers the quiet bridge until it is gone.",
    "Bread rises for those who wait and for those who forget.",
    "The owl does not read the calendar.",
    "Fix the roof on a sunny day and sleep on a rainy one.",
    "A letter sent late is still a letter.",
    "The river keeps no record of the stones it moved.",
    "Every workshop has one drawer nobody opens.",
    "Walk the long way once, and the short way will thank you.",
    "A small lamp in a big room is still a lamp.",
    "Measure the shelf before you buy the books.",
    "The guest who brings soup is always invited again.",
];

fn gemtext(body: String) -> Response {
    Response::success("text/gemini", body.into_bytes())
}

/// A paragraph of `words` words from a stream keyed by `parts`.
fn text(parts: &[u64], words: usize) -> String {
    words::paragraph(&mut Rng::keyed(parts), words, None)
}

/// `/wiki/Some_Title`: an article of new text and 40 links to other titles, without end.
pub(crate) fn web_proxy(capsule: &Capsule, path: &str) -> Response {
    let key = capsule.key;
    let article_links = |out: &mut String, rng: &mut Rng| {
        for _ in 0..ARTICLE_LINKS {
            let n = rng.range(1, 3) as usize;
            let title = words::title(rng, n);
            out.push_str(&format!("=> /wiki/{} {title}\n", title.replace(' ', "_")));
        }
    };
    if path == "/" {
        let mut out = format!(
            "# {}\n\nThe web, rendered as gemtext. Pick an article.\n\n",
            capsule.name
        );
        article_links(&mut out, &mut Rng::keyed(&[label::TRAP, key, 0]));
        return gemtext(out);
    }
    let Some(title) = path.strip_prefix("/wiki/") else {
        return Response::not_found();
    };
    let canonical = |w: &str| {
        !w.is_empty()
            && w.chars().all(|c| c.is_ascii_alphabetic())
            && words::capitalised(&w.to_ascii_lowercase()) == w
    };
    let parts: Vec<&str> = title.split('_').collect();
    if parts.len() > 6 || !parts.iter().all(|w| canonical(w)) {
        return Response::not_found();
    }
    let seed = hash_str(title);
    let mut rng = Rng::keyed(&[label::TRAP, key, seed]);
    let mut out = format!("# {}\n\n", parts.join(" "));
    for section in 0..rng.range(2, 4) {
        if section > 0 {
            let n = rng.range(1, 3) as usize;
            out.push_str(&format!("## {}\n\n", words::title(&mut rng, n)));
        }
        let n = rng.range(60, 160) as usize;
        out.push_str(&text(&[label::TEXT, key, seed, section], n));
        out.push_str("\n\n");
    }
    out.push_str("## See also\n\n");
    article_links(&mut out, &mut rng);
    out.push_str("\n=> / Front page\n");
    gemtext(out)
}

/// A 12-digit lower-case hex hash, or `None`.
fn parse_hash(text: &str) -> Option<u64> {
    let value = u64::from_str_radix(text, 16).ok()?;
    (text.len() == 12 && format!("{value:012x}") == text).then_some(value)
}

/// Repositories -> commits -> trees -> blobs; every commit has a parent.
pub(crate) fn git_browser(capsule: &Capsule, path: &str) -> Response {
    let key = capsule.key;
    let repos: Vec<String> = {
        let mut rng = Rng::keyed(&[label::TRAP, key, 1]);
        (0..3 + key % 5)
            .map(|r| {
                format!(
                    "{}-{}{r}",
                    words::any_content_word(&mut rng),
                    words::any_content_word(&mut rng)
                )
            })
            .collect()
    };
    if path == "/" {
        let mut out = format!("# {}\n\nSource code, browsable.\n\n", capsule.name);
        for repo in &repos {
            out.push_str(&format!("=> /{repo}/ {repo}\n"));
        }
        return gemtext(out);
    }
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let Some(r) = repos.iter().position(|name| name == segments[0]) else {
        return Response::not_found();
    };
    let repo = &repos[r];
    let parent = |h: u64, n: u64| hash(&[label::TRAP, key, r as u64, h, n]) & HASH_MASK;
    let is_merge = |h: u64| hash(&[label::TRAP, key, r as u64, h, 9]) % 8 == 0;
    let message = |h: u64| words::title(&mut Rng::keyed(&[label::TITLE, key, h]), 4);
    let head = parent(0, 0);
    match segments.as_slice() {
        [_, ""] => gemtext(format!(
            "# {repo}\n\n{}\n\n=> /{repo}/commit/{head:012x}/ Latest commit\n\
             => /{repo}/log/{head:012x}/ Log\n=> /{repo}/tree/{head:012x}/ Files\n=> / All repositories\n",
            text(&[label::TEXT, key, r as u64], 60)
        )),
        [_, "commit", h, ""] => {
            let Some(h) = parse_hash(h) else {
                return Response::not_found();
            };
            let days = 19_000 + (h % 2_000) as i64;
            let (y, m, d) = civil_from_days(days);
            let mut out = format!(
                "# {}\n\ncommit {h:012x}\nAuthor: {} <dev@{}>\nDate: {y:04}-{m:02}-{d:02}\n\n{}\n\n```diff\n",
                message(h),
                capsule.name,
                capsule.host,
                text(&[label::TEXT, key, h], 40)
            );
            let mut rng = Rng::keyed(&[label::TRAP, key, h]);
            for _ in 0..rng.range(3, 8) {
                out.push_str(&format!("-{}\n+{}\n", text(&[rng.next_u64()], 6), text(&[rng.next_u64()], 6)));
            }
            out.push_str(&format!("```\n\n=> /{repo}/commit/{:012x}/ Parent\n", parent(h, 1)));
            if is_merge(h) {
                out.push_str(&format!("=> /{repo}/commit/{:012x}/ Second parent\n", parent(h, 2)));
            }
            out.push_str(&format!("=> /{repo}/tree/{h:012x}/ Tree\n=> /{repo}/ {repo}\n"));
            gemtext(out)
        }
        [_, "log", h, ""] => {
            let Some(mut h) = parse_hash(h) else {
                return Response::not_found();
            };
            let mut out = format!("# Log of {repo}\n\n");
            for _ in 0..20 {
                out.push_str(&format!("=> /{repo}/commit/{h:012x}/ {h:012x} {}\n", message(h)));
                h = parent(h, 1);
            }
            out.push_str(&format!("\n=> /{repo}/log/{h:012x}/ Older commits\n"));
            gemtext(out)
        }
        [_, "tree", h, rest @ ..] => {
            let Some(h) = parse_hash(h) else {
                return Response::not_found();
            };
            // Directories end with a slash: the last segment is empty.
            if rest.last() != Some(&"") {
                return Response::not_found();
            }
            let dir = rest.join("/");
            let listed: Vec<&str> = FILES
                .iter()
                .copied()
                .filter(|f| f.strip_prefix(dir.as_str()).is_some_and(|rest| !rest.contains('/')))
                .collect();
            if listed.is_empty() {
                return Response::not_found();
            }
            let mut out = format!("# {repo}/{dir} at {h:012x}\n\n");
            if dir.is_empty() {
                out.push_str(&format!("=> /{repo}/tree/{h:012x}/src/ src/\n=> /{repo}/tree/{h:012x}/docs/ docs/\n"));
            }
            for file in listed {
                out.push_str(&format!("=> /{repo}/blob/{h:012x}/{file} {file}\n"));
            }
            out.push_str(&format!("=> /{repo}/commit/{h:012x}/ Commit\n"));
            gemtext(out)
        }
        [_, "blob", h, rest @ ..] => {
            let file = rest.join("/");
            let (Some(h), Some(f)) = (parse_hash(h), FILES.iter().position(|x| *x == file)) else {
                return Response::not_found();
            };
            // The same lines at every commit but one: neighbouring commits give near-duplicates.
            let mut out = format!("# {file} at {h:012x}\n\n```\n");
            let mut rng = Rng::keyed(&[label::TRAP, key, r as u64, f as u64]);
            let lines = rng.range(30, 60);
            let changed = h % lines;
            for line in 0..lines {
                if line == changed {
                    out.push_str(&format!("/* revision {h:012x} */\n"));
                } else {
                    let n = rng.range(3, 9) as usize;
                    out.push_str(&format!("{}\n", text(&[rng.next_u64()], n)));
                }
            }
            out.push_str(&format!("```\n\n=> /{repo}/tree/{h:012x}/ Tree\n"));
            gemtext(out)
        }
        _ => Response::not_found(),
    }
}

/// Months linking the next and the previous month, years, and day pages, forever.
pub(crate) fn calendar(capsule: &Capsule, path: &str) -> Response {
    let key = capsule.key;
    if path == "/" {
        return gemtext(format!(
            "# {}\n\nWhat happens when.\n\n=> /cal/2025/06/ June 2025\n=> /cal/2025/ The year 2025\n",
            capsule.name
        ));
    }
    let Some(rest) = path.strip_prefix("/cal/") else {
        return Response::not_found();
    };
    let parts: Vec<&str> = rest.split('/').collect();
    let year = |s: &str| {
        s.parse::<i64>()
            .ok()
            .filter(|y| (1..=999_999).contains(y) && y.to_string() == s)
    };
    let month = |s: &str| {
        s.parse::<i64>()
            .ok()
            .filter(|m| (1..=12).contains(m) && format!("{m:02}") == s)
    };
    let month_link = |y: i64, m: i64, label: &str| {
        let (y, m) = if m < 1 {
            (y - 1, 12)
        } else if m > 12 {
            (y + 1, 1)
        } else {
            (y, m)
        };
        format!(
            "=> /cal/{y}/{m:02}/ {label}: {} {y}\n",
            MONTHS[m as usize - 1]
        )
    };
    match parts.as_slice() {
        [y, ""] => {
            let Some(y) = year(y) else {
                return Response::not_found();
            };
            let mut out = format!("# {y}\n\n");
            for m in 1..=12 {
                out.push_str(&format!("=> /cal/{y}/{m:02}/ {} {y}\n", MONTHS[m - 1]));
            }
            out.push_str(&format!("\n=> /cal/{}/ Next year\n", y + 1));
            if y > 1 {
                out.push_str(&format!("=> /cal/{}/ Previous year\n", y - 1));
            }
            gemtext(out)
        }
        [y, m, ""] => {
            let (Some(y), Some(m)) = (year(y), month(m)) else {
                return Response::not_found();
            };
            let mut out = format!("# {} {y}\n\n", MONTHS[m as usize - 1]);
            let mut rng = Rng::keyed(&[label::TRAP, key, y as u64, m as u64]);
            for _ in 0..rng.range(2, 5) {
                let d = rng.range(1, 28);
                let n = rng.range(2, 4) as usize;
                out.push_str(&format!(
                    "=> /cal/{y}/{m:02}/{d:02}.gmi {d}: {}\n",
                    words::title(&mut rng, n)
                ));
            }
            out.push('\n');
            out.push_str(&month_link(y, m + 1, "Next month"));
            if y > 1 || m > 1 {
                out.push_str(&month_link(y, m - 1, "Previous month"));
            }
            out.push_str(&format!("=> /cal/{y}/ The year {y}\n"));
            gemtext(out)
        }
        [y, m, day] => {
            let (Some(y), Some(m)) = (year(y), month(m)) else {
                return Response::not_found();
            };
            let Some(d) = day.strip_suffix(".gmi").and_then(|d| d.parse::<i64>().ok()) else {
                return Response::not_found();
            };
            let days = days_from_civil(y, m, d);
            if day.len() != 6 || civil_from_days(days) != (y, m, d) {
                return Response::not_found();
            }
            let day_link = |days: i64, label: &str| {
                let (y, m, d) = civil_from_days(days);
                format!("=> /cal/{y}/{m:02}/{d:02}.gmi {label}\n")
            };
            gemtext(format!(
                "# {d} {} {y}\n\n{}\n\n{}{}=> /cal/{y}/{m:02}/ {} {y}\n",
                MONTHS[m as usize - 1],
                text(&[label::TEXT, key, days as u64], 50),
                day_link(days + 1, "The next day"),
                day_link(days - 1, "The day before"),
                MONTHS[m as usize - 1]
            ))
        }
        _ => Response::not_found(),
    }
}

/// `/list?sort=...&order=...&page=N`: a catalogue of 500 items listed in endless pages.
pub(crate) fn query_space(capsule: &Capsule, path: &str, query: Option<&str>) -> Response {
    let key = capsule.key;
    let item_title = |k: u64| {
        let mut rng = Rng::keyed(&[label::TITLE, key, k]);
        words::title(&mut rng, 3)
    };
    let list = |sort: &str, order: &str, page: u64| {
        let mut q = Vec::new();
        if !sort.is_empty() {
            q.push(format!("sort={sort}"));
        }
        if !order.is_empty() {
            q.push(format!("order={order}"));
        }
        q.push(format!("page={page}"));
        format!("/list?{}", q.join("&"))
    };
    if path == "/" {
        let mut out = format!(
            "# {}\n\nEverything we have, in every order.\n\n",
            capsule.name
        );
        out.push_str(&format!("=> {} Everything\n", list("", "", 1)));
        for sort in SORTS {
            out.push_str(&format!("=> {} By {sort}\n", list(sort, "", 1)));
        }
        return gemtext(out);
    }
    if let Some(k) = path.strip_prefix("/item/") {
        return match k.parse::<u64>() {
            Ok(n) if n < ITEMS && n.to_string() == k => gemtext(format!(
                "# {}\n\n{}\n\n=> {} Back to the catalogue\n",
                item_title(n),
                text(&[label::TEXT, key, n], 80),
                list("", "", 1)
            )),
            _ => Response::not_found(),
        };
    }
    if path != "/list" {
        return Response::not_found();
    }
    let (mut sort, mut order, mut page) = ("", "", 1u64);
    for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
        match pair.split_once('=') {
            Some(("sort", s)) if SORTS.contains(&s) => sort = s,
            Some(("order", o)) if o == "asc" || o == "desc" => order = o,
            Some(("page", p)) => match p.parse::<u64>() {
                Ok(n) if n >= 1 => page = n,
                _ => return Response::bad_request("Bad page number"),
            },
            _ => return Response::bad_request("Unknown parameter"),
        }
    }
    let mut out = format!("# Catalogue, page {page}\n\n");
    let mut rng = Rng::keyed(&[label::TRAP, key, hash_str(sort), hash_str(order), page]);
    for _ in 0..ITEMS_PER_PAGE {
        let k = rng.below(ITEMS);
        out.push_str(&format!("=> /item/{k} {}\n", item_title(k)));
    }
    out.push('\n');
    out.push_str(&format!("=> {} Next page\n", list(sort, order, page + 1)));
    if page > 1 {
        out.push_str(&format!(
            "=> {} Previous page\n",
            list(sort, order, page - 1)
        ));
    }
    out.push_str(&format!(
        "=> {} Ten pages on\n",
        list(sort, order, page + 10)
    ));
    for s in SORTS {
        out.push_str(&format!("=> {} Sort by {s}\n", list(s, order, page)));
    }
    for o in ["asc", "desc"] {
        out.push_str(&format!("=> {} Order {o}\n", list(sort, o, page)));
    }
    gemtext(out)
}

/// A home page of 50,000 links; each page below links 1,000 pages one level further down.
pub(crate) fn link_bomb(capsule: &Capsule, path: &str) -> Response {
    let mut out = format!("# {}\n\nAn index of everything.\n\n", capsule.name);
    if path == "/" {
        for i in 0..BOMB_ROOT_LINKS {
            out.push_str(&format!("=> /b/{i}/\n"));
        }
        return gemtext(out);
    }
    let Some(rest) = path.strip_prefix("/b/") else {
        return Response::not_found();
    };
    let segments: Vec<&str> = rest.split('/').collect();
    let (last, numbers) = segments
        .split_last()
        .expect("split gives one part at least");
    let canonical = |s: &&str| s.parse::<u32>().is_ok_and(|n| n.to_string() == *s);
    if numbers.is_empty() || !numbers.iter().all(canonical) {
        return Response::not_found();
    }
    if !last.is_empty() {
        return if canonical(last) {
            Response::new(31, format!("{path}/"))
        } else {
            Response::not_found()
        };
    }
    for j in 0..BOMB_PAGE_LINKS {
        out.push_str(&format!("=> {j}/\n"));
    }
    gemtext(out)
}

/// A small capsule whose pages say something new on every request: a visitor counter, the
/// time and a quote. Its links never change.
pub(crate) fn per_request(capsule: &Capsule, path: &str, visit: u64) -> Response {
    let Some(layout) = capsule.layout else {
        return Response::not_found();
    };
    let Some(idx) = layout.parse(path) else {
        return Response::not_found();
    };
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let quote = QUOTES[(hash(&[visit, now.subsec_nanos().into()]) % QUOTES.len() as u64) as usize];
    let mut out = format!(
        "# {}\n\nYou are visitor number {visit}.\nThis page was made {}.{:09} seconds after 1970 began.\n\n> {quote}\n\n{}\n\n",
        layout.title(idx, &capsule.name),
        now.as_secs(),
        now.subsec_nanos(),
        text(&[label::TEXT, layout.key, u64::from(idx)], 80)
    );
    if layout.page(idx) == Page::Root {
        for other in 1..layout.pages {
            out.push_str(&format!(
                "=> {} {}\n",
                layout.path(other),
                layout.title(other, &capsule.name)
            ));
        }
    } else {
        out.push_str("=> / Home\n");
        let next = (idx + 1) % layout.pages;
        out.push_str(&format!(
            "=> {} {}\n",
            layout.path(next),
            layout.title(next, &capsule.name)
        ));
    }
    gemtext(out)
}
