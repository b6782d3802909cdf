//! Filter values (`site:`, `lang:`, `mime:`, `size:` and the others): each value read and
//! normalised the way the index stores what it is compared with, or refused with a message
//! that says what a valid value looks like.

use std::ops::Range;

use url::Host;

use super::{error_at, Comparison, Filter, QueryError, TextValue};

/// The filters a query may name (`site:`, `lang:`...).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum FilterKind {
    Site,
    Lang,
    Mime,
    InTitle,
    InUrl,
    FileType,
    Size,
    Similar,
    Scheme,
}

impl FilterKind {
    pub(super) fn from_name(name: &str) -> Option<FilterKind> {
        Some(match name.to_ascii_lowercase().as_str() {
            "site" => FilterKind::Site,
            "lang" => FilterKind::Lang,
            "mime" | "content_type" => FilterKind::Mime,
            "intitle" => FilterKind::InTitle,
            "inurl" => FilterKind::InUrl,
            "filetype" => FilterKind::FileType,
            "size" => FilterKind::Size,
            "similar" => FilterKind::Similar,
            "scheme" => FilterKind::Scheme,
            _ => return None,
        })
    }
}

/// Builds a filter from its value; `quoted` values came from a `"..."` phrase.
pub(super) fn make_filter(
    text: &str,
    kind: FilterKind,
    name: &str,
    value: &str,
    quoted: bool,
    value_span: Range<usize>,
) -> Result<Filter, QueryError> {
    let fail = |message: String| error_at(text, value_span.clone(), &message);
    let text_value = |value: &str| {
        if quoted {
            TextValue::Phrase(value.to_string())
        } else {
            TextValue::Word(value.to_string())
        }
    };
    Ok(match kind {
        FilterKind::InTitle => Filter::InTitle(text_value(value)),
        FilterKind::InUrl => Filter::InUrl(text_value(value)),
        FilterKind::Site => Filter::Site(normalize_site(value).map_err(fail)?),
        FilterKind::Scheme => {
            let scheme = value.trim_end_matches("://").trim_end_matches(':');
            match scheme.to_ascii_lowercase().as_str() {
                s @ ("gemini" | "http" | "https") => Filter::Scheme(s.to_string()),
                _ => {
                    return Err(fail(format!(
                        "{name}: expects gemini, http or https, got '{value}'"
                    )))
                }
            }
        }
        FilterKind::Lang => {
            let primary = value.split(['-', '_']).next().unwrap_or("");
            if !(2..=3).contains(&primary.len())
                || !primary.bytes().all(|b| b.is_ascii_alphabetic())
            {
                return Err(fail(format!(
                    "{name}: expects a two- or three-letter language code such as en or de-DE, \
                     got '{value}'"
                )));
            }
            Filter::Lang(primary.to_ascii_lowercase())
        }
        FilterKind::Mime => Filter::Mime(normalize_mime(value).ok_or_else(|| {
            fail(format!(
                "{name}: expects a media type such as text or text/gemini, got '{value}'"
            ))
        })?),
        FilterKind::FileType => {
            let ext = value.strip_prefix('.').unwrap_or(value);
            if !(1..=10).contains(&ext.len()) || !ext.bytes().all(|b| b.is_ascii_alphanumeric()) {
                return Err(fail(format!(
                    "{name}: expects a file extension of 1 to 10 letters or digits such as gmi, \
                     got '{value}'"
                )));
            }
            Filter::FileType(ext.to_ascii_lowercase())
        }
        FilterKind::Similar => {
            let url = crate::urlnorm::normalize(value).map_err(|e| {
                fail(format!(
                    "{name}: expects the URL of a page, got '{value}' ({e})"
                ))
            })?;
            Filter::Similar(url.to_string())
        }
        FilterKind::Size => {
            let (comparison, bytes) = parse_size(value).map_err(|problem| {
                fail(match problem {
                    SizeProblem::Malformed => format!(
                        "{name}: expects a number of bytes such as >10K, <=2M or 1.5MiB, \
                         got '{value}'"
                    ),
                    SizeProblem::TooLarge => format!("{name}: '{value}' is too large"),
                })
            })?;
            Filter::Size(comparison, bytes)
        }
    })
}

