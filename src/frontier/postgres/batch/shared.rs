//! The last statement of a [`PgBatch`]: what it gathered for the rows every crawler shares
//! (news of capsules for their owners, anchor updates, bodies no longer needed, holds on
//! addresses), written in one statement, and the COMMIT. Anchor updates are written in turn
//! with other crawlers' ([`SHARED_ROWS_LOCK`]), so that two batches each forgetting what the
//! other marks do not wait for each other.
//!
//! The lock, the statement and the COMMIT travel to the database in one message when every
//! value of the statement can be written as a literal (numbers, and text of a safe alphabet:
//! content hashes, addresses), which is always so for what geode stores. That saves two round
//! trips a batch, and the lock is held only while the database runs them, not for the round
//! trips in between: a crawler on another machine (2 ms a round trip) held it for two. The
//! statement goes as an `EXECUTE` of one prepared by name on the connection (its `PREPARE` in
//! the first message that needs it), so that it is not parsed and planned every time.
//! Otherwise they go as before, one prepared statement at a time.

use super::{PgBatch, BEGIN, BODY_GRACE_SECS};
use crate::frontier::postgres::{Result, DB_NOW, DB_NOW_MS, SHARED_ROWS_LOCK};

/// What a batch writes to the shared rows, taken out of it for its last statement.
#[derive(Clone)]
struct SharedRows {
    hosts: Vec<i64>,
    dues: Vec<Option<i64>>,
    added: Vec<i64>,
    mark: Vec<i64>,
    unmark: Vec<i64>,
    forget: Vec<String>,
    ips: Vec<String>,
    waits: Vec<i64>,
}

impl SharedRows {
    /// Whether the statement changes anchor updates, and so takes [`SHARED_ROWS_LOCK`].
    fn locks(&self) -> bool {
        !self.mark.is_empty() || !self.unmark.is_empty()
    }

    /// The statement, its values written by `arg` (each a typed SQL expression): `$n`
    /// placeholders, or literals. It appends the news of capsules, marks and forgets anchor
    /// updates (in key order), deletes the bodies no longer needed (only those nothing refers
    /// to and not stored again lately: a crawler may be about to commit a response that needs
    /// one), and holds addresses (an address's next request time only moves later, on the
    /// database's clock). A part whose `keep` is false is left out: it would change nothing,
    /// and a statement written anew each batch is planned each time, its parts with it.
    fn sql(arg: [&str; 9], keep: [bool; 5]) -> String {
        let [hosts, dues, added, mark, unmark, forget, grace, ips, waits] = arg;
        let parts = [
            format!(
                "news AS (
                 INSERT INTO host_news(host_id, due, added)
                 SELECT * FROM unnest({hosts}, {dues}, {added}))"
            ),
            format!("unmarked AS (DELETE FROM anchor_updates WHERE url_id = ANY({unmark}))"),
            format!(
                "marked AS (
                 INSERT INTO anchor_updates(url_id) SELECT unnest({mark}) ORDER BY 1
                 ON CONFLICT (url_id) DO UPDATE SET seq = anchor_updates.seq + 1)"
            ),
            format!(
                "unused AS (
                 DELETE FROM bodies b WHERE b.hash = ANY({forget})
                   AND b.stored_at < {DB_NOW} - {grace}
                   AND NOT EXISTS (SELECT 1 FROM responses WHERE body_hash = b.hash)
                   AND NOT EXISTS (SELECT 1 FROM urls WHERE content_hash = b.hash))"
            ),
            format!(
                "held AS (
                 UPDATE addresses a
                 SET next_at_ms = GREATEST(COALESCE(a.next_at_ms, 0), {DB_NOW_MS} + w.ms)
                 FROM unnest({ips}, {waits}) AS w(ip, ms) WHERE a.ip = w.ip)"
            ),
        ];
        let kept: Vec<&str> = parts
            .iter()
            .zip(keep)
            .filter(|(_, keep)| *keep)
            .map(|(part, _)| part.as_str())
            .collect();
        if kept.is_empty() {
            return "SELECT 1".to_string();
        }
        format!("WITH {} SELECT 1", kept.join(",\n             "))
    }

    /// Which parts of [`SharedRows::sql`] have rows to write.
    fn parts(&self) -> [bool; 5] {
        [
            !self.hosts.is_empty(),
            !self.unmark.is_empty(),
            !self.mark.is_empty(),
            !self.forget.is_empty(),
            !self.ips.is_empty(),
        ]
    }

    /// The statement with its values as placeholders, bound to parameters in the order of
    /// [`SharedRows::sql`]'s arguments, the parts of `keep` only.
    fn placeholder_sql(keep: [bool; 5]) -> String {
        Self::sql(
            [
                "$1::BIGINT[]",
                "$2::BIGINT[]",
                "$3::BIGINT[]",
                "$4::BIGINT[]",
                "$5::BIGINT[]",
                "$6::TEXT[]",
                "$7::BIGINT",
                "$8::TEXT[]",
                "$9::BIGINT[]",
            ],
            keep,
        )
    }

    /// The statement with every part kept, so that each parameter is used.
    fn prepared_sql() -> String {
        Self::placeholder_sql([true; 5])
    }

    /// The statement's values as literals, in the order of its parameters, or `None` when a
    /// text value holds a character outside [`safe_text`]'s alphabet.
    fn literals(&self) -> Option<[String; 9]> {
        let some = |v: &[i64]| v.iter().copied().map(Some).collect::<Vec<_>>();
        Some([
            int_array(&some(&self.hosts)),
            int_array(&self.dues),
            int_array(&some(&self.added)),
            int_array(&some(&self.mark)),
            int_array(&some(&self.unmark)),
            text_array(&self.forget)?,
            format!("{BODY_GRACE_SECS}::BIGINT"),
            text_array(&self.ips)?,
            int_array(&some(&self.waits)),
        ])
    }

    /// The name under which the statement of these parts is prepared on a connection.
    fn key(&self) -> String {
        let mask = self
            .parts()
            .iter()
            .enumerate()
            .fold(0u8, |mask, (i, &keep)| mask | (u8::from(keep) << i));
        format!("shared_rows_{mask}")
    }
}

