//! Word boundaries on the real Qwen3 tokenizer, checked against tokenizer.json read
//! directly.

use std::collections::BTreeSet;

use trlvr::prelude::*;

const TOKENIZER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../assets/qwen3-tokenizer/tokenizer.json");
const IM_END: TokenId = 151645;
const ENDOFTEXT: TokenId = 151643;

#[test]
fn boundary_set_is_the_ids_starting_with_the_space_marker() {
    let classes = TokenClasses::from_file(TOKENIZER, &[IM_END, ENDOFTEXT]).unwrap();

    // Independent: every vocabulary string (model vocab and added tokens) from the JSON.
    let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(TOKENIZER).unwrap()).unwrap();
    let mut expected = BTreeSet::new();
    for (token, id) in json["model"]["vocab"].as_object().unwrap() {
        if token.starts_with('\u{120}') {
            expected.insert(id.as_u64().unwrap() as TokenId);
        }
    }
    for added in json["added_tokens"].as_array().unwrap() {
        if added["content"].as_str().unwrap().starts_with('\u{120}') {
            expected.insert(added["id"].as_u64().unwrap() as TokenId);
        }
    }
    let got: BTreeSet<TokenId> = classes.word_starts().into_iter().collect();
    assert_eq!(got.len(), expected.len());
    assert_eq!(got, expected);
    assert!(got.len() > 50_000, "Qwen3 has many word-start tokens, got {}", got.len());

    // Newline tokens ("Ċ" = "\n", "ĊĊ" = "\n\n") are not boundaries; EOS ids are known.
    let vocab = json["model"]["vocab"].as_object().unwrap();
    for nl in ["\u{10a}", "\u{10a}\u{10a}", "\u{10a}\u{10a}\u{10a}"] {
        let id = vocab[nl].as_u64().unwrap() as TokenId;
        assert!(!classes.is_word_start(id), "{nl:?} must not be a boundary");
        assert_eq!(classes.newlines(id), (nl.chars().count() as u8, true));
    }
    assert!(classes.is_eos(IM_END) && classes.is_eos(ENDOFTEXT));
    assert!(!classes.is_word_start(IM_END));
}

#[test]
fn paragraph_tokens_end_with_two_newlines() {
    let classes = TokenClasses::from_file(TOKENIZER, &[IM_END]).unwrap();
    let tokenizer = tokenizers::Tokenizer::from_file(TOKENIZER).unwrap();
    let ids = tokenizer.encode("First step.\n\nSecond step:\n\n$x = 2$", false).unwrap().get_ids().to_vec();
    // Feeding the real encoding through step alternation switches exactly twice.
    let (owners, _) = trlvr::schedule::replay(&StepAlternation::default(), &classes, &ids, 0, 0);
    let switches = (1..owners.len()).filter(|&i| owners[i] != owners[i - 1]).count();
    assert_eq!(switches, 2, "{ids:?}");
}

#[test]
fn missing_tokenizer_names_the_file() {
    let err = TokenClasses::from_file("/nonexistent/tokenizer.json", &[0]).unwrap_err();
    assert!(err.to_string().contains("/nonexistent/tokenizer.json"), "{err}");
}
