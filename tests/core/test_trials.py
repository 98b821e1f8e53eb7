"""Config validation and trial enumeration (pure Python, no Snakemake)."""

import copy
import datetime
import functools
import json

import pytest
from support import REPO

from matcond.core.config import ConfigError, load_yaml, validate_config
from matcond.core.trials import (
    CHOICE_PARAMS,
    NEUTRAL,
    Trial,
    all_trials,
    canonical,
    cells_of,
    check_settings,
    config_cells,
    format_value,
    swept_settings,
)


def load(name="config/config.yaml"):
    return load_yaml(REPO / name)


@functools.cache
def shipped_trials(name: str = "config/config.yaml") -> dict[str, list[Trial]]:
    """The trials of a shipped config, enumerated once for the module (do not modify)."""
    return all_trials(validate_config(load(name)))


def test_paper_config_enumerates_the_paper_scale():
    trials = shipped_trials()
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
    assert config["device"] == "auto" and config["gpu_jobs"] == 4
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


def test_a_bad_value_is_refused_after_good_ones_were_checked():
    """Settings found valid once are not checked again (a cache of setting-value pairs):
    a bad value of a setting already seen with good values is still refused, by its key."""
    all_trials(validate_config({"experiments": {"e": {"grid": {"lr": [0.1]}, "seeds": 1}}}))
    for bad_value in (-1, datetime.date(2024, 1, 1)):  # a date: YAML reads 2024-01-01 so
        grid = {"lr": [0.1, bad_value]}
        bad = validate_config({"experiments": {"e": {"grid": grid, "seeds": 1}}})
        with pytest.raises(ConfigError, match="experiments.e: setting lr"):
            all_trials(bad)


@pytest.mark.parametrize("name", ["config/config.yaml", "config/test/config.yaml"])
def test_an_experiments_cells_are_the_settings_of_its_trials(name):
    """config_cells (what the claims check reads, without a trial per seed) and cells_of (the
    same from trials already made): per experiment, each cell's settings once, in order,
    equal to its trials' settings without the seed."""
    config = validate_config(load(name))
    cells = config_cells(config)
    for experiment, trials in shipped_trials(name).items():
        first = {}
        for trial in trials:
            first.setdefault(trial.cell, trial)
        assert cells[experiment] == [{**t.spec, "seed": 0} for t in first.values()]
    assert cells_of(shipped_trials(name)) == cells  # the same, from the trials


def test_conflicting_settings_outside_the_path_are_refused_by_name():
    config = validate_config(
        {"experiments": {"a": {"seeds": 1}, "b": {"settings": {"rank_rtol": 1e-6}, "seeds": 1}}}
    )
    with pytest.raises(
        ConfigError, match="experiments.a and experiments.b .* different rank_rtol,"
    ):
        all_trials(config)


# The settings of a model, structure or strategy that the hand-written layout knew.
LEGACY_TAGS = {
    "seq_len": "T", "depth": "L", "row_log_std": "s", "rank": "r", "n_blocks": "b",
    "multiplier_lr_ratio": "ratio", "spectral_lambda": "lam", "spectral_decay_lambda": "lam",
    "spectral_clip": "clip", "svd_every": "every", "svd_blend": "blend", "orthogonality_mu": "mu",
}  # fmt: skip
CHOICES = ("model", "structure", "strategy")


def _layout_before_the_schema_drove_it(s: dict) -> str:
    """The trial path as matcond.core.trials wrote it, by hand, before every setting carried its
    ``x-path`` (commit 43dc728): the reference that existing trials keep their paths."""
    fmt = format_value

    def choice(key: str) -> str:
        params = CHOICE_PARAMS[key][s[key]]
        return "-".join([s[key], *(f"{LEGACY_TAGS[p]}{fmt(s[p])}" for p in params)])

    init = f"init{fmt(s['init_scale'])}" if s["init"] == "gaussian" else f"init-{s['init']}"
    return "/".join(
        [
            choice("model"),
            choice("structure"),
            f"d{s['dim']}",
            f"{s['optimizer']}-lr{fmt(s['lr'])}-wd{fmt(s['weight_decay'])}",
            choice("strategy"),
            f"{init}-bs{s['batch_size']}-ep{s['epochs']}"
            f"-spe{s['steps_per_epoch']}-noise{fmt(s['noise_std'])}"
            f"-rec{s['record_every']}{'-grad' if s['record_gradients'] else ''}"
            f"{'-weights' if s['save_recorded_weights'] else ''}-{s['dtype']}",
        ]
    )


