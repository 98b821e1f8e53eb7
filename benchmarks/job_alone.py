"""One rule's jobs of a finished run, each run alone in this process's shell, timed; and,
with --against, the same jobs of another checkout side by side (one on each core), their
outputs compared byte for byte.

A job's request is what its shell command hands to `scripts/job.py` (matcond.server.client),
read off `snakemake -n -p --forcerun RULE` in the run's directory (`--rerun-triggers mtime`:
the run's outputs count as current whatever code made them). Each job runs as
`python CHECKOUT/scripts/job.py LOG < request` (no job server: in its own process, on the
rule's threads), its outputs moved under `DIR/job-alone/<label>/` so that the run's own stay
as they are.

    python benchmarks/job_alone.py RUN_DIR claims theory
    python benchmarks/job_alone.py RUN_DIR aggregate --match ctrl_noise_free --against /tmp/old
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from workflow_bench import REPO, snakemake_command  # noqa: E402

REQUEST = re.compile(r"<<'MATCOND_JOB'\n(.*?)\nMATCOND_JOB", re.S)


def requests(run_dir: Path, rules: list[str]) -> list[dict]:
    """The requests of ``rules``' jobs in the finished run in ``run_dir`` (its config.yaml)."""
    command = [*snakemake_command(run_dir, 2), "-n", "-p", "--rerun-triggers", "mtime"]
    command += ["--forcerun", *rules, "--until", *rules]
    out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    return [json.loads(text) for text in REQUEST.findall(out)]


def moved(request: dict, folder: str) -> dict:
    """``request`` with its outputs under ``folder`` (relative to the run's directory)."""
    output = request["output"]
    entries = [f"{folder}/{path}" for path in output["entries"]]
    named = {key: f"{folder}/{path}" for key, path in output["named"].items()}
    return {**request, "output": {"entries": entries, "named": named}}


def run_job(
    checkout: Path, run_dir: Path, request: dict, log: Path, prefix: tuple[str, ...] = ()
) -> float:
    """Wall seconds of the job ``request`` run by ``checkout``'s scripts/job.py in a process
    of its own (never a job server's), its command after ``prefix`` (a profiler's)."""
    for path in request["output"]["entries"]:
        (run_dir / path).parent.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MATCOND_JOB_SERVER")}
    start = time.perf_counter()
    subprocess.run(
        [*prefix, sys.executable, str(checkout / "scripts" / "job.py"), str(log)],
        input=json.dumps(request),
        text=True,
        cwd=run_dir,
        env=env,
        check=True,
        capture_output=True,
    )
    return time.perf_counter() - start


def same_outputs(run_dir: Path, first: dict, second: dict) -> bool:
    """Whether two moved requests' outputs hold the same bytes, file by file."""
    pairs = zip(first["output"]["entries"], second["output"]["entries"], strict=True)
    return all((run_dir / a).read_bytes() == (run_dir / b).read_bytes() for a, b in pairs)


def job_parser(doc: str) -> argparse.ArgumentParser:
    """The arguments of a script that runs a finished run's jobs: the run's directory, its
    rules, ``--match``."""
    parser = argparse.ArgumentParser(
        description=doc, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("run_dir", type=Path, help="a finished run's directory")
    parser.add_argument("rules", nargs="+")
    parser.add_argument("--match", help="only the jobs whose wildcards hold this text")
    return parser


def selected_jobs(run_dir: Path, rules: list[str], match: str | None):
    """``(number, name, request)`` of each of ``rules``' jobs in ``run_dir`` whose name (rule
    and wildcards) holds ``match``."""
    for number, request in enumerate(requests(run_dir, rules)):
        name = f"{request['rule']} {json.dumps(request['wildcards'])}"
        if match is None or match in name:
            yield number, name, request


def main() -> None:
    parser = job_parser(__doc__)
    parser.add_argument("--against", type=Path, help="another checkout, run side by side")
    args = parser.parse_args()
    run_dir = args.run_dir.resolve()
    logs = run_dir / "job-alone" / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    for number, name, request in selected_jobs(run_dir, args.rules, args.match):
        here = moved(request, "job-alone/here")
        if args.against is None:
            seconds = run_job(REPO, run_dir, here, logs / f"{number}.log")
            print(f"{name}: {seconds:.1f} s")
            continue
        there = moved(request, "job-alone/against")
        with ThreadPoolExecutor(2) as pool:
            ours = pool.submit(run_job, REPO, run_dir, here, logs / f"{number}.log")
            theirs = pool.submit(run_job, args.against, run_dir, there, logs / f"{number}b.log")
            ours, theirs = ours.result(), theirs.result()
        same = "same bytes" if same_outputs(run_dir, here, there) else "OUTPUTS DIFFER"
        print(f"{name}: {ours:.1f} s here, {theirs:.1f} s there ({theirs / ours:.2f}x), {same}")


if __name__ == "__main__":
    main()
