"""How the workflow scales with the number of trials (issue: blocks of seeds).

Generates configs of about 1k, 10k and 100k tiny trials: config/test/config.yaml with every
experiment's seeds raised (except the two whose weights the Gauss-Newton parts read, which keep
theirs: one GN job per trial is not what this measures). For each it prints the jobs
`snakemake -n` plans, trials per training job, its wall time and peak RSS. For 1k and 10k it
then trains every block for real (`--until train`, --cores 2) and prints the wall time, the
seconds spent computing trials (summed from the blocks' benchmarks), the overhead ratio
wall / (compute / cores), and the files per trial left in results/ and .snakemake/.

Run: python benchmarks/scale_bench.py [--sizes 1000 10000 100000] [--block-size N]
"""

from __future__ import annotations

import argparse
import csv
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
SNAKEMAKE = Path(sys.executable).with_name("snakemake")
KEPT = ("exp7_depth", "exp7_along_training")  # their trials' weights feed one GN job each
CORES = 2


def write_config(directory: Path, trials: int, block_size: int | None) -> int:
    """A test config of about ``trials`` trials in ``directory``; returns the seeds per setting."""
    config = yaml.safe_load((REPO / "config" / "test" / "config.yaml").read_text())
    # the test config has 2 seeds per setting and about 55 settings
    seeds = max(2, round(trials / 55))
    for name, experiment in config["experiments"].items():
        if name not in KEPT:
            experiment["seeds"] = seeds
    if block_size:
        config["block_size"] = block_size
    (directory / "config.yaml").write_text(yaml.safe_dump(config))
    return seeds


def timed(cmd: list[str], cwd: Path) -> tuple[float, float, str]:
    """Wall seconds, peak RSS (MB) and output of ``cmd`` run under GNU time."""
    full = ["/usr/bin/time", "-f", "PEAK_KB %M", *map(str, cmd)]
    start = time.perf_counter()
    proc = subprocess.run(full, cwd=cwd, capture_output=True, text=True)
    wall = time.perf_counter() - start
    out = proc.stdout + proc.stderr
    if proc.returncode != 0:
        sys.exit(f"failed: {' '.join(map(str, cmd))}\n{out[-3000:]}")
    peak = int(re.findall(r"PEAK_KB (\d+)", out)[-1]) / 1024
    return wall, peak, out


def snakemake(directory: Path, *args: str) -> list[str]:
    return [
        SNAKEMAKE,
        "-s",
        REPO / "Snakefile",
        "--directory",
        directory,
        "--configfile",
        directory / "config.yaml",
        *args,
    ]


def planned(out: str) -> dict[str, int]:
    """The job counts of a dry run's 'Job stats' table."""
    table = out.split("Job stats:")[1].split("Reasons:")[0]
    return {m[0]: int(m[1]) for m in re.findall(r"^(\w+)\s+(\d+)$", table, flags=re.M)}


def compute_seconds(directory: Path) -> float:
    total = 0.0
    for path in (directory / "results" / "benchmarks" / "train").rglob("*.tsv"):
        with open(path) as fh:
            total += float(next(csv.DictReader(fh, delimiter="\t"))["compute_s"])
    return total


def count_files(directory: Path) -> int:
    """Files in results/ and .snakemake/ (tables, manifests, logs, benchmarks, metadata)."""
    return sum(
        1
        for root in ("results", ".snakemake")
        for p in (directory / root).rglob("*")
        if p.is_file()
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000, 100_000])
    parser.add_argument("--run-up-to", type=int, default=10_000, help="real runs up to this size")
    parser.add_argument("--block-size", type=int, default=None, help="default: the schema's")
    args = parser.parse_args()
    print(
        "trials  seeds  jobs  train_jobs  trials/job  dry_run_s  dry_run_MB"
        "  run_s  compute_s  overhead  files/trial"
    )
    for size in args.sizes:
        with tempfile.TemporaryDirectory(prefix=f"scale{size}-") as tmp:
            directory = Path(tmp)
            seeds = write_config(directory, size, args.block_size)
            wall, peak, out = timed(snakemake(directory, "-n", "--cores", str(CORES)), REPO)
            jobs = planned(out)
            dry = f"{wall:9.1f}  {peak:10.0f}"
            row = f"{seeds:5d}  {jobs['total']:5d}  {jobs.get('train', 0):10d}"
            if size <= args.run_up_to:
                run = snakemake(directory, "--cores", str(CORES), "--until", "train", "-q")
                run_wall, _, _ = timed(run, REPO)
                trials = len(list((directory / "results" / "trials").rglob("seed*.parquet")))
                compute = compute_seconds(directory)
                overhead = run_wall / (compute / CORES)
                files = count_files(directory) / trials
                tail = f"{run_wall:6.0f}  {compute:9.1f}  {overhead:8.2f}  {files:11.2f}"
            else:
                trials, tail = None, f"{'-':>6}  {'-':>9}  {'-':>8}  {'-':>11}"
            shown = f"{trials:6d}" if trials else f"~{size:5d}"
            per_job = (trials or size) / max(1, jobs.get("train", 1))
            print(f"{shown}  {row}  {per_job:10.1f}  {dry}  {tail}", flush=True)


if __name__ == "__main__":
    main()