/// `site:` values: a host (any scheme and trailing slash removed, IDNA to punycode, lowercase,
/// port dropped since the index keys sites by host alone), optionally followed by `/~user` on
/// shared hosts. `*.example.org` means `example.org`, whose subdomains match anyway.
fn normalize_site(value: &str) -> Result<String, String> {
    let expected = "site: expects a host name such as example.org, optionally with /~user";
    if value.is_empty() || value.chars().any(char::is_whitespace) {
        return Err(format!("{expected}, got '{value}'"));
    }
    let mut rest = value;
    if let Some((scheme, after)) = value.split_once("://") {
        let is_scheme = !scheme.is_empty()
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
        if is_scheme {
            rest = after;
        }
    }
    let rest = rest.trim_end_matches('/');
    let (host_port, path) = match rest.find('/') {
        Some(slash) => rest.split_at(slash),
        None => (rest, ""),
    };
    let host = strip_port(host_port);
    let host = host.strip_prefix("*.").unwrap_or(host);
    if host.is_empty() {
        return Err(format!("{expected}, got '{value}'"));
    }
    let host = match Host::parse(host) {
        Ok(Host::Domain(domain)) => domain.trim_end_matches('.').to_string(),
        Ok(other) => other.to_string(),
        Err(_) => return Err(format!("site: '{host}' is not a valid host name")),
    };
    if host.is_empty() {
        return Err(format!("{expected}, got '{value}'"));
    }
    if path.is_empty() {
        return Ok(host);
    }
    let user = path.strip_prefix("/~").unwrap_or("");
    if user.is_empty() || user.contains('/') {
        return Err(format!(
            "site: takes a host name, optionally with /~user, not the path '{path}' \
             (inurl: matches words of paths)"
        ));
    }
    Ok(format!("{host}{path}"))
}

/// `example.org:1965` -> `example.org`; `[::1]:1965` -> `[::1]`.
fn strip_port(host_port: &str) -> &str {
    if host_port.starts_with('[') {
        return match host_port.find(']') {
            Some(close) => &host_port[..=close],
            None => host_port,
        };
    }
    match host_port.rsplit_once(':') {
        Some((host, port)) if port.bytes().all(|b| b.is_ascii_digit()) => host,
        _ => host_port,
    }
}

/// `text`, `text/gemini` or `text/*` (= `text`), lowercased; each part an RFC 2045 token.
fn normalize_mime(value: &str) -> Option<String> {
    let lower = value.to_ascii_lowercase();
    let lower = lower.strip_suffix("/*").unwrap_or(&lower);
    let is_token = |part: &str| {
        !part.is_empty()
            && part.bytes().all(|b| {
                b.is_ascii_alphanumeric()
                    || matches!(
                        b,
                        b'!' | b'#' | b'$' | b'&' | b'^' | b'_' | b'.' | b'+' | b'-'
                    )
            })
    };
    let mut parts = lower.split('/');
    let kind = parts.next()?;
    let subtype = parts.next();
    if parts.next().is_some() || !is_token(kind) || !subtype.into_iter().all(is_token) {
        return None;
    }
    Some(lower.to_string())
}

enum SizeProblem {
    Malformed,
    TooLarge,
}

/// `>N`, `<N`, `>=N`, `<=N`, `=N` or `N`; N a decimal number with an optional K, M or G
/// (powers of 1024) and an optional `B` or `iB`. Fractions of a byte round to the nearest byte.
fn parse_size(value: &str) -> Result<(Comparison, u64), SizeProblem> {
    let (comparison, rest) = [
        (">=", Comparison::GreaterOrEqual),
        ("<=", Comparison::LessOrEqual),
        (">", Comparison::Greater),
        ("<", Comparison::Less),
        ("=", Comparison::Equal),
    ]
    .iter()
    .find_map(|(prefix, comparison)| Some((*comparison, value.strip_prefix(prefix)?)))
    .unwrap_or((Comparison::Equal, value));
    let number_len = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(rest.len());
    let (number, suffix) = rest.split_at(number_len);
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty() || (number.contains('.') && fraction.is_empty()) || fraction.contains('.') {
        return Err(SizeProblem::Malformed);
    }
    let unit: u128 = match suffix.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        _ => return Err(SizeProblem::Malformed),
    };
    let mut bytes: u128 = 0;
    for digit in whole.bytes() {
        bytes = bytes
            .checked_mul(10)
            .and_then(|b| b.checked_add(u128::from(digit - b'0')))
            .ok_or(SizeProblem::TooLarge)?;
    }
    bytes = bytes.checked_mul(unit).ok_or(SizeProblem::TooLarge)?;
    // Digits past the 18th are worth less than a billionth of a byte (the unit is at most 2^30)
    // and are ignored, which keeps the arithmetic within u128.
    let fraction = &fraction[..fraction.len().min(18)];
    if !fraction.is_empty() {
        let scale = 10u128.pow(fraction.len() as u32);
        let numerator: u128 = fraction
            .bytes()
            .fold(0, |n, digit| n * 10 + u128::from(digit - b'0'));
        bytes = bytes
            .checked_add((numerator * unit + scale / 2) / scale)
            .ok_or(SizeProblem::TooLarge)?;
    }
    let bytes = u64::try_from(bytes).map_err(|_| SizeProblem::TooLarge)?;
    Ok((comparison, bytes))
}
