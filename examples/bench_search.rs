//! The geode half of the search latency benchmark (`scripts/bench-search`, issue 6).
//!
//! `generate` reads every page of the real capsule corpus, extracts it with geode's own
//! `content::extract` as a crawl would, and writes N documents (default 500,000) built by
//! replicating the pages with perturbation: copy 0 of a page is the page itself, copy k > 0 lives
//! on the capsule `c{k}.{host}`, with lightly reordered paragraphs, a few dropped or duplicated
//! lines, about 7% of its words replaced by words drawn from the corpus by frequency, and now and
//! then one title word changed. Everything is decided by a seeded generator, so the same seed and
//! corpus give the same documents. Each document goes both into a geode index (through the real
//! `Indexer`) and into a TSV file that PostgreSQL's `COPY` reads, so both engines hold the same
//! text and the same language (detected once per corpus page by geode's detector; `anchors` stay
//! empty, as PostgreSQL has no counterpart). `check` tells whether an existing index can be reused (same schema, same document count)
//! and `query` times `SearchIndex::search` on the benchmark's query list, or, with `--model`,
//! the hybrid search a user with a model gets (the query embedded, its nearest pages found in
//! the vectors, both rankings fused). `vectors` gives the N documents vectors for that: each
//! corpus page is embedded with the model, and each copy of it gets its page's vector plus
//! Gaussian noise (embedding 500,000 pages on 2 cores would take hours; the noise stands for the
//! copies' perturbed words).
//!
//! This is a measuring tool, not part of the library: nothing here is used by geode itself.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand};
use geode::embed::store::Writer;
use geode::embed::{Embedder, Semantic};
use geode::index::{Indexer, PageDoc, SearchIndex, SearchOptions};
use serde::Serialize;

#[path = "common/corpus.rs"]
mod corpus;

#[derive(Parser)]
#[command(about = "geode's side of scripts/bench-search")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// The documents `generate` makes from the corpus, and `vectors` gives vectors (the same
/// arguments make the same documents).
#[derive(Args)]
struct Made {
    /// The corpus' capsule directory: `<host>/<path>` files.
    #[arg(long)]
    corpus: PathBuf,
    /// How many documents to produce.
    #[arg(long, default_value_t = 500_000)]
    docs: u64,
    #[arg(long, default_value_t = 6)]
    seed: u64,
}

#[derive(Subcommand)]
enum Command {
    /// Builds the geode index and the PostgreSQL TSV from the corpus.
    Generate {
        #[command(flatten)]
        made: Made,
        /// The geode index directory to create (must not hold an index).
        #[arg(long)]
        index: PathBuf,
        /// The TSV file for PostgreSQL's COPY.
        #[arg(long)]
        tsv: PathBuf,
    },
    /// Exits 0 when `index` opens with the current schema and holds `docs` documents.
    Check {
        #[arg(long)]
        index: PathBuf,
        #[arg(long)]
        docs: u64,
    },
    /// Gives the documents of `generate` vectors of a model: each corpus page embedded, each
    /// copy of it its page's vector plus noise. Prints one JSON object of figures.
    Vectors {
        #[command(flatten)]
        made: Made,
        /// The directory whose `vectors/` receives them (the data directory of a search).
        #[arg(long)]
        data: PathBuf,
        #[arg(long)]
        model: PathBuf,
        /// The standard deviation of the noise added to each dimension of a copy's vector
        /// (0.017: a copy's cosine to its page about 0.95).
        #[arg(long, default_value_t = 0.017)]
        noise: f32,
    },
    /// Times the queries of a queries file; writes one JSON record per query.
    Query {
        #[arg(long)]
        index: PathBuf,
        /// Lines of `kind<TAB>geode query<TAB>tsquery<TAB>SQL filter`; `#` starts a comment.
        #[arg(long)]
        queries: PathBuf,
        #[arg(long, default_value_t = 5)]
        rounds: usize,
        #[arg(long, default_value_t = 10)]
        limit: usize,
        #[arg(long)]
        out: PathBuf,
        /// Search by meaning too, with this model and the vectors in `--vectors`.
        #[arg(long, requires = "vectors")]
        model: Option<PathBuf>,
        /// The directory whose `vectors/` `vectors` wrote.
        #[arg(long)]
        vectors: Option<PathBuf>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Generate { made, index, tsv } => {
            generate(&made.corpus, made.docs, made.seed, &index, &tsv).map(|()| ExitCode::SUCCESS)
        }
        Command::Check { index, docs } => Ok(check(&index, docs)),
        Command::Vectors {
            made,
            data,
            model,
            noise,
        } => vectors(&made.corpus, made.docs, made.seed, &data, &model, noise)
            .map(|()| ExitCode::SUCCESS),
        Command::Query {
            index,
            queries,
            rounds,
            limit,
            out,
            model,
            vectors,
        } => {
            let semantic = match (model, vectors) {
                (Some(model), Some(data)) => Some(open_semantic(&model, &data)),
                _ => None,
            };
            match semantic.transpose() {
                Ok(semantic) => query(&index, &queries, rounds, limit, &out, semantic.as_ref())
                    .map(|()| ExitCode::SUCCESS),
                Err(e) => Err(e),
            }
        }
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("bench_search: {e:#}");
            ExitCode::FAILURE
        }
    }
}

