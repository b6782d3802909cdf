//! `geode reindex`: rebuilds the Tantivy index from the archive and the crawl database, with no
//! network, for a new schema, a better analyser or a ranking fix.
//!
//! The new index is built in `DIR/tantivy.reindex` while the live one keeps answering searches
//! (and `geode serve`), then the two directories are exchanged in one atomic rename
//! (`renameat2(RENAME_EXCHANGE)`); readers notice the new directory and reopen it. The new index
//! commits with the live one's sequence number, so the frontier's bookkeeping of index commits
//! stays true. Link authority is computed again from the link graph in the crawl database, as a
//! crawl computes it. Pages the index held whose content was never archived (crawled before the archive
//! existed) cannot be rebuilt: they leave the frontier's picture of the index before the swap
//! and come due at once, so the next crawl fetches them.
//!
//! A crash at any point leaves the live index whole: a half-built `tantivy.reindex` is removed by
//! the next attempt, and after the exchange it only holds the old index, removed next.

use std::path::Path;
use std::time::Instant;

use crate::datadir::lock;
use crate::from_archive::{self, WriteError};
use crate::frontier;
use crate::index::Indexer;

/// What a rebuild did.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct ReindexSummary {
    /// Documents written.
    pub pages: u64,
    /// Pages the old index held with no archived content: due for the next crawl.
    pub missing: u64,
    /// Commits of the new index: one per `commit_docs` documents, and the last.
    pub commits: u64,
    pub elapsed_secs: f64,
}

/// Pages read from the frontier at a time.
const CHUNK: usize = 1000;

/// Documents the new index takes between two commits by default, as a crawl's `--commit-docs`.
/// Until a commit the writer holds every replaced URL (Tantivy's delete queue) and every page's
/// near-duplicate fingerprint bands: a rebuild of 495,000 pages in one commit grew to 840 MB.
pub const COMMIT_DOCS: usize = 20_000;

/// Rebuilds the index of `data_dir`, holding its crawl lock, committing the new index every
/// `commit_docs` documents (at least 1). `progress` hears the number of documents written so
/// far, every [`CHUNK`]. An error stops the rebuild, leaving the live index untouched.
pub fn reindex(
    data_dir: &Path,
    commit_docs: usize,
    progress: &mut dyn FnMut(u64),
) -> Result<ReindexSummary, WriteError> {
    let _lock = lock::DataDirLock::acquire(data_dir)?;
    reindex_locked(data_dir, commit_docs, progress)
}

/// [`reindex`] for a caller that already holds the data directory's lock (a crawl that found
/// its index outdated).
pub fn reindex_locked(
    data_dir: &Path,
    commit_docs: usize,
    progress: &mut dyn FnMut(u64),
) -> Result<ReindexSummary, WriteError> {
    let commit_docs = commit_docs.max(1) as u64;
    let started = Instant::now();
    let live = crate::datadir::index_path(data_dir);
    let building = crate::datadir::reindex_path(data_dir);
    remove_dir(&building)?;
    let now = crate::clock::unix_now();
    let mut frontier = frontier::Location::data_dir(data_dir).open()?;
    // The payload of the live index's last commit, whatever its schema: what a crash left in
    // flight is settled first, so the frontier says exactly which pages the index holds.
    let committed = crate::index::committed_seq(&live)?.unwrap_or(0);
    frontier.recover(committed, now)?;

    let mut indexer = Indexer::open_or_create(&building)?;
    let mut summary = ReindexSummary::default();
    let mut missing = Vec::new();
    let mut after = 0;
    loop {
        let pages = frontier.indexed_content(after, CHUNK)?;
        let Some(last) = pages.last() else { break };
        after = last.id;
        for page in pages {
            let body = from_archive::body(&*frontier, &page)?;
            // A text page whose body is not in the archive cannot be rebuilt, nor a page whose
            // URL does not parse.
            if from_archive::missing(&page, body.as_deref())
                || !from_archive::upsert(&*frontier, &mut indexer, &page, body.as_deref())?
            {
                missing.push(page.id);
                continue;
            }
            summary.pages += 1;
            // The building index is no one's yet: a commit only bounds what the writer holds.
            if summary.pages % commit_docs == 0 {
                indexer.commit(committed)?;
                summary.commits += 1;
            }
        }
        progress(summary.pages);
    }
    if summary.pages % commit_docs != 0 || summary.commits == 0 {
        indexer.commit(committed)?;
        summary.commits += 1;
    }
    crate::index::compact_or_warn(&mut indexer);
    drop(indexer);
    // Link authority, from the link graph in the store as a crawl computes it at the end of
    // its run: the rebuilt index ranks as the crawled one did, or by the new ranking.
    let graph = frontier.link_graph()?;
    crate::authority::write::<WriteError>(&mut *frontier, &graph, &building)?;
    drop(graph);
    // Before the exchange: the frontier may under-claim what an index holds (those pages are
    // merely fetched again), never over-claim.
    frontier.forget_indexed(&missing, now)?;
    summary.missing = missing.len() as u64;
    exchange(&building, &live)?;
    remove_dir(&building)?;
    // Every document now carries its current anchors.
    frontier.clear_all_anchor_updates()?;
    summary.elapsed_secs = started.elapsed().as_secs_f64();
    Ok(summary)
}

fn remove_dir(dir: &Path) -> Result<(), WriteError> {
    match std::fs::remove_dir_all(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(WriteError::Io(format!("removing {}", dir.display()), e)),
    }
}

/// Puts `new` at `live`'s path in one atomic step; the old index ends up at `new`'s path (or
/// nowhere, when there was none).
fn exchange(new: &Path, live: &Path) -> Result<(), WriteError> {
    let io = |e| {
        WriteError::Io(
            format!("swapping {} into {}", new.display(), live.display()),
            e,
        )
    };
    if !live.exists() {
        return std::fs::rename(new, live).map_err(io);
    }
    exchange_dirs(new, live).map_err(io)
}

#[cfg(target_os = "linux")]
fn exchange_dirs(a: &Path, b: &Path) -> std::io::Result<()> {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    let c = |p: &Path| {
        CString::new(p.as_os_str().as_bytes())
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))
    };
    let (a, b) = (c(a)?, c(b)?);
    // SAFETY: two valid NUL-terminated paths, relative to the working directory.
    let rc = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            a.as_ptr(),
            libc::AT_FDCWD,
            b.as_ptr(),
            libc::RENAME_EXCHANGE,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Without an atomic exchange: the live index is missing for the instant between two renames.
#[cfg(not(target_os = "linux"))]
fn exchange_dirs(a: &Path, b: &Path) -> std::io::Result<()> {
    let aside = b.with_extension("old");
    std::fs::rename(b, &aside)?;
    std::fs::rename(a, b)?;
    std::fs::rename(&aside, a)
}
