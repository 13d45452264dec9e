#!/usr/bin/env bash
# One rank against two on this machine: steps of the shipped SmolLM2 GRPO recipe under
# `trlvr train` and under `mpirun -np 2 trlvr train` (the cores split between the ranks),
# with every row updated; prints the step times and the bytes each rank summed with the
# other per step (metrics.jsonl). Needs Open MPI and a release build with the mpi feature:
#   cargo build --release --features mpi && bash scripts/bench_ranks.sh [STEPS]
set -euo pipefail
cd "$(dirname "$0")/.."
steps="${1:-3}"
bin=target/release/trlvr
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
# The base model (not the recipe's warm-up): the figures in docs/distributed.md were taken so.
run=(train --config configs/smollm2-arithmetic-grpo.toml --set 'senior.path="smollm2-135m"' --set "train.steps=$steps"
    --set train.validate_every=0 --set train.checkpoint_every=0 --set train.skip_zero_advantage=false)
cores="$(nproc)"
echo "machine: $cores cores, load $(cut -d' ' -f1 /proc/loadavg)"
"$bin" "${run[@]}" --out "$out/one" 2>/dev/null
# Root in containers; shared memory without ptrace; each rank gets half the cores.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
RAYON_NUM_THREADS=$(( cores > 1 ? cores / 2 : 1 )) mpirun --oversubscribe -np 2 -x RAYON_NUM_THREADS \
    "$bin" "${run[@]}" --out "$out/two" 2>/dev/null
python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
def rows(name):
    return [json.loads(l) for l in open(f"{out}/{name}/metrics.jsonl")]
one, two = rows("one"), rows("two")
print(f"{'':10} {'step s':>8} {'rollout s':>10} {'update s':>9} {'(waiting':>9} {'summing)':>9} {'reward':>7} {'MB summed':>10}")
for name, ms in (("1 rank", one), ("2 ranks", two)):
    later = ms[1:] or ms  # step 1 includes warm-up
    mean = lambda k: sum(m[k] for m in later) / len(later)
    mb = sum(m.get("reduced_bytes", 0) for m in later) / len(later) / 1e6
    opt = lambda k: sum(m.get(k, 0) for m in later) / len(later)
    print(f"{name:10} {mean('time_s'):8.1f} {mean('time_rollout_s'):10.1f} {mean('time_update_s'):9.1f} "
          f"{opt('time_wait_s'):9.1f} {opt('time_reduce_s'):9.1f} {mean('reward_mean'):7.3f} {mb:10.1f}")
print(f"2 ranks / 1 rank step time: {sum(m['time_s'] for m in two[1:] or two) / sum(m['time_s'] for m in one[1:] or one):.2f}x "
      f"(steps 2-{len(one)}; same rollouts: rewards {'equal' if [m['reward_mean'] for m in one] == [m['reward_mean'] for m in two] else 'differ'})")
PY
