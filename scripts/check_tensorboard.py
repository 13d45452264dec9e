#!/usr/bin/env python3
"""Reads a run's TensorBoard events with TensorBoard's own reader and prints each scalar
tag with its steps and values; fails unless every step of metrics.jsonl is there with the
same values. Needs `pip install tensorboard`.

    python3 scripts/check_tensorboard.py runs/my-run
"""
import json
import math
import sys
from pathlib import Path

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator


def main(run: Path) -> int:
    events = EventAccumulator(str(run / "tensorboard"))
    events.Reload()
    tags = sorted(events.Tags()["scalars"])
    metrics = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines() if line.strip()]
    problems = 0
    for tag in tags:
        points = events.Scalars(tag)
        print(f"{tag}: " + ", ".join(f"step {p.step} = {p.value:.6g}" for p in points))
    for m in metrics:
        for key, want in [("reward_mean", m["reward_mean"]), ("accuracy", m["accuracy"])] + [
            (f"rewards/{k}", v) for k, v in m.get("rewards", {}).items()
        ]:
            tag = f"train/{key}"
            got = [p.value for p in events.Scalars(tag) if p.step == m["step"]] if tag in tags else []
            if not got or not math.isclose(got[-1], want, rel_tol=1e-6, abs_tol=1e-6):
                print(f"MISMATCH {tag} at step {m['step']}: events {got}, metrics.jsonl {want}")
                problems += 1
    print(f"{len(tags)} scalar tags, {len(metrics)} steps checked, {problems} mismatches")
    return 1 if problems or not tags else 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
