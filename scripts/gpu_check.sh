#!/usr/bin/env bash
# One-shot check of the paper-scale work on a GPU machine; prints a summary at the end.
#
# With a GPU (nvidia-smi lists one): builds with LibTorch when `python3 -c "import torch"`
# gives torch 2.9.0 (pip install torch==2.9.0; LIBTORCH_USE_PYTORCH=1), with the cuda
# backend otherwise; runs the tiny-model parity GPU vs CPU (trlvr-models backend_smoke),
# the core and a 2-step TRLVR run against flex (CI's wgpu checks), the rollout bench at
# batch 64 on a self-paired Qwen3-0.6B-shaped pair with random weights on the GPU (solo vs the release's eager tandem vs trlvr's), the recomputed
# attention's gradients on the GPU against autodiff of one full matrix, and one training
# step of a Qwen3-4B-shaped senior (random weights) on 16 rows of 3,300 tokens (3,000 of
# response, per-layer checkpointing; twice the 4B recipes' micro-batch, the plan allows 25
# on a GPU holding nothing else; in f32, then in mixed precision) while sampling the GPU's
# memory, against the plan's prediction. With two GPUs and Open MPI: two ranks, one GPU
# each, against one (the MPI tests' training run).
# Always: the transformers parity, chunked log-prob, attention, checkpointing and mixed
# precision tests, the CPU memory bench, the memory plan, and the training step
# of the narrow model on the CPU with its measured peak against the plan's.
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
    step build 420 bash -c "cargo build --release --features $FEATURE && \
        cargo bench --no-run --features $FEATURE --bench rollout --bench paper_step && \
        cargo test --release --no-run -p trlvr-models --features $FEATURE --test backend_smoke --test attention --test mixed"
    step parity-gpu-vs-cpu 180 env TRLVR_TEST_DEVICE="$DEVICE" \
        cargo test --release -p trlvr-models --features "$FEATURE" --test backend_smoke --test attention --test mixed
    # CI's wgpu-on-lavapipe checks, here on the GPU: the core (GRPO, device-side sampling,
    # rollouts) and a 2-step TRLVR run of the tiny Qwen3 plus a short eval, against flex.
    step core-and-run-gpu-vs-cpu 420 env TRLVR_TEST_DEVICE="$DEVICE" bash -c "\
        cargo test --release -p trlvr --features $FEATURE --test backend_smoke && \
        cargo test --release --features $FEATURE --test train_cli second_device -- --nocapture"
    step rollout-b64-qwen3-0.6b 150 cargo bench --features "$FEATURE" --bench rollout -- \
        --batch 64 --quick --shape qwen3-0.6b --device "$DEVICE"
    # One Qwen3-4B-shaped training step (16 rows of 3,300 tokens, per-layer checkpointing)
    # with the GPU's memory sampled every 100 ms: f32, then mixed precision (--bf16).
    gpu_step() {
        local name=$1 predicted=$2
        shift 2
        local base peak
        base=$(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -i 0 | head -n 1)
        nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -i 0 -lms 100 >"$LOGS/$name-memory.csv" &
        local sampler=$!
        step "$name" 240 cargo bench --features "$FEATURE" --bench paper_step -- \
            --device "$DEVICE" --shape qwen3-4b --rows 16 --length 3300 --response 3000 --layers "$@"
        kill "$sampler" 2>/dev/null
        peak=$(sort -n "$LOGS/$name-memory.csv" | tail -n 1)
        if [[ -n "$peak" ]]; then
            SUMMARY+=("$name: GPU memory peak $((peak - base)) MiB above the idle $base MiB (pools included); $predicted")
        else
            SUMMARY+=("$name: no GPU memory samples (nvidia-smi -lms wrote nothing)")
        fi
    }
    gpu_step train-step-qwen3-4b "$(python3 scripts/memory_plan.py --predict qwen3-4b 16 3300 3000 layers)"
    gpu_step train-step-qwen3-4b-bf16 "$(python3 scripts/memory_plan.py --predict qwen3-4b 16 3300 3000 layers bf16)" --bf16
    # Two ranks, one GPU each (docs/distributed.md): the MPI tests' training run on
    # `cuda:local` against one rank. Needs two GPUs and Open MPI already installed.
    if (( $(nvidia-smi -L | wc -l) >= 2 )) && command -v mpirun >/dev/null; then
        local_device=${DEVICE%:0}:local
        step mpi-2-ranks 420 env TRLVR_MPI_DEVICE="$local_device" cargo test --release \
            --features "mpi $FEATURE" --test train_cli mpi::two_ranks_train_as_one_process
    else
        SUMMARY+=("mpi-2-ranks: skipped (needs two GPUs and mpirun)")
    fi
else
    SUMMARY+=("GPU: none; CPU parts only")
fi

step parity-transformers 300 cargo test -p trlvr-models --test parity --test chunked --test attention \
    --test checkpointing --test mixed
step memory-bench 300 cargo bench --bench memory
step memory-plan 30 python3 scripts/memory_plan.py
step train-step-narrow-cpu 300 cargo bench --bench paper_step -- --shape narrow --rows 1 --length 1024 --response 768
SUMMARY+=("narrow step on the CPU, $(python3 scripts/memory_plan.py --predict narrow 1 1024 768)")

echo
echo "## gpu_check summary"
printf -- '- %s\n' "${SUMMARY[@]}"
echo
echo "### Memory bench (one micro-batch, narrow model, Qwen3 vocabulary; CPU)"
grep '^|' "$LOGS/memory-bench.log" || true
echo
echo "### Training steps (paper_step)"
grep -h '^|' "$LOGS"/train-step-*.log || true
echo
echo "### Rollouts (batch 64)"
grep '^|' "$LOGS/rollout-b64-qwen3-0.6b.log" 2>/dev/null || echo "(no GPU)"
echo
echo "### Plan vs bench"
grep -A 8 '^| length |' "$LOGS/memory-plan.log" || true