@pytest.mark.parametrize(
    "name", ["config/config.yaml", "config/test/config.yaml", "config/gpu/config.yaml"]
)
def test_every_trial_of_the_shipped_configs_keeps_its_path(name):
    """The paths built from the schema's ``x-path`` equal the hand-written layout they
    replaced, for every setting it knew (not momentum, nor a strategy's or a model's setting
    added since): one trial per cell (a trial's path is its cell's and its seed,
    test_trials_built_per_setting_equal_trials_parsed_from_their_spec)."""
    checked = 0
    for trials in shipped_trials(name).values():
        for trial in {t.cell: t for t in trials}.values():
            s = trial.spec
            params = [p for key in CHOICES for p in CHOICE_PARAMS[key][s[key]]]
            if "momentum" not in s and set(params) <= set(LEGACY_TAGS):
                assert trial.cell == _layout_before_the_schema_drove_it(trial.spec)
                checked += 1
    assert checked >= 10  # cells per experiment: 15 in the GPU config, 268 in the paper config


def test_momentum_is_gridded_from_the_schema_and_plain_sgd_keeps_its_trial():
    grid = {"sgd": [{"momentum": 0.0}, {"momentum": 0.9}, {"momentum": 0.9, "nesterov": True}]}
    config = validate_config({"experiments": {"e": {"grid": grid, "seeds": [0]}}})
    plain, heavy, nesterov = all_trials(config)["e"]
    assert "momentum" not in plain.spec and "nesterov" not in plain.spec  # as before it existed
    assert plain == all_trials(validate_config({"experiments": {"e": {"seeds": [0]}}}))["e"][0]
    assert plain.cell.split("/")[3] == "sgd-lr0.01-wd0"
    assert heavy.cell.split("/")[3] == "sgd-lr0.01-wd0-mom0.9"
    assert nesterov.cell.split("/")[3] == "sgd-lr0.01-wd0-mom0.9-nesterov"
    adam = {"settings": {"optimizer": "adam"}, "grid": {"momentum": [0.9]}, "seeds": 1}
    with pytest.raises(ConfigError, match="varies momentum, which applies to none"):
        all_trials(validate_config({"experiments": {"e": adam}}))


@pytest.mark.parametrize("name", sorted(NEUTRAL))
def test_a_grid_at_a_settings_neutral_value_is_the_plain_trial_not_a_refusal(name):
    """momentum: [0.0] applies to SGD's trials though the value drops out of their path (it
    was refused as applying to none of them), and so does every setting at its neutral
    value; with Adam momentum still applies to none."""
    grid = {"grid": {name: [NEUTRAL[name]]}, "seeds": [0]}
    neutral = validate_config({"experiments": {"e": grid}})
    plain = validate_config({"experiments": {"e": {"seeds": [0]}}})
    assert all_trials(neutral)["e"] == all_trials(plain)["e"]
    adam = {"settings": {"optimizer": "adam"}, "grid": {"momentum": [0.0]}, "seeds": 1}
    with pytest.raises(ConfigError, match="varies momentum, which applies to none"):
        all_trials(validate_config({"experiments": {"e": adam}}))


def test_nesterov_without_momentum_is_refused():
    config = validate_config({"experiments": {"e": {"settings": {"nesterov": True}, "seeds": 1}}})
    with pytest.raises(ConfigError, match="experiments.e: nesterov needs momentum > 0"):
        all_trials(config)


@pytest.mark.parametrize(
    ("prop", "message"),
    [
        ({"type": "number", "default": 1.0}, "needs x-path"),
        ({"type": "number", "x-path": False}, "has no default"),
        ({"type": "number", "default": 1.0, "x-path": {"part": 2}}, "needs x-path"),
        (
            {"type": "number", "default": 1.0, "x-path": {"part": 2, "tag": "q", "neutral": 0.0}},
            "neutral",
        ),
        (
            {"type": "number", "default": 1.0, "x-path": {"part": 2, "tag": "q", "omit": [1]}},
            "unknown keys",
        ),
    ],
)
def test_a_setting_without_its_path_rule_is_a_developers_error(prop, message):
    with pytest.raises(ValueError, match=message):
        check_settings({"new_setting": prop})


def test_trial_equality_is_by_settings():
    assert Trial('{"a": 1}') == Trial('{"a": 1}')


@pytest.mark.parametrize("name", ["config/config.yaml", "config/test/config.yaml"])
def test_trials_built_per_setting_equal_trials_parsed_from_their_spec(name):
    """Trial.of_cell writes each trial's JSON from a template and fills in its cached path
    and seed: each must equal the trial made from scratch out of its canonical spec. Per
    setting its first and last trial and every 25th (the paper config's 34,000 trials in
    full took 6 s; the template is per setting, the seed per trial)."""
    for trials in shipped_trials(name).values():
        by_cell: dict[str, list] = {}
        for trial in trials:
            by_cell.setdefault(trial.cell, []).append(trial)
        for cell in by_cell.values():
            for trial in {id(t): t for t in [*cell[::25], cell[-1]]}.values():
                spec = canonical(json.loads(trial.spec_json))
                fresh = Trial(json.dumps(spec, sort_keys=True))
                assert fresh == trial
                assert (fresh.path, fresh.seed, fresh.spec) == (trial.path, trial.seed, trial.spec)
