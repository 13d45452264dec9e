#!/usr/bin/env python3
"""Random quantised blocks and their dequantisation by gguf-py (llama.cpp's Python package).

Writes trlvr-models/tests/fixtures/gguf-quants.json: for each of Q4_0, Q4_1, Q5_0, Q8_0,
Q4_K and Q6_K, three blocks of random bytes (scale fields set to random normal f16 values,
so no NaN/inf) as hex, and gguf-py's f32 output. tests/gguf.rs checks trlvr-models'
dequantisers against it, an independent implementation of the same layouts.

Usage (needs numpy and gguf, in a venv): python scripts/make_gguf_quant_reference.py
"""

import json
import os

import numpy as np
from gguf import GGMLQuantizationType as T
from gguf.quants import dequantize

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "trlvr-models", "tests", "fixtures", "gguf-quants.json")

# type: (block bytes, byte offsets of its f16 scale fields)
LAYOUTS = {
    "Q4_0": (T.Q4_0, 18, [0]),
    "Q4_1": (T.Q4_1, 20, [0, 2]),
    "Q5_0": (T.Q5_0, 22, [0]),
    "Q8_0": (T.Q8_0, 34, [0]),
    "Q4_K": (T.Q4_K, 144, [0, 2]),
    "Q6_K": (T.Q6_K, 210, [208]),
}
BLOCKS = 3


def main() -> None:
    rng = np.random.default_rng(0)
    out = {}
    for name, (qtype, size, scales) in LAYOUTS.items():
        blocks = rng.integers(0, 256, size=(BLOCKS, size), dtype=np.uint8)
        for b in range(BLOCKS):
            for at in scales:
                scale = np.float16(rng.normal(0.0, 0.05))
                blocks[b, at : at + 2] = np.frombuffer(scale.tobytes(), dtype=np.uint8)
        raw = blocks.reshape(-1)
        values = dequantize(raw, qtype).astype(np.float32).reshape(-1)
        out[name] = {"hex": raw.tobytes().hex(), "values": [float(v) for v in values]}
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as f:
        json.dump(out, f, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
