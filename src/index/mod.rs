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
//! | `body`        | text | `geode_text`, stored           | searched, boost 1; stored for snippets, refresh |
//! | `headings`    | text | `geode_text`, stored           | searched, boost 2                               |
//! | `link_labels` | text | `geode_text`                   | labels of the page's own links, boost 0.5       |
//! | `anchors`     | text | `geode_text`                   | labels of links pointing here, boost 1.5        |
//! | `stem`        | text | `geode_stem`, freqs, 4 values  | `xx:stem` of the text's words that are not their own stem, in the page's language |
//! | `mime`        | text | `STRING \| STORED`, 2 values   | `text/gemini` and `text`: `mime:` either form   |
//! | `ext`         | text | `STRING`                       | file name extension of the URL: `filetype:`     |
//! | `lang`        | text | `STRING \| STORED`             | primary language subtag, declared or detected   |
//! | `size`        | u64  | `INDEXED \| STORED \| FAST`    | body size in bytes: `size:`                     |
//! | `depth`       | u64  | `FAST`                         | path segments, for the home-page prior          |
//! | `fetched_at`  | i64  | `STORED \| FAST`               | fetch time, seconds since the Unix epoch        |
//! | `simhash`     | u64  | `FAST`                         | [`neardup::page_fingerprint`]; absent: too short |
//! | `dup_band`    | text | `STRING`, 6 values             | the fingerprint's bands: near-duplicate lookup  |
//! | `cluster`     | u64  | `INDEXED \| FAST`              | cluster of near-duplicates (`similar:`, folding)|
//!
//! Text fields index positions, so phrase queries work. How a query becomes a Tantivy query is
//! `compile`'s business; how results are ordered is `search`'s (see ARCHITECTURE.md, "Ranking").
//!
//! `geode_text` ([`analysis::text_analyzer`]) splits words, drops tokens over 40 bytes,
//! lowercases, folds accents to ASCII and cuts CJK runs into unigrams and bigrams. Stemming goes
//! to the separate `stem` field, whose tokens carry their language (`en:run`, `de:haus`), so a
//! query word is matched exactly in the text fields and by stem in every language at once. A
//! word that is its own stem (`run`, `linux`: 78% of the English corpus's words) is left out of
//! `stem`, where it would repeat the text fields: a query finds it by stem there (`compile`).
//! Tokenizers are registered from `open_index` / `create_index` only (Tantivy does not persist
//! them). Changing the analysis changes the terms on disk: [`SCHEMA_VERSION`] goes up, and an
//! index of another version is refused ([`IndexError::OtherVersion`]): an older one is rebuilt
//! from the crawl archive by `geode reindex`, which a crawl runs by itself.
//!
//! Not here: deciding what to index (the crawl and `content` do that) and which pages a commit
//! holds (the frontier does, from the sequence number).

use std::path::Path;

use tantivy::schema::{
    Field, IndexRecordOption, NumericOptions, Schema, TextFieldIndexing, TextOptions, STORED,
    STRING,
};
use tantivy::{Index, TantivyError};

pub mod analysis;
pub mod authority;
pub mod neardup;
mod readonly;
mod search;
pub mod snippet;
mod spelling;
mod trim;
mod writer;

mod compile;

pub use authority::url_hash;
pub use search::{
    meaning_applies, Hit, Ranking, ScoreParts, SearchIndex, SearchOptions, SearchResults, FUSION,
};
pub use writer::{compact_or_warn, page_language, Indexer};

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

