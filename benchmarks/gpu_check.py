"""The README's command on a GPU machine, bounded in time: what the GPU does in a real run.

Run on the GPU machine through benchmarks/gpu_check.sh (which installs the wheels the
machine lacks). It prints, in order:

1. torch, CUDA and the GPU; whether a child forked after a backward pass in its parent can
   run one (the hazard the job server avoids) and whether one forked from a process that ran
   none can (:func:`matcond.execution.forked.fork_problem`);
2. the float32 rates of the residual form's products, (B x d) @ (d x d) batched over 64
   seeds at d = 512, on the GPU and on one CPU thread: the floors below; then a probe of one
   paper-default block per d (:data:`PROBE_SEEDS`) trained as a training job trains it, on
   one CPU thread and on the GPU (its singular values on the GPU, as the run takes them from
   d = 512 on, and on the host, as below it): wall and this process's CPU seconds per trial. The
   run's cores are its bound (docs/benchmarks.md), so a d gains on the GPU where the GPU
   block's host CPU per trial is below a CPU trial's: that is what ``gpu_min_dim`` is for.
   With ``--gpu-min-dim auto`` the run below takes the probe's pick (:func:`pick_min_dim`).
   And the float64 singular values alone, per matrix: 64 matrices of side d at once on the
   GPU (as a GPU block takes them) against numpy one at a time on the host, from d = 32 up
   (where the GPU's batched SVD stops paying, for a GPU block of small d); and whether a
   trial on the GPU is the same bytes alone and in a block (:func:`block_independence`);
3. the README's command (``snakemake --cores all --resources gpu=1``, the paper config
   unless other arguments are given) in a directory of its own for ``--seconds`` at most,
   sampling the GPU's utilisation every second (nvidia-smi);
4. per training class (model, d, batch size, epochs) and device, from the training jobs'
   logs (``device=... trials=... compute_seconds=...``): trials, trials per compute-second
   and the measured seconds per trial over the floor (4 B d^2 FLOP per step and layer at the
   device's rate above); the job-seconds per rule and the training's span (the first
   training job's start to the last one's end: issue 58's target, 5 min); the share of
   samples in which the GPU was busy and its mean utilisation;
5. where the run got as far as its claims table, which verdicts differ from the 2-core CPU
   snapshot's (``docs/paper-run/claims.csv``; meant for the paper config), by source, with
   their values and p in both (benchmarks/reseeded.py: how many move on the CPU when every
   trial is drawn anew, as a GPU trial is).

On a machine without a GPU (to test this script) the GPU parts say so and the rest runs:
    python benchmarks/gpu_check.py --seconds 200 --configfile config/test/config.yaml
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from threadpoolctl import threadpool_limits

from matcond.condition_number.batching import seeds_side_by_side
from matcond.condition_number.run import run_trials, trial_spec
from matcond.execution.forked import fork_problem

sys.path.insert(0, str(Path(__file__).resolve().parent))
from batch_bench import paper_defaults, seconds_per_trial  # noqa: E402
from reseeded import compare  # noqa: E402
from train_floor import gemm_rate  # noqa: E402
from workflow_bench import REPO, job_intervals, rule_seconds  # noqa: E402

LOG_LINE = re.compile(r"device=(\S+) trials=(\d+) compute_seconds=([\d.]+)")
CLASS = re.compile(
    r"^(?P<model>[a-z_]+)(?:-L(?P<depth>\d+))?/.*?/d(?P<dim>\d+)/.*-bs(?P<batch>\d+)-ep(?P<epochs>\d+)-spe(?P<spe>\d+)-"
)


def fork_probes() -> None:
    """Part 1: the fork hazard on this machine, and that the server's way avoids it."""
    print("fork from a process that ran no backward pass:", fork_problem() or "a child runs torch")
    x = torch.ones(2, requires_grad=True)
    (x * x).sum().backward()
    print("fork after a backward pass in the parent:", fork_problem() or "a child runs torch")


# The probe's blocks: d and seeds on the GPU (a paper block's: 64 at d <= 512, 8 above); on the
# CPU the first CPU_PROBE_SEEDS of them
PROBE_SEEDS = {128: 64, 256: 64, 512: 64, 1024: 8}
CPU_PROBE_SEEDS = 4
# How many times less host CPU per trial a d's GPU block must take than its CPU block for
# --gpu-min-dim auto to send it to the GPU: the margin covers the GPU jobs' own limit
# (gpu_jobs at once) and the probe's noise (written before any probe ran)
GPU_GAIN = 2.0


def pick_min_dim(probe: dict[int, tuple[float, float]], gain: float = GPU_GAIN) -> int | None:
    """The smallest probed d from which on every probed d's GPU block takes at most 1 / gain
    of the host CPU per trial of its CPU block (``probe``: d -> (CPU seconds per trial, GPU
    block's host CPU seconds per trial)); None where the largest d does not."""
    picked = None
    for dim in sorted(probe, reverse=True):
        cpu, gpu_host = probe[dim]
        if gpu_host * gain > cpu:
            break
        picked = dim
    return picked