// --- the generator ------------------------------------------------------------------------

/// Share of words replaced in a copy, of lines dropped and of lines written twice.
const REPLACE_WORD: f64 = 0.07;
const DROP_LINE: f64 = 0.03;
const DUPLICATE_LINE: f64 = 0.02;
/// Chance that two neighbouring paragraphs trade places, and that a title word changes.
const SWAP_PARAGRAPHS: f64 = 0.2;
const CHANGE_TITLE: f64 = 0.25;
/// Fetch times are spread over a year from this instant.
const FETCHED_BASE: i64 = 1_700_000_000;

/// A corpus page after extraction.
struct Source {
    host: String,
    /// Path after the host, without the leading slash.
    path: String,
    title: String,
    body: String,
    headings: String,
    link_labels: String,
    mime: String,
    lang: Option<String>,
}

/// Every word of the corpus bodies, once per occurrence: drawing a uniform position draws a
/// word by its frequency.
struct Vocabulary {
    words: Vec<String>,
    occurrences: Vec<u32>,
}

impl Vocabulary {
    fn build(sources: &[Source]) -> Vocabulary {
        let mut ids: HashMap<&str, u32> = HashMap::new();
        let mut words = Vec::new();
        let mut occurrences = Vec::new();
        for source in sources {
            for word in source
                .body
                .split(|c: char| !c.is_alphanumeric())
                .filter(|w| !w.is_empty() && w.len() <= 40)
            {
                let id = *ids.entry(word).or_insert_with(|| {
                    words.push(word.to_string());
                    u32::try_from(words.len() - 1).unwrap_or(u32::MAX)
                });
                occurrences.push(id);
            }
        }
        Vocabulary { words, occurrences }
    }

    fn draw(&self, rng: &mut Rng) -> &str {
        if self.occurrences.is_empty() {
            return "gemini";
        }
        let id = self.occurrences[rng.below(self.occurrences.len())];
        self.words.get(id as usize).map_or("gemini", String::as_str)
    }
}

/// splitmix64: small, fast, and the same on every platform, which is all a generator of test
/// data needs.
struct Rng(u64);

impl Rng {
    fn new(seed: u64, stream: u64) -> Rng {
        let mut rng = Rng(seed ^ stream.wrapping_mul(0xA076_1D64_78BD_642F));
        rng.next();
        rng
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }

    /// Uniform in [0, n); n must be positive.
    fn below(&mut self, n: usize) -> usize {
        (self.unit() * n as f64) as usize % n.max(1)
    }
}

