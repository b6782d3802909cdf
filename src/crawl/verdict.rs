//! What an answer means, decided apart from doing it: [`verdict`] reads a page's answer (or the
//! error that stood for one) against what the frontier knew of the URL, and names what becomes
//! of it; [`robots_verdict`] does the same for a capsule's robots.txt. Pure: no I/O, no clock, no
//! store. [`super::record`] applies a verdict, and does what needs the store (duplicate bodies,
//! the capsule's budget of URLs) there.
//!
//! | answer | what becomes of the URL | its revisit |
//! |---|---|---|
//! | 10, 11 (input), 60-62 (certificate) | fetched, nothing to index | leaves the index |
//! | 20, the body of last time, indexed | unchanged: only its times move | in the index |
//! | 20, a new body or none indexed | indexed unless a duplicate, links replaced | new, changed |
//! | 304 (HTTP) | unchanged; the archive keeps the response it confirms | in the index |
//! | 30 | target followed; the content stays indexed under this URL | in the index |
//! | 31 | target followed; it replaces this URL | leaves the index |
//! | 30, 31 unusable (no URL, a loop, a 6th hop) | failed | failure streak |
//! | 40, 42, 43, 45-49 | retried with back-off; failed once out of attempts | failure streak |
//! | 41 | the capsule set aside; the URL goes back untouched | as it was |
//! | 44 | the IP paused; the URL waits its turn (the next run, after too many) | as it was |
//! | 51 | fetched | leaves the index, rechecked |
//! | 52 | fetched | leaves the index for good |
//! | 50, 53, 59, other 5x | failed: the page may be fine and the server not | failure streak |
//! | no answer (network, TLS, DNS, protocol) | failed | failure streak |
//!
//! A failure streak leaves the page searchable until it has failed for `--remove-after`
//! ([`crate::revisit`]). The archive keeps every answer as the page's latest but a 44, which says
//! nothing of the page, and a 304, which confirms the one kept; every answer but a 44 ends its IP
//! address's run of slow-downs.

use std::time::Duration;

use ::url::Url;

use super::MAX_REDIRECT_HOPS;
use crate::fetch::{FetchError, Outcome};
use crate::frontier::{QueuedUrl, UrlState};
use crate::revisit::{Change, Visit};
use crate::robots::Robots;
use crate::urlnorm;

/// An answer as the verdict reads it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Heard<'a> {
    /// The two-digit status as received (HTTP statuses mapped onto Gemini's).
    pub(super) status: u8,
    pub(super) outcome: &'a Outcome,
    /// The content of a 20.
    pub(super) body: Option<Body<'a>>,
}

/// What the verdict needs of a 20's content.
#[derive(Debug, Clone, Copy)]
pub(super) struct Body<'a> {
    /// SHA-256 of the body; `None` when only the header was read.
    pub(super) hash: Option<&'a str>,
    pub(super) mime: &'a str,
    pub(super) feed: bool,
}

/// How temporary failures are retried ([`super::CrawlConfig`]'s `retry_base`, `max_attempts`).
#[derive(Debug, Clone, Copy)]
pub(super) struct Retries {
    /// The first wait; doubled for each failure in a row.
    pub(super) base: Duration,
    /// Temporary failures in a row after which a URL is given up.
    pub(super) max_attempts: u32,
}

/// What one answer means for its URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Verdict {
    /// The archive keeps the response as the page's latest.
    pub(super) archive: bool,
    /// The answer ends its IP address's run of slow-downs.
    pub(super) answered: bool,
    pub(super) then: Then,
}

/// A redirect to follow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Follow {
    /// The target, which joins the frontier.
    pub(super) to: Url,
    /// A 31: the target replaces this URL, which leaves the index.
    pub(super) permanent: bool,
    /// Whether the target is the one this URL redirected to last time.
    pub(super) change: Change,
    pub(super) state: UrlState,
}

/// What becomes of the URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Then {
    /// Content found as it was last time (the same body, or a 304): only its times move.
    Unchanged { state: UrlState, feed: bool },
    /// New or changed content: indexed, unless an identical body is already, and its links
    /// replace the page's old ones.
    Index { change: Change, state: UrlState },
    /// A 30 or 31 to follow.
    Follow(Follow),
    /// An answer with nothing to index (51, 52, an input prompt, a certificate request).
    Answered { visit: Visit },
    /// No usable answer: the page's failure streak grows. `failed` when nothing came back or
    /// a redirect led nowhere, `fetched` when the server answered with a failure.
    Failed { state: UrlState, error: String },
    /// 44: its IP address pauses for the wait asked and the URL, at its `attempts`-th slow-down
    /// now, waits its turn again; the `last` one waits for the next run.
    SlowDown { attempts: u32, last: bool },
    /// 41: the whole capsule is set aside; the URL goes back untouched.
    SetAside,
    /// 40, 42, 43 and the other 4x: tried again after `wait` seconds.
    Retry { wait: i64 },
}