def block_probe(gpu: bool) -> dict[int, tuple[float, float]]:
    """Part 2: per d of :data:`PROBE_SEEDS`, a paper-default block's seconds per trial on one
    CPU thread and on the GPU (module docstring); d -> (CPU seconds per trial, the GPU
    block's host CPU seconds per trial) where there is a GPU."""
    probe = {}
    cell, cpu, cuda = paper_defaults(), torch.device("cpu"), torch.device("cuda")
    if gpu:
        run_trials([trial_spec({**cell, "dim": 64}, 0)], cuda)  # CUDA's start-up, not timed
    print("block probe, s/trial:  d  seeds  CPU  | GPU wall, host CPU | spectra on host: same")
    for dim, seeds in PROBE_SEEDS.items():
        at = {**cell, "dim": dim}  # each device in the batches a training job uses
        side = {d.type: seeds_side_by_side(dim, d.type) for d in (cpu, cuda)}
        on_cpu = seconds_per_trial(at, CPU_PROBE_SEEDS, side["cpu"], cpu, False)[0]
        row = f"{dim:>27} {seeds:>6} {on_cpu:>6.3f}"
        if gpu:
            on, off = (seconds_per_trial(at, seeds, side["cuda"], cuda, s) for s in (True, False))
            row += f" | {on[0]:>8.3f} {on[1]:>8.3f} | {off[0]:>8.3f} {off[1]:>8.3f}"
            probe[dim] = on_cpu, on[1]
        print(row, flush=True)
    return probe


def block_independence(device: torch.device, dim: int = 128, seed: int = 2) -> bool:
    """Part 2: whether a trial's numbers on ``device`` are the same bytes trained alone and
    in a block of four (each trial draws from its own generators there: on a GPU, CUDA's)."""
    spec = {**paper_defaults(), "dim": dim, "epochs": 50}
    block_table, block_weights = run_trials([trial_spec(spec, s) for s in range(4)], device)
    alone_table, (alone_weights,) = run_trials([trial_spec(spec, seed)], device)
    in_block = block_table[block_table["seed"] == seed].reset_index(drop=True)
    same = in_block.equals(alone_table.reset_index(drop=True)) and all(
        np.array_equal(block_weights[seed][k], v) for k, v in alone_weights.items()
    )
    print(f"a trial on {device} alone and in a block of 4:", "same bytes" if same else "DIFFER")
    return same


def svd_probe(gpu: bool, seeds: int = 64) -> None:
    """Part 2, last: milliseconds per matrix of the float64 singular values of ``seeds``
    random d x d matrices, numpy one at a time on the host and torch batched on the GPU."""
    print("float64 singular values, ms per matrix:     d   host (numpy)   GPU (batched)")
    for dim in (32, 64, 128, 256, 512, 1024):
        stack = torch.randn(seeds, dim, dim, dtype=torch.float64)
        start = time.perf_counter()
        for matrix in stack.numpy():
            np.linalg.svd(matrix, compute_uv=False)
        row = f"{dim:>48} {(time.perf_counter() - start) / seeds * 1e3:>14.3f}"
        if gpu:
            on_gpu = stack.cuda()
            torch.linalg.svdvals(on_gpu)  # cuSOLVER's start-up and workspace, not timed
            torch.cuda.synchronize()
            start = time.perf_counter()
            torch.linalg.svdvals(on_gpu).cpu()
            row += f" {(time.perf_counter() - start) / seeds * 1e3:>15.3f}"
        print(row, flush=True)


def sample_gpu(stop: threading.Event, samples: list[float]) -> None:
    """Append the GPU's utilisation (%) every second until ``stop``."""
    while not stop.wait(1.0):
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=utilization.gpu", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
        )
        if out.returncode == 0 and out.stdout.strip():
            samples.append(float(out.stdout.split()[0]))


def run_readme(directory: Path, seconds: float, extra: list[str]) -> tuple[int, float]:
    """Part 3: the README's command in ``directory`` for at most ``seconds``: (exit status,
    wall seconds); 124 when it was stopped."""
    command = [sys.executable, "-m", "snakemake", "--cores", "all", "--resources", "gpu=1"]
    command += ["--directory", str(directory), *extra]
    start = time.perf_counter()
    with open(directory.with_suffix(".log"), "w") as log:
        process = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            status = process.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, 15)
            process.wait()
            status = 124
    return status, time.perf_counter() - start