/// Reads and extracts every page of the corpus, in a fixed order. robots.txt files are left
/// out, as a crawl leaves them out of the index.
fn load_corpus(root: &Path) -> Result<Vec<Source>> {
    let files = corpus::files(root, |_| true)
        .with_context(|| format!("reading the corpus at {}", root.display()))?;
    let mut sources = Vec::with_capacity(files.len());
    let mut skipped = 0usize;
    for file in files {
        let Ok(rel) = file.strip_prefix(root) else {
            continue;
        };
        let parts: Vec<String> = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        let (Some(host), Some(name)) = (parts.first(), parts.last()) else {
            continue;
        };
        if parts.len() < 2 || name == "robots.txt" || name.starts_with('.') {
            continue;
        }
        let path = parts[1..].join("/");
        let Ok(url) = url::Url::parse(&format!("gemini://{host}/{path}")) else {
            skipped += 1;
            continue;
        };
        let meta = if name.ends_with(".gmi") || name.ends_with(".gemini") {
            "text/gemini"
        } else {
            "text/plain"
        };
        let bytes = std::fs::read(&file).with_context(|| format!("reading {}", file.display()))?;
        let page = geode::content::extract(&url, meta, &bytes);
        let lang = page
            .lang
            .as_deref()
            .and_then(geode::index::analysis::normalize_lang)
            .or_else(|| detect_language(&page.title, &page.body));
        let link_labels = page.link_labels();
        sources.push(Source {
            host: host.clone(),
            path,
            title: page.title,
            headings: page.headings.join("\n"),
            link_labels,
            body: page.body,
            mime: page.mime,
            lang,
        });
    }
    if skipped > 0 {
        eprintln!("bench_search: skipped {skipped} files whose path is not a valid URL");
    }
    Ok(sources)
}

/// Bytes of the body looked at to detect a language, as geode's writer does.
const DETECT_SAMPLE_BYTES: usize = 2048;

/// The page's language, detected by geode's own detector from the title and the start of the
/// body. The corpus pages come without a `lang=` parameter; the value is given to both engines
/// (geode would detect the same by itself, PostgreSQL needs it in its `lang` column).
fn detect_language(title: &str, body: &str) -> Option<String> {
    let mut end = body.len().min(DETECT_SAMPLE_BYTES);
    while !body.is_char_boundary(end) {
        end -= 1;
    }
    let sample = format!("{title}\n{}", &body[..end]);
    geode::index::analysis::detect_lang(&sample).map(str::to_string)
}

/// Copy `copy` of `source`: the page itself for copy 0, a perturbed page on capsule
/// `c{copy}.{host}` otherwise.
// `..PageDoc::default()` keeps this compiling while the index grows new fields; until it does,
// clippy sees the update as needless.
#[allow(clippy::needless_update)]
fn make_doc(source: &Source, copy: u64, rng: &mut Rng, vocab: &Vocabulary) -> PageDoc {
    let (host, title, body) = if copy == 0 {
        (
            source.host.clone(),
            source.title.clone(),
            source.body.clone(),
        )
    } else {
        (
            format!("c{copy}.{}", source.host),
            perturb_title(&source.title, rng, vocab),
            perturb_body(&source.body, rng, vocab),
        )
    };
    PageDoc {
        url: format!("gemini://{host}/{}", source.path),
        host,
        title,
        size: body.len() as u64,
        body,
        headings: source.headings.clone(),
        link_labels: source.link_labels.clone(),
        mime: source.mime.clone(),
        lang: source.lang.clone(),
        fetched_at: FETCHED_BASE + (rng.next() % (365 * 86_400)) as i64,
        ..PageDoc::default()
    }
}

fn perturb_title(title: &str, rng: &mut Rng, vocab: &Vocabulary) -> String {
    if !rng.chance(CHANGE_TITLE) {
        return title.to_string();
    }
    let mut words: Vec<&str> = title.split(' ').collect();
    let at = rng.below(words.len());
    words[at] = vocab.draw(rng);
    words.join(" ")
}

fn perturb_body(body: &str, rng: &mut Rng, vocab: &Vocabulary) -> String {
    let mut paragraphs: Vec<&str> = body.split("\n\n").collect();
    for i in 1..paragraphs.len() {
        if rng.chance(SWAP_PARAGRAPHS) {
            paragraphs.swap(i - 1, i);
        }
    }
    let mut out = String::with_capacity(body.len() + body.len() / 8);
    for (p, paragraph) in paragraphs.iter().enumerate() {
        if p > 0 {
            out.push_str("\n\n");
        }
        let mut first = true;
        for line in paragraph.split('\n') {
            if rng.chance(DROP_LINE) {
                continue;
            }
            let times = if rng.chance(DUPLICATE_LINE) { 2 } else { 1 };
            let line = perturb_line(line, rng, vocab);
            for _ in 0..times {
                if !first {
                    out.push('\n');
                }
                out.push_str(&line);
                first = false;
            }
        }
    }
    out
}

