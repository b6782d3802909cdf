//! The one index writer. Only the crawl's indexing thread holds an [`Indexer`]; everything else
//! reads through [`super::SearchIndex`].
//!
//! Holding an `Indexer` means holding Tantivy's writer lock on the directory (an `flock` on
//! `.tantivy-writer.lock`, released when the `Indexer` is dropped or the process dies), so a
//! second crawl on the same data directory fails at start with [`IndexError::Locked`] instead
//! of corrupting the index.
//!
//! Near-duplicates are clustered here, as pages arrive ([`super::neardup`]): a page whose
//! fingerprint is within a few bits of an indexed page's (or of a page added since the last
//! commit) joins the cluster of the nearest one; otherwise it starts a cluster of its own, named
//! by its URL's hash. A page upserted again with the same text finds its own earlier version
//! and keeps its cluster. Clusters grow by single linkage and are never merged or split after
//! the fact: which of three pages in a chain joins which depends on their order. Looking up
//! candidates needs a reader beside the writer; it sees the last commit, the pages added since
//! are kept in memory until the next one.
//!
//! Not here: deciding when to commit (the crawl batches pages and commits with the frontier's
//! sequence number) and searching.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use tantivy::collector::TopDocs;
use tantivy::directory::error::LockError;
use tantivy::index::SegmentId;
use tantivy::indexer::{LogMergePolicy, NoMergePolicy};
use tantivy::query::{
    ConstScorer, EmptyScorer, EnableScoring, Explanation, Query, Scorer, TermQuery, Weight,
};
use tantivy::schema::{Document, IndexRecordOption, Value};
use tantivy::{
    DocId, DocSet, Index, IndexReader, IndexWriter, ReloadPolicy, Score, SegmentReader,
    TantivyDocument, TantivyError, Term, TERMINATED,
};
use url::Url;

use super::analysis;
use super::neardup;
use super::{
    create_index, open_index, parse_payload, prefix, url_hash, Access, Fields, IndexError, PageDoc,
};
use crate::gemtext::clean_title;

/// Text looked at to detect a page's language: enough for a confident guess, little enough to
/// stay cheap on every page.
const DETECT_SAMPLE_BYTES: usize = 2048;

/// Stems are computed over at most this much of a body: the `stem` field widens recall, and the
/// start of a long page says what it is about.
const STEM_BODY_BYTES: usize = 256 * 1024;

/// Total indexing memory. Tantivy flushes a segment when a thread's share is full, and writing
/// the segment out takes about as much again for a moment. 24 MiB of a crawl's 256 MB: on the
/// bench farm, 96 MiB saved no CPU that five runs of each could tell from their spread, and the
/// more segments a smaller budget makes are merged at the end of the run anyway.
const WRITER_MEMORY_BYTES: usize = 24 * 1024 * 1024;

/// Bytes of documents waiting in Tantivy's queue for its indexing thread. Tantivy bounds the
/// queue by documents only (10,000), which pages of a few megabytes each would turn into
/// gigabytes: past this, [`Indexer::upsert`] waits for the thread to take some.
const QUEUED_BYTES: usize = 8 * 1024 * 1024;

/// How long an upsert waits for room in Tantivy's queue before it adds its document anyway: only
/// an indexing thread that stopped takes this long, and adding then fails with its error.
const QUEUE_WAIT: Duration = Duration::from_secs(60);

/// Decompressed blocks of stored documents the writer's reader keeps, per segment. Tantivy's
/// default, 100, is for searchers showing snippets; the writer reads a stored document only to
/// rewrite it with new anchors, and a run's end rewrites tens of thousands at once: with 100
/// blocks for each of a few dozen segments, that took 50 MB of a crawl's 256.
const STORE_CACHE_BLOCKS: usize = 4;

/// How long [`Indexer::compact`] waits for the merges Tantivy started itself to end.
const MERGES_WAIT: Duration = Duration::from_secs(120);

/// One indexing thread: the crawl is network-bound, and the machine it targets has two cores
/// shared with fetching and parsing.
const WRITER_THREADS: usize = 1;

/// [`Indexer::compact`], logging rather than failing: a merge that did not happen costs search
/// speed, not correctness.
pub fn compact_or_warn(indexer: &mut Indexer) {
    let started = std::time::Instant::now();
    match indexer.compact() {
        Ok(0) => {}
        Ok(segments) => tracing::info!(
            segments,
            secs = started.elapsed().as_secs_f64(),
            "index segments merged"
        ),
        Err(e) => tracing::warn!(error = %e, "index segments not merged"),
    }
}

/// Candidates read per band and segment when clustering a page: a band shared by very many
/// pages (a boilerplate-heavy site) must not make every upsert slow.
const MAX_BAND_CANDIDATES: usize = 2000;

/// Owns the Tantivy `IndexWriter` (and so the index's writer lock).
pub struct Indexer {
    // Kept so the index (and its tokenizer registration) lives as long as the writer.
    _index: Index,
    writer: IndexWriter<Queued>,
    /// What Tantivy's queue holds, in bytes.
    queue: Room,
    fields: Fields,
    committed: u64,
    /// The last commit: read back by [`Indexer::refresh`], and searched for the near-duplicates
    /// of new pages. Reloaded after each commit, so it sees exactly what is committed.
    reader: IndexReader,
    /// Fingerprints added since the last commit, by band term: (fingerprint, cluster).
    pending: HashMap<String, Vec<(u64, u64)>>,
}

