//! When a URL is visited again: the revisit schedule, as pure arithmetic on unix seconds with the
//! clock passed in (so tests run on a simulated clock), and the claim priority of a URL.
//!
//! # The estimator
//!
//! Intervals adapt multiplicatively, as in StormCrawler's adaptive scheduler and Heritrix's wait
//! evaluator: a page found **unchanged** waits longer, `I' = I x (1 + 0.5)`; a page found
//! **changed** comes back sooner, `I' = (1 - 0.5) x I + 0.5 x min`; both are clamped to
//! `[min, max]` (`--revisit-min`, `--revisit-max`). A page starts at `--revisit`. From the
//! defaults (3 days, between 1 and 30 days) a page that never changes is seen after 3, 4.5, 6.75,
//! 10.1, 15.2, 22.8 and then every 30 days; one that changes on every visit converges to one day
//! (3, 2, 1.5, 1.25, ... days). Feeds (gemfeeds, Atom, RSS) are the pages that announce change,
//! so they are always revisited at `min`.
//!
//! Every due time gets a jitter of +-10% of its interval, derived from a seed (the URL's id), so
//! that pages discovered together do not all come due in the same minute of a later run.
//!
//! # Failures and removal
//!
//! A page that answers 51 leaves the index and is rechecked at `max` (it may come back); 52 leaves
//! and is never requested again; a permanent redirect, an input prompt or a certificate request
//! leave the index and are rechecked at `max`. Other failures (other 5x, network, TLS and DNS
//! errors, temporary failures that never ended) start a *failure streak*: the page stays
//! searchable and is rechecked within `--revisit` until it has failed every visit for
//! `--remove-after`; then it leaves the index and is rechecked at `max`. Any answer ends the
//! streak. A URL that robots.txt now disallows leaves the index and is judged again (without a
//! request) at `max`.
//!
//! Not here: what counts as changed (the crawl compares body hashes) and storing the plan (the
//! frontier).

use std::time::Duration;

use ::url::Url;

/// The revisit policy of one run (`--revisit`, `--revisit-min`, `--revisit-max`,
/// `--remove-after`). It applies to the pages visited in that run; the others keep the due time
/// an earlier run gave them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RevisitPolicy {
    /// The first interval of a page.
    pub initial: Duration,
    pub min: Duration,
    pub max: Duration,
    /// How long a page may fail every visit before it leaves the index.
    pub remove_after: Duration,
}

impl Default for RevisitPolicy {
    fn default() -> Self {
        const DAY: u64 = 24 * 3600;
        RevisitPolicy {
            initial: Duration::from_secs(3 * DAY),
            min: Duration::from_secs(DAY),
            max: Duration::from_secs(30 * DAY),
            remove_after: Duration::from_secs(14 * DAY),
        }
    }
}

/// Longest interval geode accepts: a century, so that seconds never overflow.
const LONGEST: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// How much an unchanged visit stretches the interval, and how far a changed one pulls it
/// towards `min` (StormCrawler's `i` and `d`).
const GROWTH: f64 = 0.5;
const DECAY: f64 = 0.5;

/// Jitter, as a share of the interval, either way.
const JITTER: f64 = 0.1;

impl RevisitPolicy {
    /// Checks `min <= initial <= max`, all at least a second and at most a century.
    pub fn validate(&self) -> Result<(), String> {
        let show = |d: Duration| humantime::format_duration(d).to_string();
        for (name, d) in [
            ("--revisit-min", self.min),
            ("--revisit", self.initial),
            ("--revisit-max", self.max),
        ] {
            if d < Duration::from_secs(1) || d > LONGEST {
                return Err(format!(
                    "{name} {} must be between 1s and 100 years",
                    show(d)
                ));
            }
        }
        if self.remove_after > LONGEST {
            return Err("--remove-after must be at most 100 years".into());
        }
        if self.min > self.initial || self.initial > self.max {
            return Err(format!(
                "the intervals must satisfy --revisit-min ({}) <= --revisit ({}) <= --revisit-max ({})",
                show(self.min),
                show(self.initial),
                show(self.max)
            ));
        }
        Ok(())
    }

    fn secs(d: Duration) -> i64 {
        d.min(LONGEST).as_secs() as i64
    }

    fn min_secs(&self) -> i64 {
        Self::secs(self.min).max(1)
    }

    fn max_secs(&self) -> i64 {
        Self::secs(self.max).max(self.min_secs())
    }

    fn clamp(&self, secs: i64) -> i64 {
        secs.clamp(self.min_secs(), self.max_secs())
    }

