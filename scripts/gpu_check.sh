#!/usr/bin/env bash
# One-shot check of the paper-scale work on a GPU machine; prints a summary at the end.
#
# With a GPU (nvidia-smi lists one): builds with LibTorch when `python3 -c "import torch"`
# gives torch 2.9.0 (pip install torch==2.9.0; LIBTORCH_USE_PYTORCH=1), with the cuda
# backend otherwise; runs the tiny-model parity GPU vs CPU (trlvr-models backend_smoke)
# and the rollout bench at batch 64 (on the CPU for now). Always: the transformers parity and chunked
# log-prob/attention tests, the CPU memory bench and the memory plan's prediction.
# Not yet here (see docs/memory.md): the Qwen3-0.6B-shaped rollout bench on the GPU and
# the Qwen3-4B-shaped training step with its measured peak (the benches have no device
# switch or GPU memory probe yet).
#
# Usage: scripts/gpu_check.sh [--cpu]   (--cpu skips the GPU parts even with a GPU)
set -uo pipefail
cd "$(dirname "$0")/.."
LOGS=$(mktemp -d)
SUMMARY=()

# step NAME LIMIT_S CMD...: runs CMD with a time limit, logs to $LOGS/NAME.log.
step() {
    local name=$1 limit=$2
    shift 2
    local start=$SECONDS status=ok
    echo "== $name: $*"
    timeout "$limit" "$@" >"$LOGS/$name.log" 2>&1 || status="FAILED (rc $?, log $LOGS/$name.log)"
    SUMMARY+=("$name: $status, $((SECONDS - start)) s")
    tail -n 3 "$LOGS/$name.log"
}

GPU=""
if [[ "${1:-}" != "--cpu" ]] && command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
    GPU=$(nvidia-smi -L | head -n 1)
fi

if [[ -n "$GPU" ]]; then
    if python3 -c 'import torch, sys; sys.exit(not torch.__version__.startswith("2.9.0"))' 2>/dev/null; then
        export LIBTORCH_USE_PYTORCH=1
        FEATURE=tch DEVICE=tch-cuda:0
    else
        FEATURE=cuda DEVICE=cuda:0
    fi
    SUMMARY+=("GPU: $GPU; backend $FEATURE, device $DEVICE")
    step build 300 cargo build --release --features "$FEATURE"
    step parity-gpu-vs-cpu 120 env TRLVR_TEST_DEVICE="$DEVICE" \
        cargo test --release -p trlvr-models --features "$FEATURE" --test backend_smoke
    # The rollout bench still picks its own (CPU) devices: this times the host side only.
    step rollout-b64-cpu 180 cargo bench --features "$FEATURE" --bench rollout -- --batch 64 --quick
else
    SUMMARY+=("GPU: none; CPU parts only")
fi

step parity-transformers 300 cargo test -p trlvr-models --test parity --test chunked
step memory-bench 300 cargo bench --bench memory
step memory-plan 30 python3 scripts/memory_plan.py

echo
echo "## gpu_check summary"
printf -- '- %s\n' "${SUMMARY[@]}"
echo
echo "### Memory bench (one micro-batch, narrow model, Qwen3 vocabulary; CPU)"
grep '^|' "$LOGS/memory-bench.log" || true
echo
echo "### Plan vs bench"
grep -A 6 '^| length | predicted' "$LOGS/memory-plan.log" || true