impl Indexer {
    /// Opens the index in `dir`, creating it (and the directories above it) when missing,
    /// empty or half-created ([`create_index`] makes it in one step).
    pub fn open_or_create(dir: &Path) -> Result<Self, IndexError> {
        let (index, fields) = match open_index(dir, Access::Write)? {
            Some(found) => found,
            None => create_index(dir)?,
        };
        let writer = index
            .writer_with_num_threads(WRITER_THREADS, WRITER_MEMORY_BYTES)
            .map_err(|e| match e {
                TantivyError::LockFailure(LockError::LockBusy, _) => {
                    IndexError::Locked(dir.to_path_buf())
                }
                other => IndexError::Tantivy(other),
            })?;
        // A writer killed mid-commit can leave files the last commit does not reference, such
        // as a segment's deletes for an opstamp the next writer will use again (its opstamps
        // restart from the last commit): that writer would then fail with FileAlreadyExists.
        // Collecting garbage before the first write removes them.
        if let Err(e) = writer.garbage_collect_files().wait() {
            tracing::warn!(error = %e, "index: leftover files could not be removed");
        }
        // Tantivy gives a new writer's first operation the opstamp of the last commit, which is
        // also how far a merge of committed segments started at this writer's first commit
        // applies deletes. Segments whose deletes are already at that opstamp skip it there,
        // the others apply it, and the merged segment goes on from its first segment's place
        // in the queue: a first delete at that opstamp could be lost for it (a refreshed page
        // then stayed twice). A delete that matches nothing takes that opstamp instead.
        writer.delete_query(Box::new(UrlDelete(Term::from_field_text(fields.url, ""))))?;
        let committed = parse_payload(index.load_metas()?.payload.as_deref()).unwrap_or(0);
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .doc_store_cache_num_blocks(STORE_CACHE_BLOCKS)
            .try_into()?;
        Ok(Indexer {
            _index: index,
            writer,
            queue: Room::new(QUEUED_BYTES),
            fields,
            committed,
            reader,
            pending: HashMap::new(),
        })
    }

    /// Adds a page, replacing any earlier document with the same URL. Derives the fields the
    /// page does not carry itself: the effective language (declared, else detected), stems,
    /// `site:` keys, URL words, extension, path depth and the hashes ranking looks up.
    pub fn upsert(&mut self, doc: &PageDoc) -> Result<(), IndexError> {
        self.write(doc, true, None)
    }

    /// [`Self::upsert`], detecting the language when the page declares none only if `detect`:
    /// a refreshed document already had its text judged, and an empty stored language means
    /// that no language was found (detection is most of the writer's own time). `known` is the
    /// fingerprint and cluster the document already had, kept instead of computed again.
    fn write(
        &mut self,
        doc: &PageDoc,
        detect: bool,
        known: Option<Known>,
    ) -> Result<(), IndexError> {
        let f = &self.fields;
        let mut d = TantivyDocument::default();
        let url = Url::parse(&doc.url).ok();
        d.add_text(f.url, &doc.url);
        // The scheme would make `gemini` match every page.
        let without_scheme = doc
            .url
            .split_once("://")
            .map_or(doc.url.as_str(), |(_, r)| r);
        d.add_text(f.url_text, without_scheme);
        for key in site_keys(url.as_ref(), &doc.host) {
            d.add_text(f.site, &key);
        }
        d.add_text(f.host, &doc.host);
        d.add_u64(f.host_hash, url_hash(&doc.host));
        d.add_u64(f.url_hash, url_hash(&doc.url));
        d.add_text(f.title, clean_title(&doc.title));
        d.add_text(f.body, &doc.body);
        d.add_text(f.headings, &doc.headings);
        d.add_text(f.link_labels, &doc.link_labels);
        d.add_text(f.anchors, &doc.anchors);

        let lang = doc
            .lang
            .as_deref()
            .and_then(analysis::normalize_lang)
            .or_else(|| {
                detect
                    .then(|| page_language(&doc.title, &doc.body, analysis::detect_lang))
                    .flatten()
                    .map(str::to_string)
            });
        if let Some(sl) = lang.as_deref().and_then(analysis::stem_lang) {
            // The field's analyzer stems each part in the language the value names.
            let parts = [
                doc.title.as_str(),
                doc.headings.as_str(),
                doc.anchors.as_str(),
                prefix(&doc.body, STEM_BODY_BYTES),
            ];
            for part in parts.into_iter().filter(|p| !p.is_empty()) {
                d.add_text(f.stem, analysis::stem_field_value(sl, part));
            }
        }
        if let Some(lang) = &lang {
            d.add_text(f.lang, lang);
        }

        let mime = doc.mime.to_ascii_lowercase();
        d.add_text(f.mime, &mime);
        if let Some((top, _)) = mime.split_once('/') {
            d.add_text(f.mime, top);
        }
        if let Some(ext) = url.as_ref().and_then(extension) {
            d.add_text(f.ext, ext);
        }
        d.add_u64(f.size, doc.size);
        d.add_u64(f.depth, url.as_ref().map_or(0, path_depth));
        d.add_i64(f.fetched_at, doc.fetched_at);
        let own = url_hash(&doc.url);
        let (fingerprint, known_cluster) = match known {
            Some(known) => (known.simhash, Some(known.cluster)),
            None => (neardup::page_fingerprint(&doc.body, &doc.link_labels), None),
        };
        let cluster = match fingerprint {
            Some(hash) => {
                let cluster = match known_cluster {
                    Some(cluster) => cluster,
                    None => self.nearest_cluster(hash)?.unwrap_or(own),
                };
                for band in neardup::bands(hash) {
                    d.add_text(f.dup_band, &band);
                    self.pending.entry(band).or_default().push((hash, cluster));
                }
                d.add_u64(f.simhash, hash);
                cluster
            }
            None => known_cluster.unwrap_or(own),
        };
        d.add_u64(f.cluster, cluster);
        // Tantivy applies a delete to every document added before it (by opstamp), in this
        // commit or earlier ones, so delete-then-add leaves exactly the new document.
        self.delete_url(&doc.url)?;
        let place = self.queue.take(queued_bytes(doc), QUEUE_WAIT);
        self.writer.add_document(Queued {
            doc: d,
            _place: place,
        })?;
        Ok(())
    }

