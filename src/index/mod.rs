//! The Tantivy index: the schema, the one writer ([`Indexer`]) and the readers
//! ([`SearchIndex`]). This is the only module that touches Tantivy; the rest of the crate sees
//! [`PageDoc`], [`Hit`], [`SearchResults`] and [`IndexError`] only.
//!
//! One document per URL, upserted by URL. Every commit carries a payload: the crawl's commit
//! sequence number, which the frontier uses to learn which pages a commit holds after a crash.
//!
//! # Schema
//!
//! | field         | type | options                        | purpose                                         |
//! |---------------|------|--------------------------------|-------------------------------------------------|
//! | `url`         | text | `STRING \| STORED`             | raw, exact-match key for upsert and delete      |
//! | `url_text`    | text | `geode_text`, positions        | words of the URL after the scheme: `inurl:`     |
//! | `site`        | text | `STRING`, several values       | host, each parent domain, `host/~user`: `site:` |
//! | `host`        | text | `STRING \| STORED`             | capsule key (`host` or `host:port`)             |
//! | `host_hash`   | u64  | `FAST`                         | capsule, for result diversity                   |
//! | `url_hash`    | u64  | `FAST`                         | [`authority::url_hash`], to look up authority   |
//! | `title`       | text | `geode_text`, stored           | searched, boost 3; cleaned of decoration        |
//! | `body`        | text | `geode_text`, stored           | searched, boost 1; stored for snippets          |
//! | `headings`    | text | `geode_text`, stored           | searched, boost 2                               |
//! | `link_labels` | text | `geode_text`                   | labels of the page's own links, boost 0.5       |
//! | `anchors`     | text | `geode_text`                   | labels of links pointing here, boost 1.5        |
//! | `stem`        | text | pre-tokenized, freqs           | `xx:stem` of all the text, for the page's language |
//! | `mime`        | text | `STRING \| STORED`, 2 values   | `text/gemini` and `text`: `mime:` either form   |
//! | `ext`         | text | `STRING`                       | file name extension of the URL: `filetype:`     |
//! | `lang`        | text | `STRING \| STORED`             | primary language subtag, declared or detected   |
//! | `size`        | u64  | `INDEXED \| STORED \| FAST`    | body size in bytes: `size:`                     |
//! | `depth`       | u64  | `FAST`                         | path segments, for the home-page prior          |
//! | `fetched_at`  | i64  | `STORED \| FAST`               | fetch time, seconds since the Unix epoch        |
//!
//! Text fields index positions, so phrase queries work. How a query becomes a Tantivy query is
//! `compile`'s business; how results are ordered is `search`'s (see ARCHITECTURE.md, "Ranking").
//!
//! `geode_text` ([`analysis::text_analyzer`]) splits words, drops tokens over 40 bytes,
//! lowercases, folds accents to ASCII and cuts CJK runs into unigrams and bigrams. Stemming goes
//! to the separate `stem` field, whose tokens carry their language (`en:run`, `de:haus`), so a
//! query word is matched exactly in the text fields and by stem in every language at once.
//! Tokenizers are registered from `open_index` / `create_index` only (Tantivy does not persist
//! them). Changing the analysis changes the terms on disk: [`SCHEMA_VERSION`] goes up, and an
//! index of another version is refused with a message saying to crawl again.
//!
//! Not here: deciding what to index (the crawl and `content` do that) and which pages a commit
//! holds (the frontier does, from the sequence number).

use std::path::Path;

use tantivy::directory::MmapDirectory;
use tantivy::schema::{
    Field, IndexRecordOption, NumericOptions, Schema, TextFieldIndexing, TextOptions, STORED,
    STRING,
};
use tantivy::{Index, TantivyError};

pub mod analysis;
pub mod authority;
mod search;
pub mod snippet;
mod writer;

mod compile;

pub use authority::url_hash;
pub use search::{Hit, Ranking, ScoreParts, SearchIndex, SearchOptions, SearchResults};
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
    /// Labels of the links pointing to the page that the crawl knew when it indexed the page,
    /// one per line: what other capsules call it.
    pub anchors: String,
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
///
/// A variant that names its cause in its message does not also expose it as `source()`:
/// `anyhow`'s `{:#}` prints the whole chain, so a cause shown both ways is printed twice.
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
    /// A file or directory of the index that exists but cannot be read (permissions, above all).
    #[error("cannot read {0}: {1}")]
    Unreadable(std::path::PathBuf, std::io::Error),
    #[error("index I/O: {0}")]
    Io(std::io::Error),
    #[error("tantivy: {0}")]
    Tantivy(tantivy::TantivyError),
    /// A file of the index directory that geode writes itself (the authority file) is damaged.
    #[error("corrupt index file {0}")]
    Corrupt(String),
}

