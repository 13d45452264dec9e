#!/usr/bin/env bash
# Runs a command with LibTorch 2.9.0 CPU set up for `--features tch` builds: prepares it
# from PyPI wheels on first use (.ci/libtorch.sh; 1.7 GB unpacked, cached), then sets
# LIBTORCH and LD_LIBRARY_PATH. On a 2-core CPU LibTorch trains faster than flex (see
# docs/performance.md, "A training step against TRL"), e.g.
#   bash scripts/with_libtorch.sh cargo run --release --features tch -- \
#     train --config configs/smollm2-arithmetic-grpo.toml --device tch
set -euo pipefail
LIBTORCH="$(bash "$(dirname "$0")/../.ci/libtorch.sh")"
export LIBTORCH
export LD_LIBRARY_PATH="$LIBTORCH/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
exec "$@"
