#!/usr/bin/env python3
"""Peak-memory plan of one training micro-batch and of rollouts (docs/memory.md).

Prints the tables of docs/memory.md: the formula's prediction for the CPU memory bench
(benches/memory.rs) and, for Qwen3-0.6B/1.7B/4B at the paper's settings, the largest
micro-batch that fits one 141 GB GPU, by checkpointing (none, Burn's per operation, the
decoder's per layer) and precision (f32, bf16 mixed).
"""

GIB = 1024**3
MIB = 1024**2
V = 151_936
CHUNK = 256          # trlvr::model::LOG_PROB_CHUNK
# Fitted to `cargo bench --bench memory` (2026-12-01); each constant says from what.
KEPT_PER_VOCAB = 5.05  # bytes kept per scored position per vocab entry (narrow model, slope 2048->4096 less the rest; 4 in theory)
TRANSIENT_CHUNKS = 2.0  # chunk-sized [CHUNK, V] f32 tensors alive during one chunk's backward (narrow model, intercept)
ACT_SCALE = 1.32      # kept activations / the count in act_per_token (deep model, slope 1024->2048)
# The attention keeps no [T, T] matrix for backward (trlvr_models::attention recomputes each
# block's probabilities); per layer it keeps one f32 log-sum-exp per query and head, and while a
# layer's backward runs, a block's scores, probabilities and their gradients (theory: 3 floats per
# query of the block, head and key), one layer at a time.
QUERY_BLOCK = 256     # trlvr_models::attention::QUERY_BLOCK
ATTN_TRANSIENT = 3.0
# Burn's balanced checkpointing (Device::gradient_checkpointing): recomputes elementwise ops,
# keeps matmul, reduction, gather, mask_fill and cast outputs.
CKPT_BODY = 0.57      # layer activations kept, checkpointed / plain (deep model, slopes 1024->2048)
# Mixed precision (`[senior] dtype = "bf16"`: f32 weights, bf16 forward): the layers keep
# this share of the f32 body (deep model, slopes 1024->2048 of `scored bf16` over `plain`, and
# of `scored bf16 ckpt` over `plain`); norms' mean squares and the log-sum-exps stay f32. Every
# weight's bf16 copy (2 bytes per parameter) lives through backward.
MIXED_BODY = 0.63
MIXED_CKPT_BODY = 0.43
# Per-layer checkpointing (`[senior] layer_checkpointing`): every block's input is kept
# (d floats per token and layer, in the compute dtype) and one block's activations exist at a
# time, with its backward's transients: LAYER_SCALE * act_per_token per token, or LAYER_MIXED
# * act_per_token in mixed precision (deep model, slopes 1024->2048 of `scored layers` and
# `scored layers bf16`, less the saved inputs).
LAYER_SCALE = 1.44
LAYER_MIXED = 1.04
CKPT_PER_VOCAB = 7.96  # KEPT_PER_VOCAB when checkpointed: more, not less (narrow model, slope 2048->4096)
# The trainer's path (Policy::scored_from): nothing vocabulary-wide is kept per position;
# backward keeps dL/dh ([T, d]) and dL/dW ([d, V]) and, per chunk, a few [CHUNK, V] tensors.
LEAN_TRANSIENT_CHUNKS = 2.8  # [CHUNK, V] f32 tensors alive at once (narrow model, intercept at 512)


def shapes(d, layers, heads, kv, hd, inter, vocab=V, tied=True):
    per_layer = d * heads * hd + 2 * d * kv * hd + heads * hd * d + 3 * d * inter + 2 * d + 2 * hd
    params = layers * per_layer + vocab * d * (1 if tied else 2) + d
    return dict(d=d, L=layers, h=heads, kv=kv, hd=hd, I=inter, V=vocab, P=params)


MODELS = {
    "Qwen3-0.6B": shapes(1024, 28, 16, 8, 128, 3072),
    "Qwen3-1.7B": shapes(2048, 28, 16, 8, 128, 6144),
    "Qwen3-4B": shapes(2560, 36, 32, 8, 128, 9728),
}
NARROW = shapes(64, 1, 2, 1, 32, 128)
DEEP = shapes(256, 4, 4, 2, 64, 1024, vocab=512)


def act_per_token(m):
    """Bytes one layer keeps per token for backward (f32): norms, q/k/v, rope, MLP."""
    return 4 * (6 * m["d"] + 3 * m["h"] * m["hd"] + 4 * m["kv"] * m["hd"] + 4 * m["I"])


