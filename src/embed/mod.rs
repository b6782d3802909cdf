//! Meaning: pages and queries as vectors of a small sentence-embedding model, so that a search
//! finds a page that says what the searcher means in other words ("complaints about golang"
//! for "Things I hate in Go").
//!
//! The model is optional and local: a folder in the usual layout (`config.json`,
//! `tokenizer.json`, `model.safetensors`), given with `--model DIR` or put in the data
//! directory's `model/`. [`Embedder`] loads it and turns texts into unit vectors (`bert.rs`, on
//! the CPU in pure Rust). `geode embed` ([`crate::embed::run`]) gives every indexed page a
//! vector, stored beside the index by [`store`] under a key of what was embedded
//! ([`input`]), so that recrawls and `geode reindex` embed only what changed; [`Semantic`]
//! answers a query with the nearest pages, which the search fuses with its own ranking
//! (`index/search/fuse.rs`). Without a model, geode searches by words alone, as before.
//!
//! Nothing here runs in the crawl: embedding is a step of its own, with a budget, so that it
//! never delays a request nor weighs on the crawl's memory.

mod bert;
pub mod input;
pub mod quant;
mod run;
pub mod store;

pub use run::{peak_rss, run, EmbedConfig, EmbedSummary};

use std::path::{Path, PathBuf};

use candle_core::{DType, Tensor};
use candle_nn::VarBuilder;

use bert::{Bert, Config};

/// The most tokens of a page the model reads (its own limit may be lower): a title, headings
/// and the first paragraph or two. Each token more costs time, in a step that embeds every page.
pub const MAX_TOKENS: usize = 128;

/// How many texts are embedded in one pass of the model.
pub const BATCH: usize = 16;

/// Why a model cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    #[error("the model in {dir}: {what}")]
    Model { dir: PathBuf, what: String },
    #[error("running the model: {0}")]
    Run(String),
    #[error("the vectors in {path}: {what}")]
    Store { path: PathBuf, what: String },
    #[error(transparent)]
    Index(#[from] crate::index::IndexError),
}

impl From<candle_core::Error> for EmbedError {
    fn from(e: candle_core::Error) -> Self {
        EmbedError::Run(e.to_string())
    }
}

/// A sentence-embedding model, loaded.
pub struct Embedder {
    model: Bert,
    tokenizer: tokenizers::Tokenizer,
    dim: usize,
    max_tokens: usize,
    fingerprint: String,
    dir: PathBuf,
}

impl Embedder {
    /// Loads the model in `dir`: its `config.json`, `tokenizer.json` and `model.safetensors`.
    /// Every missing or unusable file is an error that names it.
    pub fn load(dir: &Path) -> Result<Embedder, EmbedError> {
        let fail = |what: String| EmbedError::Model {
            dir: dir.to_path_buf(),
            what,
        };
        let read = |name: &str| {
            std::fs::read(dir.join(name)).map_err(|e| fail(format!("cannot read {name}: {e}")))
        };
        let config_bytes = read("config.json")?;
        let config: Config = serde_json::from_slice(&config_bytes)
            .map_err(|e| fail(format!("config.json is not a BERT configuration: {e}")))?;
        config.check().map_err(fail)?;
        let tokenizer_bytes = read("tokenizer.json")?;
        let mut tokenizer = tokenizers::Tokenizer::from_bytes(&tokenizer_bytes)
            .map_err(|e| fail(format!("tokenizer.json: {e}")))?;
        let max_tokens = MAX_TOKENS.min(config.max_position_embeddings);
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(Some(tokenizers::TruncationParams {
                max_length: max_tokens,
                ..Default::default()
            }))
            .map_err(|e| fail(format!("tokenizer.json: {e}")))?;
        let weights = dir.join("model.safetensors");
        let header = safetensors_header(&weights).map_err(fail)?;
        // SAFETY: the file is mapped read-only; like every reader of a mapped file, this one
        // trusts that no one rewrites the model while geode runs.
        let vb = unsafe {
            VarBuilder::from_mmaped_safetensors(&[&weights], DType::F32, &bert::device())
        }
        .map_err(|e| fail(format!("model.safetensors: {e}")))?;
        let model = Bert::load(vb, &config).map_err(|e| fail(format!("model.safetensors: {e}")))?;
        let mut ctx = ring::digest::Context::new(&ring::digest::SHA256);
        for part in [&config_bytes[..], &tokenizer_bytes[..], &header[..]] {
            ctx.update(&(part.len() as u64).to_le_bytes());
            ctx.update(part);
        }
        ctx.update(&(max_tokens as u64).to_le_bytes());
        ctx.update(&input::RECIPE.to_le_bytes());
        let fingerprint = crate::digest::hex(&ctx.finish().as_ref()[..8]);
        Ok(Embedder {
            model,
            tokenizer,
            dim: config.hidden_size,
            max_tokens,
            fingerprint,
            dir: dir.to_path_buf(),
        })
    }