/// Replaces some words of a line; spacing and the other words stay as they were.
fn perturb_line(line: &str, rng: &mut Rng, vocab: &Vocabulary) -> String {
    let mut out = String::with_capacity(line.len() + 16);
    for (i, token) in line.split(' ').enumerate() {
        if i > 0 {
            out.push(' ');
        }
        if token.chars().any(char::is_alphanumeric) && rng.chance(REPLACE_WORD) {
            out.push_str(vocab.draw(rng));
        } else {
            out.push_str(token);
        }
    }
    out
}

/// Appends `value` to a PostgreSQL COPY text-format row: backslash, tab, newline and carriage
/// return escaped. NUL characters cannot be stored in PostgreSQL text and become spaces.
fn push_copy_field(row: &mut String, value: &str) {
    for c in value.chars() {
        match c {
            '\\' => row.push_str("\\\\"),
            '\t' => row.push_str("\\t"),
            '\n' => row.push_str("\\n"),
            '\r' => row.push_str("\\r"),
            '\0' => row.push(' '),
            c => row.push(c),
        }
    }
}

/// One COPY row: id, url, host, title, body, lang, mime, size.
fn copy_row(id: u64, doc: &PageDoc) -> String {
    let mut row = String::with_capacity(doc.body.len() + doc.title.len() + 256);
    row.push_str(&id.to_string());
    for field in [&doc.url, &doc.host, &doc.title, &doc.body] {
        row.push('\t');
        push_copy_field(&mut row, field);
    }
    row.push('\t');
    match &doc.lang {
        Some(lang) => push_copy_field(&mut row, lang),
        None => row.push_str("\\N"),
    }
    row.push('\t');
    push_copy_field(&mut row, &doc.mime);
    row.push('\t');
    row.push_str(&doc.size.to_string());
    row.push('\n');
    row
}

/// FNV-1a, to fingerprint the generated documents: the driver reloads PostgreSQL only when the
/// documents changed.
struct Fingerprint(u64);

impl Fingerprint {
    fn add(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 ^= u64::from(*b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01B3);
        }
    }
}

#[derive(Serialize)]
struct BuildReport {
    docs: u64,
    corpus_pages: usize,
    seed: u64,
    fingerprint: String,
    text_bytes: u64,
    /// Generating, extracting and adding documents, up to and including the commit.
    index_s: f64,
    /// Waiting for Tantivy's merge policy to finish the merges the commit started.
    merge_s: f64,
    segments_after_commit: usize,
    segments: usize,
}

fn generate(corpus: &Path, docs: u64, seed: u64, index_dir: &Path, tsv: &Path) -> Result<()> {
    let started = Instant::now();
    let sources = load_corpus(corpus)?;
    if sources.is_empty() {
        bail!("no pages found under {}", corpus.display());
    }
    let vocab = Vocabulary::build(&sources);
    eprintln!(
        "bench_search: {} corpus pages extracted, {} distinct words, in {:.1}s",
        sources.len(),
        vocab.words.len(),
        started.elapsed().as_secs_f64()
    );

    let mut indexer = Indexer::open_or_create(index_dir)
        .with_context(|| format!("opening the index at {}", index_dir.display()))?;
    let mut out = BufWriter::with_capacity(
        1 << 20,
        File::create(tsv).with_context(|| format!("creating {}", tsv.display()))?,
    );
    let mut fingerprint = Fingerprint(0xCBF2_9CE4_8422_2325);
    let mut text_bytes = 0u64;
    let pages = sources.len() as u64;
    let mut last_report = Instant::now();
    for id in 0..docs {
        let source = &sources[(id % pages) as usize];
        let mut rng = Rng::new(seed, id);
        let doc = make_doc(source, id / pages, &mut rng, &vocab);
        let row = copy_row(id, &doc);
        fingerprint.add(row.as_bytes());
        text_bytes += doc.body.len() as u64 + doc.title.len() as u64;
        out.write_all(row.as_bytes())
            .with_context(|| format!("writing {}", tsv.display()))?;
        indexer.upsert(&doc)?;
        if last_report.elapsed().as_secs() >= 10 {
            let secs = started.elapsed().as_secs_f64();
            eprintln!(
                "bench_search: {}/{docs} documents ({:.0} docs/s, {:.0} MB of text)",
                id + 1,
                (id + 1) as f64 / secs,
                text_bytes as f64 / 1e6
            );
            last_report = Instant::now();
        }
    }
    out.flush()
        .with_context(|| format!("writing {}", tsv.display()))?;
    eprintln!("bench_search: committing");
    indexer.commit(1)?;
    drop(indexer);
    let index_s = started.elapsed().as_secs_f64();

    // One commit at the end leaves one segment per writer buffer; a crawl's index is merged as
    // it grows. Let Tantivy's default merge policy do what it would after that commit and wait
    // for it (the Indexer does not wait for merges when dropped), then compact as a crawl's end
    // does.
    let merge_started = Instant::now();
    let index = tantivy::Index::open_in_dir(index_dir)?;
    let segments_after_commit = index.searchable_segment_ids()?.len();
    eprintln!("bench_search: {segments_after_commit} segments; waiting for merges");
    let mut writer: tantivy::IndexWriter = index.writer_with_num_threads(1, 64 << 20)?;
    let mut prepared = writer.prepare_commit()?;
    prepared.set_payload("1");
    prepared.commit()?;
    writer.wait_merging_threads()?;
    // Then what a crawl does when it ends: the segments merged into one.
    let mut indexer = Indexer::open_or_create(index_dir)?;
    let compacted = indexer.compact()?;
    drop(indexer);
    eprintln!("bench_search: {compacted} segments merged into one");
    let segments = index.searchable_segment_ids()?.len();
    let report = BuildReport {
        docs,
        corpus_pages: sources.len(),
        seed,
        fingerprint: format!("{:016x}", fingerprint.0),
        text_bytes,
        index_s,
        merge_s: merge_started.elapsed().as_secs_f64(),
        segments_after_commit,
        segments,
    };
    println!("{}", serde_json::to_string(&report)?);
    Ok(())
}

