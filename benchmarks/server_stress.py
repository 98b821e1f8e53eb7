"""Stress: N training jobs started at once through the job server, as Snakemake starts them
(``scripts/job.py LOG`` with the request on stdin), against the same jobs run one by one in
this process. With N above the server's listen backlog some jobs find it full and run in
their own process; every trial file must be the same bytes either way.

    python benchmarks/server_stress.py --jobs 100 --rounds 3

Prints per round: jobs, how many the server ran, how many ran in their own process, how many
failed, how many trial files differ from the in-process ones, and the round's wall seconds.
Exits 1 if any job failed or any file differs. tests/execution/test_jobserver.py runs one
round of 100.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def training_request(spec: dict, out: Path) -> dict:
    """The request of a training job of one trial (``spec``, saving its weights) whose files
    go to ``out``."""
    from matcond.core.trials import Block, Trial

    out.mkdir(parents=True, exist_ok=True)
    trial = Trial(json.dumps(spec, sort_keys=True))
    block = Block((trial,), 0, 64)
    output = {"manifest": str(out / "seeds0-63.json"), "benchmark": str(out / "bench.tsv")}
    return {
        "rule": "train",
        "input": {"entries": [], "named": {}},
        "output": {"entries": list(output.values()), "named": output},
        "wildcards": {},
        "params": {"block": block.request(saved={trial.path})},
        "threads": 1,
        "resources": {"device": "cpu"},
        "config": {"device": "cpu", "gpu_jobs": 1},
        "log": str(out / "job.log"),
    }


def trial_files(directory: Path) -> dict[str, bytes]:
    """Every trial file under ``directory`` (tables and weights), by relative path."""
    return {
        str(p.relative_to(directory)): p.read_bytes()
        for p in sorted(directory.rglob("seed*"))
        if p.suffix in (".parquet", ".safetensors")
    }


def stress_round(server_address: str, specs: list[dict], workdir: Path) -> dict:
    """Start one job per spec at once through ``scripts/job.py``; wait for all; count them."""
    from matcond.server.client import ADDRESS_ENV, SERVED_BY

    env = {**os.environ, ADDRESS_ENV: server_address}
    started = time.monotonic()
    running = []
    for i, spec in enumerate(specs):
        request = training_request(spec, workdir / f"job{i}")
        proc = subprocess.Popen(
            [sys.executable, str(REPO / "scripts" / "job.py"), request["log"]],
            stdin=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        proc.stdin.write(json.dumps(request).encode())
        proc.stdin.close()
        running.append((proc, Path(request["log"])))
    failed = sum(proc.wait() != 0 for proc, _ in running)
    served = sum(log.exists() and log.read_text().startswith(SERVED_BY) for _, log in running)
    return {
        "jobs": len(specs),
        "served": served,
        "own process": len(specs) - served - failed,
        "failed": failed,
        "seconds": round(time.monotonic() - started, 1),
    }


def in_process(specs: list[dict], workdir: Path) -> None:
    """The same jobs, one after another in this process."""
    from matcond.server.client import execute, job_from_request

    for i, spec in enumerate(specs):
        execute(job_from_request(training_request(spec, workdir / f"job{i}")))


def stress(n_jobs: int, rounds: int, root: Path) -> list[dict]:
    """``rounds`` rounds of ``n_jobs`` concurrent jobs against one in-process reference."""
    from matcond.core.config import validate_config
    from matcond.server.jobserver import JobServer

    defaults = validate_config({"experiments": {"x": {"seeds": 1}}})["defaults"]
    specs = [{**defaults, "dim": 8, "epochs": 20, "seed": s} for s in range(n_jobs)]
    reference = root / "reference"
    in_process(specs, reference)
    expected = trial_files(reference)
    server = JobServer.start()
    if server is None:
        raise RuntimeError("the job server did not start")
    results = []
    try:
        for r in range(rounds):
            workdir = root / f"round{r}"
            result = stress_round(server.published, specs, workdir)
            got = trial_files(workdir)
            result["differ"] = sum(got.get(k) != v for k, v in expected.items())
            result["missing"] = len(set(expected) - set(got))
            results.append(result)
    finally:
        server.stop()
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        results = stress(args.jobs, args.rounds, Path(tmp))
    for i, result in enumerate(results):
        print(f"round {i + 1}: " + ", ".join(f"{k} {v}" for k, v in result.items()))
    bad = any(r["failed"] or r["differ"] or r["missing"] for r in results)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
