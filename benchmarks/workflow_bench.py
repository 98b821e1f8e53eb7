"""Wall time of a whole workflow run from an empty results/, and what each training job costs.

Runs `snakemake` on a config in a fresh working directory, then reads every training job's
benchmark file (wall seconds and peak RSS of the job's process, written by Snakemake) and its
log (the in-process compute seconds, written by scripts/train_trial.py), and prints:
- the workflow's wall time and its job count;
- per training job: wall, compute, overhead = wall - compute (interpreter start, imports,
  Snakemake's script preamble, writing outputs), as medians and totals;
- the peak memory of the training jobs at the largest dimension.

    python benchmarks/workflow_bench.py                       # paper scale, --cores 2
    python benchmarks/workflow_bench.py --config config/test/config.yaml --workdir /tmp/bench
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parents[1]


def run_workflow(workdir: Path, config: Path, cores: int) -> float:
    """Run the workflow in ``workdir``; return its wall seconds."""
    cmd = [
        str(Path(sys.executable).with_name("snakemake")),
        *("-s", str(REPO / "Snakefile"), "--directory", str(workdir)),
        *("--configfile", str(config.resolve()), "--cores", str(cores), "--resources", "gpu=1"),
        "--quiet",
    ]
    start = time.perf_counter()
    subprocess.run(cmd, check=True)
    return time.perf_counter() - start


def training_jobs(workdir: Path) -> pd.DataFrame:
    """One row per training job: dim, wall seconds, peak RSS (MB), compute seconds."""
    rows = []
    for bench in (workdir / "results" / "benchmarks" / "train").rglob("*.tsv"):
        record = pd.read_csv(bench, sep="\t").iloc[0]
        trial = bench.relative_to(workdir / "results" / "benchmarks" / "train").with_suffix("")
        log = (workdir / "results" / "logs" / "train" / trial).with_suffix(".log").read_text()
        compute = float(re.search(r"compute_seconds=([\d.]+)", log).group(1))
        dim = int(re.search(r"/d(\d+)/", f"/{trial}/").group(1))
        rows.append(
            {"dim": dim, "wall": record["s"], "max_rss_mb": record["max_rss"], "compute": compute}
        )
    return pd.DataFrame(rows)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--config", type=Path, default=REPO / "config" / "config.yaml")
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument(
        "--workdir", type=Path, help="empty or new directory (default: a temporary one)"
    )
    args = parser.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="matcond-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    if (workdir / "results").exists():
        sys.exit(f"{workdir}/results exists: the benchmark needs an empty results directory")

    wall = run_workflow(workdir, args.config, args.cores)
    jobs = training_jobs(workdir)
    jobs["overhead"] = jobs["wall"] - jobs["compute"]
    print(f"workdir: {workdir}")
    print(f"workflow wall time (--cores {args.cores}): {wall:.1f} s for {len(jobs)} training jobs")
    median = jobs[["wall", "compute", "overhead"]].median()
    print(
        f"training jobs, median s: wall {median['wall']:.2f}, compute {median['compute']:.2f}, "
        f"overhead {median['overhead']:.2f}"
    )
    total = jobs[["wall", "compute", "overhead"]].sum()
    print(
        f"training jobs, total s:  wall {total['wall']:.1f}, compute {total['compute']:.1f}, "
        f"overhead {total['overhead']:.1f} ({total['overhead'] / total['wall']:.0%} of job time)"
    )
    print("per dimension (median s, peak RSS MB):")
    summary = jobs.groupby("dim").agg(
        jobs=("wall", "size"),
        wall=("wall", "median"),
        compute=("compute", "median"),
        overhead=("overhead", "median"),
        peak_rss_mb=("max_rss_mb", "max"),
    )
    print(summary.round(2).to_string())


if __name__ == "__main__":
    main()
