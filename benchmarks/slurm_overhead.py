"""What a training trial costs under SLURM besides its training: one job per trial, one per
block of seeds, and blocks grouped.

Brings up the single-node test cluster (``tests/slurm/cluster.sh up``: root and the Debian
SLURM packages; ``tests/slurm/cluster.sh install``), runs exp1_dimension alone over the grid
``--dims`` x ``--lrs`` (``--seeds`` seeds per setting, ``--epochs`` epochs of ``--batch-size``,
no Gauss-Newton sweeps) from an empty results/ through ``profiles/slurm`` once per mode
(``--modes``), and stops the cluster (``cluster.sh down``):

- ``per-trial``: ``block_size: 1`` and ``--group-components trials=1``, one SLURM job per
  trial (the workflow before blocks of seeds);
- ``per-block``: ``--group-components trials=1`` and ``train_job_seconds: 0``, one SLURM
  job per block of seeds (``block_size``, 64 by default, at most the seeds of a setting);
- ``grouped-blocks``: up to 16 blocks per SLURM job, each its own training job (the profile
  before bundles);
- ``per-bundle``: ``--group-components trials=1``, one SLURM job per bundle of blocks (of
  about ``train_job_seconds``, 30 s by default under SLURM);
- ``grouped-no-server``: the profile's groups of bundles, each bundle's script in its own
  Python (``job_server: false``);
- ``grouped``: the profile as it is (up to 8 bundles per SLURM job), the group job's
  bundles run by the job server that the group job starts.

Aggregation, plots and claims are one ``post`` job in both. Per mode it prints the workflow's
wall time, the SLURM span of the trials (first submission to last end), and per trial:

- job seconds: ``sacct`` ElapsedRaw of the trial jobs, summed and divided by the trials;
- CPU seconds: the same weighted by AllocCPUS (the CPUs SLURM allocated to the job);
- compute: the in-process ``compute_seconds=`` (over its ``trials=``) that
  matcond.condition_number.run.run_block_job logs into ``results/logs/train/<block>.log``;
- overhead = job (or CPU) seconds - compute: Snakemake's start and DAG in the job, ``srun``,
  the Python start and imports (mostly ``import torch``: ~4 s of a ~4.3 s job locally);
- CPU/compute: allocated CPU seconds over the training's.

    sudo .venv/bin/python benchmarks/slurm_overhead.py               # 4 tiny trials per mode
    sudo .venv/bin/python benchmarks/slurm_overhead.py --seeds 64    # 128 trials, 2 blocks
    # paper-default trials, 8 settings of 15 seeds (8 blocks, 9 s of training)
    sudo .venv/bin/python benchmarks/slurm_overhead.py --seeds 15 --dims 128 256 \
        --lrs 0.01 0.005 0.002 0.001 --epochs 200 --batch-size 64 --modes grouped
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "slurm"))
from slurmcluster import ACCOUNT, PARTITION, client_env, run_script, skip_reason  # noqa: E402

SNAKEMAKE = Path(sys.executable).with_name("snakemake")
SUBMITTED = re.compile(r"has been submitted with SLURM jobid (\d+) \(log: (.*)\)\.")
MODES = {
    "per-trial": [
        *("--group-components", "trials=1", "--config", "block_size=1", "train_job_seconds=0")
    ],
    "per-block": ["--group-components", "trials=1", "--config", "train_job_seconds=0"],
    "grouped-blocks": ["--group-components", "trials=16", "--config", "train_job_seconds=0"],
    "per-bundle": ["--group-components", "trials=1"],
    "grouped-no-server": ["--config", "job_server=False"],
    "grouped": [],
}


def small_config(seeds: int, dims: list[int], lrs: list[float], epochs: int, batch: int) -> dict:
    """exp1_dimension alone over ``dims`` x ``lrs``, ``seeds`` seeds per setting."""
    return {
        "device": "cpu",
        "defaults": {"epochs": epochs, "batch_size": batch, "dim": dims[-1]},
        "experiments": {
            "exp1_dimension": {"grid": {"dim": dims, "lr": lrs}, "seeds": seeds},
        },
    }


def run_mode(workdir: Path, env: dict[str, str], extra: list[str]) -> tuple[float, str]:
    """Run the workflow in ``workdir`` on the cluster; return its wall seconds and its log."""
    cmd = [
        str(SNAKEMAKE),
        *("-s", str(REPO / "Snakefile"), "--directory", str(workdir)),
        *("--configfile", str(workdir / "config.yaml"), "--profile", str(REPO / "profiles/slurm")),
        *("--default-resources", f"slurm_account={ACCOUNT}", f"slurm_partition={PARTITION}"),
        *("--slurm-init-seconds-before-status-checks", "2", "--verbose", *extra),
    ]
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=workdir, env=env, capture_output=True, text=True, timeout=1800)
    wall = time.perf_counter() - start
    log = proc.stdout + proc.stderr
    if proc.returncode != 0:
        sys.exit(f"snakemake failed in {workdir}:\n{log[-5000:]}")
    return wall, log


def sacct(env: dict[str, str], job_ids: list[str]) -> list[dict[str, str]]:
    fields = ["JobID", "ElapsedRaw", "AllocCPUS", "Submit", "End", "State"]
    out = subprocess.run(
        ["sacct", "-n", "-X", "-P", "-j", ",".join(job_ids), "-o", ",".join(fields)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [dict(zip(fields, line.split("|"), strict=True)) for line in out.splitlines()]


def measure(workdir: Path, env: dict[str, str], extra: list[str]) -> dict[str, float]:
    wall, log = run_mode(workdir, env, extra)
    train_ids = [
        job_id
        for job_id, path in SUBMITTED.findall(log)
        if "/rule_train/" in path or "/group_trials_train/" in path
    ]
    # sacct may lag a job's end by a moment.
    for _ in range(60):
        jobs = sacct(env, train_ids)
        if len(jobs) == len(train_ids) and all(j["State"] == "COMPLETED" for j in jobs):
            break
        time.sleep(1)
    else:
        sys.exit(f"trial jobs not all COMPLETED in sacct: {jobs}")
    logs = [p.read_text() for p in (workdir / "results" / "logs" / "train").rglob("*.log")]
    compute = [float(re.search(r"compute_seconds=([\d.]+)", text).group(1)) for text in logs]
    trials = sum(int(re.search(r"trials=(\d+)", text).group(1)) for text in logs)
    job_seconds = sum(int(j["ElapsedRaw"]) for j in jobs)
    cpu_seconds = sum(int(j["ElapsedRaw"]) * int(j["AllocCPUS"]) for j in jobs)
    first = min(datetime.fromisoformat(j["Submit"]) for j in jobs)
    last = max(datetime.fromisoformat(j["End"]) for j in jobs)
    return {
        "wall": wall,
        "trials": trials,
        "slurm_jobs": len(jobs),
        "span": (last - first).total_seconds(),
        "job_s": job_seconds / trials,
        "cpu_s": cpu_seconds / trials,
        "compute_s": sum(compute) / trials,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seeds", type=int, default=2, help="seeds per d (trials: 2 x seeds)")
    parser.add_argument("--dims", type=int, nargs="+", default=[4, 8], help="the grid's d")
    parser.add_argument("--lrs", type=float, nargs="+", default=[0.01], help="the grid's lr")
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--modes", nargs="+", choices=list(MODES), default=list(MODES))
    parser.add_argument(
        "--port",
        type=int,
        default=int(os.environ.get("SLURM_TEST_PORT", 16827)),
        help="first of the cluster's three TCP ports (default: $SLURM_TEST_PORT or 16827)",
    )
    args = parser.parse_args()
    reason = skip_reason()
    if reason:
        sys.exit(reason)
    os.environ["SLURM_TEST_PORT"] = str(args.port)  # read by cluster.sh

    state_dir = Path(tempfile.mkdtemp(prefix="slurm-bench-", dir="/tmp"))
    work_root = Path(tempfile.mkdtemp(prefix="matcond-slurm-bench-"))
    up = run_script("up", state_dir)
    if up.returncode != 0:
        sys.exit(f"cluster.sh up failed:\n{up.stdout}\n{up.stderr}")
    results = {}
    try:
        env = client_env(state_dir)
        config = yaml.safe_dump(
            small_config(args.seeds, args.dims, args.lrs, args.epochs, args.batch_size)
        )
        for mode in args.modes:
            extra = MODES[mode]
            workdir = work_root / mode
            workdir.mkdir()
            (workdir / "config.yaml").write_text(config)
            results[mode] = measure(workdir, env, extra)
    finally:
        down = run_script("down", state_dir)
        if down.returncode != 0:
            print(f"cluster.sh down failed (state kept in {state_dir}):\n{down.stderr}")
        else:
            shutil.rmtree(state_dir, ignore_errors=True)
    shutil.rmtree(work_root, ignore_errors=True)

    load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    print(
        f"{args.seeds} seeds x d in {args.dims} x lr in {args.lrs}, {args.epochs} epochs of "
        f"batch {args.batch_size}; "
        f"{os.cpu_count()} CPUs, load {load}"
    )
    print(
        f"{'mode':<18} {'trials':>6} {'jobs':>5} {'wall s':>7} {'span s':>7} "
        f"{'job s/trial':>11} {'CPU s/trial':>11} {'compute s':>9} "
        f"{'overhead (job) s':>16} {'overhead (CPU) s':>16} {'CPU/compute':>11}"
    )
    for mode, r in results.items():
        print(
            f"{mode:<18} {r['trials']:>6} {r['slurm_jobs']:>5} {r['wall']:>7.1f} "
            f"{r['span']:>7.0f} {r['job_s']:>11.2f} {r['cpu_s']:>11.2f} {r['compute_s']:>9.3f} "
            f"{r['job_s'] - r['compute_s']:>16.2f} {r['cpu_s'] - r['compute_s']:>16.2f} "
            f"{r['cpu_s'] / r['compute_s']:>11.2f}"
        )
    print("wall: the whole workflow (trials, then one post job); span: the trials in SLURM")


if __name__ == "__main__":
    main()
