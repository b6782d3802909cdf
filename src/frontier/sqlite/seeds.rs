//! Seeds: URLs given on the command line or from a file (due now, depth 0), and those visitors
//! suggest through `geode serve`, waiting for the next crawl.

use rusqlite::{params, TransactionBehavior};

use super::{Result, SqliteFrontier, Suggested, SuggestedSeed, MAX_WAITING_SEEDS};
use crate::frontier::Frontier;

impl SqliteFrontier {
    /// Records a seed someone suggested (`source`: `cli` or `serve`): the URL joins the frontier
    /// if unknown, and is due at once unless it is excluded or gone for good. At most
    /// [`MAX_WAITING_SEEDS`] suggestions wait for a crawl at a time.
    pub fn suggest_seed(
        &mut self,
        url: &str,
        host: &str,
        source: &str,
        now: i64,
    ) -> Result<Suggested> {
        let waiting: i64 = self.conn.query_row(
            "SELECT COUNT(*) FROM seeds s JOIN urls u ON u.url = s.url WHERE u.state = 'new'",
            [],
            |r| r.get(0),
        )?;
        let known_seed: bool = self.conn.query_row(
            "SELECT EXISTS (SELECT 1 FROM seeds WHERE url = ?1)",
            [url],
            |r| r.get(0),
        )?;
        if !known_seed && waiting as usize >= MAX_WAITING_SEEDS {
            return Ok(Suggested::QueueFull);
        }
        let added = self.add_seed(url, host, now)?;
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute(
            "INSERT OR IGNORE INTO seeds(url, added_at, source) VALUES (?1, ?2, ?3)",
            params![url, now, source],
        )?;
        tx.execute(
            "UPDATE urls SET due_at = ?2 WHERE url = ?1 AND due_at > ?2",
            params![url, now],
        )?;
        tx.execute(
            "UPDATE hosts SET next_due = ?2
             WHERE id = (SELECT host_id FROM urls WHERE url = ?1 AND due_at IS NOT NULL)
               AND (next_due IS NULL OR next_due > ?2)",
            params![url, now],
        )?;
        tx.commit()?;
        Ok(if added {
            Suggested::New
        } else if known_seed {
            Suggested::AlreadySuggested
        } else {
            Suggested::Known
        })
    }

    /// The seeds people suggested, newest first, with where each URL stands.
    pub fn suggested_seeds(&self) -> Result<Vec<SuggestedSeed>> {
        let mut stmt = self.conn.prepare(
            "SELECT s.url, s.added_at, s.source, u.state, u.in_index, u.fetched_at
             FROM seeds s LEFT JOIN urls u ON u.url = s.url
             ORDER BY s.added_at DESC, s.url",
        )?;
        let rows = stmt.query_map([], |r| {
            Ok(SuggestedSeed {
                url: r.get(0)?,
                added_at: r.get(1)?,
                source: r.get(2)?,
                state: r
                    .get::<_, Option<String>>(3)?
                    .unwrap_or_else(|| "new".into()),
                in_index: r.get::<_, Option<bool>>(4)?.unwrap_or(false),
                fetched_at: r.get(5)?,
            })
        })?;
        Ok(rows.collect::<std::result::Result<_, _>>()?)
    }
}