    /// The model in `explicit` when given (a folder that holds none is an error), else the one
    /// in the data directory's `model/`; `None` when there is none there.
    pub fn find(explicit: Option<&Path>, data_dir: &Path) -> Result<Option<Embedder>, EmbedError> {
        match explicit {
            Some(dir) => Embedder::load(dir).map(Some),
            None => {
                let dir = crate::datadir::model_path(data_dir);
                if dir.join("config.json").is_file() {
                    Embedder::load(&dir).map(Some)
                } else {
                    Ok(None)
                }
            }
        }
    }

    /// The vectors' dimensions.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Names the model and how pages are given to it: vectors of another fingerprint are
    /// never compared with this model's.
    pub fn fingerprint(&self) -> &str {
        &self.fingerprint
    }

    /// Where the model was loaded from.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// A unit vector for each text, in order.
    pub fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut out = Vec::with_capacity(texts.len());
        for chunk in texts.chunks(BATCH) {
            let encodings = self
                .tokenizer
                .encode_batch(chunk.to_vec(), true)
                .map_err(|e| EmbedError::Run(format!("tokenizing: {e}")))?;
            let longest = encodings
                .iter()
                .map(|e| e.get_ids().len().min(self.max_tokens))
                .max()
                .unwrap_or(0)
                .max(1);
            let mut ids = vec![0u32; chunk.len() * longest];
            let mut mask = vec![0u32; chunk.len() * longest];
            for (row, encoding) in encodings.iter().enumerate() {
                for (col, &id) in encoding.get_ids().iter().take(longest).enumerate() {
                    ids[row * longest + col] = id;
                    mask[row * longest + col] = 1;
                }
            }
            let device = bert::device();
            let ids = Tensor::from_vec(ids, (chunk.len(), longest), &device)?;
            let mask = Tensor::from_vec(mask, (chunk.len(), longest), &device)?;
            let pooled = self.model.pooled(&ids, &mask)?;
            out.extend(pooled.to_vec2::<f32>()?);
        }
        Ok(out)
    }
}

/// The header of a safetensors file (its tensors' names, types, shapes and offsets): what
/// names a model's weights without reading them all.
fn safetensors_header(path: &Path) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let mut file = std::fs::File::open(path).map_err(|e| {
        format!("cannot read model.safetensors: {e} (only safetensors weights are read)")
    })?;
    let mut len = [0u8; 8];
    file.read_exact(&mut len)
        .map_err(|e| format!("model.safetensors: {e}"))?;
    let len = u64::from_le_bytes(len);
    if len > 100 << 20 {
        return Err("model.safetensors: not a safetensors file".to_string());
    }
    let mut header = vec![0; len as usize];
    file.read_exact(&mut header)
        .map_err(|e| format!("model.safetensors: {e}"))?;
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    header.extend_from_slice(&size.to_le_bytes());
    Ok(header)
}

/// Which model, if any, a search uses besides words (`--model`, `--no-model`, or neither).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum ModelChoice {
    /// The data directory's `model/` when it holds one, else none.
    #[default]
    InDataDir,
    /// This folder (an error when it holds no usable model).
    Folder(PathBuf),
    /// Words alone.
    Off,
}

/// A query's nearest pages: the model and the vectors of one data directory.
pub struct Semantic {
    embedder: Embedder,
    vectors: store::Reader,
}

/// A page near a query.
#[derive(Debug, Clone, PartialEq)]
pub struct Neighbour {
    pub url: String,
    /// The cosine of the page's vector and the query's, in -1..=1.
    pub similarity: f32,
}

impl Semantic {
    /// The model and the vectors `geode embed` stored with it in `data_dir`. A data directory
    /// without vectors of this model searches as without a model, and says so once.
    pub fn open(embedder: Embedder, data_dir: &Path) -> Result<Semantic, EmbedError> {
        let vectors = store::Reader::open(data_dir, embedder.fingerprint(), embedder.dim())?;
        if vectors.is_empty() {
            tracing::warn!(
                model = %embedder.dir().display(),
                "no page has a vector of this model yet: run `geode embed` (searching by words alone)"
            );
        }
        Ok(Semantic { embedder, vectors })
    }

