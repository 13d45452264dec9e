//! The minijinja renderer gives transformers' `apply_chat_template` text byte for byte,
//! for the Qwen3 and SmolLM2 templates (`scripts/make_chat_template_reference.py` wrote
//! the references with transformers 5.25.0), and reads templates where Hugging Face
//! keeps them.

mod common;

use serde::Deserialize;
use serde_json::{Map, Value};
use sha2::Digest;
use trlvr_models::{ChatMessage, ChatTemplate};

#[derive(Deserialize)]
struct Fixture {
    templates: std::collections::BTreeMap<String, Source>,
    cases: Vec<Case>,
}

#[derive(Deserialize)]
struct Source {
    template: String,
    sha256: String,
    bos_token: Option<String>,
    eos_token: Option<String>,
}

#[derive(Deserialize)]
struct Case {
    template: String,
    messages: Vec<ChatMessage>,
    add_generation_prompt: bool,
    kwargs: Map<String, Value>,
    text: String,
}

fn fixture() -> Fixture {
    serde_json::from_str(&std::fs::read_to_string(common::fixture("chat-templates.json")).unwrap()).unwrap()
}

fn special(source: &Source) -> Map<String, Value> {
    let mut map = Map::new();
    for (key, value) in [("bos_token", &source.bos_token), ("eos_token", &source.eos_token)] {
        if let Some(v) = value {
            map.insert(key.into(), v.clone().into());
        }
    }
    map
}

#[test]
fn every_case_renders_as_transformers_renders_it() {
    let f = fixture();
    assert_eq!(f.cases.len(), 33);
    for (name, source) in &f.templates {
        let digest = sha2::Sha256::digest(source.template.as_bytes());
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex, source.sha256, "{name}");
    }
    for (i, case) in f.cases.iter().enumerate() {
        let source = &f.templates[&case.template];
        let template = ChatTemplate::new(&source.template, special(source), &case.template).unwrap();
        let text = template.render(&case.messages, case.add_generation_prompt, &case.kwargs).unwrap();
        assert_eq!(text, case.text, "case {i} ({}, {:?})", case.template, case.messages);
    }
    // The cases reach what differs: SmolLM2's default system message, Qwen3's empty
    // think block with thinking off.
    let smollm2 = &f.cases.iter().find(|c| c.template == "smollm2").unwrap().text;
    assert!(
        smollm2.starts_with("<|im_start|>system\nYou are a helpful AI assistant named SmolLM"),
        "{smollm2}"
    );
    assert!(f.cases.iter().any(|c| c.template == "qwen3" && c.text.ends_with("<think>\n\n</think>\n\n")));
}

#[test]
fn the_qwen3_folder_s_template_is_found_and_renders_a_user_turn() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../assets/qwen3-tokenizer");
    let template = ChatTemplate::from_hf_dir(&dir).unwrap().expect("tokenizer_config.json has one");
    assert!(template.origin().ends_with("tokenizer_config.json"));
    let mut kwargs = Map::new();
    kwargs.insert("enable_thinking".into(), false.into());
    let text = template.render(&[ChatMessage::user("What is 2 + 3?")], true, &kwargs).unwrap();
    // The hard-coded Qwen3 user turn (trlvr_models::chat) is this template's rendering.
    assert_eq!(text, trlvr_models::ChatTokenizer::render_user_turn("What is 2 + 3?"));
    // A chat_template.jinja beside it is preferred, as transformers does.
    let copy = std::env::temp_dir().join(format!("trlvr-chat-template-{}", std::process::id()));
    std::fs::create_dir_all(&copy).unwrap();
    std::fs::copy(dir.join("tokenizer_config.json"), copy.join("tokenizer_config.json")).unwrap();
    std::fs::write(copy.join("chat_template.jinja"), "{{ messages[0].content | upper }}{{ eos_token }}")
        .unwrap();
    let own = ChatTemplate::from_hf_dir(&copy).unwrap().unwrap();
    assert_eq!(own.render(&[ChatMessage::user("hi")], true, &Map::new()).unwrap(), "HI<|im_end|>");
    std::fs::remove_dir_all(&copy).unwrap();
}

#[test]
fn template_errors_are_errors_naming_the_template() {
    let err = ChatTemplate::new("{% for %}", Map::new(), "bad.jinja").unwrap_err().to_string();
    assert!(err.contains("bad.jinja") && err.contains("does not parse"), "{err}");
    let raising =
        ChatTemplate::new("{{ raise_exception('only user turns') }}", Map::new(), "strict.jinja").unwrap();
    let err = raising.render(&[ChatMessage::user("x")], true, &Map::new()).unwrap_err().to_string();
    assert!(err.contains("strict.jinja") && err.contains("only user turns"), "{err}");
    // tojson is Python's json.dumps: its separators, nothing escaped.
    let json = ChatTemplate::new("{{ {'a': [1, '<b>']} | tojson }}", Map::new(), "json.jinja").unwrap();
    assert_eq!(json.render(&[], false, &Map::new()).unwrap(), r#"{"a": [1, "<b>"]}"#);
}
