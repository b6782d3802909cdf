//! A BERT encoder (the architecture of MiniLM and the other small sentence-embedding models)
//! over candle's tensors, forward pass only: token, position and type embeddings, then layers of
//! self-attention and a feed-forward block, each followed by a residual sum and a layer norm.
//! The weights are read from a `model.safetensors` in Hugging Face's layout (names with or
//! without the `bert.` prefix). [`Bert::pooled`] gives a sentence's vector: the mean of its
//! tokens' last hidden states, L2-normalised, the pooling of sentence-transformers.

use candle_core::{DType, Device, Module, Tensor, D};
use candle_nn::{embedding, layer_norm, linear, Embedding, LayerNorm, Linear, VarBuilder};

/// The model's shape, from its `config.json` (the fields this encoder reads).
#[derive(Debug, Clone, serde::Deserialize, serde::Serialize)]
pub struct Config {
    pub vocab_size: usize,
    pub hidden_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    pub intermediate_size: usize,
    pub max_position_embeddings: usize,
    #[serde(default = "two")]
    pub type_vocab_size: usize,
    #[serde(default = "bert_eps")]
    pub layer_norm_eps: f64,
    #[serde(default = "gelu")]
    pub hidden_act: String,
}

fn two() -> usize {
    2
}

fn bert_eps() -> f64 {
    1e-12
}

fn gelu() -> String {
    "gelu".to_string()
}

impl Config {
    /// What this encoder cannot run, said plainly.
    pub fn check(&self) -> Result<(), String> {
        if self.hidden_act != "gelu" {
            return Err(format!(
                "hidden_act {:?} is not supported (only \"gelu\")",
                self.hidden_act
            ));
        }
        if self.num_attention_heads == 0 || self.hidden_size % self.num_attention_heads != 0 {
            return Err(format!(
                "hidden_size {} is not a multiple of num_attention_heads {}",
                self.hidden_size, self.num_attention_heads
            ));
        }
        if self.num_hidden_layers == 0 || self.max_position_embeddings == 0 {
            return Err("no layers or no positions".to_string());
        }
        Ok(())
    }
}

struct Layer {
    /// The query, key and value projections as one: a product of three times the width
    /// instead of three products (fewer passes over the input, a third of the calls).
    qkv: Linear,
    attention_out: Linear,
    attention_norm: LayerNorm,
    intermediate: Linear,
    output: Linear,
    output_norm: LayerNorm,
}

/// The encoder, its weights mapped from the file.
pub struct Bert {
    words: Embedding,
    positions: Embedding,
    types: Embedding,
    norm: LayerNorm,
    layers: Vec<Layer>,
    heads: usize,
    head_size: usize,
}

impl Bert {
    /// The encoder of `config` with the weights `vb` holds.
    pub fn load(vb: VarBuilder, config: &Config) -> candle_core::Result<Bert> {
        let vb = if vb.contains_tensor("embeddings.word_embeddings.weight") {
            vb
        } else {
            vb.pp("bert")
        };
        let (h, eps) = (config.hidden_size, config.layer_norm_eps);
        let e = vb.pp("embeddings");
        let words = embedding(config.vocab_size, h, e.pp("word_embeddings"))?;
        let positions = embedding(
            config.max_position_embeddings,
            h,
            e.pp("position_embeddings"),
        )?;
        let types = embedding(config.type_vocab_size, h, e.pp("token_type_embeddings"))?;
        let norm = layer_norm(h, eps, e.pp("LayerNorm"))?;
        let mut layers = Vec::with_capacity(config.num_hidden_layers);
        for i in 0..config.num_hidden_layers {
            let l = vb.pp(format!("encoder.layer.{i}"));
            let a = l.pp("attention");
            let parts = ["self.query", "self.key", "self.value"]
                .iter()
                .map(|name| linear(h, h, a.pp(name)))
                .collect::<candle_core::Result<Vec<Linear>>>()?;
            let weight = Tensor::cat(&parts.iter().map(|p| p.weight()).collect::<Vec<_>>(), 0)?;
            let bias = Tensor::cat(
                &parts.iter().filter_map(|p| p.bias()).collect::<Vec<_>>(),
                0,
            )?;
            layers.push(Layer {
                qkv: Linear::new(weight, Some(bias)),
                attention_out: linear(h, h, a.pp("output.dense"))?,
                attention_norm: layer_norm(h, eps, a.pp("output.LayerNorm"))?,
                intermediate: linear(h, config.intermediate_size, l.pp("intermediate.dense"))?,
                output: linear(config.intermediate_size, h, l.pp("output.dense"))?,
                output_norm: layer_norm(h, eps, l.pp("output.LayerNorm"))?,
            });
        }
        Ok(Bert {
            words,
            positions,
            types,
            norm,
            layers,
            heads: config.num_attention_heads,
            head_size: h / config.num_attention_heads,
        })
    }