    /// Removes the document for a URL, if any.
    pub fn delete(&mut self, url: &str) -> Result<(), IndexError> {
        self.delete_url(url)
    }

    /// Queues the deletion of `url`'s documents, as [`UrlDelete`]: Tantivy keeps it until the
    /// next commit.
    fn delete_url(&mut self, url: &str) -> Result<(), IndexError> {
        let term = Term::from_field_text(self.fields.url, url);
        self.writer.delete_query(Box::new(UrlDelete(term)))?;
        Ok(())
    }

    /// Rewrites the committed document of `url` with new `anchors` (and the page's own
    /// `link_labels`), keeping everything else it stored: how a page learns what links to it
    /// are now called without being fetched again. `body` replaces the stored body when given
    /// (a file known by its header carries its anchors in its body). Returns false when the
    /// index holds no document for `url`.
    ///
    /// Only committed documents are read: a page upserted since the last commit must not be
    /// refreshed before that commit, or its older version would come back.
    pub fn refresh(
        &mut self,
        url: &str,
        anchors: &str,
        link_labels: &str,
        body: Option<&str>,
    ) -> Result<bool, IndexError> {
        let searcher = self.reader.searcher();
        let f = &self.fields;
        let query = TermQuery::new(Term::from_field_text(f.url, url), IndexRecordOption::Basic);
        let Some((_, address)) = searcher
            .search(&query, &TopDocs::with_limit(1))?
            .into_iter()
            .next()
        else {
            return Ok(false);
        };
        let doc: TantivyDocument = searcher.doc(address)?;
        let fast = searcher.segment_reader(address.segment_ord).fast_fields();
        let simhash = fast.u64("simhash")?.first(address.doc_id);
        let cluster = fast.u64("cluster")?.first(address.doc_id);
        let text = |field| {
            doc.get_first(field)
                .and_then(|v| v.as_str())
                .unwrap_or_default()
                .to_string()
        };
        let page = PageDoc {
            url: url.to_string(),
            host: text(f.host),
            title: text(f.title),
            body: body.map_or_else(|| text(f.body), str::to_string),
            headings: text(f.headings),
            link_labels: link_labels.to_string(),
            anchors: anchors.to_string(),
            // The first value is the full type (`text/gemini`); the second its top level.
            mime: text(f.mime),
            // The stored language is the effective one, declared or detected: as good as
            // declared for the next upsert.
            lang: Some(text(f.lang)).filter(|l| !l.is_empty()),
            size: doc.get_first(f.size).and_then(|v| v.as_u64()).unwrap_or(0),
            fetched_at: doc
                .get_first(f.fetched_at)
                .and_then(|v| v.as_i64())
                .unwrap_or(0),
        };
        // The page is as it was fetched (a refresh only brings anchors; a page fetched again
        // is upserted), so its fingerprint and cluster are kept as they were: computing them
        // again from the labels as the frontier lists them could move the page to another
        // cluster for nothing. A new body (a file known by its header) is new text to judge.
        let known = match (body, cluster) {
            (None, Some(cluster)) => Some(Known { simhash, cluster }),
            _ => None,
        };
        self.write(&page, body.is_some(), known)?;
        Ok(true)
    }

    /// Commits everything added since the last commit, recording `seq` as the commit payload.
    pub fn commit(&mut self, seq: u64) -> Result<(), IndexError> {
        // The payload is written into meta.json in the same atomic rename as the segment list,
        // so a crash leaves either the old (segments, seq) pair or the new one, never a mix.
        let mut prepared = self.writer.prepare_commit()?;
        prepared.set_payload(&seq.to_string());
        prepared.commit()?;
        self.committed = seq;
        // The reader now holds what `pending` held.
        self.reader.reload()?;
        self.pending.clear();
        Ok(())
    }

    /// The cluster of the indexed (or pending) page whose fingerprint is nearest to `hash`,
    /// when one is near enough; ties go to the smaller cluster name, so the choice does not
    /// depend on segment order.
    fn nearest_cluster(&self, hash: u64) -> Result<Option<u64>, IndexError> {
        let mut best: Option<(u32, u64)> = None;
        let mut consider = |other: u64, cluster: u64| {
            let d = neardup::distance(hash, other);
            if d <= neardup::MAX_DISTANCE && best.map_or(true, |b| (d, cluster) < b) {
                best = Some((d, cluster));
            }
        };
        let bands = neardup::bands(hash);
        for band in &bands {
            for &(other, cluster) in self.pending.get(band).into_iter().flatten() {
                consider(other, cluster);
            }
        }
        let searcher = self.reader.searcher();
        for segment in searcher.segment_readers() {
            let inverted = segment.inverted_index(self.fields.dup_band)?;
            let fast = segment.fast_fields();
            let simhash = fast.u64("simhash")?.first_or_default_col(0);
            let clusters = fast.u64("cluster")?.first_or_default_col(0);
            for band in &bands {
                let term = Term::from_field_text(self.fields.dup_band, band);
                let Some(mut postings) = inverted.read_postings(&term, IndexRecordOption::Basic)?
                else {
                    continue;
                };
                let mut read = 0;
                while postings.doc() != TERMINATED && read < MAX_BAND_CANDIDATES {
                    let doc = postings.doc();
                    read += 1;
                    // The cluster is read only for a near fingerprint: most candidates of a
                    // common band are far, and reading fast fields is most of this loop's time.
                    let other = simhash.get_val(doc);
                    if neardup::near(hash, other) && !segment.is_deleted(doc) {
                        consider(other, clusters.get_val(doc));
                    }
                    postings.advance();
                }
            }
        }
        Ok(best.map(|(_, cluster)| cluster))
    }

