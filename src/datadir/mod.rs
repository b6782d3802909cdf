//! The layout of a data directory (`--data`, default `./index`), in one place for the crawl,
//! `geode serve` and every command: what each file and directory is, and where it lives.
//!
//! | path | what |
//! |---|---|
//! | `crawl.sqlite` | the crawl database: URLs, schedule, links, archive ([`crate::frontier`]) |
//! | `tantivy/` | the search index ([`crate::index`]), with `authority.bin` beside Tantivy's files |
//! | `tantivy.reindex/` | an index being rebuilt by `geode reindex` ([`crate::reindex`]) |
//! | `crawl.lock` | held by the one crawl (or reindex) at work here ([`lock`]) |
//! | `serve/` | `geode serve`'s self-signed certificate and key |
//! | `model/` | optional: the sentence-embedding model used when no `--model` is given |
//! | `vectors/` | the pages' embedding vectors, a pair of files per model ([`crate::embed`]) |
//!
//! Paths only: nothing here opens or creates anything, but the lock ([`lock`]) that one crawl or
//! reindex at a time holds on the directory.

pub mod lock;

use std::path::{Path, PathBuf};

/// The crawl database.
pub fn database_path(data_dir: &Path) -> PathBuf {
    data_dir.join("crawl.sqlite")
}

/// The Tantivy index.
pub fn index_path(data_dir: &Path) -> PathBuf {
    data_dir.join("tantivy")
}

/// Where `geode reindex` builds a new index before swapping it in.
pub fn reindex_path(data_dir: &Path) -> PathBuf {
    data_dir.join("tantivy.reindex")
}

/// The lock file of the crawl (or reindex) at work on the directory.
pub fn lock_path(data_dir: &Path) -> PathBuf {
    data_dir.join("crawl.lock")
}

/// `geode serve`'s own files (its certificate).
pub fn serve_path(data_dir: &Path) -> PathBuf {
    data_dir.join("serve")
}

/// The embedding model used when no `--model` is given, if the operator put one there.
pub fn model_path(data_dir: &Path) -> PathBuf {
    data_dir.join("model")
}

/// The pages' embedding vectors (`geode embed`), one pair of files per model.
pub fn vectors_path(data_dir: &Path) -> PathBuf {
    data_dir.join("vectors")
}