impl From<std::io::Error> for IndexError {
    fn from(e: std::io::Error) -> Self {
        IndexError::Io(e)
    }
}

impl From<TantivyError> for IndexError {
    fn from(e: TantivyError) -> Self {
        IndexError::Tantivy(e)
    }
}

/// Name under which the text analyzer of the searchable fields is registered.
pub(crate) const TEXT_TOKENIZER: &str = "geode_text";

/// Version of the schema and analysis, kept in the index directory (`geode-schema`). Bumped by
/// any change that alters the terms on disk, not just the field list.
pub(crate) const SCHEMA_VERSION: u32 = 3;

/// Handles to the schema's fields, resolved once.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Fields {
    pub url: Field,
    pub url_text: Field,
    pub site: Field,
    pub host: Field,
    pub host_hash: Field,
    pub url_hash: Field,
    pub title: Field,
    pub body: Field,
    pub headings: Field,
    pub link_labels: Field,
    pub anchors: Field,
    pub stem: Field,
    pub mime: Field,
    pub ext: Field,
    pub lang: Field,
    pub size: Field,
    pub depth: Field,
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
    // Stems need frequencies for BM25 but no positions: phrases are matched exactly.
    let stem = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer("raw")
            .set_index_option(IndexRecordOption::WithFreqs),
    );
    let fast_u64 = || NumericOptions::default().set_fast();

    let fields = Fields {
        url: b.add_text_field("url", STRING | STORED),
        url_text: b.add_text_field("url_text", text_unstored.clone()),
        site: b.add_text_field("site", STRING),
        host: b.add_text_field("host", STRING | STORED),
        host_hash: b.add_u64_field("host_hash", fast_u64()),
        url_hash: b.add_u64_field("url_hash", fast_u64()),
        title: b.add_text_field("title", text_stored.clone()),
        body: b.add_text_field("body", text_stored.clone()),
        headings: b.add_text_field("headings", text_stored),
        link_labels: b.add_text_field("link_labels", text_unstored.clone()),
        anchors: b.add_text_field("anchors", text_unstored),
        stem: b.add_text_field("stem", stem),
        mime: b.add_text_field("mime", STRING | STORED),
        ext: b.add_text_field("ext", STRING),
        lang: b.add_text_field("lang", STRING | STORED),
        size: b.add_u64_field(
            "size",
            NumericOptions::default()
                .set_indexed()
                .set_stored()
                .set_fast(),
        ),
        depth: b.add_u64_field("depth", fast_u64()),
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
    index
        .tokenizers()
        .register(TEXT_TOKENIZER, analysis::text_analyzer());
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
    // An index written by another geode version would fail later with confusing field errors
    // or, worse, silently match nothing (same fields, other terms); say it plainly instead.
    let version = read_schema_version(dir)?;
    if index.schema() != schema || version != SCHEMA_VERSION {
        return Err(IndexError::Tantivy(TantivyError::SchemaError(format!(
            "the index at {} was built by another version of geode (schema {version}, this \
             geode reads schema {SCHEMA_VERSION}); delete that directory and crawl again",
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
    std::fs::write(dir.join(SCHEMA_VERSION_FILE), format!("{SCHEMA_VERSION}\n"))?;
    register_tokenizers(&index);
    Ok((index, fields))
}

/// File beside Tantivy's own, holding [`SCHEMA_VERSION`] of the index in its directory.
const SCHEMA_VERSION_FILE: &str = "geode-schema";

/// The schema version an index was written with; 1 (before the file existed) when absent.
fn read_schema_version(dir: &Path) -> Result<u32, IndexError> {
    match std::fs::read_to_string(dir.join(SCHEMA_VERSION_FILE)) {
        Ok(text) => Ok(text.trim().parse().unwrap_or(0)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(1),
        Err(e) => Err(e.into()),
    }
}

/// The longest prefix of `text` of at most `max` bytes that ends on a character boundary: how
/// the writer and the snippets bound the part of a long body they read.
pub(crate) fn prefix(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.get(..end).unwrap_or_default()
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