impl PageDoc {
    /// The bytes of text the document holds: what it costs in memory, but for a few hundred
    /// bytes of bookkeeping.
    pub fn text_bytes(&self) -> usize {
        self.url.len()
            + self.host.len()
            + self.title.len()
            + self.body.len()
            + self.headings.len()
            + self.link_labels.len()
            + self.anchors.len()
            + self.mime.len()
            + self.lang.as_ref().map_or(0, String::len)
    }
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
    /// The index was written by another geode: older (`geode reindex` rebuilds it from the
    /// archive) or newer.
    #[error("{}", outdated_message(.dir, *.found))]
    OtherVersion { dir: std::path::PathBuf, found: u32 },
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
/// Name under which the `stem` field's analyzer is registered.
pub(crate) const STEM_TOKENIZER: &str = "geode_stem";

/// Version of the schema and analysis, kept in the index directory (`geode-schema`). Bumped by
/// any change that alters the terms on disk, not just the field list.
pub const SCHEMA_VERSION: u32 = 7;

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
    pub simhash: Field,
    pub dup_band: Field,
    pub cluster: Field,
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
            .set_tokenizer(STEM_TOKENIZER)
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
        simhash: b.add_u64_field("simhash", fast_u64()),
        dup_band: b.add_text_field("dup_band", STRING),
        cluster: b.add_u64_field("cluster", fast_u64().set_indexed()),
    };
    (b.build(), fields)
}

/// Registers geode's analyzers on an index. Tantivy does not persist tokenizers, so this must
/// run on every `Index` value before it indexes or parses a query.
pub(crate) fn register_tokenizers(index: &Index) {
    index
        .tokenizers()
        .register(TEXT_TOKENIZER, analysis::text_analyzer());
    index
        .tokenizers()
        .register(STEM_TOKENIZER, analysis::stem_analyzer());
}

/// How an index directory is opened. Readers go through [`readonly::ReadOnlyDirectory`] and
/// write nothing, not even a lock file; the writer uses [`trim::TrimmedDirectory`] (Tantivy's
/// `MmapDirectory`, with what it maps kept out of resident memory).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Access {
    Read,
    Write,
}

/// Whether `path` exists: `Ok(false)` only for "not found". Any other failure (permission
/// denied above all) is an error naming the path, never taken for absence: `Path::exists`
/// would say `false` for a directory the user may not enter, and geode would then call a
/// perfectly good index missing.
fn present(path: &Path) -> Result<bool, IndexError> {
    match std::fs::metadata(path) {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(IndexError::Unreadable(path.to_path_buf(), e)),
    }
}

/// Opens the index in `dir` without taking any lock. `Ok(None)` when `dir` holds no index: it
/// does not exist, is empty, or holds a half-created index (see [`half_created`]). Does not
/// check the schema or register tokenizers: callers that only read metas need neither.
fn open_raw(dir: &Path, access: Access) -> Result<Option<Index>, IndexError> {
    if !present(dir)? || !present(&dir.join(META_FILE))? {
        return Ok(None);
    }
    let index = match access {
        Access::Read => {
            Index::open(readonly::ReadOnlyDirectory::open(dir).map_err(TantivyError::from)?)?
        }
        Access::Write => {
            Index::open(trim::TrimmedDirectory::open(dir).map_err(TantivyError::from)?)?
        }
    };
    if half_created(dir, &index)? {
        return Ok(None);
    }
    Ok(Some(index))
}

/// An index that a crawl began to create and never finished: Tantivy's `meta.json` is there
/// but geode's schema marker is not, and nothing was ever committed. Older geode versions
/// wrote the marker after Tantivy's files, so a crawl killed in between left exactly this;
/// it holds no data and counts as no index. (An index without the marker that does hold
/// commits was written by geode before the marker existed: schema 1, refused by
/// [`open_index`].)
fn half_created(dir: &Path, index: &Index) -> Result<bool, IndexError> {
    if present(&dir.join(SCHEMA_VERSION_FILE))? {
        return Ok(false);
    }
    let metas = index.load_metas()?;
    Ok(metas.segments.is_empty() && metas.payload.is_none())
}

/// Opens an existing index for use: checks that its schema is geode's and registers the
/// tokenizers. `Ok(None)` when there is no index in `dir` (nor a half-created one).
pub(crate) fn open_index(
    dir: &Path,
    access: Access,
) -> Result<Option<(Index, Fields)>, IndexError> {
    let Some(index) = open_raw(dir, access)? else {
        return Ok(None);
    };
    let (schema, fields) = build_schema();
    // An index written by another geode version would fail later with confusing field errors
    // or, worse, silently match nothing (same fields, other terms); say it plainly instead.
    let version = read_schema_version(dir)?;
    if index.schema() != schema || version != SCHEMA_VERSION {
        // A marker that says this version over another field list is an older index too.
        let found = if version == SCHEMA_VERSION {
            0
        } else {
            version
        };
        return Err(IndexError::OtherVersion {
            dir: dir.to_path_buf(),
            found,
        });
    }
    register_tokenizers(&index);
    Ok(Some((index, fields)))
}

