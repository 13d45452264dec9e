"""Kept token sets of Hugging Face's samplers on fixed logits, for trlvr's sampling test.

transformers applies temperature, then `TopKLogitsWarper`, then `TopPLogitsWarper`; the
top-p step takes a softmax of what top-k left, so the nucleus is measured against the
mass renormalised over the top-k set (vLLM's sampler does the same). This script runs
those two warpers on fixed random logits under several settings and records, per row,
the ids that keep a finite logit (the ids a draw can return), and writes
trlvr/tests/fixtures/sampling_reference.json.

    python3 -m venv V && V/bin/pip install torch transformers numpy
    V/bin/python scripts/sampling_reference.py
"""
import json
import pathlib

import numpy as np
import torch
from transformers.generation.logits_process import (
    TemperatureLogitsWarper,
    TopKLogitsWarper,
    TopPLogitsWarper,
)

rng = np.random.default_rng(20261130)
# (temperature, top_p, top_k); top_k 0 / top_p 1.0 mean "off", as in trlvr.
SETTINGS = [(0.7, 0.8, 20), (1.0, 0.5, 5), (0.6, 0.95, 0), (0.7, 1.0, 20), (1.3, 0.9, 50)]
# Rows of a few shapes: a peaked distribution, a flat one, one with a heavy tail.
rows = []
for vocab, scale in [(64, 1.0), (64, 3.0), (300, 2.0), (300, 0.5), (1000, 2.5), (1000, 1.5)]:
    for _ in range(2):
        # Five decimals, so the JSON stays short (each value is read as the same f32);
        # no ties, whose order at the top-k/top-p boundary is arbitrary.
        row = np.round(rng.normal(0.0, scale, size=vocab), 5).astype(np.float32)
        while len(set(row.tolist())) < vocab:
            row = np.round(rng.normal(0.0, scale, size=vocab), 5).astype(np.float32)
        rows.append(row)

cases = []
for temperature, top_p, top_k in SETTINGS:
    for row, logits in enumerate(rows):
        scores = torch.from_numpy(logits.copy()).unsqueeze(0)
        scores = TemperatureLogitsWarper(temperature)(None, scores)
        if top_k > 0:
            scores = TopKLogitsWarper(top_k)(None, scores)
        if top_p < 1.0:
            scores = TopPLogitsWarper(top_p)(None, scores)
        kept = torch.nonzero(torch.isfinite(scores[0])).flatten().tolist()
        cases.append(
            {
                "temperature": temperature,
                "top_p": top_p,
                "top_k": top_k,
                "row": row,
                "kept": sorted(kept),
            }
        )

out = pathlib.Path(__file__).resolve().parent.parent / "trlvr/tests/fixtures/sampling_reference.json"
meta = {
    "source": "scripts/sampling_reference.py",
    "transformers": __import__("transformers").__version__,
    "torch": torch.__version__,
}
# The shortest decimal that reads back as each f32.
logits = [[float(np.format_float_positional(x, unique=True)) for x in r] for r in rows]
out.write_text(json.dumps({"meta": meta, "rows": logits, "cases": cases}) + "\n")
print(f"wrote {len(cases)} cases to {out}")