/// What `answer` (or the error that came instead) means for `url`.
pub(super) fn verdict(
    answer: Result<Heard<'_>, &FetchError>,
    url: &QueuedUrl,
    retries: Retries,
) -> Verdict {
    let answer = match answer {
        Ok(answer) => answer,
        Err(e) => {
            return Verdict {
                archive: false,
                answered: false,
                then: failed(UrlState::Failed, e.kind()),
            }
        }
    };
    let slow_down = matches!(answer.outcome, Outcome::TemporaryFailure { code: 44, .. });
    Verdict {
        // The archive keeps the latest response, whatever it says; slow-downs say nothing about
        // the page and are not kept. A 304 has no body: the archived response stays the one it
        // confirms.
        archive: !slow_down && !matches!(answer.outcome, Outcome::NotModified),
        answered: !slow_down,
        then: then(answer, url, retries),
    }
}

/// What becomes of the URL after an answer.
fn then(answer: Heard<'_>, url: &QueuedUrl, retries: Retries) -> Then {
    let prior = &url.prior;
    match answer.outcome {
        Outcome::Success { .. } => {
            content(answer.body.expect("success responses are extracted"), url)
        }
        Outcome::NotModified => {
            // The server says it is the version fetched last: unchanged, no body read.
            let state = if prior.in_index || url.canonical.is_some() {
                prior.state.unwrap_or(UrlState::Indexed)
            } else {
                UrlState::Fetched
            };
            Then::Unchanged {
                state,
                feed: prior.feed,
            }
        }
        Outcome::Redirect { target, permanent } => redirect(url, answer.status, target, *permanent),
        Outcome::TemporaryFailure { code: 44, .. } => {
            let attempts = prior.attempts + 1;
            Then::SlowDown {
                attempts,
                last: attempts >= retries.max_attempts,
            }
        }
        Outcome::TemporaryFailure { code: 41, .. } => Then::SetAside,
        Outcome::TemporaryFailure { .. } => {
            let attempts = prior.attempts + 1;
            if attempts >= retries.max_attempts {
                return failed(UrlState::Fetched, "temporary-failure");
            }
            let base = retries.base.as_secs().max(1) as i64;
            Then::Retry {
                wait: base.saturating_mul(1 << (attempts - 1).min(20)),
            }
        }
        Outcome::PermanentFailure { code: 51, .. } => Then::Answered {
            visit: Visit::NotFound,
        },
        Outcome::PermanentFailure { code: 52, .. } => Then::Answered { visit: Visit::Gone },
        // Refused, bad request, permanent failure, unknown 5x: the page may be fine and the
        // server not; it stays until --remove-after.
        Outcome::PermanentFailure { code, .. } => {
            failed(UrlState::Fetched, &format!("status-{code}"))
        }
        // An input prompt marks a query endpoint (status 10/11 is kept); geode never invents
        // input, nor client certificates.
        Outcome::Input { .. } | Outcome::CertificateRequired { .. } => Then::Answered {
            visit: Visit::NoContent,
        },
    }
}

fn failed(state: UrlState, error: &str) -> Then {
    Then::Failed {
        state,
        error: error.to_string(),
    }
}

/// A 20: unchanged when it is the body this URL served last time and its document is in the
/// index. The content of a URL reached through a temporary redirect is indexed under the URL
/// that redirected.
fn content(body: Body<'_>, url: &QueuedUrl) -> Then {
    let prior = &url.prior;
    let in_index = match &url.canonical {
        Some(c) => c.in_index,
        None => prior.in_index,
    };
    // A file read by its header only has no hash: the same type counts as the same file.
    let same = match (body.hash, &prior.content_hash) {
        (Some(h), Some(before)) => h == before,
        (None, None) => prior.status == Some(20) && prior.mime.as_deref() == Some(body.mime),
        _ => false,
    };
    let state = if url.canonical.is_some() {
        UrlState::Fetched
    } else {
        UrlState::Indexed
    };
    if same && in_index {
        return Then::Unchanged {
            state,
            feed: body.feed,
        };
    }
    let change = if in_index {
        Change::Changed
    } else {
        Change::New
    };
    Then::Index { change, state }
}