def micro_batch(m, rows, length, scored, checkpoint=False, lean=True, mixed=False, layers=False):
    """Peak bytes of forward + backward of `rows` rows (weights and optimizer excluded).
    `lean`: the trainer's path (Policy::scored_from); otherwise Policy::log_probs_from's
    autodiff through each chunk. `mixed`: bf16 forward on f32 weights. `layers`: per-layer
    checkpointing (instead of `checkpoint`, Burn's)."""
    act_layer = (ACT_SCALE * act_per_token(m) + 4 * m["h"]) * length
    if mixed:
        share = MIXED_CKPT_BODY if checkpoint else MIXED_BODY
    else:
        share = CKPT_BODY if checkpoint else 1.0
    body = rows * m["L"] * act_layer * share
    if layers:
        saved = m["L"] * m["d"] * (2 if mixed else 4) * length
        body = rows * (saved + (LAYER_MIXED if mixed else LAYER_SCALE) * act_per_token(m) * length)
    attention = rows * ATTN_TRANSIENT * m["h"] * min(QUERY_BLOCK, length) * length * 4
    if lean:
        logits = rows * length * m["d"] * 4 + m["d"] * m["V"] * 4 + LEAN_TRANSIENT_CHUNKS * CHUNK * m["V"] * 4
    else:
        per_vocab = CKPT_PER_VOCAB if checkpoint else KEPT_PER_VOCAB
        logits = rows * scored * per_vocab * m["V"] + TRANSIENT_CHUNKS * CHUNK * m["V"] * 4
    grads = 4 * m["P"] + (2 * m["P"] if mixed and not layers else 0)
    return body + attention + logits + grads


def state(m):
    """Weights, AdamW m and v (f32); gradients are counted in micro_batch."""
    return 12 * m["P"]


def resident(m, junior_bytes=4, accumulate=True):
    """What stays on the senior's GPU through an update besides the micro-batch: the
    senior's weights and AdamW state, a self-paired junior there (4 bytes per parameter in
    f32, 2 in bf16, 0 on a GPU of its own) and, when a mini-batch takes several micro-batches,
    the gradients accumulated so far (f32)."""
    return state(m) + junior_bytes * m["P"] + (4 * m["P"] if accumulate else 0)


def kv_cache(m, rows, length, bytes_=4):
    return 2 * m["L"] * m["kv"] * m["hd"] * bytes_ * length * rows


SHAPES = dict(MODELS, narrow=NARROW)
SHAPE_NAMES = {"narrow": "narrow", "qwen3-0.6b": "Qwen3-0.6B", "qwen3-1.7b": "Qwen3-1.7B", "qwen3-4b": "Qwen3-4B"}


def predict(argv):
    """`--predict SHAPE ROWS LENGTH SCORED [ckpt|layers] [bf16]`: the peak of one training
    step (benches/paper_step.rs), weights and AdamW state included, in GB and MiB."""
    name, rows, length, scored = argv[0], int(argv[1]), int(argv[2]), int(argv[3])
    ckpt, layers, mixed = "ckpt" in argv[4:], "layers" in argv[4:], "bf16" in argv[4:]
    if name not in SHAPE_NAMES:
        raise SystemExit(f"unknown shape {name!r}: one of {', '.join(SHAPE_NAMES)}")
    if ckpt and layers:
        raise SystemExit("ckpt (Burn's checkpointing) and layers (per layer) exclude each other")
    m = SHAPES[SHAPE_NAMES[name]]
    step = micro_batch(m, rows, length, scored, ckpt, mixed=mixed, layers=layers)
    total = state(m) + step
    print(f"predicted: {total / 1e9:.1f} GB in all ({state(m) / 1e9:.1f} GB weights + AdamW, "
          f"{step / MIB:.0f} MiB for the micro-batch above them)")


