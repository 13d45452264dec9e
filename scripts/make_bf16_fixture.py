#!/usr/bin/env python3
"""Writes trlvr-models/tests/fixtures/qwen3-tiny-bf16: qwen3-tiny-untied's weights rounded
to bfloat16 (round to nearest even, as torch's `.to(torch.bfloat16)`), same config with
`"dtype": "bfloat16"`. Pure Python (no torch): the safetensors format is a little-endian
u64 header length, a JSON header, then the raw bytes.

The half-precision test (trlvr-models/tests/half.rs) loads it onto a bf16 device and
compares the logits with the f32 reference of the original checkpoint.
"""

import json
import struct
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "trlvr-models" / "tests" / "fixtures"
SOURCE, TARGET = ROOT / "qwen3-tiny-untied", ROOT / "qwen3-tiny-bf16"


def bf16_bits(x_bits: int) -> int:
    """The bf16 nearest to the f32 with bits `x_bits` (ties to even; no NaNs here)."""
    return (x_bits + 0x7FFF + ((x_bits >> 16) & 1)) >> 16


def main() -> None:
    raw = (SOURCE / "model.safetensors").read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + n])
    data = raw[8 + n :]
    out_header, chunks, offset = {}, [], 0
    for name in sorted(k for k in header if k != "__metadata__"):
        info = header[name]
        assert info["dtype"] == "F32", name
        start, end = info["data_offsets"]
        count = (end - start) // 4
        bits = struct.unpack(f"<{count}I", data[start:end])
        chunk = struct.pack(f"<{count}H", *(bf16_bits(b) for b in bits))
        out_header[name] = {"dtype": "BF16", "shape": info["shape"], "data_offsets": [offset, offset + len(chunk)]}
        chunks.append(chunk)
        offset += len(chunk)
    text = json.dumps(out_header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    TARGET.mkdir(exist_ok=True)
    (TARGET / "model.safetensors").write_bytes(struct.pack("<Q", len(text)) + text + b"".join(chunks))
    config = json.loads((SOURCE / "config.json").read_text())
    config["dtype"] = "bfloat16"
    (TARGET / "config.json").write_text(json.dumps(config, indent=2) + "\n")


if __name__ == "__main__":
    main()
