"""Training per class against its floor, on one CPU thread (issue 58's target: <= 1.3x).

A class is one setting of the paper config that holds many trials (its heavy ones). For
each, the project's training (matcond.condition_number.run.run_trials, as a training job
runs it: the block's seeds side by side, BLAS and torch on one thread) is timed in process
CPU seconds per trial, and set against the floor of the same science:

    floor = steps * (4 B d^2 / GEMM rate + 2 B d / normal rate) + (1 + recordings) * svdvals(d)

- 4 B d^2: the residual form's two products per step, R = X (W - W*)^T - eps (B x d) and
  the gradient R^T X (d x d); the GEMM rate is torch's float32 (B x d) @ (d x d) on one
  thread, measured in this run at each class's shapes;
- 2 B d normals per step (the inputs and the label noise), at torch's float32 rate here;
- the float64 singular values the trial's table needs (its target's and one d x d matrix
  per recorded epoch), timed here with numpy.

Run: python benchmarks/train_floor.py [--blocks 3] [--classes d512 d128-long ...] [--side 4]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch
import yaml
from threadpoolctl import threadpool_limits

from matcond.condition_number.batching import seeds_side_by_side
from matcond.condition_number.run import run_trials
from matcond.condition_number.training import record_epochs
from matcond.core.config import validate_config

sys.path.insert(0, str(Path(__file__).resolve().parent))
from batch_bench import REPO, paper_defaults  # noqa: E402

# The heavy classes of the paper config (issue 58: their trials and CPU-seconds at a559056)
# and two light ones for scale.
CLASSES = {
    "d128-long": {"dim": 128, "epochs": 1000, "record_every": 10},  # exp9 and its pools
    "d512-momentum": {"dim": 512, "momentum": 0.9},  # ctrl_momentum's checks
    "d512": {"dim": 512},
    "d256-bs256": {"dim": 256, "batch_size": 256},
    "d1024": {"dim": 1024},
    "d256-bs16": {"dim": 256, "batch_size": 16},
    "d32": {"dim": 32},
    "d128": {"dim": 128},
}


def cpu_seconds(function, repeats: int, clock=time.process_time) -> float:
    """Seconds of one call of ``function`` by ``clock`` (default: this process's CPU time), the
    best of ``repeats``."""
    best = float("inf")
    for _ in range(repeats):
        start = clock()
        function()
        best = min(best, clock() - start)
    return best


def gemm_rate(batch: int, dim: int, device: str = "cpu", seeds: int = 1) -> float:
    """float32 FLOP/s of the residual form's products, (B x d) @ (d x d) and (d x B) @ (B x d),
    for ``seeds`` seeds at once on ``device``: on the CPU by process time (one thread, as set
    by the caller), on a GPU by wall time between synchronisations."""
    stack = (seeds,) if seeds > 1 else ()  # one seed: the 2-D product (bmm of one is slower)
    x = torch.randn(*stack, batch, dim, device=device)
    w = torch.randn(*stack, dim, dim, device=device)
    flop = 4 * seeds * batch * dim * dim
    reps = max(3, int(2e8 / flop)) if device == "cpu" else 50
    synchronize = torch.cuda.synchronize if device != "cpu" else lambda: None

    def products() -> None:
        for _ in range(reps):
            r = x @ w
            r.mT @ x
        synchronize()

    products()  # warm-up (a GPU's first kernels)
    clock = time.process_time if device == "cpu" else time.perf_counter
    return reps * flop / cpu_seconds(products, 3, clock)


def normal_seconds(count: int) -> float:
    """Seconds to draw ``count`` float32 standard normals with a torch generator."""
    gen, out = torch.Generator().manual_seed(0), torch.empty(max(count, 1 << 16))
    reps = 20

    def draws() -> None:
        for _ in range(reps):
            out.normal_(generator=gen)

    return cpu_seconds(draws, 3) / reps * count / out.numel()


def svdvals_seconds(dim: int) -> float:
    """Seconds for the float64 singular values of one d x d matrix (numpy)."""
    a = np.random.default_rng(0).standard_normal((dim, dim))
    return cpu_seconds(lambda: np.linalg.svd(a, compute_uv=False), 5)


def floor_seconds(spec: dict) -> float:
    """The floor of one trial of ``spec`` (module docstring)."""
    batch, dim = spec["batch_size"], spec["dim"]
    steps = spec["epochs"] * spec["steps_per_epoch"]
    recordings = len(record_epochs(spec["epochs"], spec["record_every"]))
    per_step = 4 * batch * dim * dim / gemm_rate(batch, dim) + normal_seconds(2 * batch * dim)
    return steps * per_step + (1 + recordings) * svdvals_seconds(dim)


def block_seconds(spec: dict, block: int, side: int) -> float:
    """CPU seconds per trial of the project's training of block ``block`` of ``side`` seeds
    side by side (seeds ``block * side`` on)."""
    specs = [
        json.loads(json.dumps({**spec, "seed": block * side + s}, sort_keys=True))
        for s in range(side)
    ]
    return cpu_seconds(lambda: run_trials(specs, torch.device("cpu")), 1) / side


def measured_and_floor(spec: dict, blocks: int, side: int | None) -> tuple[float, float, int]:
    """The best of ``blocks`` rounds, each a block of ``side`` seeds side by side (default: as
    many as a training job trains so) then the floor: both sides as the best of their
    repeats, interleaved, as a shared machine's noise only ever adds time."""
    config = validate_config(yaml.safe_load((REPO / "config" / "config.yaml").read_text()))
    side = side or min(seeds_side_by_side(spec["dim"], "cpu"), config["block_size"])
    measured = floor = float("inf")
    for block in range(blocks):
        measured = min(measured, block_seconds(spec, block, side))
        floor = min(floor, floor_seconds(spec))
    return measured, floor, side


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, default=3, help="rounds per class")
    parser.add_argument("--classes", nargs="*", default=list(CLASSES), choices=list(CLASSES))
    parser.add_argument("--side", type=int, help="seeds side by side (default: the jobs')")
    args = parser.parse_args()
    torch.set_num_threads(1)
    base = paper_defaults()
    print("class            side  measured s/trial  floor s/trial  measured/floor")
    with threadpool_limits(1):
        for name in args.classes:
            spec = {**base, **CLASSES[name]}
            measured, floor, side = measured_and_floor(spec, args.blocks, args.side)
            print(
                f"{name:<16} {side:>4} {measured:>17.4f} {floor:>14.4f} {measured / floor:>15.2f}"
            )


if __name__ == "__main__":
    main()