def training_classes(directory: Path, rates: dict[str, float]) -> None:
    """Part 4: per class and device, trials, trials per compute-second and measured/floor."""
    classes: dict[tuple, list[float]] = defaultdict(lambda: [0, 0.0, 0.0])
    for log in (directory / "results" / "logs" / "train").rglob("*.log"):
        found = LOG_LINE.search(log.read_text(errors="replace"))
        block = str(log.relative_to(directory / "results" / "logs" / "train"))
        match = CLASS.match(block)
        if not found or not match:
            continue
        device, trials, seconds = found[1].split(":")[0], int(found[2]), float(found[3])
        c = match.groupdict()
        dim, batch = int(c["dim"]), int(c["batch"])
        steps = int(c["epochs"]) * int(c["spe"]) * int(c["depth"] or 1)
        floor = 4 * batch * dim * dim * steps / rates.get(device, float("nan"))
        key = (c["model"], dim, batch, int(c["epochs"]), device)
        classes[key][0] += trials
        classes[key][1] += seconds
        classes[key][2] += trials * floor
    print("model          d  batch  epochs device  trials  trials/s  measured/floor")
    for (model, dim, batch, epochs, device), (n, s, floor) in sorted(
        classes.items(), key=lambda x: -x[1][1]
    ):
        rate = n / s if s else float("inf")
        row = f"{model:<12} {dim:>4} {batch:>6} {epochs:>7} {device:<6} {n:>7}"
        print(f"{row} {rate:>9.1f} {s / floor:>15.1f}")


def job_seconds(directory: Path) -> None:
    """Job-seconds per rule, from the jobs' benchmark files (workflow_bench's reader)."""
    if not list((directory / "results" / "benchmarks").rglob("*.tsv")):
        print("no job finished")
        return
    jobs = job_intervals(directory)
    table = rule_seconds(jobs)["seconds"]
    shown = ", ".join(f"{rule} {seconds:.0f}" for rule, seconds in table.items())
    print(f"job-seconds {table.sum():.0f}: {shown}")
    train = jobs[jobs["rule"] == "train"]
    if len(train):
        start, end = train["start"].min(), train["end"].max()
        print(
            f"training: {len(train)} jobs from {start:.1f} s to {end:.1f} s after the first "
            f"job's start, {(end - start) / 60:.2f} min"
        )


def verdicts_against_snapshot(directory: Path) -> None:
    """Part 5: the claims whose verdict, law verdict or reading robustness differs from the
    snapshot's, and the claims table's devices."""
    table = directory / "results" / "claims.csv"
    if not table.exists():
        print("no claims table: the run did not get that far")
        return
    ours = pd.read_csv(table)
    print("against docs/paper-run/claims.csv:")
    print(compare(pd.read_csv(REPO / "docs" / "paper-run" / "claims.csv"), ours))
    print("devices:", ours["device"].fillna("none").value_counts().to_dict())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=420, help="the run's limit")
    parser.add_argument("--directory", type=Path, default=Path("gpu-check"))
    parser.add_argument(
        "--gpu-min-dim",
        default="config",
        help="auto: run with the probe's pick of gpu_min_dim (pick_min_dim); config: the config's",
    )
    args, extra = parser.parse_known_args()
    if args.gpu_min_dim not in ("auto", "config"):
        parser.error(f"--gpu-min-dim must be auto or config, not {args.gpu_min_dim!r}")
    if args.gpu_min_dim == "auto" and "--config" in extra:
        parser.error("--gpu-min-dim auto adds its own --config: give gpu_min_dim there instead")
    fork_probes()  # first: asking torch for the GPU starts CUDA's driver in this process
    gpu = torch.cuda.is_available()
    name = torch.cuda.get_device_name(0) if gpu else "none"
    print(f"torch {torch.__version__}, CUDA {torch.version.cuda}, GPU {name}")
    torch.set_num_threads(1)  # the CPU rate of one training job's thread
    rates = {"cpu": gemm_rate(64, 512)} | ({"cuda": gemm_rate(64, 512, "cuda", 64)} if gpu else {})
    print(
        "float32 GFLOP/s of the residual form's products:",
        {k: round(v / 1e9) for k, v in rates.items()},
    )
    with threadpool_limits(1):  # numpy's BLAS on one thread too, as in a training job
        block_independence(torch.device("cuda" if gpu else "cpu"))
        probe = block_probe(gpu)
        svd_probe(gpu)
    if args.gpu_min_dim == "auto":
        picked = pick_min_dim(probe)
        print(f"gpu_min_dim picked by the probe (gain >= {GPU_GAIN:g}): {picked}")
        if picked is not None:
            extra = [*extra, "--config", f"gpu_min_dim={picked}"]
    shutil.rmtree(args.directory, ignore_errors=True)
    args.directory.mkdir(parents=True)
    samples: list[float] = []
    stop = threading.Event()
    sampler = threading.Thread(target=sample_gpu, args=(stop, samples), daemon=True)
    if shutil.which("nvidia-smi"):
        sampler.start()
    status, wall = run_readme(args.directory, args.seconds, extra)
    stop.set()
    print(
        f"README's command: exit {status} (124: stopped at {args.seconds:g} s), {wall:.0f} s wall"
    )
    training_classes(args.directory, rates)
    job_seconds(args.directory)
    if samples:
        busy, mean = sum(u > 0 for u in samples) / len(samples), sum(samples) / len(samples)
        print(f"GPU busy in {busy:.0%} of {len(samples)} samples, mean utilisation {mean:.0f} %")
    else:
        print("GPU utilisation not sampled (no nvidia-smi)")
    verdicts_against_snapshot(args.directory)


if __name__ == "__main__":
    main()