    /// The interval a page had before this visit, within this run's bounds.
    fn previous(&self, memory: &Memory) -> i64 {
        self.clamp(memory.interval.unwrap_or_else(|| Self::secs(self.initial)))
    }

    /// What to do after a visit at `now` that found `visit`, for a URL whose schedule so far is
    /// `memory`. `seed` (the URL's id) decides the jitter.
    pub fn plan(&self, memory: &Memory, visit: Visit, now: i64, seed: u64) -> Plan {
        let previous = self.previous(memory);
        let due = |interval: i64| Some(now.saturating_add(jittered(interval, seed, now)));
        let answered = |interval: i64, leave_index: bool| Plan {
            interval,
            due_at: due(interval),
            first_failed_at: None,
            leave_index,
        };
        match visit {
            Visit::Content { change, feed } => {
                answered(self.next_interval(previous, change, feed), false)
            }
            Visit::Duplicate { change } => {
                answered(self.next_interval(previous, change, false), true)
            }
            Visit::Redirect {
                permanent: false,
                change,
            } => answered(self.next_interval(previous, change, false), false),
            Visit::Redirect {
                permanent: true, ..
            }
            | Visit::NoContent
            | Visit::NotFound => answered(self.max_secs(), true),
            Visit::Gone => Plan {
                interval: self.max_secs(),
                due_at: None,
                first_failed_at: None,
                leave_index: true,
            },
            Visit::Disallowed => Plan {
                interval: previous,
                due_at: due(self.max_secs()),
                first_failed_at: memory.first_failed_at,
                leave_index: true,
            },
            Visit::Failed => {
                let since = memory.first_failed_at.unwrap_or(now).min(now);
                let expired = now - since >= Self::secs(self.remove_after);
                let recheck = if expired {
                    self.max_secs()
                } else {
                    previous.min(self.clamp(Self::secs(self.initial)))
                };
                Plan {
                    // The interval of the page as it was is kept for when it answers again.
                    interval: previous,
                    due_at: due(recheck),
                    first_failed_at: Some(since),
                    leave_index: expired,
                }
            }
        }
    }

    /// The interval after a visit that found content, changed or not.
    fn next_interval(&self, previous: i64, change: Change, feed: bool) -> i64 {
        if feed {
            return self.min_secs();
        }
        match change {
            Change::New => self.clamp(Self::secs(self.initial)),
            Change::Changed => {
                let pulled = (1.0 - DECAY) * previous as f64 + DECAY * self.min_secs() as f64;
                self.clamp(pulled.floor() as i64)
            }
            Change::Unchanged => self.clamp((previous as f64 * (1.0 + GROWTH)).round() as i64),
        }
    }
}

/// What the frontier remembers of a URL's schedule before a visit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Memory {
    /// The interval (seconds) set at the last visit; `None` before the first.
    pub interval: Option<i64>,
    /// When the current run of failed visits began.
    pub first_failed_at: Option<i64>,
}

/// How the content found compares with what was there before.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// The first content seen under this URL (or the first since it left the index).
    New,
    Changed,
    Unchanged,
}

/// What a visit found, as far as the schedule cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Visit {
    /// A page to index (or kept in the index, when unchanged).
    Content { change: Change, feed: bool },
    /// Content identical to another indexed page: not indexed under this URL.
    Duplicate { change: Change },
    /// 30 (the content stays under this URL, through the target) or 31 (it moves away).
    Redirect { permanent: bool, change: Change },
    /// An input prompt or a certificate request: nothing to index.
    NoContent,
    /// 51.
    NotFound,
    /// 52.
    Gone,
    /// Other 5x, network, TLS, protocol or DNS errors, temporary failures that never ended.
    Failed,
    /// robots.txt disallows the URL; it was not requested.
    Disallowed,
}

/// The schedule after a visit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    /// The interval to remember (seconds).
    pub interval: i64,
    /// The next visit; `None`: never again.
    pub due_at: Option<i64>,
    pub first_failed_at: Option<i64>,
    /// The page must not stay in the index.
    pub leave_index: bool,
}

/// `interval` plus or minus [`JITTER`] of itself, chosen by `seed` and `now`.
fn jittered(interval: i64, seed: u64, now: i64) -> i64 {
    let spread = (interval as f64 * JITTER) as i64;
    if spread == 0 {
        return interval;
    }
    let r = splitmix64(seed ^ (now as u64).rotate_left(32));
    let offset = (r % (2 * spread as u64 + 1)) as i64 - spread;
    interval + offset
}

