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

The machine's speed moves while it runs (on the 2-core virtual machine, one operation's rate by
2-3x over seconds, each kind of operation on its own), so each class runs in rounds: the floor,
a block, the floor again. A round's ratio is the block's seconds per trial over the geometric
mean of the two floors around it; the script prints the median of the rounds' ratios with its
distribution-free 95 % interval (order statistics, scipy.stats.quantile_test) and says whether
the class is within TARGET of its floor (the interval's upper end at or below it), above it
(the lower end above it) or undecided at this machine's noise; and, as before, the best block
over the best floor.

Run: python benchmarks/train_floor.py [--rounds 9] [--classes d512 d128-long ...] [--side 4]
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
from scipy import stats
from threadpoolctl import threadpool_limits

from matcond.condition_number.batching import seeds_side_by_side
from matcond.condition_number.run import run_trials
from matcond.condition_number.training import record_epochs
from matcond.core.config import validate_config

sys.path.insert(0, str(Path(__file__).resolve().parent))
from batch_bench import REPO, paper_defaults  # noqa: E402

# issue 58's target: each heavy class within this many times its floor
TARGET = 1.3

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


def gemm_rate(batch: int, dim: int, device: str = "cpu", seeds: int = 1, repeats: int = 3) -> float:
    """float32 FLOP/s of the residual form's products, (B x d) @ (d x d) and (d x B) @ (B x d),
    for ``seeds`` seeds at once on ``device``: on the CPU by process time (one thread, as set
    by the caller), on a GPU by wall time between synchronisations; the best of ``repeats``."""
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
    return reps * flop / cpu_seconds(products, repeats, clock)


def normal_seconds(count: int, repeats: int = 3) -> float:
    """Seconds to draw ``count`` float32 standard normals with a torch generator."""
    gen, out = torch.Generator().manual_seed(0), torch.empty(max(count, 1 << 16))
    reps = 20

    def draws() -> None:
        for _ in range(reps):
            out.normal_(generator=gen)

    return cpu_seconds(draws, repeats) / reps * count / out.numel()


def svdvals_seconds(dim: int, repeats: int = 5) -> float:
    """Seconds for the float64 singular values of one d x d matrix (numpy)."""
    a = np.random.default_rng(0).standard_normal((dim, dim))
    return cpu_seconds(lambda: np.linalg.svd(a, compute_uv=False), repeats)


def floor_seconds(spec: dict, repeats: int = 3) -> float:
    """The floor of one trial of ``spec`` (module docstring), each rate the best of
    ``repeats`` timings."""
    batch, dim = spec["batch_size"], spec["dim"]
    steps = spec["epochs"] * spec["steps_per_epoch"]
    recordings = len(record_epochs(spec["epochs"], spec["record_every"]))
    per_step = 4 * batch * dim * dim / gemm_rate(batch, dim, repeats=repeats) + normal_seconds(
        2 * batch * dim, repeats
    )
    return steps * per_step + (1 + recordings) * svdvals_seconds(dim, repeats)


def block_seconds(spec: dict, block: int, side: int) -> float:
    """CPU seconds per trial of the project's training of block ``block`` of ``side`` seeds
    side by side (seeds ``block * side`` on)."""
    specs = [
        json.loads(json.dumps({**spec, "seed": block * side + s}, sort_keys=True))
        for s in range(side)
    ]
    return cpu_seconds(lambda: run_trials(specs, torch.device("cpu")), 1) / side


def rounds_of(spec: dict, rounds: int, side: int) -> list[tuple[float, float, float]]:
    """``(floor before, block, floor after)`` seconds per trial for each of ``rounds`` rounds,
    round r training the block of seeds from ``r * side``; each floor timed once per rate, as
    the block is."""
    out = []
    for block in range(rounds):
        before = floor_seconds(spec, repeats=1)
        measured = block_seconds(spec, block, side)
        out.append((before, measured, floor_seconds(spec, repeats=1)))
    return out


def summary(timings: list[tuple[float, float, float]]) -> dict:
    """The rounds' ratios (block over the geometric mean of its two floors): their median and
    its 95 % interval (NaN with fewer than 6 rounds), the verdict against :data:`TARGET`, and
    the best block over the best floor."""
    before, measured, after = (np.array(column) for column in zip(*timings, strict=True))
    ratios = measured / np.sqrt(before * after)
    low = high = float("nan")
    if len(ratios) >= 6:  # below 6 no interval of order statistics reaches 95 %
        interval = stats.quantile_test(ratios, q=1.0, p=0.5).confidence_interval(0.95)
        low, high = float(interval.low), float(interval.high)
    verdict = "within" if high <= TARGET else "above" if low > TARGET else "undecided"
    best_floor = float(min(before.min(), after.min()))
    return {
        "median": float(np.median(ratios)),
        "low": low,
        "high": high,
        "verdict": verdict,
        "best_measured": float(measured.min()),
        "best_floor": best_floor,
        "best_ratio": float(measured.min()) / best_floor,
    }


def side_of(spec: dict, side: int | None) -> int:
    """Seeds side by side: ``side``, or else as many as a training job trains so."""
    config = validate_config(yaml.safe_load((REPO / "config" / "config.yaml").read_text()))
    return side or min(seeds_side_by_side(spec["dim"], "cpu"), config["block_size"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--rounds", type=int, default=9, help="rounds per class (>= 6 for an interval)"
    )
    parser.add_argument("--classes", nargs="*", default=list(CLASSES), choices=list(CLASSES))
    parser.add_argument("--side", type=int, help="seeds side by side (default: the jobs')")
    args = parser.parse_args()
    torch.set_num_threads(1)
    base = paper_defaults()
    print(
        "class          side  median ratio  95 % interval   vs 1.3     "
        "best s/trial  best floor  best/best"
    )
    with threadpool_limits(1):
        for name in args.classes:
            spec = {**base, **CLASSES[name]}
            side = side_of(spec, args.side)
            r = summary(rounds_of(spec, args.rounds, side))
            print(
                f"{name:<14} {side:>4} {r['median']:>13.2f}  [{r['low']:.2f}, {r['high']:.2f}]"
                f"   {r['verdict']:<9} {r['best_measured']:>13.4f} {r['best_floor']:>11.4f}"
                f" {r['best_ratio']:>10.2f}"
            )


if __name__ == "__main__":
    main()
