"""A diverging trial is data, not a crash: marked, counted, left out of means; the run goes on."""

import subprocess

import numpy as np
import pandas as pd
import pytest
import yaml
from support import REPO, SNAKEMAKE

CONFIG = {
    "defaults": {"dim": 8, "epochs": 20, "batch_size": 16},
    "experiments": {
        "exp8_lr": {"grid": {"lr": [0.01, 50.0]}, "seeds": 2},
        "exp8_wd": {"grid": {"weight_decay": [0.0]}, "seeds": 2},
    },
}


@pytest.mark.workflow
def test_divergence_is_counted_and_the_run_completes(tmp_path):
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(CONFIG))
    cmd = [SNAKEMAKE, "-s", REPO / "Snakefile", "--directory", tmp_path, "--configfile"]
    cmd += [tmp_path / "config.yaml", "--cores", "2"]
    proc = subprocess.run(list(map(str, cmd)), capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]

    trials = (tmp_path / "results" / "trials").rglob("*.parquet")
    diverged = [pd.read_parquet(p) for p in trials if "-lr50-" in str(p)]
    assert len(diverged) == 2
    for trial in diverged:
        assert trial["diverged"].all() and trial["diverged_epoch"].iloc[0] < 20
        loss = trial["loss"]
        assert (~np.isfinite(loss) | (loss > 1e6)).all() and trial["error"].isna().all()

    table = pd.read_parquet(tmp_path / "results" / "tables" / "exp8_lr.parquet")
    bad = table[table["lr"] == 50.0]
    good = table[table["lr"] == 0.01]
    assert (bad["n_diverged"] == 2).all() and (bad["n"] == 0).all() and bad["mean"].isna().all()
    assert (good["n_diverged"] == 0).all() and (
        good.loc[good["component"] == "overall", "n"] == 2
    ).all()

    assert (tmp_path / "results" / "figures" / "fig8_sensitivity.png").stat().st_size > 1000
    claims = pd.read_csv(tmp_path / "results" / "claims.csv")
    assert "n_diverged" in claims.columns


def test_the_run_s_last_line_says_which_experiments_diverged():
    from matcond.core.arms import divergence_summary

    diverged = pd.DataFrame(
        {
            "experiment": ["exp_depth_limits", "exp_depth_limits", "exp8_lr", "exp8_lr"],
            "trial": ["a/seed0", "a/seed1", "b/seed0", "b/seed0"],  # b/seed0 in two experiments
            "diverged_epoch": [3, 4, 7, 7],
        }
    )
    line = divergence_summary(diverged, 100, shown=2)
    assert line.startswith("3 of 100 trials diverged (exp_depth_limits 2, exp8_lr 1; stored")
    assert "a/seed0 (epoch 3); a/seed1 (epoch 4); and 1 more" in line
    assert divergence_summary(diverged.iloc[:0], 100) == "No trial diverged (100 trials)."
    expected = {"exp_depth_limits": "depth 3 at lr 0.1", "exp8_lr": ""}
    line = divergence_summary(diverged, 100, expected)
    assert "(exp_depth_limits 2 (expected: depth 3 at lr 0.1), exp8_lr 1; stored" in line
