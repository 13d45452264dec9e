"""Reference for `cargo bench -p trlvr-models --bench decode`: the same shapes and loop
in PyTorch + transformers on the CPU (2 threads).

Random-init models from configs (a tiny Qwen3 and a SmolLM2-135M-shaped Llama); per
case, one forward over `batch` prompts of 128 tokens (prefill), then 64 greedy steps of
one token per row through `past_key_values`, argmax on the host; each case run REPEATS
times, the median rates kept, as the Rust bench does. Prints a markdown
table and, with `--json PATH`, writes `{case: {"prefill": tok/s, "decode": tok/s}}` for
the Rust bench's `TRLVR_BENCH_REFERENCE`.

    python scripts/bench_transformers.py --json ref.json [FILTER]   # in a venv with torch and transformers
    python scripts/bench_transformers.py --projections   # as `cargo bench ... --bench decode -- --prefill`
"""

import argparse
import inspect
import json
import statistics
import time

import torch
from transformers import LlamaConfig, LlamaForCausalLM, Qwen3Config, Qwen3ForCausalLM

PROMPT = 128
STEPS = 64
REPEATS = 5


def tiny_qwen3():
    config = Qwen3Config(
        vocab_size=4096, hidden_size=128, intermediate_size=384, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=32, rms_norm_eps=1e-6,
        rope_theta=1e6, tie_word_embeddings=True, max_position_embeddings=4096,
    )
    return Qwen3ForCausalLM(config)


def smollm2_135m():
    config = LlamaConfig(
        vocab_size=49152, hidden_size=576, intermediate_size=1536, num_hidden_layers=30,
        num_attention_heads=9, num_key_value_heads=3, head_dim=64, rms_norm_eps=1e-5,
        rope_theta=1e5, tie_word_embeddings=True, max_position_embeddings=8192,
    )
    return LlamaForCausalLM(config)


# transformers 5 renamed `past_key_values` to `cache`; accept both.
CACHE_ARG = "cache" if "cache" in inspect.signature(LlamaForCausalLM.forward).parameters else "past_key_values"


def cache_of(out):
    past = getattr(out, "cache", None)
    return past if past is not None else out.past_key_values


def prompts(batch, vocab):
    """`batch` prompts of `PROMPT` tokens, the Rust bench's."""
    return torch.tensor([[(i * 7919 + r * 104729 + 13) % vocab for i in range(PROMPT)] for r in range(batch)])


@torch.inference_mode()
def run(model, batch):
    ids = prompts(batch, model.config.vocab_size)
    started = time.perf_counter()
    out = model(input_ids=ids, use_cache=True, logits_to_keep=1)
    nxt = out.logits[:, -1, :].numpy().argmax(-1)
    prefill = time.perf_counter() - started
    past = cache_of(out)
    started = time.perf_counter()
    for _ in range(STEPS):
        ids = torch.from_numpy(nxt).reshape(batch, 1)
        out = model(input_ids=ids, use_cache=True, logits_to_keep=1, **{CACHE_ARG: past})
        past = cache_of(out)
        nxt = out.logits[:, -1, :].numpy().argmax(-1)
    decode = time.perf_counter() - started
    return batch * PROMPT / prefill, batch * STEPS / decode


@torch.inference_mode()
def projections(batch, repeats=15):
    """SmolLM2-135M's prefill of `batch` prompts alone, then the products of its projections
    alone (every layer's seven weights against as many rows), as the Rust bench's `--prefill`."""
    model = smollm2_135m().eval()
    rows = batch * PROMPT
    ids = prompts(batch, model.config.vocab_size)
    model(input_ids=ids, use_cache=True, logits_to_keep=1)

    def prefill():
        started = time.perf_counter()
        model(input_ids=ids, use_cache=True, logits_to_keep=1).logits.numpy()
        return time.perf_counter() - started

    per_prefill = statistics.median(prefill() for _ in range(9))
    print(f"smollm2-135m b{batch} prefill: {rows / per_prefill:.0f} tok/s (median of 9)")
    layer = model.model.layers[0]
    a, m = layer.self_attn, layer.mlp
    weights = [p.weight for p in (a.q_proj, a.k_proj, a.v_proj, a.o_proj, m.gate_proj, m.up_proj, m.down_proj)]
    inputs = [torch.rand(rows, w.shape[1]) for w in weights]
    run = lambda: [torch.nn.functional.linear(x, w) for x, w in zip(inputs, weights)]
    run()

    def layer():
        started = time.perf_counter()
        run()
        return time.perf_counter() - started

    per_layer = statistics.median(layer() for _ in range(repeats))
    flops = sum(2 * rows * w.shape[0] * w.shape[1] for w in weights)
    every = per_layer * len(model.model.layers)
    print(f"  projections alone: {every:.3f} s of a {per_prefill:.3f} s prefill "
          f"({100 * every / per_prefill:.0f}%), {flops / per_layer / 1e9:.1f} GFLOP/s")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("filter", nargs="?", default="")
    parser.add_argument("--json")
    parser.add_argument("--projections", action="store_true",
                        help="SmolLM2's batch-1 and batch-8 prefills and their projections' products alone")
    args = parser.parse_args()
    torch.set_num_threads(2)
    torch.manual_seed(0)
    if args.projections:
        projections(1)
        projections(8)
        return
    results = {}
    print("| case | prefill tok/s | decode tok/s |")
    print("|---|---:|---:|")
    for name, make in [("qwen3-tiny", tiny_qwen3), ("smollm2-135m", smollm2_135m)]:
        cases = [(f"{name} b{b}", b) for b in (1, 8) if args.filter in f"{name} b{b}"]
        if not cases:
            continue
        model = make().eval()
        with torch.inference_mode():
            model(input_ids=torch.tensor([[1, 2, 3, 4]]))  # warm up
        for case, batch in cases:
            runs = [run(model, batch) for _ in range(REPEATS)]
            prefill = statistics.median(r[0] for r in runs)
            decode = statistics.median(r[1] for r in runs)
            results[case] = {"prefill": prefill, "decode": decode}
            print(f"| {case} | {prefill:.0f} | {decode:.1f} |", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