def main():
    import sys
    if len(sys.argv) > 1 and sys.argv[1] == "--predict":
        predict(sys.argv[2:])
        return
    print("## Prediction vs the CPU bench, MiB (predicted / measured)\n")
    print("Narrow model (1 layer, hidden 64, Qwen3 vocabulary), one row:\n")
    print("| length | all scored | response half scored | all scored, checkpointed "
          "| trainer (scored_from) | trainer, checkpointed |")
    print("|---:|---:|---:|---:|---:|---:|")
    measured = {512: (708, 486, 927, 486, 485), 1024: (1081, 675, 1523, 490, 487),
                2048: (1830, 1053, 2714, 497, 491), 4096: (3328, 1808, 5097, 511, 501)}
    for t, (a, h, c, s, sc) in measured.items():
        pa, ph = micro_batch(NARROW, 1, t, t - 1, lean=False), micro_batch(NARROW, 1, t, t // 2, lean=False)
        pc = micro_batch(NARROW, 1, t, t - 1, True, lean=False)
        ps, psc = micro_batch(NARROW, 1, t, t - 1), micro_batch(NARROW, 1, t, t - 1, True)
        print(f"| {t} | {pa / MIB:.0f} / {a} | {ph / MIB:.0f} / {h} | {pc / MIB:.0f} / {c} "
              f"| {ps / MIB:.0f} / {s} | {psc / MIB:.0f} / {sc} |")
    print("\nDeep model (4 layers, hidden 256, MLP 1024, vocabulary 512), one row, all scored:\n")
    print("| length | plain | checkpointed | trainer, bf16 mixed | trainer, bf16 mixed, checkpointed "
          "| trainer, per layer | trainer, per layer, bf16 mixed |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    deep = {512: (89, 58, 70, 54, 50, 30), 1024: (161, 98, 115, 84, 71, 46), 2048: (304, 179, 205, 143, 114, 76)}
    for t, measured in deep.items():
        predicted = [
            micro_batch(DEEP, 1, t, t - 1, lean=False), micro_batch(DEEP, 1, t, t - 1, True, lean=False),
            micro_batch(DEEP, 1, t, t - 1, mixed=True), micro_batch(DEEP, 1, t, t - 1, True, mixed=True),
            micro_batch(DEEP, 1, t, t - 1, layers=True), micro_batch(DEEP, 1, t, t - 1, mixed=True, layers=True),
        ]
        cells = " | ".join(f"{p / MIB:.0f} / {x}" for p, x in zip(predicted, measured))
        print(f"| {t} | {cells} |")

    gpu = 141e9
    # Rows of a 300-token prompt and a 3,000-token response; the trainer scores the response.
    t, scored, rollouts = 3300, 3000, 128
    print("\n## Qwen3 at the paper's settings (rows of 3,300 tokens, 3,000 scored; 141 GB GPU)\n")
    settings = [("none", {}), ("Burn's", dict(checkpoint=True)), ("Burn's, bf16", dict(checkpoint=True, mixed=True)),
                ("per layer", dict(layers=True)), ("per layer, bf16", dict(layers=True, mixed=True))]
    print("Per row GB / largest micro-batch, by checkpointing and precision; the self-paired junior "
          "on the same GPU in f32 and the gradients of earlier micro-batches resident "
          "(`resident`):\n")
    print("| model | params | weights+Adam GB | " + " | ".join(name for name, _ in settings)
          + " | KV cache 128 rows f32 GB | bf16 GB |")
    print("|---|---:|---:|" + "---:|" * len(settings) + "---:|---:|")
    for name, m in MODELS.items():
        fixed = state(m)

        def fits(kw):
            row = micro_batch(m, 1, t, scored, **kw) - micro_batch(m, 0, t, scored, **kw)
            base = resident(m) + micro_batch(m, 0, t, scored, **kw)
            return f"{row / 1e9:.1f} / {max(0, int((gpu - base) // row))}"
        kv = kv_cache(m, rollouts, t)
        cells = " | ".join(fits(kw) for _, kw in settings)
        print(f"| {name} | {m['P'] / 1e9:.2f}B | {fixed / 1e9:.1f} | {cells} | {kv / 1e9:.0f} | {kv / 2e9:.0f} |")

    print("\n## Rollouts, self-paired (junior = frozen copy, f32), rows of 3,300 tokens\n")
    print("| model | rows that fit, junior on the same GPU | junior on a second GPU |")
    print("|---|---:|---:|")
    for name, m in MODELS.items():
        per_row = kv_cache(m, 1, t)
        same = int((gpu - state(m) - 4 * m["P"]) // (2 * per_row))
        own = int((gpu - state(m)) // per_row)
        print(f"| {name} | {same} | {own} |")


if __name__ == "__main__":
    main()
