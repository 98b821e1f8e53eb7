"""Bad input stops the run before any job, with a message that names the key (and, for
choices, the allowed values), and no traceback."""

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from matcond.checkpoints import check_checkpoint_paths
from matcond.config import ConfigError, check_results_dir, validate_config
from matcond.trials import all_trials

REPO = Path(__file__).resolve().parents[1]
SNAKEMAKE = Path(sys.executable).with_name("snakemake")


def one(defaults=None, **experiment):
    """A config with one experiment `e` (keys ``experiment``) over ``defaults``."""
    return {"defaults": defaults or {}, "experiments": {"e": {"seeds": 1, **experiment}}}


BAD = [
    (one({"lr": "1e-3"}), ["defaults.lr", "1.0e-3"]),
    (one({"dim": "abc"}), ["defaults.dim", "integer"]),
    (one({"dim": 0}), ["defaults.dim", "minimum"]),
    (one({"dim": -4}), ["defaults.dim"]),
    (one({"dim": 2.5}), ["defaults.dim", "integer"]),
    (one({"epochs": 0}), ["defaults.epochs"]),
    (one({"batch_size": 0}), ["defaults.batch_size"]),
    (one({"batch_size": 1.5}), ["defaults.batch_size"]),
    (one({"lr": 0.0}), ["defaults.lr"]),
    (one({"lr": -0.1}), ["defaults.lr"]),
    (one({"noise_std": -1.0}), ["defaults.noise_std"]),
    (one({"optimizer": "rmsprop"}), ["defaults.optimizer", "allowed: sgd, adam"]),
    (one({"strategy": "magic"}), ["defaults.strategy", "allowed: standard, multipliers"]),
    (one({"structure": "circle"}), ["defaults.structure", "allowed: heterogeneous"]),
    (one({"model": "transformer"}), ["defaults.model", "allowed: linear, deep_linear"]),
    (one({"effective_rank_thresholds": [0.0]}), ["defaults.effective_rank_thresholds"]),
    (one({"effective_rank_thresholds": [1.5]}), ["defaults.effective_rank_thresholds"]),
    (one({"effective_rank_thresholds": []}), ["defaults.effective_rank_thresholds"]),
    ({"experiments": {"e": {"seeds": []}}}, ["experiments.e.seeds"]),
    ({"experiments": {"e": {"seeds": [1, 1]}}}, ["experiments.e.seeds"]),
    ({"experiments": {"e": {"seeds": 0}}}, ["experiments.e.seeds"]),
    ({"experiments": {"e": {"seeds": [-1]}}}, ["experiments.e.seeds"]),
    (one(grid={"dim": []}), ["experiments.e.grid.dim"]),
    (one(grid={"dim": ["x"]}), ["experiments.e", "dim"]),
    (one(settings={"depth": 0, "model": "deep_linear"}), ["experiments.e", "depth"]),
    (one(settings={"lrr": 0.1}), ["experiments.e", "'lrr' was unexpected"]),
    (
        one(settings={"structure": "low_rank", "rank": 9, "dim": 4}),
        ["experiments.e", "rank 9 exceeds dim 4"],
    ),
    (
        one(settings={"structure": "block_diagonal", "n_blocks": 9, "dim": 4}),
        ["n_blocks 9 exceeds dim 4"],
    ),
    (one(settings={"record_every": 300}), ["experiments.e", "record_every 300 exceeds epochs 200"]),
    (
        one(settings={"model": "relu_mlp", "strategy": "multipliers"}),
        ["strategy multipliers needs model linear"],
    ),
    (one(variants=[{"optimizer": "sgdd"}]), ["experiments.e", "optimizer", "allowed: sgd, adam"]),
    ({"device": "tpu", "experiments": {"e": {"seeds": 1}}}, ["device", "allowed: cpu, cuda"]),
    ({"experiments": {}}, ["experiments"]),
    ({"experimentz": {}, "experiments": {"e": {"seeds": 1}}}, ["'experimentz' was unexpected"]),
    ({"experiments": {"Bad-Name": {"seeds": 1}}}, ["experiments", "Bad-Name"]),
    ({"experiments": {"gn_exp7": {"seeds": 1}}}, ["experiments.gn_exp7", "taken by a table"]),
    ({"experiments": {"theory": {"seeds": 1}}}, ["experiments.theory", "taken by a table"]),
    (
        {**one(), "gauss_newton": {"sweeps": {"fig13_pruning_vit": {"dim": 10, "heads": 4}}}},
        ["gauss_newton.sweeps.fig13_pruning_vit.dim", "not a multiple of heads"],
    ),
    (
        {**one(), "gauss_newton": {"sweeps": {"fig14_pruning_resnet20": {"blocks": 5}}}},
        ["gauss_newton.sweeps.fig14_pruning_resnet20.blocks", "3 was expected"],
    ),
]


@pytest.mark.parametrize(("config", "names"), BAD, ids=[str(i) for i in range(len(BAD))])
def test_bad_config_names_the_key(config, names):
    with pytest.raises(ConfigError) as err:
        all_trials(validate_config(config))
    for name in names:
        assert name in str(err.value)


def test_missing_checkpoint_names_the_key(tmp_path):
    config = validate_config(
        {"checkpoints": {"mine": "nope.pt"}, "experiments": {"e": {"seeds": 1}}}
    )
    with pytest.raises(ConfigError, match="config key checkpoints.mine: 'nope.pt' does not exist"):
        check_checkpoint_paths(config, base=tmp_path)


def test_results_dir_that_cannot_be_written_is_named(tmp_path, monkeypatch):
    (tmp_path / "file").write_text("not a directory")
    with pytest.raises(ConfigError, match=f"cannot write to the results directory {tmp_path}/file"):
        check_results_dir(tmp_path / "file")
    with pytest.raises(ConfigError, match="has .* MB free .*No space left on device"):
        check_results_dir(tmp_path / "ok", min_free_mb=10**12)
    check_results_dir(tmp_path / "ok")
    assert not any((tmp_path / "ok").iterdir())


def run(workdir: Path, *args: str) -> subprocess.CompletedProcess:
    cmd = [SNAKEMAKE, "-s", REPO / "Snakefile", "--directory", workdir, "-n", *args]
    return subprocess.run(list(map(str, cmd)), capture_output=True, text=True)


@pytest.mark.parametrize(
    ("file_config", "cli", "message"),
    [
        (one({"lr": "1e-3"}), [], "config key defaults.lr: '1e-3' is not of type 'number'"),
        (one(), ["--config", "device=tpu"], "config key device: 'tpu' is not one of"),
        (
            one(),
            ["--config", "defaults={dim: 0}"],
            "config key defaults.dim: '0' is not of type 'integer' (a number given as a string",
        ),
        (
            {
                "experiments": {"walk": {"seeds": 1, "settings": {"model": "deep_linear"}}},
                "gauss_newton": {"along_training": {"experiment": "walk"}},
            },
            [],
            "config key experiments.walk: gauss_newton.along_training needs its trials to save "
            "their weights (setting save_recorded_weights: true)",
        ),
    ],
)
def test_snakemake_stops_before_any_job_without_traceback(tmp_path, file_config, cli, message):
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(file_config))
    proc = run(tmp_path, "--configfile", str(tmp_path / "config.yaml"), *cli)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert f"Invalid config: {message}" in out
    assert "Traceback" not in out and 'File "' not in out
    assert not (tmp_path / "results").exists()