    /// The sequence number of the last commit (0 when none).
    pub fn committed_seq(&self) -> u64 {
        self.committed
    }

    /// Starts no more merges of Tantivy's own (those running go on): for a writer whose last
    /// commits are followed by [`Self::compact`], which would merge their segments again.
    pub fn stop_merging(&mut self) {
        self.writer.set_merge_policy(Box::new(NoMergePolicy));
    }

    /// Leaves the committed index at rest in at most two segments, rewriting as little as that
    /// takes, so that searches until the next crawl open one or two sets of term dictionaries
    /// and postings rather than one per commit: at 500,000 documents, nine segments merged into
    /// one took multi-word queries from 7.2 to 5.3 ms of CPU (p50).
    ///
    /// What [`at_rest_merge`] picks is merged: everything into one segment while what came
    /// after the largest segment is a large share of it (a first crawl, a rebuild), or once the
    /// largest has lost enough documents to later versions; otherwise only the segments after
    /// the largest, into one. A re-crawl that changed a few thousand pages of a large index thus
    /// rewrites those pages, not the whole index (all 500,000 documents took about 18 s here).
    /// The commit payload (the sequence number) is kept, and a kill during the merge leaves the
    /// last commit as it was. Returns how many segments were merged (0: nothing to do).
    ///
    /// Tantivy's own merge policy may have started merges at the last commit (a rebuild commits
    /// once, with dozens of segments): a merge of segments one of which is being merged is
    /// refused, so none is started meanwhile, and the choice is made again from the committed
    /// segments once those merges have ended (for at most [`MERGES_WAIT`]).
    pub fn compact(&mut self) -> Result<usize, IndexError> {
        self.stop_merging();
        let merged = self.compact_alone();
        self.writer
            .set_merge_policy(Box::new(LogMergePolicy::default()));
        merged
    }

    fn compact_alone(&mut self) -> Result<usize, IndexError> {
        let started = std::time::Instant::now();
        loop {
            let sizes: Vec<SegmentSize> = self
                ._index
                .searchable_segment_metas()?
                .iter()
                .map(|meta| SegmentSize {
                    id: meta.id(),
                    live: u64::from(meta.num_docs()),
                    deleted: u64::from(meta.num_deleted_docs()),
                })
                .collect();
            let merge = at_rest_merge(&sizes);
            if merge.is_empty() {
                return Ok(0);
            }
            match self.writer.merge(&merge).wait() {
                Ok(_) => {
                    self.reader.reload()?;
                    return Ok(merge.len());
                }
                Err(TantivyError::InvalidArgument(_)) if started.elapsed() < MERGES_WAIT => {
                    std::thread::sleep(Duration::from_millis(200));
                }
                Err(e) => return Err(e.into()),
            }
        }
    }
}

/// The deletion of the documents holding one term, as Tantivy's delete queue keeps it until the
/// next commit: just the term. `IndexWriter::delete_term` queues a whole `TermQuery` weight,
/// whose BM25 cache alone is a kilobyte, even though deletions score nothing: with a commit
/// every 20,000 documents, each replacing its URL, that was 24 MB of a crawl's 256.
#[derive(Debug, Clone)]
struct UrlDelete(Term);

impl Query for UrlDelete {
    fn weight(&self, _: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        Ok(Box::new(self.clone()))
    }
}

impl Weight for UrlDelete {
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        let postings = reader
            .inverted_index(self.0.field())?
            .read_postings(&self.0, IndexRecordOption::Basic)?;
        Ok(match postings {
            Some(postings) => Box::new(ConstScorer::new(postings, boost)),
            None => Box::new(EmptyScorer),
        })
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        let mut scorer = self.scorer(reader, 1.0)?;
        if scorer.seek(doc) == doc {
            Ok(Explanation::new("holds the term", 1.0))
        } else {
            Err(TantivyError::InvalidArgument(format!(
                "document {doc} does not hold the term"
            )))
        }
    }
}

/// A document in Tantivy's queue, holding its bytes of the queue's [`Room`] until Tantivy's
/// indexing thread has added it to its segment and dropped it.
struct Queued {
    doc: TantivyDocument,
    _place: Place,
}

impl Document for Queued {
    type Value<'a>
        = <TantivyDocument as Document>::Value<'a>
    where
        Self: 'a;
    type FieldsValuesIter<'a>
        = <TantivyDocument as Document>::FieldsValuesIter<'a>
    where
        Self: 'a;

    fn iter_fields_and_values(&self) -> Self::FieldsValuesIter<'_> {
        self.doc.iter_fields_and_values()
    }
}

/// What a document for `doc` takes in Tantivy's queue: its text, and the copies of part of it
/// the `stem` field holds.
fn queued_bytes(doc: &PageDoc) -> usize {
    const BOOKKEEPING: usize = 1024;
    BOOKKEEPING
        + doc.text_bytes()
        + doc.title.len()
        + doc.headings.len()
        + doc.anchors.len()
        + prefix(&doc.body, STEM_BODY_BYTES).len()
}

/// A number of bytes shared by the documents that hold a [`Place`] in it.
#[derive(Clone)]
struct Room {
    state: Arc<(Mutex<usize>, Condvar)>,
    max: usize,
}

