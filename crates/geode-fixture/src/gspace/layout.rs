//! The structure of one capsule of ordinary pages: a home page, a few pages beside it (about,
//! links, now ...), a gemlog (an index in gemfeed form, posts newest first, sometimes an Atom
//! feed) and sections (an index page listing up to 100 pages each). Pages are numbered
//! 0..pages; this file maps numbers to paths and titles and back, and knows each page's depth
//! below the home page (at most 2), all by arithmetic on a few numbers, so a capsule of 20,000
//! pages costs no memory.

use super::rng::{hash, label, Rng};
use super::words;

/// Pages beside the home page, in order; the second, when present, is the links page.
#[rustfmt::skip]
pub(crate) const MISC: &[&str] = &[
    "about", "links", "now", "contact", "colophon", "uses", "faq", "guestbook",
];
/// Section names; past the end of the list they repeat with a number (`notes2`).
#[rustfmt::skip]
const SECTIONS: &[&str] = &[
    "notes", "recipes", "poems", "essays", "reviews", "journal", "tutorials", "stories",
    "photos", "music", "books", "travel", "garden", "code", "games", "films", "research",
    "letters", "drafts", "archive", "wiki", "howto", "bikes", "radio", "astronomy", "knitting",
    "birds", "hiking", "electronics", "unix", "maths", "history", "languages", "woodwork",
];
/// Most posts in one gemlog: 3,000 posts two days apart already span sixteen years.
const MAX_POSTS: u32 = 3_000;
/// Most pages listed by one section index.
const SECTION_PAGES: u32 = 100;
/// Posts the home page lists (the newest), which are then one link from it.
pub(crate) const RECENT_POSTS: u32 = 5;
/// The date of the newest post of every gemlog, 2025-06-01, as days since 1970-01-01.
const NEWEST_DAY: i64 = 20_240;

/// One page of a capsule, by role.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Page {
    Root,
    /// The i-th entry of [`MISC`].
    Misc(u32),
    /// The gemlog's index, `/gemlog/`.
    Gemlog,
    /// Post k, 0 the newest.
    Post(u32),
    /// The index page of section s.
    Section(u32),
    /// Page j of section s.
    Entry(u32, u32),
}

/// The numbers that define a capsule's structure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Layout {
    /// The key of every stream of the capsule's text (a mirror shares its source's).
    pub key: u64,
    pub pages: u32,
    pub misc: u32,
    pub gemlog: bool,
    pub posts: u32,
    /// The gemlog also has `/gemlog/atom.xml`.
    pub feed: bool,
    pub sections: u32,
    /// Pages of each section, its index excluded; the first `extra` sections hold one more.
    per_section: u32,
    extra: u32,
    /// Section names start at this entry of [`SECTIONS`].
    name_offset: u32,
}

impl Layout {
    /// The structure of a capsule of `pages` pages (at least 1), drawn from `key`.
    pub(crate) fn new(pages: u32, key: u64) -> Layout {
        let mut rng = Rng::keyed(&[label::LAYOUT, key]);
        let mut layout = Layout {
            key,
            pages: pages.max(1),
            misc: 0,
            gemlog: false,
            posts: 0,
            feed: false,
            sections: 0,
            per_section: 0,
            extra: 0,
            name_offset: rng.below(SECTIONS.len() as u64) as u32,
        };
        if layout.pages <= 6 {
            layout.misc = layout.pages - 1;
            return layout;
        }
        layout.misc = rng.range(1, 4) as u32;
        let mut rest = layout.pages - 1 - layout.misc;
        if rng.chance(0.65) {
            layout.gemlog = true;
            let share = 0.3 + 0.7 * rng.unit();
            let posts = ((f64::from(rest) * share) as u32).saturating_sub(1);
            layout.posts = posts.clamp(1, rest - 1).min(MAX_POSTS);
            layout.feed = rng.chance(0.4);
            rest -= 1 + layout.posts;
        }
        if rest == 1 {
            if layout.gemlog && layout.posts < MAX_POSTS {
                layout.posts += 1;
            } else {
                layout.misc += 1;
            }
            rest = 0;
        }
        if rest >= 2 {
            layout.sections = rest.div_ceil(SECTION_PAGES + 1);
            let entries = rest - layout.sections;
            layout.per_section = entries / layout.sections;
            layout.extra = entries % layout.sections;
        }
        layout
    }

    fn first_section(&self) -> u32 {
        1 + self.misc + if self.gemlog { 1 + self.posts } else { 0 }
    }

    /// The page number of section s's index, and how many pages follow it.
    fn section_span(&self, s: u32) -> (u32, u32) {
        let start = self.first_section() + s * (self.per_section + 1) + s.min(self.extra);
        (start, self.per_section + u32::from(s < self.extra))
    }