/// Makes a new, empty index at `dir` in one step, so that a crash at any instant leaves either
/// no index or a whole one (schema marker included), never a directory that later reads as
/// another geode's.
///
/// The index is built in `.tantivy-new` beside `dir` (Tantivy's files, then the marker, each
/// synced), and renamed into place. An empty or half-created `dir` is removed first, as is a
/// `.tantivy-new` left by a crash. All of it happens under an exclusive `flock` on the parent
/// directory, so two crawls started at once on a fresh data directory cannot trip over each
/// other: the second finds the first one's index and opens it (and its writer lock then stops
/// it, as it stops any second crawl).
pub(crate) fn create_index(dir: &Path) -> Result<(Index, Fields), IndexError> {
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    let name = dir
        .file_name()
        .ok_or_else(|| IndexError::Io(std::io::Error::other("an index directory needs a name")))?;
    std::fs::create_dir_all(&parent)?;
    let _creating = DirLock::exclusive(&parent)?;
    // Another process may have finished creating it while this one waited for the lock.
    if let Some(found) = open_index(dir, Access::Write)? {
        return Ok(found);
    }
    if present(dir)? {
        if !only_index_files(dir)? {
            return Err(IndexError::Io(std::io::Error::other(format!(
                "{} holds files that are not part of a geode index; move it away and crawl again",
                dir.display()
            ))));
        }
        tracing::info!(
            "{} holds no complete index (a crawl stopped while creating it); starting afresh",
            dir.display()
        );
        std::fs::remove_dir_all(dir)?;
    }
    let staging = parent.join(format!(".{}-new", name.to_string_lossy()));
    if present(&staging)? {
        std::fs::remove_dir_all(&staging)?;
    }
    std::fs::create_dir(&staging)?;
    {
        let (schema, _) = build_schema();
        // Dropped before the rename: it is rooted at the staging path.
        let _index = Index::create_in_dir(&staging, schema)?;
    }
    let marker = staging.join(SCHEMA_VERSION_FILE);
    std::fs::write(&marker, format!("{SCHEMA_VERSION}\n"))?;
    std::fs::File::open(&marker)?.sync_all()?;
    sync_dir(&staging)?;
    std::fs::rename(&staging, dir)?;
    sync_dir(&parent)?;
    open_index(dir, Access::Write)?.ok_or_else(|| IndexError::Missing(dir.to_path_buf()))
}

