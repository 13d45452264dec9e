//! The Qwen3 chat template for one user turn gives transformers' ids
//! (`scripts/make_chat_reference.py` wrote them with `apply_chat_template`).

mod common;

use trlvr_models::ChatTokenizer;

const TOKENIZER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../assets/qwen3-tokenizer/tokenizer.json");

#[derive(Debug, serde::Deserialize)]
struct Case {
    prompt: String,
    text: String,
    ids: Vec<u32>,
}

#[test]
fn user_turn_matches_transformers_apply_chat_template() {
    let tok = ChatTokenizer::from_file(TOKENIZER).unwrap();
    let cases: Vec<Case> =
        serde_json::from_str(&std::fs::read_to_string(common::fixture("qwen3-chat.json")).unwrap()).unwrap();
    assert_eq!(cases.len(), 5);
    for case in cases {
        assert_eq!(ChatTokenizer::render_user_turn(&case.prompt), case.text);
        assert_eq!(tok.encode_user_turn(&case.prompt).unwrap(), case.ids, "{:?}", case.prompt);
        assert_eq!(tok.decode(&case.ids, false).unwrap(), case.text);
    }
    assert_eq!(tok.eos_ids(), [151645, 151643]);
}
