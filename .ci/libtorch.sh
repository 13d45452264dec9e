#!/usr/bin/env bash
# Prepares a CPU-only LibTorch 2.9.0 (what burn-tch 0.22 links against) from PyPI wheels,
# without the ~3 GB of CUDA wheels that `import torch` would need. Prints the folder to
# use as LIBTORCH. Cached under ${TRLVR_CACHE:-$HOME/.cache/trlvr}.
set -euo pipefail
cache="${TRLVR_CACHE:-$HOME/.cache/trlvr}"
root="$cache/libtorch-2.9.0-cpu"
if [ -f "$root/.done" ]; then echo "$root/torch"; exit 0; fi
rm -rf "$root" && mkdir -p "$root/wheels" "$root/unpacked"
python3 -m pip download -q --no-deps --only-binary=:all: -d "$root/wheels" \
  torch==2.9.0 nvidia-cuda-runtime-cu12==12.8.90 nvidia-cuda-cupti-cu12==12.8.90 >&2
for w in "$root"/wheels/*.whl; do python3 -m zipfile -e "$w" "$root/unpacked" >&2; done
mkdir -p "$root/torch/lib"
ln -s "$root/unpacked/torch/include" "$root/torch/include"
for f in "$root"/unpacked/torch/lib/{libc10.so,libtorch_cpu.so,libtorch.so} "$root"/unpacked/torch/lib/libgomp*.so*; do
  ln -s "$f" "$root/torch/lib/"
done
# libtorch_cpu.so needs the CUDA runtime and CUPTI stubs beside it.
for f in "$root"/unpacked/nvidia/*/lib/*.so*; do ln -sf "$f" "$root/torch/lib/"; done
rm -rf "$root/wheels"
touch "$root/.done"
echo "$root/torch"