/// Bytes held in a [`Room`], given back when dropped.
struct Place {
    room: Room,
    bytes: usize,
}

impl Room {
    fn new(max: usize) -> Room {
        Room {
            state: Arc::new((Mutex::new(0), Condvar::new())),
            max,
        }
    }

    /// A place of `bytes`, once they fit (at once when the room is empty, whatever their
    /// number), or after `patience` in any case.
    fn take(&self, bytes: usize, patience: Duration) -> Place {
        let (used, freed) = &*self.state;
        let deadline = std::time::Instant::now() + patience;
        let mut used = used.lock().unwrap_or_else(|e| e.into_inner());
        while *used > 0 && used.saturating_add(bytes) > self.max {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                break;
            }
            used = freed
                .wait_timeout(used, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        *used += bytes;
        Place {
            room: self.clone(),
            bytes,
        }
    }

    #[cfg(test)]
    fn used(&self) -> usize {
        *self.state.0.lock().unwrap()
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        let (used, freed) = &*self.room.state;
        let mut used = used.lock().unwrap_or_else(|e| e.into_inner());
        *used -= self.bytes;
        freed.notify_all();
    }
}

/// A committed segment, as [`at_rest_merge`] weighs it.
#[derive(Debug, Clone, Copy)]
struct SegmentSize {
    id: SegmentId,
    /// Documents it holds that no later version replaced.
    live: u64,
    /// Documents it still holds that later versions (or removals) replaced.
    deleted: u64,
}

/// What comes after the largest segment is merged with it once it holds this share of the
/// largest's live documents (1/4): below it, only those later segments are merged together.
/// Each re-crawl then rewrites at most about a quarter of the index, and a full merge comes
/// every few runs rather than at each one.
const TAIL_SHARE_FOR_FULL_MERGE: (u64, u64) = (1, 4);

/// The largest segment is rewritten (with the rest) once this share of its documents were
/// replaced (1/5): searches would otherwise keep reading their postings.
const DELETED_SHARE_FOR_FULL_MERGE: (u64, u64) = (1, 5);

/// The segments [`Indexer::compact`] merges into one: none, every one, or every one but the
/// largest (see there). Pure, for the tests.
fn at_rest_merge(segments: &[SegmentSize]) -> Vec<SegmentId> {
    let Some(largest) = segments.iter().max_by_key(|s| (s.live, s.id)) else {
        return Vec::new();
    };
    let tail: Vec<&SegmentSize> = segments.iter().filter(|s| s.id != largest.id).collect();
    let tail_live: u64 = tail.iter().map(|s| s.live).sum();
    let at_least = |part: u64, whole: u64, (num, den): (u64, u64)| part * den >= whole * num;
    let worn = largest.deleted > 0
        && at_least(
            largest.deleted,
            largest.live + largest.deleted,
            DELETED_SHARE_FOR_FULL_MERGE,
        );
    if (!tail.is_empty() && at_least(tail_live, largest.live, TAIL_SHARE_FOR_FULL_MERGE)) || worn {
        return segments.iter().map(|s| s.id).collect();
    }
    if tail.len() < 2 {
        return Vec::new();
    }
    tail.iter().map(|s| s.id).collect()
}

/// The `site:` keys of a page: its host, every parent domain (`b.example.org` gives
/// `example.org` and `org`), the capsule key when it carries a port, and `host/~user` for pages
/// under a user directory of a shared host.
fn site_keys(url: Option<&Url>, capsule: &str) -> Vec<String> {
    let mut keys = Vec::new();
    let Some(host) = url.and_then(Url::host_str) else {
        keys.push(capsule.to_ascii_lowercase());
        return keys;
    };
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    let is_name = url.is_some_and(|u| matches!(u.host(), Some(url::Host::Domain(_))));
    if is_name {
        let mut rest = host.as_str();
        while let Some((_, parent)) = rest.split_once('.') {
            if !parent.is_empty() {
                keys.push(parent.to_string());
            }
            rest = parent;
        }
    }
    if let Some(user) = url
        .and_then(|u| u.path_segments())
        .and_then(|mut segments| segments.next())
        .filter(|s| s.len() > 1 && s.starts_with('~'))
    {
        keys.push(format!("{host}/{user}"));
    }
    if !capsule.eq_ignore_ascii_case(&host) {
        keys.push(capsule.to_ascii_lowercase());
    }
    keys.push(host);
    keys
}

/// The URL path's file extension, lowercased: `gmi` for `/a/b.gmi`; none for directories.
fn extension(url: &Url) -> Option<String> {
    let last = url.path_segments()?.next_back()?;
    let (stem, ext) = last.rsplit_once('.')?;
    let ok = !stem.is_empty()
        && (1..=10).contains(&ext.len())
        && ext.bytes().all(|b| b.is_ascii_alphanumeric());
    ok.then(|| ext.to_ascii_lowercase())
}

/// Non-empty path segments: 0 for a capsule's home page. A user directory on a shared host
/// (`/~bob/`) is that user's capsule: its home page is at depth 0 too.
fn path_depth(url: &Url) -> u64 {
    let Some(segments) = url.path_segments() else {
        return 0;
    };
    let mut depth = 0;
    for (i, seg) in segments.filter(|seg| !seg.is_empty()).enumerate() {
        if !(i == 0 && seg.len() > 1 && seg.starts_with('~')) {
            depth += 1;
        }
    }
    depth
}

/// What a document already had that a rewrite with the same body keeps.
#[derive(Debug, Clone, Copy)]
struct Known {
    simhash: Option<u64>,
    cluster: u64,
}

/// Detects a page's language from its title and the start of its body with `detect`: the
/// index uses [`analysis::detect_lang`]; `scripts/eval-lang` compares it with whatlang alone.
pub fn page_language(
    title: &str,
    body: &str,
    detect: fn(&str) -> Option<&'static str>,
) -> Option<&'static str> {
    let mut sample = String::with_capacity(DETECT_SAMPLE_BYTES + title.len() + 1);
    sample.push_str(title);
    sample.push('\n');
    sample.push_str(prefix(body, DETECT_SAMPLE_BYTES));
    detect(&sample)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_room_makes_a_taker_wait_until_a_place_is_given_back() {
        let room = Room::new(1000);
        let first = room.take(600, QUEUE_WAIT);
        let waiting = {
            let room = room.clone();
            std::thread::spawn(move || {
                let place = room.take(600, QUEUE_WAIT);
                room.used() - place.bytes
            })
        };
        std::thread::sleep(Duration::from_millis(50));
        assert!(!waiting.is_finished(), "1,200 bytes do not fit in 1,000");
        drop(first);
        assert_eq!(waiting.join().unwrap(), 0, "the first place was given back");
        assert_eq!(room.used(), 0);
        // Alone in the room, a place of any size is taken at once; past its patience, a taker
        // goes on regardless.
        let big = room.take(5000, QUEUE_WAIT);
        let late = room.take(1, Duration::from_millis(20));
        assert_eq!(room.used(), 5001);
        drop((big, late));
        assert_eq!(room.used(), 0);
    }
    use crate::index::{committed_seq, SearchIndex};

