"""From a validated config to the list of training trials, their paths and their seeds.

A trial is a dict of settings (see ``$defs/settings`` in the config schema) plus a seed. Its
output path spells out every setting that defines it, so a researcher finds
``linear/heterogeneous-s0.5/d128/adam-lr0.001-wd0/...`` without a lookup table, and a trial
requested by two experiments has one path and is computed once. Pure Python: imported by the
Snakefile at parse time.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from typing import Any

from matcond.core.config import ConfigError, StrictValidator, load_schema, raise_first_error


def _settings_schema() -> dict[str, dict]:
    return load_schema()["$defs"]["settings"]["properties"]


def check_settings(settings: dict[str, dict]) -> None:
    """Raise ValueError (a developer's error, at import) unless every setting of the schema
    has a ``default`` and an ``x-path``: ``false`` (not in the trial's path: a change reruns the
    trial in place) or ``{part, tag}``, with optional ``hide`` (values not written in the path
    because another setting names them) and ``neutral`` (the value at which the setting is
    no part of a trial: its path and stored spec are those of a trial from before the
    setting existed)."""
    for name, prop in settings.items():
        where = f"src/matcond/schemas/config.schema.yaml: $defs/settings/properties/{name}"
        if "default" not in prop:
            raise ValueError(f"{where} has no default")
        path = prop.get("x-path")
        if path is False:
            continue
        if not isinstance(path, dict) or not {"part", "tag"} <= set(path):
            raise ValueError(
                f"{where} needs x-path: false (not in a trial's path) or {{part, tag}} (how "
                "its value is written in the path), so that any setting can be gridded"
            )
        if unknown := sorted(set(path) - {"part", "tag", "hide", "neutral"}):
            raise ValueError(f"{where}: x-path has unknown keys {unknown}")
        if "neutral" in path and path["neutral"] != prop["default"]:
            raise ValueError(f"{where}: its neutral value must be its default")


SETTINGS = _settings_schema()
check_settings(SETTINGS)
# The settings that only matter for some values of another (the schema's ``x-applies-to``):
# structure, model, strategy, init, optimizer.
CHOICES = tuple(dict.fromkeys(k for p in SETTINGS.values() for k in p.get("x-applies-to", {})))


def choice_params(settings: dict[str, dict] | None = None) -> dict[str, dict[str, list[str]]]:
    """Per choice (a setting that others apply to: structure, model, strategy, init, optimizer)
    and value, the settings that apply to it only (the schema's ``x-applies-to``), in schema
    order: e.g. strategy -> spectral_reg -> [spectral_lambda, spectral_clip]."""
    settings = SETTINGS if settings is None else settings
    params = {key: {value: [] for value in settings[key]["enum"]} for key in CHOICES}
    for name, prop in settings.items():
        for key, values in prop.get("x-applies-to", {}).items():
            for value in values:
                params[key][value].append(name)
    return params


CHOICE_PARAMS = choice_params()
# A trial's path: per part (a directory level), the settings written in it, in schema order.
PATH_PARTS = [
    [n for n, p in SETTINGS.items() if p["x-path"] and p["x-path"]["part"] == part]
    for part in sorted({p["x-path"]["part"] for p in SETTINGS.values() if p["x-path"]})
]
# Settings at which value they are no part of a trial (added after trials existed).
NEUTRAL = {
    n: p["x-path"]["neutral"] for n, p in SETTINGS.items() if "neutral" in (p["x-path"] or {})
}


def setting(spec: dict[str, Any], name: str) -> Any:
    """A setting of a canonical spec, its neutral value where the spec leaves it out."""
    return spec[name] if name in spec else NEUTRAL[name]


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

    @functools.cached_property
    def spec(self) -> dict[str, Any]:
        """The settings as a dict (parsed once; do not modify it)."""
        return json.loads(self.spec_json)

    @functools.cached_property
    def cell(self) -> str:
        """The path of the trial's directory below results/trials (everything but the seed)."""
        return cell_path(self.spec)

    @functools.cached_property
    def seed(self) -> int:
        """The trial's seed."""
        return self.spec["seed"]

    @classmethod
    def of_cell(cls, cell: dict[str, Any], cell_path: str, seeds: Iterable[int]) -> list[Trial]:
        """The trials of one canonical setting ``cell`` (whose path is ``cell_path``), one per
        seed, without per-trial parsing or formatting (planning 10^5 trials stays cheap): the
        key-sorted JSON is written once with a placeholder seed, which each trial fills in."""
        head, placeholder, tail = json.dumps({**cell, "seed": -1}, sort_keys=True).partition(
            '"seed": -1'
        )
        assert placeholder, "the seed placeholder must appear in the JSON"
        trials = []
        for seed in seeds:
            trial = cls(f'{head}"seed": {seed}{tail}')
            trial.__dict__.update(cell=cell_path, seed=seed)  # the cached properties
            trials.append(trial)
        return trials

    @functools.cached_property
    def path(self) -> str:
        """Path of the trial's outputs below results/trials, without extension."""
        return f"{self.cell}/seed{self.seed}"


@dataclass(frozen=True)
class Block:
    """The unit of training work: the trials of one setting (one cell) whose seeds fall in
    ``[first, first + size)``, trained by one job (rule ``train``).

    Its path, ``{cell}/seeds{first}-{last}``, names its manifest (``.json``), log and benchmark.
    Blocks are aligned on multiples of ``size``, so a new seed joins the one block that covers
    it and leaves every other block as it was.
    """

    trials: tuple[Trial, ...]
    first: int
    size: int

    @property
    def cell(self) -> str:
        """The setting's directory below results/trials."""
        return self.trials[0].cell

    @property
    def path(self) -> str:
        """Path of the block's manifest, log and benchmark, without extension."""
        return f"{self.cell}/seeds{self.first}-{self.first + self.size - 1}"

    @property
    def seeds(self) -> list[int]:
        """The seeds it trains, ascending."""
        return [t.seed for t in self.trials]

    def request(self, saved: Collection[str]) -> str:
        """What a training job trains, as canonical JSON: the setting's spec without the seed
        (``spec``), its ``seeds``, and ``save_weights``, the seeds of its trials whose paths
        are in ``saved``. The job's one param: a change reruns the block."""
        cell = {k: v for k, v in self.trials[0].spec.items() if k != "seed"}
        kept = [t.seed for t in self.trials if t.path in saved]
        return json.dumps({"spec": cell, "seeds": self.seeds, "save_weights": kept}, sort_keys=True)


def blocks_of(trials: Iterable[Trial], size: int) -> list[Block]:
    """The trials (each once, however often listed) cut into aligned blocks of ``size`` seeds
    per setting, in order of first appearance; a block's trials by ascending seed."""
    groups: dict[tuple[str, int], dict[int, Trial]] = {}
    for trial in trials:
        seed = trial.seed
        groups.setdefault((trial.cell, seed // size), {})[seed] = trial
    return [
        Block(tuple(group[s] for s in sorted(group)), index * size, size)
        for (_, index), group in groups.items()
    ]


BUNDLES = "bundles"  # results/trials/bundles/{name}.json: the manifest of a job of blocks


def bundles_of(
    blocks: Iterable[Block], seconds: Callable[[Block], float], target: float
) -> dict[str, tuple[Block, ...]]:
    """The blocks cut into bundles of about ``target`` seconds each (``seconds``: a block's
    estimate), each bundle one training job: ``{"bundles/{name}": (block, ...)}``.

    The blocks go by path; a bundle ends after a block with probability seconds / target,
    drawn from a hash of the block's path (content-defined chunking), and is named by a hash
    of its blocks' paths. So adding, removing or changing a setting changes the bundle that
    holds its blocks (and at most a neighbour it splits or merges with): every other bundle
    keeps its name and blocks, and is not trained again.
    """
    bundles, current = {}, []
    for block in sorted(blocks, key=lambda b: b.path):
        current.append(block)
        draw = int(hashlib.sha256(block.path.encode()).hexdigest()[:13], 16) / 16**13
        if draw < seconds(block) / target:
            bundles[_bundle_path(current)], current = tuple(current), []
    if current:
        bundles[_bundle_path(current)] = tuple(current)
    return bundles


def bundle_request(blocks: Iterable[Block], saved: Collection[str]) -> str:
    """What a bundle's training job trains, as canonical JSON: ``blocks``, each block's
    :meth:`Block.request` by its path. The job's one param: a change reruns the bundle."""
    requests = {b.path: json.loads(b.request(saved)) for b in blocks}
    return json.dumps({"blocks": requests}, sort_keys=True)


def _bundle_path(blocks: list[Block]) -> str:
    names = "\n".join(b.path for b in blocks).encode()
    return f"{BUNDLES}/{hashlib.sha256(names).hexdigest()[:16]}"


def inapplicable(spec: dict[str, Any]) -> set[str]:
    """The settings that do not apply to the spec's choices (``x-applies-to``)."""
    unused = set()
    for key, params in CHOICE_PARAMS.items():
        unused |= {p for ps in params.values() for p in ps} - set(params[spec[key]])
    return unused


def canonical(spec: dict[str, Any]) -> dict[str, Any]:
    """Drop the settings that do not apply to the spec's choices (:func:`inapplicable`) and
    those at their neutral value."""
    unused = inapplicable(spec) | {n for n, v in NEUTRAL.items() if spec.get(n) == v}
    return {k: v for k, v in spec.items() if k not in unused}


def _path_part(name: str, value: Any) -> str | None:
    path = SETTINGS[name]["x-path"]
    if value in path.get("hide", ()) or value is False:
        return None
    return path["tag"] if value is True else f"{path['tag']}{format_value(value)}"


def cell_path(spec: dict[str, Any]) -> str:
    """The path of a canonical spec's cell (every setting but the seed) below results/trials:
    one directory per part of the schema's ``x-path``, its settings joined by ``-``."""
    parts = []
    for names in PATH_PARTS:
        written = [_path_part(n, spec[n]) for n in names if n in spec]
        parts.append("-".join(w for w in written if w is not None))
    return "/".join(parts)


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
    labels = [f"{t:g}" for t in spec["effective_rank_thresholds"]]
    if len(set(labels)) < len(labels):
        raise ConfigError(
            f"{where}: effective_rank_thresholds {spec['effective_rank_thresholds']} print the "
            f"same label twice ({', '.join(labels)}): their columns would merge"
        )
    if spec["optimizer"] == "sgd" and spec["nesterov"] and not spec["momentum"]:
        raise ConfigError(f"{where}: nesterov needs momentum > 0 (torch.optim.SGD's rule)")
    if spec["record_every"] > spec["epochs"]:
        raise ConfigError(
            f"{where}: record_every {spec['record_every']} exceeds epochs {spec['epochs']}"
        )


@functools.cache
def _settings_validator() -> StrictValidator:
    return StrictValidator(load_schema()["$defs"]["settings"])


# (setting, its value as JSON) pairs that the settings schema accepts. The schema checks each
# setting on its own (properties, no `additionalProperties`, nothing across settings), so a
# trial whose every pair is here is valid, and only a new pair needs jsonschema.
_VALID_PAIRS: set[tuple[str, str]] = set()


def _check_settings(spec: dict[str, Any], where: str) -> None:
    """Raise ConfigError, naming the config key, for the first setting of ``spec`` that the
    settings schema refuses."""
    try:
        pairs = {(k, json.dumps(v, sort_keys=True)) for k, v in spec.items()}
    except TypeError:  # not JSON (YAML's dates): the schema refuses it, naming the key
        pairs = set()
    if pairs and pairs <= _VALID_PAIRS:
        return
    raise_first_error(_settings_validator(), spec, prefix=f"config key {where}: setting ")
    _VALID_PAIRS.update(pairs)


def experiment_cells(
    name: str, experiment: dict[str, Any], defaults: dict[str, Any]
) -> list[tuple[str, dict[str, Any]]]:
    """The settings of one experiment, each once, as (cell path, canonical settings with seed
    0), for settings x grid axes x variants, in the config's order."""
    where = f"experiments.{name}"
    cells, specs, applied, given = [], {}, set(), {}
    for groups in itertools.product(*_given_groups(experiment)):
        spec = dict(defaults)
        for group, _ in groups:
            spec.update(group)
        _check_settings(spec, where)
        _check_semantics(spec, where)
        cell = canonical({**spec, "seed": 0})
        applies = set(spec) - inapplicable(spec)  # at its neutral value a setting applies too
        applied |= applies
        for group, path in groups:  # config key -> its setting, value, and if it applied
            for setting, value in group.items():
                was = given.get(path.format(setting), (0, 0, False))[2]
                given[path.format(setting)] = (setting, value, was or setting in applies)
        if (key := json.dumps(cell, sort_keys=True)) in specs:
            raise ConfigError(
                f"{where}: two combinations of its grid and variants are the same trial "
                f"({Trial(key).cell}), so its seeds would count twice: "
                f"{_difference(specs[key], spec)}"
            )
        specs[key] = spec
        cells.append((Trial(key).cell, cell))
    unused = sorted(set(swept_settings(experiment)) - applied)
    if unused:
        raise ConfigError(
            f"{where}: it varies {', '.join(unused)}, which applies to none of its trials "
            f"(see x-applies-to in the config schema)"
        )
    for key, (setting, value, _) in filter(lambda item: not item[1][2], given.items()):
        _refuse_unapplied(f"{where}.{key}", setting, value, "its trials")
    return cells


def _given_groups(experiment: dict[str, Any]) -> list[list[tuple[dict[str, Any], str]]]:
    """An experiment's setting groups per axis (its settings, each grid axis, its variants),
    each with its config key below the experiment, ``{}`` standing for a setting's name."""
    axes = [[(experiment.get("settings", {}), "settings.{}")]]
    for axis, values in experiment.get("grid", {}).items():
        keys = [f"grid.{axis}.{i}{'.{}' * isinstance(v, dict)}" for i, v in enumerate(values)]
        axes.append(list(zip(_axis_groups(axis, values), keys, strict=True)))
    variants = experiment.get("variants", [{}])
    return [*axes, [(group, f"variants.{i}.{{}}") for i, group in enumerate(variants)]]


def _refuse_unapplied(key: str, setting: str, value: Any, trials: str) -> None:
    """ConfigError for a setting given a value of its own (not its default) where it applies
    to none of ``trials`` (e.g. momentum with Adam only: it would be dropped without a word)."""
    if value == SETTINGS[setting]["default"]:
        return
    applies_to = SETTINGS[setting]["x-applies-to"]
    choices = "; ".join(f"{k} {' or '.join(map(str, v))}" for k, v in applies_to.items())
    raise ConfigError(
        f"config key {key}: {json.dumps(value)} applies to none of {trials} ({setting} applies "
        f"to {choices} only: see x-applies-to in the config schema); remove it"
    )


def experiment_trials(
    name: str, experiment: dict[str, Any], defaults: dict[str, Any]
) -> list[Trial]:
    """Every trial of one experiment: settings x grid axes x variants x seeds."""
    seeds = _seeds(experiment["seeds"])
    cells = experiment_cells(name, experiment, defaults)
    return [t for path, cell in cells for t in Trial.of_cell(cell, path, seeds)]


def config_cells(config: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Experiment name -> the settings of each of its cells (canonical, seed 0), for a
    validated config: what its trials are, without a trial per seed."""
    return {
        name: [cell for _, cell in experiment_cells(name, experiment, config["defaults"])]
        for name, experiment in config["experiments"].items()
    }


def cells_of(trials: dict[str, list[Trial]]) -> dict[str, list[dict[str, Any]]]:
    """:func:`config_cells` from the trials already enumerated (:func:`all_trials`): per
    cell, in order, its settings with seed 0 (those of any of its trials)."""
    return {
        name: [{**t.spec, "seed": 0} for t in {t.cell: t for t in ts}.values()]
        for name, ts in trials.items()
    }


def _difference(first: dict[str, Any], second: dict[str, Any]) -> str:
    """Why two setting combinations give one trial: the settings they differ in do not
    apply to it, or they differ in nothing (a value listed twice)."""
    differ = sorted(k for k in first if first[k] != second[k])
    if differ:
        return f"{', '.join(differ)} (which differ) do not apply to it"
    return "a value or setting group listed twice"


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

    Raises ConfigError if two trials share a path but differ in a setting outside it.
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
                first, second = seen[1].spec, trial.spec
                differ = sorted(
                    k for k in first.keys() | second.keys() if first.get(k) != second.get(k)
                )
                raise ConfigError(
                    f"config keys experiments.{seen[0]} and experiments.{name} request the trial "
                    f"{trial.path} with different {', '.join(differ)}, settings that are not "
                    "part of a trial's path (x-path: false in the config schema): set them in "
                    "`defaults` only, or the same in both"
                )
    _check_defaults_apply(config["defaults"], by_experiment)
    return by_experiment


def _check_defaults_apply(defaults: dict[str, Any], by_experiment: dict[str, list]) -> None:
    """:func:`_refuse_unapplied` for a default that turns on a setting (momentum, nesterov:
    NEUTRAL) for no trial at all; others (rank) wait for the experiments that choose them."""
    cells = {t.cell: t for trials in by_experiment.values() for t in trials}
    chosen = {tuple(t.spec[k] for k in CHOICES) for t in cells.values()}  # choices: never dropped
    for name in NEUTRAL.keys() & defaults.keys():
        applies_to = SETTINGS[name].get("x-applies-to", {}).items()
        if not any(all(c[CHOICES.index(k)] in v for k, v in applies_to) for c in chosen):
            _refuse_unapplied(f"defaults.{name}", name, defaults[name], "the config's trials")


def seeds_by_cell(trials: Iterable[Trial]) -> dict[str, list[int]]:
    """Trials as cell -> its seeds (ascending; cells sorted): independent of the config's
    order, and each cell's path written once however many seeds it has."""
    cells: dict[str, set[int]] = {}
    for trial in trials:
        cells.setdefault(trial.cell, set()).add(trial.seed)
    return {cell: sorted(cells[cell]) for cell in sorted(cells)}


def trial_paths(cells: dict[str, list[int]]) -> list[str]:
    """The trial paths of :func:`seeds_by_cell`'s mapping, in its order."""
    return [f"{cell}/seed{seed}" for cell, seeds in cells.items() for seed in seeds]