    /// The `k` pages nearest to `query`, nearest first.
    pub fn nearest(&self, query: &str, k: usize) -> Result<Vec<Neighbour>, EmbedError> {
        if self.vectors.is_empty() {
            return Ok(Vec::new());
        }
        self.vectors.nearest(&self.query_vector(query)?, k)
    }

    fn query_vector(&self, query: &str) -> Result<Vec<f32>, EmbedError> {
        self.embedder
            .embed(&[query])?
            .pop()
            .ok_or_else(|| EmbedError::Run("no vector for the query".to_string()))
    }

    /// The model `choice` names and the vectors stored for it in `data_dir`, for `geode
    /// search` and `geode serve`; `None` when the choice is words alone or no model is there. A
    /// model that cannot be loaded is an error, never a silent fall-back to words.
    pub fn load(choice: &ModelChoice, data_dir: &Path) -> Result<Option<Semantic>, EmbedError> {
        let explicit = match choice {
            ModelChoice::Off => return Ok(None),
            ModelChoice::Folder(dir) => Some(dir.as_path()),
            ModelChoice::InDataDir => None,
        };
        match Embedder::find(explicit, data_dir)? {
            Some(embedder) => Semantic::open(embedder, data_dir).map(Some),
            None => Ok(None),
        }
    }

    /// The pages nearest to a query by meaning, as [`crate::index::SearchIndex::search_hybrid`]
    /// takes them; `None` when meaning does not apply: a query that is not bare words
    /// ([`crate::index::meaning_applies`]), or one in a script the model was not trained on
    /// ([`reads`]). A word the index does not know is read as the index would correct it (a
    /// model reads a typo as other word pieces).
    pub fn neighbours(
        &self,
        index: &crate::index::SearchIndex,
        text: &str,
        parsed: &crate::query::Query,
        options: &crate::index::SearchOptions,
    ) -> Result<Option<Vec<(String, f32)>>, EmbedError> {
        if !crate::index::meaning_applies(text, parsed, options) || !reads(text) {
            return Ok(None);
        }
        let respelled = index.respelled(text, parsed);
        let read = respelled.as_deref().unwrap_or(text);
        let near = self.nearest(read, crate::index::FUSION.depth)?;
        Ok(Some(
            near.into_iter().map(|n| (n.url, n.similarity)).collect(),
        ))
    }

    /// [`Semantic::nearest`] reading every vector, however many (`bench-search` measures the
    /// shortlist of binary codes against it).
    pub fn nearest_exact(&self, query: &str, k: usize) -> Result<Vec<Neighbour>, EmbedError> {
        self.vectors.nearest_exact(&self.query_vector(query)?, k)
    }

    /// A number that changes when the vectors do (`geode embed` appended, marked or compacted
    /// rows): with [`crate::index::SearchIndex::version`], what the web frontend's `ETag`s
    /// rest on.
    pub fn version(&self) -> u64 {
        self.vectors.version()
    }

    /// Where the model was loaded from.
    pub fn model_dir(&self) -> &Path {
        self.embedder.dir()
    }

    /// How many pages have a vector.
    pub fn len(&self) -> usize {
        self.vectors.len()
    }

    pub fn is_empty(&self) -> bool {
        self.vectors.is_empty()
    }
}

/// Whether the model reads `text`: every letter of it in the Latin script. The models geode is
/// measured with (all-MiniLM-L6-v2) learnt English; a query in Greek, Cyrillic or Japanese
/// becomes pieces they know nothing of, and its nearest pages are noise that would push down
/// what the words found (on the natural set, two of its non-English queries fell a place).
pub fn reads(text: &str) -> bool {
    text.chars().filter(|c| c.is_alphabetic()).all(|c| {
        c.is_ascii_alphabetic()
            || ('\u{00C0}'..='\u{024F}').contains(&c)
            || ('\u{1E00}'..='\u{1EFF}').contains(&c)
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_model_reads_latin_letters_only() {
        assert!(super::reads("complaints about golang"));
        assert!(super::reads("création du normandy jug 2024"));
        assert!(!super::reads("αναμνήσεις ποίημα"));
        assert!(!super::reads("大阪旅行 お城めぐり"));
        assert!(!super::reads("кросс компиляция golang"));
    }
}
