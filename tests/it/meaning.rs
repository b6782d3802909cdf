//! Search by meaning (issue 44) with a tiny model this test builds: a one-layer BERT whose words
//! stand for a handful of concepts ("golang" and "go" the same one, "complaints" and "hate"
//! another), so that a query sharing no word with a page still finds it. Its attention and
//! feed-forward weights are zero, so each token's vector is its word's concept after the layer
//! norms, and a text's vector the mean of its words' concepts: the arithmetic of a real model's
//! pooling over a table anyone can read. `geode embed` stores the pages' vectors, `geode search
//! --model` fuses them with the ranking by words; without a model a search is what it was.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};

use geode_fixture::{FixtureConfig, FixtureServer};

use crate::support;

/// The concepts of the tiny model, each with the words that mean it.
const CONCEPTS: &[&[&str]] = &[
    &["go", "golang"],
    &["hate", "complaints", "annoyances", "dislike"],
    &["web", "websites", "pages"],
    &["bloated", "heavy", "megabytes", "weigh"],
    &["bread", "sourdough", "loaf", "baking", "flour"],
    &["error", "errors", "handling"],
];

/// Dimensions: one per concept and two left empty.
const HIDDEN: usize = 8;

fn geode(args: &[&str]) -> Output {
    Command::new(support::geode_bin())
        .args(args)
        .output()
        .unwrap()
}

