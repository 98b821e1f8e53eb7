"""The paper config's training, estimated per setting without training all of it.

Every distinct setting (cell) of the paper config's trials is trained once, one batch of the
seeds a training job trains side by side (at most the cell's trial count), on one thread with
BLAS on one thread, as a training job runs it; its CPU seconds per trial times the cell's
trials is the cell's estimate. Prints the total, the largest classes (model, d, batch size,
epochs) with their trials and CPU seconds, and how long the estimate took.

Run: python benchmarks/paper_training.py [--top 12]
(at another commit: PYTHONPATH=<worktree>/src python benchmarks/paper_training.py)
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter, defaultdict

import torch
from threadpoolctl import threadpool_limits

from matcond.condition_number.batching import seeds_side_by_side
from matcond.condition_number.run import run_trials
from matcond.core.config import load_yaml, validate_config
from matcond.core.trials import all_trials


def cells() -> tuple[dict[str, dict], Counter, int]:
    """The paper config's settings (spec without seed) by canonical JSON, their trials, and
    its block size."""
    config = validate_config(load_yaml("config/config.yaml"))
    unique = {t.path: t.spec for ts in all_trials(config).values() for t in ts}
    specs, counts = {}, Counter()
    for spec in unique.values():
        key = json.dumps({k: v for k, v in spec.items() if k != "seed"}, sort_keys=True)
        specs[key], counts[key] = spec, counts[key] + 1
    return specs, counts, config["block_size"]


def seconds_per_trial(spec: dict, seeds: int) -> float:
    """CPU seconds per trial of one batch of ``seeds`` seeds of ``spec``."""
    batch = [json.loads(json.dumps({**spec, "seed": s}, sort_keys=True)) for s in range(seeds)]
    start = time.process_time()
    run_trials(batch, torch.device("cpu"))
    return (time.process_time() - start) / seeds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top", type=int, default=12, help="classes listed")
    args = parser.parse_args()
    torch.set_num_threads(1)
    started = time.perf_counter()
    specs, counts, block_size = cells()
    by_class: dict[tuple, list[float]] = defaultdict(lambda: [0, 0.0])
    with threadpool_limits(1):
        for key, spec in specs.items():
            side = min(seeds_side_by_side(spec["dim"], "cpu"), block_size, counts[key])
            seconds = seconds_per_trial(spec, side) * counts[key]
            name = (spec["model"], spec["dim"], spec["batch_size"], spec["epochs"])
            by_class[name][0] += counts[key]
            by_class[name][1] += seconds
    total = sum(s for _, s in by_class.values())
    trials = sum(n for n, _ in by_class.values())
    print(f"{len(specs)} settings, {trials} trials: {total:.0f} CPU-s of training (estimated)")
    print("model         d  batch  epochs  trials  CPU-s")
    for (model, dim, batch, epochs), (n, s) in sorted(by_class.items(), key=lambda x: -x[1][1])[
        : args.top
    ]:
        print(f"{model:<12} {dim:>4} {batch:>6} {epochs:>7} {n:>7} {s:>6.0f}")
    print(f"estimated in {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
