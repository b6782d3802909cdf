//! The links a page holds, packed into one value of the `outlinks` table.
//!
//! The link graph is kept once per link, keyed by target (`links`): that is what backlinks,
//! anchors and their updates look up. A page's own links are needed only when it is visited
//! again (to tell which links it dropped), removed or shown, so they are one row per page
//! rather than a second B-tree entry per link. A crawl inserting 15 links a page paid for two
//! random B-tree inserts per link before.
//!
//! The format: for each (target, label), sorted and distinct, the target's distance from the
//! one before (the first from 0) as a LEB128 varint, the label's length in bytes as a varint,
//! then the label's UTF-8. [`encode`] and [`decode`] are pure; [`read`] and [`write`] are the
//! two statements on the table.

use rusqlite::{types::Type, Connection, OptionalExtension};

use super::Result;

/// The links `source` holds, (target, label) sorted; none when it has no row.
pub(super) fn read(conn: &Connection, source: i64) -> Result<Vec<(i64, String)>> {
    let packed: Option<Vec<u8>> = conn
        .prepare_cached("SELECT links FROM outlinks WHERE source = ?1")?
        .query_row([source], |r| r.get(0))
        .optional()?;
    match packed {
        None => Ok(Vec::new()),
        Some(bytes) => Ok(unpack(source, &bytes)?
            .into_iter()
            .map(|(target, label)| (target, label.to_string()))
            .collect()),
    }
}

/// [`decode`], a value it refuses being an error that names the page.
pub(super) fn unpack(source: i64, bytes: &[u8]) -> Result<Vec<(i64, &str)>> {
    decode(bytes).ok_or_else(|| {
        let why = format!("the links of URL {source} in `outlinks` are damaged");
        rusqlite::Error::FromSqlConversionFailure(1, Type::Blob, why.into()).into()
    })
}

/// Records that `source` now holds `links` (sorted by (target, label), distinct); an empty list
/// removes its row.
pub(super) fn write<'a>(
    conn: &Connection,
    source: i64,
    links: impl ExactSizeIterator<Item = (i64, &'a str)>,
) -> Result<()> {
    if links.len() == 0 {
        conn.prepare_cached("DELETE FROM outlinks WHERE source = ?1")?
            .execute([source])?;
    } else {
        conn.prepare_cached("INSERT OR REPLACE INTO outlinks(source, links) VALUES (?1, ?2)")?
            .execute(rusqlite::params![source, encode(links)])?;
    }
    Ok(())
}

/// Packs links that are sorted by (target, label) and distinct; an iterator over a
/// `BTreeSet<(i64, &str)>` gives exactly that.
pub(super) fn encode<'a>(links: impl IntoIterator<Item = (i64, &'a str)>) -> Vec<u8> {
    let mut out = Vec::new();
    let mut previous = 0i64;
    for (target, label) in links {
        debug_assert!(target >= previous, "links must come sorted by target");
        push_varint(&mut out, target.wrapping_sub(previous) as u64);
        push_varint(&mut out, label.len() as u64);
        out.extend_from_slice(label.as_bytes());
        previous = target;
    }
    out
}

/// Unpacks what [`encode`] made, the labels borrowed from `bytes` (the link graph reads every
/// page's links and needs none of them). `None` for a value it cannot have made (truncated, a
/// length past the end, a label that is not UTF-8): the caller reports the row as corrupt.
pub(super) fn decode(bytes: &[u8]) -> Option<Vec<(i64, &str)>> {
    let mut links = Vec::new();
    let mut rest = bytes;
    let mut target = 0i64;
    while !rest.is_empty() {
        let delta = take_varint(&mut rest)?;
        target = target.checked_add(i64::try_from(delta).ok()?)?;
        let len = usize::try_from(take_varint(&mut rest)?).ok()?;
        if len > rest.len() {
            return None;
        }
        let (label, after) = rest.split_at(len);
        links.push((target, std::str::from_utf8(label).ok()?));
        rest = after;
    }
    Some(links)
}

fn push_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

fn take_varint(bytes: &mut &[u8]) -> Option<u64> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let (&byte, rest) = bytes.split_first()?;
        *bytes = rest;
        value |= u64::from(byte & 0x7f).checked_shl(shift)?;
        if byte & 0x80 == 0 {
            return Some(value);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn links_round_trip_sorted_with_labels_of_any_length() {
        let long = "é".repeat(300);
        let set: BTreeSet<(i64, &str)> = [
            (3, ""),
            (3, "three"),
            (200, long.as_str()),
            (1 << 40, "far"),
            (i64::MAX, "last"),
        ]
        .into_iter()
        .collect();
        let packed = encode(set.iter().copied());
        let back = decode(&packed).expect("decodes");
        let expected: Vec<(i64, &str)> = set.iter().copied().collect();
        assert_eq!(back, expected);
        // Small targets and short labels cost a few bytes each.
        assert_eq!(encode([(5, "ab"), (6, "")]), vec![5, 2, b'a', b'b', 1, 0]);
        assert_eq!(decode(&[]), Some(Vec::new()));
    }

    #[test]
    fn damaged_values_are_refused_not_misread() {
        let packed = encode([(1, "label"), (2, "other")]);
        for cut in 1..packed.len() {
            let prefix = &packed[..cut];
            // A cut that falls between two whole links is a shorter, valid list.
            if let Some(links) = decode(prefix) {
                assert_eq!(links, vec![(1, "label")], "cut at {cut}");
            }
        }
        assert_eq!(decode(&[1, 2, 0xff, 0xfe]), None, "not UTF-8");
        assert_eq!(decode(&[0x80; 11]), None, "varint longer than 64 bits");
        assert_eq!(decode(&[1, 9, b'a']), None, "length past the end");
    }
}