/// A 30 or 31: followed unless the target is unusable, loops back or ends a chain of
/// [`MAX_REDIRECT_HOPS`]. A temporary redirect's content stays indexed under this URL, through
/// its target; a permanent one moves it away.
fn redirect(url: &QueuedUrl, status: u8, target: &str, permanent: bool) -> Then {
    let resolved = Url::parse(&url.url)
        .map_err(|e| urlnorm::UrlError::Parse(e.to_string()))
        .and_then(|base| urlnorm::resolve(&base, target));
    let to = match resolved {
        Err(_) => return failed(UrlState::Failed, "bad-redirect"),
        Ok(_) if url.hops >= MAX_REDIRECT_HOPS => {
            return failed(UrlState::Failed, "too-many-redirects")
        }
        Ok(to) if to.as_str() == url.url => return failed(UrlState::Failed, "redirect-loop"),
        Ok(to) => to,
    };
    let same_target = url.prior.status == Some(status) && url.prior.meta.as_deref() == Some(target);
    Then::Follow(Follow {
        to,
        permanent,
        change: if same_target {
            Change::Unchanged
        } else {
            Change::Changed
        },
        state: if !permanent && url.prior.in_index {
            UrlState::Indexed
        } else {
            UrlState::Fetched
        },
    })
}

/// What a capsule's robots.txt answer means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum RobotsVerdict {
    /// 44: asked again once the wait is over.
    SlowDown,
    /// Other 4x: asked again later, and nothing of the capsule fetched meanwhile.
    SetAside,
    /// The rules, and the text they were read from. Anything but 4x or a 20 with text
    /// (missing, permanent failure, redirect, not text) means no restrictions.
    Rules {
        robots: Robots,
        text: Option<String>,
    },
}

/// What the answer to the robots.txt of the capsule `capsule_key` means.
pub(super) fn robots_verdict(outcome: &Outcome, capsule_key: &str) -> RobotsVerdict {
    match outcome {
        Outcome::TemporaryFailure { code: 44, .. } => RobotsVerdict::SlowDown,
        Outcome::TemporaryFailure { .. } => RobotsVerdict::SetAside,
        Outcome::Success { meta, body } if crate::fetch::wants_body(meta) => {
            let text = crate::gemtext::decode(body).into_owned();
            RobotsVerdict::Rules {
                robots: robots_of(capsule_key, &text),
                text: Some(text),
            }
        }
        _ => RobotsVerdict::Rules {
            robots: Robots::allow_all(),
            text: None,
        },
    }
}

