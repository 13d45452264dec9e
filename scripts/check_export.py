#!/usr/bin/env python3
"""Checks that a trlvr training export is a Hugging Face checkpoint transformers uses as it
uses the source model: `from_pretrained` loads it, `apply_chat_template` renders the chat
template the export carries (the source's tokenizer_config.json), and transformers'
log-probabilities of a response match trlvr's own (`trlvr score`) within a tolerance.

Self-contained: it makes a tiny random Qwen3 over the real Qwen3 tokenizer
(assets/qwen3-tokenizer, with its tokenizer_config.json) with transformers, trains it two
TRLVR steps with `trlvr train` (a checkpoint's export; a random model earns almost no
reward, so its weights move little), 8 supervised steps with `trlvr sft` (weights that
moved) and two TRLVR steps in bf16 (a bf16 export, compared in f32), and checks the three
exports. Needs torch and transformers (`pip install torch transformers`);
not run by CI.

Usage: python3 scripts/check_export.py [--trlvr target/release/trlvr] [--keep DIR]
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

import torch
import transformers
from transformers import AutoModelForCausalLM, AutoTokenizer, Qwen3Config, Qwen3ForCausalLM

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOLERANCE = 1e-4
DATA = [
    {"question": "What is 2 + 2?", "answer": "2+2=4\n#### 4"},
    {"question": "What is 3 * 3?", "answer": "#### 9"},
    {"question": "What is 10 - 7?", "answer": "#### 3"},
]


def source_model(folder):
    """A one-layer Qwen3 with the real vocabulary, random weights, in the Hub layout."""
    config = Qwen3Config(
        vocab_size=151936, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
        num_attention_heads=2, num_key_value_heads=1, head_dim=8, max_position_embeddings=512,
        rope_theta=1e6, rms_norm_eps=1e-6, tie_word_embeddings=True,
        bos_token_id=151643, eos_token_id=151645,
    )
    torch.manual_seed(0)
    Qwen3ForCausalLM(config).save_pretrained(folder, safe_serialization=True)
    for name in ["tokenizer.json", "tokenizer_config.json"]:
        shutil.copy(os.path.join(ROOT, "assets/qwen3-tokenizer", name), folder)


def train(trlvr, work, source, name="run", sets=()):
    data = os.path.join(work, "data.jsonl")
    with open(data, "w") as f:
        f.writelines(json.dumps(row) + "\n" for row in DATA)
    recipe = os.path.join(work, "recipe.toml")
    with open(recipe, "w") as f:
        f.write(
            f'arm = "trlvr"\n\n[senior]\npath = "{source}"\n\n'
            f'[data]\ntrain = {{ path = "{data}", layout = "gsm8k" }}\n\n'
            "[train]\nsteps = 2\nprompts_per_step = 2\ngroup_size = 4\nmini_batch_prompts = 1\n"
            "micro_batch_rows = 4\nmax_new_tokens = 6\nlr = 0.01\ncheckpoint_every = 1\n"
            "skip_zero_advantage = false\n"
        )
    run = os.path.join(work, name)
    extra = [arg for s in sets for arg in ("--set", s)]
    subprocess.run([trlvr, "train", "--config", recipe, "--out", run, *extra], check=True)
    return os.path.join(run, "checkpoints", "step-000002")


def bf16_export(trlvr, work, source):
    """A run trained in mixed bf16 precision: its export is bf16, as config.json says."""
    export = train(trlvr, work, source, "run-bf16", ["senior.dtype=bf16"])
    with open(os.path.join(export, "config.json")) as f:
        dtype = json.load(f)["torch_dtype"]
    with open(os.path.join(export, "model.safetensors"), "rb") as f:
        header = json.loads(f.read(int.from_bytes(f.read(8), "little")))
    stored = sorted({v["dtype"] for k, v in header.items() if k != "__metadata__"})
    print(f"bf16 run's export: torch_dtype {dtype}, tensors stored as {stored}")
    assert dtype == "bfloat16" and stored == ["BF16"], (dtype, stored)
    native = AutoModelForCausalLM.from_pretrained(export, torch_dtype="auto")
    print(f"  transformers loads it as {next(native.parameters()).dtype} (torch_dtype auto)")
    assert next(native.parameters()).dtype == torch.bfloat16
    return export


def sft(trlvr, work, source):
    data = os.path.join(work, "solutions.jsonl")
    with open(data, "w") as f:
        for a in range(1, 9):
            row = {"problem": f"What is {a} + 2?", "solution": f"{a} + 2 = {a + 2}. The answer is \\boxed{{{a + 2}}}."}
            f.write(json.dumps(row) + "\n")
    out = os.path.join(work, "sft")
    subprocess.run([trlvr, "sft", "--model", source, "--data", data, "--steps", "8", "--batch-size", "4",
                    "--lr", "0.01", "--out", out], check=True)
    return out


def check(trlvr, export, source, work):
    """Loads `export` with transformers; its template, EOS and log-probs against trlvr's."""
    print(f"export: {export}: {sorted(os.listdir(export))}")
    model = AutoModelForCausalLM.from_pretrained(export, torch_dtype=torch.float32).eval()
    tokenizer = AutoTokenizer.from_pretrained(export)
    messages = [{"role": "user", "content": "What is 2 + 3?"}]
    prompt = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    print(f"  apply_chat_template (the export's template): {prompt!r}")
    assert prompt.startswith("<|im_start|>user\nWhat is 2 + 3?<|im_end|>\n<|im_start|>assistant\n"), prompt
    generation = transformers.GenerationConfig.from_pretrained(export)
    print(f"  generation_config eos_token_id: {generation.eos_token_id}")
    moved = max((a - b).abs().max().item() for a, b in zip(
        model.state_dict().values(), AutoModelForCausalLM.from_pretrained(source).state_dict().values()))
    print(f"  largest weight change from the source: {moved:.3g}")

    response = "2 + 3 = 5. The answer is \\boxed{5}."
    ids = tokenizer(prompt + response, add_special_tokens=False).input_ids
    start = len(tokenizer(prompt, add_special_tokens=False).input_ids)
    with torch.no_grad():
        logits = model(torch.tensor([ids])).logits[0].double()
    reference = torch.log_softmax(logits, dim=-1)
    theirs = [reference[t - 1, ids[t]].item() for t in range(start, len(ids))]
    ours = trlvr_log_probs(trlvr, export, prompt, response, work)
    assert len(ours) == len(theirs), (len(ours), len(theirs))
    worst = max(abs(a - b) for a, b in zip(ours, theirs))
    print(f"  {len(ours)} response tokens, log-probs max |trlvr - transformers| = {worst:.2e} "
          f"(tolerance {TOLERANCE:g})")
    return worst


def trlvr_log_probs(trlvr, export, prompt, response, work):
    lines = os.path.join(work, "score.jsonl")
    with open(lines, "w") as f:
        f.write(json.dumps({"prompt": prompt, "text": response}) + "\n")
    out = subprocess.run([trlvr, "score", "--model", export, "--input", lines],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out.splitlines()[0])["log_probs"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trlvr", default=os.path.join(ROOT, "target/release/trlvr"))
    parser.add_argument("--keep", help="work in this folder and keep it")
    args = parser.parse_args()
    work = args.keep or tempfile.mkdtemp(prefix="trlvr-export-")
    os.makedirs(work, exist_ok=True)
    source = os.path.join(work, "source")
    source_model(source)
    print(f"transformers {transformers.__version__}, torch {torch.__version__}")
    worst = max(check(args.trlvr, export, source, work)
                for export in [train(args.trlvr, work, source), sft(args.trlvr, work, source),
                               bf16_export(args.trlvr, work, source)])
    if not args.keep:
        shutil.rmtree(work)
    sys.exit(0 if worst <= TOLERANCE else 1)


if __name__ == "__main__":
    main()