/// A well-mixed 64-bit hash of a 64-bit value (Steele, Lea and Flood's SplitMix64 finaliser).
fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The order in which a capsule's due URLs are claimed: hubs first, then new URLs and revisits
/// taking turns, so that discovery goes on while a large capsule is revisited.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Priority {
    /// Capsule roots, user directories, gemlog indexes, feeds, and entries first seen in a feed.
    Hub = 0,
    /// Never fetched.
    Fresh = 1,
    /// Fetched before.
    Revisit = 2,
}

impl Priority {
    pub const ALL: [Priority; 3] = [Priority::Hub, Priority::Fresh, Priority::Revisit];

    pub fn from_i64(n: i64) -> Priority {
        match n {
            0 => Priority::Hub,
            1 => Priority::Fresh,
            _ => Priority::Revisit,
        }
    }

    /// The priority of a URL: `visited` once it was fetched, `hub` when it is (or was found as
    /// an entry of) a feed.
    pub fn of(url: &Url, visited: bool, hub: bool) -> Priority {
        if hub || looks_like_hub(url) {
            Priority::Hub
        } else if visited {
            Priority::Revisit
        } else {
            Priority::Fresh
        }
    }
}

/// Directory names under which capsules keep their logs, and file names of feeds.
const HUB_SEGMENTS: &[&str] = &[
    "gemlog", "glog", "log", "logs", "blog", "phlog", "posts", "journal", "news", "feed",
    "atom.xml", "feed.xml", "rss.xml", "feed.gmi", "atom.gmi",
];