    use crate::index::test_page as page;

    fn sizes(segments: &[(u64, u64)]) -> Vec<SegmentSize> {
        segments
            .iter()
            .map(|&(live, deleted)| SegmentSize {
                id: SegmentId::generate_random(),
                live,
                deleted,
            })
            .collect()
    }

    /// Which of `segments` (live, deleted) [`at_rest_merge`] picks, by position.
    fn picked(segments: &[(u64, u64)]) -> Vec<usize> {
        let sizes = sizes(segments);
        let merge = at_rest_merge(&sizes);
        let mut at: Vec<usize> = merge
            .iter()
            .map(|id| sizes.iter().position(|s| s.id == *id).expect("known id"))
            .collect();
        at.sort_unstable();
        at
    }

    #[test]
    fn at_rest_merge_rewrites_the_largest_segment_only_when_it_is_worth_it() {
        // Nothing to do: no segment, one healthy segment, one large and one small.
        assert_eq!(picked(&[]), Vec::<usize>::new());
        assert_eq!(picked(&[(500_000, 1_000)]), Vec::<usize>::new());
        assert_eq!(picked(&[(500_000, 0), (10_000, 0)]), Vec::<usize>::new());
        // A re-crawl's small segments beside a large one: merged together, the large one left.
        assert_eq!(
            picked(&[(5_000, 0), (500_000, 9_000), (5_000, 0)]),
            vec![0, 2]
        );
        // What came after the largest is a quarter of it (a first crawl, a rebuild): all.
        assert_eq!(picked(&[(5_000, 0), (5_000, 0), (455, 0)]), vec![0, 1, 2]);
        assert_eq!(
            picked(&[(400_000, 0), (60_000, 0), (40_000, 0)]),
            vec![0, 1, 2]
        );
        assert_eq!(
            picked(&[(400_000, 0), (60_000, 0), (39_999, 0)]),
            vec![1, 2]
        );
        // A fifth of the largest replaced by later versions: rewritten, alone if need be.
        assert_eq!(picked(&[(400_000, 100_000)]), vec![0]);
        assert_eq!(picked(&[(400_000, 99_999)]), Vec::<usize>::new());
        assert_eq!(picked(&[(400_000, 100_000), (10_000, 0)]), vec![0, 1]);
    }

