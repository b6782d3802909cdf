//! The wall clock, in the unit geode stores times in: whole seconds since the Unix epoch. The
//! one place that reads it for timestamps; the revisit schedule and the frontier take times as
//! arguments, so they can be tested on a simulated clock.

use std::time::{SystemTime, UNIX_EPOCH};

/// Seconds since the Unix epoch (0 if the clock is set before it).
pub fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}
