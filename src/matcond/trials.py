"""From a validated config to the list of training trials, their paths and their seeds.

A trial is a dict of settings (see ``$defs/settings`` in the config schema) plus a seed. Its
output path spells out every setting that defines it, so a researcher finds
``linear/heterogeneous-s0.25/d128/adam-lr0.001-wd0/...`` without a lookup table, and a trial
requested by two experiments has one path and is computed once. Pure Python: imported by the
Snakefile at parse time.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass
from typing import Any

from jsonschema import Draft202012Validator

from matcond.config import ConfigError, load_schema, raise_first_error

# Settings that only matter for one target structure, model or strategy, with their path tags.
STRUCTURE_PARAMS = {
    "heterogeneous": ["row_log_std"],
    "low_rank": ["rank"],
    "block_diagonal": ["n_blocks"],
}
MODEL_PARAMS = {"linear": [], "deep_linear": ["depth"], "relu_mlp": [], "attention": ["seq_len"]}
STRATEGY_PARAMS = {
    "standard": [],
    "multipliers": ["multiplier_lr_ratio"],
    "sv_multipliers": ["multiplier_lr_ratio"],
    "spectral_reg": ["spectral_lambda", "spectral_clip"],
    "hybrid": ["multiplier_lr_ratio", "spectral_lambda", "spectral_clip"],
    "svd_correction": ["svd_every", "svd_blend"],
    "orthogonality_reg": ["orthogonality_mu"],
    "spectral_decay": ["spectral_decay_lambda", "spectral_clip"],
}
INIT_PARAMS = {"gaussian": ["init_scale"], "lecun_normal": [], "torch_linear": [], "orthogonal": []}
TAGS = {
    "row_log_std": "s",
    "rank": "r",
    "n_blocks": "b",
    "depth": "L",
    "seq_len": "T",
    "multiplier_lr_ratio": "ratio",
    "spectral_lambda": "lam",
    "spectral_clip": "clip",
    "svd_every": "every",
    "svd_blend": "blend",
    "orthogonality_mu": "mu",
    "spectral_decay_lambda": "lam",
}
_CHOICE_PARAMS = (
    ("structure", STRUCTURE_PARAMS),
    ("model", MODEL_PARAMS),
    ("strategy", STRATEGY_PARAMS),
    ("init", INIT_PARAMS),
)
# Settings that change how a trial is analysed, not how it is trained: they reach the job
# through its params (a change reruns it) but are not part of its path.
ANALYSIS_SETTINGS = ("effective_rank_thresholds", "rank_rtol")


def format_value(value: Any) -> str:
    """A setting value as it appears in a path: 0.01 -> '0.01', 0.0 -> '0', 1e-05 -> '1e-05'."""
    if isinstance(value, float):
        text = repr(value)
        return text[:-2] if text.endswith(".0") else text
    return str(value)


@dataclass(frozen=True)
class Trial:
    """One training run: its canonical settings (including ``seed``)."""

    spec_json: str

    @property
    def spec(self) -> dict[str, Any]:
        return json.loads(self.spec_json)

    @property
    def cell(self) -> str:
        """The path of the trial's directory below results/trials (everything but the seed)."""
        s, fmt = self.spec, format_value

        def choice(key: str, params: dict[str, list[str]]) -> str:
            return "-".join([s[key], *(f"{TAGS[p]}{fmt(s[p])}" for p in params[s[key]])])

        init = f"init{fmt(s['init_scale'])}" if s["init"] == "gaussian" else f"init-{s['init']}"
        return "/".join(
            [
                choice("model", MODEL_PARAMS),
                choice("structure", STRUCTURE_PARAMS),
                f"d{s['dim']}",
                f"{s['optimizer']}-lr{fmt(s['lr'])}-wd{fmt(s['weight_decay'])}",
                choice("strategy", STRATEGY_PARAMS),
                f"{init}-bs{s['batch_size']}-ep{s['epochs']}"
                f"-spe{s['steps_per_epoch']}-noise{fmt(s['noise_std'])}"
                f"-rec{s['record_every']}{'-grad' if s['record_gradients'] else ''}-{s['dtype']}",
            ]
        )

    @property
    def seed(self) -> int:
        return self.spec["seed"]

    @property
    def path(self) -> str:
        """Path of the trial's outputs below results/trials, without extension."""
        return f"{self.cell}/seed{self.seed}"