/// The rules of a capsule's robots.txt, read as its protocol says: the Gemini companion
/// specification for a capsule, RFC 9309 for a web origin.
pub(super) fn robots_of(capsule_key: &str, text: &str) -> Robots {
    if urlnorm::Capsule::parse(capsule_key).is_web() {
        Robots::parse_web(text)
    } else {
        Robots::parse(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frontier::{Canonical, Prior};
    use crate::revisit::{Memory, RevisitPolicy};

    const RETRIES: Retries = Retries {
        base: Duration::from_secs(60),
        max_attempts: 4,
    };

    /// What came back, as a row holds it.
    enum Said {
        Answer(u8, Outcome, Option<Body<'static>>),
        NoAnswer(FetchError),
    }

    fn heard(said: &Said) -> Result<Heard<'_>, &FetchError> {
        match said {
            Said::Answer(status, outcome, body) => Ok(Heard {
                status: *status,
                outcome,
                body: *body,
            }),
            Said::NoAnswer(e) => Err(e),
        }
    }

    /// An answer with a status and a message, nothing else.
    fn status(code: u8) -> Said {
        let message = "the server's words".to_string();
        let outcome = match code {
            10 | 11 => Outcome::Input {
                prompt: message,
                sensitive: code == 11,
            },
            40..=49 => Outcome::TemporaryFailure { code, message },
            50..=59 => Outcome::PermanentFailure { code, message },
            60..=69 => Outcome::CertificateRequired { code, message },
            _ => panic!("no plain status {code}"),
        };
        Said::Answer(code, outcome, None)
    }

    /// A 20 with a body of this hash (`None`: only the header was read) and type.
    fn content(hash: Option<&'static str>, mime: &'static str, feed: bool) -> Said {
        let outcome = Outcome::Success {
            meta: mime.to_string(),
            body: Vec::new(),
        };
        Said::Answer(20, outcome, Some(Body { hash, mime, feed }))
    }

    fn gemtext(hash: &'static str) -> Said {
        content(Some(hash), "text/gemini", false)
    }

    fn not_modified() -> Said {
        Said::Answer(20, Outcome::NotModified, None)
    }

    fn redirect(target: &str, permanent: bool) -> Said {
        let outcome = Outcome::Redirect {
            target: target.to_string(),
            permanent,
        };
        Said::Answer(30 + u8::from(permanent), outcome, None)
    }

    fn url(prior: Prior) -> QueuedUrl {
        QueuedUrl {
            id: 7,
            url: "gemini://a.test/page".to_string(),
            host_id: 1,
            host: "a.test".to_string(),
            depth: 1,
            hops: 0,
            canonical: None,
            prior,
        }
    }

    /// A page in the index, whose body had the hash `hash` last time.
    fn indexed(hash: &str) -> Prior {
        Prior {
            state: Some(UrlState::Indexed),
            in_index: true,
            content_hash: Some(hash.to_string()),
            mime: Some("text/gemini".to_string()),
            meta: Some("text/gemini".to_string()),
            status: Some(20),
            visited: true,
            ..Prior::default()
        }
    }

    /// The page in the index that most rows visit.
    fn page() -> QueuedUrl {
        url(indexed("a"))
    }

    /// A file in the index known by its header only.
    fn file(mime: &str) -> QueuedUrl {
        url(Prior {
            content_hash: None,
            mime: Some(mime.to_string()),
            ..indexed("a")
        })
    }

    fn out_of_index(url: QueuedUrl) -> QueuedUrl {
        let mut url = url;
        url.prior.state = Some(UrlState::Fetched);
        url.prior.in_index = false;
        url
    }

    /// The page after `attempts` temporary failures in a row.
    fn failing(attempts: u32) -> QueuedUrl {
        url(Prior {
            attempts,
            ..indexed("a")
        })
    }

    /// Reached through a temporary redirect from an indexed page, first visited now.
    fn aliased() -> QueuedUrl {
        QueuedUrl {
            canonical: Some(Canonical {
                id: 3,
                url: "gemini://a.test/old".to_string(),
                host: "a.test".to_string(),
                in_index: true,
            }),
            ..url(Prior::default())
        }
    }

    /// Redirected last time with `status` to `target`.
    fn redirected(status: u8, target: &str) -> QueuedUrl {
        url(Prior {
            status: Some(status),
            meta: Some(target.to_string()),
            content_hash: None,
            ..indexed("a")
        })
    }

    /// Archived, and the IP address's slow-downs ended: every answer but a 44 and a 304.
    fn kept(then: Then) -> Verdict {
        Verdict {
            archive: true,
            answered: true,
            then,
        }
    }

    /// A 304: the archive keeps the response it confirms.
    fn confirmed(then: Then) -> Verdict {
        Verdict {
            archive: false,
            ..kept(then)
        }
    }

    /// Neither archived nor an answer for the IP address: a 44, or no answer at all.
    fn unkept(then: Then) -> Verdict {
        Verdict {
            archive: false,
            answered: false,
            then,
        }
    }

    fn same(state: UrlState, feed: bool) -> Then {
        Then::Unchanged { state, feed }
    }

    fn index(change: Change, state: UrlState) -> Then {
        Then::Index { change, state }
    }

    fn follow(to: &str, permanent: bool, change: Change, state: UrlState) -> Then {
        Then::Follow(Follow {
            to: Url::parse(to).unwrap(),
            permanent,
            change,
            state,
        })
    }

    fn answered(visit: Visit) -> Then {
        Then::Answered { visit }
    }

    fn failed(state: UrlState, error: &str) -> Then {
        Then::Failed {
            state,
            error: error.to_string(),
        }
    }

    fn slow_down(attempts: u32, last: bool) -> Then {
        Then::SlowDown { attempts, last }
    }

    fn retry(wait: i64) -> Then {
        Then::Retry { wait }
    }

    /// What the revisit policy is told of the visit, where one is recorded.
    fn visit_of(then: &Then) -> Option<Visit> {
        match then {
            Then::Unchanged { feed, .. } => Some(Visit::Content {
                change: Change::Unchanged,
                feed: *feed,
            }),
            Then::Index { change, .. } => Some(Visit::Content {
                change: *change,
                feed: false,
            }),
            Then::Follow(f) => Some(Visit::Redirect {
                permanent: f.permanent,
                change: f.change,
            }),
            Then::Answered { visit } => Some(*visit),
            Then::Failed { .. } => Some(Visit::Failed),
            Then::SlowDown { .. } | Then::SetAside | Then::Retry { .. } => None,
        }
    }

    /// Whether the page leaves the index at this visit; `None`: no visit is recorded, the URL
    /// is asked again.
    const LEAVES: Option<bool> = Some(true);
    const STAYS: Option<bool> = Some(false);
    const NO_VISIT: Option<bool> = None;

    /// The module doc's table, row by row: what each answer means for a URL, and whether the
    /// page leaves the index at this visit (a failing page stays until `--remove-after`).
    #[test]
    fn each_answer_has_its_verdict() {
        use Change::{Changed, New, Unchanged};
        use UrlState::{Failed, Fetched, Indexed};
        use Visit::{Gone, NoContent, NotFound};
        let away = "gemini://a.test/away";
        #[rustfmt::skip]
        let rows: Vec<(&str, Said, QueuedUrl, Verdict, Option<bool>)> = vec![
            ("10 input", status(10), page(), kept(answered(NoContent)), LEAVES),
            ("11 sensitive input", status(11), page(), kept(answered(NoContent)), LEAVES),
            ("20, a new URL", gemtext("b"), url(Prior::default()), kept(index(New, Indexed)),
                STAYS),
            ("20, another body", gemtext("b"), page(), kept(index(Changed, Indexed)), STAYS),
            ("20, the same body", gemtext("a"), page(), kept(same(Indexed, false)), STAYS),
            ("20, the same feed", content(Some("a"), "text/xml", true), page(),
                kept(same(Indexed, true)), STAYS),
            ("20, the same body out of the index", gemtext("a"), out_of_index(page()),
                kept(index(New, Indexed)), STAYS),
            ("20, a file of the same type", content(None, "image/png", false), file("image/png"),
                kept(same(Indexed, false)), STAYS),
            ("20, a file of another type", content(None, "image/gif", false), file("image/png"),
                kept(index(Changed, Indexed)), STAYS),
            ("20, a body where a file was", gemtext("a"), file("image/png"),
                kept(index(Changed, Indexed)), STAYS),
            ("20 through a 30", gemtext("b"), aliased(), kept(index(Changed, Fetched)), STAYS),
            ("304 not modified", not_modified(), page(), confirmed(same(Indexed, false)), STAYS),
            ("304 of a feed", not_modified(), url(Prior { feed: true, ..indexed("a") }),
                confirmed(same(Indexed, true)), STAYS),
            ("304 out of the index", not_modified(), out_of_index(page()),
                confirmed(same(Fetched, false)), STAYS),
            ("30, a new target", redirect("away", false), page(),
                kept(follow(away, false, Changed, Indexed)), STAYS),
            ("30, the target of last time", redirect("away", false), redirected(30, "away"),
                kept(follow(away, false, Unchanged, Indexed)), STAYS),
            ("30 out of the index", redirect("gemini://b.test/", false), out_of_index(page()),
                kept(follow("gemini://b.test/", false, Changed, Fetched)), STAYS),
            ("31", redirect("away", true), page(), kept(follow(away, true, Changed, Fetched)),
                LEAVES),
            ("31, the target of last time", redirect("away", true), redirected(31, "away"),
                kept(follow(away, true, Unchanged, Fetched)), LEAVES),
            ("30 to itself", redirect("page", false), page(), kept(failed(Failed, "redirect-loop")),
                STAYS),
            ("30 at the end of a chain", redirect("away", false),
                QueuedUrl { hops: MAX_REDIRECT_HOPS, ..page() },
                kept(failed(Failed, "too-many-redirects")), STAYS),
            ("31 to no URL", redirect("gemini://a b/", true), page(),
                kept(failed(Failed, "bad-redirect")), STAYS),
            ("40", status(40), page(), kept(retry(60)), NO_VISIT),
            ("40, the third in a row", status(40), failing(2), kept(retry(240)), NO_VISIT),
            ("40, out of attempts", status(40), failing(3),
                kept(failed(Fetched, "temporary-failure")), STAYS),
            ("41", status(41), failing(3), kept(Then::SetAside), NO_VISIT),
            ("42", status(42), page(), kept(retry(60)), NO_VISIT),
            ("43", status(43), failing(1), kept(retry(120)), NO_VISIT),
            ("44", status(44), page(), unkept(slow_down(1, false)), NO_VISIT),
            ("44, out of attempts", status(44), failing(3), unkept(slow_down(4, true)), NO_VISIT),
            ("50", status(50), page(), kept(failed(Fetched, "status-50")), STAYS),
            ("51", status(51), page(), kept(answered(NotFound)), LEAVES),
            ("52", status(52), page(), kept(answered(Gone)), LEAVES),
            ("53", status(53), page(), kept(failed(Fetched, "status-53")), STAYS),
            ("59", status(59), page(), kept(failed(Fetched, "status-59")), STAYS),
            ("60", status(60), page(), kept(answered(NoContent)), LEAVES),
            ("61", status(61), page(), kept(answered(NoContent)), LEAVES),
            ("62", status(62), page(), kept(answered(NoContent)), LEAVES),
            ("no answer: timeout", Said::NoAnswer(FetchError::Timeout("response")), page(),
                unkept(failed(Failed, "timeout")), STAYS),
            ("no answer: TLS", Said::NoAnswer(FetchError::Tls("bad certificate".into())), page(),
                unkept(failed(Failed, "tls")), STAYS),
        ];
        let policy = RevisitPolicy::default();
        for (what, said, url, expected, leaves) in rows {
            let got = verdict(heard(&said), &url, RETRIES);
            assert_eq!(got, expected, "{what}");
            let left = visit_of(&got.then).map(|visit| {
                policy
                    .plan(&Memory::default(), visit, 1_700_000_000, 1)
                    .leave_index
            });
            assert_eq!(left, leaves, "{what}: leaves the index");
        }
    }

    #[test]
    fn retries_wait_twice_as_long_each_time_at_most_a_million_times_the_base() {
        let retries = Retries {
            base: Duration::from_secs(60),
            max_attempts: 100,
        };
        let wait = |attempts| match verdict(heard(&status(40)), &failing(attempts), retries).then {
            Then::Retry { wait } => wait,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            [0, 1, 2, 3].map(wait),
            [60, 120, 240, 480],
            "60 s, doubled each time"
        );
        assert_eq!(wait(20), 60 << 20);
        assert_eq!(wait(50), 60 << 20, "never longer");
        // A base under a second counts as a second.
        let quick = Retries {
            base: Duration::from_millis(10),
            ..retries
        };
        let first = verdict(heard(&status(43)), &page(), quick).then;
        assert_eq!(first, Then::Retry { wait: 1 });
    }

    #[test]
    fn robots_txt_is_read_as_its_answer_says() {
        let text = |meta: &str, body: &str| Outcome::Success {
            meta: meta.to_string(),
            body: body.as_bytes().to_vec(),
        };
        let rules = "User-agent: *\nDisallow: /private/\n";
        let allow_all = RobotsVerdict::Rules {
            robots: Robots::allow_all(),
            text: None,
        };
        let rows = [
            (
                "20 text",
                text("text/plain", rules),
                RobotsVerdict::Rules {
                    robots: Robots::parse(rules),
                    text: Some(rules.to_string()),
                },
            ),
            ("20 not text", text("image/png", ""), allow_all.clone()),
            (
                "44",
                Outcome::TemporaryFailure {
                    code: 44,
                    message: "30".into(),
                },
                RobotsVerdict::SlowDown,
            ),
            (
                "41",
                Outcome::TemporaryFailure {
                    code: 41,
                    message: String::new(),
                },
                RobotsVerdict::SetAside,
            ),
            (
                "51",
                Outcome::PermanentFailure {
                    code: 51,
                    message: String::new(),
                },
                allow_all.clone(),
            ),
            (
                "31",
                Outcome::Redirect {
                    target: "/robots.gmi".into(),
                    permanent: true,
                },
                allow_all.clone(),
            ),
            ("304", Outcome::NotModified, allow_all),
        ];
        for (what, outcome, expected) in rows {
            assert_eq!(robots_verdict(&outcome, "a.test"), expected, "{what}");
        }
        let RobotsVerdict::Rules { robots, .. } =
            robots_verdict(&text("text/plain", rules), "a.test")
        else {
            panic!("rules")
        };
        assert!(!robots.is_allowed("/private/x"));
        assert!(robots.is_allowed("/public"));
    }

    #[test]
    fn a_web_origin_reads_robots_txt_as_rfc_9309_says() {
        // On the web geode obeys its own group alone; on Gemini, `*` as well.
        let text = "User-agent: *\nDisallow: /\n\nUser-agent: geode\nDisallow: /private/\n";
        assert!(robots_of("https://w.test", text).is_allowed("/blog/"));
        assert!(!robots_of("a.test", text).is_allowed("/blog/"));
    }
}
