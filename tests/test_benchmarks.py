"""What benchmarks/ scripts compute from their timings, on hand-made ones: the run's shape that
workflow_bench.py prints, the rounds' summary of train_floor.py, the kernels' share of
job_kernels.py, the GPU threshold gpu_check.py picks, the reseeded config and moved verdicts
of reseeded.py."""

import importlib
import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def _module(name: str):
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


workflow_bench = _module("workflow_bench")
train_floor = _module("train_floor")
job_kernels = _module("job_kernels")
gpu_check = _module("gpu_check")
reseeded = _module("reseeded")


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


def test_train_floor_pairs_each_block_with_the_floors_around_it():
    """Nine rounds whose machine slows by 2x in rounds 4-6, floors and block alike: paired, the
    ratios are 1.1 ... 1.5 however fast the round (the median 1.3, its 95 % interval the 2nd
    and 8th of the nine, [1.15, 1.45]: undecided against 1.3); the best block over the best
    floor is 1.1. A lower or higher machine gives 'within' or 'above' from the interval's
    ends, and too few rounds for an interval no verdict."""
    ratios = [1.1, 1.15, 1.2, 1.25, 1.3, 1.35, 1.4, 1.45, 1.5]
    speed = [1, 1, 1, 2, 2, 2, 1, 1, 1]
    rounds = [(0.2 * k, 0.2 * k * r, 0.2 * k) for k, r in zip(speed, ratios, strict=True)]
    got = train_floor.summary(rounds)
    assert (got["median"], got["low"], got["high"]) == pytest.approx((1.3, 1.15, 1.45))
    assert got["verdict"] == "undecided"
    assert got["best_ratio"] == pytest.approx(1.1)
    lower = train_floor.summary([(f, m * 0.8, a) for f, m, a in rounds])
    assert (lower["high"], lower["verdict"]) == (pytest.approx(1.16), "within")
    higher = train_floor.summary([(f, m * 1.2, a) for f, m, a in rounds])
    assert (higher["low"], higher["verdict"]) == (pytest.approx(1.38), "above")
    few = train_floor.summary(rounds[:5])
    assert np.isnan(few["low"]) and few["verdict"] == "undecided"


def test_job_kernels_counts_the_samples_in_numpy_scipy_or_torch_below_the_python():
    """Four stacks as py-spy --native writes them: a numpy reduction called from our code
    (kernel), a torch product (kernel: py-spy names torch's library without a path), pandas
    selecting rows in pyarrow (not), and the interpreter between two numpy calls (not:
    numpy's Python frame is not native). 10 of 13 samples in kernels."""
    numpy_sum = (
        "<module> (job.py:14);predict (matcond/condition_number/theory.py:180);"
        "_mean (numpy/_core/_methods.py:120);"
        "PyArray_Sum (numpy/_core/_multiarray_umath.cpython-311-x86_64-linux-gnu.so) 7"
    )
    pandas_take = (
        "<module> (job.py:14);arm (matcond/core/arms.py:140);"
        "take (pyarrow/compute.py:468);arrow::compute::Take (pyarrow/libarrow.so.2600) 2"
    )
    interpreter = (
        "<module> (job.py:14);_wrapfunc (numpy/_core/fromnumeric.py:57);"
        "_PyEval_EvalFrameDefault (libpython3.11.so.1.0) 1"
    )
    torch_product = (
        "<module> (job.py:14);einsum (torch/functional.py:422);"
        "at::_ops::einsum::call (libtorch_cpu.so) 3"
    )
    raw = "\n".join([numpy_sum, pandas_take, interpreter, torch_product]) + "\n"
    total, kernels, frames = job_kernels.shares(raw)
    assert (total, kernels) == (13, 10)
    assert frames["_mean (numpy/_core/_methods.py)", True] == 7
    assert frames["take (pyarrow/compute.py)", False] == 2
    assert frames["_wrapfunc (numpy/_core/fromnumeric.py)", False] == 1


def test_gpu_check_picks_the_smallest_d_from_which_on_the_gpu_halves_the_host_cpu():
    """d -> (CPU s per trial, GPU block's host CPU s per trial): the GPU halves it from
    d = 256 on (d = 128 gains only 1.5x): 256; a d above that does not (a noisy 512): the
    pick starts above it; the largest d does not: no pick."""
    probe = {128: (0.06, 0.04), 256: (0.15, 0.05), 512: (0.44, 0.1), 1024: (2.0, 0.3)}
    assert gpu_check.pick_min_dim(probe) == 256
    assert gpu_check.pick_min_dim(probe, gain=1.4) == 128
    assert gpu_check.pick_min_dim({**probe, 512: (0.44, 0.3)}) == 1024
    assert gpu_check.pick_min_dim({**probe, 1024: (2.0, 1.5)}) is None
    assert gpu_check.pick_min_dim({}) is None