    pub(crate) fn section_len(&self, s: u32) -> u32 {
        self.section_span(s).1
    }

    /// The role of page `idx` (< pages).
    pub(crate) fn page(&self, idx: u32) -> Page {
        if idx == 0 {
            return Page::Root;
        }
        if idx <= self.misc {
            return Page::Misc(idx - 1);
        }
        let after_misc = idx - 1 - self.misc;
        if self.gemlog {
            if after_misc == 0 {
                return Page::Gemlog;
            }
            if after_misc <= self.posts {
                return Page::Post(after_misc - 1);
            }
        }
        let off = idx - self.first_section();
        let long = self.per_section + 2;
        let (s, r) = if off < self.extra * long {
            (off / long, off % long)
        } else {
            let off = off - self.extra * long;
            (
                self.extra + off / (self.per_section + 1),
                off % (self.per_section + 1),
            )
        };
        if r == 0 {
            Page::Section(s)
        } else {
            Page::Entry(s, r - 1)
        }
    }

    /// The number of a page.
    pub(crate) fn index(&self, page: Page) -> u32 {
        match page {
            Page::Root => 0,
            Page::Misc(i) => 1 + i,
            Page::Gemlog => 1 + self.misc,
            Page::Post(k) => 2 + self.misc + k,
            Page::Section(s) => self.section_span(s).0,
            Page::Entry(s, j) => self.section_span(s).0 + 1 + j,
        }
    }

    /// Links from the home page to page `idx`, the shortest way.
    pub(crate) fn depth(&self, idx: u32) -> u32 {
        match self.page(idx) {
            Page::Root => 0,
            Page::Misc(_) | Page::Gemlog | Page::Section(_) => 1,
            Page::Post(k) if k < RECENT_POSTS => 1,
            Page::Post(_) | Page::Entry(..) => 2,
        }
    }

    /// The links page (`/links.gmi`) if the capsule has one, else the home page.
    pub(crate) fn links_page(&self) -> u32 {
        if self.misc >= 2 {
            self.index(Page::Misc(1))
        } else {
            0
        }
    }

    pub(crate) fn section_name(&self, s: u32) -> String {
        let at = self.name_offset + s;
        let name = SECTIONS[(at as usize) % SECTIONS.len()];
        match at as usize / SECTIONS.len() {
            0 => name.to_string(),
            round => format!("{name}{}", round + 1),
        }
    }

    /// The title of a post or section page (the words of its path); other pages are titled
    /// by [`Layout::title`].
    fn generated_title(&self, idx: u32) -> String {
        let mut rng = Rng::keyed(&[label::TITLE, self.key, u64::from(idx)]);
        let n = rng.range(2, 5) as usize;
        words::title(&mut rng, n)
    }

    /// The title of page `idx`; `name` is the capsule's.
    pub(crate) fn title(&self, idx: u32, name: &str) -> String {
        match self.page(idx) {
            Page::Root => name.to_string(),
            Page::Misc(i) => words::capitalised(MISC[i as usize]),
            Page::Gemlog => format!("{name}: gemlog"),
            Page::Section(s) => words::capitalised(&self.section_name(s)),
            Page::Post(_) | Page::Entry(..) => self.generated_title(idx),
        }
    }

    /// The date of post k, `YYYY-MM-DD`: two or three days before post k-1.
    pub(crate) fn post_date(&self, k: u32) -> String {
        let (y, m, d) = civil_from_days(NEWEST_DAY - self.post_offset(k));
        format!("{y:04}-{m:02}-{d:02}")
    }

    fn post_offset(&self, k: u32) -> i64 {
        2 * i64::from(k) + (hash(&[label::DATE, self.key, u64::from(k)]) & 1) as i64
    }

    /// The path of page `idx`, from the capsule's root.
    pub(crate) fn path(&self, idx: u32) -> String {
        match self.page(idx) {
            Page::Root => "/".to_string(),
            Page::Misc(i) => format!("/{}.gmi", MISC[i as usize]),
            Page::Gemlog => "/gemlog/".to_string(),
            Page::Post(k) => format!("/gemlog/{}", self.post_file(k)),
            Page::Section(s) => format!("/{}/", self.section_name(s)),
            Page::Entry(s, j) => format!("/{}/{}", self.section_name(s), self.entry_file(s, j)),
        }
    }

    /// A post's file name, relative to `/gemlog/`.
    pub(crate) fn post_file(&self, k: u32) -> String {
        let idx = self.index(Page::Post(k));
        let slug = words::slug_of(&self.generated_title(idx));
        format!("{}-{slug}.gmi", self.post_date(k))
    }

