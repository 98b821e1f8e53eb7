"""Seeds trained side by side (matcond.condition_number.run.run_trials) against one at a time, per
trial.

For each setting (the paper config's defaults with the dim, model and recording changed) it
trains the same seeds in batches of 1, 4, 16 and 64 in one process with one torch thread, as a
training job does, and prints the seconds per trial and the speed-up over batches of one. The
trials' tables and weights are the same bytes in every batch
(tests/condition_number/test_blocks.py); this measures only what batching buys, to choose
matcond.condition_number.batching.BATCH_ELEMENTS.

Run: python benchmarks/batch_bench.py [--seeds 64] [--epochs 200] [--device cpu]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch
import yaml

from matcond.condition_number.run import run_trials
from matcond.core.config import validate_config
from matcond.core.trials import all_trials

REPO = Path(__file__).resolve().parents[1]
SETTINGS = [
    *({"dim": d} for d in (16, 32, 64, 128, 256, 512)),
    {"dim": 64, "record_every": 1},
    {"dim": 32, "model": "deep_linear", "depth": 3},
    {"dim": 32, "model": "attention", "seq_len": 8},
]
BATCHES = (1, 4, 16, 64)


def paper_defaults() -> dict:
    """The settings of the paper config's first trial, without its seed."""
    config = validate_config(yaml.safe_load((REPO / "config" / "config.yaml").read_text()))
    spec = next(iter(all_trials(config).values()))[0].spec
    return {k: v for k, v in spec.items() if k != "seed"}


def seconds_per_trial(
    cell: dict,
    seeds: int,
    batch: int,
    device: torch.device,
    spectra_on_device: bool | None = None,
) -> tuple[float, float]:
    """Wall and this process's CPU seconds per trial to train ``seeds`` seeds of ``cell`` in
    batches of ``batch`` (``spectra_on_device`` as :func:`run_trials` takes it)."""
    specs = [json.loads(json.dumps({**cell, "seed": s}, sort_keys=True)) for s in range(seeds)]
    wall, cpu = time.perf_counter(), time.process_time()
    for first in range(0, seeds, batch):  # each batch's results are on the host: synchronised
        run_trials(specs[first : first + batch], device, spectra_on_device)
    return (time.perf_counter() - wall) / seeds, (time.process_time() - cpu) / seeds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=64)
    parser.add_argument("--epochs", type=int, default=200)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    torch.set_num_threads(1)
    device = torch.device(args.device)
    base = {**paper_defaults(), "epochs": args.epochs}
    print(f"{args.seeds} seeds, {args.epochs} epochs, device {device}: seconds per trial")
    print("setting".ljust(40) + "".join(f"batch {b}".rjust(12) for b in BATCHES) + "  speed-up")
    for changes in SETTINGS:
        cell = {**base, **changes}
        times = [seconds_per_trial(cell, args.seeds, b, device)[0] for b in BATCHES]
        speedups = " ".join(f"{times[0] / t:.2f}" for t in times[1:])
        label = ", ".join(f"{k}={v}" for k, v in changes.items())
        print(label.ljust(40) + "".join(f"{t:12.4f}" for t in times) + f"  {speedups}")


if __name__ == "__main__":
    main()
