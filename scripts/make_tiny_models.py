#!/usr/bin/env python3
"""Tiny random Hugging Face checkpoints and reference logits for trlvr-models' parity tests.

Writes trlvr-models/tests/fixtures/<name>/{config.json, model.safetensors, reference.json}
for a tied and an untied Qwen3, a Llama and a Qwen2 (q/k/v bias), all in float32.

    python scripts/make_tiny_models.py   # in a venv with torch and transformers

Weights are drawn with a fixed seed and a larger scale than Hugging Face's default
initialisation (std 0.02), so logits are O(1) and a 1e-4 tolerance means something.
reference.json holds a fixed right-padded token batch and, per row, the logits at its
real positions only (padding positions are not compared).
"""

import json
import pathlib

import torch
from transformers import (
    LlamaConfig,
    LlamaForCausalLM,
    Qwen2Config,
    Qwen2ForCausalLM,
    Qwen3Config,
    Qwen3ForCausalLM,
)

ROOT = pathlib.Path(__file__).resolve().parent.parent / "trlvr-models" / "tests" / "fixtures"

COMMON = dict(
    vocab_size=256,
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    max_position_embeddings=128,
    bos_token_id=1,
    eos_token_id=2,
    pad_token_id=0,
)

# Row 0 is full width; row 1 is right-padded with the pad id 0 after 7 real tokens;
# row 2 is a single token.
TOKENS = [
    [5, 17, 200, 3, 99, 42, 42, 7, 255, 128, 64],
    [9, 8, 7, 6, 5, 4, 3, 0, 0, 0, 0],
    [250, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
]
LENGTHS = [11, 7, 1]


def randomise(model: torch.nn.Module, seed: int) -> None:
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in sorted(model.named_parameters()):
            noise = torch.randn(p.shape, generator=gen, dtype=torch.float32)
            if name.endswith("norm.weight"):
                p.copy_(1.0 + 0.2 * noise)
            elif name.endswith("embed_tokens.weight"):
                p.copy_(0.5 * noise)
            else:
                p.copy_(0.15 * noise)


def make(name: str, model: torch.nn.Module, seed: int) -> None:
    randomise(model, seed)
    model.eval()
    out = ROOT / name
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out, safe_serialization=True)
    for extra in ["generation_config.json"]:
        (out / extra).unlink(missing_ok=True)
    ids = torch.tensor(TOKENS)
    mask = torch.tensor([[1 if j < n else 0 for j in range(len(TOKENS[0]))] for n in LENGTHS])
    with torch.no_grad():
        logits = model(input_ids=ids, attention_mask=mask).logits.float()
    reference = {
        "tokens": [row[:n] for row, n in zip(TOKENS, LENGTHS)],
        "pad_id": 0,
        "logits": [logits[i, :n].tolist() for i, n in enumerate(LENGTHS)],
        "producer": f"torch {torch.__version__}, transformers {__import__('transformers').__version__}",
    }
    (out / "reference.json").write_text(json.dumps(reference))
    size = sum(f.stat().st_size for f in out.iterdir())
    print(f"{name}: {size / 1024:.0f} KiB, |logits| max {logits.abs().max():.2f}")


def main() -> None:
    torch.manual_seed(0)
    qwen3 = dict(COMMON, head_dim=16, rms_norm_eps=1e-6, rope_theta=1_000_000.0)
    make("qwen3-tiny-tied", Qwen3ForCausalLM(Qwen3Config(**qwen3, tie_word_embeddings=True)), 1)
    make("qwen3-tiny-untied", Qwen3ForCausalLM(Qwen3Config(**qwen3, tie_word_embeddings=False)), 2)
    llama = dict(COMMON, rms_norm_eps=1e-5, rope_theta=10_000.0, tie_word_embeddings=False)
    make("llama-tiny", LlamaForCausalLM(LlamaConfig(**llama)), 3)
    qwen2 = dict(COMMON, rms_norm_eps=1e-6, rope_theta=1_000_000.0, tie_word_embeddings=True)
    make("qwen2-tiny", Qwen2ForCausalLM(Qwen2Config(**qwen2)), 4)


if __name__ == "__main__":
    main()
