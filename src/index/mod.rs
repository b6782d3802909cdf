//! The Tantivy index: the schema, the one writer ([`Indexer`]) and the readers
//! ([`SearchIndex`]). This is the only module that touches Tantivy; the rest of the crate sees
//! [`PageDoc`], [`Hit`], [`SearchResults`] and [`IndexError`] only.
//!
//! One document per URL, upserted by URL. Every commit carries a payload: the crawl's commit
//! sequence number, which the frontier uses to learn which pages a commit holds after a crash.
//!
//! # Schema
//!
//! | field         | type | options                       | purpose                                    |
//! |---------------|------|-------------------------------|--------------------------------------------|
//! | `url`         | text | `STRING \| STORED`            | raw, exact-match key for upsert and delete |
//! | `host`        | text | `STRING \| STORED`            | capsule key (`host` or `host:port`)        |
//! | `title`       | text | `geode_text`, stored          | searched, boost 3                          |
//! | `body`        | text | `geode_text`, stored          | searched, boost 1; stored for snippets     |
//! | `headings`    | text | `geode_text`, stored          | searched, boost 2                          |
//! | `link_labels` | text | `geode_text`                  | searched, boost 1.5; not stored            |
//! | `mime`        | text | `STRING \| STORED`            | MIME type without parameters               |
//! | `lang`        | text | `STRING \| STORED`            | absent when the server named no language   |
//! | `size`        | u64  | `INDEXED \| STORED \| FAST`   | body size in bytes                         |
//! | `fetched_at`  | i64  | `STORED \| FAST`              | fetch time, seconds since the Unix epoch   |
//!
//! Text fields index positions, so phrase queries work. Every text field is searched with
//! all query terms required by default (see [`SearchIndex::search`]).
//!
//! `geode_text` splits on non-alphanumeric characters, drops tokens over 40 bytes, lowercases and
//! folds accents to ASCII (`Café` and `cafe` are the same term). It is defined in
//! `register_tokenizers` and registered from `open_index` / `create_index` only (Tantivy does
//! not persist tokenizers, so every opened `Index` needs it), so a change of analysis (stemming,
//! CJK) happens in one place. Changing it changes the terms on disk: old indexes must be rebuilt.
//!
//! Not here: deciding what to index (the crawl and `content` do that) and which pages a commit
//! holds (the frontier does, from the sequence number).

use std::path::Path;

use tantivy::directory::MmapDirectory;
use tantivy::schema::{
    Field, IndexRecordOption, NumericOptions, Schema, TextFieldIndexing, TextOptions, STORED,
    STRING,
};
use tantivy::tokenizer::{
    AsciiFoldingFilter, LowerCaser, RemoveLongFilter, SimpleTokenizer, TextAnalyzer,
};
use tantivy::{Index, TantivyError};

mod search;
mod writer;

pub use search::{Hit, SearchIndex, SearchResults};
pub use writer::Indexer;

/// A page as the index stores it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PageDoc {
    pub url: String,
    /// Capsule key: host, or host:port for a non-default port.
    pub host: String,
    pub title: String,
    pub body: String,
    /// Headings, one per line.
    pub headings: String,
    /// Labels of the links on the page, one per line.
    pub link_labels: String,
    /// MIME type without parameters, e.g. `text/gemini`.
    pub mime: String,
    /// First language tag, if the server named one.
    pub lang: Option<String>,
    /// Body size in bytes as fetched.
    pub size: u64,
    /// Fetch time, seconds since the Unix epoch.
    pub fetched_at: i64,
}

/// Errors of the index layer.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    /// The user's query could not be parsed (a usage error, exit 2).
    #[error("malformed query: {0}")]
    Query(String),
    #[error("no index at {0} (run `geode crawl` first)")]
    Missing(std::path::PathBuf),
    /// Another process (or another `Indexer` in this one) holds the index writer lock.
    #[error(
        "the index at {0} is locked by another writer: another crawl seems to be running on this \
         data directory"
    )]
    Locked(std::path::PathBuf),
    #[error("index I/O: {0}")]
    Io(#[from] std::io::Error),
    #[error("tantivy: {0}")]
    Tantivy(#[from] tantivy::TantivyError),
}

/// Name under which the text analyzer of the searchable fields is registered.
pub(crate) const TEXT_TOKENIZER: &str = "geode_text";

/// Tokens longer than this (in bytes) are dropped: they are base64 blobs, hashes or ASCII art,
/// never words anyone searches for, and they bloat the term dictionary.
const MAX_TOKEN_BYTES: usize = 40;

/// Handles to the schema's fields, resolved once.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Fields {
    pub url: Field,
    pub host: Field,
    pub title: Field,
    pub body: Field,
    pub headings: Field,
    pub link_labels: Field,
    pub mime: Field,
    pub lang: Field,
    pub size: Field,
    pub fetched_at: Field,
}

/// Builds the schema described in the module doc.
pub(crate) fn build_schema() -> (Schema, Fields) {
    let mut b = Schema::builder();
    let text_indexing = TextFieldIndexing::default()
        .set_tokenizer(TEXT_TOKENIZER)
        // Positions make phrase queries (`"gemini protocol"`) work.
        .set_index_option(IndexRecordOption::WithFreqsAndPositions);
    let text_stored = TextOptions::default()
        .set_indexing_options(text_indexing.clone())
        .set_stored();
    let text_unstored = TextOptions::default().set_indexing_options(text_indexing);

    let fields = Fields {
        url: b.add_text_field("url", STRING | STORED),
        host: b.add_text_field("host", STRING | STORED),
        title: b.add_text_field("title", text_stored.clone()),
        body: b.add_text_field("body", text_stored.clone()),
        headings: b.add_text_field("headings", text_stored),
        link_labels: b.add_text_field("link_labels", text_unstored),
        mime: b.add_text_field("mime", STRING | STORED),
        lang: b.add_text_field("lang", STRING | STORED),
        size: b.add_u64_field(
            "size",
            NumericOptions::default()
                .set_indexed()
                .set_stored()
                .set_fast(),
        ),
        fetched_at: b.add_i64_field(
            "fetched_at",
            NumericOptions::default().set_stored().set_fast(),
        ),
    };
    (b.build(), fields)
}