/// The SQL types of [`SharedRows::sql`]'s parameters.
const PARAMETER_TYPES: [&str; 9] = [
    "BIGINT[]", "BIGINT[]", "BIGINT[]", "BIGINT[]", "BIGINT[]", "TEXT[]", "BIGINT", "TEXT[]",
    "BIGINT[]",
];

/// A `BIGINT[]` literal.
fn int_array(values: &[Option<i64>]) -> String {
    let items: Vec<String> = values
        .iter()
        .map(|v| v.map_or_else(|| "NULL".to_string(), |v| v.to_string()))
        .collect();
    format!("'{{{}}}'::BIGINT[]", items.join(","))
}

/// A `TEXT[]` literal, when every value is [`safe_text`].
fn text_array(values: &[String]) -> Option<String> {
    if !values.iter().all(|v| safe_text(v)) {
        return None;
    }
    let items: Vec<String> = values.iter().map(|v| format!("\"{v}\"")).collect();
    Some(format!("'{{{}}}'::TEXT[]", items.join(",")))
}

/// Text that reads the same inside a quoted array element inside a string literal, whatever
/// the server's `standard_conforming_strings`: non-empty, letters, digits and `.:-_` (hex
/// content hashes, IPv4 and IPv6 addresses, capsule names). No quote, backslash, brace,
/// comma or space can end the element or the literal.
fn safe_text(text: &str) -> bool {
    !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b':' | b'-' | b'_'))
}

