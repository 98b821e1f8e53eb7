"""Wall time of a whole workflow run from an empty results/, and what each training job costs.

Runs `snakemake` on a config in fresh working directories, once with the job server
(`job_server: true`, the default: every job runs in a forked child of one process that has
imported torch, pandas, matplotlib and the job modules) and once without (every job starts
Python and imports what it needs), then reads
every training job's benchmark file (a block of seeds: wall seconds, the in-process compute
seconds summed over its trials and peak RSS, written by matcond.condition_number.run.run_block_job),
and prints per mode:
- the workflow's wall time and its job count;
- per training job: wall, compute, overhead = wall - compute (interpreter start, imports,
  Snakemake's script preamble, writing outputs), as medians and totals;
- the peak memory of the training processes per dimension;
- the job-seconds per rule and per Gauss-Newton part (each sweep, each part on saved weights),
  the share of core-seconds spent outside jobs, and the longest job;
- the run's shape, from each job's benchmark file (written as the job ends, its seconds
  before that it started): the span of the jobs, idle core-seconds, span / (job-seconds /
  cores), the serial tail (the end of the run with fewer jobs than cores) and the critical
  path (the chain of jobs, each needing the one before, that holds the most job-seconds: no
  number of cores makes the run shorter; from the jobs' inputs and outputs in Snakemake's
  logs of the run);
and the ratios between the two modes.

    python benchmarks/workflow_bench.py --experiments exp1_dimension exp2_optimizer
    python benchmarks/workflow_bench.py --config config/test/config.yaml --modes server
    python benchmarks/workflow_bench.py --shape small-run --cores 2   # a finished run
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
import psutil
import yaml

REPO = Path(__file__).resolve().parents[1]
# job_server per mode: a process per job, or jobs forked from the job server
MODES = {"process": False, "server": True}
BENCHMARKS = "results/benchmarks/"


def snakemake_command(workdir: Path, cores: int) -> list[str]:
    """This checkout's workflow in ``workdir`` on its config.yaml, by this Python's
    Snakemake."""
    return [
        str(Path(sys.executable).with_name("snakemake")),
        *("-s", str(REPO / "Snakefile"), "--directory", str(workdir)),
        *("--configfile", str(workdir / "config.yaml"), "--cores", str(cores)),
    ]


def run_workflow(workdir: Path, config: dict, cores: int) -> tuple[float, dict[str, float]]:
    """Run the workflow with ``config`` in ``workdir`` (its console output in
    ``snakemake.out`` there; the log in .snakemake/log lists every job, which the critical
    path reads); return its wall seconds and the CPU seconds of the processes outside the
    jobs (:func:`own_cpu_seconds`, read each second until Snakemake ends)."""
    (workdir / "config.yaml").write_text(yaml.safe_dump(config))
    cmd = [*snakemake_command(workdir, cores), "--resources", "gpu=1"]
    start = time.perf_counter()
    cpu: dict[str, float] = {}
    with open(workdir / "snakemake.out", "w") as out:
        process = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
        while process.poll() is None:
            cpu.update(own_cpu_seconds(process.pid))
            time.sleep(1.0)
    if process.returncode:
        sys.exit(f"snakemake failed ({process.returncode}): {workdir / 'snakemake.out'}")
    return time.perf_counter() - start, cpu


def own_cpu_seconds(pid: int) -> dict[str, float]:
    """The CPU seconds (user + system) of Snakemake's process ``pid`` and of the job server's
    (its child that serves the jobs), each without its children (the jobs): what the run
    spends outside its jobs. Empty where the processes are gone."""
    seconds = {}
    try:
        snakemake = psutil.Process(pid)
        seconds["snakemake"] = sum(snakemake.cpu_times()[:2])
        for child in snakemake.children():
            if "matcond.server.jobserver" in " ".join(child.cmdline()):
                seconds["job server"] = sum(child.cpu_times()[:2])
    except psutil.Error:
        pass
    return seconds


def training_jobs(workdir: Path) -> pd.DataFrame:
    """One row per training job (a block): dim, wall seconds, compute seconds, peak RSS
    (MB), from the benchmark each training job writes
    (matcond.condition_number.run.write_benchmark)."""
    rows = []
    for bench in (workdir / "results" / "benchmarks" / "train").rglob("*.tsv"):
        record = pd.read_csv(bench, sep="\t").iloc[0]
        trial = bench.relative_to(workdir / "results" / "benchmarks" / "train").with_suffix("")
        dim = int(re.search(r"/d(\d+)/", f"/{trial}/").group(1))
        rows.append(
            {
                "dim": dim,
                "wall": record["s"],
                "compute": record["compute_s"],
                "peak_rss_mb": record["max_rss"],
            }
        )
    return pd.DataFrame(rows)


def job_intervals(workdir: Path) -> pd.DataFrame:
    """Every job's benchmark file (below results/benchmarks), rule (its first folder), seconds,
    start and end (seconds since the first start): the file is written as the job ends (by
    Snakemake, or by a training job itself), ``seconds`` before that it started."""
    root = workdir / "results" / "benchmarks"
    rows = []
    for bench in root.rglob("*.tsv"):
        seconds = float(pd.read_csv(bench, sep="\t").iloc[0]["s"])
        end = bench.stat().st_mtime
        path = bench.relative_to(root)
        rule = path.parts[0].removesuffix(".tsv")
        rows.append({"path": path, "rule": rule, "seconds": seconds, "end": end})
    jobs = pd.DataFrame(rows)
    first = (jobs["end"] - jobs["seconds"]).min()
    return jobs.assign(start=jobs["end"] - jobs["seconds"] - first, end=jobs["end"] - first)


def rule_seconds(jobs: pd.DataFrame) -> pd.DataFrame:
    """Jobs and job-seconds per rule, from :func:`job_intervals`."""
    table = jobs.groupby("rule")["seconds"].agg(jobs="size", seconds="sum")
    return table.sort_values("seconds", ascending=False)


def longest_job(jobs: pd.DataFrame) -> str:
    """The benchmark file of the longest job and its seconds (a lower bound of the critical
    path)."""
    row = jobs.loc[jobs["seconds"].idxmax()]
    return f"{row['path']} ({row['seconds']:.1f} s)"


def job_files(log_text: str) -> dict[Path, tuple[list[str], list[str]]]:
    """Per job of a Snakemake log (keyed by its benchmark file, relative to
    results/benchmarks, as :func:`job_intervals` keys it), its input and output files. A job
    listed again (a later run's log) replaces the earlier listing."""
    jobs, fields = {}, None
    for line in log_text.splitlines():
        if re.fullmatch(r"(?:local)?rule \S+:", line):
            fields = {"input": [], "output": [], "benchmark": []}
        elif fields is not None and line.startswith("    "):
            key, _, value = line.strip().partition(": ")
            if key in fields:
                fields[key] = value.split(", ")
            bench = [f for f in fields["benchmark"] + fields["output"] if f.startswith(BENCHMARKS)]
            if bench:
                key = Path(bench[0]).relative_to(BENCHMARKS)
                jobs[key] = (fields["input"], fields["output"])
        else:
            fields = None
    return jobs


def critical_path(files: dict[Path, tuple[list[str], list[str]]], jobs: pd.DataFrame) -> list:
    """The chain of jobs (benchmark files, first to last), each with an input that the one
    before wrote, whose seconds (:func:`job_intervals`) sum to the most; ``files`` from
    :func:`job_files`. A job without a benchmark file counts 0 s."""
    seconds = dict(zip(jobs["path"], jobs["seconds"], strict=True))
    writer = {out: key for key, (_, outputs) in files.items() for out in outputs}
    longest: dict[Path, tuple[float, list]] = {}

    def chain(key: Path) -> tuple[float, list]:
        if key not in longest:
            before = {writer[f] for f in files[key][0] if f in writer and writer[f] != key}
            best = max((chain(k) for k in before), default=(0.0, []), key=lambda c: c[0])
            longest[key] = (best[0] + seconds.get(key, 0.0), [*best[1], key])
        return longest[key]

    return max((chain(k) for k in files), default=(0.0, []), key=lambda c: c[0])[1]


def run_shape(jobs: pd.DataFrame, cores: int) -> dict[str, float]:
    """From :func:`job_intervals`: the span from the first job's start to the last one's end,
    the job-seconds, the idle core-seconds in the span, span / (job-seconds / cores) (1 is
    the floor), and the serial tail: the time from the last moment every core had a job to
    the end, with the job-seconds it holds."""
    events = sorted([(t, 1) for t in jobs["start"]] + [(t, -1) for t in jobs["end"]])
    running, last_full, span = 0, 0.0, float(jobs["end"].max())
    for moment, step in events:
        if running >= cores > running + step:  # every core had a job until now
            last_full = moment
        running += step
    tail = jobs[jobs["end"] > last_full]
    busy = float((jobs["end"] - jobs["start"]).sum())
    return {
        "span_s": span,
        "job_s": busy,
        "idle_core_s": span * cores - busy,
        "span_over_floor": span / (busy / cores),
        "tail_s": span - last_full,
        "tail_job_s": float((tail["end"] - tail["start"].clip(lower=last_full)).sum()),
        "tail_rules": ", ".join(sorted(set(tail["rule"]))),
    }


def print_shape(workdir: Path, jobs: pd.DataFrame, cores: int) -> None:
    """Print the shape (:func:`run_shape`) of the run in ``workdir`` (its jobs: ``jobs``, from
    :func:`job_intervals`), its longest job and its critical path (:func:`critical_path`)."""
    shape = run_shape(jobs, cores)
    print(
        f"shape on {cores} cores: {shape['span_s']:.1f} s from the first job's start to the "
        f"last one's end, {shape['job_s']:.1f} job-seconds, {shape['idle_core_s']:.1f} idle "
        f"core-seconds, span / (job-seconds / cores) = {shape['span_over_floor']:.2f}; serial "
        f"tail {shape['tail_s']:.1f} s (fewer jobs than cores; {shape['tail_job_s']:.1f} "
        f"job-seconds of {shape['tail_rules']}); longest job {longest_job(jobs)}"
    )
    logs = sorted((workdir / ".snakemake" / "log").glob("*.snakemake.log"))
    files = job_files("\n".join(log.read_text() for log in logs))
    if not files:
        print("critical path: not known, the run's log lists no jobs (a run with --quiet)")
        return
    path = critical_path(files, jobs)
    seconds = jobs.set_index("path")["seconds"]
    steps = " -> ".join(f"{p} ({seconds.get(p, 0.0):.1f} s)" for p in path)
    total = sum(seconds.get(p, 0.0) for p in path)
    print(f"critical path {total:.1f} s, {total / shape['span_s']:.0%} of the span: {steps}")


def gn_seconds(jobs: pd.DataFrame) -> pd.DataFrame:
    """Jobs and job-seconds per GN part, from :func:`job_intervals`: each sweep and table (a
    file under results/benchmarks/gn), each part on saved weights (a folder there: one job
    per trial)."""
    gn = jobs[jobs["rule"] == "gn"]
    if gn.empty:
        return pd.DataFrame(columns=["jobs", "seconds"])
    parts = gn["path"].map(lambda path: path.parts[1].removesuffix(".tsv"))
    table = gn.groupby(parts.rename("part"))["seconds"].agg(jobs="size", seconds="sum")
    return table.sort_values("seconds", ascending=False)


def report(mode: str, wall: float, jobs: pd.DataFrame, cores: int) -> None:
    """Print one mode's figures."""
    print(
        f"== {mode}: workflow wall time (--cores {cores}): {wall:.1f} s, {len(jobs)} training jobs"
    )
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
        peak_rss_mb=("peak_rss_mb", "max"),
    )
    print(summary.round(2).to_string())


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--config", type=Path, default=REPO / "config" / "config.yaml")
    parser.add_argument("--experiments", nargs="+", help="run only these experiments")
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--workdir", type=Path, help="new directory (default: a temporary one)")
    parser.add_argument(
        "--shape", type=Path, help="only print the shape of the finished run in this directory"
    )
    args = parser.parse_args()
    if args.shape:
        print_shape(args.shape, job_intervals(args.shape), args.cores)
        return
    root = args.workdir or Path(tempfile.mkdtemp(prefix="matcond-bench-"))
    config = yaml.safe_load(args.config.read_text())
    if args.experiments:
        config["experiments"] = {name: config["experiments"][name] for name in args.experiments}
        config.pop("gauss_newton", None)
    print(f"workdirs under {root}")
    results = {}
    for mode in args.modes:
        workdir = root / mode
        if (workdir / "results").exists():
            sys.exit(f"{workdir}/results exists: the benchmark needs an empty results directory")
        workdir.mkdir(parents=True, exist_ok=True)
        wall, own_cpu = run_workflow(workdir, {**config, "job_server": MODES[mode]}, args.cores)
        jobs = training_jobs(workdir)
        jobs["overhead"] = jobs["wall"] - jobs["compute"]
        report(mode, wall, jobs, args.cores)
        print("job-seconds per rule (results/benchmarks):")
        intervals = job_intervals(workdir)
        per_rule = rule_seconds(intervals)
        print(per_rule.round(1).to_string())
        busy = per_rule["seconds"].sum()
        print(
            f"job-seconds {busy:.1f} of {wall * args.cores:.1f} core-seconds (wall x cores): "
            f"{1 - busy / (wall * args.cores):.0%} outside jobs (Snakemake, start-up, idle "
            "cores)"
        )
        print(
            "CPU outside the jobs: "
            + ", ".join(f"{name} {seconds:.1f} s" for name, seconds in own_cpu.items())
        )
        print_shape(workdir, intervals, args.cores)
        print("GN job-seconds per part (results/benchmarks/gn):")
        print(gn_seconds(intervals).round(1).to_string())
        results[mode] = (wall, jobs)
    if len(results) == 2:
        (wall_a, jobs_a), (wall_b, jobs_b) = results["process"], results["server"]
        print(
            f"process / server: workflow wall {wall_a / wall_b:.2f}x, median job wall "
            f"{jobs_a['wall'].median() / jobs_b['wall'].median():.2f}x, total job overhead "
            f"{jobs_a['overhead'].sum() / jobs_b['overhead'].sum():.2f}x"
        )


if __name__ == "__main__":
    main()