/// Registers geode's analyzers on an index. Tantivy does not persist tokenizers, so this must
/// run on every `Index` value before it indexes or parses a query.
pub(crate) fn register_tokenizers(index: &Index) {
    let analyzer = TextAnalyzer::builder(SimpleTokenizer::default())
        .filter(RemoveLongFilter::limit(MAX_TOKEN_BYTES))
        .filter(LowerCaser)
        .filter(AsciiFoldingFilter)
        .build();
    index.tokenizers().register(TEXT_TOKENIZER, analyzer);
}

/// Opens the index in `dir` without taking any lock. `Ok(None)` when `dir` does not exist or
/// holds no index (no `meta.json`). Does not check the schema or register tokenizers: callers
/// that only read metas need neither.
fn open_raw(dir: &Path) -> Result<Option<Index>, IndexError> {
    if !dir.is_dir() {
        return Ok(None);
    }
    let directory = MmapDirectory::open(dir).map_err(TantivyError::from)?;
    if !Index::exists(&directory).map_err(TantivyError::from)? {
        return Ok(None);
    }
    Ok(Some(Index::open(directory)?))
}

/// Opens an existing index for use: checks that its schema is geode's and registers the
/// tokenizers. `Ok(None)` when there is no index in `dir`.
pub(crate) fn open_index(dir: &Path) -> Result<Option<(Index, Fields)>, IndexError> {
    let Some(index) = open_raw(dir)? else {
        return Ok(None);
    };
    let (schema, fields) = build_schema();
    // An index written by an older geode with a different schema would fail later with
    // confusing field errors; say it plainly instead.
    if index.schema() != schema {
        return Err(IndexError::Tantivy(TantivyError::SchemaError(format!(
            "the index at {} was built with a different schema; delete it and crawl again",
            dir.display()
        ))));
    }
    register_tokenizers(&index);
    Ok(Some((index, fields)))
}

/// Creates a new, empty index in `dir` (which must exist and hold no index).
pub(crate) fn create_index(dir: &Path) -> Result<(Index, Fields), IndexError> {
    let (schema, fields) = build_schema();
    let index = Index::create_in_dir(dir, schema)?;
    register_tokenizers(&index);
    Ok((index, fields))
}

/// Parses a commit payload as written by [`Indexer::commit`].
pub(crate) fn parse_payload(payload: Option<&str>) -> Option<u64> {
    payload.and_then(|p| p.trim().parse::<u64>().ok())
}

/// Reads the commit sequence number stored with the last Tantivy commit, without taking the
/// writer lock. `None` when the index does not exist or was never committed by a crawl.
pub fn committed_seq(dir: &std::path::Path) -> Result<Option<u64>, IndexError> {
    let Some(index) = open_raw(dir)? else {
        return Ok(None);
    };
    let metas = index.load_metas()?;
    Ok(parse_payload(metas.payload.as_deref()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payload_parsing() {
        let cases: &[(Option<&str>, Option<u64>)] = &[
            (None, None),
            (Some(""), None),
            (Some("0"), Some(0)),
            (Some("42"), Some(42)),
            (Some(" 7\n"), Some(7)),
            (Some("-1"), None),
            (Some("seq=3"), None),
            (Some("18446744073709551615"), Some(u64::MAX)),
        ];
        for (payload, want) in cases {
            assert_eq!(parse_payload(*payload), *want, "payload {payload:?}");
        }
    }

    #[test]
    fn committed_seq_is_none_without_an_index() {
        let tmp = tempfile::tempdir().expect("tempdir");
        // Existing but empty directory.
        assert_eq!(committed_seq(tmp.path()).expect("empty dir"), None);
        // Directory that does not exist at all.
        let missing = tmp.path().join("nope");
        assert_eq!(committed_seq(&missing).expect("missing dir"), None);
    }

    #[test]
    fn committed_seq_is_none_before_the_first_commit() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let _indexer = Indexer::open_or_create(tmp.path()).expect("create");
        assert_eq!(committed_seq(tmp.path()).expect("read"), None);
    }

    #[test]
    fn analyzer_lowercases_and_folds_accents() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let (index, _) = create_index(tmp.path()).expect("create");
        let mut analyzer = index.tokenizers().get(TEXT_TOKENIZER).expect("registered");
        let cases: &[(&str, &[&str])] = &[
            ("Café au LAIT", &["cafe", "au", "lait"]),
            ("Привет, Мир!", &["привет", "мир"]),
            (
                "gemini://example.org/a_b",
                &["gemini", "example", "org", "a", "b"],
            ),
            ("naïve Ærø", &["naive", "aero"]),
            // A 41-byte blob is dropped; the word next to it is kept.
            ("word AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", &["word"]),
        ];
        for (text, want) in cases {
            let mut stream = analyzer.token_stream(text);
            let mut got = Vec::new();
            while let Some(token) = tantivy::tokenizer::TokenStream::next(&mut stream) {
                got.push(token.text.clone());
            }
            assert_eq!(&got, want, "tokens of {text:?}");
        }
    }
}
