#!/usr/bin/env python3
"""Reference outputs of SmolLM2-135M-Instruct (GGUF) from Hugging Face transformers.

Writes trlvr-models/tests/fixtures/smollm2/reference.json, which tests/gguf.rs compares
against trlvr-models' own GGUF loader. transformers reads the same GGUF file with its own
code (gguf-py dequantisation, its own undoing of llama.cpp's query/key permutation, its
own tokenizer conversion) and runs the model in float32, so it is an independent check.

Contents:
  prompt_text / prompt_ids: the chat-rendered question and transformers' token ids;
  top_ids / top_logits:     the 20 largest logits at the last prompt position;
  positions / logits:       the full-vocabulary logits at two positions, rounded to 1e-4;
  greedy_ids / greedy_text: up to 20 greedily decoded tokens after the prompt;
  tokenizer_checks:         [text, ids] pairs from transformers' GGUF tokenizer.

Usage (needs torch, transformers and gguf, in a venv):
  python scripts/smollm2_reference.py [path/to/SmolLM2-135M-Instruct.Q4_1.gguf]
The path defaults to what `trlvr fetch smollm2-135m` prints.
"""

import json
import os
import subprocess
import sys

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "trlvr-models", "tests", "fixtures", "smollm2", "reference.json")

# SmolLM2's chat template for one user turn (it adds this system prompt when none is given).
SYSTEM = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"
QUESTION = "What is the capital of France?"
PROMPT = (
    f"<|im_start|>system\n{SYSTEM}<|im_end|>\n"
    f"<|im_start|>user\n{QUESTION}<|im_end|>\n<|im_start|>assistant\n"
)
GREEDY_TOKENS = 20
# Extra texts whose token ids pin the tokenizer (digits, apostrophes, spaces, accents, markers).
TOKENIZER_TEXTS = [
    "Compute 12345 + 678 = 13023, isn't it?  H\u00e9llo\n\nworld <|im_end|>",
    "  leading spaces, tabs\tand \U0001F600 emoji",
]


def main() -> None:
    if len(sys.argv) > 1:
        path = sys.argv[1]
    else:
        fetch = ["cargo", "run", "--release", "-q", "--", "fetch", "smollm2-135m"]
        path = subprocess.run(fetch, cwd=ROOT, check=True, capture_output=True, text=True).stdout.strip()
    directory, name = os.path.split(path)
    torch.manual_seed(0)
    tokenizer = AutoTokenizer.from_pretrained(directory, gguf_file=name)
    model = AutoModelForCausalLM.from_pretrained(directory, gguf_file=name, dtype=torch.float32)
    model.eval()

    rendered = tokenizer.apply_chat_template(
        [{"role": "user", "content": QUESTION}], tokenize=False, add_generation_prompt=True
    )
    assert rendered == PROMPT, f"chat template renders {rendered!r}"
    ids = tokenizer(PROMPT, add_special_tokens=False)["input_ids"]

    with torch.no_grad():
        logits = model(torch.tensor([ids])).logits[0]  # [seq, vocab]
        last = logits[-1]
        top = torch.topk(last, 20)
        positions = [0, len(ids) - 1]
        generated = model.generate(
            torch.tensor([ids]), max_new_tokens=GREEDY_TOKENS, do_sample=False, top_k=None, top_p=None
        )[0, len(ids):].tolist()

    reference = {
        "gguf": name,
        "transformers": __import__("transformers").__version__,
        "torch": torch.__version__,
        "prompt_text": PROMPT,
        "prompt_ids": ids,
        "top_ids": top.indices.tolist(),
        "top_logits": [round(v, 4) for v in top.values.tolist()],
        "positions": positions,
        "logits": [[round(v, 4) for v in logits[p].tolist()] for p in positions],
        "greedy_ids": generated,
        "greedy_text": tokenizer.decode(generated),
        "tokenizer_checks": [[t, tokenizer(t, add_special_tokens=False)["input_ids"]] for t in TOKENIZER_TEXTS],
    }
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as f:
        json.dump(reference, f, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {OUT}: {len(ids)} prompt tokens; greedy: {reference['greedy_text']!r}")


if __name__ == "__main__":
    main()
