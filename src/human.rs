//! Sizes, durations and times for people: `2.1 KiB`, `3 days`, `2024-05-01 12:34 UTC (3 h ago)`.
//! Pure: the current time is passed in. One formatting for the command line and the frontend.

/// Bytes for people: `512 B`, `2.1 KiB`, `3.0 MiB`.
pub fn size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

/// `2024-05-01 12:34 UTC (3 h ago)`, or `(in 2 days)` for a time to come.
pub fn when(unix: i64, now: i64) -> String {
    let ago = now.saturating_sub(unix);
    if ago < 0 {
        format!("{} (in {})", utc(unix), duration(ago.saturating_neg()))
    } else {
        format!("{} ({} ago)", utc(unix), duration(ago))
    }
}

/// `YYYY-MM-DD HH:MM UTC` for a unix time (proleptic Gregorian calendar).
pub fn utc(unix: i64) -> String {
    let days = unix.div_euclid(86_400);
    let secs = unix.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02} UTC",
        secs / 3600,
        secs % 3600 / 60
    )
}

/// Days since 1970-01-01 to (year, month, day); Howard Hinnant's algorithm.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    // d is in 1..=31 and m in 1..=12 by construction.
    (y, m as u32, d as u32)
}

/// A length of time, rounded to the unit that reads best: `45 s`, `12 min`, `5 h`, `3 days`.
pub fn duration(secs: i64) -> String {
    match secs.max(0) {
        s if s < 120 => format!("{s} s"),
        s if s < 7200 => format!("{} min", s / 60),
        s if s < 172_800 => format!("{} h", s / 3600),
        s => format!("{} days", s / 86_400),
    }
}

/// [`when`] of a time stored as text (the crawl's meta), or "never".
pub fn when_stored(stored: Option<&str>, now: i64) -> String {
    match stored.and_then(|s| s.trim().parse::<i64>().ok()) {
        Some(t) => when(t, now),
        None => "never".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_durations_and_times() {
        assert_eq!(size(0), "0 B");
        assert_eq!(size(1023), "1023 B");
        assert_eq!(size(2150), "2.1 KiB");
        assert_eq!(size(5 << 20), "5.0 MiB");
        assert_eq!(duration(90), "90 s");
        assert_eq!(duration(3 * 86_400), "3 days");
        assert_eq!(utc(0), "1970-01-01 00:00 UTC");
        assert_eq!(utc(951_782_400), "2000-02-29 00:00 UTC");
        assert_eq!(utc(1_700_000_000), "2023-11-14 22:13 UTC");
        assert_eq!(utc(-86_400), "1969-12-31 00:00 UTC");
        assert_eq!(
            when(1000, 1000 + 3 * 86_400),
            "1970-01-01 00:16 UTC (3 days ago)"
        );
        assert_eq!(when(1000 + 7200, 1000), "1970-01-01 02:16 UTC (in 2 h)");
        assert_eq!(when_stored(None, 0), "never");
    }
}
