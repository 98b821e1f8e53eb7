"""Config validation and trial enumeration (pure Python, no Snakemake)."""

import copy
import json
from pathlib import Path

import pytest
import yaml

from matcond.config import ConfigError, validate_config
from matcond.trials import Trial, all_trials, canonical, format_value, swept_settings

REPO = Path(__file__).resolve().parents[1]


def load(name="config/config.yaml"):
    with open(REPO / name) as fh:
        return yaml.safe_load(fh)


def test_paper_config_enumerates_the_paper_scale():
    config = validate_config(load())
    trials = all_trials(config)
    assert len(trials["exp1_dimension"]) == 5 * 15
    assert len(trials["exp2_optimizer"]) == 2 * 15
    unique = {t.path for name in ("exp1_dimension", "exp2_optimizer") for t in trials[name]}
    assert len(unique) == 75 + 15  # the SGD d=128 trials are shared by both experiments
    spec = trials["exp1_dimension"][0].spec
    assert (spec["epochs"], spec["batch_size"], spec["lr"], spec["noise_std"]) == (
        200,
        64,
        0.01,
        0.01,
    )


def test_defaults_are_filled_and_input_is_not_mutated():
    raw = {"experiments": {"e": {"seeds": 2}}}
    before = copy.deepcopy(raw)
    config = validate_config(raw)
    assert raw == before
    assert config["device"] == "cpu"
    assert config["defaults"]["steps_per_epoch"] == 1
    assert [t.seed for t in all_trials(config)["e"]] == [0, 1]


def test_path_is_readable_and_spells_out_the_settings():
    config = validate_config(
        {
            "experiments": {
                "e": {"settings": {"dim": 128, "optimizer": "adam", "lr": 1e-3}, "seeds": [3]}
            }
        }
    )
    (trial,) = all_trials(config)["e"]
    assert trial.path == (
        "linear/heterogeneous-s0.5/d128/adam-lr0.001-wd0/standard/"
        "init0.02-bs64-ep200-spe1-noise0.01-rec0-float32/seed3"
    )


def test_unused_structure_parameters_do_not_change_a_trial():
    a = validate_config({"experiments": {"e": {"seeds": 1}}})
    b = validate_config(
        {"defaults": {"rank": 3, "n_blocks": 2}, "experiments": {"e": {"seeds": 1}}}
    )
    assert all_trials(a)["e"] == all_trials(b)["e"]
    low = validate_config(
        {"experiments": {"e": {"settings": {"structure": "low_rank", "rank": 3}, "seeds": 1}}}
    )
    assert "low_rank-r3" in all_trials(low)["e"][0].path


def test_grid_times_variants_times_seeds():
    config = validate_config(
        {
            "experiments": {
                "e": {
                    "grid": {"dim": [4, 8], "weight_decay": [0.0, 0.1]},
                    "variants": [{"optimizer": "sgd"}, {"optimizer": "adam", "lr": 1e-3}],
                    "seeds": [5, 7],
                }
            }
        }
    )
    assert len(all_trials(config)["e"]) == 2 * 2 * 2 * 2
    assert swept_settings(config["experiments"]["e"]) == ["dim", "lr", "optimizer", "weight_decay"]


def test_format_value():
    assert [format_value(v) for v in (0.01, 0.0, 1e-5, 3, "sgd")] == [
        "0.01",
        "0",
        "1e-05",
        "3",
        "sgd",
    ]


@pytest.mark.parametrize(
    ("config", "names"),
    [
        (
            {"defaults": {"lr": "1e-3"}, "experiments": {"e": {"seeds": 1}}},
            ["defaults.lr", "1.0e-3"],
        ),
        ({"defaults": {"dim": 0}, "experiments": {"e": {"seeds": 1}}}, ["defaults.dim"]),
        (
            {"defaults": {"optimizer": "rmsprop"}, "experiments": {"e": {"seeds": 1}}},
            ["defaults.optimizer", "adam"],
        ),
        ({"experiments": {"e": {"seeds": []}}}, ["experiments.e.seeds"]),
        ({"experiments": {"e": {"seeds": [1, 1]}}}, ["experiments.e.seeds"]),
        ({"experiments": {"e": {"grid": {"dim": ["x"]}, "seeds": 1}}}, ["experiments.e", "dim"]),
        ({"experiments": {"e": {"settings": {"lrr": 0.1}, "seeds": 1}}}, ["experiments.e", "lrr"]),
        (
            {
                "experiments": {
                    "e": {"settings": {"structure": "low_rank", "rank": 9, "dim": 4}, "seeds": 1}
                }
            },
            ["rank 9 exceeds dim 4"],
        ),
        ({"device": "tpu", "experiments": {"e": {"seeds": 1}}}, ["device"]),
        ({"experiments": {}}, ["experiments"]),
    ],
)
def test_bad_config_names_the_key(config, names):
    with pytest.raises(ConfigError) as err:
        all_trials(validate_config(config))
    for name in names:
        assert name in str(err.value)


def test_conflicting_analysis_settings_are_refused():
    config = validate_config(
        {"experiments": {"a": {"seeds": 1}, "b": {"settings": {"rank_rtol": 1e-6}, "seeds": 1}}}
    )
    with pytest.raises(ConfigError, match="experiments.a and experiments.b"):
        all_trials(config)


def test_trial_equality_is_by_settings():
    assert Trial('{"a": 1}') == Trial('{"a": 1}')


@pytest.mark.parametrize("name", ["config/config.yaml", "config/test/config.yaml"])
def test_trials_built_per_setting_equal_trials_parsed_from_their_spec(name):
    """Trial.of_cell writes each trial's JSON from a template and fills in its cached path
    and seed: each must equal the trial made from scratch out of its canonical spec."""
    for trials in all_trials(validate_config(load(name))).values():
        for trial in trials:
            fresh = Trial(json.dumps(canonical(json.loads(trial.spec_json)), sort_keys=True))
            assert fresh == trial
            assert (fresh.path, fresh.seed, fresh.spec) == (trial.path, trial.seed, trial.spec)