def canonical(spec: dict[str, Any]) -> dict[str, Any]:
    """Drop the parameters that do not apply to the spec's structure, model and strategy."""
    unused = set()
    for key, params in _CHOICE_PARAMS:
        unused |= {p for ps in params.values() for p in ps} - set(params[spec[key]])
    return {k: v for k, v in spec.items() if k not in unused}


def _seeds(value: int | list[int]) -> list[int]:
    return list(range(value)) if isinstance(value, int) else list(value)


def _check_semantics(spec: dict[str, Any], where: str) -> None:
    if spec["structure"] == "low_rank" and spec["rank"] > spec["dim"]:
        raise ConfigError(f"{where}: rank {spec['rank']} exceeds dim {spec['dim']}")
    if spec["structure"] == "block_diagonal" and spec["n_blocks"] > spec["dim"]:
        raise ConfigError(f"{where}: n_blocks {spec['n_blocks']} exceeds dim {spec['dim']}")
    if spec["strategy"] != "standard" and spec["model"] != "linear":
        raise ConfigError(
            f"{where}: strategy {spec['strategy']} needs model linear, not {spec['model']}"
        )
    if spec["record_gradients"] and spec["model"] not in ("linear", "deep_linear"):
        raise ConfigError(
            f"{where}: record_gradients needs a linear teacher (model linear or deep_linear), "
            f"not {spec['model']}"
        )
    if spec["record_every"] > spec["epochs"]:
        raise ConfigError(
            f"{where}: record_every {spec['record_every']} exceeds epochs {spec['epochs']}"
        )


def experiment_trials(
    name: str, experiment: dict[str, Any], defaults: dict[str, Any]
) -> list[Trial]:
    """Every trial of one experiment: settings x grid axes x variants x seeds."""
    schema = load_schema()
    validator = Draft202012Validator(schema["$defs"]["settings"])
    where = f"experiments.{name}"
    base = {**defaults, **experiment.get("settings", {})}
    axes = [_axis_groups(axis, values) for axis, values in experiment.get("grid", {}).items()]
    axes.append(experiment.get("variants", [{}]))
    trials = []
    for groups in itertools.product(*axes):
        spec = dict(base)
        for group in groups:
            spec.update(group)
        raise_first_error(validator, spec, prefix=f"config key {where}: setting ")
        _check_semantics(spec, where)
        for seed in _seeds(experiment["seeds"]):
            full = canonical({**spec, "seed": seed})
            trials.append(Trial(json.dumps(full, sort_keys=True)))
    return trials


def _axis_groups(name: str, values: list) -> list[dict[str, Any]]:
    """A grid axis as setting groups: ``dim: [4, 8]`` -> [{dim: 4}, {dim: 8}]; mappings stay."""
    return [value if isinstance(value, dict) else {name: value} for value in values]


def swept_settings(experiment: dict[str, Any]) -> list[str]:
    """The settings an experiment varies (in its grid and variants), sorted.

    Sorted so that reordering keys in the YAML changes neither the table nor the rerun state.
    """
    keys = set()
    groups = [g for n, v in experiment.get("grid", {}).items() for g in _axis_groups(n, v)]
    for group in [*groups, *experiment.get("variants", [])]:
        keys |= set(group)
    return sorted(keys)


def all_trials(config: dict[str, Any]) -> dict[str, list[Trial]]:
    """Experiment name -> its trials, for a validated config.

    Raises ConfigError if two trials share a path but differ in an analysis setting.
    """
    by_experiment = {
        name: experiment_trials(name, exp, config["defaults"])
        for name, exp in config["experiments"].items()
    }
    by_path: dict[str, tuple[str, Trial]] = {}
    for name, trials in by_experiment.items():
        for trial in trials:
            seen = by_path.setdefault(trial.path, (name, trial))
            if seen[1] != trial:
                raise ConfigError(
                    f"config keys experiments.{seen[0]} and experiments.{name} request the trial "
                    f"{trial.path} with different analysis settings "
                    f"({', '.join(ANALYSIS_SETTINGS)}): set those in `defaults` only"
                )
    return by_experiment