def test_gpu_check_tells_a_trial_that_depends_on_its_block(monkeypatch, capsys):
    """On the CPU (the GPU's code path, each trial from its own generators) seed 2 is the same
    bytes alone and in a block of four; where a block's trials shared one generator (the
    error the check is for) they differ and the check says so."""
    import torch

    cpu = torch.device("cpu")
    assert gpu_check.block_independence(cpu, dim=8)
    assert "same bytes" in capsys.readouterr().out
    training = importlib.import_module("matcond.condition_number.training")
    own = training._generators

    def shared(specs, stream, device="cpu"):
        gen = own(specs[:1], stream, device)[0]
        return [gen] * len(specs)

    monkeypatch.setattr(training, "_generators", shared)
    assert not gpu_check.block_independence(cpu, dim=8)
    assert "DIFFER" in capsys.readouterr().out


def test_reseeded_moves_every_experiments_seeds_and_the_overlaps_bound_only():
    """A count and a list of seeds move by the offset, as does the depth formula's overlap
    bound (its default 40, or a value given; null stays null); nothing else changes."""
    config = {
        "defaults": {"dim": 8},
        "experiments": {"a": {"seeds": 3}, "b": {"seeds": [1000, 1002], "description": "x"}},
        "gauss_newton": {"sweeps": {"fig13_pruning_vit": {"seeds": 5}}},
    }
    moved = reseeded.reseeded(config, 10_000)
    assert moved["experiments"] == {
        "a": {"seeds": [10_000, 10_001, 10_002]},
        "b": {"seeds": [11_000, 11_002], "description": "x"},
    }
    assert moved["depth_theory"] == {"overlap_seeds": 10_040}
    assert {k: v for k, v in moved.items() if k not in ("experiments", "depth_theory")} == {
        "defaults": {"dim": 8},
        "gauss_newton": {"sweeps": {"fig13_pruning_vit": {"seeds": 5}}},
    }
    assert config["experiments"]["a"] == {"seeds": 3}  # the input is left as it was
    given = reseeded.reseeded({**config, "depth_theory": {"overlap_seeds": 5}}, 7)
    assert given["depth_theory"] == {"overlap_seeds": 12}
    unset = reseeded.reseeded({**config, "depth_theory": {"overlap_seeds": None}}, 7)
    assert unset["depth_theory"] == {"overlap_seeds": None}


def test_reseeded_compare_names_the_claims_whose_verdict_law_or_robustness_moved():
    """Of four shared claims one changes its verdict, one its law verdict, one stays (empty
    cells on both sides equal), one differs only in its measured value; a fifth is in one
    table only: two moved, each under its source with both sides' values."""
    nan = float("nan")

    def table(rows):
        columns = ["claim_id", "source", "verdict", "law_verdict", "reading_robust"]
        frame = pd.DataFrame(rows, columns=[*columns, "measured"])
        return frame.assign(p_value=0.5, law=nan)

    first = table(
        [
            ["c1", "paper", "consistent", nan, "yes", 1.0],
            ["c2", "paper", "reproduced", "holds", nan, 2.0],
            ["c3", "review", "inconclusive", nan, nan, 3.0],
            ["c4", "own", "reproduced", nan, nan, 4.0],
            ["c5", "own", "reproduced", nan, nan, 5.0],
        ]
    )
    second = table(
        [
            ["c1", "paper", "not reproduced", nan, "yes", 1.5],
            ["c2", "paper", "reproduced", "does not hold", nan, 2.0],
            ["c3", "review", "inconclusive", nan, nan, 3.0],
            ["c4", "own", "reproduced", nan, nan, 4.4],
        ]
    )
    assert list(reseeded.moved_claims(first, second)) == ["c1", "c2"]
    text = reseeded.compare(first, second)
    assert text.splitlines()[0] == "5 and 4 claims, 4 in both, 2 moved"
    assert "paper: 2 of 2" in text
    assert "c1: verdict consistent -> not reproduced (measured 1 -> 1.5" in text
    assert "c2: law_verdict holds -> does not hold" in text
    assert "c3" not in text and "c4" not in text