/// A capsule root (`/`), a user's root (`/~user/`), a log directory (`/gemlog/`) or a feed file.
fn looks_like_hub(url: &Url) -> bool {
    let Some(segments) = url.path_segments() else {
        return false;
    };
    let named: Vec<&str> = segments.filter(|s| !s.is_empty()).collect();
    match named.as_slice() {
        [] => true,
        [user] if user.starts_with('~') => true,
        [.., last] => {
            let last = last.to_ascii_lowercase();
            HUB_SEGMENTS.contains(&last.as_str())
                || (url.path().ends_with('/') && last.ends_with("log"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: i64 = 1;
    const H: i64 = 3600;
    const D: i64 = 24 * H;
    const T0: i64 = 1_700_000_000;

    fn policy() -> RevisitPolicy {
        RevisitPolicy::default()
    }

    fn content(change: Change) -> Visit {
        Visit::Content {
            change,
            feed: false,
        }
    }

    /// The exact interval and the due time, which must lie within 10% of it.
    fn check_due(plan: &Plan, now: i64) {
        let due = plan.due_at.expect("due");
        let spread = plan.interval / 10;
        assert!(
            (now + plan.interval - spread..=now + plan.interval + spread).contains(&due),
            "due {} not within 10% of now + {}",
            due - now,
            plan.interval
        );
    }

    #[test]
    fn durations_read_as_the_flags_say_and_days_are_days() {
        let p = |s: &str| humantime::parse_duration(s).unwrap().as_secs() as i64;
        assert_eq!(p("90s"), 90 * S);
        assert_eq!(p("15m"), 15 * 60 * S);
        assert_eq!(p("12h"), 12 * H);
        assert_eq!(p("3d"), 3 * D);
        // TLGS wrote 21 weeks where it meant 21 days.
        assert_eq!(p("21d"), 21 * D);
        assert_eq!(p("21d") * 7, p("21w"));
        let d = RevisitPolicy::default();
        assert_eq!(d.initial.as_secs() as i64, 3 * D);
        assert_eq!(d.min.as_secs() as i64, D);
        assert_eq!(d.max.as_secs() as i64, 30 * D);
        assert_eq!(d.remove_after.as_secs() as i64, 14 * D);
    }

    #[test]
    fn a_new_page_waits_the_initial_interval() {
        let plan = policy().plan(&Memory::default(), content(Change::New), T0, 7);
        assert_eq!(plan.interval, 3 * D);
        check_due(&plan, T0);
        assert!(!plan.leave_index);
        assert_eq!(plan.first_failed_at, None);
    }

    #[test]
    fn unchanged_pages_wait_longer_up_to_the_max() {
        let p = policy();
        let mut memory = Memory::default();
        let mut now = T0;
        let mut seen = Vec::new();
        let first = p.plan(&memory, content(Change::New), now, 1);
        memory.interval = Some(first.interval);
        for _ in 0..10 {
            now = first.due_at.unwrap().max(now + memory.interval.unwrap());
            let plan = p.plan(&memory, content(Change::Unchanged), now, 1);
            check_due(&plan, now);
            seen.push(plan.interval);
            memory.interval = Some(plan.interval);
        }
        // 3 d x 1.5 each time: 4.5 d, 6.75 d, 10.125 d, 15.1875 d, 22.78 d, then capped at 30 d.
        assert_eq!(
            &seen[..5],
            &[
                (4.5 * D as f64) as i64,
                (6.75 * D as f64) as i64,
                (10.125 * D as f64) as i64,
                (15.1875 * D as f64) as i64,
                (22.78125 * D as f64) as i64,
            ]
        );
        assert!(seen[5..].iter().all(|&i| i == 30 * D), "{seen:?}");
    }

    #[test]
    fn changed_pages_come_back_sooner_down_to_the_min() {
        let p = policy();
        let mut memory = Memory {
            interval: Some(30 * D),
            first_failed_at: None,
        };
        let mut seen = Vec::new();
        for _ in 0..30 {
            let plan = p.plan(&memory, content(Change::Changed), T0, 3);
            seen.push(plan.interval);
            memory.interval = Some(plan.interval);
        }
        // (I + min) / 2: 15.5 d, 8.25 d, 4.625 d, ... and never below a day.
        assert_eq!(seen[0], (15.5 * D as f64) as i64);
        assert_eq!(seen[1], (8.25 * D as f64) as i64);
        assert!(seen.windows(2).all(|w| w[1] <= w[0]));
        assert_eq!(*seen.last().unwrap(), D);
    }

    #[test]
    fn a_run_with_other_bounds_clamps_old_intervals() {
        let p = RevisitPolicy {
            initial: Duration::from_secs(2),
            min: Duration::from_secs(1),
            max: Duration::from_secs(4),
            remove_after: Duration::from_secs(3),
        };
        let memory = Memory {
            interval: Some(30 * D),
            first_failed_at: None,
        };
        assert_eq!(
            p.plan(&memory, content(Change::Unchanged), T0, 1).interval,
            4
        );
        // (4 + 1) / 2, rounded down so that the interval reaches the min.
        assert_eq!(p.plan(&memory, content(Change::Changed), T0, 1).interval, 2);
        let plan = p.plan(&memory, content(Change::New), T0, 1);
        // Two seconds have no room for jitter: exactly two seconds.
        assert_eq!(plan.due_at, Some(T0 + 2));
    }

    #[test]
    fn feeds_are_revisited_at_the_min() {
        let p = policy();
        let memory = Memory {
            interval: Some(20 * D),
            first_failed_at: None,
        };
        for change in [Change::New, Change::Changed, Change::Unchanged] {
            let plan = p.plan(&memory, Visit::Content { change, feed: true }, T0, 9);
            assert_eq!(plan.interval, D);
            check_due(&plan, T0);
        }
    }

    #[test]
    fn not_found_is_rechecked_at_the_max_and_gone_never() {
        let p = policy();
        let memory = Memory {
            interval: Some(3 * D),
            first_failed_at: Some(T0 - D),
        };
        let nf = p.plan(&memory, Visit::NotFound, T0, 1);
        assert!(nf.leave_index);
        assert_eq!(nf.interval, 30 * D);
        check_due(&nf, T0);
        assert_eq!(nf.first_failed_at, None, "an answer ends a failure streak");
        let gone = p.plan(&memory, Visit::Gone, T0, 1);
        assert!(gone.leave_index);
        assert_eq!(gone.due_at, None);
        for visit in [
            Visit::NoContent,
            Visit::Redirect {
                permanent: true,
                change: Change::Unchanged,
            },
        ] {
            let plan = p.plan(&memory, visit, T0, 1);
            assert!(plan.leave_index, "{visit:?}");
            check_due(&plan, T0);
            assert_eq!(plan.interval, 30 * D);
        }
        let temporary = Visit::Redirect {
            permanent: false,
            change: Change::Unchanged,
        };
        assert!(!p.plan(&memory, temporary, T0, 1).leave_index);
        assert!(
            p.plan(
                &memory,
                Visit::Duplicate {
                    change: Change::Changed
                },
                T0,
                1
            )
            .leave_index
        );
    }

    #[test]
    fn failing_pages_stay_until_remove_after_then_leave() {
        let p = policy();
        // A stable page (30 d) starts failing: it is rechecked within 3 days, not 30.
        let mut memory = Memory {
            interval: Some(30 * D),
            first_failed_at: None,
        };
        let mut now = T0;
        let mut visits = 0;
        loop {
            let plan = p.plan(&memory, Visit::Failed, now, 5);
            visits += 1;
            assert_eq!(plan.first_failed_at, Some(T0));
            assert_eq!(plan.interval, 30 * D, "the page's own interval is kept");
            if plan.leave_index {
                assert!(now - T0 >= 14 * D);
                check_due(
                    &Plan {
                        interval: 30 * D,
                        ..plan
                    },
                    now,
                );
                break;
            }
            assert!(now - T0 < 14 * D);
            let wait = plan.due_at.unwrap() - now;
            assert!((3 * D - 3 * D / 10..=3 * D + 3 * D / 10).contains(&wait));
            now = plan.due_at.unwrap();
            memory.first_failed_at = plan.first_failed_at;
            memory.interval = Some(plan.interval);
        }
        // Failing at every visit every ~3 days: removed at the visit after 14 days.
        assert!((5..=7).contains(&visits), "{visits} visits");
        // An answer after that starts afresh.
        let back = p.plan(&memory, content(Change::Changed), now, 5);
        assert_eq!(back.first_failed_at, None);
        assert!(!back.leave_index);
    }

    #[test]
    fn remove_after_counts_from_the_first_failure_exactly() {
        let p = RevisitPolicy {
            remove_after: Duration::from_secs(10),
            ..policy()
        };
        let memory = Memory {
            interval: None,
            first_failed_at: Some(T0),
        };
        assert!(!p.plan(&memory, Visit::Failed, T0 + 9, 1).leave_index);
        assert!(p.plan(&memory, Visit::Failed, T0 + 10, 1).leave_index);
        // A zero --remove-after removes at the first failure.
        let now_or_never = RevisitPolicy {
            remove_after: Duration::ZERO,
            ..policy()
        };
        assert!(
            now_or_never
                .plan(&Memory::default(), Visit::Failed, T0, 1)
                .leave_index
        );
    }

    #[test]
    fn disallowed_urls_leave_and_are_judged_again_at_the_max() {
        let plan = policy().plan(&Memory::default(), Visit::Disallowed, T0, 1);
        assert!(plan.leave_index);
        check_due(
            &Plan {
                interval: 30 * D,
                ..plan
            },
            T0,
        );
    }

    #[test]
    fn jitter_spreads_pages_found_together() {
        let p = policy();
        let dues: std::collections::BTreeSet<i64> = (0..1000u64)
            .map(|id| {
                p.plan(&Memory::default(), content(Change::New), T0, id)
                    .due_at
                    .unwrap()
            })
            .collect();
        // 1000 pages found in the same second come due over a 14-hour window, not at once.
        assert!(dues.len() > 900, "{} distinct due times", dues.len());
        let (lo, hi) = (*dues.first().unwrap(), *dues.last().unwrap());
        assert!(hi - lo > 12 * H, "spread {} s", hi - lo);
        assert!(lo >= T0 + 3 * D - 3 * D / 10 && hi <= T0 + 3 * D + 3 * D / 10);
    }

    #[test]
    fn validate_refuses_inverted_or_empty_bounds() {
        assert!(policy().validate().is_ok());
        let bad = RevisitPolicy {
            min: Duration::from_secs(10 * 24 * 3600),
            ..policy()
        };
        assert!(bad.validate().unwrap_err().contains("--revisit-min"));
        let zero = RevisitPolicy {
            min: Duration::ZERO,
            ..policy()
        };
        assert!(zero.validate().is_err());
    }

    #[test]
    fn hubs_come_first_then_new_urls_and_revisits() {
        let u = |s: &str| Url::parse(s).unwrap();
        for hub in [
            "gemini://a.test/",
            "gemini://a.test/~bob/",
            "gemini://a.test/gemlog/",
            "gemini://a.test/~bob/log/",
            "gemini://a.test/atom.xml",
            "gemini://a.test/x/phlog/",
        ] {
            assert_eq!(Priority::of(&u(hub), true, false), Priority::Hub, "{hub}");
        }
        let leaf = u("gemini://a.test/gemlog/2024-01-01-post.gmi");
        assert_eq!(Priority::of(&leaf, false, false), Priority::Fresh);
        assert_eq!(Priority::of(&leaf, true, false), Priority::Revisit);
        assert_eq!(Priority::of(&leaf, false, true), Priority::Hub);
        assert_eq!(
            Priority::of(&u("gemini://a.test/catalog"), true, false),
            Priority::Revisit
        );
        for p in Priority::ALL {
            assert_eq!(Priority::from_i64(p as i64), p);
        }
    }
}