// --- reuse check --------------------------------------------------------------------------

fn check(index: &Path, docs: u64) -> ExitCode {
    match SearchIndex::open(index) {
        Ok(si) if si.num_docs() == docs => ExitCode::SUCCESS,
        Ok(si) => {
            eprintln!(
                "bench_search: the index holds {} documents, not {docs}",
                si.num_docs()
            );
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("bench_search: cannot reuse the index: {e}");
            ExitCode::FAILURE
        }
    }
}

// --- timing -------------------------------------------------------------------------------

struct QueryLine {
    kind: String,
    text: String,
}

fn read_queries(path: &Path) -> Result<Vec<QueryLine>> {
    let file = File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let mut queries = Vec::new();
    for (n, line) in BufReader::new(file).lines().enumerate() {
        let line = line?;
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        let mut cols = line.split('\t');
        let (Some(kind), Some(text)) = (cols.next(), cols.next()) else {
            bail!("{}:{}: needs kind<TAB>query", path.display(), n + 1);
        };
        queries.push(QueryLine {
            kind: kind.to_string(),
            text: text.to_string(),
        });
    }
    Ok(queries)
}

#[derive(Serialize)]
struct QueryRecord {
    kind: String,
    query: String,
    /// The error of the warm-up run; a query that fails is not timed.
    error: Option<String>,
    total: Option<usize>,
    hits: Option<usize>,
    top_url: Option<String>,
    warmup_ms: f64,
    /// With a model: the share of the query's exact 20 nearest pages that the binary codes'
    /// shortlist finds too.
    #[serde(skip_serializing_if = "Option::is_none")]
    shortlist_recall: Option<f64>,
    times_ms: Vec<f64>,
    /// The CPU time of the searching thread per round: unlike wall time, it hardly moves when
    /// another process shares the cores.
    cpu_ms: Vec<f64>,
}

/// CPU time used by the calling thread, in milliseconds (Tantivy searches on the caller's
/// thread unless given an executor).
fn thread_cpu_ms() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec for clock_gettime to write.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 * 1e3 + ts.tv_nsec as f64 / 1e6
}

#[derive(Serialize)]
struct QueryReport {
    engine: &'static str,
    docs: u64,
    open_ms: f64,
    rounds: usize,
    queries: Vec<QueryRecord>,
}

fn open_semantic(model: &Path, data: &Path) -> Result<Semantic> {
    let embedder = Embedder::load(model)?;
    let semantic = Semantic::open(embedder, data)?;
    if semantic.is_empty() {
        bail!("no vectors of this model in {}", data.display());
    }
    Ok(semantic)
}

