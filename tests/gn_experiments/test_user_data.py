"""The user's own data for the GN sweeps (gauss_newton.data.files): checked before any job,
read into the sweeps, and a changed file reruns the sweeps that read it."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from gn_cases import rel
from support import run_snakemake

from matcond.core.config import ConfigError, validate_config
from matcond.gn_experiments.sweeps import run_sweep

DEPTH = {"depths": [1, 2], "widths": [8], "width_factors": [], "seeds": 2, "whiten": [False, True]}


def write_data(path: Path, n: int = 30, d: int = 5, **arrays) -> Path:
    """An .npz of ``n`` samples in ``d`` dimensions with 3 classes (``arrays`` override)."""
    gen = np.random.default_rng(1)
    x = gen.standard_normal((n, d)) * np.geomspace(1, 30, d)  # anisotropic: kappa(Sigma) >> 1
    np.savez(path, **{"X": x, "y": np.arange(n) % 3, **arrays})
    return path


def config(files: dict, datasets=("mine",)) -> dict:
    sweep = {**DEPTH, "datasets": list(datasets)}
    return {
        "experiments": {"x": {"seeds": 1}},
        "gauss_newton": {"data": {"files": files}, "sweeps": {"fig2_depth": sweep}},
    }


def test_a_sweep_runs_on_the_user_s_file(tmp_path):
    path = write_data(tmp_path / "mine.npz")
    gn = validate_config(config({"mine": str(path)}))["gauss_newton"]
    table = run_sweep("fig2_depth", gn["sweeps"]["fig2_depth"], gn["data"])
    assert set(table["dataset"]) == {"mine"} and set(table["d"]) == {5} and set(table["k"]) == {3}
    assert set(table["n_samples"]) == {30}
    x = np.load(path)["X"]
    sigma = np.linalg.eigvalsh(x.T @ x / len(x))
    raw = table[~table["whitened"]]
    assert all(rel(v, sigma[-1] / sigma[0]) < 1e-8 for v in raw["kappa_sigma"])
    assert np.allclose(table.loc[table["whitened"], "kappa_sigma"], 1.0)
    # depth 1 is W x: its GN is Sigma (x) I, so kappa = kappa(Sigma) on raw inputs
    assert all(rel(v, sigma[-1] / sigma[0]) < 1e-8 for v in raw[raw["depth"] == 1]["kappa"])


def test_targets_as_a_matrix_set_the_outputs(tmp_path):
    path = write_data(tmp_path / "reg.npz", y=np.ones((30, 4)))
    gn = validate_config(config({"mine": str(path)}))["gauss_newton"]
    table = run_sweep("fig2_depth", gn["sweeps"]["fig2_depth"], gn["data"])
    assert set(table["k"]) == {4}


BAD_FILES = [
    ({}, None, "No such file"),
    ({"X": np.ones((3, 2))}, "drop_y", "has no array y"),
    ({"X": np.ones(6)}, None, "X must be n x d"),
    ({"X": np.ones((0, 4)), "y": np.ones(0, dtype=int)}, None, "X must be n x d"),
    ({"X": np.array([[1.0, np.nan], [0.0, 1.0]]), "y": np.array([0, 1])}, None, "1 non-finite"),
    ({"X": np.array([["a", "b"]]), "y": np.array([0])}, None, "X must hold real numbers"),
    ({"y": np.arange(7)}, None, "y must have n = 30 rows"),
    ({"y": np.linspace(0, 1, 30)}, None, "1-D y must hold class labels"),
    ({"y": np.full((30, 2), np.inf)}, None, "2-D y must hold finite numbers"),
]


@pytest.mark.parametrize(("arrays", "how", "message"), BAD_FILES)
def test_a_bad_file_is_named_before_any_job(tmp_path, arrays, how, message):
    path = tmp_path / "bad.npz"
    if arrays:
        if how == "drop_y":
            np.savez(path, **arrays)
        else:
            write_data(path, **arrays)
    with pytest.raises(ConfigError) as err:
        validate_config(config({"mine": str(path)}))
    assert "config key gauss_newton.data.files.mine" in str(err.value)
    assert message in str(err.value)


def test_an_unknown_data_set_is_named(tmp_path):
    with pytest.raises(ConfigError, match=r"fig2_depth.datasets: 'mnist' is not digits, gaussian"):
        validate_config(config({}, datasets=("digits", "mnist")))


@pytest.mark.workflow
def test_a_changed_file_reruns_its_sweep_only(tmp_path):
    path = write_data(tmp_path / "mine.npz")
    cfg = config({"mine": "mine.npz"})
    cfg["gauss_newton"]["sweeps"]["fig6_leaky_width"] = {
        "datasets": ["gaussian"],
        "widths": [4],
        "seeds": 1,
        "n_samples": 8,
    }
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(cfg))
    targets = ["results/tables/gn_fig2_depth.parquet", "results/tables/gn_fig6_leaky_width.parquet"]

    def snakemake(*args: str) -> str:
        proc = run_snakemake(
            tmp_path, "--cores", "1", *targets, *args, configfile=tmp_path / "config.yaml"
        )
        return proc.stdout + proc.stderr

    snakemake()
    assert set(pd.read_parquet(tmp_path / targets[0])["d"]) == {5}
    assert "Nothing to be done" in snakemake("-n")
    write_data(path, d=6)
    out = snakemake("-n")
    jobs = re.findall(r"^(?:local)?rule (\w+):\n(?:.*\n)*?    output: ([^,\n]+)", out, re.M)
    assert jobs == [("gn_sweep", targets[0])]
