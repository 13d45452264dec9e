#!/usr/bin/env python3
"""Reference token ids for trlvr-models' Qwen3 chat-template test.

Renders one user turn with transformers' own chat template (no system prompt, thinking
off, generation prompt on) using assets/qwen3-tokenizer, and writes the text and ids to
trlvr-models/tests/fixtures/qwen3-chat.json.

    python scripts/make_chat_reference.py   # in a venv with transformers
"""

import json
import pathlib

from transformers import AutoTokenizer

ROOT = pathlib.Path(__file__).resolve().parent.parent
PROMPTS = [
    "What is 2 + 3?",
    "  Leading spaces, trailing newline\n",
    "Solve for x: $x^2 - 5x + 6 = 0$.\n\nShow your work.",
    "Unicode: héllo wörld, 数学, emoji 🙂",
    "",
]


def main() -> None:
    tok = AutoTokenizer.from_pretrained(ROOT / "assets" / "qwen3-tokenizer")
    cases = []
    for prompt in PROMPTS:
        messages = [{"role": "user", "content": prompt}]
        text = tok.apply_chat_template(
            messages, tokenize=False, add_generation_prompt=True, enable_thinking=False
        )
        ids = tok(text, add_special_tokens=False)["input_ids"]
        cases.append({"prompt": prompt, "text": text, "ids": ids})
    out = ROOT / "trlvr-models" / "tests" / "fixtures" / "qwen3-chat.json"
    out.write_text(json.dumps(cases, ensure_ascii=False, indent=1))
    print(f"wrote {len(cases)} cases to {out}")


if __name__ == "__main__":
    main()