/// Whether every entry of `dir` has the name of a file Tantivy or geode keeps in an index
/// directory: what may be removed as a half-created index without losing anyone's files.
fn only_index_files(dir: &Path) -> Result<bool, IndexError> {
    let entries = std::fs::read_dir(dir).map_err(|e| IndexError::Unreadable(dir.into(), e))?;
    for entry in entries {
        let name = entry?.file_name();
        let name = name.to_string_lossy();
        let segment_file = name.split_once('.').is_some_and(|(stem, _)| {
            stem.len() == 32 && stem.bytes().all(|b| b.is_ascii_hexdigit())
        });
        let ours = matches!(
            name.as_ref(),
            "meta.json" | ".managed.json" | SCHEMA_VERSION_FILE | authority::FILE_NAME
        ) || name.starts_with(".tantivy-")
            || name.starts_with(&format!(".{}", authority::FILE_NAME))
            || segment_file;
        if !ours {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Makes a directory's entries (a rename, a new file) durable. Where directories cannot be
/// opened as files this is skipped; where they can, a failing sync is a real error.
fn sync_dir(dir: &Path) -> Result<(), IndexError> {
    if let Ok(d) = std::fs::File::open(dir) {
        d.sync_all()?;
    }
    Ok(())
}

/// An exclusive `flock` on a directory, held while the value lives.
struct DirLock {
    _dir: std::fs::File,
}

impl DirLock {
    #[cfg(unix)]
    fn exclusive(dir: &Path) -> Result<DirLock, IndexError> {
        use std::os::fd::AsRawFd;
        let file = std::fs::File::open(dir).map_err(|e| IndexError::Unreadable(dir.into(), e))?;
        loop {
            // SAFETY: flock(2) on a descriptor we own; no memory is passed.
            if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } == 0 {
                return Ok(DirLock { _dir: file });
            }
            let error = std::io::Error::last_os_error();
            if error.kind() != std::io::ErrorKind::Interrupted {
                return Err(IndexError::Io(error));
            }
        }
    }

    #[cfg(not(unix))]
    fn exclusive(dir: &Path) -> Result<DirLock, IndexError> {
        let file = std::fs::File::open(dir).map_err(|e| IndexError::Unreadable(dir.into(), e))?;
        Ok(DirLock { _dir: file })
    }
}

/// Tantivy's file listing the segments of the last commit: an index exists once it does.
const META_FILE: &str = "meta.json";

/// File beside Tantivy's own, holding [`SCHEMA_VERSION`] of the index in its directory.
const SCHEMA_VERSION_FILE: &str = "geode-schema";

/// The schema version an index was written with; 1 (before the file existed) when absent.
/// What to say about an index of schema `found`.
fn outdated_message(dir: &Path, found: u32) -> String {
    let data = dir.parent().unwrap_or(dir).display();
    if found > SCHEMA_VERSION {
        format!(
            "the index at {} was built by a newer geode (schema {found}; this geode reads schema \
             {SCHEMA_VERSION}): upgrade geode",
            dir.display()
        )
    } else {
        format!(
            "the index at {} was built by an older geode (schema {found}; this geode reads schema \
             {SCHEMA_VERSION}): run `geode reindex --data {data}` to rebuild it from the crawl \
             archive (a crawl does it by itself); pages crawled before the archive existed are \
             fetched again by the next crawl",
            dir.display()
        )
    }
}

fn read_schema_version(dir: &Path) -> Result<u32, IndexError> {
    match std::fs::read_to_string(dir.join(SCHEMA_VERSION_FILE)) {
        Ok(text) => Ok(text.trim().parse().unwrap_or(0)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(1),
        Err(e) => Err(IndexError::Unreadable(dir.join(SCHEMA_VERSION_FILE), e)),
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
    let Some(index) = open_raw(dir, Access::Read)? else {
        return Ok(None);
    };
    let metas = index.load_metas()?;
    Ok(parse_payload(metas.payload.as_deref()))
}

/// A text/gemini page of example.org for tests.
#[cfg(test)]
pub(crate) fn test_page(url: &str, title: &str, body: &str) -> PageDoc {
    PageDoc {
        url: url.to_string(),
        host: "example.org".to_string(),
        title: title.to_string(),
        body: body.to_string(),
        mime: "text/gemini".to_string(),
        size: body.len() as u64,
        fetched_at: 1_700_000_000,
        ..PageDoc::default()
    }
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

    /// One page, committed, then found: the index at `dir` works.
    fn write_and_find(dir: &Path) {
        let mut ix = Indexer::open_or_create(dir).expect("open or create");
        ix.upsert(&PageDoc {
            url: "gemini://a.test/".into(),
            host: "a.test".into(),
            body: "kettle".into(),
            mime: "text/gemini".into(),
            ..PageDoc::default()
        })
        .expect("upsert");
        ix.commit(7).expect("commit");
        drop(ix);
        let found = SearchIndex::open(dir)
            .expect("open")
            .search("kettle", 10, 0);
        assert_eq!(found.expect("search").total, 1);
        assert_eq!(committed_seq(dir).expect("seq"), Some(7));
    }

    /// Issue 12, item 6: a crawl killed in the first milliseconds left an index directory that
    /// every later crawl refused as "built by another version of geode". Each state a crash
    /// could leave, by the old code or the new, reads as no index and is made afresh.
    #[test]
    fn a_half_created_index_reads_as_new_and_is_made_afresh() {
        type Setup = fn(&Path, &Path);
        let states: &[(&str, Setup)] = &[
            ("an empty directory", |dir, _| {
                std::fs::create_dir(dir).unwrap();
            }),
            ("Tantivy's files before meta.json", |dir, _| {
                std::fs::create_dir(dir).unwrap();
                std::fs::write(dir.join(".managed.json"), "[]").unwrap();
                std::fs::write(dir.join(".tantivy-writer.lock"), "").unwrap();
            }),
            ("meta.json without the schema marker", |dir, _| {
                std::fs::create_dir(dir).unwrap();
                let (schema, _) = build_schema();
                Index::create_in_dir(dir, schema).unwrap();
            }),
            ("the marker without meta.json", |dir, _| {
                std::fs::create_dir(dir).unwrap();
                std::fs::write(dir.join(SCHEMA_VERSION_FILE), "3\n").unwrap();
            }),
            ("a staging directory and no index", |_, staging| {
                std::fs::create_dir(staging).unwrap();
                std::fs::write(staging.join("meta.json"), "{").unwrap();
            }),
            ("a staging directory beside an empty one", |dir, staging| {
                std::fs::create_dir(dir).unwrap();
                std::fs::create_dir(staging).unwrap();
                let (schema, _) = build_schema();
                Index::create_in_dir(staging, schema).unwrap();
            }),
        ];
        for (what, setup) in states {
            let tmp = tempfile::tempdir().expect("tempdir");
            let dir = tmp.path().join("tantivy");
            let staging = tmp.path().join(".tantivy-new");
            setup(&dir, &staging);
            assert!(
                matches!(SearchIndex::open(&dir), Err(IndexError::Missing(_))),
                "{what}: readers see no index"
            );
            assert_eq!(committed_seq(&dir).expect("seq"), None, "{what}");
            write_and_find(&dir);
            assert!(!staging.exists(), "{what}: the staging directory is gone");
            let marker = std::fs::read_to_string(dir.join(SCHEMA_VERSION_FILE)).unwrap();
            assert_eq!(marker.trim(), SCHEMA_VERSION.to_string(), "{what}");
        }
    }

    #[test]
    fn what_is_not_half_created_is_left_alone() {
        let tmp = tempfile::tempdir().expect("tempdir");
        // An index with commits but no marker: geode's schema 1, refused as before.
        let old = tmp.path().join("old");
        std::fs::create_dir(&old).unwrap();
        {
            let (schema, fields) = build_schema();
            let index = Index::create_in_dir(&old, schema).unwrap();
            register_tokenizers(&index);
            let mut writer: tantivy::IndexWriter = index.writer(15_000_000).unwrap();
            writer
                .add_document(tantivy::doc!(fields.url => "gemini://a.test/"))
                .unwrap();
            writer.commit().unwrap();
        }
        for result in [
            Indexer::open_or_create(&old).map(|_| ()),
            SearchIndex::open(&old).map(|_| ()),
        ] {
            let message = result.expect_err("schema 1").to_string();
            assert!(message.contains("built by an older geode"), "{message}");
            assert!(message.contains("geode reindex"), "{message}");
        }
        assert!(old.join("meta.json").exists(), "nothing was deleted");
        // A directory holding someone's files is never taken for a half-created index.
        let foreign = tmp.path().join("foreign");
        std::fs::create_dir(&foreign).unwrap();
        std::fs::write(foreign.join("notes.txt"), "mine").unwrap();
        let message = Indexer::open_or_create(&foreign)
            .map(|_| ())
            .expect_err("foreign files")
            .to_string();
        assert!(message.contains("not part of a geode index"), "{message}");
        assert_eq!(std::fs::read(foreign.join("notes.txt")).unwrap(), b"mine");
    }

    #[test]
    fn analyzer_lowercases_and_folds_accents() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let (index, _) = create_index(&tmp.path().join("index")).expect("create");
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