    /// A section page's file name, relative to its section.
    pub(crate) fn entry_file(&self, s: u32, j: u32) -> String {
        let idx = self.index(Page::Entry(s, j));
        format!(
            "{}-{}.gmi",
            words::slug_of(&self.generated_title(idx)),
            j + 1
        )
    }

    /// The page a path names, if any. Directories are named with their trailing slash.
    pub(crate) fn parse(&self, path: &str) -> Option<u32> {
        if path.is_empty() || path == "/" {
            return Some(0);
        }
        let rest = path.strip_prefix('/')?;
        if let Some(name) = rest.strip_suffix(".gmi").filter(|n| !n.contains('/')) {
            let i = MISC.iter().position(|m| *m == name)? as u32;
            return (i < self.misc).then(|| self.index(Page::Misc(i)));
        }
        let (dir, file) = rest.split_once('/')?;
        if dir == "gemlog" && self.gemlog {
            if file.is_empty() {
                return Some(self.index(Page::Gemlog));
            }
            let k = self.post_from_date(file.get(..10)?)?;
            return (self.post_file(k) == file).then(|| self.index(Page::Post(k)));
        }
        let s = self.section_from_name(dir)?;
        if file.is_empty() {
            return Some(self.index(Page::Section(s)));
        }
        let number = file.strip_suffix(".gmi")?.rsplit('-').next()?;
        let j = number.parse::<u32>().ok()?.checked_sub(1)?;
        (j < self.section_len(s) && self.entry_file(s, j) == file)
            .then(|| self.index(Page::Entry(s, j)))
    }

    fn post_from_date(&self, date: &str) -> Option<u32> {
        let mut parts = date.split('-').map(|p| p.parse::<i64>().ok());
        let (y, m, d) = (parts.next()??, parts.next()??, parts.next()??);
        let offset = NEWEST_DAY - days_from_civil(y, m, d);
        let k = u32::try_from(offset / 2).ok()?;
        (offset >= 0 && k < self.posts && self.post_offset(k) == offset).then_some(k)
    }

    fn section_from_name(&self, name: &str) -> Option<u32> {
        let base = name.trim_end_matches(|c: char| c.is_ascii_digit());
        let round = match &name[base.len()..] {
            "" => 0,
            digits => digits.parse::<u32>().ok()?.checked_sub(1)?,
        };
        let i = SECTIONS.iter().position(|s| *s == base)? as u32;
        let at = round * SECTIONS.len() as u32 + i;
        let s = at.checked_sub(self.name_offset)?;
        (s < self.sections && self.section_name(s) == name).then_some(s)
    }
}

/// Days since 1970-01-01 of a date in the proleptic Gregorian calendar.
pub(crate) fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let year_of_era = y - era * 400;
    let month_from_march = (m + 9) % 12;
    let day_of_year = (153 * month_from_march + 2) / 5 + d - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// The date (year, month, day) of a day counted from 1970-01-01.
pub(crate) fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z - era * 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let mp = (5 * day_of_year + 2) / 153;
    let d = day_of_year - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = year_of_era + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_convert_both_ways() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2025, 6, 1), NEWEST_DAY);
        assert_eq!(civil_from_days(NEWEST_DAY), (2025, 6, 1));
        for day in (-800_000..800_000).step_by(997) {
            let (y, m, d) = civil_from_days(day);
            assert_eq!(days_from_civil(y, m, d), day);
        }
    }

    #[test]
    fn every_page_has_one_path_that_parses_back_and_a_small_depth() {
        for (pages, key) in [(1, 1), (2, 2), (6, 3), (7, 4), (8, 5), (50, 6), (2_000, 7)] {
            for key in [key, key + 100, key + 200] {
                let layout = Layout::new(pages, key);
                let mut paths = std::collections::HashSet::new();
                for idx in 0..pages {
                    assert_eq!(layout.index(layout.page(idx)), idx, "{layout:?} {idx}");
                    let path = layout.path(idx);
                    assert_eq!(layout.parse(&path), Some(idx), "{layout:?} {path}");
                    assert!(paths.insert(path.clone()), "{path} twice");
                    assert!(layout.depth(idx) <= 2);
                }
                for bad in [
                    "/nope.gmi",
                    "/gemlog/2001-01-01-x.gmi",
                    "/notes/x-999999.gmi",
                ] {
                    assert_eq!(layout.parse(bad), None, "{bad}");
                }
            }
        }
        let big = Layout::new(20_000, 9);
        assert!(big.posts <= MAX_POSTS);
        assert!(big.sections >= 170, "{big:?}");
        assert_eq!(big.parse(&big.path(19_999)), Some(19_999));
    }
}