impl PgBatch<'_> {
    /// Takes what the batch gathered for the shared rows, `None` when nothing.
    fn take_shared(&mut self) -> Option<SharedRows> {
        if self.kept.news.is_empty()
            && self.kept.anchors.is_empty()
            && self.kept.forget.is_empty()
            && self.kept.holds.is_empty()
        {
            return None;
        }
        let mut rows = SharedRows {
            hosts: Vec::new(),
            dues: Vec::new(),
            added: Vec::new(),
            mark: Vec::new(),
            unmark: Vec::new(),
            forget: std::mem::take(&mut self.kept.forget).into_iter().collect(),
            ips: Vec::new(),
            waits: Vec::new(),
        };
        // Sorted: the same rows make the same statement.
        let mut news: Vec<_> = std::mem::take(&mut self.kept.news).into_iter().collect();
        news.sort_unstable_by_key(|(host, _)| *host);
        for (host, news) in news {
            rows.hosts.push(host);
            rows.dues.push(news.due);
            rows.added.push(news.added);
        }
        for (id, on) in std::mem::take(&mut self.kept.anchors) {
            if on {
                rows.mark.push(id);
            } else {
                rows.unmark.push(id);
            }
        }
        let mut holds: Vec<_> = std::mem::take(&mut self.kept.holds).into_iter().collect();
        holds.sort_unstable();
        (rows.ips, rows.waits) = holds.into_iter().unzip();
        Some(rows)
    }

    /// Writes the shared rows (after whatever the batch still keeps: the caller flushed it)
    /// and commits: in one message to the database when it can, else statement by statement.
    pub(super) fn write_shared_and_commit(&mut self) -> Result<()> {
        let rows = self.take_shared();
        if let Some((rows, literals)) = rows
            .as_ref()
            .and_then(|rows| Some((rows, rows.literals()?)))
        {
            let lock = if rows.locks() {
                format!("SELECT pg_advisory_xact_lock({SHARED_ROWS_LOCK});\n")
            } else {
                String::new()
            };
            let begin = if self.kept.begun {
                String::new()
            } else {
                format!("{BEGIN};\n")
            };
            // Begun from here on: a failure below leaves a transaction to roll back.
            self.kept.begun = true;
            let conns = self.conns()?;
            let args: Vec<&str> = literals.iter().map(String::as_str).collect();
            let run = conns.statements.named(
                &rows.key(),
                &PARAMETER_TYPES,
                &SharedRows::placeholder_sql(rows.parts()),
                &args,
            );
            let message = format!("{begin}{lock}{}COMMIT", run.text);
            let sent = conns.conn.batch_execute(&message);
            conns.statements.ran(run, sent.is_ok());
            sent?;
            self.kept.begun = false;
            return Ok(());
        }
        if let Some(rows) = rows {
            if rows.locks() {
                self.exec_now("SELECT pg_advisory_xact_lock($1)", &[&SHARED_ROWS_LOCK])?;
            }
            self.exec_now(
                &SharedRows::prepared_sql(),
                &[
                    &rows.hosts,
                    &rows.dues,
                    &rows.added,
                    &rows.mark,
                    &rows.unmark,
                    &rows.forget,
                    &BODY_GRACE_SECS,
                    &rows.ips,
                    &rows.waits,
                ],
            )?;
        }
        if self.kept.begun {
            self.conns()?.conn.batch_execute("COMMIT")?;
            self.kept.begun = false;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_hold_numbers_nulls_and_safe_text_only() {
        assert_eq!(
            int_array(&[Some(1), None, Some(-3)]),
            "'{1,NULL,-3}'::BIGINT[]"
        );
        assert_eq!(int_array(&[]), "'{}'::BIGINT[]");
        assert_eq!(
            text_array(&["ab12".into(), "::1".into(), "127.0.1.5".into()]).as_deref(),
            Some("'{\"ab12\",\"::1\",\"127.0.1.5\"}'::TEXT[]")
        );
        for unsafe_text in ["a'b", "a\"b", "a\\b", "a,b", "a}b", "a b", "", "é"] {
            assert_eq!(
                text_array(&[unsafe_text.to_string()]),
                None,
                "{unsafe_text:?}"
            );
        }
    }

    #[test]
    fn a_statement_with_unsafe_text_is_not_written_as_literals() {
        let rows = |ip: &str| SharedRows {
            hosts: vec![7],
            dues: vec![None],
            added: vec![2],
            mark: vec![],
            unmark: vec![5],
            forget: vec!["00ff".into()],
            ips: vec![ip.into()],
            waits: vec![1000],
        };
        let literals = rows("127.0.1.5").literals().unwrap();
        assert_eq!(literals[0], "'{7}'::BIGINT[]");
        assert_eq!(literals[1], "'{NULL}'::BIGINT[]");
        assert_eq!(literals[4], "'{5}'::BIGINT[]");
        assert_eq!(literals[7], "'{\"127.0.1.5\"}'::TEXT[]");
        assert!(rows("x'); DROP TABLE urls; --").literals().is_none());
        assert!(rows("127.0.1.5").locks());
    }

    #[test]
    fn a_statement_leaves_out_the_parts_without_rows() {
        let hold_only = SharedRows {
            hosts: vec![],
            dues: vec![],
            added: vec![],
            mark: vec![],
            unmark: vec![],
            forget: vec![],
            ips: vec!["127.0.1.5".into()],
            waits: vec![250],
        };
        let sql = SharedRows::placeholder_sql(hold_only.parts());
        assert!(sql.starts_with("WITH held AS ("), "{sql}");
        for left_out in ["host_news", "anchor_updates", "bodies"] {
            assert!(!sql.contains(left_out), "{left_out} in {sql}");
        }
        // Each set of parts is its own statement on the connection.
        let mut all = hold_only.clone();
        all.hosts = vec![1];
        assert_ne!(hold_only.key(), all.key());
        assert!(!hold_only.locks());
        // The prepared statement keeps every part: each of its parameters is used.
        let prepared = SharedRows::prepared_sql();
        for n in 1..=9 {
            assert!(prepared.contains(&format!("${n}::")), "${n} in {prepared}");
        }
    }
}