fn ok_json(out: &Output) -> serde_json::Value {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Writes the tiny model's `config.json`, `tokenizer.json` and `model.safetensors` into `dir`.
fn write_tiny_model(dir: &Path) {
    let mut vocab: Vec<&str> = vec!["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"];
    let specials = vocab.len();
    for words in CONCEPTS {
        vocab.extend(words.iter());
    }
    let config = serde_json::json!({
        "architectures": ["BertModel"],
        "model_type": "bert",
        "vocab_size": vocab.len(),
        "hidden_size": HIDDEN,
        "num_hidden_layers": 1,
        "num_attention_heads": 2,
        "intermediate_size": 4,
        "max_position_embeddings": 64,
        "type_vocab_size": 2,
        "layer_norm_eps": 1e-12,
        "hidden_act": "gelu",
    });
    std::fs::write(dir.join("config.json"), config.to_string()).unwrap();
    let ids: serde_json::Map<String, serde_json::Value> = vocab
        .iter()
        .enumerate()
        .map(|(i, w)| (w.to_string(), serde_json::json!(i)))
        .collect();
    let special = |id: usize, content: &str| {
        serde_json::json!({"id": id, "content": content, "single_word": false, "lstrip": false,
            "rstrip": false, "normalized": false, "special": true})
    };
    let tokenizer = serde_json::json!({
        "version": "1.0",
        "truncation": null,
        "padding": null,
        "added_tokens": [special(0, "[PAD]"), special(1, "[UNK]"), special(2, "[CLS]"),
            special(3, "[SEP]"), special(4, "[MASK]")],
        "normalizer": {"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true,
            "strip_accents": null, "lowercase": true},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": {"type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}},
                       {"Sequence": {"id": "A", "type_id": 0}},
                       {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}},
                     {"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": "[SEP]", "type_id": 0}},
                     {"Sequence": {"id": "B", "type_id": 1}},
                     {"SpecialToken": {"id": "[SEP]", "type_id": 1}}],
            "special_tokens": {
                "[CLS]": {"id": "[CLS]", "ids": [2], "tokens": ["[CLS]"]},
                "[SEP]": {"id": "[SEP]", "ids": [3], "tokens": ["[SEP]"]}}},
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": true},
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
            "max_input_chars_per_word": 100, "vocab": ids},
    });
    std::fs::write(dir.join("tokenizer.json"), tokenizer.to_string()).unwrap();

    // Every word of a concept embeds as that concept's axis; special and unknown tokens as
    // nothing. Everything else is zero, but the layer norms' scales.
    let mut tensors: BTreeMap<String, (Vec<usize>, Vec<f32>)> = BTreeMap::new();
    let mut words = vec![0f32; vocab.len() * HIDDEN];
    let mut row = specials;
    for (concept, members) in CONCEPTS.iter().enumerate() {
        for _ in members.iter() {
            words[row * HIDDEN + concept] = 1.0;
            row += 1;
        }
    }
    let mut put = |name: &str, shape: Vec<usize>, data: Vec<f32>| {
        tensors.insert(name.to_string(), (shape, data));
    };
    let zeros = |n: usize| vec![0f32; n];
    let ones = |n: usize| vec![1f32; n];
    put(
        "embeddings.word_embeddings.weight",
        vec![vocab.len(), HIDDEN],
        words,
    );
    put(
        "embeddings.position_embeddings.weight",
        vec![64, HIDDEN],
        zeros(64 * HIDDEN),
    );
    put(
        "embeddings.token_type_embeddings.weight",
        vec![2, HIDDEN],
        zeros(2 * HIDDEN),
    );
    put("embeddings.LayerNorm.weight", vec![HIDDEN], ones(HIDDEN));
    put("embeddings.LayerNorm.bias", vec![HIDDEN], zeros(HIDDEN));
    let l = "encoder.layer.0";
    for name in ["query", "key", "value"] {
        put(
            &format!("{l}.attention.self.{name}.weight"),
            vec![HIDDEN, HIDDEN],
            zeros(HIDDEN * HIDDEN),
        );
        put(
            &format!("{l}.attention.self.{name}.bias"),
            vec![HIDDEN],
            zeros(HIDDEN),
        );
    }
    put(
        &format!("{l}.attention.output.dense.weight"),
        vec![HIDDEN, HIDDEN],
        zeros(HIDDEN * HIDDEN),
    );
    put(
        &format!("{l}.attention.output.dense.bias"),
        vec![HIDDEN],
        zeros(HIDDEN),
    );
    for norm in ["attention.output.LayerNorm", "output.LayerNorm"] {
        put(&format!("{l}.{norm}.weight"), vec![HIDDEN], ones(HIDDEN));
        put(&format!("{l}.{norm}.bias"), vec![HIDDEN], zeros(HIDDEN));
    }
    put(
        &format!("{l}.intermediate.dense.weight"),
        vec![4, HIDDEN],
        zeros(4 * HIDDEN),
    );
    put(&format!("{l}.intermediate.dense.bias"), vec![4], zeros(4));
    put(
        &format!("{l}.output.dense.weight"),
        vec![HIDDEN, 4],
        zeros(4 * HIDDEN),
    );
    put(
        &format!("{l}.output.dense.bias"),
        vec![HIDDEN],
        zeros(HIDDEN),
    );
    std::fs::write(dir.join("model.safetensors"), safetensors(&tensors)).unwrap();
}

/// The safetensors encoding: a little-endian u64 header length, the JSON header (names,
/// dtypes, shapes, byte ranges), then the data.
fn safetensors(tensors: &BTreeMap<String, (Vec<usize>, Vec<f32>)>) -> Vec<u8> {
    let mut header = serde_json::Map::new();
    let mut data = Vec::new();
    for (name, (shape, values)) in tensors {
        let start = data.len();
        for v in values {
            data.extend_from_slice(&v.to_le_bytes());
        }
        header.insert(
            name.clone(),
            serde_json::json!({"dtype": "F32", "shape": shape, "data_offsets": [start, data.len()]}),
        );
    }
    let mut header = serde_json::Value::Object(header).to_string().into_bytes();
    while header.len() % 8 != 0 {
        header.push(b' ');
    }
    let mut out = (header.len() as u64).to_le_bytes().to_vec();
    out.extend(header);
    out.extend(data);
    out
}