    /// The last hidden states of a batch: `ids` and `mask` are (batch, tokens), the mask 1 for
    /// a token and 0 for padding. Returns (batch, tokens, hidden).
    fn forward(&self, ids: &Tensor, mask: &Tensor) -> candle_core::Result<Tensor> {
        let (batch, tokens) = ids.dims2()?;
        let device = ids.device();
        let positions = Tensor::arange(0u32, tokens as u32, device)?.unsqueeze(0)?;
        let types = ids.zeros_like()?;
        let mut x = self
            .words
            .forward(ids)?
            .broadcast_add(&self.positions.forward(&positions)?)?
            .add(&self.types.forward(&types)?)?;
        x = self.norm.forward(&x)?;
        // Padding is kept out of attention by a large negative bias on its scores.
        let bias =
            ((mask.to_dtype(DType::F32)? - 1.0)? * 10_000.0)?.reshape((batch, 1, 1, tokens))?;
        let scale = 1.0 / (self.head_size as f64).sqrt();
        for layer in &self.layers {
            let split = |t: Tensor| -> candle_core::Result<Tensor> {
                t.reshape((batch, tokens, self.heads, self.head_size))?
                    .transpose(1, 2)?
                    .contiguous()
            };
            let hidden = self.heads * self.head_size;
            let qkv = layer.qkv.forward(&x)?;
            let q = split(qkv.narrow(2, 0, hidden)?)?;
            let k = split(qkv.narrow(2, hidden, hidden)?)?;
            let v = split(qkv.narrow(2, 2 * hidden, hidden)?)?;
            let scores = (q.matmul(&k.t()?)? * scale)?.broadcast_add(&bias)?;
            let weights = candle_nn::ops::softmax_last_dim(&scores)?;
            let context = weights.matmul(&v)?.transpose(1, 2)?.reshape((
                batch,
                tokens,
                self.heads * self.head_size,
            ))?;
            let attended = layer
                .attention_norm
                .forward(&(layer.attention_out.forward(&context)? + &x)?)?;
            let inner = layer.intermediate.forward(&attended)?.gelu_erf()?;
            x = layer
                .output_norm
                .forward(&(layer.output.forward(&inner)? + &attended)?)?;
        }
        Ok(x)
    }

    /// One vector per sequence of a batch: the mean of its tokens' hidden states (padding left
    /// out), L2-normalised. Returns (batch, hidden).
    pub fn pooled(&self, ids: &Tensor, mask: &Tensor) -> candle_core::Result<Tensor> {
        let hidden = self.forward(ids, mask)?;
        let m = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
        let sum = hidden.broadcast_mul(&m)?.sum(1)?;
        let count = m.sum(1)?.clamp(1.0, f64::MAX)?;
        let mean = sum.broadcast_div(&count)?;
        let norm = mean
            .sqr()?
            .sum_keepdim(D::Minus1)?
            .sqrt()?
            .clamp(1e-12, f64::MAX)?;
        mean.broadcast_div(&norm)
    }
}

/// The CPU, where geode runs its models.
pub fn device() -> Device {
    Device::Cpu
}
