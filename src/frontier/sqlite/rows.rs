//! Reading SQLite columns into the frontier's values: status codes and counts, read
//! defensively (a value out of range is clamped, never an error).

/// Column `i` as a status code, clamped to 0..=99 (NULL: none).
pub(super) fn status_at(row: &rusqlite::Row<'_>, i: usize) -> rusqlite::Result<Option<u8>> {
    Ok(row.get::<_, Option<i64>>(i)?.map(|s| s.clamp(0, 99) as u8))
}

/// Column `i` as a count or size; a negative number (never written, but read defensively)
/// is 0.
pub(super) fn count_at(row: &rusqlite::Row<'_>, i: usize) -> rusqlite::Result<u64> {
    Ok(row.get::<_, i64>(i)?.max(0) as u64)
}

/// [`count_at`] for a column that may be NULL.
pub(super) fn maybe_count_at(row: &rusqlite::Row<'_>, i: usize) -> rusqlite::Result<Option<u64>> {
    Ok(row.get::<_, Option<i64>>(i)?.map(|n| n.max(0) as u64))
}

/// Column `i` as text borrowed from the row, without a copy (bulk reads of every URL).
pub(super) fn str_at<'r>(row: &'r rusqlite::Row<'_>, i: usize) -> rusqlite::Result<&'r str> {
    Ok(row.get_ref(i)?.as_str()?)
}

/// [`str_at`] for a column that may be NULL.
pub(super) fn maybe_str_at<'r>(
    row: &'r rusqlite::Row<'_>,
    i: usize,
) -> rusqlite::Result<Option<&'r str>> {
    Ok(row.get_ref(i)?.as_str_or_null()?)
}