/// One search as a user runs it: by words alone, or by words and meaning with a model.
fn search_once(
    si: &SearchIndex,
    semantic: Option<&Semantic>,
    text: &str,
    limit: usize,
) -> Result<geode::index::SearchResults> {
    let Some(semantic) = semantic else {
        return Ok(si.search(text, limit, 0)?);
    };
    let parsed = geode::query::parse(text).map_err(|e| anyhow::anyhow!("{e}"))?;
    let options = SearchOptions {
        limit,
        ..SearchOptions::default()
    };
    let near = semantic.neighbours(si, text, &parsed, &options)?;
    Ok(si.search_hybrid(text, &parsed, &options, near.as_deref())?)
}

/// Gaussian noise (Box-Muller) of standard deviation `sigma`.
fn gaussian(rng: &mut Rng, sigma: f32) -> f32 {
    let u1 = rng.unit().max(1e-12);
    let u2 = rng.unit();
    ((-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()) as f32 * sigma
}

#[derive(Serialize)]
struct VectorReport {
    corpus_pages: usize,
    embed_s: f64,
    pages_per_second: f64,
    docs: u64,
    write_s: f64,
    bytes: u64,
    bytes_per_page: f64,
    noise: f32,
    peak_rss_bytes: u64,
}

fn vectors(
    corpus: &Path,
    docs: u64,
    seed: u64,
    data: &Path,
    model: &Path,
    noise: f32,
) -> Result<()> {
    let sources = load_corpus(corpus)?;
    if sources.is_empty() {
        bail!("no pages found under {}", corpus.display());
    }
    let embedder = Embedder::load(model)?;
    let started = Instant::now();
    let texts: Vec<String> = sources
        .iter()
        .map(|s| geode::embed::input::page_text(&s.title, &s.headings, &s.body))
        .collect();
    let mut base = Vec::with_capacity(texts.len());
    for (i, chunk) in texts.chunks(64).enumerate() {
        let refs: Vec<&str> = chunk.iter().map(String::as_str).collect();
        base.extend(embedder.embed(&refs)?);
        if i % 10 == 9 {
            eprintln!(
                "bench_search: {} of {} corpus pages embedded ({:.1} pages/s)",
                base.len(),
                texts.len(),
                base.len() as f64 / started.elapsed().as_secs_f64()
            );
        }
    }
    let embed_s = started.elapsed().as_secs_f64();
    let written = Instant::now();
    let _ = std::fs::remove_dir_all(geode::datadir::vectors_path(data));
    let mut writer = Writer::open(data, embedder.fingerprint(), embedder.dim())?;
    let pages = sources.len() as u64;
    for id in 0..docs {
        let source = &sources[(id % pages) as usize];
        let copy = id / pages;
        let host = match copy {
            0 => source.host.clone(),
            k => format!("c{k}.{}", source.host),
        };
        let url = format!("gemini://{host}/{}", source.path);
        let mut v = base[(id % pages) as usize].clone();
        if copy > 0 {
            let mut rng = Rng::new(seed ^ 0x005E_ED0F_7EC7, id);
            for x in v.iter_mut() {
                *x += gaussian(&mut rng, noise);
            }
            let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
            v.iter_mut().for_each(|x| *x /= norm);
        }
        let mut key = [0u8; geode::embed::input::KEY_BYTES];
        key[..8].copy_from_slice(&id.to_le_bytes());
        writer.put(&url, &key, &v)?;
    }
    writer.sync()?;
    let report = VectorReport {
        corpus_pages: sources.len(),
        embed_s,
        pages_per_second: sources.len() as f64 / embed_s,
        docs,
        write_s: written.elapsed().as_secs_f64(),
        bytes: writer.bytes(),
        bytes_per_page: writer.bytes() as f64 / docs as f64,
        noise,
        peak_rss_bytes: geode::embed::peak_rss(),
    };
    println!("{}", serde_json::to_string(&report)?);
    Ok(())
}

fn query(
    index: &Path,
    queries: &Path,
    rounds: usize,
    limit: usize,
    out: &Path,
    semantic: Option<&Semantic>,
) -> Result<()> {
    let lines = read_queries(queries)?;
    let opened = Instant::now();
    let si = SearchIndex::open(index)?;
    let open_ms = opened.elapsed().as_secs_f64() * 1e3;

    // Warm-up: every query once (this also fills the page cache and Tantivy's caches).
    let mut records: Vec<QueryRecord> = lines
        .iter()
        .map(|q| {
            let t = Instant::now();
            let result = search_once(&si, semantic, &q.text, limit);
            let warmup_ms = t.elapsed().as_secs_f64() * 1e3;
            let (error, total, hits, top_url) = match result {
                Ok(r) => (
                    None,
                    Some(r.total),
                    Some(r.hits.len()),
                    r.hits.first().map(|h| h.url.clone()),
                ),
                Err(e) => (Some(e.to_string()), None, None, None),
            };
            let shortlist_recall = semantic.and_then(|semantic| {
                let k = geode::index::FUSION.depth;
                let fast = semantic.nearest(&q.text, k).ok()?;
                let exact = semantic.nearest_exact(&q.text, k).ok()?;
                let found = exact
                    .iter()
                    .filter(|n| fast.iter().any(|f| f.url == n.url))
                    .count();
                Some(found as f64 / exact.len().max(1) as f64)
            });
            QueryRecord {
                shortlist_recall,
                kind: q.kind.clone(),
                query: q.text.clone(),
                error,
                total,
                hits,
                top_url,
                warmup_ms,
                times_ms: Vec::with_capacity(rounds),
                cpu_ms: Vec::with_capacity(rounds),
            }
        })
        .collect();

    // Rounds go through the whole list each time, as the PostgreSQL side does.
    for _ in 0..rounds {
        for record in records.iter_mut().filter(|r| r.error.is_none()) {
            let (t, cpu) = (Instant::now(), thread_cpu_ms());
            let result = search_once(&si, semantic, &record.query, limit);
            let ms = t.elapsed().as_secs_f64() * 1e3;
            let cpu_ms = thread_cpu_ms() - cpu;
            std::hint::black_box(&result);
            if let Err(e) = result {
                record.error = Some(e.to_string());
                continue;
            }
            record.times_ms.push(ms);
            record.cpu_ms.push(cpu_ms);
        }
    }
    let report = QueryReport {
        engine: if semantic.is_some() {
            "geode-hybrid"
        } else {
            "geode"
        },
        docs: si.num_docs(),
        open_ms,
        rounds,
        queries: records,
    };
    let file = File::create(out).with_context(|| format!("creating {}", out.display()))?;
    serde_json::to_writer_pretty(BufWriter::new(file), &report)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copy_rows_escape_what_copy_would_misread() {
        let doc = PageDoc {
            url: "gemini://h/p".to_string(),
            host: "h".to_string(),
            title: "a\tb".to_string(),
            body: "line\\one\nline two\r\0end".to_string(),
            mime: "text/gemini".to_string(),
            size: 7,
            ..PageDoc::default()
        };
        assert_eq!(
            copy_row(3, &doc),
            "3\tgemini://h/p\th\ta\\tb\tline\\\\one\\nline two\\r end\t\\N\ttext/gemini\t7\n"
        );
    }

    #[test]
    fn the_same_seed_gives_the_same_copy_and_copies_differ() {
        let source = Source {
            host: "example.org".to_string(),
            path: "a.gmi".to_string(),
            title: "A title of words".to_string(),
            body: (0..40)
                .map(|i| format!("line {i} with several words in it"))
                .collect::<Vec<_>>()
                .join("\n"),
            headings: String::new(),
            link_labels: String::new(),
            mime: "text/gemini".to_string(),
            lang: Some("en".to_string()),
        };
        let vocab = Vocabulary::build(std::slice::from_ref(&source));
        let a = make_doc(&source, 3, &mut Rng::new(1, 9), &vocab);
        let b = make_doc(&source, 3, &mut Rng::new(1, 9), &vocab);
        let c = make_doc(&source, 3, &mut Rng::new(1, 10), &vocab);
        assert_eq!(a, b);
        assert_ne!(a.body, c.body);
        assert_eq!(a.host, "c3.example.org");
        assert_eq!(a.url, "gemini://c3.example.org/a.gmi");
        assert_eq!(a.size, a.body.len() as u64);
        let original = make_doc(&source, 0, &mut Rng::new(1, 0), &vocab);
        assert_eq!(original.body, source.body);
        assert_eq!(original.url, "gemini://example.org/a.gmi");
    }
}