    #[test]
    fn compact_leaves_a_large_segment_alone_until_the_rest_or_its_deletes_weigh_enough() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let mut ix = Indexer::open_or_create(tmp.path()).expect("open");
        let url = |n: u64| format!("gemini://example.org/{n}");
        for n in 0..40 {
            ix.upsert(&page(&url(n), "Title", "walrus"))
                .expect("upsert");
        }
        ix.commit(1).expect("commit");
        for (seq, n) in [(2, 40), (3, 41)] {
            ix.upsert(&page(&url(n), "Title", "walrus"))
                .expect("upsert");
            ix.commit(seq).expect("commit");
        }
        let segments = |ix: &Indexer| ix._index.searchable_segment_ids().unwrap().len();
        assert_eq!(segments(&ix), 3);
        assert_eq!(ix.compact().expect("compact"), 2, "the two small ones");
        assert_eq!(segments(&ix), 2);
        assert_eq!(ix.compact().expect("compact again"), 0);
        // Ten of the large segment's pages removed: a quarter of it, so all of it is rewritten
        // (the two pages beside it alone would not be reason enough).
        for n in 0..10 {
            ix.delete(&url(n)).expect("delete");
        }
        ix.commit(4).expect("commit");
        let before = segments(&ix);
        assert_eq!(ix.compact().expect("compact"), before);
        assert_eq!(segments(&ix), 1);
        drop(ix);
        assert_eq!(committed_seq(tmp.path()).expect("seq"), Some(4));
        let si = SearchIndex::open(tmp.path()).expect("search index");
        assert_eq!(si.num_docs(), 32);
        assert_eq!(si.search("walrus", 10, 0).expect("search").total, 32);
    }

    #[test]
    fn compact_merges_the_segments_into_one_and_keeps_pages_and_sequence() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let mut ix = Indexer::open_or_create(tmp.path()).expect("open");
        for seq in 1..=4u64 {
            let url = format!("gemini://example.org/{seq}");
            ix.upsert(&page(&url, "Title", "walrus")).expect("upsert");
            ix.commit(seq).expect("commit");
        }
        ix.delete("gemini://example.org/2").expect("delete");
        ix.commit(5).expect("commit");
        let before = ix._index.searchable_segment_ids().unwrap().len();
        assert!(
            before > 1,
            "one segment per commit, some perhaps merged: {before}"
        );
        assert_eq!(ix.compact().expect("compact"), before);
        assert_eq!(ix._index.searchable_segment_ids().unwrap().len(), 1);
        assert_eq!(
            ix.compact().expect("compact again"),
            0,
            "one segment is left alone"
        );
        drop(ix);
        assert_eq!(committed_seq(tmp.path()).expect("seq"), Some(5));
        let si = SearchIndex::open(tmp.path()).expect("search index");
        assert_eq!(si.num_docs(), 3);
        assert_eq!(si.search("walrus", 10, 0).expect("search").total, 3);
    }

    #[test]
    fn upsert_keeps_one_document_per_url_and_the_newest_wins() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let url = "gemini://example.org/page";
        {
            let mut ix = Indexer::open_or_create(tmp.path()).expect("open");
            ix.upsert(&page(url, "Old title", "walrus"))
                .expect("upsert");
            // Same URL twice within one commit.
            ix.upsert(&page(url, "Middle title", "walrus"))
                .expect("upsert");
            ix.commit(1).expect("commit");
        }
        {
            // Across a restart and a second commit.
            let mut ix = Indexer::open_or_create(tmp.path()).expect("reopen");
            ix.upsert(&page(url, "New title", "walrus"))
                .expect("upsert");
            ix.commit(2).expect("commit");
        }
        let si = SearchIndex::open(tmp.path()).expect("search index");
        assert_eq!(si.num_docs(), 1);
        let res = si.search("walrus", 10, 0).expect("search");
        assert_eq!(res.total, 1);
        assert_eq!(res.hits[0].title, "New title");
        assert_eq!(res.hits[0].url, url);
    }

    /// A writer's first delete must reach a page whose segment a merge takes at its first
    /// commit. Tantivy numbers a fresh writer's first operation with the opstamp of the last
    /// commit, the very opstamp a merge of committed segments applies deletes up to; a segment
    /// that had deletes in that commit skips them then, and the merged segment went on from
    /// the first segment's place in the delete queue, past that delete: the page stayed twice.
    #[test]
    fn a_first_delete_reaches_a_page_whose_segment_is_being_merged() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let url = |i: usize| format!("gemini://example.org/{i}");
        {
            let mut ix = Indexer::open_or_create(tmp.path()).expect("open");
            ix.stop_merging();
            // Nine committed segments, enough for Tantivy's merge policy to merge them at the
            // next commit: the first the largest (a merge lists its segments largest first),
            // the eighth holding pages 100, 101 and 102.
            for i in 0..4 {
                ix.upsert(&page(&url(50 + i), "Big", "filler"))
                    .expect("upsert");
            }
            ix.commit(1).expect("commit");
            for seq in 2..=7 {
                ix.upsert(&page(&url(seq as usize), "Small", "filler"))
                    .expect("upsert");
                ix.commit(seq).expect("commit");
            }
            ix.upsert(&page(&url(100), "Old", "walrus"))
                .expect("upsert");
            ix.upsert(&page(&url(101), "Other", "filler"))
                .expect("upsert");
            ix.upsert(&page(&url(102), "Third", "filler"))
                .expect("upsert");
            ix.commit(8).expect("commit");
            // The last commit deletes from that segment: its deletes are at the commit's
            // opstamp.
            ix.upsert(&page(&url(101), "Other again", "filler"))
                .expect("upsert");
            ix.commit(9).expect("commit");
        }
        let mut ix = Indexer::open_or_create(tmp.path()).expect("reopen");
        ix.upsert(&page(&url(100), "New", "walrus"))
            .expect("upsert");
        ix.commit(10).expect("commit");
        ix.writer.wait_merging_threads().expect("merges end");
        let si = SearchIndex::open(tmp.path()).expect("search index");
        let res = si.search("walrus", 10, 0).expect("search");
        let titles: Vec<&str> = res.hits.iter().map(|h| h.title.as_str()).collect();
        assert_eq!(
            titles,
            vec!["New"],
            "one document for the page, the new one"
        );
    }

    #[test]
    fn refresh_rewrites_anchors_and_keeps_the_rest() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let url = "gemini://example.org/lamp";
        let mut ix = Indexer::open_or_create(tmp.path()).expect("open");
        let mut doc = page(url, "Desk lamp", "an amber halo over the keyboard");
        doc.anchors = "lantern".into();
        doc.link_labels = "home".into();
        doc.lang = Some("en".into());
        ix.upsert(&doc).expect("upsert");
        ix.commit(1).expect("commit");
        assert!(ix.refresh(url, "beacon", "home", None).expect("refresh"));
        assert!(!ix
            .refresh("gemini://example.org/none", "x", "", None)
            .expect("refresh of nothing"));
        ix.commit(2).expect("commit");
        let si = SearchIndex::open(tmp.path()).expect("search index");
        assert_eq!(si.num_docs(), 1);
        assert_eq!(si.search("beacon", 10, 0).expect("search").total, 1);
        assert_eq!(si.search("lantern", 10, 0).expect("search").total, 0);
        let hit = &si.search("amber halo", 10, 0).expect("search").hits[0];
        assert_eq!(hit.title, "Desk lamp");
        assert_eq!(hit.url, url);
        assert_eq!(hit.mime, "text/gemini");
        assert_eq!(hit.lang.as_deref(), Some("en"));
        assert_eq!(hit.fetched_at, 1_700_000_000);
        // A refresh after another commit reads that commit (the reader follows commits).
        ix.upsert(&page(url, "Desk lamp", "a green halo"))
            .expect("upsert");
        ix.commit(3).expect("commit");
        assert!(ix.refresh(url, "torch", "", None).expect("refresh"));
        ix.commit(4).expect("commit");
        let si = SearchIndex::open(tmp.path()).expect("search index");
        assert_eq!(si.search("green torch", 10, 0).expect("search").total, 1);
        assert_eq!(si.search("amber", 10, 0).expect("search").total, 0);
    }

    #[test]
    fn refresh_keeps_the_fingerprint_and_cluster_of_the_page() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let mut ix = Indexer::open_or_create(tmp.path()).expect("open");
        let words = |seed: &str| {
            (0..40)
                .map(|i| format!("{seed}{i}"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        let (a, b) = ("gemini://example.org/a", "gemini://mirror.example/a");
        let mut doc = page(a, "Original", &words("word"));
        ix.upsert(&doc).expect("upsert");
        ix.commit(1).expect("commit");
        doc.url = b.into();
        doc.title = "Mirror".into();
        ix.upsert(&doc).expect("upsert");
        ix.commit(2).expect("commit");
        let similar = |tmp: &std::path::Path| {
            let si = SearchIndex::open(tmp).expect("search index");
            si.search(&format!("similar:{a}"), 10, 0)
                .expect("search")
                .total
        };
        assert_eq!(
            similar(tmp.path()),
            2,
            "the mirror joined the original's cluster"
        );
        // Labels that would move the fingerprint far if it were computed again: the page is
        // as it was fetched, so its cluster stays.
        assert!(ix
            .refresh(b, "a new anchor", &words("label"), None)
            .expect("refresh"));
        ix.commit(3).expect("commit");
        assert_eq!(similar(tmp.path()), 2, "a refresh keeps the cluster");
        let si = SearchIndex::open(tmp.path()).expect("search index");
        assert_eq!(si.search("anchor", 10, 0).expect("search").total, 1);
    }

    #[test]
    fn delete_removes_only_that_url() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let mut ix = Indexer::open_or_create(tmp.path()).expect("open");
        ix.upsert(&page("gemini://a.example/", "A", "narwhal"))
            .expect("upsert");
        ix.upsert(&page("gemini://b.example/", "B", "narwhal"))
            .expect("upsert");
        ix.commit(1).expect("commit");
        ix.delete("gemini://a.example/").expect("delete");
        // Deleting a URL that was never indexed is not an error.
        ix.delete("gemini://never.example/").expect("delete absent");
        ix.commit(2).expect("commit");

        let si = SearchIndex::open(tmp.path()).expect("search index");
        let res = si.search("narwhal", 10, 0).expect("search");
        let urls: Vec<&str> = res.hits.iter().map(|h| h.url.as_str()).collect();
        assert_eq!(urls, vec!["gemini://b.example/"]);
        assert_eq!(si.num_docs(), 1);
    }

    #[test]
    fn commit_payload_round_trips() {
        let tmp = tempfile::tempdir().expect("tempdir");
        {
            let mut ix = Indexer::open_or_create(tmp.path()).expect("open");
            assert_eq!(ix.committed_seq(), 0);
            ix.upsert(&page("gemini://a.example/", "A", "x"))
                .expect("upsert");
            ix.commit(41).expect("commit");
            assert_eq!(ix.committed_seq(), 41);
            // A commit with nothing new still records its sequence number.
            ix.commit(42).expect("commit");
            assert_eq!(ix.committed_seq(), 42);
            // Readable while the writer is alive: no lock is taken.
            assert_eq!(committed_seq(tmp.path()).expect("read"), Some(42));
        }
        assert_eq!(committed_seq(tmp.path()).expect("read"), Some(42));
        let ix = Indexer::open_or_create(tmp.path()).expect("reopen");
        assert_eq!(ix.committed_seq(), 42);
    }

    #[test]
    fn uncommitted_pages_are_lost_on_drop() {
        let tmp = tempfile::tempdir().expect("tempdir");
        {
            let mut ix = Indexer::open_or_create(tmp.path()).expect("open");
            ix.upsert(&page("gemini://a.example/", "A", "kept"))
                .expect("upsert");
            ix.commit(5).expect("commit");
            ix.upsert(&page("gemini://b.example/", "B", "lost"))
                .expect("upsert");
        }
        let si = SearchIndex::open(tmp.path()).expect("search index");
        assert_eq!(si.num_docs(), 1);
        assert_eq!(committed_seq(tmp.path()).expect("read"), Some(5));
    }

    #[test]
    fn second_writer_on_the_same_directory_fails_clearly() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let first = Indexer::open_or_create(tmp.path()).expect("first");
        let err = match Indexer::open_or_create(tmp.path()) {
            Ok(_) => panic!("second writer must not open while the first is alive"),
            Err(e) => e,
        };
        assert!(matches!(err, IndexError::Locked(_)), "got {err:?}");
        assert!(
            err.to_string()
                .contains("another crawl seems to be running"),
            "message: {err}"
        );
        // Once the first writer is gone the lock is free again.
        drop(first);
        Indexer::open_or_create(tmp.path()).expect("after drop");
    }

    #[test]
    fn open_or_create_makes_missing_directories() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().join("data").join("index");
        let mut ix = Indexer::open_or_create(&dir).expect("create nested");
        ix.commit(1).expect("commit");
        assert_eq!(committed_seq(&dir).expect("read"), Some(1));
    }
}