/// A capsule of four pages whose words the queries below avoid.
fn write_capsule(root: &Path) {
    let dir = root.join("meaning.test");
    std::fs::create_dir_all(&dir).unwrap();
    let pages = [
        (
            "index.gmi",
            "# Welcome\n\n=> go.gmi Things I hate in Go\n=> web.gmi The bloated web\n=> bread.gmi Sourdough at home\n",
        ),
        (
            "go.gmi",
            "# Things I hate in Go\n\nError handling takes three lines for each call.\n",
        ),
        (
            "web.gmi",
            "# A tale of the bloated web\n\nPages weigh megabytes of scripts nowadays.\n",
        ),
        (
            "bread.gmi",
            "# Sourdough at home\n\nFlour, water, salt and time make a loaf.\n",
        ),
    ];
    for (name, text) in pages {
        std::fs::write(dir.join(name), text).unwrap();
    }
}

fn urls(doc: &serde_json::Value) -> Vec<String> {
    doc["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["url"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_query_is_answered_through_meaning_alone_and_vectors_are_reused_after_a_reindex() {
    let root = tempfile::tempdir().unwrap();
    write_capsule(root.path());
    let server = FixtureServer::start(FixtureConfig {
        root: root.path().to_path_buf(),
        listen: vec!["127.0.0.1:0".parse().unwrap()],
    })
    .await
    .unwrap();
    let data = tempfile::tempdir().unwrap();
    let dir = data.path().display().to_string();
    let resolve = format!("meaning.test={}", server.addrs[0]);
    let crawl = support::run_geode(
        [
            "crawl",
            "--data",
            &dir,
            "--seed",
            "gemini://meaning.test/",
            "--min-delay-ms",
            "0",
            "--resolve",
            &resolve,
        ]
        .iter()
        .map(|s| s.to_string())
        .collect(),
        std::time::Duration::from_secs(60),
    )
    .await;
    assert_eq!(crawl.status, 0, "{}", crawl.stderr);

    let model = tempfile::tempdir().unwrap();
    write_tiny_model(model.path());
    let m = model.path().display().to_string();
    let query = "complaints about golang";

    // By words alone nothing holds a word of the query.
    let lexical = ok_json(&geode(&["search", "--data", &dir, "--json", query]));
    assert_eq!(lexical["total"], 0, "{lexical}");

    // No vectors yet: with the model, the search is the same, and says why on stderr.
    let out = geode(&["search", "--data", &dir, "--json", "--model", &m, query]);
    assert_eq!(ok_json(&out)["total"], 0);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("geode embed"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let words = ["search", "--data", &dir, "--json", "sourdough"];
    let plain = ok_json(&geode(&words));
    assert_eq!(
        urls(&plain).first().map(String::as_str),
        Some("gemini://meaning.test/bread.gmi")
    );

    let first = ok_json(&geode(&["embed", "--data", &dir, "--model", &m, "--json"]));
    assert_eq!(first["pages"], 4, "{first}");
    assert_eq!(first["embedded"], 4, "{first}");
    assert_eq!(first["left"], 0, "{first}");
    assert_eq!(first["vectors"], 4, "{first}");

    let hybrid = ok_json(&geode(&[
        "search", "--data", &dir, "--json", "--model", &m, query,
    ]));
    let found = urls(&hybrid);
    assert_eq!(
        found.first().map(String::as_str),
        Some("gemini://meaning.test/go.gmi"),
        "{hybrid}"
    );
    let top = &hybrid["hits"][0];
    assert!(top["parts"]["semantic"].as_f64().unwrap() > 0.5, "{top}");
    assert_eq!(top["parts"]["text"], 0.0, "{top}");
    // It holds none of the query's words, and says so.
    assert_eq!(
        top["missing"],
        serde_json::json!(["complaints", "about", "golang"]),
        "{top}"
    );
    let heavy = ok_json(&geode(&[
        "search", "--data", &dir, "--json", "--model", &m, "heavy", "websites",
    ]));
    assert_eq!(
        urls(&heavy).first().map(String::as_str),
        Some("gemini://meaning.test/web.gmi"),
        "{heavy}"
    );

    // A phrase keeps its lexical meaning: no page holds it, and none is found by meaning.
    let phrase = ok_json(&geode(&[
        "search",
        "--data",
        &dir,
        "--json",
        "--model",
        &m,
        "\"complaints about golang\"",
    ]));
    assert_eq!(phrase["total"], 0, "{phrase}");
    // So does --strict.
    let strict = ok_json(&geode(&[
        "search", "--data", &dir, "--json", "--model", &m, "--strict", query,
    ]));
    assert_eq!(strict["total"], 0, "{strict}");

    // Without a model a search is what it was before any vector existed: the same pages,
    // scores and parts, no semantic part.
    let after = ok_json(&geode(&words));
    assert_eq!(after["hits"], plain["hits"]);
    assert!(
        after["hits"][0]["parts"].get("semantic").is_none(),
        "{after}"
    );
    let without = [
        "search",
        "--data",
        &dir,
        "--json",
        "--no-model",
        "sourdough",
    ];
    assert_eq!(ok_json(&geode(&without))["hits"], plain["hits"]);
    // A folder that is not a model is an error that names what is missing.
    let empty = tempfile::tempdir().unwrap();
    let bad = geode(&[
        "search",
        "--data",
        &dir,
        "--model",
        &empty.path().display().to_string(),
        "x",
    ]);
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert_eq!(bad.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("config.json"), "{stderr}");

    // Unchanged pages keep their vectors: a second run embeds nothing...
    let second = ok_json(&geode(&["embed", "--data", &dir, "--model", &m, "--json"]));
    assert_eq!(
        (second["embedded"].as_u64(), second["up_to_date"].as_u64()),
        (Some(0), Some(4)),
        "{second}"
    );
    // ...nor one after the index is rebuilt from the archive.
    let reindex = geode(&["reindex", "--data", &dir, "--json"]);
    assert!(
        reindex.status.success(),
        "{}",
        String::from_utf8_lossy(&reindex.stderr)
    );
    let third = ok_json(&geode(&["embed", "--data", &dir, "--model", &m, "--json"]));
    assert_eq!(
        (third["embedded"].as_u64(), third["up_to_date"].as_u64()),
        (Some(0), Some(4)),
        "{third}"
    );
    let again = ok_json(&geode(&[
        "search", "--data", &dir, "--json", "--model", &m, query,
    ]));
    assert_eq!(urls(&again).first(), found.first());

    // With the model in the data directory, no flag is needed.
    let home = data.path().join("model");
    std::fs::create_dir_all(&home).unwrap();
    for f in ["config.json", "tokenizer.json", "model.safetensors"] {
        std::fs::copy(model.path().join(f), home.join(f)).unwrap();
    }
    let default = ok_json(&geode(&["search", "--data", &dir, "--json", query]));
    assert_eq!(urls(&default).first(), found.first(), "{default}");

    // `geode serve` answers the same way, with the model it finds in the data directory.
    let found = found.first().cloned().unwrap();
    let data_path = data.path().to_path_buf();
    let answer = tokio::task::spawn_blocking(move || {
        let server = crate::serve_web::WebServing::start(&data_path, &[]);
        let reply = crate::serve_web::runtime().block_on(crate::serve_web::get(
            server.http,
            "/api/search?q=complaints+about+golang",
        ));
        assert_eq!(reply.status, 200, "{}", reply.text());
        let doc: serde_json::Value = serde_json::from_str(&reply.text()).unwrap();
        // And without it, by words alone: nothing.
        let words = crate::serve_web::WebServing::start(&data_path, &["--no-model"]);
        let plain = crate::serve_web::runtime().block_on(crate::serve_web::get(
            words.http,
            "/api/search?q=complaints+about+golang",
        ));
        let plain: serde_json::Value = serde_json::from_str(&plain.text()).unwrap();
        (doc, plain)
    })
    .await
    .unwrap();
    assert_eq!(answer.0["hits"][0]["url"], found.as_str(), "{}", answer.0);
    assert_eq!(answer.1["total"], 0, "{}", answer.1);
}

#[test]
fn embedding_without_an_index_or_a_model_is_a_usage_error() {
    let data = tempfile::tempdir().unwrap();
    let dir = data.path().display().to_string();
    let out = geode(&["embed", "--data", &dir]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no index"));
}
