"""The run's shape that benchmarks/workflow_bench.py prints, on hand-made job intervals."""

import importlib.util
from pathlib import Path

import pandas as pd
import pytest

PATH = Path(__file__).resolve().parents[1] / "benchmarks" / "workflow_bench.py"
_spec = importlib.util.spec_from_file_location("workflow_bench", PATH)
workflow_bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(workflow_bench)


def test_the_shape_of_a_run_with_a_serial_tail():
    """Two cores: two 10 s jobs side by side, then a 4 s and a 6 s job side by side, then one
    20 s job alone (it starts as the 6 s one ends): span 36 s, 50 job-seconds, 22 idle
    core-seconds; every core busy until 14 s (the 4 s job ends), so the tail is 22 s: the
    6 s job's last 2 s and the 20 s job."""
    jobs = pd.DataFrame(
        {
            "rule": ["train", "train", "plots", "aggregate", "claims"],
            "start": [0.0, 0.0, 10.0, 10.0, 16.0],
            "end": [10.0, 10.0, 14.0, 16.0, 36.0],
        }
    )
    shape = workflow_bench.run_shape(jobs, cores=2)
    assert shape["span_s"] == 36 and shape["job_s"] == 40 + 10
    assert shape["idle_core_s"] == 2 * 36 - 50
    assert shape["span_over_floor"] == pytest.approx(36 / 25)
    assert (shape["tail_s"], shape["tail_job_s"], shape["tail_rules"]) == (
        22,
        22,
        "aggregate, claims",
    )


LOG = """\
localrule train:
    output: results/trials/a/seeds0-1.json, results/benchmarks/train/a/seeds0-1.tsv
    jobid: 3
localrule train:
    output: results/trials/b/seeds0-1.json, results/benchmarks/train/b/seeds0-1.tsv
    jobid: 4
Select jobs to execute...
localrule aggregate:
    input: results/trials/a/seeds0-1.json, results/trials/b/seeds0-1.json
    output: results/tables/e.parquet
    benchmark: results/benchmarks/aggregate/e.tsv
localrule plot:
    input: results/tables/e.parquet
    output: results/figures/f.png
    benchmark: results/benchmarks/plots/f.tsv
localrule claims:
    input: results/tables/e.parquet, config/claims.yaml
    output: results/claims.csv
    benchmark: results/benchmarks/claims.tsv
"""


def test_the_critical_path_follows_the_files_through_the_longest_chain():
    """train a (5 s) and b (9 s) -> aggregate (1 s) -> plot (2 s) or claims (3 s): the chain
    b, aggregate, claims holds 13 s; a job listed again in a later log replaces its listing
    (here: the plot now reads the claims), which makes b, aggregate, claims, plot 15 s."""
    seconds = {
        "train/a/seeds0-1.tsv": 5.0,
        "train/b/seeds0-1.tsv": 9.0,
        "aggregate/e.tsv": 1.0,
        "plots/f.tsv": 2.0,
        "claims.tsv": 3.0,
    }
    jobs = pd.DataFrame({"path": map(Path, seconds), "seconds": seconds.values()})
    files = workflow_bench.job_files(LOG)
    assert files[Path("aggregate/e.tsv")][0] == [
        "results/trials/a/seeds0-1.json",
        "results/trials/b/seeds0-1.json",
    ]
    chain = ["train/b/seeds0-1.tsv", "aggregate/e.tsv", "claims.tsv"]
    assert workflow_bench.critical_path(files, jobs) == list(map(Path, chain))
    rerun = "localrule plot:\n    input: results/claims.csv\n"
    rerun += "    benchmark: results/benchmarks/plots/f.tsv\n"
    files = workflow_bench.job_files(LOG + rerun)
    assert workflow_bench.critical_path(files, jobs) == list(map(Path, [*chain, "plots/f.tsv"]))
