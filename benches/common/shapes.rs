//! Model shapes the benches build with random weights: the Qwen3 sizes the paper scale
//! concerns (their Hugging Face `config.json` values) and two small probes.

use trlvr_models::ModelConfig;

/// `narrow` (1 layer, hidden 64, the Qwen3 vocabulary: the LM head and attention
/// dominate), `deep-small-vocab` (4 layers, hidden 256, vocabulary 512: the layers
/// dominate), `qwen3-0.6b`, `qwen3-1.7b`, `qwen3-4b`.
///
/// # Panics
/// For another name.
pub fn qwen3(name: &str) -> ModelConfig {
    // (vocabulary, hidden, MLP, layers, query heads, key/value heads, head dim)
    let (vocab, hidden, inter, layers, heads, kv, head_dim) = match name {
        "narrow" => (151_936, 64, 128, 1, 2, 1, 32),
        "deep-small-vocab" => (512, 256, 1024, 4, 4, 2, 64),
        "qwen3-0.6b" => (151_936, 1024, 3072, 28, 16, 8, 128),
        "qwen3-1.7b" => (151_936, 2048, 6144, 28, 16, 8, 128),
        "qwen3-4b" => (151_936, 2560, 9728, 36, 32, 8, 128),
        other => panic!("unknown shape {other}: narrow, deep-small-vocab, qwen3-0.6b, qwen3-1.7b, qwen3-4b"),
    };
    serde_json::from_value(serde_json::json!({
        "model_type": "qwen3", "vocab_size": vocab, "hidden_size": hidden, "intermediate_size": inter,
        "num_hidden_layers": layers, "num_attention_heads": heads, "num_key_value_heads": kv,
        "head_dim": head_dim, "rms_norm_eps": 1e-6, "rope_theta": 1000000.0,
        "tie_word_embeddings": true, "max_position_embeddings": 40960,
    }))
    .expect("valid config")
}
